/* SPDX-License-Identifier: MIT */
/*
 * Internals of the pairing engine, shared by engine*.c only. docs/engine.md
 * describes the model; the comments here say what each field holds.
 */
#ifndef NANLOG_ENGINE_INT_H
#define NANLOG_ENGINE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "engine/engine.h"

#define NL_NO_TOKEN INT64_C(-1)
#define NL_RING 64           /* recent ops remembered per stream, for reports */
#define NL_MAX_THREADS 64    /* threads remembered per process (LRU) */
#define NL_FWD_HISTORY 16    /* forward windows remembered for overlap */
#define NL_DEPTH_MAX 8       /* depth histogram buckets (last one: >= 7) */
#define NL_LEARN_EDGE_WORDS 4 /* 64-bit words of a learning edge bitset */
#define NL_MAX_STREAMS_CAP (NL_LEARN_EDGE_WORDS * 64)
#define NL_LOST_MARK 0xffffu /* api value of a "records lost" marker in the learning buffer */
#define NL_MAX_GRAPHS 32     /* graphs and graph execs remembered per process (LRU) */
#define NL_PIPE_SHIFT 40     /* a token is pipeline << NL_PIPE_SHIFT | batch number */
#define NL_MAX_COPY_KEYS 4   /* copy streams learning can give the first pipeline */

/* A token's pipeline, and its batch number within it. */
static inline int nl_tok_pipe(int64_t tok)
{
	return (int)(tok >> NL_PIPE_SHIFT);
}

static inline int64_t nl_tok_seq(int64_t tok)
{
	return tok & ((INT64_C(1) << NL_PIPE_SHIFT) - 1);
}

/* Streams are keyed by handle; per-thread default streams by (0x2, tid). */
struct nl_skey {
	uint64_t handle;
	uint32_t tid;
};

static inline bool nl_skey_eq(const struct nl_skey *a, const struct nl_skey *b)
{
	return a->handle == b->handle && a->tid == b->tid;
}

/* The consumers a batch's watch (nl_batch.watch) looks at: the sparse
 * stream that reads the copy, and compute. */
enum nl_consumer {
	NL_CONSUMER_SPARSE,
	NL_CONSUMER_COMPUTE,
	NL_NCONSUMERS
};

/* One op as the engine remembers it (for hand-offs and reports). */
struct nl_seen_op {
	bool valid;
	int slot;
	uint32_t clock;
	uint16_t api;
	uint32_t tid;
	uint64_t ts;
	uint64_t sig;  /* what it ran: api with kernel or copy kind */
};

struct nl_ring_op {
	uint32_t clock;
	uint16_t api;
	uint32_t tid;
	int64_t token;
	uint64_t ts;
	bool work;
};

struct nl_stream {
	bool used, destroyed, blocking, capturing;
	bool history_known;   /* creation seen, or the null/per-thread stream */
	bool creation_seen;   /* its creation call was seen (at creation_ts) */
	uint64_t creation_ts;
	uint8_t role;
	int8_t pipe;          /* pipeline of a copy or sparse stream; -1 none */
	int capture_origin;   /* slot whose hipStreamBeginCapture this stream joined */
	/* origin of a capture: its id, and whether a launch of the graph can be
	 * one op of its launch stream (only this stream's ops, no edge across
	 * the capture's boundary) */
	uint32_t cap_id;
	bool cap_ok;
	struct nl_skey key;
	uint32_t *vc;         /* vector clock; vc[own slot] = clock of its last op */
	int64_t token;        /* current batch token */
	int64_t carry;        /* null stream: the newest token its implicit joins brought */
	/* copy stream: an open segment, its thread and that thread's compute work then */
	bool seg_open;
	uint32_t seg_tid;
	uint64_t seg_mark;
	/* work ops of the open segment; the size its segments closed by a
	 * record had, and how many in a row had it (docs/engine.md, "Merged
	 * segments") */
	uint32_t seg_work, seg_k, seg_k_n;
	/* sparse stream: compute took the hand-off of `handed_tok` from it (a
	 * wait on an event it recorded carrying that token), and no wait on it
	 * has brought a token since; `adopted`: its token came by that rule,
	 * not by an edge (docs/engine.md, "Hand-off") */
	bool handed, adopted;
	bool handed_in;       /* handed to a sparse stream, not compute: any wait ends it */
	bool fed_by_copy;     /* waited on a copy stream's event (D, not N) */
	/* sparse stream fed by the copy stream again after compute took its
	 * batch, with no newer batch copied: its work until a batch reaches it
	 * is placed nowhere (late_ops) rather than charged to the batch taken */
	bool orphan;
	int64_t handed_tok;
	uint32_t wait_clock;  /* clock of its last wait */
	/* a stream with no role that copies host-to-device and whose events
	 * another stream waited on: a producer the audit cannot place (a
	 * second pipeline, a second copy stream), counted once */
	uint64_t h2d;
	bool feeds, unplaced;
	uint64_t joins;       /* how often vc took another stream's clock */
	uint64_t ops, lru, last_join_ts;
	uint32_t gate;        /* clock of its last op that can keep later ones pending (work, wait) */
	uint32_t nring;       /* ops pushed to ring (total) */
	struct nl_ring_op ring[NL_RING];
};

