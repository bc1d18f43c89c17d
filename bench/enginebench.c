// SPDX-License-Identifier: MIT
/*
 * The pure engine figure of `make bench` (docs/performance.md): a recording's
 * records decoded into memory a chunk at a time (not timed), then fed to the
 * audit engine (timed), with a sink that only counts batches. Replay through
 * the tool adds reading, checksums and the audit writer; this is what is left
 * when a live run's ring buffer hands over the records.
 *
 *   enginebench FILE.rec
 *
 * The time is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so another
 * process on the same core does not count. Built with --wrap for malloc,
 * calloc and realloc, it also counts the allocations made while feeding.
 * Launches counted in the kernel are repeated from their runs (user/record/runs.h)
 * while decoding, as the tool does: a record here is a call the engine takes.
 * Prints "records N batches M engine_ns T ns_per_record X records_per_s Y
 * allocs_per_record Z".
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "record/decode.h"
#include "engine/engine.h"
#include "record/recording.h"
#include "record/runs.h"

#define CHUNK 65536

static uint64_t nallocs;
static bool counting;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n)
{
	nallocs += counting;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	nallocs += counting;
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	nallocs += counting;
	return __real_realloc(p, n);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Calls decoded, fed to the engine a chunk at a time: only the feeding is timed. */
struct feeder {
	struct nl_engine *e;
	struct nl_call *calls;
	int n;
	uint64_t spent, records;
};

static void feed_chunk(struct feeder *f)
{
	uint64_t t0 = cpu_ns();

	counting = true;
	for (int i = 0; i < f->n; i++)
		nl_engine_feed(f->e, &f->calls[i]);
	counting = false;
	f->spent += cpu_ns() - t0;
	f->records += (uint64_t)f->n;
	f->n = 0;
}

static int feed_push(void *ctx, const struct nl_call *c)
{
	struct feeder *f = ctx;

	f->calls[f->n++] = *c;
	if (f->n == CHUNK)
		feed_chunk(f);
	return 0;
}

static void on_batch(void *ctx, const struct nl_batch_audit *a)
{
	(void)a;
	(*(uint64_t *)ctx)++;
}

static void on_summary(void *ctx, const struct nl_summary *s)
{
	(void)ctx;
	(void)s;
}

int main(int argc, char **argv)
{
	struct nl_recording_reader *r = NULL;
	struct nl_recording_item *it = malloc(sizeof(*it));
	struct nl_call *calls = malloc(CHUNK * sizeof(*calls));
	struct nl_engine_opts eo = { 0 };
	uint64_t batches = 0, last_ts = 0;
	struct nl_runs runs = { 0 }; /* the recording is of one process */
	struct feeder f = { 0 };
	struct nl_call c;
	struct nl_sink sink = { .ctx = &batches, .batch = on_batch, .summary = on_summary };
	struct nl_engine *e;
	char err[512];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: enginebench FILE.rec\n");
		return 2;
	}
	if (!it || !calls || !(e = nl_engine_new(&eo, &sink)))
		return 1;
	if (nl_recording_open(&r, argv[1], 1, err, sizeof(err))) {
		fprintf(stderr, "enginebench: %s\n", err);
		return 1;
	}
	f.e = e;
	f.calls = calls;
	for (;;) {
		rc = nl_recording_next(r, it, err, sizeof(err));
		if (rc == NL_RECORDING_ITEM && it->kind == NL_RI_RECORD &&
		    nl_decode(it->rec.data.bytes, it->rec.size, &c) == 0) {
			uint64_t counted;

			nl_runs_feed(&runs, &c, feed_push, NULL, &f, &counted);
			if (c.ts_ns > last_ts)
				last_ts = c.ts_ns;
			continue;
		}
		if (f.n)
			feed_chunk(&f); /* what came before this item, first */
		if (rc != NL_RECORDING_ITEM)
			break;
		if (it->kind == NL_RI_TARGET)
			nl_engine_attach(e, it->target.pid, it->target.ts_ns, it->target.mid_run);
		else if (it->kind == NL_RI_EXIT)
			nl_engine_exit(e, it->exit.pid, it->exit.ts_ns);
		else if (it->kind == NL_RI_LOST)
			nl_engine_lost(e, it->lost.pid, it->lost.count, it->lost.ts_ns);
	}
	if (rc < 0) {
		fprintf(stderr, "enginebench: %s\n", err);
		return 1;
	}
	nl_engine_finish(e, last_ts);
	nl_engine_free(e);
	nl_recording_free(r);
	printf("records %llu batches %llu engine_ns %llu ns_per_record %.1f records_per_s %.0f "
	       "allocs_per_record %.6f\n",
	       (unsigned long long)f.records, (unsigned long long)batches,
	       (unsigned long long)f.spent, f.records ? (double)f.spent / (double)f.records : 0.0,
	       f.spent ? (double)f.records * 1e9 / (double)f.spent : 0.0,
	       f.records ? (double)nallocs / (double)f.records : 0.0);
	free(calls);
	free(it);
	return 0;
}
