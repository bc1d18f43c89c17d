// SPDX-License-Identifier: MIT
/*
 * Recording file writer and reader. docs/recording.md has the layout; in
 * short: a 16-byte preamble, then frames (24-byte head with its own CRC32,
 * payload with another), the first the header, then blocks of items, then
 * the trailer. Every field is written and read byte by byte in little-endian
 * order, so nothing depends on the alignment of the buffers.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

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

_Static_assert(sizeof(struct nl_rec_call) <= NL_RECORDING_MAX_REC, "record larger than the item limit");
_Static_assert(ITEM_MAX <= NL_RECORDING_BLOCK_BYTES, "an item must fit a block");
_Static_assert(NL_RECORDING_BLOCK_BYTES <= NL_RECORDING_MAX_FRAME, "writer blocks over the reader's limit");
_Static_assert(NL_API_COUNT <= 0xffff, "api ids are written as u16");

/* ---- little-endian encoding ----------------------------------------------- */

/* With p == NULL it only counts, so a caller can size the buffer first. */
struct enc {
	unsigned char *p;
	size_t len;
};

static void put_bytes(struct enc *e, const void *v, size_t n)
{
	if (e->p && n)
		memcpy(e->p + e->len, v, n);
	e->len += n;
}

static void put_le(struct enc *e, uint64_t v, int n)
{
	unsigned char b[8];

	for (int i = 0; i < n; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put_bytes(e, b, (size_t)n);
}

static void put_u16(struct enc *e, uint16_t v) { put_le(e, v, 2); }
static void put_u32(struct enc *e, uint32_t v) { put_le(e, v, 4); }
static void put_u64(struct enc *e, uint64_t v) { put_le(e, v, 8); }

static void put_str(struct enc *e, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put_u32(e, (uint32_t)n);
	put_bytes(e, s, n);
}

static uint64_t le_at(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void le_set(unsigned char *p, uint64_t v, int n)
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

static void cur_fail(struct cur *c, const char *why)
{
	if (!c->bad)
		c->bad = why;
}

static uint64_t get_le(struct cur *c, int n)
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

static uint16_t get_u16(struct cur *c) { return (uint16_t)get_le(c, 2); }
static uint32_t get_u32(struct cur *c) { return (uint32_t)get_le(c, 4); }
static uint64_t get_u64(struct cur *c) { return get_le(c, 8); }

/* A string into dst (NL_RECORDING_MAX_STR + 1 bytes at least), NUL-terminated. */
static const char *get_str(struct cur *c, char *dst)
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

static uint32_t crc(const void *p, size_t n)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

/*
 * Fingerprint of the API table: records name APIs by index and the decoder
 * reads their arguments by the table's slots, so a recording only replays
 * through the same table.
 */
static uint32_t api_table_crc(void)
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

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- items: shared by both sides ------------------------------------------- */

static bool str_ok(const char *s)
{
	return !s || strlen(s) <= NL_RECORDING_MAX_STR;
}

static bool missing_ok(int n, const int *ids)
{
	if (n < 0 || n > NL_API_COUNT)
		return false;
	for (int i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= NL_API_COUNT)
			return false;
	}
	return true;
}

static bool lib_ok(const struct nl_recording_lib *l)
{
	return l->lib >= 0 && l->lib < NL_NLIBS && l->attached >= 0 && l->retprobes >= 0 &&
	       str_ok(l->path) && missing_ok(l->nmissing, l->missing);
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

static void put_lib(struct enc *e, const struct nl_recording_lib *l)
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

static void get_lib(struct cur *c, struct nl_recording_lib *l, char *str)
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
	l->path = get_str(c, str);
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

static void put_target(struct enc *e, const struct nl_recording_target *t)
{
	put_u64(e, t->ts_ns);
	put_u32(e, t->pid);
	put_u32(e, t->mid_run ? 1 : 0);
	put_str(e, t->comm);
}

static void get_target(struct cur *c, struct nl_recording_target *t, char *str)
{
	uint32_t flags;

	memset(t, 0, sizeof(*t));
	t->ts_ns = get_u64(c);
	t->pid = get_u32(c);
	flags = get_u32(c);
	t->comm = get_str(c, str);
	if (flags & ~1u)
		cur_fail(c, "unknown target flags");
	t->mid_run = flags & 1;
}

static void put_trailer(struct enc *e, const struct nl_recording_trailer *t)
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

static void get_trailer(struct cur *c, struct nl_recording_trailer *t)
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

static void frame_head(unsigned char *h, uint32_t tag, uint32_t seq, uint32_t nitems,
		       const unsigned char *payload, size_t len)
{
	le_set(h, tag, 4);
	le_set(h + 4, seq, 4);
	le_set(h + 8, nitems, 4);
	le_set(h + 12, len, 4);
	le_set(h + 16, crc(payload, len), 4);
	le_set(h + 20, crc(h, 20), 4);
}

/* ---- writer -------------------------------------------------------------- */

struct nl_recording_writer {
	int fd;
	int err;          /* first failure, sticky */
	bool finished;
	bool regular;     /* a regular file: a failed block can be cut off again */
	uint32_t seq;     /* of the next frame */
	uint64_t written; /* bytes of complete frames */
	unsigned char *blk; /* HEAD_LEN bytes of room, then the items */
	size_t used;      /* item bytes in blk */
	uint32_t nitems;
};

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Write one frame whose HEAD_LEN bytes of head room precede payload in buf. */
static int write_frame(struct nl_recording_writer *w, unsigned char *buf, uint32_t tag,
		       uint32_t nitems, size_t len)
{
	int err;

	if (w->err)
		return w->err;
	frame_head(buf, tag, w->seq, nitems, buf + HEAD_LEN, len);
	err = write_all(w->fd, buf, HEAD_LEN + len);
	if (err) {
		/* leave the file readable up to its last complete frame */
		if (w->regular)
			(void)!ftruncate(w->fd, (off_t)w->written);
		w->err = err;
		return err;
	}
	w->seq++;
	w->written += HEAD_LEN + len;
	return 0;
}

int nl_recording_flush(struct nl_recording_writer *w)
{
	int err;

	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	if (!w->nitems)
		return 0;
	err = write_frame(w, w->blk, TAG_BLCK, w->nitems, w->used);
	w->used = 0;
	w->nitems = 0;
	return err;
}

/* Room for an item of n bytes; it is then written at the returned pointer. */
static unsigned char *item_room(struct nl_recording_writer *w, uint32_t kind, size_t n)
{
	unsigned char *p;

	if (w->used + ITEM_HEAD_LEN + n > NL_RECORDING_BLOCK_BYTES ||
	    w->nitems >= NL_RECORDING_BLOCK_ITEMS) {
		if (nl_recording_flush(w))
			return NULL;
	}
	p = w->blk + HEAD_LEN + w->used;
	le_set(p, kind, 4);
	le_set(p + 4, n, 4);
	w->used += ITEM_HEAD_LEN + n;
	w->nitems++;
	return p + ITEM_HEAD_LEN;
}

static int writable(const struct nl_recording_writer *w)
{
	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	return w->finished ? -EINVAL : 0;
}

int nl_recording_write_record(struct nl_recording_writer *w, const void *data, size_t size)
{
	unsigned char *p;
	int err = writable(w);

	if (err)
		return err;
	if (size > NL_RECORDING_MAX_REC || (size && !data))
		return -EINVAL;
	p = item_room(w, NL_RI_RECORD, size);
	if (!p)
		return w->err;
	if (size)
		memcpy(p, data, size);
	return 0;
}

/* An item whose payload an encoder writes: sized first, then written. */
#define WRITE_ENCODED(w, kind, put, arg)                              \
	do {                                                          \
		struct enc e_ = { 0 };                                \
		put(&e_, arg);                                        \
		e_.p = item_room(w, kind, e_.len);                    \
		if (!e_.p)                                            \
			return (w)->err;                              \
		e_.len = 0;                                           \
		put(&e_, arg);                                        \
	} while (0)

int nl_recording_write_lib(struct nl_recording_writer *w, const struct nl_recording_lib *l)
{
	int err = writable(w);

	if (err)
		return err;
	if (!l || !lib_ok(l))
		return -EINVAL;
	WRITE_ENCODED(w, NL_RI_LIB, put_lib, l);
	return 0;
}

int nl_recording_write_target(struct nl_recording_writer *w, const struct nl_recording_target *t)
{
	int err = writable(w);

	if (err)
		return err;
	if (!t || !str_ok(t->comm))
		return -EINVAL;
	WRITE_ENCODED(w, NL_RI_TARGET, put_target, t);
	return 0;
}

/* Records lost and target exited: u64 ts, u32 pid, u32 reserved, [u64 count]. */
static int write_pid_event(struct nl_recording_writer *w, uint32_t kind, uint32_t pid,
			   uint64_t ts_ns, const uint64_t *count)
{
	unsigned char *p;
	int err = writable(w);

	if (err)
		return err;
	p = item_room(w, kind, count ? 24 : 16);
	if (!p)
		return w->err;
	le_set(p, ts_ns, 8);
	le_set(p + 8, pid, 4);
	le_set(p + 12, 0, 4);
	if (count)
		le_set(p + 16, *count, 8);
	return 0;
}

int nl_recording_write_lost(struct nl_recording_writer *w, uint32_t pid, uint64_t count,
			    uint64_t ts_ns)
{
	return write_pid_event(w, NL_RI_LOST, pid, ts_ns, &count);
}

int nl_recording_write_exit(struct nl_recording_writer *w, uint32_t pid, uint64_t ts_ns)
{
	return write_pid_event(w, NL_RI_EXIT, pid, ts_ns, NULL);
}

int nl_recording_finish(struct nl_recording_writer *w, const struct nl_recording_trailer *t)
{
	unsigned char buf[HEAD_LEN + 128 + 2 * NL_API_COUNT];
	struct enc e = { .p = buf + HEAD_LEN };
	int err = writable(w);

	if (err)
		return err;
	if (!t || !missing_ok(t->nmissing, t->missing))
		return -EINVAL;
	err = nl_recording_flush(w);
	if (err)
		return err;
	put_trailer(&e, t);
	err = write_frame(w, buf, TAG_TAIL, 0, e.len);
	w->finished = true;
	return err;
}

uint64_t nl_recording_bytes(const struct nl_recording_writer *w)
{
	return w ? w->written : 0;
}

static void put_header(struct enc *e, const struct nl_recording_header *h)
{
	put_u32(e, (uint32_t)sizeof(struct nl_rec_call));
	put_u32(e, h->rec_schema);
	put_u32(e, NL_API_COUNT);
	put_u32(e, api_table_crc());
	put_u64(e, h->start_mono_ns);
	put_u64(e, h->start_real_ns);
	put_str(e, h->tool_version);
	put_str(e, h->kernel_release);
	put_u32(e, (uint32_t)h->argc);
	for (int i = 0; i < h->argc; i++)
		put_str(e, h->argv[i]);
	put_u32(e, (uint32_t)h->ntargets);
	for (int i = 0; i < h->ntargets; i++)
		put_target(e, &h->targets[i]);
	put_u32(e, (uint32_t)h->nlibs);
	for (int i = 0; i < h->nlibs; i++)
		put_lib(e, &h->libs[i]);
}

static const char *header_problem(const struct nl_recording_header *h)
{
	if (!str_ok(h->tool_version) || !str_ok(h->kernel_release))
		return "version string longer than 4096 bytes";
	if (h->argc < 0 || h->argc > NL_RECORDING_MAX_ARGS || (h->argc && !h->argv))
		return "more than 1024 command-line arguments";
	for (int i = 0; i < h->argc; i++) {
		if (!str_ok(h->argv[i]))
			return "a command-line argument longer than 4096 bytes";
	}
	if (h->ntargets < 0 || h->ntargets > NL_RECORDING_MAX_TARGETS || (h->ntargets && !h->targets))
		return "more than 64 targets";
	for (int i = 0; i < h->ntargets; i++) {
		if (!str_ok(h->targets[i].comm))
			return "a target name longer than 4096 bytes";
	}
	if (h->nlibs < 0 || h->nlibs > NL_RECORDING_MAX_LIBS || (h->nlibs && !h->libs))
		return "more than 256 libraries";
	for (int i = 0; i < h->nlibs; i++) {
		if (!lib_ok(&h->libs[i]))
			return "a library with a path over 4096 bytes or bad api ids";
	}
	return NULL;
}

int nl_recording_create(struct nl_recording_writer **out, const char *path, bool force,
			const struct nl_recording_header *h, char *err, size_t errlen)
{
	struct nl_recording_writer *w = NULL;
	struct enc e = { 0 };
	unsigned char *hdr = NULL;
	const char *why;
	struct stat st;
	int fd, ret;

	*out = NULL;
	if (!path || !h) {
		set_err(err, errlen, "recording: no file or header given");
		return -EINVAL;
	}
	why = header_problem(h);
	if (why) {
		set_err(err, errlen, "%s: cannot record: %s", path, why);
		return -E2BIG;
	}
	put_header(&e, h);
	if (e.len > NL_RECORDING_MAX_FRAME) {
		set_err(err, errlen, "%s: cannot record: the header would take %zu bytes (limit %u)",
			path, e.len, NL_RECORDING_MAX_FRAME);
		return -E2BIG;
	}

	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), 0644);
	if (fd < 0) {
		ret = -errno;
		if (ret == -EEXIST)
			set_err(err, errlen, "%s: exists (use --force to overwrite)", path);
		else if (ret == -ELOOP)
			set_err(err, errlen, "%s: is a symbolic link; refusing to write through it", path);
		else
			set_err(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	w = calloc(1, sizeof(*w));
	hdr = malloc(PREAMBLE_LEN + HEAD_LEN + e.len);
	if (w)
		w->blk = malloc(HEAD_LEN + NL_RECORDING_BLOCK_BYTES);
	if (!w || !hdr || !w->blk) {
		ret = -ENOMEM;
		set_err(err, errlen, "%s: %s", path, strerror(ENOMEM));
		goto fail;
	}
	w->fd = fd;
	w->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);

	memcpy(hdr, MAGIC, MAGIC_LEN);
	le_set(hdr + 8, BOM, 4);
	le_set(hdr + 12, NL_RECORDING_VERSION, 2);
	le_set(hdr + 14, 0, 2);
	e.p = hdr + PREAMBLE_LEN + HEAD_LEN;
	e.len = 0;
	put_header(&e, h);
	/* the preamble goes out with the header frame: one write */
	frame_head(hdr + PREAMBLE_LEN, TAG_HEAD, 0, 0, e.p, e.len);
	ret = write_all(fd, hdr, PREAMBLE_LEN + HEAD_LEN + e.len);
	if (ret) {
		set_err(err, errlen, "%s: %s", path, strerror(-ret));
		goto fail;
	}
	w->seq = 1;
	w->written = PREAMBLE_LEN + HEAD_LEN + e.len;
	free(hdr);
	*out = w;
	return 0;
fail:
	free(hdr);
	if (w)
		free(w->blk);
	free(w);
	close(fd);
	return ret;
}

int nl_recording_close(struct nl_recording_writer *w)
{
	int err;

	if (!w)
		return 0;
	if (!w->finished)
		nl_recording_flush(w);
	err = w->err;
	if (close(w->fd) && !err)
		err = -errno;
	free(w->blk);
	free(w);
	return err;
}

/* ---- reader -------------------------------------------------------------- */

struct nl_recording_reader {
	char *name;
	int fd;                   /* -1: memory */
	uint64_t fpos;            /* bytes read from fd */
	const unsigned char *mem;
	size_t memlen;
	uint64_t size;            /* size of the input when known, else UINT64_MAX */
	uint64_t off;             /* of the next frame */
	uint32_t seq;             /* number the next frame must carry */
	uint32_t rec_schema;
	bool ended;               /* next returns result from now on */
	int result;
	char msg[512];            /* the line that goes with the result or error */
	struct {                  /* where read_frame found the input cut short */
		uint32_t tag;
		uint64_t off, expected, present;
	} trunc;

	unsigned char *buf;       /* payload of the current frame */
	size_t bufcap;
	struct cur blk;           /* items of the current block */
	uint32_t items_left;

	struct nl_recording_header h;
	char *arena;              /* the header's strings */
	const char **argv;
	struct nl_recording_target *targets;
	struct nl_recording_lib *libs;

	bool has_trailer;
	struct nl_recording_trailer trailer;
	char str[NL_RECORDING_MAX_STR + 1]; /* the current item's string */
};

static void msg(struct nl_recording_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msg(struct nl_recording_reader *r, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	n = (size_t)snprintf(r->msg, sizeof(r->msg), "%s: ", r->name);
	if (n >= sizeof(r->msg))
		return;
	va_start(ap, fmt);
	vsnprintf(r->msg + n, sizeof(r->msg) - n, fmt, ap);
	va_end(ap);
}

/*
 * Up to n bytes at offset off; returns how many there were, or -EIO. The
 * reader only moves forward, so a file is read with read(2): a pipe works too.
 */
static ssize_t read_at(struct nl_recording_reader *r, uint64_t off, void *dst, size_t n)
{
	size_t got = 0;

	if (!n)
		return 0;
	if (r->fd < 0) {
		if (off >= r->memlen)
			return 0;
		if (n > r->memlen - off)
			n = (size_t)(r->memlen - off);
		memcpy(dst, r->mem + off, n);
		return (ssize_t)n;
	}
	if (off != r->fpos)
		return -EIO;
	while (got < n) {
		ssize_t k = read(r->fd, (unsigned char *)dst + got, n - got);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -EIO;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	r->fpos += got;
	return (ssize_t)got;
}

static const char *frame_name(uint32_t tag)
{
	return tag == TAG_HEAD ? "header" : tag == TAG_TAIL ? "trailer" : "block";
}

enum { FR_OK = 0, FR_EOF, FR_TRUNC };

static int truncated(struct nl_recording_reader *r, uint32_t tag, uint64_t off, uint64_t expected,
		     uint64_t present)
{
	r->trunc.tag = tag;
	r->trunc.off = off;
	r->trunc.expected = expected;
	r->trunc.present = present;
	return FR_TRUNC;
}

/*
 * Read the frame at r->off into r->buf. FR_OK (tag, nitems and length set),
 * FR_EOF when the input ends right there, FR_TRUNC when it ends inside the
 * frame (r->trunc says where), or -errno with r->msg.
 */
static int read_frame(struct nl_recording_reader *r, uint32_t *tag, uint32_t *nitems, size_t *len)
{
	unsigned char h[HEAD_LEN];
	uint64_t off = r->off;
	uint32_t plen, seq;
	ssize_t got;

	got = read_at(r, off, h, HEAD_LEN);
	if (got < 0) {
		msg(r, "read error at offset %" PRIu64, off);
		return -EIO;
	}
	if (got == 0)
		return FR_EOF;
	if (got < HEAD_LEN)
		return truncated(r, TAG_BLCK, off, HEAD_LEN, (uint64_t)got);
	if (le_at(h + 20, 4) != crc(h, 20)) {
		msg(r, "checksum mismatch in block header at offset %" PRIu64, off);
		return -EBADMSG;
	}
	*tag = (uint32_t)le_at(h, 4);
	seq = (uint32_t)le_at(h + 4, 4);
	*nitems = (uint32_t)le_at(h + 8, 4);
	plen = (uint32_t)le_at(h + 12, 4);
	if (*tag != TAG_HEAD && *tag != TAG_BLCK && *tag != TAG_TAIL) {
		msg(r, "unknown block type 0x%08" PRIx32 " at offset %" PRIu64, *tag, off);
		return -EBADMSG;
	}
	if (seq != r->seq) {
		msg(r, "%s at offset %" PRIu64 " out of sequence (number %" PRIu32 ", expected %" PRIu32 ")",
		    frame_name(*tag), off, seq, r->seq);
		return -EBADMSG;
	}
	if (plen > NL_RECORDING_MAX_FRAME) {
		msg(r, "%s at offset %" PRIu64 " claims %" PRIu32 " bytes (limit %u)", frame_name(*tag),
		    off, plen, NL_RECORDING_MAX_FRAME);
		return -EBADMSG;
	}
	if (*tag == TAG_BLCK ? *nitems > NL_RECORDING_BLOCK_ITEMS : *nitems != 0) {
		msg(r, "%s at offset %" PRIu64 " claims %" PRIu32 " items", frame_name(*tag), off, *nitems);
		return -EBADMSG;
	}
	/* a length the input cannot hold is a truncation: found before allocating */
	if (r->size != UINT64_MAX && r->size >= off + HEAD_LEN && r->size - off - HEAD_LEN < plen)
		return truncated(r, *tag, off, (uint64_t)HEAD_LEN + plen, r->size - off);
	if (plen > r->bufcap) {
		unsigned char *nb = realloc(r->buf, plen);

		if (!nb) {
			msg(r, "%s", strerror(ENOMEM));
			return -ENOMEM;
		}
		r->buf = nb;
		r->bufcap = plen;
	}
	got = read_at(r, off + HEAD_LEN, r->buf, plen);
	if (got < 0) {
		msg(r, "read error at offset %" PRIu64, off + HEAD_LEN);
		return -EIO;
	}
	if ((size_t)got < plen)
		return truncated(r, *tag, off, (uint64_t)HEAD_LEN + plen, (uint64_t)HEAD_LEN + (uint64_t)got);
	if (le_at(h + 16, 4) != crc(r->buf, plen)) {
		msg(r, "checksum mismatch in %s at offset %" PRIu64, frame_name(*tag), off);
		return -EBADMSG;
	}
	*len = plen;
	return FR_OK;
}

/* Decode the item at c into it; a problem is left in c->bad. */
static void get_item(struct nl_recording_reader *r, struct cur *c, struct nl_recording_item *it)
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
		get_lib(&in, &it->lib, r->str);
		break;
	case NL_RI_TARGET:
		get_target(&in, &it->target, r->str);
		break;
	case NL_RI_LOST:
		it->lost.ts_ns = get_u64(&in);
		it->lost.pid = get_u32(&in);
		if (get_u32(&in))
			cur_fail(&in, "reserved field not zero");
		it->lost.count = get_u64(&in);
		break;
	case NL_RI_EXIT:
		it->exit.ts_ns = get_u64(&in);
		it->exit.pid = get_u32(&in);
		if (get_u32(&in))
			cur_fail(&in, "reserved field not zero");
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

static int end(struct nl_recording_reader *r, int result)
{
	r->ended = true;
	r->result = result;
	return result;
}

static int read_trailer(struct nl_recording_reader *r, size_t len, uint64_t off)
{
	struct cur c = { .p = r->buf, .len = len };
	unsigned char extra;

	get_trailer(&c, &r->trailer);
	if (!c.bad && c.pos != c.len)
		cur_fail(&c, "longer than its fields");
	if (c.bad) {
		msg(r, "malformed trailer at offset %" PRIu64 ": %s", off, c.bad);
		return end(r, -EBADMSG);
	}
	if (read_at(r, r->off, &extra, 1) != 0) {
		msg(r, "unexpected data after the trailer at offset %" PRIu64, r->off);
		return end(r, -EBADMSG);
	}
	r->has_trailer = true;
	r->msg[0] = '\0';
	return end(r, NL_RECORDING_END);
}

/* Check every item of the block just read, so that a block is all or nothing. */
static int check_block(struct nl_recording_reader *r, size_t len, uint32_t nitems, uint64_t off)
{
	struct nl_recording_item *scratch = malloc(sizeof(*scratch));

	if (!scratch) {
		msg(r, "%s", strerror(ENOMEM));
		return end(r, -ENOMEM);
	}
	r->blk = (struct cur){ .p = r->buf, .len = len };
	for (uint32_t i = 0; i < nitems && !r->blk.bad; i++)
		get_item(r, &r->blk, scratch);
	free(scratch);
	if (!r->blk.bad && r->blk.pos != r->blk.len)
		cur_fail(&r->blk, "more bytes than its items");
	if (r->blk.bad) {
		msg(r, "malformed block at offset %" PRIu64 ": %s", off, r->blk.bad);
		return end(r, -EBADMSG);
	}
	r->blk.pos = 0;
	r->items_left = nitems;
	return 0;
}

/* Read the next frame: a block (its items then in r->blk) or the trailer. */
static void next_frame(struct nl_recording_reader *r)
{
	uint32_t tag = 0, nitems = 0;
	size_t len = 0;
	uint64_t off = r->off;
	int ret = read_frame(r, &tag, &nitems, &len);

	if (ret == FR_EOF) {
		msg(r, "no trailer: the recording ends at offset %" PRIu64 " without a trailer", off);
		end(r, NL_RECORDING_NO_TRAILER);
		return;
	}
	if (ret == FR_TRUNC) {
		msg(r,
		    "no trailer: the recording ends at offset %" PRIu64 " without a trailer; the %s "
		    "there is truncated (expected %" PRIu64 " bytes, %" PRIu64 " present)",
		    off, frame_name(r->trunc.tag), r->trunc.expected, r->trunc.present);
		end(r, NL_RECORDING_NO_TRAILER);
		return;
	}
	if (ret < 0) {
		end(r, ret);
		return;
	}
	if (tag == TAG_HEAD) {
		msg(r, "a second header at offset %" PRIu64, off);
		end(r, -EBADMSG);
		return;
	}
	r->off += HEAD_LEN + len;
	r->seq++;
	if (tag == TAG_TAIL)
		read_trailer(r, len, off);
	else
		check_block(r, len, nitems, off);
}

int nl_recording_next(struct nl_recording_reader *r, struct nl_recording_item *it, char *err,
		      size_t errlen)
{
	if (!r || !it)
		return -EINVAL;
	while (!r->ended && !r->items_left)
		next_frame(r);
	if (r->ended) {
		if (r->msg[0])
			set_err(err, errlen, "%s", r->msg);
		return r->result;
	}
	get_item(r, &r->blk, it);
	r->items_left--;
	return NL_RECORDING_ITEM;
}

/* A string of the header into the arena at *a. The arena has the payload's
 * length: a string takes 4 + n bytes of the payload and n + 1 of the arena. */
static const char *arena_str(struct cur *c, char **a)
{
	const char *s;

	if (c->bad)
		return "";
	s = get_str(c, *a);
	if (c->bad)
		return "";
	*a += strlen(s) + 1;
	return s;
}

/* A count of at most max entries of size bytes and room for them; NULL for
 * none, for a bad count (c->bad) or out of memory (*oom). */
static void *get_array(struct cur *c, uint32_t max, size_t size, const char *too_many, int *n,
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

static int parse_header(struct nl_recording_reader *r, size_t len, uint64_t off)
{
	struct cur c = { .p = r->buf, .len = len };
	struct nl_recording_header *h = &r->h;
	uint32_t api_count, api_crc;
	bool oom = false;
	char *a;

	r->arena = malloc(len + 1);
	if (!r->arena)
		goto nomem;
	a = r->arena;
	h->format_version = NL_RECORDING_VERSION;
	h->rec_size = get_u32(&c);
	h->rec_schema = get_u32(&c);
	api_count = get_u32(&c);
	api_crc = get_u32(&c);
	h->start_mono_ns = get_u64(&c);
	h->start_real_ns = get_u64(&c);
	if (!c.bad && h->rec_size != sizeof(struct nl_rec_call)) {
		msg(r, "record size %" PRIu32 " does not match %zu", h->rec_size, sizeof(struct nl_rec_call));
		return -EPROTO;
	}
	if (!c.bad && r->rec_schema && h->rec_schema != r->rec_schema) {
		msg(r, "record schema %" PRIu32 " not supported (this tool decodes %" PRIu32 ")",
		    h->rec_schema, r->rec_schema);
		return -EPROTO;
	}
	if (!c.bad && (api_count != NL_API_COUNT || api_crc != api_table_crc())) {
		msg(r,
		    "recorded with another API table (%" PRIu32 " entries, fingerprint %08" PRIx32
		    "; this tool: %d, %08" PRIx32 ")",
		    api_count, api_crc, NL_API_COUNT, api_table_crc());
		return -EPROTO;
	}
	h->tool_version = arena_str(&c, &a);
	h->kernel_release = arena_str(&c, &a);

	r->argv = get_array(&c, NL_RECORDING_MAX_ARGS, sizeof(*r->argv),
			    "more than 1024 command-line arguments", &h->argc, &oom);
	for (int i = 0; i < h->argc; i++)
		r->argv[i] = arena_str(&c, &a);
	r->targets = get_array(&c, NL_RECORDING_MAX_TARGETS, sizeof(*r->targets),
			       "more than 64 targets", &h->ntargets, &oom);
	for (int i = 0; i < h->ntargets && !c.bad; i++) {
		get_target(&c, &r->targets[i], a);
		a += strlen(a) + 1;
	}
	r->libs = get_array(&c, NL_RECORDING_MAX_LIBS, sizeof(*r->libs), "more than 256 libraries",
			    &h->nlibs, &oom);
	for (int i = 0; i < h->nlibs && !c.bad; i++) {
		get_lib(&c, &r->libs[i], a);
		a += strlen(a) + 1;
	}
	if (oom)
		goto nomem;
	h->argv = r->argv;
	h->targets = r->targets;
	h->libs = r->libs;
	if (!c.bad && c.pos != c.len)
		cur_fail(&c, "longer than its fields");
	if (c.bad) {
		msg(r, "malformed header at offset %" PRIu64 ": %s", off, c.bad);
		return -EBADMSG;
	}
	return 0;
nomem:
	msg(r, "%s", strerror(ENOMEM));
	return -ENOMEM;
}

/* The preamble: 0, or -errno with r->msg. */
static int read_preamble(struct nl_recording_reader *r)
{
	unsigned char p[PREAMBLE_LEN];
	ssize_t got = read_at(r, 0, p, PREAMBLE_LEN);
	uint32_t bom;
	unsigned version;

	if (got < 0) {
		msg(r, "read error at offset 0");
		return -EIO;
	}
	/* a prefix of the magic is a recording cut short, anything else is not one */
	if (memcmp(p, MAGIC, got < MAGIC_LEN ? (size_t)got : MAGIC_LEN) || !got) {
		msg(r, "not a nanlog-bpf recording%s", got ? "" : " (empty file)");
		return -EINVAL;
	}
	if (got < PREAMBLE_LEN) {
		msg(r, "truncated header at offset 0 (expected %d bytes, %zd present)", PREAMBLE_LEN, got);
		return -EBADMSG;
	}
	bom = (uint32_t)le_at(p + 8, 4);
	if (bom == __builtin_bswap32(BOM)) {
		msg(r, "big-endian recording: the format is little-endian (x86-64) only");
		return -EPROTONOSUPPORT;
	}
	if (bom != BOM) {
		msg(r, "bad byte-order mark at offset 8");
		return -EBADMSG;
	}
	version = (unsigned)le_at(p + 12, 2);
	if (version != NL_RECORDING_VERSION) {
		msg(r, "format version %u not supported (this tool reads %d)", version, NL_RECORDING_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (le_at(p + 14, 2)) {
		msg(r, "reserved field at offset 14 not zero");
		return -EBADMSG;
	}
	return 0;
}

/* Preamble and header: 0, or -errno with r->msg. */
static int read_start(struct nl_recording_reader *r)
{
	uint32_t tag = 0, nitems = 0;
	size_t len = 0;
	int ret = read_preamble(r);

	if (ret)
		return ret;
	r->off = PREAMBLE_LEN;
	ret = read_frame(r, &tag, &nitems, &len);
	if (ret == FR_EOF)
		truncated(r, TAG_HEAD, PREAMBLE_LEN, HEAD_LEN, 0);
	if (ret == FR_EOF || ret == FR_TRUNC) {
		msg(r, "truncated header at offset %" PRIu64 " (expected %" PRIu64 " bytes, %" PRIu64 " present)",
		    r->trunc.off, r->trunc.expected, r->trunc.present);
		return -EBADMSG;
	}
	if (ret < 0)
		return ret;
	if (tag != TAG_HEAD) {
		msg(r, "no header at offset %d", PREAMBLE_LEN);
		return -EBADMSG;
	}
	ret = parse_header(r, len, r->off);
	if (ret)
		return ret;
	r->off += HEAD_LEN + len;
	r->seq++;
	return 0;
}

static int open_common(struct nl_recording_reader *r, struct nl_recording_reader **out,
		       const char *name, uint32_t rec_schema, char *err, size_t errlen)
{
	int ret;

	r->rec_schema = rec_schema;
	r->name = strdup(name);
	if (!r->name) {
		set_err(err, errlen, "%s: %s", name, strerror(ENOMEM));
		nl_recording_free(r);
		return -ENOMEM;
	}
	ret = read_start(r);
	if (ret) {
		set_err(err, errlen, "%s", r->msg);
		nl_recording_free(r);
		return ret;
	}
	r->msg[0] = '\0';
	*out = r;
	return 0;
}

int nl_recording_open(struct nl_recording_reader **out, const char *path, uint32_t rec_schema,
		      char *err, size_t errlen)
{
	struct nl_recording_reader *r;
	struct stat st;
	int fd, ret;

	*out = NULL;
	if (!path) {
		set_err(err, errlen, "recording: no file given");
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		set_err(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		set_err(err, errlen, "%s: %s", path, strerror(EISDIR));
		return -EISDIR;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		set_err(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	r->fd = fd;
	r->size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : UINT64_MAX;
	return open_common(r, out, path, rec_schema, err, errlen);
}

int nl_recording_open_mem(struct nl_recording_reader **out, const void *buf, size_t len,
			  const char *name, uint32_t rec_schema, char *err, size_t errlen)
{
	struct nl_recording_reader *r;

	*out = NULL;
	if (!name)
		name = "<memory>";
	if (!buf && len) {
		set_err(err, errlen, "%s: no buffer given", name);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		set_err(err, errlen, "%s: %s", name, strerror(ENOMEM));
		return -ENOMEM;
	}
	r->fd = -1;
	r->mem = buf;
	r->memlen = len;
	r->size = len;
	return open_common(r, out, name, rec_schema, err, errlen);
}

const struct nl_recording_header *nl_recording_header(const struct nl_recording_reader *r)
{
	return r ? &r->h : NULL;
}

const struct nl_recording_trailer *nl_recording_trailer(const struct nl_recording_reader *r)
{
	return r && r->has_trailer ? &r->trailer : NULL;
}

uint64_t nl_recording_offset(const struct nl_recording_reader *r)
{
	return r ? r->off : 0;
}

void nl_recording_free(struct nl_recording_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->name);
	free(r->buf);
	free(r->arena);
	free(r->argv);
	free(r->targets);
	free(r->libs);
	free(r);
}
