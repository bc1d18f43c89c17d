// SPDX-License-Identifier: MIT
/*
 * The app layer against a stub of the attach layer (stub_loader.c): the
 * target table, reaping, the record path from encoded ring-buffer records to
 * the lines written, attach reports, finish and its summary, the error line.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"
#include "app/app.h"
#include "stub_loader.h"

/* ---- the app, its output in memory, its messages kept ---------------------- */

static char said[16384];

static void diag(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diag(int level, const char *fmt, ...)
{
	size_t n = strlen(said);
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vsnprintf(said + n, sizeof(said) - n, fmt, ap);
	va_end(ap);
	n = strlen(said);
	if (n + 1 < sizeof(said))
		strcpy(said + n, "\n");
}

struct fixture {
	struct nl_app *a;
	char *buf;
	size_t len;
};

static struct fixture fx;

/* An app as main() sets it up, with audits or without, output to memory. */
static struct nl_app *app_new(bool no_audit, bool raw)
{
	struct nl_app *a = calloc(1, sizeof(*a));

	assert_non_null(a);
	said[0] = '\0';
	a->o.no_audit = no_audit;
	a->o.raw = raw;
	a->o.quiet = true;
	a->go_fd = -1;
	a->diag = diag;
	a->l = stub_loader_reset();
	a->out = open_memstream(&fx.buf, &fx.len);
	assert_non_null(a->out);
	assert_int_equal(nl_app_init(a, nl_mono_ns()), 0);
	fx.a = a;
	return a;
}

/* The output so far, NUL-terminated. */
static const char *output(void)
{
	fflush(fx.a->out);
	return fx.buf;
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (!needle || memmem(p, len, needle, strlen(needle)))
			n++;
	}
	return n;
}

/* The last line of the output, without its newline. */
static const char *last_line(char *copy, size_t len)
{
	const char *s = output();
	size_t n = strlen(s);
	const char *p;

	while (n && s[n - 1] == '\n')
		n--;
	for (p = s + n; p > s && p[-1] != '\n'; p--)
		;
	snprintf(copy, len, "%.*s", (int)(s + n - p), p);
	return copy;
}

static int teardown(void **state)
{
	(void)state;
	if (fx.a) {
		if (fx.a->sinks || fx.a->engine)
			nl_app_finish(fx.a, nl_mono_ns(), -ECANCELED);
		fclose(fx.a->out);
		free(fx.a);
	}
	free(fx.buf);
	memset(&fx, 0, sizeof(fx));
	return 0;
}

