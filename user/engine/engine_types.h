/* SPDX-License-Identifier: MIT */
/*
 * The pairing engine's state, shared by engine*.c only (through
 * engine_int.h). docs/engine.md describes the model; the comments here say
 * what each field holds.
 */
#ifndef NANLOG_ENGINE_TYPES_H
#define NANLOG_ENGINE_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "engine/engine.h"
#include "nanlog_rec.h"

#define NL_NO_TOKEN INT64_C(-1)
#define NL_RING 64           /* recent ops remembered per stream, for reports */
#define NL_LONE_HIST 8       /* lone restarts kept per pipeline */
#define NL_AGAIN_MAX 4       /* restarts kept per pipeline for its next batch */
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
#define NL_SEG_SURE 2 /* segments of one size in a row before merged ones are cut */
#define NL_LAG_SURE 2 /* takes in a row with one lag before the cadence trusts it */

struct nl_skey {
	uint64_t handle;
	uint32_t tid;
};

/* Streams created on a handle so far, per handle (the first NL_HGEN_MAX
 * handles created; others stay at 0): a stream's generation. In a process
 * attached mid-run, learning and the engine each count the creates they
 * see, from the process's first call, so that a role learned on a stream
 * goes to the streams on its handle that act as it did, not to every
 * stream created on the handle before or after it inside what learning
 * held back (nl_role_of_key). Traced from the start nothing is counted:
 * every stream on a learned handle takes its role, as before (docs/engine.md,
 * "Roles"). */
#define NL_HGEN_MAX 64
#define NL_GENS_ALL UINT64_MAX /* a role given by the options: every generation */

/* Generation gen is in the set `gens` (bit gen; past 64, only in all). */
static inline bool nl_gen_in(uint64_t gens, uint32_t gen)
{
	return gens == NL_GENS_ALL || (gen < 64 && (gens >> gen & 1));
}

struct nl_hgen {
	uint64_t handle[NL_HGEN_MAX];
	uint32_t n[NL_HGEN_MAX];
	uint32_t used;
};

/* The index of handle in g (-1: not counted). */
static inline int nl_hgen_find(const struct nl_hgen *g, uint64_t handle)
{
	for (uint32_t i = 0; i < g->used; i++)
		if (g->handle[i] == handle)
			return (int)i;
	return -1;
}

static inline uint32_t nl_hgen_get(const struct nl_hgen *g, uint64_t handle)
{
	int i = nl_hgen_find(g, handle);

	return i < 0 ? 0 : g->n[i];
}

static inline void nl_hgen_bump(struct nl_hgen *g, uint64_t handle)
{
	int i = nl_hgen_find(g, handle);

	if (i >= 0) {
		g->n[i]++;
	} else if (g->used < NL_HGEN_MAX) {
		g->handle[g->used] = handle;
		g->n[g->used++] = 1;
	}
}

static inline bool nl_skey_eq(const struct nl_skey *a, const struct nl_skey *b)
{
	return a->handle == b->handle && a->tid == b->tid;
}

/* The key of a stream named by its handle alone (a created stream's, an
 * option's): 0x1 (hipStreamLegacy) is the null stream. */
static inline struct nl_skey nl_handle_skey(uint64_t handle)
{
	return (struct nl_skey){ handle == 1 ? 0 : handle, 0 };
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
	uint32_t nseq; /* the null stream's ops enqueued before it */
};

struct nl_ring_op {
	uint32_t clock;
	uint32_t nseq; /* the null stream's ops enqueued before it */
	uint16_t api;
	uint32_t tid;
	int64_t token;
	uint64_t ts;
	bool work;
	/* a sparse stream's launch of the kernel its batch's sparse stage began
	 * with, again: a new batch's stage begun, not more of this one */
	bool again;
	/* a data-dist stream's work after compute's step-a wait on its record,
	 * the batch's stage going on (dist_init), not a new one begun */
	bool goes_on;
	/* its batch came by an implicit join with the null stream at this op,
	 * as by a wait right before it */
	bool joined;
	/* a record of an event another sparse stream waited on before (a
	 * data-dist stream's hand-off event, recorded again) */
	bool handoff;
	/* a wait: the stream and clock of the record it waited on (-1: none) */
	int16_t ev_slot;
	uint32_t ev_clock;
};

