/* SPDX-License-Identifier: MIT */
/*
 * Internals of the pairing engine, shared by engine*.c only: the state
 * (engine_types.h) and the functions one file of the engine gives the
 * others, under the file that defines them.
 */
#ifndef NANLOG_ENGINE_INT_H
#define NANLOG_ENGINE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine_types.h"

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
void nl_ring_push(const struct nl_proc *p, struct nl_stream *s, uint32_t clock,
		  const struct nl_call *c, int64_t token, bool work);
/* The time of the stream's last remembered work op (0: none remembered). */
const struct nl_ring_op *nl_ring_last_work(const struct nl_stream *s);
uint64_t nl_ring_last_work_ts(const struct nl_stream *s);
/* The first op of token `token` on the stream with clock > after (NULL: not remembered). */
const struct nl_ring_op *nl_ring_first_after(const struct nl_stream *s, uint32_t after,
					     int64_t token, bool work);
int nl_role_of_key(const struct nl_proc *p, const struct nl_skey *k, uint32_t gen);
/* Attached mid-run: stage ops of batches in flight at the attach (engine_ops.c). */
uint64_t nl_in_flight_ops(const struct nl_proc *p);
/* Roles changed: give every known stream its role again. */
void nl_streams_refresh_roles(struct nl_proc *p);
/* A pipeline for a copy stream found after learning: where `reuse`, one
 * whose copy streams are all destroyed (its streams made again), else a
 * new one; -1 when none is left. */
int nl_pipe_open(struct nl_proc *p, bool reuse);

/* ---- engine_ops.c ---------------------------------------------------------- */

/* Apply one call to the process state (roles known). */
void nl_apply(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c);
/* Launch c came counted in a run (without its kernel): whether it may have
 * been a launch of the kernel of `sig`, as the probes keep their rows. */
bool nl_counted_may_be(struct nl_proc *p, const struct nl_call *c, uint64_t sig);
/* Call c may be a launch of the k-th (0 or 1) kernel every step of
 * pipeline q began with (q's step signature learned): named, by its
 * signature; counted in a run, as the probes' rows allow. */
bool nl_step_kernel_may_be(struct nl_proc *p, const struct nl_pipe *q, const struct nl_call *c,
			   int k);
/* A stream's token; on the compute stream a later token closes batches.
 * The copy stream's tokens are only minted, never taken from others. */
void nl_set_token(struct nl_proc *p, int slot, int64_t tok, uint64_t ts);
/* The copy stream's open segment ends. */
void nl_close_segment(struct nl_proc *p, struct nl_stream *s);
/* Batch tok's copy segment, still open, of a size its copy stream is sure
 * of (or a whole multiple): ended as a record would end it. */
void nl_end_sure_segment(struct nl_engine *e, struct nl_proc *p, int64_t tok);
/* At the process's exit: every copy stream's open segment of a whole
 * multiple n > 1 of its sure size, cut as a record would cut it. */
void nl_end_open_segments(struct nl_engine *e, struct nl_proc *p);
/* A copy stream outside the first pipeline: the fill size its segments
 * showed in what learning held back, while that is replayed (0: none). */
uint32_t nl_other_fill_k(const struct nl_proc *p, const struct nl_skey *key);
/* A fill segment left open, before the first batch is taken: cut at the fill size. */
void nl_cut_fill(struct nl_engine *e, struct nl_proc *p, int slot);
bool nl_sparse_took_again(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s);
bool nl_cut_restarted(struct nl_engine *e, struct nl_proc *p, const struct nl_batch *x);
bool nl_cut_in(struct nl_engine *e, struct nl_proc *p, int slot, int64_t tok, uint32_t parts);
bool nl_took_again(struct nl_engine *e, struct nl_proc *p, int by, uint32_t at, int m, int64_t tok,
		   uint64_t first);
