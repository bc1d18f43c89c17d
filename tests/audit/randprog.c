/* SPDX-License-Identifier: MIT */
/*
 * Random pipeline programs, their truth, and the comparison with the engine
 * (randprog.h; docs/engine.md, "Model-based random testing").
 *
 * The truth is computed here from the generator's own knowledge (which op is
 * copy(T), sparse(T), forward(T), and whether it reads its batch) and a
 * happens-before model written apart from the engine: a vector clock per
 * logical stream, ticked by every command on it; a record snapshots the
 * stream's clock into the event, a wait joins the event's last snapshot (a
 * never-recorded event orders nothing); every command on the null stream joins
 * every blocking stream, every command on a blocking stream joins the null
 * stream. Host synchronization orders nothing.
 */
#include "randprog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "record/decode.h"
#include "record/recording.h"
#include "launch_rows.h"

#define RP_ROW_THREADS 64 /* threads a program has, at most */

/* ---- random numbers: splitmix64 ----------------------------------------------- */

uint64_t rp_rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* 0 .. n-1 */
static int below(uint64_t *s, int n)
{
	return n > 0 ? (int)(rp_rnd(s) % (uint64_t)n) : 0;
}

/* true with probability pct / 100 */
static bool chance(uint64_t *s, int pct)
{
	return below(s, 100) < pct;
}

static const char *const purpose_names[RP_NPURPOSES] = {
	"cs", "sf", "dn", "nd", "early", "buf", "added", "bwd_in", "bwd_out",
};

const char *rp_purpose_name(int purpose)
{
	return purpose >= 0 && purpose < RP_NPURPOSES ? purpose_names[purpose] : "?";
}

const char *rp_undecidable_name(int u)
{
	switch (u) {
	case RP_U_PRETRACE_NULL:
		return "pretrace_stream";
	case RP_U_FEW_HANDOFFS:
		return "few_handoffs";
	default:
		return "none";
	}
}

const char *rp_shape_name(int shape)
{
	static const char *const names[RP_NSHAPES] = { "single", "altcopy", "two", "recreate" };

	return shape >= 0 && shape < RP_NSHAPES ? names[shape] : "?";
}

void rp_schedule(const struct rp_spec *s, int8_t *pipe, int8_t *local)
{
	bool two = s->shape >= RP_S_TWO;
	int nb = s->nb < RP_MAX_BATCHES ? s->nb : RP_MAX_BATCHES;
	int n[RP_MAX_PIPES] = { 0, 0 };
	int want[RP_MAX_PIPES] = { nb - (two ? s->nb1 : 0), two ? s->nb1 : 0 };
	int run[RP_MAX_PIPES] = { two && s->run0 > 0 ? s->run0 : nb, s->run1 > 0 ? s->run1 : 1 };

	/* K of pipeline 0 (K + lead0 the first time), E of pipeline 1, and
	 * again, until both are done */
	for (int T = 0, P = 0; T < nb; P ^= two) {
		int len = run[P] + (T ? 0 : two * s->lead0);

		for (int k = 0; k < len && n[P] < want[P]; k++) {
			pipe[T] = (int8_t)P;
			local[T++] = (int8_t)n[P]++;
		}
	}
}

static const char item_letter[RP_NITEMS] = { 'b', 'T', 'F', 'B', 'C', 'S' };

/* ---- the spec ------------------------------------------------------------------ */

static bool purpose_exists(const struct rp_spec *s, int purpose)
{
	switch (purpose) {
	case RP_W_CS:
		return s->sparse;
	case RP_W_SF:
		return true;
	case RP_W_DN:
	case RP_W_ND:
		return s->coll;
	case RP_W_EARLY:
		return s->early;
	case RP_W_BUF:
		return s->buf_wait;
	case RP_W_ADDED:
		return s->added_cm;
	case RP_W_BWD_IN:
	case RP_W_BWD_OUT:
		return s->autograd && s->compute == RP_C_PERTHREAD;
	default:
		return false;
	}
}

/* Put the items of a random permutation in a valid order: the take, forward
 * and backward of batch i in that order (dist_init of i before them), and the
 * copy of a batch before its sparse stage when both fall in one tick. */
static void order_fix(struct rp_spec *s)
{
	static const uint8_t chain[] = { RP_I_PARTB, RP_I_TAKE, RP_I_FWD, RP_I_BWD };
	int pos[RP_NITEMS], k = 0;

	for (int i = 0; i < RP_NITEMS; i++)
		pos[s->order[i]] = i;
	/* the chain's positions, sorted, handed out in chain order */
	int cp[4];
	for (int i = 0; i < 4; i++)
		cp[i] = pos[chain[i]];
	for (int i = 1; i < 4; i++)
		for (int j = i; j > 0 && cp[j - 1] > cp[j]; j--) {
			int t = cp[j];
			cp[j] = cp[j - 1];
			cp[j - 1] = t;
		}
	for (int i = 0; i < 4; i++)
		s->order[cp[i]] = chain[k++];
	if (s->lag == s->depth) {
		int c = -1, sp = -1;

		for (int i = 0; i < RP_NITEMS; i++) {
			if (s->order[i] == RP_I_COPY)
				c = i;
			if (s->order[i] == RP_I_SPARSE)
				sp = i;
		}
		if (sp < c) {
			s->order[sp] = RP_I_COPY;
			s->order[c] = RP_I_SPARSE;
		}
	}
}

bool rp_tails = true;

/* The shape beyond one pipeline, from a stream of numbers of its own: a seed
 * that draws RP_S_SINGLE gives the program it gave before shapes existed. */
static void spec_shape(struct rp_spec *s, uint64_t seed)
{
	uint64_t r = seed * 0xd1342543de82ef95ull + 0x632be59bd9b4e019ull;
	int8_t pipe[RP_MAX_BATCHES], local[RP_MAX_BATCHES];
	int sh = below(&r, 100);

	s->shape = sh < 64 ? RP_S_SINGLE : sh < 76 ? RP_S_ALTCOPY : sh < 88 ? RP_S_TWO
									: RP_S_RECREATE;
	if (s->shape < RP_S_TWO)
		return;
	/* an eval pipeline of 4-8 batches, 2-4 at a time, between runs of 2-4 of
	 * the first, which keeps batches in flight across the switch */
	s->nb1 = 4 + below(&r, 5);
	s->run0 = 2 + below(&r, 3);
	s->run1 = 2 + below(&r, 3);
	s->depth1 = 1 + below(&r, 2);
	s->lag1 = 1 + below(&r, s->depth1);
	/* half the programs: the second pipeline starts after role learning (8
	 * hand-offs), the others during it */
	s->lead0 = chance(&r, 50) ? 8 + below(&r, 3) : 0;
	if (s->depth < 2) {
		s->depth = 2;
		order_fix(s);
	}
	s->nb += s->nb1 + s->lead0;
	/* the faults over every pipeline's batches (no collective in pipeline 1) */
	rp_schedule(s, pipe, local);
	for (int i = 0; i < s->ndrops; i++) {
		int p = s->drops[i].purpose, b = -1;

		for (int k = 0; k < 16 && b < 0; k++) {
			bool dup = false;

			b = below(&r, s->nb);
			for (int j = 0; j < i; j++)
				dup |= s->drops[j].purpose == p && s->drops[j].batch == b;
			if (dup || (pipe[b] && (p == RP_W_DN || p == RP_W_ND)))
				b = -1;
		}
		s->drops[i].batch = (int8_t)(b < 0 ? s->drops[i].batch : b);
	}
	/* drawn last: the draws before are those of the programs before it */
	s->lifo = s->shape == RP_S_RECREATE && chance(&r, 50);
	s->ncopies1 = chance(&r, 30) ? 1 + below(&r, 3) : 0;
}

