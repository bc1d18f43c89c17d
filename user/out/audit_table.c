// SPDX-License-Identifier: MIT
/*
 * --format table: one aligned row per batch under a header, and a summary,
 * every line at most NL_TABLE_WIDTH columns (longer ones end in '+').
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "engine/engine.h"

#define ROW "%7s %6s %-9s %5s %1s %8s %5s %s"

static void line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

size_t nl_fit_width(char *line, size_t width)
{
	size_t n = strlen(line);

	while (n && line[n - 1] == ' ')
		line[--n] = '\0';
	if (width && n > width) {
		line[width - 1] = '+';
		line[width] = '\0';
		n = width;
	}
	return n;
}

static void line(FILE *f, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	nl_fit_width(buf, NL_TABLE_WIDTH);
	fprintf(f, "%s\n", buf);
}

void nl_mask_names(char *buf, size_t len, uint32_t mask, int n, const char *(*name)(int))
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && off < len; i++)
		if (mask & (1u << i))
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", name(i));
}

/* A number, or "-" when unknown. */
static void count(char *buf, size_t len, bool known, uint64_t v)
{
	if (known)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, "-");
}

void nl_audit_table_header(FILE *f)
{
	line(f, ROW, "PID", "BATCH", "VERDICT", "TICK", "D", "FWD_MS", "EXPOS", "DETAIL");
}

void nl_audit_table_batch(FILE *f, const struct nl_batch_audit *a)
{
	const struct nl_stage_audit *fw = &a->stage[NL_STAGE_FORWARD];
	const struct nl_handoff *h = a->stage[NL_STAGE_SPARSE].present ? &a->handoff[NL_STAGE_SPARSE]
									 : &a->handoff[NL_STAGE_COPY];
	char pid[16], batch[24], tick[24], depth[8], fwd[24], expo[24], detail[160];

	snprintf(pid, sizeof(pid), "%" PRIu32, a->pid);
	if (a->pipeline) /* a later pipeline's batch: PIPELINE:BATCH */
		snprintf(batch, sizeof(batch), "%" PRIu32 ":%" PRIu64, a->pipeline, a->batch);
	else
		snprintf(batch, sizeof(batch), "%" PRIu64, a->batch);
	count(tick, sizeof(tick), a->tick >= 0, (uint64_t)a->tick);
	count(depth, sizeof(depth), a->depth >= 0 && a->depth < 10, (uint64_t)a->depth);
	if (fw->ops && a->window_end_ns > fw->first_ns)
		snprintf(fwd, sizeof(fwd), "%.2f", (double)(a->window_end_ns - fw->first_ns) / 1e6);
	else
		snprintf(fwd, sizeof(fwd), "-");
	count(expo, sizeof(expo), h->found, h->exposure);
	if (a->verdict == NL_VERDICT_SKIPPED)
		nl_mask_names(detail, sizeof(detail), a->skip_mask, NL_NSKIP, nl_skip_name);
	else if (a->verdict == NL_VERDICT_UNTRUSTED)
		nl_mask_names(detail, sizeof(detail), a->missing_mask, NL_NEDGES, nl_edge_name);
	else if (a->overlap_known)
		snprintf(detail, sizeof(detail), "overlap %.2f ms", (double)a->overlap_ns / 1e6);
	else
		snprintf(detail, sizeof(detail), "-");
	line(f, ROW, pid, batch, nl_verdict_name(a->verdict), tick, depth, fwd, expo, detail);
}

/* "key value, key value ..." of a histogram, wrapped at the table width. */
static void histogram(FILE *f, const char *title, const uint64_t *v, int n,
		      const char *(*name)(int))
{
	char buf[NL_TABLE_WIDTH * 4];
	size_t off = (size_t)snprintf(buf, sizeof(buf), "%s:", title);
	bool any = false;

	for (int i = 0; i < n; i++) {
		if (!v[i])
			continue;
		any = true;
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, " %s %" PRIu64, name(i), v[i]);
		if (off >= sizeof(buf))
			break;
	}
	if (any)
		line(f, "%s", buf);
}

/* A list of words, as many lines as it takes. */
static void words(FILE *f, const char *title, const char *const *w, uint32_t n)
{
	char buf[NL_TABLE_WIDTH + 1];
	size_t off = (size_t)snprintf(buf, sizeof(buf), "%s", title);

	for (uint32_t i = 0; i < n; i++) {
		size_t len = strlen(w[i]);

		if (off + 1 + len > NL_TABLE_WIDTH && off > 2) {
			line(f, "%s", buf);
			off = (size_t)snprintf(buf, sizeof(buf), " ");
		}
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, " %s", w[i]);
		if (off >= sizeof(buf))
			off = sizeof(buf) - 1;
	}
	line(f, "%s", buf);
}

