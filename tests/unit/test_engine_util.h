/* SPDX-License-Identifier: MIT */
/*
 * Test bench for the pairing engine: builds synthetic call sequences the way
 * the BPF side delivers them (entry-only calls at entry, return-probe calls
 * at return with ts_ns = entry), collects the audits, and replays TorchRec's
 * TrainPipelineSparseDist and a plain prefetching loop (hip-call-model.md
 * section 5) with optional dropped waits.
 */
#ifndef TEST_ENGINE_UTIL_H
#define TEST_ENGINE_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "../audit/launch_rows.h"

#define TB_MAX 512
/* The nth handle (1-based) a fresh bench hands out to creates. */
#define TB_H(n) (0x7f0000001000ull + 0x100ull * (n))
#define TB_MAIN 1000u
#define TB_AUTOGRAD 1001u
#define TB_WATCHDOG 1002u
#define TB_LOADER 1003u
#define TB_PER_THREAD 2ull /* hipStreamPerThread */

struct tb {
	struct nl_engine *e;
	struct nl_batch_audit got[TB_MAX];
	int n;
	bool have_sum;
	struct nl_summary sum;
	struct nl_stream_summary streams[64];
	struct nl_proc_summary procs[8];
	uint32_t pid, tid;
	uint64_t now, next_handle;
	/* one event per edge, re-recorded each time (instead of a fresh one) */
	bool reuse_events;
	int nedge_ev;
	struct {
		uint64_t to, from, ev;
	} edge_ev[16];
	/* launches fed as the probes count them by default (tb_feed) */
	bool counted, has_last;
	struct nl_call last; /* the call fed before */
	struct rp_row rows[8];
	/* recording: calls are kept instead of fed (to interleave processes) */
	bool recording;
	struct nl_call *rec;
	int nrec, rec_cap;
};

static inline void tb_on_batch(void *ctx, const struct nl_batch_audit *a)
{
	struct tb *t = ctx;

	assert_true(t->n < TB_MAX);
	t->got[t->n++] = *a;
}

static inline void tb_on_summary(void *ctx, const struct nl_summary *s)
{
	struct tb *t = ctx;

	t->have_sum = true;
	t->sum = *s;
	t->sum.nstreams = s->nstreams < 64 ? s->nstreams : 64;
	memcpy(t->streams, s->streams, t->sum.nstreams * sizeof(*s->streams));
	t->sum.streams = t->streams;
	t->sum.nprocs = s->nprocs < 8 ? s->nprocs : 8;
	memcpy(t->procs, s->procs, t->sum.nprocs * sizeof(*s->procs));
	t->sum.procs = t->procs;
}

static inline struct tb *tb_new(const struct nl_engine_opts *o)
{
	struct tb *t = calloc(1, sizeof(*t));
	struct nl_sink sink = { .batch = tb_on_batch, .summary = tb_on_summary };

	assert_non_null(t);
	sink.ctx = t;
	t->e = nl_engine_new(o, &sink);
	assert_non_null(t->e);
	t->pid = TB_MAIN;
	t->tid = TB_MAIN;
	t->now = 1000000;
	t->next_handle = 0x7f0000001000ull;
	nl_engine_attach(t->e, t->pid, t->now, false);
	return t;
}

static inline void tb_free(struct tb *t)
{
	nl_engine_free(t->e);
	free(t->rec);
	free(t);
}

/* The audit of batch k of the bench's process (fails the test if absent). */
static inline const struct nl_batch_audit *tb_batch_of(struct tb *t, uint32_t pid, uint64_t k)
{
	for (int i = 0; i < t->n; i++)
		if (t->got[i].pid == pid && t->got[i].batch == k)
			return &t->got[i];
	fail_msg("no audit for pid %u batch %llu", pid, (unsigned long long)k);
	return NULL;
}

static inline const struct nl_batch_audit *tb_batch(struct tb *t, uint64_t k)
{
	return tb_batch_of(t, t->pid, k);
}

