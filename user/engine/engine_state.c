// SPDX-License-Identifier: MIT
/*
 * Per-process state of the pairing engine: streams (one vector clock column
 * each), events (keyed by handle, with generations), threads, and the small
 * ring of recent ops per stream that reports name ops from. Every table is
 * allocated when the process is first seen and bounded by the caps.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine/engine_int.h"

/* A pipeline's batch table; token numbers start at pipe << NL_PIPE_SHIFT. */
static int pipe_init(struct nl_proc *p, int i)
{
	struct nl_pipe *q = &p->pipes[i];

	q->b = calloc(p->bcap, sizeof(*q->b));
	q->bvc = calloc((size_t)p->bcap * p->w * 3, sizeof(uint32_t));
	if (!q->b || !q->bvc) {
		free(q->b);
		free(q->bvc);
		q->b = NULL;
		q->bvc = NULL;
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < p->bcap; k++) {
		q->b[k].fwd_vc = q->bvc + (size_t)k * 3 * p->w;
		q->b[k].first_vc = q->b[k].fwd_vc + p->w;
		q->b[k].prev_vc = q->b[k].first_vc + p->w;
	}
	q->used = true;
	q->next_token = q->oldest = (int64_t)i << NL_PIPE_SHIFT;
	q->fwd_max = q->tick_max = NL_NO_TOKEN;
	if (i >= p->npipes)
		p->npipes = i + 1;
	return 0;
}

int nl_pipe_open(struct nl_proc *p, bool reuse)
{
	for (int i = 0; reuse && i < p->npipes; i++) {
		bool live = false;

		for (uint32_t k = 0; k < p->w && !live; k++)
			live = p->s[k].used && p->s[k].pipe == i && !p->s[k].destroyed &&
			       p->s[k].role == NL_ROLE_COPY;
		/* reused once its copy streams are gone, not before it had one
		 * (the learned pipeline's may not have been seen yet) */
		if (!live && p->pipes[i].had_copy)
			return i;
	}
	if (p->npipes == NL_ENGINE_MAX_PIPES || pipe_init(p, p->npipes))
		return -1;
	return p->npipes - 1;
}

struct nl_proc *nl_proc_new(const struct nl_engine *e, uint32_t pid)
{
	const struct nl_engine_opts *o = &e->o;
	struct nl_proc *p = calloc(1, sizeof(*p));
	uint32_t w = o->max_streams;

	if (!p)
		return NULL;
	p->pid = pid;
	p->w = w;
	p->ecap = o->max_events;
	p->hcap = nl_pow2_at_least(2 * p->ecap);
	p->bcap = o->max_batches_in_flight;
	p->s = calloc(w, sizeof(*p->s));
	/* each stream's clock, the clock it had when its work was last held
	 * (nl_stream_hold_vc), and at its first work op without a role
	 * (nl_stream_first_vc) */
	p->svc = calloc((size_t)3 * w * w, sizeof(uint32_t));
	p->ev = calloc(p->ecap, sizeof(*p->ev));
	p->evc = calloc((size_t)p->ecap * w, sizeof(uint32_t));
	p->eh = calloc(p->hcap, sizeof(uint32_t));
	p->efree = calloc(p->ecap, sizeof(uint32_t));
	p->tmp_vc = calloc(w, sizeof(uint32_t));
	if (!p->s || !p->svc || !p->ev || !p->evc || !p->eh || !p->efree || !p->tmp_vc ||
	    pipe_init(p, 0))
		goto fail;
	for (uint32_t i = 0; i < w; i++)
		p->s[i].vc = p->svc + (size_t)i * w;
	for (uint32_t i = 0; i < p->ecap; i++)
		p->ev[i].vc = p->evc + (size_t)i * w;
	p->compute_slot = p->null_slot = -1;
	p->cache_slot = -1;
	p->skip_all = e->skip_all_new;
	/* Roles are learned unless every one was given. */
	p->learning = !(o->has_copy_stream && o->has_compute_stream && o->has_sparse_streams);
	if (p->learning) {
		p->lbuf = calloc(o->learn_records, sizeof(*p->lbuf));
		if (!p->lbuf || nl_learn_init(&p->learn, w, o->max_events))
			goto fail;
	} else {
		nl_learn_decide(e, p);
	}
	return p;
fail:
	nl_proc_free(p);
	return NULL;
}

