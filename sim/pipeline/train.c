// SPDX-License-Identifier: MIT
/*
 * The training loops: TorchRec's TrainPipelineSparseDist (depth 2, and a
 * depth-1 variant) and a plain prefetching loop, step for step as in
 * docs/workload.md, and the verdict each batch deserves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pl.h"

static void stall_kernel(simhip_kernel_t *k, const char *name, long ms)
{
	*k = (simhip_kernel_t){ SIMHIP_KERNEL_MAGIC, name, NULL, (uint64_t)ms * 1000000ull };
}

static void write_streams(const struct pl_ctx *x)
{
	struct pl_json j;

	pj_begin(&j, "streams");
	pj_hex(&j, "copy", (uint64_t)(uintptr_t)x->M);
	if (x->o->pattern == PAT_TORCHREC) {
		pj_hex(&j, "data_dist", (uint64_t)(uintptr_t)x->D);
		pj_hex(&j, "collective", (uint64_t)(uintptr_t)x->N);
	}
	pj_hex(&j, "compute", (uint64_t)(uintptr_t)x->C);
	pj_end(&j);
}

void pl_setup(struct pl_ctx *x)
{
	const struct pl_opts *o = x->o;
	bool tr = o->pattern == PAT_TORCHREC;

	pl_attr(-1, ST_SETUP, SP_NONE);
	x->C = NULL; /* PyTorch's current stream: the null stream */
	/* Side streams as torch.cuda.Stream(priority=-1) makes them. */
	hw_stream_create_prio(&x->M, hipStreamNonBlocking, -1);
	if (tr) {
		hw_stream_create_prio(&x->D, hipStreamNonBlocking, -1);
		hw_stream_create_flags(&x->N, hipStreamNonBlocking);
	}
	evpool_init(&x->ev_sync, hipEventDisableTiming);
	evpool_init(&x->ev_coll, hipEventDisableTiming);
	evpool_init(&x->ev_timed, hipEventDefault);
	evpool_init(&x->ev_alloc, hipEventDisableTiming);
	/* One segment carved into buffers, as the caching allocator does. */
	hw_malloc(&x->dmem, PL_NSLOT * pl_slot_bytes());
	for (int s = 0; s < PL_NSLOT; s++)
		pl_slot_carve(&x->slot[s], (uint8_t *)x->dmem + s * pl_slot_bytes());
	if (tr)
		hw_nccl_init(&x->comm);
	x->b = calloc((size_t)o->batches, sizeof(*x->b));
	if (!x->b) {
		fprintf(stderr, "pipeline: out of memory\n");
		exit(1);
	}
	for (long k = 0; k < o->batches; k++) {
		struct pl_batch *b = &x->b[k];

		pl_batch_init(b, k, o->seed, &x->slot[k % PL_NSLOT]);
		stall_kernel(&b->stall_copy_k, "stall_copy_pack", pl_stall_ms(o, STALL_COPY, k));
		stall_kernel(&b->stall_sparse_k, "stall_dist_init",
			     pl_stall_ms(o, STALL_SPARSE, k));
	}
	x->ha = (struct pl_halloc){ .pool = &x->ev_alloc, .size = pl_batch_bytes() };
	if (o->torch) {
		/* torch.cuda.graph's capture stream, from the side-stream pool */
		hw_stream_create_flags(&x->G, hipStreamNonBlocking);
		evpool_init(&x->ev_dev, hipEventDisableTiming);
		x->da = (struct pl_halloc){ .pool = &x->ev_dev, .size = 64 };
		x->dblk = calloc((size_t)o->batches, sizeof(*x->dblk));
		if (!x->dblk) {
			fprintf(stderr, "pipeline: out of memory\n");
			exit(1);
		}
	}
	write_streams(x);
	if (pl_autograd_start(x) || (tr && pl_watchdog_start(x))) {
		fprintf(stderr, "pipeline: cannot start threads\n");
		exit(1);
	}
}

/* ---- stages --------------------------------------------------------------- */

/* c: H2D copies of batch k on M (one per tensor); M waits on nothing. */
static void copy_batch(struct pl_ctx *x, long k, int step)
{
	struct pl_batch *b = &x->b[k];
	const uint8_t *host;

	pl_attr(k, ST_COPY, step);
	b->stage = halloc_get(&x->ha, k);
	pl_fill_host(b, b->stage->p);
	host = b->stage->p;
	if (b->stall_copy_k.duration_ns)
		hw_launch(&b->stall_copy_k, 1, b->argv, x->M);
	for (int t = 0; t < PL_NT; t++) {
		size_t n = pl_tensor_words[t] * sizeof(uint32_t);

		hw_memcpy_async(b->slot->in[t], host, n, hipMemcpyHostToDevice, x->M);
		host += n;
	}
	b->copied = true;
}

