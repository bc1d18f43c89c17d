// SPDX-License-Identifier: MIT
/*
 * Writes the generated part of the fuzzing seed corpus (docs/fuzzing.md):
 *   gen_seeds OUTDIR [LIB...]
 * OUTDIR/engine: call-op programs (callgen.h) of a prefetching loop, a
 * TorchRec-like pipeline with a sparse stage, two processes and a run with
 * losses and an exit; OUTDIR/decode: their records in the full layout and,
 * one a file, in the ring's compact layout; OUTDIR/recording: recordings of
 * them written by the writer API (with a trailer, without, header only);
 * OUTDIR/procmaps: this process's /proc/self/maps after dlopen of each LIB
 * (the simhip and simrccl libraries: real mappings of libamdhip64.so.5 and
 * librccl.so.1).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "callgen.h"
#include "record/recording.h"

#define MAX_OPS 1024

struct prog {
	uint8_t hdr[8];
	uint8_t ops[MAX_OPS][CG_OP];
	int n;
};

static const char *outdir;

static void die(const char *what)
{
	fprintf(stderr, "gen_seeds: %s: %s\n", what, strerror(errno));
	exit(1);
}

static const char *path_of(const char *sub, const char *name)
{
	static char p[2][4096];
	static int k;

	k ^= 1;
	snprintf(p[k], sizeof(p[k]), "%s/%s%s%s", outdir, sub, *name ? "/" : "", name);
	return p[k];
}

static void write_file(const char *sub, const char *name, const void *buf, size_t len)
{
	FILE *f;

	mkdir(path_of(sub, ""), 0755);
	f = fopen(path_of(sub, name), "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
		die(name);
}

/* One call op; pid/tid/stream/event/handle/fn/event2 are pool indexes. */
static void call(struct prog *p, int api, int pid, int tid, int stream, int event, int handle,
		 int fn, int event2, uint8_t step_us, uint8_t flags_kind)
{
	uint8_t *op = p->ops[p->n++];

	if (p->n > MAX_OPS || api < 0) {
		fprintf(stderr, "gen_seeds: program too long or unknown api\n");
		exit(1);
	}
	op[0] = (uint8_t)api;
	op[1] = (uint8_t)(pid | tid << 2);
	op[2] = (uint8_t)(stream | event << 3);
	op[3] = (uint8_t)(handle | fn << 3 | event2 << 5);
	op[4] = step_us;
	op[5] = 20; /* return-probe calls: entry 20 us before return */
	op[6] = 0x40; /* 64 bytes, priority 64 */
	op[7] = flags_kind;
}

static void special(struct prog *p, uint8_t what, int pid, uint8_t arg)
{
	uint8_t *op = p->ops[p->n++];

	memset(op, 0, CG_OP);
	op[0] = what;
	op[1] = (uint8_t)pid;
	op[2] = arg;
	op[4] = 10;
}

#define API(name) nl_api_by_name(name)
enum { NUL = 0, S_COPY = 3, S_DIST = 4, S_NCCL = 5 }; /* stream pool indexes */
enum { H2D = 1, NONBLOCKING = 0x40 };

static void create_streams(struct prog *p, int pid, int n)
{
	for (int s = 0; s < n; s++)
		call(p, API("hipStreamCreateWithFlags"), pid, 0, 0, 0, S_COPY + s, 0, 0, 5, NONBLOCKING);
	for (int e = 0; e < 6; e++)
		call(p, API("hipEventCreate"), pid, 0, 0, 0, e, 0, 0, 2, 0);
}

/* the batch's copy on the copy stream, its end recorded in event 0 */
static void copy_step(struct prog *p, int pid)
{
	call(p, API("hipMemcpyAsync"), pid, 0, S_COPY, 0, 0, 0, 0, 30, H2D);
	call(p, API("hipEventRecord"), pid, 0, S_COPY, 0, 0, 0, 0, 2, 0);
}

/* forward on the null stream after the copy; the copy stream then waits for it */
static void forward_step(struct prog *p, int pid)
{
	call(p, API("hipStreamWaitEvent"), pid, 0, NUL, 0, 0, 0, 0, 2, 0);
	call(p, API("hipLaunchKernel"), pid, 0, NUL, 0, 0, 0, 0, 5, 0);
	call(p, API("hipLaunchKernel"), pid, 0, NUL, 0, 0, 1, 0, 5, 0);
	call(p, API("hipEventRecord"), pid, 0, NUL, 1, 0, 0, 0, 2, 0);
	call(p, API("hipStreamWaitEvent"), pid, 0, S_COPY, 1, 0, 0, 0, 2, 0);
}

