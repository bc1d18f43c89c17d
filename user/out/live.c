// SPDX-License-Identifier: MIT
/*
 * --live: the screen renderer. Batch rates come from the audits' own times
 * (the forward window end), so they measure the job's progress, not when the
 * engine happened to finish judging a batch.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/live.h"

#define SLOT_NS 100000000ull /* rate slots of 100 ms */
#define RATE_SLOTS 64        /* more than NL_LIVE_RATE_S seconds of slots */
#define WINDOW_SLOTS (NL_LIVE_RATE_S * 1000000000ull / SLOT_NS)

struct ltarget {
	uint32_t pid;
	bool alive;
	char comm[16];
	char container[65];
	uint64_t verdicts[NL_NVERDICTS];
	uint64_t first_ts, last_ts; /* audit times of its first and latest batch */
	uint64_t slot_id[RATE_SLOTS];
	uint32_t slot_n[RATE_SLOTS];
	uint64_t active_seq, exit_seq;
};

struct ring {
	uint64_t v[NL_LIVE_WINDOW];
	unsigned n, next;
};

struct nl_live {
	unsigned rows;
	struct ltarget *t[NL_LIVE_MAX_TARGETS];
	unsigned nt;
	uint64_t seq;
	uint64_t verdicts[NL_NVERDICTS], skips[NL_NSKIP], missing[NL_NEDGES];
	bool stage_seen[NL_NSTAGES];
	struct ring host[NL_NSTAGES], done[NL_NSTAGES], overlap;
	struct nl_metrics_counters c;
	uint64_t lost_engine;
	uint64_t start_ns; /* first render */
	bool have_problem;
	struct {
		uint32_t pid;
		uint64_t batch;
		int verdict;
		uint32_t skip_mask, missing_mask;
	} problem; /* the latest batch that was not trusted */
};

struct nl_live *nl_live_new(void)
{
	struct nl_live *l = calloc(1, sizeof(*l));

	if (l)
		l->rows = NL_LIVE_ROWS;
	return l;
}

void nl_live_free(struct nl_live *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < l->nt; i++)
		free(l->t[i]);
	free(l);
}

void nl_live_set_rows(struct nl_live *l, unsigned rows)
{
	l->rows = rows < 10 ? 10 : rows > 200 ? 200 : rows;
}

/* Printable ASCII only: a byte is a column, and nothing reaches the terminal
 * that it would interpret. */
static void sanitize(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
}

static struct ltarget *find(struct nl_live *l, uint32_t pid)
{
	for (unsigned i = 0; i < l->nt; i++)
		if (l->t[i]->pid == pid)
			return l->t[i];
	return NULL;
}

/* At the cap, a process makes room as in metrics.c (NL_EVICTS_BEFORE). */
static struct ltarget *get(struct nl_live *l, uint32_t pid)
{
	struct ltarget *t = find(l, pid);
	unsigned victim = 0;

	if (t)
		return t;
	if (l->nt < NL_LIVE_MAX_TARGETS) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		l->t[l->nt++] = t;
	} else {
		for (unsigned i = 1; i < l->nt; i++) {
			const struct ltarget *a = l->t[i], *b = l->t[victim];

			if (NL_EVICTS_BEFORE(a, b))
				victim = i;
		}
		t = l->t[victim];
		memset(t, 0, sizeof(*t));
	}
	t->pid = pid;
	t->alive = true;
	t->active_seq = ++l->seq;
	return t;
}

void nl_live_target(struct nl_live *l, uint32_t pid, const char *comm, const char *container_id)
{
	struct ltarget *t = get(l, pid);

	if (!t)
		return;
	sanitize(t->comm, sizeof(t->comm), comm);
	sanitize(t->container, sizeof(t->container), container_id);
	t->alive = true;
	t->exit_seq = 0;
	t->active_seq = ++l->seq;
}

void nl_live_target_exit(struct nl_live *l, uint32_t pid)
{
	struct ltarget *t = find(l, pid);

	if (t && t->alive) {
		t->alive = false;
		t->exit_seq = ++l->seq;
	}
}

static void ring_add(struct ring *r, uint64_t v)
{
	r->v[r->next] = v;
	r->next = (r->next + 1) % NL_LIVE_WINDOW;
	if (r->n < NL_LIVE_WINDOW)
		r->n++;
}