/* End of iteration: the batch's pinned blocks go back, event on M. */
static void free_staging(struct pl_ctx *x, long k, int step)
{
	struct pl_batch *b = &x->b[k];

	pl_attr(k, ST_ALLOCATOR, step);
	halloc_put(&x->ha, b->stage, x->M);
	b->stage = NULL;
}

/* b: start_sparse_data_dist of batch k. */
static void start_sparse(struct pl_ctx *x, long k, int step)
{
	struct pl_batch *b = &x->b[k];
	struct pl_a2a op = { b->slot->splits, b->slot->splits_recv, PL_NSPLIT };

	pl_attr(k, ST_SPARSE, step);
	pl_wait_stream(x, x->D, x->M, k, "M->D", step, W_B_DATA_DIST,
		       pl_dropped(x->o, W_B_DATA_DIST, k));
	b->sparse_started = true;
	hw_launch(&k_input_dist, 32, b->argv, x->D);
	b->splits_w = pl_alltoall(x, x->D, k, step, true, &op, 1);
	/* Split sizes known on the host go up with a blocking copy. */
	hw_memcpy_with_stream(b->slot->meta, b->h_meta, sizeof(b->h_meta), hipMemcpyHostToDevice,
			      x->D);
}

/* e: wait_sparse_data_dist of batch k. */
static void wait_sparse(struct pl_ctx *x, long k, int step)
{
	struct pl_batch *b = &x->b[k];
	struct pl_a2a ops[PL_NT];

	pl_attr(k, ST_SPARSE, step);
	pl_work_wait(x, b->splits_w, x->D, step);
	b->splits_w = NULL;
	/* .tolist() of the received splits: the host stalls here. */
	hw_memcpy_async(b->h_splits, b->slot->splits_recv, sizeof(b->h_splits),
			hipMemcpyDeviceToHost, x->D);
	hw_stream_sync(x->D);
	atomic_fetch_add(&b->mismatches, pl_check_splits(b));
	for (int t = 0; t < PL_NT; t++)
		ops[t] = (struct pl_a2a){ b->slot->sp[t], b->slot->recv[t], pl_tensor_words[t] };
	b->data_w = pl_alltoall(x, x->D, k, step, false, ops, PL_NT);
}

/* a: the redundant C.wait_stream(D) at the top of progress(). */
static void wait_for_batch(struct pl_ctx *x, long i)
{
	pl_attr(i, ST_FORWARD, SP_A);
	pl_wait_stream(x, x->C, x->D, i, "D->C", SP_A, W_A_COMPUTE,
		       pl_dropped(x->o, W_A_COMPUTE, i));
}

static _Noreturn void exit_now(struct pl_ctx *x, long i)
{
	pl_watchdog_freeze();
	pl_verdicts(x, true);
	fprintf(stderr, "pipeline: --exit-at %ld: exiting in the middle of forward %ld\n", i, i);
	fflush(NULL);
	_exit(3);
}

/* --torch: to.wait_stream(from) the way PyTorch makes it outside a pipeline
 * wait: an event created, recorded, waited on and destroyed. Not an edge of
 * the pipeline (the truth lists those). */
static void torch_wait_stream(hipStream_t to, hipStream_t from)
{
	hipEvent_t e;

	hw_event_create(&e, hipEventDisableTiming);
	hw_event_record(e, from, NULL);
	hw_stream_wait(to, e, NULL);
	hw_event_destroy(e);
}

#define DENSE_LAYERS 4

/* --torch: the dense part as torch.compile's reduce-overhead mode runs it:
 * eager in the first iteration (warm-up), captured once on the capture
 * stream in the second, then replayed on the compute stream every iteration.
 * Its kernels read nothing batch-specific (static buffers). */
static void dense_part(struct pl_ctx *x, long i)
{
	hipGraph_t g;

	if (i == 0) {
		for (int l = 0; l < DENSE_LAYERS; l++)
			hw_launch(&k_mlp_fwd, 16, NULL, x->C);
		return;
	}
	if (!x->dense) {
		torch_wait_stream(x->G, x->C);
		hw_capture_begin(x->G);
		for (int l = 0; l < DENSE_LAYERS; l++)
			hw_launch(&k_mlp_fwd, 16, NULL, x->G);
		hw_capture_end(x->G, &g);
		hw_graph_instantiate(&x->dense, g);
		hw_graph_destroy(g);
		torch_wait_stream(x->C, x->G);
	}
	hw_graph_launch(x->dense, x->C);
}

