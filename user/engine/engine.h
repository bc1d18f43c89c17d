/* SPDX-License-Identifier: MIT */
/*
 * The pairing engine: decoded HIP/RCCL calls in, per-batch stage audits and a
 * run summary out. Pure C11, no libbpf, no global mutable state; every
 * function returns 0 or -errno where it can fail. docs/engine.md explains
 * how it works, docs/output.md the records the writers print.
 *
 * Lifecycle: nl_engine_new -> (nl_engine_attach | nl_engine_feed |
 * nl_engine_lost | nl_engine_probe_missing | nl_engine_exit)* ->
 * [nl_engine_set_run_info] -> nl_engine_finish -> nl_engine_free.
 * Batch audits reach the sink as soon as they are final; the summary at
 * nl_engine_finish (and on request with nl_engine_report). Not thread-safe:
 * one thread drives an engine.
 */
#ifndef NANLOG_ENGINE_H
#define NANLOG_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "record/call.h"


enum nl_role { NL_ROLE_OTHER = 0, NL_ROLE_COPY, NL_ROLE_SPARSE, NL_ROLE_COMPUTE };
enum nl_stage_id { NL_STAGE_COPY = 0, NL_STAGE_SPARSE, NL_STAGE_FORWARD, NL_NSTAGES };
enum nl_verdict { NL_VERDICT_TRUSTED = 0, NL_VERDICT_UNTRUSTED, NL_VERDICT_SKIPPED, NL_NVERDICTS };

/* Why a batch was skipped; a batch carries a mask of (1u << reason). */
enum nl_skip_reason {
	NL_SKIP_LOST_RECORDS = 0,
	NL_SKIP_PROBE_MISSING,
	NL_SKIP_ATTACHED_MID_BATCH,
	NL_SKIP_TARGET_EXITED,
	NL_SKIP_DETACHED,
	NL_SKIP_GRAPH_CAPTURE,
	NL_SKIP_UNKNOWN_HANDLE,
	NL_SKIP_EVICTED,
	NL_SKIP_PRETRACE_STREAM,
	NL_SKIP_ATTACH_OFFSET,
	NL_SKIP_NOT_CONSUMED,  /* no step took it: the job stopped first (not invalid) */
	NL_NSKIP
};

/* The hand-off an untrusted batch lacks; a mask of (1u << edge). */
enum nl_edge { NL_EDGE_COPY_SPARSE = 0, NL_EDGE_SPARSE_FORWARD, NL_EDGE_COPY_FORWARD, NL_NEDGES };

/* Why a run's evidence is not valid; nl_summary.invalid_mask is a mask of
 * (1u << reason). docs/output.md says what each one counts. */
enum nl_invalid_reason {
	NL_INVALID_NO_BATCHES = 0,  /* no batch was audited at all */
	NL_INVALID_UNTRUSTED,       /* some batch is untrusted */
	NL_INVALID_SKIPPED,         /* some batch was skipped */
	NL_INVALID_MISSING_STAGE,   /* a process lacks a stage it has (missing_stages) */
	NL_INVALID_LOST_RECORDS,    /* ring-buffer or return-probe stash records lost */
	NL_INVALID_BAD_RECORDS,     /* records that did not decode */
	NL_INVALID_UNTRACKED,       /* calls of processes beyond the process cap */
	NL_INVALID_EVICTED,         /* state pushed out by a cap */
	NL_INVALID_PROBE_MISSING,   /* a probe that matters could not attach */
	NL_INVALID_LATE_OPS,        /* ops that came after their batch's verdict */
	NL_INVALID_UNPLACED,        /* a copy-like stream outside the audited pipelines */
	NL_INVALID_IN_FLIGHT,       /* attached mid-run: work of batches begun before, not audited */
	NL_NINVALID
};