void nl_proc_free(struct nl_proc *p)
{
	if (!p)
		return;
	nl_learn_free(&p->learn);
	free(p->lbuf);
	free(p->s);
	free(p->svc);
	free(p->ev);
	free(p->evc);
	free(p->eh);
	free(p->efree);
	for (int i = 0; i < p->npipes; i++) {
		free(p->pipes[i].b);
		free(p->pipes[i].bvc);
	}
	free(p->tmp_vc);
	free(p);
}

/* ---- streams -------------------------------------------------------------- */

struct nl_skey nl_call_skey(const struct nl_call *c)
{
	uint64_t h = (c->fields & NL_F_STREAM) ? c->stream : 0;
	bool spt = c->api < NL_API_COUNT && (nl_api_info[c->api].flags & NL_AF_SPT);

	/* hipStreamPerThread, or 0 in an _spt twin: the calling thread's stream.
	 * In an _spt twin 0x1 (hipStreamLegacy) still names the legacy stream. */
	if (h == 2 || (spt && h == 0))
		return (struct nl_skey){ 2, c->tid };
	if (h == 1)
		h = 0;
	return (struct nl_skey){ h, 0 };
}

bool nl_key_is_null(const struct nl_skey *k)
{
	return k->handle == 0 && k->tid == 0;
}

static bool key_is_per_thread(const struct nl_skey *k)
{
	return k->handle == 2 && k->tid != 0;
}

/* The role of the stream of key k and generation gen (struct nl_hgen): a
 * stream created on the handle of one learning saw in a role, inside what
 * it held back, takes the role only where it acted as that one did
 * (gens_of). Before, a key's role went to every stream on its handle:
 * attached mid-run across an evaluation turn whose streams came back on
 * each other's handles, the last turn's data-dist stream was taken for
 * the copy stream the next turn created on its handle, and batches the
 * job never had were accused copy->sparse in a healthy run (random
 * program 7038 under fuzz_audit -M). */
int nl_role_of_key(const struct nl_proc *p, const struct nl_skey *k, uint32_t gen)
{
	for (int i = 0; p->has_copy && i < p->ncopy_keys; i++)
		if (nl_skey_eq(k, &p->copy_keys[i]) && nl_gen_in(p->copy_gens[i], gen))
			return NL_ROLE_COPY;
	if (p->has_compute && nl_skey_eq(k, &p->compute_key) && nl_gen_in(p->compute_gens, gen))
		return NL_ROLE_COMPUTE;
	for (int i = 0; i < p->nsparse; i++)
		if (nl_skey_eq(k, &p->sparse_keys[i]) && nl_gen_in(p->sparse_gens[i], gen))
			return NL_ROLE_SPARSE;
	return NL_ROLE_OTHER;
}

static void note_role_slot(struct nl_proc *p, int slot)
{
	struct nl_stream *s = &p->s[slot];

	s->pipe = s->role == NL_ROLE_COPY || s->role == NL_ROLE_SPARSE ? 0 : -1;
	if (s->role == NL_ROLE_COPY)
		p->pipes[0].had_copy = true;
	if (s->role == NL_ROLE_COMPUTE)
		p->compute_slot = slot;
	if (nl_key_is_null(&s->key))
		p->null_slot = slot;
}

void nl_streams_refresh_roles(struct nl_proc *p)
{
	p->compute_slot = -1;
	for (uint32_t i = 0; i < p->w; i++)
		if (p->s[i].used) {
			p->s[i].role = (uint8_t)nl_role_of_key(p, &p->s[i].key, p->s[i].gen);
			note_role_slot(p, (int)i);
		}
}

/* (Re)start the stream in slot: a new stream as far as ordering goes. Its
 * own clock continues from the previous occupant so no old clock value can
 * claim to cover the new stream's ops. */
void nl_stream_reset(struct nl_proc *p, int slot, const struct nl_skey *k, bool history_known,
		     bool blocking)
{
	struct nl_stream *s = &p->s[slot];
	uint32_t own = s->vc[slot];
	uint32_t *vc = s->vc;

	if (s->used && s->blocking && !nl_key_is_null(&s->key))
		p->nblocking--;
	memset(s, 0, sizeof(*s));
	memset(vc, 0, p->w * sizeof(uint32_t));
	s->vc = vc;
	s->vc[slot] = own;
	s->used = true;
	s->key = *k;
	s->gen = nl_hgen_get(&p->hgen, k->handle);
	s->history_known = history_known;
	s->blocking = blocking;
	s->token = s->carry = s->first_taken = s->implicit_tok = s->order_tok = NL_NO_TOKEN;
	s->capture_origin = -1;
	s->lru = ++p->lru;
	if (blocking && !nl_key_is_null(k))
		p->nblocking++;
	/* A stream created after learning starts clean, even on the handle of
	 * a destroyed stream that had a role: it earns one by its edges. */
	s->role = history_known && p->keys_final ? NL_ROLE_OTHER :
							  (uint8_t)nl_role_of_key(p, k, s->gen);
	note_role_slot(p, slot);
}

