// SPDX-License-Identifier: MIT
/*
 * The pairing engine's entry points: the process table, role learning (hold
 * records back, decide, replay), loss, exit and finish (the summary they
 * emit is engine_summary.c's). docs/engine.md describes the model.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/util.h"
#include "engine/engine_int.h"

static const char *const role_names[] = { "other", "copy", "sparse", "compute" };
static const char *const stage_names[] = { "copy", "sparse", "forward" };
static const char *const verdict_names[] = { "trusted", "untrusted", "skipped" };
static const char *const skip_names[NL_NSKIP] = {
	[NL_SKIP_LOST_RECORDS] = "lost_records",   [NL_SKIP_PROBE_MISSING] = "probe_missing",
	[NL_SKIP_ATTACHED_MID_BATCH] = "attached_mid_batch",
	[NL_SKIP_TARGET_EXITED] = "target_exited", [NL_SKIP_DETACHED] = "detached",
	[NL_SKIP_GRAPH_CAPTURE] = "graph_capture", [NL_SKIP_UNKNOWN_HANDLE] = "unknown_handle",
	[NL_SKIP_EVICTED] = "evicted", [NL_SKIP_PRETRACE_STREAM] = "pretrace_stream",
	[NL_SKIP_ATTACH_OFFSET] = "attach_offset", [NL_SKIP_NOT_CONSUMED] = "not_consumed",
};
static const char *const edge_names[NL_NEDGES] = {
	[NL_EDGE_COPY_SPARSE] = "copy->sparse",
	[NL_EDGE_SPARSE_FORWARD] = "sparse->forward",
	[NL_EDGE_COPY_FORWARD] = "copy->forward",
};

static const char *const invalid_names[NL_NINVALID] = {
	[NL_INVALID_NO_BATCHES] = "no_batches",     [NL_INVALID_UNTRUSTED] = "untrusted_batches",
	[NL_INVALID_SKIPPED] = "skipped_batches",   [NL_INVALID_MISSING_STAGE] = "missing_stage",
	[NL_INVALID_LOST_RECORDS] = "lost_records", [NL_INVALID_BAD_RECORDS] = "bad_records",
	[NL_INVALID_UNTRACKED] = "untracked_records", [NL_INVALID_EVICTED] = "evicted",
	[NL_INVALID_PROBE_MISSING] = "probe_missing",
	[NL_INVALID_LATE_OPS] = "late_ops",
	[NL_INVALID_UNPLACED] = "unplaced_work",
	[NL_INVALID_IN_FLIGHT] = "in_flight_at_attach",
};

#define NAME_OF(tab, i) ((i) >= 0 && (size_t)(i) < NL_ARRAY_SIZE(tab) ? (tab)[i] : "?")

const char *nl_role_name(int role)
{
	return NAME_OF(role_names, role);
}

const char *nl_stage_name(int stage)
{
	return NAME_OF(stage_names, stage);
}

const char *nl_verdict_name(int verdict)
{
	return NAME_OF(verdict_names, verdict);
}

const char *nl_skip_name(int reason)
{
	return NAME_OF(skip_names, reason);
}

const char *nl_edge_name(int edge)
{
	return NAME_OF(edge_names, edge);
}

const char *nl_invalid_name(int reason)
{
	return NAME_OF(invalid_names, reason);
}

bool nl_engine_api_matters(int api)
{
	if (api < 0 || api >= NL_API_COUNT)
		return false;
	switch (nl_api_info[api].kind) {
	case NL_K_COPY:
	case NL_K_COPY_SYNC:
	case NL_K_MEMSET:
	case NL_K_LAUNCH:
	case NL_K_GRAPH:
	case NL_K_EVENT_CREATE:
	case NL_K_EVENT_DESTROY:
	case NL_K_EVENT_RECORD:
	case NL_K_STREAM_WAIT:
	case NL_K_STREAM_CREATE:
		return true; /* ops, edges, generations, blocking flags */
	default:
		return false; /* evidence or collective counts only */
	}
}

static void set_defaults(struct nl_engine_opts *o)
{
	if (!o->max_streams)
		o->max_streams = 64;
	if (o->max_streams > NL_MAX_STREAMS_CAP)
		o->max_streams = NL_MAX_STREAMS_CAP;
	if (o->max_streams < 4)
		o->max_streams = 4;
	if (!o->max_events)
		o->max_events = 4096;
	if (!o->max_batches_in_flight)
		o->max_batches_in_flight = 32;
	if (o->max_batches_in_flight < 2)
		o->max_batches_in_flight = 2;
	if (!o->max_procs)
		o->max_procs = 64;
	if (!o->linger_ticks)
		o->linger_ticks = 2;
	if (!o->learn_records)
		o->learn_records = 16384;
	if (!o->learn_handoffs)
		o->learn_handoffs = 8;
	if (!o->learn_ns)
		o->learn_ns = 10000000000ull;
	if (o->nsparse > NL_ENGINE_MAX_SPARSE)
		o->nsparse = NL_ENGINE_MAX_SPARSE;
}

