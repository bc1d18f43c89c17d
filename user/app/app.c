// SPDX-License-Identifier: MIT
/*
 * The app's start and its sinks: the options turned into an engine, the
 * writers the audits go to, the metrics endpoint, the recording's header.
 * The other parts: app_targets.c (targets, reaping, discovery, the tick),
 * app_record.c (the record path), app_attach.c (attach reports),
 * app_finish.c (finish and the summary), app_replay.c (--replay).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/util.h"
#include "app/app_int.h"
#include "engine/engine.h"
#include "record/recording.h"

void nl_app_note_write(struct nl_app *a)
{
	if (!a->write_err && (ferror(a->out) || fflush(a->out))) {
		a->write_err = errno ? -errno : -EIO;
		a->diag(0, "cannot write output%s%s: %s", a->o.out_path ? " to " : "",
			a->o.out_path ? a->o.out_path : "", strerror(-a->write_err));
	}
}

void nl_app_rec_check(struct nl_app *a, int err)
{
	if (!err || a->rec_err)
		return;
	a->rec_err = err;
	a->diag(0, "%s: recording stopped: %s", a->o.record_path, strerror(-err));
}

/*
 * The sinks: the engine's one sink (app_batch, app_summary) labels each
 * batch with its target's container and hands it to each sink of the list,
 * in order: the heartbeat's counts, the JSON or table writer, what --check
 * reads, the trace, the metrics registry, the live view.
 */
#define NL_APP_MAX_SINKS 6

struct nl_app_sinks {
	struct nl_app *a;
	struct nl_sink list[NL_APP_MAX_SINKS];
	int n;
	struct nl_audit_table table;     /* --format table: its header written or not */
	uint64_t verdicts[NL_NVERDICTS]; /* the heartbeat's batches by verdict */
	uint64_t last_heartbeat_ns;
	uint64_t last_live_ns;
	bool trace_named;                /* the summary gave the tracks their roles */
};

static void add_sink(struct nl_app_sinks *s, struct nl_sink k)
{
	if (s->n < NL_APP_MAX_SINKS)
		s->list[s->n++] = k;
}

static void heartbeat_batch(void *ctx, const struct nl_batch_audit *b)
{
	struct nl_app_sinks *s = ctx;

	if (b->verdict >= 0 && b->verdict < NL_NVERDICTS)
		s->verdicts[b->verdict]++;
}

/* --check reads the summary's verdict on the run after the end */
static void check_summary(void *ctx, const struct nl_summary *sum)
{
	struct nl_app *a = ctx;

	a->summary_done = true;
	a->evidence_valid = sum->evidence_valid;
	a->invalid_mask = sum->invalid_mask;
	a->missing_stages = sum->missing_stages;
}

static void trace_batch(void *ctx, const struct nl_batch_audit *b)
{
	struct nl_app_sinks *s = ctx;

	nl_trace_batch(s->a->trace, b);
}

static void trace_summary(void *ctx, const struct nl_summary *sum)
{
	struct nl_app_sinks *s = ctx;

	nl_trace_summary(s->a->trace, sum);
	s->trace_named = true;
}

/* Every final batch passes here: labelled with its container, handed to each sink. */
static void app_batch(void *ctx, const struct nl_batch_audit *b)
{
	struct nl_app *a = ctx;
	const struct nl_app_target *t = nl_app_target_of(a, b->pid);
	struct nl_batch_audit lb = *b;

	if (t) {
		lb.container_id = t->container_id;
		lb.pod_uid = t->pod_uid;
	}
	for (int i = 0; i < a->sinks->n; i++)
		if (a->sinks->list[i].batch)
			a->sinks->list[i].batch(a->sinks->list[i].ctx, &lb);
}

static void app_summary(void *ctx, const struct nl_summary *sum)
{
	struct nl_app *a = ctx;

	for (int i = 0; i < a->sinks->n; i++)
		if (a->sinks->list[i].summary)
			a->sinks->list[i].summary(a->sinks->list[i].ctx, sum);
}

/* The list, in the order the batches go through it. */
static void sinks_build(struct nl_app *a)
{
	struct nl_app_sinks *s = a->sinks;

	add_sink(s, (struct nl_sink){ .ctx = s, .batch = heartbeat_batch });
	if (a->o.format == NL_FMT_TABLE) {
		s->table.f = a->out;
		add_sink(s, nl_audit_table_sink(&s->table));
	} else {
		add_sink(s, nl_audit_json_sink(a->out));
	}
	add_sink(s, (struct nl_sink){ .ctx = a, .summary = check_summary });
	if (a->trace)
		add_sink(s, (struct nl_sink){ .ctx = s, .batch = trace_batch, .summary = trace_summary });
	if (a->metrics)
		add_sink(s, nl_metrics_sink(a->metrics));
	if (a->live)
		add_sink(s, nl_live_sink(a->live));
}

void nl_app_live_tick(struct nl_app *a, uint64_t now_ns)
{
	char *screen;

	if (!a->live || !a->sinks || now_ns - a->sinks->last_live_ns < 1000000000ull)
		return;
	a->sinks->last_live_ns = now_ns;
	screen = malloc(NL_LIVE_BUFSZ);
	if (screen) {
		size_t n = nl_live_render(a->live, now_ns, screen, NL_LIVE_BUFSZ);

		fwrite(screen, 1, n, stderr);
		fflush(stderr);
		free(screen);
	}
}

