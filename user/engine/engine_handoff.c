// SPDX-License-Identifier: MIT
/*
 * Ops given to another batch after they were booked: a remembered op booked
 * again and the events recorded after it re-tokened, and the hand-off rule
 * (docs/engine.md, "The hand-off rule"): once compute took a batch from a
 * sparse stream, that stream's later work goes to the next batch.
 */
#include "engine/engine_int.h"

/* Book a remembered op again, on batch tok. */
void nl_account_ring(struct nl_engine *e, struct nl_proc *p, int slot, struct nl_ring_op *r,
		     int64_t tok)
{
	struct nl_call c;

	r->token = tok;
	memset(&c, 0, sizeof(c));
	c.pid = p->pid;
	c.tid = r->tid;
	c.api = r->api;
	c.kind = (uint8_t)nl_api_info[r->api].kind;
	c.ts_ns = r->ts;
	nl_account(e, p, slot, &c, r->clock, tok, r->work, false);
}

/* Events recorded on slot at a clock in (after, upto] that carry from_tok
 * (or any, NL_ANY_TOKEN) carry tok from now on. */
void nl_retoken_events(struct nl_proc *p, int slot, uint32_t after, uint32_t upto,
		       int64_t from_tok, int64_t tok, bool adopted)
{
	for (uint32_t i = 0; i < p->ecap; i++) {
		struct nl_event *o = &p->ev[i];

		if (o->used && o->recorded && o->slot == slot && o->clock > after &&
		    o->clock <= upto && (from_tok == NL_ANY_TOKEN || o->token == from_tok)) {
			o->token = tok;
			o->adopted = adopted;
		}
	}
}

static void take_token(struct nl_proc *p, struct nl_stream *s, int64_t next);
static bool stage_behind(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
			 const struct nl_call *c);
static void take_next_stage(struct nl_proc *p, struct nl_stream *s, bool copied);

/* Another sparse stream of s's pipeline worked on batch tok, or recorded
 * an event carrying it, after ts (as far as its ring remembers). */
static bool begun_since(const struct nl_proc *p, const struct nl_stream *s, int64_t tok,
			   uint64_t ts)
{
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];

		if (!x->used || x == s || x->role != NL_ROLE_SPARSE || x->pipe != s->pipe)
			continue;
		for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
			const struct nl_ring_op *r = &x->ring[k % NL_RING];

			if ((r->work || nl_api_info[r->api].kind == NL_K_EVENT_RECORD) &&
			    r->token == tok && r->ts > ts)
				return true;
		}
	}
	return false;
}

/* Stream slot `slot` has an op of batch b. */
static bool touched(const struct nl_batch *b, int slot)
{
	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].slot == slot && b->bs[i].ops)
			return true;
	return false;
}

/* The batch a producer's work after its batch `tok` was taken is: the
 * oldest newer batch that this stream has no op of yet (at depth 2 and
 * more the next ones may have reached it already), else tok + 1. */
static int64_t next_batch(struct nl_proc *p, const struct nl_stream *s, int64_t tok)
{
	const struct nl_pipe *q = nl_pipe_of_token(p, tok);
	int slot = (int)(s - p->s);

	for (int64_t t = tok + 1; q && t < q->next_token; t++) {
		const struct nl_batch *b = nl_batch_of(p, t);

		if (b && !b->closed && !touched(b, slot))
			return t;
	}
	return tok + 1;
}

/* Sparse stream i of the pipeline of `from` did part of batch tok's stage
 * that the record ev of `from` ordered (it waited on i's end), and went on
 * with work of tok the record does not order, begun after newer_ts (a
 * newer batch's copy), before any wait of its own since: that work is the
 * newer batch's as the recording stream's own work past the record is
 * (nl_take_after_record), reached by no edge (the collective stream's
 * wait on the data-dist stream for it dropped). Before, it stayed tok's,
 * the cut was not a clean one, and tok was accused sparse->forward beside
 * the newer batch's copy->sparse (random program 43384822). */
static bool stage_past_record(const struct nl_proc *p, int i, int from, const struct nl_event *ev,
			      int64_t tok, uint64_t newer_ts)
{
	const struct nl_stream *x = &p->s[i];
	bool known = false;

	if (!x->used || x->role != NL_ROLE_SPARSE || x->pipe != p->s[from].pipe || !ev->vc[i])
		return false;
	for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
		const struct nl_ring_op *r = &x->ring[k % NL_RING];

		if (r->clock <= ev->vc[i]) {
			known |= r->work && r->token == tok;
			continue;
		}
		if (!known || nl_api_info[r->api].kind == NL_K_STREAM_WAIT || r->token != tok)
			return false;
		if (r->work)
			return r->ts >= newer_ts;
	}
	return false;
}

/* The streams whose work after compute's take of `tok` from stream `from`
 * (after its record at `after`) is that batch's stage carried on without
 * a batch reaching them: `from` after the record, and every sparse stream
 * of its pipeline from a wait on such a stream's later record (the
 * data-dist stream's work going through the collective stream and back).
 * taint[slot]: the clock after which a stream's ops are that work
 * (UINT32_MAX: none); until[slot]: the clock of the first wait since that
 * reached it with anything else (a newer batch, or `tok` from elsewhere),
 * where that work ends (UINT32_MAX: none). False when the work is no
 * longer remembered. */
static bool tainted_streams(struct nl_proc *p, int from, const struct nl_event *ev, int64_t tok,
			    uint64_t newer_ts, uint32_t *taint, uint32_t *until)
{
	bool grew = true;

	for (uint32_t i = 0; i < p->w; i++)
		taint[i] = until[i] = UINT32_MAX;
	taint[from] = ev->clock;
	for (uint32_t i = 0; i < p->w; i++)
		if ((int)i != from && stage_past_record(p, (int)i, from, ev, tok, newer_ts))
			taint[i] = ev->vc[i];
	while (grew) {
		grew = false;
		for (uint32_t i = 0; i < p->w; i++) {
			const struct nl_stream *x = &p->s[i];

			if (taint[i] != UINT32_MAX || !x->used || x->role != NL_ROLE_SPARSE ||
			    x->pipe != p->s[from].pipe)
				continue;
			for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
				const struct nl_ring_op *r = &x->ring[k % NL_RING];

				if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT && r->token == tok && r->ev_slot >= 0 &&
				    taint[r->ev_slot] != UINT32_MAX && r->ev_clock > taint[r->ev_slot] &&
				    r->ev_clock <= until[r->ev_slot]) {
					taint[i] = r->clock - 1;
					grew = true;
					break;
				}
			}
		}
		for (uint32_t i = 0; i < p->w; i++) {
			const struct nl_stream *x = &p->s[i];

			if (taint[i] == UINT32_MAX || until[i] != UINT32_MAX)
				continue;
			for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
				const struct nl_ring_op *r = &x->ring[k % NL_RING];

				if (r->clock <= taint[i] || nl_api_info[r->api].kind != NL_K_STREAM_WAIT)
					continue;
				if (r->token != tok || r->ev_slot < 0 || taint[r->ev_slot] == UINT32_MAX ||
				    r->ev_clock <= taint[r->ev_slot] || r->ev_clock > until[r->ev_slot]) {
					until[i] = r->clock;
					grew = true;
					break;
				}
			}
		}
	}
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];
		uint32_t start = nl_ring_start(x);

		if (taint[i] == UINT32_MAX)
			continue;
		if (start > 0 && x->ring[start % NL_RING].clock > taint[i] + 1)
			return false; /* no longer remembered */
		/* tok again past the end: the cut would not be a clean one */
		for (uint32_t k = start; k < x->nring && until[i] != UINT32_MAX; k++)
			if (x->ring[k % NL_RING].clock > until[i] && x->ring[k % NL_RING].token == tok)
				return false;
	}
	return true;
}

