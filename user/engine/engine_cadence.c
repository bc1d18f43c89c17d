// SPDX-License-Identifier: MIT
/*
 * Tick cadence (docs/engine.md, "Tick cadence at the data-dist stream" and
 * "Tick cadence at compute"): which batch a wait, or the start of a step,
 * gives a sparse stream or compute when more than one is due, and the tests
 * of what a stream's clock already covers that those choices rest on.
 */
#include "engine/engine_int.h"

/* Batch b's sparse stage has begun: reached by an edge, or begun without
 * it (work of its own, its copy->sparse fault named on it). Either way its
 * sparse work is what compute and the cadences look for, not the edge. */
static bool sparse_begun(const struct nl_batch *b)
{
	return b->reached_sparse || b->st[NL_STAGE_SPARSE].work;
}

/* ...begun without its edge: its copy is not ordered before that work. */
static bool sparse_without_edge(const struct nl_batch *b)
{
	return !b->reached_sparse && b->st[NL_STAGE_SPARSE].work;
}

/* Compute takes a batch of a pipeline with a sparse stage from its sparse
 * streams: a wait of compute on the copy stream orders (its clock is
 * joined) but does not move compute to the copy stream's newer batch, which
 * a legal wait made after that batch's copy would (the [oversync] programs
 * of the random testing). */
bool nl_over_copy(const struct nl_proc *p, int slot, const struct nl_stream *from,
		  const struct nl_event *ev)
{
	const struct nl_pipe *q;

	if (slot != p->compute_slot || !from || from->role != NL_ROLE_COPY ||
	    ev->token == NL_NO_TOKEN)
		return false;
	q = &p->pipes[nl_tok_pipe(ev->token)];
	return q->has_sparse && ev->token > q->fwd_max;
}

/* Compute's window `w` began with the step's two first kernels: different,
 * both named (one kernel launched twice could be a forward after another's,
 * and launches counted in a run carry no kernel address), and every step so
 * far began with them (a forward whose first kernels vary would not show
 * its restart). */
static bool opens_step(const struct nl_pipe *q, const struct nl_stage_acc *w)
{
	return nl_first_work(w) >= 2 && w->first_named[0] && w->first_named[1] &&
	       w->first_sig[0] != w->first_sig[1] && q->step.n && !q->step.varied &&
	       q->step.sig[0] == w->first_sig[0] && q->step.sig[1] == w->first_sig[1];
}

/* A compute op in another pipeline's window went unwatched, or a launch
 * of the step's first kernel there whose next op was not seen yet */
static bool blind(const struct nl_watch *cw)
{
	return cw->blind || cw->blind_pending;
}

/* Batch b's consumer watch was armed after its last producer op (at
 * `last`: a batch cut from a segment after the fact) and may have missed
 * its forward begun without the edge: compute's window (of batch `own`)
 * restarted its forward between `last` and the arming. Not a restart the
 * batch before's watch took as its own (one restart is one batch's),
 * with launches named: before, a loader's merged segment cut after the
 * batch before's restart had that restart count for both, and the
 * healthy batch was accused copy->forward (random program 169337). With
 * launches counted, runs show restarts too weakly for that. */
static bool unwatched_restart(struct nl_proc *p, const struct nl_batch *own, const struct nl_batch *b,
			      uint64_t last)
{
	uint64_t armed = b->watch[NL_CONSUMER_COMPUTE].armed_ts;
	const struct nl_stage_acc *w = &own->st[NL_STAGE_FORWARD];
	const struct nl_batch *x = nl_batch_of(p, b->token - 1);

	if (!p->unnamed_launch && x && !x->fwd_started && x->watch[NL_CONSUMER_COMPUTE].repeat &&
	    x->watch[NL_CONSUMER_COMPUTE].mark_ts == w->again_ts)
		return false;
	return armed > last && w->again_ts > last && w->again_ts < armed;
}

/* Batch b's consumer watch was armed late (b cut from a merged copy
 * segment, at `armed`, after its last producer op at `last`), but every
 * step compute began in between is accounted for by an older batch of b's
 * pipeline: no window of another pipeline's batch, nor of a newer one,
 * began by a restart then, and each restart inside a window then began
 * the next batch's window, that batch of b's pipeline and older than b.
 * Windows begun by a wait are their batches'. b's forward begun without
 * its edge in between would have been one of those restarts. Before, a
 * loader that ran ahead put b's copy before the batch before's restart
 * and an evaluation turn, the merged segment was cut only after the turn,
 * and the healthy b was passed over and accused copy->forward (random
 * program 95122). With launches counted in runs too, while the probes'
 * rows are followed (not rows_unsure): a step begun again inside a
 * window keeps its first two kernels named (include/nanlog_rec.h, "Step
 * starts stay named"), so again_ts sees it. Before, this held with
 * launches named only, and with them counted a healthy batch after an
 * evaluation turn was accused copy->forward (random programs 95122,
 * 195694, 222116, counted): 9 programs fixed, 2 newly missing a fault
 * whose batch after is skipped (seeds 1-600,000). */
static bool steps_accounted(struct nl_proc *p, const struct nl_batch *b, uint64_t last)
{
	uint64_t armed = b->watch[NL_CONSUMER_COMPUTE].armed_ts;

	const struct nl_batch *x;

	if (p->unnamed_launch && p->rows_unsure)
		return false;
	NL_FOR_BATCHES(p, x) {
		const struct nl_stage_acc *f = &x->st[NL_STAGE_FORWARD];
		const struct nl_batch *n;
		bool older = nl_tok_pipe(x->token) == nl_tok_pipe(b->token) && x->token < b->token;

		if (x->fwd_started && !x->fwd_waited && f->first_ts > last && f->first_ts < armed &&
		    !older)
			return false;
		if (f->again_ts <= last || f->again_ts >= armed)
			continue;
		n = nl_batch_of(p, x->token + 1);
		if (!older || x->token + 1 >= b->token || !n || !n->fwd_started || n->fwd_waited ||
		    n->st[NL_STAGE_FORWARD].first_ts < f->first_ts)
			return false;
	}
	return true;
}

/* Compute began its step again after batch b's last producer op (at
 * `last`) while b was due and not ordered, and nl_step_begins kept that
 * restart for b (more than one pipeline: again_tok) instead of marking
 * b's watch; no wait since showed it another batch's (again_not_its), and
 * none was kept while b's copy segment was open (again_open: for the exit
 * only). More such restarts than batches of other pipelines that were
 * due and not ordered then (again_others): one of them was b's forward.
 * One restart beside another pipeline's unordered batch may have been
 * that batch's: before, such a healthy b was passed over and accused
 * (random program 190416656, launches named). */
static bool kept_restart(const struct nl_proc *p, const struct nl_batch *b, uint64_t last)
{
	for (int i = 0; i < p->npipes; i++) {
		const struct nl_pipe *x = &p->pipes[i];

		if (x->used && x->again_ts > last && x->again_tok == b->token && !x->again_not_its &&
		    x->again_n > x->again_others && !x->again_open)
			return true;
	}
	return false;
}

/* The consumer watch could have seen batch b's forward begin in compute's
 * current window: it watched every compute op after the batch's last
 * producer op (at `last`). Compute in another pipeline's window now (an
 * evaluation turn): the window of b's pipeline compute held last, where
 * the watch, armed by then, saw no op of the other pipeline's windows
 * since that could have begun b's step (not blind: no launch of the
 * kernel b's steps begin with but the first of a window a wait began).
 * Before, b was passed over, and a wait that brought it gave compute the
 * next batch: b was accused copy->forward (random program 27658). A watch
 * armed only after the turn, b cut from a merged segment, did not see it,
 * but stands where every step begun since b's last producer op is another
 * batch's (steps_accounted). Never over a restart kept for b
 * (kept_restart): the watch did not mark it, and that restart may have
 * been b's forward. Before, the wait that covered b and the batch after
 * gave b its forward: b's fault was missed and the pipeline's last batch
 * skipped target_exited (random programs 364562, 381383, 115297). */
static bool restart_watched(struct nl_proc *p, const struct nl_stream *s, const struct nl_batch *b,
			    uint64_t last)
{
	const struct nl_batch *own = nl_batch_of(p, s->token);
	const struct nl_pipe *q = nl_pipe_of_token(p, b->token);
	const struct nl_stage_acc *w;

	if (own && q && nl_tok_pipe(own->token) != nl_tok_pipe(b->token) &&
	    !blind(&b->watch[NL_CONSUMER_COMPUTE]) &&
	    (b->watch[NL_CONSUMER_COMPUTE].armed_ts <= last || steps_accounted(p, b, last)) &&
	    q->fwd_max != NL_NO_TOKEN)
		own = nl_batch_of(p, q->fwd_max);
	w = own ? &own->st[NL_STAGE_FORWARD] : NULL;
	if (kept_restart(p, b, last))
		return false;
	return w && q && own != b && nl_tok_pipe(own->token) == nl_tok_pipe(b->token) &&
	       own->token < b->token && opens_step(q, w) && b->watch[NL_CONSUMER_COMPUTE].armed &&
	       !unwatched_restart(p, own, b, last);
}

/* Every producer work op of batch b is ordered before stream s's clock: the
 * last one's time, 0 when one is not (or there is none). Not the copy of a
 * batch whose sparse stage began without its edge: nothing orders it
 * before compute, and its fault is named on the batch already (copy->sparse);
 * its sparse work covered is what lets compute take it. */
static uint64_t producers_before(const struct nl_batch *b, const struct nl_stream *s)
{
	uint64_t last = 0;

	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == NL_STAGE_FORWARD || !bs->has_work)
			continue;
		if (bs->stage == NL_STAGE_COPY && sparse_without_edge(b))
			continue;
		if (bs->last_work.clock > s->vc[bs->slot])
			return 0;
		if (bs->last_work.ts > last)
			last = bs->last_work.ts;
	}
	return last;
}

