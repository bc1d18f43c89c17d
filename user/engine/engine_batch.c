// SPDX-License-Identifier: MIT
/*
 * Batches: the pipelines and their batches in flight, tokens minted on the
 * copy stream, skip reasons, closing, completion evidence, and emission once
 * a batch is final. The ops each batch collects: engine_account.c; its
 * verdict: engine_verdict.c.
 */
#include "engine/engine_int.h"

struct nl_pipe *nl_pipe_of_token(struct nl_proc *p, int64_t token)
{
	int i = token < 0 ? -1 : nl_tok_pipe(token);

	return i >= 0 && i < p->npipes && p->pipes[i].used ? &p->pipes[i] : NULL;
}

struct nl_pipe *nl_pipe_of_stream(struct nl_proc *p, const struct nl_stream *s)
{
	return s->pipe >= 0 && s->pipe < p->npipes ? &p->pipes[s->pipe] : NULL;
}

struct nl_batch *nl_batch_of(struct nl_proc *p, int64_t token)
{
	struct nl_pipe *q = nl_pipe_of_token(p, token);
	struct nl_batch *b;

	if (!q || token < q->oldest || token >= q->next_token)
		return NULL;
	b = &q->b[nl_tok_seq(token) % p->bcap];
	return b->used && b->token == token ? b : NULL;
}

/* Batch b's stream slot with work on it (NULL: none). */
const struct nl_batch_stream *nl_worked_stream(const struct nl_batch *b, int slot)
{
	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].slot == slot && b->bs[i].has_work)
			return &b->bs[i];
	return NULL;
}

int nl_stage_of_role(int role)
{
	switch (role) {
	case NL_ROLE_COPY:
		return NL_STAGE_COPY;
	case NL_ROLE_SPARSE:
		return NL_STAGE_SPARSE;
	case NL_ROLE_COMPUTE:
		return NL_STAGE_FORWARD;
	default:
		return -1;
	}
}

void nl_batch_skip(struct nl_proc *p, int64_t token, int reason)
{
	struct nl_batch *b = nl_batch_of(p, token);

	if (b)
		b->skip |= NL_SKIP_BIT(reason);
}

void nl_skip_open(struct nl_proc *p, int reason)
{
	struct nl_batch *b;

	NL_FOR_BATCHES(p, b)
		b->skip |= NL_SKIP_BIT(reason);
}

void nl_batches_lose_slot(struct nl_proc *p, int slot)
{
	struct nl_batch *b;

	NL_FOR_BATCHES(p, b)
		for (int i = 0; i < b->nbs; i++)
			if (b->bs[i].slot == slot)
				b->skip |= NL_SKIP_BIT(NL_SKIP_EVICTED);
}

void nl_apply_lost(struct nl_engine *e, struct nl_proc *p)
{
	struct nl_batch *b;

	(void)e;
	/* Every batch not emitted yet, and every later one: the records lost
	 * may have been any of its own, or an event's record or a wait whose
	 * effect lasts (a batch is then charged another's ops, or a wait is
	 * judged against an older record). A loss that skipped only the
	 * batches in flight let 5 % of healthy random programs with records
	 * lost have a batch accused (fuzz_audit -L). */
	NL_FOR_BATCHES(p, b)
		b->skip |= NL_SKIP_BIT(NL_SKIP_LOST_RECORDS);
	p->loss_blind = true;
	p->rows_unsure = true;
}

/* ---- lifecycle -------------------------------------------------------------- */

bool nl_stage_has(const struct nl_batch *b, int st, bool up)
{
	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].stage == st && (up ? b->bs[i].has_up : b->bs[i].has_work))
			return true;
	return false;
}

/* Completion is about work: a stage without kernels, copies or
 * collectives has nothing to complete. */
static bool all_done(const struct nl_batch *b)
{
	for (int st = 0; st < NL_NSTAGES; st++)
		if (nl_stage_has(b, st, false) && !b->st[st].c.done_by_ns)
			return false;
	return true;
}

static void close_batch(struct nl_engine *e, struct nl_proc *p, struct nl_batch *b, uint64_t ts)
{
	b->closed = true;
	b->close_ts = ts;
	b->linger_until = nl_pipe_of_token(p, b->token)->ticks + e->o.linger_ticks;
	if (b->fwd_started) {
		uint32_t i = p->nfwd_hist++ % NL_FWD_HISTORY;
		struct nl_pipe *q = nl_pipe_of_token(p, b->token);

		if (b->st[NL_STAGE_FORWARD].work &&
		    (!q->run_min_work || b->st[NL_STAGE_FORWARD].work < q->run_min_work))
			q->run_min_work = b->st[NL_STAGE_FORWARD].work;

		p->fwd_hist[i].token = b->token;
		p->fwd_hist[i].start = b->st[NL_STAGE_FORWARD].first_ts;
		p->fwd_hist[i].end = ts;
	}
	b->post_confirmed = true;
	for (int st = 0; st < NL_NSTAGES; st++) {
		const struct nl_completion *c = &b->st[st].c;

		if (!nl_stage_has(b, st, false))
			continue;
		if (!c->done_by_ns)
			b->post_confirmed = false;
		else if (c->done_by_ns > b->post_at)
			b->post_at = c->done_by_ns;
	}
}