/* Work moved from before a wait that has since reached stream x is judged
 * with x's clock as it stood then: the record's (the stream that recorded
 * it did not wait between), or for a stream it went through, no more than
 * the record knew of the others; and as taken, not reached. The current
 * clock and flag are kept in keep/adopted for the caller to put back. */
static void judge_as_then(struct nl_proc *p, struct nl_stream *x, const struct nl_event *ev,
			  bool recorder, uint32_t *keep, bool *adopted)
{
	int own = (int)(x - p->s);

	memcpy(keep, x->vc, p->w * sizeof(*keep));
	*adopted = x->adopted;
	x->adopted = true;
	for (uint32_t k = 0; k < p->w; k++)
		if ((int)k != own && (recorder || ev->vc[k] < x->vc[k]))
			x->vc[k] = ev->vc[k];
}

/* The hand-off rule, for work the producer enqueued between the record
 * compute now takes and this take: if a newer batch had been copied by
 * then, that work (and the events recorded after it) is the newer
 * batch's, as it would be had it come after the take; so is the work of
 * the streams it went through and came back from (tainted_streams). */
void nl_take_after_record(struct nl_engine *e, struct nl_proc *p, const struct nl_event *ev)
{
	int slot = ev->slot;
	struct nl_stream *s = &p->s[slot];
	int64_t tok = ev->token, next = tok + 1;
	struct nl_batch *bt = nl_batch_of(p, tok), *bn = nl_batch_of(p, next);
	uint32_t taint[NL_MAX_STREAMS_CAP], until[NL_MAX_STREAMS_CAP], keep[NL_MAX_STREAMS_CAP];
	bool any = false, adopted = false;

	if (!bt || !bn || s->vc[slot] <= ev->clock ||
	    !tainted_streams(p, slot, ev, tok, bn->first_ts, taint, until))
		return;
	for (uint32_t k = nl_ring_start(s); k < s->nring; k++) {
		const struct nl_ring_op *r = &s->ring[k % NL_RING];

		if (r->clock > ev->clock && r->clock < until[slot] && r->work && r->token == tok &&
		    r->ts >= bn->first_ts)
			any = true;
	}
	if (!any)
		return;
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *x = &p->s[i];
		uint64_t moved = 0;

		if (taint[i] == UINT32_MAX)
			continue;
		if (x->token == tok && until[i] == UINT32_MAX)
			take_token(p, x, next);
		if (until[i] != UINT32_MAX)
			judge_as_then(p, x, ev, (int)i == slot, keep, &adopted);
		for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
			struct nl_ring_op *r = &x->ring[k % NL_RING];

			if (r->clock <= taint[i] || r->clock >= until[i] || r->token != tok)
				continue;
			nl_account_ring(e, p, (int)i, r, next);
			moved++;
		}
		if (until[i] != UINT32_MAX) {
			memcpy(x->vc, keep, p->w * sizeof(*keep));
			x->adopted = adopted;
		}
		nl_batch_cut(p, bt, (int)i, taint[i], moved);
		nl_retoken_events(p, (int)i, taint[i], until[i], tok, next, true);
	}
}

static void take_token(struct nl_proc *p, struct nl_stream *s, int64_t next)
{
	const struct nl_batch *b = nl_batch_of(p, next);

	s->handed = false;
	/* not adopted when an earlier wait already ordered it after the copy */
	s->adopted = !b || !nl_copy_covered(b, s);
	s->token = next;
	for (uint32_t i = 0; i < p->w; i++)
		if (p->s[i].used && p->s[i].role == NL_ROLE_COPY && p->s[i].seg_open &&
		    p->s[i].token == next)
			nl_close_segment(p, &p->s[i]);
}

/* Compute took batch tok from sparse stream s: the hand-off rule applies
 * to s's work until a newer batch reaches it (nl_take_over). */
void nl_hand_over(struct nl_stream *s, int64_t tok)
{
	s->handed = true;
	s->handed_in = false;
	s->handed_tok = tok;
}

void nl_hand_over_all(struct nl_proc *p, int64_t tok)
{
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *d = &p->s[i];

		if (d->used && d->role == NL_ROLE_SPARSE && d->pipe == nl_tok_pipe(tok) &&
		    d->token == tok)
			nl_hand_over(d, tok);
	}
}

/* The hand-off rule: once compute took batch T from a sparse stream, work
 * that stream enqueues before a newer batch reaches it is not T's. If a
 * newer batch was copied it is the oldest newer one's that the stream has
 * no op of (next_batch), taken without the edge that
 * should have brought it (judged copy->sparse); otherwise it stays T's (a
 * late op). The newer batch's copy segment ends here: its consumer began.
 * Where T's segment held the next batch's stage already (a launch
 * `again`, stage_behind), the work is the one after's. */
/* The newest batch after tok and before next whose stage stream s began
 * (an op of it there), still open (NL_NO_TOKEN: none) */
static int64_t begun_between(struct nl_proc *p, const struct nl_stream *s, int64_t tok,
			     int64_t next)
{
	for (int64_t t = next - 1; t > tok; t--) {
		const struct nl_batch *b = nl_batch_of(p, t);

		if (b && !b->closed && touched(b, (int)(s - p->s)))
			return t;
	}
	return NL_NO_TOKEN;
}

