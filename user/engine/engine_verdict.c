// SPDX-License-Identifier: MIT
/*
 * The verdict of a batch that is final, and its audit: the edges found
 * missing (which producer op no consumer op was ordered after), trusted,
 * untrusted or skipped, and what else the audit reports (stages, hand-offs,
 * overlap with other batches' forward windows). docs/engine.md, "Verdicts".
 */
#include "engine/engine_int.h"

static int edge_of_stage(int st)
{
	return st == NL_STAGE_COPY ? NL_EDGE_COPY_FORWARD : NL_EDGE_SPARSE_FORWARD;
}

static void to_ref(const struct nl_proc *p, const struct nl_seen_op *o, struct nl_op_ref *r)
{
	const struct nl_stream *s;

	memset(r, 0, sizeof(*r));
	if (!o || !o->valid || o->slot < 0)
		return;
	s = &p->s[o->slot];
	r->valid = true;
	r->stream = s->key.handle;
	r->stream_tid = s->key.tid;
	r->role = s->role;
	r->api = o->api;
	r->tid = o->tid;
	r->ts_ns = o->ts;
}

/* A stream whose creation was not seen, taken as NonBlocking: had it been
 * created blocking, the null stream would order it. */
static bool unseen(const struct nl_proc *p, int slot)
{
	const struct nl_stream *s = &p->s[slot];

	return !s->history_known && slot != p->null_slot;
}

static bool orders_null(const struct nl_proc *p, int slot)
{
	return p->s[slot].blocking || unseen(p, slot);
}

/* Whether stream slot enqueued work after op prod and before the null
 * stream's next op; when its ring no longer reaches back, as if it had not
 * (the verdict is then skipped). */
static bool worked_before_null(const struct nl_proc *p, int slot, const struct nl_seen_op *prod)
{
	const struct nl_stream *s = &p->s[slot];

	for (uint32_t i = s->nring; i > nl_ring_start(s); i--) {
		const struct nl_ring_op *r = &s->ring[(i - 1) % NL_RING];

		if (r->ts <= prod->ts)
			return false;
		if (r->work && r->nseq == prod->nseq)
			return true;
	}
	return false;
}

/* Whether op cons of stream c (NULL: every later op of c that could read
 * the batch) would be ordered after producer op prod, had every stream
 * whose creation was not seen been created blocking: a null-stream op
 * waits for a blocking stream's earlier work, and an op on a blocking
 * stream for the null stream's. Counted by the null stream's ops before
 * each (nseq), not looked up in its ring: a batch judged long after its
 * ops (compute's ring no longer reaching back) was skipped
 * pretrace_stream where the calls decide (random program 15304). */
static bool blocking_orders(const struct nl_proc *p, const struct nl_seen_op *prod, int c,
			    const struct nl_seen_op *cons)
{
	int ps = prod->slot;

	if (ps == p->null_slot)
		return unseen(p, c) && (!cons || prod->ts < cons->ts);
	if (c == p->null_slot)
		return unseen(p, ps) && (!cons || prod->ts < cons->ts);
	if (!orders_null(p, ps) || !orders_null(p, c) || (!unseen(p, ps) && !unseen(p, c)))
		return false;
	if (cons)
		return cons->nseq > prod->nseq;
	return !worked_before_null(p, c, prod);
}

/* Whether the unordered pair would be ordered had the streams whose
 * creation was not seen been created blocking. Without the consumer op
 * (the batch never reached its stage), every stream of that stage. */
static bool blocking_would_order(const struct nl_proc *p, const struct nl_batch_audit *a,
				 int edge, const struct nl_seen_op *prod,
				 const struct nl_seen_op *cons)
{
	bool any = false;

	if (p->null_slot < 0)
		return false;
	if (!prod || !prod->valid || prod->slot < 0)
		return true; /* nothing to go by */
	if (cons && cons->valid && cons->slot >= 0)
		return blocking_orders(p, prod, cons->slot, cons);
	if (edge != NL_EDGE_COPY_SPARSE)
		return p->compute_slot >= 0 &&
		       blocking_orders(p, prod, p->compute_slot, NULL);
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *s = &p->s[i];

		if (!s->used || s->role != NL_ROLE_SPARSE || s->pipe != (int)a->pipeline)
			continue;
		if (!blocking_orders(p, prod, (int)i, NULL))
			return false;
		any = true;
	}
	return any;
}