static void emit_oldest(struct nl_engine *e, struct nl_proc *p, struct nl_pipe *q);

void nl_prev_began(struct nl_proc *p, struct nl_batch *n, const struct nl_batch *prev)
{
	memcpy(n->prev_vc, prev->first_vc, p->w * sizeof(uint32_t));
	n->prev_vc_valid = true;
	n->prev_pre_ts = prev->pre_work_ts;
}

void nl_mint(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s, uint64_t ts)
{
	struct nl_pipe *q = nl_pipe_of_stream(p, s);
	int64_t tok;
	struct nl_batch *b;
	const struct nl_batch *prev;
	uint32_t *vc, *first_vc, *prev_vc;

	if (!q)
		return;
	tok = q->next_token;
	/* The cap: the oldest batch goes out, skipped when it was not final. */
	while (tok - q->oldest >= (int64_t)p->bcap) {
		b = nl_batch_of(p, q->oldest);
		if (b && !b->closed) {
			b->skip |= NL_SKIP_BIT(NL_SKIP_EVICTED);
			p->evicted_batches++;
			close_batch(e, p, b, ts);
		}
		emit_oldest(e, p, q);
	}
	b = &q->b[nl_tok_seq(tok) % p->bcap];
	vc = b->fwd_vc;
	first_vc = b->first_vc;
	prev_vc = b->prev_vc;
	memset(b, 0, sizeof(*b));
	b->fwd_vc = vc;
	b->first_vc = first_vc;
	b->prev_vc = prev_vc;
	b->used = true;
	b->token = tok;
	/* the batch before began its forward already (a batch cut from a
	 * merged segment after it did) */
	prev = nl_tok_seq(tok) ? nl_batch_of(p, tok - 1) : NULL;
	if (prev && prev->fwd_started)
		nl_prev_began(p, b, prev);
	b->skip = p->skip_all | e->skip_all_new;
	b->first_ts = ts;
	b->copy_tick = q->ticks;
	b->fwd_tick = -1;
	b->linger_until = INT64_MAX;
	/* Attached in the middle of a run: the first segment may have begun
	 * before we looked, unless a record on the copy stream, or its
	 * creation, came first. */
	if (p->mid_run && !q->seen_copy_record && !s->creation_seen)
		b->skip |= NL_SKIP_BIT(NL_SKIP_ATTACHED_MID_BATCH);
	if (!nl_tok_seq(tok))
		q->from_start = !p->mid_run || s->creation_seen;
	if (p->loss_blind || (e->loss_until && ts <= e->loss_until))
		b->skip |= NL_SKIP_BIT(NL_SKIP_LOST_RECORDS);
	q->next_token++;
	s->token = tok;
	s->seg_open = true;
	s->seg_work = 0;
}

/* A wait of compute that brings token `to`: one more forward window ticks.
 * The batches before it close only when compute works with it
 * (nl_compute_advance). */
void nl_compute_tick(struct nl_proc *p, int64_t to, uint64_t ts)
{
	struct nl_pipe *q = nl_pipe_of_token(p, to);

	if (!q || to <= q->tick_max)
		return;
	q->tick_max = to;
	q->tick_ts = ts;
	/* Ticks count forward windows, including tokens that never got one. */
	if (nl_tok_seq(to) + 1 > q->ticks)
		q->ticks = nl_tok_seq(to) + 1;
	if (!p->nfwd)
		p->first_fwd_ts = ts;
	p->last_fwd_ts = ts;
	p->nfwd++;
}

/* Compute's window of batch b ends where batch n's begins: a window from
 * one wait to the next, in which no restart of the step was seen, tells how
 * many launches of its first kernel a step makes (q->first_min, the fewest
 * any such window had; docs/engine.md, "Tick cadence at compute"), and
 * first_min_whole the same of windows with no launch counted in a run.
 * So does one whose restart was none: the step's two first kernels again
 * marked n begun, and n then came by the wait that ended the window (a
 * model that runs them twice a step). Before, no window of such a model
 * ever taught first_min, and every batch from the third on was accused
 * sparse->forward in a clean TorchRec-order loop. */
static void note_first_hits(struct nl_pipe *q, const struct nl_batch *b, const struct nl_batch *n)
{
	uint32_t hits = b ? b->st[NL_STAGE_FORWARD].first_hits : 0;
	/* a restart seen in b's window that was none: the batch it marked
	 * as begun, the next, came by the wait that left the window */
	bool not_one = b && n && b->restart_seen && n->token == b->token + 1 &&
		       n->watch[NL_CONSUMER_COMPUTE].repeat && n->fwd_waited;

	if (!hits || !n || !b->fwd_started || b->closed || !b->fwd_waited ||
	    (b->restart_seen && !not_one) || !n->fwd_waited)
		return;
	/* the step's first two kernels again in a window taken and left by
	 * waits, with no restart in it: the step launches them twice */
	if (b->st[NL_STAGE_FORWARD].again_ts)
		q->again_in_step = true;
	if (!q->first_min || hits < q->first_min)
		q->first_min = hits;
	if (!b->st[NL_STAGE_FORWARD].unnamed && (!q->first_min_whole || hits < q->first_min_whole))
		q->first_min_whole = hits;
}

