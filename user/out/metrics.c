// SPDX-License-Identifier: MIT
/*
 * The metrics registry: one entry per traced process (at most
 * NL_METRICS_MAX_TARGETS, evicting as metrics.h says) fed with the engine's
 * batch audits, and the tool's counters, all under one mutex. The text
 * exposition is metrics_expo.c, the --metrics ADDR:PORT parser
 * metrics_addr.c. docs/metrics.md documents every family.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "out/metrics_int.h"

const struct nl_metrics_sec_bucket nl_metrics_sec_buckets[] = {
	{ "0.0001", 100000ull },     { "0.00025", 250000ull },   { "0.0005", 500000ull },
	{ "0.001", 1000000ull },     { "0.0025", 2500000ull },   { "0.005", 5000000ull },
	{ "0.01", 10000000ull },     { "0.025", 25000000ull },   { "0.05", 50000000ull },
	{ "0.1", 100000000ull },     { "0.25", 250000000ull },   { "0.5", 500000000ull },
	{ "1", 1000000000ull },      { "2.5", 2500000000ull },   { "5", 5000000000ull },
	{ "10", 10000000000ull },
};
_Static_assert(NL_ARRAY_SIZE(nl_metrics_sec_buckets) == NSEC_BUCKETS, "NSEC_BUCKETS counts them");

const struct nl_metrics_op_bucket nl_metrics_op_buckets[] = {
	{ "0", 0 }, { "1", 1 }, { "2", 2 }, { "4", 4 }, { "8", 8 }, { "16", 16 }, { "32", 32 },
	{ "64", 64 }, { "128", 128 },
};
_Static_assert(NL_ARRAY_SIZE(nl_metrics_op_buckets) == NOP_BUCKETS, "NOP_BUCKETS counts them");

struct nl_metrics *nl_metrics_new(const char *version)
{
	struct nl_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (pthread_mutex_init(&m->lock, NULL)) {
		free(m);
		return NULL;
	}
	snprintf(m->version, sizeof(m->version), "%s", version ? version : "");
	return m;
}

void nl_metrics_free(struct nl_metrics *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < m->nt; i++)
		free(m->t[i]);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct target *find(struct nl_metrics *m, uint32_t pid)
{
	for (unsigned i = 0; i < m->nt; i++)
		if (m->t[i]->pid == pid)
			return m->t[i];
	return NULL;
}

/* pid's entry, created when new; at the cap the process NL_EVICTS_BEFORE
 * all others makes room. NULL only without memory. */
static struct target *get(struct nl_metrics *m, uint32_t pid)
{
	struct target *t = find(m, pid);
	unsigned victim = 0;

	if (t)
		return t;
	if (m->nt < NL_METRICS_MAX_TARGETS) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		m->t[m->nt++] = t;
	} else {
		for (unsigned i = 1; i < m->nt; i++) {
			const struct target *a = m->t[i], *b = m->t[victim];

			if (NL_EVICTS_BEFORE(a, b))
				victim = i;
		}
		t = m->t[victim];
		memset(t, 0, sizeof(*t));
		m->evicted++;
	}
	t->pid = pid;
	t->alive = true;
	t->active_seq = ++m->seq;
	return t;
}

static void copy_label(char *dst, const char *src)
{
	snprintf(dst, NL_METRICS_LABEL_MAX + 1, "%s", src ? src : "");
}

void nl_metrics_set_target(struct nl_metrics *m, uint32_t pid, const char *container_id,
			   const char *pod_uid)
{
	struct target *t;

	pthread_mutex_lock(&m->lock);
	t = get(m, pid);
	if (t) {
		copy_label(t->container, container_id);
		copy_label(t->pod, pod_uid);
		t->alive = true;
		t->exit_seq = 0;
		t->active_seq = ++m->seq;
	}
	pthread_mutex_unlock(&m->lock);
}

void nl_metrics_target_exit(struct nl_metrics *m, uint32_t pid)
{
	struct target *t;

	pthread_mutex_lock(&m->lock);
	t = find(m, pid);
	if (t && t->alive) {
		t->alive = false;
		t->exit_seq = ++m->seq;
	}
	pthread_mutex_unlock(&m->lock);
}