/* Stream s waited on an event recorded on stream slot, as far as its ring
 * remembers. */
static bool waited_on(const struct nl_stream *s, int slot)
{
	for (uint32_t k = s->nring; k > nl_ring_start(s); k--) {
		const struct nl_ring_op *r = &s->ring[(k - 1) % NL_RING];

		if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT && r->ev_slot == slot)
			return true;
	}
	return false;
}

/* TorchRec's step-a wait with the all-to-all on a collective stream:
 * compute waits on the data-dist stream before that stream took the
 * batch's all-to-all back (dist_init comes after). Every copy and
 * data-dist op of the batch is ordered before compute, and only work on a
 * stream compute never waits on itself is not; nor the copy of a batch
 * whose sparse stage began without its edge (its copy->sparse fault). */
static bool covered_but_collective(const struct nl_batch *b, const struct nl_stream *s)
{
	bool behind = false;

	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == NL_STAGE_FORWARD || !bs->has_work ||
		    bs->last_work.clock <= s->vc[bs->slot])
			continue;
		/* a sparse stage begun without its edge: the copy is not
		 * ordered before it, nor through it before compute */
		if (bs->stage == NL_STAGE_COPY && sparse_without_edge(b))
			continue;
		if (bs->stage != NL_STAGE_SPARSE || waited_on(s, bs->slot))
			return false;
		behind = true;
	}
	return behind;
}

/* The consumer watch saw every compute work op after the batch's last
 * producer op and none was unordered: it watched the batch from then (its
 * producer ops were accounted live, not re-cut or restamped later), and
 * no op went unwatched in another pipeline's window. */
static bool watched(const struct nl_batch *b, uint64_t last)
{
	const struct nl_watch *cw = &b->watch[NL_CONSUMER_COMPUTE];

	return !cw->valid && !blind(cw) && cw->armed && cw->armed_ts <= last;
}

/* Compute holds the first batch it ever worked on, taken by its first work
 * op without a wait (nl_take_first_compute: that take was dropped), and b
 * is the next one: the work of that window is one step, the first
 * batch's. With launches counted in runs nothing else could tell b's
 * forward begun in it too (two dropped takes in a row: then b is missed,
 * not a healthy b accused). Not where that window began the step again
 * (its first two kernels again, named) after b's last producer op (at
 * `last`): that restart may be b's forward, begun before the segment that
 * cut b from the next batch closed. */
static bool after_first_window(struct nl_proc *p, const struct nl_stream *s, const struct nl_batch *b,
			       uint64_t last)
{
	const struct nl_batch *own = nl_batch_of(p, s->token);

	return own && own->fwd_adopted && b->token == own->token + 1 && nl_tok_seq(own->token) == 0 &&
	       own->st[NL_STAGE_FORWARD].again_ts <= last;
}

/* Every producer op of the batch is ordered before the stream's clock, and
 * the stream's last work (at `mine`) cannot be this batch's forward begun
 * without its edge. */
static bool batch_covered(struct nl_proc *p, const struct nl_batch *b, const struct nl_stream *s,
			  uint64_t mine)
{
	uint64_t last = producers_before(b, s);

	/* Work after them may be this batch's forward begun without its edge.
	 * It is not when the consumer watch saw every such work op ordered
	 * after them (watched), nor when compute held an older batch of the
	 * same pipeline whose forward shows its first two kernels (same
	 * thread): a forward begun again without the edge would have repeated
	 * them there (watch[NL_CONSUMER_COMPUTE].repeat, "end of a run"). */
	return last && (mine < last || watched(b, last) || restart_watched(p, s, b, last) ||
			(b->prev_covered && last <= b->prev_ts) ||
			after_first_window(p, s, b, last));
}

/* The batch stream s holds, of tok's pipeline, still open, taken and no
 * work done on it yet (NULL: none such). */
const struct nl_batch *nl_held_unworked(struct nl_proc *p, const struct nl_stream *s, int64_t tok)
{
	const struct nl_batch *h;

	if (s->token == NL_NO_TOKEN || nl_tok_pipe(s->token) != nl_tok_pipe(tok))
		return NULL;
	h = nl_batch_of(p, s->token);
	return h && !h->closed && !h->fwd_work ? h : NULL;
}

/* The stream batch b did the work of stage st on; -1 none, -2 more than one. */
static int stage_slot(const struct nl_batch *b, int st)
{
	int slot = -1;

	for (int i = 0; i < b->nbs; i++) {
		if (b->bs[i].stage != st || !b->bs[i].has_work)
			continue;
		if (slot >= 0 && slot != b->bs[i].slot)
			return -2;
		slot = b->bs[i].slot;
	}
	return slot;
}

/* The stream batch b was copied on; -1 none, -2 more than one. */
static int copy_slot(const struct nl_batch *b)
{
	return stage_slot(b, NL_STAGE_COPY);
}

/* Compute's windows begin with named kernels (launches named, not counted
 * in runs), and the window of the batch it holds shows at most n steps
 * begun again: its first kernel launched no more than n + 1 times as often
 * as the fewest launches of it any whole window had (first_min: a step
 * whose backward begins with forward's first kernel launches it twice).
 * n is the number of due batches a wait passed over (nl_cadence): each
 * such restart was one of theirs. Before, only one: an evaluation turn
 * whose first two takes were dropped began both forwards in training's
 * window, the wait after took the batch after the third, and that one,
 * healthy, was accused copy->forward (random program 52858). Before,
 * one launch more than that: one restart of such a step counted as two,
 * and a wait that covered the batch after the restarted one took the
 * newest batch it covered, the healthy one between accused (random
 * program 37418). Nor did a window of another pipeline than `pipe`'s
 * begin the step again twice since `since` (the first passed-over batch's
 * last producer op): an evaluation turn whose two takes were dropped
 * began both its forwards in the training pipeline's window, the wait
 * after the turn took the second batch, and its fault was missed, the
 * last batch of the next turn skipped (random program 87852). Only there:
 * a window of the batches' own pipeline keeps the launches of a restart
 * another batch took (restart_take), and counting it accused a healthy
 * batch (random program 129902). */
static bool restarts_at_most(struct nl_proc *p, const struct nl_stream *s, uint64_t since,
			     int pipe, uint32_t n)
{
	const struct nl_batch *own = nl_batch_of(p, s->token);
	const struct nl_pipe *q = own ? nl_pipe_of_token(p, own->token) : NULL;
	const struct nl_batch *x;

	if (!(q && q->step.n && !q->run_n &&
	      own->st[NL_STAGE_FORWARD].first_hits <= (n + 1) * nl_step_first_min(q)))
		return false;
	NL_FOR_BATCHES(p, x) {
		const struct nl_pipe *xq = nl_pipe_of_token(p, x->token);
		const struct nl_stage_acc *f = &x->st[NL_STAGE_FORWARD];

		if (x == own || !xq || !f->work || f->last_ts <= since)
			continue;
		if (nl_tok_pipe(x->token) != pipe &&
		    f->first_hits > (n + 1) * nl_step_first_min(xq) && f->prev_hit_ts > since)
			return false;
	}
	return true;
}

/* Stream s did work after ts, or its ring does not reach back to ts. */
static bool worked_since(const struct nl_stream *s, uint64_t ts)
{
	uint32_t start = nl_ring_start(s);

	if (start > 0 && s->ring[start % NL_RING].ts > ts)
		return true;
	return nl_ring_last_work_ts(s) > ts;
}

/* Compute never held a batch, in a process traced from its start: its work
 * so far is one window, the first batch's forward begun without its edge
 * (its first take dropped), taken by no batch because the pipeline's copy
 * stream was found by its edges only at this wait (learning took another
 * pipeline's first). nl_take_first_compute gives that window the first
 * batch where the copy stream was known; after_first_window then passes
 * over it, as this does. */
static bool first_window_unheld(const struct nl_proc *p, const struct nl_stream *s)
{
	return s->token == NL_NO_TOKEN && !p->mid_run;
}

/* Batch b's sparse stage began without its edge inside the batch before's
 * segment on the data-dist stream (nl_sparse_due passed it over for it),
 * where that stage ran on one stream: that segment, with b's stage, is
 * ordered before compute's wait on its record, and b is due there as if
 * its stage had begun (random program 30969). Not where a collective
 * stream took part: compute's second wait in that batch's window then
 * took b's forward already. */
static bool merged_stage(struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_batch *x = nl_batch_of(p, b->token - 1);

	return b->unfed_passed && x && p->npipes == 1 && !x->sparse_retake &&
	       stage_slot(x, NL_STAGE_SPARSE) >= 0;
}

/* Batch tok, the next after the one compute holds, began its forward in
 * compute's window already: its consumer watch saw the step begin again
 * there with compute ordered after part of tok's sparse stage (a wait on
 * the data-dist stream, before tok's stage was done, that brought nothing
 * new: D carried the batch before, given back by its wait on that batch's
 * all-to-all). A wait that brings tok now came after its forward began:
 * it is no take of tok (the take was dropped), and compute stays, as the
 * restart showed. Before, it took tok, whose forward was then the next
 * batch's, and the fault was missed: sparse->forward on tok (random
 * program 8401). Only with one pipeline (another's batch may be the one
 * restarted), and only where part of tok's sparse stage was ordered at
 * the restart: where none was, the restart may be another batch's, the
 * sparse numbering a batch off (random program 61994). */