/* a prefetching loop: copy -> forward */
static void prefetch_iter(struct prog *p, int pid)
{
	copy_step(p, pid);
	forward_step(p, pid);
}

/* copy -> data dist (input dist kernel, all-to-all) -> forward, TorchRec's order */
static void torchrec_iter(struct prog *p, int pid, bool drop_sparse_wait)
{
	copy_step(p, pid);
	call(p, API("hipStreamWaitEvent"), pid, 0, S_DIST, 0, 0, 0, 0, 2, 0);
	call(p, API("hipLaunchKernel"), pid, 0, S_DIST, 0, 0, 2, 0, 5, 0);
	call(p, API("hipEventRecord"), pid, 0, S_DIST, 2, 0, 0, 0, 2, 0);
	call(p, API("hipStreamWaitEvent"), pid, 0, S_NCCL, 2, 0, 0, 0, 2, 0);
	/* RCCL's kernel on its stream, then the collective's own record at return */
	call(p, API("hipExtLaunchKernel"), pid, 0, S_NCCL, 3, 0, 3, 4, 3, 0);
	p->ops[p->n - 1][1] |= 1 << 4; /* inside the collective */
	call(p, API("ncclAllToAll"), pid, 0, S_NCCL, 0, 0, 0, 0, 3, 0);
	call(p, API("hipEventRecord"), pid, 0, S_NCCL, 5, 0, 0, 0, 2, 0);
	call(p, API("hipStreamWaitEvent"), pid, 0, S_DIST, 5, 0, 0, 0, 2, 0);
	call(p, API("hipEventRecord"), pid, 0, S_DIST, 2, 0, 0, 0, 2, 0);
	if (!drop_sparse_wait)
		call(p, API("hipStreamWaitEvent"), pid, 0, NUL, 2, 0, 0, 0, 2, 0);
	forward_step(p, pid);
	call(p, API("hipEventQuery"), pid, 0, 0, 1, 0, 0, 0, 2, 0);
	call(p, API("hipEventElapsedTime"), pid, 0, 0, 3, 0, 0, 4, 2, 0);
}

static void finish(struct prog *p, int pid)
{
	call(p, API("hipDeviceSynchronize"), pid, 0, 0, 0, 0, 0, 0, 50, 0);
	special(p, 0xf4, pid, 0); /* exit */
}

static void write_prog(const char *name, const struct prog *p)
{
	size_t len = sizeof(p->hdr) + (size_t)p->n * CG_OP;
	uint8_t *buf = malloc(len);

	if (!buf)
		die("malloc");
	memcpy(buf, p->hdr, sizeof(p->hdr));
	memcpy(buf + sizeof(p->hdr), p->ops, (size_t)p->n * CG_OP);
	write_file("engine", name, buf, len);
	free(buf);
}

/* The program's calls as ring-buffer records (nothing for the other ops). */
static size_t records(const struct prog *p, struct nl_rec_call *out)
{
	uint64_t now = 1000000000;
	size_t n = 0;

	for (int i = 0; i < p->n; i++)
		if (p->ops[i][0] < 0xf0)
			cg_record(p->ops[i], &now, &out[n++]);
	return n;
}

