// SPDX-License-Identifier: MIT
/*
 * Accounting: each op booked on its batch, per stage and per stream (the
 * batch's streams), its upstream frontier and pending forward ops, the
 * hand-offs to forward, the consumer watch, the step signature of forward
 * windows, and a batch cut short when its later ops go to the next one.
 */
#include "base/util.h"
#include "engine/engine_int.h"

static struct nl_batch_stream *batch_stream_get(struct nl_batch *b, int slot, int stage)
{
	struct nl_batch_stream *bs;

	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].slot == slot && b->bs[i].stage == stage)
			return &b->bs[i];
	if (b->nbs == NL_AUDIT_MAX_STREAMS)
		return NULL;
	bs = &b->bs[b->nbs++];
	memset(bs, 0, sizeof(*bs));
	bs->slot = slot;
	bs->stage = (uint8_t)stage;
	return bs;
}

static void stage_tid(struct nl_stage_acc *a, uint32_t tid)
{
	for (uint32_t i = 0; i < a->ntids; i++)
		if (a->tids[i] == tid)
			return;
	if (a->ntids < NL_ARRAY_SIZE(a->tids))
		a->tids[a->ntids++] = tid;
	else
		a->tids_full = true;
}

/* Every upstream op of the stage is ordered before an op with clock vc. */
static bool stage_up_covered(const struct nl_batch *b, int st, const uint32_t *vc)
{
	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == st && bs->has_up && bs->last_up.clock > vc[bs->slot])
			return false;
	}
	return true;
}

/* How far work op `sig` takes a match of a stage's first two work ops
 * (`first`, different) in a row: `prog` of them were matched before it. */
static int pair_progress(const uint64_t first[2], int prog, uint64_t sig)
{
	return sig == first[prog] ? prog + 1 : sig == first[0];
}

/* The first of batch b's producer streams that consumer k reads whose
 * last upstream op stream s is not ordered after (NULL: none). */
const struct nl_batch_stream *nl_unordered_producer(const struct nl_batch *b,
						    const struct nl_stream *s, int k)
{
	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == NL_STAGE_FORWARD || !bs->has_up ||
		    (k == NL_CONSUMER_SPARSE && bs->stage != NL_STAGE_COPY) ||
		    (k == NL_CONSUMER_COMPUTE && bs->covered))
			continue;
		if (s->vc[bs->slot] < bs->last_up.clock)
			return bs;
	}
	return NULL;
}

/* A restart of compute's step seen in window `w` of batch `token` (its
 * first kernel launched again, then its second) stands: the window has had
 * more launches of its first kernel than every window from one wait to the
 * next had. None such closed yet: with launches named the pair is the
 * step's two first kernels and stands; counted in runs, the pair is that
 * kernel and any launch after it, as a backward beginning with the same
 * kernel makes, and does not. */
static bool restart_stands(struct nl_proc *p, const struct nl_stage_acc *w, int64_t token)
{
	const struct nl_pipe *q = nl_pipe_of_token(p, token);

	if (!q)
		return false;
	if (q->first_min)
		return w->first_hits > q->first_min;
	return w->first_named[1];
}

/* Batch b's pipeline has learned the first two kernels its steps begin
 * with (step.sig). */
static bool step_known(struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_pipe *q = nl_pipe_of_token(p, b->token);

	return q && q->step.n && !q->step.varied;
}

/* Op c is made by the thread every step of batch b's pipeline began on
 * (any, where they began on more than one): a step begins where its
 * forward does, on the training loop's thread, not on the autograd
 * thread whose backward runs in another pipeline's window. With launches
 * counted in runs, a counted launch of that thread may be any kernel the
 * thread's rows did not begin with, so its backward's third and fourth
 * launches looked like b's step begun there without its edge: b was
 * passed over at its take and a healthy batch accused copy->forward
 * (random program 176206, counted). */
static bool step_thread_may_be(struct nl_proc *p, const struct nl_batch *b, const struct nl_call *c)
{
	const struct nl_pipe *q = nl_pipe_of_token(p, b->token);

	return !q || q->step.tid_varied || c->tid == q->step.tid;
}

/* Compute's op c, in the window of another pipeline's batch `own`,
 * may be the first of batch b's forward: not a launch of another kernel
 * than the one every step of b's pipeline began with (named; counted in a
 * run, where the probes' rows say it was not that kernel), nor the first
 * op of a window a wait began (that pipeline's own step: both pipelines
 * may run one model). */
