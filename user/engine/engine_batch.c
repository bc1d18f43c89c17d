// SPDX-License-Identifier: MIT
/*
 * Batches: tokens minted on the copy stream, the ops each batch collects per
 * stage, its upstream frontier and hand-offs, completion evidence, and
 * emission once the batch is final (its verdict: engine_verdict.c).
 */
#include <stdlib.h>

#include "base/util.h"
#include "engine/engine_int.h"

#define SKIP(r) (1u << (r))

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

/* The batches in flight of one pipeline, and of all of them. */
#define FOR_PIPE_BATCHES(p, q, b)                                           \
	for (int64_t t_ = (q)->oldest; t_ < (q)->next_token; t_++)          \
		if (((b) = nl_batch_of((p), t_)) != NULL)

#define FOR_BATCHES(p, b)                                                   \
	for (int q_ = 0; q_ < (p)->npipes; q_++)                            \
		FOR_PIPE_BATCHES(p, &(p)->pipes[q_], b)

static int stage_of_role(int role)
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
		b->skip |= SKIP(reason);
}

void nl_skip_open(struct nl_proc *p, int reason)
{
	struct nl_batch *b;

	FOR_BATCHES(p, b)
		b->skip |= SKIP(reason);
}

void nl_batches_lose_slot(struct nl_proc *p, int slot)
{
	struct nl_batch *b;

	FOR_BATCHES(p, b)
		for (int i = 0; i < b->nbs; i++)
			if (b->bs[i].slot == slot)
				b->skip |= SKIP(NL_SKIP_EVICTED);
}

void nl_apply_lost(struct nl_engine *e, struct nl_proc *p, uint64_t w0, uint64_t ts)
{
	struct nl_batch *b;

	(void)e;
	FOR_BATCHES(p, b) {
		uint64_t end = b->closed ? b->close_ts : UINT64_MAX;

		if (b->first_ts <= ts && end >= w0)
			b->skip |= SKIP(NL_SKIP_LOST_RECORDS);
	}
	/* Records produced before ts may still be in the ring: batches they
	 * start are hit too. */
	if (ts > p->loss_until)
		p->loss_until = ts;
}

/* ---- lifecycle -------------------------------------------------------------- */

/* Completion is about work: a stage without kernels, copies or
 * collectives has nothing to complete. */
static bool stage_has_work(const struct nl_batch *b, int st)
{
	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].stage == st && b->bs[i].has_work)
			return true;
	return false;
}

static bool all_done(const struct nl_batch *b)
{
	for (int st = 0; st < NL_NSTAGES; st++)
		if (stage_has_work(b, st) && !b->st[st].c.done_by_ns)
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

		p->fwd_hist[i].token = b->token;
		p->fwd_hist[i].start = b->st[NL_STAGE_FORWARD].first_ts;
		p->fwd_hist[i].end = ts;
	}
	b->post_confirmed = true;
	for (int st = 0; st < NL_NSTAGES; st++) {
		const struct nl_completion *c = &b->st[st].c;

		if (!stage_has_work(b, st))
			continue;
		if (!c->done_by_ns)
			b->post_confirmed = false;
		else if (c->done_by_ns > b->post_at)
			b->post_at = c->done_by_ns;
	}
}

static void emit_oldest(struct nl_engine *e, struct nl_proc *p, struct nl_pipe *q);