void rp_spec_random(struct rp_spec *s, uint64_t seed)
{
	uint64_t r = seed * 0x2545f4914f6cdd1dull + 1;

	memset(s, 0, sizeof(*s));
	s->seed = rp_rnd(&r);
	s->nb = 4 + below(&r, RP_DRAW_BATCHES - 3);
	s->depth = 1 + below(&r, 3);
	s->lag = 1 + below(&r, s->depth);
	s->sparse = chance(&r, 75);
	s->coll = s->sparse && chance(&r, 50);
	s->split = s->coll && chance(&r, 50);
	s->compute = below(&r, 3);
	s->spt = s->compute == RP_C_PERTHREAD && chance(&r, 50);
	s->fresh = chance(&r, 50);
	s->slots = chance(&r, 50) ? 1 : s->depth + 1;
	s->loader = chance(&r, 30);
	s->autograd = chance(&r, 40);
	s->early = s->fresh && s->sparse && chance(&r, 40);
	s->buf_wait = chance(&r, 20);
	s->added_cm = s->sparse && chance(&r, 15);
	s->noise_pool = chance(&r, 50);
	s->noise_watchdog = s->coll && chance(&r, 60);
	s->noise_item = chance(&r, 50);
	s->blocking = chance(&r, 20);
	s->pretrace = chance(&r, 15);
	s->ncopies = 1 + below(&r, 3);
	/* issue order: TorchRec's, a plain loop's, or any valid one */
	static const uint8_t torchrec[RP_NITEMS] = { RP_I_PARTB, RP_I_TAKE, RP_I_SPARSE,
						    RP_I_FWD, RP_I_COPY, RP_I_BWD };
	static const uint8_t plain[RP_NITEMS] = { RP_I_PARTB, RP_I_TAKE, RP_I_FWD,
						 RP_I_COPY, RP_I_SPARSE, RP_I_BWD };
	int style = below(&r, 3);

	if (style == 0)
		memcpy(s->order, torchrec, sizeof(s->order));
	else if (style == 1)
		memcpy(s->order, plain, sizeof(s->order));
	else {
		for (int i = 0; i < RP_NITEMS; i++)
			s->order[i] = (uint8_t)i;
		for (int i = RP_NITEMS - 1; i > 0; i--) {
			int j = below(&r, i + 1);
			uint8_t t = s->order[i];

			s->order[i] = s->order[j];
			s->order[j] = t;
		}
	}
	order_fix(s);
	/* dropped waits: none, one (most), two or three */
	int nd = below(&r, 100);

	nd = nd < 30 ? 0 : nd < 80 ? 1 : nd < 95 ? 2 : 3;
	for (int k = 0; k < 40 && s->ndrops < nd; k++) {
		static const uint8_t weighted[] = { RP_W_CS, RP_W_CS, RP_W_CS, RP_W_SF, RP_W_SF,
						    RP_W_SF, RP_W_DN, RP_W_ND, RP_W_EARLY,
						    RP_W_BUF, RP_W_ADDED, RP_W_BWD_IN,
						    RP_W_BWD_OUT };
		int p = weighted[below(&r, (int)sizeof(weighted))];
		int b = below(&r, s->nb);
		bool dup = false;

		if (!purpose_exists(s, p))
			continue;
		for (int i = 0; i < s->ndrops; i++)
			dup |= s->drops[i].purpose == p && s->drops[i].batch == b;
		if (dup)
			continue;
		s->drops[s->ndrops].purpose = (uint8_t)p;
		s->drops[s->ndrops].batch = (int8_t)b;
		s->drops[s->ndrops].with_record = chance(&r, s->fresh ? 50 : 30);
		s->ndrops++;
	}
	spec_shape(s, seed);
	/* a stream of its own, so that the rest of every program stays as it was */
	r = seed * 0x9e3779b97f4a7c15ull + 0x94d049bb133111ebull;
	s->reuse = below(&r, 100) < 25;
	r = seed * 0xbf58476d1ce4e5b9ull + 0x2545f4914f6cdd1dull;
	/* only for a later batch than the stage's (its own copy inside its
	 * stage would be a fault by construction: checked again per pipeline
	 * at each tick), and not where the copies wait for compute's buffers
	 * (moved, that wait would cover less) */
	s->midcopy = s->loader && s->sparse && s->depth > s->lag && !s->buf_wait &&
		     below(&r, 100) < 50;
	r = seed * 0x94d049bb133111ebull + 0xbf58476d1ce4e5b9ull;
	if (rp_tails && s->shape == RP_S_SINGLE && below(&r, 100) < 20)
		s->tail = 1 + below(&r, s->depth);
}

/* The batches a program's loop never consumes: its last tail of them,
 * at most its depth, leaving it the four steps a program has at least
 * (fewer hand-offs cannot teach the roles: rp_result_compare) */
int rp_tail_of(const struct rp_spec *s)
{
	int t = s->shape == RP_S_SINGLE ? s->tail : 0;

	if (t > s->depth)
		t = s->depth;
	return t <= s->nb - 4 ? t : s->nb > 4 ? s->nb - 4 : 0;
}

