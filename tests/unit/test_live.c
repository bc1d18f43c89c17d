// SPDX-License-Identifier: MIT
/* --live renderer: the screen's shape (one clear at the start, 80 columns,
 * rows), its figures (counts, rates, percentiles), hostile names, caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "out/live.h"

#define MS 1000000ull
#define S 1000000000ull
#define T0 (1000 * S)

static const char clear_home[] = "\033[H\033[2J";

/* A batch of pid whose forward window ends at end_ns; copy window copy_ns. */
static struct nl_batch_audit audit(uint32_t pid, uint64_t batch, int verdict, uint64_t end_ns,
				   uint64_t copy_ns)
{
	struct nl_batch_audit a;

	memset(&a, 0, sizeof(a));
	a.pid = pid;
	a.batch = batch;
	a.verdict = verdict;
	for (int s = 0; s < NL_NSTAGES; s++) {
		a.stage[s].present = true;
		a.stage[s].ops = 2;
		a.stage[s].first_ns = end_ns - 50 * MS;
		a.stage[s].last_ns = end_ns - 50 * MS + MS;
	}
	a.stage[NL_STAGE_COPY].last_ns = a.stage[NL_STAGE_COPY].first_ns + copy_ns;
	a.stage[NL_STAGE_FORWARD].completion.done_by_ns = a.stage[NL_STAGE_FORWARD].first_ns + 2 * MS;
	a.window_end_ns = end_ns;
	if (verdict == NL_VERDICT_UNTRUSTED)
		a.missing_mask = 1u << NL_EDGE_SPARSE_FORWARD;
	if (verdict == NL_VERDICT_SKIPPED)
		a.skip_mask = 1u << NL_SKIP_LOST_RECORDS;
	return a;
}

/* The screen's invariants; returns its number of lines. */
static unsigned check_screen(const char *buf, size_t n, unsigned rows)
{
	const char *p;
	unsigned lines = 0;

	assert_int_equal(strlen(buf), n);
	assert_int_equal(strncmp(buf, clear_home, strlen(clear_home)), 0);
	p = buf + strlen(clear_home);
	assert_null(strchr(p, '\033'));
	while (*p) {
		const char *nl = strchr(p, '\n');

		assert_non_null(nl); /* every line ends */
		if (nl - p > NL_LIVE_WIDTH)
			fail_msg("line of %d columns: %.*s", (int)(nl - p), (int)(nl - p), p);
		for (const char *c = p; c < nl; c++)
			if (*c < 0x20 || *c >= 0x7f)
				fail_msg("byte 0x%02x in: %.*s", (unsigned char)*c, (int)(nl - p), p);
		lines++;
		p = nl + 1;
	}
	assert_true(lines <= rows - 1);
	return lines;
}

static char *screen(struct nl_live *l, uint64_t now, unsigned rows)
{
	static char buf[NL_LIVE_BUFSZ];
	size_t n = nl_live_render(l, now, buf, sizeof(buf));

	check_screen(buf, n, rows);
	return buf;
}

/* The line that starts with prefix (after the clear), or fail. */
static const char *line_of(const char *buf, const char *prefix)
{
	static char line[256];
	const char *p = buf + strlen(clear_home);

	while (*p) {
		const char *nl = strchr(p, '\n');

		if (!strncmp(p, prefix, strlen(prefix))) {
			snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
			return line;
		}
		p = nl + 1;
	}
	fail_msg("no line starting with '%s' in:\n%s", prefix, buf + strlen(clear_home));
	return NULL;
}

static void test_empty(void **state)
{
	struct nl_live *l = nl_live_new();
	char *s;

	(void)state;
	s = screen(l, T0, NL_LIVE_ROWS);
	assert_non_null(strstr(line_of(s, "batches "), "batches 0  0.0/s"));
	assert_non_null(strstr(line_of(s, "copy "), " - "));
	assert_non_null(strstr(s, "latest:    -"));
	line_of(s, "    PID COMM");
	nl_live_free(l);
	nl_live_free(NULL);
}