struct nl_event {
	bool used, created, recorded, capture;
	uint32_t cap_id;      /* capture of the last record (with capture) */
	bool adopted;         /* the token it captured came by the hand-off rule */
	uint64_t handle;
	uint32_t gen;         /* a create of a handle still known starts a new one */
	int slot;             /* stream of the last record */
	uint32_t clock;       /* the record op's clock there */
	uint32_t gate;        /* that stream's gate when it was recorded */
	int64_t token;        /* token captured by the record */
	uint64_t rec_ts, lru;
	uint32_t *vc;         /* vector clock captured by the record */
};

/* A graph (hipStreamEndCapture) or graph exec (hipGraphInstantiate*). */
struct nl_graph {
	bool used, is_exec;
	bool ok;              /* its capture was seen and a launch is one op */
	uint32_t cap_id;
	uint64_t handle, lru;
};

struct nl_thread {
	bool used;
	uint32_t tid;
	uint64_t lru;
	uint64_t compute_work; /* work ops this thread put on the compute stream */
	/* last op RCCL issued on this thread (coll_depth > 0), for the outer
	 * collective record that arrives after it */
	bool inner;
	int inner_slot;
	uint32_t inner_clock;
	int64_t inner_token;
	uint64_t inner_ts;
};

/* One stream's share of one stage of one batch. */
struct nl_batch_stream {
	int slot;
	uint8_t stage;
	uint64_t ops;
	uint32_t last_clock;   /* any op */
	uint64_t last_ts;
	struct nl_seen_op first_op;
	bool has_work;
	struct nl_seen_op last_work;
	/* upstream frontier (ops not ordered after any forward op of the batch) */
	bool has_up, covered, pending;
	struct nl_seen_op last_up, pending_f;
	uint32_t pending_seen; /* the consumer's clock of this stream */
};

struct nl_stage_acc {
	uint64_t ops, work, bytes, first_ts, last_ts;
	uint64_t first_sig[2];   /* the stage's first two work ops (valid up to work) */
	bool first_named[2];     /* ...and whether each named its kernel (a launch the
				  * kernel counted in a run arrives without it) */
	uint32_t first_tid;      /* the thread of the first */
	uint32_t colls, ntids;
	uint32_t tids[8];
	bool tids_full;
	struct nl_completion c;
};