/* Compute's window of batch b ends where batch `to`'s begins: whether it
 * was one step like every window before it (steps_uneven, even_hits), so
 * that the count of windows is the count of steps (never_consumed). */
static void note_even(struct nl_pipe *q, const struct nl_batch *b, int64_t to)
{
	const struct nl_stage_acc *w = b ? &b->st[NL_STAGE_FORWARD] : NULL;

	if (q->fwd_max == NL_NO_TOKEN) {
		q->steps_uneven |= nl_tok_seq(to) != 0;
		return;
	}
	q->even_other = !w || to != q->fwd_max + 1 || !b->fwd_started || w->again_ts || !w->first_hits;
	if (q->even_other || (q->even_hits && w->first_hits != q->even_hits))
		q->steps_uneven = true;
	else
		q->even_hits = w->first_hits;
}

/* Batch b's copies, as its copy streams remember them: the ring's tokens
 * follow every cut of a segment (a ring that no longer reaches back
 * counts fewer, which never_consumed takes as uneven) */
static uint64_t copies_of(struct nl_proc *p, const struct nl_batch *b)
{
	uint64_t n = 0;

	for (int i = 0; i < b->nbs; i++) {
		const struct nl_stream *s = &p->s[b->bs[i].slot];

		if (b->bs[i].stage != NL_STAGE_COPY)
			continue;
		for (uint32_t k = nl_ring_start(s); k < s->nring; k++)
			n += s->ring[k % NL_RING].token == b->token && s->ring[k % NL_RING].work;
	}
	return n;
}

/* Whether batch b was copied in as many copies as every batch of its
 * pipeline emitted so far and every one not yet emitted (never_consumed) */
static bool copies_even(struct nl_proc *p, const struct nl_pipe *q, const struct nl_batch *b)
{
	uint64_t k = copies_of(p, b);
	struct nl_batch *x;

	if (!k || q->copies_uneven || (q->even_copies && q->even_copies != k))
		return false;
	NL_FOR_PIPE_BATCHES(p, q, x)
		if (copies_of(p, x) != k)
			return false;
	return true;
}

static uint64_t stage_shared(struct nl_proc *p, const struct nl_batch *own, const struct nl_batch *b,
			     uint64_t *until);
static void take_shared(struct nl_engine *e, struct nl_proc *p, struct nl_batch *own,
			struct nl_batch *b, uint64_t from, uint64_t until);

/* Compute leaves batch tok's window at ts (a wait that brings another
 * pipeline's batch, or a later one of its own) while the batch after tok
 * began no forward of its own: where the data-dist stream ran a batch
 * ahead of compute (stage_shared), the step begun again after compute's
 * second take of tok's stage was that batch's forward, as at exit. The
 * rings still hold that step here; by the pipeline's next take, or its
 * exit, a turn of another pipeline and its streams created again may have
 * overwritten them. Before, such a batch of an evaluation turn was never
 * staged and accused copy->sparse (random program 1262345). */
void nl_compute_leaves(struct nl_engine *e, struct nl_proc *p, int64_t tok, uint64_t ts)
{
	struct nl_batch *own = nl_batch_of(p, tok), *next = own ? nl_batch_of(p, tok + 1) : NULL;
	uint64_t from, until = ts;

	if (next && !next->closed && !next->fwd_started &&
	    (from = stage_shared(p, own, next, &until)) != 0)
		take_shared(e, p, own, next, from, until);
}

/* Compute's first work op with token `to`: forward(to) begins and closes
 * every earlier batch of its pipeline. */
void nl_compute_advance(struct nl_engine *e, struct nl_proc *p, int64_t to, uint64_t ts)
{
	struct nl_pipe *q = nl_pipe_of_token(p, to);
	struct nl_batch *b, *own;

	if (!q || to <= q->fwd_max)
		return;
	note_first_hits(q, nl_batch_of(p, q->fwd_max), nl_batch_of(p, to));
	note_even(q, nl_batch_of(p, q->fwd_max), to);
	nl_compute_tick(p, to, ts);
	/* the window before ends at the first op that carried `to`, the wait
	 * that brought it when one did */
	if (to == q->tick_max)
		ts = q->tick_ts;
	/* compute moves past the batch after the one it held */
	own = q->fwd_max != NL_NO_TOKEN ? nl_batch_of(p, q->fwd_max) : NULL;
	if (own && own->token + 1 < to)
		nl_compute_leaves(e, p, own->token, ts);
	q->fwd_max = to;
	/* Only this pipeline's: another one's batches wait for their own. */
	NL_FOR_PIPE_BATCHES(p, q, b)
		if (b->token < to && !b->closed)
			close_batch(e, p, b, ts);
	nl_emit_ready(e, p);
}

/* Batch b was cut from a copy stream's fill by a guess (a size another
 * copy stream was sure of, or the fill as one batch) that its takes or its
 * next segment may still refute (recut_fill, recut_taken): it is not
 * audited before that, closed or not. Before, compute's next take closed
 * and audited the fill's first batches, and a recut that came later could
 * no longer give them their copies: an evaluation turn whose batches hold
 * more copies than training's, copied before its first record, had a
 * healthy batch merged (random program 303465). */