struct nl_stream {
	bool used, destroyed, blocking, capturing;
	/* its first work was given the oldest batch (nl_take_first): this one */
	int64_t first_taken;
	bool history_known;   /* creation seen, or the null/per-thread stream */
	bool creation_seen;   /* its creation call was seen (at creation_ts) */
	uint32_t gen;         /* of its handle (struct nl_hgen) */
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
	int64_t implicit_tok; /* blocking sparse stream: a token its record's join brought, for its next work;
			       * null-stream compute: a join's token, for its next op that may begin a step */
	int64_t order_tok;    /* null-stream compute: a join's token that only ordered it (join_only_orders),
			       * for a later launch that begins the step again */
	/* copy stream: an open segment, its thread and that thread's compute work then */
	bool seg_open;
	uint32_t seg_tid;
	uint64_t seg_mark;
	/* work ops of the open segment; the size its segments closed by a
	 * record had, and how many in a row had it (docs/engine.md, "Merged
	 * segments") */
	uint32_t seg_work, seg_k, seg_k_n;
	/* seg_k is the size of the first segment seen after an attach in the
	 * middle of a run (attached_mid_batch): maybe only a batch's tail */
	bool seg_k_partial;
	/* a fill of guess_n work ops, from batch guess_tok on, cut by
	 * guess_k, the size another copy stream was sure of (0: none); its
	 * next segment confirms or refutes it (recut_fill). guess_refuted: a
	 * size of its own refuted one: no other's is borrowed again */
	int64_t guess_tok;
	uint32_t guess_k, guess_n;
	bool guess_refuted;
	bool copy_waited;     /* a stream waited on one of its records */
	bool waited_on;       /* ...in any role */
	bool joined_now;      /* the op being applied took its batch by an implicit join */
	/* sparse stream: compute took the hand-off of `handed_tok` from it (a
	 * wait on an event it recorded carrying that token), and no wait on it
	 * has brought a token since; `adopted`: its token came by that rule,
	 * not by an edge (docs/engine.md, "Hand-off") */
	bool handed, adopted;
	bool handed_in;       /* handed to a sparse stream, not compute: any wait ends it */
	bool fed_by_copy;     /* waited on a copy stream's event (D, not N) */
	/* a sparse stream waited on its last record (D handing its work to N) */
	bool rec_fed;
	/* sparse stream fed by the copy stream again after compute took its
	 * batch, with no newer batch copied: its work until a batch reaches it
	 * is placed nowhere (late_ops) rather than charged to the batch taken */
	bool orphan;
	int64_t handed_tok;
	/* sparse stream: the batch its last named launch ran for (hits_tok,
	 * where hits_valid), the kernel the stream's work of that batch began
	 * with (hits_sig) and how many times it launched it (hits_n); and the
	 * fewest times any older batch's work launched its first kernel
	 * (stage_hits, 0: none yet): TorchRec's collective stream runs two
	 * all-to-alls a batch, the splits' and the data's */
	bool hits_valid;
	int64_t hits_tok;
	uint64_t hits_sig;
	uint32_t hits_n, stage_hits;
	/* sparse stream: its work from clock hold_clock on (0: none) stayed
	 * on batch hold_tok only because its record before it, of event
	 * hold_ev (generation hold_gen), may have been an allocator's; a wait
	 * on that event shows it an edge's, and the work goes to hold_next
	 * (nl_hold_resolved). Any wait of the stream ends the hold. */
	uint32_t hold_clock, hold_gen;
	uint64_t hold_ev;
	int64_t hold_tok, hold_next;
	uint32_t wait_clock;  /* clock of its last wait */
	/* its first work op came while it had no role: the clock then is kept
	 * (nl_stream_first_vc), to judge that work if it gets one */
	bool first_vc;
	/* a stream with no role that copies host-to-device and whose events
	 * another stream waited on: a producer the audit cannot place (a
	 * second pipeline, a second copy stream), counted once */
	uint64_t h2d;
	uint64_t launches; /* its kernel launches (named or counted in runs) */
	bool feeds, unplaced;
	bool feeds_compute;   /* compute waited on it while it had no role */
	/* created again, without a role, on the handle of a destroyed copy
	 * stream (NL_ROLE_COPY: its H2D copies, until an edge gives it a role,
	 * are a producer's not placed) or data-dist stream fed by a copy
	 * stream (NL_ROLE_SPARSE) of pipeline was_pipe; NL_ROLE_OTHER: neither */
	uint8_t was_role;
	int8_t was_pipe;
	uint32_t was_seg_k;   /* the batch size (copy ops) that copy stream was sure of, or 0 */
	uint64_t was_created_ts; /* when that stream was created (0: not seen) */
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
	/* records of this event since its creation, and whether any stream
	 * waited on it: one recorded again and never waited on is an
	 * allocator's (record_stream), only queried */
	uint32_t records;
	bool waited;
	/* the clock of its record before the last on the same stream, where
	 * no stream waited on it in between (0: none); and whether a stream
	 * waited on it since its last record */
	uint32_t prev_clock;
	bool rec_waited;
	uint32_t unwaited; /* records in a row on that stream, none waited on */
	/* another sparse stream than the recording one waited on it: a
	 * data-dist stream's hand-off to its collective stream */
	bool sparse_waited;
	uint64_t rec_ts, lru;
	/* the recording stream, at the last record: its creation (0: not
	 * seen), and its producer role (NL_ROLE_COPY, NL_ROLE_SPARSE fed by a
	 * copy stream, else NL_ROLE_OTHER), pipeline and sure batch size */
	uint64_t rec_created_ts;
	uint8_t rec_role;
	int8_t rec_pipe;
	uint32_t rec_seg_k;
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
	uint64_t stage_work; /* work ops this thread put on compute or a data-dist stream */
	/* last op RCCL issued on this thread (coll_depth > 0), for the outer
	 * collective record that arrives after it */
	bool inner;
	int inner_slot;
	uint32_t inner_clock;
	int64_t inner_token;
	uint64_t inner_ts;
	/* the probes' rows of launches on this thread, as they keep them
	 * (nanlog_rec.h, "Step starts stay named"): the kernels that began its
	 * last rows, newest first; whether its next launch begins a row; the
	 * kernel of its last launch that came named */
	uint64_t row_fn[NL_SEQ_STARTS];
	bool row_open;
	uint64_t row_stream, row_last_fn;
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
	bool first_named;      /* its first work op was a launch naming its kernel */
	uint64_t first_sig;    /* ...and what it ran */
	/* upstream frontier (ops not ordered after any forward op of the batch) */
	bool has_up, covered, pending;
	struct nl_seen_op last_up, pending_f;
	uint32_t pending_seen; /* the consumer's clock of this stream */
};