/* d: forward of batch i. */
static void forward(struct pl_ctx *x, long i)
{
	struct pl_batch *b = &x->b[i];
	struct pl_a2a op = { b->slot->emb, b->slot->emb_out, PL_NEMB };
	struct pl_work *w;

	pl_attr(i, ST_SPARSE, SP_D);
	pl_work_wait(x, b->data_w, x->D, SP_D);
	b->data_w = NULL;
	if (b->stall_sparse_k.duration_ns)
		hw_launch(&b->stall_sparse_k, 1, b->argv, x->D);
	if (x->o->torch)
		x->dblk[i] = halloc_get(&x->da, i); /* dist_init's output, allocated for D */
	hw_launch(&k_dist_init, 32, b->argv, x->D);
	pl_attr(i, ST_FORWARD, SP_D);
	pl_wait_stream(x, x->C, x->D, i, "D->C", SP_D, W_D_COMPUTE,
		       pl_dropped(x->o, W_D_COMPUTE, i));
	hw_launch(&k_lookup, 64, b->argv, x->C);
	b->fwd_started = true;
	if (x->o->exit_at == i)
		exit_now(x, i);
	/* Pooled embeddings go out through the collective stream and back. */
	w = pl_alltoall(x, x->C, i, SP_D, false, &op, 1);
	pl_work_wait(x, w, x->C, SP_D);
	hw_launch_gemm(&k_gemm_fwd, 64, b->argv, x->C);
	hw_launch_module(&k_triton_fwd, 32, b->argv, x->C);
	for (long l = 0; l < x->o->mlp_layers; l++)
		hw_launch(&k_mlp_fwd, 16, b->argv, x->C);
	if (x->o->torch)
		dense_part(x, i);
}

/* --torch, end of iteration i: the optimizer timed with a pair of events
 * made for the iteration, loss.item(), a metrics kernel on the main
 * thread's per-thread default stream, and the caching allocator freeing
 * dist_init's output block, used on the compute stream (record_stream). */
static void torch_step_end(struct pl_ctx *x, long i, hipEvent_t start)
{
	struct pl_batch *b = &x->b[i];
	hipEvent_t stop;
	float ms;

	hw_event_create(&stop, hipEventDefault);
	hw_event_record(stop, x->C, NULL);
	hw_memcpy_async(&b->h_loss, b->slot->loss, sizeof(b->h_loss), hipMemcpyDeviceToHost, x->C);
	hw_stream_sync(x->C);
	hw_event_elapsed(&ms, start, stop);
	hw_event_destroy(start);
	hw_event_destroy(stop);
	hw_launch(&k_mlp_bwd, 1, NULL, hipStreamPerThread);
	hw_launch_spt(&k_mlp_bwd, 1, NULL, NULL);
	hw_stream_sync_spt(NULL);
	pl_attr(i, ST_ALLOCATOR, SP_F);
	halloc_put(&x->da, x->dblk[i], x->C);
	x->dblk[i] = NULL;
}

/* f: backward on the autograd thread, then the optimizer step. */
static void backward_step(struct pl_ctx *x, long i)
{
	struct pl_batch *b = &x->b[i];
	hipEvent_t start = NULL;

	pl_autograd_run(i);
	pl_attr(i, ST_BACKWARD, SP_F);
	if (x->o->torch) {
		hw_event_create(&start, hipEventDefault);
		hw_event_record(start, x->C, NULL);
	}
	hw_launch(&k_optimizer, 16, b->argv, x->C);
	if (x->o->torch)
		torch_step_end(x, i, start);
}

static void iter_sleep(const struct pl_opts *o)
{
	struct timespec ts = { o->iter_sleep_ms / 1000, (o->iter_sleep_ms % 1000) * 1000000L };

	if (o->iter_sleep_ms)
		nanosleep(&ts, NULL);
}

/* ---- loops ---------------------------------------------------------------- */

