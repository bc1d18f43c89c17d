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

/* Every final batch passes here: counted, labelled with its container, written. */
static void app_batch(void *ctx, const struct nl_batch_audit *b)
{
	struct nl_app *a = ctx;
	const struct nl_app_target *t = nl_app_target_of(a, b->pid);
	struct nl_batch_audit lb = *b;

	if (b->verdict >= 0 && b->verdict < NL_NVERDICTS)
		a->verdicts[b->verdict]++;
	if (t) {
		lb.container_id = t->container_id;
		lb.pod_uid = t->pod_uid;
	}
	a->out_sink.batch(a->out_sink.ctx, &lb);
	nl_trace_batch(a->trace, b);
	if (a->metrics)
		nl_metrics_batch(a->metrics, &lb);
	if (a->live)
		nl_live_batch(a->live, &lb);
}

static void app_summary(void *ctx, const struct nl_summary *sum)
{
	struct nl_app *a = ctx;

	a->out_sink.summary(a->out_sink.ctx, sum);
	a->summary_done = true;
	a->evidence_valid = sum->evidence_valid;
	a->invalid_mask = sum->invalid_mask;
	a->missing_stages = sum->missing_stages;
	nl_trace_summary(a->trace, sum);
	if (a->metrics)
		nl_metrics_summary(a->metrics, sum);
	a->trace_named = true;
}

int nl_app_init(struct nl_app *a, uint64_t now_ns)
{
	const struct nl_opts *o = &a->o;
	struct nl_engine_opts eo = { 0 };
	struct nl_sink sink = { .ctx = a, .batch = app_batch, .summary = app_summary };
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	a->start_ns = now_ns;
	a->start_real_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	a->last_heartbeat_ns = now_ns;
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
	if (o->format == NL_FMT_TABLE) {
		a->table.f = a->out;
		a->out_sink = nl_audit_table_sink(&a->table);
	} else {
		a->out_sink = nl_audit_json_sink(a->out);
	}
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
	h.rec_schema = NL_APP_SCHEMA;
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
