// SPDX-License-Identifier: MIT
/* Glue between the loader (BPF side) and the pure core (decoder, writers, engine). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "app/app.h"
#include "record/decode.h"
#include "attach/caps.h"
#include "engine/engine.h"
#include "out/json.h"
#include "out/raw.h"
#include "record/recording.h"

static void note_write(struct nl_app *a)
{
	if (!a->write_err && (ferror(a->out) || fflush(a->out))) {
		a->write_err = errno ? -errno : -EIO;
		a->diag(0, "cannot write output%s%s: %s", a->o.out_path ? " to " : "",
			a->o.out_path ? a->o.out_path : "", strerror(-a->write_err));
	}
}

/* --record: remember the first failure, stop recording, keep auditing */
static void rec_check(struct nl_app *a, int err)
{
	if (!err || a->rec_err)
		return;
	a->rec_err = err;
	a->diag(0, "%s: recording stopped: %s", a->o.record_path, strerror(-err));
}

/* The newest target entry of pid (a reused PID has a later one). */
static struct nl_app_target *target_of(struct nl_app *a, uint32_t pid)
{
	struct nl_app_target *found = NULL;

	for (int i = 0; i < a->ntargets; i++)
		if ((uint32_t)a->targets[i].pid == pid && (!found || a->targets[i].alive))
			found = &a->targets[i];
	return found;
}

