// SPDX-License-Identifier: MIT
/*
 * Applying one call to a process: ops on streams (record, wait, work) with
 * their vector clocks and batch tokens, and null-stream implicit
 * synchronization. The other calls (queries, synchronizations, lifecycles):
 * engine_calls.c. Graph capture: engine_graph.c; which batch a
 * wait gives when several are due (tick cadence): engine_cadence.c; ops
 * given to another batch, and the hand-off rule: engine_handoff.c.
 */
#include "engine/engine_int.h"

/* A stream's token. The copy stream's tokens are only minted, never taken
 * from others. On the compute stream a later token ticks a forward window
 * here, and closes the batches before it at compute's first work op with it
 * (op_work): a wait that brings a newer batch, followed by another wait
 * that brings back the one due before any work, does not close that one. */
void nl_set_token(struct nl_proc *p, int slot, int64_t tok, uint64_t ts)
{
	struct nl_stream *s = &p->s[slot];

	if (s->role == NL_ROLE_COPY || tok == NL_NO_TOKEN)
		return;
	if (slot == p->compute_slot)
		nl_compute_tick(p, tok, ts);
	s->token = tok;
}

static void join_implicit(struct nl_proc *p, int dst, int src, uint64_t ts)
{
	nl_vc_join(p->s[dst].vc, p->s[src].vc, p->w);
	p->s[dst].joins++;
	p->s[dst].last_join_ts = ts;
	p->implicit_edges++;
}

/* A sparse stream joining the null stream takes the batch due there, as
 * by a wait on the copy stream whose batch the null stream carried: not a
 * newer one the same join covers too (a loader ahead). That copy stream is
 * the one that copied the batch, though it may have copied a newer one
 * since (the copy of the next batch, itself on a blocking stream, joined
 * the null stream after compute's forward did). */
static int64_t implicit_due(struct nl_proc *p, int slot, int64_t tok)
{
	const struct nl_batch *b;

	if (p->s[slot].role != NL_ROLE_SPARSE)
		return tok;
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *c = &p->s[i];

		if (c->used && c->role == NL_ROLE_COPY && c->token == tok)
			return nl_sparse_due(p, slot, c, tok);
	}
	b = nl_batch_of(p, tok);
	for (int i = 0; b && i < b->nbs; i++) {
		const struct nl_stream *c = &p->s[b->bs[i].slot];

		if (b->bs[i].stage == NL_STAGE_COPY && b->bs[i].has_work && c->role == NL_ROLE_COPY)
			return nl_sparse_due(p, slot, c, tok);
	}
	return tok;
}

/* Compute joining the copy stream of a pipeline with a sparse stage: it
 * takes that pipeline's batches from the sparse streams, so the join
 * orders but brings no batch (as a wait on the copy stream, nl_over_copy). */
static bool over_copy_join(struct nl_proc *p, const struct nl_stream *b)
{
	const struct nl_pipe *q = b->role == NL_ROLE_COPY ? nl_pipe_of_stream(p, b) : NULL;

	return q && q->has_sparse;
}

/* The token an implicit join brings stream s is newer than the batch s
 * holds: a later one of its pipeline, or, of another pipeline, one that
 * pipeline's compute has not begun (an evaluation turn over, training's
 * next batch: its tokens are smaller, and compared across pipelines the
 * join never moved compute back to training). */
static bool implicit_newer(struct nl_proc *p, const struct nl_stream *s, int64_t tok)
{
	const struct nl_pipe *q = nl_pipe_of_token(p, tok);

	if (tok == NL_NO_TOKEN || s->token == NL_NO_TOKEN)
		return tok > s->token;
	if (nl_tok_pipe(tok) == nl_tok_pipe(s->token))
		return tok > s->token;
	return q && tok > q->fwd_max;
}

/* Null-stream op c of compute may begin a step of tok's pipeline: not one
 * made by another thread than compute's window began with, nor a launch
 * of another kernel than every step of it began with (named; or counted
 * in a run, where the probes' rows say it was not that kernel). */
static bool implicit_may_begin(struct nl_proc *p, int64_t tok, const struct nl_call *c)
{
	const struct nl_pipe *q = nl_pipe_of_token(p, tok);

	/* not an op made by another thread than the one that began the window
	 * compute holds: a step begins where its forward does (the main
	 * thread); the autograd thread's backward, beginning with forward's
	 * first kernel or not, goes on with the step. Before, its join moved
	 * compute to the next batch in the middle of the step, and healthy
	 * batches were accused (random program 389802) */
	if (p->compute_slot >= 0) {
		const struct nl_batch *h = nl_batch_of(p, p->s[p->compute_slot].token);

		if (h && h->st[NL_STAGE_FORWARD].work && c->tid != h->st[NL_STAGE_FORWARD].first_tid)
			return false;
	}
	if (c->kind != NL_K_LAUNCH || !q || !q->step.n || q->step.varied)
		return true;
	return nl_step_kernel_may_be(p, q, c, 0);
}

/* The legacy null stream waits for all prior work of blocking streams, and
 * work on a blocking stream waits for prior null-stream work. Tokens ride
 * these edges too; since one null-stream op joins several streams at once,
 * it takes the newest token among them. */
static void cut_open(struct nl_engine *e, struct nl_proc *p, int slot);

/* Launch c on sparse stream s, right after its record another sparse
 * stream waited on (its hand-off of the batch it holds to the collective
 * stream), names another kernel than the one the batch's stage began with
 * on s: the stage's second part (dist_init), its wait on the all-to-all's
 * end dropped, not the next batch's stage. */
static bool stage_second_part(struct nl_proc *p, const struct nl_stream *s,
			      const struct nl_call *c)
{
	const struct nl_batch *b = nl_batch_of(p, s->token);

	return s->role == NL_ROLE_SPARSE && b && !b->closed && nl_launch_after_handoff(p, s, c);
}

/* Sparse stream s, handed over (compute took a batch from it), joins the
 * null stream, which brings tok: the batch due there is one s worked on
 * already (its input_dist before the batch before's dist_init, TorchRec's
 * order). The join brings s nothing new: the hand-off rule decides what
 * its next work is (nl_take_over: the oldest newer batch it has no op
 * of). Before, the join gave s that batch back, the hand-off rule no
 * longer applied, the next batch's input_dist begun without its edge
 * stayed on it, and that batch was skipped target_exited (random program
 * 277166). */
static bool handed_worked(struct nl_proc *p, const struct nl_stream *s, int64_t tok)
{
	const struct nl_batch *b;

	if (s->role != NL_ROLE_SPARSE || !s->handed)
		return false;
	b = nl_batch_of(p, implicit_due(p, (int)(s - p->s), tok));
	return b && nl_worked_stream(b, (int)(s - p->s));
}

/* Sparse stream s still holds the batch compute took from it (nl_hand_over):
 * the hand-off rule decides its next batch. */
static bool holds_handed(const struct nl_stream *s)
{
	return s->role == NL_ROLE_SPARSE && s->handed && !s->handed_in && s->token == s->handed_tok;
}

/* Collective stream s (fed by a data-dist stream, never by a copy stream)
 * was handed over by compute's take of the batch it carries: its next work
 * is the next batch's by the hand-off rule (nl_take_over), the oldest one
 * it has no op of. A null-stream join brings the newest batch the null
 * stream carried, a copy stream's, which says nothing of which batch the
 * data-dist stream gave it. Before, with compute the null stream and
 * the streams blocking, the all-to-all of batch k run without N's wait on
 * D (that join made the wait redundant) took batch k + 1, copied by then;
 * the work of k + 1 found its batch's stage done and was placed in no
 * batch (late_ops), and a healthy run's summary said not valid (random
 * program 157679: seeds 1-600,000, 145 of 183 such healthy programs in
 * each mode). */
static bool handed_collective(const struct nl_stream *s)
{
	return holds_handed(s) && !s->fed_by_copy && s->wait_clock;
}

static bool stage_goes_on(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c);

/* Sparse stream s, handed over by compute's take of its batch (TorchRec's
 * step a, before its dist_init), goes on with that batch's stage at launch
 * c (stage_goes_on): the batch a null-stream join brought its record
 * before that take, for its next work, is not that work's. Before, with
 * compute the null stream and the streams blocking, dist_init(k) run
 * without the data-dist stream's wait on the all-to-all's end took batch
 * k + 1, copied by then, whose own stage then found the stream holding it
 * handed over already and was placed in no batch (late_ops): a healthy
 * run's summary said not valid (random program 229204; seeds 1-600,000,
 * 24 of the 38 such healthy programs left in each mode). */
static bool step_a_goes_on(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c)
{
	return holds_handed(s) && stage_goes_on(p, s, c);
}

/* A stream without a role joins the null stream, which carries batch tok,
 * whose forward began: tok is no longer any producer's to begin. The
 * stream keeps no batch, so that its work is placed when it finds its role
 * (the batch of its pipeline it was for, or none). A turn's data-dist
 * stream created again on a blocking handle took the batch its pipeline's
 * last step took, and its first sparse stage, unordered after the newer
 * batch's copy, was charged to that batch: the newer one was skipped
 * target_exited and its copy->sparse missed (random program 42723). */
static bool begun_for_other(struct nl_proc *p, const struct nl_stream *s, int64_t tok)
{
	const struct nl_batch *b = nl_batch_of(p, tok);

	return s->role == NL_ROLE_OTHER && b && b->fwd_started;
}

/* Compute, holding a batch of tok's pipeline, has waited on a record of
 * that pipeline's producer stream before: its batches come by waits (the
 * hand-off), and the null stream's implicit joins mostly only order it. A
 * join brings whatever the producers enqueued since, often the batch
 * after next's input_dist while the step goes on; taken as a batch, it
 * moved compute in the middle of a step (at backward's first kernel), and
 * the batch's own wait, after, took nothing. Before, the forward of a
 * batch was cut at its backward and the sparse stage the window's end then
 * saw accused a healthy batch sparse->forward (random program 358879), or
 * two steps merged and the last batch was skipped target_exited (random
 * program 153024). The join still moves compute, a take dropped, where
 * launch c begins the step again: the window's first kernel, launched
 * more often than any window from one wait to the next had it
 * (first_min); or, none such closed yet, the join brings the very next
 * batch, nothing newer (not the cadence's guess from a batch further on). */
static bool join_only_orders(struct nl_proc *p, const struct nl_stream *s, int64_t tok,
			     const struct nl_call *c)
{
	const struct nl_pipe *q;
	const struct nl_batch *h;
	const struct nl_stage_acc *w;

	if (s->token == NL_NO_TOKEN || tok == NL_NO_TOKEN || nl_tok_pipe(tok) != nl_tok_pipe(s->token))
		return false;
	q = &p->pipes[nl_tok_pipe(tok)];
	h = nl_batch_of(p, s->token);
	if (!q->took_by_wait || !h)
		return false;
	w = &h->st[NL_STAGE_FORWARD];
	if (c->kind != NL_K_LAUNCH || !(c->fields & NL_F_FN) || !w->first_named[0] ||
	    nl_call_sig(c) != w->first_sig[0])
		return true;
	return q->first_min ? w->first_hits + 1 <= q->first_min : tok != s->token + 1;
}

/* Compute takes batch got, which it holds since a null-stream join moved it
 * there at the step's first kernel (note_join_moved), by a wait on a
 * record of a sparse stream (or, in a pipeline without a sparse stage, of
 * a copy stream) after that move: a loop waits for a batch before its
 * forward, so the move came in the middle of the step (backward launching
 * forward's first kernel). The step's launches of that kernel are those
 * of the window the move left and of this one up to the wait: first_min
 * (join_only_orders), and this window counts from the wait. Before, no
 * whole window was ever counted, every step's backward was charged to
 * the next batch, and where that batch's take was dropped as redundant
 * (the null stream's join ordered it), its dist_init after backward's
 * launches accused a healthy batch sparse->forward (random program
 * 46987402). It once asked for the record to be made after the move too:
 * a record made before it, the wait after, is the same step's (random
 * program 76397: a batch never consumed judged trusted). */
static void note_join_early(struct nl_proc *p, int64_t got)
{
	struct nl_pipe *q = nl_pipe_of_token(p, got);
	struct nl_batch *h = nl_batch_of(p, got);

	if (q && !q->first_min && q->join_moved_ts && q->join_moved == got && h &&
	    h->st[NL_STAGE_FORWARD].work) {
		struct nl_stage_acc *w = &h->st[NL_STAGE_FORWARD];

		q->first_min = q->join_moved_hits + w->first_hits;
		/* the window begins again at the wait: its first two work
		 * ops, and its launches of the step's first kernel, are
		 * counted from there */
		w->first_hits = 0;
		w->first_from = w->work;
		w->first_named[0] = w->first_named[1] = false;
		w->again_prog = 0;
		/* nor did its first two kernels begin a step: the step's
		 * signature is what it was before the move. Before, a model
		 * whose backward begins with forward's first kernel had its
		 * steps varied, and a batch a loop that stopped early never
		 * consumed was skipped target_exited (random program 40018) */
		q->step = q->join_step;
		/* and the window the move left had first_min launches of
		 * the kernel, not those it had at the move (note_even) */
		q->steps_uneven = q->join_uneven || q->even_other ||
				  (q->join_even_hits && q->join_even_hits != q->first_min);
		q->even_hits = q->first_min;
	}
}

/* Compute moved from batch `was` to the next at null-stream op c, a
 * launch of the kernel was's window began with, before any whole window
 * taught first_min (join_only_orders): kept with that window's launches
 * of the kernel, so that a wait taking the batch again shows the move
 * early (note_join_early; was may be closed and gone by then). */
static void note_join_moved(struct nl_proc *p, const struct nl_stream *s, int64_t was,
			    const struct nl_call *c)
{
	struct nl_pipe *q = nl_pipe_of_token(p, s->token);
	const struct nl_batch *b = nl_batch_of(p, was);

	if (!q || q->first_min || c->kind != NL_K_LAUNCH || !(c->fields & NL_F_FN) || !b ||
	    nl_tok_pipe(was) != nl_tok_pipe(s->token) || s->token != was + 1 ||
	    !b->st[NL_STAGE_FORWARD].first_named[0] ||
	    b->st[NL_STAGE_FORWARD].first_sig[0] != nl_call_sig(c))
		return;
	q->join_moved = s->token;
	q->join_moved_ts = c->ts_ns;
	q->join_moved_hits = b->st[NL_STAGE_FORWARD].first_hits;
	q->join_step = q->step;
	q->join_uneven = q->steps_uneven;
	q->join_even_hits = q->even_hits;
}

/* Sparse stream s waits at c on a record of another blocking stream, not
 * a copy stream (the data-dist stream on the all-to-all's end, before its
 * dist_init, the collective stream not known yet): the wait decides its
 * batch, not the null-stream join the wait makes too. Before, with compute
 * the null stream, that join moved the data-dist stream to the batch
 * copied last while its dist_init was still to run; compute's take of its
 * record handed that batch over, and the batch's own stage after it was
 * placed in no batch (late_ops): a healthy run's summary said not valid
 * (random program 594158). */
static bool wait_decides(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c)
{
	const struct nl_event *ev;

	if (c->kind != NL_K_STREAM_WAIT || s->role != NL_ROLE_SPARSE || !(c->fields & NL_F_EVENT))
		return false;
	ev = nl_event_find(p, c->event);
	return ev && ev->recorded && ev->slot >= 0 && &p->s[ev->slot] != s &&
	       p->s[ev->slot].role != NL_ROLE_COPY && p->s[ev->slot].blocking;
}

static void implicit_sync(struct nl_engine *e, struct nl_proc *p, int slot,
			  const struct nl_call *c)
{
	struct nl_stream *s = &p->s[slot];
	uint64_t ts = c->ts_ns;

	if (slot == p->null_slot) {
		int64_t tok = NL_NO_TOKEN, all = NL_NO_TOKEN;

		if (!p->nblocking)
			return;
		for (uint32_t i = 0; i < p->w; i++) {
			const struct nl_stream *b = &p->s[i];
			struct nl_pipe *bq;

			if ((int)i == slot || !b->used || !b->blocking || b->capturing ||
			    b->vc[i] <= s->vc[i])
				continue;
			cut_open(e, p, (int)i);
			join_implicit(p, slot, (int)i, ts);
			if (b->token > all)
				all = b->token;
			bq = nl_pipe_of_token(p, b->token);
			if (bq && (nl_tok_pipe(bq->null_carry) != nl_tok_pipe(b->token) ||
				   b->token > bq->null_carry))
				bq->null_carry = b->token;
			if (b->token > tok && !(slot == p->compute_slot && over_copy_join(p, b)))
				tok = b->token;
		}
		/* compute takes the due batch the join covers, not the newest
		 * (tick cadence), and what was joined travels on (carry); a
		 * batch its wait took and it did no work on yet stays */
		if (all > s->carry)
			s->carry = all;
		/* compute moves at an op that may begin a step: a join made
		 * by a later kernel of the step (backward's) moves it at the
		 * next such op (implicit_tok) */
		if (s->implicit_tok > tok && c->kind != NL_K_STREAM_WAIT) /* else the wait decides */
			tok = s->implicit_tok;
		s->implicit_tok = NL_NO_TOKEN;
		/* a join's token that only ordered compute, of the pipeline
		 * it holds still (a wait since took none of another) */
		if (s->order_tok != NL_NO_TOKEN && s->token != NL_NO_TOKEN &&
		    nl_tok_pipe(s->order_tok) == nl_tok_pipe(s->token) &&
		    (tok == NL_NO_TOKEN ||
		     (nl_tok_pipe(tok) == nl_tok_pipe(s->order_tok) && s->order_tok > tok)))
			tok = s->order_tok;
		s->order_tok = NL_NO_TOKEN;
		if (implicit_newer(p, s, tok) && !nl_held_unworked(p, s, tok)) {
			const struct nl_pipe *tq = nl_pipe_of_token(p, tok);

			if (slot == p->compute_slot && join_only_orders(p, s, tok, c)) {
				/* kept for a later launch of the step's first
				 * kernel, its take dropped, until compute takes
				 * it or a newer one; so at a wait that brings no
				 * batch (on the copy stream). Before, a join
				 * made by backward's launches brought the next
				 * batch's input_dist, and where that batch's
				 * take was dropped, the step's next launch,
				 * joining nothing new, left compute on the batch
				 * before (random program 301086). Not before a
				 * whole window taught first_min: the join's move
				 * then waits for nothing but the next batch */
				if (tq && tq->first_min)
					s->order_tok = tok;
			} else if (slot != p->compute_slot || implicit_may_begin(p, tok, c)) {
				int64_t was = s->token;

				nl_set_token(p, slot, nl_cadence(p, slot, tok, -1, false), ts);
				if (slot == p->compute_slot)
					note_join_moved(p, s, was, c);
			} else {
				s->implicit_tok = tok;
			}
		}
	} else if (s->blocking && p->null_slot >= 0) {
		int n = p->null_slot;
		const struct nl_stream *ns = &p->s[n];
		/* what the null stream joined travels on, whether or not it
		 * moved compute's batch */
		int64_t tok = ns->carry > ns->token ? ns->carry : ns->token;

		/* A record ends the batch the stream's work before it was
		 * for: its event carries that batch. A newer batch the join
		 * brings is taken at the stream's next work op (a record
		 * that took it handed compute a batch a step early: every
		 * batch of a clean loop accused). */
		bool rec = c->kind == NL_K_EVENT_RECORD && s->role == NL_ROLE_SPARSE;

		/* a sparse stream takes only its own pipeline's batch: the
		 * newest token the null stream carried may be another's (an
		 * evaluation turn's), which moved the training data-dist stream
		 * into that pipeline */
		if (s->role == NL_ROLE_SPARSE && s->pipe >= 0 && s->pipe < p->npipes) {
			int64_t own = ns->token != NL_NO_TOKEN && nl_tok_pipe(ns->token) == s->pipe ?
					      ns->token : NL_NO_TOKEN;
			int64_t pc = p->pipes[s->pipe].null_carry;

			if (nl_tok_pipe(pc) != s->pipe)
				pc = NL_NO_TOKEN;
			tok = pc > own ? pc : own;
		}

		if (c->kind == NL_K_STREAM_WAIT) {
			s->implicit_tok = NL_NO_TOKEN; /* the wait decides */
		} else if (c->kind != NL_K_EVENT_RECORD && s->implicit_tok > s->token &&
			   !step_a_goes_on(p, s, c)) {
			nl_set_token(p, slot, implicit_due(p, slot, s->implicit_tok), ts);
			s->implicit_tok = NL_NO_TOKEN;
		}
		if (ns->capturing || ns->vc[n] <= s->vc[n])
			return;
		join_implicit(p, slot, n, ts);
		/* nor at the second part of the stage of the batch the stream
		 * holds (stage_second_part): a null-stream join before its
		 * dist_init moved the stream on, every later stage was charged
		 * a batch late, and a healthy batch was accused copy->sparse
		 * (random program 290615) */
		if ((rec || stage_second_part(p, s, c)) && tok > s->token) {
			s->implicit_tok = tok;
		} else if (tok > s->token && !handed_worked(p, s, tok) && !begun_for_other(p, s, tok) &&
			   !handed_collective(s) && !wait_decides(p, s, c)) {
			int64_t was = s->token;
			const struct nl_batch *g;

			nl_set_token(p, slot, implicit_due(p, slot, tok), ts);
			g = nl_batch_of(p, s->token);
			/* the join brought a batch whose copy it orders: that
			 * batch reached the stage by an edge. Before, the flag
			 * of the batch before stayed (its stage begun without
			 * its edge), and a batch whose dropped wait the null
			 * stream's join made redundant was accused copy->sparse
			 * (random program 153375) */
			if (s->role == NL_ROLE_SPARSE && g && s->token != was && nl_copy_covered(g, s))
				s->adopted = false;
			/* a first batch the join orders after its copy */
			s->joined_now = s->role == NL_ROLE_SPARSE && was == NL_NO_TOKEN && g &&
					nl_tok_pipe(g->token) == s->pipe && !g->fwd_started &&
					!g->closed && nl_copy_covered(g, s);
		}
	}
}

