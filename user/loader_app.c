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

#include "app.h"
#include "decode.h"
#include "engine.h"
#include "json.h"
#include "raw.h"
#include "recording.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

/* Every final batch passes here: counted for the heartbeat, then written. */
static void app_batch(void *ctx, const struct nl_batch_audit *b)
{
	struct nl_app *a = ctx;

	if (b->verdict >= 0 && b->verdict < 3)
		a->verdicts[b->verdict]++;
	a->out_sink.batch(a->out_sink.ctx, b);
	nl_trace_batch(a->trace, b);
}

static void app_summary(void *ctx, const struct nl_summary *sum)
{
	struct nl_app *a = ctx;

	a->out_sink.summary(a->out_sink.ctx, sum);
	nl_trace_summary(a->trace, sum);
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

/* starttime (field 22) and comm of /proc/PID/stat; -ESRCH when gone or a zombie */
static int read_stat(pid_t pid, unsigned long long *start, char *comm, size_t commlen)
{
	char path[64], buf[1024], *rp, state;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	rp = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
	if (!rp || rp[1] != ' ')
		return -EINVAL;
	if (comm) {
		char *lp = strchr(buf, '(');
		size_t len = lp ? (size_t)(rp - lp - 1) : 0;

		if (len >= commlen)
			len = commlen - 1;
		memcpy(comm, lp ? lp + 1 : "", len);
		comm[len] = '\0';
	}
	state = rp[2];
	if (state == 'Z' || state == 'X')
		return -ESRCH;
	/* fields after ')' start at field 3 (state); starttime is field 22 */
	{
		char *p = rp + 2;
		int field = 3;

		while (*p && field < 22) {
			if (*p++ == ' ')
				field++;
		}
		v = strtoull(p, NULL, 10);
	}
	*start = v;
	return 0;
}

int nl_app_add_target(struct nl_app *a, pid_t pid, const char *const *paths, int npaths,
		      bool require_hip)
{
	struct nl_app_target *t;
	int err;

	if (a->ntargets >= NL_MAX_PIDS)
		return -E2BIG;
	t = &a->targets[a->ntargets];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (read_stat(pid, &t->starttime, t->comm, sizeof(t->comm))) {
		a->diag(0, "no such process: %d", (int)pid);
		return -ESRCH;
	}
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
	a->ntargets++;
	a->ntargets_alive++;
	/* a -p target was running before the probes: its first batch may be partial */
	nl_app_target_added(a, (uint32_t)pid, now_ns(), pid != a->child, t->comm);
	return 0;
}

void nl_app_target_added(struct nl_app *a, uint32_t pid, uint64_t ts, bool mid_run,
			 const char *comm)
{
	if (a->engine)
		nl_engine_attach(a->engine, pid, ts, mid_run);
	if (a->rec && !a->rec_err) {
		struct nl_recording_target rt = { .pid = pid, .mid_run = mid_run, .ts_ns = ts,
						  .comm = comm };

		rec_check(a, nl_recording_write_target(a->rec, &rt));
	}
}

int nl_app_record(struct nl_app *a, const void *data, size_t size)
{
	struct nl_call c;

	/* recorded before decoding, bad ones too: replay counts them the same */
	if (a->rec && !a->rec_err)
		rec_check(a, nl_recording_write_record(a->rec, data, size));
	if (nl_decode(data, size, &c)) {
		a->bad_records++;
		return 0;
	}
	a->records++;
	if (c.ts_ns > a->last_ts_ns)
		a->last_ts_ns = c.ts_ns;
	if ((c.fields & NL_F_RC) && c.ret_ns > a->last_ts_ns)
		a->last_ts_ns = c.ret_ns;
	if (a->o.raw && nl_raw_write(a->out, &c) && !a->write_err) {
		a->write_err = errno ? -errno : -EIO;
		a->diag(0, "cannot write output: %s", strerror(-a->write_err));
		return a->write_err; /* stops the poll */
	}
	nl_trace_call(a->trace, &c);
	if (a->engine)
		nl_engine_feed(a->engine, &c);
	if (ferror(a->out) && !a->write_err) {
		a->write_err = errno ? -errno : -EIO;
		a->diag(0, "cannot write output: %s", strerror(-a->write_err));
		return a->write_err;
	}
	return 0;
}

void nl_app_attached(struct nl_app *a, const struct nl_attach_report *r)
{
	if (a->rec && !a->rec_err) {
		struct nl_recording_lib rl = { .pid = (uint32_t)r->pid, .lib = r->lib, .path = r->path,
					       .attached = r->attached, .retprobes = r->retprobes,
					       .retprobes_allowed = r->retprobes_allowed,
					       .elapsed_ns = r->elapsed_ns, .ts_ns = now_ns(),
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
		nl_json_key(&j, "missing");
		nl_json_arr(&j);
		for (int i = 0; i < r->nmissing; i++)
			nl_json_str(&j, nl_api_name((unsigned)r->missing[i]));
		nl_json_arr_end(&j);
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
		char miss[1024];
		size_t off = 0;

		miss[0] = '\0';
		for (int i = 0; i < r->nmissing && off < sizeof(miss); i++)
			off += (size_t)snprintf(miss + off, sizeof(miss) - off, "%s%s", i ? " " : "",
						nl_api_name((unsigned)r->missing[i]));
		fprintf(stderr, "nanlog-bpf: pid %d: %s: %d symbols attached (%d with return probes%s)%s%s\n",
			(int)r->pid, r->path, r->attached, r->retprobes,
			r->retprobes_allowed ? "" : ", not allowed here", r->nmissing ? "; missing: " : "",
			miss);
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

		a->diag(1, "%" PRIu64 " records lost since the last check", n);
		nl_app_lost(a, 0, n, now_ns());
	}
	memcpy(a->stats, s, sizeof(s));
}

static void target_gone(struct nl_app *a, struct nl_app_target *t)
{
	/* records the target wrote before it died are still in the ring */
	nl_loader_drain(a->l);
	t->alive = false;
	a->ntargets_alive--;
	nl_loader_remove_target(a->l, t->pid);
	nl_app_exited(a, (uint32_t)t->pid, now_ns());
	a->diag(1, "process %d (%s) exited", (int)t->pid, t->comm);
}

void nl_app_tick(struct nl_app *a, uint64_t now_ns)
{
	(void)now_ns;
	for (int i = 0; i < a->ntargets; i++) {
		struct nl_app_target *t = &a->targets[i];
		unsigned long long st;

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
		if (read_stat(t->pid, &st, NULL, 0) || st != t->starttime)
			target_gone(a, t);
	}
	nl_loader_rescan(a->l);
	poll_lost(a);
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
		nl_loader_drain(a->l);
		poll_lost(a);
	}
	live_facts(a, now_ns, &f);
	finish_recording(a, &f, err);
	lost = a->stats[NL_STAT_LOST_RINGBUF] + a->stats[NL_STAT_LOST_STASH];
	if (a->engine && !a->write_err && !err)
		finish_engine(a, &f);
	nl_engine_free(a->engine);
	a->engine = NULL;
	if (a->out && !a->write_err && !err && a->o.no_audit) {
		struct nl_json j;

		nl_json_begin(&j, a->out);
		nl_json_kstr(&j, "type", "summary");
		nl_json_ki64(&j, "schema", NL_APP_SCHEMA);
		nl_json_ku64(&j, "records", a->records);
		nl_json_ku64(&j, "bad_records", a->bad_records);
		nl_json_ku64(&j, "lost_records", lost);
		nl_json_ku64(&j, "lost_ringbuf", a->stats[NL_STAT_LOST_RINGBUF]);
		nl_json_ku64(&j, "lost_stash", a->stats[NL_STAT_LOST_STASH]);
		nl_json_ku64(&j, "nested_folded", a->stats[NL_STAT_NESTED]);
		nl_json_ki64(&j, "probes_attached", a->probes_attached);
		nl_json_ki64(&j, "retprobes_attached", a->retprobes_attached);
		nl_json_key(&j, "probes_missing");
		nl_json_arr(&j);
		for (int i = 0; i < a->nmissing; i++)
			nl_json_str(&j, nl_api_name((unsigned)a->missing[i]));
		nl_json_arr_end(&j);
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
		fprintf(stderr, "nanlog-bpf: %" PRIu64 " records processed, %" PRIu64 " lost\n",
			a->records, lost);
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
			nl_app_target_added(a, it->target.pid, it->target.ts_ns, it->target.mid_run,
					    it->target.comm);
			break;
		case NL_RI_LOST:
			nl_app_lost(a, it->lost.pid, it->lost.count, it->lost.ts_ns);
			break;
		case NL_RI_EXIT:
			nl_app_exited(a, it->exit.pid, it->exit.ts_ns);
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