static bool begun_before_take(struct nl_proc *p, const struct nl_stream *s, int64_t tok)
{
	const struct nl_batch *b = nl_batch_of(p, tok);
	const struct nl_watch *cw = b ? &b->watch[NL_CONSUMER_COMPUTE] : NULL;

	return cw && !b->closed && !b->fwd_started && cw->repeat && cw->part &&
	       s->token != NL_NO_TOKEN && tok == s->token + 1 && p->npipes == 1;
}

/* The oldest token of pipeline q whose forward compute has not begun:
 * after its newest forward, and not before its oldest batch still held. */
static int64_t after_forward(const struct nl_pipe *q)
{
	return q->fwd_max + 1 > q->oldest ? q->fwd_max + 1 : q->oldest;
}

/* Compute, in a window of another pipeline than batch b's, began its
 * step again there after b's producers with nothing of that pipeline left
 * to begin (nl_lone_again, kept for the exit), not right after a wait of
 * its own (that step is the wait's): the restart was b's forward, begun
 * without its edge. A wait that covers b now is no take of it, whatever
 * lag the takes had: b is passed over. Before, the learned lag gave it b,
 * its fault was missed and the pipeline's last batch, the wait's own,
 * was skipped target_exited (random program 82061: training's take
 * dropped with its record after an evaluation turn, in the drain, where
 * the last take has no newer copy to be made after). */
static bool lone_restart_of(struct nl_proc *p, const struct nl_stream *s,
			    const struct nl_batch *b)
{
	const struct nl_batch *own = nl_batch_of(p, s->token);
	const struct nl_pipe *oq = own ? nl_pipe_of_token(p, own->token) : NULL;

	if (!(oq && nl_tok_pipe(own->token) != nl_tok_pipe(b->token) && nl_lone_again(oq) &&
	      nl_lone_again(oq) > nl_producers_last(b) &&
	      nl_lone_again(oq) > own->st[NL_STAGE_FORWARD].first_ts))
		return false;
	for (uint32_t k = nl_ring_start(s) + 1; k < s->nring; k++)
		if (s->ring[k % NL_RING].ts == nl_lone_again(oq))
			return nl_api_info[s->ring[(k - 1) % NL_RING].api].kind != NL_K_STREAM_WAIT;
	return false;
}

/* Tick cadence: a wait of compute that brings batch tok but also covers an
 * older batch of its pipeline that no forward began yet (a legal wait made
 * after a newer batch's producer work: a fill phase whose data-dist record
 * covers two batches) takes that older batch first; the next wait moves on.
 * Not a batch whose forward already restarted without it (the dropped-edge
 * signature of "end of a run"), nor one whose sparse stage it never
 * reached and that has no sparse work (the data-dist stream's first work,
 * given the oldest batch without its edge, is some): those were passed
 * over. A batch cut from a merged copy segment
 * is taken like any other: the wait that covers it is its own, and its
 * forward begun before the cut (a whole wait_stream dropped) shows as a
 * restart of compute's window that its watch, armed at the cut, did not
 * see (unwatched_restart).
 * A wait on the copy stream (`from`) of the oldest due batch that covers
 * it takes it, though compute's last window might hold its forward begun
 * without its edge, rather than a newer batch of another copy stream that
 * was covered before: a wait on one copy stream brings nothing of a batch
 * copied on another (batch i on M[i % 2], launches counted in runs).
 * stale: the wait brings nothing new (a record compute waited on). */
int64_t nl_cadence(struct nl_proc *p, int slot, int64_t tok, int from, bool stale)
{
	int64_t doubt = NL_NO_TOKEN; /* the oldest due batch `from` carries */
	bool passed = false;         /* a due batch passed over, ordered before */
	uint32_t npassed = 0;        /* how many */
	bool repeated = false;       /* ...one whose forward restarted without it */
	uint64_t passed_ts = 0;      /* the first passed over's last producer op */
	struct nl_pipe *q = nl_pipe_of_token(p, tok);
	const struct nl_stream *s = &p->s[slot];
	uint64_t mine; /* compute's last work */
	int64_t t, first;

	if (slot != p->compute_slot || !q)
		return tok;
	/* compute took a batch and did no work on it yet: a wait that brings
	 * a newer batch is that batch's take again. TorchRec waits twice for
	 * one batch (step a, before dist_init, and step d after it), and the
	 * second wait's record may carry a newer batch (the data-dist stream
	 * ran ahead); a batch's step does work. Before, only where the first
	 * wait came before the batch's producers were done: a second wait
	 * for one batch whose producers both covered moved compute on, and
	 * the batch's forward was charged to the next. Not where implicit
	 * null-stream edges, not waits, move compute (from < 0): an explicit
	 * wait of a null-stream compute keeps its batch too. */
	if (s->token < tok && !(nl_key_is_null(&s->key) && p->nblocking && from < 0) &&
	    nl_held_unworked(p, s, tok))
		return s->token;
	mine = nl_ring_last_work_ts(s);
	t = after_forward(q);
	first = t;
	for (; t < tok; t++) {
		const struct nl_batch *b = nl_batch_of(p, t);

		/* the lag every recent take had: the wait for batch t made after
		 * batch t + lag's producer work, as every step so far */
		bool by_lag = q->lag > 0 && q->lag_n >= NL_LAG_SURE && t == tok - q->lag;
		bool ordered; /* every producer op of it ordered before the wait */

		/* a batch whose forward began again in compute's window
		 * without it (repeat) was passed over for that work: with one
		 * pipeline, where the window began the step again once, that
		 * restart was its own and the next due batch's forward could
		 * not begin before it (random program 260430: the next batch
		 * passed over too and accused copy->forward) */
		if (b && !b->closed && !b->fwd_started && b->watch[NL_CONSUMER_COMPUTE].repeat)
			repeated = true;
		if (!b || b->closed || b->fwd_started || b->watch[NL_CONSUMER_COMPUTE].repeat ||
		    !b->copy_closed || (q->has_sparse && !sparse_begun(b) && !merged_stage(p, b)))
			continue;
		ordered = producers_before(b, s) != 0;
		if (by_lag && ordered && t == first && lone_restart_of(p, s, b))
			by_lag = false;
		if (batch_covered(p, b, s, mine) || (by_lag && ordered) || covered_but_collective(b, s))
			return doubt != NL_NO_TOKEN && from >= 0 && copy_slot(b) != from ? doubt : t;
		if (!ordered) {
			/* a wait on a record compute waited on already
			 * brings nothing: it is the first due batch's take,
			 * made without its edge, not a newer batch's passing
			 * it over (the record of the copy it was for dropped,
			 * the event recorded on another copy stream since) */
			if (t == first && stale)
				return t;
			/* the wait is on another copy stream than the first
			 * due batch's and brings nothing of it (one event the
			 * copy streams record in turn), and compute did no work
			 * since that batch's copy began: its next work is that
			 * batch's forward, begun without its edge, not the
			 * newer batch's (as at the data-dist stream,
			 * nl_sparse_due). Before, the wait gave the newer batch
			 * and every later take was a batch ahead. */
			if (t == first && !q->has_sparse && from >= 0 &&
			    p->s[from].role == NL_ROLE_COPY && copy_slot(b) >= 0 &&
			    copy_slot(b) != from && !worked_since(s, b->st[NL_STAGE_COPY].first_ts))
				return t;
			continue;
		}
		/* an older due batch was passed over for compute's work since
		 * its producers: that work holds its forward begun without its
		 * edge, if any, and this batch's could not begin before it,
		 * unless the window began the step again more often than
		 * batches were passed over (restarts_at_most). With launches
		 * counted in runs no kernel shows how often it did: one run may
		 * hide two steps begun without their edges (two takes dropped in
		 * a row), and the second is then missed; without the take, a
		 * single dropped take had its healthy neighbour accused too. */
		if ((passed && (restarts_at_most(p, s, passed_ts, nl_tok_pipe(t), npassed) ||
				p->unnamed_launch || first_window_unheld(p, s))) ||
		    (repeated && p->npipes == 1 && restarts_at_most(p, s, UINT64_MAX, nl_tok_pipe(t), 1)))
			return t;
		if (!passed)
			passed_ts = nl_producers_last(b);
		passed = true;
		npassed++;
		if (doubt == NL_NO_TOKEN && from >= 0 && copy_slot(b) == from)
			doubt = t;
	}
	if (begun_before_take(p, s, tok))
		return s->token;
	return tok;
}

/* Every copy op of batch b is ordered before stream s's clock. */
bool nl_copy_covered(const struct nl_batch *b, const struct nl_stream *s)
{
	bool any = false;

	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage != NL_STAGE_COPY || !bs->has_work)
			continue;
		if (bs->last_work.clock > s->vc[bs->slot])
			return false;
		any = true;
	}
	return any;
}

bool nl_copy_before_wait(const struct nl_batch *b, const struct nl_ring_op *w)
{
	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == NL_STAGE_COPY && bs->has_work &&
		    (bs->slot != w->ev_slot || bs->last_work.clock > w->ev_clock))
			return false;
	}
	return true;
}

/* Work of the stream before its ring op k carried token tok. */
static bool worked_before(const struct nl_stream *s, uint32_t k, int64_t tok)
{
	for (uint32_t j = nl_ring_start(s); j < k; j++)
		if (s->ring[j % NL_RING].work && s->ring[j % NL_RING].token == tok)
			return true;
	return false;
}

/* Stream s did work while carrying token tok (its last ops). */
static bool worked_on(const struct nl_stream *s, int64_t tok)
{
	return worked_before(s, s->nring, tok);
}

/* Token t is a batch of tok's pipeline older than tok and newer than
 * `last`, the batch the stream held before (unfed_segment). */
static bool older_after(int64_t t, int64_t last, int64_t tok)
{
	return t != NL_NO_TOKEN && t < tok && last != NL_NO_TOKEN && t > last &&
	       nl_tok_pipe(t) == nl_tok_pipe(tok);
}

