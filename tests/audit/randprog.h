/* SPDX-License-Identifier: MIT */
/*
 * Random pipeline programs and their truth (docs/engine.md, "Model-based
 * random testing"). A seed gives a spec (streams, depth, issue order, dropped
 * and added waits, noise, threads); the spec gives the call stream as the
 * ring buffer delivers it (struct nl_rec_call, in ring order) and, apart
 * from the engine, the truth per batch: a happens-before model of its own
 * (per-stream FIFO, event record/wait, null-stream implicit sync) over the
 * ops the generator knows to be copy(T), sparse(T) and forward(T).
 *
 * Deterministic per seed and spec; no global state.
 */
#ifndef NANLOG_RANDPROG_H
#define NANLOG_RANDPROG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"
#include "nanlog_rec.h"

#define RP_MAX_BATCHES 32 /* of all pipelines */
#define RP_MAX_DROPS 3
#define RP_MAX_STREAMS 16
#define RP_MAX_PIPES 2
#define RP_DRAW_BATCHES 12 /* one pipeline: 4 .. this many */

/* The program's layout beyond one pipeline with one copy stream. */
enum rp_shape {
	RP_S_SINGLE = 0, /* one pipeline, one copy stream */
	RP_S_ALTCOPY,    /* one pipeline, batch i copied on M[i % 2] */
	RP_S_TWO,        /* a second (eval) pipeline alternating with the first on compute */
	RP_S_RECREATE,   /* the same, its streams destroyed and created again between phases */
	RP_NSHAPES
};

/* What a wait is for; a drop names one (purpose, batch). */
enum rp_purpose {
	RP_W_CS = 0,  /* data-dist waits on copy(T): copy->sparse */
	RP_W_SF,      /* compute takes T from data-dist (or from copy without sparse) */
	RP_W_DN,      /* collective stream waits on data-dist before T's all-to-all */
	RP_W_ND,      /* data-dist waits on the all-to-all's end before dist_init(T) */
	RP_W_EARLY,   /* TorchRec's step a: compute waits on data-dist at the tick's start */
	RP_W_BUF,     /* copy stream waits on compute before copying T (buffer reuse) */
	RP_W_ADDED,   /* compute also waits on the copy stream when it takes T */
	RP_W_BWD_IN,  /* backward stream waits on compute (backward on its own stream) */
	RP_W_BWD_OUT, /* compute waits on the backward stream before the next forward */
	RP_NPURPOSES
};

enum rp_compute { RP_C_NULL = 0, RP_C_PERTHREAD, RP_C_CREATED };

/* Items of one tick i, in the program's issue order. */
enum rp_item {
	RP_I_PARTB = 0, /* split sparse: dist_init(i) (waits the all-to-all's end) */
	RP_I_TAKE,      /* compute waits on the producer of batch i */
	RP_I_FWD,       /* forward(i) kernels */
	RP_I_BWD,       /* backward(i), optimizer */
	RP_I_COPY,      /* copy(i + depth) */
	RP_I_SPARSE,    /* sparse(i + lag), or its first part when split */
	RP_NITEMS
};

struct rp_drop {
	uint8_t purpose; /* enum rp_purpose */
	int8_t batch;
	bool with_record; /* the record goes too (a whole wait_stream missing) */
};