/* Before an op: a capturing stream takes it into its graph (false);
 * implicit syncs apply. */
static bool op_prepare(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c)
{
	struct nl_stream *s = &p->s[slot];

	if (s->capturing) {
		nl_capture_note(p, slot);
		return false;
	}
	implicit_sync(e, p, slot, c);
	return true;
}

void nl_close_segment(struct nl_proc *p, struct nl_stream *s)
{
	struct nl_batch *b = nl_batch_of(p, s->token);

	s->seg_open = false;
	if (b) {
		b->copy_closed = true;
		b->watch[NL_CONSUMER_SPARSE].armed = true;
	}
}

/* The work ops of copy stream m's batches first..upto its ring remembers;
 * *end (where given): the clock of the last. */
static uint32_t fill_ops(const struct nl_stream *m, int64_t first, int64_t upto, uint32_t *end)
{
	uint32_t n = 0;

	for (uint32_t i = nl_ring_start(m); i < m->nring; i++) {
		const struct nl_ring_op *r = &m->ring[i % NL_RING];

		if (r->work && r->token >= first && r->token <= upto) {
			n++;
			if (end)
				*end = r->clock;
		}
	}
	return n;
}

/* Cut copy stream `slot`'s work ops of token tok, all still in its ring,
 * into batches of k: the ops past each k-th handed to a new batch. False
 * when part of them is no longer remembered. */
static bool cut_segment(struct nl_engine *e, struct nl_proc *p, int slot, int64_t tok, uint32_t k,
			uint32_t n)
{
	struct nl_stream *s = &p->s[slot];
	uint32_t idx = 0, cut = 0, start = nl_ring_start(s);
	struct nl_batch *b = nl_batch_of(p, tok);
	int64_t cur = tok;
	uint64_t moved = 0;

	if (fill_ops(s, tok, tok, NULL) != n || !b)
		return false;
	for (uint32_t i = start; i < s->nring; i++) {
		struct nl_ring_op *r = &s->ring[i % NL_RING];

		if (r->token != tok)
			continue;
		if (r->work && idx && idx % k == 0) {
			nl_close_segment(p, s);
			nl_mint(e, p, s, r->ts);
			cur = s->token;
		}
		if (r->work && cur == tok)
			cut = r->clock;
		idx += r->work;
		if (cur != tok) {
			nl_account_ring(e, p, slot, r, cur);
			moved++;
		}
	}
	nl_batch_cut(p, b, slot, cut, moved);
	return true;
}

/* The smallest batch size a copy stream of pipeline `pipe` (any: -1) is
 * sure of (its steady segments, or, in the first pipeline, the fill
 * learning saw) that divides n into more than one batch; 0 when none does. */
static uint32_t known_k(const struct nl_proc *p, uint32_t n, int pipe)
{
	uint32_t fk = pipe <= 0 ? (p->fill_k ? p->fill_k : p->window_k) : 0;
	uint32_t best = fk && n % fk == 0 && n > fk ? fk : 0;

	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *c = &p->s[i];

		if (c->used && c->role == NL_ROLE_COPY && (pipe < 0 || c->pipe == pipe) && c->seg_k &&
		    c->seg_k_n >= NL_SEG_SURE && n % c->seg_k == 0 && n > c->seg_k &&
		    (!best || c->seg_k < best))
			best = c->seg_k;
	}
	return best;
}

/* Batch tok of copy stream `slot` holds its copies only: no stage of a
 * consumer began on it, and no other stream carries it. */
static bool copies_only(struct nl_proc *p, int slot, int64_t tok)
{
	const struct nl_batch *b = nl_batch_of(p, tok);

	if (!b || b->closed || b->reached_sparse || b->fwd_started ||
	    b->st[NL_STAGE_SPARSE].ops || b->st[NL_STAGE_FORWARD].ops)
		return false;
	for (uint32_t i = 0; i < p->w; i++)
		if (p->s[i].used && (int)i != slot && p->s[i].token == tok)
			return false;
	return true;
}

/* Compute began its step again without a take, in a window of any
 * pipeline, after ts (kept for the exit: again_ts, nl_lone_again). */
static bool restarted_since(const struct nl_proc *p, uint64_t ts)
{
	for (int i = 0; i < p->npipes; i++)
		if (p->pipes[i].used && (p->pipes[i].again_ts > ts || nl_lone_again(&p->pipes[i]) > ts))
			return true;
	return false;
}

/* A fill cut by k from batch first on, cur its next segment's batch, the
 * fill (fill work ops) cut again by own (recut_fill); the batches before
 * first + kept keep their numbers (recut_taken). */
struct recut {
	int64_t first, cur;
	uint32_t k, own, fill, kept;
};

/* Token *t given again: the batch now holding the copy that held its
 * batch's last (cur: the first of the segment's). */
static void recut_token(const struct recut *r, int64_t *t)
{
	if (*t <= r->first || *t > r->cur || *t < r->first + (int64_t)r->kept)
		return;
	if (*t == r->cur)
		*t = r->first + (int64_t)(r->fill / r->own);
	else
		*t = r->first + (int64_t)(((uint64_t)(*t - r->first + 1) * r->k - 1) / r->own);
}

/* Every token the process keeps of a fill cut again: the events recorded,
 * and what streams, pipelines and the null stream's joins carry. */
static void retoken_fill(struct nl_proc *p, const struct recut *r)
{
	for (uint32_t i = 0; i < p->ecap; i++)
		if (p->ev[i].used && p->ev[i].recorded)
			recut_token(r, &p->ev[i].token);
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *x = &p->s[i];

		if (!x->used || x->role == NL_ROLE_COPY)
			continue;
		recut_token(r, &x->token);
		recut_token(r, &x->carry);
		recut_token(r, &x->implicit_tok);
		recut_token(r, &x->order_tok);
		recut_token(r, &x->handed_tok);
		recut_token(r, &x->hold_tok);
		recut_token(r, &x->hold_next);
	}
	for (int i = 0; i < p->npipes; i++) {
		recut_token(r, &p->pipes[i].again_tok);
		recut_token(r, &p->pipes[i].null_carry);
		recut_token(r, &p->pipes[i].tick_max);
	}
	recut_token(r, &p->restart_took);
}

static void restage_copy(struct nl_proc *p, struct nl_batch *b, int slot);

/* Batch b (NULL: audited already and let go) reached a consumer by a wait */
static bool taken(const struct nl_batch *b)
{
	return !b || b->fwd_waited || b->reached_sparse;
}

/* A fill left one batch, split (recut_fill): a sparse stream of its
 * pipeline that worked on that batch before its first wait on the copy
 * stream, then waited on the fill's record, took the batches one by one:
 * its work after that wait is the second batch's, and so are the events
 * it recorded since. Before, they stayed on the first: every later
 * sparse stage of the turn was charged a batch early, and the turn's
 * last batch was skipped target_exited (random program 83639). */
static void split_taken_on(struct nl_engine *e, struct nl_proc *p, int slot, int64_t first)
{
	struct nl_batch *b0 = nl_batch_of(p, first);

	if (!b0 || !nl_batch_of(p, first + 1))
		return;
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *x = &p->s[i];
		uint32_t wait = 0;
		uint64_t moved = 0;
		bool early = false;

		if (!x->used || x->role != NL_ROLE_SPARSE || x->pipe != p->s[slot].pipe)
			continue;
		for (uint32_t k = nl_ring_start(x); k < x->nring && !wait; k++) {
			const struct nl_ring_op *r = &x->ring[k % NL_RING];

			if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT && r->ev_slot == slot)
				wait = early && r->token == first ? r->clock : UINT32_MAX;
			else if (r->work && r->token == first)
				early = true;
		}
		if (!wait || wait == UINT32_MAX)
			continue;
		for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
			struct nl_ring_op *r = &x->ring[k % NL_RING];

			if (r->clock > wait && r->token == first) {
				nl_account_ring(e, p, (int)i, r, first + 1);
				moved++;
			}
		}
		if (!moved)
			continue;
		nl_batch_cut(p, b0, (int)i, wait, moved);
		nl_retoken_events(p, (int)i, wait, UINT32_MAX, first, first + 1, false);
		if (x->token == first)
			x->token = first + 1;
		if (x->handed_tok == first)
			x->handed_tok = first + 1;
	}
}

/* Copy stream `slot`'s fill was cut by the batch size another copy stream
 * was sure of (guess_k), and its next segment, ending now, holds n work
 * ops. n == guess_k confirms the guess. A size of its own refutes it: n,
 * where it divides the fill, or the fill's size, where that divides n (a
 * segment of two batches, the record between dropped), and not where
 * compute worked while that segment was copied: an evaluation pipeline
 * whose batches hold more copies than training's (two tensors where
 * training has one). Where nothing but their copies reached the batches
 * cut from the fill after its first, nor this segment's, they are cut
 * again by that size: their copy ops go to the batches such a cut gives
 * (the first keeps what it had, and more), the batch numbers after the
 * first are given again, and the events recorded on the stream carry the
 * batch that now holds the copy before them. True when it did. `ended`:
 * the stream is destroyed, or its process exits, with no segment after
 * the fill (an evaluation turn of one batch); n is then the fill's size,
 * and only where a wait took the fill's first batch and compute began no
 * step without a take since (that restart may have been the fill's second
 * batch's). Before, every batch of such a pipeline was cut in
 * n / guess_k, half of them never taken, and healthy ones accused
 * copy->sparse (random programs whose evaluation batches hold another
 * number of copies than training's, docs/engine.md). A fill left one
 * batch (guess_k == guess_n: no size cut it) is refuted the same way by a
 * smaller size of its own (`split`): its first batch keeps its first
 * copies and what its consumers did, and its later copies move on. Not
 * once that batch was audited, nor where compute began its step again in
 * its window: the restart may be the second batch's forward, its take
 * dropped with its record, and would stay on the first, the second never
 * taken (random program 46308). Before, the turn's second batch was merged
 * into its first's copies (random program 185725). The batches cut from
 * the fill that its consumers took one by one, in order (a data-dist
 * stream's work before its first wait, then its wait), no more than the
 * new cut gives, keep their numbers and what the consumers did; their
 * copy stages are booked again (restage_copy). Before, the guess stood,
 * every later batch of the turn was audited as another, and the last
 * ones skipped (random program 51670). The guess is dropped where it is
 * refuted; where it stands, the caller decides (segment_end drops it,
 * refute_guess keeps it for the segment's record). */
static bool recut_fill(struct nl_engine *e, struct nl_proc *p, int slot, bool ended)
{
	struct nl_stream *m = &p->s[slot];
	struct nl_pipe *q = nl_pipe_of_stream(p, m);
	int64_t first = m->guess_tok, cur = m->token, last = NL_NO_TOKEN;
	uint32_t k = m->guess_k, fill = m->guess_n, n = ended ? fill : m->seg_work, idx = 0, own;
	uint32_t start = nl_ring_start(m), cut = 0;
	uint64_t t0 = 0, t1 = 0, moved = 0;
	struct nl_batch *b0 = nl_batch_of(p, first);
	uint32_t kept = 1;
	bool split;

	own = fill % n == 0 ? n : n % fill == 0 ? fill : 0;
	split = k == fill && own && own < k && !ended && b0 && !b0->closed &&
		!b0->st[NL_STAGE_FORWARD].again_ts;
	if (!q || (own <= k && !split) || e->o.no_copy_split || m->seg_open == ended ||
	    cur != first + (int64_t)(fill / k) - ended)
		return false;
	if (ended && (!b0 || !taken(b0) ||
		      restarted_since(p, b0->st[NL_STAGE_COPY].first_ts)))
		return false;
	/* the batches cut from the fill its consumers took one by one, in
	 * order: the new batches as many, they keep their numbers */
	while (!ended && !split && first + kept < cur && !copies_only(p, slot, first + kept) &&
	       taken(nl_batch_of(p, first + kept)))
		kept++;
	if (kept > fill / own)
		return false;
	for (int64_t t = first + kept; t <= cur; t++)
		if (!copies_only(p, slot, t))
			return false;
	for (uint32_t i = start; i < m->nring; i++) {
		const struct nl_ring_op *r = &m->ring[i % NL_RING];

		idx += r->token == first && r->work;
		if (r->token == cur && r->work && !t0)
			t0 = r->ts;
		if (r->token == cur && r->work)
			t1 = r->ts;
	}
	if (idx != k)
		return false; /* the first batch's copies are not all remembered */
	/* compute worked while this segment was copied: it may hold two
	 * batches, the record between dropped (a loader's copies either side
	 * of a step), not one of a size of its own */
	if (!ended && p->compute_slot >= 0 &&
	    nl_ring_worked_between(&p->s[p->compute_slot], t0, t1, NULL))
		return false;
	m->guess_n = 0;
	m->guess_refuted = true;
	/* ended: cur is the fill's last batch, given again as the others */
	retoken_fill(p, &(struct recut){ first, cur + ended, k, own, fill, kept > 1 ? kept : 0 });
	for (int64_t t = first + kept; t <= cur; t++)
		nl_batch_of(p, t)->used = false;
	q->next_token = first + kept;
	m->token = first + kept - 1;
	/* split: the fill's own ops past the first batch's move on too */
	if (split)
		idx = 0;
	for (uint32_t i = start; i < m->nring; i++) {
		struct nl_ring_op *r = &m->ring[i % NL_RING];
		int64_t to;

		if (r->token < first || r->token > cur || (r->token == first && !split))
			continue;
		/* a work op by its place in the fill; any other with the one before */
		if (!r->work && last != NL_NO_TOKEN)
			to = last;
		else
			to = first + (int64_t)((r->work ? idx : idx - 1) / own);
		if (to == first && r->token == first) { /* stays in the first batch */
			cut = r->clock;
			idx += r->work;
			last = first;
			continue;
		}
		if (kept > 1 && to < first + kept) { /* a batch kept: booked again below */
			r->token = to;
			idx += r->work;
			last = to;
			continue;
		}
		moved += r->token == first;
		if (to != m->token) {
			nl_close_segment(p, m);
			nl_mint(e, p, m, r->ts);
		}
		/* split: a record after the copies moved on carries their
		 * batch now (retoken_fill gives only batches after the
		 * first). Before, it still carried the first: a wait on it
		 * after the split brought that batch back, every later stage
		 * of the turn was charged a batch early and its last batch
		 * skipped, or a take of it missed the turn's last fault
		 * (random programs 342074, 319334) */
		if (split && r->token == first && nl_api_info[r->api].kind == NL_K_EVENT_RECORD)
			nl_retoken_events(p, slot, r->clock - 1, r->clock, first, m->token, false);
		r->token = m->token;
		nl_account_ring(e, p, slot, r, m->token);
		idx += r->work;
		last = m->token;
	}
	if (moved)
		nl_batch_cut(p, b0, slot, cut, moved);
	if (split)
		split_taken_on(e, p, slot, first);
	for (int64_t t = first; kept > 1 && t < first + kept; t++) {
		struct nl_batch *b = nl_batch_of(p, t);

		if (b) /* closed or not: not audited before (in_fill_guess) */
			restage_copy(p, b, slot);
	}
	if (ended)
		nl_close_segment(p, m);
	m->seg_work = ended ? 0 : n - own * ((n - 1) / own);
	/* sure: the fill and this segment both showed it */
	m->seg_k = own;
	m->seg_k_n = NL_SEG_SURE;
	q->copy_k = own;
	return true;
}

/* Copy stream m's fill guess is refuted by a size of its own, k: the
 * stream and its pipeline are sure of it. */
static void size_shown(struct nl_stream *m, struct nl_pipe *q, uint32_t k)
{
	m->guess_n = 0;
	m->guess_refuted = true;
	m->seg_k = k;
	m->seg_k_n = NL_SEG_SURE;
	q->copy_k = k;
}