static void run_torchrec(struct pl_ctx *x)
{
	const long B = x->o->batches, S = x->o->steps;
	const int ahead = x->o->depth; /* iterations between copy(k) and forward(k) */

	/* fill_pipeline: batch 0 copied and its sparse stage run, batch 1
	 * copied (depth 2). Batch 0's blocks are freed before batch 1's copy:
	 * that record on M ends batch 0's copy segment even when
	 * --drop b_data_dist_wait@0 removes the other one. */
	copy_batch(x, 0, SP_FILL);
	start_sparse(x, 0, SP_FILL);
	wait_sparse(x, 0, SP_FILL);
	free_staging(x, 0, SP_FILL);
	if (ahead == 2 && B > 1) {
		copy_batch(x, 1, SP_FILL);
		free_staging(x, 1, SP_FILL);
	}

	/* --steps: the dataloader holds B batches, the loop stops after S
	 * steps; what it prefetched for the steps after is never consumed */
	for (long i = 0; i < S; i++) {
		wait_for_batch(x, i);
		if (ahead == 1 && i + 1 < B)
			copy_batch(x, i + 1, SP_C);
		if (i + 1 < B)
			start_sparse(x, i + 1, SP_B);
		if (ahead == 2 && i + 2 < B)
			copy_batch(x, i + 2, SP_C);
		forward(x, i);
		if (i + 1 < B)
			wait_sparse(x, i + 1, SP_E);
		backward_step(x, i);
		x->b[i].fwd_done = true;
		if (i + ahead < B)
			free_staging(x, i + ahead, SP_F);
		iter_sleep(x->o);
	}
}

static void run_simple(struct pl_ctx *x)
{
	const long B = x->o->batches, S = x->o->steps;

	copy_batch(x, 0, SP_FILL);
	free_staging(x, 0, SP_FILL);
	for (long i = 0; i < S; i++) {
		struct pl_batch *b = &x->b[i];

		pl_attr(i, ST_FORWARD, SP_A);
		pl_wait_stream(x, x->C, x->M, i, "M->C", SP_A, W_SIMPLE_COMPUTE,
			       pl_dropped(x->o, W_SIMPLE_COMPUTE, i));
		pl_attr(i, ST_FORWARD, SP_D);
		hw_launch(&k_simple_lookup, 64, b->argv, x->C);
		b->fwd_started = true;
		if (x->o->exit_at == i)
			exit_now(x, i);
		hw_launch_gemm(&k_gemm_plain, 64, b->argv, x->C);
		hw_launch_module(&k_triton_fwd, 32, b->argv, x->C);
		for (long l = 0; l < x->o->mlp_layers; l++)
			hw_launch(&k_mlp_fwd, 16, b->argv, x->C);
		/* Prefetch the next batch while this one trains. */
		if (i + 1 < B)
			copy_batch(x, i + 1, SP_C);
		backward_step(x, i);
		/* loss.item() */
		pl_attr(i, ST_FORWARD, SP_F);
		hw_memcpy_async(&b->h_loss, b->slot->loss, sizeof(b->h_loss), hipMemcpyDeviceToHost,
				x->C);
		hw_stream_sync(x->C);
		b->fwd_done = true;
		if (i + 1 < B)
			free_staging(x, i + 1, SP_F);
		iter_sleep(x->o);
	}
}

void pl_run(struct pl_ctx *x)
{
	if (x->o->pattern == PAT_SIMPLE)
		run_simple(x);
	else
		run_torchrec(x);
}

void pl_teardown(struct pl_ctx *x)
{
	pl_attr(-1, ST_TEARDOWN, SP_NONE);
	hw_device_sync(); /* torch.cuda.synchronize() */
	pl_watchdog_stop();
	pl_autograd_stop();
	halloc_drain(&x->ha);
	if (x->o->torch)
		halloc_drain(&x->da);
	pl_attr(-1, ST_TEARDOWN, SP_NONE);
	evpool_drain(&x->ev_sync);
	evpool_drain(&x->ev_coll);
	evpool_drain(&x->ev_timed);
	evpool_drain(&x->ev_alloc);
	if (x->o->torch) {
		evpool_drain(&x->ev_dev);
		if (x->dense)
			hw_graph_exec_destroy(x->dense);
		hw_stream_destroy(x->G);
		free(x->dblk);
	}
	if (x->comm)
		hw_nccl_destroy(x->comm);
	hw_free(x->dmem);
	if (x->N)
		hw_stream_destroy(x->N);
	if (x->D)
		hw_stream_destroy(x->D);
	hw_stream_destroy(x->M);
}

/* ---- ground truth verdicts ------------------------------------------------ */

/* The audit labels of the necessary waits dropped for batch k (written
 * as "missing_edges" when j is given); returns how many. */