void rp_spec_describe(const struct rp_spec *s, char *buf, size_t len)
{
	static const char *const cname[] = { "null", "perthread", "created" };
	char order[RP_NITEMS + 1], drops[96] = "";
	size_t o = 0;

	for (int i = 0; i < RP_NITEMS; i++)
		order[i] = item_letter[s->order[i]];
	order[RP_NITEMS] = '\0';
	for (int i = 0; i < s->ndrops; i++)
		o += (size_t)snprintf(drops + o, sizeof(drops) - o, "%s%s@%d%s", i ? "," : "",
				      rp_purpose_name(s->drops[i].purpose), s->drops[i].batch,
				      s->drops[i].with_record ? "+rec" : "");
	snprintf(buf, len,
		 "nb=%d depth=%d lag=%d sparse=%d coll=%d split=%d compute=%s%s %s slots=%d "
		 "order=%s copies=%d%s%s%s%s%s%s%s%s%s%s drops=[%s]",
		 s->nb, s->depth, s->lag, s->sparse, s->coll, s->split, cname[s->compute],
		 s->spt ? "(spt)" : "", s->fresh ? "fresh" : "reused", s->slots, order,
		 s->ncopies, s->loader ? " loader" : "", s->autograd ? " autograd" : "",
		 s->early ? " early" : "", s->buf_wait ? " buf_wait" : "",
		 s->added_cm ? " added_cm" : "", s->noise_pool ? " pool" : "",
		 s->noise_watchdog ? " watchdog" : "", s->noise_item ? " item" : "",
		 s->blocking ? " blocking" : "", s->pretrace ? " pretrace" : "", drops);
	if (s->reuse)
		snprintf(buf + strlen(buf), len - strlen(buf), " reuse");
	if (s->midcopy)
		snprintf(buf + strlen(buf), len - strlen(buf), " midcopy");
	if (rp_tail_of(s) > 0)
		snprintf(buf + strlen(buf), len - strlen(buf), " tail=%d", rp_tail_of(s));
	if (s->shape == RP_S_ALTCOPY)
		snprintf(buf + strlen(buf), len - strlen(buf), " shape=altcopy");
	else if (s->shape >= RP_S_TWO)
		snprintf(buf + strlen(buf), len - strlen(buf),
			 " shape=%s nb1=%d runs=%d/%d lead0=%d depth1=%d lag1=%d",
			 rp_shape_name(s->shape), s->nb1, s->run0, s->run1, s->lead0, s->depth1,
			 s->lag1);
	if (s->lifo)
		snprintf(buf + strlen(buf), len - strlen(buf), " lifo");
	if (s->ncopies1)
		snprintf(buf + strlen(buf), len - strlen(buf), " copies1=%d", s->ncopies1);
}

/* ---- emitting the program --------------------------------------------------------- */

#define RP_MAX_EVENTS 160

enum { K_COPY = 0x4100, K_INPUT_DIST = 0x4200, K_DIST_INIT = 0x4300, K_A2A = 0x4400,
       K_FWD = 0x4500, K_BWD = 0x4600 };

struct rp_event {
	uint64_t handle;
	bool recorded;
	int carry;    /* the batch the recording stream carried, by tokens (-1 none) */
	uint32_t clock[RP_MAX_STREAMS];
};

struct gen {
	bool flip_untraced; /* streams created before tracing: the other blocking flag */
	struct rp_prog *p;
	const struct rp_spec *s;     /* the spec of the pipeline bound (bind_batch()) */
	struct rp_spec spec1;        /* pipeline 1's: its depth, no collective */
	uint64_t r;
	uint64_t now, wd_last;
	uint32_t tid_main, tid_loader, tid_autograd, tid_watchdog;
	/* logical streams */
	int sM, sD, sN, sC, sB, snull; /* sM, sD, sN: of the batch bound */
	int pm[RP_MAX_PIPES][2], ncopy[RP_MAX_PIPES], pd[RP_MAX_PIPES], pn[RP_MAX_PIPES];
	int cp, mkpipe;                /* the pipeline bound; the one streams are made for */
	int glob[RP_MAX_PIPES][RP_MAX_BATCHES]; /* batch number in a pipeline -> T */
	uint64_t handle[RP_MAX_STREAMS];
	uint32_t owner[RP_MAX_STREAMS]; /* per-thread stream: its thread; else 0 */
	uint32_t vc[RP_MAX_STREAMS][RP_MAX_STREAMS];
	uint32_t (*clk)[RP_MAX_STREAMS]; /* the clock of each call that is a stream op */
	int carry[RP_MAX_STREAMS];       /* token-style batch the stream carries: a flag only */
	/* events */
	struct rp_event ev[RP_MAX_EVENTS];
	int nev;
	uint64_t free_handles[RP_MAX_EVENTS];
	int nfree;
	uint64_t next_handle;
	int reused[RP_MAX_PIPES][RP_NPURPOSES][4];
	int pool[4], done_ev;
	int end_ev[RP_MAX_BATCHES];   /* the all-to-all's end event of batch T */
	int pool_pending[8], npool_pending;
	int copy_pending; /* batch T whose loader copies wait for the stage (midcopy); -1: none */
	int err;
};

static struct rp_call *emit(struct gen *g, int api, uint32_t tid)
{
	struct rp_prog *p = g->p;
	struct rp_call *c;

	if (g->err)
		return NULL;
	if (p->n == p->cap) {
		int cap = p->cap ? 2 * p->cap : 512;
		void *n1 = realloc(p->calls, (size_t)cap * sizeof(*p->calls));
		void *n2 = n1 ? realloc(g->clk, (size_t)cap * sizeof(*g->clk)) : NULL;

		if (n1)
			p->calls = n1;
		if (!n1 || !n2) {
			g->err = -ENOMEM;
			return NULL;
		}
		g->clk = n2;
		p->cap = cap;
	}
	c = &p->calls[p->n++];
	memset(c, 0, sizeof(*c));
	memset(g->clk[p->n - 1], 0, sizeof(g->clk[0]));
	c->sid = -1;
	c->stage = -1;
	c->batch = -1;
	c->rec.type = NL_REC_CALL;
	c->rec.api = (uint16_t)api;
	c->rec.pid = p->pid;
	c->rec.tid = tid;
	g->now += 800 + (uint64_t)below(&g->r, 4000);
	c->rec.ts_ns = g->now;
	if (nl_api_info[api].flags & NL_AF_RET) {
		c->rec.flags = NL_RF_RET;
		c->rec.ret_ns = g->now + 300 + (uint64_t)below(&g->r, 900);
		g->now = c->rec.ret_ns;
	}
	return c;
}

static void set_arg(struct rp_call *c, int slot, uint64_t v)
{
	if (slot >= 0 && slot < NL_NARGS)
		c->rec.args[slot] = v;
}

/* The null stream or a blocking one: implicit sync before a command on s. */
static void implicit(struct gen *g, int s)
{
	if (g->snull < 0)
		return;
	if (s == g->snull) {
		for (int t = 0; t < g->p->nstreams; t++)
			if (t != s && g->p->stream_blocking[t])
				for (int k = 0; k < RP_MAX_STREAMS; k++)
					if (g->vc[t][k] > g->vc[s][k])
						g->vc[s][k] = g->vc[t][k];
	} else if (g->p->stream_blocking[s]) {
		for (int k = 0; k < RP_MAX_STREAMS; k++)
			if (g->vc[g->snull][k] > g->vc[s][k])
				g->vc[s][k] = g->vc[g->snull][k];
	}
}

/* A command on stream s: its clock. */
static void stream_cmd(struct gen *g, struct rp_call *c, int s)
{
	implicit(g, s);
	g->vc[s][s]++;
	c->sid = (int8_t)s;
	memcpy(g->clk[g->p->n - 1], g->vc[s], sizeof(g->vc[s]));
}