/* Batch b's copy stage on copy stream `slot`, booked again from the ops
 * of its token the stream remembers (recut_taken gave it other copies).
 * What ordered the copies it held orders these too: every one of them
 * came before the record each consumer took the batch by. */
static void restage_copy(struct nl_proc *p, struct nl_batch *b, int slot)
{
	const struct nl_stream *m = &p->s[slot];
	struct nl_stage_acc *acc = &b->st[NL_STAGE_COPY];
	struct nl_batch_stream *bs = NULL;

	for (int i = 0; i < b->nbs && !bs; i++)
		if (b->bs[i].slot == slot && b->bs[i].stage == NL_STAGE_COPY)
			bs = &b->bs[i];
	if (!bs)
		return;
	acc->ops = acc->work = 0;
	bs->ops = 0;
	bs->first_op.valid = false;
	for (uint32_t i = nl_ring_start(m); i < m->nring; i++) {
		const struct nl_ring_op *r = &m->ring[i % NL_RING];

		if (r->token != b->token)
			continue;
		if (!acc->ops || r->ts < acc->first_ts)
			acc->first_ts = r->ts;
		if (!acc->ops || r->ts > acc->last_ts)
			acc->last_ts = r->ts;
		acc->ops++;
		acc->work += r->work;
		bs->ops++;
		bs->last_clock = r->clock;
		bs->last_ts = r->ts;
		if (!bs->first_op.valid)
			bs->first_op = nl_ring_seen_op(slot, r);
		if (r->work) {
			bs->last_work = nl_ring_seen_op(slot, r);
			if (bs->has_up)
				bs->last_up = bs->last_work;
		}
	}
	b->first_ts = acc->first_ts;
	for (int i = 0; i < NL_NSTAGES; i++)
		if (b->st[i].ops && b->st[i].first_ts < b->first_ts)
			b->first_ts = b->st[i].first_ts;
}

/* The records of copy stream `slot` made after clock `after` that stream
 * s's waits took, carrying batch tok (any, NL_ANY_TOKEN), as far as its
 * ring remembers: one wait on each counts (records come in clock order). */
static uint32_t records_waited(const struct nl_stream *s, int slot, int64_t tok, uint32_t after)
{
	uint32_t t = 0, seen = after;

	for (uint32_t k = nl_ring_start(s); k < s->nring; k++) {
		const struct nl_ring_op *o = &s->ring[k % NL_RING];

		if (nl_api_info[o->api].kind == NL_K_STREAM_WAIT && o->ev_slot == slot &&
		    (tok == NL_ANY_TOKEN || o->token == tok) && o->ev_clock > seen) {
			t++;
			seen = o->ev_clock;
		}
	}
	return t;
}

/* The most records of copy stream `slot` made after clock `after` that
 * one consumer of its pipeline (a sparse stream of it, compute) took.
 * Per consumer: compute and the data-dist stream each taking one batch by
 * a record of its own are one batch taken twice, not two. */
static uint32_t records_taken(const struct nl_proc *p, int slot, uint32_t after)
{
	const struct nl_stream *m = &p->s[slot];
	uint32_t most = 0;

	for (uint32_t x = 0; x < p->w; x++) {
		const struct nl_stream *s = &p->s[x];
		uint32_t t;

		if (!s->used || (int)x == slot ||
		    ((int)x != p->compute_slot && (s->role != NL_ROLE_SPARSE || s->pipe != m->pipe)))
			continue;
		t = records_waited(s, slot, NL_ANY_TOKEN, after);
		if (t > most)
			most = t;
	}
	return most;
}

/* The pieces of a fill cut by a guess, first to cur, that its consumers
 * began in order (a stage reached or a forward begun), before the first
 * nothing began. Where a data-dist stream's first wait on the fill's
 * record was dropped, or made redundant by it, one record of the copy
 * stream was taken where the turn had two batches: its consumers still
 * began two (random programs 41196487, 41039822). Counted only where the
 * copy stream is destroyed, its turn over: at the next segment, or at an
 * exit, a piece not begun yet may be a batch still to come, and a right
 * guess of three batches was cut in two (random program 510619). */
static uint32_t consumed_prefix(struct nl_proc *p, int64_t first, int64_t cur)
{
	uint32_t t = 0;

	for (int64_t j = first; j <= cur; j++) {
		const struct nl_batch *b = nl_batch_of(p, j);

		if (!b || !(taken(b) || b->fwd_started || b->st[NL_STAGE_SPARSE].work))
			break;
		t++;
	}
	return t;
}

/* Copy stream `slot` is destroyed, or its process exits, its fill cut by a
 * size another copy stream was sure of (guess_k: segment_end, or
 * cut_taken_again once a consumer took the fill twice) into more batches
 * than its consumers took: each took one batch by a record of its own made
 * after the fill's last copy (an evaluation turn at depth 2, its two
 * batches copied before the first record, each taken by a wait_stream of
 * its own, the turn over). The fill is cut again by its size over the
 * takes, and those batches keep their numbers and what their consumers
 * did; the batches cut after them, which nothing took, are let go. Not
 * where a take may be a batch's second (the takes do not divide the fill,
 * or are as many as the batches cut). Before, every batch past the takes
 * was accused copy->sparse, or the turn's batches merged where no size
 * divided the fill. */
static bool recut_taken(struct nl_engine *e, struct nl_proc *p, int slot, bool destroyed)
{
	struct nl_stream *m = &p->s[slot];
	struct nl_pipe *q = nl_pipe_of_stream(p, m);
	int64_t first = m->guess_tok, cur = m->token, to = first;
	uint32_t k = m->guess_k, fill = m->guess_n, idx = 0, last = 0, pieces, t, own;

	if (!q || !k || m->seg_open || e->o.no_copy_split)
		return false;
	pieces = fill / k;
	if (cur != first + (int64_t)pieces - 1)
		return false;
	if (fill_ops(m, first, cur, &last) != fill) /* not all remembered */
		return false;
	t = records_taken(p, slot, last);
	if (t < 2 && destroyed)
		t = consumed_prefix(p, first, cur);
	if (t < 2 || t >= pieces || fill % t)
		return false;
	own = fill / t;
	for (int64_t j = first; j <= cur; j++) {
		const struct nl_batch *b = nl_batch_of(p, j);

		/* a take, or compute's step begun again right after a take
		 * of the fill's record made a second time (taken_again) */
		if (j < first + (int64_t)t ? !taken(b) && !b->fwd_started : !copies_only(p, slot, j))
			return false;
	}
	idx = 0;
	for (uint32_t i = nl_ring_start(m); i < m->nring; i++) {
		struct nl_ring_op *r = &m->ring[i % NL_RING];

		if (r->token < first || r->token > cur)
			continue;
		if (r->work)
			to = first + (int64_t)(idx++ / own);
		r->token = to;
	}
	retoken_fill(p, &(struct recut){ first, cur + 1, k, own, fill, t });
	for (int64_t j = first; j <= cur; j++) {
		struct nl_batch *b = nl_batch_of(p, j);

		if (j >= first + (int64_t)t)
			b->used = false;
		else if (b) /* closed or not: not audited before (in_fill_guess) */
			restage_copy(p, b, slot);
	}
	q->next_token = first + t;
	m->token = first + t - 1;
	size_shown(m, q, own);
	return true;
}

/* Copy stream `slot` is destroyed (destroyed), or its process exits: a
 * fill cut by a size another copy stream was sure of, with no segment
 * after it to confirm it, is cut again by its takes (recut_taken), or
 * refuted where a wait took its first batch and nothing took those cut
 * from it after the first (recut_fill): an evaluation turn of one batch. */
void nl_fill_guess_ends(struct nl_engine *e, struct nl_proc *p, int slot, bool destroyed)
{
	if (p->s[slot].guess_n && p->s[slot].role == NL_ROLE_COPY &&
	    !recut_taken(e, p, slot, destroyed))
		recut_fill(e, p, slot, true);
	p->s[slot].guess_n = 0;
}

/* Compute's step began again, with nothing of the pipeline it held left
 * to begin, or right after a copy on a stream of no role (nl_lone_again,
 * nl_step_begins), in another pipeline than `pipe` and after `since`: a
 * forward of `pipe`, begun before its copy stream was found, its take
 * dropped. The last NL_LONE_HIST such restarts per other pipeline are
 * known (lone_hist). The fill of `pipe`'s copy stream, cut by no size,
 * held that batch too. Before, an evaluation turn's two batches copied back to
 * back, the first one's take dropped, were one batch taken by the second
 * one's wait: its copy->forward missed, the run judged evidence_valid
 * (random program 10595). Before, only the last restart per pipeline was
 * known: a second pipeline's first two steps begun without their takes,
 * its second batch's record dropped too, counted one, and that one went
 * to the pipeline's first batch (forwards_due_before); the segment after
 * it held two batches as one, and the batch after the fault was accused
 * copy->forward (random program 190236934). */
static uint32_t lone_restarts_since(const struct nl_proc *p, int pipe, uint64_t since)
{
	uint32_t t = 0;

	for (int i = 0; i < p->npipes; i++) {
		const struct nl_pipe *q = &p->pipes[i];
		uint32_t n = q->nlone < NL_LONE_HIST ? q->nlone : NL_LONE_HIST;

		if (i == pipe || !q->used)
			continue;
		for (uint32_t k = 0; k < n; k++)
			t += q->lone_hist[k] > since;
	}
	return t;
}

/* The batches of pipeline q older than tok, not audited yet, whose forward
 * has not begun: a restart of compute's step may be the forward of each. */
static uint32_t forwards_due_before(struct nl_proc *p, const struct nl_pipe *q, int64_t tok)
{
	uint32_t u = 0;

	for (int64_t t = q->oldest; t < tok; t++) {
		const struct nl_batch *x = nl_batch_of(p, t);

		if (x && x->used && !x->closed && !x->fwd_started)
			u++;
	}
	return u;
}

/* Copy stream `slot`'s segment of batch u ends with n work ops, half its
 * fill t (u = t + 1), which no size cut: a fill left one batch (guess_k ==
 * guess_n). A data-dist stream holds u by the hand-off rule (adopted: it
 * began a stage again after compute took t, with no wait between), its
 * clock ordered after all of t's copies but not u's. That stage was the
 * fill's second batch's, whose wait was redundant (one record covered both
 * batches' copies): the fill's second half and its record are u's copies,
 * and this segment is a new batch's. The stage is then ordered after its
 * copy. recut_fill does not cut a fill whose first batch was audited; here
 * the batch numbers stay as they are. Before, the healthy u was accused
 * copy->sparse and the fill's second batch merged into its first (random
 * programs 59201, 190719255: an evaluation turn's fill of two one-copy
 * batches, the second's data-dist wait dropped with its record). */
static bool swap_fill_piece(struct nl_engine *e, struct nl_proc *p, int slot)
{
	struct nl_stream *m = &p->s[slot], *x = NULL;
	struct nl_pipe *q = nl_pipe_of_stream(p, m);
	int64_t t = m->guess_tok, u = m->token, w = NL_NO_TOKEN;
	uint32_t fill = m->guess_n, n = m->seg_work, idx = 0, cut = 0, last = 0;
	uint64_t moved = 0;
	struct nl_batch *bt = nl_batch_of(p, t), *bu = nl_batch_of(p, u);

	if (!q || e->o.no_copy_split || !fill || m->guess_k != fill ||
	    u != t + 1 || !n || n * 2 != fill || q->next_token != u + 1 || !bt || !bu ||
	    bu->closed || fill_ops(m, t, t, NULL) != fill || fill_ops(m, u, u, NULL) != n)
		return false;
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *d = &p->s[i];

		if (!d->used || d->role != NL_ROLE_SPARSE || d->pipe != m->pipe || d->token != u)
			continue;
		if (!d->adopted || !nl_worked_stream(bu, (int)i) || !nl_copy_covered(bt, d) ||
		    nl_copy_covered(bu, d) || x)
			return false;
		x = d;
	}
	if (!x)
		return false;
	/* this segment: a new batch's, begun at its first op */
	for (uint32_t i = nl_ring_start(m); i < m->nring; i++) {
		struct nl_ring_op *r = &m->ring[i % NL_RING];

		if (r->token != u)
			continue;
		if (!moved++) {
			nl_mint(e, p, m, r->ts);
			w = m->token;
		}
		nl_account_ring(e, p, slot, r, w);
	}
	nl_batch_cut(p, bu, slot, 0, moved);
	/* the fill's second half, and its record: u's */
	moved = 0;
	for (uint32_t i = nl_ring_start(m); i < m->nring; i++) {
		struct nl_ring_op *r = &m->ring[i % NL_RING];

		if (r->token != t)
			continue;
		if (idx < fill / 2) {
			idx += r->work;
			cut = r->clock;
			continue;
		}
		r->token = u;
		last = r->clock;
		moved++;
	}
	nl_batch_cut(p, bt, slot, cut, moved);
	restage_copy(p, bt, slot);
	restage_copy(p, bu, slot);
	/* the cut above left u no copy work on the stream: it has the
	 * fill's second half now */
	for (int i = 0; i < bu->nbs; i++)
		if (bu->bs[i].slot == slot && bu->bs[i].stage == NL_STAGE_COPY)
			bu->bs[i].has_work = bu->st[NL_STAGE_COPY].work > 0;
	nl_retoken_events(p, slot, cut, last, t, u, false);
	x->adopted = false;
	bu->reached_sparse = true;
	if (bu->cs.valid && nl_copy_covered(bu, x))
		bu->cs.valid = false;
	size_shown(m, q, n);
	return true;
}

/* A record ends the copy stream's segment. Segments of a steady size K
 * teach it; one of exactly n * K work ops (n > 1) is n batches whose
 * copies one record covers (a whole wait_stream dropped with its record, a
 * loader that ran ahead, a fill phase), so it is cut into n
 * (docs/engine.md, "Merged segments"). */
static void segment_end(struct nl_engine *e, struct nl_proc *p, int slot)
{
	struct nl_stream *s = &p->s[slot];
	uint32_t k, n = s->seg_work, fk = 0;
	struct nl_pipe *q = nl_pipe_of_stream(p, s);
	struct nl_batch *b;
	bool borrowed = false;

	/* closed by its consumer's stage (take_token), not by a record */
	if (!s->seg_open && n && s->guess_n && s->role == NL_ROLE_COPY &&
	    swap_fill_piece(e, p, slot))
		return;
	if (!s->seg_open || !n)
		return;
	if (s->guess_n && recut_fill(e, p, slot, false))
		return;
	if (s->guess_n && swap_fill_piece(e, p, slot))
		return;
	s->guess_n = 0; /* the guess stands */
	k = s->seg_k;
	b = nl_batch_of(p, s->token);
	/* a fill phase: a segment before any hand-off, of the size learning
	 * saw (the first pipeline, or this stream's own in what it held
	 * back), the one its pipeline's copy streams were last sure of (a
	 * turn's copy stream created again, in the first pipeline too: an
	 * evaluation pipeline learned first, whose later turns learning never
	 * saw. Before, its second turn's two batches were one, the second
	 * one's restart charged to training: random program 190457709), or
	 * one another copy stream is sure of (a guess, recut_fill) */
	if (!s->copy_waited && s->role == NL_ROLE_COPY && b && !e->o.no_copy_split) {
		fk = s->pipe == 0 ? p->fill_k : nl_other_fill_k(p, &s->key);
		if (!fk && q && q->copy_k && n % q->copy_k == 0)
			fk = q->copy_k;
		if (!fk && s->pipe != 0 && !s->guess_refuted) {
			fk = known_k(p, n, -1);
			borrowed = true;
		}
	}
	/* or as many batches as compute began steps of it, its takes
	 * dropped, while its copies went on (lone_restarts_since) and one
	 * more, the batch a wait takes. Less one for each older batch of the
	 * pipeline whose forward has yet to begin: a restart may be its (a
	 * turn's fill, ended by the data-dist stream's work before the next
	 * copy: random program 190804765) */
	if (!fk && borrowed) {
		uint32_t t = lone_restarts_since(p, s->pipe, b->st[NL_STAGE_COPY].first_ts);
		uint32_t u = q ? forwards_due_before(p, q, b->token) : 0;

		t = t > u ? t - u : 0;
		if (t && n > t && n % (t + 1) == 0)
			fk = n / (t + 1);
	}
	/* after it, in the window learning saw, the size all its segments share */
	if (!fk && s->pipe == 0 && s->role == NL_ROLE_COPY && b)
		fk = p->window_k;
	if (fk && n > fk && n % fk == 0) {
		/* a size two segments in a row had, here or elsewhere */
		k = fk;
		s->seg_k = k;
		s->seg_k_n = NL_SEG_SURE;
		if (borrowed) {
			s->guess_tok = s->token;
			s->guess_k = k;
			s->guess_n = n;
		}
	} else if (!k || n % k || n == k || s->seg_k_n < NL_SEG_SURE || e->o.no_copy_split || !b) {
		/* no size cuts the fill: one batch, a guess its next segment
		 * may refute (recut_fill) */
		if (borrowed) {
			s->guess_tok = s->token;
			s->guess_k = n;
			s->guess_n = n;
		}
		if (n == k) {
			if (++s->seg_k_n >= NL_SEG_SURE && q && s->role == NL_ROLE_COPY)
				q->copy_k = k;
		} else {
			s->seg_k = n;
			s->seg_k_n = 1;
			s->seg_k_partial = b && (b->skip & NL_SKIP_BIT(NL_SKIP_ATTACHED_MID_BATCH));
		}
		return;
	}
	cut_segment(e, p, slot, s->token, k, n);
}

/* Copy stream m's segment is open and holds a whole multiple of the size
 * the stream is sure of: what a record would end and cut (segment_end) */
static bool open_sure_segment(const struct nl_stream *m)
{
	return m->used && m->role == NL_ROLE_COPY && m->seg_open && m->seg_k &&
	       m->seg_k_n >= NL_SEG_SURE && m->seg_work && !(m->seg_work % m->seg_k);
}

void nl_end_sure_segment(struct nl_engine *e, struct nl_proc *p, int64_t tok)
{
	if (e->o.no_copy_split)
		return;
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *m = &p->s[i];

		if (!open_sure_segment(m) || m->token != tok)
			continue;
		segment_end(e, p, (int)i);
		nl_close_segment(p, m);
	}
}

/* At the process's exit, a copy stream's segment no record closed, of a
 * whole multiple n > 1 of the size the stream is sure of: batches a
 * loader copied ahead of steps that never came, their records never
 * made (a loop that stops before its prefetched batches). It is cut as
 * a record would have cut it. Before, the batches merged into one,
 * skipped target_exited, the run never valid (random program 25003). */
void nl_end_open_segments(struct nl_engine *e, struct nl_proc *p)
{
	if (e->o.no_copy_split)
		return;
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *m = &p->s[i];

		if (!open_sure_segment(m) || m->seg_work == m->seg_k || m->guess_n)
			continue;
		segment_end(e, p, (int)i);
		nl_close_segment(p, m);
	}
}