void nl_take_over(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s, bool again,
		  const struct nl_call *c)
{
	int64_t next, u;

	if (again && s->token == s->handed_tok && stage_behind(e, p, s, c)) {
		take_next_stage(p, s, true);
		return;
	}
	next = next_batch(p, s, s->handed_tok);
	if (s->token != s->handed_tok || !nl_batch_of(p, next))
		return;
	/* work that begins no stage (not the kernel the stream's stages
	 * begin with) goes on with the newest batch whose stage the stream
	 * began since the one compute took: TorchRec's step e, D's
	 * .tolist() of batch i+1's split sizes after compute took batch i,
	 * its wait on the splits all-to-all's end dropped. Before, it was
	 * charged to batch i+2, copied since, and that healthy batch was
	 * accused copy->sparse. */
	if (!again && !s->handed_in &&
	    (u = begun_between(p, s, s->handed_tok, next)) != NL_NO_TOKEN) {
		take_token(p, s, u);
		return;
	}
	/* handed within the stage: a collective stream whose batches each
	 * launch their first kernel more than once (TorchRec's splits and
	 * data all-to-alls), this launch one the batch it holds still lacks,
	 * goes on with that batch: the data-dist stream took the splits'
	 * end, not the stage's (its wait before the data all-to-all
	 * redundant and dropped). Before, the data all-to-all was charged
	 * to the next batch, accused copy->sparse. */
	if (s->handed_in && s->hits_valid && s->hits_tok == s->token && s->stage_hits > 1 &&
	    s->hits_n < s->stage_hits && c->kind == NL_K_LAUNCH && (c->fields & NL_F_FN) &&
	    nl_call_sig(c) == s->hits_sig)
		return;
	take_token(p, s, next);
}

/* Stream s's last work op, of the batch it holds, launched another kernel
 * than the batch's stage began with, after a wait on a collective stream
 * (dist_init after the all-to-all's end): the batch's stage is done. */
static bool went_on_after_end(const struct nl_proc *p, const struct nl_stream *s)
{
	bool late = false;

	for (uint32_t k = s->nring; k > nl_ring_start(s); k--) {
		const struct nl_ring_op *r = &s->ring[(k - 1) % NL_RING];

		if (r->token != s->token)
			return false;
		if (!late) {
			if (!r->work)
				continue;
			if (r->again || nl_api_info[r->api].kind != NL_K_LAUNCH)
				return false;
			late = true;
			continue;
		}
		if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT && r->ev_slot >= 0 &&
		    p->s[r->ev_slot].role == NL_ROLE_SPARSE && !p->s[r->ev_slot].fed_by_copy)
			return true;
		if (r->work && r->again)
			return false;
	}
	return false;
}

/* A copy stream of s's pipeline copied since ts, before call c: by c's
 * thread (tid), or by any thread (NULL). */
static bool copied_since_by(const struct nl_proc *p, const struct nl_stream *s, uint64_t ts,
			    const struct nl_call *c, const uint32_t *tid)
{
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *m = &p->s[i];

		if (m->used && m->role == NL_ROLE_COPY && m->pipe == s->pipe &&
		    nl_ring_worked_between(m, ts, c->ts_ns, tid))
			return true;
	}
	return false;
}

/* The thread of call c copied on a copy stream of s's pipeline since ts. */
static bool copied_since(const struct nl_proc *p, const struct nl_stream *s, uint64_t ts,
			 const struct nl_call *c)
{
	return copied_since_by(p, s, ts, c, &c->tid);
}

/* The live event whose last record is s's record of clock `clock` (NULL:
 * none, its event destroyed or recorded again since). */
static const struct nl_event *record_event(const struct nl_proc *p, const struct nl_stream *s,
					   uint32_t clock)
{
	int slot = (int)(s - p->s);

	for (uint32_t i = 0; i < p->ecap; i++) {
		const struct nl_event *o = &p->ev[i];

		if (o->used && o->recorded && o->slot == slot && o->clock == clock)
			return o;
	}
	return NULL;
}

/* s's record of clock `clock` is of an event recorded before and never
 * waited on: an allocator's (record_stream, only queried), no edge */
static bool noise_record(const struct nl_proc *p, const struct nl_stream *s, uint32_t clock)
{
	const struct nl_event *o = record_event(p, s, clock);

	return o && o->records > 1 && !o->waited;
}

/* s's record of clock `clock` may be an allocator's: its event is still
 * alive and never waited on (a dropped wait_stream's fresh event is
 * destroyed right after its record; an edge's reused event was waited on) */
static bool may_be_pools(const struct nl_proc *p, const struct nl_stream *s, uint32_t clock)
{
	const struct nl_event *o = record_event(p, s, clock);

	return o && !o->waited;
}

/* s's last ops are records of such events only (noise_record), while
 * other streams have waited on its records: they end no segment */
static bool noise_records_last(const struct nl_proc *p, const struct nl_stream *s)
{
	uint32_t k = s->nring;

	if (!s->waited_on)
		return false;
	for (; k > nl_ring_start(s); k--) {
		const struct nl_ring_op *r = &s->ring[(k - 1) % NL_RING];

		if (nl_api_info[r->api].kind != NL_K_EVENT_RECORD)
			break;
		if (!noise_record(p, s, r->clock))
			return false;
	}
	return k < s->nring;
}

/* The thread of call c recorded an event on a copy stream of s's
 * pipeline since ts, not an allocator's (noise_record): the record of a
 * wait_stream whose wait was dropped, the loop's next step begun */
static bool recorded_since(const struct nl_proc *p, const struct nl_stream *s, uint64_t ts,
			   const struct nl_call *c)
{
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *m = &p->s[i];

		if (!m->used || m->role != NL_ROLE_COPY || m->pipe != s->pipe)
			continue;
		for (uint32_t k = nl_ring_start(m); k < m->nring; k++) {
			const struct nl_ring_op *r = &m->ring[k % NL_RING];

			if (nl_api_info[r->api].kind == NL_K_EVENT_RECORD && r->tid == c->tid &&
			    r->ts > ts && r->ts < c->ts_ns && !noise_record(p, m, r->clock))
				return true;
		}
	}
	return false;
}

/* The thread of call c made compute take a batch of s's pipeline since ts
 * (a wait on a record of one of its producer streams), or launched work
 * on compute: the loop's next step began. A loop issues one sparse stage
 * and one take per step, in either order, and its forward between them,
 * so the same kernel launched again on s after either is the next
 * batch's stage, wherever the copies came from (a loader thread's copy
 * is no sign: it may come inside one batch's stage). */
static bool stepped_since(const struct nl_proc *p, const struct nl_stream *s, uint64_t ts,
			  const struct nl_call *c)
{
	const struct nl_stream *x;

	if (p->compute_slot < 0)
		return false;
	x = &p->s[p->compute_slot];
	for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
		const struct nl_ring_op *r = &x->ring[k % NL_RING];
		const struct nl_stream *f = r->ev_slot >= 0 ? &p->s[r->ev_slot] : NULL;

		if (r->tid != c->tid || r->ts <= ts || r->ts >= c->ts_ns)
			continue;
		if (r->work || (nl_api_info[r->api].kind == NL_K_STREAM_WAIT && f &&
				f->pipe == s->pipe &&
				(f->role == NL_ROLE_SPARSE || f->role == NL_ROLE_COPY)))
			return true;
	}
	return false;
}