void nl_fill_guess_ends(struct nl_engine *e, struct nl_proc *p, int slot, bool destroyed);

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
int64_t nl_cadence(struct nl_proc *p, int slot, int64_t tok, int from, bool stale);
const struct nl_batch *nl_held_unworked(struct nl_proc *p, const struct nl_stream *s, int64_t tok);
/* The same at a sparse stream fed by the copy stream `from`. */
int64_t nl_sparse_due(struct nl_proc *p, int slot, const struct nl_stream *from, int64_t tok);
/* A wait of compute on the copy stream of a pipeline with a sparse stage:
 * it orders, but does not move compute to the copy stream's newer batch. */
bool nl_over_copy(const struct nl_proc *p, int slot, const struct nl_stream *from,
		  const struct nl_event *ev);
/* A launch on compute that begins a new step may take the next batch. */
void nl_step_begins(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c);
/* A stream other than s and pipeline pipe's own producers did work since
 * `since`: a producer a restart of compute's step could be for (not one
 * of another pipeline all of whose batches copied since compute took). */
bool nl_outside_work(struct nl_proc *p, const struct nl_stream *s, int pipe, uint64_t since);
/* Compute took batch tok from sparse stream s (the hand-off rule). */
void nl_hand_over(struct nl_stream *s, int64_t tok);
/* Compute's forward of batch tok began without a wait: hand tok over from
 * every sparse stream of its pipeline that carries it. */
void nl_hand_over_all(struct nl_proc *p, int64_t tok);
/* Compute's first work op in the window of its token: was the take tight? */
void nl_note_window(struct nl_proc *p, const struct nl_stream *s);
/* Compute takes batch t again from sparse stream slot, whose work it had
 * seen (its clock of it before the wait: seen), and the next batch's
 * stage began inside t's segment: moved there; that batch (NL_NO_TOKEN:
 * none) */
int64_t nl_retake_behind(struct nl_engine *e, struct nl_proc *p, int slot, int64_t t,
			 uint32_t seen);
/* Compute took batch bt twice from its data-dist stream and begins its
 * step again for n, which has no stage: n's stage was in bt's segment,
 * moved there (true) */
bool nl_split_retaken(struct nl_engine *e, struct nl_proc *p, struct nl_batch *bt,
		      const struct nl_batch *n);
/* Restarts kept for a batch a wait now takes: another pipeline's, passed over */
void nl_restarts_not_its(struct nl_proc *p, const struct nl_stream *s, struct nl_pipe *gq);
/* Every copy op of batch b is ordered before stream s's clock. */
bool nl_copy_covered(const struct nl_batch *b, const struct nl_stream *s);
/* Every copy op of batch b is on the stream whose record wait w waited on,
 * at or before that record */
bool nl_copy_before_wait(const struct nl_batch *b, const struct nl_ring_op *w);
/* Stream x's ring holds a wait on stream slot's record at `clock`. */
bool nl_ring_waited(const struct nl_stream *x, int slot, uint32_t clock);

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
void nl_take_over(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s, bool again,
		  const struct nl_call *c);
/* Work on sparse stream s that no batch ever reached. */
void nl_take_first(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s);
void nl_take_at_record(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s, bool again,
		       const struct nl_call *c);
/* The clock stream slot had when its work was held (hold_clock) */
static inline uint32_t *nl_stream_hold_vc(const struct nl_proc *p, int slot)
{
	return p->svc + (size_t)(p->w + (uint32_t)slot) * p->w;
}
/* The clock stream slot had at its first work op, taken while it had no
 * role (first_vc) */
static inline uint32_t *nl_stream_first_vc(const struct nl_proc *p, int slot)
{
	return p->svc + (size_t)(2 * p->w + (uint32_t)slot) * p->w;
}

/* A wait on event ev: work a sparse stream held on its batch because of
 * ev's record goes to the next batch (nl_stream.hold_clock). */
void nl_hold_resolved(struct nl_engine *e, struct nl_proc *p, const struct nl_event *ev, int waiter);
int64_t nl_second_part_of(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c);
/* Launch c (named) names another kernel than the one batch b's work on
 * stream slot began with (named too). */