const char *nl_role_name(int role);        /* "other" "copy" "sparse" "compute" */
const char *nl_stage_name(int stage);      /* "copy" "sparse" "forward" */
const char *nl_verdict_name(int verdict);  /* "trusted" "untrusted" "skipped" */
const char *nl_skip_name(int reason);      /* "lost_records" ... */
const char *nl_edge_name(int edge);        /* "copy->sparse" ... */
const char *nl_invalid_name(int reason);   /* "no_batches" "untrusted_batches" ... */

#define NL_ENGINE_MAX_SPARSE 8
#define NL_ENGINE_MAX_PIPES 8 /* pipelines per process (docs/engine.md, "Pipelines") */

struct nl_engine_opts {
	/* Role overrides (stream handle values as the job passes them). */
	bool has_copy_stream, has_compute_stream;
	uint64_t copy_stream, compute_stream;
	bool has_sparse_streams; /* with nsparse == 0: the job has no sparse stage */
	unsigned nsparse;
	uint64_t sparse_streams[NL_ENGINE_MAX_SPARSE];
	bool post_step;          /* judge completion at the end of each batch's tick */
	/* Caps per process; 0 = default. */
	uint32_t max_streams;    /* 64, at most 256 */
	uint32_t max_events;     /* 4096 */
	uint32_t max_batches_in_flight; /* 32 */
	uint32_t max_procs;      /* processes tracked at once: 64 */
	uint32_t linger_ticks;   /* ticks a closed batch waits for completion evidence: 2 */
	uint32_t learn_records;  /* records held back while roles are learned: 16384 */
	uint32_t learn_handoffs; /* copy-stream hand-offs that end learning: 8 */
	uint64_t learn_ns;       /* host time after which learning gives up: 10 s */
	bool no_copy_split;      /* do not split copy segments on compute work (docs/engine.md) */
	bool unannounced_from_start; /* a pid first seen in feed was traced from its start */
	/* Streams whose creation was not seen are NonBlocking (PyTorch's side
	 * streams); without it, a verdict that rests on that is skipped
	 * pretrace_stream (docs/engine.md, "Streams created before tracing") */
	bool unseen_nonblocking;
	/* Attached mid-run, a pipeline whose copy stream was not seen created
	 * accuses no batch: how many of its batches were in flight at the
	 * attach is not in the calls, and a verdict resting on it is skipped
	 * attach_offset (docs/engine.md, "What the audit cannot decide") */
	bool strict_attach;
};

struct nl_op_ref {
	bool valid;
	uint64_t stream;     /* handle as the job passed it (0x2 for per-thread streams) */
	uint32_t stream_tid; /* per-thread default stream: its thread; else 0 */
	uint8_t role;        /* enum nl_role of that stream */
	uint16_t api;        /* enum nl_api_id */
	uint32_t tid;
	uint64_t ts_ns;
};

struct nl_completion {
	uint64_t done_by_ns;     /* earliest host time the job learned it was done; 0 = unknown */
	uint16_t done_api;       /* the call whose result proved it */
	uint64_t not_done_at_ns; /* latest time the job saw it not done; 0 = never */
	double gpu_ms;           /* hipEventElapsedTime over its events */
	uint32_t gpu_ms_n;       /* how many intervals; 0 = not measured */
};

#define NL_AUDIT_MAX_STREAMS 8
#define NL_AUDIT_MAX_UNORDERED 4

struct nl_stage_audit {
	bool present;            /* the process has this stage (sparse: it has a sparse stage) */
	uint64_t ops, bytes;
	uint32_t threads, collectives;
	uint64_t first_ns, last_ns; /* host enqueue window, CLOCK_MONOTONIC; 0 without ops */
	uint32_t nstreams;
	struct {
		uint64_t handle;
		uint32_t tid;
	} streams[NL_AUDIT_MAX_STREAMS];
	struct nl_completion completion;
};

struct nl_handoff {
	bool found;
	struct nl_op_ref op; /* first forward op ordered after all of the stage's ops */
	uint64_t exposure;   /* forward work ops of the batch enqueued before it */
};