static int evict_stream(struct nl_proc *p)
{
	int best = -1;

	/* Least recently used, sparing the streams with a role while possible. */
	for (int pass = 0; pass < 2 && best < 0; pass++)
		for (uint32_t i = 0; i < p->w; i++) {
			struct nl_stream *s = &p->s[i];

			if (pass == 0 && s->role != NL_ROLE_OTHER)
				continue;
			if (best < 0 || s->lru < p->s[best].lru)
				best = (int)i;
		}
	if (best < 0)
		return -1;
	p->evicted_streams++;
	nl_batches_lose_slot(p, best);
	for (uint32_t i = 0; i < p->ecap; i++)
		if (p->ev[i].used && p->ev[i].slot == best)
			p->ev[i].slot = -1;
	if (p->compute_slot == best)
		p->compute_slot = -1;
	if (p->null_slot == best)
		p->null_slot = -1;
	return best;
}

int nl_stream_slot(struct nl_engine *e, struct nl_proc *p, const struct nl_skey *k, bool create)
{
	int free_slot = -1;

	(void)e;
	if (p->cache_slot >= 0 && nl_skey_eq(&p->s[p->cache_slot].key, k) &&
	    p->s[p->cache_slot].used) {
		p->s[p->cache_slot].lru = ++p->lru;
		return p->cache_slot;
	}
	for (uint32_t i = 0; i < p->w; i++) {
		struct nl_stream *s = &p->s[i];

		if (!s->used) {
			if (free_slot < 0)
				free_slot = (int)i;
			continue;
		}
		if (nl_skey_eq(&s->key, k)) {
			s->lru = ++p->lru;
			p->cache_slot = (int)i;
			return (int)i;
		}
	}
	if (!create)
		return -1;
	if (free_slot < 0)
		free_slot = evict_stream(p);
	if (free_slot < 0)
		return -1;
	/* First seen without a create: the legacy null stream and per-thread
	 * streams are blocking by definition; anything else is assumed
	 * NonBlocking (what PyTorch creates) with its history unknown. */
	nl_stream_reset(p, free_slot, k, nl_key_is_null(k) || key_is_per_thread(k),
			nl_key_is_null(k) || key_is_per_thread(k));
	p->cache_slot = free_slot;
	return free_slot;
}

/* ---- recent ops ------------------------------------------------------------ */

void nl_ring_push(const struct nl_proc *p, struct nl_stream *s, uint32_t clock,
		  const struct nl_call *c, int64_t token, bool work)
{
	struct nl_ring_op *r = &s->ring[s->nring % NL_RING];

	r->clock = clock;
	r->nseq = nl_null_seq(p, (int)(s - p->s), clock);
	r->api = c->api;
	r->tid = c->tid;
	r->token = token;
	r->ts = c->ts_ns;
	r->work = work;
	r->again = false;
	r->goes_on = false;
	r->handoff = false;
	r->joined = s->joined_now;
	s->joined_now = false;
	r->ev_slot = -1;
	r->ev_clock = 0;
	s->nring++;
}

/* The last work op the stream's ring remembers (NULL: none). */
const struct nl_ring_op *nl_ring_last_work(const struct nl_stream *s)
{
	for (uint32_t k = s->nring; k > nl_ring_start(s); k--)
		if (s->ring[(k - 1) % NL_RING].work)
			return &s->ring[(k - 1) % NL_RING];
	return NULL;
}

/* ...its time (0: none). */
uint64_t nl_ring_last_work_ts(const struct nl_stream *s)
{
	const struct nl_ring_op *r = nl_ring_last_work(s);

	return r ? r->ts : 0;
}

const struct nl_ring_op *nl_ring_first_after(const struct nl_stream *s, uint32_t after,
					     int64_t token, bool work)
{
	uint32_t start = nl_ring_start(s);

	for (uint32_t i = start; i < s->nring; i++) {
		const struct nl_ring_op *r = &s->ring[i % NL_RING];

		if (r->clock > after && r->token == token && (!work || r->work))
			return r;
	}
	return NULL;
}