static void write_recording(const char *name, const struct prog *p, bool trailer, bool items)
{
	static const char *const argv[] = { "nanlog-bpf", "--raw", "--record", "run.rec", "-p", "4000" };
	const struct nl_recording_target targets[] = {
		{ .pid = 4000, .mid_run = true, .ts_ns = 999000000, .comm = "python3" },
	};
	const struct nl_recording_lib libs[] = { {
		.pid = 4000, .lib = NL_LIB_HIP, .path = "/opt/rocm-6.0.2/lib/libamdhip64.so.6.0.60002",
		.attached = 41, .retprobes = 20, .retprobes_allowed = true, .elapsed_ns = 1500000,
		.ts_ns = 999500000, .nmissing = 2,
		.missing = { NL_API_GRAPH_LAUNCH, NL_API_MEMCPY_ASYNC_SPT },
	} };
	const struct nl_recording_header h = {
		.rec_schema = 1, .tool_version = "0.1.0", .kernel_release = "6.1.0-18-amd64",
		.start_mono_ns = 998000000, .start_real_ns = 1764500000000000000ull,
		.argc = 6, .argv = argv, .ntargets = 1, .targets = targets, .nlibs = 1, .libs = libs,
	};
	const struct nl_recording_lib rccl = {
		.pid = 4000, .lib = NL_LIB_RCCL, .path = "/opt/rocm-6.0.2/lib/librccl.so.1",
		.attached = 9, .retprobes = 9, .retprobes_allowed = true, .ts_ns = 1000100000,
	};
	const struct nl_recording_target late = { .pid = 4001, .ts_ns = 1000200000, .comm = "" };
	const struct nl_recording_trailer t = {
		.end_ns = 2000000000, .records = (uint64_t)p->n, .bad_records = 1, .lost_ringbuf = 3,
		.probes_attached = 50, .retprobes_attached = 29, .nmissing = 1,
		.missing = { NL_API_GRAPH_LAUNCH }, .attach_ns = 1500000, .duration_ns = 1000000000,
		.cpu_ms = 3.25,
	};
	struct nl_rec_call *recs = calloc(MAX_OPS, sizeof(*recs));
	struct nl_recording_writer *w;
	char err[512];
	size_t n = records(p, recs);
	const char *path = path_of("recording", name);
	int ret;

	if (!recs)
		die("calloc");
	mkdir(path_of("recording", ""), 0755);
	unlink(path);
	ret = nl_recording_create(&w, path, false, &h, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "gen_seeds: %s\n", err);
		exit(1);
	}
	for (size_t i = 0; i < n && items; i++) {
		ret |= nl_recording_write_record(w, &recs[i], sizeof(recs[i]));
		if (i == 3) {
			ret |= nl_recording_write_lib(w, &rccl);
			ret |= nl_recording_write_target(w, &late);
			ret |= nl_recording_write_record(w, &recs[i], 100); /* a record of the wrong size */
		}
		if (i == n / 2) {
			ret |= nl_recording_write_lost(w, 4000, 3, recs[i].ts_ns);
			ret |= nl_recording_flush(w); /* a second block */
		}
	}
	if (items)
		ret |= nl_recording_write_exit(w, 4000, 1900000000);
	if (trailer)
		ret |= nl_recording_finish(w, &t);
	ret |= nl_recording_close(w);
	free(recs);
	if (ret) {
		fprintf(stderr, "gen_seeds: writing %s failed\n", path);
		exit(1);
	}
}

static void write_records(const char *name, const struct prog *p, size_t max)
{
	struct nl_rec_call *recs = calloc(MAX_OPS, sizeof(*recs));
	size_t n;

	if (!recs)
		die("calloc");
	n = records(p, recs);
	write_file("decode", name, recs, (n < max ? n : max) * sizeof(*recs));
	free(recs);
}

/* One record in the ring's compact layout, as the BPF program sends it; its size. */
static size_t compact(const struct nl_rec_call *r, struct nl_wire *w)
{
	int nargs = r->type == NL_REC_CALL ? nl_api_info[r->api].nargs : 0;
	size_t n = 0;

	memset(w, 0, sizeof(*w));
	w->type = r->type == NL_REC_CALL ? NL_WIRE_CALL : NL_WIRE_RUN;
	w->flags = r->flags;
	w->coll_depth = r->coll_depth;
	w->nargs = (uint8_t)nargs;
	w->api = r->api;
	w->pid = r->pid;
	w->tid = r->tid;
	w->ts_ns = r->ts_ns;
	for (int i = 0; i < nargs; i++)
		w->w[n++] = r->args[i];
	if ((r->flags & NL_RF_RET) || r->run || r->flush || r->flush_ts) {
		w->w[n++] = r->ret_ns;
		w->w[n++] = (uint64_t)r->rc;
		w->w[n++] = r->out;
		w->words |= NL_WW_TRIPLE;
	}
	if (r->args[NL_ARG_LOST_BEFORE]) {
		w->w[n++] = r->args[NL_ARG_LOST_BEFORE];
		w->words |= NL_WW_LOST;
	}
	return NL_WIRE_HEAD + n * sizeof(uint64_t);
}