/* Stream x's ring holds a wait on stream slot's record at `clock`. */
bool nl_ring_waited(const struct nl_stream *x, int slot, uint32_t clock)
{
	for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
		const struct nl_ring_op *r = &x->ring[k % NL_RING];

		if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT && r->ev_slot == slot &&
		    r->ev_clock == clock)
			return true;
	}
	return false;
}

/* Another sparse stream waited on the record at `clock` of stream s (D
 * handing its input_dist to the collective stream): the batch goes on on s
 * after it. */
static bool waited_by(const struct nl_proc *p, const struct nl_stream *s, uint32_t clock,
		      bool unroled)
{
	int slot = (int)(s - p->s);

	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];

		if (x->used && x != s &&
		    (x->role == NL_ROLE_SPARSE || (unroled && x->role == NL_ROLE_OTHER)) &&
		    nl_ring_waited(x, slot, clock))
			return true;
	}
	return false;
}

static bool handed_on(const struct nl_proc *p, const struct nl_stream *s, uint32_t clock)
{
	return waited_by(p, s, clock, false);
}

/* The stream did work after ts that no wait made after ts preceded with
 * only work between (a segment begun before ts, or after one of its records
 * with no wait between): that work could be a batch's sparse stage begun
 * without its edge, merged into the segment before. Not work the hand-off
 * rule gave a batch of its own (a token other than the wait's or the work's
 * before it, that no earlier work carried), nor the stream's first work
 * when nl_take_first gave it the oldest batch and it began after ts (it
 * began after the newer batch's copy, yet was the older batch's). A record
 * another sparse stream waited on (the hand-off to the collective stream),
 * or of an event one waited on before (that hand-off's event recorded
 * again, its wait dropped: handoff, op_record), does not end a segment:
 * the work after it goes on with the batch, unless
 * it launches again the kernel the batch's sparse stage began with; that
 * work, on the batch the stream held, is not unfed either. Nor
 * does work the engine found to be the batch's own stage going on after
 * compute's step-a wait (goes_on: dist_init without its wait on the
 * all-to-all's end). A record right after a record, with nothing between
 * (an allocator's event, only queried), is the first one's again: it
 * neither ends a segment nor the hand-off (as rec_fed, op_record). Nor
 * work before a later wait on the copy stream that moved the stream to a
 * batch older than tok, the batch asked about: that work was that batch's
 * or older (random program 18707: D's wait for batch 2 gave it batch 1, D
 * one behind after a merged segment, and its work before that wait passed
 * batch 2 over, accused copy->sparse). Nor, likewise, the work of a
 * segment a wait began, gone on after ts (a loader thread's copy of a
 * later batch made while the stage ran), that a batch older than tok
 * followed on the stream, its wait dropped (the hand-off rule gave it its
 * token, or its input_dist came right after dist_init of the batch
 * before): before, a redundant wait dropped made the stage going on pass
 * the batch after over, and that healthy batch was accused copy->sparse
 * (loader_copy_inside_stage, loader_copy_inside_collective_stage; random
 * programs 160729, 11143 and 62516, a loader's copies inside the stage).
 * Not a segment begun without a wait: where the stream's first waits
 * were all dropped, the tokens the hand-off rule gave may be one behind,
 * and the pass-over makes up for it. unfed_segment: the start of the
 * first segment holding such work that began after `after` (0: none);
 * each such segment is one batch's stage. */
static uint64_t unfed_segment(const struct nl_proc *p, const struct nl_stream *s, uint64_t ts,
			      int64_t tok, uint64_t after)
{
	uint32_t k = nl_ring_start(s);
	int64_t last = NL_NO_TOKEN;
	bool fed = false, handed = false, rec = false;
	/* the current segment began with a wait (or a join); so did the unfed one */
	bool waited = false, unfed_waited = false;
	uint64_t unfed = 0, seg = 0; /* the first unfed segment's start; the current one's */

	for (; k < s->nring; k++) {
		const struct nl_ring_op *r = &s->ring[k % NL_RING];
		int kind = nl_api_info[r->api].kind;

		if (kind == NL_K_STREAM_WAIT) {
			/* a later wait on the copy stream moved the stream to
			 * a batch older than tok: the work before it was that
			 * batch's or older, as a stream runs its batches in
			 * order */
			if (r->ev_slot >= 0 && p->s[r->ev_slot].role == NL_ROLE_COPY &&
			    older_after(r->token, last, tok))
				unfed = 0;
			handed = rec = false;
			fed = r->ts > ts;
			last = r->token;
			seg = 0;
			waited = true;
			continue;
		}
		if (kind == NL_K_EVENT_RECORD) {
			/* a second record with nothing between (an allocator's
			 * event, only queried) carries what the first did */
			if (!rec) {
				handed = handed_on(p, s, r->clock) || r->handoff;
				if (!handed) {
					fed = false;
					seg = 0;
					waited = false;
				}
			}
			rec = true;
			continue;
		}
		if (!r->work)
			continue;
		rec = false;
		if (r->joined) {
			/* its batch came by an implicit join at this op: as a
			 * wait right before it */
			handed = false;
			fed = r->ts > ts;
			last = r->token;
			seg = 0;
			waited = true;
		}
		if (!seg)
			seg = r->ts;
		if (r->goes_on) {
			last = r->token; /* the batch's own stage going on */
		} else if (handed && !r->again && r->token == last) {
			/* the batch's stage going on after its hand-off to the
			 * collective stream (dist_init without its wait on the
			 * all-to-all's end) */
		} else {
			if (handed && r->again) {
				fed = false;
				seg = r->ts;
				waited = false;
			}
			handed = false;
			/* the first work of a batch older than tok, after the
			 * batch before (given by the hand-off rule, or right
			 * after a wait on the all-to-all's end): the work of a
			 * segment a wait began before it was that batch's or
			 * older */
			if (unfed_waited && older_after(r->token, last, tok) &&
			    !worked_before(s, k, r->token))
				unfed = 0;
			if (!fed && r->token != NL_NO_TOKEN && r->token != last &&
			    (last != NL_NO_TOKEN || (r->token == s->first_taken && r->ts > ts)) &&
			    !worked_before(s, k, r->token))
				fed = true;
			if (r->ts > ts && !fed && seg > after && !unfed) {
				unfed = seg;
				unfed_waited = waited;
			}
			last = r->token;
		}
	}
	return unfed;
}

static bool unfed_work_since(const struct nl_proc *p, const struct nl_stream *s, uint64_t ts,
			     int64_t tok)
{
	return unfed_segment(p, s, ts, tok, 0) != 0;
}

/* TorchRec's split sparse stage with the all-to-all's end event recorded
 * again for every batch: the collective stream records batch k + 1's end
 * before the data-dist stream waits on batch k's, so that wait finds
 * k + 1's record. It brings the oldest batch compute has not begun whose
 * all-to-all came back and that the data-dist stream has not gone on with
 * (dist_init(k)), not k + 1. The record decides where an older batch's
 * sparse stage began without its edge (where its work went is not known),
 * and where a newer batch's stage went on after its all-to-all already (a
 * dist_init run without its wait, charged to the batch the stream held).
 * An older batch whose sparse stage began without its edge (copy->sparse)
 * but has sparse work of its own is such a batch too: before, it stopped
 * the rule, and every later dist_init was charged a batch late.
 * With launches counted in runs too: the probes keep a step's first
 * kernels named (include/nanlog_rec.h), so compute's cadence sees a
 * forward begin without its take. Before they did, it took such a batch
 * by the lag of the data-dist stream's records, which this rule takes
 * away, and the rule held only with every launch named. */
static int64_t end_due(struct nl_proc *p, int slot, const struct nl_stream *from, int64_t tok)
{
	const struct nl_stream *s = &p->s[slot];
	const struct nl_pipe *q = nl_pipe_of_token(p, tok);
	int x = (int)(from - p->s);
	int64_t t, found = NL_NO_TOKEN;

	if (!q || s->role != NL_ROLE_SPARSE || !s->fed_by_copy ||
	    from->fed_by_copy || from->pipe != s->pipe || s->token == NL_NO_TOKEN ||
	    nl_tok_pipe(s->token) != nl_tok_pipe(tok))
		return tok;
	for (t = after_forward(q); t <= tok; t++) {
		const struct nl_batch *b = nl_batch_of(p, t);
		const struct nl_batch_stream *bx, *bs; /* its work on from, on s */

		if (!b || b->closed || b->fwd_started)
			continue;
		bx = nl_worked_stream(b, x);
		bs = nl_worked_stream(b, slot);
		if (found == NL_NO_TOKEN) {
			if (t == tok || !sparse_begun(b))
				return tok;
			/* its all-to-all came back (ordered before s), and s
			 * did none of its work after it */
			if (bx && bs && bx->last_work.clock <= s->vc[x] &&
			    bs->last_work.ts < bx->last_work.ts)
				found = t;
			continue;
		}
		if (bx && bs && bs->last_work.ts > bx->last_work.ts)
			return tok;
	}
	return found != NL_NO_TOKEN ? found : tok;
}

/* The segments of work sparse stream s did before it had a role (no token
 * on any of its ops), each ended by its record or by a copy on m between
 * two of its ops (the next batch copied); 0 when some of its life is not
 * remembered: its ring wrapped, or it may have worked before we looked. */