/* The work sparse stream s makes from now on, after its record of clock
 * `rec` and the next batch's copy by another thread, stays on its batch
 * while that record may be an allocator's: held for batch next, until a
 * wait on the record's event shows it an edge's (nl_hold_resolved). */
static void hold(struct nl_proc *p, struct nl_stream *s, uint32_t rec, int64_t next)
{
	const struct nl_event *o = record_event(p, s, rec);

	if (!o)
		return;
	s->hold_clock = s->vc[(int)(s - p->s)] + 1;
	memcpy(nl_stream_hold_vc(p, (int)(s - p->s)), s->vc, p->w * sizeof(uint32_t));
	s->hold_ev = o->handle;
	s->hold_gen = o->gen;
	s->hold_tok = s->token;
	s->hold_next = next;
}

/* Sparse stream s's ops of batch bt from clock `from` on are batch
 * next's: booked again on it (judged as its stage begun without its edge
 * where next's copy is not ordered before s's clock now), cut from bt,
 * and the events recorded among them carry next. */
static void move_ops(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
		     struct nl_batch *bt, uint32_t from, int64_t next)
{
	int slot = (int)(s - p->s);
	bool adopted = s->adopted;
	uint64_t moved = 0;

	s->adopted = !nl_copy_covered(nl_batch_of(p, next), s);
	for (uint32_t k = nl_ring_start(s); k < s->nring; k++) {
		struct nl_ring_op *r = &s->ring[k % NL_RING];

		if (r->clock < from || r->token != bt->token)
			continue;
		nl_account_ring(e, p, slot, r, next);
		moved++;
	}
	s->adopted = adopted;
	nl_batch_cut(p, bt, slot, from - 1, moved);
	nl_retoken_events(p, slot, from - 1, UINT32_MAX, bt->token, next, true);
}

/* ...and s, still holding bt, holds next now: the stage found begun
 * inside bt's segment (stage_behind, nl_retake_behind) */
static void move_stage(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
		       struct nl_batch *bt, uint32_t from, int64_t next)
{
	move_ops(e, p, s, bt, from, next);
	if (s->token == bt->token)
		take_token(p, s, next);
	s->hold_clock = 0;
}

void nl_hold_resolved(struct nl_engine *e, struct nl_proc *p, const struct nl_event *ev, int waiter)
{
	struct nl_stream *s = ev->slot >= 0 ? &p->s[ev->slot] : NULL;
	struct nl_batch *bt, *bn;

	if (!s || !s->hold_clock)
		return;
	bt = nl_batch_of(p, s->hold_tok);
	/* a wait on the held record's event; or compute's on a record after
	 * it, of the batch held, whose forward began already: that take was
	 * the next batch's */
	if ((s->hold_ev != ev->handle || s->hold_gen != ev->gen) &&
	    !(waiter == p->compute_slot && ev->clock >= s->hold_clock &&
	      ev->token == s->hold_tok && bt && bt->st[NL_STAGE_FORWARD].work))
		return;
	bn = nl_batch_of(p, s->hold_next);
	if (bt && bn && !bt->closed && !bn->closed && !bn->st[NL_STAGE_SPARSE].work &&
	    nl_ring_start(s) < s->nring && s->ring[nl_ring_start(s) % NL_RING].clock <= s->hold_clock) {
		uint32_t *keep = p->tmp_vc, own = s->vc[ev->slot];

		/* judged with the clock the stream had at the first held op:
		 * implicit joins since (a blocking stream joining the null
		 * stream) may order it after the copy that op was not */
		memcpy(keep, s->vc, p->w * sizeof(uint32_t));
		memcpy(s->vc, nl_stream_hold_vc(p, ev->slot), p->w * sizeof(uint32_t));
		s->vc[ev->slot] = own;
		move_ops(e, p, s, bt, s->hold_clock, s->hold_next);
		memcpy(s->vc, keep, p->w * sizeof(uint32_t));
		if (s->token == s->hold_tok)
			take_token(p, s, s->hold_next);
	}
	s->hold_clock = 0;
}

/* The last copy work op of batch b (0: none). */
static uint64_t copy_work_end(const struct nl_batch *b)
{
	uint64_t ts = 0;

	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].stage == NL_STAGE_COPY && b->bs[i].has_work &&
		    b->bs[i].last_work.ts > ts)
			ts = b->bs[i].last_work.ts;
	return ts;
}

/* The launch again by thread `tid` (NULL: the thread sparse stream s's
 * stage of batch t began on) in s's segment of t where the stage of the
 * next batch n began inside it: the first after n's last copy, t's stage
 * begun before that copy, and no wait or join of s since (NULL: none).
 * With `tid`, only once n's copy segment is closed (stage_behind); without,
 * also while it is open (a loader's copies, their record dropped with the
 * data-dist wait: nl_retake_behind). */
static const struct nl_ring_op *begun_inside(const struct nl_stream *s, int64_t t,
					     const struct nl_batch *n, const uint32_t *tid)
{
	const struct nl_ring_op *l = NULL, *f = NULL;
	uint64_t end;

	if (!n || n->closed || (!n->copy_closed && tid) || n->st[NL_STAGE_SPARSE].work ||
	    !(end = copy_work_end(n)))
		return NULL;
	for (uint32_t k = nl_ring_start(s); k < s->nring; k++) {
		const struct nl_ring_op *r = &s->ring[k % NL_RING];

		if (l && nl_api_info[r->api].kind == NL_K_STREAM_WAIT)
			return NULL;
		if (r->token == t && r->work && !f)
			f = r;
		if (!l && f && r->token == t && r->work && r->again &&
		    r->tid == (tid ? *tid : f->tid) && r->ts > end)
			l = r;
	}
	if (!l || f->ts > end || s->last_join_ts >= l->ts)
		return NULL;
	return l;
}

/* Sparse stream s, holding batch T, begins a stage (launch c, the
 * kernel T's stage began with, again) after a copy of a batch newer than
 * the next one, n: n's stage began inside T's segment already. It began
 * at the first launch again by c's thread after n's last copy, where T's
 * stage began before that copy; those ops are n's (its wait on the copy
 * stream dropped with its record, judged copy->sparse where n's copy is
 * not ordered before them), and the stage begun now is the one after.
 * Before, they stayed T's, the stage begun now was charged to n and every
 * later one a batch early: n's successor's copy->sparse missed and the
 * run's last batch skipped (random programs 534554, 384314: the loader
 * thread's copy of n between the two stages is no sign by itself, it
 * may come inside one stage; the next stage, after the copy of the batch
 * after n, is). Not where a wait or a join came since that launch, nor
 * with n's copy segment still open. */
