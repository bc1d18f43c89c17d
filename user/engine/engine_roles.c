// SPDX-License-Identifier: MIT
/*
 * Role learning. A process's first records are held back while the engine
 * counts, per stream, launches, host-to-device copies and which streams wait
 * on whose events. Then:
 *   compute = the stream with the most kernel launches per take (a wait
 *             on another stream after work of its own), the null and the
 *             per-thread default streams' counting four times (PyTorch's
 *             default), among those within two wait edges of a producer,
 *             not counting a side stream (forked from one stream and
 *             joined back to it only);
 *   copy    = a stream other than compute with host-to-device copies whose
 *             events other streams wait on, that launched fewer kernels
 *             than it copied to the device; most copy-like first (share of
 *             H2D copies in its work), then fewest incoming edges, then most
 *             copies;
 *   sparse  = the streams reachable from copy through wait edges without
 *             passing through compute (data-dist, collective streams);
 *   more copy streams of the same pipeline: other streams with host-to-device
 *             copies whose events compute or those sparse streams wait on,
 *             fed by none of them (batch i copied on M[i % 2]).
 * Overrides from the options replace any of these. The held-back records are
 * then replayed with the roles known, so no batch is judged on a guess.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine/engine_int.h"

int nl_learn_init(struct nl_learn *l, uint32_t nstreams, uint32_t nevents)
{
	memset(l, 0, sizeof(*l));
	l->scap = nstreams;
	l->last_copier = -1;
	l->ecap = nl_pow2_at_least(2 * nevents);
	l->s = calloc(nstreams, sizeof(*l->s));
	l->eh = calloc(l->ecap, sizeof(*l->eh));
	l->es = calloc(l->ecap, sizeof(*l->es));
	if (!l->s || !l->eh || !l->es) {
		nl_learn_free(l);
		return -ENOMEM;
	}
	return 0;
}

void nl_learn_free(struct nl_learn *l)
{
	free(l->s);
	free(l->eh);
	free(l->es);
	memset(l, 0, sizeof(*l));
}

/* The stream of key k as learning counts it: the one created last on its
 * handle (struct nl_hgen). */
static int lslot(struct nl_learn *l, const struct nl_skey *k)
{
	uint32_t gen = nl_hgen_get(&l->hgen, k->handle);

	for (uint32_t i = 0; i < l->ns; i++)
		if (nl_skey_eq(&l->s[i].key, k) && l->s[i].gen == gen)
			return (int)i;
	if (l->ns == l->scap)
		return -1;
	l->s[l->ns].used = true;
	l->s[l->ns].key = *k;
	l->s[l->ns].gen = gen;
	return (int)l->ns++;
}

static int find_key(const struct nl_learn *l, const struct nl_skey *k)
{
	for (uint32_t i = 0; i < l->ns; i++)
		if (nl_skey_eq(&l->s[i].key, k))
			return (int)i;
	return -1;
}

/* Event handle -> its last record. */
static struct nl_lrec *emap(struct nl_learn *l, uint64_t handle, bool insert)
{
	uint32_t mask = l->ecap - 1;

	for (uint32_t i = nl_hash64(handle) & mask;; i = (i + 1) & mask) {
		if (l->eh[i] == handle + 1)
			return &l->es[i];
		if (l->eh[i] != 0)
			continue;
		if (!insert)
			return NULL;
		if (2 * (l->eused + 1) > l->ecap) {
			/* Full: forget (learning only loses some edges). */
			memset(l->eh, 0, l->ecap * sizeof(*l->eh));
			l->eused = 0;
			i = nl_hash64(handle) & mask;
		}
		l->eh[i] = handle + 1;
		l->es[i] = (struct nl_lrec){ .slot = -1 };
		l->eused++;
		return &l->es[i];
	}
}