/* ---- events --------------------------------------------------------------- */

static uint32_t *event_pos(struct nl_proc *p, uint64_t handle)
{
	uint32_t mask = p->hcap - 1;

	for (uint32_t i = nl_hash64(handle) & mask;; i = (i + 1) & mask) {
		uint32_t *pos = &p->eh[i];

		if (*pos == 0 || p->ev[*pos - 1].handle == handle)
			return pos;
	}
}

struct nl_event *nl_event_find(struct nl_proc *p, uint64_t handle)
{
	uint32_t *pos = event_pos(p, handle);

	if (*pos == 0)
		return NULL;
	p->ev[*pos - 1].lru = ++p->lru;
	return &p->ev[*pos - 1];
}

/* Linear probing deletion without tombstones: shift later members of the
 * cluster back into the hole when their home allows it. */
static void event_unhash(struct nl_proc *p, uint32_t *pos)
{
	uint32_t mask = p->hcap - 1;
	uint32_t i = (uint32_t)(pos - p->eh);

	for (uint32_t j = i;;) {
		uint32_t home;

		j = (j + 1) & mask;
		if (p->eh[j] == 0)
			break;
		home = nl_hash64(p->ev[p->eh[j] - 1].handle) & mask;
		/* The entry at j may stay when home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		p->eh[i] = p->eh[j];
		i = j;
	}
	p->eh[i] = 0;
}

/* Every slot holds a live event: the least recently used of a few
 * (approximate LRU from a moving hand, constant time). */
static uint32_t evict_event(struct nl_proc *p)
{
	uint32_t best = p->ehand % p->ecap;

	for (uint32_t i = 1; i < 8; i++) {
		uint32_t j = (p->ehand + i) % p->ecap;

		if (p->ev[j].lru < p->ev[best].lru)
			best = j;
	}
	p->ehand += 8;
	p->evicted_events++;
	event_unhash(p, event_pos(p, p->ev[best].handle));
	return best;
}

void nl_event_forget(struct nl_proc *p, struct nl_event *ev)
{
	uint32_t idx = (uint32_t)(ev - p->ev);

	event_unhash(p, event_pos(p, ev->handle));
	ev->used = false;
	p->efree[p->nfree++] = idx;
}

struct nl_event *nl_event_get(struct nl_engine *e, struct nl_proc *p, uint64_t handle)
{
	uint32_t *pos = event_pos(p, handle);
	uint32_t idx;
	struct nl_event *ev;
	uint32_t *vc;

	(void)e;
	if (*pos) {
		ev = &p->ev[*pos - 1];
		ev->lru = ++p->lru;
		return ev;
	}
	if (p->nfree) {
		idx = p->efree[--p->nfree];
	} else if (p->nev < p->ecap) {
		idx = p->nev++;
	} else {
		idx = evict_event(p);
		pos = event_pos(p, handle); /* the table moved under us */
	}
	ev = &p->ev[idx];
	vc = ev->vc;
	memset(ev, 0, sizeof(*ev));
	ev->vc = vc;
	ev->used = true;
	ev->handle = handle;
	ev->slot = -1;
	ev->token = NL_NO_TOKEN;
	ev->lru = ++p->lru;
	*pos = idx + 1;
	return ev;
}

/* ---- threads -------------------------------------------------------------- */

struct nl_thread *nl_thread_get(struct nl_proc *p, uint32_t tid)
{
	int best = 0;

	if (p->th[p->th_cache].used && p->th[p->th_cache].tid == tid)
		return &p->th[p->th_cache];
	for (int i = 0; i < NL_MAX_THREADS; i++) {
		struct nl_thread *t = &p->th[i];

		if (t->used && t->tid == tid) {
			t->lru = ++p->lru;
			p->th_cache = i;
			return t;
		}
		if (!t->used ? p->th[best].used : (p->th[best].used && t->lru < p->th[best].lru))
			best = i;
	}
	/* a thread forgotten: its rows of launches (follow_rows) come back
	 * empty while the probes kept them */
	if (p->th[best].used)
		p->rows_unsure = true;
	memset(&p->th[best], 0, sizeof(p->th[best]));
	p->th[best].used = true;
	p->th[best].tid = tid;
	p->th[best].lru = ++p->lru;
	p->th_cache = best;
	return &p->th[best];
}