static bool in_fill_guess(const struct nl_proc *p, const struct nl_batch *b)
{
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *m = &p->s[i];

		if (m->used && m->role == NL_ROLE_COPY && m->pipe == nl_tok_pipe(b->token) && m->guess_n &&
		    m->guess_k && b->token >= m->guess_tok &&
		    b->token < m->guess_tok + (int64_t)(m->guess_n / m->guess_k))
			return true;
	}
	return false;
}

void nl_emit_ready(struct nl_engine *e, struct nl_proc *p)
{
	for (int i = 0; i < p->npipes; i++) {
		struct nl_pipe *q = &p->pipes[i];

		while (q->oldest < q->next_token) {
			struct nl_batch *b = nl_batch_of(p, q->oldest);

			if (b && (!b->closed || (q->ticks < b->linger_until && !all_done(b))))
				break;
			if (b && in_fill_guess(p, b))
				break;
			emit_oldest(e, p, q);
		}
	}
}

/* Every batch of b's pipeline q older than b is closed or began its
 * forward. */
static bool older_begun(struct nl_proc *p, const struct nl_pipe *q, const struct nl_batch *b)
{
	for (int64_t t = q->oldest; t < b->token; t++) {
		const struct nl_batch *o = nl_batch_of(p, t);

		if (o && !o->closed && !o->fwd_started)
			return false;
	}
	return true;
}

/* At exit, batch b of one pipeline, never taken, whose forward never
 * began: compute's step began again in a window of another pipeline after
 * b's producers were done, while nothing of that pipeline was left to
 * begin (its last window, or an earlier one before its next batch was
 * copied: nl_lone_again), and compute is not ordered after them. The
 * restart was b's forward, begun without its edge (a take dropped after or
 * during the other pipeline's turn). Only the oldest such batch of its
 * pipeline: one restart is one batch's. */
static bool restarted_elsewhere(struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_stream *s = p->compute_slot >= 0 ? &p->s[p->compute_slot] : NULL;
	const struct nl_batch *own = s ? nl_batch_of(p, s->token) : NULL;
	const struct nl_pipe *q = own ? nl_pipe_of_token(p, own->token) : NULL;
	const struct nl_pipe *bq = nl_pipe_of_token(p, b->token);
	uint64_t last = b->st[NL_STAGE_COPY].last_ts, again = 0;

	if (!s || !bq)
		return false;
	if (!older_begun(p, bq, b))
		return false;
	if (b->st[NL_STAGE_SPARSE].last_ts > last)
		last = b->st[NL_STAGE_SPARSE].last_ts;
	if (own && q && nl_tok_pipe(own->token) != nl_tok_pipe(b->token) &&
	    own->token + 1 >= q->next_token)
		again = own->st[NL_STAGE_FORWARD].again_ts;
	/* or in a window of its own pipeline, while b was due next there, a
	 * restart nl_step_begins kept for the exit (more than one pipeline,
	 * b not ordered before compute), and no wait gave b its forward
	 * since. Before, only another pipeline's window counted: the
	 * pipeline's last batch, its take dropped, was skipped target_exited
	 * (random program 383522). */
	if ((!again || again <= last) && bq->again_ts > last && bq->again_tok == b->token &&
	    !bq->again_not_its)
		again = bq->again_ts;
	for (int i = 0; i < p->npipes && (!again || again <= last); i++) {
		const struct nl_pipe *o = &p->pipes[i];

		if (o == bq)
			continue;
		if (nl_lone_again(o) > last)
			again = nl_lone_again(o);
		/* or while its next batch was due, which a wait then took */
		else if (o->again_not_its && o->again_ts > last)
			again = o->again_ts;
		/* or the second of two restarts while that batch was due: one
		 * restart is one batch's, so one of them was another's. Before,
		 * the last batch of b's pipeline, its take dropped after the
		 * other pipeline's last take was dropped too, was skipped
		 * target_exited (random program 53152) */
		else if (o->again_before_ts && o->again_ts > last)
			again = o->again_ts;
		/* ...or so for a batch before that one */
		else if (o->again_two_ts > last)
			again = o->again_two_ts;
	}
	if (!again || again <= last)
		return false;
	/* compute is not ordered after them even now: that forward read its
	 * batch unordered (ordered, it may have been anything's) */
	return nl_unordered_producer(b, s, NL_CONSUMER_COMPUTE) != NULL;
}

/* A data-dist stream of batch b's pipeline did work that carries no batch
 * after b's copy began (its role came after: a stream created again that
 * no wait on the copy stream reached, nl_sparse_due never counted it):
 * b's sparse stage, begun without its edge, when b is the pipeline's only
 * batch it could be. */
static bool unclaimed_sparse_work(struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_pipe *q = nl_pipe_of_token(p, b->token);
	uint64_t from = b->st[NL_STAGE_COPY].first_ts;

	if (!b->st[NL_STAGE_COPY].ops || b->token + 1 != q->next_token)
		return false;
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *x = &p->s[i];

		if (!x->used || x->role != NL_ROLE_SPARSE || !x->fed_by_copy ||
		    x->pipe != nl_tok_pipe(b->token) || x->token != NL_NO_TOKEN)
			continue;
		for (uint32_t k = nl_ring_start(x); k < x->nring; k++)
			if (x->ring[k % NL_RING].work && x->ring[k % NL_RING].token == NL_NO_TOKEN &&
			    x->ring[k % NL_RING].ts > from)
				return true;
	}
	return false;
}