static void note_record(struct nl_learn *l, uint64_t event, int slot)
{
	struct nl_lrec *r = emap(l, event, true);

	if (!r)
		return;
	if (slot < 0) { /* created: a new event */
		*r = (struct nl_lrec){ .slot = -1 };
		return;
	}
	r->slot = slot;
	r->h2d = l->s[slot].h2d;
	r->runs = l->s[slot].runs;
	if (slot < 64) {
		r->recorders |= 1ull << slot;
		l->s[slot].shares |= r->waited_from;
	}
}

struct picks {
	int copy, compute;
	/* more: copy streams besides copy */
	uint64_t sparse[NL_LEARN_EDGE_WORDS], more[NL_LEARN_EDGE_WORDS];
};

static int popcount_edges(const uint64_t *bits)
{
	int n = 0;

	for (int i = 0; i < NL_LEARN_EDGE_WORDS; i++)
		n += __builtin_popcountll(bits[i]);
	return n;
}

static bool bit(const uint64_t *bits, int i)
{
	return bits[i / 64] >> (i % 64) & 1;
}

static void set_bit(uint64_t *bits, int i)
{
	bits[i / 64] |= 1ull << (i % 64);
}

/* Whether a and b share a stream. */
static bool meets(const uint64_t *a, const uint64_t *b)
{
	for (int i = 0; i < NL_LEARN_EDGE_WORDS; i++)
		if (a[i] & b[i])
			return true;
	return false;
}

/* a is a better copy-stream candidate than b */
static bool copy_better(const struct nl_lstream *a, const struct nl_lstream *b)
{
	uint64_t fa = a->h2d * (b->work ? b->work : 1), fb = b->h2d * (a->work ? a->work : 1);
	int ia = popcount_edges(a->in), ib = popcount_edges(b->in);

	if (fa != fb)
		return fa > fb;
	if (ia != ib)
		return ia < ib;
	return a->h2d > b->h2d;
}

/* A stream learning saw copy more to the device than it launched. */
static bool copy_like(const struct nl_lstream *s)
{
	return s->h2d && s->launches < s->h2d;
}

/* Launches per take: a deep pipeline's data-dist stream ran the sparse
 * stage of several batches, and took each from the copy stream and again
 * from the collective's end, before compute's first forwards. PyTorch
 * computes on the null stream unless told otherwise: its launches weigh
 * more, so a short look (a few data-dist kernels before the first
 * forward) does not mistake the data-dist stream for compute. (x64: the
 * share in integers.) */
static uint64_t compute_score(const struct nl_lstream *s)
{
	bool dflt = nl_key_is_null(&s->key) || (s->key.handle == 2 && s->key.tid);

	return s->launches * (dflt ? 4 : 1) * 64 / (s->takes ? s->takes : 1);
}

/* Streams within two wait edges of a producer (a stream with H2D copies
 * whose events are waited on): where compute reads a batch, directly from
 * the copy stream or through its data-dist stream. Backward on another
 * thread's stream, fed by compute only, lies further. Empty: no producer
 * known yet. The second edge may leave any stream on the first one's
 * handle (another generation, struct nl_hgen): attached mid-run, the last
 * evaluation turn's data-dist stream, its compute wait dropped with its
 * record, fed nothing, and it was the only stream near its copy stream:
 * it was taken for compute (random program 91621), where the turns
 * before on its handle fed compute. */
static bool near_producer(const struct nl_learn *l, uint64_t *near)
{
	uint64_t d1[NL_LEARN_EDGE_WORDS] = { 0 };
	bool any = false;

	memset(near, 0, NL_LEARN_EDGE_WORDS * sizeof(*near));
	for (uint32_t i = 0; i < l->ns; i++)
		if (l->s[i].h2d && l->s[i].waited) {
			any = true;
			for (int w = 0; w < NL_LEARN_EDGE_WORDS; w++)
				d1[w] |= l->s[i].out[w];
		}
	for (uint32_t j = 0; j < l->ns; j++)
		if (d1[j / 64] >> (j % 64) & 1)
			for (uint32_t k = 0; k < l->ns; k++)
				if (nl_skey_eq(&l->s[k].key, &l->s[j].key))
					for (int w = 0; w < NL_LEARN_EDGE_WORDS; w++)
						near[w] |= l->s[k].out[w] | d1[w];
	return any;
}