static void test_counts_and_rate(void **state)
{
	struct nl_live *l = nl_live_new();
	struct nl_metrics_counters c = { .records = 12345, .lost_ringbuf = 7, .lost_stash = 1,
					 .probes_attached = 37, .probes_missing = 2, .targets = 1,
					 .cpu_seconds = 1.25 };
	const char *s, *row;

	(void)state;
	nl_live_target(l, 4242, "pipeline", "0123456789abcdef0123");
	screen(l, T0, NL_LIVE_ROWS); /* the clock starts at the first render */
	/* 10 batches a second for 8 s: 80 batches, 3 untrusted, 2 skipped */
	for (uint64_t b = 0; b < 80; b++) {
		int v = b % 20 == 5 ? NL_VERDICT_UNTRUSTED : b == 77 || b == 78 ? NL_VERDICT_SKIPPED
										: NL_VERDICT_TRUSTED;
		struct nl_batch_audit a = audit(4242, b, v, T0 + (b + 1) * 100 * MS, MS);

		nl_live_batch(l, &a);
	}
	nl_live_counters(l, &c);
	s = screen(l, T0 + 8 * S + 50 * MS, NL_LIVE_ROWS);
	assert_non_null(strstr(line_of(s, "nanlog-bpf  up 0:00:08"),
			       "targets 1 alive, 0 exited  probes 37, 2 missing"));
	assert_string_equal(line_of(s, "batches "),
			    "batches 80  10.0/s   trusted 74  untrusted 4  skipped 2");
	assert_string_equal(line_of(s, "records "),
			    "records 12345  lost 8 (ring buffer 7, stash 1)  tool cpu 1.25 s");
	assert_string_equal(line_of(s, "skipped: "), "skipped:   lost_records 2");
	assert_string_equal(line_of(s, "untrusted: "), "untrusted: sparse->forward 4");
	assert_string_equal(line_of(s, "latest: "), "latest:    pid 4242 batch 78 skipped lost_records");
	row = line_of(s, "   4242 ");
	assert_string_equal(row, "   4242 pipeline        0123456789ab       80   10.0     74      4"
				 "      2 alive");

	/* no batches for 10 s: the rate falls to 0, the counts stay */
	nl_live_target_exit(l, 4242);
	s = screen(l, T0 + 18 * S, NL_LIVE_ROWS);
	assert_string_equal(line_of(s, "batches "),
			    "batches 80  0.0/s   trusted 74  untrusted 4  skipped 2");
	assert_non_null(strstr(line_of(s, "   4242 "), "   0.0 "));
	assert_non_null(strstr(line_of(s, "   4242 "), " exited"));
	assert_non_null(strstr(line_of(s, "nanlog-bpf "), "targets 0 alive, 1 exited"));
	/* lower counters do not go backwards */
	c.records = 5;
	nl_live_counters(l, &c);
	s = screen(l, T0 + 19 * S, NL_LIVE_ROWS);
	assert_non_null(strstr(line_of(s, "records "), "records 12345 "));
	nl_live_free(l);
}

/* A young target's rate is over its life so far (at least 1 s), not 5 s. */
static void test_rate_young_target(void **state)
{
	struct nl_live *l = nl_live_new();
	const char *s;

	(void)state;
	for (uint64_t b = 0; b < 20; b++) {
		struct nl_batch_audit a = audit(1, b, NL_VERDICT_TRUSTED, T0 + b * 100 * MS, MS);

		nl_live_batch(l, &a);
	}
	s = screen(l, T0 + 2 * S, NL_LIVE_ROWS);
	assert_non_null(strstr(line_of(s, "batches "), "batches 20  10.0/s"));
	nl_live_free(l);
}

static void test_percentiles(void **state)
{
	struct nl_live *l = nl_live_new();
	const char *s;

	(void)state;
	/* copy windows 1..100 ms, in a shuffled order */
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t v = (i * 37) % 100 + 1;
		struct nl_batch_audit a = audit(1, i, NL_VERDICT_TRUSTED, T0 + i * MS + S, v * MS);

		nl_live_batch(l, &a);
	}
	/* skipped batches stay out of the percentiles */
	struct nl_batch_audit a = audit(1, 100, NL_VERDICT_SKIPPED, T0 + 2 * S, 100000 * MS);
	nl_live_batch(l, &a);
	s = screen(l, T0 + 3 * S, NL_LIVE_ROWS);
	assert_string_equal(line_of(s, "copy "),
			    "copy        100        50.0     95.0    100.0          -        -");
	assert_string_equal(line_of(s, "forward "),
			    "forward     100       1.000    1.000    1.000      2.000    2.000");
	assert_string_equal(line_of(s, "overlap "), "overlap       0           -        -        -");
	assert_non_null(strstr(line_of(s, "STAGE "), "WINDOW p50"));

	/* the window keeps the last NL_LIVE_WINDOW batches */
	for (uint64_t i = 0; i < NL_LIVE_WINDOW; i++) {
		struct nl_batch_audit b = audit(1, 200 + i, NL_VERDICT_TRUSTED, T0 + 3 * S, 3 * MS);

		b.overlap_known = true;
		b.overlap_ns = 12345 * MS;
		nl_live_batch(l, &b);
	}
	s = screen(l, T0 + 4 * S, NL_LIVE_ROWS);
	assert_string_equal(line_of(s, "copy "),
			    "copy        256       3.000    3.000    3.000          -        -");
	assert_string_equal(line_of(s, "overlap "),
			    "overlap     256     12345.0  12345.0  12345.0");
	nl_live_free(l);
}

/* Names from the target are shown as printable ASCII, never as escapes. */
static void test_hostile_names(void **state)
{
	struct nl_live *l = nl_live_new();
	const char *s, *row;

	(void)state;
	nl_live_target(l, 7, "\033[31mred\xc3\xa9\x07", "\033]0;title\007");
	s = screen(l, T0, NL_LIVE_ROWS);
	row = line_of(s, "      7 ");
	assert_non_null(strstr(row, " ?[31mred???     ?]0;title?  "));
	nl_live_target(l, 8, NULL, NULL);
	s = screen(l, T0, NL_LIVE_ROWS);
	assert_non_null(strstr(line_of(s, "      8 "), "      8 ?               -  "));
	nl_live_free(l);
}

