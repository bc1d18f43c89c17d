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
 * Prints "records N batches M engine_ns T ns_per_record X records_per_s Y
 * allocs_per_record Z".
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "decode.h"
#include "engine.h"
#include "recording.h"

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
	uint64_t batches = 0, records = 0, spent = 0, last_ts = 0;
	struct nl_sink sink = { .ctx = &batches, .batch = on_batch, .summary = on_summary };
	struct nl_engine *e;
	char err[512];
	int rc, n = 0;

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
	for (;;) {
		rc = nl_recording_next(r, it, err, sizeof(err));
		if (rc == NL_RECORDING_ITEM && it->kind == NL_RI_RECORD &&
		    nl_decode(it->rec.data.bytes, it->rec.size, &calls[n]) == 0) {
			if (calls[n].ts_ns > last_ts)
				last_ts = calls[n].ts_ns;
			n++;
		}
		if (n == CHUNK || (rc != NL_RECORDING_ITEM && n) ||
		    (rc == NL_RECORDING_ITEM && it->kind != NL_RI_RECORD && n)) {
			uint64_t t0 = cpu_ns();

			counting = true;
			for (int i = 0; i < n; i++)
				nl_engine_feed(e, &calls[i]);
			counting = false;
			spent += cpu_ns() - t0;
			records += (uint64_t)n;
			n = 0;
		}
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
	       (unsigned long long)records, (unsigned long long)batches, (unsigned long long)spent,
	       records ? (double)spent / (double)records : 0.0,
	       spent ? (double)records * 1e9 / (double)spent : 0.0,
	       records ? (double)nallocs / (double)records : 0.0);
	free(calls);
	free(it);
	return 0;
}
