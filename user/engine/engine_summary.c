// SPDX-License-Identifier: MIT
/*
 * The summary (docs/output.md): what a process leaves when it is retired
 * (its streams, its line, its counts), whether the run's evidence is valid
 * and why not, and the summary emitted to the caller's sink.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine/engine_int.h"

static int mode_of(const uint64_t *hist)
{
	int best = -1;

	for (int d = 0; d < NL_DEPTH_MAX; d++)
		if (hist[d] && (best < 0 || hist[d] > hist[best]))
			best = d;
	return best;
}

static int grow(void **v, uint32_t *cap, uint32_t need, size_t size)
{
	uint32_t n = *cap ? *cap : 16;
	void *nv;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	nv = realloc(*v, (size_t)n * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = n;
	return 0;
}

#define STAGE_BIT(st) (1u << NL_STAGE_##st)

/* A stream without a role between the copy stream and compute: it did work
 * ordered after copy work (not through compute), and compute is ordered
 * after it. That is a producer stage the roles do not know (a data-dist
 * stream that appeared after learning in a process without a sparse
 * stage), so no batch audits its work. */
static bool unplaced_producer(const struct nl_proc *p, int pipe)
{
	const int cc = p->compute_slot;

	if (cc < 0)
		return false;
	for (uint32_t cp = 0; cp < p->w; cp++) {
		if (!p->s[cp].used || p->s[cp].role != NL_ROLE_COPY || p->s[cp].pipe != pipe)
			continue;
		for (uint32_t i = 0; i < p->w; i++) {
			const struct nl_stream *s = &p->s[i];
			uint32_t n = s->nring < NL_RING ? s->nring : NL_RING;
			bool work = false;

			if (!s->used || s->role != NL_ROLE_OTHER || (int)i == cc)
				continue;
			if (!s->vc[cp] || s->vc[cc] || !p->s[cc].vc[i])
				continue;
			for (uint32_t k = 0; k < n && !work; k++)
				work = s->ring[k].work;
			if (work)
				return true;
		}
	}
	return false;
}

/* The stages p has that no batch of it showed (docs/output.md,
 * "missing_stages"). A process that put no work on any stream is no
 * pipeline and lacks nothing. */
static uint32_t missing_stages(const struct nl_proc *p)
{
	uint32_t m = 0;
	bool work = false;

	for (uint32_t i = 0; i < p->w && !work; i++)
		work = p->s[i].used && p->s[i].ops;
	if (!p->has_copy)
		return work ? STAGE_BIT(COPY) : 0; /* no batch could be cut */
	for (int i = 0; i < p->npipes; i++) {
		const struct nl_pipe *q = &p->pipes[i];

		if (!q->stage_batches[NL_STAGE_COPY])
			m |= STAGE_BIT(COPY);
		if ((q->has_sparse && !q->stage_batches[NL_STAGE_SPARSE]) ||
		    unplaced_producer(p, i))
			m |= STAGE_BIT(SPARSE);
		if (!q->stage_batches[NL_STAGE_FORWARD])
			m |= STAGE_BIT(FORWARD);
	}
	return m;
}

/* Forward windows of all its pipelines. */
static uint64_t proc_ticks(const struct nl_proc *p)
{
	uint64_t t = 0;

	for (int i = 0; i < p->npipes; i++)
		t += (uint64_t)p->pipes[i].ticks;
	return t;
}

/* Append p's streams and its line to the vectors (the engine's, or a report's). */
static void describe_proc(const struct nl_proc *p, struct nl_stream_summary **ss, uint32_t *nss,
			  uint32_t *sscap, struct nl_proc_summary **ps, uint32_t *nps, uint32_t *pscap)
{
	struct nl_proc_summary *q;

	for (uint32_t i = 0; i < p->w; i++) {
		const struct nl_stream *s = &p->s[i];

		if (!s->used || (!s->ops && s->role == NL_ROLE_OTHER))
			continue;
		if (grow((void **)ss, sscap, *nss + 1, sizeof(**ss)))
			break;
		(*ss)[(*nss)++] = (struct nl_stream_summary){
			.pid = p->pid, .handle = s->key.handle, .tid = s->key.tid, .role = s->role,
			.pipeline = s->pipe, .ops = s->ops, .blocking = s->blocking,
			.created = s->history_known,
		};
	}
	if (grow((void **)ps, pscap, *nps + 1, sizeof(**ps)))
		return;
	q = &(*ps)[(*nps)++];
	*q = (struct nl_proc_summary){
		.pid = p->pid, .n = p->verdicts, .ticks = proc_ticks(p),
		.tick_ns = p->nfwd > 1 ? (p->last_fwd_ts - p->first_fwd_ts) / (p->nfwd - 1) : 0,
		.depth = mode_of(p->depth_hist), .has_copy = p->has_copy,
		.has_sparse = p->has_sparse, .mid_run = p->mid_run,
		.missing_stages = missing_stages(p), .npipes = p->has_copy ? (uint32_t)p->npipes : 0,
	};
	for (uint32_t i = 0; i < q->npipes; i++) {
		q->pipes[i].n = p->pipes[i].verdicts;
		q->pipes[i].has_sparse = p->pipes[i].has_sparse;
		for (uint32_t k = 0; k < p->w; k++)
			if (p->s[k].used && p->s[k].pipe == (int)i && !p->s[k].destroyed) {
				q->pipes[i].copy_streams += p->s[k].role == NL_ROLE_COPY;
				q->pipes[i].sparse_streams += p->s[k].role == NL_ROLE_SPARSE;
			}
	}
}