static bool may_begin_step(struct nl_proc *p, const struct nl_batch *b, const struct nl_call *c,
			   const struct nl_batch *own)
{
	if (!step_known(p, b))
		return true;
	if (!nl_step_kernel_may_be(p, nl_pipe_of_token(p, b->token), c, 0) ||
	    !step_thread_may_be(p, b, c))
		return false;
	return !own || !own->fwd_waited || own->st[NL_STAGE_FORWARD].work;
}

/* Compute's op c, right after a launch of the first kernel b's steps begin
 * with, may be their second (any op, where they are not known). */
static bool step_second_may_be(struct nl_proc *p, const struct nl_batch *b, const struct nl_call *c)
{
	return !step_known(p, b) || (nl_step_kernel_may_be(p, nl_pipe_of_token(p, b->token), c, 1) &&
				     step_thread_may_be(p, b, c));
}

/* Some op of batch b's sparse stage is ordered before stream s. */
static bool sparse_partly_taken(const struct nl_batch *b, const struct nl_stream *s)
{
	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].stage == NL_STAGE_SPARSE && b->bs[i].has_work &&
		    s->vc[b->bs[i].slot] >= b->bs[i].first_op.clock)
			return true;
	return false;
}

/* Batch b, of another pipeline than the batch that took compute's step begun
 * again at this op (nl_step_begins, restart_take), was copied before the
 * window that restart began in: the restart is the taker's, as the watch's
 * own mark would make it (one restart is one batch's), and b's step did
 * not begin there. Not a batch copied since that window began: a loop
 * that moves to another pipeline copies its batch first, and the restart
 * may be that batch's forward, its take dropped (random program 106261). */
static bool copied_before_window(const struct nl_proc *p, const struct nl_batch *b)
{
	return b->st[NL_STAGE_COPY].ops && b->st[NL_STAGE_COPY].first_ts < p->restart_win_ts;
}

/* other pipelines' batches a restart may leave unwatched at once (more stay so) */
#define NL_BLINDED_MAX 16

/* For batches whose token has not reached this consumer role: the first
 * work op there, after the producers' last op, that is not ordered after it
 * (reported if the token never arrives), and whether such ops restart the
 * stage inside an older token's window (docs/engine.md, "end of a run"). */