static int proc_index(struct nl_engine *e, uint32_t pid);

static void count_verdict(struct nl_verdict_counts *n, int verdict)
{
	n->batches++;
	if (verdict == NL_VERDICT_TRUSTED)
		n->trusted++;
	else if (verdict == NL_VERDICT_UNTRUSTED)
		n->untrusted++;
	else
		n->skipped++;
}

/* Every batch passes here on its way out to the caller's sink: the
 * per-process and per-pipeline counts of the summary. */
static void tally_batch(void *ctx, const struct nl_batch_audit *a)
{
	struct nl_engine *e = ctx;
	int i = proc_index(e, a->pid);

	if (i >= 0 && a->pipeline < (uint32_t)e->procs[i]->npipes) {
		struct nl_proc *p = e->procs[i];
		struct nl_pipe *q = &p->pipes[a->pipeline];

		count_verdict(&p->verdicts, a->verdict);
		count_verdict(&q->verdicts, a->verdict);
		for (int st = 0; st < NL_NSTAGES; st++)
			if (a->stage[st].ops && !(st == NL_STAGE_FORWARD && a->forward_adopted))
				q->stage_batches[st]++;
	}
	if (e->out.batch)
		e->out.batch(e->out.ctx, a);
}

struct nl_engine *nl_engine_new(const struct nl_engine_opts *o, const struct nl_sink *sink)
{
	struct nl_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	if (o)
		e->o = *o;
	set_defaults(&e->o);
	if (sink)
		e->out = *sink;
	e->sink = (struct nl_sink){ .ctx = e, .batch = tally_batch };
	e->procs = calloc(e->o.max_procs, sizeof(*e->procs));
	if (!e->procs) {
		free(e);
		return NULL;
	}
	e->last_proc = -1;
	return e;
}

static void free_missing_names(struct nl_engine *e)
{
	for (uint32_t i = 0; e->missing_names && i < e->sum.run.nprobes_missing; i++)
		free(e->missing_names[i]);
	free(e->missing_names);
	e->missing_names = NULL;
}

void nl_engine_free(struct nl_engine *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; i < e->o.max_procs; i++)
		nl_proc_free(e->procs[i]);
	free(e->procs);
	free(e->ss);
	free(e->ps);
	free_missing_names(e);
	free(e);
}

/* ---- processes ----------------------------------------------------------- */

static int proc_index(struct nl_engine *e, uint32_t pid)
{
	if (e->last_proc >= 0 && e->procs[e->last_proc] && e->procs[e->last_proc]->pid == pid)
		return e->last_proc;
	for (uint32_t i = 0; i < e->o.max_procs; i++)
		if (e->procs[i] && e->procs[i]->pid == pid) {
			e->last_proc = (int)i;
			return (int)i;
		}
	return -1;
}

static struct nl_proc *proc_get(struct nl_engine *e, uint32_t pid, int *err)
{
	int i = proc_index(e, pid);
	struct nl_proc *p;

	if (i >= 0)
		return e->procs[i];
	for (i = 0; i < (int)e->o.max_procs && e->procs[i]; i++)
		;
	if (i == (int)e->o.max_procs) {
		*err = -ENOSPC;
		return NULL;
	}
	p = nl_proc_new(e, pid);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	p->mid_run = !e->o.unannounced_from_start;
	e->procs[i] = p;
	e->last_proc = i;
	return p;
}

/* ---- learning ------------------------------------------------------------- */

static void replay(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c)
{
	if (c->api == NL_LOST_MARK)
		nl_apply_lost(e, p);
	else
		nl_apply(e, p, c);
}

/* A fill phase seen in what learning held back: the copy stream's
 * segments (its work ops up to each record) that end before any stream
 * waited on one of its records are the fill. K is the smallest size
 * NL_FILL_SURE segments in a row have there (in a short run traced from
 * its start, else its smallest segment after the fill), and every segment
 * (up to NL_FILL_MAX after the fill) is a multiple of K. A depth-n loop copied n
 * batches before its first hand-off, in one segment or in several cut by
 * records nothing waited on (an allocator's); the replay cuts a fill
 * segment of n * K work ops into n batches (segment_end) before the copy
 * stream itself has seen a steady size. K holds for the later segments of
 * the replay too (window_k): a wait_stream dropped with its record right
 * after the fill merges two batches before the stream has two steady
 * segments. */