/* Stream x forks from one stream and joins back to it only: all it waits
 * on is y's, and only y waits on it. That is y's side stream (backward on
 * another thread's stream, fed by compute; a collective stream, fed by
 * data-dist), not compute, though it may launch as much: where compute
 * waits on the copy stream directly, the side stream lies within two edges
 * of the producer too. */
static bool side_stream(const struct nl_learn *l, int x)
{
	const struct nl_lstream *s = &l->s[x];
	int y = -1;

	if (popcount_edges(s->in) != 1 || memcmp(s->in, s->out, sizeof(s->in)))
		return false;
	for (int i = 0; i < (int)l->ns; i++)
		if (bit(s->in, i))
			y = i;
	return y >= 0 && !(l->s[y].h2d && l->s[y].waited);
}

/* Stream b's copies come in turn with another copying stream's (batch i on
 * M[i % 2]), one batch per run of copies, not several batches in a run of
 * their own: an evaluation pipeline's copy stream, feeding compute while
 * the training one pauses, is a pipeline of its own, found by its edges.
 * Runs are counted against hand-offs, not waits on alternating streams: a
 * loader ahead that re-records one event on both streams makes compute
 * wait on the same stream twice in a row, and runs do not depend on which
 * record a wait found. A run the waited record does not cover is not
 * counted (its batch is not handed off yet), and neither are its copies:
 * with the loader a batch ahead, the wait on batch 1's record on M[1]
 * came after batch 3's copy there, and the wait on batch 3's record was
 * then no new hand-off. One hand-off is enough when the record it waited
 * on covers two runs: in a short run with one event re-recorded on both
 * streams, or one hand-off dropped, M[1] is waited on once, and its runs
 * in turn with M[0]'s already show the alternation. So is one hand-off of
 * a stream that has copied in two runs in turn by then, whether or not the
 * record covered the second (its second hand-off dropped in a short run). */
static bool alternates(const struct nl_learn *l, int b, bool sparse)
{
	const struct nl_lstream *s = &l->s[b];

	/* Where the pipeline has a sparse stage, the candidate already feeds
	 * its sparse streams: a hand-off is a wait on new copies (the
	 * data-dist stream's and compute's waits on the same copies are one).
	 * Without one, every wait is a hand-off: a loader a batch ahead has
	 * compute wait twice on copies made in one run. */
	uint64_t handoffs = sparse ? s->turns : s->waited;

	return (handoffs >= 2 || s->run_at >= 2 || (handoffs && s->runs >= 2)) &&
	       s->run_at * 4 >= handoffs * 3;
}

/* Stream b copied in at least two runs in turn with copy stream a's (one of
 * the first 64), no more than one run fewer than a. */
static bool runs_in_turn(const struct nl_learn *l, int b, int a)
{
	return a >= 0 && a < 64 && l->s[b].runs >= 2 && l->s[a].runs <= l->s[b].runs + 1;
}

/* Stream b copied in at least two runs in turn with copy stream a's (no
 * more than one run fewer) and recorded the event a's waited records were
 * of. Waits on it do not count then: with one event reused for both, they
 * find its records over or again (a stale record waited on once per step
 * after the last copy). */
static bool in_turn_sharing(const struct nl_learn *l, int b, int a)
{
	return runs_in_turn(l, b, a) && (l->s[b].shares >> a & 1);
}

