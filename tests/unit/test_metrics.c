// SPDX-License-Identifier: MIT
/*
 * Metrics: the registry, the text exposition read back by a strict parser
 * (and by promtool when it is installed), the ADDR:PORT parser, and the HTTP
 * endpoint fetched with a plain socket client.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"
#include "out/metrics.h"
#include "out/metrics_http.h"
#include "test_expo.h"

#define MS 1000000ull
/* labels of a process without container or pod */
#define NOCTR "container=\"\",pod_uid=\"\""
#define HOST "nanlog_stage_host_latency_seconds"

/* A batch of pid with every stage present: copy window copy_ms, sparse 2 ms,
 * forward 3 ms; completion of copy known 5 ms after its start. */
static struct nl_batch_audit audit(uint32_t pid, uint64_t batch, int verdict, uint64_t copy_ms)
{
	struct nl_batch_audit a;
	uint64_t t0 = 1000000000ull + batch * 100 * MS;

	memset(&a, 0, sizeof(a));
	a.pid = pid;
	a.batch = batch;
	a.verdict = verdict;
	a.tick = (int64_t)batch + 1;
	a.depth = 2;
	for (int s = 0; s < NL_NSTAGES; s++) {
		a.stage[s].present = true;
		a.stage[s].ops = 3;
		a.stage[s].first_ns = t0 + (uint64_t)s * 10 * MS;
	}
	a.stage[NL_STAGE_COPY].last_ns = a.stage[NL_STAGE_COPY].first_ns + copy_ms * MS;
	a.stage[NL_STAGE_SPARSE].last_ns = a.stage[NL_STAGE_SPARSE].first_ns + 2 * MS;
	a.stage[NL_STAGE_FORWARD].last_ns = a.stage[NL_STAGE_FORWARD].first_ns + 3 * MS;
	a.stage[NL_STAGE_COPY].completion.done_by_ns = a.stage[NL_STAGE_COPY].first_ns + 5 * MS;
	a.window_end_ns = a.stage[NL_STAGE_FORWARD].last_ns + MS;
	a.handoff[NL_STAGE_SPARSE].found = true;
	a.handoff[NL_STAGE_SPARSE].exposure = 3;
	a.overlap_known = true;
	a.overlap_ns = 4 * MS;
	if (verdict == NL_VERDICT_UNTRUSTED)
		a.missing_mask = 1u << NL_EDGE_SPARSE_FORWARD;
	if (verdict == NL_VERDICT_SKIPPED)
		a.skip_mask = 1u << NL_SKIP_TARGET_EXITED | 1u << NL_SKIP_LOST_RECORDS;
	return a;
}

static char *render(struct nl_metrics *m)
{
	char *text = NULL;
	size_t n = nl_metrics_render(m, &text);
	struct expo_check c;

	assert_non_null(text);
	assert_int_equal(n, strlen(text));
	if (!expo_check_text(text, &c))
		fail_msg("exposition: %s", c.err);
	return text;
}

static void assert_sample(const char *text, const char *series, double want)
{
	double got = expo_get(text, series);

	if (got != want)
		fail_msg("%s: got %g, want %g", series, got, want);
}