/* by_flags: the edges of findings that streams created blocking would order */
static void add_unordered(const struct nl_proc *p, struct nl_batch_audit *a, uint32_t *by_flags,
			  int edge, bool never, const struct nl_seen_op *prod,
			  const struct nl_seen_op *cons)
{
	struct nl_unordered *u;

	if (blocking_would_order(p, a, edge, prod, cons))
		*by_flags |= 1u << edge;
	a->missing_mask |= 1u << edge;
	if (a->nunordered == NL_AUDIT_MAX_UNORDERED)
		return;
	u = &a->unordered[a->nunordered++];
	u->edge = edge;
	u->never_reached = never;
	to_ref(p, prod, &u->producer);
	to_ref(p, cons, &u->consumer);
}

/* Edge e is not named after all (a consequence of another one). */
static void drop_edge(struct nl_batch_audit *a, uint32_t *by_flags, int e)
{
	uint32_t k = 0;

	a->missing_mask &= ~(1u << e);
	*by_flags &= ~(1u << e);
	for (uint32_t i = 0; i < a->nunordered; i++)
		if (a->unordered[i].edge != e)
			a->unordered[k++] = a->unordered[i];
	a->nunordered = k;
}

/* The first op of the batch on bs's stream with a clock above `seen`. */
static struct nl_seen_op first_unseen(const struct nl_proc *p, const struct nl_batch *b,
				      const struct nl_batch_stream *bs, uint32_t seen)
{
	const struct nl_ring_op *r = nl_ring_first_after(&p->s[bs->slot], seen, b->token, true);

	if (r)
		return nl_ring_seen_op(bs->slot, r);
	return bs->has_up ? bs->last_up : bs->last_work;
}

/* The producer op to name when the token never reached a consumer. */
static const struct nl_seen_op *frontier_op(const struct nl_batch *b, int stage)
{
	const struct nl_seen_op *best = NULL;

	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == NL_STAGE_FORWARD || (stage >= 0 && bs->stage != stage))
			continue;
		if (bs->has_up && !bs->covered && (!best || bs->last_up.ts > best->ts))
			best = &bs->last_up;
	}
	return best;
}

/* Compute is the legacy null stream and every producer stream of batch b
 * is blocking: each null-stream op after b's producer ops waited for them
 * (HIP's implicit synchronization), and compute is ordered after them now.
 * A forward of b begun without its take read it ordered, wherever it ran. */
static bool implicitly_ordered(const struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_stream *c;
	bool any = false;

	if (p->compute_slot < 0 || p->compute_slot != p->null_slot)
		return false;
	c = &p->s[p->compute_slot];
	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == NL_STAGE_FORWARD || !bs->has_work)
			continue;
		if (!p->s[bs->slot].blocking || c->vc[bs->slot] < bs->last_work.clock)
			return false;
		any = true;
	}
	return any;
}

/* Batch b, which no forward window of its own began, was passed over:
 * compute began a newer batch of its pipeline. Where compute was ordered
 * after every producer op of b already when the batch before it began its
 * forward, b's forward, wherever it ran (in that batch's window, its take
 * dropped as redundant), came after and read it ordered. Before, a
 * healthy b was accused copy->forward where the step that showed its
 * forward begun was not known yet (an evaluation pipeline's first turn,
 * its batches copied before its first take, the second take dropped:
 * random program 351896). */
static bool ordered_before_prev(const struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_pipe *q = &p->pipes[nl_tok_pipe(b->token)];
	bool any = false;

	if (!b->prev_vc_valid || q->fwd_max == NL_NO_TOKEN || q->fwd_max <= b->token ||
	    nl_producers_last(b) <= b->prev_pre_ts)
		return false;
	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];

		if (bs->stage == NL_STAGE_FORWARD || !bs->has_work)
			continue;
		if (bs->last_work.clock > b->prev_vc[bs->slot])
			return false;
		any = true;
	}
	return any;
}