/* A consumer took batch tok, the newest of those cut from copy stream
 * `slot`'s fill by another pipeline's size (a guess: cut_taken_again),
 * once more, the stream copying nothing since: the fill holds one batch
 * more than the guess cut. It is cut again into that many, where they
 * divide it: the copies go to the batches such a cut gives (their copy
 * stages booked again, restage_copy), the last one new, and the records
 * made since the fill's last copy carry it. Before, an evaluation turn of
 * three batches of two copies, training three, was two batches, the third
 * merged into the second (random program 190849, no fault at all). tok
 * itself is taken by the wait that takes it again: its window may have
 * begun with a restart, its first take's window the batch before's. */
static bool took_past_guess(struct nl_engine *e, struct nl_proc *p, int slot, int64_t tok)
{
	struct nl_stream *m = &p->s[slot];
	int64_t first = m->guess_tok, last = NL_NO_TOKEN, fresh = NL_NO_TOKEN;
	uint32_t fill = m->guess_n, k = m->guess_k, pieces, own, idx = 0, end = 0;

	if (!fill || !k || k >= fill || m->seg_open || m->token != tok)
		return false;
	pieces = fill / k;
	if (tok != first + (int64_t)pieces - 1 || fill % (pieces + 1))
		return false;
	own = fill / (pieces + 1);
	if (fill_ops(m, first, tok, &end) != fill) /* not all remembered */
		return false;
	/* tok is taken: by the wait that takes it again */
	for (int64_t j = first; j < tok; j++) {
		const struct nl_batch *b = nl_batch_of(p, j);

		if (!b || !taken(b))
			return false;
	}
	for (uint32_t i = nl_ring_start(m); i < m->nring; i++) {
		struct nl_ring_op *r = &m->ring[i % NL_RING];
		int64_t to;

		if (r->token < first || r->token > tok)
			continue;
		/* a work op by its place in the fill; any other with the one before */
		to = r->work || last == NL_NO_TOKEN ? first + (int64_t)(idx / own) : last;
		idx += r->work;
		last = to;
		if (to <= tok) {
			r->token = to;
			continue;
		}
		if (fresh == NL_NO_TOKEN) {
			nl_mint(e, p, m, r->ts);
			fresh = m->token;
		}
		nl_account_ring(e, p, slot, r, fresh);
	}
	/* the fill's last `own` copies always go to the new batch (fresh) */
	nl_close_segment(p, m);
	nl_retoken_events(p, slot, end, UINT32_MAX, tok, fresh, false);
	for (int64_t j = first; j <= tok; j++)
		restage_copy(p, nl_batch_of(p, j), slot);
	m->guess_k = own;
	m->seg_k = own;
	m->seg_k_n = NL_SEG_SURE;
	return true;
}

/* Compute's window of batch x, which a wait took, began the step again
 * (its first two kernels again, named) with nothing of x's pipeline left
 * to begin, in a process with more than one pipeline. x's copy segment,
 * the newest of its stream, of a size the stream is not sure of (nor cut
 * by another's: a fill that a guess left one batch may be), holds two
 * batches, the second's take dropped as redundant: it is cut in two where
 * it divides, and the restart is the second's. Before, the restart was
 * taken for another pipeline's batch begun without its take, and that
 * batch, healthy, was accused copy->forward (an evaluation turn of two
 * one-copy batches copied before its first record, training's next
 * batches copied ahead: eval_fill_cut_by_restart). Not in a pipeline with
 * a sparse stage: there a batch cut so, the fault after it named on it,
 * was accused copy->sparse (random programs 103576, 169589: five more
 * accusations on seeds 1-600,000). False where it did not cut. */
bool nl_cut_restarted(struct nl_engine *e, struct nl_proc *p, const struct nl_batch *x)
{
	struct nl_stream *m;
	uint32_t n;
	int slot = -1;

	for (int i = 0; i < x->nbs; i++)
		if (x->bs[i].stage == NL_STAGE_COPY && x->bs[i].has_work)
			slot = x->bs[i].slot;
	if (e->o.no_copy_split || !x->fwd_waited || slot < 0 ||
	    nl_pipe_of_token(p, x->token)->has_sparse)
		return false;
	m = &p->s[slot];
	if (m->role != NL_ROLE_COPY || m->seg_open || m->token != x->token || nl_sure_seg_k(m) ||
	    (m->guess_n && (m->guess_tok != x->token || m->guess_k != m->guess_n)))
		return false;
	n = fill_ops(m, x->token, x->token, NULL);
	if (n < 2 || n % 2 || !cut_segment(e, p, slot, x->token, n / 2, n))
		return false;
	m->guess_n = 0;
	nl_close_segment(p, m);
	return true;
}

/* Batch b0's copy segment, taken by compute, was cut into `pieces`
 * batches now that compute takes it again. The steps its window began
 * again before this take (its first kernel launched more often than a
 * step launches it, the launch of the step this take begins aside), as
 * many as the batches cut after b0 less this take's, or fewer, were
 * theirs: where they left another pipeline's batches unwatched, copied
 * before the window began, those watches stand again. */
static void restarts_explained(struct nl_proc *p, const struct nl_batch *b0, uint32_t pieces)
{
	const struct nl_stage_acc *w = b0 ? &b0->st[NL_STAGE_FORWARD] : NULL;
	const struct nl_pipe *q = b0 ? nl_pipe_of_token(p, b0->token) : NULL;
	uint32_t min, hits;
	struct nl_batch *x;

	if (!q || !b0->fwd_started || !w->first_named[0] || w->unnamed || pieces < 2)
		return;
	min = nl_step_first_min(q);
	hits = w->first_hits - (w->hit_pending ? 1 : 0);
	if (hits <= min || (hits - min) % min || (hits - min) / min > pieces - 2)
		return;
	NL_FOR_BATCHES(p, x) {
		struct nl_watch *cw = &x->watch[NL_CONSUMER_COMPUTE];

		if (nl_tok_pipe(x->token) == nl_tok_pipe(b0->token) || x->closed || x->fwd_started ||
		    !cw->blind || cw->blind_ts < w->first_ts || !x->st[NL_STAGE_COPY].ops ||
		    x->st[NL_STAGE_COPY].first_ts >= w->first_ts)
			continue;
		cw->blind = false;
	}
}

/* Copy stream `slot`'s closed segment of batch tok, which stream `by`
 * (compute, or the data-dist stream) took and began its stage on, then
 * took again by a wait on a record of the stream made with no copy since,
 * and began its stage again: more than one batch's copies, their records
 * dropped or made before the first take (a fill of two batches). Cut by
 * the size a copy stream of its pipeline is sure of (known_k), as a record
 * would cut it, else by one another pipeline's is sure of, a guess (an
 * evaluation turn's batches may hold more copies than training's) that
 * the takes refute once the turn is over (recut_taken), or, where no size
 * divides it, one batch per take of it (where the takes do not divide it,
 * the fewest batches more than them that do); the stream is then sure of
 * that size. Before, the guess stood: an evaluation turn of two batches of
 * three copies each, training copying one, was cut in six, and the four
 * nothing took were accused copy->sparse (random program 297462). False
 * when nothing divides it, or its ops are not all remembered. */
static bool cut_taken_again(struct nl_engine *e, struct nl_proc *p, int slot, int by, int64_t tok)
{
	struct nl_stream *m = &p->s[slot];
	uint32_t n, k, t;
	bool borrowed = false;

	if (e->o.no_copy_split || m->role != NL_ROLE_COPY || m->seg_open || m->token != tok)
		return false;
	if (took_past_guess(e, p, slot, tok))
		return true;
	n = fill_ops(m, tok, tok, NULL);
	/* its own size first: a stream sure of it, the segment of that size,
	 * was taken twice by a redundant wait, not cut by another's */
	k = nl_sure_seg_k(m);
	if (k && (n % k || n <= k))
		return false;
	t = k ? 0 : records_waited(&p->s[by], slot, tok, 0);
	/* a size its pipeline's copy streams are sure of, or one another
	 * pipeline's is: a guess its takes may still refute (recut_taken) */
	if (!k)
		k = known_k(p, n, m->pipe);
	if (!k) {
		k = known_k(p, n, -1);
		borrowed = k != 0;
	}
	/* no size known divides it: one batch per take, or where the takes
	 * do not divide it, the fewest batches more than the takes that do
	 * (taken twice, it holds two at least). Before, such a segment stayed
	 * one batch: an evaluation turn's three one-copy batches copied
	 * before its first record, training's batches three copies, were one,
	 * each step after the first taken for training's next batch begun
	 * without its take, and two healthy training batches were accused
	 * copy->forward (eval_fill_of_smaller_batches) */
	for (uint32_t d = t; !k && t >= 2 && d <= n; d++)
		if (n % d == 0)
			k = n / d;
	if (!k || !cut_segment(e, p, slot, tok, k, n))
		return false;
	if (by == p->compute_slot)
		restarts_explained(p, nl_batch_of(p, tok), n / k);
	nl_close_segment(p, m);
	if (borrowed) {
		m->guess_tok = tok;
		m->guess_k = k;
		m->guess_n = n;
	}
	m->seg_k = k;
	m->seg_k_n = NL_SEG_SURE;
	return true;
}

/* Copy stream `slot`'s closed segment of batch tok, recorded `parts` times
 * with no copy between the records (nl_cut_rerecorded): cut in that many
 * batches, as the records would have cut it, where they divide it and the
 * stream is sure of no other size. */
bool nl_cut_in(struct nl_engine *e, struct nl_proc *p, int slot, int64_t tok, uint32_t parts)
{
	struct nl_stream *m = &p->s[slot];
	uint32_t n, k;

	if (e->o.no_copy_split || m->role != NL_ROLE_COPY || m->seg_open || m->token != tok ||
	    parts < 2)
		return false;
	n = fill_ops(m, tok, tok, NULL);
	if (!n || n % parts)
		return false;
	k = n / parts;
	if ((nl_sure_seg_k(m) && nl_sure_seg_k(m) != k) || !cut_segment(e, p, slot, tok, k, n))
		return false;
	nl_close_segment(p, m);
	m->seg_k = k;
	m->seg_k_n = NL_SEG_SURE;
	return true;
}

/* Wait o took an older batch of those another pipeline's size cut copy
 * stream m's fill into (a guess), tok the newest of them, by a record m
 * made after the fill's last copy and before clock `upto`: it took tok's
 * copies too, though its window began with the older batch. */
static bool took_with_guess(const struct nl_proc *p, int m, const struct nl_ring_op *o, int64_t tok,
			    uint32_t upto)
{
	const struct nl_stream *c = &p->s[m];

	if (!c->guess_n || c->guess_k >= c->guess_n || o->token < c->guess_tok || o->token >= tok ||
	    c->token != tok)
		return false;
	for (uint32_t k = nl_ring_start(c); k < c->nring; k++) {
		const struct nl_ring_op *x = &c->ring[k % NL_RING];

		if (x->work && x->clock > o->ev_clock && x->clock < upto)
			return false;
	}
	return true;
}

/* Stream `by`'s op at ring index at is a wait on a record of copy stream m
 * carrying batch tok, made after first (its stage of tok began), and an
 * earlier wait on m took tok at or before first: `by` took tok twice, m
 * copying nothing between, and begins its stage again right after. The
 * segment is cut (cut_taken_again). Or the earlier wait took an older
 * batch of a guess's cut by a record made after tok's copies
 * (took_with_guess): the guess is cut again (took_past_guess). */
bool nl_took_again(struct nl_engine *e, struct nl_proc *p, int by, uint32_t at, int m, int64_t tok,
		   uint64_t first)
{
	const struct nl_stream *s = &p->s[by];
	const struct nl_ring_op *r = &s->ring[at % NL_RING];

	if (nl_api_info[r->api].kind != NL_K_STREAM_WAIT || r->ev_slot != m || r->token != tok ||
	    r->ts <= first)
		return false;
	for (uint32_t k = at; k > nl_ring_start(s); k--) {
		const struct nl_ring_op *o = &s->ring[(k - 1) % NL_RING];

		if (nl_api_info[o->api].kind != NL_K_STREAM_WAIT || o->ev_slot != m ||
		    o->ev_clock >= r->ev_clock || o->ts > first)
			continue;
		if (o->token == tok)
			return cut_taken_again(e, p, m, by, tok);
		if (took_with_guess(p, m, o, tok, r->ev_clock))
			return !e->o.no_copy_split && took_past_guess(e, p, m, tok);
	}
	return false;
}

/* Copy stream `slot`'s open segment, cut by k as a record would cut it
 * when it holds more than k work ops, the last, still open part going on. */
static void cut_open_segment(struct nl_engine *e, struct nl_proc *p, int slot, uint32_t k)
{
	struct nl_stream *s = &p->s[slot];
	uint32_t n = s->seg_work;

	if (k && n > k && !e->o.no_copy_split && cut_segment(e, p, slot, s->token, k, n))
		s->seg_work = n - k * ((n - 1) / k);
}

/* Copy stream `slot`'s open segment, before any hand-off, holds more ops
 * than the fill size learning saw: the fill's batches, their records
 * dropped (a D.wait_stream(M) missing with its record). */
void nl_cut_fill(struct nl_engine *e, struct nl_proc *p, int slot)
{
	const struct nl_stream *s = &p->s[slot];

	if (s->seg_open && !s->copy_waited && s->role == NL_ROLE_COPY && s->pipe == 0)
		cut_open_segment(e, p, slot, p->fill_k);
}

/* A copy stream's open segment, after its hand-off, holds more work ops
 * than the batch size it is sure of (its steady segments, or the window
 * learning saw): the later ones are the next batches' copies, their
 * records dropped. Cut as a record would cut it, before the null stream
 * joins it: what the join carries is the newest batch copied, not the
 * segment's first (a loader's copy joined by compute's forward orders the
 * data-dist stream's next work after it). */
static void cut_open(struct nl_engine *e, struct nl_proc *p, int slot)
{
	const struct nl_stream *s = &p->s[slot];
	uint32_t k = s->pipe == 0 ? p->window_k : 0;

	/* not a fill's guess still open: the segment judges it at its
	 * record, or where a sparse stage begins again (refute_guess) */
	if (nl_sure_seg_k(s) && !s->guess_n)
		k = s->seg_k;
	if (s->seg_open && s->copy_waited && s->role == NL_ROLE_COPY)
		cut_open_segment(e, p, slot, k);
}

static bool live_copy(const struct nl_proc *p, int pipe);
static void book_early_work(struct nl_engine *e, struct nl_proc *p, int slot, uint32_t upto,
			    bool ordered_only);
static void producer_again(struct nl_engine *e, struct nl_proc *p, int slot, uint8_t role, int8_t pipe,
			   uint32_t seg_k);
static bool sparse_again(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c);

/* A sparse stage of pipeline `pipe` begins again while a copy stream of it
 * copies a segment longer than the size another pipeline lent its fill
 * (guess_k): that segment is judged now, as its record would judge it
 * (recut_fill), before the stage takes a batch. An evaluation turn's
 * batches of three copies, training one, its fill cut in three: the
 * stage begun again took the fill's second piece, and the next batch's
 * copies, open, were cut by the guess too. Every later batch of the turn
 * was accused copy->sparse, and where a wait was dropped with its record,
 * the restart that should name it took a piece of the fill instead
 * (random programs 583391, 40485). So at a handed data-dist stream's
 * next launch (op_work). Compute's step cuts no open segment by a guess
 * either (cut_open). */
static void refute_guess(struct nl_engine *e, struct nl_proc *p, int pipe)
{
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *m = &p->s[i];

		if (m->used && m->role == NL_ROLE_COPY && m->pipe == pipe && m->seg_open &&
		    m->guess_n && m->guess_k && m->guess_k < m->seg_work)
			recut_fill(e, p, (int)i, false);
	}
}

/* A sparse stream's launch begins a batch's stage again (sparse_again: the
 * kernel the stage of the batch it holds began with): the open segment of
 * each copy stream of its pipeline, after its hand-off, holding a whole
 * multiple (more than one) of the batch size that stream is sure of (or,
 * not sure of its own, one its pipeline's copy streams are sure of, its
 * own last segment's size where that divides it, or one another
 * pipeline's copy stream is sure of: known_k), is cut as a record would
 * cut it. The later ops are the next batches' copies, their
 * records dropped (a fill of two batches copied back to back, the first's
 * D.wait_stream(M) dropped with its record): the stage begun takes the
 * first of them, not all. Before, the batches stayed one segment and the
 * second was never audited (merged into the first's copies: random
 * program 46454). Not at other work, nor a segment of another size: a
 * stalled copy's batch, one op longer, was cut in two, and every later
 * batch audited one late (the workload's stalled copy producer). Nor by
 * another pipeline's size where the stream's own last segment had the
 * open one's size: an evaluation turn's batch of three copies, training
 * one, was cut in three, and the batches after it accused copy->sparse
 * (random program 542). A fill's guess still open is judged first
 * (refute_guess). A hand-off is any wait on the stream's records, the
 * one that found its role too: an evaluation turn at depth 3 (three
 * batches copied before its data-dist stream's first take) whose second
 * take was dropped with its record had its second and third batches
 * merged, where that first take was the only one before (turn loops by
 * clocks, depth 3). */
static void cut_before_sparse(struct nl_engine *e, struct nl_proc *p, int pipe)
{
	refute_guess(e, p, pipe);
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *m = &p->s[i];
		uint32_t n = m->seg_work, k;

		if (!m->used || m->role != NL_ROLE_COPY || m->pipe != pipe || !m->seg_open ||
		    !m->waited_on)
			continue;
		k = nl_sure_seg_k(m);
		if (!k)
			k = known_k(p, n, m->pipe);
		/* its own last segment's size, where it divides the open one
		 * (the same size: one batch), before another pipeline's. Not
		 * where that segment was the first seen after an attach in the
		 * middle of a run (seg_k_partial), which may be a batch's tail:
		 * nothing is cut then, by it or by another pipeline's size.
		 * Before, the workload attached at the last of a batch's three
		 * copies, its data-dist wait dropped for a later batch, had
		 * that segment cut in three, and every later one after it (19
		 * batches for 7); another pipeline's size cut a training
		 * segment of three by the evaluation's one (random program
		 * 32588, attached mid-run) */
		if (!k && m->seg_k_partial)
			continue;
		if (!k && m->seg_k && n % m->seg_k == 0)
			k = m->seg_k < n ? m->seg_k : 0;
		else if (!k)
			k = known_k(p, n, -1);
		if (k && n % k == 0)
			cut_open_segment(e, p, (int)i, k);
	}
}