static inline struct nl_call tb_call(struct tb *t, int api)
{
	struct nl_call c;

	memset(&c, 0, sizeof(c));
	c.pid = t->pid;
	c.tid = t->tid;
	c.api = (uint16_t)api;
	c.kind = (uint8_t)nl_api_info[api].kind;
	c.ts_ns = (t->now += 1000);
	if (nl_api_info[api].fixed_kind >= 0) {
		c.kindarg = (uint32_t)nl_api_info[api].fixed_kind;
		c.fields |= NL_F_KIND;
	}
	if (nl_api_info[api].flags & NL_AF_RET) {
		c.fields |= NL_F_RC;
		c.ret_ns = c.ts_ns + 400;
	}
	return c;
}

static inline void tb_feed(struct tb *t, const struct nl_call *in)
{
	struct nl_call cc = *in;
	const struct nl_call *c = &cc;

	/* counted: a launch the probes count in the run of the call before
	 * (tests/audit/launch_rows.h) arrives without its kernel address */
	if (rp_launch_counted(t->rows, 8, t->has_last ? &t->last : NULL, &cc) && t->counted)
		cc.fields &= ~NL_F_FN;
	t->last = *in;
	t->has_last = true;
	if (t->recording) {
		if (t->nrec == t->rec_cap) {
			t->rec_cap = t->rec_cap ? 2 * t->rec_cap : 1024;
			t->rec = realloc(t->rec, (size_t)t->rec_cap * sizeof(*t->rec));
			assert_non_null(t->rec);
		}
		t->rec[t->nrec++] = *c;
		return;
	}
	assert_int_equal(nl_engine_feed(t->e, c), 0);
}

static inline void tb_set_stream(struct nl_call *c, uint64_t s)
{
	c->stream = s;
	c->fields |= NL_F_STREAM;
}

static inline uint64_t tb_stream_create(struct tb *t, unsigned flags)
{
	struct nl_call c = tb_call(t, NL_API_STREAM_CREATE_WITH_FLAGS);

	c.flags = flags;
	c.handle = (t->next_handle += 0x100);
	c.fields |= NL_F_FLAGS | NL_F_HANDLE;
	tb_feed(t, &c);
	return c.handle;
}

static inline void tb_event_create_handle(struct tb *t, uint64_t h)
{
	struct nl_call c = tb_call(t, NL_API_EVENT_CREATE_WITH_FLAGS);

	c.flags = 2;
	c.handle = h;
	c.fields |= NL_F_FLAGS | NL_F_HANDLE;
	tb_feed(t, &c);
}

static inline uint64_t tb_event_create(struct tb *t)
{
	uint64_t h = (t->next_handle += 0x100);

	tb_event_create_handle(t, h);
	return h;
}

static inline void tb_event_destroy(struct tb *t, uint64_t ev)
{
	struct nl_call c = tb_call(t, NL_API_EVENT_DESTROY);

	c.event = ev;
	c.fields |= NL_F_EVENT;
	tb_feed(t, &c);
}

/* A call naming a stream and an event: records, waits and their twins. */
static inline void tb_ev_call(struct tb *t, int api, uint64_t s, uint64_t ev)
{
	struct nl_call c = tb_call(t, api);

	tb_set_stream(&c, s);
	c.event = ev;
	c.fields |= NL_F_EVENT;
	tb_feed(t, &c);
}

static inline void tb_record(struct tb *t, uint64_t ev, uint64_t s)
{
	tb_ev_call(t, NL_API_EVENT_RECORD, s, ev);
}

static inline void tb_wait(struct tb *t, uint64_t s, uint64_t ev)
{
	tb_ev_call(t, NL_API_STREAM_WAIT_EVENT, s, ev);
}

/* The bench's event for the edge from -> to, created at its first use. */
static inline uint64_t tb_edge_event(struct tb *t, uint64_t to, uint64_t from)
{
	for (int i = 0; i < t->nedge_ev; i++)
		if (t->edge_ev[i].to == to && t->edge_ev[i].from == from)
			return t->edge_ev[i].ev;
	assert_true(t->nedge_ev < 16);
	t->edge_ev[t->nedge_ev].to = to;
	t->edge_ev[t->nedge_ev].from = from;
	t->edge_ev[t->nedge_ev].ev = tb_event_create(t);
	return t->edge_ev[t->nedge_ev++].ev;
}