static bool stage_behind(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
			 const struct nl_call *c)
{
	int64_t t = s->token, next = next_batch(p, s, t);
	struct nl_batch *bt = nl_batch_of(p, t), *n = nl_batch_of(p, next);
	const struct nl_ring_op *l;
	bool newer = false;

	if (!bt || bt->closed || !(l = begun_inside(s, t, n, &c->tid)))
		return false;
	for (uint32_t i = 0; i < p->w && !newer; i++) {
		const struct nl_stream *m = &p->s[i];

		if (!m->used || m->role != NL_ROLE_COPY || m->pipe != s->pipe)
			continue;
		for (uint32_t k = nl_ring_start(m); k < m->nring; k++) {
			const struct nl_ring_op *r = &m->ring[k % NL_RING];

			if (r->work && r->token > next && nl_tok_pipe(r->token) == nl_tok_pipe(next) &&
			    r->ts > l->ts) {
				newer = true;
				break;
			}
		}
	}
	if (!newer)
		return false;
	move_stage(e, p, s, bt, l->clock, next);
	return true;
}

/* Compute, holding batch t whose forward began, waits again on a record
 * of sparse stream s (at `slot`) carrying t, and s did no work compute had
 * not seen before that wait (its clock of s then: `seen`): a second take
 * of the stage compute took already. Where the next batch n's stage began
 * inside t's segment (begun_inside: the launch again of t's first kernel
 * after n's copy, by the thread t's stage began on), that take is n's:
 * those ops are n's stage, begun without its edge where n's copy is not
 * ordered before them (its wait on the copy stream dropped with its
 * record), and compute takes n (returned; NL_NO_TOKEN: not so). Before,
 * they stayed t's, compute's next step was charged to t too, and n, never
 * staged, was skipped target_exited with its copy->sparse unnamed
 * (random programs 127620, 94550: an evaluation turn whose data-dist
 * stream records an allocator's event after each stage, which keeps the
 * launch again from beginning a stage by itself, stage_behind). A data-dist
 * stream that launches its first kernel again inside one stage, compute
 * taking each stage once, is not touched: no second take. Nor is a batch
 * whose forward no wait of compute began (a step begun again taken for
 * it): its first take may be this one (random program 190802386, a
 * healthy batch accused when it was). */
int64_t nl_retake_behind(struct nl_engine *e, struct nl_proc *p, int slot, int64_t t,
			 uint32_t seen)
{
	struct nl_stream *s = &p->s[slot];
	int64_t next = next_batch(p, s, t);
	struct nl_batch *bt = nl_batch_of(p, t);
	const struct nl_ring_op *l, *lw = nl_ring_last_work(s);

	if (!bt || bt->closed || !bt->st[NL_STAGE_FORWARD].work || !bt->fwd_waited ||
	    !lw || lw->clock > seen || !(l = begun_inside(s, t, nl_batch_of(p, next), NULL)))
		return NL_NO_TOKEN;
	move_stage(e, p, s, bt, l->clock, next);
	return next;
}

/* Compute took batch t twice from sparse stream s (sparse_retake: a wait
 * on a record of s carrying t, s having done nothing since the first) and
 * begins its step again: the step is the next batch n's forward. Where n
 * has no stage of its own, its copies were ordered before s's wait that
 * began t's segment (the wait carried n too), and t's segment launched
 * its first kernel again (same thread, no wait since), the segment held
 * n's stage as well: its ops from that launch on are n's (a fill of two
 * batches copied before one wait, the second one's wait redundant and
 * dropped with its record). Both stages are ordered before compute's
 * takes either way; which launch began n's does not change a verdict.
 * Only with one sparse stream of t's pipeline doing t's work. */
bool nl_split_retaken(struct nl_engine *e, struct nl_proc *p, struct nl_batch *bt,
		      const struct nl_batch *n)
{
	struct nl_stream *d = NULL;
	const struct nl_ring_op *w = NULL, *f = NULL, *l = NULL;
	uint64_t seg_ts = 0, end;
	int pipe = nl_tok_pipe(bt->token);
	const struct nl_batch *u;

	if (!bt->sparse_retake || n->closed || n->fwd_started || !n->copy_closed ||
	    n->st[NL_STAGE_SPARSE].ops || n->token != bt->token + 1)
		return false;
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *x = &p->s[i];

		if (!x->used || x->role != NL_ROLE_SPARSE || x->pipe != pipe ||
		    !nl_worked_stream(bt, (int)i))
			continue;
		if (d)
			return false;
		d = x;
	}
	if (!d || d->token != bt->token)
		return false;
	for (uint32_t k = nl_ring_start(d); k < d->nring; k++) {
		const struct nl_ring_op *r = &d->ring[k % NL_RING];

		if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT) {
			if (f)
				return false; /* a wait inside t's segment */
			w = r;
			seg_ts = 0;
			continue;
		}
		if (!r->work)
			continue;
		if (r->token == bt->token) {
			if (!f)
				f = r;
			else if (!l && r->again && r->tid == f->tid)
				l = r;
			continue;
		}
		/* another batch's work after t's began; or, before, work no
		 * older batch of the pipeline holds (a stage begun without
		 * its edge, maybe t's) */
		if (f || r->token == NL_NO_TOKEN || nl_tok_pipe(r->token) != pipe ||
		    r->token > bt->token)
			return false;
		/* an older segment that began a stage again after a copy made
		 * while it ran: a stage begun without its edge there
		 * (begun_inside) left the stream a batch behind, not a fill's
		 * two batches */
		if (!seg_ts)
			seg_ts = r->ts;
		else if (r->again && (u = nl_batch_of(p, r->token + 1)) &&
			 (end = copy_work_end(u)) > seg_ts && end < r->ts)
			return false;
	}
	if (!f || !l || !w || w->ev_slot < 0 || p->s[w->ev_slot].role != NL_ROLE_COPY ||
	    !nl_copy_before_wait(n, w))
		return false;
	move_stage(e, p, d, bt, l->clock, n->token);
	return true;
}

/* Sparse stream s begins the next batch after the one it holds, begun
 * without its edge: the oldest newer one it has no op of (next_batch),
 * still open, not yet begun on a sparse stream, and copied (`copied`) or
 * not. */
static void take_next_stage(struct nl_proc *p, struct nl_stream *s, bool copied)
{
	int64_t next = next_batch(p, s, s->token);
	const struct nl_batch *n = nl_batch_of(p, next);

	if (n && !n->closed && (!copied || n->st[NL_STAGE_COPY].work) &&
	    !n->st[NL_STAGE_SPARSE].work)
		take_token(p, s, next);
}

/* Some stream's wait, as far as the rings remember, was on stream
 * slot's record of clock `clock`. */
static bool waited_on(const struct nl_proc *p, int slot, uint32_t clock)
{
	for (uint32_t i = 0; i < p->w; i++)
		if (p->s[i].used && nl_ring_waited(&p->s[i], slot, clock))
			return true;
	return false;
}