/* A stream created again on the handle of a destroyed producer, recording
 * the very event that producer recorded, is that producer again (an
 * evaluation pipeline whose streams are made anew for each turn and whose
 * events are kept): its copies are a copy stream's, its kernels a data-dist
 * stream's, though the turn's first edge to it was dropped. The handle alone
 * is not enough (a recycled handle starts clean); the event, recorded last
 * by the stream before it, is what it shares with it: an edge's event, that
 * a stream waited on, recorded by that stream itself, after its creation.
 * An allocator's event (record_stream, only queried) goes from stream to
 * stream, and a stream further back on the handle may have been another
 * producer: a malloc that hands the last freed block out first gives a
 * turn's copy stream the handle of the data-dist stream before it (the two
 * destroyed in turn), so that the handle alternates between them. Before,
 * the copy stream took the data-dist role of the stream before it, through
 * an allocator's event or one it had recorded two turns back (random
 * programs 414 and 501, run live on simhip). */
static bool records_again(const struct nl_proc *p, const struct nl_stream *s, int slot,
			  const struct nl_event *ev)
{
	return p->discovering && s->role == NL_ROLE_OTHER && s->was_role != NL_ROLE_OTHER &&
	       s->creation_seen && !s->capturing && ev->recorded && ev->slot == slot &&
	       ev->waited && ev->rec_ts > s->was_created_ts &&
	       ev->rec_ts < s->creation_ts && (s->was_role != NL_ROLE_COPY || s->h2d);
}

/* A stream created after learning, without a role, that records an edge's
 * event (one a stream waited on) that a producer now destroyed recorded
 * last, on another handle, is that producer again, as records_again's on
 * its own handle: where an allocator hands out the handle freed last
 * first, a turn's new copy stream sits on the handle of the data-dist
 * stream before it, and its first edge may be dropped (random program
 * 84894: the last turn's one batch went unaudited). A copy stream only
 * where it copied to the device and its pipeline has no copy stream left. */
static bool records_elsewhere(const struct nl_proc *p, const struct nl_stream *s, int slot,
			      const struct nl_event *ev)
{
	const struct nl_stream *r = ev->slot >= 0 ? &p->s[ev->slot] : NULL;

	return p->discovering && s->role == NL_ROLE_OTHER && s->creation_seen && !s->capturing &&
	       ev->recorded && ev->waited && r && ev->slot != slot && ev->rec_role != NL_ROLE_OTHER &&
	       ev->rec_created_ts && (r->creation_ts != ev->rec_created_ts || r->destroyed) &&
	       ev->rec_ts < s->creation_ts && ev->rec_pipe >= 0 &&
	       (ev->rec_role != NL_ROLE_COPY || (s->h2d && !live_copy(p, ev->rec_pipe)));
}

/* Data-dist stream `slot` of pipeline `pipe` just took back its role
 * (records_again, records_elsewhere), and the pipeline has no copy stream
 * left: a stream created since, without a role, on the handle of that
 * pipeline's last data-dist stream, that copied to the device
 * asynchronously (counted as not placed), is its copy stream again, the
 * only one such. The handles of a turn's two streams alternate where the
 * allocator hands out the one freed last first, and the turn's first
 * edge from the copy stream was dropped: no edge or handle gave it its
 * role. Before, a last turn of one batch went unaudited (roles:m=other,
 * random program 11297). */
static void copy_beside(struct nl_engine *e, struct nl_proc *p, int slot, int pipe)
{
	int found = -1;

	if (pipe < 0 || live_copy(p, pipe))
		return;
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];

		if ((int)i == slot || !x->used || x->destroyed || x->role != NL_ROLE_OTHER ||
		    !x->unplaced || !x->creation_seen || x->capturing ||
		    x->was_role != NL_ROLE_SPARSE || x->was_pipe != pipe)
			continue;
		if (found >= 0)
			return;
		found = (int)i;
	}
	if (found >= 0)
		producer_again(e, p, found, NL_ROLE_COPY, (int8_t)pipe, 0);
}

static void op_record(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c,
		      uint64_t handle)
{
	struct nl_stream *s = &p->s[slot];
	struct nl_event *ev = nl_event_get(e, p, handle);
	uint32_t clock;
	bool again = true, hand, in_row;

	if (records_again(p, s, slot, ev))
		producer_again(e, p, slot, s->was_role, s->was_pipe, s->was_seg_k);
	else if (records_elsewhere(p, s, slot, ev))
		producer_again(e, p, slot, ev->rec_role, ev->rec_pipe, ev->rec_seg_k);
	else
		again = false;
	/* recorded here before, no stream waiting on it since (retake_rerecorded) */
	in_row = ev->recorded && !ev->capture && ev->slot == slot && !ev->rec_waited;
	/* its work before this record, its first wait dropped, is the batch
	 * its clock ordered, where it ordered one (book_early_work): a drop the
	 * null stream's joins made redundant accuses nothing. Only that: where
	 * none was ordered, booking the work as the batch copied before it
	 * moved the cadence of the turn's later waits, and a dropped compute
	 * wait two batches on was missed (random program 41364417) */
	if (again && s->role == NL_ROLE_SPARSE) {
		copy_beside(e, p, slot, s->pipe);
		book_early_work(e, p, slot, s->vc[slot], true);
	}
	ev->slot = slot;
	if (!op_prepare(e, p, slot, c)) {
		/* Recorded into a graph: waits on it join the capture. */
		const struct nl_stream *o = nl_capture_origin(p, s);

		ev->capture = true;
		ev->cap_id = o ? o->cap_id : 0;
		ev->recorded = false;
		return;
	}
	if (s->role == NL_ROLE_COPY)
		segment_end(e, p, slot);
	clock = ++s->vc[slot];
	ev->recorded = true;
	if (ev->records < UINT32_MAX)
		ev->records++;
	ev->capture = false;
	ev->prev_clock = in_row ? ev->clock : 0;
	ev->unwaited = in_row ? ev->unwaited + 1 : 1;
	ev->rec_waited = false;
	ev->clock = clock;
	ev->gate = s->gate;
	ev->token = s->token;
	ev->adopted = s->role != NL_ROLE_COPY && s->adopted;
	ev->rec_ts = c->ts_ns;
	ev->rec_created_ts = s->creation_ts;
	ev->rec_role = nl_producer_role(s);
	ev->rec_pipe = s->pipe;
	ev->rec_seg_k = ev->rec_role == NL_ROLE_COPY ? nl_sure_seg_k(s) : 0;
	memcpy(ev->vc, s->vc, p->w * sizeof(uint32_t));
	/* a second record with nothing between (an allocator's event, only
	 * queried) carries what the first did: a hand-off to the collective
	 * stream stands. A record of an event another sparse stream waited
	 * on before (the hand-off event, recorded again each batch) is a
	 * hand-off too, waited on or not: where the collective stream's wait
	 * on it was dropped with the data-dist stream's on the all-to-all's
	 * end, the record ended the segment as compute's take would, and
	 * dist_init after it was taken for the next batch's stage begun (its
	 * copy ordered before it); every later stage was charged a batch
	 * early, and at a redundant wait dropped later a healthy batch was
	 * accused copy->sparse (train_loops_collective_pairs_by_clocks,
	 * random programs 221513, 49182) */
	hand = s->role == NL_ROLE_SPARSE && ev->sparse_waited;
	if (!s->nring || nl_api_info[s->ring[(s->nring - 1) % NL_RING].api].kind != NL_K_EVENT_RECORD)
		s->rec_fed = hand;
	nl_ring_push(p, s, clock, c, s->token, false);
	s->ring[(s->nring - 1) % NL_RING].handoff = hand;
	nl_account(e, p, slot, c, clock, s->token, false, false);
	if (s->role == NL_ROLE_COPY) {
		nl_pipe_of_stream(p, s)->seen_copy_record = true;
		if (s->seg_open)
			nl_close_segment(p, s);
	}
}

/* Whether thread tid put work on the compute stream, or on a data-dist
 * stream, between two times, as far as its remembered ops tell
 * (copy_segment's rule, after the fact). */
static bool stage_work_between(const struct nl_proc *p, uint32_t tid, uint64_t t0, uint64_t t1)
{
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];

		if (x->used && ((int)i == p->compute_slot || x->role == NL_ROLE_SPARSE) &&
		    nl_ring_worked_between(x, t0, t1, &tid))
			return true;
	}
	return false;
}

/* A copy stream found after learning: its batches are cut from the ops it
 * still remembers, as they would have been had it had the role from the
 * start. A segment begun before the oldest remembered op is left out (its
 * batch would be incomplete), unless the ring holds the stream's whole life:
 * it forgot nothing, and it was created in view or the process was traced
 * from its start (a stream made through a call not probed). */
static void restamp(struct nl_engine *e, struct nl_proc *p, int slot)
{
	struct nl_stream *m = &p->s[slot];
	uint32_t start = nl_ring_start(m);
	const struct nl_pipe *mq = nl_pipe_of_stream(p, m);
	/* Attached mid-run, a stream not seen created, its whole life
	 * remembered since the attach, that begins a pipeline of its own:
	 * its first segment may have begun before the attach, and is a batch
	 * skipped so (attached_mid_batch, nl_mint), as learning would have
	 * cut it. Left out, its record carried no batch: compute's wait on it
	 * (that batch's take) took none, and the step it began was charged to
	 * the next batch, a healthy one accused (the bundled multipipe
	 * workload attached during an evaluation round). Not where the
	 * pipeline has batches already (a second copy stream of it, found
	 * late: its first segment's place among them is not known). */
	bool whole = start == 0 && (m->creation_seen || !p->mid_run),
	     cut = whole || (start == 0 && mq && !nl_tok_seq(mq->next_token));
	const struct nl_ring_op *last = NULL;

	m->token = NL_NO_TOKEN;
	m->seg_open = false;
	for (uint32_t k = start; k < m->nring; k++) {
		struct nl_ring_op *r = &m->ring[k % NL_RING];
		bool rec = nl_api_info[r->api].kind == NL_K_EVENT_RECORD;

		/* a copy after the stream's wait (on compute: buffer reuse)
		 * begins a batch, as copy_segment has it live. Before, a
		 * found stream's two batches whose record between was dropped
		 * were one (random program 238868) */
		bool waited = k > start &&
			      nl_api_info[m->ring[(k - 1) % NL_RING].api].kind == NL_K_STREAM_WAIT;

		if (r->work && m->seg_open && !e->o.no_copy_split && last &&
		    ((last->tid == r->tid && stage_work_between(p, r->tid, last->ts, r->ts)) || waited)) {
			segment_end(e, p, slot);
			nl_close_segment(p, m);
		}
		if (r->work && !m->seg_open && cut)
			nl_mint(e, p, m, r->ts);
		if (r->work) {
			last = r;
			m->seg_work++;
		}
		/* as op_record ends the segment before its record: nothing waited
		 * on it yet, so it may be a fill */
		if (rec && m->seg_open)
			segment_end(e, p, slot);
		if (m->token != NL_NO_TOKEN) {
			nl_account_ring(e, p, slot, r, m->token);
			if (rec) /* whatever token it carried (compute's, by a buffer-reuse wait) */
				nl_retoken_events(p, slot, r->clock - 1, r->clock, NL_ANY_TOKEN,
						  m->token, false);
		}
		if (rec) {
			cut = true;
			nl_pipe_of_stream(p, m)->seen_copy_record = true;
			if (m->seg_open)
				nl_close_segment(p, m);
		}
	}
	if (m->seg_open && last) { /* copy_segment goes on from here */
		m->seg_tid = last->tid;
		m->seg_mark = nl_thread_get(p, last->tid)->stage_work;
	}
}

/* Pipeline pipe has a stream of role `role` not destroyed. */
static bool live_role(const struct nl_proc *p, int pipe, uint8_t role)
{
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *m = &p->s[i];

		if (m->used && m->role == role && m->pipe == pipe && !m->destroyed)
			return true;
	}
	return false;
}

/* ...a copy stream. */
static bool live_copy(const struct nl_proc *p, int pipe)
{
	return live_role(p, pipe, NL_ROLE_COPY);
}

/* Stream s has a role now: its work is no longer counted as not placed
 * (note_unplaced). */
static void nl_placed(struct nl_proc *p, struct nl_stream *s)
{
	if (s->unplaced) {
		s->unplaced = false;
		p->unplaced_streams--;
	}
}

/* Stream s is a data-dist stream of pipeline `pipe` now: the pipeline has a
 * sparse stage, and s's work is no longer counted as not placed (a
 * data-dist stream copies its split sizes to the device). */
static void sparse_placed(struct nl_proc *p, struct nl_stream *s, int pipe)
{
	s->role = NL_ROLE_SPARSE;
	s->pipe = (int8_t)pipe;
	p->pipes[pipe].has_sparse = p->has_sparse = true;
	nl_placed(p, s);
}

/* Compute found pipeline `pipe` by waiting on a copy stream created again
 * on the handle of a copy stream of pipeline `was` (an evaluation turn's
 * streams created again). A stream created again on the handle of that
 * pipeline's data-dist stream, that compute waited on already, is this
 * turn's data-dist stream: its wait on the copy stream was dropped (a turn
 * of one batch has no other). Found at compute's wait on it, its work so
 * far is booked there (book_early_work, op_wait); found at compute's wait
 * on the copy stream (discover), that work carries no batch: the cadence
 * of its next wait counts it (nl_sparse_due), or the exit judges the batch
 * it was (nl_drain). */
static void data_dist_again(struct nl_proc *p, int was, int pipe)
{
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *x = &p->s[i];

		if (!x->used || x->role != NL_ROLE_OTHER || x->was_role != NL_ROLE_SPARSE ||
		    x->was_pipe != was || !x->feeds_compute || x->capturing)
			continue;
		sparse_placed(p, x, pipe);
		x->fed_by_copy = true;
	}
}

/* Copy stream m has its role and pipeline: its pipeline had a copy stream,
 * and its work is no longer counted as not placed. */
static void copy_placed(struct nl_proc *p, struct nl_stream *m)
{
	p->pipes[m->pipe].had_copy = true;
	nl_placed(p, m);
}

/* Pipelines found by their edges (docs/engine.md, "Pipelines"): a stream
 * without a role that copies to the device (mslot), whose event the stream
 * in slot now waits on (or whose copies it was ordered after:
 * discover_implicit), is a copy stream. It belongs to the waiter's pipeline when the
 * waiter is a sparse stream; otherwise to a pipeline of its own (one whose
 * copy streams were all destroyed, or a new one), and a waiter without a
 * role becomes that pipeline's sparse stream. Only after learning, and not
 * when the options named the streams. */
static void discover(struct nl_engine *e, struct nl_proc *p, int slot, int mslot)
{
	struct nl_stream *s = &p->s[slot], *m = &p->s[mslot];
	int pipe;

	if (!p->discovering || m->role != NL_ROLE_OTHER || !m->h2d || s->role == NL_ROLE_COPY ||
	    m->capturing || s->capturing)
		return;
	/* nor a stream that launched as many kernels as it copied to the
	 * device, or more: a data-dist stream copying its splits, found
	 * before its pipeline's copy stream (attached after that one's last
	 * copy). Before, it was taken for a new pipeline's copy stream and
	 * minted batches the job never had (the workload attached in its
	 * drain: four to seven, one of them judged trusted) */
	if (m->launches >= m->h2d)
		return;
	/* a stream not seen created existed before any the tool saw
	 * destroyed: it is no pipeline's streams made again, and does not
	 * continue that pipeline's batches (nl_pipe_open) */
	pipe = s->role == NL_ROLE_SPARSE ? s->pipe : nl_pipe_open(p, m->creation_seen);
	if (pipe < 0)
		return;
	m->role = NL_ROLE_COPY;
	m->pipe = (int8_t)pipe;
	copy_placed(p, m);
	if (s->role == NL_ROLE_OTHER)
		sparse_placed(p, s, pipe);
	else if (slot == p->compute_slot && m->was_role == NL_ROLE_COPY)
		data_dist_again(p, m->was_pipe, pipe);
	restamp(e, p, mslot);
}

/* The first work op of stream d, up to its clock `upto`, where its work
 * so far can be judged with the clock it had at that op (first_vc): its
 * whole life is remembered, and it waited on no stream that copies to the
 * device. NULL otherwise. */
static const struct nl_ring_op *early_work(const struct nl_proc *p, const struct nl_stream *d,
					   uint32_t upto)
{
	const struct nl_ring_op *fw = NULL;

	if (nl_ring_start(d) != 0 || !d->first_vc)
		return NULL;
	for (uint32_t k = 0; k < d->nring && d->ring[k].clock <= upto; k++) {
		const struct nl_ring_op *r = &d->ring[k];

		if (nl_api_info[r->api].kind == NL_K_STREAM_WAIT &&
		    (r->ev_slot < 0 || p->s[r->ev_slot].h2d || p->s[r->ev_slot].role == NL_ROLE_COPY))
			return NULL;
		if (r->work && !fw)
			fw = r;
	}
	return fw;
}

/* The oldest batch of data-dist stream d's pipeline whose sparse stage and
 * forward did not begin: one whose copy d's clock orders (fw NULL), or one
 * copied before d's work op fw (NULL: none). */
static struct nl_batch *oldest_unstaged(struct nl_proc *p, const struct nl_stream *d,
					const struct nl_ring_op *fw)
{
	struct nl_batch *b, *due = NULL;

	NL_FOR_BATCHES(p, b) {
		if (nl_tok_pipe(b->token) == d->pipe && !b->closed && !b->fwd_started &&
		    !b->st[NL_STAGE_SPARSE].work &&
		    (fw ? b->st[NL_STAGE_COPY].work && b->st[NL_STAGE_COPY].first_ts < fw->ts :
			  nl_copy_covered(b, d)) &&
		    (!due || b->token < due->token))
			due = b;
	}
	return due;
}

/* The clock of d's last work op up to clock `upto` (0: none). */
static uint32_t last_early_work(const struct nl_stream *d, uint32_t upto)
{
	uint32_t last = 0;

	for (uint32_t k = 0; k < d->nring && d->ring[k].clock <= upto; k++)
		if (d->ring[k].work)
			last = d->ring[k].clock;
	return last;
}

/* Stream d, just made the data-dist stream of its pipeline by its edges
 * (discover, discover_implicit), did work before, up to its clock `upto`:
 * the sparse stage of the oldest batch of the pipeline whose copy its
 * clock at its first work op ordered. That clock judges all of it: if
 * the first op is not ordered after the copy, the batch is not, and if it
 * is, so is every later op. With no such batch, the oldest copied before
 * that work (oldest_unstaged): its stage, begun without its edge, as the
 * hand-off rule has it, copy->sparse. Where compute took a record of d
 * made after that work, that batch's forward ran then, in a window
 * charged to another batch (d had no role yet): it is not judged never
 * to have reached compute (taken_early). Before, the work went to no
 * batch, and compute's take of its record to none either: the batch's
 * forward stayed on the other pipeline's, and a healthy batch whose
 * dropped data-dist wait the null stream made redundant was accused
 * copy->sparse (random programs 340138, 240466, 301201, 222818). Where no
 * batch's copy was ordered, the batch was judged never reached and the
 * sparse stages after it were charged a batch early: an evaluation turn
 * whose first D.wait_stream(M) was dropped had its fault missed or a later
 * batch accused (random programs 342074, 101619). With ordered_only, only
 * a batch its clock ordered: none such, the work stays unbooked (op_record).
 * Called where d found its role at an edge of its own or of compute's
 * (discover, discover_implicit, data_dist_again, turn_sparse_again,
 * records_again, records_elsewhere). */