static int missing_edges(const struct pl_opts *o, long k, struct pl_json *j)
{
	int n = 0;

	if (j)
		pj_raw(j, ",\"missing_edges\":[");
	for (int w = 0; w < W_COUNT; w++) {
		if (!pl_waits[w].missing || !pl_dropped(o, w, k))
			continue;
		if (j)
			pj_raw(j, "%s\"%s\"", n ? "," : "", pl_waits[w].missing);
		n++;
	}
	if (j)
		pj_raw(j, "]");
	return n;
}

int pl_verdicts(struct pl_ctx *x, bool exiting)
{
	const struct pl_opts *o = x->o;
	struct pl_json j, end;
	long listed = 0, bad_batches = 0, mismatched = 0;
	/* Per-batch counts in the end record, for runs small enough to fit. */
	bool list_mism = o->batches <= 200;
	char mism[1400];
	size_t mn = 0;
	int rc = 0;

	mism[0] = 0;
	for (long k = 0; k < o->batches; k++) {
		struct pl_batch *b = &x->b[k];
		bool skipped = exiting && !b->fwd_done;
		/* prefetched for a step that never came (--steps) */
		bool unused = !exiting && k >= o->steps;
		bool checked = atomic_load(&b->checked);
		long bad = atomic_load(&b->mismatches);
		bool forced = pl_race_forced(o, k);
		int nmissing = 0;
		const char *verdict;

		if (list_mism)
			mn += (size_t)snprintf(mism + mn, sizeof(mism) - mn, "%s%s", k ? "," : "",
					       b->copied ? "" : "null");
		if (!b->copied)
			continue;
		listed++;
		/* an unused batch is untrusted when its sparse stage ran without
		 * its edge (it read the copy unordered), and otherwise skipped:
		 * nothing read it */
		if (unused)
			nmissing = b->sparse_started && pl_dropped(o, W_B_DATA_DIST, k);
		else if (!skipped)
			nmissing = missing_edges(o, k, NULL);
		skipped |= unused && !nmissing;
		verdict = skipped ? "skipped" : nmissing ? "untrusted" : "trusted";
		pj_begin(&j, "batch");
		pj_num(&j, "batch", k);
		pj_str(&j, "verdict", verdict);
		if (skipped)
			pj_raw(&j, ",\"missing_edges\":[]");
		else if (unused)
			pj_raw(&j, ",\"missing_edges\":[\"%s\"]", pl_waits[W_B_DATA_DIST].missing);
		else
			missing_edges(o, k, &j);
		pj_raw(&j, ",\"skip_reasons\":[%s]",
		       !skipped ? "" : unused ? "\"not_consumed\"" : "\"target_exited\"");
		if (!skipped && checked)
			pj_bool(&j, "content_ok", bad == 0);
		else
			pj_raw(&j, ",\"content_ok\":null");
		pj_num(&j, "mismatches", bad);
		pj_bool(&j, "race_forced", forced);
		pj_end(&j);
		if (list_mism)
			mn += (size_t)snprintf(mism + mn, sizeof(mism) - mn, "%ld", bad);
		if (bad)
			mismatched++;
		if (exiting || skipped || unused)
			continue;
		if (!checked || (bad && !nmissing) || (forced && !bad)) {
			fprintf(stderr, "pipeline: batch %ld: %s\n", k,
				!checked    ? "forward never checked its content"
				: nmissing  ? "race forced (dropped wait + stalled producer) but not observed"
					    : "content mismatch on a correctly ordered batch");
			bad_batches++;
		}
	}
	if (exiting)
		rc = 3;
	else if (bad_batches)
		rc = 1;
	pj_begin(&end, "end");
	pj_num(&end, "calls", pl_calls_logged());
	pj_num(&end, "batches", o->batches);
	pj_num(&end, "listed", listed);
	pj_str(&end, "exit", exiting ? "exit_at" : "normal");
	pj_num(&end, "exit_code", rc);
	pj_num(&end, "mismatched_batches", mismatched);
	pj_num(&end, "unexpected", bad_batches);
	pj_num(&end, "host_blocks", x->ha.fresh);
	if (list_mism)
		pj_raw(&end, ",\"mismatches\":[%s]", mism);
	else
		pj_raw(&end, ",\"mismatches\":null");
	pj_end(&end);
	if (!exiting)
		printf("pipeline: %ld batches, %ld with content mismatches, %ld unexpected\n",
		       o->batches, mismatched, bad_batches);
	return rc;
}