/* A child that waits to be ended (child_end). */
static pid_t child_new(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

/* The child killed and reaped: its PID is gone from /proc. */
static void child_end(pid_t pid)
{
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* ---- records, as the BPF side writes them (include/nanlog_rec.h) ------------ */

static struct nl_rec_call rec(int api, uint64_t ts, uint64_t stream)
{
	const struct nl_api_info *info = &nl_api_info[api];
	struct nl_rec_call r;

	memset(&r, 0, sizeof(r));
	r.type = NL_REC_CALL;
	r.api = (__u16)api;
	r.pid = (__u32)getpid();
	r.tid = r.pid;
	r.ts_ns = ts;
	if (info->slot_stream >= 0 && info->slot_stream < NL_NARGS)
		r.args[info->slot_stream] = stream;
	return r;
}

#define STREAM 0x7f0000001000ull

/*
 * A counted run: hipLaunchKernel starts run 7, the next record (an event
 * record) ends it with 3 more launches counted in the kernel. Returns the
 * records fed.
 */
static int feed_counted_run(struct nl_app *a)
{
	struct nl_rec_call launch = rec(NL_API_LAUNCH_KERNEL, 1000, STREAM);
	struct nl_rec_call ev = rec(NL_API_EVENT_RECORD, 2000, STREAM);

	launch.args[0] = 0x401000; /* the kernel */
	launch.run = NL_RUN_WORD(7, 0);
	ev.flush = NL_RUN_WORD(7, 3);
	ev.flush_ts = 1900;
	assert_int_equal(nl_app_record(a, &launch, sizeof(launch)), 0);
	assert_int_equal(nl_app_record(a, &ev, sizeof(ev)), 0);
	return 2;
}

/* ---- the target table --------------------------------------------------------- */

static void test_targets_add(void **state)
{
	struct nl_app *a = app_new(true, false);
	pid_t me = getpid(), gone;
	char want[64];

	(void)state;
	/* no HIP runtime mapped, none named: refused, and said so */
	assert_int_equal(nl_app_add_target(a, me, NULL, 0, true), -ENOENT);
	assert_non_null(strstr(said, "has no HIP runtime mapped"));
	assert_int_equal(a->ntargets_alive, 0);
	/* --wait-lib: HIP not required */
	assert_int_equal(nl_app_add_target(a, me, NULL, 0, false), 0);
	assert_int_equal(a->ntargets_alive, 1);
	snprintf(want, sizeof(want), "add %d hip=1 paths=0;add %d hip=0 paths=0;", (int)me, (int)me);
	assert_string_equal(stub.log, want);
	assert_true(a->targets[0].alive);
	assert_int_equal(a->targets[0].pid, me);
	assert_true(a->targets[0].starttime > 0);
	assert_true(a->targets[0].comm[0] != '\0');
	/* the same process again: the loader refuses it, the table keeps one */
	said[0] = '\0';
	assert_int_equal(nl_app_add_target(a, me, NULL, 0, false), -EEXIST);
	assert_non_null(strstr(said, "cannot attach to process"));
	assert_int_equal(a->ntargets_alive, 1);
	/* a process that is not there: never reaches the loader */
	gone = child_new();
	child_end(gone);
	stub.log[0] = '\0';
	said[0] = '\0';
	assert_int_equal(nl_app_add_target(a, gone, NULL, 0, false), -ESRCH);
	assert_non_null(strstr(said, "no such process"));
	assert_string_equal(stub.log, "");
	assert_int_equal(a->ntargets_alive, 1);
}

/* At most NL_MAX_PIDS targets; a refused one leaves its slot free. */
static void test_targets_limit(void **state)
{
	struct nl_app *a = app_new(true, false);
	pid_t pids[NL_MAX_PIDS + 1];

	(void)state;
	for (int i = 0; i <= NL_MAX_PIDS; i++) {
		pids[i] = child_new();
		stub_loader_hip(pids[i]);
	}
	for (int i = 0; i < NL_MAX_PIDS; i++)
		assert_int_equal(nl_app_add_target(a, pids[i], NULL, 0, true), 0);
	assert_int_equal(a->ntargets_alive, NL_MAX_PIDS);
	assert_int_equal(nl_app_add_target(a, pids[NL_MAX_PIDS], NULL, 0, true), -E2BIG);
	assert_non_null(strstr(said, "already 64 targets"));
	assert_int_equal(stub.ntraced, NL_MAX_PIDS);
	/* one exits: its slot takes the next */
	child_end(pids[0]);
	nl_app_tick(a, nl_mono_ns());
	assert_int_equal(a->ntargets_alive, NL_MAX_PIDS - 1);
	assert_int_equal(nl_app_add_target(a, pids[NL_MAX_PIDS], NULL, 0, true), 0);
	assert_int_equal(a->ntargets, NL_MAX_PIDS);
	assert_int_equal(a->targets[0].pid, pids[NL_MAX_PIDS]);
	for (int i = 1; i <= NL_MAX_PIDS; i++)
		child_end(pids[i]);
}

/* ---- reaping -------------------------------------------------------------------- */

static void test_reaping(void **state)
{
	struct nl_app *a = app_new(false, false);
	pid_t me = getpid(), child;
	char want[128];

	(void)state;
	child = child_new();
	stub_loader_hip(child);
	stub_loader_hip(me);
	assert_int_equal(nl_app_add_target(a, child, NULL, 0, true), 0);
	assert_int_equal(nl_app_add_target(a, me, NULL, 0, true), 0);
	/* both alive: nothing removed, libraries looked for, discovery without capabilities left raised */
	stub.log[0] = '\0';
	nl_app_tick(a, nl_mono_ns());
	assert_string_equal(stub.log, "rescan;");
	assert_int_equal(a->ntargets_alive, 2);
	child_end(child);
	said[0] = '\0';
	nl_app_tick(a, nl_mono_ns());
	snprintf(want, sizeof(want), "remove %d;rescan;", (int)child);
	assert_string_equal(stub.log + strlen("rescan;"), want);
	snprintf(want, sizeof(want), "process %d (", (int)child);
	assert_non_null(strstr(said, want));
	assert_non_null(strstr(said, ") exited"));
	assert_int_equal(a->ntargets_alive, 1);
	assert_false(a->targets[0].alive);
	assert_true(a->targets[1].alive);
	assert_int_equal(stub.caps_raised, 0);
	/* a tick after: nothing more to reap */
	stub.log[0] = '\0';
	nl_app_tick(a, nl_mono_ns());
	assert_string_equal(stub.log, "rescan;");
}

/* ---- the record path ------------------------------------------------------------ */

/* --raw --no-audit: a line per call, the counted launches repeated; the summary. */
static void test_record_raw(void **state)
{
	struct nl_app *a = app_new(true, true);
	const char bad[3] = { 1, 2, 3 };
	char last[4096];

	(void)state;
	stub_loader_hip(getpid());
	assert_int_equal(nl_app_add_target(a, getpid(), NULL, 0, true), 0);
	feed_counted_run(a);
	assert_int_equal(nl_app_record(a, bad, sizeof(bad)), 0);
	assert_int_equal(a->records, 2);
	assert_int_equal(a->bad_records, 1);
	assert_int_equal(a->counted_launches, 3);
	/* the launch, 3 repeats of it, the event record */
	assert_int_equal(count_lines(output(), NULL), 5);
	assert_int_equal(count_lines(output(), "hipLaunchKernel"), 4);
	assert_int_equal(count_lines(output(), "hipEventRecord"), 1);
	/* a record of a process not traced: written, its counted launches lost */
	{
		struct nl_rec_call other = rec(NL_API_LAUNCH_KERNEL, 3000, STREAM);

		other.pid = other.tid = 1;
		assert_int_equal(nl_app_record(a, &other, sizeof(other)), 0);
		assert_int_equal(count_lines(output(), NULL), 6);
	}
	stub.stats[NL_STAT_LOST_RINGBUF] = 2;
	stub.stats[NL_STAT_NESTED] = 5;
	nl_app_finish(a, nl_mono_ns(), 0);
	assert_non_null(strstr(stub.log, "untrace;"));
	last_line(last, sizeof(last));
	assert_non_null(strstr(last, "{\"type\":\"summary\",\"schema\":1,\"records\":3,"
				     "\"bad_records\":1,\"counted_launches\":3,\"lost_records\":2,"
				     "\"lost_ringbuf\":2,\"lost_stash\":0,\"nested_folded\":5,"
				     "\"probes_attached\":0,\"retprobes_attached\":0,"
				     "\"probes_missing\":[],\"attach_ns\":"));
	assert_non_null(strstr(last, ",\"duration_ns\":"));
	assert_non_null(strstr(last, ",\"cpu_ms\":"));
	assert_int_equal(count_lines(output(), "\"type\":\"summary\""), 1);
}

/* The audit: the records reach the engine, counted launches as calls, and its
 * summary line counts them; no raw lines without --raw. */
static void test_record_audit(void **state)
{
	struct nl_app *a = app_new(false, false);
	char last[16384];

	(void)state;
	stub_loader_hip(getpid());
	assert_int_equal(nl_app_add_target(a, getpid(), NULL, 0, true), 0);
	feed_counted_run(a);
	assert_string_equal(output(), "");
	nl_app_finish(a, nl_mono_ns(), 0);
	last_line(last, sizeof(last));
	assert_non_null(strstr(last, "{\"type\":\"summary\","));
	assert_non_null(strstr(last, "\"records\":5,"));
	assert_true(a->summary_done);
	assert_false(a->evidence_valid);
}

/* A failed run writes no summary. */
static void test_finish_failed(void **state)
{
	struct nl_app *a = app_new(false, false);

	(void)state;
	feed_counted_run(a);
	nl_app_finish(a, nl_mono_ns(), -ESRCH);
	assert_string_equal(output(), "");
	assert_false(a->summary_done);
}

/* ---- attach reports ----------------------------------------------------------- */

/* The summary line's invalid_reasons array, as written. */
static const char *invalid_reasons(const char *line, char *buf, size_t len)
{
	const char *p = strstr(line, "\"invalid_reasons\":["), *end;

	assert_non_null(p);
	end = strchr(p, ']');
	assert_non_null(end);
	snprintf(buf, len, "%.*s", (int)(end + 1 - p), p);
	return buf;
}

static void attach_report_missing(struct nl_app *a, int api)
{
	struct nl_attach_report r = { .pid = getpid(), .lib = NL_LIB_HIP, .path = "/lib/libamdhip64.so.5",
				      .attached = 40, .retprobes = 10, .retprobes_allowed = true,
				      .nmissing = 1, .missing = { api }, .elapsed_ns = 2000000 };

	nl_app_attached(a, &r);
}

/*
 * An entry point the stages depend on, missing from the library, is one the
 * job cannot call either (user/engine/engine.h): it is listed, and it does
 * not skip the process's batches "probe_missing".
 */
static void test_attach_missing(void **state)
{
	struct nl_app *a = app_new(false, false);
	char last[16384], want[512];

	(void)state;
	assert_true(nl_engine_api_matters(NL_API_EVENT_RECORD));
	attach_report_missing(a, NL_API_EVENT_RECORD);
	snprintf(want, sizeof(want),
		 "{\"type\":\"attach\",\"schema\":1,\"pid\":%d,\"lib\":\"libamdhip64\","
		 "\"path\":\"/lib/libamdhip64.so.5\",\"attached\":40,\"retprobes\":10,"
		 "\"retprobes_allowed\":true,\"missing\":[\"hipEventRecord\"],\"attach_ms\":2}\n",
		 (int)getpid());
	assert_string_equal(output(), want);
	assert_int_equal(a->probes_attached, 40);
	assert_int_equal(a->nmissing, 1);
	/* twice: still one missing api */
	attach_report_missing(a, NL_API_EVENT_RECORD);
	assert_int_equal(a->probes_attached, 80);
	assert_int_equal(a->nmissing, 1);
	nl_app_finish(a, nl_mono_ns(), 0);
	last_line(last, sizeof(last));
	assert_non_null(strstr(last, "\"probes_missing\":[\"hipEventRecord\"]"));
	assert_null(strstr(invalid_reasons(last, want, sizeof(want)), "probe_missing"));
}

/* What the test above would see if the engine were told: the reason. */
static void test_attach_missing_told(void **state)
{
	struct nl_app *a = app_new(false, false);
	char last[16384], reasons[512];

	(void)state;
	nl_engine_probe_missing(a->engine, 0, NL_API_EVENT_RECORD);
	nl_app_finish(a, nl_mono_ns(), 0);
	last_line(last, sizeof(last));
	assert_non_null(strstr(invalid_reasons(last, reasons, sizeof(reasons)), "probe_missing"));
}

/* ---- the error line --------------------------------------------------------------- */

static void test_error_line(void **state)
{
	struct nl_app *a = app_new(false, false);
	char last[1024];

	(void)state;
	assert_int_equal(nl_app_add_target(a, getpid(), NULL, 0, true), -ENOENT);
	nl_app_finish(a, nl_mono_ns(), -ENOENT);
	nl_app_error(a, "process 1 (\"x\") has no HIP runtime");
	assert_string_equal(last_line(last, sizeof(last)),
			    "{\"type\":\"error\",\"schema\":1,"
			    "\"message\":\"process 1 (\\\"x\\\") has no HIP runtime\"}");
	assert_int_equal(count_lines(output(), NULL), 1);
}

/* --format table is for people: the stderr line says it. */
static void test_error_line_table(void **state)
{
	struct nl_app *a = app_new(false, false);

	(void)state;
	a->o.format = NL_FMT_TABLE;
	nl_app_error(a, "no such process: 1");
	assert_string_equal(output(), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_targets_add, teardown),
		cmocka_unit_test_teardown(test_targets_limit, teardown),
		cmocka_unit_test_teardown(test_reaping, teardown),
		cmocka_unit_test_teardown(test_record_raw, teardown),
		cmocka_unit_test_teardown(test_record_audit, teardown),
		cmocka_unit_test_teardown(test_finish_failed, teardown),
		cmocka_unit_test_teardown(test_attach_missing, teardown),
		cmocka_unit_test_teardown(test_attach_missing_told, teardown),
		cmocka_unit_test_teardown(test_error_line, teardown),
		cmocka_unit_test_teardown(test_error_line_table, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