static void judge(const struct nl_proc *p, const struct nl_batch *b, struct nl_batch_audit *a,
		  uint32_t *by_flags)
{
	bool has_sparse = p->pipes[nl_tok_pipe(b->token)].has_sparse;
	const struct nl_watch *sw = &b->watch[NL_CONSUMER_SPARSE];
	const struct nl_watch *cw = &b->watch[NL_CONSUMER_COMPUTE];

	if (has_sparse && !b->reached_sparse) {
		/* The sparse stage read the copy unordered, whatever compute did. */
		const struct nl_seen_op *prod =
			sw->valid ? &sw->producer : frontier_op(b, NL_STAGE_COPY);

		add_unordered(p, a, by_flags, NL_EDGE_COPY_SPARSE, true, prod,
			      sw->valid ? &sw->consumer : NULL);
	} else if (b->cs.valid) {
		/* the sparse stage began before the batch reached it */
		struct nl_seen_op prod = first_unseen(p, b, &b->bs[b->cs.bs], b->cs.seen);

		add_unordered(p, a, by_flags, NL_EDGE_COPY_SPARSE, false, &prod, &b->cs.consumer);
	}
	if ((!has_sparse || b->reached_sparse) && !b->fwd_started && !implicitly_ordered(p, b) &&
	    !b->taken_early && !ordered_before_prev(p, b)) {
		const struct nl_seen_op *prod = cw->valid ? &cw->producer : frontier_op(b, -1);

		add_unordered(p, a, by_flags,
			      has_sparse ? NL_EDGE_SPARSE_FORWARD : NL_EDGE_COPY_FORWARD, true, prod,
			      cw->valid ? &cw->consumer : NULL);
	}
	if (!b->fwd_started)
		return;
	for (int i = 0; i < b->nbs; i++) {
		const struct nl_batch_stream *bs = &b->bs[i];
		struct nl_seen_op prod;

		if (bs->stage == NL_STAGE_FORWARD)
			continue;
		/* The copy reaches forward through the sparse stage: once that
		 * edge is named, the copy's other findings are the same fault. */
		if (bs->stage == NL_STAGE_COPY && (a->missing_mask & (1u << NL_EDGE_COPY_SPARSE)))
			continue;
		if (bs->pending && !bs->covered) {
			/* forward ops enqueued after the producer's last op, unordered */
			prod = first_unseen(p, b, bs, bs->pending_seen);
			add_unordered(p, a, by_flags, edge_of_stage(bs->stage), false, &prod,
				      &bs->pending_f);
		} else if (b->fwd_vc_valid && bs->has_work &&
			   bs->last_work.clock > b->fwd_vc[bs->slot]) {
			/* a producer op not ordered before the last forward op */
			prod = first_unseen(p, b, bs, b->fwd_vc[bs->slot]);
			add_unordered(p, a, by_flags, edge_of_stage(bs->stage), false, &prod,
				      &b->fwd_last);
		}
	}
	/* The same the other way: a copy ordered before the sparse stage
	 * reaches forward through it, so with sparse->forward named its
	 * copy->forward is that fault (one wait of compute on the data-dist
	 * stream orders both). */
	if ((a->missing_mask & (1u << NL_EDGE_SPARSE_FORWARD)) &&
	    !(a->missing_mask & (1u << NL_EDGE_COPY_SPARSE)))
		drop_edge(a, by_flags, NL_EDGE_COPY_FORWARD);
}

static void overlap(const struct nl_proc *p, const struct nl_batch *b, struct nl_batch_audit *a)
{
	uint64_t s0 = UINT64_MAX, s1 = 0, sum = 0;
	uint32_t n = p->nfwd_hist < NL_FWD_HISTORY ? p->nfwd_hist : NL_FWD_HISTORY;
	bool any = false;

	for (int st = NL_STAGE_COPY; st <= NL_STAGE_SPARSE; st++) {
		const struct nl_stage_acc *acc = &b->st[st];

		if (!acc->ops)
			continue;
		if (!acc->c.done_by_ns)
			return; /* the span's end is unknown */
		any = true;
		if (acc->first_ts < s0)
			s0 = acc->first_ts;
		if (acc->c.done_by_ns > s1)
			s1 = acc->c.done_by_ns;
	}
	if (!any)
		return;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t lo, hi;

		/* this pipeline's earlier windows; another's all overlap */
		if (nl_tok_pipe(p->fwd_hist[i].token) == nl_tok_pipe(b->token) &&
		    p->fwd_hist[i].token >= b->token)
			continue;
		lo = p->fwd_hist[i].start > s0 ? p->fwd_hist[i].start : s0;
		hi = p->fwd_hist[i].end < s1 ? p->fwd_hist[i].end : s1;
		if (hi > lo)
			sum += hi - lo;
	}
	a->overlap_known = true;
	a->overlap_ns = sum;
}

/* A batch no step consumed (nl_drain, not_consumed): only its sparse
 * stage read it. A copy->sparse finding, where that stage did work, is a
 * read of its copy unordered and makes it untrusted; any other finding is
 * of a read that never came. */
static void unconsumed(const struct nl_batch *b, struct nl_batch_audit *a, uint32_t *by_flags)
{
	uint32_t keep = b->st[NL_STAGE_SPARSE].work ? 1u << NL_EDGE_COPY_SPARSE : 0;
	uint32_t k = 0;

	for (uint32_t i = 0; i < a->nunordered; i++)
		if (keep & (1u << a->unordered[i].edge))
			a->unordered[k++] = a->unordered[i];
	a->nunordered = k;
	a->missing_mask &= keep;
	*by_flags &= keep;
	if (a->missing_mask)
		a->skip_mask = 0;
}

