// SPDX-License-Identifier: MIT
/*
 * Bugs the fuzzing harnesses found (tests/fuzz, docs/fuzzing.md), each kept
 * as a plain unit test; the inputs themselves are in tests/fuzz/crashes/.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proc/cgroup.h"
#include "app/options.h"

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* fuzz_options: strtoull and strtod skip any leading blank and take a sign,
 * so "\t-1" was a stream handle (2^64 - 1) and "\n5" a pid. */
static void test_numbers_start_with_a_digit(void **state)
{
	uint64_t v = 7;
	double d = 7;

	(void)state;
	assert_int_equal(nl_parse_u64("\t-1", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(nl_parse_u64("\n5", 1, 10, &v), -EINVAL);
	assert_int_equal(nl_parse_u64("\r0", 0, 10, &v), -EINVAL);
	assert_int_equal(nl_parse_u64("\v+5", 0, 10, &v), -EINVAL);
	assert_int_equal(v, 7);
	assert_int_equal(nl_parse_u64("0x10", 0, 100, &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(nl_parse_seconds("\t0.5", 60, &d), -EINVAL);
	assert_int_equal(nl_parse_seconds("\n1", 60, &d), -EINVAL);
	assert_true(d == 7);
	assert_int_equal(nl_parse_seconds("0.5", 60, &d), 0);
	assert_true(d == 0.5);
}

/* fuzz_cgroup: "pod" and any 36 of [0-9a-fA-F-_] with dashes in the right
 * places was a pod UID ("pod------..."), and a longer hex run was cut to one. */
static void test_pod_uid_is_a_uid(void **state)
{
	struct nl_cgroup_id id;

	(void)state;
	assert_int_equal(nl_cgroup_parse("0::/kubepods/pod------------------------------------/x\n", &id), 0);
	assert_string_equal(id.pod_uid, "");
	assert_int_equal(nl_cgroup_parse("0::/kubepods/pod-_________-____-____-____-____________/x\n", &id), 0);
	assert_string_equal(id.pod_uid, "");
	assert_int_equal(nl_cgroup_parse("0::/kubepods/besteffort/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f90123/" CID "\n",
					 &id),
			 0);
	assert_string_equal(id.pod_uid, "");
	assert_string_equal(id.container_id, CID);
	/* the real ones still are */
	assert_int_equal(nl_cgroup_parse("0::/kubepods/besteffort/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/" CID "\n",
					 &id),
			 0);
	assert_string_equal(id.pod_uid, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");
	assert_int_equal(nl_cgroup_parse("0::/kubepods.slice/kubepods-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/"
					 "cri-containerd-" CID ".scope\n",
					 &id),
			 0);
	assert_string_equal(id.pod_uid, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers_start_with_a_digit),
		cmocka_unit_test(test_pod_uid_is_a_uid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