/* The first two kernels a pipeline's forward windows began with, and how
 * many windows in a row began so (a step's signature) */
struct nl_step {
	uint64_t sig[2];
	uint32_t n;
	bool varied; /* two windows began differently */
	/* the thread those windows began on, unless two began on different
	 * threads (tid_varied) */
	uint32_t tid;
	bool tid_varied;
};

struct nl_stage_acc {
	uint64_t ops, work, bytes, first_ts, last_ts;
	/* work ops before the window's own first (a null-stream join's move
	 * shown early: note_join_early); the first two are counted from it */
	uint64_t first_from;
	uint64_t first_sig[2];   /* the stage's first two work ops (valid up to work) */
	bool first_named[2];     /* ...and whether each named its kernel (a launch the
				  * kernel counted in a run arrives without it) */
	uint32_t first_tid;      /* the thread of the first */
	/* named launches of the first's kernel, the first included; whether
	 * the stage's last work op was one of them, past the first, and which */
	uint32_t first_hits;
	bool hit_pending;
	bool unnamed; /* a launch of it came counted in a run: first_hits is a lower bound */
	struct nl_seen_op hit_op;
	uint64_t prev_hit_ts; /* the launch of it past the first before hit_op (0: none) */
	/* when its work, past the opening, last showed those two again in a
	 * row (the first's thread, both named): a restart seen */
	uint64_t again_ts;
	int again_prog;
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
	/* a data-dist stream's wait passed it over for a segment of work
	 * without its edge (nl_sparse_due): its stage, begun there */
	bool unfed_passed;
	/* compute, working on it, waited on a sparse stream's record of it again */
	bool sparse_retake;
	bool fwd_adopted;      /* compute took it without an edge (nl_take_first_compute) */
	bool taken_early;      /* compute took its sparse stage before the stream was found (book_early_work) */
	bool fwd_waited;       /* compute's wait took it (not a restart of the step) */
	bool restart_seen;     /* its forward window began another batch's (a watch's repeat) */
	/* when the batch before it began its forward, compute was ordered
	 * after all of this batch's producer work done by then (at prev_ts) */
	bool prev_covered;
	uint64_t prev_ts;
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
	uint32_t *first_vc;    /* ...at its first forward op (valid with fwd_started) */
	/* compute's vector clock when the batch before it began its forward
	 * (prev_vc_valid): its own forward, wherever it ran, came later */
	uint32_t *prev_vc;
	bool prev_vc_valid;
	/* compute's last work before its first forward op (UINT64_MAX: not
	 * remembered), and the same of the batch before it (with prev_vc) */
	uint64_t pre_work_ts, prev_pre_ts;
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
		bool part;           /* at the restart, compute was ordered after part of the batch's sparse stage */
		uint64_t mark_ts;    /* when the restart that set repeat completed */
		bool own;            /* consumer is an op charged to this batch */
		bool blind;          /* a consumer op in another pipeline's window went unwatched */
		uint64_t blind_ts;   /* ...when it first did */
		/* ...a launch of the kernel its steps begin with: blind if the
		 * next compute op may be their second (a step begun) */
		bool blind_pending;
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
	uint32_t gen; /* of its handle (struct nl_hgen) */
	uint64_t launches, h2d, work, waited;
	/* its hand-offs (waits on a record of it that covers newer copies than
	 * the last hand-off's: a second consumer waiting on the same copies is
	 * the same hand-off) and the h2d count that record covered */
	uint64_t turns, turn_h2d;
	/* the hand-offs of one run of its copies (the run the waited record
	 * was made in): the most any run had, and the run of the last */
	uint64_t run_turns, max_run_turns, turn_run;
	/* runs of its H2D copies (copies right after another stream's), and
	 * how many the newest record a hand-off waited on covered */
	uint64_t runs, run_at;
	/* the streams (the first 64) whose record of an event it recorded too,
	 * in one generation of that event, a wait found (a hand-off event
	 * shared in turn) */
	uint64_t shares;
	/* its takes (waits on another stream with work of its own before:
	 * back-to-back waits are one), and its work at the last */
	uint64_t takes, take_work;
	uint64_t out[NL_LEARN_EDGE_WORDS], in[NL_LEARN_EDGE_WORDS];
};