/* A call on stream s (per-thread streams from their own thread). */
static struct rp_call *on_stream(struct gen *g, int api, int s, uint32_t tid)
{
	bool pt = g->owner[s] != 0;
	struct rp_call *c;

	if (pt) {
		tid = g->owner[s];
		if (g->s->spt) {
			if (api == NL_API_LAUNCH_KERNEL)
				api = NL_API_LAUNCH_KERNEL_SPT;
			else if (api == NL_API_MEMCPY_ASYNC)
				api = NL_API_MEMCPY_ASYNC_SPT;
			else if (api == NL_API_STREAM_SYNCHRONIZE)
				api = NL_API_STREAM_SYNCHRONIZE_SPT;
			else if (api == NL_API_STREAM_WAIT_EVENT)
				api = NL_API_STREAM_WAIT_EVENT_SPT;
		}
	}
	c = emit(g, api, tid);
	if (!c)
		return NULL;
	set_arg(c, nl_api_info[api].slot_stream,
		pt && (nl_api_info[api].flags & NL_AF_SPT) ? 0 : g->handle[s]);
	return c;
}

static void kernel(struct gen *g, int s, uint32_t tid, uint64_t fn, int stage, int batch, bool reads)
{
	struct rp_call *c = on_stream(g, NL_API_LAUNCH_KERNEL, s, tid);

	if (!c)
		return;
	set_arg(c, nl_api_info[c->rec.api].slot_fn, fn);
	stream_cmd(g, c, s);
	c->stage = (int8_t)stage;
	c->batch = (int8_t)batch;
	c->reads = reads;
}

static void copy(struct gen *g, int s, uint32_t tid, unsigned kind, int stage, int batch, bool reads)
{
	struct rp_call *c = on_stream(g, NL_API_MEMCPY_ASYNC, s, tid);

	if (!c)
		return;
	const struct nl_api_info *a = &nl_api_info[c->rec.api];

	set_arg(c, a->slot_dst, 0x7f3a00000000ull + 0x10000ull * (uint64_t)below(&g->r, 64));
	set_arg(c, a->slot_src, 0x55c000000000ull + 0x10000ull * (uint64_t)below(&g->r, 64));
	set_arg(c, a->slot_bytes, 4096ull << below(&g->r, 8));
	set_arg(c, a->slot_kind, kind);
	stream_cmd(g, c, s);
	c->stage = (int8_t)stage;
	c->batch = (int8_t)batch;
	c->reads = reads;
	if (stage == NL_STAGE_COPY)
		g->carry[s] = batch; /* a copy segment mints its batch */
}

static int event_new(struct gen *g, uint32_t tid, int coll_depth)
{
	struct rp_call *c;
	int e;

	/* the slot of a destroyed event is taken again */
	for (e = 0; e < g->nev && g->ev[e].handle; e++)
		;
	if (e == RP_MAX_EVENTS) {
		g->err = g->err ? g->err : -ENOSPC;
		return 0;
	}
	if (e == g->nev)
		g->nev++;
	memset(&g->ev[e], 0, sizeof(g->ev[e]));
	g->ev[e].carry = -1;
	/* an allocator hands the most recently freed block out first */
	g->ev[e].handle = g->nfree ? g->free_handles[--g->nfree] : (g->next_handle += 0x40);
	c = emit(g, NL_API_EVENT_CREATE_WITH_FLAGS, tid);
	if (c) {
		c->rec.coll_depth = (uint8_t)coll_depth;
		c->rec.flags |= NL_RF_OUT;
		c->rec.out = g->ev[e].handle;
		set_arg(c, nl_api_info[NL_API_EVENT_CREATE_WITH_FLAGS].slot_flags, 2);
		set_arg(c, nl_api_info[NL_API_EVENT_CREATE_WITH_FLAGS].slot_out,
			0x7ffd00001000ull);
	}
	return e;
}

static void event_destroy(struct gen *g, int e, uint32_t tid)
{
	struct rp_call *c = emit(g, NL_API_EVENT_DESTROY, tid);

	if (c)
		set_arg(c, nl_api_info[NL_API_EVENT_DESTROY].slot_event, g->ev[e].handle);
	g->ev[e].recorded = false;
	if (g->nfree < RP_MAX_EVENTS)
		g->free_handles[g->nfree++] = g->ev[e].handle;
	/* the logical slot is dead; a fresh create takes a new one */
	g->ev[e].handle = 0;
}

static void record(struct gen *g, int e, int s, uint32_t tid)
{
	struct rp_call *c = on_stream(g, NL_API_EVENT_RECORD, s, tid);

	if (!c)
		return;
	set_arg(c, nl_api_info[c->rec.api].slot_event, g->ev[e].handle);
	stream_cmd(g, c, s);
	g->ev[e].recorded = true;
	g->ev[e].carry = g->carry[s];
	memcpy(g->ev[e].clock, g->vc[s], sizeof(g->vc[s]));
}

/* A wait of stream s on event e made for batch `batch` (oversync flag). */
static void wait(struct gen *g, int s, int e, uint32_t tid, int purpose, int batch)
{
	struct rp_call *c = on_stream(g, NL_API_STREAM_WAIT_EVENT, s, tid);

	if (!c)
		return;
	set_arg(c, nl_api_info[c->rec.api].slot_event, g->ev[e].handle);
	set_arg(c, nl_api_info[c->rec.api].slot_flags, 0);
	implicit(g, s);
	if (g->ev[e].recorded) {
		for (int k = 0; k < RP_MAX_STREAMS; k++)
			if (g->ev[e].clock[k] > g->vc[s][k])
				g->vc[s][k] = g->ev[e].clock[k];
		/* the copy stream's batch never comes from a wait; any other stream
		 * waiting on work of a newer batch than the one it is there for */
		if (s != g->sM && purpose != RP_W_BWD_IN && purpose != RP_W_BWD_OUT &&
		    g->ev[e].carry > batch)
			g->p->oversync = true;
		if (s != g->sM && g->ev[e].carry >= 0)
			g->carry[s] = g->ev[e].carry;
		if (purpose == RP_W_CS || purpose == RP_W_ADDED ||
		    (purpose == RP_W_SF && !g->s->sparse))
			g->p->handoffs++;
	}
	g->vc[s][s]++;
	c->sid = (int8_t)s;
	memcpy(g->clk[g->p->n - 1], g->vc[s], sizeof(g->vc[s]));
}

static const struct rp_drop *dropped(struct gen *g, int purpose, int batch)
{
	for (int i = 0; i < g->s->ndrops; i++)
		if (g->s->drops[i].purpose == purpose && g->s->drops[i].batch == batch)
			return &g->s->drops[i];
	return NULL;
}

