// SPDX-License-Identifier: MIT
/* Batch audits and the run summary as JSON Lines (docs/output.md). */
#include "engine/engine.h"
#include "out/json.h"

static void op_ref(struct nl_json *j, const char *key, const struct nl_op_ref *r)
{
	const char *api = nl_api_name(r->api);

	nl_json_key(j, key);
	if (!r->valid) {
		nl_json_null(j);
		return;
	}
	nl_json_obj(j);
	nl_json_khex(j, "stream", r->stream);
	if (r->stream_tid)
		nl_json_ku64(j, "stream_tid", r->stream_tid);
	nl_json_kstr(j, "role", nl_role_name(r->role));
	nl_json_kstr(j, "api", api ? api : "?");
	nl_json_ku64(j, "tid", r->tid);
	nl_json_ku64(j, "ts_ns", r->ts_ns);
}

static void op_ref_end(struct nl_json *j, const struct nl_op_ref *r)
{
	if (r->valid)
		nl_json_obj_end(j);
}

static void ku64_or_null(struct nl_json *j, const char *key, uint64_t v, bool known)
{
	if (known)
		nl_json_ku64(j, key, v);
	else
		nl_json_knull(j, key);
}

static void stream_list(struct nl_json *j, const struct nl_stage_audit *s)
{
	nl_json_key(j, "streams");
	nl_json_arr(j);
	for (uint32_t i = 0; i < s->nstreams; i++)
		nl_json_hex(j, s->streams[i].handle);
	nl_json_arr_end(j);
	/* per-thread default streams (0x2) also say whose */
	for (uint32_t i = 0; i < s->nstreams; i++)
		if (s->streams[i].tid) {
			nl_json_key(j, "stream_tids");
			nl_json_arr(j);
			for (uint32_t k = 0; k < s->nstreams; k++)
				nl_json_u64(j, s->streams[k].tid);
			nl_json_arr_end(j);
			break;
		}
}

static void stage(struct nl_json *j, const char *key, const struct nl_stage_audit *s,
		  const struct nl_batch_audit *a)
{
	const struct nl_completion *c = &s->completion;

	nl_json_key(j, key);
	if (!s->present) {
		nl_json_null(j);
		return;
	}
	nl_json_obj(j);
	ku64_or_null(j, "first_ns", s->first_ns, s->ops);
	ku64_or_null(j, "last_ns", s->last_ns, s->ops);
	if (s == &a->stage[NL_STAGE_FORWARD])
		ku64_or_null(j, "window_end_ns", a->window_end_ns, a->window_end_ns != 0);
	nl_json_ku64(j, "ops", s->ops);
	nl_json_ku64(j, "bytes", s->bytes);
	nl_json_ku64(j, "threads", s->threads);
	stream_list(j, s);
	nl_json_ku64(j, "collectives", s->collectives);
	nl_json_key(j, "completion");
	if (c->done_by_ns) {
		const char *api = nl_api_name(c->done_api);

		nl_json_obj(j);
		nl_json_ku64(j, "done_by_ns", c->done_by_ns);
		nl_json_kstr(j, "source", api ? api : "?");
		nl_json_obj_end(j);
	} else {
		nl_json_str(j, "unknown");
	}
	ku64_or_null(j, "not_done_at_ns", c->not_done_at_ns, c->not_done_at_ns != 0);
	if (c->gpu_ms_n) {
		nl_json_kdbl(j, "gpu_ms", c->gpu_ms);
		nl_json_ku64(j, "gpu_intervals", c->gpu_ms_n);
	}
	nl_json_obj_end(j);
}

static void name_list(struct nl_json *j, const char *key, uint32_t mask, int n,
		      const char *(*name)(int))
{
	nl_json_key(j, key);
	nl_json_arr(j);
	for (int i = 0; i < n; i++)
		if (mask & (1u << i))
			nl_json_str(j, name(i));
	nl_json_arr_end(j);
}