/* Stream b, never waited on, copied in at least two runs in turn with copy
 * stream a's, one run apart at most, and a hands off one batch a run:
 * batch i copied on M[i % 2], every wait on one of the two dropped (with
 * its record or not, fresh events or one per stream). Its batches are the
 * pipeline's, each never reached by a consumer. Before, the stream had no
 * role: its batches went unaudited, their faults unnamed, and with a
 * sparse stage the data-dist stream's work for them was charged to the
 * other stream's batches, a healthy one accused (random programs 3409,
 * 710). An evaluation pipeline whose every take was dropped copies a
 * whole turn in one run, and the training stream hands off many batches
 * in each of its runs. A stream outside the pipeline that copies to the
 * device in turn with the copy stream, one run each, and is never waited
 * on is taken for such a stream too: its copies are then accused as
 * batches nothing consumed, where before they made the run's evidence
 * invalid (unplaced_streams) without an accusation. */
static bool unwaited_in_turn(const struct nl_learn *l, int b, int a)
{
	return runs_in_turn(l, b, a) && l->s[b].runs <= l->s[a].runs + 1 &&
	       l->s[a].max_run_turns <= 1;
}

/* A stream near the producer that compute candidate x feeds, that does
 * not feed x back, and launches about as much per take as x (`best`): it
 * is downstream of x, and x a data-dist stream whose input_dist launches
 * as many kernels as forward, one of its waits dropped (a take fewer).
 * -1: none. */
static int downstream(const struct nl_learn *l, int x, const uint64_t *near, uint64_t best)
{
	for (uint32_t i = 0; i < l->ns; i++)
		if ((int)i != x && bit(near, (int)i) && !side_stream(l, (int)i) &&
		    bit(l->s[x].out, (int)i) && !bit(l->s[i].out, x) &&
		    compute_score(&l->s[i]) * 4 >= best * 3)
			return (int)i;
	return -1;
}

/* Edge set `out` holds stream x at most. */
static bool only_to(const uint64_t *out, int x)
{
	for (int w = 0; w < NL_LEARN_EDGE_WORDS; w++)
		if (out[w] & ~(w == x / 64 ? 1ull << (x % 64) : 0))
			return false;
	return true;
}