static void watch_consumers(struct nl_proc *p, const struct nl_stream *s,
			    const struct nl_call *c, const struct nl_seen_op *op, int st,
			    int64_t token)
{
	int k = st == NL_STAGE_SPARSE ? NL_CONSUMER_SPARSE : NL_CONSUMER_COMPUTE;
	const struct nl_batch *own = nl_batch_of(p, token);
	const struct nl_stage_acc *w = own ? &own->st[st] : NULL;
	bool can = w && nl_first_work(w) >= 2 && op->tid == w->first_tid;
	/* a consumer's op speaks of its own pipeline's batches only */
	int only = token >= 0 ? nl_tok_pipe(token) : s->pipe;
	bool marked = false; /* one restart is one batch's: the oldest waiting */
	bool older = false;  /* a batch, produced and ordered, its forward not begun */
	struct nl_batch *b, *blinded[NL_BLINDED_MAX], *pending[NL_BLINDED_MAX];
	int nblinded = 0, npending = 0;
	/* this op is a step begun again that a batch took (nl_step_begins) */
	bool took = k == NL_CONSUMER_COMPUTE && token != NL_NO_TOKEN && p->restart_ts == c->ts_ns &&
		    p->restart_took == token;

	NL_FOR_BATCHES(p, b) {
		const struct nl_batch_stream *un;

		if (only >= 0 && nl_tok_pipe(b->token) != only) {
			struct nl_watch *bw = &b->watch[k];

			/* a launch of its step's first kernel there was a step
			 * begun if this op may be the step's second */
			if (bw->blind_pending) {
				bw->blind_pending = false;
				if (!bw->blind && step_second_may_be(p, b, c)) {
					bw->blind = true;
					bw->blind_ts = c->ts_ns;
					if (nblinded < NL_BLINDED_MAX)
						blinded[nblinded++] = b;
				}
			}
			/* unwatched, unless ordered after all its producer work
			 * or, at compute, not the launch its step begins with:
			 * then it cannot be its stage begun without the edge */
			if (nl_unordered_producer(b, s, k) &&
			    (k != NL_CONSUMER_COMPUTE || may_begin_step(p, b, c, own))) {
				if (k == NL_CONSUMER_COMPUTE && step_known(p, b)) {
					if (!bw->blind_pending && npending < NL_BLINDED_MAX)
						pending[npending++] = b;
					bw->blind_pending = true;
				} else if (!bw->blind) {
					bw->blind = true;
					bw->blind_ts = c->ts_ns;
				}
			}
			continue;
		}
		if (b->closed || !b->watch[k].armed || b->watch[k].repeat ||
		    (k == NL_CONSUMER_SPARSE ? b->reached_sparse : b->fwd_started))
			continue;
		/* a restart while an older batch, ordered, waits for its
		 * forward may be that batch's (its sparse stage charged to the
		 * batch before it, its copy->sparse named): not this one's.
		 * Before, the younger batch took it and was accused (random
		 * program 182858) */
		if (k == NL_CONSUMER_COMPUTE && older) {
			b->watch[k].prog = 0;
			continue;
		}
		un = nl_unordered_producer(b, s, k);
		if (k == NL_CONSUMER_COMPUTE && !un && b->copy_closed && token != b->token &&
		    b->token > token)
			older = true;
		/* the first unordered op, or later the first charged to b:
		 * one charged to another batch may not read b (the check of
		 * streams created blocking asks whether b's read was ordered) */
		if (un && (!b->watch[k].valid || (!b->watch[k].own && token == b->token))) {
			b->watch[k].own = token == b->token;
			b->watch[k].valid = true;
			b->watch[k].consumer = *op;
			b->watch[k].producer = un->last_up;
		}
		if (!un || !can)
			continue;
		if (marked) {
			b->watch[k].prog = 0;
			continue;
		}
		if (b->watch[k].prog_token != token)
			b->watch[k].prog = 0;
		b->watch[k].prog_token = token;
		b->watch[k].prog = pair_progress(w->first_sig, b->watch[k].prog, op->sig);
		if (b->watch[k].prog == 1)
			b->watch[k].restart = *op;
		/* at compute, not a restart that does not stand, nor one
		 * after a stream outside b's pipeline copied since the window
		 * began (another pipeline's batch's, one not found yet, may
		 * be the one restarted): the watch keeps its op unmarked */
		if (b->watch[k].prog == 2 && k == NL_CONSUMER_COMPUTE &&
		    (!restart_stands(p, w, token) ||
		     nl_outside_work(p, s, nl_tok_pipe(b->token), w->first_ts))) {
			b->watch[k].prog = 0;
			continue;
		}
		if (b->watch[k].prog == 2) {
			if (k == NL_CONSUMER_COMPUTE && nl_batch_of(p, token))
				nl_batch_of(p, token)->restart_seen = true;
			/* forward(b) began: b is handed over from the
			 * sparse streams that carry it, as by a take */
			if (k == NL_CONSUMER_COMPUTE)
				nl_hand_over_all(p, b->token);
			b->watch[k].repeat = true;
			b->watch[k].mark_ts = op->ts;
			b->watch[k].part = k == NL_CONSUMER_COMPUTE && sparse_partly_taken(b, s);
			marked = true;
			b->watch[k].consumer = b->watch[k].restart;
		}
	}
	/* one restart is one batch's: a restart of the window's pipeline that
	 * one of its batches took (marked) did not begin another pipeline's
	 * batch's step. Before, the same launch left that batch unwatched, a
	 * later wait passed it over for the newest batch it covered, and the
	 * healthy batch was accused copy->forward (random program 103313).
	 * So for a restart nl_step_begins gave a batch (took), ordered before
	 * compute so that its watch marked nothing, for the batches copied
	 * before its window began (random program 105614). */
	for (int i = 0; i < nblinded; i++)
		if (marked || (took && copied_before_window(p, blinded[i])))
			blinded[i]->watch[k].blind = false;
	for (int i = 0; took && i < npending; i++)
		if (copied_before_window(p, pending[i]))
			pending[i]->watch[k].blind_pending = false;
}

/* Stream s's last work op enqueued before ts: its time, 0 where it had
 * none, UINT64_MAX where its ring no longer reaches back. */