struct nl_batch {
	bool used, closed, emitted_early;
	int64_t token;
	uint32_t skip;
	uint64_t first_ts, close_ts;
	int64_t copy_tick, fwd_tick, linger_until;
	bool copy_closed, reached_sparse, fwd_started;
	bool merged;           /* cut from a merged copy segment, not the last part:
				* it had no record of its own (its edge dropped) */
	/* a sparse work op of the batch not ordered after its copy ops (only
	 * possible for ops taken over by the hand-off rule) */
	struct {
		bool valid;
		int bs;              /* index of the copy stream's nl_batch_stream */
		uint32_t seen;       /* the consumer's clock of that stream */
		struct nl_seen_op consumer;
	} cs;
	uint32_t fwd_first_clock;
	uint64_t fwd_work;
	struct nl_seen_op fwd_last;
	uint32_t *fwd_vc;      /* compute vector clock at the last forward op */
	bool fwd_vc_valid;
	uint64_t fwd_vc_joins; /* compute stream's joins when fwd_vc was copied */
	int nbs;
	struct nl_batch_stream bs[NL_AUDIT_MAX_STREAMS];
	struct nl_stage_acc st[NL_NSTAGES];
	struct {
		bool found;
		struct nl_seen_op op;
		uint64_t exposure;
	} handoff[2];
	/* first consumer-role op after the producers' last op not ordered after
	 * them, per consumer (enum nl_consumer). repeat:
	 * such ops started that stage's work again (its first two work ops, in
	 * order, same thread) inside an older token's window: the iteration went
	 * on without this batch's token. */
	struct nl_watch {
		bool armed, valid, repeat;
		bool blind;          /* a consumer op in another pipeline's window went unwatched */
		uint64_t armed_ts;   /* call being applied when last armed (later: re-cut) */
		int prog;            /* how much of the restart was seen */
		int64_t prog_token;  /* in which window */
		struct nl_seen_op consumer, producer, restart;
	} watch[NL_NCONSUMERS];
	bool post_confirmed;
	uint64_t post_at;
};

struct nl_lstream {
	bool used;
	struct nl_skey key;
	uint64_t launches, h2d, work, waited;
	uint64_t switches;    /* waits on it right after a wait on another copying stream */
	/* its hand-offs (waits on it after it copied again: a second consumer
	 * waiting on the same copies is the same hand-off), those right after
	 * another copying stream's, and its h2d count at the last one */
	uint64_t turns, turn_switches, turn_h2d;
	uint64_t out[NL_LEARN_EDGE_WORDS], in[NL_LEARN_EDGE_WORDS];
};

/* Role learning: statistics over the records held back. */
struct nl_learn {
	struct nl_lstream *s;
	uint32_t ns, scap;
	uint64_t *eh;         /* event handle hash: handle+1, 0 empty */
	int *es;              /* learning stream index of its last record, -1 none */
	uint32_t ecap, eused;
	uint32_t since_check;
	int last_h2d_src;     /* source of the last wait on a copying stream, -1 none */
};

/* One pipeline: its batch sequence (tokens pipe << NL_PIPE_SHIFT | n, the
 * batches in flight at n % bcap) and what the summary counts of it. Its
 * streams point at it (stream pipe); compute is shared. */
struct nl_pipe {
	bool used, has_sparse;
	bool seen_copy_record;
	bool had_copy;        /* a stream has been its copy stream */
	/* the first two kernels its forward windows began with, and how many
	 * windows in a row began so (a step's signature) */
	uint64_t step_sig[2];
	uint32_t step_n;
	bool step_varied;     /* two windows began differently */
	struct nl_batch *b;
	uint32_t *bvc;
	int64_t next_token, oldest; /* full tokens */
	int64_t ticks, fwd_max;
	struct nl_verdict_counts verdicts;
	uint64_t stage_batches[NL_NSTAGES];
};