void nl_mint(struct nl_engine *e, struct nl_proc *p, struct nl_stream *s, uint64_t ts)
{
	struct nl_pipe *q = nl_pipe_of_stream(p, s);
	int64_t tok;
	struct nl_batch *b;
	uint32_t *vc;

	if (!q)
		return;
	tok = q->next_token;
	/* The cap: the oldest batch goes out, skipped when it was not final. */
	while (tok - q->oldest >= (int64_t)p->bcap) {
		b = nl_batch_of(p, q->oldest);
		if (b && !b->closed) {
			b->skip |= SKIP(NL_SKIP_EVICTED);
			p->evicted_batches++;
			close_batch(e, p, b, ts);
		}
		emit_oldest(e, p, q);
	}
	b = &q->b[nl_tok_seq(tok) % p->bcap];
	vc = b->fwd_vc;
	memset(b, 0, sizeof(*b));
	b->fwd_vc = vc;
	b->used = true;
	b->token = tok;
	b->skip = p->skip_all | e->skip_all_new;
	b->first_ts = ts;
	b->copy_tick = q->ticks;
	b->fwd_tick = -1;
	b->linger_until = INT64_MAX;
	/* Attached in the middle of a run: the first segment may have begun
	 * before we looked, unless a record on the copy stream, or its
	 * creation, came first. */
	if (p->mid_run && !q->seen_copy_record && !s->creation_seen)
		b->skip |= SKIP(NL_SKIP_ATTACHED_MID_BATCH);
	if ((p->loss_until && ts <= p->loss_until) || (e->loss_until && ts <= e->loss_until))
		b->skip |= SKIP(NL_SKIP_LOST_RECORDS);
	q->next_token++;
	s->token = tok;
	s->seg_open = true;
	s->seg_work = 0;
}

void nl_compute_advance(struct nl_engine *e, struct nl_proc *p, int64_t to, uint64_t ts)
{
	struct nl_pipe *q = nl_pipe_of_token(p, to);
	struct nl_batch *b;

	if (!q || to <= q->fwd_max)
		return;
	q->fwd_max = to;
	/* Ticks count forward windows, including tokens that never got one. */
	if (nl_tok_seq(to) + 1 > q->ticks)
		q->ticks = nl_tok_seq(to) + 1;
	if (!p->nfwd)
		p->first_fwd_ts = ts;
	p->last_fwd_ts = ts;
	p->nfwd++;
	/* Only this pipeline's: another one's batches wait for their own. */
	FOR_PIPE_BATCHES(p, q, b)
		if (b->token < to && !b->closed)
			close_batch(e, p, b, ts);
	nl_emit_ready(e, p);
}

void nl_emit_ready(struct nl_engine *e, struct nl_proc *p)
{
	for (int i = 0; i < p->npipes; i++) {
		struct nl_pipe *q = &p->pipes[i];

		while (q->oldest < q->next_token) {
			struct nl_batch *b = nl_batch_of(p, q->oldest);

			if (b && (!b->closed || (q->ticks < b->linger_until && !all_done(b))))
				break;
			emit_oldest(e, p, q);
		}
	}
}

void nl_drain(struct nl_engine *e, struct nl_proc *p, uint64_t ts, bool exited)
{
	struct nl_batch *b;

	FOR_BATCHES(p, b) {
		int k = nl_pipe_of_token(p, b->token)->has_sparse && !b->reached_sparse ?
				NL_CONSUMER_SPARSE : NL_CONSUMER_COMPUTE;

		if (b->closed)
			continue;
		/* Final at exit: a batch whose forward the job saw complete (a host
		 * sync after its last op), and one whose token never arrived while
		 * the next stage ran its work again without it. Anything else was
		 * cut short. */
		if (!(exited && b->fwd_started && b->st[NL_STAGE_FORWARD].c.done_by_ns) &&
		    !(exited && !b->fwd_started && b->watch[k].repeat))
			b->skip |= SKIP(exited ? NL_SKIP_TARGET_EXITED : NL_SKIP_DETACHED);
		close_batch(e, p, b, ts);
	}
	for (int i = 0; i < p->npipes; i++)
		while (p->pipes[i].oldest < p->pipes[i].next_token)
			emit_oldest(e, p, &p->pipes[i]);
}

/* ---- accounting --------------------------------------------------------------- */

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

