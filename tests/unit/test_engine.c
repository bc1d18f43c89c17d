// SPDX-License-Identifier: MIT
/*
 * Pairing engine semantics on small synthetic call sequences: events and
 * their generations, per-thread and null-stream semantics, the collective
 * that arrives after its inner launch, completion evidence, every skip
 * reason, caps, and several processes at once.
 */
#include <errno.h>

#include "test_engine_util.h"

/* One batch of a plain loop: copies on m, compute waits for them, kernels. */
static void simple_batch(struct tb *t, uint64_t m, uint64_t c, int kernels)
{
	tb_copy(t, m, 1, 1024);
	tb_copy(t, m, 1, 1024);
	tb_wait_stream(t, c, m);
	for (int i = 0; i < kernels; i++)
		tb_launch(t, c);
}

static void end_job(struct tb *t)
{
	tb_device_sync(t);
	nl_engine_exit(t->e, t->pid, t->now += 1000);
	tb_finish(t);
}

static const struct nl_stream_summary *find_stream(const struct tb *t, uint64_t h, uint32_t tid)
{
	for (uint32_t i = 0; i < t->sum.nstreams; i++)
		if (t->sum.streams[i].handle == h && t->sum.streams[i].tid == tid)
			return &t->sum.streams[i];
	return NULL;
}

/* ---- events ------------------------------------------------------------------ */

static void run_reuse(struct tb *t, bool recreate)
{
	uint64_t m = tb_stream_create(t, 1), ev = tb_event_create(t);

	tb_copy(t, m, 1, 64);
	tb_record(t, ev, m);
	tb_wait(t, 0, ev);
	tb_launch(t, 0);
	/* batch 1: the record happens, then the handle is destroyed and a new
	 * event gets the same address before the wait */
	tb_copy(t, m, 1, 64);
	tb_record(t, ev, m);
	if (recreate) {
		tb_event_destroy(t, ev);
		tb_event_create_handle(t, ev);
	}
	tb_wait(t, 0, ev);
	tb_launch(t, 0);
	/* batch 2 */
	tb_copy(t, m, 1, 64);
	tb_record(t, ev, m);
	tb_wait(t, 0, ev);
	tb_launch(t, 0);
	end_job(t);
}

static void event_handle_reuse(void **state)
{
	struct tb *t = tb_new(NULL);

	(void)state;
	run_reuse(t, true);
	assert_int_equal(t->n, 3);
	assert_verdict(t, 0, NL_VERDICT_TRUSTED, 0, 0);
	/* the old record must not satisfy the new generation's wait */
	assert_verdict(t, 1, NL_VERDICT_UNTRUSTED, EDGE(COPY_FORWARD), 0);
	assert_verdict(t, 2, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);

	t = tb_new(NULL);
	run_reuse(t, false);
	assert_verdict(t, 1, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);
}

/* ---- stream semantics ----------------------------------------------------------- */

/* hipStreamPerThread (0x2) and 0 in an _spt twin are the calling thread's
 * stream; another thread's 0x2 is another stream. */