struct nl_proc {
	uint32_t pid;
	bool announced, mid_run, exited;
	uint64_t attach_ts;
	uint64_t call_ts;      /* entry time of the call being applied */
	uint32_t skip_all;     /* reasons every batch of the process gets */
	/* learning: records held back until the roles are known */
	bool learning;
	struct nl_call *lbuf;
	uint32_t nlbuf;
	uint64_t lfirst_ts;
	struct nl_learn learn;
	/* roles by stream key (the first pipeline's, as learning or the options
	 * gave them); keys_final: learning is over, a stream created from now on
	 * starts without a role whatever its handle */
	bool has_copy, has_compute, has_sparse, keys_final;
	bool discovering;      /* roles learned, not given: pipelines found by edges */
	struct nl_skey copy_keys[NL_MAX_COPY_KEYS], compute_key;
	int ncopy_keys;
	struct nl_skey sparse_keys[NL_ENGINE_MAX_SPARSE];
	int nsparse;
	int compute_slot, null_slot;
	/* pipelines: [0] the first, learned; later ones found by their edges */
	struct nl_pipe pipes[NL_ENGINE_MAX_PIPES];
	int npipes;
	/* streams: slot = vector clock column */
	uint32_t w;
	struct nl_stream *s;
	uint32_t *svc;
	int cache_slot, nblocking;
	/* events: open addressing on handle -> index + 1 */
	struct nl_event *ev;
	uint32_t *evc, *eh;
	uint32_t ecap, hcap, nev;
	uint32_t *efree, nfree;  /* slots of destroyed events, for reuse */
	uint32_t ehand;          /* where eviction looks next */
	/* graphs: captures seen, and what they made */
	struct nl_graph graphs[NL_MAX_GRAPHS];
	uint32_t next_cap_id;
	/* threads */
	struct nl_thread th[NL_MAX_THREADS];
	int th_cache;
	uint32_t bcap;         /* batches in flight per pipeline */
	/* forward windows, all pipelines */
	uint64_t first_fwd_ts, last_fwd_ts, nfwd;
	uint64_t depth_hist[NL_DEPTH_MAX];
	struct {
		int64_t token;
		uint64_t start, end;
	} fwd_hist[NL_FWD_HISTORY];
	uint32_t nfwd_hist;
	uint64_t loss_until;   /* batches starting before this lost records */
	/* counters */
	uint64_t lru, last_rec_ts, records, batches;
	uint64_t edges, implicit_edges, late_ops;
	uint64_t unplaced_streams;
	uint64_t evicted_streams, evicted_events, evicted_batches;
	/* its emitted batches, for the summary: by verdict (per pipeline in
	 * pipes[]) */
	struct nl_verdict_counts verdicts;
	uint32_t *tmp_vc;
};

struct nl_engine {
	struct nl_engine_opts o;
	struct nl_sink sink;    /* what the engine emits to: engine.c's tally, then out */
	struct nl_sink out;     /* the caller's sink */
	bool probe_missing;     /* a probe that matters could not attach somewhere */
	struct nl_proc **procs;
	int last_proc;
	uint32_t skip_all_new;  /* probe_missing(pid 0): every process */
	uint64_t last_rec_ts, loss_until;
	struct nl_summary sum;  /* totals; arrays below */
	uint64_t depth_hist[NL_DEPTH_MAX];
	uint64_t tick_ns_sum, tick_ns_n;
	struct nl_stream_summary *ss;
	uint32_t nss, ss_cap;
	struct nl_proc_summary *ps;
	uint32_t nps, ps_cap;
	char **missing_names;
	bool finished;
};

static inline uint32_t nl_hash64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}

static inline uint32_t nl_pow2_at_least(uint32_t n)
{
	uint32_t v = 1;

	while (v < n)
		v <<= 1;
	return v;
}

/* A host-to-device copy, or one of default kind (unified addressing decides). */
static inline bool nl_call_is_h2d(const struct nl_call *c)
{
	return (c->kind == NL_K_COPY || c->kind == NL_K_COPY_SYNC) && (c->fields & NL_F_KIND) &&
	       (c->kindarg == 1 || c->kindarg == 4);
}

/* The oldest position of a stream's recent-op ring still held. */
static inline uint32_t nl_ring_start(const struct nl_stream *s)
{
	return s->nring > NL_RING ? s->nring - NL_RING : 0;
}

/* A ring entry as an op reference on stream slot. */
static inline struct nl_seen_op nl_ring_seen_op(int slot, const struct nl_ring_op *r)
{
	return (struct nl_seen_op){ true, slot, r->clock, r->api, r->tid, r->ts, 0 };
}