static void observe(struct hist *h, uint64_t v, bool ops)
{
	size_t n = ops ? NOP_BUCKETS : NSEC_BUCKETS, i;

	for (i = 0; i < n; i++)
		if (v <= (ops ? nl_metrics_op_buckets[i].v : nl_metrics_sec_buckets[i].ns))
			break;
	h->b[i]++; /* i == n: +Inf only */
	h->count++;
	h->sum += v;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void nl_metrics_batch(struct nl_metrics *m, const struct nl_batch_audit *a)
{
	struct target *t;

	pthread_mutex_lock(&m->lock);
	t = get(m, a->pid);
	if (!t)
		goto out;
	t->active_seq = ++m->seq;
	t->last_batch_wall_ns = wall_ns();
	if (a->verdict >= 0 && a->verdict < NL_NVERDICTS)
		t->verdicts[a->verdict]++;
	for (int i = 0; i < NL_NSKIP; i++)
		if (a->skip_mask & (1u << i))
			t->skips[i]++;
	for (int i = 0; i < NL_NEDGES; i++)
		if (a->missing_mask & (1u << i))
			t->missing[i]++;
	/* a skipped batch's windows are partial (attach, exit, lost records):
	 * they would skew the distributions */
	if (a->verdict == NL_VERDICT_SKIPPED)
		goto out;
	for (int s = 0; s < NL_NSTAGES; s++) {
		const struct nl_stage_audit *st = &a->stage[s];

		if (!st->present || !st->ops || !st->first_ns || st->last_ns < st->first_ns)
			continue;
		t->stages_seen |= 1u << s;
		observe(&t->host[s], st->last_ns - st->first_ns, false);
		if (st->completion.done_by_ns && st->completion.done_by_ns >= st->first_ns)
			observe(&t->done[s], st->completion.done_by_ns - st->first_ns, false);
	}
	if (a->overlap_known)
		observe(&t->overlap, a->overlap_ns, false);
	for (int s = NL_STAGE_COPY; s <= NL_STAGE_SPARSE; s++)
		if (a->handoff[s].found)
			observe(&t->exposure[s], a->handoff[s].exposure, true);
out:
	pthread_mutex_unlock(&m->lock);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static void update_lost(struct nl_metrics *m)
{
	m->lost_total = max64(m->lost_total, m->c.lost_ringbuf + m->c.lost_stash);
}

void nl_metrics_summary(struct nl_metrics *m, const struct nl_summary *s)
{
	pthread_mutex_lock(&m->lock);
	m->c.records = max64(m->c.records, s->records);
	m->lost_total = max64(m->lost_total, s->lost_records);
	if (s->has_run_info) {
		const struct nl_run_info *r = &s->run;

		m->c.probes_attached = r->probes_attached;
		m->c.probes_missing = r->nprobes_missing;
		m->c.lost_ringbuf = max64(m->c.lost_ringbuf, r->lost_ringbuf);
		m->c.lost_stash = max64(m->c.lost_stash, r->lost_stash);
		m->c.bad_records = max64(m->c.bad_records, r->bad_records);
		if (r->cpu_ms / 1e3 > m->c.cpu_seconds)
			m->c.cpu_seconds = r->cpu_ms / 1e3;
		update_lost(m);
	}
	pthread_mutex_unlock(&m->lock);
}

void nl_metrics_set_counters(struct nl_metrics *m, const struct nl_metrics_counters *c)
{
	pthread_mutex_lock(&m->lock);
	m->c.records = max64(m->c.records, c->records);
	m->c.bad_records = max64(m->c.bad_records, c->bad_records);
	m->c.lost_ringbuf = max64(m->c.lost_ringbuf, c->lost_ringbuf);
	m->c.lost_stash = max64(m->c.lost_stash, c->lost_stash);
	if (c->cpu_seconds > m->c.cpu_seconds)
		m->c.cpu_seconds = c->cpu_seconds;
	/* gauges */
	m->c.probes_attached = c->probes_attached;
	m->c.probes_missing = c->probes_missing;
	m->c.targets = c->targets;
	update_lost(m);
	pthread_mutex_unlock(&m->lock);
}

static void sink_batch(void *ctx, const struct nl_batch_audit *a)
{
	nl_metrics_batch(ctx, a);
}

static void sink_summary(void *ctx, const struct nl_summary *s)
{
	nl_metrics_summary(ctx, s);
}

struct nl_sink nl_metrics_sink(struct nl_metrics *m)
{
	return (struct nl_sink){ .ctx = m, .batch = sink_batch, .summary = sink_summary };
}