/* More targets than rows: the screen says how many are not shown. */
static void test_many_targets(void **state)
{
	struct nl_live *l = nl_live_new();
	const char *s;
	char want[64];

	(void)state;
	for (uint32_t p = 1; p <= 200; p++)
		nl_live_target(l, p, "worker", NULL);
	for (uint32_t p = 1; p <= 40; p++)
		nl_live_target_exit(l, p);
	/* past the cap of 256: the 40 exited ones go first, then the idlest (41..44) */
	for (uint32_t p = 201; p <= 300; p++)
		nl_live_target(l, p, "worker", NULL);
	s = screen(l, T0, NL_LIVE_ROWS);
	assert_non_null(strstr(line_of(s, "nanlog-bpf "), "targets 256 alive, 0 exited"));
	line_of(s, "     45 worker");
	snprintf(want, sizeof(want), "... %u more targets", 256 - 7);
	assert_string_equal(line_of(s, "... "), want);
	assert_int_equal(check_screen(s, strlen(s), NL_LIVE_ROWS), NL_LIVE_ROWS - 1);

	nl_live_set_rows(l, 100);
	s = screen(l, T0, 100);
	assert_int_equal(check_screen(s, strlen(s), 100), 99);
	snprintf(want, sizeof(want), "... %u more targets", 256 - 83);
	assert_string_equal(line_of(s, "... "), want);

	nl_live_set_rows(l, 3); /* clamped to 10: the header alone fills it */
	s = screen(l, T0, 10);
	assert_int_equal(check_screen(s, strlen(s), 10), 9);
	nl_live_free(l);
}

/* A short buffer gets whole lines only, NUL-terminated. */
static void test_short_buffer(void **state)
{
	struct nl_live *l = nl_live_new();
	char buf[120], big[NL_LIVE_BUFSZ];
	size_t n, full;

	(void)state;
	full = nl_live_render(l, T0, big, sizeof(big));
	for (size_t len = 0; len <= sizeof(buf); len++) {
		memset(buf, 'x', sizeof(buf));
		n = nl_live_render(l, T0, buf, len);
		if (!len) {
			assert_int_equal(n, 0);
			continue;
		}
		assert_true(n < len);
		assert_int_equal(strlen(buf), n);
		assert_int_equal(strncmp(buf, big, n), 0);
		if (n > strlen(clear_home))
			assert_int_equal(buf[n - 1], '\n');
	}
	assert_true(full > sizeof(buf));
	nl_live_free(l);
}

static void test_sink(void **state)
{
	struct nl_live *l = nl_live_new();
	struct nl_sink k = nl_live_sink(l);
	struct nl_batch_audit a = audit(3, 0, NL_VERDICT_UNTRUSTED, T0, MS);
	struct nl_summary sum = { .records = 99, .lost_records = 4 };
	const char *s;

	(void)state;
	k.batch(k.ctx, &a);
	k.summary(k.ctx, &sum);
	s = screen(l, T0, NL_LIVE_ROWS);
	assert_non_null(strstr(line_of(s, "batches "), "untrusted 1"));
	assert_non_null(strstr(line_of(s, "records "), "records 99  lost 4 "));
	assert_string_equal(line_of(s, "latest: "), "latest:    pid 3 batch 0 untrusted sparse->forward");
	nl_live_free(l);
}

/* Years of uptime and huge counts still fit 80 columns. */
static void test_extremes(void **state)
{
	struct nl_live *l = nl_live_new();
	struct nl_metrics_counters c = { .records = UINT64_MAX, .lost_ringbuf = UINT64_MAX / 2,
					 .lost_stash = UINT64_MAX / 2, .probes_attached = UINT32_MAX,
					 .probes_missing = UINT32_MAX, .cpu_seconds = 1e300 };
	struct nl_batch_audit a = audit(UINT32_MAX, UINT64_MAX, NL_VERDICT_SKIPPED, UINT64_MAX / 2, MS);

	(void)state;
	a.skip_mask = (1u << NL_NSKIP) - 1;
	screen(l, 1, NL_LIVE_ROWS);
	nl_live_counters(l, &c);
	nl_live_batch(l, &a);
	a.verdict = NL_VERDICT_TRUSTED;
	a.stage[NL_STAGE_COPY].first_ns = 1;
	a.stage[NL_STAGE_COPY].last_ns = UINT64_MAX;
	nl_live_batch(l, &a);
	nl_live_target(l, UINT32_MAX, "0123456789abcdefghij", "x");
	screen(l, UINT64_MAX, NL_LIVE_ROWS);
	nl_live_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_counts_and_rate),
		cmocka_unit_test(test_rate_young_target),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_many_targets),
		cmocka_unit_test(test_short_buffer),
		cmocka_unit_test(test_sink),
		cmocka_unit_test(test_extremes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
