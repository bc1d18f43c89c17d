// SPDX-License-Identifier: MIT
/*
 * The writers: the JSON helper's escaping and commas, batch and summary
 * records that parse and carry the documented keys, and a table that fits
 * 80 columns.
 */
#include <ctype.h>
#include <stdio.h>

#include "out/json.h"
#include "test_engine_util.h"

/* ---- a tiny JSON checker: true when s is exactly one JSON value ---------- */

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return s;
}

static const char *value(const char *s, int depth);

static const char *string(const char *s)
{
	if (*s++ != '"')
		return NULL;
	while (*s && *s != '"') {
		if ((unsigned char)*s < 0x20)
			return NULL;
		if (*s == '\\') {
			s++;
			if (*s == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)s[i]))
						return NULL;
				s += 4;
			} else if (!strchr("\"\\/bfnrt", *s)) {
				return NULL;
			}
		}
		s++;
	}
	return *s == '"' ? s + 1 : NULL;
}

static const char *number(const char *s)
{
	const char *start = s;

	if (*s == '-')
		s++;
	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s) || *s == '.' || *s == 'e' || *s == 'E' || *s == '+' ||
	       *s == '-')
		s++;
	return s > start ? s : NULL;
}

static const char *members(const char *s, char close, bool keyed, int depth)
{
	s = skip_ws(s);
	if (*s == close)
		return s + 1;
	for (;;) {
		s = skip_ws(s);
		if (keyed) {
			s = string(s);
			if (!s)
				return NULL;
			s = skip_ws(s);
			if (*s++ != ':')
				return NULL;
		}
		s = value(skip_ws(s), depth + 1);
		if (!s)
			return NULL;
		s = skip_ws(s);
		if (*s == close)
			return s + 1;
		if (*s++ != ',')
			return NULL;
	}
}

static const char *value(const char *s, int depth)
{
	if (depth > 32)
		return NULL;
	switch (*s) {
	case '{':
		return members(s + 1, '}', true, depth);
	case '[':
		return members(s + 1, ']', false, depth);
	case '"':
		return string(s);
	case 't':
		return strncmp(s, "true", 4) ? NULL : s + 4;
	case 'f':
		return strncmp(s, "false", 5) ? NULL : s + 5;
	case 'n':
		return strncmp(s, "null", 4) ? NULL : s + 4;
	default:
		return number(s);
	}
}

static bool json_ok(const char *line)
{
	const char *end = value(skip_ws(line), 0);

	return end && *skip_ws(end) == '\0';
}