/* ---- vector clocks -------------------------------------------------------- */

static inline void nl_vc_join(uint32_t *dst, const uint32_t *src, uint32_t w)
{
	for (uint32_t i = 0; i < w; i++)
		if (src[i] > dst[i])
			dst[i] = src[i];
}

/* Whether src adds anything to dst. */
static inline bool nl_vc_news(const uint32_t *dst, const uint32_t *src, uint32_t w)
{
	for (uint32_t i = 0; i < w; i++)
		if (src[i] > dst[i])
			return true;
	return false;
}

/* ---- engine_state.c -------------------------------------------------------- */

struct nl_proc *nl_proc_new(const struct nl_engine *e, uint32_t pid);
void nl_proc_free(struct nl_proc *p);
/* The stream a call acts on (normalized: 0x1 -> 0, per-thread streams by tid). */
struct nl_skey nl_call_skey(const struct nl_call *c);
bool nl_key_is_null(const struct nl_skey *k);
/* Find (create: also insert, evicting when full) a stream; -1 when impossible. */
int nl_stream_slot(struct nl_engine *e, struct nl_proc *p, const struct nl_skey *k, bool create);
void nl_stream_reset(struct nl_proc *p, int slot, const struct nl_skey *k, bool history_known,
		     bool blocking);
struct nl_event *nl_event_find(struct nl_proc *p, uint64_t handle);
struct nl_event *nl_event_get(struct nl_engine *e, struct nl_proc *p, uint64_t handle);
/* hipEventDestroy: the handle is free; a later create starts afresh. */
void nl_event_forget(struct nl_proc *p, struct nl_event *ev);
struct nl_thread *nl_thread_get(struct nl_proc *p, uint32_t tid);
void nl_ring_push(struct nl_stream *s, uint32_t clock, const struct nl_call *c, int64_t token,
		  bool work);
/* The first op of token `token` on the stream with clock > after (NULL: not remembered). */
const struct nl_ring_op *nl_ring_first_after(const struct nl_stream *s, uint32_t after,
					     int64_t token, bool work);
int nl_role_of_key(const struct nl_proc *p, const struct nl_skey *k);
/* Roles changed: give every known stream its role again. */
void nl_streams_refresh_roles(struct nl_proc *p);
/* A pipeline for a copy stream found after learning: one whose copy
 * streams are all destroyed, else a new one; -1 when none is left. */
int nl_pipe_open(struct nl_proc *p);

/* ---- engine_ops.c ---------------------------------------------------------- */

/* Apply one call to the process state (roles known). */
void nl_apply(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c);
/* A stream's token; on the compute stream a later token closes batches.
 * The copy stream's tokens are only minted, never taken from others. */
void nl_set_token(struct nl_engine *e, struct nl_proc *p, int slot, int64_t tok, uint64_t ts);
/* The copy stream's open segment ends. */
void nl_close_segment(struct nl_proc *p, struct nl_stream *s);

/* ---- engine_calls.c -------------------------------------------------------- */

/* Called from nl_apply for the calls that are not ops on a stream. */

/* hipEventQuery, hipStreamQuery: done (0) or not (600), as evidence. */
void nl_apply_query(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c);
/* Event, stream and device synchronization, hipEventElapsedTime. */
void nl_apply_sync(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c);
/* Creates and destroys of streams, events and graphs; capture begins. */
void nl_apply_lifecycle(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c);
/* Everything enqueued on stream slot before call c is done at its return. */
void nl_stream_done(struct nl_proc *p, int slot, const struct nl_call *c);

/* ---- engine_cadence.c ------------------------------------------------------ */

/* Called from engine_ops.c when a wait or a launch may move a stream to
 * another batch. */

/* The batch a wait of stream slot that brings token tok gives compute: an
 * older one it covers that is due first, else tok. */