struct rp_spec {
	uint64_t seed;       /* details: kernel counts, times, handles */
	int nb;              /* batches */
	int depth;           /* ticks between copy(T) and forward(T) */
	int lag;             /* sparse(T) is issued in tick T - lag, 1 <= lag <= depth */
	bool sparse;         /* a data-dist stream */
	bool coll;           /* a collective stream (with sparse) */
	bool split;          /* sparse in two parts, the second in tick T (with coll) */
	int compute;         /* enum rp_compute */
	bool spt;            /* per-thread compute through the _spt entry points, stream 0 */
	bool fresh;          /* edges as wait_stream: an event created per wait */
	int slots;           /* reused events per edge kind */
	bool loader;         /* copies from a loader thread */
	bool autograd;       /* backward from another thread */
	bool early;          /* TorchRec's step-a wait (fresh only) */
	bool buf_wait;       /* added: copy stream waits on compute */
	bool added_cm;       /* added: compute waits on the copy stream too */
	bool noise_pool;     /* allocator events recorded and queried, never waited */
	bool noise_watchdog; /* a thread querying the collectives' end events */
	bool noise_item;     /* loss.item(): D2H copy on compute + hipStreamSynchronize */
	bool blocking;       /* producer streams created blocking (flags 0) */
	bool pretrace;       /* producer streams created before tracing (no create calls) */
	/* drawn apart (randprog.c), so that the programs of every other seed
	 * stay as they were: backward on compute begins with forward's first
	 * kernel (a model whose step launches that kernel again) */
	bool reuse;
	/* the loader's copies of a tick land inside the data-dist stream's
	 * stage of that tick, after its first launch (an asynchronous loader
	 * runs whenever it likes); drawn from a stream of its own too */
	bool midcopy;
	/* one pipeline only: the loop stops after nb - tail steps, as a step
	 * limit over a longer dataloader does; its last `tail` batches (at
	 * most depth) are copied, and their sparse stage begun where it is
	 * due, but never taken or run forward (drawn apart too) */
	int tail;
	uint8_t order[RP_NITEMS]; /* the items of a tick in issue order */
	int ncopies;         /* copies per batch (constant, as a batch's tensors are) */
	int ndrops;
	struct rp_drop drops[RP_MAX_DROPS]; /* batch: in compute order over all pipelines */
	/* drawn apart (randprog.c), RP_S_SINGLE for most seeds: nothing below */
	int shape;           /* enum rp_shape */
	int nb1;             /* RP_S_TWO, RP_S_RECREATE: pipeline 1's batches, within nb */
	int run0, run1;      /* batches of pipeline 0, then 1, per turn on compute */
	int lead0;           /* more batches in pipeline 0's first turn (role learning done) */
	int depth1, lag1;    /* pipeline 1's depth and sparse lag (no collective stream) */
	int ncopies1;        /* pipeline 1's copies per batch (0: pipeline 0's): its
				* batches need not hold the tensors the first's do */
	/* RP_S_RECREATE: the allocator hands out the handle freed last first
	 * (glibc's): a turn's copy and data-dist streams, destroyed in that
	 * order, come back on each other's handles; otherwise destroyed the
	 * other way round, each on its own */
	bool lifo;
};

/* Why a program is outside what the audit can decide from calls alone. */
enum rp_undecidable {
	RP_U_NONE = 0,
	RP_U_PRETRACE_NULL,     /* a producer stream created before tracing, compute on the
				 * null stream: whether the null stream orders it (a
				 * blocking stream) is not in the calls, and some batch's
				 * truth depends on it (rp_prog.unsure) */
	RP_U_FEW_HANDOFFS,      /* fewer copy-stream hand-offs than role learning needs */
};

/* One call in ring order, with what the generator knows about it. */
struct rp_call {
	struct nl_rec_call rec;
	int8_t sid;      /* logical stream it enqueues on; -1: not a stream op */
	int8_t stage;    /* enum nl_stage_id, -1: none */
	int8_t batch;
	bool reads;      /* a consumer op that reads its batch's producers' output */
	uint64_t end_ns; /* a live run's: the call was made in [rec.ts_ns, end_ns]; 0: at rec.ts_ns */
};

struct rp_truth {
	int verdict;       /* NL_VERDICT_TRUSTED / UNTRUSTED */
	uint32_t all_mask; /* 1u << edge for every edge with an unordered read */
	int first;         /* the named edge (-1 when trusted) */
	/* prefetched, never consumed (rp_spec.tail): skipped not_consumed
	 * (verdict skipped) unless its sparse stage read its copy unordered */
	bool unconsumed;
};