void nl_audit_json_batch(FILE *f, const struct nl_batch_audit *a)
{
	struct nl_json j;

	nl_json_begin(&j, f);
	nl_json_kstr(&j, "type", "batch");
	nl_json_ku64(&j, "schema", NL_OUTPUT_SCHEMA);
	nl_json_ku64(&j, "pid", a->pid);
	if (a->container_id && *a->container_id)
		nl_json_kstr(&j, "container_id", a->container_id);
	if (a->pod_uid && *a->pod_uid)
		nl_json_kstr(&j, "pod_uid", a->pod_uid);
	nl_json_ku64(&j, "pipeline", a->pipeline);
	nl_json_ku64(&j, "batch", a->batch);
	nl_json_kstr(&j, "verdict", nl_verdict_name(a->verdict));
	name_list(&j, "skip_reasons", a->skip_mask, NL_NSKIP, nl_skip_name);
	name_list(&j, "missing_edges", a->missing_mask, NL_NEDGES, nl_edge_name);
	ku64_or_null(&j, "tick", (uint64_t)a->tick, a->tick >= 0);
	ku64_or_null(&j, "depth", (uint64_t)a->depth, a->depth >= 0);
	stage(&j, "copy", &a->stage[NL_STAGE_COPY], a);
	stage(&j, "sparse", &a->stage[NL_STAGE_SPARSE], a);
	stage(&j, "forward", &a->stage[NL_STAGE_FORWARD], a);
	nl_json_key(&j, "handoff");
	nl_json_obj(&j);
	for (int k = NL_STAGE_COPY; k <= NL_STAGE_SPARSE; k++) {
		const struct nl_handoff *h = &a->handoff[k];

		op_ref(&j, nl_stage_name(k), &h->op);
		if (h->found)
			nl_json_ku64(&j, "exposure", h->exposure);
		op_ref_end(&j, &h->op);
	}
	nl_json_obj_end(&j);
	ku64_or_null(&j, "overlap_ns", a->overlap_ns, a->overlap_known);
	nl_json_key(&j, "unordered");
	nl_json_arr(&j);
	for (uint32_t i = 0; i < a->nunordered; i++) {
		const struct nl_unordered *u = &a->unordered[i];

		nl_json_obj(&j);
		nl_json_kstr(&j, "edge", nl_edge_name(u->edge));
		nl_json_kbool(&j, "never_reached", u->never_reached);
		op_ref(&j, "producer", &u->producer);
		op_ref_end(&j, &u->producer);
		op_ref(&j, "consumer", &u->consumer);
		op_ref_end(&j, &u->consumer);
		nl_json_obj_end(&j);
	}
	nl_json_arr_end(&j);
	if (a->post_step_enabled) {
		nl_json_key(&j, "post_step");
		nl_json_obj(&j);
		nl_json_kbool(&j, "confirmed", a->post_step_confirmed);
		ku64_or_null(&j, "at_ns", a->post_step_at_ns, a->post_step_confirmed);
		ku64_or_null(&j, "tick_end_ns", a->tick_end_ns, a->tick_end_ns != 0);
		nl_json_obj_end(&j);
	}
	nl_json_end(&j);
}

/* Batches by verdict, the same four keys wherever counts are given. */
static void verdict_counts(struct nl_json *j, const struct nl_verdict_counts *n)
{
	nl_json_ku64(j, "batches", n->batches);
	nl_json_ku64(j, "trusted", n->trusted);
	nl_json_ku64(j, "untrusted", n->untrusted);
	nl_json_ku64(j, "skipped", n->skipped);
}

static void histogram(struct nl_json *j, const char *key, const uint64_t *v, int n,
		      const char *(*name)(int))
{
	nl_json_key(j, key);
	nl_json_obj(j);
	for (int i = 0; i < n; i++)
		nl_json_ku64(j, name(i), v[i]);
	nl_json_obj_end(j);
}

