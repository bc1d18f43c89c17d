// SPDX-License-Identifier: MIT
/* --record / --replay file: round trips, damage of every kind, writer refusals. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "record/decode.h"
#include "record/recording.h"

#define SCHEMA 1
#define PREAMBLE 16
#define HEAD 24

static char dir[256];

static const char *tmp(const char *name)
{
	static char path[2][512];
	static int k;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "%s/%s", dir, name);
	return path[k];
}

static int make_dir(void **state)
{
	const char *t = getenv("TMPDIR");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/nanlog-rec-XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	(void)state;
	/* only the files this test made, in the folder it made */
	for (const char *n = "abcdefghijklmnopqrstuvwxyz"; *n; n++) {
		char f[2] = { *n, 0 };

		unlink(tmp(f));
	}
	unlink(tmp("link"));
	unlink(tmp("pointee"));
	return rmdir(dir);
}

static struct nl_rec_call call(unsigned i)
{
	struct nl_rec_call r;

	memset(&r, 0, sizeof(r));
	r.type = NL_REC_CALL;
	r.api = (__u16)(i % NL_API_COUNT);
	r.flags = (__u8)(i & 3);
	r.pid = 1000 + i % 3;
	r.tid = 2000 + i;
	r.ts_ns = 1000000ull * i + 7;
	r.ret_ns = r.ts_ns + 11;
	r.rc = -(int64_t)(i % 5);
	r.out = 0xabcdef00ull + i;
	if (!(r.flags & NL_RF_RET))
		r.run = r.flush = r.flush_ts = 0; /* entry only, no counted run */
	for (int k = 0; k < NL_NARGS; k++)
		r.args[k] = ((uint64_t)i << 16) ^ (uint64_t)k * 0x9e3779b97f4a7c15ull;
	return r;
}

static const char *const argv_[] = { "nanlog-bpf", "--raw", "--copy-stream", "0x5000", "-p", "1000" };

static struct nl_recording_target targets_[2] = {
	{ .pid = 1000, .mid_run = true, .ts_ns = 5, .comm = "python3" },
	{ .pid = 1001, .mid_run = true, .ts_ns = 6, .comm = "" },
};

static struct nl_recording_lib lib_hip(void)
{
	struct nl_recording_lib l = {
		.pid = 1000, .lib = NL_LIB_HIP, .path = "/opt/rocm/lib/libamdhip64.so.6",
		.attached = 44, .retprobes = 20, .retprobes_allowed = true, .elapsed_ns = 1234567,
		.ts_ns = 9, .nmissing = 2, .missing = { NL_API_MEMCPY_ASYNC_SPT, NL_API_GRAPH_LAUNCH },
	};
	return l;
}

static struct nl_recording_header header(struct nl_recording_lib *libs)
{
	struct nl_recording_header h = {
		.rec_schema = SCHEMA, .tool_version = "0.1.0", .kernel_release = "6.1.0-18-amd64",
		.start_mono_ns = 123456789, .start_real_ns = 1700000000123456789ull,
		.argc = 6, .argv = argv_, .ntargets = 2, .targets = targets_, .nlibs = 1, .libs = libs,
	};
	return h;
}

static struct nl_recording_trailer trailer(void)
{
	struct nl_recording_trailer t = {
		.end_ns = 99999, .records = 10000, .bad_records = 1, .lost_ringbuf = 3, .lost_stash = 4,
		.nested_folded = 5, .probes_attached = 44, .retprobes_attached = 20, .nmissing = 1,
		.missing = { NL_API_GRAPH_LAUNCH }, .attach_ns = 777, .duration_ns = 888,
		.cpu_ms = 12.5, .err = 0,
	};
	return t;
}