/* The latest host time the audit mentions: when the batch was last seen. */
static uint64_t audit_time(const struct nl_batch_audit *a)
{
	uint64_t ts = a->window_end_ns;

	for (int s = 0; s < NL_NSTAGES; s++)
		if (a->stage[s].last_ns > ts)
			ts = a->stage[s].last_ns;
	return ts;
}

void nl_live_batch(struct nl_live *l, const struct nl_batch_audit *a)
{
	struct ltarget *t = get(l, a->pid);
	uint64_t ts = audit_time(a);

	if (a->verdict >= 0 && a->verdict < NL_NVERDICTS)
		l->verdicts[a->verdict]++;
	for (int i = 0; i < NL_NSKIP; i++)
		if (a->skip_mask & (1u << i))
			l->skips[i]++;
	for (int i = 0; i < NL_NEDGES; i++)
		if (a->missing_mask & (1u << i))
			l->missing[i]++;
	if (a->verdict != NL_VERDICT_TRUSTED) {
		l->have_problem = true;
		l->problem.pid = a->pid;
		l->problem.batch = a->batch;
		l->problem.verdict = a->verdict;
		l->problem.skip_mask = a->skip_mask;
		l->problem.missing_mask = a->missing_mask;
	}
	if (t) {
		t->active_seq = ++l->seq;
		if (a->verdict >= 0 && a->verdict < NL_NVERDICTS)
			t->verdicts[a->verdict]++;
		if (ts) {
			uint64_t slot = ts / SLOT_NS;
			unsigned i = (unsigned)(slot % RATE_SLOTS);

			if (t->slot_id[i] != slot) {
				t->slot_id[i] = slot;
				t->slot_n[i] = 0;
			}
			t->slot_n[i]++;
			if (!t->first_ts || ts < t->first_ts)
				t->first_ts = ts;
			if (ts > t->last_ts)
				t->last_ts = ts;
		}
	}
	/* skipped batches have partial windows: keep them out of the percentiles */
	if (a->verdict == NL_VERDICT_SKIPPED)
		return;
	for (int s = 0; s < NL_NSTAGES; s++) {
		const struct nl_stage_audit *st = &a->stage[s];

		if (!st->present || !st->ops || !st->first_ns || st->last_ns < st->first_ns)
			continue;
		l->stage_seen[s] = true;
		ring_add(&l->host[s], st->last_ns - st->first_ns);
		if (st->completion.done_by_ns && st->completion.done_by_ns >= st->first_ns)
			ring_add(&l->done[s], st->completion.done_by_ns - st->first_ns);
	}
	if (a->overlap_known)
		ring_add(&l->overlap, a->overlap_ns);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

void nl_live_counters(struct nl_live *l, const struct nl_metrics_counters *c)
{
	struct nl_metrics_counters o = l->c;

	l->c = *c;
	/* counters never go backwards, whoever reported them last */
	l->c.records = max64(o.records, c->records);
	l->c.bad_records = max64(o.bad_records, c->bad_records);
	l->c.lost_ringbuf = max64(o.lost_ringbuf, c->lost_ringbuf);
	l->c.lost_stash = max64(o.lost_stash, c->lost_stash);
}

static void sink_batch(void *ctx, const struct nl_batch_audit *a)
{
	nl_live_batch(ctx, a);
}

static void sink_summary(void *ctx, const struct nl_summary *s)
{
	struct nl_live *l = ctx;

	l->c.records = max64(l->c.records, s->records);
	l->lost_engine = max64(l->lost_engine, s->lost_records);
}

struct nl_sink nl_live_sink(struct nl_live *l)
{
	return (struct nl_sink){ .ctx = l, .batch = sink_batch, .summary = sink_summary };
}

/* ---- rendering ------------------------------------------------------------- */

struct screen {
	char *buf;
	size_t len, used;
	unsigned lines, max_lines;
	bool full;
};

static void put(struct screen *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line, trailing blanks dropped, cut at NL_LIVE_WIDTH ('+' marks a cut);
 * whole lines only: a line that does not fit ends the screen. */
static void put(struct screen *s, const char *fmt, ...)
{
	char line[256];
	size_t n;
	va_list ap;

	if (s->full || s->lines >= s->max_lines) {
		s->full = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = nl_fit_width(line, NL_LIVE_WIDTH);
	if (s->used + n + 2 > s->len) {
		s->full = true;
		return;
	}
	memcpy(s->buf + s->used, line, n);
	s->used += n;
	s->buf[s->used++] = '\n';
	s->buf[s->used] = '\0';
	s->lines++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* p50, p95 (nearest rank) and max of a ring; false when empty. */
static bool pct(const struct ring *r, uint64_t *p50, uint64_t *p95, uint64_t *max)
{
	uint64_t v[NL_LIVE_WINDOW];

	if (!r->n)
		return false;
	memcpy(v, r->v, r->n * sizeof(v[0]));
	qsort(v, r->n, sizeof(v[0]), cmp_u64);
	*p50 = v[(r->n * 50 + 99) / 100 - 1];
	*p95 = v[(r->n * 95 + 99) / 100 - 1];
	*max = v[r->n - 1];
	return true;
}

/* Milliseconds in at most 8 columns; "-" when unknown. */
static void ms(char *buf, size_t len, bool known, uint64_t ns)
{
	double v = (double)ns / 1e6;

	if (!known)
		snprintf(buf, len, "-");
	else if (v < 10)
		snprintf(buf, len, "%.3f", v);
	else if (v < 100000)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.0f", v > 99999999 ? 99999999 : v);
}

/* Batches per second of t over the last NL_LIVE_RATE_S seconds at now (or
 * since its first batch, at least 1 s, when that is more recent). */
/* Batches audited, whatever their verdict. */
static uint64_t batches_of(const uint64_t verdicts[NL_NVERDICTS])
{
	uint64_t n = 0;

	for (int v = 0; v < NL_NVERDICTS; v++)
		n += verdicts[v];
	return n;
}

static double rate(const struct ltarget *t, uint64_t now_ns)
{
	uint64_t now_slot = now_ns / SLOT_NS, n = 0;
	double span_s = NL_LIVE_RATE_S;

	if (!t->first_ts)
		return 0;
	for (unsigned i = 0; i < RATE_SLOTS; i++)
		if (t->slot_n[i] && t->slot_id[i] + WINDOW_SLOTS > now_slot)
			n += t->slot_n[i];
	if (now_ns > t->first_ts && (double)(now_ns - t->first_ts) / 1e9 < span_s)
		span_s = (double)(now_ns - t->first_ts) / 1e9;
	if (span_s < 1)
		span_s = 1;
	return (double)n / span_s;
}

static void names(char *buf, size_t len, const uint64_t *counts, int n, const char *(*name)(int))
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && off < len; i++)
		if (counts[i])
			off += (size_t)snprintf(buf + off, len - off, "%s%s %" PRIu64, off ? ", " : "",
						name(i), counts[i]);
	if (!off)
		snprintf(buf, len, "none");
}

static void mask_names(char *buf, size_t len, uint32_t mask, int n, const char *(*name)(int))
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && off < len; i++)
		if (mask & (1u << i))
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", name(i));
}