/* to.wait_stream(from): PyTorch's fresh event each time, destroyed after, or
 * with reuse_events one event per edge re-recorded each time. Without
 * `wait` the edge is dropped: a fresh event's record goes with it (nothing
 * is called), a reused one is still recorded. */
static inline void tb_wait_stream_or_drop(struct tb *t, uint64_t to, uint64_t from, bool wait)
{
	uint64_t ev;

	if (t->reuse_events) {
		ev = tb_edge_event(t, to, from);
		tb_record(t, ev, from);
		if (wait)
			tb_wait(t, to, ev);
		return;
	}
	if (!wait)
		return;
	ev = tb_event_create(t);
	tb_record(t, ev, from);
	tb_wait(t, to, ev);
	tb_event_destroy(t, ev);
}

static inline void tb_wait_stream(struct tb *t, uint64_t to, uint64_t from)
{
	tb_wait_stream_or_drop(t, to, from, true);
}

static inline void tb_copy(struct tb *t, uint64_t s, unsigned kind, uint64_t bytes)
{
	struct nl_call c = tb_call(t, NL_API_MEMCPY_ASYNC);

	tb_set_stream(&c, s);
	c.kindarg = kind;
	c.bytes = bytes;
	c.fields |= NL_F_KIND | NL_F_BYTES;
	tb_feed(t, &c);
}

/* n host-to-device copies on s made by the loader thread, then back to the
 * main thread */
static inline void tb_loader_copies(struct tb *t, uint64_t s, int n)
{
	t->tid = TB_LOADER;
	for (int k = 0; k < n; k++)
		tb_copy(t, s, 1, 4096);
	t->tid = TB_MAIN;
}

/* hipLaunchKernel of kernel fn on s; its entry time. */
static inline uint64_t tb_kernel(struct tb *t, uint64_t s, uint64_t fn)
{
	struct nl_call c = tb_call(t, NL_API_LAUNCH_KERNEL);

	tb_set_stream(&c, s);
	c.fn = fn;
	c.fields |= NL_F_FN;
	tb_feed(t, &c);
	return c.ts_ns;
}

static inline uint64_t tb_launch(struct tb *t, uint64_t s)
{
	return tb_kernel(t, s, 0x5000);
}

/* The workload's kernels, one function each as in the real job. */
enum { K_INPUT_DIST = 0x1001, K_DIST_INIT, K_LOOKUP = 0x2001, K_GEMM, K_TRITON,
       K_BWD_EMB = 0x3001, K_BWD_GEMM, K_BWD_ELEM, K_OPTIMIZER, K_A2A = 0x4001 };

/* Any launch API (the _spt twins too). */
static inline void tb_launch_api(struct tb *t, int api, uint64_t s)
{
	struct nl_call c = tb_call(t, api);

	tb_set_stream(&c, s);
	tb_feed(t, &c);
}

static inline void tb_capture(struct tb *t, uint64_t s, bool begin)
{
	struct nl_call c = tb_call(t, begin ? NL_API_STREAM_BEGIN_CAPTURE : NL_API_STREAM_END_CAPTURE);

	tb_set_stream(&c, s);
	tb_feed(t, &c);
}

static inline void tb_memcpy_sync(struct tb *t, uint64_t s, unsigned kind)
{
	struct nl_call c = tb_call(t, NL_API_MEMCPY_WITH_STREAM);

	tb_set_stream(&c, s);
	c.kindarg = kind;
	c.bytes = 64;
	c.fields |= NL_F_KIND | NL_F_BYTES;
	tb_feed(t, &c);
}

static inline void tb_stream_sync(struct tb *t, uint64_t s)
{
	struct nl_call c = tb_call(t, NL_API_STREAM_SYNCHRONIZE);

	tb_set_stream(&c, s);
	tb_feed(t, &c);
}