static int unroled_segments(const struct nl_proc *p, const struct nl_stream *s,
			    const struct nl_stream *m)
{
	uint32_t start = nl_ring_start(s);
	bool open = false;
	uint64_t last = 0;
	int n = 0;

	if (start != 0 || !(s->creation_seen || !p->mid_run))
		return 0;
	for (uint32_t k = start; k < s->nring; k++) {
		const struct nl_ring_op *r = &s->ring[k % NL_RING];

		if (r->token != NL_NO_TOKEN)
			return 0;
		if (r->work && open && nl_ring_worked_between(m, last, r->ts, NULL))
			open = false;
		if (r->work)
			last = r->ts;
		if (r->work && !open) {
			open = true;
			n++;
		} else if (!r->work && nl_api_info[r->api].kind == NL_K_EVENT_RECORD &&
			   !waited_by(p, s, r->clock, true)) {
			/* a record another sparse stream, or one without a
			 * role yet, waited on (the hand-off to the collective
			 * stream) ends no segment: the stage goes on after it */
			open = false;
		}
	}
	return n;
}

/* Tick cadence at a sparse stream: a wait on the copy stream that brings
 * batch tok but also covers an older batch whose sparse stage has not begun
 * (a fill phase whose copy record comes after two batches' copies, or a
 * D.wait_stream(M) made after the next batch's copy) gives the stream that
 * older batch: one sparse segment per batch, in order. The newer batch is
 * then already ordered after its copy when its turn comes. A batch passed
 * over for a segment of work without its edge is marked so (unfed_passed,
 * read by compute's cadence: merged_stage); every caller applies the
 * batch this returns. */
int64_t nl_sparse_due(struct nl_proc *p, int slot, const struct nl_stream *from, int64_t tok)
{
	const struct nl_stream *s = &p->s[slot];
	const struct nl_pipe *q = nl_pipe_of_token(p, tok);
	uint64_t used = 0, seg; /* the unfed segment an older batch was passed over for */
	int64_t t, first;

	if (q && from && from->role == NL_ROLE_SPARSE && slot != p->compute_slot)
		return end_due(p, slot, from, tok);
	if (!q || s->role != NL_ROLE_SPARSE || !from || from->role != NL_ROLE_COPY ||
	    from->pipe != s->pipe || slot == p->compute_slot)
		return tok;
	/* work it did before any batch reached it: where it stands is known
	 * only when it was a stream without a role, all of whose work is
	 * remembered (a pipeline found by its edges, whose data-dist stream
	 * ran its first batches without a wait on the copy): each of those
	 * segments was the stage of the next batch open then, begun without
	 * its edge, and this wait brings the batch after them. A batch whose
	 * forward began after that work began is one of them: an evaluation
	 * turn's first batch, found by compute's wait on the copy stream
	 * before the data-dist stream's first wait. Before, it was left out,
	 * the work was charged to the next batch, and that healthy batch was
	 * accused copy->sparse (random program 14936). */
	if (s->token == NL_NO_TOKEN && worked_on(s, NL_NO_TOKEN)) {
		int n = unroled_segments(p, s, from);
		uint64_t w0 = 0; /* its first work op */

		for (uint32_t k = nl_ring_start(s); k < s->nring && !w0; k++)
			if (s->ring[k % NL_RING].work)
				w0 = s->ring[k % NL_RING].ts;

		if (n <= 0)
			return tok;
		for (t = q->oldest; t < tok; t++) {
			const struct nl_batch *b = nl_batch_of(p, t);

			if (!b || b->closed || b->reached_sparse ||
			    (b->fwd_started && (!w0 || b->st[NL_STAGE_FORWARD].first_ts < w0)) ||
			    (s->creation_seen && s->creation_ts > b->st[NL_STAGE_COPY].first_ts))
				continue;
			if (n-- == 0)
				return t;
		}
		return tok;
	}
	t = q->oldest;
	if (s->token != NL_NO_TOKEN && nl_tok_pipe(s->token) == nl_tok_pipe(tok) && s->token > t)
		t = s->token;
	if (s->token == t && worked_on(s, t))
		t++;
	first = t;
	for (; t < tok; t++) {
		const struct nl_batch *b = nl_batch_of(p, t);

		if (!b || b->closed || !b->copy_closed || b->st[NL_STAGE_SPARSE].work) {
			/* a batch the stream worked on already is not the
			 * due one: the next is first (random program 17980:
			 * the batch before, its wait redundant, began its
			 * stage without one, and the due batch, copied on the
			 * other stream, was passed over) */
			if (t == first && b && !b->closed && b->st[NL_STAGE_SPARSE].work)
				first = t + 1;
			continue;
		}
		if (!nl_copy_covered(b, s)) {
			const struct nl_batch *n = nl_batch_of(p, t + 1);

			/* the wait is on another copy stream than the due
			 * batch's and brings nothing of it, and the stream did
			 * no work since that batch's copy began but an older
			 * batch's it was fed (its first segment, given by
			 * nl_take_first), none after the next batch's copy
			 * began: its next work is that batch's, begun without
			 * its edge (a reused event the other copy stream
			 * recorded again before this wait), not the newer
			 * batch's. Before, any work since passed the batch
			 * over: the first batch's sparse stage begun without
			 * its edge, after the next batch's copy on the other
			 * stream, shifted every later sparse stage by one and
			 * accused a healthy batch sparse->forward (random
			 * program 24638). Work after the next batch's copy
			 * began that a wait fed (dist_init after D's wait on
			 * the collective stream: the older batch's stage going
			 * on) is not that batch's either: only unfed work
			 * passes it over (random program 58004). */
			if (t == first && copy_slot(b) >= 0 && copy_slot(b) != (int)(from - p->s) &&
			    !unfed_work_since(p, s, b->st[NL_STAGE_COPY].first_ts, t) &&
			    (!n || !n->st[NL_STAGE_COPY].ops ||
			     !unfed_work_since(p, s, n->st[NL_STAGE_COPY].first_ts, t + 1)))
				return t;
			continue;
		}
		/* work the stream did after this batch's copy began could be its
		 * sparse stage begun without the edge, and a stream created after
		 * it began is not the one that was to run it (a pipeline's streams
		 * created again): the edges decide then */
		if (s->creation_seen && s->creation_ts > b->st[NL_STAGE_COPY].first_ts)
			return tok;
		/* a segment that passed an older batch over is not this
		 * one's too: without a segment of its own, this batch is due
		 * (random program 6824: D's one segment without its edge
		 * passed batches 1 and 2 over, and healthy 2 was accused
		 * copy->sparse) */
		seg = unfed_segment(p, s, b->st[NL_STAGE_COPY].first_ts, t, used);
		if (!seg)
			return t;
		used = seg;
		nl_batch_of(p, t)->unfed_passed = true;
	}
	return tok;
}

/* Batches x and b were copied on the same one stream. */
static bool same_copy_stream(const struct nl_batch *x, const struct nl_batch *b)
{
	int c = copy_slot(b);

	return c >= 0 && c == copy_slot(x);
}

/* Every batch of pipeline `pipe` copied since `since` had its forward
 * begun, by a take of it: none of them is a batch whose step a restart
 * of compute's then could be. Before, an evaluation turn run in the
 * window of a training batch kept a training step begun again after the
 * turn, its take dropped, from being that batch's: it was skipped
 * target_exited (random program 233484). */
static bool accounted_since(struct nl_proc *p, int pipe, uint64_t since)
{
	const struct nl_batch *b;

	NL_FOR_BATCHES(p, b) {
		if (nl_tok_pipe(b->token) != pipe || b->closed ||
		    b->st[NL_STAGE_COPY].last_ts <= since)
			continue;
		if (!b->fwd_started || !b->fwd_waited)
			return false;
	}
	return true;
}

bool nl_outside_work(struct nl_proc *p, const struct nl_stream *s, int pipe, uint64_t since)
{
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];

		if (!x->used || x == s || nl_ring_last_work_ts(x) <= since)
			continue;
		/* a stream without a role that never copied to the device
		 * nor waited on a copy stream (the backward stream) */
		if (x->role == NL_ROLE_OTHER && !x->h2d && !x->fed_by_copy)
			continue;
		if (x->role == NL_ROLE_COPY || x->role == NL_ROLE_SPARSE) {
			if (x->pipe == pipe || (x->pipe >= 0 && accounted_since(p, x->pipe, since)))
				continue;
		}
		return true;
	}
	return false;
}

/* Tick cadence at compute, by the step signature: compute holds batch X
 * whose forward window began with the step's first two kernels and launches
 * the first of them again, so a new step begins. When the next batch of X's
 * pipeline is ordered after all its producer work already (a legal wait
 * made after that batch's producers covered it), compute takes it here
 * rather than running its forward in X's window. Only while every step so
 * far began with the same two different kernels, named (a launch counted in
 * a run carries no kernel address); the first step is enough, as the next
 * batch must be ordered already.
 *
 * A next batch not ordered yet is taken too (its take was dropped: its
 * forward reads it unordered) only where the restart shows the step's two
 * first kernels named and the windows are sure to follow the forward: one
 * pipeline, the last NL_STEP_SURE takes tight (the next
 * batch was produced and not yet ordered when compute began each window,
 * nl_note_window), no stream outside the pipeline's own producers worked
 * since the window began (another pipeline's batch may be the one due;
 * not the backward stream, nl_outside_work),
 * and both batches copied on the same stream (two copy streams in turn
 * can put compute's windows a batch ahead). */
#define NL_STEP_SURE 2 /* steps that began alike, or takes that were tight, before a restart is trusted */

/* Compute could begin batch b of pipeline q: no forward of it begun,
 * copied, and its sparse stage reached. */
static bool due_now(const struct nl_pipe *q, const struct nl_batch *b)
{
	return b && !b->closed && !b->fwd_started && b->copy_closed &&
	       (!q->has_sparse || sparse_begun(b));
}

/* ...and ordered: every producer op of it ordered before compute (stream s). */
static bool ordered_due(const struct nl_pipe *q, const struct nl_batch *b, const struct nl_stream *s)
{
	return due_now(q, b) && producers_before(b, s);
}