#define NL_FILL_SURE 2
#define NL_FILL_MAX 8
#define NL_FILL_EVENTS 16
#define NL_FILL_OCCUPANTS 64
static uint32_t size_at(const uint32_t *pre, uint32_t npre, const uint32_t *post, uint32_t i)
{
	return i < npre ? pre[i] : post[i - npre];
}

/* A segment of `work` ops ended: the fill's (pre) until a stream waited on
 * one of the copy stream's records (handed), after it the window's (post).
 * False when the fill has more segments than are kept. */
static bool end_segment(uint32_t *pre, uint32_t *npre, uint32_t *post, uint32_t *npost,
			uint32_t *work, bool handed)
{
	if (*work && handed)
		post[(*npost)++] = *work;
	else if (*work && *npre < NL_FILL_MAX)
		pre[(*npre)++] = *work;
	else if (*work)
		return false;
	*work = 0;
	return true;
}

/* Call c created a stream on the handle of key (keyed as nl_apply_lifecycle does). */
static bool created_on(const struct nl_call *c, const struct nl_skey *key)
{
	struct nl_skey k;

	if (c->kind != NL_K_STREAM_CREATE || !(c->fields & NL_F_HANDLE) ||
	    ((c->fields & NL_F_RC) && c->rc != 0))
		return false;
	k = nl_handle_skey(c->handle);
	return nl_skey_eq(&k, key);
}

/* The segments of copy stream `key` in what learning held back, the
 * fill's (pre) and after (post); of the streams of the generations `gens`
 * on that handle (struct nl_hgen), or with NL_GENS_ALL of each one that
 * copied to the device. False when records were lost (the sizes are not
 * known) or the fill has more segments than are kept. */
static bool fill_segments(const struct nl_proc *p, const struct nl_skey *key, uint64_t gens,
			  uint32_t *pre, uint32_t *npre, uint32_t *post, uint32_t *npost)
{
	/* the generation of the handle's stream when learning began: the
	 * engine applied everything before what it held back */
	uint32_t base = nl_hgen_get(&p->hgen, key->handle);
	uint64_t rec[NL_FILL_EVENTS]; /* events the copy stream recorded, newest last */
	uint32_t copy_tid = 0, work = 0, nev = 0, occ = 0;
	bool handed = false, computed = false;
	bool copies[NL_FILL_OCCUPANTS] = { false };

	/* which of the streams on the handle, in turn, copied to the device */
	for (uint32_t i = 0; i < p->nlbuf; i++) {
		const struct nl_call *c = &p->lbuf[i];
		struct nl_skey k = nl_call_skey(c);

		if (created_on(c, key) && occ + 1 < NL_FILL_OCCUPANTS)
			occ++;
		copies[occ] |= nl_skey_eq(&k, key) && nl_kind_is_work(c->kind) && nl_call_is_h2d(c);
	}
	occ = 0;
	*npre = *npost = 0;
	for (uint32_t i = 0; i < p->nlbuf && *npost < NL_FILL_MAX; i++) {
		const struct nl_call *c = &p->lbuf[i];
		struct nl_skey k;
		bool mine;

		if (c->api == NL_LOST_MARK)
			return false;
		if ((c->fields & NL_F_RC) && c->rc != 0)
			continue;
		k = nl_call_skey(c);
		mine = nl_skey_eq(&k, key);
		/* a stream created on the handle is another: its ops are not
		 * the copy stream's unless it copies to the device too (a
		 * data-dist stream takes the handle where an allocator hands
		 * out the one freed last first) */
		if (created_on(c, key) && occ + 1 < NL_FILL_OCCUPANTS)
			occ++;
		mine &= gens == NL_GENS_ALL ? copies[occ] : nl_gen_in(gens, base + occ);
		if (c->kind == NL_K_STREAM_WAIT && !mine && !handed)
			for (uint32_t j = 0; j < nev && !handed; j++)
				handed = rec[j] == c->event;
		/* the thread that copies put work on compute since its last copy:
		 * the segment ends there too, as it does live (copy_segment) */
		if (mine && nl_kind_is_work(c->kind) && work && computed && c->tid == copy_tid &&
		    !end_segment(pre, npre, post, npost, &work, handed))
			return false;
		/* the copy stream waits (on compute: buffer reuse) after its
		 * copies: the next copies are the next batch's, as live */
		if (c->kind == NL_K_STREAM_WAIT && mine && work &&
		    !end_segment(pre, npre, post, npost, &work, handed))
			return false;
		if (c->kind == NL_K_EVENT_RECORD && mine) {
			if (!end_segment(pre, npre, post, npost, &work, handed))
				return false;
			if (nev == NL_FILL_EVENTS)
				memmove(rec, rec + 1, --nev * sizeof(rec[0]));
			rec[nev++] = c->event;
		} else if (mine && nl_kind_is_work(c->kind)) {
			work++;
			copy_tid = c->tid;
			computed = false;
		} else if (nl_kind_is_work(c->kind) && c->tid == copy_tid &&
			   nl_skey_eq(&k, &p->compute_key)) {
			computed = true;
		}
	}
	return true;
}