void nl_app_heartbeat_tick(struct nl_app *a, uint64_t now_ns)
{
	struct nl_app_sinks *s = a->sinks;

	if (!s || a->o.heartbeat_s <= 0 || a->o.quiet ||
	    now_ns - s->last_heartbeat_ns < (uint64_t)(a->o.heartbeat_s * 1e9))
		return;
	s->last_heartbeat_ns = now_ns;
	fprintf(stderr,
		"nanlog-bpf: heartbeat: %d/%d targets, %" PRIu64 " records, %" PRIu64
		" lost, batches %" PRIu64 " trusted %" PRIu64 " untrusted %" PRIu64 " skipped\n",
		a->ntargets_alive, a->ntargets, a->records,
		a->stats[NL_STAT_LOST_RINGBUF] + a->stats[NL_STAT_LOST_STASH],
		s->verdicts[NL_VERDICT_TRUSTED], s->verdicts[NL_VERDICT_UNTRUSTED],
		s->verdicts[NL_VERDICT_SKIPPED]);
}

int nl_app_sinks_close(struct nl_app *a)
{
	int rc = 0;

	if (a->trace) {
		if (!a->sinks || !a->sinks->trace_named) { /* no audit: tracks keep their handles as names */
			struct nl_summary none = { 0 };

			nl_trace_summary(a->trace, &none);
		}
		rc = nl_trace_close(a->trace);
		a->trace = NULL;
	}
	free(a->sinks);
	a->sinks = NULL;
	return rc;
}

int nl_app_init(struct nl_app *a, uint64_t now_ns)
{
	const struct nl_opts *o = &a->o;
	struct nl_engine_opts eo = { 0 };
	struct nl_sink sink = { .ctx = a, .batch = app_batch, .summary = app_summary };
	struct timespec rt;

	a->sinks = calloc(1, sizeof(*a->sinks));
	if (!a->sinks)
		return -ENOMEM;
	a->sinks->a = a;

	clock_gettime(CLOCK_REALTIME, &rt);
	a->start_ns = now_ns;
	a->start_real_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	a->sinks->last_heartbeat_ns = now_ns;
	/* the loader's counters are worth serving even without audits */
	if (o->metrics_addr && !(a->metrics = nl_metrics_new(NL_APP_VERSION)))
		return -ENOMEM;
	if (o->live && !(a->live = nl_live_new()))
		return -ENOMEM;
	if (o->no_audit)
		return 0;
	eo.has_copy_stream = o->has_copy_stream;
	eo.copy_stream = o->copy_stream;
	eo.has_compute_stream = o->has_compute_stream;
	eo.compute_stream = o->compute_stream;
	eo.has_sparse_streams = o->nsparse > 0;
	eo.nsparse = (unsigned)o->nsparse;
	for (int i = 0; i < o->nsparse && i < NL_ENGINE_MAX_SPARSE; i++)
		eo.sparse_streams[i] = o->sparse_streams[i];
	eo.post_step = o->post_step;
	eo.unseen_nonblocking = o->assume_nonblocking;
	eo.strict_attach = o->strict_attach;
	sinks_build(a);
	a->engine = nl_engine_new(&eo, &sink);
	return a->engine ? 0 : -ENOMEM;
}

int nl_app_metrics_start(struct nl_app *a)
{
	char err[256];
	int rc;

	if (!a->metrics)
		return 0;
	rc = nl_metrics_http_start(&a->http, a->metrics, a->o.metrics_addr, err, sizeof(err));
	if (rc) {
		a->diag(0, "%s", err);
		return rc;
	}
	if (!a->o.quiet)
		fprintf(stderr, "nanlog-bpf: metrics: serving %s\n", nl_metrics_http_url(a->http));
	return 0;
}

void nl_app_publish_counters(struct nl_app *a)
{
	struct nl_metrics_counters c = {
		.records = a->records,
		.bad_records = a->bad_records,
		.lost_ringbuf = a->stats[NL_STAT_LOST_RINGBUF],
		.lost_stash = a->stats[NL_STAT_LOST_STASH],
		.probes_attached = (uint64_t)a->probes_attached,
		.probes_missing = (uint64_t)a->nmissing,
		.targets = (uint64_t)a->ntargets_alive,
		.cpu_seconds = nl_app_cpu_ms() / 1e3,
	};

	if (a->metrics)
		nl_metrics_set_counters(a->metrics, &c);
	if (a->live)
		nl_live_counters(a->live, &c);
}

int nl_app_record_start(struct nl_app *a, int argc, char **argv, const char *kernel,
			const char *version)
{
	struct nl_recording_header h = { 0 };
	char err[512];
	int rc;

	if (!a->o.record_path)
		return 0;
	h.rec_schema = NL_RECORD_SCHEMA;
	h.tool_version = version;
	h.kernel_release = kernel;
	h.start_mono_ns = a->start_ns;
	h.start_real_ns = a->start_real_ns; /* the anchor the summary prints */
	h.argc = argc;
	h.argv = (const char *const *)argv;
	rc = nl_recording_create(&a->rec, a->o.record_path, a->o.force, &h, err, sizeof(err));
	if (rc)
		a->diag(0, "%s", err);
	return rc;
}

double nl_app_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}
