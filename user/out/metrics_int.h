/* SPDX-License-Identifier: MIT */
/*
 * Internals of the metrics registry, shared by metrics.c (the registry and
 * its updates) and metrics_expo.c (the text exposition) only: the buckets,
 * the per-process entry and the registry itself. docs/metrics.md lists what
 * is rendered.
 */
#ifndef NANLOG_METRICS_INT_H
#define NANLOG_METRICS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "out/metrics.h"

#define NS_PER_S UINT64_C(1000000000)

/* Seconds buckets, 100 us .. 10 s: text as printed, bound in ns. */
struct nl_metrics_sec_bucket {
	const char *le;
	uint64_t ns;
};
#define NSEC_BUCKETS 16
extern const struct nl_metrics_sec_bucket nl_metrics_sec_buckets[];

/* Exposure buckets: forward ops enqueued before the hand-off. */
struct nl_metrics_op_bucket {
	const char *le;
	uint64_t v;
};
#define NOP_BUCKETS 9
extern const struct nl_metrics_op_bucket nl_metrics_op_buckets[];

#define NBUCKETS_MAX (NSEC_BUCKETS > NOP_BUCKETS ? NSEC_BUCKETS : NOP_BUCKETS)

/* Non-cumulative counts per bucket (the last slot is +Inf only), cumulated
 * when rendered; the sum in the unit observed (ns or ops), exact. */
struct hist {
	uint64_t b[NBUCKETS_MAX + 1];
	uint64_t count, sum;
};

struct target {
	uint32_t pid;
	bool alive;
	char container[NL_METRICS_LABEL_MAX + 1];
	char pod[NL_METRICS_LABEL_MAX + 1];
	uint64_t active_seq; /* last update: idle order for eviction */
	uint64_t exit_seq;   /* when it exited: exit order for eviction */
	uint64_t verdicts[NL_NVERDICTS];
	uint64_t skips[NL_NSKIP];
	uint64_t missing[NL_NEDGES];
	uint32_t stages_seen; /* 1u << enum nl_stage_id with work observed */
	struct hist host[NL_NSTAGES], done[NL_NSTAGES], overlap, exposure[2];
	uint64_t last_batch_wall_ns; /* CLOCK_REALTIME when its last audit arrived; 0 none */
};

struct nl_metrics {
	pthread_mutex_t lock;
	char version[64];
	struct target *t[NL_METRICS_MAX_TARGETS];
	unsigned nt;
	uint64_t seq;
	uint64_t evicted;
	struct nl_metrics_counters c;
	uint64_t lost_total; /* max of the BPF counters' sum and the engine's count */
};

#endif