static void book_early_work(struct nl_engine *e, struct nl_proc *p, int slot, uint32_t upto,
			    bool ordered_only)
{
	struct nl_stream *d = &p->s[slot];
	struct nl_batch *due;
	uint32_t *keep = p->tmp_vc;
	const struct nl_ring_op *fw = early_work(p, d, upto);

	if (d->role != NL_ROLE_SPARSE || d->pipe < 0 || !fw)
		return;
	memcpy(keep, d->vc, p->w * sizeof(uint32_t));
	memcpy(d->vc, nl_stream_first_vc(p, slot), p->w * sizeof(uint32_t));
	due = oldest_unstaged(p, d, NULL);
	if (!due && !ordered_only && (due = oldest_unstaged(p, d, fw)) != NULL && p->compute_slot >= 0 &&
	    p->s[p->compute_slot].vc[slot] >= last_early_work(d, upto))
		due->taken_early = true;
	if (due) {
		d->token = due->token;
		for (uint32_t k = 0; k < d->nring && d->ring[k].clock <= upto; k++) {
			/* its batch begins there, as after a wait right before
			 * it (unfed_segment): one its clock took before its
			 * first work, or one copied before that work began it
			 * without its edge */
			if (&d->ring[k] == fw)
				d->ring[k].joined = true;
			nl_account_ring(e, p, slot, &d->ring[k], due->token);
		}
		nl_retoken_events(p, slot, 0, upto, NL_ANY_TOKEN, due->token, false);
	}
	memcpy(d->vc, keep, p->w * sizeof(uint32_t));
}

/* Compute waits for the first time on a record ev of stream d without a
 * role that copies nothing to the device, where d's clock at that record
 * orders the copies of one stream m without a role that copies to the
 * device, by no wait of d on m (a null-stream join of blocking streams):
 * m is a copy stream found by its edges and d its data-dist stream, as if
 * d had waited on m's record (discover), and its work so far is booked as
 * its first batch's (book_early_work), so that compute's wait takes that
 * batch. */
static void discover_implicit(struct nl_engine *e, struct nl_proc *p, int slot,
			      struct nl_event *ev)
{
	struct nl_stream *d = &p->s[ev->slot];
	int mslot = -1;

	if (!p->discovering || slot != p->compute_slot || ev->slot == slot ||
	    d->role != NL_ROLE_OTHER || d->h2d || d->capturing || d->was_role != NL_ROLE_OTHER ||
	    d->feeds_compute || !early_work(p, d, ev->clock))
		return;
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *m = &p->s[i];
		bool copied = false;

		if ((int)i == ev->slot || (int)i == slot || !m->used || m->role != NL_ROLE_OTHER ||
		    !m->h2d || m->capturing || !ev->vc[i])
			continue;
		for (uint32_t k = nl_ring_start(m); k < m->nring && !copied; k++)
			copied = m->ring[k % NL_RING].work && m->ring[k % NL_RING].clock <= ev->vc[i];
		if (!copied)
			continue;
		if (mslot >= 0)
			return;
		mslot = (int)i;
	}
	if (mslot < 0)
		return;
	discover(e, p, ev->slot, mslot);
	if (d->role != NL_ROLE_SPARSE)
		return;
	d->fed_by_copy = true;
	book_early_work(e, p, ev->slot, ev->clock, false);
}

/* The stream in slot is a destroyed producer again (records_again,
 * records_elsewhere, copies_again, copy_beside, turn_sparse_again): it
 * takes back that producer's role and pipeline; a copy stream's batches
 * are cut from what it did so far, as discover does. */
static void producer_again(struct nl_engine *e, struct nl_proc *p, int slot, uint8_t role, int8_t pipe,
			   uint32_t seg_k)
{
	struct nl_stream *s = &p->s[slot];

	if (role == NL_ROLE_SPARSE) {
		sparse_placed(p, s, pipe);
		s->fed_by_copy = true;
		return;
	}
	s->role = role;
	s->pipe = pipe;
	/* the same pipeline's copies: the batch size the stream before was
	 * sure of holds */
	if (seg_k && !s->seg_k_n) {
		s->seg_k = seg_k;
		s->seg_k_n = NL_SEG_SURE;
	}
	copy_placed(p, s);
	restamp(e, p, slot);
}

/* Sparse stream s launches kernel c for batch tok: counted for that
 * batch where it is the kernel the stream's work of the batch began with
 * (hits_n); a newer batch's first launch closes the count of the one
 * before into the fewest any batch made (stage_hits). */
static void note_stage_hits(struct nl_stream *s, const struct nl_call *c, int64_t tok)
{
	uint64_t sig;

	if (s->role != NL_ROLE_SPARSE || c->kind != NL_K_LAUNCH || !(c->fields & NL_F_FN) ||
	    tok == NL_NO_TOKEN)
		return;
	sig = nl_call_sig(c);
	if (s->hits_valid && tok == s->hits_tok) {
		s->hits_n += sig == s->hits_sig;
		return;
	}
	if (s->hits_valid && (tok < s->hits_tok || nl_tok_pipe(tok) != nl_tok_pipe(s->hits_tok)))
		return; /* an older batch's work, or another pipeline's: not counted */
	if (s->hits_valid && (!s->stage_hits || s->hits_n < s->stage_hits))
		s->stage_hits = s->hits_n;
	s->hits_valid = true;
	s->hits_tok = tok;
	s->hits_sig = sig;
	s->hits_n = 1;
}

/* Work the audit cannot place must not vanish: a stream without a role that
 * copies to the device and feeds another stream is counted, and the run's
 * evidence is then not valid (unplaced_work). So is one created again on a
 * destroyed copy stream's handle that copies to the device, until an edge
 * gives it its role back: an evaluation turn whose take was dropped leaves
 * its new copy stream without one. So is, once the roles are known, one that
 * copies to the device asynchronously (c, the copy; NULL when s is found to
 * feed) whose events nobody waits on: a second copy stream whose every
 * take was dropped has no edge that could give it a role, and its batches
 * were read unordered. The null stream is left out: its copies are ordered
 * with every blocking stream's work. */
static void note_unplaced(struct nl_proc *p, struct nl_stream *s, const struct nl_call *c)
{
	bool unwaited = c && c->kind == NL_K_COPY && !p->learning && !nl_key_is_null(&s->key);

	if (!s->unplaced && s->role == NL_ROLE_OTHER && s->h2d &&
	    (s->feeds || s->was_role == NL_ROLE_COPY || unwaited)) {
		s->unplaced = true;
		p->unplaced_streams++;
	}
}

/* Stream s, without a role, waits on the copy stream of a pipeline found
 * by its edges after learning, that has no sparse stage, and compute has
 * waited on s already: s is that pipeline's data-dist stream, found late
 * (compute found the pipeline by waiting on its copy stream itself, and
 * the data-dist stream's first wait on the copy was dropped). Before, s
 * stayed without a role: its work went unaudited, and the pipeline's
 * batches were judged without a sparse stage until one was found. */
static bool fills_in_sparse(const struct nl_proc *p, const struct nl_stream *s,
			    const struct nl_stream *from)
{
	return p->discovering && from->role == NL_ROLE_COPY && from->pipe > 0 && s->feeds_compute;
}

/* The hand-off rule inside the sparse stage: collective stream x's work,
 * before its next wait of any kind, is not batch tok's (nl_hand_over is
 * compute's, ended only by a wait that brings a batch). */
static void hand_within(struct nl_stream *x, int64_t tok)
{
	x->handed = x->handed_in = true;
	x->handed_tok = tok;
}

/* Data-dist stream d, fed by the copy stream, went on from batch T to a
 * newer one without taking T back from the collective stream (its wait on
 * T's all-to-all end dropped): a collective stream still carrying T, that
 * worked on it already, has done T's part. Its work before its next wait
 * is the next copied batch's, as after a take (the hand-off rule inside
 * the sparse stage): an all-to-all of the next batch begun without its
 * wait on d is that batch's, not a late op of T. T is any batch from the
 * one d held before (`from`) up to the one it went on to: at depth 3 d
 * handed T to the collective stream, then took older batches back before
 * their dist_init, and went on from one of those
 * (depth3_collective_left_behind). */
static void collective_left(struct nl_proc *p, const struct nl_stream *d, int64_t from)
{
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *x = &p->s[i];
		const struct nl_batch *b;

		if (x == d || !x->used || x->role != NL_ROLE_SPARSE || x->pipe != d->pipe ||
		    x->fed_by_copy || x->token < from || x->token >= d->token || x->handed)
			continue;
		b = nl_batch_of(p, x->token);
		if (b && nl_worked_stream(b, (int)i))
			hand_within(x, x->token);
	}
}

/* Batch b's sparse stage began with op w of stream slot, ordered after
 * none of its copy ops (the stream had never waited on anything):
 * copy->sparse, unless a finding is already held or the batch is closed. */
static void sparse_unordered(struct nl_batch *b, int slot, const struct nl_ring_op *w)
{
	if (!b || b->closed || b->cs.valid)
		return;
	for (int i = 0; i < b->nbs; i++) {
		if (b->bs[i].stage != NL_STAGE_COPY || !b->bs[i].has_work)
			continue;
		b->cs.valid = true;
		b->cs.bs = i;
		b->cs.seen = 0;
		b->cs.consumer = nl_ring_seen_op(slot, w);
		return;
	}
}

/* The first work op of stream n after clock `after`, up to clock `upto`,
 * that its ring still holds (NULL: none). */
static const struct nl_ring_op *first_work_between(const struct nl_stream *n, uint32_t after,
						   uint32_t upto)
{
	for (uint32_t k = nl_ring_start(n); k < n->nring; k++) {
		const struct nl_ring_op *o = &n->ring[k % NL_RING];

		if (o->work && o->clock > after && o->clock <= upto)
			return o;
	}
	return NULL;
}

/* Stream `slot`, without a role, did its first work op ordered after no
 * op of a stream that copies to the device (the clock it had there,
 * first_vc): null-stream joins that came after that work, or before it
 * and before any copy, do not order it after a batch's copy. Before,
 * with compute the null stream and the streams blocking, a collective
 * stream whose first hand-off was dropped had joined the null stream
 * before its first wait, that wait was not its first join, and its
 * all-to-all, unordered after the batch's copy, went to no batch: the
 * fault was missed and the summary said valid (random programs 41033028,
 * 41445002). */
static bool first_work_unordered(const struct nl_proc *p, int slot)
{
	const uint32_t *vc = nl_stream_first_vc(p, slot);

	if (!p->s[slot].first_vc)
		return false;
	for (uint32_t i = 0; i < p->w; i++)
		if ((int)i != slot && p->s[i].used && (p->s[i].role == NL_ROLE_COPY || p->s[i].h2d) &&
		    vc[i])
			return false;
	return true;
}

/* Stream `slot` joins the data-dist side at its first wait (the
 * collective stream, its pipeline found in learning's replay), after work
 * of its own: that work, ordered after nothing, was the sparse stage of
 * the batch a data-dist stream of the pipeline held when it began (the
 * all-to-all of a batch whose hand-off to the collective stream was
 * dropped), and of each batch whose data-dist wait on its record brought
 * some of it. With roles learned, its first work op takes the oldest
 * batch (nl_take_first) and is judged so; found later, the work carried
 * no batch and the fault was missed (random programs 121805, 73798). */
static void joined_after_work(struct nl_proc *p, int slot)
{
	const struct nl_stream *n = &p->s[slot];
	const struct nl_ring_op *first = first_work_between(n, 0, n->vc[slot]);

	if (!first)
		return;
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *d = &p->s[i];
		const struct nl_ring_op *at = NULL;
		uint32_t seen = 0;

		if ((int)i == slot || !d->used || d->role != NL_ROLE_SPARSE || d->pipe != n->pipe)
			continue;
		for (uint32_t k = nl_ring_start(d); k < d->nring; k++) {
			const struct nl_ring_op *r = &d->ring[k % NL_RING];
			const struct nl_ring_op *w;

			if (r->ts < first->ts)
				at = r;
			if (nl_api_info[r->api].kind != NL_K_STREAM_WAIT || r->ev_slot != slot ||
			    r->token == NL_NO_TOKEN)
				continue;
			w = first_work_between(n, seen, r->ev_clock);
			if (w)
				sparse_unordered(nl_batch_of(p, r->token), slot, w);
			if (r->ev_clock > seen)
				seen = r->ev_clock;
		}
		if (at && at->token != NL_NO_TOKEN)
			sparse_unordered(nl_batch_of(p, at->token), slot, first);
	}
}

/* Compute waited on a record of producer stream `from` (its pipeline's
 * data-dist stream, or its copy stream where it has no sparse stage): the
 * pipeline's batches come to compute by waits from now on (join_only_orders).
 * On the null stream with blocking producers, the step signature learned
 * before is forgotten: those windows were cut by implicit joins, begun in
 * the middle of a step, and a step that seemed to vary would never show a
 * take dropped later. */
static void note_took_by_wait(struct nl_proc *p, int slot, const struct nl_stream *from)
{
	struct nl_pipe *q;

	if (from->pipe < 0 || from->pipe >= p->npipes)
		return;
	q = &p->pipes[from->pipe];
	if (from->role != NL_ROLE_SPARSE && !(from->role == NL_ROLE_COPY && !q->has_sparse))
		return;
	if (!q->took_by_wait && slot == p->null_slot && p->nblocking) {
		q->step.n = q->run_n = 0;
		q->step.varied = q->run_varied = q->step.tid_varied = false;
	}
	q->took_by_wait = true;
}

/* Compute waits on a record of stream x, created since without a role on
 * the handle of one of pipeline P's streams (was_pipe), where P has a
 * sparse stage and no stream with a role left: x is P's data-dist stream
 * again, where it copied nothing to the device (then it would be a copy
 * stream, found by its edges). An evaluation turn's two streams were
 * destroyed and made anew on each other's handles (the allocator hands
 * out the one freed last first), and the turn's edge from the copy stream
 * was dropped: records_again and records_elsewhere need an event that ties
 * the streams (fresh events tie none), copies_again a copy stream's
 * handle. Before, the turn's two streams stayed without a role and its
 * last batch went unaudited (roles:d=other,m=other, random program
 * 14226). Not a stream created blocking where compute is the null
 * stream: the null stream's joins move its batch before its first wait,
 * and a data-dist stream found this early took a batch too new there
 * (random program 316481). */
static bool turn_sparse_again(const struct nl_proc *p, const struct nl_stream *x)
{
	int pipe = x->was_pipe;

	if (!p->discovering || x->role != NL_ROLE_OTHER || x->was_role == NL_ROLE_OTHER || pipe < 0 ||
	    pipe >= p->npipes || !p->pipes[pipe].has_sparse || x->h2d || !x->creation_seen ||
	    x->capturing || x->destroyed || (x->blocking && p->compute_slot == p->null_slot))
		return false;
	return !live_copy(p, pipe) && !live_role(p, pipe, NL_ROLE_SPARSE);
}

/* Batch tok + 1, copied, that no consumer reached yet (no sparse work, no
 * forward begun): what work of tok's producer past a record may be, begun
 * without its edge (retake_after_restart, retake_rerecorded). NULL if
 * none. */
static const struct nl_batch *unreached_next(struct nl_proc *p, int64_t tok)
{
	const struct nl_batch *n = nl_batch_of(p, tok + 1);

	if (!n || n->closed || n->fwd_started || n->st[NL_STAGE_SPARSE].work ||
	    !n->st[NL_STAGE_COPY].work)
		return NULL;
	return n;
}

/* Every copy of batch n was made by ts (its segment closed, or its last
 * copy before ts): work at ts may be its stage, begun without its edge. */
static bool copies_made_by(const struct nl_batch *n, uint64_t ts)
{
	return n->copy_closed || n->st[NL_STAGE_COPY].last_ts <= ts;
}

/* Compute, which began batch T's forward by a restart (no take: T was
 * accused or ordered there), now waits on a record ev of data-dist stream
 * d still carrying T. One batch is taken once: d's record ended T's stage
 * at the first record d made after T's work there (r0), and d's work
 * since, before any wait of d, is a newer batch's, copied by then, begun
 * without its edge, as after a take at r0 (the hand-off rule,
 * nl_take_after_record). This wait then takes that batch. Before, the
 * work stayed T's, the wait took T again, and the batch after went
 * without a sparse stage: its copy->sparse fault was skipped target_exited
 * at the run's end (random programs 63866, 139002). */
static void retake_after_restart(struct nl_engine *e, struct nl_proc *p, int slot,
				 const struct nl_event *ev, bool news)
{
	const struct nl_stream *s = &p->s[slot], *d;
	const struct nl_batch *h, *n;
	const struct nl_ring_op *r0 = NULL, *w = NULL;
	struct nl_event at;
	bool worked = false;
	int64_t tok;

	if (slot != p->compute_slot || !news || ev->slot < 0 || ev->slot == slot ||
	    p->npipes != 1 || ev->token == NL_NO_TOKEN || ev->token != s->token ||
	    p->restart_took != s->token)
		return;
	d = &p->s[ev->slot];
	tok = ev->token;
	h = nl_batch_of(p, tok);
	n = unreached_next(p, tok);
	if (d->role != NL_ROLE_SPARSE || d->token != tok || !h || h->fwd_waited ||
	    !h->st[NL_STAGE_FORWARD].work || !n)
		return;
	for (uint32_t k = nl_ring_start(d); k < d->nring; k++) {
		const struct nl_ring_op *r = &d->ring[k % NL_RING];
		int kind = nl_api_info[r->api].kind;

		if (r->token != tok)
			continue;
		if (!r0) {
			worked |= r->work;
			if (worked && kind == NL_K_EVENT_RECORD && r->clock < ev->clock)
				r0 = r;
			continue;
		}
		if (kind == NL_K_STREAM_WAIT)
			return; /* fed since: what it brought is not known here */
		if (r->work && r->clock < ev->clock && r->ts > n->st[NL_STAGE_COPY].first_ts && !w)
			w = r;
	}
	/* the newer batch's copies all made before that work: its segment,
	 * still open, ends where the work begins, as a take's would */
	if (!r0 || !w || !copies_made_by(n, w->ts))
		return;
	/* r0 as the record taken: d waited on nothing since, so its clock
	 * now is the one r0 captured for the other streams */
	at = *ev;
	at.clock = r0->clock;
	at.vc = d->vc;
	nl_take_after_record(e, p, &at);
}