/* The smallest size NL_FILL_SURE segments in a row have (0: none). */
static uint32_t sure_size(const uint32_t *pre, uint32_t npre, const uint32_t *post, uint32_t npost)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i + NL_FILL_SURE <= npre + npost; i++) {
		uint32_t n = 1, c = size_at(pre, npre, post, i);

		while (n < NL_FILL_SURE && size_at(pre, npre, post, i + n) == c)
			n++;
		if (n == NL_FILL_SURE && (!k || c < k))
			k = c;
	}
	return k;
}

/* The smallest size NL_FILL_SURE steady segments (after the fill) in a row
 * of some copy stream have (0: none). */
static uint32_t steady_size(uint32_t post[][NL_FILL_MAX], const uint32_t *npost, uint32_t nq)
{
	uint32_t k = 0;

	for (uint32_t q = 0; q < nq; q++) {
		uint32_t c = sure_size(NULL, 0, post[q], npost[q]);

		if (c && (!k || c < k))
			k = c;
	}
	return k;
}

static bool all_multiples(uint32_t pre[][NL_FILL_MAX], const uint32_t *npre,
			  uint32_t post[][NL_FILL_MAX], const uint32_t *npost, uint32_t nq, uint32_t k)
{
	for (uint32_t q = 0; q < nq; q++)
		for (uint32_t i = 0; i < npre[q] + npost[q]; i++)
			if (size_at(pre[q], npre[q], post[q], i) % k)
				return false;
	return true;
}

static bool key_in(const struct nl_skey *keys, int n, const struct nl_skey *k)
{
	for (int q = 0; q < n; q++)
		if (nl_skey_eq(k, &keys[q]))
			return true;
	return false;
}

/* Compute's steps in a stretch of its work: the step's first two kernels
 * (named, different, same thread), and each launch of them again in a
 * row. */
struct step_count {
	uint64_t first[2], prev;
	uint32_t nfirst, steps, tid;
};

static void count_step(struct step_count *sc, const struct nl_call *c, uint64_t sig)
{
	if (sc->nfirst < 2 && sig &&
	    (!sc->nfirst || (c->tid == sc->tid && sc->prev == sc->first[0] && sig != sc->first[0]))) {
		sc->tid = c->tid;
		sc->first[sc->nfirst++] = sig;
		sc->steps += sc->nfirst == 2;
	} else if (sc->nfirst == 2 && c->tid == sc->tid && sc->prev == sc->first[0] &&
		   sig == sc->first[1]) {
		sc->steps++;
	}
	if (c->tid == sc->tid)
		sc->prev = sig;
}

/* A run traced from its start that ended while its roles were learned:
 * its copy ops over compute's takes (a wait on a producer's record after
 * work of compute's own, or its first), when that divides, or over one
 * more when only that does and compute worked before its first take, or
 * over its steps when only that count does (or when no other stream
 * copied to the device and there are more steps than takes), counting
 * the work before the first take as a step where it began with the
 * step's first kernel; 0 otherwise.
 * Only the first (sure) when `sure` and another stream copied to the
 * device: its steps may be another pipeline's, its copies not counted. */