static int target_order(const void *a, const void *b)
{
	const struct ltarget *x = *(const struct ltarget *const *)a;
	const struct ltarget *y = *(const struct ltarget *const *)b;

	if (x->alive != y->alive)
		return x->alive ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

#define TROW "%7s %-15s %-12s %8s %6s %6s %6s %6s %s"
#define SROW "%-8s %6s %11s %8s %8s  %9s %8s"

static void stage_row(struct screen *s, const char *name, const struct ring *host,
		      const struct ring *done)
{
	uint64_t p50 = 0, p95 = 0, max = 0, d50 = 0, d95 = 0, dmax = 0;
	bool hk = pct(host, &p50, &p95, &max), dk = done && pct(done, &d50, &d95, &dmax);
	char n[16], a[16], b[16], c[16], d[16], e[16];

	snprintf(n, sizeof(n), "%u", host->n);
	ms(a, sizeof(a), hk, p50);
	ms(b, sizeof(b), hk, p95);
	ms(c, sizeof(c), hk, max);
	ms(d, sizeof(d), dk, d50);
	ms(e, sizeof(e), dk, d95);
	put(s, SROW, name, n, a, b, c, done ? d : "", done ? e : "");
}

size_t nl_live_render(struct nl_live *l, uint64_t now_ns, char *buf, size_t len)
{
	static const char home_clear[] = "\033[H\033[2J";
	struct screen s = { .buf = buf, .len = len };
	struct ltarget *ts[NL_LIVE_MAX_TARGETS];
	unsigned alive = 0, shown = 0;
	uint64_t up, total;
	double total_rate = 0;
	char tmp[256], tmp2[64];

	if (!len)
		return 0;
	buf[0] = '\0';
	if (len <= sizeof(home_clear))
		return 0;
	memcpy(buf, home_clear, sizeof(home_clear)); /* with its NUL */
	s.used = sizeof(home_clear) - 1;
	s.max_lines = l->rows - 1;
	if (!l->start_ns || now_ns < l->start_ns)
		l->start_ns = now_ns;
	up = (now_ns - l->start_ns) / 1000000000ull;

	memcpy(ts, l->t, l->nt * sizeof(ts[0]));
	qsort(ts, l->nt, sizeof(ts[0]), target_order);
	for (unsigned i = 0; i < l->nt; i++) {
		alive += ts[i]->alive;
		total_rate += rate(ts[i], now_ns);
	}
	total = batches_of(l->verdicts);

	put(&s, "nanlog-bpf  up %" PRIu64 ":%02" PRIu64 ":%02" PRIu64
		"  targets %u alive, %u exited  probes %" PRIu32 ", %" PRIu32 " missing",
	    up / 3600, up / 60 % 60, up % 60, alive, l->nt - alive, l->c.probes_attached,
	    l->c.probes_missing);
	put(&s, "batches %" PRIu64 "  %.1f/s   trusted %" PRIu64 "  untrusted %" PRIu64
		"  skipped %" PRIu64,
	    total, total_rate, l->verdicts[NL_VERDICT_TRUSTED], l->verdicts[NL_VERDICT_UNTRUSTED],
	    l->verdicts[NL_VERDICT_SKIPPED]);
	put(&s, "records %" PRIu64 "  lost %" PRIu64 " (ring buffer %" PRIu64 ", stash %" PRIu64
		")  tool cpu %.2f s",
	    l->c.records, max64(l->lost_engine, l->c.lost_ringbuf + l->c.lost_stash),
	    l->c.lost_ringbuf, l->c.lost_stash, l->c.cpu_seconds);
	put(&s, "%s", "");
	put(&s, SROW "  (ms)", "STAGE", "N", "WINDOW p50", "p95", "max", "DONE p50", "p95");
	for (int st = 0; st < NL_NSTAGES; st++)
		stage_row(&s, nl_stage_name(st), &l->host[st], &l->done[st]);
	stage_row(&s, "overlap", &l->overlap, NULL);
	put(&s, "%s", "");
	names(tmp, sizeof(tmp), l->skips, NL_NSKIP, nl_skip_name);
	put(&s, "skipped:   %s", tmp);
	names(tmp, sizeof(tmp), l->missing, NL_NEDGES, nl_edge_name);
	put(&s, "untrusted: %s", tmp);
	if (l->have_problem) {
		if (l->problem.verdict == NL_VERDICT_SKIPPED)
			mask_names(tmp2, sizeof(tmp2), l->problem.skip_mask, NL_NSKIP, nl_skip_name);
		else
			mask_names(tmp2, sizeof(tmp2), l->problem.missing_mask, NL_NEDGES,
				   nl_edge_name);
		put(&s, "latest:    pid %" PRIu32 " batch %" PRIu64 " %s %s", l->problem.pid,
		    l->problem.batch, nl_verdict_name(l->problem.verdict), tmp2);
	} else {
		put(&s, "latest:    -");
	}
	put(&s, "%s", "");
	put(&s, TROW, "PID", "COMM", "CONTAINER", "BATCHES", "/S", "TRUST", "UNTR", "SKIP", "STATE");
	for (unsigned i = 0; i < l->nt; i++) {
		const struct ltarget *t = ts[i];
		char pid[16], n[24], r[16], v[NL_NVERDICTS][24];

		/* keep the last line for "N more" when not all fit */
		if (s.lines + 1 >= s.max_lines && i + 1 < l->nt)
			break;
		snprintf(pid, sizeof(pid), "%" PRIu32, t->pid);
		snprintf(n, sizeof(n), "%" PRIu64, batches_of(t->verdicts));
		snprintf(r, sizeof(r), "%.1f", rate(t, now_ns));
		for (int k = 0; k < NL_NVERDICTS; k++)
			snprintf(v[k], sizeof(v[k]), "%" PRIu64, t->verdicts[k]);
		snprintf(tmp, sizeof(tmp), "%.12s", t->container[0] ? t->container : "-");
		put(&s, TROW, pid, t->comm[0] ? t->comm : "?", tmp, n, r, v[0], v[1], v[2],
		    t->alive ? "alive" : "exited");
		if (s.full)
			break;
		shown++;
	}
	if (shown < l->nt) {
		s.full = false; /* the row kept for it */
		put(&s, "... %u more targets", l->nt - shown);
	}
	return s.used;
}