static void pick(const struct nl_engine *e, const struct nl_learn *l, struct picks *pk)
{
	const struct nl_engine_opts *o = &e->o;
	struct nl_skey k;
	int queue[NL_MAX_STREAMS_CAP], qh = 0, qt = 0;

	memset(pk, 0, sizeof(*pk));
	pk->copy = pk->compute = -1;
	if (o->has_compute_stream) {
		k = nl_handle_skey(o->compute_stream);
		pk->compute = find_key(l, &k);
	} else {
		uint64_t best = 0, near[NL_LEARN_EDGE_WORDS];
		bool known = near_producer(l, near);

		for (uint32_t i = 0; i < l->ns; i++) {
			uint64_t score = compute_score(&l->s[i]);

			if (known && (!bit(near, (int)i) || side_stream(l, (int)i)))
				continue;
			if (score > best) {
				best = score;
				pk->compute = (int)i;
			}
		}
		for (uint32_t moves = 0; known && pk->compute >= 0 && moves < l->ns; moves++) {
			int d = downstream(l, pk->compute, near, best);

			if (d < 0)
				break;
			pk->compute = d;
			best = compute_score(&l->s[d]);
		}
	}
	if (o->has_copy_stream) {
		k = nl_handle_skey(o->copy_stream);
		pk->copy = find_key(l, &k);
	} else {
		for (uint32_t i = 0; i < l->ns; i++) {
			const struct nl_lstream *s = &l->s[i];

			/* not one that launched as many kernels as it copied
			 * to the device, or more: a data-dist stream copying
			 * its splits (attached after the copy stream's last
			 * copy, the only stream left copying) */
			if ((int)i == pk->compute || !copy_like(s) || !s->waited)
				continue;
			if (pk->copy < 0 || copy_better(s, &l->s[pk->copy]))
				pk->copy = (int)i;
		}
	}
	if (o->has_sparse_streams || pk->copy < 0)
		return;
	queue[qt++] = pk->copy;
	while (qh < qt) {
		int x = queue[qh++];

		for (uint32_t j = 0; j < l->ns; j++) {
			if ((int)j == pk->copy || (int)j == pk->compute || !bit(l->s[x].out, (int)j) ||
			    bit(pk->sparse, (int)j))
				continue;
			set_bit(pk->sparse, (int)j);
			queue[qt++] = (int)j;
		}
	}
	if (o->has_copy_stream)
		return;
	/* More copy streams: they feed what the first copy stream feeds (its
	 * sparse streams, or compute where there are none) and take nothing
	 * from the pipeline; their own sparse streams join it. Or they share
	 * its hand-off event (below). */
	for (uint32_t i = 0; i < l->ns; i++) {
		const struct nl_lstream *s = &l->s[i];
		uint64_t feeds[NL_LEARN_EDGE_WORDS], from[NL_LEARN_EDGE_WORDS];

		if ((int)i == pk->compute || (int)i == pk->copy || bit(pk->sparse, (int)i) ||
		    !s->h2d)
			continue;
		/* never waited on, but it recorded the event whose records of
		 * the copy stream were waited on, its copies in runs in turn
		 * with that stream's: one reused event for both, each of its
		 * records recorded over or its wait dropped */
		if (!s->waited) {
			if (in_turn_sharing(l, (int)i, pk->copy) || unwaited_in_turn(l, (int)i, pk->copy))
				set_bit(pk->more, (int)i);
			continue;
		}
		memcpy(feeds, pk->sparse, sizeof(feeds));
		memcpy(from, pk->sparse, sizeof(from));
		set_bit(from, pk->copy);
		/* waited on by compute only, where the pipeline has a
		 * sparse stage, its copies in turn with the copy stream's,
		 * one run each (unwaited_in_turn): batch i on M[i % 2], the
		 * data-dist stream's every wait on this one dropped and
		 * compute's own wait on it kept (an added edge). Before, it
		 * was a pipeline of its own without a sparse stage: its
		 * batches accused copy->forward, not copy->sparse, and the
		 * other's accused sparse->forward (random program 101530) */
		if (pk->compute >= 0 && popcount_edges(pk->sparse) &&
		    !meets(s->out, feeds) && !meets(s->in, from) && only_to(s->out, pk->compute) &&
		    unwaited_in_turn(l, (int)i, pk->copy)) {
			set_bit(pk->more, (int)i);
			continue;
		}
		if (pk->compute >= 0 && !popcount_edges(pk->sparse))
			set_bit(feeds, pk->compute);
		/* (a copy stream may wait on compute before it copies: buffer
		 * reuse) */
		/* Copies in turn are the two streams' alike: the first copy
		 * stream, too, hands off one batch per run of its copies. An
		 * evaluation pipeline's stream whose first take was dropped
		 * has as many runs as hand-offs, but the training stream ran
		 * many batches before it in one run. Before, it joined the
		 * training pipeline: its batches were numbered among those,
		 * its fault missed and a healthy training batch accused
		 * (random program 87852). */
		if (!meets(s->out, feeds) || meets(s->in, from) || l->s[pk->copy].max_run_turns > 1 ||
		    (!alternates(l, (int)i, popcount_edges(pk->sparse) > 0) &&
		     !in_turn_sharing(l, (int)i, pk->copy)))
			continue;
		set_bit(pk->more, (int)i);
		for (uint32_t j = 0; j < l->ns; j++)
			if ((int)j != pk->compute && (int)j != pk->copy && bit(s->out, (int)j) &&
			    !bit(pk->more, (int)j))
				set_bit(pk->sparse, (int)j);
	}
}

/* A stream that copies more purely than the pick but whose events nobody
 * waited on yet: the copy stream of a loop whose first M->D wait is
 * missing, seen before its later waits arrive. Learning goes on for it (the
 * window's end still decides without it). */