/* A learning event: the stream of its last record (-1: not recorded), and
 * that stream's H2D copies and runs of them when it recorded. */
struct nl_lrec {
	int slot;
	uint64_t h2d, runs;
	/* since its creation: the streams (the first 64) that recorded it,
	 * and those whose record of it a wait found */
	uint64_t recorders, waited_from;
};

/* Role learning: statistics over the records held back. */
struct nl_learn {
	struct nl_lstream *s;
	uint32_t ns, scap;
	uint64_t *eh;         /* event handle hash: handle+1, 0 empty */
	struct nl_lrec *es;   /* per event handle */
	uint32_t ecap, eused;
	uint32_t since_check;
	int last_copier;      /* stream of the last H2D copy, -1 none */
	struct nl_hgen hgen;  /* streams created per handle, as learning saw them */
};

/* One pipeline: its batch sequence (tokens pipe << NL_PIPE_SHIFT | n, the
 * batches in flight at n % bcap) and what the summary counts of it. Its
 * streams point at it (stream pipe); compute is shared. */
struct nl_pipe {
	bool used, has_sparse;
	/* a data-dist stream worked on a batch before the next batch's copies
	 * were ordered before it (never a batch ahead: stage_shared) */
	bool sparse_behind;
	int64_t behind_min; /* the oldest batch it so worked on, where sparse_behind */
	/* a forward window taken and left by waits, with no restart in it
	 * (none seen, or one the wait after showed was none), showed the
	 * step's first two kernels again (note_first_hits) */
	bool again_in_step;
	bool seen_copy_record;
	/* traced from its start: its first batch was copied by a stream the
	 * engine saw created, or the process was traced from its start */
	bool from_start;
	bool had_copy;        /* a stream has been its copy stream */
	/* slot + 1 of its copy stream that copied last (0: none), and the
	 * thread that did */
	int last_copier;
	uint32_t last_copier_tid;
	struct nl_step step;
	/* the same with launches counted in runs: windows whose first kernel
	 * is named (a run's first) and whose second is not */
	uint64_t run_sig;
	uint32_t run_n;
	bool run_varied;
	uint64_t run_min_work; /* the fewest work ops a closed forward window had */
	/* the fewest launches of its window's first kernel (named) a forward
	 * window had, among windows a wait began and a wait ended (0: none
	 * yet): a step that launches that kernel again has more than one */
	uint32_t first_min;
	/* every forward window closed so far was one step like the others:
	 * each batch in turn, no restart left in it, its first kernel
	 * launched even_hits times (note_even); steps_uneven once one was not */
	bool steps_uneven;
	uint32_t even_hits;
	bool even_other; /* the last window so judged was not one step but for its count */
	/* the copies (work ops) of each batch emitted, while every one had
	 * as many (copies_uneven once one had not) */
	uint64_t even_copies;
	bool copies_uneven;
	/* the same among windows with no launch counted in a run (a launch
	 * counted may have been of the kernel): the one to accuse by */
	uint32_t first_min_whole;
	/* forward windows in a row that began before the next batch was
	 * ordered before compute (its take was tight), and whether one ever
	 * began after (nl_note_window) */
	uint32_t tight_run;
	bool loose;
	/* compute waited on a record of its producer stream: its batches come
	 * by waits (hand-offs), not by the null stream's implicit joins */
	bool took_by_wait;
	/* the batch a null-stream join last moved compute to at a launch of
	 * the step's first kernel, before any whole window taught first_min,
	 * when (0: none), and the launches of that kernel the window it left
	 * had (note_join_moved) */
	int64_t join_moved;
	uint64_t join_moved_ts;
	uint32_t join_moved_hits;
	/* the step's signature, steps_uneven and even_hits as they stood at
	 * that move: the window the move began is not a step where a wait
	 * shows it early (note_join_early) */
	struct nl_step join_step;
	bool join_uneven;
	uint32_t join_even_hits;
	/* the last NL_LONE_HIST times compute's step began again in a window
	 * of this pipeline while nothing of it was left to begin (no newer
	 * batch copied), or right after a copy on a stream of no role yet
	 * (unplaced_copied_since): another pipeline's forward, begun without
	 * its take; nlone in all (nl_lone_again: the last) */
	uint64_t lone_hist[NL_LONE_HIST];
	uint32_t nlone;
	/* the newest batch of this pipeline the null stream's implicit joins
	 * brought (its `carry`, per pipeline) */
	/* zero at the start: for pipeline 0 that reads as its batch 0 (a
	 * blocking data-dist stream's first join takes it); starting at none
	 * made 3 of seeds 1-200,000 disagree */
	int64_t null_carry;
	/* the batch size (copy ops) its copy streams were last sure of by
	 * their own segments (0: none): a copy stream of it created again for
	 * a later turn cuts its fill by it, not by another pipeline's */
	uint32_t copy_k;
	/* the last time compute's step began again in a window of this
	 * pipeline while its next batch (again_tok), not yet ordered, could
	 * not be taken by it (more than one pipeline), and whether a wait gave
	 * that batch its forward after it (then the restart was not its) */
	uint64_t again_ts;
	int64_t again_tok;
	bool again_not_its;
	/* ...and when the step had begun again so for the same batch before
	 * (0: not): one of the two restarts was another batch's */
	uint64_t again_before_ts;
	/* the last restart that was so the second for one batch (kept when
	 * a later restart is kept for a newer batch): one restart of the two
	 * was another batch's */
	uint64_t again_two_ts;
	/* the window's launches of the step's first kernel up to and with
	 * the restart at again_ts */
	uint32_t again_hits;
	/* the restarts kept so for again_tok, each a step of its own: how
	 * many, and when the first NL_AGAIN_MAX were */
	uint32_t again_n;
	uint64_t again_at[NL_AGAIN_MAX];
	/* the most batches of other pipelines due and not ordered at one of
	 * those restarts: each may have been one of them */
	uint32_t again_others;
	/* ...and whether one was kept while again_tok's copy segment was
	 * still open (not due yet): for the exit only */
	bool again_open;
	struct nl_batch *b;
	uint32_t *bvc;
	int64_t next_token, oldest; /* full tokens */
	int64_t ticks, fwd_max;
	/* how many batches newer than the one taken compute's last waits
	 * brought, and how many in a row brought that many (nl_note_lag) */
	int64_t lag;
	uint32_t lag_n;
	int64_t tick_max;  /* the newest token a wait brought compute */
	uint64_t tick_ts;  /* and when */
	struct nl_verdict_counts verdicts;
	uint64_t stage_batches[NL_NSTAGES];
};

