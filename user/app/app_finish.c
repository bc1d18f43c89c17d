// SPDX-License-Identifier: MIT
/*
 * Finish: the last losses, the recording's trailer, the engine's summary
 * (or the --no-audit summary line), the trace closed, the stderr totals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "app/app_int.h"
#include "engine/engine.h"
#include "out/json.h"
#include "record/recording.h"

/*
 * The facts the loader owns about a run: measured live, or read back from a
 * recording's trailer, so that a replay prints the summary the live run did.
 */
struct run_facts {
	uint64_t end_ns, attach_ns, duration_ns;
	double cpu_ms;
};

static void live_facts(const struct nl_app *a, uint64_t now, struct run_facts *f)
{
	if (a->replay) {
		const struct nl_recording_trailer *t = &a->replay_trailer;

		f->end_ns = t->end_ns;
		f->attach_ns = t->attach_ns;
		f->duration_ns = t->duration_ns;
		f->cpu_ms = t->cpu_ms;
		return;
	}
	f->end_ns = now;
	f->attach_ns = a->attach_done_ns ? a->attach_done_ns - a->start_ns : 0;
	f->duration_ns = now - a->start_ns;
	f->cpu_ms = nl_app_cpu_ms();
}

static void finish_engine(struct nl_app *a, const struct run_facts *f)
{
	const char *missing[NL_API_COUNT];
	struct nl_run_info ri = { 0 };

	for (int i = 0; i < a->nmissing; i++)
		missing[i] = nl_api_name((unsigned)a->missing[i]);
	ri.probes_attached = (uint32_t)a->probes_attached;
	ri.retprobes_attached = (uint32_t)a->retprobes_attached;
	ri.nprobes_missing = (uint32_t)a->nmissing;
	ri.probes_missing = missing;
	ri.lost_ringbuf = a->stats[NL_STAT_LOST_RINGBUF];
	ri.lost_stash = a->stats[NL_STAT_LOST_STASH];
	ri.nested_folded = a->stats[NL_STAT_NESTED];
	ri.bad_records = a->bad_records;
	ri.attach_ns = f->attach_ns;
	ri.duration_ns = f->duration_ns;
	ri.cpu_ms = f->cpu_ms;
	ri.wall_realtime_ns = a->start_real_ns;
	ri.wall_monotonic_ns = a->start_ns;
	nl_engine_set_run_info(a->engine, &ri);
	nl_engine_finish(a->engine, f->end_ns);
	nl_app_note_write(a);
}

static void finish_recording(struct nl_app *a, const struct run_facts *f, int err)
{
	struct nl_recording_trailer t = { 0 };
	int rc;

	if (!a->rec)
		return;
	if (!a->rec_err) {
		t.end_ns = f->end_ns;
		t.records = a->records;
		t.bad_records = a->bad_records;
		t.lost_ringbuf = a->stats[NL_STAT_LOST_RINGBUF];
		t.lost_stash = a->stats[NL_STAT_LOST_STASH];
		t.nested_folded = a->stats[NL_STAT_NESTED];
		t.probes_attached = (uint32_t)a->probes_attached;
		t.retprobes_attached = (uint32_t)a->retprobes_attached;
		t.nmissing = a->nmissing;
		memcpy(t.missing, a->missing, sizeof(int) * (size_t)a->nmissing);
		t.attach_ns = f->attach_ns;
		t.duration_ns = f->duration_ns;
		t.cpu_ms = f->cpu_ms;
		t.err = err;
		nl_app_rec_check(a, nl_recording_finish(a->rec, &t));
	}
	rc = nl_recording_close(a->rec);
	a->rec = NULL;
	if (rc && !a->rec_err)
		nl_app_rec_check(a, rc);
}

void nl_app_finish(struct nl_app *a, uint64_t now_ns, int err)
{
	struct run_facts f;
	uint64_t lost;

	if (a->l) {
		uint64_t total;

		nl_loader_untrace_all(a->l); /* drains the ring, then the open runs */
		nl_app_poll_lost(a);
		/* losses no record told: none went out after them */
		total = a->stats[NL_STAT_LOST_RINGBUF] + a->stats[NL_STAT_LOST_STASH];
		if (total > a->lost_inline) {
			nl_app_first_loss(a);
			nl_app_lost(a, 0, total - a->lost_inline, now_ns);
		}
		a->lost_inline = total;
	}
	live_facts(a, now_ns, &f);
	finish_recording(a, &f, err);
	lost = a->stats[NL_STAT_LOST_RINGBUF] + a->stats[NL_STAT_LOST_STASH];
	if (a->metrics && !a->replay)
		nl_app_publish_counters(a);
	if (a->engine && !a->write_err && !err)
		finish_engine(a, &f);
	nl_engine_free(a->engine);
	a->engine = NULL;
	nl_metrics_http_stop(a->http);
	a->http = NULL;
	nl_metrics_free(a->metrics);
	a->metrics = NULL;
	nl_live_free(a->live);
	a->live = NULL;
	if (a->out && !a->write_err && !err && a->o.no_audit) {
		struct nl_json j;

		nl_json_begin(&j, a->out);
		nl_json_kstr(&j, "type", "summary");
		nl_json_ki64(&j, "schema", NL_OUTPUT_SCHEMA);
		nl_json_ku64(&j, "records", a->records);
		nl_json_ku64(&j, "bad_records", a->bad_records);
		nl_json_ku64(&j, "counted_launches", a->counted_launches);
		nl_json_ku64(&j, "lost_records", lost);
		nl_json_ku64(&j, "lost_ringbuf", a->stats[NL_STAT_LOST_RINGBUF]);
		nl_json_ku64(&j, "lost_stash", a->stats[NL_STAT_LOST_STASH]);
		nl_json_ku64(&j, "nested_folded", a->stats[NL_STAT_NESTED]);
		nl_json_ki64(&j, "probes_attached", a->probes_attached);
		nl_json_ki64(&j, "retprobes_attached", a->retprobes_attached);
		nl_app_json_api_names(&j, "probes_missing", a->missing, a->nmissing);
		nl_json_ku64(&j, "attach_ns", f.attach_ns);
		nl_json_ku64(&j, "duration_ns", f.duration_ns);
		nl_json_kdbl(&j, "cpu_ms", f.cpu_ms);
		nl_json_end(&j);
		nl_app_note_write(a);
	}
	{
		int rc = nl_app_sinks_close(a);

		if (rc && !a->write_err) {
			a->write_err = rc;
			a->diag(0, "%s: %s", a->o.trace_path, strerror(-rc));
		}
	}
	if (!a->o.quiet && (a->attach_done_ns || (a->replay && !err)))
		fprintf(stderr,
			"nanlog-bpf: %" PRIu64 " records processed (and %" PRIu64
			" launches counted in the kernel), %" PRIu64 " lost\n",
			a->records, a->counted_launches, lost);
	if (a->rec_err && !err && !a->write_err)
		a->write_err = a->rec_err; /* a recording that was asked for and is incomplete */
}

void nl_app_error(struct nl_app *a, const char *message)
{
	struct nl_json j;

	if (!a->out || a->write_err || a->o.format == NL_FMT_TABLE)
		return;
	nl_json_begin(&j, a->out);
	nl_json_kstr(&j, "type", "error");
	nl_json_ki64(&j, "schema", NL_OUTPUT_SCHEMA);
	nl_json_kstr(&j, "message", message);
	nl_json_end(&j);
	nl_app_note_write(a);
}