/* Compute waits on record ev of data-dist stream d, carrying batch T,
 * that d made of the same event before (prev_clock), no stream waiting on
 * it in between, after T's work there. The first record ended T's stage,
 * as the record compute takes ends it; d's work since, before any wait of
 * d, begun after a newer batch's copies were all made, is that batch's,
 * begun without its edge (the hand-off rule, nl_take_after_record, as at a
 * take of the first record). Before, it stayed T's: T was accused
 * sparse->forward for the newer batch's collective, its hand-off dropped,
 * beside that batch's copy->sparse (random program 43193939). */
static void retake_rerecorded(struct nl_engine *e, struct nl_proc *p, int slot,
			      const struct nl_event *ev, bool news)
{
	const struct nl_stream *d;
	const struct nl_batch *n;
	const struct nl_ring_op *w = NULL;
	struct nl_event at;
	bool worked = false;
	int64_t tok;

	if (slot != p->compute_slot || !news || ev->slot < 0 || ev->slot == slot || ev->unwaited != 2 ||
	    ev->token == NL_NO_TOKEN)
		return;
	d = &p->s[ev->slot];
	tok = ev->token;
	n = unreached_next(p, tok);
	if (d->role != NL_ROLE_SPARSE || d->token != tok || !nl_batch_of(p, tok) || !n)
		return;
	for (uint32_t k = nl_ring_start(d); k < d->nring; k++) {
		const struct nl_ring_op *r = &d->ring[k % NL_RING];

		if (r->clock <= ev->prev_clock) {
			worked |= r->work && r->token == tok;
			continue;
		}
		if (r->clock > ev->clock)
			break;
		if (r->token != tok || nl_api_info[r->api].kind == NL_K_STREAM_WAIT)
			return;
		if (r->work && !w)
			w = r;
	}
	if (!worked || !w || w->ts < n->st[NL_STAGE_COPY].first_ts || !copies_made_by(n, w->ts))
		return;
	/* d waited on nothing since the first record: the clock it captured
	 * for the other streams is the one the last did */
	at = *ev;
	at.clock = ev->prev_clock;
	nl_take_after_record(e, p, &at);
}

/* Attached in the middle of a run, compute, holding no batch seen yet,
 * waits on record ev of a sparse stream of pipeline `pipe`. Where a sparse
 * stream of it did stage work after the attach on no batch seen, which
 * the record orders and compute did not yet, a batch copied before the
 * attach was still in its sparse stage (its all-to-all and dist_init to
 * come): its forward is due before any batch seen, and the wait is its
 * take, whatever newer batch the record carries too (the data-dist stream
 * ran the next batch's input distribution before the record, TorchRec's
 * split stage). Before, the wait took the first batch seen, every take
 * after it was one batch early, and each batch's dist_init, enqueued after
 * the forward charged to it, was accused sparse->forward in a healthy job
 * (random program 11692 attached at its call 41). Only such work after
 * compute's last work (work since may be that batch's forward, begun
 * without its take: a fault in a batch not judged, 14525), and on a stream
 * created before the attach (one created since holds no batch copied
 * before it: its work on no batch is a seen batch's stage run without its
 * wait, 45904 attached at its call 4, the collective stream's wait on the
 * data-dist stream dropped). */
static bool pre_attach_due(const struct nl_proc *p, const struct nl_stream *s,
			   const struct nl_event *ev, int pipe)
{
	uint64_t mine = nl_ring_last_work_ts(s);

	if (!p->mid_run || s->token != NL_NO_TOKEN || pipe < 0)
		return false;
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];

		if (!x->used || x->role != NL_ROLE_SPARSE || x->pipe != pipe || x->creation_seen)
			continue;
		for (uint32_t k = nl_ring_start(x); k < x->nring; k++) {
			const struct nl_ring_op *r = &x->ring[k % NL_RING];

			if (r->work && r->token == NL_NO_TOKEN && r->clock <= ev->vc[i] &&
			    r->clock > s->vc[i] && r->ts > mine)
				return true;
		}
	}
	return false;
}

static void op_wait(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c)
{
	struct nl_stream *s = &p->s[slot];
	struct nl_event *ev = (c->fields & NL_F_EVENT) ? nl_event_find(p, c->event) : NULL;
	uint32_t clock;

	if (ev && ev->capture && !s->capturing) {
		int origin = nl_capture_open(p, ev->cap_id);

		if (origin >= 0) { /* a fork: s joins the capture */
			s->capturing = true;
			s->capture_origin = origin;
		} else { /* the capture is over: what this waits for is not known */
			nl_graph_taint(p, ev->cap_id);
			nl_batch_skip(p, s->token, NL_SKIP_GRAPH_CAPTURE);
		}
	} else if (s->capturing && ev && (ev->recorded || ev->capture)) {
		struct nl_stream *o = nl_capture_origin(p, s);

		/* an edge across the capture's boundary, or within a capture that
		 * spans streams: the graph is more than one op of its stream */
		if (o && (!ev->capture || ev->cap_id != o->cap_id || ev->slot != slot))
			o->cap_ok = false;
	}
	/* a stream without a role waits on one that copies to the device:
	 * discover may find them, and its work so far is booked */
	bool early = ev && ev->recorded && ev->slot >= 0 && ev->slot != slot && !s->capturing &&
		     s->role == NL_ROLE_OTHER && p->s[ev->slot].role == NL_ROLE_OTHER &&
		     p->s[ev->slot].h2d;
	uint32_t upto = s->vc[slot];

	if (!op_prepare(e, p, slot, c))
		return;
	if (!ev || (!ev->recorded && !ev->created)) {
		/* Recorded before tracing began, or forgotten: the edge is unknown.
		 * A process traced from its start cannot name such an event (the
		 * call fails), unless the engine evicted it. */
		if (p->mid_run || p->evicted_events) {
			/* a wait on a record made before the attach: a
			 * batch was in flight (note_in_flight) */
			p->before_attach_seen |= p->mid_run && !ev;
			nl_batch_skip(p, s->token,
				      !ev && p->evicted_events ? NL_SKIP_EVICTED : NL_SKIP_UNKNOWN_HANDLE);
			if (s->role != NL_ROLE_COPY)
				s->token = NL_NO_TOKEN;
		}
	} else if (ev->recorded) {
		const struct nl_stream *from;

		if (ev->slot != slot)
			nl_hold_resolved(e, p, ev, slot);
		from = ev->slot >= 0 ? &p->s[ev->slot] : NULL;
		bool news = nl_vc_news(s->vc, ev->vc, p->w);
		bool pre_attach = slot == p->compute_slot && from && ev->slot != slot &&
				  from->role == NL_ROLE_SPARSE && ev->token != NL_NO_TOKEN &&
				  pre_attach_due(p, s, ev, from->pipe);
		int64_t before = s->token;
		uint32_t seen = ev->slot >= 0 ? s->vc[ev->slot] : 0; /* before the wait */

		if (news) {
			nl_vc_join(s->vc, ev->vc, p->w);
			s->joins++;
		}
		s->last_join_ts = c->ts_ns;
		ev->waited = ev->rec_waited = true;
		if (ev->slot != slot) {
			p->edges++;
			if (from)
				p->s[ev->slot].waited_on = true;
			if (from && from->role == NL_ROLE_SPARSE && s->role == NL_ROLE_SPARSE) {
				ev->sparse_waited = true;
				if (ev->clock == from->vc[ev->slot])
					p->s[ev->slot].rec_fed = true;
			}
			if (from && from->role == NL_ROLE_COPY) {
				s->fed_by_copy = true;
				p->s[ev->slot].copy_waited = true;
			}
			if (from) {
				bool copy_before = from->role == NL_ROLE_COPY;

				discover_implicit(e, p, slot, ev);
				discover(e, p, slot, ev->slot);
				if (early && s->role == NL_ROLE_SPARSE)
					book_early_work(e, p, slot, upto, false);
				/* the edge that found a pipeline (in learning's
				 * replay: learning took another first) fed its
				 * data-dist stream from its copy stream too */
				if (!copy_before && from->role == NL_ROLE_COPY && s->role == NL_ROLE_SPARSE)
					s->fed_by_copy = true;
				if (slot == p->compute_slot)
					note_took_by_wait(p, slot, from);
			}
			if (from && from->role == NL_ROLE_OTHER) {
				p->s[ev->slot].feeds = true;
				p->s[ev->slot].feeds_compute |= slot == p->compute_slot;
				note_unplaced(p, &p->s[ev->slot], NULL);
			}
			/* compute waits on a stream created again on the handle
			 * of a data-dist stream whose pipeline copies again
			 * (copies_again): that turn's data-dist stream, its
			 * wait on the copy stream dropped. Its work so far is
			 * judged as by discover_implicit (book_early_work): the
			 * batch its clock ordered, or the one copied before it,
			 * begun without its edge. Before, that work went to no
			 * batch, and a healthy batch whose dropped wait the null
			 * stream's joins made redundant was accused
			 * copy->sparse, never reached (random program 41950159) */
			if (from && from->role == NL_ROLE_OTHER && from->was_role == NL_ROLE_SPARSE &&
			    slot == p->compute_slot && p->discovering && live_copy(p, from->was_pipe)) {
				data_dist_again(p, from->was_pipe, from->was_pipe);
				book_early_work(e, p, ev->slot, ev->clock, false);
			}
			/* ...and its copy stream, copy_beside; its work so far
			 * booked the same way (random programs 41190357,
			 * 41210875: a fault missed, a batch accused) */
			if (from && slot == p->compute_slot && turn_sparse_again(p, from)) {
				int pipe = from->was_pipe;

				producer_again(e, p, ev->slot, NL_ROLE_SPARSE, (int8_t)pipe, 0);
				copy_beside(e, p, ev->slot, pipe);
				book_early_work(e, p, ev->slot, ev->clock, false);
			}
		}
		/* A stream that starts waiting on the data-dist side later in the
		 * run joins it (only where the process has a sparse stage, and not
		 * when --sparse-stream named the set). */
		if (s->role == NL_ROLE_OTHER && !e->o.has_sparse_streams && from &&
		    (from->role == NL_ROLE_COPY || from->role == NL_ROLE_SPARSE) &&
		    nl_pipe_of_stream(p, from) &&
		    (nl_pipe_of_stream(p, from)->has_sparse || fills_in_sparse(p, s, from))) {
			sparse_placed(p, s, from->pipe);
			if (news && (s->joins == 1 || first_work_unordered(p, slot)))
				joined_after_work(p, slot);
		}
		retake_after_restart(e, p, slot, ev, news);
		retake_rerecorded(e, p, slot, ev, news);
		if (!nl_over_copy(p, slot, from, ev)) {
			int64_t due = nl_sparse_due(p, slot, from, ev->token);
			/* a wait that brings nothing new: on a record compute
			 * waited on already (not where implicit joins may have
			 * brought it first) */
			bool stale = !news && !(nl_key_is_null(&s->key) && p->nblocking);
			int64_t got = pre_attach ? NL_NO_TOKEN : nl_cadence(p, slot, due, ev->slot, stale);

			/* Attached mid-run: a wait of compute on a record a
			 * producer of another pipeline than the batch compute
			 * holds made while it carried no batch seen (a stream
			 * not seen created: its batch then was copied before
			 * the attach) is that batch's take. Compute leaves the
			 * batch it held, whose step is over: the step it begins
			 * now is not charged to it, nor to the producer's next
			 * batch, whose take is still to come. Before, a
			 * training batch was accused sparse->forward for the
			 * step of a batch in flight at the attach, the tool
			 * attached during an evaluation round. */
			if (p->mid_run && slot == p->compute_slot && from && ev->slot != slot &&
			    (from->role == NL_ROLE_COPY || from->role == NL_ROLE_SPARSE) && from->pipe >= 0 &&
			    ev->token == NL_NO_TOKEN && s->token != NL_NO_TOKEN &&
			    nl_tok_pipe(s->token) != from->pipe && !from->creation_seen)
				s->token = NL_NO_TOKEN;

			/* a record of an older batch of the pipeline compute
			 * holds (the backward stream's, its wait on compute
			 * dropped) brings nothing new: compute stays */
			if (slot == p->compute_slot && got != NL_NO_TOKEN && s->token != NL_NO_TOKEN &&
			    from && from->role == NL_ROLE_OTHER &&
			    nl_tok_pipe(got) == nl_tok_pipe(s->token) && got < s->token)
				got = s->token;
			if (slot == p->compute_slot && got != NL_NO_TOKEN && got != s->token) {
				struct nl_batch *g = nl_batch_of(p, got);

				/* a wait on a record compute waited on
				 * already says nothing of the lag */
				if (news)
					nl_note_lag(p, due, got);
				if (g && !g->fwd_started) {
					struct nl_pipe *gq = nl_pipe_of_token(p, got);

					g->fwd_waited = true;
					/* a restart seen before, that could have
					 * been this batch's forward, was not */
					if (gq->again_ts && gq->again_tok == got) {
						gq->again_not_its = true;
						nl_restarts_not_its(p, s, gq);
					}
				}
			}
			if (slot == p->compute_slot && got != NL_NO_TOKEN && got == s->token && from &&
			    from->role == NL_ROLE_COPY && !nl_pipe_of_token(p, got)->has_sparse)
				note_join_early(p, got);
			if (slot == p->compute_slot && got != NL_NO_TOKEN && got == s->token && from &&
			    from->role == NL_ROLE_SPARSE) {
				struct nl_batch *h = nl_batch_of(p, got);

				note_join_early(p, got);
				/* a second take of the batch compute works on, on
				 * the data-dist side (merged_stage) */
				if (news && h && h->st[NL_STAGE_FORWARD].work) {
					int64_t n = nl_retake_behind(e, p, ev->slot, got, seen);

					if (n != NL_NO_TOKEN) {
						/* the take was the next batch's */
						got = n;
						nl_batch_of(p, n)->fwd_waited = true;
					} else {
						h->sparse_retake = true;
					}
				}
			}
			/* compute leaves its pipeline's window for another's */
			if (slot == p->compute_slot && got != NL_NO_TOKEN && s->token != NL_NO_TOKEN &&
			    nl_tok_pipe(got) != nl_tok_pipe(s->token))
				nl_compute_leaves(e, p, s->token, c->ts_ns);
			nl_set_token(p, slot, got, c->ts_ns);
		}
		if (s->role == NL_ROLE_SPARSE && from && from->role == NL_ROLE_COPY &&
		    from->pipe == s->pipe && ev->token != NL_NO_TOKEN)
			/* fed again with nothing newer than the batch compute took:
			 * the work that follows is a batch the copy stream's segments
			 * merged (a fill phase copying two batches before its first
			 * record), or a late op of the batch taken; which one the
			 * calls do not say */
			s->orphan = s->handed && ev->token == s->handed_tok && s->token == s->handed_tok;
		if (ev->token != NL_NO_TOKEN) {
			/* a batch reached the stream: the hand-off rule ends */
			s->handed = false;
			/* the copy stream mints its own tokens: nothing to carry */
			s->adopted = s->role != NL_ROLE_COPY && ev->adopted;
		}
		if (s->role == NL_ROLE_SPARSE && from && from->role == NL_ROLE_COPY &&
		    s->token != NL_NO_TOKEN && s->token < ev->token &&
		    nl_tok_pipe(s->token) == nl_tok_pipe(ev->token)) {
			const struct nl_batch *g = nl_batch_of(p, s->token);

			/* the wait gave the stream an older batch than it
			 * brought, whose copy it does not order (nl_sparse_due:
			 * another copy stream's batch, the event recorded again
			 * on this one): that batch reaches the stage without its
			 * edge, and compute is judged against its sparse work */
			if (g && !nl_copy_covered(g, s))
				s->adopted = true;
		}
		if (slot == p->compute_slot && from && ev->slot != slot &&
		    from->role == NL_ROLE_SPARSE && ev->token != NL_NO_TOKEN && !pre_attach) {
			/* every sparse stream still carrying it: a collective
			 * stream the data-dist stream did not take T from (its
			 * wait on T's end dropped) would carry T past the take */
			if (from->token == ev->token)
				nl_hand_over_all(p, ev->token);
			nl_take_after_record(e, p, ev);
		} else if (s->role == NL_ROLE_SPARSE && from && ev->slot != slot &&
			   from->role == NL_ROLE_SPARSE && from->pipe == s->pipe &&
			   s->fed_by_copy && !from->fed_by_copy && ev->token != NL_NO_TOKEN &&
			   from->token == ev->token && !from->handed) {
			/* the same rule inside the sparse stage: the data-dist stream
			 * (fed by the copy stream) took batch T from the collective
			 * stream (fed only by it), whose later work before a wait
			 * brings it a batch again is the next batch's */
			hand_within(&p->s[ev->slot], ev->token);
		}
		if (s->role == NL_ROLE_SPARSE && s->fed_by_copy && from && from->role == NL_ROLE_COPY &&
		    before != NL_NO_TOKEN && s->token > before &&
		    nl_tok_pipe(s->token) == nl_tok_pipe(before))
			collective_left(p, s, before);
	}
	/* fed again, whatever it brought: no work held, no hand-in */
	s->hold_clock = 0;
	if (s->handed_in)
		s->handed = s->handed_in = false;
	/* created but not recorded in this generation: HIP makes the wait a no-op */
	clock = ++s->vc[slot];
	s->wait_clock = clock;
	s->gate = clock;
	nl_ring_push(p, s, clock, c, s->token, false);
	if (ev && ev->recorded && ev->slot >= 0) {
		struct nl_ring_op *r = &s->ring[(s->nring - 1) % NL_RING];

		r->ev_slot = (int16_t)ev->slot;
		r->ev_clock = ev->clock;
	}
	nl_account(e, p, slot, c, clock, s->token, false, false);
}

/* Copy stream: the first op after a record mints a token. A thread that put
 * work on the compute stream, or on a data-dist stream, since its last copy
 * also starts a new segment, so a dropped record does not merge two batches
 * (docs/engine.md): one batch's copies are one burst of its thread. So does
 * a thread's copy right after its copy on another copy stream of the
 * pipeline (batch i on M[i % 2]: one batch per run of copies, made in
 * turn): cut as it comes, the batch keeps its place in copy order, and
 * the other stream's segment of that thread ends there. So does a copy
 * after the stream's own wait on another stream (a buffer-reuse wait on
 * compute comes before a batch's copies, not among them). */