static inline void tb_device_sync(struct tb *t)
{
	struct nl_call c = tb_call(t, NL_API_DEVICE_SYNCHRONIZE);

	tb_feed(t, &c);
}

static inline void tb_query(struct tb *t, uint64_t ev, int rc)
{
	struct nl_call c = tb_call(t, NL_API_EVENT_QUERY);

	c.event = ev;
	c.rc = rc;
	c.fields |= NL_F_EVENT;
	tb_feed(t, &c);
}

static inline void tb_elapsed(struct tb *t, uint64_t a, uint64_t b, double ms)
{
	struct nl_call c = tb_call(t, NL_API_EVENT_ELAPSED_TIME);

	c.event = a;
	c.event2 = b;
	c.ms = ms;
	c.fields |= NL_F_EVENT | NL_F_EVENT2 | NL_F_MS;
	tb_feed(t, &c);
}

/* ncclAllToAll on s as the probes deliver it: RCCL's inner
 * hipExtLaunchKernel (coll_depth 1, stop event = the communicator's done
 * event) first, then the outer call's record at its return, with the
 * earlier entry time. */
static inline void tb_alltoall(struct tb *t, uint64_t s, uint64_t done_ev)
{
	uint64_t t0 = (t->now += 1000);
	struct nl_call in = tb_call(t, NL_API_EXT_LAUNCH_KERNEL);
	struct nl_call out;

	tb_set_stream(&in, s);
	in.coll_depth = 1;
	in.fn = K_A2A; /* RCCL's kernel, named as every hipExtLaunchKernel */
	in.event2 = done_ev;
	in.fields |= NL_F_FN | NL_F_EVENT | NL_F_EVENT2;
	tb_feed(t, &in);
	out = tb_call(t, NL_API_NCCL_ALLTOALL);
	out.ts_ns = t0;
	out.ret_ns = t->now;
	tb_set_stream(&out, s);
	out.count = 256;
	out.fields |= NL_F_COUNT;
	tb_feed(t, &out);
}

/* ---- TorchRec TrainPipelineSparseDist and the simple prefetching loop ------ */

struct tr_opts {
	bool simple;
	bool fwd_first;   /* depth 1, forward(i) enqueued before copy(i+1) and sparse(i+1) */
	bool reuse_events; /* one event per edge, re-recorded every iteration */
	bool loader;      /* copies issued by a loader thread */
	bool bwd_spt;     /* backward on the autograd thread's hipStreamPerThread */
	bool counted;     /* launches fed as the probes count them by default */
	int depth;        /* 1 or 2 (torchrec) */
	int batches;
	int drop_a, drop_b, drop_d, drop_simple; /* batch whose wait is dropped, -1 none */
	/* ...inside the sparse stage: N's wait on D before batch k's data
	 * all-to-alls (drop_n), D's wait on batch k's splits all-to-all at
	 * step e (drop_e) */
	int drop_n, drop_e;
	int exit_at;      /* stop in the middle of forward k (no final sync), -1 none */
	bool no_teardown; /* leave the process running (no device sync, no exit) */
	bool bwd_a2a;     /* backward all-to-all through N (C -> N -> C) */
	int stop_after;   /* leave the loop after this iteration (prefetched batches unused), -1 */
	void (*at_iter)(struct tb *t, int i); /* called at the top of iteration i */
};

static inline struct tr_opts tr_defaults(int batches)
{
	return (struct tr_opts){ .depth = 2, .batches = batches, .drop_a = -1, .drop_b = -1,
				 .drop_d = -1, .drop_simple = -1, .drop_n = -1, .drop_e = -1,
				 .exit_at = -1, .stop_after = -1 };
}

struct tr_work {
	uint64_t start, end;
};

/* Per-batch state is kept for the last TR_KEEP batches (a batch's work
 * spans at most three iterations), indexed by batch % TR_KEEP. */
#define TR_KEEP 64