/* Sparse stream s, whose last wait on a copy stream took the batch it
 * holds, begins its stage again at launch c with no newer batch of its
 * pipeline copied: where that copy stream recorded again since the record
 * waited on, by c's thread, copying nothing between, a record no stream
 * waited on (not an added edge to compute) nor an allocator's
 * (may_be_pools), the segment held the next batch's copies too (a fill
 * of two, the second batch's wait on that record dropped). It is cut in
 * as many batches as records were made of it (nl_cut_in). So at a stage
 * begun again by the hand-off rule (take_over) where no fill guess is
 * left to split (split_fill_again). Before, the next batch's stage stayed
 * on the batch compute took, which was accused sparse->forward, and the
 * next batch was merged into its copies (random program 46278358). */
void nl_cut_rerecorded(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
		       const struct nl_call *c)
{
	const struct nl_stream *m;
	const struct nl_ring_op *w = NULL;
	uint32_t recs = 1;

	if (nl_batch_of(p, next_batch(p, s, s->token)))
		return;
	for (uint32_t k = s->nring; k > nl_ring_start(s) && !w; k--) {
		const struct nl_ring_op *r = &s->ring[(k - 1) % NL_RING];

		if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT && r->ev_slot >= 0 &&
		    p->s[r->ev_slot].role == NL_ROLE_COPY && p->s[r->ev_slot].pipe == s->pipe)
			w = r;
	}
	if (!w || w->token != s->token)
		return;
	m = &p->s[w->ev_slot];
	for (uint32_t k = nl_ring_start(m); k < m->nring; k++) {
		const struct nl_ring_op *r = &m->ring[k % NL_RING];

		if (r->clock <= w->ev_clock)
			continue;
		if (r->work)
			return;
		if (nl_api_info[r->api].kind == NL_K_EVENT_RECORD && r->tid == c->tid &&
		    r->ts < c->ts_ns && !may_be_pools(p, m, r->clock) &&
		    !waited_on(p, w->ev_slot, r->clock))
			recs++;
	}
	nl_cut_in(e, p, w->ev_slot, s->token, recs);
}

/* take_next_stage at a stage begun again by launch c, once the batch
 * after the one s holds has its part of the segment (stage_behind) */
static void advance_stage(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
			  const struct nl_call *c, bool copied)
{
	stage_behind(e, p, s, c);
	nl_cut_rerecorded(e, p, s, c);
	take_next_stage(p, s, copied);
}

/* Sparse stream s begins its batch's stage again (sparse_again) right
 * after a wait that took that batch a second time from its copy stream, a
 * record of it made with no copy since the first take: the segment held
 * the next batch's copies too (an evaluation turn's fill of two batches at
 * depth 2, each taken by a wait_stream of its own). It is cut
 * (nl_took_again), and the stage begun is the next batch's. Before, that
 * batch was merged into the first's copies, never audited. */
bool nl_sparse_took_again(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s)
{
	const struct nl_batch *b = nl_batch_of(p, s->token);
	const struct nl_ring_op *r;

	if (!b || !s->nring || !b->st[NL_STAGE_SPARSE].work)
		return false;
	r = &s->ring[(s->nring - 1) % NL_RING];
	if (r->ev_slot < 0 || p->s[r->ev_slot].role != NL_ROLE_COPY || p->s[r->ev_slot].pipe != s->pipe ||
	    !nl_took_again(e, p, (int)(s - p->s), s->nring - 1, r->ev_slot, s->token,
			   b->st[NL_STAGE_SPARSE].first_ts))
		return false;
	/* the calls say now which one the work after the wait is */
	s->orphan = false;
	take_next_stage(p, s, true);
	return true;
}

/* A data-dist stream's work after one of its records, with no wait since:
 * when the next batch's copy is already ordered before it (the wait that
 * brought the stream its batch covered the next one's copy too) and no
 * sparse work reached that batch yet, the work is that batch's: one
 * sparse segment per batch, ended by the record compute takes. So is a
 * launch, `again`, of the kernel the batch's sparse stage began with,
 * whatever orders the next copy: that batch's stage begun without its
 * edge (judged copy->sparse). Not other work after a record another
 * sparse stream waited on (the data-dist stream handing its input_dist to
 * the collective stream: the batch goes on after it). Such a launch right
 * after the batch's stage went on past the all-to-all's end (dist_init,
 * after the wait on the collective stream), with no record between, is
 * the next batch's stage begun too (its D.wait_stream(M) dropped with its
 * record), its copy segment still open or not. So is such a launch right
 * after the stream's work when the same thread copied on the pipeline's
 * copy stream since that work (a prefetching loop's next step began: its
 * input_dist runs on, and one batch's repeated launches of one kernel
 * have no copy between them), or made compute take a batch of the
 * pipeline or launched work on compute since the stream's last work, its
 * ops after that no wait (stepped_since: the loop's next step
 * began; a loader thread's copy is no sign. Before, a loader's loop that
 * dropped a take with its record and D's next wait on the copy stream
 * kept the next stage on the batch before, and every later stage was
 * charged a batch early: healthy batches accused sparse->forward, random
 * programs 138246, 574676, 512193). So is such a launch after the record when
 * the next batch's copy, by any thread, came since the stream's
 * last work (before the record or after it) and its segment is still
 * open (its record dropped with D's wait on it), unless that
 * record is an allocator's (noise_records_last): the launch may then be
 * more of the batch the stream holds, its input_dist launching its kernel
 * twice around a freed block's record_stream. Also on a sparse stream that
 * never waited, for the first of those and for a launch again right after
 * its record the collective stream waited on. */