static void add_counts(struct nl_summary *s, const struct nl_proc *p)
{
	s->pipeline_ticks += proc_ticks(p);
	s->edges += p->edges;
	s->implicit_edges += p->implicit_edges;
	s->late_ops += p->late_ops;
	s->unplaced_streams += p->unplaced_streams;
	s->in_flight_ops += nl_in_flight_ops(p);
	s->evicted_streams += p->evicted_streams;
	s->evicted_events += p->evicted_events;
	s->evicted_batches += p->evicted_batches;
}

/* A process is done: its streams and counts join the engine's summary. */
void nl_proc_retire(struct nl_engine *e, int i)
{
	struct nl_proc *p = e->procs[i];

	describe_proc(p, &e->ss, &e->nss, &e->ss_cap, &e->ps, &e->nps, &e->ps_cap);
	add_counts(&e->sum, p);
	nl_proc_free(p);
	e->procs[i] = NULL;
	if (e->last_proc == i)
		e->last_proc = -1;
}

/* evidence_valid and why not (docs/output.md). The one counter that does
 * not make the evidence invalid is ignored_records: a call that failed did
 * nothing. A late op is stage work its batch's verdict never weighed. */
static void judge_evidence(const struct nl_engine *e, struct nl_summary *s)
{
	const struct nl_run_info *r = &s->run;
	uint32_t m = 0;

	for (uint32_t i = 0; i < s->nprocs; i++)
		s->missing_stages |= s->procs[i].missing_stages;
	const bool invalid[NL_NINVALID] = {
		[NL_INVALID_NO_BATCHES] = !s->batches,
		[NL_INVALID_UNTRUSTED] = s->untrusted,
		[NL_INVALID_SKIPPED] = s->skipped > s->unconsumed,
		[NL_INVALID_MISSING_STAGE] = s->missing_stages,
		[NL_INVALID_LOST_RECORDS] = s->lost_records || (s->has_run_info &&
								(r->lost_ringbuf || r->lost_stash)),
		[NL_INVALID_BAD_RECORDS] = s->has_run_info && r->bad_records,
		[NL_INVALID_UNTRACKED] = s->untracked_records,
		[NL_INVALID_EVICTED] = s->evicted_streams || s->evicted_events || s->evicted_batches,
		[NL_INVALID_PROBE_MISSING] = e->probe_missing,
		[NL_INVALID_LATE_OPS] = s->late_ops,
		[NL_INVALID_UNPLACED] = s->unplaced_streams,
		[NL_INVALID_IN_FLIGHT] = s->in_flight_ops,
	};

	for (int k = 0; k < NL_NINVALID; k++)
		m |= (uint32_t)invalid[k] << k;
	s->invalid_mask = m;
	s->evidence_valid = m == 0;
}

void nl_emit_summary(struct nl_engine *e)
{
	struct nl_summary s = e->sum;
	struct nl_stream_summary *ss = NULL;
	struct nl_proc_summary *ps = NULL;
	uint32_t nss = 0, sscap = 0, nps = 0, pscap = 0;
	uint64_t tsum = 0, tn = 0;

	/* the retired processes, then the live ones as they are now */
	if (!grow((void **)&ss, &sscap, e->nss ? e->nss : 1, sizeof(*ss)) && e->nss) {
		memcpy(ss, e->ss, e->nss * sizeof(*ss));
		nss = e->nss;
	}
	if (!grow((void **)&ps, &pscap, e->nps ? e->nps : 1, sizeof(*ps)) && e->nps) {
		memcpy(ps, e->ps, e->nps * sizeof(*ps));
		nps = e->nps;
	}
	for (uint32_t i = 0; i < e->o.max_procs; i++)
		if (e->procs[i]) {
			describe_proc(e->procs[i], &ss, &nss, &sscap, &ps, &nps, &pscap);
			add_counts(&s, e->procs[i]);
		}
	for (uint32_t i = 0; i < nps; i++)
		if (ps[i].tick_ns) {
			tsum += ps[i].tick_ns;
			tn++;
		}
	s.tick_ns = tn ? tsum / tn : 0;
	s.depth = mode_of(e->depth_hist);
	s.streams = ss;
	s.nstreams = nss;
	s.procs = ps;
	s.nprocs = nps;
	judge_evidence(e, &s);
	if (e->out.summary)
		e->out.summary(e->out.ctx, &s);
	free(ss);
	free(ps);
}