static uint64_t work_before(const struct nl_stream *s, uint64_t ts)
{
	for (uint32_t k = s->nring; k > nl_ring_start(s); k--) {
		const struct nl_ring_op *r = &s->ring[(k - 1) % NL_RING];

		if (r->work && r->ts < ts)
			return r->ts;
	}
	return nl_ring_start(s) ? UINT64_MAX : 0;
}

static void forward_op(struct nl_proc *p, struct nl_batch *b, const struct nl_stream *s,
		       const struct nl_seen_op *op, bool work)
{
	if (!b->fwd_started) {
		struct nl_batch *n = nl_batch_of(p, b->token + 1);

		b->fwd_started = true;
		b->fwd_first_clock = op->clock;
		b->fwd_tick = nl_pipe_of_token(p, b->token)->ticks;
		memcpy(b->first_vc, s->vc, p->w * sizeof(uint32_t));
		b->pre_work_ts = work_before(s, op->ts);
		/* a forward of the next batch begun without its edge would begin
		 * in this window or later (a restart is charged to the oldest
		 * batch waiting): when compute is ordered after its producers
		 * now, nothing from here on can be that */
		if (n && !n->fwd_started) {
			n->prev_covered = !nl_unordered_producer(n, s, NL_CONSUMER_COMPUTE);
			n->prev_ts = op->ts;
			nl_prev_began(p, n, b);
		}
	}
	/* The clock of the last forward op, copied only when it took another
	 * stream's clock since the last copy. */
	if (!b->fwd_vc_valid || b->fwd_vc_joins != s->joins) {
		memcpy(b->fwd_vc, s->vc, p->w * sizeof(uint32_t));
		b->fwd_vc_valid = true;
		b->fwd_vc_joins = s->joins;
	} else if (s->vc[op->slot] > b->fwd_vc[op->slot]) {
		b->fwd_vc[op->slot] = s->vc[op->slot];
	}
	b->fwd_last = *op;
	for (int k = NL_STAGE_COPY; k <= NL_STAGE_SPARSE; k++)
		if (!b->handoff[k].found && nl_stage_has(b, k, true) && stage_up_covered(b, k, s->vc)) {
			b->handoff[k].found = true;
			b->handoff[k].op = *op;
			b->handoff[k].exposure = b->fwd_work;
		}
	if (!work)
		return;
	/* A forward op enqueued after a frontier op must be ordered after it. */
	for (int i = 0; i < b->nbs; i++) {
		struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == NL_STAGE_FORWARD || !bs->has_up || bs->covered || bs->pending)
			continue;
		if (s->vc[bs->slot] < bs->last_up.clock) {
			bs->pending = true;
			bs->pending_f = *op;
			bs->pending_seen = s->vc[bs->slot];
		}
	}
	b->fwd_work++;
}

/* Compute put a work op on its stream after `ts`. */
static bool compute_worked_since(const struct nl_proc *p, uint64_t ts)
{
	const struct nl_stream *c;

	if (p->compute_slot < 0)
		return !p->has_compute; /* known but its stream not seen yet: no work */
	c = &p->s[p->compute_slot];
	if (c->nring > NL_RING && c->ring[nl_ring_start(c) % NL_RING].ts > ts)
		return true; /* the ring no longer reaches back that far */
	return nl_ring_last_work_ts(c) > ts;
}

static void producer_op(struct nl_proc *p, struct nl_batch *b, const struct nl_stream *s,
			struct nl_batch_stream *bs, const struct nl_seen_op *op, int st, bool work)
{
	struct nl_watch *cw = &b->watch[NL_CONSUMER_COMPUTE];