struct tr_run {
	struct tb *t;
	const struct tr_opts *o;
	uint64_t M, D, N, C, done;
	struct tr_work splits[TR_KEEP], data[TR_KEEP];
	uint64_t input_dist_ts[TR_KEEP], dist_init_ts[TR_KEEP];
};

static inline struct tr_work tr_alltoall_or_drop(struct tr_run *r, uint64_t from, bool timed,
						 int nops, bool wait)
{
	struct tb *t = r->t;
	struct tr_work w = { 0, 0 };

	/* ProcessGroupNCCL: N waits on the caller */
	tb_wait_stream_or_drop(t, r->N, from, wait);
	if (timed) {
		w.start = tb_event_create(t);
		tb_record(t, w.start, r->N);
	}
	for (int i = 0; i < nops; i++)
		tb_alltoall(t, r->N, r->done);
	w.end = tb_event_create(t);
	tb_record(t, w.end, r->N);
	return w;
}

static inline struct tr_work tr_alltoall(struct tr_run *r, uint64_t from, bool timed, int nops)
{
	return tr_alltoall_or_drop(r, from, timed, nops, true);
}

/* Work.wait() on `to`, then the watchdog sees it done. */
static inline void tr_work_wait(struct tr_run *r, struct tr_work *w, uint64_t to)
{
	struct tb *t = r->t;

	tb_wait(t, to, w->end);
	t->tid = TB_WATCHDOG;
	tb_query(t, w->end, 0);
	if (w->start)
		tb_elapsed(t, w->start, w->end, 0.25);
	t->tid = TB_MAIN;
}

static inline void tr_copy_batch(struct tr_run *r)
{
	if (r->o->loader)
		r->t->tid = TB_LOADER;
	for (int i = 0; i < 3; i++)
		tb_copy(r->t, r->M, 1, 4096);
	r->t->tid = TB_MAIN;
}

static inline void tr_free_staging(struct tr_run *r)
{
	uint64_t ev = tb_event_create(r->t);

	tb_record(r->t, ev, r->M); /* pinned allocator: event on M, only queried */
}

static inline void tr_start_sparse(struct tr_run *r, int k)
{
	tb_wait_stream_or_drop(r->t, r->D, r->M, r->o->drop_b != k);
	r->input_dist_ts[k % TR_KEEP] = tb_kernel(r->t, r->D, K_INPUT_DIST);
	r->splits[k % TR_KEEP] = tr_alltoall(r, r->D, true, 1);
	tb_memcpy_sync(r->t, r->D, 1); /* split sizes, blocking H2D */
}

static inline void tr_wait_sparse(struct tr_run *r, int k)
{
	if (r->o->drop_e == k) { /* only the watchdog sees it done */
		r->t->tid = TB_WATCHDOG;
		tb_query(r->t, r->splits[k % TR_KEEP].end, 0);
		r->t->tid = TB_MAIN;
	} else {
		tr_work_wait(r, &r->splits[k % TR_KEEP], r->D);
	}
	tb_copy(r->t, r->D, 2, 32); /* .tolist() */
	tb_stream_sync(r->t, r->D);
	r->data[k % TR_KEEP] = tr_alltoall_or_drop(r, r->D, false, 3, r->o->drop_n != k);
}

/* false: the process "exited" in the middle */
static inline bool tr_forward(struct tr_run *r, int i)
{
	struct tb *t = r->t;
	struct tr_work w;

	tr_work_wait(r, &r->data[i % TR_KEEP], r->D);
	r->dist_init_ts[i % TR_KEEP] = tb_kernel(t, r->D, K_DIST_INIT);
	tb_wait_stream_or_drop(t, r->C, r->D, r->o->drop_d != i);
	tb_kernel(t, r->C, K_LOOKUP);
	if (r->o->exit_at == i)
		return false;
	w = tr_alltoall(r, r->C, false, 1); /* output all-to-all */
	tr_work_wait(r, &w, r->C);
	tb_kernel(t, r->C, K_GEMM);
	tb_kernel(t, r->C, K_TRITON);
	return true;
}