int64_t nl_cadence(struct nl_proc *p, int slot, int64_t tok);
/* The same at a sparse stream fed by the copy stream `from`. */
int64_t nl_sparse_due(struct nl_proc *p, int slot, const struct nl_stream *from, int64_t tok);
/* A wait of compute on the copy stream of a pipeline with a sparse stage:
 * it orders, but does not move compute to the copy stream's newer batch. */
bool nl_over_copy(const struct nl_proc *p, int slot, const struct nl_stream *from,
		  const struct nl_event *ev);
/* A launch on compute that begins a new step may take the next batch. */
void nl_step_begins(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c);
/* Every copy op of batch b is ordered before stream s's clock. */
bool nl_copy_covered(const struct nl_batch *b, const struct nl_stream *s);

/* ---- engine_graph.c -------------------------------------------------------- */

/* Called from engine_ops.c, whose ops a capture takes in or ends. */

/* The origin slot of the open capture with this id, or -1. */
int nl_capture_open(const struct nl_proc *p, uint32_t cap_id);
/* The capture a capturing stream belongs to: its origin, or NULL when the
 * origin's slot was reused meanwhile. */
struct nl_stream *nl_capture_origin(struct nl_proc *p, const struct nl_stream *s);
/* An op on a capturing stream: it runs at each launch, not now. */
void nl_capture_note(struct nl_proc *p, int slot);
/* hipStreamEndCapture, failed or not, ends the capture of every stream in it. */
void nl_capture_end(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c);
/* The graph (is_exec: the exec) with this handle; NULL when not remembered. */
struct nl_graph *nl_graph_find(struct nl_proc *p, uint64_t handle, bool is_exec);
/* A record made in a capture, waited on outside it: launches of what the
 * capture made cannot be placed. */
void nl_graph_taint(struct nl_proc *p, uint32_t cap_id);
/* hipGraphInstantiate* and the destroys of graphs and execs. */
void nl_graph_lifecycle(struct nl_proc *p, const struct nl_call *c);

/* ---- engine_handoff.c ------------------------------------------------------ */

/* Book a remembered op (ring entry r of stream slot) again, on batch tok. */
void nl_account_ring(struct nl_engine *e, struct nl_proc *p, int slot, struct nl_ring_op *r,
		     int64_t tok);
#define NL_ANY_TOKEN INT64_MIN /* nl_retoken_events: whatever token they carry */
/* Events recorded on slot at a clock in (after, upto] that carry from_tok
 * (or any, NL_ANY_TOKEN) carry tok from now on. */
void nl_retoken_events(struct nl_proc *p, int slot, uint32_t after, uint32_t upto,
		       int64_t from_tok, int64_t tok, bool adopted);
/* Compute takes the batch of event ev's record from a sparse stream: work
 * that stream enqueued after the record goes to a newer batch copied by then. */
void nl_take_after_record(struct nl_engine *e, struct nl_proc *p, const struct nl_event *ev);
/* Work on sparse stream s after compute took its batch (s->handed). */
void nl_take_over(struct nl_proc *p, struct nl_stream *s);
/* Work on sparse stream s that no batch ever reached. */
void nl_take_first(struct nl_proc *p, struct nl_stream *s);

/* ---- engine_batch.c -------------------------------------------------------- */

struct nl_batch *nl_batch_of(struct nl_proc *p, int64_t token);
/* The batches in flight of one pipeline, and of all of them. */
#define NL_FOR_PIPE_BATCHES(p, q, b)                                        \
	for (int64_t t_ = (q)->oldest; t_ < (q)->next_token; t_++)          \
		if (((b) = nl_batch_of((p), t_)) != NULL)

#define NL_FOR_BATCHES(p, b)                                                \
	for (int q_ = 0; q_ < (p)->npipes; q_++)                            \
		NL_FOR_PIPE_BATCHES(p, &(p)->pipes[q_], b)

/* Whether a stream of stage st of the batch has upstream ops (up) or
 * work: kernels, copies or collectives (!up). */