	/* A token taken over by the hand-off rule did not reach the stage
	 * through an edge. */
	if (st == NL_STAGE_SPARSE && !s->adopted)
		b->reached_sparse = true;
	if (!work)
		return;
	if (st == NL_STAGE_SPARSE) {
		const struct nl_batch *n = nl_batch_of(p, b->token + 1);

		/* not ordered after the next batch's copies: not the next
		 * batch's stage, had the stream run a batch ahead (stage_shared) */
		if (!n || !n->copy_closed || !nl_copy_covered(n, s)) {
			struct nl_pipe *bq = nl_pipe_of_token(p, b->token);

			if (!bq->sparse_behind || b->token < bq->behind_min)
				bq->behind_min = b->token;
			bq->sparse_behind = true;
		}
	}
	if (st == NL_STAGE_SPARSE && !b->cs.valid)
		for (int i = 0; i < b->nbs; i++) {
			const struct nl_batch_stream *cp = &b->bs[i];

			if (cp->stage == NL_STAGE_COPY && cp->has_work &&
			    s->vc[cp->slot] < cp->last_work.clock) {
				b->cs.valid = true;
				b->cs.bs = i;
				b->cs.seen = s->vc[cp->slot];
				b->cs.consumer = *op;
				break;
			}
		}
	/* Ops ordered after one of the batch's forward ops (the output
	 * all-to-all) are downstream: judged against the last forward op only.
	 * The stream's earlier upstream op is then no longer its last word for
	 * the batch (a token carrying two batches' data-dist work when a
	 * D.wait_stream(M) is missing): it too is judged that way. */
	if (b->fwd_started && p->compute_slot >= 0 &&
	    s->vc[p->compute_slot] >= b->fwd_first_clock) {
		bs->covered = bs->has_up;
		bs->pending = false;
		return;
	}
	bs->has_up = true;
	bs->last_up = *op;
	bs->covered = false;
	bs->pending = false;
	/* Producer ops this one is ordered after were consumed inside the
	 * producer stages: only this one must reach forward. */
	for (int i = 0; i < b->nbs; i++) {
		struct nl_batch_stream *o = &b->bs[i];

		if (o == bs || o->stage == NL_STAGE_FORWARD || !o->has_up || o->covered)
			continue;
		if (s->vc[o->slot] >= o->last_up.clock) {
			o->covered = true;
			o->pending = false;
		}
	}
	b->handoff[st].found = false;
	/* Its forward began already without its edge (its watch saw the step
	 * begin again): a copy op after that, in the batch's segment still
	 * open, does not make it a batch whose forward may come yet. It may
	 * be the next batch's copy, cut from the segment when its record
	 * comes (a take dropped with its record merged the two), and the
	 * restart was this batch's. Before, it armed the watch again and the
	 * restart was forgotten; the next restart, the next batch's, was
	 * charged to this one and the next batch's fault missed (random
	 * program 38485). Not with launches counted in runs (a restart seen
	 * by runs is weaker: healthy batches accused), nor for sparse ops (a
	 * data-dist stream numbered a batch off: random program 216947). */
	if (cw->repeat && !b->fwd_started && st == NL_STAGE_COPY && !p->unnamed_launch)
		return;
	cw->armed = true;
	/* an op given to the batch after the fact (a cut segment): the watch
	 * stands from the op itself when compute did no work since */
	cw->armed_ts = op->ts < p->call_ts && !compute_worked_since(p, op->ts) ? op->ts : p->call_ts;
	cw->valid = cw->repeat = cw->part = cw->blind = cw->blind_pending = cw->own = false;
	cw->prog = 0;
}

/* A work op past a stage's first two: whether it completes those two
 * again in a row (a restart of the stage inside its window). */
static void note_again(struct nl_stage_acc *acc, const struct nl_seen_op *op, const struct nl_call *c)
{
	bool named = c->kind != NL_K_LAUNCH || (c->fields & NL_F_FN);

	if (!acc->first_named[0] || !acc->first_named[1] || acc->first_sig[0] == acc->first_sig[1] ||
	    c->tid != acc->first_tid || !named) {
		acc->again_prog = 0;
		return;
	}
	acc->again_prog = pair_progress(acc->first_sig, acc->again_prog, op->sig);
	if (acc->again_prog == 2) {
		acc->again_ts = c->ts_ns;
		acc->again_prog = 0;
	}
}

/* A forward window's first two kernels: the pipeline's step signature
 * while every window began with them. */