static void per_thread_streams(void **state)
{
	struct tb *t = tb_new(NULL);
	uint64_t m = tb_stream_create(t, 1);
	const struct nl_stream_summary *mine, *other;

	(void)state;
	for (int k = 0; k < 4; k++) {
		uint64_t ev = tb_event_create(t);

		tb_copy(t, m, 1, 256);
		tb_record(t, ev, m);
		tb_ev_call(t, NL_API_STREAM_WAIT_EVENT_SPT, 0, ev);
		tb_launch_api(t, NL_API_LAUNCH_KERNEL_SPT, 0);
		tb_launch_api(t, NL_API_LAUNCH_KERNEL_SPT, 0);
		tb_launch_api(t, NL_API_LAUNCH_KERNEL, 2);
		t->tid = 1005;
		tb_launch_api(t, NL_API_LAUNCH_KERNEL, 2);
		t->tid = TB_MAIN;
	}
	end_job(t);
	assert_int_equal(t->n, 4);
	for (int k = 0; k < 4; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	mine = find_stream(t, 2, TB_MAIN);
	other = find_stream(t, 2, 1005);
	assert_non_null(mine);
	assert_non_null(other);
	assert_int_equal(mine->role, NL_ROLE_COMPUTE);
	assert_int_equal(mine->ops, 4 * 4);
	assert_true(mine->blocking);
	assert_int_equal(other->role, NL_ROLE_OTHER);
	assert_int_equal(other->ops, 4);
	assert_int_equal(tb_batch(t, 1)->stage[NL_STAGE_FORWARD].streams[0].tid, TB_MAIN);
	tb_free(t);
}

/* from.wait on to's work so far, with a fresh event recorded by thread
 * `rt` and waited on by thread `wt` (per-thread streams are the caller's). */
static void wait_across(struct tb *t, uint64_t to, uint32_t wt, uint64_t from, uint32_t rt)
{
	uint64_t ev = tb_event_create(t);

	t->tid = rt;
	tb_record(t, ev, from);
	t->tid = wt;
	tb_wait(t, to, ev);
	tb_event_destroy(t, ev);
	t->tid = TB_MAIN;
}

/* n steps at depth 1 on copy stream m: compute (the main thread's
 * per-thread stream) takes batch i, forward, copy i + 1, backward on the
 * autograd thread's per-thread stream forked from compute and joined back;
 * the take of batch `drop` dropped, and backward's wait on compute at step
 * `bwd_drop` (-1: none). */
static void backward_loop(struct tb *t, uint64_t m, int n, int drop, int bwd_drop)
{
	tb_copy(t, m, 1, 4096);
	for (int i = 0; i < n; i++) {
		tb_wait_stream_or_drop(t, TB_PER_THREAD, m, i != drop);
		tb_kernel(t, TB_PER_THREAD, K_LOOKUP);
		tb_kernel(t, TB_PER_THREAD, K_GEMM);
		if (i + 1 < n)
			tb_copy(t, m, 1, 4096);
		if (i != bwd_drop)
			wait_across(t, TB_PER_THREAD, TB_AUTOGRAD, TB_PER_THREAD, TB_MAIN);
		t->tid = TB_AUTOGRAD;
		for (int k = 0; k < 3; k++)
			tb_kernel(t, TB_PER_THREAD, K_BWD_GEMM);
		wait_across(t, TB_PER_THREAD, TB_MAIN, TB_PER_THREAD, TB_AUTOGRAD);
	}
	end_job(t);
}

/* A sparse stage at depth 1: each step copies batch i, the data-dist
 * stream waits on the copy and runs input_dist, compute takes batch i from
 * it and runs forward, backward runs on the autograd thread's per-thread
 * stream (forked from compute, joined back), and compute waits on the
 * data-dist stream once more. With the take of batch `drop` dropped, its
 * forward begins again in the window before, after backward's work there:
 * the backward stream (no role, no copy, fed by compute alone) is no
 * producer of another batch the restart could be for, and the restart is
 * batch drop's forward, sparse->forward (from batch 2: two tight takes
 * before it, NL_STEP_SURE). Before, any other stream's work
 * in the window kept the restart from being taken: the extra wait took the
 * batch after its forward, the next batch's forward was charged to it, the
 * fault was missed and the last batch skipped (random program 49093). */
static void backward_work_not_a_producer(void **state)
{
	enum { N = 8 };

	(void)state;
	for (int counted = 0; counted < 2; counted++)
		for (int drop = -1; drop < N; drop = drop < 0 ? 2 : drop + 1) {
			struct tb *t = tb_new(NULL);
			uint64_t m = tb_stream_create(t, 1), d = tb_stream_create(t, 1);
			char what[48];

			t->counted = counted;
			for (int i = 0; i < N; i++) {
				tb_copy(t, m, 1, 4096);
				tb_wait_stream(t, d, m);
				tb_kernel(t, d, K_INPUT_DIST);
				tb_wait_stream_or_drop(t, TB_PER_THREAD, d, i != drop);
				tb_kernel(t, TB_PER_THREAD, K_LOOKUP);
				tb_kernel(t, TB_PER_THREAD, K_GEMM);
				wait_across(t, TB_PER_THREAD, TB_AUTOGRAD, TB_PER_THREAD, TB_MAIN);
				t->tid = TB_AUTOGRAD;
				for (int k = 0; k < 3; k++)
					tb_kernel(t, TB_PER_THREAD, K_BWD_GEMM);
				wait_across(t, TB_PER_THREAD, TB_MAIN, TB_PER_THREAD, TB_AUTOGRAD);
				tb_wait_stream(t, TB_PER_THREAD, d);
			}
			end_job(t);
			snprintf(what, sizeof(what), "counted %d drop %d", counted, drop);
			assert_one_fault(t, N, drop, drop < 0 ? 0 : EDGE(SPARSE_FORWARD), what);
			tb_free(t);
		}
}

/* Forward on the main thread's per-thread stream, which waits on the copy
 * stream itself; backward, three kernels to forward's two, on the autograd
 * thread's per-thread stream, forked from compute and joined back to it.
 * Backward lies two wait edges from the copy stream too and launches
 * more, but it is compute's side stream: compute stays the main thread's
 * stream, and a dropped take is named on its batch. Before, backward's
 * stream was taken for compute and compute for a data-dist stream. */
static void backward_side_stream_not_compute(void **state)
{
	enum { N = 8 };

	(void)state;
	for (int counted = 0; counted < 2; counted++)
		for (int drop = -1; drop < N; drop++) {
			struct tb *t = tb_new(NULL);
			uint64_t m = tb_stream_create(t, 1);
			char what[48];

			t->counted = counted;
			backward_loop(t, m, N, drop, -1);
			snprintf(what, sizeof(what), "%s, take %d dropped",
				 counted ? "counted" : "named", drop);
			assert_int_equal(find_stream(t, 2, TB_MAIN)->role, NL_ROLE_COMPUTE);
			assert_int_equal(find_stream(t, 2, TB_AUTOGRAD)->role, NL_ROLE_OTHER);
			assert_one_fault(t, N, drop, drop < 0 ? 0 : EDGE(COPY_FORWARD), what);
			tb_free(t);
		}
}

/* The same loop, backward's wait on compute dropped for batch 1: its
 * stream still carries batch 0, and compute's wait on it at the end of
 * step 1 brings an older batch than compute holds. Compute stays on batch
 * 1: a record of the backward stream brings nothing new. With batch 2's
 * take dropped too, its forward begins again in batch 1's window and is
 * named copy->forward. Before, that wait moved compute back to batch 0,
 * whose window had closed; batch 2's forward went unseen, the fault was
 * missed and the last batch skipped (random program 146965). */
static void backward_wait_dropped_keeps_compute(void **state)
{
	enum { N = 6 };

	(void)state;
	for (int counted = 0; counted < 2; counted++)
		for (int drop = -1; drop < N; drop += 3) {
			struct tb *t = tb_new(NULL);
			uint64_t m = tb_stream_create(t, 1);
			char what[48];

			t->counted = counted;
			backward_loop(t, m, N, drop, 1);
			snprintf(what, sizeof(what), "%s, take %d dropped",
				 counted ? "counted" : "named", drop);
			assert_one_fault(t, N, drop, drop < 0 ? 0 : EDGE(COPY_FORWARD), what);
			tb_free(t);
		}
}

/* Batch 2's only path from the data-dist stream D to compute (the null
 * stream) is the legacy stream's implicit synchronization: an edge when D
 * is blocking, nothing when it is NonBlocking. */
static void run_null_stream(struct tb *t, unsigned dflags)
{
	uint64_t m = tb_stream_create(t, 1), d = tb_stream_create(t, dflags);

	for (int k = 0; k < 6; k++) {
		tb_copy(t, m, 1, 128);
		tb_copy(t, m, 1, 128);
		tb_wait_stream(t, d, m);
		tb_launch(t, d);
		if (k != 2)
			tb_wait_stream(t, 0, d);
		tb_launch(t, 0);
		tb_launch(t, 0);
	}
	end_job(t);
}

static void null_stream_blocking(void **state)
{
	struct tb *t = tb_new(NULL);

	(void)state;
	run_null_stream(t, 0);
	assert_int_equal(t->n, 6);
	for (int k = 0; k < 6; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	assert_true(t->sum.implicit_edges > 0);
	tb_free(t);
}

static void null_stream_nonblocking(void **state)
{
	struct tb *t = tb_new(NULL);

	(void)state;
	run_null_stream(t, 1);
	assert_int_equal(t->n, 6);
	for (int k = 0; k < 6; k++)
		if (k == 2)
			assert_verdict(t, 2, NL_VERDICT_UNTRUSTED, EDGE(SPARSE_FORWARD), 0);
		else
			assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	assert_int_equal(t->sum.implicit_edges, 0);
	tb_free(t);
}

/* Blocking copy and data-dist streams, compute on the null stream, depth
 * 2: D's wait for batch i+1 comes after copy(i+2) (it covers that copy
 * too), and compute's backward on the null stream, between D's sparse
 * work of i+1 and D's record, joins the copy stream: the null stream
 * carries batch i+2. D's record then joins the null stream. The record
 * ends batch i+1's sparse stage, and its event carries i+1; the newer
 * batch is D's at its next work op. Before, the record took i+2, compute's
 * wait on it took a batch a step early, forward(i+1) ran in i+2's window
 * ahead of sparse(i+2): clean batches accused sparse->forward. */
static void null_stream_record_keeps_batch(void **state)
{
	enum { N = 8 };

	(void)state;
	for (int n = 0; n < 4; n++) {
		struct tb *t = tb_new(NULL);
		uint64_t m, d;

		t->reuse_events = n % 2;
		t->counted = n >= 2;
		m = tb_stream_create(t, 0);
		d = tb_stream_create(t, 0);
		tb_copy(t, m, 1, 1024);
		tb_copy(t, m, 1, 1024);
		tb_wait_stream(t, d, m);
		tb_kernel(t, d, K_INPUT_DIST);
		tb_kernel(t, d, K_DIST_INIT);
		tb_wait_stream(t, 0, d);
		for (int i = 0; i < N; i++) {
			tb_kernel(t, 0, K_LOOKUP);
			tb_kernel(t, 0, K_GEMM);
			tb_kernel(t, 0, K_TRITON);
			if (i + 2 < N)
				tb_copy(t, m, 1, 1024);
			if (i + 1 < N) {
				tb_wait_stream(t, d, m);
				tb_kernel(t, d, K_INPUT_DIST);
				tb_kernel(t, d, K_DIST_INIT);
			}
			tb_kernel(t, 0, K_BWD_EMB);
			tb_kernel(t, 0, K_BWD_GEMM);
			if (i + 1 < N)
				tb_wait_stream(t, 0, d);
		}
		end_job(t);
		assert_one_fault(t, N, -1, 0, n % 2 ? "reused events" : "fresh events");
		assert_true(t->sum.implicit_edges > 0);
		tb_free(t);
	}
}

/* Blocking copy and data-dist streams, compute on the null stream, the
 * loader `depth` batches ahead: compute's backward on the null stream
 * comes after the copy of a batch the data-dist stream has not reached,
 * and joins the copy stream. Compute takes a batch of a pipeline with a
 * sparse stage from its sparse streams, so that join orders but brings no
 * batch (as a wait on the copy stream). Before, compute took the copy
 * stream's batch there, closing the batches before it; the data-dist
 * stream's next wait then skipped a batch, accused copy->sparse (never
 * reached). */
static void null_stream_copy_join(void **state)
{
	enum { N = 8 };

	(void)state;
	for (int n = 0; n < 8; n++) {
		struct tb *t = tb_new(NULL);
		int depth = 1 + n % 2;
		uint64_t m, d;

		t->reuse_events = n / 2 % 2;
		t->counted = n >= 4;
		m = tb_stream_create(t, 0);
		d = tb_stream_create(t, 0);
		for (int k = 0; k < depth; k++)
			tb_copy(t, m, 1, 1024);
		tb_wait_stream(t, d, m);
		tb_kernel(t, d, K_INPUT_DIST);
		tb_kernel(t, d, K_DIST_INIT);
		for (int i = 0; i < N; i++) {
			tb_wait_stream(t, 0, d);
			tb_kernel(t, 0, K_LOOKUP);
			tb_kernel(t, 0, K_GEMM);
			if (i + depth < N)
				tb_copy(t, m, 1, 1024);
			tb_kernel(t, 0, K_BWD_EMB);
			tb_kernel(t, 0, K_BWD_GEMM);
			if (i + 1 < N) {
				tb_wait_stream(t, d, m);
				tb_kernel(t, d, K_INPUT_DIST);
				tb_kernel(t, d, K_DIST_INIT);
			}
		}
		end_job(t);
		assert_one_fault(t, N, -1, 0, n % 2 ? "depth 2" : "depth 1");
		assert_true(t->sum.implicit_edges > 0);
		tb_free(t);
	}
}

/* One event per edge re-recorded: a batch's copy, recorded on em. */
static void ev_copy(struct tb *t, uint64_t m, uint64_t em)
{
	tb_copy(t, m, 1, 1024);
	tb_record(t, em, m);
}

/* A batch's sparse stage after a wait on em, recorded on ed. */
static void ev_sparse(struct tb *t, uint64_t d, uint64_t em, uint64_t ed)
{
	tb_wait(t, d, em);
	tb_kernel(t, d, K_INPUT_DIST);
	tb_kernel(t, d, K_DIST_INIT);
	tb_record(t, ed, d);
}

/* Blocking copy and data-dist streams (compute on the null stream), one
 * event per edge re-recorded: the loader's fill of `depth` batches, each
 * copy recorded, and the data-dist stream's first batch after one wait. */
static void null_fill(struct tb *t, int depth, uint64_t *m, uint64_t *d, uint64_t *em,
		      uint64_t *ed)
{
	*m = tb_stream_create(t, 0);
	*d = tb_stream_create(t, 0);
	*em = tb_event_create(t);
	*ed = tb_event_create(t);
	for (int k = 0; k < depth; k++)
		ev_copy(t, *m, *em);
	ev_sparse(t, *d, *em, *ed);
}

/* The job ended, every one of its n batches trusted, implicit edges seen. */
static void null_all_trusted(struct tb *t, int n)
{
	end_job(t);
	assert_int_equal(t->n, n);
	for (int k = 0; k < n; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	assert_true(t->sum.implicit_edges > 0);
}

/* Blocking copy and data-dist streams, compute on the null stream, one
 * event per edge re-recorded, the loader a batch ahead: D's wait on the
 * copy stream covers the next batch's copy too, and every op of the null
 * stream joins D. A join brings D's newer batch: the data-dist stream
 * takes the batch due (as by a wait on the copy stream), and compute, which
 * took its batch by a wait and did no work on it yet, keeps it. Before,
 * the first null-stream kernel after each take moved compute on, and D
 * skipped a batch: clean batches were accused. */
static void null_stream_joins_keep_batch(void **state)
{
	enum { N = 8 };
	struct tb *t = tb_new(NULL);
	uint64_t m, d, em, ed;

	(void)state;
	null_fill(t, 2, &m, &d, &em, &ed);
	for (int i = 0; i < N; i++) {
		if (i + 2 < N)
			ev_copy(t, m, em);
		tb_wait(t, 0, ed);
		if (i + 1 < N)
			ev_sparse(t, d, em, ed);
		tb_kernel(t, 0, K_LOOKUP);
		tb_kernel(t, 0, K_GEMM);
		tb_kernel(t, 0, K_TRITON);
	}
	null_all_trusted(t, N);
	tb_free(t);
}

/* Blocking copy and data-dist streams, compute on the null stream, the
 * loader three batches ahead, every copy recorded on one reused event: the
 * data-dist stream's first wait covers batches 0-2. Forward's first
 * kernels on the null stream join the copy stream (the null stream now
 * carries batch 2); the copy of batch 3, on the blocking copy stream,
 * then joins the null stream, and so does the data-dist stream's next
 * wait. That join takes the batch due at the data-dist stream (1), found
 * through the copy stream that copied batch 2, though that stream has
 * copied batch 3 since. Before, no copy stream carried batch 2 any more,
 * the join took it, and the healthy batch 1 was accused copy->sparse
 * (never reached). */
static void null_stream_join_after_next_copy(void **state)
{
	enum { N = 6 };

	(void)state;
	for (int counted = 0; counted < 2; counted++) {
		struct tb *t = tb_new(NULL);
		uint64_t m, d, em, ed;

		t->counted = counted;
		null_fill(t, 3, &m, &d, &em, &ed);
		for (int i = 0; i < N; i++) {
			tb_wait(t, 0, ed);
			tb_kernel(t, 0, K_LOOKUP);
			tb_kernel(t, 0, K_GEMM);
			if (i + 3 < N)
				ev_copy(t, m, em);
			if (i + 1 < N)
				ev_sparse(t, d, em, ed);
			tb_kernel(t, 0, K_BWD_EMB);
			tb_kernel(t, 0, K_BWD_GEMM);
		}
		null_all_trusted(t, N);
		tb_free(t);
	}
}

/* Compute's step of the loader loops below: its take of the data-dist
 * stream (wait_stream, dropped without `take`), forward and backward. */
static void loader_step(struct tb *t, uint64_t c, uint64_t d, bool take)
{
	tb_wait_stream_or_drop(t, c, d, take);
	tb_kernel(t, c, K_LOOKUP);
	tb_kernel(t, c, K_GEMM);
	tb_kernel(t, c, K_BWD_EMB);
	tb_kernel(t, c, K_BWD_GEMM);
}

/* A loader thread copies two batches ahead (its first two copies before
 * the data-dist stream's first wait, which covers both), PyTorch's fresh
 * event per wait_stream, and the data-dist stream's stage launches its
 * first kernel twice; the loader's next copy lands between them. The
 * second launch is the same batch's stage going on, not the next batch's
 * begun: each batch keeps its own stage. A launch again after a loader's
 * copy looks the same as the next batch's stage begun without its wait
 * (random program 410837), so the loader's copy alone cannot begin that
 * stage: a rule that let it (the next batch's copy ordered before the
 * stream already) charged every stage here to the batch before
 * (docs/engine.md, tried, not kept). The data-dist stream's wait for
 * batch k > 0 is redundant (its wait for k - 1 came after k's copy):
 * dropped, every batch is still trusted. Before, the stage of k - 1 going
 * on after the loader's copy of k + 1 passed k + 1 over at the next wait,
 * though k's stage, begun without its wait, came between: k + 1 was
 * accused copy->sparse. Compute's wait dropped names sparse->forward on
 * that batch alone. */
static void loader_copy_inside_stage(void **state)
{
	enum { N = 7 };

	(void)state;
	for (int counted = 0; counted < 2; counted++) {
		for (int drop = -1; drop < 2 * N; drop++) {
			struct tb *t = tb_new(NULL);
			uint64_t m = tb_stream_create(t, 1), d = tb_stream_create(t, 1);
			uint64_t c = tb_stream_create(t, 1), first[N], last[N];
			int dropd = drop < N ? drop : -1, dropc = drop >= N ? drop - N : -1;

			t->counted = counted;
			tb_loader_copies(t, m, 2);
			for (int i = 0; i < N; i++) {
				tb_wait_stream_or_drop(t, d, m, i != dropd);
				first[i] = tb_kernel(t, d, K_INPUT_DIST);
				if (i + 2 < N)
					tb_loader_copies(t, m, 1);
				tb_kernel(t, d, K_INPUT_DIST);
				last[i] = tb_kernel(t, d, K_DIST_INIT);
				loader_step(t, c, d, i != dropc);
			}
			end_job(t);
			if (dropd == 0)
				assert_one_fault(t, N, 0, EDGE(COPY_SPARSE), "D's first wait");
			else if (dropc >= 0)
				assert_one_fault(t, N, dropc, EDGE(SPARSE_FORWARD), "C's wait");
			else
				assert_one_fault(t, N, -1, 0, "redundant D wait");
			for (int k = 0; k < N && dropc < 0; k++) {
				const struct nl_stage_audit *sp =
					&tb_batch(t, (uint64_t)k)->stage[NL_STAGE_SPARSE];

				/* the batch's own stage: both launches and dist_init */
				assert_true(sp->first_ns <= first[k]);
				assert_true(sp->last_ns >= last[k]);
				assert_true(k + 1 == N || sp->last_ns < first[k + 1]);
			}
			tb_free(t);
		}
	}
}

/* The same loader inside TorchRec's sparse stage (input_dist on D, the
 * all-to-all on N, dist_init on D after the all-to-all's end), the next
 * batch's stage enqueued before compute's take, the loader's copy between
 * the stage's two input_dist launches. The data-dist stream's wait for
 * batch k > 0 is redundant: dropped, k's input_dist follows dist_init of
 * k - 1 at once, after D's wait on the all-to-all's end. Before, the
 * stage of k - 1 going on after the loader's copy of k + 1 passed k + 1
 * over at its wait (k's stage followed it after a wait on N, not the
 * copy stream), and that healthy batch was accused copy->sparse (random
 * program 62516). */
static void loader_copy_inside_collective_stage(void **state)
{
	enum { N = 6 };

	(void)state;
	for (int counted = 0; counted < 2; counted++) {
		for (int drop = -1; drop < N; drop++) {
			struct tb *t = tb_new(NULL);
			uint64_t m = tb_stream_create(t, 1), d = tb_stream_create(t, 1);
			uint64_t n = tb_stream_create(t, 1), c = tb_stream_create(t, 1);
			uint64_t done = tb_event_create(t);

			t->counted = counted;
			tb_loader_copies(t, m, 2);
			for (int j = 0; j <= N; j++) {
				if (j < N) { /* stage j, before compute's take of j - 1 */
					tb_wait_stream_or_drop(t, d, m, j != drop);
					tb_kernel(t, d, K_INPUT_DIST);
					if (j + 2 < N)
						tb_loader_copies(t, m, 1);
					tb_kernel(t, d, K_INPUT_DIST);
					tb_wait_stream(t, n, d);
					tb_alltoall(t, n, done);
					tb_wait(t, d, done);
					tb_kernel(t, d, K_DIST_INIT);
				}
				if (j > 0)
					loader_step(t, c, d, true);
			}
			end_job(t);
			if (drop == 0)
				assert_one_fault(t, N, 0, EDGE(COPY_SPARSE), "D's first wait");
			else
				assert_one_fault(t, N, -1, 0, "redundant D wait");
			tb_free(t);
		}
	}
}

/* ncclAllToAll's record arrives after RCCL's inner hipExtLaunchKernel (it
 * has a return probe); compute waits on the kernel's done event, recorded
 * after the kernel. The collective must count as ordered before it. */
static void collective_after_inner_launch(void **state)
{
	struct tb *t = tb_new(NULL);
	uint64_t m = tb_stream_create(t, 1), n = tb_stream_create(t, 1);
	uint64_t done = tb_event_create(t);

	(void)state;
	for (int k = 0; k < 5; k++) {
		tb_copy(t, m, 1, 512);
		tb_wait_stream(t, n, m);
		tb_alltoall(t, n, done);
		tb_wait(t, 0, done);
		tb_launch(t, 0);
		tb_launch(t, 0);
	}
	end_job(t);
	assert_int_equal(t->n, 5);
	for (int k = 0; k < 5; k++) {
		const struct nl_batch_audit *a = tb_batch(t, (uint64_t)k);

		assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
		/* counted once, though RCCL's launch is an op too */
		assert_int_equal(a->stage[NL_STAGE_SPARSE].collectives, 1);
	}
	tb_free(t);
}

/* ---- evidence ------------------------------------------------------------------- */

static void completion_evidence(void **state)
{
	struct tb *t = tb_new(NULL);
	uint64_t m = tb_stream_create(t, 1), ev = tb_event_create(t);
	uint64_t start = tb_event_create(t), stop = tb_event_create(t);
	uint64_t not_done_ts, done_ret, sync_ret;
	const struct nl_batch_audit *a;

	(void)state;
	tb_copy(t, m, 1, 1000);
	tb_copy(t, m, 1, 24);
	tb_record(t, ev, m);
	tb_wait(t, 0, ev);
	tb_record(t, start, 0);
	tb_launch(t, 0);
	tb_launch(t, 0);
	tb_record(t, stop, 0);
	tb_query(t, ev, 600);
	not_done_ts = t->now;
	tb_query(t, ev, 0);
	done_ret = t->now + 400;
	tb_stream_sync(t, 0);
	sync_ret = t->now + 400;
	tb_elapsed(t, start, stop, 2.5);
	simple_batch(t, m, 0, 2);
	end_job(t);
	a = tb_batch(t, 0);
	assert_int_equal(a->stage[NL_STAGE_COPY].bytes, 1024);
	assert_int_equal(a->stage[NL_STAGE_COPY].completion.not_done_at_ns, not_done_ts);
	assert_int_equal(a->stage[NL_STAGE_COPY].completion.done_by_ns, done_ret);
	assert_int_equal(a->stage[NL_STAGE_COPY].completion.done_api, NL_API_EVENT_QUERY);
	assert_int_equal(a->stage[NL_STAGE_FORWARD].completion.done_by_ns, sync_ret);
	assert_int_equal(a->stage[NL_STAGE_FORWARD].completion.done_api, NL_API_STREAM_SYNCHRONIZE);
	assert_int_equal(a->stage[NL_STAGE_FORWARD].completion.gpu_ms_n, 1);
	assert_true(a->stage[NL_STAGE_FORWARD].completion.gpu_ms > 2.49);
	assert_true(a->overlap_known);
	/* the last batch: known done only by the final device sync */
	a = tb_batch(t, 1);
	assert_int_equal(a->stage[NL_STAGE_FORWARD].completion.done_api, NL_API_DEVICE_SYNCHRONIZE);
	assert_int_equal(a->stage[NL_STAGE_FORWARD].completion.not_done_at_ns, 0);
	tb_free(t);
}

static void post_step_confirmed(void **state)
{
	struct nl_engine_opts o = { .post_step = true };
	struct tr_opts tro = tr_defaults(5);
	struct tr_run r;
	struct tb *t;

	(void)state;
	tro.simple = true;
	t = tr_bench(&o, &tro, &r);
	for (int k = 0; k < 5; k++) {
		const struct nl_batch_audit *a = tb_batch(t, (uint64_t)k);

		assert_true(a->post_step_enabled);
		assert_true(a->post_step_confirmed);
		assert_int_equal(a->post_step_at_ns,
				 a->stage[NL_STAGE_FORWARD].completion.done_by_ns);
		assert_true(a->post_step_at_ns <= a->tick_end_ns);
	}
	tb_free(t);
}

/* ---- skip reasons ---------------------------------------------------------------- */


/* three records lost at the top of iteration lose_iter */
static int lose_iter;

static void lose_there(struct tb *t, int i)
{
	if (i == lose_iter)
		nl_engine_lost(t->e, t->pid, 3, t->now += 1000);
}

static void lost_records_window(void **state)
{
	struct tr_opts o = tr_defaults(30);
	struct tr_run r;
	struct tb *t;

	(void)state;
	lose_iter = 20;
	o.at_iter = lose_there;
	t = tr_bench(NULL, &o, &r);
	assert_int_equal(t->n, 30);
	/* Emitted before the loss: judged. Not emitted yet (18 lingering, 19
	 * in its forward, 20 in its sparse stage, 21 copied) and every batch
	 * after: skipped, whatever the records lost were. */
	for (int k = 0; k < 30; k++)
		if (k >= 18)
			assert_verdict(t, (uint64_t)k, NL_VERDICT_SKIPPED, 0, SKIPR(LOST_RECORDS));
		else
			assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	assert_int_equal(t->sum.lost_records, 3);
	assert_int_equal(t->sum.skip_reasons[NL_SKIP_LOST_RECORDS], 12);
	tb_free(t);
}

/* Records lost while the roles were learned: what learning decided from
 * the records held holds for the batches before the loss too, so none is
 * judged. */
static void lost_records_while_learning(void **state)
{
	struct tr_opts o = tr_defaults(10);
	struct tr_run r;
	struct tb *t;

	(void)state;
	lose_iter = 4;
	o.at_iter = lose_there;
	t = tr_bench(NULL, &o, &r);
	assert_int_equal(t->n, 10);
	for (int k = 0; k < 10; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_SKIPPED, 0, SKIPR(LOST_RECORDS));
	tb_free(t);
}

static void probe_missing(void **state)
{
	struct tb *t = tb_new(NULL);
	struct tr_opts o = tr_defaults(4);
	struct tr_run r;

	(void)state;
	/* evidence only: does not matter */
	nl_engine_probe_missing(t->e, 0, NL_API_EVENT_QUERY);
	tr_job(t, &o, &r);
	tb_finish(t);
	for (int k = 0; k < 4; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);

	t = tb_new(NULL);
	assert_true(nl_engine_api_matters(NL_API_STREAM_WAIT_EVENT));
	nl_engine_probe_missing(t->e, t->pid, NL_API_STREAM_WAIT_EVENT);
	tr_job(t, &o, &r);
	tb_finish(t);
	assert_int_equal(t->n, 4);
	for (int k = 0; k < 4; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_SKIPPED, 0, SKIPR(PROBE_MISSING));
	assert_int_equal(t->sum.skip_reasons[NL_SKIP_PROBE_MISSING], 4);
	tb_free(t);
}

/* Tracing starts in the middle of a copy segment of an unknown stream. */
static void attached_mid_batch(void **state)
{
	struct tb *t = tb_new(NULL);
	const uint64_t m = 0x7e0000000100ull;

	(void)state;
	nl_engine_attach(t->e, t->pid, t->now, true);
	simple_batch(t, m, 0, 2);
	simple_batch(t, m, 0, 2);
	simple_batch(t, m, 0, 2);
	end_job(t);
	assert_verdict(t, 0, NL_VERDICT_SKIPPED, 0, SKIPR(ATTACHED_MID_BATCH));
	assert_verdict(t, 1, NL_VERDICT_TRUSTED, 0, 0);
	/* open at exit, in a pipeline found mid-run: not judged (nl_drain) */
	assert_verdict(t, 2, NL_VERDICT_SKIPPED, 0, SKIPR(TARGET_EXITED));
	assert_false(find_stream(t, m, 0)->created);
	assert_true(t->sum.procs[0].mid_run);
	tb_free(t);

	/* attached mid-run, but the copy stream was created after: whole */
	t = tb_new(NULL);
	nl_engine_attach(t->e, t->pid, t->now, true);
	simple_batch(t, tb_stream_create(t, 1), 0, 2);
	end_job(t);
	assert_verdict(t, 0, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);
}

/* Attached mid-run, compute's kernels before the first batch seen are the
 * forward of a batch copied before the attach: no audit covers it, and the
 * summary is not valid (in_flight_at_attach). Not traced from the start,
 * nor where the pipeline's copy stream was created after the attach (the
 * kernels are then no batch's). */
static void in_flight_at_attach(void **state)
{
	(void)state;
	for (int mode = 0; mode < 3; mode++) {
		struct tb *t = tb_new(NULL);
		uint64_t m = 0x7e0000000100ull;

		if (mode != 1)
			nl_engine_attach(t->e, t->pid, t->now, true);
		if (mode == 2)
			m = tb_stream_create(t, 1);
		tb_launch(t, 0);
		tb_launch(t, 0);
		for (int i = 0; i < 3; i++)
			simple_batch(t, m, 0, 2);
		end_job(t);
		if (mode == 0) {
			assert_int_equal(t->sum.in_flight_ops, 2);
			assert_true(t->sum.invalid_mask & (1u << NL_INVALID_IN_FLIGHT));
			assert_false(t->sum.evidence_valid);
		} else {
			assert_int_equal(t->sum.in_flight_ops, 0);
			assert_false(t->sum.invalid_mask & (1u << NL_INVALID_IN_FLIGHT));
		}
		tb_free(t);
	}
}

static void detached_in_flight(void **state)
{
	struct tr_opts o = tr_defaults(8);
	struct tr_run r;
	struct tb *t;

	(void)state;
	o.no_teardown = true;
	t = tr_bench(NULL, &o, &r);
	assert_int_equal(t->n, 8);
	for (int k = 0; k < 7; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	/* its forward window never closed: the tool stopped first */
	assert_verdict(t, 7, NL_VERDICT_SKIPPED, 0, SKIPR(DETACHED));
	tb_free(t);
}

/* A process that exits without a final sync, mid-batch. */
static void exited_mid_batch(void **state)
{
	struct tb *t = tb_new(NULL);
	uint64_t m = tb_stream_create(t, 1);

	(void)state;
	simple_batch(t, m, 0, 2);
	simple_batch(t, m, 0, 2);
	nl_engine_exit(t->e, t->pid, t->now += 1000);
	tb_finish(t);
	assert_verdict(t, 0, NL_VERDICT_TRUSTED, 0, 0);
	assert_verdict(t, 1, NL_VERDICT_SKIPPED, 0, SKIPR(TARGET_EXITED));
	tb_free(t);
}

static void graph_capture(void **state)
{
	struct tb *t = tb_new(NULL);
	uint64_t m = tb_stream_create(t, 1), s = tb_stream_create(t, 1);

	(void)state;
	for (int k = 0; k < 5; k++) {
		tb_copy(t, m, 1, 64);
		tb_wait_stream(t, s, m);
		if (k == 2)
			tb_capture(t, s, true);
		for (int i = 0; i < 3; i++)
			tb_launch(t, s);
		if (k == 2) {
			tb_capture(t, s, false);
			tb_launch_api(t, NL_API_GRAPH_LAUNCH, s);
		}
	}
	end_job(t);
	assert_int_equal(t->n, 5);
	for (int k = 0; k < 5; k++)
		if (k == 2)
			assert_verdict(t, 2, NL_VERDICT_SKIPPED, 0, SKIPR(GRAPH_CAPTURE));
		else
			assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);
}

static void unknown_handle(void **state)
{
	struct tb *t = tb_new(NULL);
	uint64_t m, ev;

	(void)state;
	/* an event recorded before tracing began */
	nl_engine_attach(t->e, t->pid, t->now, true);
	m = tb_stream_create(t, 1);
	ev = tb_event_create(t);
	tb_copy(t, m, 1, 64);
	tb_record(t, ev, m);
	tb_wait(t, 0, ev);
	tb_launch(t, 0);
	tb_wait(t, 0, 0x7e000000dead0ull);
	tb_launch(t, 0);
	simple_batch(t, m, 0, 2);
	end_job(t);
	assert_verdict(t, 0, NL_VERDICT_SKIPPED, 0, SKIPR(UNKNOWN_HANDLE));
	assert_verdict(t, 1, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);

}

/* Batches 0..n-1 trusted, but batch k (-1: none) as given. */
static void trusted_but(struct tb *t, int n, int k, int verdict, uint32_t missing, uint32_t skip)
{
	for (int i = 0; i < n; i++)
		if (i == k)
			assert_verdict(t, (uint64_t)i, verdict, missing, skip);
		else
			assert_verdict(t, (uint64_t)i, NL_VERDICT_TRUSTED, 0, 0);
}

/* The same for a pipeline attached mid-run (its copy stream created before
 * tracing): its last batch, open at exit, is not judged (nl_drain). */
static void trusted_but_mid(struct tb *t, int n, int k, int verdict, uint32_t missing,
			    uint32_t skip)
{
	trusted_but(t, n - 1, k, verdict, missing, skip);
	assert_verdict(t, (uint64_t)n - 1, NL_VERDICT_SKIPPED, 0, SKIPR(TARGET_EXITED));
}

/* A copy stream created before tracing began, compute on the null stream:
 * batch 1 is never waited for. Had the stream been created blocking, the
 * null stream would have ordered its forward after the copy: the calls do
 * not decide it, and it is skipped pretrace_stream. With
 * --assume-nonblocking (all PyTorch creates) it is judged on that,
 * copy->forward; the others are trusted either way. On a compute stream of
 * its own the null stream orders nothing: untrusted without the option. */
static void pretrace_stream(void **state)
{
	(void)state;
	for (int n = 0; n < 3; n++) {
		struct nl_engine_opts o = { .unseen_nonblocking = n == 1 };
		struct tb *t = tb_new(&o);
		uint64_t m = 0x7e0000000100ull, c = n == 2 ? 0x7e0000000200ull : 0;

		nl_engine_attach(t->e, t->pid, t->now, true);
		tb_record(t, tb_event_create(t), m);
		simple_batch(t, m, c, 2);
		tb_copy(t, m, 1, 64);
		tb_record(t, tb_event_create(t), m);
		tb_launch(t, c);
		simple_batch(t, m, c, 2);
		end_job(t);
		assert_verdict(t, 0, NL_VERDICT_TRUSTED, 0, 0);
		if (n == 0)
			assert_verdict(t, 1, NL_VERDICT_SKIPPED, 0, SKIPR(PRETRACE_STREAM));
		else
			assert_verdict(t, 1, NL_VERDICT_UNTRUSTED, EDGE(COPY_FORWARD), 0);
		assert_verdict(t, 2, NL_VERDICT_SKIPPED, 0, SKIPR(TARGET_EXITED));
		assert_false(find_stream(t, m, 0)->created);
		assert_false(find_stream(t, m, 0)->blocking);
		tb_free(t);
	}
}

/* The same with a sparse stage (copy and data-dist streams created before
 * tracing), the data-dist stream's wait on batch 2's copy dropped: with no
 * null-stream op between the copy and the sparse work, no flags order
 * them, and copy->sparse is named; with compute's work in between, a
 * blocking pair would be ordered through it, and the batch is skipped. */
static void pretrace_stream_sparse(void **state)
{
	(void)state;
	for (int between = 0; between < 2; between++) {
		struct tb *t = tb_new(NULL);
		uint64_t m = 0x7e0000000100ull, d = 0x7e0000000300ull;

		nl_engine_attach(t->e, t->pid, t->now, true);
		tb_record(t, tb_event_create(t), m);
		for (int i = 0; i < 10; i++) {
			tb_copy(t, m, 1, 1024);
			tb_copy(t, m, 1, 1024);
			if (between && i == 2)
				tb_launch(t, 0);
			tb_wait_stream_or_drop(t, d, m, i != 2);
			tb_kernel(t, d, K_INPUT_DIST);
			tb_wait_stream(t, 0, d);
			tb_kernel(t, 0, K_LOOKUP);
			tb_kernel(t, 0, K_GEMM);
		}
		end_job(t);
		if (between)
			trusted_but_mid(t, 10, 2, NL_VERDICT_SKIPPED, 0, SKIPR(PRETRACE_STREAM));
		else
			trusted_but_mid(t, 10, 2, NL_VERDICT_UNTRUSTED, EDGE(COPY_SPARSE), 0);
		tb_free(t);
	}
}

/* The same without compute's work in between, batch 2's window long: it is
 * judged after the null stream's ring (its last 64 ops) no longer reaches back
 * to its copy. Whether a null-stream op came between the copy and the
 * sparse work is known from the ops themselves, not from that ring: before,
 * the batch was skipped pretrace_stream where the calls decide (random
 * program 15304). */
static void pretrace_stream_judged_late(void **state)
{
	struct tb *t = tb_new(NULL);
	uint64_t m = 0x7e0000000100ull, d = 0x7e0000000300ull;

	(void)state;
	nl_engine_attach(t->e, t->pid, t->now, true);
	tb_record(t, tb_event_create(t), m);
	for (int i = 0; i < 10; i++) {
		tb_copy(t, m, 1, 1024);
		tb_copy(t, m, 1, 1024);
		tb_wait_stream_or_drop(t, d, m, i != 2);
		tb_kernel(t, d, K_INPUT_DIST);
		tb_wait_stream(t, 0, d);
		tb_kernel(t, 0, K_LOOKUP);
		tb_kernel(t, 0, K_GEMM);
		for (int k = 0; i == 2 && k < 200; k++)
			tb_kernel(t, 0, K_GEMM);
	}
	end_job(t);
	trusted_but_mid(t, 10, 2, NL_VERDICT_UNTRUSTED, EDGE(COPY_SPARSE), 0);
	tb_free(t);
}

/* The same at depth 2, the data-dist stream running batch i after batch
 * i+1's copy closed, its wait on batch 3's copy dropped: batch 3's sparse
 * work comes after compute took batch 2 through the null stream, which a
 * blocking pair would be ordered through, and batch 3 is skipped. The
 * first data-dist op after batch 3's copy, batch 2's own, does not read
 * batch 3: judged by it, batch 3 was named copy->sparse. */
static void pretrace_stream_older_op(void **state)
{
	(void)state;
	for (int drop = 0; drop < 2; drop++) {
		struct tb *t = tb_new(NULL);
		uint64_t m = 0x7e0000000100ull, d = 0x7e0000000300ull, ev[12];

		nl_engine_attach(t->e, t->pid, t->now, true);
		for (int i = 0; i < 12; i++)
			ev[i] = tb_event_create(t);
		tb_record(t, tb_event_create(t), m);
		tb_copy(t, m, 1, 1024);
		tb_record(t, ev[0], m);
		for (int i = 0; i < 10; i++) {
			tb_copy(t, m, 1, 1024);
			tb_record(t, ev[i + 1], m);
			if (!drop || i != 3)
				tb_wait(t, d, ev[i]);
			tb_kernel(t, d, K_INPUT_DIST);
			tb_wait_stream(t, 0, d);
			tb_kernel(t, 0, K_LOOKUP);
			tb_kernel(t, 0, K_GEMM);
		}
		end_job(t);
		trusted_but_mid(t, 10, drop ? 3 : -1, NL_VERDICT_SKIPPED, 0, SKIPR(PRETRACE_STREAM));
		tb_free(t);
	}
}

/* ---- caps ------------------------------------------------------------------------- */

static void caps_batches(void **state)
{
	struct nl_engine_opts o = { .max_batches_in_flight = 2, .has_copy_stream = true,
				    .copy_stream = TB_H(1), .has_compute_stream = true,
				    .has_sparse_streams = true };
	struct tb *t = tb_new(&o);
	uint64_t m = tb_stream_create(t, 1);

	(void)state;
	assert_int_equal(m, TB_H(1));
	/* copies nobody consumes: batches pile up */
	for (int k = 0; k < 5; k++) {
		tb_copy(t, m, 1, 64);
		tb_record(t, tb_event_create(t), m);
	}
	nl_engine_exit(t->e, t->pid, t->now += 1000);
	tb_finish(t);
	assert_int_equal(t->n, 5);
	for (int k = 0; k < 3; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_SKIPPED, 0, SKIPR(EVICTED));
	for (int k = 3; k < 5; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_SKIPPED, 0, SKIPR(TARGET_EXITED));
	assert_int_equal(t->sum.evicted_batches, 3);
	tb_free(t);
}

static void caps_events(void **state)
{
	struct nl_engine_opts o = { .max_events = 4, .has_copy_stream = true,
				    .copy_stream = TB_H(1), .has_compute_stream = true,
				    .has_sparse_streams = true };
	struct tb *t = tb_new(&o);
	uint64_t m = tb_stream_create(t, 1), ev[6];

	(void)state;
	tb_copy(t, m, 1, 64);
	for (int i = 0; i < 6; i++) {
		ev[i] = tb_event_create(t);
		tb_record(t, ev[i], m);
	}
	tb_wait(t, 0, ev[5]);
	tb_launch(t, 0);
	tb_wait(t, 0, ev[0]); /* forgotten: the edge is unknown */
	tb_launch(t, 0);
	simple_batch(t, m, 0, 1);
	end_job(t);
	assert_verdict(t, 0, NL_VERDICT_SKIPPED, 0, SKIPR(EVICTED));
	assert_verdict(t, 1, NL_VERDICT_TRUSTED, 0, 0);
	assert_true(t->sum.evicted_events >= 2);
	tb_free(t);
}

static void caps_streams(void **state)
{
	struct nl_engine_opts o = { .max_streams = 4 };
	struct tb *t = tb_new(&o);
	uint64_t m = tb_stream_create(t, 1);

	(void)state;
	for (int k = 0; k < 4; k++) {
		simple_batch(t, m, 0, 2);
		/* short-lived side streams push each other out */
		for (int i = 0; i < 3; i++)
			tb_launch(t, tb_stream_create(t, 1));
	}
	end_job(t);
	assert_int_equal(t->n, 4);
	for (int k = 0; k < 4; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	assert_true(t->sum.evicted_streams >= 8);
	tb_free(t);
}

/* ---- processes --------------------------------------------------------------------- */

static void recorder(struct tb *r, uint32_t pid)
{
	memset(r, 0, sizeof(*r));
	r->recording = true;
	r->pid = r->tid = pid;
	r->now = 1000000;
	r->next_handle = 0x7f0000001000ull;
}

static void two_processes_interleaved(void **state)
{
	struct tb *t = tb_new(NULL);
	struct tb *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct tr_opts oa = tr_defaults(6), ob = tr_defaults(6);
	struct tr_run ra, rb;
	int ia = 0, ib = 0;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	recorder(a, 2000);
	recorder(b, 3000);
	oa.simple = true;
	oa.drop_simple = 1;
	ob.drop_d = 2;
	tr_setup(&ra, a, &oa);
	assert_true(tr_run_simple(&ra));
	tb_device_sync(a);
	tr_setup(&rb, b, &ob);
	assert_true(tr_run_torchrec(&rb));
	tb_device_sync(b);
	/* same handles in both: they are different processes */
	assert_int_equal(ra.M, rb.M);
	nl_engine_attach(t->e, 2000, 0, false);
	nl_engine_attach(t->e, 3000, 0, false);
	while (ia < a->nrec || ib < b->nrec) {
		if (ia < a->nrec)
			assert_int_equal(nl_engine_feed(t->e, &a->rec[ia++]), 0);
		if (ib < b->nrec)
			assert_int_equal(nl_engine_feed(t->e, &b->rec[ib++]), 0);
	}
	nl_engine_exit(t->e, 2000, a->now + 1000);
	nl_engine_exit(t->e, 3000, b->now + 1000);
	tb_finish(t);
	assert_int_equal(t->n, 12);
	for (uint64_t k = 0; k < 6; k++) {
		const struct nl_batch_audit *x = tb_batch_of(t, 2000, k), *y = tb_batch_of(t, 3000, k);

		assert_int_equal(x->verdict, k == 1 ? NL_VERDICT_UNTRUSTED : NL_VERDICT_TRUSTED);
		assert_int_equal(x->missing_mask, k == 1 ? EDGE(COPY_FORWARD) : 0);
		assert_int_equal(y->verdict, k == 2 ? NL_VERDICT_UNTRUSTED : NL_VERDICT_TRUSTED);
		assert_int_equal(y->missing_mask, k == 2 ? EDGE(SPARSE_FORWARD) : 0);
	}
	assert_int_equal(t->sum.nprocs, 3); /* and the bench's own, idle */
	assert_int_equal(t->sum.untrusted, 2);
	free(a->rec);
	free(b->rec);
	free(a);
	free(b);
	tb_free(t);
}

/* Failed calls did nothing; a pid beyond the cap is counted, not tracked. */
static void failed_calls_and_untracked(void **state)
{
	struct nl_engine_opts o = { .max_procs = 1 };
	struct tb *t = tb_new(&o);
	uint64_t m = tb_stream_create(t, 1);
	struct nl_call c = tb_call(t, NL_API_MEMCPY_WITH_STREAM);

	(void)state;
	tb_set_stream(&c, m);
	c.kindarg = 1;
	c.fields |= NL_F_KIND;
	c.rc = 1; /* hipErrorInvalidValue: no copy happened, no batch */
	tb_feed(t, &c);
	c = tb_call(t, NL_API_LAUNCH_KERNEL);
	c.pid = 4242;
	assert_int_equal(nl_engine_feed(t->e, &c), -ENOSPC);
	c.pid = t->pid;
	c.kind = NL_K_COPY; /* does not match the table */
	assert_int_equal(nl_engine_feed(t->e, &c), -EINVAL);
	simple_batch(t, m, 0, 1);
	end_job(t);
	assert_int_equal(t->n, 1);
	assert_int_equal(t->sum.ignored_records, 1);
	assert_int_equal(t->sum.untracked_records, 1);
	assert_int_equal(tb_batch(t, 0)->stage[NL_STAGE_COPY].bytes, 2048);
	tb_free(t);
}

static void names_and_null(void **state)
{
	(void)state;
	nl_engine_free(NULL);
	assert_string_equal(nl_skip_name(NL_SKIP_ATTACHED_MID_BATCH), "attached_mid_batch");
	assert_string_equal(nl_edge_name(NL_EDGE_COPY_FORWARD), "copy->forward");
	assert_string_equal(nl_verdict_name(NL_VERDICT_UNTRUSTED), "untrusted");
	assert_string_equal(nl_role_name(NL_ROLE_SPARSE), "sparse");
	assert_string_equal(nl_skip_name(99), "?");
	assert_false(nl_engine_api_matters(NL_API_DEVICE_SYNCHRONIZE));
	assert_true(nl_engine_api_matters(NL_API_EVENT_RECORD));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(event_handle_reuse),
		cmocka_unit_test(per_thread_streams),
		cmocka_unit_test(backward_side_stream_not_compute),
		cmocka_unit_test(backward_work_not_a_producer),
		cmocka_unit_test(backward_wait_dropped_keeps_compute),
		cmocka_unit_test(null_stream_blocking),
		cmocka_unit_test(null_stream_nonblocking),
		cmocka_unit_test(null_stream_joins_keep_batch),
		cmocka_unit_test(loader_copy_inside_stage),
		cmocka_unit_test(loader_copy_inside_collective_stage),
		cmocka_unit_test(null_stream_join_after_next_copy),
		cmocka_unit_test(null_stream_record_keeps_batch),
		cmocka_unit_test(null_stream_copy_join),
		cmocka_unit_test(collective_after_inner_launch),
		cmocka_unit_test(completion_evidence),
		cmocka_unit_test(post_step_confirmed),
		cmocka_unit_test(lost_records_window),
		cmocka_unit_test(lost_records_while_learning),
		cmocka_unit_test(probe_missing),
		cmocka_unit_test(attached_mid_batch),
		cmocka_unit_test(in_flight_at_attach),
		cmocka_unit_test(detached_in_flight),
		cmocka_unit_test(exited_mid_batch),
		cmocka_unit_test(graph_capture),
		cmocka_unit_test(unknown_handle),
		cmocka_unit_test(pretrace_stream),
		cmocka_unit_test(pretrace_stream_sparse),
		cmocka_unit_test(pretrace_stream_judged_late),
		cmocka_unit_test(pretrace_stream_older_op),
		cmocka_unit_test(caps_batches),
		cmocka_unit_test(caps_events),
		cmocka_unit_test(caps_streams),
		cmocka_unit_test(two_processes_interleaved),
		cmocka_unit_test(failed_calls_and_untracked),
		cmocka_unit_test(names_and_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
