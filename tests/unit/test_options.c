// SPDX-License-Identifier: MIT
/* Option parsing: every documented flag, and every kind of nonsense. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "app/options.h"

static int parse(struct nl_opts *o, char *err, ...)
{
	static char *argv[32]; /* o->cmd points into it after the call */
	int argc = 0;
	va_list ap;

	argv[argc++] = "nanlog-bpf";
	va_start(ap, err);
	for (char *a; (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return nl_opts_parse(argc, argv, o, err, 256);
}

static void test_pids_and_flags(void **state)
{
	struct nl_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, "-p", "12", "--pid", "0x10", "--raw", "-o", "out.json",
			       "--format", "table", "--duration", "1.5", "-v", "-v", "--post-step",
			       "--copy-stream", "0x5000", "--sparse-stream", "7", "--sparse-stream", "8",
			       "--compute-stream", "0", "--ringbuf-size", "65536", "--retprobes",
			       "never", "--wait-lib", "--no-placement", NULL),
			 0);
	assert_int_equal(o.npids, 2);
	assert_int_equal(o.pids[0], 12);
	assert_int_equal(o.pids[1], 16);
	assert_true(o.raw);
	assert_string_equal(o.out_path, "out.json");
	assert_int_equal(o.format, NL_FMT_TABLE);
	assert_true(o.duration_s > 1.49 && o.duration_s < 1.51);
	assert_int_equal(o.verbose, 2);
	assert_true(o.post_step);
	assert_true(o.has_copy_stream);
	assert_int_equal(o.copy_stream, 0x5000);
	assert_int_equal(o.nsparse, 2);
	assert_true(o.has_compute_stream);
	assert_int_equal(o.compute_stream, 0);
	assert_int_equal(o.ringbuf_size, 65536);
	assert_int_equal(o.retprobes, NL_RET_NEVER);
	assert_true(o.wait_lib);
	assert_true(o.no_placement);
}

static void test_command_mode(void **state)
{
	struct nl_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, "--raw", "--", "prog", "-p", "3", NULL), 0);
	assert_false(o.no_placement); /* placement is the default */
	assert_int_equal(o.npids, 0);
	assert_int_equal(o.ncmd, 3);
	assert_string_equal(o.cmd[0], "prog");
	assert_string_equal(o.cmd[1], "-p"); /* the command's own flags are not ours */
	assert_false(o.check);
	/* --check works with every way of naming what to audit */
	assert_int_equal(parse(&o, err, "--check", "--", "python", "train.py", "--check", NULL), 0);
	assert_true(o.check);
	assert_int_equal(o.ncmd, 3);
	assert_int_equal(parse(&o, err, "--check", "-p", "5", NULL), 0);
	assert_true(o.check);
	assert_int_equal(parse(&o, err, "--check", "--replay", "run.rec", NULL), 0);
	assert_true(o.check);
	assert_int_equal(o.attach_at, 0); /* replayed as recorded */
	assert_int_equal(parse(&o, err, "--replay", "run.rec", "--attach-at", "120", NULL), 0);
	assert_int_equal(o.attach_at, 120);
	assert_false(o.strict_attach);
	assert_int_equal(parse(&o, err, "--strict-attach", "-p", "5", NULL), 0);
	assert_true(o.strict_attach);
	assert_int_equal(parse(&o, err, "--replay", "run.rec", "--attach-at", "9", "--strict-attach",
			       NULL), 0);
	assert_true(o.strict_attach);
}

static void test_help_version(void **state)
{
	struct nl_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, "--help", NULL), 1);
	assert_true(o.help);
	assert_int_equal(parse(&o, err, "--version", NULL), 1);
	assert_true(o.version);
	assert_false(o.version_json);
	assert_int_equal(parse(&o, err, "--version", "--format", "json", NULL), 1);
	assert_true(o.version_json);
	assert_int_equal(parse(&o, err, "--format", "json", "--version", NULL), 1);
	assert_true(o.version_json);
	assert_int_equal(parse(&o, err, "--version", "--format", "table", NULL), 1);
	assert_false(o.version_json);
	/* the lists -v and --lib add are text */
	assert_int_equal(parse(&o, err, "--version", "--format", "json", "-v", NULL), -EINVAL);
	assert_non_null(strstr(err, "--format json"));
	assert_int_equal(parse(&o, err, "--version", "--format", "json", "--lib", "x.so", NULL), -EINVAL);
	/* a run's --format json is the default, not a version request */
	assert_int_equal(parse(&o, err, "-p", "1", "--format", "json", NULL), 0);
	assert_false(o.version_json);
}

#define BAD(...)                                                            \
	do {                                                                \
		assert_int_equal(parse(&o, err, __VA_ARGS__, NULL), -EINVAL); \
		assert_true(strlen(err) > 0);                               \
		assert_null(strchr(err, '\n'));                             \
	} while (0)

static void test_nonsense(void **state)
{
	struct nl_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, NULL), -EINVAL); /* no target */
	assert_non_null(strstr(err, "no target"));
	BAD("-p", "10abc");
	BAD("-p", "");
	BAD("-p", "-5");
	BAD("-p", "0");
	BAD("-p", "99999999999999999999");
	BAD("-p", " 5");
	BAD("-p");
	BAD("--bogus");
	BAD("-x");
	BAD("-p", "1", "extra");
	BAD("-p", "1", "--", "cmd");
	BAD("-p", "1", "--format", "xml");
	BAD("-p", "1", "--duration", "0");
	BAD("-p", "1", "--duration", "-1");
	BAD("-p", "1", "--duration", "nan");
	BAD("-p", "1", "--duration", "inf");
	BAD("-p", "1", "--duration", "1s");
	BAD("-p", "1", "--ringbuf-size", "5000");
	BAD("-p", "1", "--ringbuf-size", "1024");
	BAD("-p", "1", "--retprobes", "maybe");
	BAD("-p", "1", "--copy-stream", "zz");
	BAD("-p", "1", "-q", "-v");
	BAD("-p", "1", "--no-audit", "--format", "table");
	BAD("-p", "1", "--no-audit", "--check");
	BAD("-p", "1", "--check=yes");
	BAD("-p", "1", "-o", "");
	BAD("-p", "1", "--poll", "0.001");
	BAD("-p", "1", "--attach-at", "3"); /* only with --replay */
	BAD("--replay", "run.rec", "--attach-at", "0");
	BAD("--replay", "run.rec", "--attach-at", "-2");
	BAD("--replay", "run.rec", "--attach-at", "x");
}

static void test_strict_numbers(void **state)
{
	uint64_t v;
	double d;

	(void)state;
	assert_int_equal(nl_parse_u64("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(nl_parse_u64("0x2a", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(nl_parse_u64("101", 0, 100, &v), -EINVAL);
	assert_int_equal(nl_parse_u64("4x", 0, 100, &v), -EINVAL);
	assert_int_equal(nl_parse_u64("", 0, 100, &v), -EINVAL);
	assert_int_equal(nl_parse_u64(NULL, 0, 100, &v), -EINVAL);
	assert_int_equal(nl_parse_seconds("0.25", 10, &d), 0);
	assert_int_equal(nl_parse_seconds("11", 10, &d), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pids_and_flags), cmocka_unit_test(test_command_mode),
		cmocka_unit_test(test_help_version),   cmocka_unit_test(test_nonsense),
		cmocka_unit_test(test_strict_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