static void note_step(struct nl_pipe *q, const struct nl_stage_acc *acc)
{
	if (q && acc->first_named[0] && !acc->first_named[1]) {
		/* launches counted in runs: the run's first kernel only */
		q->run_varied |= q->run_n > 0 && q->run_sig != acc->first_sig[0];
		q->run_sig = acc->first_sig[0];
		q->run_n++;
		return;
	}
	if (!q || !acc->first_named[0] || !acc->first_named[1])
		return;
	q->step.tid_varied |= q->step.n > 0 && q->step.tid != acc->first_tid;
	q->step.tid = acc->first_tid;
	if (q->step.n && q->step.sig[0] == acc->first_sig[0] && q->step.sig[1] == acc->first_sig[1]) {
		q->step.n++;
		return;
	}
	q->step.varied |= q->step.n > 0;
	q->step.sig[0] = acc->first_sig[0];
	q->step.sig[1] = acc->first_sig[1];
	q->step.n = 1;
}

/* The null stream's ops before op `clock` of stream `slot`, as its ring
 * holds it: an op accounted again later (a cut segment's, a collective's
 * record) keeps what it was enqueued after. */
static uint32_t ring_nseq(const struct nl_proc *p, int slot, uint32_t clock)
{
	const struct nl_stream *s = &p->s[slot];

	for (uint32_t k = s->nring; k > nl_ring_start(s); k--) {
		const struct nl_ring_op *r = &s->ring[(k - 1) % NL_RING];

		if (r->clock == clock)
			return r->nseq;
		if (r->clock < clock)
			break;
	}
	return nl_null_seq(p, slot, clock);
}

void nl_account(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c,
		uint32_t clock, int64_t token, bool work, bool is_coll)
{
	struct nl_stream *s = &p->s[slot];
	int st = nl_stage_of_role(s->role);
	struct nl_seen_op op = {
		true, slot, clock, c->api, c->tid, c->ts_ns, nl_call_sig(c), ring_nseq(p, slot, clock)
	};
	struct nl_stage_acc *acc;
	struct nl_batch_stream *bs;
	struct nl_batch *b;

	(void)e;
	s->ops++;
	if (st < 0)
		return;
	if (work && st != NL_STAGE_COPY)
		watch_consumers(p, s, c, &op, st, token);
	b = nl_batch_of(p, token);
	if (!b || b->closed) {
		/* stage work its batch's verdict never weighed; a record or a
		 * wait on it changes nothing that verdict said */
		if (token >= 0 && work)
			p->late_ops++;
		return;
	}
	acc = &b->st[st];
	if (!acc->ops || c->ts_ns < acc->first_ts)
		acc->first_ts = c->ts_ns;
	if (c->ts_ns > acc->last_ts)
		acc->last_ts = c->ts_ns;
	acc->ops++;
	if (work) {
		/* a launch counted in a run that may have been of the window's
		 * first kernel: first_hits is a lower bound */
		acc->unnamed |= c->kind == NL_K_LAUNCH && !(c->fields & NL_F_FN) &&
				(!acc->work || !acc->first_named[0] ||
				 nl_counted_may_be(p, c, acc->first_sig[0]));
		acc->hit_pending = nl_first_work(acc) && acc->first_named[0] && op.sig == acc->first_sig[0] &&
				   c->kind == NL_K_LAUNCH && (c->fields & NL_F_FN);
		if (acc->hit_pending) {
			acc->first_hits++;
			acc->prev_hit_ts = acc->first_hits > 2 ? acc->hit_op.ts : 0;
			acc->hit_op = op;
		}
	}
	if (work && nl_first_work(acc) < 2) {
		uint64_t k = nl_first_work(acc);

		if (!k)
			acc->first_tid = c->tid;
		acc->first_sig[k] = op.sig;
		acc->first_named[k] = c->kind != NL_K_LAUNCH || (c->fields & NL_F_FN);
		if (!k && acc->first_named[0] && c->kind == NL_K_LAUNCH)
			acc->first_hits = 1;
	} else if (work) {
		note_again(acc, &op, c);
	}
	if (work && ++acc->work - acc->first_from == 2 && st == NL_STAGE_FORWARD)
		note_step(nl_pipe_of_token(p, token), acc);
	if ((c->kind == NL_K_COPY || c->kind == NL_K_COPY_SYNC) && (c->fields & NL_F_BYTES))
		acc->bytes += c->bytes;
	if (is_coll)
		acc->colls++;
	stage_tid(acc, c->tid);
	if (work)
		acc->c.done_by_ns = 0; /* new work: not known done any more */
	if (c->ts_ns < b->first_ts)
		b->first_ts = c->ts_ns;
	bs = batch_stream_get(b, slot, st);
	if (!bs) {
		b->skip |= NL_SKIP_BIT(NL_SKIP_EVICTED); /* more streams than a batch tracks */
		return;
	}
	bs->ops++;
	if (clock > bs->last_clock)
		bs->last_clock = clock;
	if (c->ts_ns > bs->last_ts)
		bs->last_ts = c->ts_ns;
	if (!bs->first_op.valid)
		bs->first_op = op;
	if (work && !bs->has_work) {
		bs->first_sig = op.sig;
		bs->first_named = c->kind == NL_K_LAUNCH && (c->fields & NL_F_FN);
	}
	if (work && (!bs->has_work || clock >= bs->last_work.clock)) {
		bs->has_work = true;
		bs->last_work = op;
	}
	if (st == NL_STAGE_FORWARD)
		forward_op(p, b, s, &op, work);
	else
		producer_op(p, b, s, bs, &op, st, work);
}