/* The oldest batch of pipeline q still held whose forward compute has not
 * begun (NULL: none). */
static struct nl_batch *first_unforwarded(struct nl_proc *p, const struct nl_pipe *q)
{
	struct nl_batch *b = NULL;

	for (int64_t t = after_forward(q); t < q->next_token && !b; t++)
		b = nl_batch_of(p, t);
	return b;
}

/* The one batch of a pipeline other than `pipe` that compute could begin
 * now: the oldest of its pipeline, ordered_due (NULL: none, or more than
 * one pipeline has one). */
static struct nl_batch *other_due(struct nl_proc *p, const struct nl_stream *s, int pipe)
{
	struct nl_batch *found = NULL;

	for (int i = 0; i < p->npipes; i++) {
		const struct nl_pipe *q = &p->pipes[i];
		struct nl_batch *b;

		if (i == pipe || !q->used)
			continue;
		b = first_unforwarded(p, q);
		if (!ordered_due(q, b, s))
			continue;
		if (found)
			return NULL;
		found = b;
	}
	return found;
}

/* A named launch with signature `sig` begins compute's step again inside
 * the window `w`: every step so far began with it. With launches named,
 * the step's two first kernels (different) are known and `w` began with
 * them. With launches counted in runs, a kernel is named only as its run's
 * first: a window that began with the step's kernel and went on in the
 * same run, and a named launch of that kernel, begins a run again (a call
 * came between, as a dropped take's copy or loss.item() do), once the
 * window has had as many work ops as the shortest whole window had: a
 * model that launches that kernel again inside its step, after a call
 * broke the run, does so before its step is done. */
static bool step_again(const struct nl_pipe *q, const struct nl_stage_acc *w, uint64_t sig)
{
	if (nl_first_work(w) < 2 || !w->first_named[0])
		return false;
	if (w->first_named[1])
		return opens_step(q, w) && sig == q->step.sig[0];
	return q->run_n >= NL_STEP_SURE && !q->run_varied && sig == q->run_sig &&
	       w->first_sig[0] == q->run_sig && q->run_min_work && w->work >= q->run_min_work;
}

/* Compute's step begun again takes batch b. Begun at the launch of the
 * step's first kernel just before (`pair`): that launch is b's first op. */
static void restart_take(struct nl_proc *p, int slot, struct nl_batch *b,
			 struct nl_stage_acc *w, bool pair, const struct nl_call *c)
{
	struct nl_stage_acc *f = &b->st[NL_STAGE_FORWARD];

	p->restart_took = b->token;
	p->restart_ts = c->ts_ns;
	p->restart_win_ts = w->first_ts;
	if (!pair) {
		nl_set_token(p, slot, b->token, c->ts_ns);
		return;
	}
	nl_set_token(p, slot, b->token, w->hit_op.ts);
	/* the pair's first launch, counted in the window it began again, is
	 * b's: that window launched the kernel once less (restarts_at_most,
	 * restarts_explained count them). Before, it stayed counted there too,
	 * and a window that began the step again once counted as twice */
	if (w->first_hits > 1)
		w->first_hits--;
	if (f->work)
		return;
	if (!f->ops || w->hit_op.ts < f->first_ts)
		f->first_ts = w->hit_op.ts;
	if (w->hit_op.ts > f->last_ts)
		f->last_ts = w->hit_op.ts;
	f->ops++;
	f->work = 1;
	f->first_sig[0] = w->hit_op.sig;
	f->first_named[0] = true;
	f->first_tid = w->hit_op.tid;
	f->first_hits = 1;
}

/* Batch b, due next after compute's window `x`, already began its forward
 * in that window without its edge: its consumer watch saw the step begin
 * again (repeat), or, cut from a merged copy segment after the fact, the
 * window began the step again between b's last producer op and the cut
 * (unwatched_restart). Only where a step launches its first kernel once.
 * b is passed over (it has no forward: named). A step begun again now is
 * the next batch's, when it is due. Before, it was b's: b took the next
 * batch's forward, and that batch, its take dropped too, had none, was
 * taken by a later wait that covered it, or was skipped target_exited at
 * the end of a run. */
static struct nl_batch *restarted_before_cut(struct nl_proc *p, const struct nl_batch *x,
					     struct nl_batch *b)
{
	struct nl_batch *n;

	if (!b || b->closed || b->fwd_started || !b->copy_closed ||
	    (!b->watch[NL_CONSUMER_COMPUTE].repeat && !unwatched_restart(p, x, b, nl_producers_last(b))))
		return b;
	n = nl_batch_of(p, b->token + 1);
	return n && !n->closed && !n->fwd_started ? n : b;
}

/* Batch b's copy segment is still open, but compute is the legacy null
 * stream and b was copied on a blocking stream: every null-stream op after
 * those copies waited for them. */
static bool implicit_copy(const struct nl_proc *p, const struct nl_stream *s,
			  const struct nl_batch *b)
{
	int c = copy_slot(b);

	return (int)(s - p->s) == p->null_slot && c >= 0 && p->s[c].blocking;
}

/* The last copy of pipeline `pipe`'s copy streams, as their rings remember
 * (0: none). */
static uint64_t last_copy_ts(const struct nl_proc *p, int pipe)
{
	uint64_t last = 0;

	for (uint32_t i = 0; i < p->w; i++) {
		uint64_t ts;

		if (!p->s[i].used || p->s[i].role != NL_ROLE_COPY || p->s[i].pipe != pipe)
			continue;
		ts = nl_ring_last_work_ts(&p->s[i]);
		if (ts > last)
			last = ts;
	}
	return last;
}

/* ...or due but for its copy segment, still open. Made by the restart's
 * own thread, whose work ends that thread's segment (a copy it makes next
 * begins a new one, copy_segment); or by a loader thread, since the
 * window began (copied_since_window): the restart is that batch's forward,
 * begun without its edge, as where the take's record was dropped. Before,
 * only the restart's own thread counted: an evaluation turn whose loader
 * copied two batches before its first record, the first's take dropped
 * with its record, had the restart left in training's window, and the
 * fault missed with evidence_valid true (random program 387067). */
static bool due_but_open(const struct nl_pipe *q, const struct nl_batch *b)
{
	return b && !b->closed && !b->fwd_started && !b->copy_closed &&
	       b->st[NL_STAGE_COPY].work && (!q->has_sparse || sparse_begun(b));
}

/* With more than one pipeline, compute's step begun again in window `w`
 * of pipeline `pipe` (whose next batch is ordered already, or which has
 * none left): the oldest due batch of another pipeline, copied (and with a
 * sparse stage, begun there), its copy begun after `w` began and after
 * every copy stream of `pipe` last worked (NULL: none, or more than one
 * pipeline has one). A loop moves to another pipeline's batches (an
 * evaluation turn, a second pipeline's run) by copying them first: the
 * step begun again after that copy is that batch's forward, begun without
 * its edge where the take was dropped, not a prefetched batch of the
 * window's pipeline, whose copy came before. That batch's copy segment
 * may still be open (its record dropped with the take), made by the
 * restart's thread or a loader (due_but_open). Before, the window's next
 * batch, ordered already, took the restart; the next restart, its own,
 * went to the batch after it, which was accused copy->forward (random
 * program 375042). */
static struct nl_batch *copied_since_window(struct nl_proc *p, int pipe,
					    const struct nl_stage_acc *w)
{
	struct nl_batch *found = NULL;
	uint64_t mine;

	if (p->npipes < 2)
		return NULL;
	mine = last_copy_ts(p, pipe);
	if (!mine)
		return NULL;
	for (int i = 0; i < p->npipes; i++) {
		const struct nl_pipe *q = &p->pipes[i];
		struct nl_batch *o;

		if (i == pipe || !q->used)
			continue;
		o = first_unforwarded(p, q);
		if (!(due_now(q, o) || due_but_open(q, o)) || copy_slot(o) < 0 ||
		    o->st[NL_STAGE_COPY].first_ts <= mine ||
		    o->st[NL_STAGE_COPY].first_ts <= w->first_ts)
			continue;
		if (found)
			return NULL;
		found = o;
	}
	return found;
}

/* Batch o of another pipeline, copied since window `w` of pipeline `pipe`
 * began (copied_since_window), is due to take compute's step begun again
 * now (at `now`). But the step began again in that window once already,
 * after o's producers, with nothing of `pipe` left to begin (nl_lone_again,
 * kept for the exit): that restart was o's forward, begun without its
 * edge while o's copy segment was still open (two takes dropped in a row
 * with their records, the two batches' copies one segment until the next
 * record cut it). This restart is then the next batch's, copied before
 * it. Before, o took this one, the next batch had none, the wait after
 * took it, its fault was missed and the last batch skipped (random
 * program 468671). */
static struct nl_batch *past_lone(struct nl_proc *p, int pipe, const struct nl_stage_acc *w,
				  struct nl_batch *o, uint64_t now)
{
	const struct nl_pipe *xq = &p->pipes[pipe];
	struct nl_batch *n;

	if (!nl_lone_again(xq) || nl_lone_again(xq) <= w->first_ts ||
	    nl_lone_again(xq) <= nl_producers_last(o) || nl_lone_again(xq) >= now)
		return o;
	n = nl_batch_of(p, o->token + 1);
	if (!n || n->closed || n->fwd_started || !n->copy_closed || copy_slot(n) < 0 ||
	    n->st[NL_STAGE_COPY].first_ts >= now)
		return o;
	return n;
}