void nl_take_at_record(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s, bool again,
		       const struct nl_call *c)
{
	const struct nl_ring_op *last;
	const struct nl_batch *n;
	uint64_t since; /* a copy since then begins the next batch's stage */
	int64_t next;

	if (!s->nring || s->token == NL_NO_TOKEN || !nl_batch_of(p, s->token))
		return;
	last = &s->ring[(s->nring - 1) % NL_RING];
	/* a stream that never waited (its first waits on the copy stream
	 * dropped, its first work given the oldest batch: nl_take_first):
	 * only the launch again after the same thread's copy begins the next
	 * batch's stage. Before, such a stream, not fed by the copy stream,
	 * kept its first batch for every segment until its first wait, and
	 * the second batch's copy->sparse was missed (random program 701).
	 * So is one after the same thread's record on the copy stream (a
	 * loader thread's copy, the loop's record of it), as on a stream the
	 * copy stream fed: before, the batch's copy->sparse was missed
	 * (random program 43836067) */
	if (!s->fed_by_copy) {
		if (again && last->work && last->token == s->token && last->tid == c->tid &&
		    (copied_since(p, s, last->ts, c) || recorded_since(p, s, last->ts, c)))
			advance_stage(e, p, s, c, true);
		/* or right after its record the collective stream waited
		 * on (its hand-off of the batch, below): before, a stream
		 * that never waited kept its first batch for the next
		 * batch's whole split stage, and that stage's all-to-all was
		 * judged against the first batch's forward (random program
		 * 95967: sparse->forward named on a batch whose stage was
		 * ordered) */
		else if (again && s->rec_fed && nl_api_info[last->api].kind == NL_K_EVENT_RECORD &&
			 last->token == s->token)
			advance_stage(e, p, s, c, true);
		return;
	}
	/* the same thread copied, or recorded on the copy stream, since the
	 * stream's last work (its ops after that records, such as an
	 * all-to-all's end event, and no wait): the loop's next step began.
	 * Before, only right after work did: where the stage ended with an
	 * all-to-all whose end event only the watchdog queries, the next
	 * batch's stage, its wait on the copy stream dropped, stayed on the
	 * batch before (train_loops_stages_ahead_by_clocks). Or the same
	 * thread made compute take a batch, or launched work on compute,
	 * since then: at depth 3 in TorchRec's order forward(k - 2) comes
	 * between the stages of k - 1 and k, and where compute's take of
	 * k - 1 was dropped with its record and the stream's wait for k too,
	 * it is the only sign of the step (train_loops_two_drops_by_clocks) */
	if (again) {
		const struct nl_ring_op *lw = NULL;

		for (uint32_t k = s->nring; k > nl_ring_start(s); k--) {
			const struct nl_ring_op *r = &s->ring[(k - 1) % NL_RING];

			if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT)
				break;
			if (r->work) {
				lw = r;
				break;
			}
		}
		if (lw && lw->token == s->token && lw->tid == c->tid &&
		    (((lw == last || !noise_records_last(p, s)) &&
		      (copied_since(p, s, last->ts, c) || recorded_since(p, s, last->ts, c))) ||
		     stepped_since(p, s, lw->ts, c))) {
			advance_stage(e, p, s, c, true);
			return;
		}
	}
	/* with records between too, not the hand-off to the collective
	 * stream: a record compute's take, dropped, was for (random program
	 * 84103: the next batch's stage, its wait on the copy dropped, stayed
	 * on the batch before, whose dropped take was then missed) */
	if (again && (nl_api_info[last->api].kind != NL_K_EVENT_RECORD || !s->rec_fed) &&
	    went_on_after_end(p, s)) {
		advance_stage(e, p, s, c, false);
		return;
	}
	/* right after a record another sparse stream waited on (the hand-off
	 * to the collective stream), with no wait between: the batch's stage
	 * goes on after its all-to-all, not with the kernel it began with
	 * again, which is the next batch's input_dist begun without its edge
	 * (a depth-3 fill runs input_dist of three batches back to back), its
	 * copy segment closed or not (the dropped record would have closed it) */
	if (again && s->rec_fed && nl_api_info[last->api].kind == NL_K_EVENT_RECORD &&
	    last->token == s->token) {
		advance_stage(e, p, s, c, true);
		return;
	}
	if (s->rec_fed)
		return;
	if (nl_api_info[last->api].kind != NL_K_EVENT_RECORD || last->token != s->token)
		return;
	next = next_batch(p, s, s->token);
	n = nl_batch_of(p, next);
	if (!n || n->st[NL_STAGE_SPARSE].work)
		return;
	/* its copy segment still open (its record dropped with the wait):
	 * a launch again that the same thread's copy of that batch came
	 * before, since the stream's last work, begins its stage without its
	 * edge. Before, only a copy since the record did: a copy made between
	 * the stream's work and its record (the take's, compute's wait on it
	 * dropped) left the next batch's stage on the batch before, and that
	 * batch skipped at the end of the run (random program 12256). Not
	 * where the record may be an allocator's (may_be_pools): a block's
	 * record_stream between a batch's launches of its kernel, the next
	 * batch's copy before it (allocator_record_between_input_dists).
	 * Where the record cannot be one (an edge's event, waited on before,
	 * or the stream's last op is work), a copy by any thread counts:
	 * before, only the launching thread's did, and a loader thread's
	 * batch, the run's last, was skipped target_exited, its
	 * copy->sparse missed (random program 124989). Where it may be one
	 * and only another thread copied, the work is held (hold): it goes
	 * to the next batch once a wait on that event shows the record an
	 * edge's, or compute takes a later record of the batch whose forward
	 * it began already. Before, it stayed on the batch before, every
	 * later batch's stage was charged one batch early, and a fault was
	 * missed (random programs 323971 and 151166). */
	if (!n->copy_closed) {
		bool pools;

		if (!again || !n->st[NL_STAGE_COPY].work || noise_records_last(p, s))
			return;
		since = nl_ring_last_work_ts(s);
		pools = may_be_pools(p, s, last->clock);
		if (!since || pools)
			since = last->ts;
		if (pools && !s->hold_clock && !copied_since(p, s, since, c) &&
		    copied_since_by(p, s, since, c, NULL))
			hold(p, s, last->clock, next);
		if (!copied_since_by(p, s, since, c, pools ? &c->tid : NULL))
			return;
	}
	if (!nl_copy_covered(n, s) && !again)
		return;
	if (again && stage_behind(e, p, s, c))
		take_next_stage(p, s, true);
	else
		take_token(p, s, next);
}

/* Batch b's stage went on on another sparse stream after its work on one
 * (bs): its input_dist handed to the collective stream. */
static bool went_through(const struct nl_batch *b, const struct nl_batch_stream *bs)
{
	for (int i = 0; i < b->nbs; i++)
		if (&b->bs[i] != bs && b->bs[i].stage == NL_STAGE_SPARSE && b->bs[i].has_work &&
		    b->bs[i].last_work.ts > bs->last_work.ts)
			return true;
	return false;
}

bool nl_other_than_first(const struct nl_batch *b, int slot, const struct nl_call *c)
{
	const struct nl_batch_stream *bs = nl_worked_stream(b, slot);

	return bs && bs->first_named && bs->first_sig != nl_call_sig(c);
}

bool nl_launch_after_handoff(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c)
{
	const struct nl_batch *h = nl_batch_of(p, s->token);
	const struct nl_ring_op *last;

	if (!h || !s->rec_fed || !s->nring || c->kind != NL_K_LAUNCH || !(c->fields & NL_F_FN))
		return false;
	last = &s->ring[(s->nring - 1) % NL_RING];
	return nl_api_info[last->api].kind == NL_K_EVENT_RECORD && last->token == s->token &&
	       nl_other_than_first(h, (int)(s - p->s), c);
}