/* Compute's ops of batch b from ts on were handed to another batch: b's
 * forward ends at its last op before them (its clock at its last forward
 * op stays as it was: no later than now). */
void nl_forward_cut(struct nl_proc *p, struct nl_batch *b, int slot, uint64_t ts, uint64_t moved,
		    uint64_t moved_work)
{
	const struct nl_stream *s = &p->s[slot];
	struct nl_stage_acc *acc = &b->st[NL_STAGE_FORWARD];
	const struct nl_ring_op *last = NULL, *last_work = NULL;

	for (uint32_t k = nl_ring_start(s); k < s->nring; k++) {
		const struct nl_ring_op *r = &s->ring[k % NL_RING];

		if (r->token != b->token || r->ts >= ts)
			continue;
		last = r;
		if (r->work)
			last_work = r;
	}
	for (int i = 0; i < b->nbs; i++) {
		struct nl_batch_stream *bs = &b->bs[i];

		if (bs->slot != slot || bs->stage != NL_STAGE_FORWARD)
			continue;
		bs->ops = bs->ops > moved ? bs->ops - moved : 0;
		if (last) {
			bs->last_clock = last->clock;
			bs->last_ts = last->ts;
		}
		bs->has_work = last_work != NULL;
		if (last_work)
			bs->last_work = nl_ring_seen_op(slot, last_work);
	}
	acc->ops = acc->ops > moved ? acc->ops - moved : 0;
	acc->work = acc->work > moved_work ? acc->work - moved_work : 0;
	b->fwd_work = b->fwd_work > moved_work ? b->fwd_work - moved_work : 0;
	if (last) {
		acc->last_ts = last->ts;
		b->fwd_last = nl_ring_seen_op(slot, last);
	}
}

void nl_batch_cut(struct nl_proc *p, struct nl_batch *b, int slot, uint32_t cut, uint64_t moved)
{
	const struct nl_stream *s = &p->s[slot];
	uint32_t start = nl_ring_start(s);
	struct nl_stage_acc *acc;

	for (int i = 0; i < b->nbs; i++) {
		struct nl_batch_stream *bs = &b->bs[i];
		const struct nl_ring_op *last = NULL;

		if (bs->slot != slot || bs->stage == NL_STAGE_FORWARD)
			continue;
		for (uint32_t k = start; k < s->nring; k++) {
			const struct nl_ring_op *r = &s->ring[k % NL_RING];

			if (r->work && r->token == b->token && r->clock <= cut)
				last = r;
		}
		if (bs->has_up && bs->last_up.clock > cut) {
			bs->has_up = last != NULL;
			bs->pending = false;
			if (last)
				bs->last_up = nl_ring_seen_op(slot, last);
		}
		if (bs->has_work && bs->last_work.clock > cut) {
			bs->has_work = last != NULL;
			if (last)
				bs->last_work = nl_ring_seen_op(slot, last);
			/* a sparse op found unordered against copies the cut
			 * moved to a later batch, ordered after those left */
			if (b->cs.valid && b->cs.bs == i &&
			    (!bs->has_work || b->cs.seen >= bs->last_work.clock))
				b->cs.valid = false;
		}
		if (bs->last_clock > cut)
			bs->last_clock = cut;
		bs->ops = bs->ops > moved ? bs->ops - moved : 0;
		acc = &b->st[bs->stage];
		acc->ops = acc->ops > moved ? acc->ops - moved : 0;
	}
}
