// SPDX-License-Identifier: MIT
/* Chrome/Perfetto JSON trace writer; see trace.h for what it shows. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "out/json.h"
#include "out/trace.h"

#define MAX_TRACKS 1024 /* streams beyond share one "other streams" track */
#define EV_BUCKETS 4096 /* open-addressed table of recorded events */

struct track {
	uint32_t pid, tid; /* tid: per-thread default stream's thread, else 0 */
	uint64_t handle;
	uint32_t id;       /* the Chrome "tid" of the track */
};

struct evrec {
	uint32_t pid;
	uint64_t handle;
	uint64_t ts;   /* the record's time; 0 = slot free or never recorded */
	uint32_t track;
	bool used;
};

struct nl_trace {
	FILE *f;
	bool first;
	int err;
	struct track tracks[MAX_TRACKS];
	uint32_t ntracks;
	struct evrec ev[EV_BUCKETS];
	uint64_t next_flow;
};

static void sep(struct nl_trace *t)
{
	if (!t->first)
		fputc(',', t->f); /* after the previous event's newline */
	t->first = false;
}

/* microseconds with nanosecond precision, as the format wants */
static void kts(struct nl_json *j, const char *key, uint64_t ns)
{
	char v[32];

	snprintf(v, sizeof(v), "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
	nl_json_key(j, key);
	nl_json_raw(j, v);
}

/* Start one event object; the caller adds fields and calls end_ev. */
static void begin_ev(struct nl_trace *t, struct nl_json *j, const char *ph, const char *name,
		     uint32_t pid, uint32_t tid, uint64_t ts)
{
	sep(t);
	nl_json_begin(j, t->f);
	nl_json_kstr(j, "ph", ph);
	nl_json_kstr(j, "name", name);
	nl_json_ku64(j, "pid", pid);
	nl_json_ku64(j, "tid", tid);
	kts(j, "ts", ts);
}

static void end_ev(struct nl_trace *t, struct nl_json *j)
{
	int err = nl_json_end(j); /* one event a line */

	if (err && !t->err)
		t->err = err;
}

struct nl_trace *nl_trace_new(FILE *f)
{
	struct nl_trace *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->f = f;
	t->first = true;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
	return t;
}

/* The track of a stream; per-thread default streams get one per thread. */
static uint32_t track_of(struct nl_trace *t, uint32_t pid, uint64_t handle, uint32_t tid)
{
	for (uint32_t i = 0; i < t->ntracks; i++)
		if (t->tracks[i].pid == pid && t->tracks[i].handle == handle && t->tracks[i].tid == tid)
			return t->tracks[i].id;
	if (t->ntracks == MAX_TRACKS)
		return 1; /* "other streams" */
	t->tracks[t->ntracks] = (struct track){ .pid = pid, .tid = tid, .handle = handle,
						.id = t->ntracks + 2 };
	return t->tracks[t->ntracks++].id;
}

static uint32_t call_track(struct nl_trace *t, const struct nl_call *c)
{
	uint64_t h = c->stream == 1 ? 0 : c->stream; /* hipStreamLegacy is the null stream */
	bool per_thread = h == 2 || (h == 0 && (nl_api_info[c->api].flags & NL_AF_SPT));

	return track_of(t, c->pid, per_thread ? 2 : h, per_thread ? c->tid : 0);
}

/* Linear probing, never deleted: ts 0 marks a handle not (or no longer) recorded. */
static struct evrec *ev_slot(struct nl_trace *t, uint32_t pid, uint64_t handle, bool create)
{
	uint64_t h = (handle ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ull;
	struct evrec *e;

	for (unsigned n = 0; n < EV_BUCKETS; n++) {
		e = &t->ev[(h + n) & (EV_BUCKETS - 1)];
		if (e->used && e->pid == pid && e->handle == handle)
			return e;
		if (!e->used)
			break;
	}
	if (!create)
		return NULL;
	if (e->used) /* full: take the home slot (a missing arrow, never a wrong one) */
		e = &t->ev[h & (EV_BUCKETS - 1)];
	*e = (struct evrec){ .pid = pid, .handle = handle, .used = true };
	return e;
}

/* An op on a stream: work, a record or a wait. */
static bool is_op(int kind)
{
	return nl_kind_is_work(kind) || kind == NL_K_EVENT_RECORD || kind == NL_K_STREAM_WAIT;
}

void nl_trace_call(struct nl_trace *t, const struct nl_call *c)
{
	const char *name = nl_api_name(c->api);
	struct nl_json j;
	uint32_t track;
	uint64_t dur = 1000; /* entry-only calls: a 1 us mark */

	if (!t || !name)
		return;
	if ((c->fields & NL_F_RC) && c->rc != 0)
		return; /* a failed call did nothing */
	/* creations start a new generation: a record of the old handle must not match */
	if (c->kind == NL_K_EVENT_CREATE && (c->fields & NL_F_HANDLE)) {
		struct evrec *e = ev_slot(t, c->pid, c->handle, true);

		if (e)
			e->ts = 0;
		return;
	}
	if (c->kind == NL_K_EVENT_DESTROY && (c->fields & NL_F_EVENT)) {
		struct evrec *e = ev_slot(t, c->pid, c->event, false);

		if (e)
			e->ts = 0;
		return;
	}
	if (!is_op(c->kind) || !(c->fields & NL_F_STREAM))
		return;
	track = call_track(t, c);
	if ((c->fields & NL_F_RC) && c->ret_ns > c->ts_ns)
		dur = c->ret_ns - c->ts_ns;
	begin_ev(t, &j, "X", name, c->pid, track, c->ts_ns);
	kts(&j, "dur", dur);
	nl_json_kstr(&j, "cat", "op");
	nl_json_key(&j, "args");
	nl_json_obj(&j);
	nl_json_ku64(&j, "tid", c->tid);
	if (c->fields & NL_F_EVENT)
		nl_json_khex(&j, "event", c->event);
	if (c->fields & NL_F_BYTES)
		nl_json_ku64(&j, "bytes", c->bytes);
	nl_json_obj_end(&j);
	end_ev(t, &j);

	if (c->kind == NL_K_EVENT_RECORD && (c->fields & NL_F_EVENT)) {
		struct evrec *e = ev_slot(t, c->pid, c->event, true);

		if (e) {
			e->ts = c->ts_ns;
			e->track = track;
		}
	} else if (c->kind == NL_K_LAUNCH && (c->fields & NL_F_EVENT2) && c->event2) {
		/* hipExtLaunchKernel records its stop event after the kernel */
		struct evrec *e = ev_slot(t, c->pid, c->event2, true);

		if (e) {
			e->ts = c->ts_ns;
			e->track = track;
		}
	} else if (c->kind == NL_K_STREAM_WAIT && (c->fields & NL_F_EVENT)) {
		struct evrec *e = ev_slot(t, c->pid, c->event, false);
		uint64_t id;

		if (!e || !e->ts)
			return; /* never recorded (or before attach): no edge */
		/* both ends at once: a flow start always has its end */
		id = ++t->next_flow;
		begin_ev(t, &j, "s", "edge", c->pid, e->track, e->ts);
		nl_json_kstr(&j, "cat", "edge");
		nl_json_ku64(&j, "id", id);
		end_ev(t, &j);
		begin_ev(t, &j, "f", "edge", c->pid, track, c->ts_ns);
		nl_json_kstr(&j, "cat", "edge");
		nl_json_ku64(&j, "id", id);
		nl_json_kstr(&j, "bp", "e");
		end_ev(t, &j);
	}
}

static void async_slice(struct nl_trace *t, const char *name, const char *cat, uint32_t pid,
			uint64_t id, uint64_t from, uint64_t to, const struct nl_batch_audit *a)
{
	struct nl_json j;

	if (!from || to < from)
		return;
	begin_ev(t, &j, "b", name, pid, 0, from);
	nl_json_kstr(&j, "cat", cat);
	nl_json_khex(&j, "id", id);
	nl_json_key(&j, "args");
	nl_json_obj(&j);
	if (a->pipeline)
		nl_json_ku64(&j, "pipeline", a->pipeline);
	nl_json_ku64(&j, "batch", a->batch);
	nl_json_kstr(&j, "verdict", nl_verdict_name(a->verdict));
	nl_json_obj_end(&j);
	end_ev(t, &j);
	begin_ev(t, &j, "e", name, pid, 0, to);
	nl_json_kstr(&j, "cat", cat);
	nl_json_khex(&j, "id", id);
	end_ev(t, &j);
}

void nl_trace_batch(struct nl_trace *t, const struct nl_batch_audit *a)
{
	char name[128], bn[48];
	/* the first pipeline's batches are "batch N"; later ones say which */
	uint64_t from = 0, to = 0, pid48 = (uint64_t)a->pipeline << 48;
	struct nl_json j;

	if (!t)
		return;
	if (a->pipeline)
		snprintf(bn, sizeof(bn), "pipeline %u batch %" PRIu64, a->pipeline, a->batch);
	else
		snprintf(bn, sizeof(bn), "batch %" PRIu64, a->batch);
	for (int s = 0; s < NL_NSTAGES; s++) {
		const struct nl_stage_audit *st = &a->stage[s];

		if (!st->ops)
			continue;
		snprintf(name, sizeof(name), "%s %s", bn, nl_stage_name(s));
		/* ids: pipeline, batch, stage, so every slice has its own */
		async_slice(t, name, nl_stage_name(s), a->pid, pid48 | (a->batch << 4) | (uint64_t)(s + 1),
			    st->first_ns, st->last_ns, a);
		if (!from || st->first_ns < from)
			from = st->first_ns;
		if (st->last_ns > to)
			to = st->last_ns;
		if (st->completion.done_by_ns && st->nstreams) {
			uint32_t track = track_of(t, a->pid, st->streams[0].handle, st->streams[0].tid);

			snprintf(name, sizeof(name), "%s %s done (%s)", bn, nl_stage_name(s), nl_api_name(st->completion.done_api) ?
							   nl_api_name(st->completion.done_api) : "?");
			begin_ev(t, &j, "i", name, a->pid, track, st->completion.done_by_ns);
			nl_json_kstr(&j, "cat", "evidence");
			nl_json_kstr(&j, "s", "t");
			end_ev(t, &j);
		}
	}
	if (a->window_end_ns > to)
		to = a->window_end_ns;
	snprintf(name, sizeof(name), "%s %s", bn, nl_verdict_name(a->verdict));
	async_slice(t, name, "batch", a->pid, pid48 | a->batch << 4, from, to, a);
	if (a->verdict == NL_VERDICT_UNTRUSTED) {
		const struct nl_stage_audit *fw = &a->stage[NL_STAGE_FORWARD];
		char edges[64] = "";

		for (int e = 0; e < NL_NEDGES; e++)
			if (a->missing_mask & (1u << e))
				snprintf(edges + strlen(edges), sizeof(edges) - strlen(edges), "%s%s",
					 edges[0] ? "," : "", nl_edge_name(e));
		snprintf(name, sizeof(name), "UNTRUSTED %s: %s", bn, edges);
		begin_ev(t, &j, "i", name, a->pid, 0, fw->last_ns ? fw->last_ns : to);
		nl_json_kstr(&j, "cat", "verdict");
		nl_json_kstr(&j, "s", "p");
		end_ev(t, &j);
	}
}

static void meta(struct nl_trace *t, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
	struct nl_json j;

	sep(t);
	nl_json_begin(&j, t->f);
	nl_json_kstr(&j, "ph", "M");
	nl_json_kstr(&j, "name", what);
	nl_json_ku64(&j, "pid", pid);
	nl_json_ku64(&j, "tid", tid);
	nl_json_key(&j, "args");
	nl_json_obj(&j);
	nl_json_kstr(&j, "name", name);
	nl_json_obj_end(&j);
	end_ev(t, &j);
}

void nl_trace_summary(struct nl_trace *t, const struct nl_summary *s)
{
	char name[128];

	if (!t)
		return;
	for (uint32_t p = 0; p < s->nprocs; p++) {
		snprintf(name, sizeof(name), "pid %" PRIu32, s->procs[p].pid);
		meta(t, "process_name", s->procs[p].pid, 0, name);
		meta(t, "thread_name", s->procs[p].pid, 0, "batches and stages");
	}
	for (uint32_t i = 0; i < t->ntracks; i++) {
		const struct track *tr = &t->tracks[i];
		const char *role = "other";

		for (uint32_t k = 0; k < s->nstreams; k++)
			if (s->streams[k].pid == tr->pid && s->streams[k].handle == tr->handle &&
			    s->streams[k].tid == tr->tid)
				role = nl_role_name(s->streams[k].role);
		if (tr->handle == 2)
			snprintf(name, sizeof(name), "%s stream: per-thread of tid %" PRIu32, role, tr->tid);
		else
			snprintf(name, sizeof(name), "%s stream 0x%" PRIx64, role, tr->handle);
		meta(t, "thread_name", tr->pid, tr->id, name);
	}
	if (t->ntracks == MAX_TRACKS)
		for (uint32_t p = 0; p < s->nprocs; p++)
			meta(t, "thread_name", s->procs[p].pid, 1, "other streams");
}

int nl_trace_close(struct nl_trace *t)
{
	int err;

	if (!t)
		return 0;
	fputs("]}\n", t->f);
	err = t->err;
	if (fclose(t->f) && !err)
		err = errno ? -errno : -EIO;
	free(t);
	return err;
}