/* to.wait_stream(from) as PyTorch makes it: a fresh event each time. */
static void wait_stream(struct gen *g, int to, int from, uint32_t tid, int purpose, int batch)
{
	const struct rp_drop *d = dropped(g, purpose, batch);
	uint32_t rtid = g->owner[from] ? g->owner[from] : tid;
	int e;

	if (d && d->with_record)
		return;
	e = event_new(g, tid, 0);
	record(g, e, from, rtid);
	if (!d)
		wait(g, to, e, tid, purpose, batch);
	event_destroy(g, e, tid);
}

/* The reused event of a batch's edge: by its number in its pipeline. */
static int slot(const struct gen *g, int batch)
{
	return g->p->local[batch] % g->s->slots;
}

/* The producer side of a reused-event edge: record it unless dropped whole. */
static void edge_record(struct gen *g, int purpose, int batch, int s, uint32_t tid)
{
	const struct rp_drop *d = dropped(g, purpose, batch);

	if (d && d->with_record)
		return;
	record(g, g->reused[g->cp][purpose][slot(g, batch)], s, tid);
}

static void edge_wait(struct gen *g, int purpose, int batch, int s, uint32_t tid)
{
	if (dropped(g, purpose, batch))
		return;
	wait(g, s, g->reused[g->cp][purpose][slot(g, batch)], tid, purpose, batch);
}

/* An edge whose record and wait are made at one place (fresh, or reused). */
static void edge_now(struct gen *g, int purpose, int batch, int to, int from, uint32_t tid)
{
	if (g->s->fresh) {
		wait_stream(g, to, from, tid, purpose, batch);
		return;
	}
	edge_record(g, purpose, batch, from, g->owner[from] ? g->owner[from] : tid);
	edge_wait(g, purpose, batch, to, tid);
}

static void query(struct gen *g, int e, uint32_t tid, bool past)
{
	struct rp_call *c;
	uint64_t now = g->now;

	c = emit(g, NL_API_EVENT_QUERY, tid);
	if (!c)
		return;
	set_arg(c, nl_api_info[NL_API_EVENT_QUERY].slot_event, g->ev[e].handle);
	c->rec.rc = chance(&g->r, 50) ? 0 : 600;
	if (past) {
		/* the watchdog's query began before the calls just made returned */
		uint64_t ts = now - (uint64_t)below(&g->r, 2000);

		if (ts <= g->wd_last)
			ts = g->wd_last + 1;
		if (ts < c->rec.ret_ns) {
			c->rec.ts_ns = ts;
			g->wd_last = ts;
		}
	}
}

static void pool_record(struct gen *g, int s, uint32_t tid)
{
	int k;

	if (!g->s->noise_pool || g->npool_pending >= 8 || !chance(&g->r, 60))
		return;
	k = g->pool[below(&g->r, 4)];
	record(g, k, s, g->owner[s] ? g->owner[s] : tid);
	g->pool_pending[g->npool_pending++] = k;
}

static void pool_queries(struct gen *g)
{
	for (int i = 0; i < g->npool_pending; i++)
		query(g, g->pool_pending[i], g->tid_main, false);
	g->npool_pending = 0;
}

static void all_to_all(struct gen *g, int batch)
{
	struct rp_call *outer, *inner;
	const struct nl_api_info *a = &nl_api_info[NL_API_NCCL_ALLTOALL];
	const struct nl_api_info *x = &nl_api_info[NL_API_EXT_LAUNCH_KERNEL];
	uint64_t t0;

	/* RCCL's kernel launch arrives first, inside the collective's window */
	g->now += 500;
	t0 = g->now;
	inner = on_stream(g, NL_API_EXT_LAUNCH_KERNEL, g->sN, g->tid_main);
	if (!inner)
		return;
	inner->rec.coll_depth = 1;
	set_arg(inner, x->slot_fn, K_A2A);
	set_arg(inner, x->slot_event, 0);
	set_arg(inner, x->slot_event2, g->ev[g->done_ev].handle);
	stream_cmd(g, inner, g->sN);
	inner->stage = NL_STAGE_SPARSE;
	inner->batch = (int8_t)batch;
	inner->reads = true;
	outer = emit(g, NL_API_NCCL_ALLTOALL, g->tid_main);
	if (!outer)
		return;
	outer->rec.ts_ns = t0;
	set_arg(outer, a->slot_stream, g->handle[g->sN]);
	set_arg(outer, a->slot_src, 0x7f3b00000000ull);
	set_arg(outer, a->slot_dst, 0x7f3c00000000ull);
	set_arg(outer, a->slot_count, 1024);
}

static void item_copy(struct gen *g, int T);
static void bind_batch(struct gen *g, int T);

/* The loader's copies held for batch T's stage (midcopy), made now; T is
 * bound again after them. */
static void pending_copy(struct gen *g, int T)
{
	int C = g->copy_pending;

	if (C < 0)
		return;
	g->copy_pending = -1;
	bind_batch(g, C);
	item_copy(g, C);
	bind_batch(g, T);
}

/* sparse(T), or its first part when split */
static void item_sparse(struct gen *g, int T)
{
	const struct rp_spec *s = g->s;
	uint32_t tm = g->tid_main;

	if (s->fresh)
		wait_stream(g, g->sD, g->sM, tm, RP_W_CS, T);
	else
		edge_wait(g, RP_W_CS, T, g->sD, tm);
	for (int k = 1 + below(&g->r, 2), i = 0; k > 0; k--, i++) {
		kernel(g, g->sD, tm, K_INPUT_DIST, NL_STAGE_SPARSE, T, true);
		if (!i)
			pending_copy(g, T);
	}
	if (s->coll) {
		edge_now(g, RP_W_DN, T, g->sN, g->sD, tm);
		all_to_all(g, T);
		/* the collective's end event: one per Work (fresh) or a reused slot */
		const struct rp_drop *d = dropped(g, RP_W_ND, T);

		if (s->fresh) {
			g->end_ev[T] = event_new(g, tm, 0);
			if (!(d && d->with_record))
				record(g, g->end_ev[T], g->sN, tm);
		} else {
			g->end_ev[T] = g->reused[g->cp][RP_W_ND][slot(g, T)];
			edge_record(g, RP_W_ND, T, g->sN, tm);
		}
		if (s->noise_watchdog)
			query(g, g->end_ev[T], g->tid_watchdog, true);
	}
	if (!s->split) {
		if (s->coll) {
			if (!dropped(g, RP_W_ND, T))
				wait(g, g->sD, g->end_ev[T], tm, RP_W_ND, T);
			if (s->fresh)
				event_destroy(g, g->end_ev[T], tm);
			kernel(g, g->sD, tm, K_DIST_INIT, NL_STAGE_SPARSE, T, true);
		}
		if (!s->fresh)
			edge_record(g, RP_W_SF, T, g->sD, tm);
	}
	pool_record(g, g->sD, tm);
}