bool nl_other_than_first(const struct nl_batch *b, int slot, const struct nl_call *c);
/* Launch c (named) on stream s comes right after s's record of the batch it
 * holds, one another sparse stream waited on (rec_fed: its hand-off to the
 * collective stream), and names another kernel than that batch's work on s
 * began with: the stage going on after the hand-off (dist_init), the batch's
 * (stage_second_part) or an older one's (nl_second_part_of). */
bool nl_launch_after_handoff(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c);
void nl_take_again_after_record(struct nl_proc *p, struct nl_stream *s, const struct nl_call *c);
void nl_take_first_compute(struct nl_proc *p, struct nl_stream *s);
/* A handed data-dist stream's copy segment recorded again with no copy
 * between: cut in as many batches as records (nl_cut_in). */
void nl_cut_rerecorded(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
		       const struct nl_call *c);

/* ---- engine_batch.c -------------------------------------------------------- */

struct nl_batch *nl_batch_of(struct nl_proc *p, int64_t token);
const struct nl_batch_stream *nl_worked_stream(const struct nl_batch *b, int slot);
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
/* What call c ran (nl_seen_op.sig): its API with the kernel it launched
 * when named, else with its copy kind. */
static inline uint64_t nl_call_sig(const struct nl_call *c)
{
	return (uint64_t)c->api << 48 ^ ((c->fields & NL_F_FN) ? c->fn : c->kindarg);
}
/* A skip reason (NL_SKIP_*) as a bit of a batch's skip mask. */
#define NL_SKIP_BIT(r) (1u << (r))
/* The stage a stream of this role works for; -1 none. */
int nl_stage_of_role(int role);
/* The pipeline of a token or stream (NULL: none). */
struct nl_pipe *nl_pipe_of_token(struct nl_proc *p, int64_t token);
struct nl_pipe *nl_pipe_of_stream(struct nl_proc *p, const struct nl_stream *s);
/* A new token on the copy stream; its batch. */
void nl_mint(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s, uint64_t ts);
/* Batch prev, the one before n, began its forward: compute's clock and its
 * last work before then are n's prev_vc and prev_pre_ts (ordered_before_prev). */
void nl_prev_began(struct nl_proc *p, struct nl_batch *n, const struct nl_batch *prev);
/* The compute stream moves from its token to a later one `to`: close the
 * batches before it, with the compute clock as it was before the join. */
void nl_compute_tick(struct nl_proc *p, int64_t to, uint64_t ts);
void nl_note_lag(struct nl_proc *p, int64_t due, int64_t got);
/* Compute leaves batch tok's window: the batch after it may have had its
 * forward there (stage_shared) */
void nl_compute_leaves(struct nl_engine *e, struct nl_proc *p, int64_t tok, uint64_t ts);
void nl_compute_advance(struct nl_engine *e, struct nl_proc *p, int64_t to, uint64_t ts);
void nl_batch_skip(struct nl_proc *p, int64_t token, int reason);
/* Records lost: every batch of p not emitted yet, and every later one,
 * is skipped lost_records. */
void nl_apply_lost(struct nl_engine *e, struct nl_proc *p);
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
/* The last producer op of batch b, ordered or not: its time (0: none). */
static inline uint64_t nl_producers_last(const struct nl_batch *b)
{
	uint64_t last = 0;

	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].stage != NL_STAGE_FORWARD && b->bs[i].has_work &&
		    b->bs[i].last_work.ts > last)
			last = b->bs[i].last_work.ts;
	return last;
}

/* Batch b's ops on stream slot end at clock `cut`: its later ones were
 * handed to the next batch. */
void nl_batch_cut(struct nl_proc *p, struct nl_batch *b, int slot, uint32_t cut, uint64_t moved);
void nl_forward_cut(struct nl_proc *p, struct nl_batch *b, int slot, uint64_t ts, uint64_t moved,
		    uint64_t moved_work);
/* The first of batch b's producer streams that consumer k reads whose last
 * upstream op stream s is not ordered after (NULL: none). */
const struct nl_batch_stream *nl_unordered_producer(const struct nl_batch *b,
						    const struct nl_stream *s, int k);

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