static uint32_t per_take(const struct nl_proc *p, bool sure)
{
	uint64_t ev[NL_FILL_EVENTS];
	bool prod[NL_FILL_EVENTS], worked = true, early = false;
	uint64_t early_sig = 0; /* compute's first work op before its first take */
	/* compute's steps after its first take, and before it */
	struct step_count sc = { { 0, 0 }, 0, 0, 0, 0 }, pre = { { 0, 0 }, 0, 0, 0, 0 };
	uint32_t copies = 0, takes = 0, nev = 0, other = 0, steps, copy_tid = 0;
	bool one_thread = true; /* every copy made by one thread */

	for (uint32_t i = 0; i < p->nlbuf; i++) {
		const struct nl_call *c = &p->lbuf[i];
		struct nl_skey k;
		uint32_t j;

		if (c->api == NL_LOST_MARK)
			return 0;
		if ((c->fields & NL_F_RC) && c->rc != 0)
			continue;
		k = nl_call_skey(c);
		if (c->kind == NL_K_EVENT_RECORD && (c->fields & NL_F_EVENT)) {
			for (j = 0; j < nev && ev[j] != c->event; j++)
				;
			if (j == nev && nev == NL_FILL_EVENTS)
				return 0;
			if (j == nev)
				ev[nev++] = c->event;
			prod[j] = key_in(p->copy_keys, p->ncopy_keys, &k) ||
				  key_in(p->sparse_keys, p->nsparse, &k);
		} else if (nl_skey_eq(&k, &p->compute_key) && c->kind == NL_K_STREAM_WAIT &&
			   (c->fields & NL_F_EVENT)) {
			for (j = 0; j < nev && ev[j] != c->event; j++)
				;
			if (j < nev && prod[j] && worked) {
				takes++;
				worked = false;
			}
		} else if (nl_skey_eq(&k, &p->compute_key) && nl_kind_is_work(c->kind)) {
			uint64_t sig = c->kind == NL_K_LAUNCH && (c->fields & NL_F_FN) ? nl_call_sig(c) : 0;

			worked = true;
			if (!takes && !early)
				early_sig = sig;
			early |= !takes;
			count_step(takes ? &sc : &pre, c, sig);
		} else if (key_in(p->copy_keys, p->ncopy_keys, &k) && nl_kind_is_work(c->kind)) {
			copies++;
			if (!copy_tid)
				copy_tid = c->tid;
			one_thread &= c->tid == copy_tid;
		} else if (nl_kind_is_work(c->kind) && nl_call_is_h2d(c)) {
			other++;
		}
	}
	steps = sc.steps;
	sure &= other > 0;
	/* compute's work before its first take: the first batch's forward,
	 * its take dropped with its record, when only that count divides */
	if (!sure && takes && copies % takes && early && copies % (takes + 1) == 0)
		return copies / (takes + 1);
	/* a take dropped with its record leaves its step begun again inside
	 * the window before: the step's two first kernels again in a row
	 * (launches named) count it, when only that count divides, or when
	 * no other stream copied to the device (its steps would count too) */
	if (!sure && takes && steps > takes && copies % steps == 0 &&
	    (copies % takes || !other))
		return copies / steps;
	/* and compute's work before its first take, begun with the step's
	 * first kernel, is a step more: the first batch's forward, its take
	 * dropped (random program 33126: three batches copied before one
	 * record, one take, two steps after it; the batches merged); where
	 * its steps begin with the same two kernels, each of them (random
	 * program 48010: two steps before the first take), where the thread
	 * that launches them made every copy (with a loader thread copying,
	 * the count held, but batches cut from its merged segments were
	 * accused: random program 94871) */
	if (sc.nfirst == 2 && pre.nfirst == 2 && pre.first[0] == sc.first[0] &&
	    pre.first[1] == sc.first[1] && one_thread && copy_tid == pre.tid)
		steps += pre.steps;
	else if (early && early_sig && sc.nfirst == 2 && early_sig == sc.first[0])
		steps++;
	else
		return takes && copies % takes == 0 ? copies / takes : 0;
	if (!sure && takes && steps > takes && copies % steps == 0 && (copies % takes || !other))
		return copies / steps;
	return takes && copies % takes == 0 ? copies / takes : 0;
}

/* The smallest of m (0: none yet) and the segment sizes v[from..n); sizes
 * of 0 left out where nonzero, else taken as any other (the next one
 * then replaces it). */
static uint32_t smallest_from(const uint32_t *v, uint32_t from, uint32_t n, uint32_t m,
			      bool nonzero)
{
	for (uint32_t i = from; i < n; i++)
		if ((v[i] || !nonzero) && (!m || v[i] < m))
			m = v[i];
	return m;
}

/* Every copy stream of the first pipeline (batch i on M[i % 2] copies the
 * same batch size on each): K from any one's segments, every segment of
 * every one a multiple of it. */
