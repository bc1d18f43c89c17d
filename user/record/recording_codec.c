// SPDX-License-Identifier: MIT
/*
 * The recording format's codec: strings, checksums and the API table's
 * fingerprint, the items (libraries, targets, records, lost and exit
 * events), the trailer and the frame head, encoded and decoded field by
 * field in little-endian order, so nothing depends on the alignment of the
 * buffers. The writer (recording_write.c) and the reader (recording_read.c)
 * share it through recording_int.h; docs/recording.md has the layout.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "record/recording_int.h"


_Static_assert(sizeof(struct nl_rec_call) <= NL_RECORDING_MAX_REC, "record larger than the item limit");
_Static_assert(ITEM_MAX <= NL_RECORDING_BLOCK_BYTES, "an item must fit a block");
_Static_assert(NL_RECORDING_BLOCK_BYTES <= NL_RECORDING_MAX_FRAME, "writer blocks over the reader's limit");

/* A string into dst (NL_RECORDING_MAX_STR + 1 bytes at least), NUL-terminated. */
const char *nl_rec_get_str(struct cur *c, char *dst)
{
	uint32_t n = get_u32(c);

	dst[0] = '\0';
	if (c->bad)
		return dst;
	if (n > NL_RECORDING_MAX_STR) {
		cur_fail(c, "string longer than 4096 bytes");
		return dst;
	}
	if (c->len - c->pos < n) {
		cur_fail(c, "string runs past the end");
		return dst;
	}
	if (memchr(c->p + c->pos, '\0', n)) {
		cur_fail(c, "string with a NUL byte");
		return dst;
	}
	memcpy(dst, c->p + c->pos, n);
	dst[n] = '\0';
	c->pos += n;
	return dst;
}

uint32_t nl_rec_crc(const void *p, size_t n)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

/*
 * Fingerprint of the API table: records name APIs by index and the decoder
 * reads their arguments by the table's slots, so a recording only replays
 * through the same table.
 */
uint32_t nl_rec_api_table_crc(void)
{
	uLong c = crc32(0L, Z_NULL, 0);

	for (int i = 0; i < NL_API_COUNT; i++) {
		const struct nl_api_info *a = &nl_api_info[i];
		const int8_t v[] = { (int8_t)a->lib, (int8_t)a->kind, (int8_t)a->flags,
				     (int8_t)a->nstack, a->slot_stream, a->slot_event,
				     a->slot_event2, a->slot_dst, a->slot_src, a->slot_bytes,
				     a->slot_kind, a->fixed_kind, a->slot_flags, a->slot_prio,
				     a->slot_fn, a->slot_peer, a->slot_count, a->slot_out,
				     a->out_size };

		c = crc32(c, (const Bytef *)a->name, (uInt)strlen(a->name) + 1);
		c = crc32(c, (const Bytef *)(a->alt ? a->alt : ""), (uInt)strlen(a->alt ? a->alt : "") + 1);
		c = crc32(c, (const Bytef *)v, sizeof(v));
	}
	return (uint32_t)c;
}

void nl_rec_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- items: shared by both sides ------------------------------------------- */

bool nl_rec_str_ok(const char *s)
{
	return !s || strlen(s) <= NL_RECORDING_MAX_STR;
}

bool nl_rec_missing_ok(int n, const int *ids)
{
	if (n < 0 || n > NL_API_COUNT)
		return false;
	for (int i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= NL_API_COUNT)
			return false;
	}
	return true;
}

bool nl_rec_lib_ok(const struct nl_recording_lib *l)
{
	return l->lib >= 0 && l->lib < NL_NLIBS && l->attached >= 0 && l->retprobes >= 0 &&
	       nl_rec_str_ok(l->path) && nl_rec_missing_ok(l->nmissing, l->missing);
}

static void put_missing(struct enc *e, int n, const int *ids)
{
	put_u16(e, (uint16_t)n);
	for (int i = 0; i < n; i++)
		put_u16(e, (uint16_t)ids[i]);
}

static int get_missing(struct cur *c, int *n, int *ids)
{
	uint16_t cnt = get_u16(c);

	*n = 0;
	if (cnt > NL_API_COUNT) {
		cur_fail(c, "more missing api ids than the API table has");
		return -1;
	}
	for (int i = 0; i < cnt && !c->bad; i++) {
		uint16_t id = get_u16(c);

		if (id >= NL_API_COUNT) {
			cur_fail(c, "api id outside the API table");
			return -1;
		}
		ids[(*n)++] = id;
	}
	return c->bad ? -1 : 0;
}

void nl_rec_put_lib(struct enc *e, const struct nl_recording_lib *l)
{
	put_u64(e, l->ts_ns);
	put_u32(e, l->pid);
	put_u16(e, (uint16_t)l->lib);
	put_u16(e, l->retprobes_allowed ? 1 : 0);
	put_u32(e, (uint32_t)l->attached);
	put_u32(e, (uint32_t)l->retprobes);
	put_u64(e, l->elapsed_ns);
	put_missing(e, l->nmissing, l->missing);
	put_str(e, l->path);
}

void nl_rec_get_lib(struct cur *c, struct nl_recording_lib *l, char *str)
{
	uint16_t flags;
	uint32_t attached, retprobes;

	memset(l, 0, sizeof(*l));
	l->ts_ns = get_u64(c);
	l->pid = get_u32(c);
	l->lib = get_u16(c);
	flags = get_u16(c);
	attached = get_u32(c);
	retprobes = get_u32(c);
	l->elapsed_ns = get_u64(c);
	get_missing(c, &l->nmissing, l->missing);
	l->path = nl_rec_get_str(c, str);
	if (l->lib >= NL_NLIBS)
		cur_fail(c, "library index out of range");
	if (flags & ~1u)
		cur_fail(c, "unknown library flags");
	if (attached > INT32_MAX || retprobes > INT32_MAX)
		cur_fail(c, "probe count out of range");
	l->retprobes_allowed = flags & 1;
	l->attached = (int)attached;
	l->retprobes = (int)retprobes;
}