static void copy_segment(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
			 const struct nl_thread *th, const struct nl_call *c)
{
	struct nl_pipe *q = nl_pipe_of_stream(p, s);
	int slot = (int)(s - p->s);
	bool turn = q && q->last_copier && q->last_copier != slot + 1 &&
		    q->last_copier_tid == c->tid && nl_call_is_h2d(c);

	if (turn) {
		/* the thread's batch on the other copy stream is whole: its
		 * segment ends as a record would end it (a take dropped with
		 * its record left it open until that stream's next batch) */
		struct nl_stream *o = &p->s[q->last_copier - 1];

		if (o->seg_open && o->seg_tid == c->tid && o->role == NL_ROLE_COPY) {
			segment_end(e, p, q->last_copier - 1);
			nl_close_segment(p, o);
		}
	}
	if (q && nl_call_is_h2d(c)) {
		q->last_copier = slot + 1;
		q->last_copier_tid = c->tid;
	}
	/* the stream waited (on compute: buffer reuse) after its copies */
	bool waited = s->nring && s->seg_work &&
		      nl_api_info[s->ring[(s->nring - 1) % NL_RING].api].kind == NL_K_STREAM_WAIT;

	if (s->seg_open && !e->o.no_copy_split &&
	    ((s->seg_tid == c->tid && th->stage_work != s->seg_mark) || turn || waited)) {
		/* ended by the thread's work on compute or on a data-dist
		 * stream, not a record (a take, or the data-dist stream's
		 * wait, dropped with its record): cut as a record would */
		if (s->role == NL_ROLE_COPY)
			segment_end(e, p, (int)(s - p->s));
		nl_close_segment(p, s);
	}
	/* its fill's takes are all made: the next segment begins */
	if (!s->seg_open && s->guess_n && s->role == NL_ROLE_COPY)
		recut_taken(e, p, slot, false);
	if (!s->seg_open)
		nl_mint(e, p, s, c->ts_ns);
	s->seg_tid = c->tid;
	s->seg_mark = th->stage_work;
	s->seg_work++;
}

/* Launch c on sparse stream s names the kernel its batch's sparse stage
 * began with (both named), after that stage's first work op. */
static bool sparse_again(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c)
{
	const struct nl_batch *b = nl_batch_of(p, s->token);
	const struct nl_stage_acc *acc = b ? &b->st[NL_STAGE_SPARSE] : NULL;

	return acc && c->kind == NL_K_LAUNCH && (c->fields & NL_F_FN) && acc->work &&
	       acc->first_named[0] && acc->first_sig[0] == nl_call_sig(c);
}

/* Sparse stream s, whose batch T compute took from it (handed), launches
 * the kernel T's stage began with again, and no batch newer than T
 * exists: T's copies were a fill left one batch, a guess (no size cut
 * it), copied before one record that s waited on. The stage begun again
 * is a second batch's, whose wait on that record was dropped as
 * redundant: the fill is cut in two halves (a guess still, which the
 * stream's next segment or its takes may refute: recut_fill,
 * recut_taken), and the hand-off rule gives the second one the work
 * (nl_take_over). Before, the work stayed T's, a late op accused
 * sparse->forward on a healthy batch, and the second batch was merged
 * into T's copies (random programs 193608, 220668: an evaluation turn at
 * depth 2 whose batches hold another number of copies than training's). */
static void split_fill_again(struct nl_engine *e, struct nl_proc *p, const struct nl_stream *s,
			     const struct nl_call *c)
{
	int64_t tok = s->token;
	const struct nl_pipe *q = nl_pipe_of_token(p, tok);

	if (!s->handed || s->handed_tok != tok || !q || q->next_token != tok + 1 ||
	    !sparse_again(p, s, c) || e->o.no_copy_split)
		return;
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *m = &p->s[i];
		uint32_t n = m->guess_n;

		if (!m->used || m->role != NL_ROLE_COPY || m->pipe != s->pipe || m->token != tok ||
		    m->seg_open || !n || m->guess_k != n || m->guess_tok != tok || n % 2)
			continue;
		if (cut_segment(e, p, (int)i, tok, n / 2, n)) {
			nl_close_segment(p, m);
			m->guess_k = n / 2;
			m->seg_k = n / 2;
			m->seg_k_n = 1;
			m->seg_k_partial = false;
		}
		return;
	}
}

/* Sparse stream s's work after compute took its batch: the hand-off rule
 * (nl_take_over), once a fill that was one batch is split where the work
 * shows a second one (split_fill_again). */
static void take_over(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s,
		      const struct nl_call *c)
{
	bool again;

	split_fill_again(e, p, s, c);
	again = sparse_again(p, s, c);
	if (again && s->handed && s->token == s->handed_tok)
		nl_cut_rerecorded(e, p, s, c);
	nl_take_over(e, p, s, again, c);
}

/* TorchRec's step a: compute waited on the data-dist stream's record
 * before that stream's dist_init, and did no work on the batch yet (or
 * took an older batch than the record carried, the lag learned). The
 * stream's next work, a launch of another kernel than its work of the
 * batch began with, is the batch's stage going on (dist_init), not the
 * next batch's begun without its edge (the hand-off rule). */
static bool stage_goes_on(struct nl_proc *p, const struct nl_stream *s, const struct nl_call *c)
{
	const struct nl_batch *b = nl_batch_of(p, s->handed_tok);
	int64_t ct;

	if (!b || p->compute_slot < 0 || b->fwd_work || c->kind != NL_K_LAUNCH ||
	    !(c->fields & NL_F_FN))
		return false;
	ct = p->s[p->compute_slot].token;
	if (ct != b->token && (ct == NL_NO_TOKEN || nl_tok_pipe(ct) != nl_tok_pipe(b->token) ||
			       ct > b->token))
		return false;
	return nl_other_than_first(b, (int)(s - p->s), c);
}

/* A stream created again on the handle of a destroyed copy stream, whose
 * pipeline has no copy stream left, copies to the device asynchronously
 * (c): that pipeline's copy stream again (an evaluation turn's, made anew
 * for each turn, whose events are fresh too), though no edge to it was
 * seen yet. Not a synchronous copy: a data-dist stream's split sizes are
 * copied so, and where handles alternate between a turn's two streams
 * (records_again) it may be the data-dist stream on that handle. */
static bool copies_again(const struct nl_proc *p, const struct nl_stream *s,
			 const struct nl_call *c)
{
	return p->discovering && c->kind == NL_K_COPY && s->role == NL_ROLE_OTHER &&
	       s->was_role == NL_ROLE_COPY &&
	       s->creation_seen && !s->capturing && s->was_pipe >= 0 && !live_copy(p, s->was_pipe);
}

/* Attached in the middle of a run, stage work op of stream s (slot) placed in
 * no batch (tok) may be a batch's that began before the attach: a
 * data-dist stream's in a pipeline found mid-run, or compute's before any
 * batch began its forward (the batches copied before the attach are
 * consumed first). No audit covers such a batch, so the summary cannot
 * vouch for the run (in_flight_ops, in_flight_at_attach). Compute's, and
 * a data-dist stream's before its pipeline copied a batch, count at the
 * summary where a stream created before the attach worked since or a
 * wait named an event recorded before it (nl_in_flight_ops): a job
 * attached before its pipeline began has neither, and its compute's first
 * work is no batch's. Before, the summary said valid where the attach
 * fell between two batches' copies, a fault in such a batch was in
 * nothing judged, and --check passed it: 17 of the 23 faulty programs of
 * seeds 1-20,000 under fuzz_audit -M whose summary said valid; 6 now. */
static void note_in_flight(struct nl_proc *p, const struct nl_stream *s, int slot, int64_t tok)
{
	if (!p->mid_run || p->learning)
		return;
	if (!s->history_known && slot != p->compute_slot)
		p->before_attach_seen = true;
	if (tok != NL_NO_TOKEN)
		return;
	if (s->role == NL_ROLE_SPARSE) {
		const struct nl_pipe *q = nl_pipe_of_stream(p, s);

		if (q && nl_tok_seq(q->next_token))
			p->in_flight_ops += !q->from_start;
		else if (q)
			p->in_flight_pending++;
		return;
	}
	if (slot != p->compute_slot)
		return;
	for (int i = 0; i < p->npipes; i++)
		if (p->pipes[i].used && p->pipes[i].fwd_max != NL_NO_TOKEN)
			return;
	p->in_flight_pending++;
}

uint64_t nl_in_flight_ops(const struct nl_proc *p)
{
	return p->in_flight_ops + (p->before_attach_seen ? p->in_flight_pending : 0);
}

static void op_work(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c)
{
	struct nl_stream *s = &p->s[slot];
	struct nl_thread *th = nl_thread_get(p, c->tid);
	bool coll = (c->kind == NL_K_COLL || c->kind == NL_K_P2P) && c->coll_depth == 0;
	bool goes_on = false, adopted, took;
	int64_t older = NL_NO_TOKEN, tok;
	uint32_t clock;

	/* a handed data-dist stream's launch begins its next segment (the
	 * hand-off rule): a fill guess its copy streams' open segments
	 * refute is judged first, before the null stream's join
	 * (op_prepare) moves it to a piece of the fill. Before, with compute
	 * the null stream and the data-dist stream blocking, that launch
	 * took the piece, and a healthy evaluation turn's later batches were
	 * accused copy->sparse (random program 39889) */
	if (s->role == NL_ROLE_SPARSE && s->handed && c->kind == NL_K_LAUNCH && !s->capturing)
		refute_guess(e, p, s->pipe);
	if (!op_prepare(e, p, slot, c))
		return;
	if (s->role == NL_ROLE_OTHER && !s->first_vc) {
		memcpy(nl_stream_first_vc(p, slot), s->vc, p->w * sizeof(uint32_t));
		s->first_vc = true;
	}
	if (c->kind == NL_K_LAUNCH && !c->coll_depth && !(c->fields & NL_F_FN))
		p->unnamed_launch = true;
	if (coll && th->inner && th->inner_slot == slot && th->inner_ts >= c->ts_ns &&
	    (!(c->fields & NL_F_RC) || !c->ret_ns || th->inner_ts <= c->ret_ns)) {
		/* The collective's record comes at its return, after the launches
		 * RCCL made inside it: it takes the place (clock and token) of the
		 * last of them instead of a later one. */
		struct nl_ring_op *r = &s->ring[(s->nring + NL_RING - 1) % NL_RING];

		th->inner = false;
		if (s->nring && r->clock == th->inner_clock)
			r->api = c->api;
		nl_account(e, p, slot, c, th->inner_clock, th->inner_token, true, true);
		return;
	}
	if (c->kind == NL_K_LAUNCH)
		s->launches++;
	if (nl_call_is_h2d(c)) {
		s->h2d++;
		if (copies_again(p, s, c))
			producer_again(e, p, slot, s->was_role, s->was_pipe, s->was_seg_k);
		note_unplaced(p, s, c);
	}
	/* the next batch's stage begun, its segment cut from the one taken twice */
	took = s->role == NL_ROLE_SPARSE && sparse_again(p, s, c) && nl_sparse_took_again(e, p, s);
	if (s->role == NL_ROLE_SPARSE && !took && sparse_again(p, s, c))
		cut_before_sparse(e, p, s->pipe);
	if (s->role == NL_ROLE_COPY)
		copy_segment(e, p, s, th, c);
	else if (s->role == NL_ROLE_SPARSE && s->handed && stage_goes_on(p, s, c))
		goes_on = true;
	else if (s->role == NL_ROLE_SPARSE && s->handed)
		take_over(e, p, s, c);
	else if (s->role == NL_ROLE_SPARSE && s->token == NL_NO_TOKEN)
		nl_take_first(e, p, s);
	else if (s->role == NL_ROLE_SPARSE && s->fed_by_copy && !took &&
		 (older = nl_second_part_of(p, s, c)) != NL_NO_TOKEN)
		; /* an older batch's second part: s holds its batch still */
	/* a data-dist stream, its waits on the copy stream dropped (its first
	 * work given the oldest batch), is one still after it waited on the
	 * collective stream: not judged as that stream (random program
	 * 43158712: the next batch's stage stayed on the first) */
	else if (s->role == NL_ROLE_SPARSE &&
		 (s->fed_by_copy || !s->wait_clock || s->first_taken != NL_NO_TOKEN))
		nl_take_at_record(e, p, s, sparse_again(p, s, c), c);
	else if (s->role == NL_ROLE_SPARSE)
		nl_take_again_after_record(p, s, c);
	else if (slot == p->compute_slot && s->token == NL_NO_TOKEN)
		nl_take_first_compute(p, s);
	nl_step_begins(e, p, slot, c);
	if (slot == p->compute_slot && s->token != NL_NO_TOKEN && !s->orphan) {
		nl_note_window(p, s);
		nl_compute_advance(e, p, s->token, c->ts_ns); /* only a later token of its pipeline */
	}
	clock = ++s->vc[slot];
	s->gate = clock;
	if (slot == p->compute_slot || s->role == NL_ROLE_SPARSE)
		th->stage_work++;
	if (c->coll_depth > 0) {
		th->inner = true;
		th->inner_slot = slot;
		th->inner_clock = clock;
		th->inner_token = s->orphan ? NL_NO_TOKEN : s->token;
		th->inner_ts = c->ts_ns;
	}
	if (s->orphan) {
		p->late_ops++;
		nl_ring_push(p, s, clock, c, NL_NO_TOKEN, true);
		nl_account(e, p, slot, c, clock, NL_NO_TOKEN, true, coll);
		return;
	}
	tok = older != NL_NO_TOKEN ? older : s->token;
	note_stage_hits(s, c, tok);
	note_in_flight(p, s, slot, tok);
	nl_ring_push(p, s, clock, c, tok, true);
	if (s->role == NL_ROLE_SPARSE) {
		s->ring[(s->nring - 1) % NL_RING].again = sparse_again(p, s, c);
		s->ring[(s->nring - 1) % NL_RING].goes_on = goes_on || older != NL_NO_TOKEN;
	}
	/* an older batch's second part: it reached the stage, or not, by
	 * its first */
	adopted = s->adopted;
	s->adopted |= older != NL_NO_TOKEN;
	nl_account(e, p, slot, c, clock, tok, true, coll);
	s->adopted = adopted;
}

/* A launch of a graph whose capture kept to one stream is one work op of the
 * launch stream: its ops run in captured order, after the stream's earlier
 * work and before its later work. Any other launch is still applied as one
 * op (ordering outside the graph holds), but the batch is not judged. */
static void graph_launch(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c)
{
	struct nl_graph *x = (c->fields & NL_F_FN) ? nl_graph_find(p, c->fn, true) : NULL;
	bool ok = x && x->ok;
	struct nl_stream *o;

	if (x)
		x->lru = ++p->lru;
	if (p->s[slot].capturing) { /* launched into a capture: a child graph */
		o = nl_capture_origin(p, &p->s[slot]);
		if (o && !ok)
			o->cap_ok = false;
	}
	op_work(e, p, slot, c);
	if (!ok && !p->s[slot].capturing)
		nl_batch_skip(p, p->s[slot].token, NL_SKIP_GRAPH_CAPTURE);
}

/* The probes' rows of launches (bpf/nanlog.bpf.c count_launch), followed
 * from the calls: every call of a thread is seen in its order, and any
 * other call, or a launch on another stream, ends its row. A row's
 * first launch, and a launch of a kernel that began one of the last rows,
 * moves that kernel to the front (a new one pushes the oldest out). A
 * launch counted in a run came without its kernel: it began no row, and
 * was a kernel already in front only if it was the one launched right
 * before it; the rows are the same with or without it. */
static void follow_rows(struct nl_proc *p, const struct nl_call *c)
{
	struct nl_thread *th = nl_thread_get(p, c->tid);
	int at;

	if (c->kind != NL_K_LAUNCH || !nl_api_info[c->api].countable || c->coll_depth) {
		th->row_open = false; /* any other call of the thread ends its row */
		return;
	}
	if (th->row_open && c->stream != th->row_stream)
		th->row_open = false; /* a launch on another stream begins a row */
	th->row_stream = c->stream;
	if (!(c->fields & NL_F_FN)) {
		th->row_open = true;
		return;
	}
	for (at = 0; at < NL_SEQ_STARTS && th->row_fn[at] != c->fn; at++)
		;
	if (at < NL_SEQ_STARTS || !th->row_open) {
		int m = at < NL_SEQ_STARTS ? at : NL_SEQ_STARTS - 1;

		memmove(&th->row_fn[1], &th->row_fn[0], (size_t)m * sizeof(th->row_fn[0]));
		th->row_fn[0] = c->fn;
	}
	th->row_open = true;
	th->row_last_fn = c->fn;
}

bool nl_counted_may_be(struct nl_proc *p, const struct nl_call *c, uint64_t sig)
{
	const struct nl_thread *th;
	uint64_t fn = sig ^ ((uint64_t)c->api << 48);

	if ((sig >> 48) != c->api)
		return false; /* another API: never this kernel's sig */
	if (p->rows_unsure)
		return true;
	th = nl_thread_get(p, c->tid);
	for (int at = 0; at < NL_SEQ_STARTS; at++)
		if (th->row_fn[at] == fn)
			return th->row_last_fn == fn;
	return true;
}

bool nl_step_kernel_may_be(struct nl_proc *p, const struct nl_pipe *q, const struct nl_call *c,
			   int k)
{
	if (c->kind == NL_K_LAUNCH && !(c->fields & NL_F_FN))
		return nl_counted_may_be(p, c, q->step.sig[k]);
	return nl_call_sig(c) == q->step.sig[k];
}

void nl_apply(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c)
{
	struct nl_skey key;
	int slot;

	p->call_ts = c->ts_ns;
	follow_rows(p, c);
	if (c->kind == NL_K_EVENT_QUERY || c->kind == NL_K_STREAM_QUERY) {
		nl_apply_query(e, p, c); /* 600 is an answer, not a failure */
		return;
	}
	if (c->kind == NL_K_CAPTURE_END)
		nl_capture_end(e, p, c); /* a failed end ends the capture too */
	if ((c->fields & NL_F_RC) && c->rc != 0) {
		e->sum.ignored_records++; /* the call did nothing */
		return;
	}
	switch (c->kind) {
	case NL_K_EVENT_RECORD:
	case NL_K_STREAM_WAIT:
		break;
	case NL_K_EVENT_SYNC:
	case NL_K_EVENT_ELAPSED:
	case NL_K_STREAM_SYNC:
	case NL_K_DEVICE_SYNC:
		nl_apply_sync(e, p, c);
		return;
	default:
		if (!nl_kind_is_work(c->kind)) {
			nl_apply_lifecycle(e, p, c);
			return;
		}
	}
	key = nl_call_skey(c);
	slot = nl_stream_slot(e, p, &key, true);
	if (slot < 0)
		return;
	switch (c->kind) {
	case NL_K_EVENT_RECORD:
		if (c->fields & NL_F_EVENT)
			op_record(e, p, slot, c, c->event);
		break;
	case NL_K_STREAM_WAIT:
		op_wait(e, p, slot, c);
		break;
	case NL_K_LAUNCH:
		/* hipExtLaunchKernel and friends record their start and stop
		 * events on the stream around the kernel. */
		if ((c->fields & NL_F_EVENT) && c->event)
			op_record(e, p, slot, c, c->event);
		op_work(e, p, slot, c);
		if ((c->fields & NL_F_EVENT2) && c->event2)
			op_record(e, p, slot, c, c->event2);
		break;
	case NL_K_COPY_SYNC:
		op_work(e, p, slot, c);
		if (!p->s[slot].capturing)
			nl_stream_done(p, slot, c); /* it returned: the stream is drained */
		break;
	case NL_K_GRAPH:
		graph_launch(e, p, slot, c);
		break;
	default:
		op_work(e, p, slot, c);
		break;
	}
}
