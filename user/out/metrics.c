// SPDX-License-Identifier: MIT
/*
 * The metrics registry and its Prometheus text exposition (format 0.0.4,
 * https://prometheus.io/docs/instrumenting/exposition_formats/), and the
 * --metrics ADDR:PORT parser. docs/metrics.md documents every family.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "out/metrics.h"

#define NS_PER_S UINT64_C(1000000000)

/* Seconds buckets, 100 us .. 10 s: text as printed, bound in ns. */
static const struct {
	const char *le;
	uint64_t ns;
} sec_buckets[] = {
	{ "0.0001", 100000ull },     { "0.00025", 250000ull },   { "0.0005", 500000ull },
	{ "0.001", 1000000ull },     { "0.0025", 2500000ull },   { "0.005", 5000000ull },
	{ "0.01", 10000000ull },     { "0.025", 25000000ull },   { "0.05", 50000000ull },
	{ "0.1", 100000000ull },     { "0.25", 250000000ull },   { "0.5", 500000000ull },
	{ "1", 1000000000ull },      { "2.5", 2500000000ull },   { "5", 5000000000ull },
	{ "10", 10000000000ull },
};
#define NSEC_BUCKETS NL_ARRAY_SIZE(sec_buckets)

/* Exposure buckets: forward ops enqueued before the hand-off. */
static const struct {
	const char *le;
	uint64_t v;
} op_buckets[] = {
	{ "0", 0 }, { "1", 1 }, { "2", 2 }, { "4", 4 }, { "8", 8 }, { "16", 16 }, { "32", 32 },
	{ "64", 64 }, { "128", 128 },
};
#define NOP_BUCKETS NL_ARRAY_SIZE(op_buckets)

#define NBUCKETS_MAX (NSEC_BUCKETS > NOP_BUCKETS ? NSEC_BUCKETS : NOP_BUCKETS)

/* Non-cumulative counts per bucket (the last slot is +Inf only), cumulated
 * when rendered; the sum in the unit observed (ns or ops), exact. */
struct hist {
	uint64_t b[NBUCKETS_MAX + 1];
	uint64_t count, sum;
};

struct target {
	uint32_t pid;
	bool alive;
	char container[NL_METRICS_LABEL_MAX + 1];
	char pod[NL_METRICS_LABEL_MAX + 1];
	uint64_t active_seq; /* last update: idle order for eviction */
	uint64_t exit_seq;   /* when it exited: exit order for eviction */
	uint64_t verdicts[NL_NVERDICTS];
	uint64_t skips[NL_NSKIP];
	uint64_t missing[NL_NEDGES];
	uint32_t stages_seen; /* 1u << enum nl_stage_id with work observed */
	struct hist host[NL_NSTAGES], done[NL_NSTAGES], overlap, exposure[2];
	uint64_t last_batch_wall_ns; /* CLOCK_REALTIME when its last audit arrived; 0 none */
};

struct nl_metrics {
	pthread_mutex_t lock;
	char version[64];
	struct target *t[NL_METRICS_MAX_TARGETS];
	unsigned nt;
	uint64_t seq;
	uint64_t evicted;
	struct nl_metrics_counters c;
	uint64_t lost_total; /* max of the BPF counters' sum and the engine's count */
};

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
		if (v <= (ops ? op_buckets[i].v : sec_buckets[i].ns))
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

/* ---- rendering ------------------------------------------------------------- */

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
		target_labels(b, t, k, v, ops ? op_buckets[i].le : sec_buckets[i].le);
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

/* ---- ADDR:PORT --------------------------------------------------------------- */

static int bad(char *err, size_t errlen, const char *s, const char *why)
{
	snprintf(err, errlen, "--metrics '%s': %s", s, why);
	return -EINVAL;
}

int nl_metrics_parse_addr(const char *s, struct nl_metrics_addr *out, char *err, size_t errlen)
{
	const char *host, *colon, *ps;
	size_t hlen;
	char hbuf[64];
	unsigned long port = 0;

	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return bad(err, errlen, s ? s : "", "expected ADDR:PORT, e.g. 127.0.0.1:9464 or :9464");
	if (strlen(s) > 64)
		return bad(err, errlen, "...", "too long for ADDR:PORT");
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb)
			return bad(err, errlen, s, "missing ']' after the IPv6 address");
		host = s + 1;
		hlen = (size_t)(rb - host);
		if (rb[1] != ':')
			return bad(err, errlen, s, "expected ':PORT' after ']', e.g. [::1]:9464");
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return bad(err, errlen, s, "expected ADDR:PORT, e.g. 127.0.0.1:9464 or :9464");
		if (memchr(s, ':', (size_t)(colon - s)))
			return bad(err, errlen, s, "an IPv6 address goes in brackets, e.g. [::1]:9464");
		host = s;
		hlen = (size_t)(colon - s);
	}
	ps = colon + 1;
	if (!*ps)
		return bad(err, errlen, s, "missing port after ':'");
	for (const char *p = ps; *p; p++) {
		if (*p < '0' || *p > '9')
			return bad(err, errlen, s, "the port must be a decimal number 0..65535");
		port = port * 10 + (unsigned long)(*p - '0');
		if (port > 65535)
			return bad(err, errlen, s, "the port must be a decimal number 0..65535");
	}
	if (s[0] == '[' && hlen == 0)
		return bad(err, errlen, s, "empty IPv6 address in brackets");
	if (hlen == 0) {
		host = NL_METRICS_DEFAULT_HOST;
		hlen = strlen(host);
	}
	if (hlen >= sizeof(hbuf))
		return bad(err, errlen, s, "the address is too long");
	memcpy(hbuf, host, hlen);
	hbuf[hlen] = '\0';
	out->port = (uint16_t)port;
	if (s[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&out->sa;

		if (strchr(hbuf, '%'))
			return bad(err, errlen, s, "IPv6 scope ids (%IFACE) are not supported");
		if (inet_pton(AF_INET6, hbuf, &a6->sin6_addr) != 1)
			return bad(err, errlen, s, "not a numeric IPv6 address");
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(out->port);
		out->salen = sizeof(*a6);
		out->family = AF_INET6;
		out->loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
		inet_ntop(AF_INET6, &a6->sin6_addr, out->host, sizeof(out->host));
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&out->sa;

		if (inet_pton(AF_INET, hbuf, &a4->sin_addr) != 1)
			return bad(err, errlen, s,
				   "ADDR must be a numeric IPv4 address or [IPv6] (no host names)");
		a4->sin_family = AF_INET;
		a4->sin_port = htons(out->port);
		out->salen = sizeof(*a4);
		out->family = AF_INET;
		out->loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
		inet_ntop(AF_INET, &a4->sin_addr, out->host, sizeof(out->host));
	}
	return 0;
}

void nl_metrics_url(const struct nl_metrics_addr *a, uint16_t port, char *buf, size_t len)
{
	if (a->family == AF_INET6)
		snprintf(buf, len, "http://[%s]:%u/metrics", a->host, (unsigned)port);
	else
		snprintf(buf, len, "http://%s:%u/metrics", a->host, (unsigned)port);
}