bool nl_stage_has(const struct nl_batch *b, int st, bool up);
/* A skip reason (NL_SKIP_*) as a bit of a batch's skip mask. */
#define NL_SKIP_BIT(r) (1u << (r))
/* The stage a stream of this role works for; -1 none. */
int nl_stage_of_role(int role);
/* The pipeline of a token or stream (NULL: none). */
struct nl_pipe *nl_pipe_of_token(struct nl_proc *p, int64_t token);
struct nl_pipe *nl_pipe_of_stream(struct nl_proc *p, const struct nl_stream *s);
/* A new token on the copy stream; its batch. */
void nl_mint(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s, uint64_t ts);
/* The compute stream moves from its token to a later one `to`: close the
 * batches before it, with the compute clock as it was before the join. */
void nl_compute_advance(struct nl_engine *e, struct nl_proc *p, int64_t to, uint64_t ts);
void nl_batch_skip(struct nl_proc *p, int64_t token, int reason);
/* Records lost between w0 (last record processed) and ts. */
void nl_apply_lost(struct nl_engine *e, struct nl_proc *p, uint64_t w0, uint64_t ts);
void nl_skip_open(struct nl_proc *p, int reason);
/* Completion evidence. vc: what the proof covers (NULL: ops enqueued before
 * ts_limit, all streams); only_slot >= 0 limits it to that stream. */
void nl_evidence_done(struct nl_proc *p, const uint32_t *vc, int only_slot, uint64_t ts_limit,
		      uint64_t at, uint16_t api);
/* Something at or after op `gate` of the stream was not done at `at`. */
void nl_evidence_not_done(struct nl_proc *p, int slot, uint32_t gate, uint64_t at);
void nl_evidence_ms(struct nl_proc *p, const struct nl_event *start, const struct nl_event *stop,
		    double ms);
/* Emit batches that are final. */
void nl_emit_ready(struct nl_engine *e, struct nl_proc *p);
/* End of the process (exited) or of tracing (!exited): emit everything. */
void nl_drain(struct nl_engine *e, struct nl_proc *p, uint64_t ts, bool exited);
/* A stream slot is reused: batches with ops there lose evidence. */
void nl_batches_lose_slot(struct nl_proc *p, int slot);

/* ---- engine_account.c ------------------------------------------------------ */

/* Book one op (already applied to the clocks) on its batch. */
void nl_account(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c,
		uint32_t clock, int64_t token, bool work, bool is_coll);
/* Batch b's ops on stream slot end at clock `cut`: its later ones were
 * handed to the next batch. */
void nl_batch_cut(struct nl_proc *p, struct nl_batch *b, int slot, uint32_t cut, uint64_t moved);

/* ---- engine_verdict.c ------------------------------------------------------ */

/* The audit of batch b, final: its verdict and missing edges, and all else
 * the audit reports (engine_batch.c emits it). */
void nl_build_audit(const struct nl_engine *e, const struct nl_proc *p,
		    const struct nl_batch *b, struct nl_batch_audit *a);

/* ---- engine_summary.c ------------------------------------------------------ */

/* Process i is done (exited, or tracing ended): its streams and counts join
 * the engine's summary, and it is freed (engine.c). */
void nl_proc_retire(struct nl_engine *e, int i);
/* The summary of the retired processes and the live ones as they are now,
 * to the caller's sink (engine.c: report and finish). */
void nl_emit_summary(struct nl_engine *e);

/* ---- engine_roles.c -------------------------------------------------------- */

/* 0, or -ENOMEM (l is then empty, safe to free again). */
int nl_learn_init(struct nl_learn *l, uint32_t nstreams, uint32_t nevents);
void nl_learn_free(struct nl_learn *l);
/* Note one held-back call; true when the roles can be decided. */
bool nl_learn_note(const struct nl_engine *e, struct nl_proc *p, const struct nl_call *c);
/* Decide the roles from what was learned (and the overrides); false when no
 * copy stream was found. */
bool nl_learn_decide(const struct nl_engine *e, struct nl_proc *p);

#endif /* NANLOG_ENGINE_INT_H */