/* The number after "key": in line, or -1. */
static long long num_of(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p && isdigit((unsigned char)p[strlen(pat)]) ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* ---- tests ---------------------------------------------------------------- */

static void json_writer(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct nl_json j;

	(void)state;
	assert_non_null(f);
	nl_json_begin(&j, f);
	nl_json_kstr(&j, "s", "a\"b\\c\nd\x01\xc3\xa9");
	nl_json_khex(&j, "h", 0xdeadbeefull);
	nl_json_key(&j, "a");
	nl_json_arr(&j);
	nl_json_u64(&j, 1);
	nl_json_i64(&j, -2);
	nl_json_obj(&j);
	nl_json_knull(&j, "n");
	nl_json_kbool(&j, "t", true);
	nl_json_obj_end(&j);
	nl_json_arr(&j);
	nl_json_arr_end(&j);
	nl_json_dbl(&j, 0.0 / 0.0);
	nl_json_str(&j, NULL);
	nl_json_arr_end(&j);
	nl_json_kdbl(&j, "d", 1.5);
	assert_int_equal(nl_json_end(&j), 0);
	fclose(f);
	assert_string_equal(buf, "{\"s\":\"a\\\"b\\\\c\\nd\\u0001\\u00c3\\u00a9\",\"h\":\"0xdeadbeef\","
				 "\"a\":[1,-2,{\"n\":null,\"t\":true},[],null,null],\"d\":1.5}\n");
	assert_true(json_ok(buf));
	free(buf);
}

/* The writer's own number formatting and escaping, at their edges. */
static void json_numbers_and_escapes(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct nl_json j;

	(void)state;
	assert_non_null(f);
	nl_json_begin(&j, f);
	nl_json_key(&j, "n");
	nl_json_arr(&j);
	nl_json_u64(&j, 0);
	nl_json_u64(&j, UINT64_MAX);
	nl_json_i64(&j, INT64_MIN);
	nl_json_i64(&j, INT64_MAX);
	nl_json_hex(&j, 0);
	nl_json_hex(&j, UINT64_MAX);
	nl_json_arr_end(&j);
	nl_json_kstr(&j, "plain", "abc");
	nl_json_kstr(&j, "ends", "x\ty\r\x7f");
	nl_json_kstr(&j, "", "");
	nl_json_key(&j, "nul");
	nl_json_strn(&j, "a\0b", 3);
	assert_int_equal(nl_json_end(&j), 0);
	fclose(f);
	assert_string_equal(buf, "{\"n\":[0,18446744073709551615,-9223372036854775808,"
				 "9223372036854775807,\"0x0\",\"0xffffffffffffffff\"],"
				 "\"plain\":\"abc\",\"ends\":\"x\\ty\\r\\u007f\",\"\":\"\","
				 "\"nul\":\"a\\u0000b\"}\n");
	free(buf);
}

static void json_records(void **state)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct nl_sink sink = nl_audit_json_sink(f);
	struct nl_engine_opts eo = { .post_step = true };
	struct nl_engine *e = nl_engine_new(&eo, &sink);
	struct tb *t = tb_new(NULL);
	struct tr_opts o = tr_defaults(8);
	struct tr_run r;
	const char *missing[] = { "hipGraphLaunch", "ncclAllReduce" };
	struct nl_run_info ri = { .probes_attached = 47, .nprobes_missing = 2,
				  .probes_missing = missing, .attach_ns = 5000000,
				  .duration_ns = 2000000000ull, .cpu_ms = 12.5,
				  .wall_realtime_ns = 1700000000000000000ull, .wall_monotonic_ns = 1000 };
	int batches = 0, summaries = 0;

	(void)state;
	assert_non_null(f);
	/* the bench's engine is replaced by one writing JSON */
	nl_engine_free(t->e);
	t->e = e;
	nl_engine_attach(e, t->pid, t->now, false);
	o.drop_d = 3;
	tr_job(t, &o, &r);
	nl_engine_set_run_info(e, &ri);
	nl_engine_finish(e, t->now += 1000);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		assert_true(json_ok(line));
		assert_non_null(strstr(line, "\"schema\":1"));
		if (strstr(line, "\"type\":\"batch\"")) {
			batches++;
			assert_non_null(strstr(line, "\"verdict\":\""));
			assert_non_null(strstr(line, "\"skip_reasons\":["));
			assert_non_null(strstr(line, "\"copy\":{"));
			assert_non_null(strstr(line, "\"sparse\":{"));
			assert_non_null(strstr(line, "\"forward\":{"));
			assert_non_null(strstr(line, "\"completion\":"));
			assert_non_null(strstr(line, "\"handoff\":{\"copy\":{"));
			assert_non_null(strstr(line, "\"post_step\":{\"confirmed\":"));
			if (num_of(line, "batch") == 3) {
				assert_non_null(strstr(line, "\"verdict\":\"untrusted\""));
				assert_non_null(strstr(line, "\"missing_edges\":[\"sparse->forward\"]"));
				assert_non_null(strstr(line, "\"unordered\":[{\"edge\":\"sparse->forward\""));
			} else {
				assert_non_null(strstr(line, "\"verdict\":\"trusted\""));
				assert_non_null(strstr(line, "\"unordered\":[]"));
			}
		} else {
			assert_non_null(strstr(line, "\"type\":\"summary\""));
			summaries++;
			assert_int_equal(num_of(line, "batches"), 8);
			assert_int_equal(num_of(line, "trusted") + num_of(line, "untrusted") +
						 num_of(line, "skipped"),
					 num_of(line, "batches"));
			assert_int_equal(num_of(line, "depth"), 2);
			assert_int_equal(num_of(line, "probes_attached"), 47);
			assert_non_null(strstr(line, "\"probes_missing\":[\"hipGraphLaunch\",\"ncclAllReduce\"]"));
			assert_non_null(strstr(line, "\"role\":\"copy\""));
			assert_non_null(strstr(line, "\"stream\":\"0x0\",\"role\":\"compute\""));
			assert_non_null(strstr(line, "\"missing_edges\":{\"copy->sparse\":0,"
						     "\"sparse->forward\":1,\"copy->forward\":0}"));
			assert_non_null(strstr(line, "\"wall_anchor\":{\"realtime_ns\":"));
		}
	}
	assert_int_equal(batches, 8);
	assert_int_equal(summaries, 1);
	free(buf);
	tb_free(t);
}

static void check_width(const char *buf, int *rows)
{
	const char *p = buf;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n > NL_TABLE_WIDTH)
			fail_msg("line of %zu columns: %.*s", n, (int)n, p);
		(*rows)++;
		p += n + (nl ? 1 : 0);
	}
}

static void table_fits(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct nl_audit_table tab = { .f = f };
	struct nl_sink sink = nl_audit_table_sink(&tab);
	struct nl_engine *e = nl_engine_new(NULL, &sink);
	struct tb *t = tb_new(NULL);
	struct tr_opts o = tr_defaults(8);
	struct tr_run r;
	const char *missing[12];
	struct nl_run_info ri = { .probes_attached = 40, .nprobes_missing = 12,
				  .probes_missing = missing };
	int rows = 0;

	(void)state;
	for (int i = 0; i < 12; i++)
		missing[i] = nl_api_name((unsigned)i);
	assert_non_null(f);
	nl_engine_free(t->e);
	t->e = e;
	t->pid = 4194304; /* the widest pid */
	nl_engine_attach(e, t->pid, t->now, false);
	o.drop_b = 2;
	o.exit_at = 6;
	tr_job(t, &o, &r);
	nl_engine_set_run_info(e, &ri);
	nl_engine_finish(e, t->now += 1000);
	fclose(f);
	check_width(buf, &rows);
	assert_true(rows > 8 + 5);
	assert_true(strncmp(buf, "    PID  BATCH VERDICT", 22) == 0);
	assert_non_null(strstr(buf, "copy->sparse"));
	assert_non_null(strstr(buf, "target_exited"));
	assert_non_null(strstr(buf, "batches 8: 5 trusted, 1 untrusted, 2 skipped"));
	assert_non_null(strstr(buf, "hipMemcpyAsync"));
	free(buf);
	tb_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_writer),
		cmocka_unit_test(json_numbers_and_escapes),
		cmocka_unit_test(json_records),
		cmocka_unit_test(table_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