static void learn_fill(struct nl_engine *e, struct nl_proc *p)
{
	uint32_t pre[NL_MAX_COPY_KEYS][NL_FILL_MAX], post[NL_MAX_COPY_KEYS][NL_FILL_MAX];
	uint32_t npre[NL_MAX_COPY_KEYS], npost[NL_MAX_COPY_KEYS], k = 0, nq = p->ncopy_keys;
	bool cut = false, any = false;

	p->fill_k = p->window_k = 0;
	if (!nq || nq > NL_MAX_COPY_KEYS || e->o.no_copy_split)
		return;
	for (uint32_t q = 0; q < nq; q++) {
		if (!fill_segments(p, &p->copy_keys[q], p->copy_gens[q], pre[q], &npre[q], post[q],
				   &npost[q]))
			return;
		any |= npre[q] > 0;
	}
	if (!any)
		return;
	/* K: the smallest size NL_FILL_SURE segments in a row of one stream
	 * have; every segment there a multiple of it */
	for (uint32_t q = 0; q < nq; q++) {
		uint32_t c = sure_size(pre[q], npre[q], post[q], npost[q]);

		if (c && (!k || c < k))
			k = c;
	}
	/* A short run traced from its start (a smoke test, an evaluation
	 * round) may end before two steady segments: then its smallest steady
	 * segment, when every segment is a multiple of it. Without one, the
	 * smallest fill segment after the first: a take dropped with its
	 * record leaves the fill's batches open until the copying thread's
	 * forward, and the next batch's copies, closed by the first hand-off's
	 * record, are a fill segment too. Not after an attach in the middle of
	 * a run, where nothing held back is a fill. */
	for (uint32_t q = 0; !k && !p->mid_run && q < nq; q++)
		k = smallest_from(post[q], 0, npost[q], k, false);
	for (uint32_t q = 0; !k && !p->mid_run && q < nq; q++)
		k = smallest_from(pre[q], 1, npre[q], k, false);
	/* A smoke run that ended while its roles were learned, whose loader
	 * copied every batch before the first record: no segment after the
	 * fill has a copy. Its copy ops over compute's takes. */
	if (!k && !p->mid_run && p->exited)
		k = per_take(p, false);
	/* Without two steady segments in a row, K came from the fill: a fill
	 * of two batches before the first record, then one steady segment of
	 * two (the next wait dropped with its record, or the run too short),
	 * look like two copies a batch. Compute's takes count the batches of
	 * a run that ended while its roles were learned. */
	else if (k && !p->mid_run && p->exited && !steady_size(post, npost, nq)) {
		uint32_t t = per_take(p, true);

		if (t && t < k && k % t == 0)
			k = t;
	}
	/* Two in a row can be a merge each: a take dropped with its record
	 * right after a fill of two batches makes the first steady segment
	 * as large as the fill. Where some segment is not a multiple of
	 * their size, a run traced from its start takes its smallest steady
	 * segment, when every segment is a multiple of that. */
	if (k && !p->mid_run && !all_multiples(pre, npre, post, npost, nq, k)) {
		uint32_t m = 0;

		for (uint32_t q = 0; q < nq; q++)
			m = smallest_from(post[q], 0, npost[q], m, false);
		k = m;
	}
	/* Not all multiples of that either: the smallest segment after the
	 * fill's first, when every segment is a multiple of it. An evaluation
	 * pipeline learned first, each turn copying two batches before one
	 * record, its first take dropped: the turn's second segment is one
	 * batch, and its second turn's fill is a steady segment of two. Before,
	 * nothing cut the first turn's fill, and its two batches were audited
	 * as one (random program 41274448). */
	if (k && !p->mid_run && !all_multiples(pre, npre, post, npost, nq, k)) {
		uint32_t m = 0;

		for (uint32_t q = 0; q < nq; q++) {
			m = smallest_from(pre[q], 1, npre[q], m, true);
			m = smallest_from(post[q], 0, npost[q], m, true);
		}
		k = m;
	}
	if (k && !all_multiples(pre, npre, post, npost, nq, k))
		return;
	p->window_k = k;
	for (uint32_t q = 0; q < nq; q++)
		for (uint32_t i = 0; k && i < npre[q]; i++)
			cut |= pre[q][i] > k;
	if (cut)
		p->fill_k = k;
}

/* Every copy to the device on the stream of key, in what learning held
 * back, was made by a thread that recorded an event on it there: no
 * loader thread copies ahead of the loop's records. */
static bool tid_in(const uint32_t *tids, uint32_t n, uint32_t tid)
{
	for (uint32_t j = 0; j < n; j++)
		if (tids[j] == tid)
			return true;
	return false;
}

static bool copies_where_recorded(const struct nl_proc *p, const struct nl_skey *key)
{
	uint32_t tids[8], n = 0;

	for (uint32_t i = 0; i < p->nlbuf; i++) {
		const struct nl_call *c = &p->lbuf[i];
		struct nl_skey k = nl_call_skey(c);

		if (c->kind != NL_K_EVENT_RECORD || !nl_skey_eq(&k, key) || tid_in(tids, n, c->tid))
			continue;
		if (n == 8)
			return false;
		tids[n++] = c->tid;
	}
	for (uint32_t i = 0; i < p->nlbuf; i++) {
		const struct nl_call *c = &p->lbuf[i];
		struct nl_skey k = nl_call_skey(c);

		if (nl_kind_is_work(c->kind) && nl_call_is_h2d(c) && nl_skey_eq(&k, key) &&
		    !tid_in(tids, n, c->tid))
			return false;
	}
	return n > 0;
}

/* Streams outside the first pipeline that copy to the device in what
 * learning held back (another pipeline's copy streams, found by their
 * edges in the replay): each one's fill size as learn_fill finds it, from
 * its own segments only (the smallest size NL_FILL_SURE segments in a row
 * have, every segment a multiple of it), kept where a fill segment is
 * larger. A short run whose learning never ended may have learned an
 * evaluation pipeline first, whose every turn copies two batches before
 * one record; the training pipeline's merged fill is then cut by its own
 * steady segments. */