void nl_audit_json_summary(FILE *f, const struct nl_summary *s)
{
	const struct nl_run_info *r = &s->run;
	struct nl_json j;

	nl_json_begin(&j, f);
	nl_json_kstr(&j, "type", "summary");
	nl_json_ku64(&j, "schema", NL_OUTPUT_SCHEMA);
	nl_json_kbool(&j, "evidence_valid", s->evidence_valid);
	name_list(&j, "invalid_reasons", s->invalid_mask, NL_NINVALID, nl_invalid_name);
	name_list(&j, "missing_stages", s->missing_stages, NL_NSTAGES, nl_stage_name);
	verdict_counts(&j, &(struct nl_verdict_counts){ s->batches, s->trusted, s->untrusted,
							 s->skipped });
	histogram(&j, "skip_reasons", s->skip_reasons, NL_NSKIP, nl_skip_name);
	histogram(&j, "missing_edges", s->missing_edges, NL_NEDGES, nl_edge_name);
	nl_json_ku64(&j, "records", s->records);
	nl_json_ku64(&j, "ignored_records", s->ignored_records);
	nl_json_ku64(&j, "untracked_records", s->untracked_records);
	nl_json_ku64(&j, "lost_records", s->lost_records);
	nl_json_ku64(&j, "pipeline_ticks", s->pipeline_ticks);
	ku64_or_null(&j, "depth", (uint64_t)s->depth, s->depth >= 0);
	ku64_or_null(&j, "tick_ns", s->tick_ns, s->tick_ns != 0);
	nl_json_ku64(&j, "edges", s->edges);
	nl_json_ku64(&j, "implicit_edges", s->implicit_edges);
	nl_json_ku64(&j, "late_ops", s->late_ops);
	nl_json_ku64(&j, "unplaced_streams", s->unplaced_streams);
	nl_json_ku64(&j, "in_flight_ops", s->in_flight_ops);
	nl_json_key(&j, "evicted");
	nl_json_obj(&j);
	nl_json_ku64(&j, "streams", s->evicted_streams);
	nl_json_ku64(&j, "events", s->evicted_events);
	nl_json_ku64(&j, "batches", s->evicted_batches);
	nl_json_obj_end(&j);
	nl_json_key(&j, "streams");
	nl_json_arr(&j);
	for (uint32_t i = 0; i < s->nstreams; i++) {
		const struct nl_stream_summary *st = &s->streams[i];

		nl_json_obj(&j);
		nl_json_ku64(&j, "pid", st->pid);
		nl_json_khex(&j, "stream", st->handle);
		if (st->tid)
			nl_json_ku64(&j, "stream_tid", st->tid);
		nl_json_kstr(&j, "role", nl_role_name(st->role));
		ku64_or_null(&j, "pipeline", (uint64_t)st->pipeline, st->pipeline >= 0);
		nl_json_ku64(&j, "ops", st->ops);
		nl_json_kbool(&j, "blocking", st->blocking);
		nl_json_kbool(&j, "created", st->created);
		nl_json_obj_end(&j);
	}
	nl_json_arr_end(&j);
	nl_json_key(&j, "processes");
	nl_json_arr(&j);
	for (uint32_t i = 0; i < s->nprocs; i++) {
		const struct nl_proc_summary *p = &s->procs[i];

		nl_json_obj(&j);
		nl_json_ku64(&j, "pid", p->pid);
		verdict_counts(&j, &p->n);
		nl_json_ku64(&j, "ticks", p->ticks);
		ku64_or_null(&j, "depth", (uint64_t)p->depth, p->depth >= 0);
		ku64_or_null(&j, "tick_ns", p->tick_ns, p->tick_ns != 0);
		nl_json_kstr(&j, "pattern", !p->has_copy ? "none" : p->has_sparse ? "sparse" : "simple");
		name_list(&j, "missing_stages", p->missing_stages, NL_NSTAGES, nl_stage_name);
		nl_json_kbool(&j, "mid_run", p->mid_run);
		nl_json_key(&j, "pipelines");
		nl_json_arr(&j);
		for (uint32_t k = 0; k < p->npipes && k < NL_ENGINE_MAX_PIPES; k++) {
			nl_json_obj(&j);
			nl_json_ku64(&j, "pipeline", k);
			verdict_counts(&j, &p->pipes[k].n);
			nl_json_kstr(&j, "pattern", p->pipes[k].has_sparse ? "sparse" : "simple");
			nl_json_ku64(&j, "copy_streams", p->pipes[k].copy_streams);
			nl_json_ku64(&j, "sparse_streams", p->pipes[k].sparse_streams);
			nl_json_obj_end(&j);
		}
		nl_json_arr_end(&j);
		nl_json_obj_end(&j);
	}
	nl_json_arr_end(&j);
	/* filled in by the loader (nl_engine_set_run_info); null without it */
	if (s->has_run_info) {
		nl_json_ku64(&j, "probes_attached", r->probes_attached);
		nl_json_ku64(&j, "retprobes_attached", r->retprobes_attached);
	} else {
		nl_json_knull(&j, "probes_attached");
		nl_json_knull(&j, "retprobes_attached");
	}
	nl_json_key(&j, "probes_missing");
	nl_json_arr(&j);
	for (uint32_t i = 0; i < r->nprobes_missing; i++)
		nl_json_str(&j, r->probes_missing[i]);
	nl_json_arr_end(&j);
	ku64_or_null(&j, "lost_ringbuf", r->lost_ringbuf, s->has_run_info);
	ku64_or_null(&j, "lost_stash", r->lost_stash, s->has_run_info);
	ku64_or_null(&j, "nested_folded", r->nested_folded, s->has_run_info);
	ku64_or_null(&j, "bad_records", r->bad_records, s->has_run_info);
	ku64_or_null(&j, "attach_ns", r->attach_ns, s->has_run_info);
	ku64_or_null(&j, "duration_ns", r->duration_ns, s->has_run_info);
	if (s->has_run_info)
		nl_json_kdbl(&j, "cpu_ms", r->cpu_ms);
	else
		nl_json_knull(&j, "cpu_ms");
	nl_json_key(&j, "wall_anchor");
	if (s->has_run_info && r->wall_realtime_ns) {
		nl_json_obj(&j);
		nl_json_ku64(&j, "realtime_ns", r->wall_realtime_ns);
		nl_json_ku64(&j, "monotonic_ns", r->wall_monotonic_ns);
		nl_json_obj_end(&j);
	} else {
		nl_json_null(&j);
	}
	nl_json_end(&j);
}

static void json_batch_cb(void *ctx, const struct nl_batch_audit *a)
{
	nl_audit_json_batch(ctx, a);
}

static void json_summary_cb(void *ctx, const struct nl_summary *s)
{
	nl_audit_json_summary(ctx, s);
}

struct nl_sink nl_audit_json_sink(FILE *f)
{
	return (struct nl_sink){ .ctx = f, .batch = json_batch_cb, .summary = json_summary_cb };
}
