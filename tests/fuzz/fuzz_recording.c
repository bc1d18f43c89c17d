// SPDX-License-Identifier: MIT
/*
 * The recording reader (nl_recording_open_mem / nl_recording_next) on any
 * bytes. Mutations rarely keep a CRC32 right, so each input is read twice:
 * as it is (the checksum paths), then with every frame's checksums fixed up
 * (frames walked by their length fields), so that mutated lengths, counts,
 * strings and items reach the parsers behind the checks. The fixed-up input
 * is also read from a file (a memfd) and must give the same header, items,
 * results and messages as from memory. Records are decoded as replay does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zlib.h>

#include "record/decode.h"
#include "fuzz.h"
#include "record/recording.h"

#define PREAMBLE 16
#define HEAD 24

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void set_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t crc(const void *p, size_t n)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

/* Make every frame's checksums right; true when something changed. */
static bool fix_checksums(uint8_t *b, size_t len)
{
	bool changed = false;
	size_t off = PREAMBLE;

	while (len >= off && len - off >= HEAD) {
		uint8_t *h = b + off;
		uint32_t plen = le32(h + 12);
		bool whole = plen <= len - off - HEAD;

		if (whole && le32(h + 16) != crc(h + HEAD, plen)) {
			set_le32(h + 16, crc(h + HEAD, plen));
			changed = true;
		}
		if (le32(h + 20) != crc(h, 20)) {
			set_le32(h + 20, crc(h, 20));
			changed = true;
		}
		if (!whole)
			break;
		off += HEAD + plen;
	}
	return changed;
}

/* A running digest of what a reader handed out, to compare two readers. */
struct digest {
	uLong crc;
	unsigned long items;
};