static void learn_other_fills(struct nl_engine *e, struct nl_proc *p)
{
	p->nxfill = 0;
	if (e->o.no_copy_split || p->mid_run)
		return;
	for (uint32_t i = 0; i < p->nlbuf && p->nxfill < NL_MAX_COPY_KEYS; i++) {
		const struct nl_call *c = &p->lbuf[i];
		uint32_t pre[1][NL_FILL_MAX], post[1][NL_FILL_MAX], npre, npost, k;
		struct nl_skey key = nl_call_skey(c);
		bool cut = false, seen = false;

		if (!nl_kind_is_work(c->kind) || !nl_call_is_h2d(c) ||
		    key_in(p->copy_keys, p->ncopy_keys, &key) || nl_skey_eq(&key, &p->compute_key))
			continue;
		for (int q = 0; q < p->nxfill; q++)
			seen |= nl_skey_eq(&key, &p->xfill[q].key);
		if (seen || !fill_segments(p, &key, NL_GENS_ALL, pre[0], &npre, post[0], &npost))
			continue;
		k = sure_size(pre[0], npre, post[0], npost);
		if (k && !all_multiples(pre, &npre, post, &npost, 1, k))
			k = 0;
		/* none two in a row: its smallest segment after the fill, as
		 * learn_fill takes it for the first pipeline. A pipeline learned
		 * second at depth 3, its fill of three batches before one record,
		 * a redundant wait of its data-dist stream dropped with its
		 * record, then one batch per record: before, the fill stayed one
		 * batch, and the next was accused copy->sparse (random program
		 * 48912157). Not where a loader thread copies: its copies run
		 * ahead of the loop's records, and a segment of two may hold
		 * two batches of one copy (47713144) */
		if (!k && copies_where_recorded(p, &key)) {
			k = smallest_from(post[0], 0, npost, 0, true);
			if (k && !all_multiples(pre, &npre, post, &npost, 1, k))
				k = 0;
		}
		for (uint32_t j = 0; k && j < npre; j++)
			cut |= pre[0][j] > k;
		p->xfill[p->nxfill].key = key;
		p->xfill[p->nxfill++].k = cut ? k : 0;
	}
}

uint32_t nl_other_fill_k(const struct nl_proc *p, const struct nl_skey *key)
{
	for (int q = 0; q < p->nxfill; q++)
		if (nl_skey_eq(key, &p->xfill[q].key))
			return p->xfill[q].k;
	return 0;
}

/* Decide the roles and replay what was held back. Without a copy stream
 * yet (and not final) the records are applied anyway and learning goes on
 * with an empty buffer: the state stays continuous. */
static void end_learning(struct nl_engine *e, struct nl_proc *p, bool final)
{
	bool decided = nl_learn_decide(e, p) || final;
	uint32_t n = p->nlbuf;

	if (decided)
		p->learning = false;
	/* a second pipeline that ran while the roles were learned is found in
	 * the replay, by the same edges as later */
	p->discovering = decided && !e->o.has_copy_stream && !e->o.has_sparse_streams;
	if (decided) {
		learn_fill(e, p);
		learn_other_fills(e, p);
	}
	p->nlbuf = 0;
	for (uint32_t i = 0; i < n; i++)
		replay(e, p, &p->lbuf[i]);
	p->window_k = 0;
	p->nxfill = 0;
	if (decided) {
		free(p->lbuf);
		p->lbuf = NULL;
		nl_learn_free(&p->learn);
		/* learned, not given: later streams earn their roles by edges */
		p->keys_final = !e->o.has_copy_stream && !e->o.has_sparse_streams;
	}
}

static void hold(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c)
{
	if (!p->nlbuf)
		p->lfirst_ts = c->ts_ns;
	p->lbuf[p->nlbuf++] = *c;
	if (c->api != NL_LOST_MARK && nl_learn_note(e, p, c))
		end_learning(e, p, false);
	else if (p->nlbuf == e->o.learn_records ||
		 (c->ts_ns > p->lfirst_ts && c->ts_ns - p->lfirst_ts > e->o.learn_ns))
		end_learning(e, p, false);
}

/* ---- entry points -------------------------------------------------------- */

int nl_engine_feed(struct nl_engine *e, const struct nl_call *c)
{
	struct nl_proc *p;
	int err = 0;

	if (!e || !c || c->api >= NL_API_COUNT || c->kind != nl_api_info[c->api].kind)
		return -EINVAL;
	if (e->finished)
		return -ESHUTDOWN;
	e->sum.records++;
	p = proc_get(e, c->pid, &err);
	if (!p) {
		e->sum.untracked_records++;
		return err;
	}
	p->records++;
	if (p->learning)
		hold(e, p, c);
	else
		nl_apply(e, p, c);
	return 0;
}