struct nl_unordered {
	int edge;            /* enum nl_edge */
	bool never_reached;  /* the batch's token never arrived at the consumer */
	struct nl_op_ref producer, consumer;
};

struct nl_batch_audit {
	uint32_t pid;
	uint32_t pipeline;       /* 0, 1 ... per process, in the order found */
	uint64_t batch;          /* 0, 1, 2 ... per pipeline (from attach) */
	int verdict;             /* enum nl_verdict */
	uint32_t skip_mask;      /* 1u << enum nl_skip_reason */
	uint32_t missing_mask;   /* 1u << enum nl_edge */
	bool forward_adopted;    /* compute took the batch without an edge: forward not shown by one */
	int64_t tick;            /* tick in which forward ran; -1 unknown */
	int depth;               /* ticks between copy and forward; -1 unknown */
	struct nl_stage_audit stage[NL_NSTAGES];
	uint64_t window_end_ns;  /* forward window end: first later-token compute op (or exit) */
	struct nl_handoff handoff[2]; /* [NL_STAGE_COPY], [NL_STAGE_SPARSE] */
	bool overlap_known;
	uint64_t overlap_ns;
	uint32_t nunordered;
	struct nl_unordered unordered[NL_AUDIT_MAX_UNORDERED];
	bool post_step_enabled, post_step_confirmed;
	uint64_t post_step_at_ns, tick_end_ns;
	/* Set by the tool, not the engine: who the process is in a cluster ("" or NULL: unknown). */
	const char *container_id, *pod_uid;
};

struct nl_stream_summary {
	uint32_t pid;
	uint64_t handle;
	uint32_t tid;      /* per-thread default stream: its thread; else 0 */
	int role;          /* enum nl_role */
	int pipeline;      /* of a copy or sparse stream; -1 none */
	uint64_t ops;
	bool blocking;
	bool created;      /* its creation was seen (flags known) */
};

/* Batches by verdict: of a run, a process, a pipeline. */
struct nl_verdict_counts {
	uint64_t batches, trusted, untrusted, skipped;
};

struct nl_proc_summary {
	uint32_t pid;
	struct nl_verdict_counts n;
	uint64_t ticks, tick_ns;
	int depth;         /* -1 unknown */
	bool has_copy, has_sparse, mid_run;
	uint32_t missing_stages; /* 1u << enum nl_stage_id: stages it has that no batch showed */
	uint32_t npipes;
	struct {
		struct nl_verdict_counts n;
		uint32_t copy_streams, sparse_streams;
		bool has_sparse;
	} pipes[NL_ENGINE_MAX_PIPES];
};

/* What the loader knows and the engine does not; see nl_engine_set_run_info. */
struct nl_run_info {
	uint32_t probes_attached, retprobes_attached;
	uint32_t nprobes_missing;
	const char *const *probes_missing; /* symbol names; copied */
	uint64_t lost_ringbuf, lost_stash, nested_folded, bad_records;
	uint64_t attach_ns, duration_ns;
	double cpu_ms;
	uint64_t wall_realtime_ns, wall_monotonic_ns; /* one wall-clock anchor per run */
};

struct nl_summary {
	/* The one line a user checks: every batch trusted, every stage seen,
	 * nothing lost (docs/output.md). */
	bool evidence_valid;
	uint32_t invalid_mask;    /* 1u << enum nl_invalid_reason; 0 exactly when valid */
	uint32_t missing_stages;  /* 1u << enum nl_stage_id, over every process */
	uint64_t batches, trusted, untrusted, skipped;
	/* of those skipped, the ones skipped only as not consumed: no step
	 * took them, so they make the evidence no less valid */
	uint64_t unconsumed;
	uint64_t skip_reasons[NL_NSKIP];
	uint64_t missing_edges[NL_NEDGES];
	uint64_t records, ignored_records, untracked_records, lost_records;
	uint64_t pipeline_ticks, tick_ns;
	int depth;         /* most common depth; -1 unknown */
	uint64_t edges, implicit_edges, late_ops;
	uint64_t unplaced_streams; /* streams with H2D copies and no role (docs/output.md) */
	/* attached mid-run: stage ops of batches begun before the attach
	 * (docs/output.md) */
	uint64_t in_flight_ops;
	uint64_t evicted_streams, evicted_events, evicted_batches;
	uint32_t nstreams;
	const struct nl_stream_summary *streams;
	uint32_t nprocs;
	const struct nl_proc_summary *procs;
	bool has_run_info;
	struct nl_run_info run;
};