static bool stage_has_up(const struct nl_batch *b, int st)
{
	for (int i = 0; i < b->nbs; i++)
		if (b->bs[i].stage == st && b->bs[i].has_up)
			return true;
	return false;
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

/* For batches whose token has not reached this consumer role: the first
 * work op there, after the producers' last op, that is not ordered after it
 * (reported if the token never arrives), and whether such ops restart the
 * stage inside an older token's window (docs/engine.md, "end of a run"). */
static void watch_consumers(struct nl_proc *p, const struct nl_stream *s,
			    const struct nl_seen_op *op, int st, int64_t token)
{
	int k = st == NL_STAGE_SPARSE ? NL_CONSUMER_SPARSE : NL_CONSUMER_COMPUTE;
	const struct nl_batch *own = nl_batch_of(p, token);
	const struct nl_stage_acc *w = own ? &own->st[st] : NULL;
	bool can = w && w->work >= 2 && op->tid == w->first_tid;
	/* a consumer's op speaks of its own pipeline's batches only */
	int only = token >= 0 ? nl_tok_pipe(token) : s->pipe;
	bool marked = false; /* one restart is one batch's: the oldest waiting */
	struct nl_batch *b;

	FOR_BATCHES(p, b) {
		bool unordered = false;

		if (only >= 0 && nl_tok_pipe(b->token) != only) {
			b->watch[k].blind = true;
			continue;
		}
		if (b->closed || !b->watch[k].armed || b->watch[k].repeat ||
		    (k == NL_CONSUMER_SPARSE ? b->reached_sparse : b->fwd_started))
			continue;
		for (int i = 0; i < b->nbs && !unordered; i++) {
			const struct nl_batch_stream *bs = &b->bs[i];

			if (bs->stage == NL_STAGE_FORWARD || !bs->has_up ||
			    (k == NL_CONSUMER_SPARSE && bs->stage != NL_STAGE_COPY) ||
			    (k == NL_CONSUMER_COMPUTE && bs->covered))
				continue;
			if (s->vc[bs->slot] < bs->last_up.clock) {
				unordered = true;
				if (!b->watch[k].valid) {
					b->watch[k].valid = true;
					b->watch[k].consumer = *op;
					b->watch[k].producer = bs->last_up;
				}
			}
		}
		if (!unordered || !can)
			continue;
		if (marked) {
			b->watch[k].prog = 0;
			continue;
		}
		if (b->watch[k].prog_token != token)
			b->watch[k].prog = 0;
		b->watch[k].prog_token = token;
		if (op->sig == w->first_sig[b->watch[k].prog]) {
			if (b->watch[k].prog++ == 0)
				b->watch[k].restart = *op;
		} else {
			b->watch[k].prog = op->sig == w->first_sig[0];
			if (b->watch[k].prog)
				b->watch[k].restart = *op;
		}
		if (b->watch[k].prog == 2) {
			/* a batch cut from a merged copy segment lost its record
			 * with its wait: it does not stand for the restart */
			b->watch[k].repeat = true;
			marked = !b->merged;
			b->watch[k].consumer = b->watch[k].restart;
		}
	}
}

static void forward_op(struct nl_proc *p, struct nl_batch *b, const struct nl_stream *s,
		       const struct nl_seen_op *op, bool work)
{
	if (!b->fwd_started) {
		b->fwd_started = true;
		b->fwd_first_clock = op->clock;
		b->fwd_tick = nl_pipe_of_token(p, b->token)->ticks;
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
		if (!b->handoff[k].found && stage_has_up(b, k) && stage_up_covered(b, k, s->vc)) {
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
	cw->armed = true;
	cw->armed_ts = p->call_ts;
	cw->valid = cw->repeat = cw->blind = false;
	cw->prog = 0;
}

/* A forward window's first two kernels: the pipeline's step signature
 * while every window began with them. */
static void note_step(struct nl_pipe *q, const struct nl_stage_acc *acc)
{
	if (!q || !acc->first_named[0] || !acc->first_named[1])
		return;
	if (q->step_n && q->step_sig[0] == acc->first_sig[0] && q->step_sig[1] == acc->first_sig[1]) {
		q->step_n++;
		return;
	}
	q->step_varied |= q->step_n > 0;
	q->step_sig[0] = acc->first_sig[0];
	q->step_sig[1] = acc->first_sig[1];
	q->step_n = 1;
}

void nl_account(struct nl_engine *e, struct nl_proc *p, int slot, const struct nl_call *c,
		uint32_t clock, int64_t token, bool work, bool is_coll)
{
	struct nl_stream *s = &p->s[slot];
	int st = stage_of_role(s->role);
	struct nl_seen_op op = {
		true, slot, clock, c->api, c->tid, c->ts_ns,
		(uint64_t)c->api << 48 ^ ((c->fields & NL_F_FN) ? c->fn : c->kindarg)
	};
	struct nl_stage_acc *acc;
	struct nl_batch_stream *bs;
	struct nl_batch *b;

	(void)e;
	s->ops++;
	if (st < 0)
		return;
	if (work && st != NL_STAGE_COPY)
		watch_consumers(p, s, &op, st, token);
	b = nl_batch_of(p, token);
	if (!b || b->closed) {
		if (token >= 0)
			p->late_ops++;
		return;
	}
	acc = &b->st[st];
	if (!acc->ops || c->ts_ns < acc->first_ts)
		acc->first_ts = c->ts_ns;
	if (c->ts_ns > acc->last_ts)
		acc->last_ts = c->ts_ns;
	acc->ops++;
	if (work && acc->work < 2) {
		if (!acc->work)
			acc->first_tid = c->tid;
		acc->first_sig[acc->work] = op.sig;
		acc->first_named[acc->work] = c->kind != NL_K_LAUNCH || (c->fields & NL_F_FN);
	}
	if (work && ++acc->work == 2 && st == NL_STAGE_FORWARD)
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
		b->skip |= SKIP(NL_SKIP_EVICTED); /* more streams than a batch tracks */
		return;
	}
	bs->ops++;
	if (clock > bs->last_clock)
		bs->last_clock = clock;
	if (c->ts_ns > bs->last_ts)
		bs->last_ts = c->ts_ns;
	if (!bs->first_op.valid)
		bs->first_op = op;
	if (work && (!bs->has_work || clock >= bs->last_work.clock)) {
		bs->has_work = true;
		bs->last_work = op;
	}
	if (st == NL_STAGE_FORWARD)
		forward_op(p, b, s, &op, work);
	else
		producer_op(p, b, s, bs, &op, st, work);
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
		}
		if (bs->last_clock > cut)
			bs->last_clock = cut;
		bs->ops = bs->ops > moved ? bs->ops - moved : 0;
		acc = &b->st[bs->stage];
		acc->ops = acc->ops > moved ? acc->ops - moved : 0;
	}
}

/* ---- evidence ------------------------------------------------------------------ */

void nl_evidence_done(struct nl_proc *p, const uint32_t *vc, int only_slot, uint64_t ts_limit,
		      uint64_t at, uint16_t api)
{
	struct nl_batch *b;

	FOR_BATCHES(p, b)
		for (int st = 0; st < NL_NSTAGES; st++) {
			struct nl_completion *c = &b->st[st].c;
			bool ok = true;

			if (!stage_has_work(b, st) || c->done_by_ns)
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
	FOR_BATCHES(p, b)
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
	st = stage_of_role(p->s[start->slot].role);
	if (st < 0 || st != stage_of_role(p->s[stop->slot].role))
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

	q->oldest++;
	if (!b)
		return;
	nl_build_audit(e, p, b, &a);
	b->used = false;
	e->sum.batches++;
	if (a.verdict == NL_VERDICT_TRUSTED)
		e->sum.trusted++;
	else if (a.verdict == NL_VERDICT_UNTRUSTED)
		e->sum.untrusted++;
	else
		e->sum.skipped++;
	for (int r = 0; r < NL_NSKIP; r++)
		if (a.skip_mask & SKIP(r))
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