void nl_engine_attach(struct nl_engine *e, uint32_t pid, uint64_t ts_ns, bool mid_run)
{
	int err = 0;
	struct nl_proc *p = e && !e->finished ? proc_get(e, pid, &err) : NULL;

	if (!p)
		return;
	p->announced = true;
	p->mid_run = mid_run;
	p->attach_ts = ts_ns;
}

static void lost_one(struct nl_engine *e, struct nl_proc *p, uint64_t count, uint64_t ts)
{
	if (p->learning && p->nlbuf == e->o.learn_records)
		end_learning(e, p, false);
	if (p->learning) {
		struct nl_call m = { .pid = p->pid, .api = NL_LOST_MARK, .ts_ns = ts,
				     .count = count };

		/* what learning decides from the records held (roles, the
		 * fill, segment sizes) holds for the batches before the loss
		 * too: none of them is judged either */
		p->loss_blind = true;
		hold(e, p, &m);
	} else {
		nl_apply_lost(e, p);
	}
}

void nl_engine_lost(struct nl_engine *e, uint32_t pid, uint64_t count, uint64_t ts_ns)
{
	struct nl_proc *p;
	int err = 0;

	if (!e || e->finished)
		return;
	e->sum.lost_records += count;
	if (pid == 0) {
		/* a process first seen after this may have lost its first records */
		if (ts_ns > e->loss_until)
			e->loss_until = ts_ns;
		for (uint32_t i = 0; i < e->o.max_procs; i++)
			if (e->procs[i])
				lost_one(e, e->procs[i], count, ts_ns);
		return;
	}
	p = proc_get(e, pid, &err);
	if (p)
		lost_one(e, p, count, ts_ns);
}

void nl_engine_probe_missing(struct nl_engine *e, uint32_t pid, int api)
{
	const uint32_t bit = 1u << NL_SKIP_PROBE_MISSING;
	struct nl_proc *p;
	int err = 0;

	if (!e || e->finished || !nl_engine_api_matters(api))
		return;
	e->probe_missing = true;
	if (pid == 0) {
		e->skip_all_new |= bit;
		for (uint32_t i = 0; i < e->o.max_procs; i++)
			if (e->procs[i]) {
				e->procs[i]->skip_all |= bit;
				nl_skip_open(e->procs[i], NL_SKIP_PROBE_MISSING);
			}
		return;
	}
	p = proc_get(e, pid, &err);
	if (p) {
		p->skip_all |= bit;
		nl_skip_open(p, NL_SKIP_PROBE_MISSING);
	}
}

void nl_engine_set_run_info(struct nl_engine *e, const struct nl_run_info *ri)
{
	uint32_t n = 0;

	if (!e || !ri)
		return;
	free_missing_names(e);
	e->sum.run = *ri;
	e->sum.run.probes_missing = NULL;
	e->sum.run.nprobes_missing = 0;
	e->sum.has_run_info = true;
	if (ri->nprobes_missing && ri->probes_missing) {
		e->missing_names = calloc(ri->nprobes_missing, sizeof(char *));
		for (uint32_t i = 0; e->missing_names && i < ri->nprobes_missing; i++) {
			const char *name = ri->probes_missing[i] ? ri->probes_missing[i] : "?";
			size_t len = strlen(name) + 1;
			char *copy = malloc(len);

			if (!copy)
				break;
			memcpy(copy, name, len);
			e->missing_names[n++] = copy;
		}
	}
	e->sum.run.nprobes_missing = n;
	e->sum.run.probes_missing = (const char *const *)e->missing_names;
}

void nl_engine_exit(struct nl_engine *e, uint32_t pid, uint64_t ts_ns)
{
	int i = e ? proc_index(e, pid) : -1;
	struct nl_proc *p;

	if (i < 0)
		return;
	p = e->procs[i];
	p->exited = true;
	if (p->learning)
		end_learning(e, p, true);
	for (uint32_t k = 0; k < p->w; k++)
		if (p->s[k].used)
			nl_fill_guess_ends(e, p, (int)k, false);
	nl_end_open_segments(e, p);
	nl_drain(e, p, ts_ns, true);
	nl_proc_retire(e, i);
}

void nl_engine_report(struct nl_engine *e)
{
	if (e)
		nl_emit_summary(e);
}

void nl_engine_finish(struct nl_engine *e, uint64_t ts_ns)
{
	if (!e || e->finished)
		return;
	for (uint32_t i = 0; i < e->o.max_procs; i++) {
		struct nl_proc *p = e->procs[i];

		if (!p)
			continue;
		if (p->learning)
			end_learning(e, p, true);
		nl_drain(e, p, ts_ns, false);
		nl_proc_retire(e, (int)i);
	}
	e->finished = true;
	nl_emit_summary(e);
}