struct rp_prog {
	struct rp_spec spec;
	uint32_t pid;
	uint64_t start_ns, end_ns;
	int n, cap;
	struct rp_call *calls;
	int nstreams;
	bool stream_blocking[RP_MAX_STREAMS];
	bool stream_null[RP_MAX_STREAMS];
	uint64_t stream_handle[RP_MAX_STREAMS];
	uint32_t stream_owner[RP_MAX_STREAMS]; /* per-thread stream: its thread */
	char stream_name[RP_MAX_STREAMS];      /* M A D N C B, pipeline 1's m d */
	int8_t stream_pipe[RP_MAX_STREAMS];    /* its pipeline; -1: compute, backward */
	bool oversync;     /* a wait covered a newer batch's producer work */
	int handoffs;      /* waits on copy-stream events that were kept */
	int undecidable;   /* enum rp_undecidable */
	struct rp_truth truth[RP_MAX_BATCHES];
	/* RP_U_PRETRACE_NULL: the batches whose truth is another had the
	 * pretrace streams been created the other way (blocking or not), the
	 * calls being the same; the others are decided by the calls */
	bool unsure[RP_MAX_BATCHES];
	/* and the truth of every batch that other way (other_known: the calls
	 * were the same); a verdict right both ways is decided by the calls */
	struct rp_truth other[RP_MAX_BATCHES];
	bool other_known;
	/* batch T (compute order) is batch local[T] of pipeline pipe[T] */
	int8_t pipe[RP_MAX_BATCHES], local[RP_MAX_BATCHES];
};

/* The next number of a splitmix64 sequence whose state is *s. */
uint64_t rp_rnd(uint64_t *s);
/* A spec drawn from seed (the whole range of what the generator makes). */
void rp_spec_random(struct rp_spec *s, uint64_t seed);
/* The program of a spec, and its truth. 0 or -ENOMEM. */
int rp_build(struct rp_prog *p, const struct rp_spec *s);
void rp_free(struct rp_prog *p);

/* One line describing a spec (for findings and fixtures). */
void rp_spec_describe(const struct rp_spec *s, char *buf, size_t len);
const char *rp_purpose_name(int purpose);
const char *rp_undecidable_name(int u);
const char *rp_shape_name(int shape);
/* The batches of a spec in compute order: their pipeline and number in it. */
void rp_schedule(const struct rp_spec *s, int8_t *pipe, int8_t *local);

/* ---- running it through the engine and comparing ------------------------ */

#define RP_CLASS_LEN 96
#define RP_MAX_DIFFS 8

struct rp_result {
	int naudits;
	bool have[RP_MAX_BATCHES];
	struct {
		int verdict;
		uint32_t skip_mask, missing_mask;
		uint32_t pipeline;  /* the engine's pipeline and batch number in it */
		uint64_t number;
	} got[RP_MAX_BATCHES];
	int extra;          /* audits that match no batch of the program */
	/* batches never consumed that were skipped target_exited, not
	 * not_consumed: right, but they make the evidence invalid */
	int unconsumed_exited;
	int extra_untrusted; /* ...of them judged untrusted: an accusation too */
	bool merged[RP_MAX_BATCHES]; /* its copies inside another batch's copy window */
	int numbering;      /* audits whose engine batch number is not the program's */
	char roles[32];     /* streams whose learned role is wrong, as "C=sparse D=compute" */
	bool summary;       /* the summary came */
	bool evidence_valid; /* and said the run's evidence is valid */
	uint32_t invalid_mask; /* and why not (enum nl_invalid_reason) */
	/* attached mid-run (rp_run_attached_at): batches begun before the
	 * attach are not compared, nor roles and numbers */
	bool mid;
	bool excused[RP_MAX_BATCHES];
	/* ...and those all of whose reading ops (the consumer ops a fault
	 * is in) came before it: a fault there is not in anything the tool
	 * saw (not counted valid-despite-fault) */
	bool unseen[RP_MAX_BATCHES];
	int ndiffs;
	char diffs[RP_MAX_DIFFS][RP_CLASS_LEN]; /* class of each batch disagreement */
	int diff_batch[RP_MAX_DIFFS];
};

/* Feed the program to a fresh engine (as --replay would) and compare with
 * the truth. 0 or -errno. */
int rp_run(const struct rp_prog *p, struct rp_result *r);
/* The same, the engine told the process was already running when tracing
 * began (a tool attached by pid) when mid_run. */
