// SPDX-License-Identifier: MIT
/*
 * Several input pipelines over one compute stream (issue 16, section 3;
 * docs/workload.md "Several pipelines", tests/e2e/test_audit_pipes.sh).
 *
 * A batch goes, as in TorchRec: copy stream M (hipMemcpyAsync H2D, then a
 * record on M) -> data-dist stream D (waits on M's record, sparse kernels,
 * a record on D) -> compute stream C (the null stream: waits on D's record,
 * then on M's, forward kernels reading the batch, backward). Every pipeline
 * prefetches at depth 2: batch i+1 is copied and distributed before
 * forward(i), so a pipeline always has a batch in flight until its last.
 *
 *   --mode trainval: a train pipeline (M_t, D_t) and, after every K train
 *     batches, an eval pipeline with its own streams (M_e, D_e) created
 *     then, running E batches on C and destroyed after; train resumes with
 *     the batch it had prefetched. The next eval's streams get the destroyed
 *     handles back (simhip recycles streams LIFO; --recycle says in which
 *     roles), and its batches go on numbering from the last eval's.
 *   --mode twocopy: one pipeline whose batch i is copied on M[i % 2].
 *   --no-sparse: no D; C waits on the copy stream directly.
 *   --drop PIPE:BATCH:EDGE skips one wait of that batch: cs (D on M),
 *     sf (C on D), cf (C on M). The record stays: only the wait is missing.
 *
 * The ground truth (--truth) is derived from the program's own
 * happens-before, not from anyone's audit rules: every stream has a vector
 * clock (a recycled handle is a new stream), a record captures its stream's
 * clock, a wait merges it. Batch T is untrusted when one of its consumer
 * ops is not ordered after one of its producer ops: its sparse kernels
 * after its copies (copy->sparse), its forward kernels after its sparse
 * kernels (sparse->forward) or after its copies (copy->forward).
 *
 * Exit: 0 done, 1 a HIP call failed or the truth file could not be written,
 * 2 bad option.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"
#include "simhip.h"

#define MAX_TRAIN 64
#define MAX_EVAL_BATCHES 8
#define MAX_DROPS 8
#define MAX_LSTREAMS 160 /* 3 train streams and 2 per eval round, at most 63 rounds */
#define MAX_BATCHES (MAX_TRAIN + (MAX_TRAIN - 1) * MAX_EVAL_BATCHES)
#define MAX_STAGE_OPS 2
#define RING 3 /* events per edge and pipeline, used in turn: one more than the depth */
#define VALUE_BYTES 4096
#define LENGTH_BYTES 512
#define KERNEL_NS 20000
#define TRUTH_SCHEMA 1

enum stage { ST_COPY, ST_SPARSE, ST_FORWARD, ST_N };
enum edge { E_CS, E_SF, E_CF, E_N };
enum mode { MODE_TRAINVAL, MODE_TWOCOPY };
enum recycle { RECYCLE_SAME, RECYCLE_SWAPPED };

static const char *const edge_opt[E_N] = { "cs", "sf", "cf" };
static const char *const edge_label[E_N] = { "copy->sparse", "sparse->forward", "copy->forward" };

SIMHIP_KERNEL(k_input_dist, "input_dist", NULL, KERNEL_NS);
SIMHIP_KERNEL(k_dist_init, "dist_init", NULL, KERNEL_NS);
SIMHIP_KERNEL(k_lookup, "fwd_lookup", NULL, KERNEL_NS);
SIMHIP_KERNEL(k_dense, "fwd_dense", NULL, KERNEL_NS);
SIMHIP_KERNEL(k_bwd, "bwd_dense", NULL, KERNEL_NS);
SIMHIP_KERNEL(k_bwd_emb, "bwd_emb", NULL, KERNEL_NS);

/* ---- happens-before ------------------------------------------------------ */

struct vclock {
	uint16_t c[MAX_LSTREAMS];
};

struct op { /* one enqueued op: its stream and the stream's clock just after it */
	int ls;
	struct vclock vc;
};

struct ev {
	hipEvent_t h;
	struct vclock vc; /* the clock its last record captured */
};

static struct {
	hipStream_t h;
	struct vclock vc;
} lstreams[MAX_LSTREAMS];
static int nlstreams;

static int ls_new(hipStream_t h)
{
	lstreams[nlstreams].h = h;
	return nlstreams++;
}