static bool purer_unwaited(const struct nl_learn *l, const struct picks *pk)
{
	for (uint32_t i = 0; i < l->ns; i++) {
		const struct nl_lstream *s = &l->s[i];

		if ((int)i != pk->compute && (int)i != pk->copy && s->h2d && !s->waited &&
		    copy_better(s, &l->s[pk->copy]))
			return true;
	}
	return false;
}

static bool ready(const struct nl_engine *e, const struct nl_learn *l)
{
	struct picks pk;

	pick(e, l, &pk);
	return pk.copy >= 0 && l->s[pk.copy].waited >= e->o.learn_handoffs &&
	       (e->o.has_compute_stream || pk.compute >= 0) &&
	       (e->o.has_copy_stream || !purer_unwaited(l, &pk));
}

bool nl_learn_note(const struct nl_engine *e, struct nl_proc *p, const struct nl_call *c)
{
	struct nl_learn *l = &p->learn;
	struct nl_skey k;
	struct nl_lrec *r;
	int i, src;

	if (c->api == NL_LOST_MARK || ((c->fields & NL_F_RC) && c->rc != 0))
		return false;
	k = nl_call_skey(c);
	switch (c->kind) {
	case NL_K_STREAM_CREATE:
		if ((c->fields & NL_F_HANDLE) && p->mid_run)
			nl_hgen_bump(&l->hgen, c->handle);
		return false;
	case NL_K_EVENT_CREATE:
		if (c->fields & NL_F_HANDLE)
			note_record(l, c->handle, -1);
		return false;
	case NL_K_EVENT_RECORD:
		i = lslot(l, &k);
		if ((c->fields & NL_F_EVENT) && i >= 0)
			note_record(l, c->event, i);
		return false;
	case NL_K_LAUNCH:
	case NL_K_COPY:
	case NL_K_COPY_SYNC:
	case NL_K_MEMSET:
	case NL_K_GRAPH:
	case NL_K_COLL:
	case NL_K_P2P:
		i = lslot(l, &k);
		if (i < 0)
			return false;
		l->s[i].work++;
		if (c->kind == NL_K_LAUNCH && !c->coll_depth)
			l->s[i].launches++;
		if (nl_call_is_h2d(c)) {
			l->s[i].h2d++;
			l->s[i].runs += l->last_copier != i;
			l->last_copier = i;
		}
		if (c->kind == NL_K_LAUNCH && (c->fields & NL_F_EVENT) && c->event)
			note_record(l, c->event, i);
		if (c->kind == NL_K_LAUNCH && (c->fields & NL_F_EVENT2) && c->event2)
			note_record(l, c->event2, i);
		return false;
	case NL_K_STREAM_WAIT:
		if (!(c->fields & NL_F_EVENT))
			return false;
		i = lslot(l, &k);
		r = emap(l, c->event, false);
		src = r ? r->slot : -1;
		if (i < 0 || src < 0 || src == i)
			return false;
		if (!l->s[i].takes || l->s[i].work != l->s[i].take_work) {
			l->s[i].takes++;
			l->s[i].take_work = l->s[i].work;
		}
		l->s[src].out[i / 64] |= 1ull << (i % 64);
		l->s[i].in[src / 64] |= 1ull << (src % 64);
		l->s[src].waited++;
		if (src < 64 && !(r->waited_from >> src & 1)) {
			r->waited_from |= 1ull << src;
			for (int b = 0; b < 64 && b < (int)l->ns; b++)
				if (r->recorders >> b & 1)
					l->s[b].shares |= 1ull << src;
		}
		if (l->s[src].h2d) {
			/* what the record covers, not what the stream copied
			 * since (the loader ahead: the next batch's copies) */
			struct nl_lstream *x = &l->s[src];

			if (r->runs > x->run_at)
				x->run_at = r->runs;
			if (r->h2d > x->turn_h2d) {
				x->turns++;
				x->turn_h2d = r->h2d;
				x->run_turns = r->runs == x->turn_run ? x->run_turns + 1 : 1;
				x->turn_run = r->runs;
				if (x->run_turns > x->max_run_turns)
					x->max_run_turns = x->run_turns;
			}
		}
		return ready(e, l);
	default:
		return false;
	}
}

