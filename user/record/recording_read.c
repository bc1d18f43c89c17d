// SPDX-License-Identifier: MIT
/*
 * The recording reader, from a file, a pipe or memory: the preamble and
 * header on open, then frame by frame, each checked whole (head and payload
 * checksums, sequence, limits) before any of its items is handed out, to the
 * trailer; a recording cut short ends with NL_RECORDING_NO_TRAILER and a
 * line saying where. The decoding is recording_codec.c; docs/recording.md
 * has the layout.
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

#include "record/recording_int.h"

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
	if (le_at(h + 20, 4) != nl_rec_crc(h, 20)) {
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
	if (le_at(h + 16, 4) != nl_rec_crc(r->buf, plen)) {
		msg(r, "checksum mismatch in %s at offset %" PRIu64, frame_name(*tag), off);
		return -EBADMSG;
	}
	*len = plen;
	return FR_OK;
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

	nl_rec_get_trailer(&c, &r->trailer);
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
		nl_rec_get_item(&r->blk, scratch, r->str);
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
			nl_rec_set_err(err, errlen, "%s", r->msg);
		return r->result;
	}
	nl_rec_get_item(&r->blk, it, r->str);
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
	s = nl_rec_get_str(c, *a);
	if (c->bad)
		return "";
	*a += strlen(s) + 1;
	return s;
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
	if (!c.bad && (api_count != NL_API_COUNT || api_crc != nl_rec_api_table_crc())) {
		msg(r,
		    "recorded with another API table (%" PRIu32 " entries, fingerprint %08" PRIx32
		    "; this tool: %d, %08" PRIx32 ")",
		    api_count, api_crc, NL_API_COUNT, nl_rec_api_table_crc());
		return -EPROTO;
	}
	h->tool_version = arena_str(&c, &a);
	h->kernel_release = arena_str(&c, &a);

	r->argv = nl_rec_get_array(&c, NL_RECORDING_MAX_ARGS, sizeof(*r->argv),
			    "more than 1024 command-line arguments", &h->argc, &oom);
	for (int i = 0; i < h->argc; i++)
		r->argv[i] = arena_str(&c, &a);
	r->targets = nl_rec_get_array(&c, NL_RECORDING_MAX_TARGETS, sizeof(*r->targets),
			       "more than 64 targets", &h->ntargets, &oom);
	for (int i = 0; i < h->ntargets && !c.bad; i++) {
		nl_rec_get_target(&c, &r->targets[i], a);
		a += strlen(a) + 1;
	}
	r->libs = nl_rec_get_array(&c, NL_RECORDING_MAX_LIBS, sizeof(*r->libs), "more than 256 libraries",
			    &h->nlibs, &oom);
	for (int i = 0; i < h->nlibs && !c.bad; i++) {
		nl_rec_get_lib(&c, &r->libs[i], a);
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
		nl_rec_set_err(err, errlen, "%s: %s", name, strerror(ENOMEM));
		nl_recording_free(r);
		return -ENOMEM;
	}
	ret = read_start(r);
	if (ret) {
		nl_rec_set_err(err, errlen, "%s", r->msg);
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
		nl_rec_set_err(err, errlen, "recording: no file given");
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		nl_rec_set_err(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		nl_rec_set_err(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		nl_rec_set_err(err, errlen, "%s: %s", path, strerror(EISDIR));
		return -EISDIR;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		nl_rec_set_err(err, errlen, "%s: %s", path, strerror(ENOMEM));
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
		nl_rec_set_err(err, errlen, "%s: no buffer given", name);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		nl_rec_set_err(err, errlen, "%s: %s", name, strerror(ENOMEM));
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