static void ls_tick(int ls, struct op *out)
{
	lstreams[ls].vc.c[ls]++;
	if (out) {
		out->ls = ls;
		out->vc = lstreams[ls].vc;
	}
}

static bool ordered_before(const struct op *x, const struct op *y)
{
	return y->vc.c[x->ls] >= x->vc.c[x->ls];
}

/* ---- options ------------------------------------------------------------- */

struct drop {
	const char *arg;
	int pipe, batch;
	enum edge edge;
	bool used;
};

static struct {
	enum mode mode;
	bool sparse;
	int batches, eval_every, eval_batches, ndrops;
	enum recycle recycle;
	struct drop drops[MAX_DROPS];
	const char *truth;
	bool gate;
} opt = { MODE_TRAINVAL, true, 8, 3, 2, 0, RECYCLE_SAME, { { 0 } }, NULL, false };

static int eval_rounds(void)
{
	return opt.mode == MODE_TRAINVAL ? (opt.batches - 1) / opt.eval_every : 0;
}

/* ---- truth file and the logged calls ------------------------------------ */

static FILE *truth;
static long next_seq;
static int cur_pipe = -1, cur_batch = -1;
static const char *cur_stage = "setup";

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...)
{
	va_list ap;

	if (!truth)
		return;
	va_start(ap, fmt);
	vfprintf(truth, fmt, ap);
	va_end(ap);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned long long hex(const void *p)
{
	return (unsigned long long)(uintptr_t)p;
}

static void attr(int pipe, int batch, const char *stage)
{
	cur_pipe = pipe;
	cur_batch = batch;
	cur_stage = stage;
}

/* One call line, written after the call returned; ARGS are its argument keys
 * as nanlog-bpf prints them (include/nanlog_apis.h). A failed call ends the
 * run: nothing after it would mean what the truth says. */
static void called(const char *api, uint64_t t0, hipError_t rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void called(const char *api, uint64_t t0, hipError_t rc, const char *fmt, ...)
{
	char args[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	put("{\"type\":\"call\",\"seq\":%ld,\"api\":\"%s\",\"tid\":%d,\"ts_ns\":%llu%s,\"rc\":%d,",
	    next_seq++, api, (int)gettid(), (unsigned long long)t0, args, (int)rc);
	if (cur_pipe >= 0)
		put("\"pipeline\":%d,", cur_pipe);
	else
		put("\"pipeline\":null,");
	if (cur_batch >= 0)
		put("\"batch\":%d,", cur_batch);
	else
		put("\"batch\":null,");
	put("\"stage\":\"%s\"}\n", cur_stage);
	if (rc != hipSuccess) {
		put("{\"type\":\"error\",\"api\":\"%s\",\"rc\":%d}\n", api, (int)rc);
		if (truth)
			fflush(truth);
		fprintf(stderr, "multipipe: %s: %s (%d)\n", api, hipGetErrorName(rc), (int)rc);
		exit(1);
	}
}

static int stream_create(void)
{
	hipStream_t s = NULL;
	uint64_t t0 = now_ns();
	hipError_t rc = hipStreamCreateWithFlags(&s, hipStreamNonBlocking);

	called("hipStreamCreateWithFlags", t0, rc, ",\"flags\":%d,\"handle\":\"0x%llx\"",
	       hipStreamNonBlocking, hex(s));
	return ls_new(s);
}

static void stream_destroy(int ls)
{
	uint64_t t0 = now_ns();

	called("hipStreamDestroy", t0, hipStreamDestroy(lstreams[ls].h), ",\"stream\":\"0x%llx\"",
	       hex(lstreams[ls].h));
}

static void event_create(struct ev *e)
{
	uint64_t t0 = now_ns();
	hipError_t rc = hipEventCreateWithFlags(&e->h, hipEventDisableTiming);

	called("hipEventCreateWithFlags", t0, rc, ",\"flags\":%d,\"handle\":\"0x%llx\"",
	       hipEventDisableTiming, hex(e->h));
	memset(&e->vc, 0, sizeof(e->vc));
}

static void event_destroy(struct ev *e)
{
	uint64_t t0 = now_ns();

	called("hipEventDestroy", t0, hipEventDestroy(e->h), ",\"event\":\"0x%llx\"", hex(e->h));
}

static void record(struct ev *e, int ls)
{
	uint64_t t0 = now_ns();
	hipError_t rc = hipEventRecord(e->h, lstreams[ls].h);

	called("hipEventRecord", t0, rc, ",\"stream\":\"0x%llx\",\"event\":\"0x%llx\"",
	       hex(lstreams[ls].h), hex(e->h));
	ls_tick(ls, NULL);
	e->vc = lstreams[ls].vc;
}

static void wait_event(int ls, const struct ev *e)
{
	uint64_t t0 = now_ns();
	hipError_t rc = hipStreamWaitEvent(lstreams[ls].h, e->h, 0);

	called("hipStreamWaitEvent", t0, rc, ",\"stream\":\"0x%llx\",\"event\":\"0x%llx\",\"flags\":0",
	       hex(lstreams[ls].h), hex(e->h));
	for (int i = 0; i < MAX_LSTREAMS; i++)
		if (e->vc.c[i] > lstreams[ls].vc.c[i])
			lstreams[ls].vc.c[i] = e->vc.c[i];
	ls_tick(ls, NULL);
}

static void copy_h2d(void *dst, const void *src, size_t bytes, int ls, struct op *out)
{
	uint64_t t0 = now_ns();
	hipError_t rc = hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, lstreams[ls].h);

	called("hipMemcpyAsync", t0, rc,
	       ",\"stream\":\"0x%llx\",\"dst\":\"0x%llx\",\"src\":\"0x%llx\",\"bytes\":%zu,\"kind\":%d",
	       hex(lstreams[ls].h), hex(dst), hex(src), bytes, hipMemcpyHostToDevice);
	ls_tick(ls, out);
}

static void launch(simhip_kernel_t *k, int ls, struct op *out)
{
	dim3 grid = { 1, 1, 1 }, block = { 64, 1, 1 };
	uint64_t t0 = now_ns();
	hipError_t rc = hipLaunchKernel(k, grid, block, NULL, 0, lstreams[ls].h);

	called("hipLaunchKernel", t0, rc, ",\"stream\":\"0x%llx\",\"fn\":\"0x%llx\",\"kernel\":\"%s\"",
	       hex(lstreams[ls].h), hex(k), k->name);
	ls_tick(ls, out);
}

static void stream_sync(int ls)
{
	uint64_t t0 = now_ns();

	called("hipStreamSynchronize", t0, hipStreamSynchronize(lstreams[ls].h),
	       ",\"stream\":\"0x%llx\"", hex(lstreams[ls].h));
}

/* ---- pipelines and batches ---------------------------------------------- */

struct batch {
	int pipe, n, copy_ls;
	struct op ops[ST_N][MAX_STAGE_OPS];
	int nops[ST_N];
	bool dropped[E_N], consumed, in_flight;
};

struct pipe {
	int id, ncopy;
	int copy[2], sparse; /* logical streams; sparse -1 without a sparse stage */
	struct ev evm[RING], evd[RING];
	int next;     /* next batch number: goes on across eval rounds */
	int rounds;   /* times opened */
	bool open;    /* its streams exist */
	hipStream_t old_copy, old_sparse; /* handles destroyed at the last close */
};

static const int C = 0; /* the compute stream: the null stream, logical stream 0 */
static struct batch batches[MAX_BATCHES];
static int nbatches;
static struct pipe pipes[2];
static void *dev_buf[RING][2], *host_buf[2];

static struct batch *batch_of(const struct pipe *p, int n)
{
	for (int i = 0; i < nbatches; i++)
		if (batches[i].pipe == p->id && batches[i].n == n)
			return &batches[i];
	return NULL;
}

static bool drop_wait(const struct batch *b, enum edge e)
{
	for (int i = 0; i < opt.ndrops; i++)
		if (opt.drops[i].pipe == b->pipe && opt.drops[i].batch == b->n &&
		    opt.drops[i].edge == e) {
			opt.drops[i].used = true;
			return true;
		}
	return false;
}

/* The wait of edge E of batch B (from stream FROM, recorded in EV), unless
 * it is dropped; an edge line in the truth either way. */
static void edge_wait(struct batch *b, enum edge e, int to, const struct ev *ev, int from)
{
	b->dropped[e] = drop_wait(b, e);
	if (!b->dropped[e])
		wait_event(to, ev);
	put("{\"type\":\"edge\",\"pipeline\":%d,\"batch\":%d,\"name\":\"%s\",\"from_stream\":"
	    "\"0x%llx\",\"to_stream\":\"0x%llx\",\"event\":\"0x%llx\",\"dropped\":%s,\"seq\":%ld}\n",
	    b->pipe, b->n, edge_opt[e], hex(lstreams[from].h), hex(lstreams[to].h), hex(ev->h),
	    b->dropped[e] ? "true" : "false", b->dropped[e] ? -1 : next_seq - 1);
}

static void pipe_open(struct pipe *p, int id, int ncopy)
{
	bool reused;

	p->id = id;
	p->ncopy = ncopy;
	attr(id, -1, "setup");
	for (int i = 0; i < ncopy; i++)
		p->copy[i] = stream_create();
	p->sparse = opt.sparse ? stream_create() : -1;
	for (int i = 0; i < RING; i++)
		event_create(&p->evm[i]);
	for (int i = 0; i < RING && opt.sparse; i++)
		event_create(&p->evd[i]);
	put("{\"type\":\"streams\",\"pipeline\":%d,\"round\":%d,\"copy\":[\"0x%llx\"", id, p->rounds,
	    hex(lstreams[p->copy[0]].h));
	if (ncopy > 1)
		put(",\"0x%llx\"", hex(lstreams[p->copy[1]].h));
	if (opt.sparse)
		put("],\"sparse\":\"0x%llx\"", hex(lstreams[p->sparse].h));
	else
		put("],\"sparse\":null");
	/* which of the handles closed last time came back, and in which roles */
	reused = p->rounds > 0 && opt.sparse;
	if (reused && lstreams[p->copy[0]].h == p->old_copy &&
	    lstreams[p->sparse].h == p->old_sparse)
		put(",\"recycled\":\"same\"");
	else if (reused && lstreams[p->copy[0]].h == p->old_sparse &&
		 lstreams[p->sparse].h == p->old_copy)
		put(",\"recycled\":\"swapped\"");
	else
		put(",\"recycled\":null");
	put(",\"compute\":\"0x0\"}\n");
	p->rounds++;
	p->open = true;
}

/* Destroys the pipeline's events and streams. simhip hands destroyed streams
 * out again last in, first out (sim/hip/stream.c): the stream destroyed last
 * is the next one created, so the destroy order decides the roles the
 * handles get in the next round (the copy stream is created first). */
static void pipe_close(struct pipe *p)
{
	int order[3] = { p->sparse, p->copy[0], p->ncopy > 1 ? p->copy[1] : -1 };

	if (opt.recycle == RECYCLE_SWAPPED) {
		order[0] = p->copy[0];
		order[1] = p->sparse;
	}
	p->open = false;
	attr(p->id, -1, "teardown");
	for (int i = RING - 1; i >= 0; i--) {
		if (opt.sparse)
			event_destroy(&p->evd[i]);
		event_destroy(&p->evm[i]);
	}
	p->old_copy = lstreams[p->copy[0]].h;
	p->old_sparse = opt.sparse ? lstreams[p->sparse].h : NULL;
	for (int i = 0; i < 3; i++)
		if (order[i] >= 0)
			stream_destroy(order[i]);
}

/* Copy and sparse stages of batch N of P. */
static void produce(struct pipe *p, int n)
{
	struct batch *b = &batches[nbatches++];
	int slot = n % RING;

	b->pipe = p->id;
	b->n = n;
	b->copy_ls = p->copy[n % p->ncopy];
	attr(p->id, n, "copy");
	copy_h2d(dev_buf[slot][0], host_buf[0], VALUE_BYTES, b->copy_ls, &b->ops[ST_COPY][0]);
	copy_h2d(dev_buf[slot][1], host_buf[1], LENGTH_BYTES, b->copy_ls, &b->ops[ST_COPY][1]);
	b->nops[ST_COPY] = 2;
	record(&p->evm[slot], b->copy_ls);
	if (!opt.sparse)
		return;
	attr(p->id, n, "sparse");
	edge_wait(b, E_CS, p->sparse, &p->evm[slot], b->copy_ls);
	launch(&k_input_dist, p->sparse, &b->ops[ST_SPARSE][0]);
	launch(&k_dist_init, p->sparse, &b->ops[ST_SPARSE][1]);
	b->nops[ST_SPARSE] = 2;
	record(&p->evd[slot], p->sparse);
}

/* Forward (and backward when training) of batch N of P on C. */
static void consume(struct pipe *p, int n, bool train)
{
	struct batch *b = batch_of(p, n);
	int slot = n % RING;

	attr(p->id, n, "forward");
	if (opt.sparse)
		edge_wait(b, E_SF, C, &p->evd[slot], p->sparse);
	edge_wait(b, E_CF, C, &p->evm[slot], b->copy_ls);
	launch(&k_lookup, C, &b->ops[ST_FORWARD][0]);
	launch(&k_dense, C, &b->ops[ST_FORWARD][1]);
	b->nops[ST_FORWARD] = 2;
	b->consumed = true;
	if (!train)
		return;
	attr(p->id, n, "backward");
	launch(&k_bwd, C, NULL);
	launch(&k_bwd_emb, C, NULL);
}

/* COUNT batches of P from its next number, prefetched at depth 2. */
static void run_batches(struct pipe *p, int count, bool train, void (*after)(int n))
{
	int first = p->next, end = p->next + count;

	produce(p, first);
	for (int n = first; n < end; n++) {
		if (n + 1 < end)
			produce(p, n + 1);
		consume(p, n, train);
		if (after)
			after(n);
	}
	p->next = end;
}

static void eval_round(void)
{
	struct pipe *e = &pipes[1];

	for (int i = 0; i < nbatches; i++)
		if (batches[i].pipe == 0 && !batches[i].consumed)
			batches[i].in_flight = true;
	pipe_open(e, 1, 1);
	run_batches(e, opt.eval_batches, false, NULL);
	attr(1, -1, "eval_end");
	stream_sync(C); /* the eval metrics' .item() */
	pipe_close(e);
}

static void after_train_batch(int n)
{
	if ((n + 1) % opt.eval_every == 0 && n + 1 < opt.batches)
		eval_round();
}

/* ---- verdicts ------------------------------------------------------------ */

static bool stage_before(const struct batch *b, enum stage x, enum stage y)
{
	for (int i = 0; i < b->nops[x]; i++)
		for (int j = 0; j < b->nops[y]; j++)
			if (!ordered_before(&b->ops[x][i], &b->ops[y][j]))
				return false;
	return true;
}

static void put_batch(const struct batch *b, int *untrusted)
{
	bool miss[E_N] = {
		[E_CS] = opt.sparse && !stage_before(b, ST_COPY, ST_SPARSE),
		[E_SF] = opt.sparse && !stage_before(b, ST_SPARSE, ST_FORWARD),
		[E_CF] = !stage_before(b, ST_COPY, ST_FORWARD),
	};
	const char *sep = "";
	int first = -1;

	put("{\"type\":\"batch\",\"pipeline\":%d,\"batch\":%d,\"missing_edges\":[", b->pipe, b->n);
	for (int e = 0; e < E_N; e++)
		if (miss[e]) {
			put("%s\"%s\"", sep, edge_label[e]);
			sep = ",";
			if (first < 0)
				first = e;
		}
	put("],\"verdict\":\"%s\",\"edge\":", first < 0 ? "trusted" : "untrusted");
	if (first < 0)
		put("null");
	else
		put("\"%s\"", edge_label[first]);
	put(",\"copy_stream\":\"0x%llx\",\"dropped\":[", hex(lstreams[b->copy_ls].h));
	sep = "";
	for (int e = 0; e < E_N; e++)
		if (b->dropped[e]) {
			put("%s\"%s\"", sep, edge_opt[e]);
			sep = ",";
		}
	put("],\"in_flight_at_switch\":%s}\n", b->in_flight ? "true" : "false");
	*untrusted += first >= 0;
}

/* ---- main ---------------------------------------------------------------- */

static const char usage[] =
	"usage: multipipe [options]\n"
	"  --mode trainval|twocopy  train + eval pipelines, or one pipeline on two copy\n"
	"                           streams in turn (default trainval)\n"
	"  --no-sparse              no data-dist stream: compute waits on the copy stream\n"
	"  --batches N              train batches, 1..64 (default 8)\n"
	"  --eval-every K           trainval: an eval round after every K train batches\n"
	"                           while some are left, 1..64 (default 3)\n"
	"  --eval-batches E         trainval: batches per eval round, 1..8 (default 2)\n"
	"  --recycle same|swapped   trainval: roles the next eval round's streams get the\n"
	"                           destroyed handles in (default same)\n"
	"  --drop PIPE:BATCH:EDGE   skip one wait (repeatable, up to 8): PIPE 0 train,\n"
	"                           1 eval; EDGE cs (D on M), sf (C on D), cf (C on M)\n"
	"  --gate                   print \"ready PID\" on stderr, wait for SIGUSR1\n"
	"                           before the first HIP call\n"
	"  --truth FILE             write the ground truth (JSON Lines)\n";

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "multipipe: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	return 2;
}

/* Whole-string decimal in [lo, hi], ending at END (a character, or 0). */
static bool number(const char *s, long lo, long hi, char end, long *out, const char **rest)
{
	char *e;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtol(s, &e, 10);
	if (errno || *e != end || *out < lo || *out > hi)
		return false;
	if (rest)
		*rest = e + (end != 0);
	return true;
}

static int parse_drop(const char *arg)
{
	struct drop *d = &opt.drops[opt.ndrops];
	const char *s = arg;
	long v;

	if (opt.ndrops == MAX_DROPS)
		return bad("more than 8 --drop: %s", arg);
	d->arg = arg;
	if (!number(s, 0, 1, ':', &v, &s))
		return bad("--drop %s: PIPE is 0 or 1", arg);
	d->pipe = (int)v;
	if (!number(s, 0, MAX_BATCHES, ':', &v, &s))
		return bad("--drop %s: bad BATCH", arg);
	d->batch = (int)v;
	for (d->edge = 0; d->edge < E_N && strcmp(s, edge_opt[d->edge]); d->edge++)
		;
	if (d->edge == E_N)
		return bad("--drop %s: EDGE is cs, sf or cf", arg);
	opt.ndrops++;
	return 0;
}

/* 0 or 1: which of the two words ARG is; -1: neither */
static int one_of(const char *arg, const char *w0, const char *w1)
{
	return !strcmp(arg, w0) ? 0 : !strcmp(arg, w1) ? 1 : -1;
}

/* --batches (b), --eval-every (k), --eval-batches (e): a count in 1..max */
static int count_opt(int c, const char *arg)
{
	const char *name = c == 'b' ? "--batches" : c == 'k' ? "--eval-every" : "--eval-batches";
	long max = c == 'e' ? MAX_EVAL_BATCHES : MAX_TRAIN, v;
	int *out = c == 'b' ? &opt.batches : c == 'k' ? &opt.eval_every : &opt.eval_batches;

	if (!number(arg, 1, max, 0, &v, NULL)) {
		fprintf(stderr, "multipipe: %s %s: 1..%ld\n", name, arg, max);
		return 2;
	}
	*out = (int)v;
	return 0;
}

static int parse(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "mode", required_argument, NULL, 'm' },   { "no-sparse", no_argument, NULL, 'S' },
		{ "batches", required_argument, NULL, 'b' }, { "eval-every", required_argument, NULL, 'k' },
		{ "eval-batches", required_argument, NULL, 'e' },
		{ "recycle", required_argument, NULL, 'r' }, { "drop", required_argument, NULL, 'd' },
		{ "gate", no_argument, NULL, 'g' },          { "truth", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },          { 0 }
	};
	bool eval_opts = false;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'm':
			if ((rc = one_of(optarg, "trainval", "twocopy")) < 0)
				return bad("--mode %s: trainval or twocopy", optarg);
			opt.mode = rc ? MODE_TWOCOPY : MODE_TRAINVAL;
			break;
		case 'S':
			opt.sparse = false;
			break;
		case 'b':
		case 'k':
		case 'e':
			if ((rc = count_opt(c, optarg)))
				return rc;
			eval_opts |= c != 'b';
			break;
		case 'r':
			if ((rc = one_of(optarg, "same", "swapped")) < 0)
				return bad("--recycle %s: same or swapped", optarg);
			opt.recycle = rc ? RECYCLE_SWAPPED : RECYCLE_SAME;
			eval_opts = true;
			break;
		case 'd':
			if ((rc = parse_drop(optarg)))
				return rc;
			break;
		case 'g':
			opt.gate = true;
			break;
		case 't':
			opt.truth = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc)
		return bad("unexpected argument %s", argv[optind]);
	if (opt.mode == MODE_TWOCOPY && eval_opts)
		return bad("%s: --eval-every, --eval-batches and --recycle need --mode trainval",
			   "twocopy");
	/* a drop that never applies would make a scenario pass without a fault */
	for (int i = 0; i < opt.ndrops; i++) {
		const struct drop *d = &opt.drops[i];
		int count = d->pipe == 0 ? opt.batches : eval_rounds() * opt.eval_batches;

		if (d->batch >= count)
			return bad("--drop %s: no such batch in this run", d->arg);
		if (d->edge != E_CF && !opt.sparse)
			return bad("--drop %s: no sparse stage with --no-sparse", d->arg);
	}
	return 0;
}