static void read_file(const char *path, unsigned char **buf, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	*buf = malloc(*len ? *len : 1);
	assert_non_null(*buf);
	assert_int_equal(read(fd, *buf, *len), (ssize_t)*len);
	close(fd);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

#define NRECS 10000 /* more than two blocks of NL_RECORDING_BLOCK_ITEMS */

/* The big file: every kind of item, records over several blocks, a trailer. */
static void write_big(const char *path)
{
	struct nl_recording_lib hip = lib_hip(), rccl = lib_hip();
	struct nl_recording_header h = header(&hip);
	struct nl_recording_trailer t = trailer();
	struct nl_recording_target late = { .pid = 1002, .mid_run = false, .ts_ns = 77, .comm = "worker" };
	struct nl_recording_writer *w;
	char err[256];
	unsigned char odd[100];

	rccl.lib = NL_LIB_RCCL;
	rccl.path = "/opt/rocm/lib/librccl.so.1";
	rccl.nmissing = 0;
	rccl.ts_ns = 50;
	memset(odd, 0x5a, sizeof(odd));
	unlink(path);
	assert_int_equal(nl_recording_create(&w, path, false, &h, err, sizeof(err)), 0);
	for (unsigned i = 0; i < NRECS; i++) {
		struct nl_rec_call r = call(i);

		assert_int_equal(nl_recording_write_record(w, &r, sizeof(r)), 0);
		if (i == 10)
			assert_int_equal(nl_recording_write_lib(w, &rccl), 0);
		if (i == 20)
			assert_int_equal(nl_recording_write_lost(w, 0, 17, 123), 0);
		if (i == 30)
			assert_int_equal(nl_recording_write_target(w, &late), 0);
		if (i == 5000)
			assert_int_equal(nl_recording_write_record(w, odd, sizeof(odd)), 0);
		if (i == 9000)
			assert_int_equal(nl_recording_write_exit(w, 1002, 456), 0);
	}
	assert_int_equal(nl_recording_write_lost(w, 1001, 2, 789), 0);
	assert_int_equal(nl_recording_finish(w, &t), 0);
	assert_int_equal(nl_recording_write_exit(w, 1, 1), -EINVAL);
	assert_int_equal(nl_recording_close(w), 0);
}

static void check_header(const struct nl_recording_header *h)
{
	assert_int_equal(h->format_version, NL_RECORDING_VERSION);
	assert_int_equal(h->rec_size, sizeof(struct nl_rec_call));
	assert_int_equal(h->rec_schema, SCHEMA);
	assert_string_equal(h->tool_version, "0.1.0");
	assert_string_equal(h->kernel_release, "6.1.0-18-amd64");
	assert_int_equal(h->start_mono_ns, 123456789);
	assert_int_equal(h->start_real_ns, 1700000000123456789ull);
	assert_int_equal(h->argc, 6);
	for (int i = 0; i < 6; i++)
		assert_string_equal(h->argv[i], argv_[i]);
	assert_int_equal(h->ntargets, 2);
	assert_int_equal(h->targets[0].pid, 1000);
	assert_true(h->targets[0].mid_run);
	assert_int_equal(h->targets[0].ts_ns, 5);
	assert_string_equal(h->targets[0].comm, "python3");
	assert_string_equal(h->targets[1].comm, "");
	assert_int_equal(h->nlibs, 1);
	assert_int_equal(h->libs[0].pid, 1000);
	assert_int_equal(h->libs[0].lib, NL_LIB_HIP);
	assert_string_equal(h->libs[0].path, "/opt/rocm/lib/libamdhip64.so.6");
	assert_int_equal(h->libs[0].attached, 44);
	assert_int_equal(h->libs[0].retprobes, 20);
	assert_true(h->libs[0].retprobes_allowed);
	assert_int_equal(h->libs[0].elapsed_ns, 1234567);
	assert_int_equal(h->libs[0].ts_ns, 9);
	assert_int_equal(h->libs[0].nmissing, 2);
	assert_int_equal(h->libs[0].missing[0], NL_API_MEMCPY_ASYNC_SPT);
	assert_int_equal(h->libs[0].missing[1], NL_API_GRAPH_LAUNCH);
}

/* Read the big file back and check every item in order. */
static void check_big(struct nl_recording_reader *r)
{
	struct nl_recording_item *it = malloc(sizeof(*it));
	const struct nl_recording_trailer *t;
	unsigned rec = 0, events = 0;
	char err[256];
	int ret;

	assert_non_null(it);
	check_header(nl_recording_header(r));
	assert_null(nl_recording_trailer(r));
	while ((ret = nl_recording_next(r, it, err, sizeof(err))) == NL_RECORDING_ITEM) {
		switch (it->kind) {
		case NL_RI_RECORD:
			if (it->rec.size != sizeof(struct nl_rec_call)) {
				/* the record of the wrong size, kept as it came */
				assert_int_equal(rec, 5001);
				assert_int_equal(it->rec.size, 100);
				for (int k = 0; k < 100; k++)
					assert_int_equal(it->rec.data.bytes[k], 0x5a);
				events++;
				break;
			} else {
				struct nl_rec_call want = call(rec++);
				struct nl_call c;

				assert_memory_equal(&it->rec.data.call, &want, sizeof(want));
				assert_int_equal(nl_decode(it->rec.data.bytes, it->rec.size, &c), 0);
				assert_int_equal(c.ts_ns, want.ts_ns);
			}
			break;
		case NL_RI_LIB:
			assert_int_equal(rec, 11);
			assert_int_equal(it->lib.lib, NL_LIB_RCCL);
			assert_string_equal(it->lib.path, "/opt/rocm/lib/librccl.so.1");
			assert_int_equal(it->lib.nmissing, 0);
			assert_int_equal(it->lib.ts_ns, 50);
			assert_int_equal(it->lib.elapsed_ns, 1234567);
			events++;
			break;
		case NL_RI_LOST:
			if (rec == 21) {
				assert_int_equal(it->lost.pid, 0);
				assert_int_equal(it->lost.count, 17);
				assert_int_equal(it->lost.ts_ns, 123);
			} else {
				assert_int_equal(rec, NRECS);
				assert_int_equal(it->lost.pid, 1001);
				assert_int_equal(it->lost.count, 2);
				assert_int_equal(it->lost.ts_ns, 789);
			}
			events++;
			break;
		case NL_RI_TARGET:
			assert_int_equal(rec, 31);
			assert_int_equal(it->target.pid, 1002);
			assert_false(it->target.mid_run);
			assert_int_equal(it->target.ts_ns, 77);
			assert_string_equal(it->target.comm, "worker");
			events++;
			break;
		case NL_RI_EXIT:
			assert_int_equal(rec, 9001);
			assert_int_equal(it->exit.pid, 1002);
			assert_int_equal(it->exit.ts_ns, 456);
			events++;
			break;
		default:
			fail();
		}
	}
	assert_int_equal(ret, NL_RECORDING_END);
	assert_int_equal(rec, NRECS);
	assert_int_equal(events, 6);
	t = nl_recording_trailer(r);
	assert_non_null(t);
	assert_int_equal(t->end_ns, 99999);
	assert_int_equal(t->records, 10000);
	assert_int_equal(t->bad_records, 1);
	assert_int_equal(t->lost_ringbuf, 3);
	assert_int_equal(t->lost_stash, 4);
	assert_int_equal(t->nested_folded, 5);
	assert_int_equal(t->probes_attached, 44);
	assert_int_equal(t->retprobes_attached, 20);
	assert_int_equal(t->nmissing, 1);
	assert_int_equal(t->missing[0], NL_API_GRAPH_LAUNCH);
	assert_int_equal(t->attach_ns, 777);
	assert_int_equal(t->duration_ns, 888);
	assert_true(t->cpu_ms == 12.5);
	assert_int_equal(t->err, 0);
	/* the end is sticky */
	assert_int_equal(nl_recording_next(r, it, err, sizeof(err)), NL_RECORDING_END);
	free(it);
}

static void test_round_trip(void **state)
{
	struct nl_recording_reader *r;
	char err[256];
	struct stat st;

	(void)state;
	write_big(tmp("a"));
	assert_int_equal(stat(tmp("a"), &st), 0);
	/* more than one block: 10000 records of 176 bytes, blocks of at most 4096 items */
	assert_true(st.st_size > NRECS * 176);
	assert_int_equal(nl_recording_open(&r, tmp("a"), SCHEMA, err, sizeof(err)), 0);
	check_big(r);
	assert_int_equal(nl_recording_offset(r), (uint64_t)st.st_size);
	nl_recording_free(r);
	/* schema 0: accept whatever schema */
	assert_int_equal(nl_recording_open(&r, tmp("a"), 0, err, sizeof(err)), 0);
	nl_recording_free(r);
	nl_recording_free(NULL);
	assert_int_equal(nl_recording_close(NULL), 0);
}

/* Both readers give the same items, the same ends and the same messages. */
static void same_readers(const char *path, const unsigned char *buf, size_t len)
{
	struct nl_recording_reader *f = NULL, *m = NULL;
	struct nl_recording_item *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	char ef[512] = "", em[512] = "";
	int rf, rm;

	assert_non_null(a);
	assert_non_null(b);
	rf = nl_recording_open(&f, path, SCHEMA, ef, sizeof(ef));
	rm = nl_recording_open_mem(&m, buf, len, path, SCHEMA, em, sizeof(em));
	assert_int_equal(rf, rm);
	assert_string_equal(ef, em);
	if (!rf) {
		do {
			rf = nl_recording_next(f, a, ef, sizeof(ef));
			rm = nl_recording_next(m, b, em, sizeof(em));
			assert_int_equal(rf, rm);
			if (rf != NL_RECORDING_ITEM)
				break;
			assert_int_equal(a->kind, b->kind);
			if (a->kind == NL_RI_RECORD) {
				assert_int_equal(a->rec.size, b->rec.size);
				assert_memory_equal(a->rec.data.bytes, b->rec.data.bytes, a->rec.size);
			} else if (a->kind == NL_RI_LIB) {
				assert_string_equal(a->lib.path, b->lib.path);
				assert_int_equal(a->lib.pid, b->lib.pid);
			} else if (a->kind == NL_RI_TARGET) {
				assert_string_equal(a->target.comm, b->target.comm);
			} else if (a->kind == NL_RI_LOST) {
				assert_int_equal(a->lost.pid, b->lost.pid);
				assert_int_equal(a->lost.count, b->lost.count);
				assert_int_equal(a->lost.ts_ns, b->lost.ts_ns);
			} else {
				/* not the whole union: padding and the bytes exit does not use are never written */
				assert_int_equal(a->exit.pid, b->exit.pid);
				assert_int_equal(a->exit.ts_ns, b->exit.ts_ns);
			}
		} while (1);
		assert_string_equal(ef, em);
		assert_int_equal(nl_recording_offset(f), nl_recording_offset(m));
	}
	nl_recording_free(f);
	nl_recording_free(m);
	free(a);
	free(b);
}

static void test_mem_reader_same_as_file(void **state)
{
	struct nl_recording_reader *r;
	unsigned char *buf;
	size_t len;
	char err[256];

	(void)state;
	write_big(tmp("a"));
	read_file(tmp("a"), &buf, &len);
	assert_int_equal(nl_recording_open_mem(&r, buf, len, "big", SCHEMA, err, sizeof(err)), 0);
	check_big(r);
	nl_recording_free(r);
	same_readers(tmp("a"), buf, len);
	/* and cut in the middle of the second block */
	write_file(tmp("b"), buf, len / 2);
	same_readers(tmp("b"), buf, len / 2);
	free(buf);
}

/* A small file: header, blocks of 2, 2, 2 and 1 items, a trailer. */
static void write_small(const char *path, bool with_trailer)
{
	struct nl_recording_lib hip = lib_hip();
	struct nl_recording_header h = header(&hip);
	struct nl_recording_trailer t = trailer();
	struct nl_recording_writer *w;
	char err[256];

	h.argc = 2;
	assert_int_equal(nl_recording_create(&w, path, true, &h, err, sizeof(err)), 0);
	for (unsigned i = 0; i < 6; i++) {
		struct nl_rec_call r = call(i);

		assert_int_equal(nl_recording_write_record(w, &r, sizeof(r)), 0);
		if (i % 2)
			assert_int_equal(nl_recording_flush(w), 0);
	}
	assert_int_equal(nl_recording_write_exit(w, 1000, 42), 0);
	if (with_trailer)
		assert_int_equal(nl_recording_finish(w, &t), 0);
	assert_int_equal(nl_recording_close(w), 0);
}

/* Read everything; returns the final result, counts the items. */
static int drain(struct nl_recording_reader *r, int *items, char *err, size_t errlen)
{
	struct nl_recording_item *it = malloc(sizeof(*it));
	int ret;

	assert_non_null(it);
	*items = 0;
	while ((ret = nl_recording_next(r, it, err, errlen)) == NL_RECORDING_ITEM)
		(*items)++;
	free(it);
	return ret;
}

/* Offsets of the frames of a file: [0] header, then blocks, last the trailer. */
static int frames(const unsigned char *buf, size_t len, size_t *off, int max)
{
	size_t o = PREAMBLE;
	int n = 0;

	while (o + HEAD <= len && n < max) {
		uint32_t plen = (uint32_t)buf[o + 12] | (uint32_t)buf[o + 13] << 8 |
				(uint32_t)buf[o + 14] << 16 | (uint32_t)buf[o + 15] << 24;

		off[n++] = o;
		o += HEAD + plen;
	}
	return n;
}

static void test_truncated_everywhere(void **state)
{
	unsigned char *buf;
	size_t len, off[16];
	int nframes;

	(void)state;
	write_small(tmp("c"), true);
	read_file(tmp("c"), &buf, &len);
	nframes = frames(buf, len, off, 16);
	assert_int_equal(nframes, 6); /* header, 4 blocks, trailer */
	for (size_t l = 0; l <= len; l++) {
		struct nl_recording_reader *r = NULL;
		char err[512] = "";
		int items = 0, ret;

		ret = nl_recording_open_mem(&r, buf, l, "small", SCHEMA, err, sizeof(err));
		if (l < off[1]) {
			/* the header is not complete: nothing to replay */
			assert_true(ret < 0);
			assert_null(r);
			assert_true(strncmp(err, "small: ", 7) == 0);
			assert_null(strchr(err, '\n'));
			if (l >= 8)
				assert_non_null(strstr(err, "truncated header at offset"));
			continue;
		}
		assert_int_equal(ret, 0);
		ret = drain(r, &items, err, sizeof(err));
		if (l == len) {
			assert_int_equal(ret, NL_RECORDING_END);
			assert_int_equal(items, 7);
		} else {
			int whole = 0;
			bool boundary = false;

			assert_int_equal(ret, NL_RECORDING_NO_TRAILER);
			assert_non_null(strstr(err, "no trailer: the recording ends at offset"));
			/* the items of the complete blocks, none of a cut one */
			for (int k = 1; k <= 4; k++)
				whole += off[k + 1] <= l ? (k == 4 ? 1 : 2) : 0;
			assert_int_equal(items, whole);
			for (int k = 1; k < nframes; k++)
				boundary |= l == off[k];
			assert_true(!strstr(err, "truncated") == boundary);
		}
		nl_recording_free(r);
	}
	/* the file reader on a few of them, same result */
	for (size_t l = 0; l <= len; l += 37) {
		write_file(tmp("d"), buf, l);
		same_readers(tmp("d"), buf, l);
	}
	free(buf);
}

static void test_flipped_bytes(void **state)
{
	unsigned char *buf;
	size_t len, off[16];
	char err[512], want[128];

	(void)state;
	write_small(tmp("e"), true);
	read_file(tmp("e"), &buf, &len);
	assert_int_equal(frames(buf, len, off, 16), 6);
	for (size_t i = 0; i < len; i++) {
		struct nl_recording_reader *r = NULL;
		int items, ret;

		buf[i] ^= 0x10;
		err[0] = '\0';
		ret = nl_recording_open_mem(&r, buf, len, "flip", SCHEMA, err, sizeof(err));
		if (!ret) {
			ret = drain(r, &items, err, sizeof(err));
			nl_recording_free(r);
		}
		if (ret >= 0)
			fail_msg("flipped byte at offset %zu not detected (result %d)", i, ret);
		assert_true(strncmp(err, "flip: ", 6) == 0);
		buf[i] ^= 0x10;
	}
	/* the message names the frame and its offset */
	struct {
		size_t at;
		const char *what;
		size_t frame;
	} cases[] = {
		{ 0, "not a nanlog-bpf recording", 0 },
		{ off[0] + HEAD + 3, "checksum mismatch in header at offset %zu", off[0] },
		{ off[2] + 4, "checksum mismatch in block header at offset %zu", off[2] },
		{ off[2] + HEAD + 30, "checksum mismatch in block at offset %zu", off[2] },
		{ off[5] + HEAD + 1, "checksum mismatch in trailer at offset %zu", off[5] },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct nl_recording_reader *r = NULL;
		int items, ret;

		buf[cases[k].at] ^= 0x01;
		ret = nl_recording_open_mem(&r, buf, len, "flip", SCHEMA, err, sizeof(err));
		if (!ret) {
			ret = drain(r, &items, err, sizeof(err));
			nl_recording_free(r);
		}
		assert_true(ret < 0);
		snprintf(want, sizeof(want), cases[k].what, cases[k].frame);
		assert_non_null(strstr(err, want));
		buf[cases[k].at] ^= 0x01;
	}
	free(buf);
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Make the checksum of the head of the frame at off right again after an edit. */
static void reseal_head(unsigned char *buf, size_t off)
{
	put32(buf + off + 20, (uint32_t)crc32(0, buf + off, 20));
}

/* The same for the head and the payload. */
static void reseal(unsigned char *buf, size_t off)
{
	uint32_t plen = (uint32_t)buf[off + 12] | (uint32_t)buf[off + 13] << 8 |
			(uint32_t)buf[off + 14] << 16 | (uint32_t)buf[off + 15] << 24;

	put32(buf + off + 16, (uint32_t)crc32(0, buf + off + HEAD, plen));
	reseal_head(buf, off);
}

static int open_err(const unsigned char *buf, size_t len, char *err, size_t errlen)
{
	struct nl_recording_reader *r = NULL;
	int ret = nl_recording_open_mem(&r, buf, len, "x.bin", SCHEMA, err, errlen);

	if (!ret) {
		int items;

		ret = drain(r, &items, err, errlen);
		nl_recording_free(r);
	}
	return ret;
}

static void test_refusals(void **state)
{
	unsigned char *buf, *copy;
	size_t len, off[16];
	char err[512], want[128];

	(void)state;
	write_small(tmp("f"), true);
	read_file(tmp("f"), &buf, &len);
	assert_int_equal(frames(buf, len, off, 16), 6);
	copy = malloc(len + 8);
	assert_non_null(copy);
#define FRESH() memcpy(copy, buf, len)

	FRESH();
	copy[1] = 'X';
	assert_int_equal(open_err(copy, len, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "x.bin: not a nanlog-bpf recording");
	assert_int_equal(open_err((const unsigned char *)"", 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "x.bin: not a nanlog-bpf recording (empty file)");
	assert_int_equal(open_err((const unsigned char *)"hello world, a text file\n", 25, err,
				  sizeof(err)), -EINVAL);

	FRESH();
	copy[12] = 7;
	assert_int_equal(open_err(copy, len, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_string_equal(err, "x.bin: format version 7 not supported (this tool reads 1)");

	FRESH();
	copy[8] = 1, copy[9] = 2, copy[10] = 3, copy[11] = 4;
	assert_int_equal(open_err(copy, len, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "little-endian"));

	/* well-formed files of another build: checksums made right */
	struct {
		size_t at;
		uint32_t value;
		const char *msg;
	} other[] = {
		{ 0, 160, "x.bin: record size 160 does not match 176" },
		{ 4, 2, "x.bin: record schema 2 not supported (this tool decodes 1)" },
		{ 12, 0x12345678, "another API table" },
	};
	for (size_t k = 0; k < sizeof(other) / sizeof(other[0]); k++) {
		FRESH();
		put32(copy + off[0] + HEAD + other[k].at, other[k].value);
		reseal(copy, off[0]);
		assert_int_equal(open_err(copy, len, err, sizeof(err)), -EPROTO);
		assert_non_null(strstr(err, other[k].msg));
	}

	/* an unknown item kind in a block whose checksums are right */
	FRESH();
	put32(copy + off[1] + HEAD, 99);
	reseal(copy, off[1]);
	assert_int_equal(open_err(copy, len, err, sizeof(err)), -EBADMSG);
	snprintf(want, sizeof(want), "malformed block at offset %zu", off[1]);
	assert_non_null(strstr(err, want));

	/* a block that claims more than the limit: refused before any allocation */
	FRESH();
	put32(copy + off[1] + 12, NL_RECORDING_MAX_FRAME + 1);
	reseal_head(copy, off[1]);
	assert_int_equal(open_err(copy, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "limit"));

	/* blocks swapped */
	FRESH();
	put32(copy + off[2] + 4, 7);
	reseal_head(copy, off[2]);
	assert_int_equal(open_err(copy, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "out of sequence"));

	/* a library index outside the table, an api id outside the table: in the header */
	FRESH();
	{
		/* the header's last field is the library's path; its missing ids sit before it */
		size_t p = off[1] - (4 + strlen("/opt/rocm/lib/libamdhip64.so.6")) - 4;

		assert_int_equal(copy[p - 2], 2); /* nmissing */
		copy[p] = 0xff;
		copy[p + 1] = 0xff;
		reseal(copy, off[0]);
		assert_int_equal(open_err(copy, len, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "api id outside the API table"));
	}

	/* bytes after the trailer */
	FRESH();
	memcpy(copy + len, "garbage!", 8);
	assert_int_equal(open_err(copy, len + 8, err, sizeof(err)), -EBADMSG);
	snprintf(want, sizeof(want), "unexpected data after the trailer at offset %zu", len);
	assert_non_null(strstr(err, want));
#undef FRESH
	free(copy);
	free(buf);
}

static void test_no_trailer(void **state)
{
	struct nl_recording_reader *r;
	struct stat st;
	char err[512], want[256];
	int items;
	unsigned char *buf;
	size_t len;

	(void)state;
	write_small(tmp("g"), false);
	assert_int_equal(stat(tmp("g"), &st), 0);
	assert_int_equal(nl_recording_open(&r, tmp("g"), SCHEMA, err, sizeof(err)), 0);
	assert_int_equal(drain(r, &items, err, sizeof(err)), NL_RECORDING_NO_TRAILER);
	assert_int_equal(items, 7); /* the close wrote the last block */
	snprintf(want, sizeof(want), "%s: no trailer: the recording ends at offset %lld without a trailer",
		 tmp("g"), (long long)st.st_size);
	assert_string_equal(err, want);
	assert_null(nl_recording_trailer(r));
	/* the condition stays */
	assert_int_equal(drain(r, &items, err, sizeof(err)), NL_RECORDING_NO_TRAILER);
	nl_recording_free(r);

	/* killed in the middle of writing the last block */
	read_file(tmp("g"), &buf, &len);
	assert_int_equal(open_err(buf, len - 10, err, sizeof(err)), NL_RECORDING_NO_TRAILER);
	assert_non_null(strstr(err, "without a trailer; the block there is truncated (expected"));
	free(buf);
}

static void test_writer_refuses(void **state)
{
	struct nl_recording_lib hip = lib_hip();
	struct nl_recording_header h = header(&hip);
	struct nl_recording_writer *w;
	struct nl_recording_target t = { .pid = 1 };
	char err[512], big[NL_RECORDING_MAX_STR + 2];
	unsigned char rec[NL_RECORDING_MAX_REC + 1] = { 0 };
	struct stat st;

	(void)state;
	/* an existing file */
	write_file(tmp("h"), "keep", 4);
	assert_int_equal(nl_recording_create(&w, tmp("h"), false, &h, err, sizeof(err)), -EEXIST);
	assert_null(w);
	assert_non_null(strstr(err, "exists (use --force to overwrite)"));
	assert_int_equal(stat(tmp("h"), &st), 0);
	assert_int_equal(st.st_size, 4);
	/* ... replaced with force */
	assert_int_equal(nl_recording_create(&w, tmp("h"), true, &h, err, sizeof(err)), 0);
	assert_int_equal(nl_recording_close(w), 0);
	assert_int_equal(stat(tmp("h"), &st), 0);
	assert_true(st.st_size > 4);

	/* a symbolic link, dangling or not, force or not */
	unlink(tmp("link"));
	assert_int_equal(symlink(tmp("pointee"), tmp("link")), 0);
	assert_int_equal(nl_recording_create(&w, tmp("link"), false, &h, err, sizeof(err)), -EEXIST);
	assert_int_equal(nl_recording_create(&w, tmp("link"), true, &h, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "is a symbolic link"));
	assert_int_equal(stat(tmp("pointee"), &st), -1);
	write_file(tmp("pointee"), "keep", 4);
	assert_int_equal(nl_recording_create(&w, tmp("link"), false, &h, err, sizeof(err)), -EEXIST);
	assert_int_equal(nl_recording_create(&w, tmp("link"), true, &h, err, sizeof(err)), -ELOOP);
	assert_int_equal(stat(tmp("pointee"), &st), 0);
	assert_int_equal(st.st_size, 4);

	/* limits */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	h.tool_version = big;
	assert_int_equal(nl_recording_create(&w, tmp("i"), false, &h, err, sizeof(err)), -E2BIG);
	assert_int_equal(access(tmp("i"), F_OK), -1);
	h = header(&hip);
	h.argc = NL_RECORDING_MAX_ARGS + 1;
	assert_int_equal(nl_recording_create(&w, tmp("i"), false, &h, err, sizeof(err)), -E2BIG);
	h = header(&hip);
	hip.missing[0] = NL_API_COUNT;
	assert_int_equal(nl_recording_create(&w, tmp("i"), false, &h, err, sizeof(err)), -E2BIG);
	hip = lib_hip();

	assert_int_equal(nl_recording_create(&w, tmp("i"), false, &h, err, sizeof(err)), 0);
	assert_int_equal(nl_recording_write_record(w, rec, sizeof(rec)), -EINVAL);
	assert_int_equal(nl_recording_write_record(w, rec, NL_RECORDING_MAX_REC), 0);
	t.comm = big;
	assert_int_equal(nl_recording_write_target(w, &t), -EINVAL);
	hip.lib = NL_NLIBS;
	assert_int_equal(nl_recording_write_lib(w, &hip), -EINVAL);
	assert_int_equal(nl_recording_close(w), 0);
	assert_int_equal(nl_recording_flush(NULL), -EINVAL);
}

static void test_full_disk(void **state)
{
	struct nl_recording_lib hip = lib_hip();
	struct nl_recording_header h = header(&hip);
	struct nl_recording_writer *w;
	struct nl_rec_call r = call(1);
	char err[512];
	struct stat a, b;
	int probe, full;

	(void)state;
	if (access("/dev/full", W_OK)) {
		skip();
		return;
	}
	/* the header goes out at create: a full disk shows at once */
	assert_int_equal(nl_recording_create(&w, "/dev/full", true, &h, err, sizeof(err)), -ENOSPC);
	assert_null(w);
	assert_non_null(strstr(err, "/dev/full: "));

	/* the disk fills up later: the writer's descriptor is swapped for /dev/full */
	probe = open("/dev/null", O_RDONLY);
	assert_true(probe >= 0);
	close(probe); /* the writer gets this number: the lowest free one */
	assert_int_equal(nl_recording_create(&w, tmp("j"), false, &h, err, sizeof(err)), 0);
	assert_int_equal(fstat(probe, &a), 0);
	assert_int_equal(stat(tmp("j"), &b), 0);
	if (a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
		nl_recording_close(w);
		skip();
		return;
	}
	full = open("/dev/full", O_WRONLY);
	assert_true(full >= 0);
	assert_int_equal(dup2(full, probe), probe);
	close(full);
	assert_int_equal(nl_recording_write_record(w, &r, sizeof(r)), 0); /* buffered */
	assert_int_equal(nl_recording_flush(w), -ENOSPC);
	/* sticky: nothing more is written */
	assert_int_equal(nl_recording_write_record(w, &r, sizeof(r)), -ENOSPC);
	assert_int_equal(nl_recording_write_exit(w, 1, 1), -ENOSPC);
	assert_int_equal(nl_recording_close(w), -ENOSPC);
}

/* A write cut short (here by RLIMIT_FSIZE): the file is cut back to its last
 * complete block, so it reads as a recording without a trailer. */
static void test_write_cut_short(void **state)
{
	struct nl_recording_lib hip = lib_hip();
	struct nl_recording_header h = header(&hip);
	struct nl_recording_writer *w;
	struct nl_recording_reader *r;
	struct nl_rec_call rec = call(3);
	struct rlimit old, lim;
	struct stat st;
	uint64_t good;
	char err[512];
	int items, ret = 0;

	(void)state;
	unlink(tmp("k"));
	assert_int_equal(nl_recording_create(&w, tmp("k"), false, &h, err, sizeof(err)), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(nl_recording_write_record(w, &rec, sizeof(rec)), 0);
	assert_int_equal(nl_recording_flush(w), 0);
	good = nl_recording_bytes(w);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = good + 1000; /* room for part of the next block */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (int i = 0; i < 100 && !ret; i++)
		ret = nl_recording_write_record(w, &rec, sizeof(rec));
	if (!ret)
		ret = nl_recording_flush(w);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(ret, -EFBIG);
	assert_int_equal(nl_recording_close(w), -EFBIG);
	assert_int_equal(stat(tmp("k"), &st), 0);
	assert_int_equal((uint64_t)st.st_size, good);
	assert_int_equal(nl_recording_open(&r, tmp("k"), SCHEMA, err, sizeof(err)), 0);
	assert_int_equal(drain(r, &items, err, sizeof(err)), NL_RECORDING_NO_TRAILER);
	assert_int_equal(items, 10);
	assert_null(strstr(err, "truncated"));
	nl_recording_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),        cmocka_unit_test(test_mem_reader_same_as_file),
		cmocka_unit_test(test_truncated_everywhere), cmocka_unit_test(test_flipped_bytes),
		cmocka_unit_test(test_refusals),          cmocka_unit_test(test_no_trailer),
		cmocka_unit_test(test_writer_refuses),    cmocka_unit_test(test_full_disk),
		cmocka_unit_test(test_write_cut_short),
	};

	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