/* Data-dist stream s launches, right after its record the collective
 * stream waited on (its hand-off of the batch it holds), with no wait
 * between, another kernel than the one its stages begin with (both
 * named): its stages' second part (dist_init), whose wait on the
 * all-to-all's end was dropped. A stream runs its batches in order: it is
 * the second part of the oldest batch, older than the one s holds, whose
 * stage on s ended with its first kernel still (its first part done, the
 * second not), where an older batch's stage on s ended with this kernel
 * (the stage has two parts), or where that batch's stage went on on the
 * collective stream after its work on s and its forward has not begun
 * (the first dist_init of a run, its wait dropped: random program
 * 75729, every later stage charged a batch late). That batch's token (NL_NO_TOKEN: none, the
 * batch s holds goes on). Before, the work was charged to the batch s
 * held, and the older batch, its stage ordered before a forward that
 * began without its edge, was judged trusted (random program 22307).
 * Not with compute on the null stream and blocking producers: its
 * implicit joins move compute on by what they cover, and the older
 * batch's second part, charged to it, was then judged after a window that
 * was not its forward (random program 266783: healthy batches accused). */
int64_t nl_second_part_of(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c)
{
	const struct nl_pipe *q = nl_pipe_of_token(p, s->token);
	const struct nl_batch_stream *hs;
	int slot = (int)(s - p->s);
	uint64_t sig = nl_call_sig(c);
	bool two = false;

	if (!q || !s->fed_by_copy || c->coll_depth || !nl_launch_after_handoff(p, s, c))
		return NL_NO_TOKEN;
	if (p->compute_slot >= 0 && nl_key_is_null(&p->s[p->compute_slot].key) && p->nblocking)
		return NL_NO_TOKEN;
	hs = nl_worked_stream(nl_batch_of(p, s->token), slot);
	for (int64_t t = q->oldest; t < s->token; t++) {
		const struct nl_batch *b = nl_batch_of(p, t);
		const struct nl_batch_stream *bs = b ? nl_worked_stream(b, slot) : NULL;

		if (!bs || !bs->first_named || bs->first_sig != hs->first_sig)
			continue;
		if (bs->last_work.sig == sig) {
			two = true;
			continue;
		}
		if ((two || (!b->fwd_started && went_through(b, bs))) && !b->closed &&
		    bs->last_work.sig == bs->first_sig)
			return t;
	}
	return NL_NO_TOKEN;
}

/* The collective stream (a sparse stream only other sparse streams feed)
 * launches again, right after its record, the kernel its work of its
 * batch began with, with no wait between, while another sparse stream has
 * begun the next batch since that record (the data-dist stream's
 * input_dist of it): that launch is the next batch's collective begun
 * without its edge, not more of the batch before (TorchRec's split sparse
 * stage, X.wait_stream(D) dropped). */
void nl_take_again_after_record(struct nl_proc *p, struct nl_stream *s, const struct nl_call *c)
{
	const struct nl_ring_op *last;
	const struct nl_batch *b, *n;
	const struct nl_batch_stream *bs;
	int64_t next;

	if (!s->nring || s->fed_by_copy || s->token == NL_NO_TOKEN || c->kind != NL_K_LAUNCH ||
	    !(c->fields & NL_F_FN) || !(b = nl_batch_of(p, s->token)))
		return;
	last = &s->ring[(s->nring - 1) % NL_RING];
	if (nl_api_info[last->api].kind != NL_K_EVENT_RECORD || last->token != s->token)
		return;
	bs = nl_worked_stream(b, (int)(s - p->s));
	if (!bs || !bs->first_named || bs->first_sig != nl_call_sig(c))
		return;
	next = next_batch(p, s, s->token);
	n = nl_batch_of(p, next);
	if (!n || n->closed || !n->st[NL_STAGE_SPARSE].work || !begun_since(p, s, next, last->ts))
		return;
	take_token(p, s, next);
}

/* Work on a sparse stream that no batch ever reached, while the copy stream
 * holds an open segment: the first batch's sparse stage began without its
 * edge (a fill_pipeline whose D.wait_stream(M) is missing; a segment of
 * more than one batch's copies, the fill's, is cut first: nl_cut_fill).
 * So is such work after the oldest batch's copy segment closed, in a
 * process of one pipeline whose compute took nothing yet, by a stream with
 * no op of that batch (a loader thread that copied two batches first; the
 * collective stream's first all-to-all without its wait on the data-dist
 * stream). */
void nl_take_first(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s)
{
	const struct nl_pipe *q = nl_pipe_of_stream(p, s);
	const struct nl_batch *b;
	int64_t tok = NL_NO_TOKEN;

	/* After an attach in the middle of a run the stream's token may come
	 * from an edge made before we looked. */
	if (p->mid_run || !q)
		return;
	for (uint32_t i = 0; i < p->w && tok == NL_NO_TOKEN; i++) {
		const struct nl_stream *m = &p->s[i];

		if (m->used && m->role == NL_ROLE_COPY && m->pipe == s->pipe && m->seg_open &&
		    m->token != NL_NO_TOKEN && m->token == q->oldest && nl_batch_of(p, m->token)) {
			tok = m->token;
			nl_cut_fill(e, p, (int)i);
		}
	}
	b = nl_batch_of(p, q->oldest);
	if (tok == NL_NO_TOKEN && p->npipes == 1 && q->fwd_max == NL_NO_TOKEN &&
	    q->tick_max == NL_NO_TOKEN && b && !b->closed &&
	    !touched(b, (int)(s - p->s)))
		tok = q->oldest;
	if (tok == NL_NO_TOKEN)
		return;
	take_token(p, s, tok);
	s->first_taken = tok;
}

/* Work on the compute stream before any batch reached it, in a process
 * traced from its start whose one pipeline has copied a batch whose forward
 * did not begin: that work is the oldest such batch's forward, begun
 * without its edge (a loop whose first wait is missing), as a sparse stream
 * takes the first batch (nl_take_first). */
void nl_take_first_compute(struct nl_proc *p, struct nl_stream *s)
{
	const struct nl_pipe *q = &p->pipes[0];
	struct nl_batch *b;

	if (p->mid_run || p->npipes != 1 || !q->used || q->fwd_max != NL_NO_TOKEN ||
	    q->tick_max != NL_NO_TOKEN)
		return;
	b = nl_batch_of(p, q->oldest);
	if (!b || b->closed || b->fwd_started)
		return;
	b->fwd_adopted = true;
	nl_set_token(p, (int)(s - p->s), b->token, p->call_ts);
	/* forward(b) began: b is handed over from the sparse streams that
	 * carry it, as by a take. Before, their next work, made before a
	 * newer batch reached them, stayed b's: the next batch's sparse
	 * stage, begun without its edge, was charged to b and its
	 * copy->sparse missed (random program 450215). */
	nl_hand_over_all(p, b->token);
}