/* At exit, compute is the null stream and batch b, the next after the one
 * compute holds and the last of its pipeline, was produced on blocking
 * streams only: compute's window began the step again after b's last
 * producer op. That restart, a null-stream op, waited for b's producers:
 * it was b's forward, begun ordered, its take dropped (redundant).
 * Compute may hold another pipeline's last batch instead (an evaluation
 * turn ended), with every batch of b's pipeline before b given its
 * forward; b's copy segment then may be open still, if it is as long as
 * its pipeline's batches are (copy_k): the record after it was dropped
 * with the take. Before, such a last batch of training was skipped
 * target_exited (random programs 503885, 473152, 123931, 325828). */
static bool implicit_restart(struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_stream *c = p->compute_slot >= 0 ? &p->s[p->compute_slot] : NULL;
	const struct nl_batch *own = c ? nl_batch_of(p, c->token) : NULL;
	const struct nl_pipe *q = nl_pipe_of_token(p, b->token);
	const struct nl_pipe *oq = own ? nl_pipe_of_token(p, own->token) : NULL;
	bool other = oq && oq != q;
	uint64_t last;

	if (!own || p->compute_slot != p->null_slot || b->token + 1 != q->next_token)
		return false;
	if (other) {
		if (own->token + 1 < oq->next_token || !older_begun(p, q, b))
			return false;
	} else if (own->token + 1 != b->token) {
		return false;
	}
	if (!b->copy_closed && !(other && q->copy_k && b->st[NL_STAGE_COPY].ops == q->copy_k))
		return false;
	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].stage != NL_STAGE_FORWARD && b->bs[i].has_work &&
		    !p->s[b->bs[i].slot].blocking)
			return false;
	last = nl_producers_last(b);
	return last && own->st[NL_STAGE_FORWARD].again_ts > last;
}

/* At exit, batch b, the next after the one compute holds (its pipeline
 * with a sparse stage), copied, never reached by its data-dist stream and
 * with no sparse work of its own: compute began its step again in the
 * window it holds after b's copies (its two first kernels again in a row,
 * which no whole window showed: again_in_step). That restart was b's
 * forward, so b's sparse stage ran before it, without its edge, charged
 * to the batch before (the data-dist stream's record between dropped), or
 * never ran: copy->sparse either way. Before, b was skipped target_exited,
 * its fault unnamed (random programs 99860, 172241). It first held for
 * one pipeline and a step that launches its first kernel once; the pair
 * guard also takes a backward that begins with forward's first kernel
 * (383458, 88837) and two pipelines (284908, 477374). */
static bool restarted_unstaged(struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_stream *s = p->compute_slot >= 0 ? &p->s[p->compute_slot] : NULL;
	const struct nl_batch *own = s ? nl_batch_of(p, s->token) : NULL;
	const struct nl_pipe *q = nl_pipe_of_token(p, b->token);
	const struct nl_stage_acc *w;

	if (!own || own->token + 1 != b->token || !q || !q->has_sparse ||
	    b->reached_sparse || b->st[NL_STAGE_SPARSE].work || !b->copy_closed ||
	    !b->st[NL_STAGE_COPY].work || q->again_in_step)
		return false;
	w = &own->st[NL_STAGE_FORWARD];
	if (!w->first_named[1] || w->again_ts <= b->st[NL_STAGE_COPY].last_ts)
		return false;
	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *d = &p->s[i];

		if (!d->used || d->pipe != nl_tok_pipe(b->token))
			continue;
		if (d->role == NL_ROLE_SPARSE && nl_copy_covered(b, d))
			return false;
		/* created before tracing, compute the null stream: the stage's
		 * ops, unknown here, might be ordered by its flags, which the
		 * verdict would check against them (pretrace_stream) */
		if (!d->history_known && p->compute_slot == p->null_slot)
			return false;
	}
	return true;
}

/* At exit, batch b, the last of its pipeline and the next after the one
 * compute holds (own), copied, with no sparse op of its own and never
 * reached; or, *until not UINT64_MAX, b the next after the batch own whose
 * window compute leaves at *until (nl_compute_leaves), no batch copied
 * after b before the restart, and the restart's ops those up to the first
 * op of another batch (*until, lowered to it):
 * the data-dist stream's last stage (its work of the batch compute holds,
 * nothing of another batch after it) was ordered after b's copies by the
 * stream's wait before it, and compute, after it took that stage, waited
 * on a record of the stream made after it once more and began its step
 * again. The stream ran a batch ahead of compute since a stage of its own
 * held two batches (a fill of two copied before one wait, the second
 * one's wait redundant and dropped): its last stage was b's, ordered
 * after b's copies, the second take b's, and the restart b's forward,
 * ordered after both. Had it been no stage of b's, b's sparse stage never
 * ran and its forward read nothing of it unordered either. Not where the
 * stream ever worked on a batch no newer than own before the next one's
 * copies were ordered before it (sparse_behind, behind_min): it never ran
 * ahead then. A stream of b's pipeline created after the restart (a
 * turn's streams created again) is left out when leaving. Returns the
 * restart's first op (0: not so). Before, b was skipped target_exited
 * (random programs 410837, 190718245, 117399). */