struct nl_sink {
	void *ctx;
	void (*batch)(void *ctx, const struct nl_batch_audit *a);
	void (*summary)(void *ctx, const struct nl_summary *s);
};

struct nl_engine;

struct nl_engine *nl_engine_new(const struct nl_engine_opts *o, const struct nl_sink *sink);
void nl_engine_free(struct nl_engine *e); /* accepts NULL */

/* One decoded call, in ring-buffer order. 0, -EINVAL (api/kind out of range),
 * -ENOMEM, -ENOSPC (pid beyond max_procs: the record is counted, not used),
 * or -ESHUTDOWN after nl_engine_finish. */
int nl_engine_feed(struct nl_engine *e, const struct nl_call *c);
/* Tracing of pid started at ts; mid_run: the process was already running. */
void nl_engine_attach(struct nl_engine *e, uint32_t pid, uint64_t ts_ns, bool mid_run);
/* count records lost, noticed at ts (pid 0: unknown pid, every process).
 * The process's batches not emitted yet, and all its later ones, are
 * skipped lost_records; with pid 0, a process first seen later has its
 * batches that begin by ts skipped too. */
void nl_engine_lost(struct nl_engine *e, uint32_t pid, uint64_t count, uint64_t ts_ns);
/* A probe that matters (nl_engine_api_matters) could not attach for pid
 * (0: every process): that process's batches are skipped "probe_missing".
 * Call it only for symbols the library exports. */
void nl_engine_probe_missing(struct nl_engine *e, uint32_t pid, int api);
bool nl_engine_api_matters(int api);
/* The process exited: its in-flight batches are final. */
void nl_engine_exit(struct nl_engine *e, uint32_t pid, uint64_t ts_ns);
/* Loader facts for the summary (copied). */
void nl_engine_set_run_info(struct nl_engine *e, const struct nl_run_info *ri);
/* Summary of what was emitted so far, without ending anything. */
void nl_engine_report(struct nl_engine *e);
/* Tracing ended: in-flight batches are emitted skipped "detached", then the summary. */
void nl_engine_finish(struct nl_engine *e, uint64_t ts_ns);

/* ---- writers (audit_json.c, audit_table.c) -------------------------------- */

void nl_audit_json_batch(FILE *f, const struct nl_batch_audit *a);
void nl_audit_json_summary(FILE *f, const struct nl_summary *s);
/* A sink printing JSON Lines to f. */
struct nl_sink nl_audit_json_sink(FILE *f);

/* The names of the bits set in mask (name(0) .. name(n - 1)), comma-separated. */
void nl_mask_names(char *buf, size_t len, uint32_t mask, int n, const char *(*name)(int));

#define NL_TABLE_WIDTH 80
/* A text line made to fit width columns: trailing blanks dropped, a longer
 * line cut with '+' in its last column. Returns its new length. */
size_t nl_fit_width(char *line, size_t width);
struct nl_audit_table {
	FILE *f;
	bool header_done;
};
void nl_audit_table_header(FILE *f);
void nl_audit_table_batch(FILE *f, const struct nl_batch_audit *a);
void nl_audit_table_summary(FILE *f, const struct nl_summary *s);
/* A sink printing the table (header before the first row) to t->f. */
struct nl_sink nl_audit_table_sink(struct nl_audit_table *t);

#endif /* NANLOG_ENGINE_H */