static void add(struct digest *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct digest *d, const char *fmt, ...)
{
	char line[NL_RECORDING_MAX_STR + 256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	FUZZ_CHECK(n >= 0 && (size_t)n < sizeof(line));
	d->crc = crc32(d->crc, (const Bytef *)line, (uInt)n + 1);
}

static void check_str(const char *s)
{
	FUZZ_CHECK(s && strnlen(s, NL_RECORDING_MAX_STR + 1) <= NL_RECORDING_MAX_STR);
}

static void check_lib(struct digest *d, const struct nl_recording_lib *l)
{
	FUZZ_CHECK(l->lib >= 0 && l->lib < NL_NLIBS && l->attached >= 0 && l->retprobes >= 0);
	FUZZ_CHECK(l->nmissing >= 0 && l->nmissing <= NL_API_COUNT);
	check_str(l->path);
	add(d, "lib %" PRIu32 " %d %d %d %d %" PRIu64 " %" PRIu64 " %d %s", l->pid, l->lib,
	    l->attached, l->retprobes, l->retprobes_allowed, l->elapsed_ns, l->ts_ns, l->nmissing,
	    l->path);
	for (int i = 0; i < l->nmissing; i++) {
		FUZZ_CHECK(l->missing[i] >= 0 && l->missing[i] < NL_API_COUNT);
		add(d, "m %d", l->missing[i]);
	}
}

static void check_target(struct digest *d, const struct nl_recording_target *t)
{
	check_str(t->comm);
	add(d, "target %" PRIu32 " %d %" PRIu64 " %s", t->pid, t->mid_run, t->ts_ns, t->comm);
}

static void check_header(struct digest *d, const struct nl_recording_header *h)
{
	FUZZ_CHECK(h && h->format_version == NL_RECORDING_VERSION);
	FUZZ_CHECK(h->rec_size == sizeof(struct nl_rec_call));
	check_str(h->tool_version);
	check_str(h->kernel_release);
	add(d, "header %" PRIu32 " %" PRIu64 " %" PRIu64 " %s %s", h->rec_schema, h->start_mono_ns,
	    h->start_real_ns, h->tool_version, h->kernel_release);
	FUZZ_CHECK(h->argc >= 0 && h->argc <= NL_RECORDING_MAX_ARGS);
	FUZZ_CHECK(h->ntargets >= 0 && h->ntargets <= NL_RECORDING_MAX_TARGETS);
	FUZZ_CHECK(h->nlibs >= 0 && h->nlibs <= NL_RECORDING_MAX_LIBS);
	for (int i = 0; i < h->argc; i++) {
		check_str(h->argv[i]);
		add(d, "arg %s", h->argv[i]);
	}
	for (int i = 0; i < h->ntargets; i++)
		check_target(d, &h->targets[i]);
	for (int i = 0; i < h->nlibs; i++)
		check_lib(d, &h->libs[i]);
}

static void check_item(struct digest *d, const struct nl_recording_item *it)
{
	struct nl_call c;

	d->items++;
	switch (it->kind) {
	case NL_RI_RECORD:
		FUZZ_CHECK(it->rec.size <= NL_RECORDING_MAX_REC);
		add(d, "rec %" PRIu32 " %08" PRIx32, it->rec.size,
		    (uint32_t)crc(it->rec.data.bytes, it->rec.size));
		if (nl_decode(it->rec.data.bytes, it->rec.size, &c) == 0)
			FUZZ_CHECK(c.api < NL_API_COUNT);
		break;
	case NL_RI_LIB:
		check_lib(d, &it->lib);
		break;
	case NL_RI_LOST:
		add(d, "lost %" PRIu32 " %" PRIu64 " %" PRIu64, it->lost.pid, it->lost.count,
		    it->lost.ts_ns);
		break;
	case NL_RI_EXIT:
		add(d, "exit %" PRIu32 " %" PRIu64, it->exit.pid, it->exit.ts_ns);
		break;
	case NL_RI_TARGET:
		check_target(d, &it->target);
		break;
	default:
		FUZZ_CHECK(!"unknown item kind handed out");
	}
}

/* Read a whole recording; the digest covers the header, items, results and messages. */
static void read_all(struct nl_recording_reader *r, int ret, const char *err, size_t size,
		     struct digest *d, struct nl_recording_item *it)
{
	char msg[512];
	int res;

	add(d, "open %d %s", ret, err);
	if (ret) {
		FUZZ_CHECK(!r && err[0]);
		return;
	}
	check_header(d, nl_recording_header(r));
	do {
		msg[0] = '\0';
		res = nl_recording_next(r, it, msg, sizeof(msg));
		if (res == NL_RECORDING_ITEM)
			check_item(d, it);
		/* every item takes at least its 8-byte head */
		FUZZ_CHECK(d->items <= size / 8);
	} while (res == NL_RECORDING_ITEM);
	add(d, "end %d %s", res, msg);
	FUZZ_CHECK(res == NL_RECORDING_END || res == NL_RECORDING_NO_TRAILER || res == -EBADMSG);
	FUZZ_CHECK((res == NL_RECORDING_END) == (nl_recording_trailer(r) != NULL));
	if (res != NL_RECORDING_END)
		FUZZ_CHECK(msg[0]);
	/* the end is sticky */
	FUZZ_CHECK(nl_recording_next(r, it, NULL, 0) == res);
	nl_recording_free(r);
}

static void read_mem(const uint8_t *buf, size_t size, const char *name, struct digest *d,
		     struct nl_recording_item *it)
{
	struct nl_recording_reader *r;
	char err[512] = "";
	int ret = nl_recording_open_mem(&r, buf, size, name, 0, err, sizeof(err));

	read_all(r, ret, err, size, d, it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct nl_recording_item *it = malloc(sizeof(*it));
	uint8_t *fixed = malloc(size ? size : 1);
	struct digest dm = { 0 }, df = { 0 };

	FUZZ_CHECK(it && fixed);
	if (fd < 0) {
		fd = memfd_create("fuzz-recording", MFD_CLOEXEC);
		FUZZ_CHECK(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (size)
		memcpy(fixed, data, size);
	if (fix_checksums(fixed, size)) {
		read_mem(data, size, path, &dm, it); /* as it came: the checksum paths */
		dm = (struct digest){ 0 };
	}
	read_mem(fixed, size, path, &dm, it);
	FUZZ_CHECK(ftruncate(fd, 0) == 0);
	FUZZ_CHECK(pwrite(fd, fixed, size, 0) == (ssize_t)size);
	{
		struct nl_recording_reader *r;
		char err[512] = "";
		int ret = nl_recording_open(&r, path, 0, err, sizeof(err));

		read_all(r, ret, err, size, &df, it);
	}
	FUZZ_CHECK(dm.crc == df.crc && dm.items == df.items);
	free(fixed);
	free(it);
	return 0;
}