static inline void tr_backward(struct tr_run *r)
{
	struct tb *t = r->t;

	t->tid = TB_AUTOGRAD;
	if (r->o->bwd_spt) {
		/* autograd's own stream: it waits on the forward's, and the
		 * optimizer's stream waits on it */
		tb_wait_stream(t, TB_PER_THREAD, r->C);
		for (int i = 0; i < 3; i++)
			tb_kernel(t, TB_PER_THREAD, K_BWD_EMB + (uint64_t)i);
		t->tid = TB_MAIN;
		/* hipStreamPerThread names the calling thread's stream: the
		 * record is made on the autograd thread */
		{
			uint64_t ev = tb_event_create(t);

			t->tid = TB_AUTOGRAD;
			tb_record(t, ev, TB_PER_THREAD);
			t->tid = TB_MAIN;
			tb_wait(t, r->C, ev);
			tb_event_destroy(t, ev);
		}
		tb_kernel(t, r->C, K_OPTIMIZER);
		return;
	}
	for (int i = 0; i < 3; i++)
		tb_kernel(t, r->C, K_BWD_EMB + (uint64_t)i);
	if (r->o->bwd_a2a) {
		struct tr_work w = tr_alltoall(r, r->C, false, 1);

		tr_work_wait(r, &w, r->C);
	}
	t->tid = TB_MAIN;
	tb_kernel(t, r->C, K_OPTIMIZER);
}

static inline void tr_setup(struct tr_run *r, struct tb *t, const struct tr_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->t = t;
	r->o = o;
	r->C = 0;
	r->M = tb_stream_create(t, 1);
	if (!o->simple) {
		r->D = tb_stream_create(t, 1);
		r->N = tb_stream_create(t, 1);
		r->done = tb_event_create(t); /* the communicator's done event */
	}
}

/* Runs the workload; returns false when it stopped at exit_at. */
static inline bool tr_run_torchrec(struct tr_run *r)
{
	const struct tr_opts *o = r->o;
	const int B = o->batches, ahead = o->depth;

	tr_copy_batch(r);
	tr_start_sparse(r, 0);
	tr_wait_sparse(r, 0);
	if (ahead == 2 && B > 1)
		tr_copy_batch(r);
	tr_free_staging(r);
	if (ahead == 2 && B > 1)
		tr_free_staging(r);
	for (int i = 0; i < B; i++) {
		if (o->at_iter)
			o->at_iter(r->t, i);
		tb_wait_stream_or_drop(r->t, r->C, r->D, o->drop_a != i);
		if (ahead == 1 && i + 1 < B)
			tr_copy_batch(r);
		if (i + 1 < B)
			tr_start_sparse(r, i + 1);
		if (ahead == 2 && i + 2 < B)
			tr_copy_batch(r);
		if (!tr_forward(r, i))
			return false;
		if (i + 1 < B)
			tr_wait_sparse(r, i + 1);
		tr_backward(r);
		if (i + ahead < B)
			tr_free_staging(r);
		if (i == o->stop_after)
			break;
	}
	return true;
}

/* A depth-1 loop that enqueues forward(i) before copy(i+1) and sparse(i+1),
 * and backward(i) after them from the autograd thread. */
static inline bool tr_run_fwd_first(struct tr_run *r)
{
	const struct tr_opts *o = r->o;
	const int B = o->batches;

	tr_copy_batch(r);
	tr_start_sparse(r, 0);
	tr_wait_sparse(r, 0);
	tr_free_staging(r);
	for (int i = 0; i < B; i++) {
		if (o->at_iter)
			o->at_iter(r->t, i);
		tb_wait_stream_or_drop(r->t, r->C, r->D, o->drop_a != i);
		if (!tr_forward(r, i))
			return false;
		if (i + 1 < B) {
			tr_copy_batch(r);
			tr_start_sparse(r, i + 1);
			tr_wait_sparse(r, i + 1);
		}
		tr_backward(r);
		if (i + 1 < B)
			tr_free_staging(r);
		if (i == o->stop_after)
			break;
	}
	return true;
}