void nl_rec_put_target(struct enc *e, const struct nl_recording_target *t)
{
	put_u64(e, t->ts_ns);
	put_u32(e, t->pid);
	put_u32(e, t->mid_run ? 1 : 0);
	put_str(e, t->comm);
}

void nl_rec_get_target(struct cur *c, struct nl_recording_target *t, char *str)
{
	uint32_t flags;

	memset(t, 0, sizeof(*t));
	t->ts_ns = get_u64(c);
	t->pid = get_u32(c);
	flags = get_u32(c);
	t->comm = nl_rec_get_str(c, str);
	if (flags & ~1u)
		cur_fail(c, "unknown target flags");
	t->mid_run = flags & 1;
}

void nl_rec_put_trailer(struct enc *e, const struct nl_recording_trailer *t)
{
	uint64_t cpu;

	memcpy(&cpu, &t->cpu_ms, sizeof(cpu));
	put_u64(e, t->end_ns);
	put_u64(e, t->records);
	put_u64(e, t->bad_records);
	put_u64(e, t->lost_ringbuf);
	put_u64(e, t->lost_stash);
	put_u64(e, t->nested_folded);
	put_u64(e, t->attach_ns);
	put_u64(e, t->duration_ns);
	put_u64(e, cpu);
	put_u32(e, t->probes_attached);
	put_u32(e, t->retprobes_attached);
	put_u32(e, (uint32_t)t->err);
	put_missing(e, t->nmissing, t->missing);
}

void nl_rec_get_trailer(struct cur *c, struct nl_recording_trailer *t)
{
	uint64_t cpu;

	memset(t, 0, sizeof(*t));
	t->end_ns = get_u64(c);
	t->records = get_u64(c);
	t->bad_records = get_u64(c);
	t->lost_ringbuf = get_u64(c);
	t->lost_stash = get_u64(c);
	t->nested_folded = get_u64(c);
	t->attach_ns = get_u64(c);
	t->duration_ns = get_u64(c);
	cpu = get_u64(c);
	memcpy(&t->cpu_ms, &cpu, sizeof(cpu));
	t->probes_attached = get_u32(c);
	t->retprobes_attached = get_u32(c);
	t->err = (int32_t)get_u32(c);
	get_missing(c, &t->nmissing, t->missing);
}

void nl_rec_frame_head(unsigned char *h, uint32_t tag, uint32_t seq, uint32_t nitems,
		       const unsigned char *payload, size_t len)
{
	le_set(h, tag, 4);
	le_set(h + 4, seq, 4);
	le_set(h + 8, nitems, 4);
	le_set(h + 12, len, 4);
	le_set(h + 16, nl_rec_crc(payload, len), 4);
	le_set(h + 20, nl_rec_crc(h, 20), 4);
}

/* Records lost and target exited begin alike (write_pid_event): u64 ts,
 * u32 pid, u32 reserved. */
static void get_pid_event(struct cur *c, uint64_t *ts_ns, uint32_t *pid)
{
	*ts_ns = get_u64(c);
	*pid = get_u32(c);
	if (get_u32(c))
		cur_fail(c, "reserved field not zero");
}

/* Decode the item at c into it; a problem is left in c->bad. */
void nl_rec_get_item(struct cur *c, struct nl_recording_item *it, char *str)
{
	uint32_t kind = get_u32(c), len = get_u32(c);
	struct cur in;

	if (c->bad)
		return;
	if (c->len - c->pos < len) {
		cur_fail(c, "item runs past the end of its block");
		return;
	}
	in = (struct cur){ .p = c->p + c->pos, .len = len };
	c->pos += len;
	it->kind = (int)kind;
	switch (kind) {
	case NL_RI_RECORD:
		if (len > NL_RECORDING_MAX_REC) {
			cur_fail(c, "record over 4096 bytes");
			return;
		}
		it->rec.size = len;
		if (len)
			memcpy(it->rec.data.bytes, in.p, len);
		in.pos = len;
		break;
	case NL_RI_LIB:
		nl_rec_get_lib(&in, &it->lib, str);
		break;
	case NL_RI_TARGET:
		nl_rec_get_target(&in, &it->target, str);
		break;
	case NL_RI_LOST:
		get_pid_event(&in, &it->lost.ts_ns, &it->lost.pid);
		it->lost.count = get_u64(&in);
		break;
	case NL_RI_EXIT:
		get_pid_event(&in, &it->exit.ts_ns, &it->exit.pid);
		break;
	default:
		cur_fail(c, "unknown item kind");
		return;
	}
	if (!in.bad && in.pos != in.len)
		cur_fail(&in, "item longer than its fields");
	if (in.bad)
		cur_fail(c, in.bad);
}

/* A count of at most max entries of size bytes and room for them; NULL for
 * none, for a bad count (c->bad) or out of memory (*oom). */
void *nl_rec_get_array(struct cur *c, uint32_t max, size_t size, const char *too_many, int *n,
		       bool *oom)
{
	uint32_t cnt = get_u32(c);
	void *p;

	*n = 0;
	if (cnt > max)
		cur_fail(c, too_many);
	if (c->bad || !cnt || *oom)
		return NULL;
	p = calloc(cnt, size);
	if (!p) {
		*oom = true;
		return NULL;
	}
	*n = (int)cnt;
	return p;
}