int rp_run_attached(const struct rp_prog *p, bool mid_run, struct rp_result *r);

/* The same, the tool attached by pid (mid-run) at call `at` of the program:
 * the calls before it never seen; the batches begun before it (any op of
 * theirs before `at`) are not compared. */
int rp_run_attached_at(const struct rp_prog *p, int at, struct rp_result *r);
/* The call of p the tool attaches at for seed (fuzz_audit -M): 1..n-1. */
int rp_attach_point(const struct rp_prog *p, uint64_t seed);

/* The same comparison for audits made elsewhere (a live run's, read back):
 * a zeroed result, each batch audit and the summary, then the comparison. */
void rp_result_batch(const struct rp_prog *p, struct rp_result *r, const struct nl_batch_audit *a);
void rp_result_summary(const struct rp_prog *p, struct rp_result *r, const struct nl_summary *s);
void rp_result_compare(const struct rp_prog *p, struct rp_result *r);

/* A live run's audits (the lines tests/audit/audit_flat.jq makes of
 * nanlog-bpf's output; "-": stdin) against the truth in build/audit/randrun's
 * file run_path, judged as above, beside the same program in process,
 * attached as the live run was (from its start, or mid-run when randrun was
 * held at its gate for an attach by pid); a report to out. 0: the same
 * disagreements (class and batch) both ways, 1: not, or -errno for a file
 * that cannot be read. */
int rp_check_live(const char *run_path, const char *audit_path, FILE *out);

/* Feed launches as the probes send them by default: a launch that follows a
 * launch of the same thread, of the same API on the same stream, with no
 * other call of the process between, is counted in that run and arrives
 * without its kernel address (user/record/runs.h), unless the thread's row
 * of launches keeps it named (include/nanlog_rec.h, step starts stay named).
 * Off: as --every-launch sends them. */
extern bool rp_counted_launches;
/* Whether rp_spec_random draws programs that stop before their prefetched
 * batches (rp_spec.tail); true unless a test pins the programs its seeds
 * gave before tails were drawn */
extern bool rp_tails;
/* The batches of the spec's program that no step consumes (rp_spec.tail
 * as the program has it: at most its depth, four steps left at least) */
int rp_tail_of(const struct rp_spec *s);
/* The engine as --strict-attach runs it (nl_engine_opts.strict_attach). */
extern bool rp_strict_attach;
/* Where rp_run writes the engine's batch audits as JSON lines (NULL: not). */
extern FILE *rp_audit_json;
/* out[i]: call i of the program is a launch the probes count (as above). */
void rp_counted_calls(const struct rp_prog *p, bool *out);

/* Records lost, as a ring buffer too small loses them: the program fed as
 * rp_run feeds it, with a window of its records not delivered (all of them,
 * or about half, as when only one CPU's are lost), and each loss told the
 * way nanlog-bpf tells it (nl_call_loss_ts): by the next record delivered,
 * or the one after it (a CPU that read the count just before the loss). The
 * window is drawn from loss_seed. The engine's audits are counted, not compared with
 * the truth: records lost can hide a batch whole and renumber the rest. */
struct rp_loss {
	int from, len, told_at; /* the window, and the record that tells it */
	uint64_t lost;           /* records not delivered */
	int audits, untrusted, skipped_lost;
	uint32_t untrusted_batch; /* the first batch untrusted (engine's number) */
};
int rp_run_lossy(const struct rp_prog *p, uint64_t loss_seed, struct rp_loss *out);

/* Write the program as a --record file, and the truth next to it. 0 or -errno. */
int rp_write_recording(const struct rp_prog *p, const char *path);
/* from_seed: the seed the program was drawn from (before shrinking). */
int rp_write_truth(const struct rp_prog *p, const struct rp_result *r, uint64_t from_seed,
		   FILE *f);

/* The program's calls, one a line, with the streams named and what each op is. */
void rp_print(const struct rp_prog *p, const struct rp_result *r, FILE *f);

/* Shrink a disagreeing spec while the first disagreement class stays. */
void rp_minimize(struct rp_spec *s, const char *cls);

#endif