void nl_build_audit(const struct nl_engine *e, const struct nl_proc *p,
		    const struct nl_batch *b, struct nl_batch_audit *a)
{
	uint32_t by_flags = 0;

	memset(a, 0, sizeof(*a));
	a->pid = p->pid;
	a->pipeline = (uint32_t)nl_tok_pipe(b->token);
	a->batch = (uint64_t)nl_tok_seq(b->token);
	a->skip_mask = b->skip;
	a->forward_adopted = b->fwd_adopted;
	a->tick = b->fwd_started ? b->fwd_tick : -1;
	a->depth = b->fwd_started ? (int)(b->fwd_tick - b->copy_tick) : -1;
	for (int st = 0; st < NL_NSTAGES; st++) {
		const struct nl_stage_acc *acc = &b->st[st];
		struct nl_stage_audit *sa = &a->stage[st];

		sa->present = st != NL_STAGE_SPARSE || p->pipes[a->pipeline].has_sparse;
		sa->ops = acc->ops;
		sa->bytes = acc->bytes;
		sa->collectives = acc->colls;
		sa->threads = acc->ntids;
		sa->first_ns = acc->first_ts;
		sa->last_ns = acc->last_ts;
		sa->completion = acc->c;
		for (int i = 0; i < b->nbs; i++)
			if (b->bs[i].stage == st && sa->nstreams < NL_AUDIT_MAX_STREAMS) {
				const struct nl_stream *s = &p->s[b->bs[i].slot];

				sa->streams[sa->nstreams].handle = s->key.handle;
				sa->streams[sa->nstreams].tid = s->key.tid;
				sa->nstreams++;
			}
	}
	a->window_end_ns = b->fwd_started ? b->close_ts : 0;
	for (int k = NL_STAGE_COPY; k <= NL_STAGE_SPARSE; k++)
		if (b->handoff[k].found) {
			a->handoff[k].found = true;
			to_ref(p, &b->handoff[k].op, &a->handoff[k].op);
			a->handoff[k].exposure = b->handoff[k].exposure;
		}
	overlap(p, b, a);
	a->post_step_enabled = e->o.post_step;
	a->post_step_confirmed = b->post_confirmed;
	a->post_step_at_ns = b->post_confirmed ? b->post_at : 0;
	a->tick_end_ns = b->close_ts;
	judge(p, b, a, &by_flags);
	/* ...and so for a batch cut short by the exit whose sparse stage
	 * read its copy unordered: that read was made, whatever came after
	 * (a pipeline traced from its start only: found mid-run, whose work
	 * is the batch's is not known at exit) */
	if (a->skip_mask == NL_SKIP_BIT(NL_SKIP_NOT_CONSUMED) ||
	    (a->skip_mask == NL_SKIP_BIT(NL_SKIP_TARGET_EXITED) && b->st[NL_STAGE_SPARSE].work &&
	     (a->missing_mask & (1u << NL_EDGE_COPY_SPARSE)) && p->pipes[a->pipeline].from_start))
		unconsumed(b, a, &by_flags);
	if (a->missing_mask && !e->o.unseen_nonblocking) {
		/* Named only where the calls prove it, whatever flags the
		 * streams created before tracing had: the first edge must be
		 * missing both ways, and only edges missing both ways are named. */
		uint32_t m = a->missing_mask, sure = m & ~by_flags;

		if (!sure || (sure & -sure) != (m & -m))
			a->skip_mask |= NL_SKIP_BIT(NL_SKIP_PRETRACE_STREAM);
		else if (sure != m) {
			int k = 0;

			for (uint32_t i = 0; i < a->nunordered; i++)
				if (sure & (1u << a->unordered[i].edge))
					a->unordered[k++] = a->unordered[i];
			a->nunordered = (uint32_t)k;
			a->missing_mask = sure;
		}
	}
	/* --strict-attach: a pipeline found in the middle of its run, whose
	 * batches in flight at the attach no fill showed. Every accusation
	 * there rests on that count: with one batch more in flight, each step
	 * is the batch before's, and a step begun without its take is a take
	 * made early that covered it (a wait_stream after a loader's next
	 * copy, a redundant one left out) */
	if (!a->skip_mask && a->missing_mask && e->o.strict_attach && p->mid_run &&
	    !p->pipes[a->pipeline].from_start)
		a->skip_mask |= NL_SKIP_BIT(NL_SKIP_ATTACH_OFFSET);
	if (a->skip_mask) {
		/* Incomplete evidence: never trusted, never accused. */
		a->verdict = NL_VERDICT_SKIPPED;
		a->missing_mask = 0;
		a->nunordered = 0;
	} else {
		a->verdict = a->missing_mask ? NL_VERDICT_UNTRUSTED : NL_VERDICT_TRUSTED;
	}
}