/* dist_init(T) of a split sparse stage */
static void item_partb(struct gen *g, int T)
{
	uint32_t tm = g->tid_main;

	if (!dropped(g, RP_W_ND, T))
		wait(g, g->sD, g->end_ev[T], tm, RP_W_ND, T);
	if (g->s->noise_watchdog)
		query(g, g->end_ev[T], g->tid_watchdog, true);
	if (g->s->fresh)
		event_destroy(g, g->end_ev[T], tm);
	kernel(g, g->sD, tm, K_DIST_INIT, NL_STAGE_SPARSE, T, true);
	if (!g->s->fresh)
		edge_record(g, RP_W_SF, T, g->sD, tm);
}

static void item_take(struct gen *g, int T)
{
	const struct rp_spec *s = g->s;
	int from = s->sparse ? g->sD : g->sM;
	uint32_t tm = g->tid_main;

	if (s->fresh)
		wait_stream(g, g->sC, from, tm, RP_W_SF, T);
	else
		edge_wait(g, RP_W_SF, T, g->sC, tm);
	if (s->added_cm) {
		if (s->fresh)
			wait_stream(g, g->sC, g->sM, tm, RP_W_ADDED, T);
		else {
			edge_record(g, RP_W_ADDED, T, g->sM, tm);
			edge_wait(g, RP_W_ADDED, T, g->sC, tm);
		}
	}
}

static void item_fwd(struct gen *g, int T)
{
	uint32_t tm = g->tid_main;

	/* 2-4 kernels, the same ones in the same order every step (a model's
	 * forward), some steps running fewer of the last ones */
	for (int k = 2 + below(&g->r, 3), i = 1; i <= k; i++)
		kernel(g, g->sC, tm, K_FWD + (uint64_t)i, NL_STAGE_FORWARD, T, true);
	pool_record(g, g->sC, tm);
	if (g->s->noise_item) {
		struct rp_call *c;

		copy(g, g->sC, tm, 2, NL_STAGE_FORWARD, T, false);
		c = on_stream(g, NL_API_STREAM_SYNCHRONIZE, g->sC, tm);
		if (c) {
			c->rec.ret_ns += 20000 + (uint64_t)below(&g->r, 200000);
			g->now = c->rec.ret_ns;
		}
	}
}

static void item_bwd(struct gen *g, int T)
{
	uint32_t tb = g->s->autograd ? g->tid_autograd : g->tid_main;

	if (g->sB >= 0) {
		edge_now(g, RP_W_BWD_IN, T, g->sB, g->sC, tb);
		for (int k = 2 + below(&g->r, 2); k > 0; k--)
			kernel(g, g->sB, tb, K_BWD + (uint64_t)k, -1, T, false);
		/* compute waits on backward: record on B, wait on compute (its thread) */
		if (g->s->fresh) {
			const struct rp_drop *d = dropped(g, RP_W_BWD_OUT, T);

			if (!(d && d->with_record)) {
				int e = event_new(g, tb, 0);

				record(g, e, g->sB, tb);
				if (!d)
					wait(g, g->sC, e, g->tid_main, RP_W_BWD_OUT, T);
				event_destroy(g, e, tb);
			}
		} else {
			edge_record(g, RP_W_BWD_OUT, T, g->sB, tb);
			edge_wait(g, RP_W_BWD_OUT, T, g->sC, g->tid_main);
		}
		return;
	}
	for (int k = 2 + below(&g->r, 3), i = 0; k > 0; k--, i++)
		kernel(g, g->sC, tb, g->s->reuse && !i ? K_FWD + 1 : K_BWD + (uint64_t)k,
		       NL_STAGE_FORWARD, T, false);
}

static void item_copy(struct gen *g, int T)
{
	const struct rp_spec *s = g->s;
	uint32_t tl = s->loader ? g->tid_loader : g->tid_main;

	/* the loader cannot name the main thread's per-thread stream */
	if (s->buf_wait && !(g->owner[g->sC] && g->owner[g->sC] != tl)) {
		if (s->fresh)
			wait_stream(g, g->sM, g->sC, tl, RP_W_BUF, T);
		else {
			edge_record(g, RP_W_BUF, T, g->sC, tl);
			edge_wait(g, RP_W_BUF, T, g->sM, tl);
		}
	}
	for (int k = 0; k < s->ncopies; k++)
		copy(g, g->sM, tl, 1, NL_STAGE_COPY, T, false);
	if (chance(&g->r, 30))
		pool_record(g, g->sM, tl);
	if (!s->fresh)
		edge_record(g, s->sparse ? RP_W_CS : RP_W_SF, T, g->sM, tl);
}

static int add_stream(struct gen *g, uint64_t handle, uint32_t owner, bool blocking, bool null,
		      char name)
{
	int s = g->p->nstreams++;

	g->p->stream_handle[s] = handle;
	g->p->stream_owner[s] = owner;
	g->p->stream_name[s] = name;
	g->handle[s] = handle;
	g->owner[s] = owner;
	g->p->stream_pipe[s] = (int8_t)g->mkpipe;
	g->p->stream_blocking[s] = blocking;
	g->p->stream_null[s] = null;
	g->carry[s] = -1;
	if (null)
		g->snull = s;
	return s;
}

static int created_stream(struct gen *g, uint64_t handle, bool blocking, bool traced, char name)
{
	if (traced) {
		struct rp_call *c = emit(g, NL_API_STREAM_CREATE_WITH_PRIORITY, g->tid_main);
		const struct nl_api_info *a = &nl_api_info[NL_API_STREAM_CREATE_WITH_PRIORITY];

		if (c) {
			c->rec.flags |= NL_RF_OUT;
			c->rec.out = handle;
			set_arg(c, a->slot_out, 0x7ffd00002000ull);
			set_arg(c, a->slot_flags, blocking ? 0 : 1);
			set_arg(c, a->slot_prio, (uint64_t)(int64_t)-1);
		}
	}
	/* the other world of an undecidable program: a stream created before
	 * tracing made the other way (unsure_batches) */
	return add_stream(g, handle, 0, traced ? blocking : blocking != g->flip_untraced, false,
			  name);
}

/* ---- pipelines and ticks ---------------------------------------------------------- */

/* Bind batch T: its pipeline's spec, streams and events, its copy stream. */
static void bind_batch(struct gen *g, int T)
{
	int P = g->p->pipe[T];

	g->cp = P;
	g->s = P ? &g->spec1 : &g->p->spec;
	g->sM = g->pm[P][g->p->local[T] % g->ncopy[P]];
	g->sD = g->pd[P];
	g->sN = g->pn[P];
}

static void reused_events(struct gen *g, const struct rp_spec *s, int P)
{
	if (!s->fresh)
		for (int pu = 0; pu < RP_NPURPOSES; pu++)
			for (int k = 0; k < s->slots; k++)
				if (purpose_exists(s, pu))
					g->reused[P][pu][k] = event_new(g, g->tid_main, 0);
}

/* Pipeline 1's streams, made when its first phase starts and, recreated,
 * at each later one: the destroyed handles come back (new logical streams),
 * each to its own stream, or, where the allocator hands out the handle
 * freed last first (lifo), the copy stream's to the data-dist stream and
 * back. The destroys come in the order that makes such an allocator (the
 * live run's, on simhip) give the handles the program names. */