/* assert_sample on a series written as printf does */
static void assert_samplef(const char *text, double want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void assert_samplef(const char *text, double want, const char *fmt, ...)
{
	char series[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(series, sizeof(series), fmt, ap);
	va_end(ap);
	assert_sample(text, series, want);
}

/* ---- registry and exposition -------------------------------------------- */

static void test_empty(void **state)
{
	struct nl_metrics *m = nl_metrics_new("1.2.3");
	char *text;

	(void)state;
	text = render(m);
	assert_sample(text, "nanlog_build_info{version=\"1.2.3\"}", 1);
	assert_sample(text, "nanlog_records_processed_total", 0);
	assert_sample(text, "nanlog_bpf_lost_total{cause=\"ringbuf\"}", 0);
	/* families announced even before any batch */
	assert_non_null(strstr(text, "# TYPE nanlog_batches_total counter\n"));
	assert_non_null(strstr(text, "# TYPE nanlog_stage_host_latency_seconds histogram\n"));
	free(text);
	nl_metrics_free(m);
	nl_metrics_free(NULL);
}

static void test_batches(void **state)
{
	struct nl_metrics *m = nl_metrics_new("0.1.0");
	struct nl_batch_audit a;
	char *text;
	const char *l1 = "pid=\"100\",container=\"abc123\",pod_uid=\"5f0c-1\"";
	char series[512];

	(void)state;
	nl_metrics_set_target(m, 100, "abc123", "5f0c-1");
	for (uint64_t b = 0; b < 5; b++) {
		a = audit(100, b, b == 3 ? NL_VERDICT_UNTRUSTED : NL_VERDICT_TRUSTED, 1 + b * 100);
		nl_metrics_batch(m, &a);
	}
	a = audit(100, 5, NL_VERDICT_SKIPPED, 20000); /* skipped: out of the histograms */
	nl_metrics_batch(m, &a);
	a = audit(200, 0, NL_VERDICT_TRUSTED, 1); /* a pid never announced */
	nl_metrics_batch(m, &a);
	text = render(m);

	assert_samplef(text, 4, "nanlog_batches_total{%s,verdict=\"trusted\"}", l1);
	assert_samplef(text, 1, "nanlog_batches_total{%s,verdict=\"untrusted\"}", l1);
	assert_samplef(text, 1, "nanlog_batches_total{%s,verdict=\"skipped\"}", l1);
	assert_samplef(text, 1, "nanlog_skip_reasons_total{%s,reason=\"target_exited\"}", l1);
	assert_samplef(text, 1, "nanlog_skip_reasons_total{%s,reason=\"lost_records\"}", l1);
	assert_samplef(text, 0, "nanlog_skip_reasons_total{%s,reason=\"evicted\"}", l1);
	assert_samplef(text, 1, "nanlog_missing_edges_total{%s,edge=\"sparse->forward\"}", l1);
	assert_samplef(text, 0, "nanlog_missing_edges_total{%s,edge=\"copy->sparse\"}", l1);
	assert_sample(text,
		      "nanlog_batches_total{pid=\"200\",container=\"\",pod_uid=\"\",verdict=\"trusted\"}",
		      1);

	/* copy windows 1, 101, 201, 301, 401 ms: buckets are cumulative */
	assert_samplef(text, 1, HOST "_bucket{%s,stage=\"copy\",le=\"0.001\"}", l1);
	assert_samplef(text, 3, HOST "_bucket{%s,stage=\"copy\",le=\"0.25\"}", l1);
	assert_samplef(text, 5, HOST "_bucket{%s,stage=\"copy\",le=\"0.5\"}", l1);
	assert_samplef(text, 5, HOST "_bucket{%s,stage=\"copy\",le=\"+Inf\"}", l1);
	assert_samplef(text, 5, HOST "_count{%s,stage=\"copy\"}", l1);
	assert_samplef(text, 1.005, HOST "_sum{%s,stage=\"copy\"}", l1);
	assert_samplef(text, 5, "nanlog_stage_completion_seconds_count{%s,stage=\"copy\"}", l1);
	/* completion unknown: not observed */
	assert_samplef(text, 0, "nanlog_stage_completion_seconds_count{%s,stage=\"sparse\"}", l1);
	assert_samplef(text, 5, "nanlog_overlap_seconds_bucket{%s,le=\"0.005\"}", l1);
	assert_samplef(text, 0, "nanlog_handoff_exposure_ops_bucket{%s,stage=\"sparse\",le=\"2\"}", l1);
	assert_samplef(text, 5, "nanlog_handoff_exposure_ops_bucket{%s,stage=\"sparse\",le=\"4\"}", l1);
	assert_samplef(text, 15, "nanlog_handoff_exposure_ops_sum{%s,stage=\"sparse\"}", l1);
	assert_samplef(text, 1, "nanlog_target_alive{%s}", l1);
	snprintf(series, sizeof(series), "nanlog_last_batch_timestamp_seconds{%s}", l1);
	{
		double ts = expo_get(text, series);
		struct timeval tv;

		gettimeofday(&tv, NULL);
		assert_true(ts > (double)tv.tv_sec - 60 && ts <= (double)tv.tv_sec + 1);
	}
	free(text);

	nl_metrics_target_exit(m, 100);
	text = render(m);
	assert_samplef(text, 0, "nanlog_target_alive{%s}", l1);
	free(text);
	nl_metrics_free(m);
}

/* Only the stages a process has get histogram series. */
static void test_simple_pattern(void **state)
{
	struct nl_metrics *m = nl_metrics_new("x");
	struct nl_batch_audit a = audit(7, 0, NL_VERDICT_TRUSTED, 1);
	char *text;

	(void)state;
	a.stage[NL_STAGE_SPARSE].present = false;
	a.handoff[NL_STAGE_SPARSE].found = false;
	a.handoff[NL_STAGE_COPY].found = true;
	nl_metrics_batch(m, &a);
	text = render(m);
	assert_null(strstr(text, "stage=\"sparse\""));
	assert_non_null(strstr(text, "nanlog_stage_host_latency_seconds_count{pid=\"7\",container=\"\","
				     "pod_uid=\"\",stage=\"forward\"} 1\n"));
	assert_non_null(strstr(text, "nanlog_handoff_exposure_ops_count{pid=\"7\",container=\"\","
				     "pod_uid=\"\",stage=\"copy\"} 1\n"));
	free(text);
	nl_metrics_free(m);
}

static void test_label_escaping(void **state)
{
	struct nl_metrics *m = nl_metrics_new("v\"1\\\n");
	struct nl_batch_audit a = audit(9, 0, NL_VERDICT_TRUSTED, 1);
	char *text;

	(void)state;
	nl_metrics_set_target(m, 9, "a\"b\\c\nd", "\n");
	nl_metrics_batch(m, &a);
	text = render(m);
	assert_non_null(strstr(text, "nanlog_build_info{version=\"v\\\"1\\\\\\n\"} 1\n"));
	assert_non_null(strstr(text, "{pid=\"9\",container=\"a\\\"b\\\\c\\nd\",pod_uid=\"\\n\","
				     "verdict=\"trusted\"} 1\n"));
	free(text);
	nl_metrics_free(m);
}

static void test_long_labels_cut(void **state)
{
	struct nl_metrics *m = nl_metrics_new("x");
	char big[400], *text, want[NL_METRICS_LABEL_MAX + 32];

	(void)state;
	memset(big, 'f', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	nl_metrics_set_target(m, 3, big, NULL);
	text = render(m);
	snprintf(want, sizeof(want), "container=\"%.*s\",", NL_METRICS_LABEL_MAX, big);
	assert_non_null(strstr(text, want));
	free(text);
	nl_metrics_free(m);
}

static void test_counters_monotonic(void **state)
{
	struct nl_metrics *m = nl_metrics_new("x");
	struct nl_metrics_counters c = { .records = 1000, .bad_records = 2, .lost_ringbuf = 5,
					 .lost_stash = 1, .probes_attached = 40, .probes_missing = 2,
					 .targets = 3, .cpu_seconds = 1.5 };
	struct nl_summary s;
	char *text;

	(void)state;
	nl_metrics_set_counters(m, &c);
	text = render(m);
	assert_sample(text, "nanlog_records_processed_total", 1000);
	assert_sample(text, "nanlog_bad_records_total", 2);
	assert_sample(text, "nanlog_records_lost_total", 6);
	assert_sample(text, "nanlog_bpf_lost_total{cause=\"ringbuf\"}", 5);
	assert_sample(text, "nanlog_bpf_lost_total{cause=\"stash\"}", 1);
	assert_sample(text, "nanlog_probes_attached", 40);
	assert_sample(text, "nanlog_probes_missing", 2);
	assert_sample(text, "nanlog_attached_targets", 3);
	assert_sample(text, "nanlog_tool_cpu_seconds_total", 1.5);
	free(text);

	/* counters keep their highest value; gauges follow */
	c = (struct nl_metrics_counters){ .records = 10, .lost_ringbuf = 1, .probes_attached = 38,
					  .targets = 1, .cpu_seconds = 0.5 };
	nl_metrics_set_counters(m, &c);
	memset(&s, 0, sizeof(s));
	s.records = 999;
	s.lost_records = 9; /* the engine heard of more losses than the BPF counters show */
	nl_metrics_summary(m, &s);
	text = render(m);
	assert_sample(text, "nanlog_records_processed_total", 1000);
	assert_sample(text, "nanlog_records_lost_total", 9);
	assert_sample(text, "nanlog_bpf_lost_total{cause=\"ringbuf\"}", 5);
	assert_sample(text, "nanlog_tool_cpu_seconds_total", 1.5);
	assert_sample(text, "nanlog_probes_attached", 38);
	assert_sample(text, "nanlog_attached_targets", 1);
	free(text);

	/* the loader's run info in a summary */
	s.has_run_info = true;
	s.records = 2000;
	s.run.probes_attached = 41;
	s.run.nprobes_missing = 1;
	s.run.lost_ringbuf = 20;
	s.run.cpu_ms = 2500;
	nl_metrics_summary(m, &s);
	text = render(m);
	assert_sample(text, "nanlog_records_processed_total", 2000);
	assert_sample(text, "nanlog_records_lost_total", 21);
	assert_sample(text, "nanlog_probes_attached", 41);
	assert_sample(text, "nanlog_probes_missing", 1);
	assert_sample(text, "nanlog_tool_cpu_seconds_total", 2.5);
	free(text);
	nl_metrics_free(m);
}

/* The sink adapter feeds the registry. */
static void test_sink(void **state)
{
	struct nl_metrics *m = nl_metrics_new("x");
	struct nl_sink k = nl_metrics_sink(m);
	struct nl_batch_audit a = audit(4, 0, NL_VERDICT_TRUSTED, 1);
	struct nl_summary s = { .records = 77 };
	char *text;

	(void)state;
	k.batch(k.ctx, &a);
	k.summary(k.ctx, &s);
	text = render(m);
	assert_sample(text, "nanlog_batches_total{pid=\"4\"," NOCTR ",verdict=\"trusted\"}", 1);
	assert_sample(text, "nanlog_records_processed_total", 77);
	free(text);
	nl_metrics_free(m);
}

/* At the cap, exited processes go first (oldest exit first), then the idlest. */
static void test_eviction(void **state)
{
	struct nl_metrics *m = nl_metrics_new("x");
	struct nl_batch_audit a;
	char *text, series[128];
	struct expo_check c;

	(void)state;
	for (uint32_t p = 1; p <= NL_METRICS_MAX_TARGETS; p++) {
		a = audit(p, 0, NL_VERDICT_TRUSTED, 1);
		nl_metrics_batch(m, &a);
	}
	nl_metrics_target_exit(m, 50);
	nl_metrics_target_exit(m, 20);
	a = audit(1000, 0, NL_VERDICT_TRUSTED, 1);
	nl_metrics_batch(m, &a); /* evicts 50, the first to exit */
	nl_metrics_set_target(m, 1001, "c", "p"); /* evicts 20 */
	a = audit(1, 1, NL_VERDICT_TRUSTED, 1);
	nl_metrics_batch(m, &a); /* pid 1 busy again: 2 is now the idlest */
	a = audit(1002, 0, NL_VERDICT_TRUSTED, 1);
	nl_metrics_batch(m, &a); /* evicts 2 */
	text = render(m);
	assert_true(expo_check_text(text, &c));
	for (uint32_t p = 1; p <= 3; p++) {
		snprintf(series, sizeof(series), "nanlog_target_alive{pid=\"%u\"," NOCTR "}", p);
		if (p == 2)
			assert_true(isnan(expo_get(text, series)));
		else
			assert_sample(text, series, 1);
	}
	assert_null(strstr(text, "{pid=\"50\","));
	assert_null(strstr(text, "{pid=\"20\","));
	assert_non_null(strstr(text, "{pid=\"1001\",container=\"c\",pod_uid=\"p\"}"));
	assert_sample(text, "nanlog_batches_total{pid=\"1\"," NOCTR ",verdict=\"trusted\"}", 2);
	assert_sample(text, "nanlog_metrics_evicted_targets_total", 3);
	free(text);
	nl_metrics_free(m);
}

/* The sum of the samples of family name whose labels contain label (any
 * when NULL). */
static uint64_t sum_samples(const char *text, const char *name, const char *label)
{
	size_t n = strlen(name);
	uint64_t sum = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *end = strchr(p, '\n'), *val;

		if (strncmp(p, name, n) || p[n] != '{')
			continue;
		val = memrchr(p, ' ', (size_t)((end ? end : p + strlen(p)) - p));
		assert_non_null(val);
		if (label) {
			const char *l = strstr(p, label);

			if (!l || l > val)
				continue;
		}
		sum += strtoull(val + 1, NULL, 10);
	}
	return sum;
}

/* The HTTP thread renders while the main thread feeds: every render is a
 * consistent state (the parser checks the text, ASan/UBSan and, under
 * `make tsan`, ThreadSanitizer the memory), no counter goes backwards, and
 * the render after the feeder stopped has every batch it fed. */
#define FEED_PIDS 16 /* under NL_METRICS_MAX_TARGETS: nothing is evicted */
_Static_assert(FEED_PIDS < NL_METRICS_MAX_TARGETS, "the feeder's processes fit the registry");

struct feeder {
	struct nl_metrics *m;
	atomic_bool stop;
	atomic_uint_fast64_t fed; /* batches fed and counted */
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	uint64_t i;

	for (i = 0; !atomic_load(&f->stop); i++) {
		struct nl_batch_audit a = audit((uint32_t)(i % FEED_PIDS), i, (int)(i % 3), i % 50);
		struct nl_metrics_counters c = { .records = i + 1, .targets = (uint32_t)(i % 7) };

		nl_metrics_batch(f->m, &a);
		nl_metrics_set_counters(f->m, &c);
		if (i % 11 == 0)
			nl_metrics_target_exit(f->m, (uint32_t)(i % FEED_PIDS));
		atomic_store(&f->fed, i + 1);
	}
	return NULL;
}

/* What a render of the feeder's registry says: batches by verdict, and the
 * copy stage's latency count, which only the non-skipped batches feed. */
struct fed_counts {
	uint64_t records, batches, counted, copy_latencies;
};

static struct fed_counts fed_counts(struct nl_metrics *m)
{
	char *text = render(m);
	struct fed_counts c = {
		.records = (uint64_t)expo_get(text, "nanlog_records_processed_total"),
		.batches = sum_samples(text, "nanlog_batches_total", NULL),
		.counted = sum_samples(text, "nanlog_batches_total", "verdict=\"trusted\"") +
			   sum_samples(text, "nanlog_batches_total", "verdict=\"untrusted\""),
		.copy_latencies = sum_samples(text, HOST "_count", "stage=\"copy\""),
	};

	free(text);
	/* one state: the batch and its latency were not split by the render */
	assert_int_equal(c.counted, c.copy_latencies);
	return c;
}

static void test_concurrent_render(void **state)
{
	struct feeder f = { .m = nl_metrics_new("x") };
	struct fed_counts prev = { 0 }, now;
	uint64_t fed = 0;
	pthread_t th;

	(void)state;
	atomic_init(&f.stop, false);
	atomic_init(&f.fed, 0);
	assert_int_equal(pthread_create(&th, NULL, feed, &f), 0);
	for (int i = 0; i < 30; i++) {
		/* at least one more batch before each render: the feeder runs */
		while (atomic_load(&f.fed) == fed)
			sched_yield();
		now = fed_counts(f.m);
		fed = atomic_load(&f.fed);
		if (now.records < prev.records || now.batches < prev.batches)
			fail_msg("render %d went backwards: records %" PRIu64 " -> %" PRIu64
				 ", batches %" PRIu64 " -> %" PRIu64,
				 i, prev.records, now.records, prev.batches, now.batches);
		/* what the render saw was fed before it returned */
		assert_true(now.batches <= fed);
		assert_true(now.records <= fed);
		prev = now;
	}
	atomic_store(&f.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	fed = atomic_load(&f.fed);
	now = fed_counts(f.m);
	assert_true(fed > 30);
	assert_int_equal(now.records, fed);
	assert_int_equal(now.batches, fed);
	/* batch i has verdict i % 3: every third one is skipped */
	_Static_assert(NL_VERDICT_SKIPPED == 2, "the feeder's verdicts");
	assert_int_equal(now.counted, fed - fed / 3);
	nl_metrics_free(f.m);
}

/* A rich registry through promtool's own linter, when it is installed. */
static void test_promtool(void **state)
{
	struct nl_metrics *m = nl_metrics_new("0.1.0");
	struct nl_metrics_counters c = { .records = 5, .probes_attached = 30, .targets = 2 };
	char path[] = "/tmp/nanlog-metrics-XXXXXX", *text;
	int fd, status;
	pid_t pid;

	(void)state;
	nl_metrics_set_target(m, 1, "0123456789abcdef", "1b2c-3d");
	for (uint64_t b = 0; b < 20; b++) {
		struct nl_batch_audit a = audit(1 + (uint32_t)(b % 2), b, (int)(b % 3), b * 7);

		nl_metrics_batch(m, &a);
	}
	nl_metrics_set_counters(m, &c);
	text = render(m);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	lseek(fd, 0, SEEK_SET);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd, 0);
		execlp("promtool", "promtool", "check", "metrics", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(fd);
	unlink(path);
	free(text);
	nl_metrics_free(m);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 127)
		skip(); /* no promtool (Debian package prometheus); the e2e test runs it too */
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- ADDR:PORT ------------------------------------------------------------ */

static void test_parse_addr_good(void **state)
{
	static const struct {
		const char *in, *host, *url;
		int family;
		unsigned port;
		bool loopback;
	} ok[] = {
		{ "127.0.0.1:9464", "127.0.0.1", "http://127.0.0.1:9464/metrics", AF_INET, 9464, true },
		{ ":9464", "127.0.0.1", "http://127.0.0.1:9464/metrics", AF_INET, 9464, true },
		{ "0.0.0.0:9464", "0.0.0.0", "http://0.0.0.0:9464/metrics", AF_INET, 9464, false },
		{ "[::1]:9464", "::1", "http://[::1]:9464/metrics", AF_INET6, 9464, true },
		{ "[::]:80", "::", "http://[::]:80/metrics", AF_INET6, 80, false },
		{ "127.0.0.1:0", "127.0.0.1", "http://127.0.0.1:0/metrics", AF_INET, 0, true },
		{ "10.1.2.3:65535", "10.1.2.3", "http://10.1.2.3:65535/metrics", AF_INET, 65535, false },
		{ "127.9.9.9:1", "127.9.9.9", "http://127.9.9.9:1/metrics", AF_INET, 1, true },
		{ "[fe80::0001]:8080", "fe80::1", "http://[fe80::1]:8080/metrics", AF_INET6, 8080, false },
		{ ":0", "127.0.0.1", "http://127.0.0.1:0/metrics", AF_INET, 0, true },
		{ "[::ffff:1.2.3.4]:80", "::ffff:1.2.3.4", "http://[::ffff:1.2.3.4]:80/metrics", AF_INET6, 80,
		  false },
	};
	char err[256], url[128];

	(void)state;
	for (size_t i = 0; i < NL_ARRAY_SIZE(ok); i++) {
		struct nl_metrics_addr a;

		err[0] = '\0';
		if (nl_metrics_parse_addr(ok[i].in, &a, err, sizeof(err)))
			fail_msg("%s: rejected: %s", ok[i].in, err);
		assert_string_equal(a.host, ok[i].host);
		assert_int_equal(a.family, ok[i].family);
		assert_int_equal(a.port, ok[i].port);
		assert_int_equal(a.loopback, ok[i].loopback);
		if (a.family == AF_INET) {
			assert_int_equal(a.salen, sizeof(struct sockaddr_in));
			assert_int_equal(ntohs(((struct sockaddr_in *)&a.sa)->sin_port), ok[i].port);
		} else {
			assert_int_equal(a.salen, sizeof(struct sockaddr_in6));
			assert_int_equal(ntohs(((struct sockaddr_in6 *)&a.sa)->sin6_port), ok[i].port);
		}
		nl_metrics_url(&a, a.port, url, sizeof(url));
		assert_string_equal(url, ok[i].url);
	}
}

static void test_parse_addr_bad(void **state)
{
	static const char *const bad[] = {
		"", "9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
		"127.0.0.1:+80", "127.0.0.1: 80", "127.0.0.1:80 ", "127.0.0.1:0x50", "127.0.0.1:80x",
		"::1:9464", "[::1]", "[::1]9464", "[::1:9464", "[]:80", "localhost:9464",
		"256.0.0.1:80", "1.2.3:80", "01.2.3.4:80", "[fe80::1%eth0]:80", "[127.0.0.1]:80",
		" 127.0.0.1:80", "127.0.0.1:99999999999999999999", ":", "[::1]:",
		"1234567890123456789012345678901234567890123456789012345678901234567890:1",
		"http://127.0.0.1:9464",
		/* what getaddrinfo() alone takes for IPv4, as inet_aton does */
		"010.0.0.1:80", "0x7f.0.0.1:80", "127.1:80", "1.2.3.4.5:80",
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < NL_ARRAY_SIZE(bad); i++) {
		struct nl_metrics_addr a;

		err[0] = '\0';
		if (nl_metrics_parse_addr(bad[i], &a, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		/* one line, saying what was wrong */
		assert_true(strlen(err) > 20);
		assert_null(strchr(err, '\n'));
		assert_int_equal(strncmp(err, "--metrics ", 10), 0);
	}
	assert_int_equal(nl_metrics_parse_addr(NULL, &(struct nl_metrics_addr){ 0 }, err, sizeof(err)),
			 -EINVAL);
}

/* ---- HTTP ------------------------------------------------------------------ */

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* One request on a fresh connection; the whole reply (headers and body),
 * malloc'd. NULL when the connection was refused. */
static char *http(int family, uint16_t port, const char *request)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	struct timeval tv = { .tv_sec = 5 };
	size_t cap = 65536, used = 0;
	char *buf;
	ssize_t n;
	int fd;

	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		a->sin6_port = htons(port);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a->sin_port = htons(port);
		len = sizeof(*a);
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		assert_int_equal(errno, ECONNREFUSED);
		close(fd);
		return NULL;
	}
	assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	buf = malloc(cap);
	assert_non_null(buf);
	while ((n = read(fd, buf + used, cap - used - 1)) > 0) {
		used += (size_t)n;
		if (cap - used < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	assert_true(n == 0); /* the server closed the connection (no timeout) */
	close(fd);
	buf[used] = '\0';
	return buf;
}

static void test_http(void **state)
{
	struct nl_metrics *m = nl_metrics_new("0.1.0");
	struct nl_metrics_http *s = NULL;
	struct nl_batch_audit a = audit(42, 0, NL_VERDICT_TRUSTED, 1);
	int fds = open_fds();
	char err[256], want[64], *r, *body;
	uint16_t port;
	struct expo_check c;

	(void)state;
	nl_metrics_batch(m, &a);
	if (nl_metrics_http_start(&s, m, "127.0.0.1:0", err, sizeof(err)))
		fail_msg("start: %s", err);
	port = nl_metrics_http_port(s);
	assert_true(port > 0);
	snprintf(want, sizeof(want), "http://127.0.0.1:%u/metrics", port);
	assert_string_equal(nl_metrics_http_url(s), want);

	r = http(AF_INET, port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(r);
	assert_int_equal(strncmp(r, "HTTP/1.1 200 OK\r\n", 17), 0);
	assert_non_null(strcasestr(r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	body = strstr(r, "\r\n\r\n");
	assert_non_null(body);
	body += 4;
	if (!expo_check_text(body, &c))
		fail_msg("exposition over HTTP: %s", c.err);
	assert_sample(body, "nanlog_batches_total{pid=\"42\"," NOCTR ",verdict=\"trusted\"}", 1);
	free(r);

	/* a query string is not part of the path */
	r = http(AF_INET, port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
	if (strncmp(r, "HTTP/1.1 200 OK\r\n", 17))
		fail_msg("GET /metrics?x=1: %.60s", r);
	free(r);

	r = http(AF_INET, port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_int_equal(strncmp(r, "HTTP/1.1 200 OK\r\n", 17), 0);
	body = strstr(r, "\r\n\r\n");
	assert_non_null(body);
	assert_string_equal(body + 4, "");
	free(r);

	static const char *const others[] = { "/", "/metric", "/metrics/", "/favicon.ico", "/METRICS" };
	for (size_t i = 0; i < NL_ARRAY_SIZE(others); i++) {
		char req[128];

		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
			 others[i]);
		r = http(AF_INET, port, req);
		if (strncmp(r, "HTTP/1.1 404 Not Found\r\n", 24))
			fail_msg("GET %s: %.40s", others[i], r);
		free(r);
	}
	r = http(AF_INET, port,
		 "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	assert_int_equal(strncmp(r, "HTTP/1.1 405 Method Not Allowed\r\n", 33), 0);
	assert_non_null(strcasestr(r, "\r\nAllow: GET, HEAD\r\n"));
	free(r);

	/* the port is taken while it runs */
	{
		struct nl_metrics_http *s2 = NULL;
		char addr[32];

		snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
		assert_int_equal(nl_metrics_http_start(&s2, m, addr, err, sizeof(err)), -EADDRINUSE);
		assert_null(s2);
		assert_non_null(strstr(err, "cannot listen"));
		assert_null(strchr(err, '\n'));
	}
	{
		struct nl_metrics_http *s2 = (struct nl_metrics_http *)&err;

		assert_int_equal(nl_metrics_http_start(&s2, m, "nonsense", err, sizeof(err)), -EINVAL);
		assert_null(s2);
		assert_non_null(strstr(err, "'nonsense'"));
	}
	nl_metrics_http_stop(s);
	assert_int_equal(open_fds(), fds);
	nl_metrics_free(m);
}

static void test_http_stop(void **state)
{
	struct nl_metrics *m = nl_metrics_new("0.1.0");
	struct nl_metrics_http *s = NULL;
	int fds = open_fds();
	char err[256], *r;
	uint16_t port;

	(void)state;
	if (nl_metrics_http_start(&s, m, ":0", err, sizeof(err)))
		fail_msg("start: %s", err);
	port = nl_metrics_http_port(s);
	r = http(AF_INET, port, "GET /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(r);
	free(r);
	nl_metrics_http_stop(s);
	assert_null(http(AF_INET, port, "GET /metrics HTTP/1.0\r\n\r\n"));
	assert_int_equal(open_fds(), fds);
	nl_metrics_http_stop(NULL);
	assert_int_equal(nl_metrics_http_port(NULL), 0);
	nl_metrics_free(m);
}

static void test_http_ipv6(void **state)
{
	struct nl_metrics *m = nl_metrics_new("0.1.0");
	struct nl_metrics_http *s = NULL;
	char err[256], want[64], *r;
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	bool v6 = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

	(void)state;
	if (fd >= 0)
		close(fd);
	if (!v6) {
		nl_metrics_free(m);
		skip(); /* no IPv6 loopback here */
	}
	if (nl_metrics_http_start(&s, m, "[::1]:0", err, sizeof(err)))
		fail_msg("start: %s", err);
	snprintf(want, sizeof(want), "http://[::1]:%u/metrics", nl_metrics_http_port(s));
	assert_string_equal(nl_metrics_http_url(s), want);
	r = http(AF_INET6, nl_metrics_http_port(s), "GET /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(r);
	if (strncmp(r, "HTTP/1.1 200 OK\r\n", 17))
		fail_msg("GET over IPv6: %.60s", r);
	free(r);
	nl_metrics_http_stop(s);
	nl_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_simple_pattern),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_long_labels_cut),
		cmocka_unit_test(test_counters_monotonic),
		cmocka_unit_test(test_sink),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_concurrent_render),
		cmocka_unit_test(test_promtool),
		cmocka_unit_test(test_parse_addr_good),
		cmocka_unit_test(test_parse_addr_bad),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_http_stop),
		cmocka_unit_test(test_http_ipv6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