static uint64_t stage_shared(struct nl_proc *p, const struct nl_batch *own, const struct nl_batch *b,
			     uint64_t *until)
{
	const struct nl_stream *c = p->compute_slot >= 0 ? &p->s[p->compute_slot] : NULL;
	const struct nl_pipe *q = nl_pipe_of_token(p, b->token);
	const struct nl_stage_acc *w;
	uint64_t from = 0;
	bool fed = false;

	if (!c || !own || own->token + 1 != b->token || !q->has_sparse ||
	    (q->sparse_behind && q->behind_min <= own->token) || b->reached_sparse ||
	    b->st[NL_STAGE_SPARSE].ops || !b->copy_closed || !b->st[NL_STAGE_COPY].work ||
	    b->fwd_started || !own->fwd_started || !own->sparse_retake)
		return 0;
	w = &own->st[NL_STAGE_FORWARD];
	if (!w->first_named[1] || w->again_ts <= b->st[NL_STAGE_COPY].last_ts)
		return 0;
	/* the restart: the step's first kernel, the work op just before the
	 * second (again_ts); compute's ops from there on, up to the wait that
	 * moves it on (until), all own's */
	for (uint32_t k = nl_ring_start(c); k < c->nring; k++) {
		const struct nl_ring_op *r = &c->ring[k % NL_RING];

		if (r->work && r->token == own->token && r->ts < w->again_ts)
			from = r->ts;
	}
	for (uint32_t k = nl_ring_start(c); k < c->nring && from; k++) {
		const struct nl_ring_op *r = &c->ring[k % NL_RING];

		if (r->ts < from || r->ts >= *until || r->token == own->token)
			continue;
		/* at exit, all own's; moving on, up to the first that is not */
		if (*until == UINT64_MAX)
			return 0;
		*until = r->ts;
	}
	/* b the newest batch of its pipeline when its step began: a batch
	 * copied after it came after the restart */
	for (int64_t t = b->token + 1; from && t < q->next_token; t++) {
		const struct nl_batch *n = nl_batch_of(p, t);

		if (n && n->st[NL_STAGE_COPY].ops && n->st[NL_STAGE_COPY].first_ts < from)
			return 0;
	}
	for (uint32_t i = 0; i < p->w && from; i++) {
		const struct nl_stream *d = &p->s[i];
		const struct nl_ring_op *wait = NULL, *before = NULL;
		bool retaken = false, worked = false, others = false;
		uint32_t last = 0;

		if (!d->used || d->role != NL_ROLE_SPARSE || d->pipe != nl_tok_pipe(b->token))
			continue;
		/* moving on: a stream of the pipeline created since the
		 * restart (a turn's streams created again) ran no stage then */
		if (*until != UINT64_MAX && d->creation_seen && d->creation_ts > from)
			continue;
		/* its last stage: its work of own, none of another batch after
		 * it began, and the wait last before it */
		for (uint32_t k = nl_ring_start(d); k < d->nring; k++) {
			const struct nl_ring_op *r = &d->ring[k % NL_RING];

			if (r->ev_slot >= 0) {
				before = r;
			} else if (r->work && r->token == own->token) {
				if (!worked)
					wait = before;
				worked = true;
				last = r->clock;
			} else if (r->work) {
				others |= worked;
			}
		}
		if (!wait || !worked || others || !nl_copy_before_wait(b, wait))
			return 0;
		/* compute's second take: a wait in own's window before the
		 * restart on a record of this stream after its last work, which
		 * orders the restart after that stage whatever compute did later */
		for (uint32_t k = nl_ring_start(c); k < c->nring; k++) {
			const struct nl_ring_op *r = &c->ring[k % NL_RING];

			retaken |= r->ev_slot == (int)i && r->ev_clock >= last &&
				   r->token == own->token && r->ts > w->first_ts && r->ts < from;
		}
		if (!retaken)
			return 0;
		fed = true;
	}
	return fed ? from : 0;
}

/* The restart stage_shared found is b's forward: compute's ops from it on
 * are b's, b was reached by its data-dist stream's last wait, and the
 * completion that covered them is b's. */
static void take_shared(struct nl_engine *e, struct nl_proc *p, struct nl_batch *own,
			struct nl_batch *b, uint64_t from, uint64_t until)
{
	int slot = p->compute_slot;
	struct nl_stream *c = &p->s[slot];
	uint64_t moved = 0, moved_work = 0;

	for (uint32_t k = nl_ring_start(c); k < c->nring; k++) {
		struct nl_ring_op *r = &c->ring[k % NL_RING];

		if (r->token != own->token || r->ts < from || r->ts >= until)
			continue;
		nl_account_ring(e, p, slot, r, b->token);
		moved++;
		moved_work += r->work;
	}
	c->ops -= moved; /* booked again, not enqueued again */
	nl_forward_cut(p, own, slot, from, moved, moved_work);
	b->reached_sparse = true;
	b->st[NL_STAGE_FORWARD].c = own->st[NL_STAGE_FORWARD].c;
}