static void put_run(void)
{
	put("{\"type\":\"run\",\"schema\":%d,\"pid\":%d,\"mode\":\"%s\",\"sparse\":%s,\"batches\":%d,",
	    TRUTH_SCHEMA, (int)getpid(), opt.mode == MODE_TRAINVAL ? "trainval" : "twocopy",
	    opt.sparse ? "true" : "false", opt.batches);
	put("\"eval_every\":%d,\"eval_batches\":%d,\"eval_rounds\":%d,\"recycle\":\"%s\",\"drop\":[",
	    opt.eval_every, opt.eval_batches, eval_rounds(),
	    opt.recycle == RECYCLE_SAME ? "same" : "swapped");
	for (int i = 0; i < opt.ndrops; i++)
		put("%s{\"pipeline\":%d,\"batch\":%d,\"edge\":\"%s\"}", i ? "," : "", opt.drops[i].pipe,
		    opt.drops[i].batch, edge_opt[opt.drops[i].edge]);
	put("]}\n");
}

int main(int argc, char **argv)
{
	static char host[2][VALUE_BYTES];
	int rc = parse(argc, argv), untrusted = 0;
	uint64_t t0;

	if (rc)
		return rc;
	if (opt.truth && !(truth = fopen(opt.truth, "w"))) {
		fprintf(stderr, "multipipe: %s: %s\n", opt.truth, strerror(errno));
		return 2;
	}
	if (opt.gate)
		gate_wait();
	put_run();
	ls_new(NULL); /* C */
	host_buf[0] = host[0];
	host_buf[1] = host[1];
	for (int i = 0; i < RING; i++)
		for (int j = 0; j < 2; j++) {
			t0 = now_ns();
			rc = hipMalloc(&dev_buf[i][j], VALUE_BYTES);
			called("hipMalloc", t0, rc, ",\"bytes\":%d,\"handle\":\"0x%llx\"", VALUE_BYTES,
			       hex(dev_buf[i][j]));
		}
	pipe_open(&pipes[0], 0, opt.mode == MODE_TWOCOPY ? 2 : 1);
	run_batches(&pipes[0], opt.batches, true,
		    opt.mode == MODE_TRAINVAL ? after_train_batch : NULL);

	attr(-1, -1, "teardown");
	t0 = now_ns();
	called("hipDeviceSynchronize", t0, hipDeviceSynchronize(), "%s", "");
	/* The train pipeline's streams and events live until the process exits,
	 * as PyTorch's pooled streams do; only eval rounds destroy theirs. */
	for (int i = 0; i < RING; i++)
		for (int j = 0; j < 2; j++) {
			t0 = now_ns();
			called("hipFree", t0, hipFree(dev_buf[i][j]), ",\"dst\":\"0x%llx\"",
			       hex(dev_buf[i][j]));
		}
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < nbatches; i++)
			if (batches[i].pipe == p)
				put_batch(&batches[i], &untrusted);
	put("{\"type\":\"end\",\"calls\":%ld,\"batches\":%d,\"untrusted\":%d,\"alive\":[", next_seq,
	    nbatches, untrusted);
	for (int p = 0; p < 2 && pipes[p].rounds; p++)
		put("%s{\"pipeline\":%d,\"copy_streams\":%d,\"sparse_streams\":%d}", p ? "," : "", p,
		    pipes[p].open ? pipes[p].ncopy : 0, pipes[p].open && opt.sparse);
	put("]}\n");
	for (int i = 0; i < opt.ndrops; i++)
		if (!opt.drops[i].used) {
			fprintf(stderr, "multipipe: --drop %d:%d:%s was never applied\n",
				opt.drops[i].pipe, opt.drops[i].batch, edge_opt[opt.drops[i].edge]);
			return 1;
		}
	if (truth && fclose(truth)) {
		fprintf(stderr, "multipipe: %s: %s\n", opt.truth, strerror(errno));
		return 1;
	}
	return 0;
}