/* The line a user checks: "evidence valid", or why not. */
static void evidence(FILE *f, const struct nl_summary *s)
{
	char why[NL_TABLE_WIDTH * 2], stages[64];

	if (s->evidence_valid) {
		line(f, "evidence valid");
		return;
	}
	nl_mask_names(why, sizeof(why), s->invalid_mask, NL_NINVALID, nl_invalid_name);
	nl_mask_names(stages, sizeof(stages), s->missing_stages, NL_NSTAGES, nl_stage_name);
	if (s->missing_stages)
		line(f, "evidence NOT valid: %s; missing stages: %s", why, stages);
	else
		line(f, "evidence NOT valid: %s", why);
}

void nl_audit_table_summary(FILE *f, const struct nl_summary *s)
{
	const struct nl_run_info *r = &s->run;

	line(f, "-- summary -----------------------------------------------------------------");
	line(f, "batches %" PRIu64 ": %" PRIu64 " trusted, %" PRIu64 " untrusted, %" PRIu64
		" skipped",
	     s->batches, s->trusted, s->untrusted, s->skipped);
	histogram(f, "skipped", s->skip_reasons, NL_NSKIP, nl_skip_name);
	histogram(f, "missing", s->missing_edges, NL_NEDGES, nl_edge_name);
	evidence(f, s);
	if (s->depth >= 0)
		line(f, "ticks %" PRIu64 ", depth %d, tick %.2f ms", s->pipeline_ticks, s->depth,
		     (double)s->tick_ns / 1e6);
	else
		line(f, "ticks %" PRIu64 ", depth unknown", s->pipeline_ticks);
	line(f, "records %" PRIu64 " (ignored %" PRIu64 ", untracked %" PRIu64 "), lost %" PRIu64,
	     s->records, s->ignored_records, s->untracked_records, s->lost_records);
	line(f, "edges %" PRIu64 " (+%" PRIu64 " implicit), late ops %" PRIu64
		", evicted %" PRIu64 "/%" PRIu64 "/%" PRIu64 " streams/events/batches",
	     s->edges, s->implicit_edges, s->late_ops, s->evicted_streams, s->evicted_events,
	     s->evicted_batches);
	/* attached by pid while batches were in flight (docs/output.md) */
	if (s->in_flight_ops)
		line(f, "in flight at the attach: %" PRIu64 " ops of batches no audit covers",
		     s->in_flight_ops);
	line(f, "%7s %-18s %-8s %-8s %12s", "PID", "STREAM", "ROLE", "BLOCKING", "OPS");
	for (uint32_t i = 0; i < s->nstreams; i++) {
		const struct nl_stream_summary *st = &s->streams[i];
		char pid[16], h[40];

		snprintf(pid, sizeof(pid), "%" PRIu32, st->pid);
		if (st->tid)
			snprintf(h, sizeof(h), "0x%" PRIx64 "@%" PRIu32, st->handle, st->tid);
		else
			snprintf(h, sizeof(h), "0x%" PRIx64, st->handle);
		line(f, "%7s %-18s %-8s %-8s %12" PRIu64, pid, h, nl_role_name(st->role),
		     !st->created ? "unknown" : st->blocking ? "yes" : "no", st->ops);
	}
	if (!s->has_run_info)
		return;
	line(f, "probes %" PRIu32 " attached (%" PRIu32 " with return probes), %" PRIu32 " missing",
	     r->probes_attached, r->retprobes_attached, r->nprobes_missing);
	if (r->nprobes_missing)
		words(f, "missing:", r->probes_missing, r->nprobes_missing);
	line(f, "attach %.1f ms, duration %.3f s, cpu %.1f ms", (double)r->attach_ns / 1e6,
	     (double)r->duration_ns / 1e9, r->cpu_ms);
}

static void table_batch_cb(void *ctx, const struct nl_batch_audit *a)
{
	struct nl_audit_table *t = ctx;

	if (!t->header_done) {
		nl_audit_table_header(t->f);
		t->header_done = true;
	}
	nl_audit_table_batch(t->f, a);
}

static void table_summary_cb(void *ctx, const struct nl_summary *s)
{
	struct nl_audit_table *t = ctx;

	nl_audit_table_summary(t->f, s);
}

struct nl_sink nl_audit_table_sink(struct nl_audit_table *t)
{
	return (struct nl_sink){ .ctx = t, .batch = table_batch_cb, .summary = table_summary_cb };
}