static void pipe1_streams(struct gen *g, uint64_t base, bool again)
{
	const struct rp_spec *s = &g->spec1;
	int old[2] = { g->pm[1][0], g->pd[1] };
	bool lifo = g->p->spec.lifo;
	uint64_t hm = base + 0x910, hd = base + 0xae0;

	for (int j = 0; again && j < 2; j++) {
		int k = lifo ? j : 1 - j; /* lifo: copy stream first */
		struct rp_call *c;

		if (old[k] < 0)
			continue;
		c = emit(g, NL_API_STREAM_DESTROY, g->tid_main);
		if (c)
			set_arg(c, nl_api_info[NL_API_STREAM_DESTROY].slot_stream, g->handle[old[k]]);
	}
	if (again && lifo && old[0] >= 0 && old[1] >= 0) {
		hm = g->handle[old[1]];
		hd = g->handle[old[0]];
	}
	g->mkpipe = 1;
	g->pm[1][0] = created_stream(g, hm, s->blocking, true, 'm');
	g->pd[1] = s->sparse ? created_stream(g, hd, s->blocking, true, 'd') : -1;
	g->pn[1] = -1;
	g->ncopy[1] = 1;
	g->mkpipe = -1;
	if (!again)
		reused_events(g, s, 1);
}

/* Tick i of pipeline P: batches lo..hi-1 of it are copied in this phase. */
static void tick(struct gen *g, int P, int i, int lo, int hi)
{
	const struct rp_spec *s = P ? &g->spec1 : &g->p->spec;
	const int *G = g->glob[P];

	g->now += 20000 + (uint64_t)below(&g->r, 30000);
	pool_queries(g);
	if (s->early && i >= lo) {
		bind_batch(g, G[i]);
		wait_stream(g, g->sC, g->sD, g->tid_main, RP_W_EARLY, G[i]);
	}
	/* midcopy: this tick's loader copies are made inside its stage, which
	 * launches at least once */
	g->copy_pending = s->midcopy && s->sparse && s->depth > s->lag && i + s->depth < hi &&
			  i + s->lag >= lo && i + s->lag < hi ? G[i + s->depth] : -1;
	bool held = g->copy_pending >= 0;

	for (int k = 0; k < RP_NITEMS; k++) {
		static void (*const item[RP_NITEMS])(struct gen *, int) = {
			[RP_I_PARTB] = item_partb, [RP_I_TAKE] = item_take, [RP_I_FWD] = item_fwd,
			[RP_I_BWD] = item_bwd,     [RP_I_COPY] = item_copy, [RP_I_SPARSE] = item_sparse,
		};
		int it = s->order[k], x = i; /* the batch (number in P) the item is for */
		bool on;

		switch (it) {
		case RP_I_PARTB:
			on = s->split && i >= lo;
			break;
		case RP_I_COPY:
			x = i + s->depth;
			on = x < hi && !held;
			break;
		case RP_I_SPARSE:
			x = i + s->lag;
			on = s->sparse && x >= lo && x < hi;
			break;
		default:
			on = i >= lo;
			break;
		}
		if (on) {
			bind_batch(g, G[x]);
			item[it](g, G[x]);
		}
	}
}

/* ---- the truth ------------------------------------------------------------------ */

static bool hb(const struct gen *g, int x, int y)
{
	int s = g->p->calls[x].sid;

	return g->clk[x][s] <= g->clk[y][s];
}

static void truth(struct gen *g)
{
	struct rp_prog *p = g->p;

	for (int T = 0; T < p->spec.nb; T++) {
		bool cs = false, sf = false, cf = false;

		for (int y = 0; y < p->n; y++) {
			const struct rp_call *cy = &p->calls[y];

			if (cy->batch != T || !cy->reads || cy->sid < 0)
				continue;
			for (int x = 0; x < p->n; x++) {
				const struct rp_call *cx = &p->calls[x];

				if (cx->batch != T || cx->sid < 0 || hb(g, x, y))
					continue;
				if (cy->stage == NL_STAGE_SPARSE && cx->stage == NL_STAGE_COPY)
					cs = true;
				else if (cy->stage == NL_STAGE_FORWARD && cx->stage == NL_STAGE_SPARSE)
					sf = true;
				else if (cy->stage == NL_STAGE_FORWARD && cx->stage == NL_STAGE_COPY)
					cf = true;
			}
		}
		struct rp_truth *t = &p->truth[T];

		t->all_mask = (cs ? 1u << NL_EDGE_COPY_SPARSE : 0) |
			      (sf ? 1u << NL_EDGE_SPARSE_FORWARD : 0) |
			      (cf ? 1u << NL_EDGE_COPY_FORWARD : 0);
		t->first = cs ? NL_EDGE_COPY_SPARSE : sf ? NL_EDGE_SPARSE_FORWARD
			   : cf ? (p->spec.sparse ? NL_EDGE_SPARSE_FORWARD : NL_EDGE_COPY_FORWARD) : -1;
		/* with a sparse stage, a forward unordered after the copy but after every
		 * sparse op is impossible unless the sparse stage was unordered (named
		 * first); the fallback above keeps the name in the stage's terms */
		if (cf && p->spec.sparse && !cs && !sf)
			t->all_mask |= 1u << NL_EDGE_SPARSE_FORWARD;
		t->verdict = t->first < 0 ? NL_VERDICT_TRUSTED : NL_VERDICT_UNTRUSTED;
		/* nothing on compute read it: its sparse stage is all there is */
		t->unconsumed = T >= p->spec.nb - rp_tail_of(&p->spec);
		if (t->unconsumed && t->first < 0)
			t->verdict = NL_VERDICT_SKIPPED;
	}
}

void rp_free(struct rp_prog *p)
{
	if (p) {
		free(p->calls);
		p->calls = NULL;
		p->n = p->cap = 0;
	}
}

static int build(struct rp_prog *p, const struct rp_spec *s, bool flip_untraced);

/* The same calls with the pretrace streams created the other way: a batch
 * whose truth differs there is one the calls cannot decide. Calls that
 * differ (they should not) leave every batch unsure. */
static int unsure_batches(struct rp_prog *p)
{
	struct rp_prog q;
	bool same;
	int err;

	err = build(&q, &p->spec, true);
	if (err)
		return err;
	same = q.n == p->n;
	for (int i = 0; i < p->n && same; i++)
		same = !memcmp(&q.calls[i].rec, &p->calls[i].rec, sizeof(p->calls[i].rec));
	p->undecidable = RP_U_NONE;
	p->other_known = same;
	for (int T = 0; T < p->spec.nb; T++) {
		const struct rp_truth *a = &p->truth[T], *b = &q.truth[T];

		p->other[T] = *b;

		p->unsure[T] = !same || a->verdict != b->verdict || a->first != b->first ||
			       a->all_mask != b->all_mask;
		if (p->unsure[T])
			p->undecidable = RP_U_PRETRACE_NULL;
	}
	rp_free(&q);
	return 0;
}