/* Compute, holding batch x (its step begun, window w), begins the step
 * again at `begun`, right after a wait on a record of x's copy stream that
 * carried x, made inside the window, past the wait on that stream that
 * began it: compute took x twice, and the copy stream did nothing between
 * (cut_taken_again). x's copy segment held the next batch's copies too:
 * the batches of an evaluation pipeline copied two at a time, each taken
 * by a wait_stream of its own. Before, the second batch was never audited,
 * merged into the first's copies (random program 48803). */
static bool taken_again(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_batch *x,
			const struct nl_stage_acc *w, uint64_t begun)
{
	const struct nl_stream *s = &p->s[slot];
	const struct nl_ring_op *r = NULL;
	int m = copy_slot(x);
	uint32_t k;

	if (m < 0 || !w->work)
		return false;
	for (k = s->nring; k > nl_ring_start(s); k--) {
		r = &s->ring[(k - 1) % NL_RING];
		if (r->ts < begun)
			break;
	}
	if (k == nl_ring_start(s) || !r)
		return false;
	return nl_took_again(e, p, slot, k - 1, m, x->token, w->first_ts);
}

/* Batch b, of the first pipeline (training, whose batch size learning
 * saw), is the only batch of the process compute could begin: every other
 * pipeline has none it has not begun (an evaluation turn over). Its
 * pipeline's restart is then judged as with one pipeline: before, a take
 * dropped after an evaluation turn was missed, the batch taken by the next
 * wait and the last one skipped target_exited (random program 46986). Not
 * in a later pipeline: its fill is cut by a guess, and a restart taken
 * there after a merged segment accused a healthy batch (random program
 * 46308). */
static bool only_pending(struct nl_proc *p, const struct nl_batch *b)
{
	int pipe = nl_tok_pipe(b->token);

	if (pipe != 0)
		return false;
	for (int i = 0; i < p->npipes; i++)
		if (i != pipe && p->pipes[i].used && first_unforwarded(p, &p->pipes[i]))
			return false;
	return true;
}

/* Compute's step began again in pipeline q's window, its take dropped,
 * at ts, kept with the last ones before it (nl_lone_again). */
static void note_lone(struct nl_pipe *q, uint64_t ts)
{
	q->lone_hist[q->nlone++ % NL_LONE_HIST] = ts;
}

/* A stream of no role yet copied since compute's window `w` began, after
 * every copy of pipeline `pipe`: a loop moving to a pipeline not found yet
 * (an evaluation turn's first copies, its copy stream known only once
 * compute waits on it). Compute's step begun again now is that batch's
 * forward, its take dropped, not `pipe`'s next batch's: the restart is not
 * taken (the new pipeline's batch, found later, is judged never to have
 * reached compute). Before, `pipe`'s next batch took it, the take that
 * brought it was judged the batch after's, and a healthy batch was
 * accused copy->forward (random program 105809). */
static bool unplaced_copied_since(const struct nl_proc *p, int pipe, const struct nl_stage_acc *w)
{
	uint64_t mine = last_copy_ts(p, pipe);

	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];

		if (!x->used || x->role != NL_ROLE_OTHER || (int)i == p->compute_slot)
			continue;
		for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
			const struct nl_ring_op *r = &x->ring[k % NL_RING];

			if (r->work && nl_api_info[r->api].kind == NL_K_COPY && r->ts > mine &&
			    r->ts > w->first_ts)
				return true;
		}
	}
	return false;
}

/* Pipelines other than q whose oldest batch not begun is due now and not
 * ordered before stream s: a restart of compute's step may be its
 * forward. */
static uint32_t unordered_others(struct nl_proc *p, const struct nl_pipe *q,
				 const struct nl_stream *s)
{
	uint32_t n = 0;

	for (int i = 0; i < p->npipes; i++) {
		const struct nl_pipe *o = &p->pipes[i];
		const struct nl_batch *ob;

		if (o == q || !o->used)
			continue;
		ob = first_unforwarded(p, o);
		n += due_now(o, ob) && !producers_before(ob, s);
	}
	return n;
}

/* Compute's step begun again in the window `w` (of compute's batch) while
 * batch b, next after it, was due and not ordered, with more than one
 * pipeline: kept for the exit (again_ts of compute's pipeline), or taken
 * by another pipeline's batch ordered already (returns true: restart_take
 * gave it away). `open`: b's copy segment is still open, b not due yet. */
static bool keep_restart(struct nl_proc *p, int slot, struct nl_stage_acc *w, struct nl_batch *b,
			 bool pair, const struct nl_call *c, bool open)
{
	const struct nl_stream *s = &p->s[slot];
	struct nl_pipe *q = nl_pipe_of_token(p, s->token);
	/* a restart kept for b before, not shown another's since */
	bool same = q->again_tok == b->token && !q->again_not_its;
	bool kept = same && q->again_ts > w->first_ts;
	/* within the step the kept restart began: not a step of its own */
	bool within = kept && q->first_min &&
		      w->first_hits + 1 - q->again_hits < q->first_min;
	struct nl_batch *o = kept && !within ? other_due(p, s, nl_tok_pipe(s->token)) : NULL;
	uint32_t others;

	if (o) {
		restart_take(p, slot, o, w, pair, c);
		return true;
	}
	q->again_before_ts = same ? q->again_ts : 0;
	/* kept past a restart kept for a newer batch (the batch after b
	 * copied in between): one of the two was still another batch's.
	 * Before, that was forgotten and an evaluation turn's last batch, its
	 * take dropped, was skipped target_exited (random program 476870) */
	if (same)
		q->again_two_ts = c->ts_ns;
	q->again_ts = c->ts_ns;
	if (!same) {
		q->again_n = q->again_others = 0;
		q->again_open = false;
	}
	q->again_open |= open;
	others = unordered_others(p, q, s);
	if (others > q->again_others)
		q->again_others = others;
	if (!within) {
		q->again_hits = w->first_hits + 1;
		if (q->again_n < NL_AGAIN_MAX)
			q->again_at[q->again_n] = c->ts_ns;
		q->again_n++;
	}
	q->again_tok = b->token;
	q->again_not_its = false;
	return false;
}