static inline bool tr_run_simple(struct tr_run *r)
{
	const struct tr_opts *o = r->o;
	struct tb *t = r->t;

	tr_copy_batch(r);
	tr_free_staging(r);
	for (int i = 0; i < o->batches; i++) {
		if (o->at_iter)
			o->at_iter(t, i);
		tb_wait_stream_or_drop(t, r->C, r->M, o->drop_simple != i);
		tb_kernel(t, r->C, K_LOOKUP);
		if (o->exit_at == i)
			return false;
		tb_kernel(t, r->C, K_GEMM);
		if (i + 1 < o->batches)
			tr_copy_batch(r);
		tr_backward(r);
		tb_copy(t, r->C, 2, 4); /* loss.item() */
		tb_stream_sync(t, r->C);
		if (i + 1 < o->batches)
			tr_free_staging(r);
		if (i == o->stop_after)
			break;
	}
	return true;
}

/* The whole job: run, then torch.cuda.synchronize() and exit (or exit in
 * the middle), then the tool stops. */
static inline void tr_job(struct tb *t, const struct tr_opts *o, struct tr_run *r)
{
	bool whole;

	t->reuse_events = o->reuse_events;
	tr_setup(r, t, o);
	whole = o->simple ? tr_run_simple(r) : o->fwd_first ? tr_run_fwd_first(r) : tr_run_torchrec(r);
	if (o->no_teardown)
		return;
	if (whole)
		tb_device_sync(t);
	nl_engine_exit(t->e, t->pid, t->now += 1000);
}

static inline void tb_finish(struct tb *t)
{
	nl_engine_finish(t->e, t->now += 1000);
	assert_true(t->have_sum);
}

/* A bench that ran the job to its end and stopped the tool. */
static inline struct tb *tr_bench(const struct nl_engine_opts *eo, const struct tr_opts *o,
				  struct tr_run *r)
{
	struct tb *t = tb_new(eo);

	t->counted = o->counted;
	tr_job(t, o, r);
	tb_finish(t);
	return t;
}

static inline void assert_verdict(struct tb *t, uint64_t k, int verdict, uint32_t missing,
				  uint32_t skip)
{
	const struct nl_batch_audit *a = tb_batch(t, k);

	if (a->verdict != verdict || a->missing_mask != missing || a->skip_mask != skip)
		fail_msg("batch %llu: verdict %s missing 0x%x skip 0x%x, expected %s 0x%x 0x%x",
			 (unsigned long long)k, nl_verdict_name(a->verdict), a->missing_mask,
			 a->skip_mask, nl_verdict_name(verdict), missing, skip);
}

/* n batches, every one trusted but batch k (-1: none), untrusted with
 * exactly `missing`; `what` names the run in a failure. */
static inline void assert_one_fault(struct tb *t, int n, int k, uint32_t missing, const char *what)
{
	if (t->n != n)
		fail_msg("%s: %d batches, expected %d", what, t->n, n);
	for (int i = 0; i < n; i++) {
		const struct nl_batch_audit *a = tb_batch(t, (uint64_t)i);
		uint32_t m = i == k ? missing : 0;
		int v = m ? NL_VERDICT_UNTRUSTED : NL_VERDICT_TRUSTED;

		if (a->verdict != v || a->missing_mask != m || a->skip_mask)
			fail_msg("%s: batch %d %s 0x%x skip 0x%x", what, i, nl_verdict_name(a->verdict),
				 a->missing_mask, a->skip_mask);
	}
}

/* The job's end as the tests make it: a device sync, the exit, the tool stopped. */
static inline void tb_end(struct tb *t)
{
	tb_device_sync(t);
	nl_engine_exit(t->e, t->pid, t->now += 1000);
	tb_finish(t);
}

#define EDGE(e) (1u << NL_EDGE_##e)
#define SKIPR(r) (1u << NL_SKIP_##r)

#endif /* TEST_ENGINE_UTIL_H */
