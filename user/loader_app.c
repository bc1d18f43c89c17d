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
#include "raw.h"

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

int nl_app_init(struct nl_app *a, uint64_t now_ns)
{
	const struct nl_opts *o = &a->o;
	struct nl_engine_opts eo = { 0 };
	struct nl_sink sink;

	a->start_ns = now_ns;
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
		sink = nl_audit_table_sink(&a->table);
	} else {
		sink = nl_audit_json_sink(a->out);
	}
	a->engine = nl_engine_new(&eo, &sink);
	return a->engine ? 0 : -ENOMEM;
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
	if (a->engine)
		nl_engine_attach(a->engine, (uint32_t)pid, now_ns(), pid != a->child);
	return 0;
}

int nl_app_record(struct nl_app *a, const void *data, size_t size)
{
	struct nl_call c;

	if (nl_decode(data, size, &c)) {
		a->bad_records++;
		return 0;
	}
	a->records++;
	if (a->o.raw && nl_raw_write(a->out, &c) && !a->write_err) {
		a->write_err = errno ? -errno : -EIO;
		a->diag(0, "cannot write output: %s", strerror(-a->write_err));
		return a->write_err; /* stops the poll */
	}
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
	if (a->o.format == NL_FMT_TABLE)
		goto account; /* the table is for people: the stderr line says it */
	fprintf(a->out,
		"{\"type\":\"attach\",\"schema\":%d,\"pid\":%d,\"lib\":\"%s\",\"path\":\"",
		NL_APP_SCHEMA, (int)r->pid, nl_lib_name(r->lib));
	for (const char *p = r->path; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch == '"' || ch == '\\')
			fprintf(a->out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(a->out, "\\u%04x", ch);
		else
			fputc(ch, a->out);
	}
	fprintf(a->out, "\",\"attached\":%d,\"retprobes\":%d,\"retprobes_allowed\":%s,\"missing\":[",
		r->attached, r->retprobes, r->retprobes_allowed ? "true" : "false");
	for (int i = 0; i < r->nmissing; i++)
		fprintf(a->out, "%s\"%s\"", i ? "," : "", nl_api_name((unsigned)r->missing[i]));
	fprintf(a->out, "],\"attach_ms\":%.3f}\n", (double)r->elapsed_ns / 1e6);
	note_write(a);
account:
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
		if (a->engine) /* the counters do not say whose records they were */
			nl_engine_lost(a->engine, 0, n, now_ns());
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
	if (a->engine)
		nl_engine_exit(a->engine, (uint32_t)t->pid, now_ns());
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
}

static double cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void finish_engine(struct nl_app *a, uint64_t now, uint64_t lost)
{
	const char *missing[NL_API_COUNT];
	struct nl_run_info ri = { 0 };
	struct timespec rt;

	(void)lost;
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
	ri.attach_ns = a->attach_done_ns ? a->attach_done_ns - a->start_ns : 0;
	ri.duration_ns = now - a->start_ns;
	ri.cpu_ms = cpu_ms();
	clock_gettime(CLOCK_REALTIME, &rt);
	ri.wall_realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	ri.wall_monotonic_ns = now_ns();
	nl_engine_set_run_info(a->engine, &ri);
	nl_engine_finish(a->engine, now);
	note_write(a);
}

void nl_app_finish(struct nl_app *a, uint64_t now_ns, int err)
{
	uint64_t lost;

	if (a->l) {
		nl_loader_drain(a->l);
		poll_lost(a);
	}
	lost = a->stats[NL_STAT_LOST_RINGBUF] + a->stats[NL_STAT_LOST_STASH];
	if (a->engine && !a->write_err && !err)
		finish_engine(a, now_ns, lost);
	nl_engine_free(a->engine);
	a->engine = NULL;
	if (a->out && !a->write_err && !err && a->o.no_audit) {
		fprintf(a->out,
			"{\"type\":\"summary\",\"schema\":%d,\"records\":%" PRIu64
			",\"bad_records\":%" PRIu64 ",\"lost_records\":%" PRIu64
			",\"lost_ringbuf\":%" PRIu64 ",\"lost_stash\":%" PRIu64
			",\"nested_folded\":%" PRIu64 ",\"probes_attached\":%d,\"retprobes_attached\":%d"
			",\"probes_missing\":[",
			NL_APP_SCHEMA, a->records, a->bad_records, lost, a->stats[NL_STAT_LOST_RINGBUF],
			a->stats[NL_STAT_LOST_STASH], a->stats[NL_STAT_NESTED], a->probes_attached,
			a->retprobes_attached);
		for (int i = 0; i < a->nmissing; i++)
			fprintf(a->out, "%s\"%s\"", i ? "," : "", nl_api_name((unsigned)a->missing[i]));
		fprintf(a->out, "],\"attach_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"cpu_ms\":%.1f}\n",
			a->attach_done_ns ? a->attach_done_ns - a->start_ns : 0, now_ns - a->start_ns,
			cpu_ms());
		note_write(a);
	}
	if (!a->o.quiet && a->attach_done_ns)
		fprintf(stderr, "nanlog-bpf: %" PRIu64 " records processed, %" PRIu64 " lost\n",
			a->records, lost);
}