/* Every final batch passes here: counted, labelled with its container, written. */
static void app_batch(void *ctx, const struct nl_batch_audit *b)
{
	struct nl_app *a = ctx;
	const struct nl_app_target *t = target_of(a, b->pid);
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

static double cpu_ms(void);

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


/* The loader's counters to the metrics registry and the live view. */
static void publish_counters(struct nl_app *a)
{
	struct nl_metrics_counters c = {
		.records = a->records,
		.bad_records = a->bad_records,
		.lost_ringbuf = a->stats[NL_STAT_LOST_RINGBUF],
		.lost_stash = a->stats[NL_STAT_LOST_STASH],
		.probes_attached = (uint64_t)a->probes_attached,
		.probes_missing = (uint64_t)a->nmissing,
		.targets = (uint64_t)a->ntargets_alive,
		.cpu_seconds = cpu_ms() / 1e3,
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

int nl_app_add_target(struct nl_app *a, pid_t pid, const char *const *paths, int npaths,
		      bool require_hip)
{
	struct nl_app_target *t = NULL;
	struct nl_found id;
	int err;

	/* the slot of a target that exited is free again */
	for (int i = 0; i < a->ntargets && !t; i++)
		if (!a->targets[i].alive)
			t = &a->targets[i];
	if (!t) {
		if (a->ntargets >= NL_MAX_PIDS) {
			a->diag(0, "process %d not traced: already %d targets", (int)pid, NL_MAX_PIDS);
			return -E2BIG;
		}
		t = &a->targets[a->ntargets++];
	}
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (nl_identify("/proc", pid, &id)) {
		a->diag(0, "no such process: %d", (int)pid);
		return -ESRCH;
	}
	t->starttime = id.starttime;
	snprintf(t->comm, sizeof(t->comm), "%s", id.comm);
	snprintf(t->container_id, sizeof(t->container_id), "%s", id.cg.container_id);
	snprintf(t->pod_uid, sizeof(t->pod_uid), "%s", id.cg.pod_uid);
	err = nl_loader_add_target(a->l, pid, paths, npaths, require_hip);
	if (err == -ENOENT) {
		a->diag(0, "process %d (%s) has no HIP runtime mapped (libamdhip64.so*); "
			   "--wait-lib waits for it, --lib PATH names it", (int)pid, t->comm);
		return err;
	}
	if (err == -ESRCH) {
		return err; /* loader said which */
	}
	if (err) {
		a->diag(0, "cannot attach to process %d (%s): %s", (int)pid, t->comm, strerror(-err));
		return err;
	}
	t->alive = true;
	a->ntargets_alive++;
	if (a->metrics)
		nl_metrics_set_target(a->metrics, (uint32_t)pid, t->container_id, t->pod_uid);
	if (a->live)
		nl_live_target(a->live, (uint32_t)pid, t->comm, t->container_id);
	if (t->container_id[0])
		a->diag(1, "process %d (%s): container %.12s%s%s", (int)pid, t->comm, t->container_id,
			t->pod_uid[0] ? ", pod " : "", t->pod_uid);
	/* a running target was there before the probes: its first batch may be partial */
	nl_app_target_added(a, (uint32_t)pid, nl_mono_ns(), pid != a->child, t->comm, t->container_id,
			    t->pod_uid);
	return 0;
}

/*
 * A recording keeps a target's container and pod after its command name,
 * each behind a unit separator (0x1f): "python\x1f<container>\x1f<pod>".
 */
#define LABEL_SEP '\x1f'

void nl_app_target_added(struct nl_app *a, uint32_t pid, uint64_t ts, bool mid_run,
			 const char *comm, const char *container_id, const char *pod_uid)
{
	if (a->engine)
		nl_engine_attach(a->engine, pid, ts, mid_run);
	if (a->rec && !a->rec_err) {
		char packed[32 + 1 + 65 + 1 + 37];
		struct nl_recording_target rt = { .pid = pid, .mid_run = mid_run, .ts_ns = ts,
						  .comm = packed };

		if (container_id && *container_id)
			snprintf(packed, sizeof(packed), "%s%c%s%c%s", comm, LABEL_SEP, container_id,
				 LABEL_SEP, pod_uid ? pod_uid : "");
		else
			snprintf(packed, sizeof(packed), "%s", comm);
		rec_check(a, nl_recording_write_target(a->rec, &rt));
	}
}

/* --replay: a target as the live run had it, labels included. */
static void replay_target(struct nl_app *a, const struct nl_recording_target *rt)
{
	struct nl_app_target *t = NULL;
	char buf[NL_RECORDING_MAX_STR + 1], *cid = NULL, *pod = NULL, *sep;

	snprintf(buf, sizeof(buf), "%s", rt->comm ? rt->comm : "");
	if ((sep = strchr(buf, LABEL_SEP))) {
		*sep = '\0';
		cid = sep + 1;
		if ((sep = strchr(cid, LABEL_SEP))) {
			*sep = '\0';
			pod = sep + 1;
		}
	}
	for (int i = 0; i < a->ntargets && !t; i++)
		if (!a->targets[i].alive)
			t = &a->targets[i];
	if (!t && a->ntargets < NL_MAX_PIDS)
		t = &a->targets[a->ntargets++];
	if (t) {
		memset(t, 0, sizeof(*t));
		t->pid = (pid_t)rt->pid;
		t->alive = true;
		snprintf(t->comm, sizeof(t->comm), "%.31s", buf);
		snprintf(t->container_id, sizeof(t->container_id), "%.64s", cid ? cid : "");
		snprintf(t->pod_uid, sizeof(t->pod_uid), "%.36s", pod ? pod : "");
	}
	nl_app_target_added(a, rt->pid, rt->ts_ns, rt->mid_run, buf, cid, pod);
}

/* One call to the raw writer, the trace and the engine (a use of nl_runs_feed). */
struct use_ctx {
	struct nl_app *a;
	const struct nl_app_target *t;
};

static int use_call(void *ctx, const struct nl_call *c)
{
	struct use_ctx *u = ctx;
	struct nl_app *a = u->a;

	if (a->o.raw && !a->write_err) {
		if (nl_raw_write_labeled(a->out, c, u->t ? u->t->container_id : NULL,
					 u->t ? u->t->pod_uid : NULL)) {
			a->write_err = errno ? -errno : -EIO;
			a->diag(0, "cannot write output: %s", strerror(-a->write_err));
			return a->write_err; /* stops the poll */
		}
	}
	nl_trace_call(a->trace, c);
	if (a->engine)
		nl_engine_feed(a->engine, c);
	return 0;
}

/* The launches of a run whose first record was lost in the ring: lost too. */
static void lost_launches(void *ctx, const struct nl_call *c, uint64_t n)
{
	struct use_ctx *u = ctx;

	if (u->a->engine)
		nl_engine_lost(u->a->engine, c->pid, n, c->ts_ns);
}

int nl_app_record(struct nl_app *a, const void *data, size_t size)
{
	struct nl_app_target *t;
	struct use_ctx u;
	uint64_t counted;
	struct nl_call c;
	int rc;

	/* recorded before decoding, bad ones too: replay counts them the same */
	if (a->rec && !a->rec_err)
		rec_check(a, nl_recording_write_record(a->rec, data, size));
	if (nl_decode(data, size, &c)) {
		a->bad_records++;
		return 0;
	}
	a->records++;
	if (c.lost_before) {
		/* a loss, right before this record: in the recording already, so not written again */
		a->lost_inline += c.lost_before;
		if (a->engine)
			nl_engine_lost(a->engine, 0, c.lost_before, c.ts_ns);
	}
	if (c.ts_ns > a->last_ts_ns)
		a->last_ts_ns = c.ts_ns;
	if ((c.fields & NL_F_RC) && c.ret_ns > a->last_ts_ns)
		a->last_ts_ns = c.ret_ns;
	t = target_of(a, c.pid);
	u.a = a;
	u.t = t;
	/* a process never seen start has no run to repeat: what it counted is lost */
	rc = nl_runs_feed(t ? &t->runs : &(struct nl_runs){ 0 }, &c, use_call, lost_launches, &u,
			  &counted);
	a->counted_launches += counted;
	if (rc)
		return rc;
	if (ferror(a->out) && !a->write_err) {
		a->write_err = errno ? -errno : -EIO;
		a->diag(0, "cannot write output: %s", strerror(-a->write_err));
		return a->write_err;
	}
	return 0;
}

/* key: an array of the names of n API ids. */
static void json_api_names(struct nl_json *j, const char *key, const int *ids, int n)
{
	nl_json_key(j, key);
	nl_json_arr(j);
	for (int i = 0; i < n; i++)
		nl_json_str(j, nl_api_name((unsigned)ids[i]));
	nl_json_arr_end(j);
}

void nl_app_attached(struct nl_app *a, const struct nl_attach_report *r)
{
	if (a->rec && !a->rec_err) {
		struct nl_recording_lib rl = { .pid = (uint32_t)r->pid, .lib = r->lib, .path = r->path,
					       .attached = r->attached, .retprobes = r->retprobes,
					       .retprobes_allowed = r->retprobes_allowed,
					       .elapsed_ns = r->elapsed_ns, .ts_ns = nl_mono_ns(),
					       .nmissing = r->nmissing };

		memcpy(rl.missing, r->missing, sizeof(int) * (size_t)r->nmissing);
		rec_check(a, nl_recording_write_lib(a->rec, &rl));
	}
	if (a->o.format != NL_FMT_TABLE) { /* the table is for people: the stderr line says it */
		struct nl_json j;

		nl_json_begin(&j, a->out);
		nl_json_kstr(&j, "type", "attach");
		nl_json_ki64(&j, "schema", NL_APP_SCHEMA);
		nl_json_ki64(&j, "pid", r->pid);
		nl_json_kstr(&j, "lib", nl_lib_name(r->lib));
		nl_json_kstr(&j, "path", r->path);
		nl_json_ki64(&j, "attached", r->attached);
		nl_json_ki64(&j, "retprobes", r->retprobes);
		nl_json_kbool(&j, "retprobes_allowed", r->retprobes_allowed);
		json_api_names(&j, "missing", r->missing, r->nmissing);
		nl_json_kdbl(&j, "attach_ms", (double)r->elapsed_ns / 1e6);
		nl_json_end(&j);
		note_write(a);
	}
	a->probes_attached += r->attached;
	a->retprobes_attached += r->retprobes;
	for (int i = 0; i < r->nmissing; i++) {
		int dup = 0;

		for (int j = 0; j < a->nmissing; j++)
			dup |= a->missing[j] == r->missing[i];
		if (!dup && a->nmissing < NL_API_COUNT)
			a->missing[a->nmissing++] = r->missing[i];
	}
	if (!a->o.quiet) {
		char miss[1024], placed[48] = "";
		size_t off = 0;

		miss[0] = '\0';
		for (int i = 0; i < r->nmissing && off < sizeof(miss); i++)
			off += (size_t)snprintf(miss + off, sizeof(miss) - off, "%s%s", i ? " " : "",
						nl_api_name((unsigned)r->missing[i]));
		if (r->placed)
			snprintf(placed, sizeof(placed), ", %d placed past endbr64", r->placed);
		fprintf(stderr, "nanlog-bpf: pid %d: %s: %d symbols attached (%d with return probes%s%s)%s%s\n",
			(int)r->pid, r->path, r->attached, r->retprobes,
			r->retprobes_allowed ? "" : ", not allowed here", placed,
			r->nmissing ? "; missing: " : "", miss);
	}
}

void nl_app_lost(struct nl_app *a, uint32_t pid, uint64_t count, uint64_t ts)
{
	if (a->engine) /* the counters do not say whose records they were: pid 0 */
		nl_engine_lost(a->engine, pid, count, ts);
	if (a->rec && !a->rec_err)
		rec_check(a, nl_recording_write_lost(a->rec, pid, count, ts));
}

void nl_app_exited(struct nl_app *a, uint32_t pid, uint64_t ts)
{
	if (a->engine)
		nl_engine_exit(a->engine, pid, ts);
	if (a->rec && !a->rec_err)
		rec_check(a, nl_recording_write_exit(a->rec, pid, ts));
}

static void poll_lost(struct nl_app *a)
{
	uint64_t s[NL_STAT_MAX];

	if (nl_loader_stats(a->l, s))
		return;
	if (s[NL_STAT_LOST_RINGBUF] > a->stats[NL_STAT_LOST_RINGBUF] ||
	    s[NL_STAT_LOST_STASH] > a->stats[NL_STAT_LOST_STASH]) {
		uint64_t n = s[NL_STAT_LOST_RINGBUF] - a->stats[NL_STAT_LOST_RINGBUF] +
			     s[NL_STAT_LOST_STASH] - a->stats[NL_STAT_LOST_STASH];

		/*
		 * The engine hears of a loss from the next record of the CPU that
		 * lost it (lost_before), at its place in the stream; these totals
		 * are for the summary, and for what no record told at the end.
		 */
		a->diag(1, "%" PRIu64 " records lost since the last check", n);
	}
	memcpy(a->stats, s, sizeof(s));
}

static void target_gone(struct nl_app *a, struct nl_app_target *t)
{
	t->alive = false;
	a->ntargets_alive--;
	/* drains the records the target wrote before it died, then its open run */
	nl_loader_remove_target(a->l, t->pid);
	nl_app_exited(a, (uint32_t)t->pid, nl_mono_ns());
	if (a->metrics)
		nl_metrics_target_exit(a->metrics, (uint32_t)t->pid);
	if (a->live)
		nl_live_target_exit(a->live, (uint32_t)t->pid);
	a->diag(1, "process %d (%s) exited", (int)t->pid, t->comm);
}

static void on_found(void *ctx, const struct nl_found *f)
{
	struct nl_app *a = ctx;

	a->diag(1, "found process %d (%s)%s%.12s", (int)f->pid, f->comm,
		f->cg.container_id[0] ? " in container " : "", f->cg.container_id);
	/* a process that exits meanwhile, or that we cannot attach, is said and skipped */
	nl_app_add_target(a, f->pid, NULL, 0, true);
}

void nl_app_discover(struct nl_app *a)
{
	int rc;

	if (!a->discover)
		return;
	/* CAP_SYS_PTRACE: the maps and cgroup files of other users' processes */
	nl_caps_raise();
	rc = nl_discover_scan(a->discover, on_found, a);
	nl_caps_lower();
	if (rc < 0)
		a->diag(0, "cannot scan /proc: %s", strerror(-rc));
}

void nl_app_tick(struct nl_app *a, uint64_t now_ns)
{
	(void)now_ns;
	for (int i = 0; i < a->ntargets; i++) {
		struct nl_app_target *t = &a->targets[i];
		unsigned long long st, vsize;

		if (!t->alive)
			continue;
		if (t->pid == a->child && !a->child_reaped) {
			if (waitpid(a->child, &a->child_status, WNOHANG) == a->child) {
				a->child_reaped = true;
				target_gone(a, t);
			}
			continue;
		}
		/* gone, a zombie, or the PID now belongs to another process */
		if (nl_proc_stat("/proc", t->pid, NULL, 0, &st, &vsize) || st != t->starttime) {
			target_gone(a, t);
			nl_discover_forget(a->discover, t->pid);
		}
	}
	nl_loader_rescan(a->l);
	nl_app_discover(a);
	poll_lost(a);
	publish_counters(a);
	if (a->live && now_ns - a->last_live_ns >= 1000000000ull) {
		char *screen = malloc(NL_LIVE_BUFSZ);

		a->last_live_ns = now_ns;
		if (screen) {
			size_t n = nl_live_render(a->live, now_ns, screen, NL_LIVE_BUFSZ);

			fwrite(screen, 1, n, stderr);
			fflush(stderr);
			free(screen);
		}
	}
	/* a SIGKILLed tool leaves a recording readable up to here */
	if (a->rec && !a->rec_err)
		rec_check(a, nl_recording_flush(a->rec));
	if (a->o.heartbeat_s > 0 && !a->o.quiet &&
	    now_ns - a->last_heartbeat_ns >= (uint64_t)(a->o.heartbeat_s * 1e9)) {
		a->last_heartbeat_ns = now_ns;
		fprintf(stderr,
			"nanlog-bpf: heartbeat: %d/%d targets, %" PRIu64 " records, %" PRIu64
			" lost, batches %" PRIu64 " trusted %" PRIu64 " untrusted %" PRIu64 " skipped\n",
			a->ntargets_alive, a->ntargets, a->records,
			a->stats[NL_STAT_LOST_RINGBUF] + a->stats[NL_STAT_LOST_STASH],
			a->verdicts[NL_VERDICT_TRUSTED], a->verdicts[NL_VERDICT_UNTRUSTED],
			a->verdicts[NL_VERDICT_SKIPPED]);
	}
}

static double cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

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
	f->cpu_ms = cpu_ms();
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
	note_write(a);
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
		rec_check(a, nl_recording_finish(a->rec, &t));
	}
	rc = nl_recording_close(a->rec);
	a->rec = NULL;
	if (rc && !a->rec_err)
		rec_check(a, rc);
}

void nl_app_finish(struct nl_app *a, uint64_t now_ns, int err)
{
	struct run_facts f;
	uint64_t lost;

	if (a->l) {
		uint64_t total;

		nl_loader_untrace_all(a->l); /* drains the ring, then the open runs */
		poll_lost(a);
		/* losses on a CPU that sent no record after them */
		total = a->stats[NL_STAT_LOST_RINGBUF] + a->stats[NL_STAT_LOST_STASH];
		if (total > a->lost_inline)
			nl_app_lost(a, 0, total - a->lost_inline, now_ns);
		a->lost_inline = total;
	}
	live_facts(a, now_ns, &f);
	finish_recording(a, &f, err);
	lost = a->stats[NL_STAT_LOST_RINGBUF] + a->stats[NL_STAT_LOST_STASH];
	if (a->metrics && !a->replay)
		publish_counters(a);
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
		nl_json_ki64(&j, "schema", NL_APP_SCHEMA);
		nl_json_ku64(&j, "records", a->records);
		nl_json_ku64(&j, "bad_records", a->bad_records);
		nl_json_ku64(&j, "counted_launches", a->counted_launches);
		nl_json_ku64(&j, "lost_records", lost);
		nl_json_ku64(&j, "lost_ringbuf", a->stats[NL_STAT_LOST_RINGBUF]);
		nl_json_ku64(&j, "lost_stash", a->stats[NL_STAT_LOST_STASH]);
		nl_json_ku64(&j, "nested_folded", a->stats[NL_STAT_NESTED]);
		nl_json_ki64(&j, "probes_attached", a->probes_attached);
		nl_json_ki64(&j, "retprobes_attached", a->retprobes_attached);
		json_api_names(&j, "probes_missing", a->missing, a->nmissing);
		nl_json_ku64(&j, "attach_ns", f.attach_ns);
		nl_json_ku64(&j, "duration_ns", f.duration_ns);
		nl_json_kdbl(&j, "cpu_ms", f.cpu_ms);
		nl_json_end(&j);
		note_write(a);
	}
	if (a->trace) {
		int rc;

		if (!a->trace_named) { /* no audit: tracks keep their handles as names */
			struct nl_summary none = { 0 };

			nl_trace_summary(a->trace, &none);
		}
		rc = nl_trace_close(a->trace);
		a->trace = NULL;
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

/*
 * --replay: the recording's items go through the very functions the live
 * run used, in the order it used them.
 */
int nl_app_replay(struct nl_app *a)
{
	struct nl_recording_reader *r = NULL;
	struct nl_recording_item *it;
	char err[512];
	int rc;

	it = malloc(sizeof(*it));
	if (!it)
		return -ENOMEM;
	a->replay = true;
	rc = nl_recording_open(&r, a->o.replay_path, NL_APP_SCHEMA, err, sizeof(err));
	if (rc) {
		a->diag(0, "%s", err);
		goto out;
	}
	a->start_ns = nl_recording_header(r)->start_mono_ns;
	a->start_real_ns = nl_recording_header(r)->start_real_ns;
	while ((rc = nl_recording_next(r, it, err, sizeof(err))) == NL_RECORDING_ITEM) {
		switch (it->kind) {
		case NL_RI_RECORD:
			nl_app_record(a, it->rec.data.bytes, it->rec.size);
			break;
		case NL_RI_LIB: {
			struct nl_attach_report rep = { .pid = (pid_t)it->lib.pid, .lib = it->lib.lib,
							.path = it->lib.path, .host_path = it->lib.path,
							.attached = it->lib.attached,
							.retprobes = it->lib.retprobes,
							.retprobes_allowed = it->lib.retprobes_allowed,
							.nmissing = it->lib.nmissing,
							.elapsed_ns = it->lib.elapsed_ns };

			memcpy(rep.missing, it->lib.missing, sizeof(int) * (size_t)it->lib.nmissing);
			nl_app_attached(a, &rep);
			break;
		}
		case NL_RI_TARGET:
			replay_target(a, &it->target);
			break;
		case NL_RI_EXIT: {
			struct nl_app_target *t = target_of(a, it->exit.pid);

			if (t)
				t->alive = false;
			nl_app_exited(a, it->exit.pid, it->exit.ts_ns);
			break;
		}
		case NL_RI_LOST:
			nl_app_lost(a, it->lost.pid, it->lost.count, it->lost.ts_ns);
			break;
		default:
			break;
		}
		if (a->write_err) {
			rc = a->write_err;
			goto out;
		}
	}
	if (rc < 0) {
		a->diag(0, "%s", err);
		goto out;
	}
	if (rc == NL_RECORDING_NO_TRAILER) {
		/*
		 * The recorder died (or the file was cut): audit what is there, up to
		 * the last item, then still fail, since the recording is incomplete.
		 */
		a->diag(0, "%s", err);
		memset(&a->replay_trailer, 0, sizeof(a->replay_trailer));
		a->replay_trailer.end_ns = a->last_ts_ns;
		a->replay_trailer.duration_ns = a->last_ts_ns > a->start_ns ? a->last_ts_ns - a->start_ns : 0;
		a->replay_incomplete = true;
	} else {
		const struct nl_recording_trailer *t = nl_recording_trailer(r);

		a->replay_trailer = *t;
		a->stats[NL_STAT_LOST_RINGBUF] = t->lost_ringbuf;
		a->stats[NL_STAT_LOST_STASH] = t->lost_stash;
		a->stats[NL_STAT_NESTED] = t->nested_folded;
	}
	rc = 0;
out:
	nl_recording_free(r);
	free(it);
	return rc;
}