int rp_build(struct rp_prog *p, const struct rp_spec *s)
{
	int err = build(p, s, false);

	if (!err && p->undecidable == RP_U_PRETRACE_NULL) {
		err = unsure_batches(p);
		if (err)
			rp_free(p);
	}
	return err;
}

static int build(struct rp_prog *p, const struct rp_spec *s, bool flip_untraced)
{
	struct gen *g = calloc(1, sizeof(*g));
	uint64_t base = 0x55d000001000ull;
	int err;

	if (!g)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->spec = *s;
	p->pid = 31000 + (uint32_t)(s->seed % 1000);
	g->flip_untraced = flip_untraced;
	g->p = p;
	g->s = &p->spec;
	g->r = s->seed;
	g->now = 5000000000ull + (s->seed % 1000) * 1000000ull;
	p->start_ns = g->now;
	g->tid_main = p->pid;
	g->tid_loader = p->pid + 3;
	g->tid_autograd = p->pid + 5;
	g->tid_watchdog = p->pid + 9;
	g->snull = -1;
	g->sB = -1;
	g->next_handle = 0x55e000002000ull;
	g->done_ev = -1;
	if (p->spec.nb > RP_MAX_BATCHES)
		p->spec.nb = RP_MAX_BATCHES;
	/* a shrunk spec may have lost the order its draw made valid (a smaller
	 * depth brings copy and sparse of a batch into one tick) */
	order_fix(&p->spec);
	rp_schedule(&p->spec, p->pipe, p->local);
	g->spec1 = p->spec;
	g->spec1.depth = s->depth1 > 0 ? s->depth1 : 1;
	g->spec1.lag = s->lag1 > 0 && s->lag1 <= g->spec1.depth ? s->lag1 : 1;
	g->spec1.coll = g->spec1.split = g->spec1.noise_watchdog = false;
	if (s->ncopies1 > 0)
		g->spec1.ncopies = s->ncopies1;
	g->spec1.pretrace = false;
	order_fix(&g->spec1);
	for (int k = 0; k < RP_MAX_PIPES; k++)
		g->pd[k] = g->pn[k] = g->pm[k][0] = g->pm[k][1] = -1;

	/* set-up: the communicator (RCCL's done event), streams, events */
	if (s->coll) {
		struct rp_call *c = emit(g, NL_API_NCCL_COMM_INIT_RANK, g->tid_main);

		if (c)
			set_arg(c, nl_api_info[NL_API_NCCL_COMM_INIT_RANK].slot_count, 1);
		g->done_ev = event_new(g, g->tid_main, 1);
		/* the init's record comes at its return, after the create it made */
		if (c && g->p->n >= 2) {
			struct rp_call t = p->calls[p->n - 2];

			p->calls[p->n - 2] = p->calls[p->n - 1];
			p->calls[p->n - 1] = t;
			p->calls[p->n - 1].rec.ret_ns = g->now;
			p->calls[p->n - 2].rec.ts_ns = p->calls[p->n - 1].rec.ts_ns + 200;
			p->calls[p->n - 2].rec.ret_ns = p->calls[p->n - 2].rec.ts_ns + 100;
		}
	}
	g->mkpipe = 0;
	g->sM = created_stream(g, base, s->blocking, !s->pretrace, 'M');
	g->sD = s->sparse ? created_stream(g, base + 0x1d0, s->blocking, !s->pretrace, 'D') : -1;
	g->sN = s->coll ? created_stream(g, base + 0x3a0, s->blocking, !s->pretrace, 'N') : -1;
	g->pm[0][0] = g->sM;
	g->ncopy[0] = 1;
	if (s->shape == RP_S_ALTCOPY) {
		g->pm[0][1] = created_stream(g, base + 0x740, s->blocking, !s->pretrace, 'A');
		g->ncopy[0] = 2;
	}
	g->pd[0] = g->sD;
	g->pn[0] = g->sN;
	g->mkpipe = -1;
	switch (s->compute) {
	case RP_C_NULL:
		g->sC = add_stream(g, 0x0, 0, true, true, 'C');
		break;
	case RP_C_PERTHREAD:
		g->sC = add_stream(g, 0x2, g->tid_main, true, false, 'C');
		if (s->autograd)
			g->sB = add_stream(g, 0x2, g->tid_autograd, true, false, 'B');
		break;
	default:
		g->sC = created_stream(g, base + 0x570, false, true, 'C');
		break;
	}
	reused_events(g, s, 0);
	if (s->noise_pool)
		for (int k = 0; k < 4; k++)
			g->pool[k] = event_new(g, g->tid_main, 0);

	/* the loop: each pipeline's turns on compute in order; a pipeline's
	 * first turn starts with its fill phase (ticks -depth ..), pipeline 0's
	 * later turns take the batches it copied before the switch, pipeline
	 * 1 copies only the batches of its turn */
	int nb0 = 0;

	for (int T = 0; T < p->spec.nb; T++) {
		g->glob[p->pipe[T]][p->local[T]] = T;
		nb0 += !p->pipe[T];
	}
	for (int T = 0, turns1 = 0; T < p->spec.nb && !g->err;) {
		int P = p->pipe[T], a = p->local[T], b = a;

		for (; T < p->spec.nb && p->pipe[T] == P; T++)
			b++;
		if (!P) {
			for (int i = a ? a : -s->depth; i < b - rp_tail_of(s) && !g->err; i++)
				tick(g, 0, i, 0, nb0);
			continue;
		}
		if (!turns1++ || s->shape == RP_S_RECREATE)
			pipe1_streams(g, base, turns1 > 1);
		for (int i = a - g->spec1.depth; i < b && !g->err; i++)
			tick(g, 1, i, a, b);
	}
	/* torch.cuda.synchronize() at the end, then the process exits */
	pool_queries(g);
	emit(g, NL_API_DEVICE_SYNCHRONIZE, g->tid_main);
	p->end_ns = g->now + 100000;
	if (s->pretrace && s->compute == RP_C_NULL)
		p->undecidable = RP_U_PRETRACE_NULL;
	err = g->err;
	if (!err)
		truth(g);
	free(g->clk);
	free(g);
	if (err)
		rp_free(p);
	return err;
}

void rp_counted_calls(const struct rp_prog *p, bool *out)
{
	struct rp_row rows[RP_ROW_THREADS];
	struct nl_call prev, call;
	bool has_prev = false;

	memset(rows, 0, sizeof(rows));
	for (int i = 0; i < p->n; i++) {
		bool ok = nl_decode(&p->calls[i].rec, sizeof(p->calls[i].rec), &call) == 0;

		out[i] = ok && rp_launch_counted(rows, RP_ROW_THREADS, has_prev ? &prev : NULL, &call);
		has_prev = ok;
		prev = call;
	}
}