/* At exit, batch b was never consumed: the job stopped before the step
 * that would have taken it (a loop with a step limit over a longer
 * dataloader prefetches batches no step uses). Compute holds an older
 * batch of b's pipeline, the process's only one, whose batches came by
 * waits; its forward was seen complete (a host sync after its last op),
 * and compute did one step's work since and no more: every window of the
 * pipeline so far was one step like the others (note_even), this one
 * began as they all did (the same two different first kernels, on the
 * same thread, at least two windows so), never began so again (again_ts)
 * and launched the step's first kernel as often as each of them did (and
 * no more than a window from one wait to the next, first_min, where one
 * such was seen: a loop whose redundant takes were dropped may have none,
 * each window begun by its step's two first kernels again; before, each
 * such run was not valid, random program 1355); no restart was kept for
 * the exit. b is at most the pipeline's depth ahead
 * of it and copied in as many copies as every batch (copies_even). So
 * b's forward never began, ordered or not, and nothing on compute read
 * it. Anything less sure stays target_exited: a take dropped in the last
 * steps can leave a batch looking so once the windows are numbered one
 * off (random program 112056), and then the run must not be valid. */
static bool never_consumed(struct nl_proc *p, const struct nl_batch *b)
{
	const struct nl_stream *c = p->compute_slot >= 0 ? &p->s[p->compute_slot] : NULL;
	const struct nl_batch *own = c ? nl_batch_of(p, c->token) : NULL;
	const struct nl_pipe *q = nl_pipe_of_token(p, b->token);
	const struct nl_stage_acc *w;

	if (!own || !q || nl_tok_pipe(own->token) != nl_tok_pipe(b->token) ||
	    own->token >= b->token || b->fwd_started || b->st[NL_STAGE_FORWARD].ops ||
	    b->watch[NL_CONSUMER_COMPUTE].repeat || b->watch[NL_CONSUMER_SPARSE].repeat)
		return false;
	w = &own->st[NL_STAGE_FORWARD];
	if (!own->fwd_started || !w->c.done_by_ns || !q->took_by_wait)
		return false;
	/* no more batches ahead of compute than the pipeline's depth (as
	 * own's forward came after its copy), each copied in as many copies
	 * as every batch before: a batch of segments merged or cut wrong is
	 * none a step could prefetch (random program 116520) */
	if (own->fwd_tick <= own->copy_tick || b->token - own->token > own->fwd_tick - own->copy_tick ||
	    !copies_even(p, q, b))
		return false;
	if (q->step.n < 2 || q->step.varied || q->step.tid_varied || q->again_in_step ||
	    !w->first_named[0] || !w->first_named[1] || w->first_sig[0] == w->first_sig[1] ||
	    w->first_sig[0] != q->step.sig[0] ||
	    w->first_sig[1] != q->step.sig[1] || w->first_tid != q->step.tid)
		return false;
	if (w->again_ts || (q->first_min && w->first_hits > q->first_min) ||
	    q->steps_uneven || !q->even_hits || w->first_hits != q->even_hits)
		return false;
	/* one pipeline: another's step, its take dropped, may hide in a
	 * window of this one and leave a batch of it looking unconsumed
	 * (random programs 105881, 405870: an evaluation batch's) */
	for (int i = 0; i < p->npipes; i++)
		if (p->pipes[i].used && &p->pipes[i] != q)
			return false;
	return !q->again_ts && !nl_lone_again(q) && !q->again_two_ts;
}

void nl_drain(struct nl_engine *e, struct nl_proc *p, uint64_t ts, bool exited)
{
	/* the batch compute holds: the drain moves no compute token */
	struct nl_batch *b, *own = p->compute_slot >= 0 ?
					   nl_batch_of(p, p->s[p->compute_slot].token) : NULL;
	uint64_t from;

	NL_FOR_BATCHES(p, b) {
		const struct nl_pipe *q = nl_pipe_of_token(p, b->token);
		int k = q->has_sparse && !b->reached_sparse ? NL_CONSUMER_SPARSE :
							       NL_CONSUMER_COMPUTE;
		/* A pipeline found in the middle of its run (attached by pid
		 * after its copy stream was created): the engine does not know
		 * how many of its batches were in flight then, and the drain
		 * at exit is where that count decides whose the last stage
		 * ops are, so no batch of it is final at exit. Before, they
		 * were judged as in a run traced from its start, and an attach
		 * at a random call of a healthy random program had a batch
		 * accused in 6.4 % of programs, three in four of them among
		 * the last four batches (fuzz_audit -M, seeds 1-20,000: 661
		 * programs; 381 now). */
		bool fin = exited && q->from_start;

		if (b->closed)
			continue;
		/* Final at exit: a batch whose forward the job saw complete (a host
		 * sync after its last op), one whose token never arrived while
		 * the next stage ran its work again without it, and one whose
		 * sparse stage began without its token (that read of the copy was
		 * unordered, whatever came after). Anything else was cut short. */
		if (fin && !b->fwd_started && !b->watch[k].repeat && restarted_elsewhere(p, b))
			b->watch[k].repeat = true;
		/* or began it ordered on the null stream (implicit_restart):
		 * before, such a batch was skipped target_exited (random
		 * program 20754, a model whose backward launches forward's
		 * first kernel: the joins moved compute's windows) */
		if (fin && !b->fwd_started && !b->watch[k].repeat &&
		    k == NL_CONSUMER_COMPUTE && implicit_restart(p, b))
			b->watch[k].repeat = true;
		if (fin && !b->fwd_started && !b->watch[k].repeat &&
		    k == NL_CONSUMER_SPARSE && restarted_unstaged(p, b))
			b->watch[k].repeat = true;
		if (fin && k == NL_CONSUMER_SPARSE && !b->watch[k].repeat && own &&
		    b->token + 1 == nl_pipe_of_token(p, b->token)->next_token &&
		    (from = stage_shared(p, own, b, &(uint64_t){ UINT64_MAX })) != 0)
			take_shared(e, p, own, b, from, UINT64_MAX);
		if (!(fin && b->fwd_started && b->st[NL_STAGE_FORWARD].c.done_by_ns) &&
		    !(fin && !b->fwd_started && b->watch[k].repeat) &&
		    !(fin && k == NL_CONSUMER_SPARSE &&
		      (b->st[NL_STAGE_SPARSE].work || unclaimed_sparse_work(p, b))))
			b->skip |= NL_SKIP_BIT(!exited		      ? NL_SKIP_DETACHED
					       : fin && never_consumed(p, b) ? NL_SKIP_NOT_CONSUMED
									     : NL_SKIP_TARGET_EXITED);
		close_batch(e, p, b, ts);
	}
	for (int i = 0; i < p->npipes; i++)
		while (p->pipes[i].oldest < p->pipes[i].next_token)
			emit_oldest(e, p, &p->pipes[i]);
}