void nl_step_begins(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c)
{
	const struct nl_stream *s = &p->s[slot];
	struct nl_stage_acc *w; /* restart_take gives a launch of it away */
	struct nl_batch *x;
	struct nl_batch *b;
	const struct nl_pipe *q;
	uint64_t sig;
	bool again, counted, pair, ordered;

	if (slot != p->compute_slot || c->kind != NL_K_LAUNCH || !(c->fields & NL_F_FN) ||
	    s->token == NL_NO_TOKEN)
		return;
	q = nl_pipe_of_token(p, s->token);
	x = nl_batch_of(p, s->token);
	if (!q || !x)
		return;
	w = &x->st[NL_STAGE_FORWARD];
	sig = nl_call_sig(c);
	again = step_again(q, w, sig);
	/* With launches counted in runs, where step_again's guards do not hold
	 * (NL_STEP_SURE windows begun alike, as much work as the shortest
	 * window had), a run begun again with the window's first kernel (same
	 * thread) still takes the next batch where that batch is ordered
	 * before compute already: nothing is accused by it. */
	counted = !again && nl_first_work(w) >= 2 && w->first_named[0] && !w->first_named[1] &&
		  sig == w->first_sig[0] && c->tid == w->first_tid;
	/* A model may launch its step's first kernel again inside the step
	 * (its backward or optimizer beginning with the same kernel): a launch
	 * of it begins the step again only where the window has had more of
	 * them than every window from one wait to the next had (first_min).
	 * Before such a window closed, only the step's two first kernels again
	 * in a row (named, same thread) do: `pair`, seen at the second. */
	if (q->first_min) {
		pair = false;
		if ((!again && !counted) || w->first_hits + 1 <= q->first_min)
			return;
	} else {
		pair = w->hit_pending && w->hit_op.tid == c->tid && opens_step(q, w) &&
		       sig == q->step.sig[1];
		counted = false;
		if (!pair)
			return;
	}
	b = nl_batch_of(p, s->token + 1);
	if (!b && taken_again(e, p, slot, x, w, pair ? w->hit_op.ts : c->ts_ns))
		b = nl_batch_of(p, s->token + 1);
	if (!b && pair && p->npipes > 1 && nl_cut_restarted(e, p, x))
		b = nl_batch_of(p, s->token + 1);
	if (pair || q->first_min <= 1) /* the step launches its first kernel once */
		b = restarted_before_cut(p, x, b);
	if (counted && !ordered_due(q, b, s))
		return;
	if (!b || b->closed || b->fwd_started) {
		/* nothing of X's pipeline left to begin: another pipeline's
		 * batch, ordered already (an evaluation turn ended) */
		struct nl_batch *o = other_due(p, s, nl_tok_pipe(s->token));

		/* none ordered: another pipeline's batch copied since the
		 * window began, its take dropped (where the step launches its
		 * first kernel once: one that launches it twice shows a
		 * restart late, after the next copy). Before, it was judged at
		 * exit only, by then taken by the wait that covered the batch
		 * after it: that one missed, or skipped target_exited
		 * (random program 120290) */
		if (!o && q->first_min <= 1) {
			o = copied_since_window(p, nl_tok_pipe(s->token), w);
			if (o)
				o = past_lone(p, nl_tok_pipe(s->token), w, o, c->ts_ns);
			if (o && !producers_before(o, s))
				nl_hand_over_all(p, o->token);
		}
		if (o)
			restart_take(p, slot, o, w, pair, c);
		else if (s->token + 1 >= q->next_token && w->first_named[1])
			/* or not ordered: its take dropped, judged at exit */
			note_lone(&p->pipes[nl_tok_pipe(s->token)], c->ts_ns);
		return;
	}
	/* the next batch's copy segment still open, of the size its copy
	 * stream is sure of: a loader's copy whose record was dropped with
	 * the take. The step begun again ends it, as its record would have:
	 * before, the restart was not taken, the next batch's copy merged
	 * into the segment and that batch went unaudited, its fault unnamed
	 * (random program 418024). Not with more than one pipeline, nor with
	 * compute the null stream joining blocking streams (a program of
	 * each newly disagreed: a last batch skipped) */
	if (!b->copy_closed && p->npipes == 1 && !(slot == p->null_slot && p->nblocking))
		nl_end_sure_segment(e, p, b->token);
	ordered = producers_before(b, s) != 0;
	if (ordered && b->copy_closed) {
		struct nl_batch *o = copied_since_window(p, nl_tok_pipe(b->token), w);

		if (o)
			o = past_lone(p, nl_tok_pipe(b->token), w, o, c->ts_ns);
		if (o) {
			if (!producers_before(o, s))
				nl_hand_over_all(p, o->token);
			restart_take(p, slot, o, w, pair, c);
			return;
		}
	}
	/* compute's second take of x's stage, and its step begun again:
	 * b's stage was in x's segment (nl_split_retaken) */
	if (ordered && b->copy_closed && q->has_sparse && !sparse_begun(b))
		nl_split_retaken(e, p, x, b);
	if ((!b->copy_closed && !(implicit_copy(p, s, b) && ordered)) ||
	    (q->has_sparse && !sparse_begun(b))) {
		/* b's copy segment still open (the record after it dropped
		 * with the take): with more than one pipeline the restart is
		 * kept for the exit as below, where it may be b's forward or
		 * another pipeline's last batch's (restarted_elsewhere).
		 * Before, it was forgotten, and such a last batch, its take
		 * dropped, was skipped target_exited (random programs 235943,
		 * 380512). So too where b is the only batch compute could
		 * begin (only_pending): the other pipeline's last batch may
		 * be copied next, its take dropped, and the step begun again
		 * after it is that batch's (random program 59563) */
		if (!ordered && !b->copy_closed && w->first_named[1] && p->npipes > 1 &&
		    (!q->has_sparse || sparse_begun(b)))
			keep_restart(p, slot, w, b, pair, c, true);
		return;
	}
	if (!ordered) {
		bool multi = p->npipes > 1 && !only_pending(p, b);

		/* with more than one pipeline the restart is not taken here:
		 * kept for the exit, where a wait that gave b its forward since
		 * shows it was another pipeline's batch's (restarted_elsewhere);
		 * but see only_pending. One restart is one batch's: the step
		 * begun again in the same window after one kept so for b, a
		 * whole step since (as many launches of its first kernel as a
		 * step makes, first_min: not a backward that launches forward's
		 * first kernel), is another batch's, the one of another
		 * pipeline ordered already (other_due). Before, it was kept for
		 * b too; that batch's take, compute's wait after, was judged
		 * the one before it (an evaluation turn's last take dropped,
		 * training's next one redundant and dropped), and training's
		 * last batch was skipped target_exited (random program 374). */
		if (w->first_named[1] && multi && keep_restart(p, slot, w, b, pair, c, false))
			return;
		/* taken unordered, it is accused: not on a restart seen by
		 * counted runs only (a model that launches its step's first
		 * kernel again after a call broke the run looks the same), nor
		 * where the step's launches of that kernel are known only from
		 * windows with launches counted (a lower bound: one counted
		 * may have been of the kernel) */
		if (!w->first_named[1] || multi || q->tight_run < NL_STEP_SURE ||
		    (q->first_min && (!q->first_min_whole || w->first_hits + 1 <= q->first_min_whole)) ||
		    nl_outside_work(p, s, nl_tok_pipe(b->token), w->first_ts) || !same_copy_stream(x, b))
			return;
		/* taken as by a wait on the sparse streams carrying it: what
		 * they enqueue next, before a newer batch reaches them, is not
		 * its stage (the hand-off rule) */
		nl_hand_over_all(p, b->token);
	}
	if (unplaced_copied_since(p, nl_tok_pipe(b->token), w)) {
		/* that pipeline's forward begun without its take: kept as
		 * another pipeline's restart for when its copy stream is
		 * found (a fill it cuts, lone_restarts_since) and for the exit
		 * (restarted_elsewhere); where the step launches its first
		 * kernel once (one that launches it twice shows a restart
		 * late, after the next copy: 47 programs newly disagreed,
		 * most accusing a healthy batch sparse->forward) */
		if (w->first_named[1] && q->first_min <= 1)
			note_lone(&p->pipes[nl_tok_pipe(b->token)], c->ts_ns);
		return;
	}
	restart_take(p, slot, b, w, pair, c);
}

/* Compute's step began again in windows of gq's pipeline while its next
 * batch (again_tok) was due but not ordered, and nl_step_begins kept
 * those restarts (again_at, each a step of its own); a wait gives that
 * batch its forward now, so they were not its. Each was another
 * pipeline's batch's forward, begun without its edge: in order, the
 * oldest batches of the one other pipeline that has them due, copied
 * before the restart and not ordered before compute (s). They are passed
 * over now, as their watches would have marked them, so that the wait
 * that covers one later is not its take. Before, they were found at exit
 * only (restarted_elsewhere), after a later wait had taken the first:
 * its fault was missed and the pipeline's last batch skipped
 * target_exited, or, with two restarts, one batch passed over and the
 * next missed (random programs 87852, 157346, 33060). Nothing is passed
 * over where a restart finds no such batch, or one in more than one
 * pipeline, or more restarts were kept than are remembered. */
void nl_restarts_not_its(struct nl_proc *p, const struct nl_stream *s, struct nl_pipe *gq)
{
	struct nl_batch *found[NL_AGAIN_MAX];
	uint32_t n = gq->again_n;

	/* a restart kept while the batch's copy segment was open: that
	 * batch was not due yet, and the wait that gave it its forward may
	 * be the take of the batch after (its own copy's record dropped):
	 * before, a healthy batch of the other pipeline was passed over for
	 * it and accused copy->forward (random programs 190919598,
	 * 195622265 counted) */
	if (!n || n > NL_AGAIN_MAX || gq->again_open)
		return;
	for (uint32_t k = 0; k < n; k++) {
		found[k] = NULL;
		for (int i = 0; i < p->npipes; i++) {
			const struct nl_pipe *q = &p->pipes[i];
			struct nl_batch *b = NULL;

			if (q == gq || !q->used)
				continue;
			for (int64_t t = after_forward(q); t < q->next_token && !b; t++) {
				b = nl_batch_of(p, t);
				if (b && (b->closed || b->fwd_started ||
					  b->watch[NL_CONSUMER_COMPUTE].repeat))
					b = NULL;
				for (uint32_t j = 0; b && j < k; j++)
					if (found[j] == b)
						b = NULL;
			}
			if (!due_now(q, b) || nl_producers_last(b) >= gq->again_at[k] ||
			    !nl_unordered_producer(b, s, NL_CONSUMER_COMPUTE))
				continue;
			if (found[k])
				return;
			found[k] = b;
		}
		if (!found[k])
			return;
	}
	for (uint32_t k = 0; k < n; k++) {
		found[k]->watch[NL_CONSUMER_COMPUTE].repeat = true;
		found[k]->watch[NL_CONSUMER_COMPUTE].mark_ts = gq->again_at[k];
		nl_hand_over_all(p, found[k]->token);
	}
	gq->again_ts = gq->again_before_ts = gq->again_two_ts = 0;
	gq->again_n = gq->again_others = 0;
}

/* Compute's first work op with its token: the take of that batch was
 * tight when the next batch, copied and (with a sparse stage) begun on the
 * data-dist stream, was not yet ordered before compute, or when no newer
 * batch was copied yet and no take of the pipeline was ever loose. Loose
 * (and the run of tight takes ends) when the next batch was ordered
 * already, or when compute skipped a batch (its first window not the
 * pipeline's first batch): a loop whose waits cover newer work than the
 * batch they bring, where the windows the waits give compute may run
 * ahead of its forward. */
void nl_note_window(struct nl_proc *p, const struct nl_stream *s)
{
	struct nl_pipe *q = nl_pipe_of_token(p, s->token);
	const struct nl_batch *b;
	bool loose = false;

	if (!q || s->token <= q->fwd_max)
		return;
	b = nl_batch_of(p, s->token + 1);
	if (q->fwd_max == NL_NO_TOKEN ? nl_tok_seq(s->token) != 0 : s->token != q->fwd_max + 1)
		loose = true; /* a batch skipped */
	else if (b && b->copy_closed && (!q->has_sparse || sparse_begun(b)))
		loose = producers_before(b, s) != 0; /* the next one ordered already */
	else if (b || q->loose)
		return; /* the next one not produced yet: says nothing */
	/* else nothing newer copied yet: the window cannot be ahead */
	if (loose) {
		q->tight_run = 0;
		q->loose = true;
	} else {
		q->tight_run++;
	}
}

/* A wait of compute that moved it to batch `got` brought batch `due`: the
 * lag of that take, learned while takes in a row share it. A loop whose
 * waits are made after the next batch's producer work (a depth-2 loop
 * whose take of i follows copy(i+1)) has lag 1 at every step; a dropped
 * take shows as a lag one larger than the one learned, and a lag is
 * trusted only once NL_LAG_SURE takes in a row had it. */
void nl_note_lag(struct nl_proc *p, int64_t due, int64_t got)
{
	struct nl_pipe *q = nl_pipe_of_token(p, got);

	if (!q || due == NL_NO_TOKEN || nl_tok_pipe(due) != nl_tok_pipe(got) || due < got)
		return;
	if (due - got == q->lag) {
		q->lag_n++;
	} else {
		q->lag = due - got;
		q->lag_n = 1;
	}
}