/* A stage's work ops from its window's first on (first_from) */
static inline uint64_t nl_first_work(const struct nl_stage_acc *w)
{
	return w->work - w->first_from;
}

/* The fewest launches of its first kernel a step of pipeline q makes, as
 * learned (first_min), or 1 while none is. */
static inline uint32_t nl_step_first_min(const struct nl_pipe *q)
{
	return q->first_min ? q->first_min : 1;
}

/* The last time compute's step began again in q's window, its take
 * dropped (lone_hist; 0: never). */
static inline uint64_t nl_lone_again(const struct nl_pipe *q)
{
	return q->nlone ? q->lone_hist[(q->nlone - 1) % NL_LONE_HIST] : 0;
}

struct nl_proc {
	uint32_t pid;
	bool announced, mid_run, exited;
	bool unnamed_launch;  /* a kernel launch came without its kernel (counted in a run) */
	bool rows_unsure;     /* records lost, or a thread forgotten: the threads' rows (nl_thread) may be off */
	uint64_t attach_ts;
	uint64_t call_ts;      /* entry time of the call being applied */
	/* compute's step begun again at the call at restart_ts was taken by
	 * batch restart_took (restart_take) */
	int64_t restart_took;
	uint64_t restart_ts, restart_win_ts; /* and the window it began in began then */
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
	/* the generations of the streams on each key's handle that have its
	 * role (bits; NL_GENS_ALL: given by the options), and streams created
	 * per handle as the engine applied the calls */
	uint64_t copy_gens[NL_MAX_COPY_KEYS], compute_gens;
	uint64_t sparse_gens[NL_ENGINE_MAX_SPARSE];
	struct nl_hgen hgen;
	uint32_t fill_k; /* the fill phase's batch size, learning saw (learn_fill) */
	/* the batch size every segment learning held back is a multiple of:
	 * sure while those records are replayed (learn_fill) */
	uint32_t window_k;
	/* copy streams outside the first pipeline, seen copying in what
	 * learning held back: the fill size their own segments there show
	 * (learn_other_fills), sure while those records are replayed */
	struct {
		struct nl_skey key;
		uint32_t k;
	} xfill[NL_MAX_COPY_KEYS];
	int nxfill;
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
	/* records lost (nl_apply_lost): every batch from then on is skipped
	 * lost_records. What a loss corrupts can outlive every batch in flight
	 * (an event's record, a stream's batch, learned sizes): docs/engine.md */
	bool loss_blind;
	/* counters */
	uint64_t lru, records, batches;
	uint64_t edges, implicit_edges, late_ops;
	uint64_t in_flight_ops, in_flight_pending; /* note_in_flight (engine_ops.c) */
	/* attached mid-run: a stream created before the attach worked, or a
	 * wait named an event recorded before it (note_in_flight) */
	bool before_attach_seen;
	uint64_t unplaced_streams;
	uint64_t evicted_streams, evicted_events, evicted_batches;
	/* its emitted batches, for the summary: by verdict (per pipeline in
	 * pipes[]) */
	struct nl_verdict_counts verdicts;
	/* a scratch clock: a stream's kept while it is lent another
	 * (nl_hold_resolved, book_early_work) */
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
	/* records lost (pid unknown) up to then: a process first seen later
	 * has its batches begun by then skipped lost_records */
	uint64_t loss_until;
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

/* The producer role a stream created again on s's handle may take back
 * (records_again, copies_again): a copy stream's, a data-dist stream's fed
 * by a copy stream; else NL_ROLE_OTHER. */
static inline uint8_t nl_producer_role(const struct nl_stream *s)
{
	return s->role == NL_ROLE_COPY                       ? NL_ROLE_COPY :
	       s->role == NL_ROLE_SPARSE && s->fed_by_copy ? NL_ROLE_SPARSE :
							     NL_ROLE_OTHER;
}

/* The batch size (copy ops) stream s is sure of, 0 none. */
static inline uint32_t nl_sure_seg_k(const struct nl_stream *s)
{
	return s->seg_k_n >= NL_SEG_SURE ? s->seg_k : 0;
}

/* A host-to-device copy, or one of default kind (unified addressing decides). */
static inline bool nl_call_is_h2d(const struct nl_call *c)
{
	return (c->kind == NL_K_COPY || c->kind == NL_K_COPY_SYNC) && (c->fields & NL_F_KIND) &&
	       (c->kindarg == 1 || c->kindarg == 4);
}

/* The null stream's ops enqueued before op `clock` of stream `slot` (its
 * own clock already counts that op): a blocking stream's op and an op
 * before it are joined by the null stream exactly when it grew between
 * them, however far back its ring reaches. */
static inline uint32_t nl_null_seq(const struct nl_proc *p, int slot, uint32_t clock)
{
	if (p->null_slot < 0)
		return 0;
	return slot == p->null_slot ? clock - 1 : p->s[p->null_slot].vc[p->null_slot];
}

/* The oldest position of a stream's recent-op ring still held. */
static inline uint32_t nl_ring_start(const struct nl_stream *s)
{
	return s->nring > NL_RING ? s->nring - NL_RING : 0;
}

/* Stream s did work between two times (of thread *tid; NULL: any), as far
 * as its ring tells. */
static inline bool nl_ring_worked_between(const struct nl_stream *s, uint64_t t0, uint64_t t1,
					  const uint32_t *tid)
{
	for (uint32_t k = nl_ring_start(s); k < s->nring; k++) {
		const struct nl_ring_op *r = &s->ring[k % NL_RING];

		if (r->work && (!tid || r->tid == *tid) && r->ts > t0 && r->ts < t1)
			return true;
	}
	return false;
}

/* A ring entry as an op reference on stream slot. */
static inline struct nl_seen_op nl_ring_seen_op(int slot, const struct nl_ring_op *r)
{
	return (struct nl_seen_op){ true, slot, r->clock, r->api, r->tid, r->ts, 0, r->nseq };
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

#endif /* NANLOG_ENGINE_TYPES_H */