/* ---- evidence ------------------------------------------------------------------ */

void nl_evidence_done(struct nl_proc *p, const uint32_t *vc, int only_slot, uint64_t ts_limit,
		      uint64_t at, uint16_t api)
{
	struct nl_batch *b;

	NL_FOR_BATCHES(p, b)
		for (int st = 0; st < NL_NSTAGES; st++) {
			struct nl_completion *c = &b->st[st].c;
			bool ok = true;

			if (!nl_stage_has(b, st, false) || c->done_by_ns)
				continue;
			for (int i = 0; i < b->nbs && ok; i++) {
				const struct nl_batch_stream *bs = &b->bs[i];

				if (bs->stage != st || !bs->has_work)
					continue;
				ok = (only_slot < 0 || bs->slot == only_slot) &&
				     bs->last_work.ts <= ts_limit &&
				     (!vc || bs->last_work.clock <= vc[bs->slot]);
			}
			if (ok) {
				c->done_by_ns = at;
				c->done_api = api;
			}
		}
}

void nl_evidence_not_done(struct nl_proc *p, int slot, uint32_t gate, uint64_t at)
{
	struct nl_batch *b;

	/* Ops on a stream complete in order and a record completes with what
	 * precedes it: an unfinished record proves unfinished the last work
	 * or wait before it, and everything after that. */
	NL_FOR_BATCHES(p, b)
		for (int i = 0; i < b->nbs; i++) {
			const struct nl_batch_stream *bs = &b->bs[i];
			struct nl_completion *c = &b->st[bs->stage].c;

			if (bs->slot != slot || !bs->has_work || c->done_by_ns)
				continue;
			if (bs->last_work.clock >= gate && at > c->not_done_at_ns)
				c->not_done_at_ns = at;
		}
}

void nl_evidence_ms(struct nl_proc *p, const struct nl_event *start, const struct nl_event *stop,
		    double ms)
{
	struct nl_batch *b;
	int st;

	if (start->token == NL_NO_TOKEN || start->token != stop->token || start->slot < 0 ||
	    stop->slot < 0)
		return;
	st = nl_stage_of_role(p->s[start->slot].role);
	if (st < 0 || st != nl_stage_of_role(p->s[stop->slot].role))
		return;
	b = nl_batch_of(p, start->token);
	if (!b)
		return;
	b->st[st].c.gpu_ms += ms;
	b->st[st].c.gpu_ms_n++;
}

static void emit_oldest(struct nl_engine *e, struct nl_proc *p, struct nl_pipe *q)
{
	struct nl_batch *b = nl_batch_of(p, q->oldest);
	struct nl_batch_audit a;
	uint64_t k;

	q->oldest++;
	if (!b)
		return;
	nl_build_audit(e, p, b, &a);
	b->used = false;
	k = copies_of(p, b);
	if (k != q->even_copies) {
		q->copies_uneven |= q->even_copies != 0;
		q->even_copies = k;
	}
	e->sum.batches++;
	if (a.verdict == NL_VERDICT_TRUSTED)
		e->sum.trusted++;
	else if (a.verdict == NL_VERDICT_UNTRUSTED)
		e->sum.untrusted++;
	else
		e->sum.skipped++;
	if (a.verdict == NL_VERDICT_SKIPPED && a.skip_mask == NL_SKIP_BIT(NL_SKIP_NOT_CONSUMED))
		e->sum.unconsumed++;
	for (int r = 0; r < NL_NSKIP; r++)
		if (a.skip_mask & NL_SKIP_BIT(r))
			e->sum.skip_reasons[r]++;
	for (int k = 0; k < NL_NEDGES; k++)
		if (a.missing_mask & (1u << k))
			e->sum.missing_edges[k]++;
	if (a.depth >= 0) {
		int d = a.depth < NL_DEPTH_MAX ? a.depth : NL_DEPTH_MAX - 1;

		p->depth_hist[d]++;
		e->depth_hist[d]++;
	}
	p->batches++;
	if (e->sink.batch)
		e->sink.batch(e->sink.ctx, &a);
}
