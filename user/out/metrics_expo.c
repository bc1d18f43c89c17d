// SPDX-License-Identifier: MIT
/*
 * The metrics registry rendered in the Prometheus text exposition format
 * 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/): the
 * registry is copied under its mutex and formatted outside it, processes in
 * pid order, label values escaped. The registry is metrics.c;
 * docs/metrics.md documents every family.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/metrics_int.h"

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* Room for n more bytes and a NUL; false (and oom set) without memory. */
static bool sb_reserve(struct sbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return false;
	if (b->cap - b->len > n)
		return true;
	cap = b->cap * 2 > b->len + n + 1 ? b->cap * 2 : b->len + n + 1;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	while (!b->oom) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		sb_reserve(b, (size_t)n);
	}
}

static void sb_append(struct sbuf *b, const char *s, size_t n)
{
	if (!sb_reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* A label value: backslash, double quote and line feed escaped. */
static void sb_label_value(struct sbuf *b, const char *v)
{
	for (;;) {
		size_t n = strcspn(v, "\\\"\n");

		sb_append(b, v, n);
		v += n;
		if (!*v)
			return;
		sb_append(b, *v == '\n' ? "\\n" : *v == '"' ? "\\\"" : "\\\\", 2);
		v++;
	}
}

static void family(struct sbuf *b, const char *name, const char *type, const char *help)
{
	sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* {pid="..",container="..",pod_uid=".."[,k="v"][,le="x"]} */
static void target_labels(struct sbuf *b, const struct target *t, const char *k, const char *v,
			  const char *le)
{
	sb_printf(b, "{pid=\"%" PRIu32 "\",container=\"", t->pid);
	sb_label_value(b, t->container);
	sb_printf(b, "\",pod_uid=\"");
	sb_label_value(b, t->pod);
	sb_printf(b, "\"");
	if (k) {
		sb_printf(b, ",%s=\"", k);
		sb_label_value(b, v);
		sb_printf(b, "\"");
	}
	if (le)
		sb_printf(b, ",le=\"%s\"", le);
	sb_printf(b, "}");
}

static void hist_series(struct sbuf *b, const char *name, const struct target *t, const char *k,
			const char *v, const struct hist *h, bool ops)
{
	size_t n = ops ? NOP_BUCKETS : NSEC_BUCKETS;
	uint64_t cum = 0;

	for (size_t i = 0; i < n; i++) {
		cum += h->b[i];
		sb_printf(b, "%s_bucket", name);
		target_labels(b, t, k, v, ops ? nl_metrics_op_buckets[i].le : nl_metrics_sec_buckets[i].le);
		sb_printf(b, " %" PRIu64 "\n", cum);
	}
	sb_printf(b, "%s_bucket", name);
	target_labels(b, t, k, v, "+Inf");
	sb_printf(b, " %" PRIu64 "\n", h->count);
	sb_printf(b, "%s_sum", name);
	target_labels(b, t, k, v, NULL);
	if (ops)
		sb_printf(b, " %" PRIu64 "\n", h->sum);
	else /* exact: ns as decimal seconds */
		sb_printf(b, " %" PRIu64 ".%09" PRIu64 "\n", h->sum / NS_PER_S,
			  h->sum % NS_PER_S);
	sb_printf(b, "%s_count", name);
	target_labels(b, t, k, v, NULL);
	sb_printf(b, " %" PRIu64 "\n", h->count);
}

static int by_pid(const void *a, const void *b)
{
	const struct target *x = *(const struct target *const *)a;
	const struct target *y = *(const struct target *const *)b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* A counter family: per process, one series per value of label (the
 * uint64_t array at offset in struct target, indexed like name()). */
static void counter_family(struct sbuf *b, const char *family_name, const char *help,
			   struct target **ts, unsigned n, const char *label, int nvalues,
			   const char *(*name)(int), size_t offset)
{
	family(b, family_name, "counter", help);
	for (unsigned i = 0; i < n; i++) {
		const uint64_t *v = (const uint64_t *)((const char *)ts[i] + offset);

		for (int k = 0; k < nvalues; k++) {
			sb_printf(b, "%s", family_name);
			target_labels(b, ts[i], label, name(k), NULL);
			sb_printf(b, " %" PRIu64 "\n", v[k]);
		}
	}
}

/* A histogram family by stage: the struct hist array at offset, for the
 * first nstages stages each process has shown. */
static void stage_hist_family(struct sbuf *b, const char *family_name, const char *help,
			      struct target **ts, unsigned n, int nstages, size_t offset, bool ops)
{
	family(b, family_name, "histogram", help);
	for (unsigned i = 0; i < n; i++) {
		const struct hist *h = (const struct hist *)((const char *)ts[i] + offset);

		for (int s = 0; s < nstages; s++)
			if (ts[i]->stages_seen & (1u << s))
				hist_series(b, family_name, ts[i], "stage", nl_stage_name(s), &h[s],
					    ops);
	}
}

static void render_targets(struct sbuf *b, struct target **ts, unsigned n)
{
	counter_family(b, "nanlog_batches_total", "Batch audits by verdict.", ts, n, "verdict", 3,
		       nl_verdict_name, offsetof(struct target, verdicts));
	counter_family(b, "nanlog_skip_reasons_total",
		       "Skipped batches by skip reason (a batch may have several).", ts, n, "reason",
		       NL_NSKIP, nl_skip_name, offsetof(struct target, skips));
	counter_family(b, "nanlog_missing_edges_total",
		       "Untrusted batches by the hand-off edge they lack.", ts, n, "edge", NL_NEDGES,
		       nl_edge_name, offsetof(struct target, missing));
	stage_hist_family(b, "nanlog_stage_host_latency_seconds",
			  "Host enqueue window of a stage (first to last call) per non-skipped batch.",
			  ts, n, NL_NSTAGES, offsetof(struct target, host), false);
	stage_hist_family(b, "nanlog_stage_completion_seconds",
			  "First enqueue of a stage to the job's confirmation that it completed, where known.",
			  ts, n, NL_NSTAGES, offsetof(struct target, done), false);
	family(b, "nanlog_overlap_seconds", "histogram",
	       "How long a batch's producer stages overlapped forward work of earlier batches.");
	for (unsigned i = 0; i < n; i++)
		hist_series(b, "nanlog_overlap_seconds", ts[i], NULL, NULL, &ts[i]->overlap, false);
	_Static_assert(NL_STAGE_COPY == 0 && NL_STAGE_SPARSE == 1, "exposure[] is indexed by stage");
	stage_hist_family(b, "nanlog_handoff_exposure_ops",
			  "Forward ops of a batch enqueued before the hand-off from a producer stage.",
			  ts, n, 2, offsetof(struct target, exposure), true);
	family(b, "nanlog_last_batch_timestamp_seconds", "gauge",
	       "Unix time at which the tool emitted the process's last batch audit.");
	for (unsigned i = 0; i < n; i++) {
		uint64_t w = ts[i]->last_batch_wall_ns;

		if (!w)
			continue;
		sb_printf(b, "nanlog_last_batch_timestamp_seconds");
		target_labels(b, ts[i], NULL, NULL, NULL);
		sb_printf(b, " %" PRIu64 ".%03" PRIu64 "\n", w / NS_PER_S,
			  w % NS_PER_S / UINT64_C(1000000));
	}
	family(b, "nanlog_target_alive", "gauge",
	       "1 while the traced process runs, 0 after it exited.");
	for (unsigned i = 0; i < n; i++) {
		sb_printf(b, "nanlog_target_alive");
		target_labels(b, ts[i], NULL, NULL, NULL);
		sb_printf(b, " %d\n", ts[i]->alive ? 1 : 0);
	}
}

static void scalar(struct sbuf *b, const char *name, const char *type, const char *help,
		   uint64_t v)
{
	family(b, name, type, help);
	sb_printf(b, "%s %" PRIu64 "\n", name, v);
}

size_t nl_metrics_render(struct nl_metrics *m, char **buf)
{
	struct sbuf b = { 0 };
	struct target *snap = NULL, *ts[NL_METRICS_MAX_TARGETS];
	struct nl_metrics_counters c;
	uint64_t lost, evicted;
	unsigned n;

	*buf = NULL;
	b.cap = 16384;
	b.p = malloc(b.cap);
	if (!b.p)
		return 0;
	b.p[0] = '\0';
	/* Copy under the lock, format outside it: at the cap a render takes
	 * milliseconds, and the main thread must not wait that long to
	 * account a batch while the ring buffer fills. */
	pthread_mutex_lock(&m->lock);
	n = m->nt;
	if (n && !(snap = malloc(n * sizeof(*snap)))) {
		pthread_mutex_unlock(&m->lock);
		free(b.p);
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		snap[i] = *m->t[i];
		ts[i] = &snap[i];
	}
	c = m->c;
	lost = m->lost_total;
	evicted = m->evicted;
	pthread_mutex_unlock(&m->lock);
	qsort(ts, n, sizeof(*ts), by_pid);

	family(&b, "nanlog_build_info", "gauge", "Always 1; the version of nanlog-bpf as a label.");
	sb_printf(&b, "nanlog_build_info{version=\"");
	sb_label_value(&b, m->version); /* set once by nl_metrics_new */
	sb_printf(&b, "\"} 1\n");
	render_targets(&b, ts, n);
	scalar(&b, "nanlog_records_processed_total", "counter",
	       "Ring-buffer records (HIP/RCCL calls) decoded and processed.", c.records);
	scalar(&b, "nanlog_bad_records_total", "counter",
	       "Ring-buffer records that did not decode.", c.bad_records);
	scalar(&b, "nanlog_records_lost_total", "counter",
	       "Records lost before user space saw them (all causes).", lost);
	family(&b, "nanlog_bpf_lost_total", "counter",
	       "Records lost in BPF by cause: ring buffer full, return-probe stash full.");
	sb_printf(&b, "nanlog_bpf_lost_total{cause=\"ringbuf\"} %" PRIu64 "\n", c.lost_ringbuf);
	sb_printf(&b, "nanlog_bpf_lost_total{cause=\"stash\"} %" PRIu64 "\n", c.lost_stash);
	scalar(&b, "nanlog_attached_targets", "gauge", "Traced processes still alive.", c.targets);
	scalar(&b, "nanlog_probes_attached", "gauge",
	       "Uprobes attached over all libraries and targets.", c.probes_attached);
	scalar(&b, "nanlog_probes_missing", "gauge",
	       "Distinct HIP/RCCL symbols that could not be probed.", c.probes_missing);
	family(&b, "nanlog_tool_cpu_seconds_total", "counter",
	       "CPU time (user and system) of nanlog-bpf itself.");
	sb_printf(&b, "nanlog_tool_cpu_seconds_total %.6f\n", c.cpu_seconds);
	scalar(&b, "nanlog_metrics_evicted_targets_total", "counter",
	       "Processes whose series were dropped by the cap on processes tracked.", evicted);
	free(snap);
	if (b.oom) {
		free(b.p);
		return 0;
	}
	*buf = b.p;
	return b.len;
}
