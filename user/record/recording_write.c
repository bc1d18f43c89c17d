// SPDX-License-Identifier: MIT
/*
 * The recording writer: the preamble and header frame on create, items
 * gathered into blocks of at most NL_RECORDING_BLOCK_BYTES, each written as
 * one frame, and the trailer on finish. A failed write leaves a regular file
 * readable up to its last complete frame. The encoding is recording_codec.c;
 * docs/recording.md has the layout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/recording_int.h"

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
	nl_rec_frame_head(buf, tag, w->seq, nitems, buf + HEAD_LEN, len);
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
	if (!l || !nl_rec_lib_ok(l))
		return -EINVAL;
	WRITE_ENCODED(w, NL_RI_LIB, nl_rec_put_lib, l);
	return 0;
}

int nl_recording_write_target(struct nl_recording_writer *w, const struct nl_recording_target *t)
{
	int err = writable(w);

	if (err)
		return err;
	if (!t || !nl_rec_str_ok(t->comm))
		return -EINVAL;
	WRITE_ENCODED(w, NL_RI_TARGET, nl_rec_put_target, t);
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
	if (!t || !nl_rec_missing_ok(t->nmissing, t->missing))
		return -EINVAL;
	err = nl_recording_flush(w);
	if (err)
		return err;
	nl_rec_put_trailer(&e, t);
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
	put_u32(e, nl_rec_api_table_crc());
	put_u64(e, h->start_mono_ns);
	put_u64(e, h->start_real_ns);
	put_str(e, h->tool_version);
	put_str(e, h->kernel_release);
	put_u32(e, (uint32_t)h->argc);
	for (int i = 0; i < h->argc; i++)
		put_str(e, h->argv[i]);
	put_u32(e, (uint32_t)h->ntargets);
	for (int i = 0; i < h->ntargets; i++)
		nl_rec_put_target(e, &h->targets[i]);
	put_u32(e, (uint32_t)h->nlibs);
	for (int i = 0; i < h->nlibs; i++)
		nl_rec_put_lib(e, &h->libs[i]);
}

static const char *header_problem(const struct nl_recording_header *h)
{
	if (!nl_rec_str_ok(h->tool_version) || !nl_rec_str_ok(h->kernel_release))
		return "version string longer than 4096 bytes";
	if (h->argc < 0 || h->argc > NL_RECORDING_MAX_ARGS || (h->argc && !h->argv))
		return "more than 1024 command-line arguments";
	for (int i = 0; i < h->argc; i++) {
		if (!nl_rec_str_ok(h->argv[i]))
			return "a command-line argument longer than 4096 bytes";
	}
	if (h->ntargets < 0 || h->ntargets > NL_RECORDING_MAX_TARGETS || (h->ntargets && !h->targets))
		return "more than 64 targets";
	for (int i = 0; i < h->ntargets; i++) {
		if (!nl_rec_str_ok(h->targets[i].comm))
			return "a target name longer than 4096 bytes";
	}
	if (h->nlibs < 0 || h->nlibs > NL_RECORDING_MAX_LIBS || (h->nlibs && !h->libs))
		return "more than 256 libraries";
	for (int i = 0; i < h->nlibs; i++) {
		if (!nl_rec_lib_ok(&h->libs[i]))
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
		nl_rec_set_err(err, errlen, "recording: no file or header given");
		return -EINVAL;
	}
	why = header_problem(h);
	if (why) {
		nl_rec_set_err(err, errlen, "%s: cannot record: %s", path, why);
		return -E2BIG;
	}
	put_header(&e, h);
	if (e.len > NL_RECORDING_MAX_FRAME) {
		nl_rec_set_err(err, errlen, "%s: cannot record: the header would take %zu bytes (limit %u)",
			path, e.len, NL_RECORDING_MAX_FRAME);
		return -E2BIG;
	}

	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), 0644);
	if (fd < 0) {
		ret = -errno;
		if (ret == -EEXIST)
			nl_rec_set_err(err, errlen, "%s: exists (use --force to overwrite)", path);
		else if (ret == -ELOOP)
			nl_rec_set_err(err, errlen, "%s: is a symbolic link; refusing to write through it", path);
		else
			nl_rec_set_err(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	w = calloc(1, sizeof(*w));
	hdr = malloc(PREAMBLE_LEN + HEAD_LEN + e.len);
	if (w)
		w->blk = malloc(HEAD_LEN + NL_RECORDING_BLOCK_BYTES);
	if (!w || !hdr || !w->blk) {
		ret = -ENOMEM;
		nl_rec_set_err(err, errlen, "%s: %s", path, strerror(ENOMEM));
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
	nl_rec_frame_head(hdr + PREAMBLE_LEN, TAG_HEAD, 0, 0, e.p, e.len);
	ret = write_all(fd, hdr, PREAMBLE_LEN + HEAD_LEN + e.len);
	if (ret) {
		nl_rec_set_err(err, errlen, "%s: %s", path, strerror(-ret));
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
