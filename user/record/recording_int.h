/* SPDX-License-Identifier: MIT */
/*
 * Internals of the recording format, shared by recording*.c only: the
 * layout's constants, the little-endian encoder and reading cursor, and the
 * codec of the items and frames (recording_codec.c) that the writer
 * (recording_write.c) and the reader (recording_read.c) both use.
 * docs/recording.md has the layout.
 */
#ifndef NANLOG_RECORDING_INT_H
#define NANLOG_RECORDING_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record/call.h"
#include "record/recording.h"

#define MAGIC "\x89NANLOG\n"
#define MAGIC_LEN 8
#define PREAMBLE_LEN 16
#define BOM 0x01020304u
#define HEAD_LEN 24

/* frame tags, four ASCII characters in the file */
#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define TAG_HEAD TAG('H', 'E', 'A', 'D')
#define TAG_BLCK TAG('B', 'L', 'C', 'K')
#define TAG_TAIL TAG('T', 'A', 'I', 'L')

/* item kinds in the file: enum nl_recording_item_kind */
#define ITEM_HEAD_LEN 8
/* the largest item: a library with a full path and every api id missing */
#define ITEM_MAX (ITEM_HEAD_LEN + 48 + 2 * NL_API_COUNT + 4 + NL_RECORDING_MAX_STR)

/* ---- little-endian encoding ----------------------------------------------- */

/* With p == NULL it only counts, so a caller can size the buffer first. */
struct enc {
	unsigned char *p;
	size_t len;
};

static inline void put_bytes(struct enc *e, const void *v, size_t n)
{
	if (e->p && n)
		memcpy(e->p + e->len, v, n);
	e->len += n;
}

static inline void put_le(struct enc *e, uint64_t v, int n)
{
	unsigned char b[8];

	for (int i = 0; i < n; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put_bytes(e, b, (size_t)n);
}

static inline void put_u16(struct enc *e, uint16_t v) { put_le(e, v, 2); }
static inline void put_u32(struct enc *e, uint32_t v) { put_le(e, v, 4); }
static inline void put_u64(struct enc *e, uint64_t v) { put_le(e, v, 8); }

static inline void put_str(struct enc *e, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put_u32(e, (uint32_t)n);
	put_bytes(e, s, n);
}

static inline uint64_t le_at(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void le_set(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Reading cursor: a read past the end sets bad and yields zeros. */
struct cur {
	const unsigned char *p;
	size_t len, pos;
	const char *bad; /* first problem found */
};

static inline void cur_fail(struct cur *c, const char *why)
{
	if (!c->bad)
		c->bad = why;
}

static inline uint64_t get_le(struct cur *c, int n)
{
	uint64_t v;

	if (c->bad || c->len - c->pos < (size_t)n) {
		cur_fail(c, "ends in the middle of a field");
		return 0;
	}
	v = le_at(c->p + c->pos, n);
	c->pos += (size_t)n;
	return v;
}

static inline uint16_t get_u16(struct cur *c) { return (uint16_t)get_le(c, 2); }
static inline uint32_t get_u32(struct cur *c) { return (uint32_t)get_le(c, 4); }
static inline uint64_t get_u64(struct cur *c) { return get_le(c, 8); }

/* ---- the codec: recording_codec.c ------------------------------------------ */

/* A string into dst (NL_RECORDING_MAX_STR + 1 bytes at least), NUL-terminated. */
const char *nl_rec_get_str(struct cur *c, char *dst);
uint32_t nl_rec_crc(const void *p, size_t n);
/* Fingerprint of the API table (records name APIs by index). */
uint32_t nl_rec_api_table_crc(void);
void nl_rec_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* What the writer refuses before encoding: strings over the limit, bad api ids. */
bool nl_rec_str_ok(const char *s);
bool nl_rec_missing_ok(int n, const int *ids);
bool nl_rec_lib_ok(const struct nl_recording_lib *l);

/* The items and the trailer; a get leaves a problem in c->bad, str takes the
 * item's string (NL_RECORDING_MAX_STR + 1 bytes). */
void nl_rec_put_lib(struct enc *e, const struct nl_recording_lib *l);
void nl_rec_get_lib(struct cur *c, struct nl_recording_lib *l, char *str);
void nl_rec_put_target(struct enc *e, const struct nl_recording_target *t);
void nl_rec_get_target(struct cur *c, struct nl_recording_target *t, char *str);
void nl_rec_put_trailer(struct enc *e, const struct nl_recording_trailer *t);
void nl_rec_get_trailer(struct cur *c, struct nl_recording_trailer *t);
/* The item (kind, length, fields) at c into it. */
void nl_rec_get_item(struct cur *c, struct nl_recording_item *it, char *str);
/* A count of at most max entries of size bytes and room for them; NULL for
 * none, for a bad count (c->bad) or out of memory (*oom). */
void *nl_rec_get_array(struct cur *c, uint32_t max, size_t size, const char *too_many, int *n,
		       bool *oom);

/* The HEAD_LEN bytes of a frame's head at h, for the payload of len bytes. */
void nl_rec_frame_head(unsigned char *h, uint32_t tag, uint32_t seq, uint32_t nitems,
		       const unsigned char *payload, size_t len);

#endif