/* The generations of the streams on the handle of learned stream j (its
 * own, and each other one learning saw) that take its role: those as
 * copy-like as it is. Streams created again on a handle inside what
 * learning held back are each a stream: an evaluation turn's copy stream
 * created again on its handle copies again, but where an allocator hands
 * a turn's copy and data-dist streams out on each other's handles, the
 * data-dist stream on the copy stream's handle is no copy stream. */
static uint64_t gens_of(const struct nl_proc *p, uint32_t j)
{
	const struct nl_learn *l = &p->learn;
	uint64_t gens = 0;

	if (!p->mid_run)
		return NL_GENS_ALL;
	for (uint32_t i = 0; i < l->ns; i++)
		if (nl_skey_eq(&l->s[i].key, &l->s[j].key) && l->s[i].gen < 64 &&
		    (i == j || copy_like(&l->s[i]) == copy_like(&l->s[j])))
			gens |= 1ull << l->s[i].gen;
	return l->s[j].gen < 64 ? gens : NL_GENS_ALL;
}

bool nl_learn_decide(const struct nl_engine *e, struct nl_proc *p)
{
	const struct nl_engine_opts *o = &e->o;
	const struct nl_learn *l = &p->learn;
	struct picks pk;

	pick(e, l, &pk);
	p->has_copy = o->has_copy_stream || pk.copy >= 0;
	p->ncopy_keys = 0;
	if (o->has_copy_stream) {
		p->copy_gens[p->ncopy_keys] = NL_GENS_ALL;
		p->copy_keys[p->ncopy_keys++] = nl_handle_skey(o->copy_stream);
	} else if (pk.copy >= 0) {
		p->copy_gens[p->ncopy_keys] = gens_of(p, (uint32_t)pk.copy);
		p->copy_keys[p->ncopy_keys++] = l->s[pk.copy].key;
	}
	for (uint32_t j = 0; j < l->ns && p->ncopy_keys < NL_MAX_COPY_KEYS; j++)
		if (bit(pk.more, (int)j)) {
			p->copy_gens[p->ncopy_keys] = gens_of(p, j);
			p->copy_keys[p->ncopy_keys++] = l->s[j].key;
		}
	/* Without launches to go by, PyTorch's choice: the null stream. */
	p->has_compute = true;
	p->compute_gens = NL_GENS_ALL;
	if (o->has_compute_stream) {
		p->compute_key = nl_handle_skey(o->compute_stream);
	} else if (pk.compute >= 0) {
		p->compute_key = l->s[pk.compute].key;
		p->compute_gens = gens_of(p, (uint32_t)pk.compute);
	} else {
		p->compute_key = (struct nl_skey){ 0, 0 };
	}
	p->nsparse = 0;
	if (o->has_sparse_streams) {
		for (unsigned i = 0; i < o->nsparse && i < NL_ENGINE_MAX_SPARSE; i++) {
			p->sparse_gens[p->nsparse] = NL_GENS_ALL;
			p->sparse_keys[p->nsparse++] = nl_handle_skey(o->sparse_streams[i]);
		}
	} else {
		for (uint32_t j = 0; j < l->ns && p->nsparse < NL_ENGINE_MAX_SPARSE; j++)
			if (bit(pk.sparse, (int)j)) {
				p->sparse_gens[p->nsparse] = gens_of(p, j);
				p->sparse_keys[p->nsparse++] = l->s[j].key;
			}
	}
	p->has_sparse = p->nsparse > 0;
	p->pipes[0].has_sparse = p->has_sparse;
	nl_streams_refresh_roles(p);
	return p->has_copy;
}