/* The first record of each API in the program, one compact record a file. */
static void write_compact(const char *prefix, const struct prog *p)
{
	struct nl_rec_call *recs = calloc(MAX_OPS, sizeof(*recs));
	bool seen[NL_API_COUNT] = { false };
	char name[64];
	struct nl_wire w;
	size_t n;

	if (!recs)
		die("calloc");
	n = records(p, recs);
	for (size_t i = 0; i < n; i++) {
		if (recs[i].api >= NL_API_COUNT || seen[recs[i].api])
			continue;
		seen[recs[i].api] = true;
		snprintf(name, sizeof(name), "%s-%s.wire", prefix, nl_api_info[recs[i].api].name);
		write_file("decode", name, &w, compact(&recs[i], &w));
	}
	free(recs);
}

static void write_maps(int nlibs, char **libs)
{
	char buf[1 << 16];
	size_t len = 0;
	ssize_t k;
	int fd;

	for (int i = 0; i < nlibs; i++)
		if (!dlopen(libs[i], RTLD_NOW | RTLD_GLOBAL)) {
			fprintf(stderr, "gen_seeds: %s\n", dlerror());
			exit(1);
		}
	fd = open("/proc/self/maps", O_RDONLY);
	if (fd < 0)
		die("/proc/self/maps");
	while (len < sizeof(buf) && (k = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)k;
	close(fd);
	write_file("procmaps", "host-dlopen.maps", buf, len);
}

int main(int argc, char **argv)
{
	static struct prog pf, tr, two, lossy;

	if (argc < 2) {
		fprintf(stderr, "usage: gen_seeds OUTDIR [LIB...]\n");
		return 2;
	}
	outdir = argv[1];

	/* a prefetching loop, traced from its start, replayed twice */
	pf.hdr[0] = 0x20;
	pf.hdr[4] = 1 << 5;
	special(&pf, 0xf0, 0, 0);
	create_streams(&pf, 0, 1);
	for (int i = 0; i < 6; i++)
		prefetch_iter(&pf, 0);
	finish(&pf, 0);
	write_prog("prefetch", &pf);

	/* TorchRec-like, one dropped sparse->forward wait, through the writers */
	tr.hdr[0] = 0x80;
	special(&tr, 0xf0, 0, 0);
	create_streams(&tr, 0, 3);
	for (int i = 0; i < 6; i++)
		torchrec_iter(&tr, 0, i == 3);
	finish(&tr, 0);
	write_prog("torchrec", &tr);

	/* two processes interleaved, role overrides, small caps */
	two.hdr[0] = 0x40 | 0x01 | 0x02;
	two.hdr[1] = S_COPY | NUL << 4;
	two.hdr[3] = 5;
	two.hdr[4] = 7;
	two.hdr[5] = 3;
	two.hdr[6] = 1 | 2 << 4;
	two.hdr[7] = 32;
	create_streams(&two, 0, 1);
	create_streams(&two, 1, 1);
	for (int i = 0; i < 5; i++) {
		prefetch_iter(&two, 0);
		prefetch_iter(&two, 1);
	}
	finish(&two, 1);
	finish(&two, 0);
	write_prog("two-procs", &two);

	/* losses, a missing probe, run info, a report, a bad call, exit in the middle */
	lossy.hdr[0] = 0x08;
	special(&lossy, 0xf1, 0, 0);
	special(&lossy, 0xf5, 0, 1);
	create_streams(&lossy, 0, 3);
	for (int i = 0; i < 4; i++) {
		torchrec_iter(&lossy, 0, false);
		if (i == 1)
			special(&lossy, 0xf3, 0, 5);
		if (i == 2)
			special(&lossy, 0xf2, 0, 1);
	}
	special(&lossy, 0xf7, 0, 40);
	special(&lossy, 0xf6, 0, 0);
	special(&lossy, 0xf8, 0, 0);
	special(&lossy, 0xf4, 0, 0);
	write_prog("lossy", &lossy);

	write_records("torchrec.bin", &tr, 40);
	write_records("prefetch-one.bin", &pf, 12);
	write_compact("torchrec", &tr);
	write_recording("torchrec.rec", &tr, true, true);
	write_recording("no-trailer.rec", &pf, false, true);
	write_recording("header-only.rec", &pf, true, false);
	write_maps(argc - 2, argv + 2);
	return 0;
}
