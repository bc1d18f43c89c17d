// SPDX-License-Identifier: MIT
/* Container and pod identity from /proc/PID/cgroup text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proc/cgroup.h"

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_systemd_containerd(void **state)
{
	struct nl_cgroup_id id;

	(void)state;
	assert_int_equal(nl_cgroup_parse("0::/kubepods.slice/kubepods-burstable.slice/"
					 "kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/"
					 "cri-containerd-" CID ".scope\n",
					 &id),
			 0);
	assert_string_equal(id.container_id, CID);
	assert_string_equal(id.runtime, "containerd");
	assert_string_equal(id.pod_uid, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");
	assert_true(nl_cgroup_within(id.path, "/kubepods.slice"));
	assert_true(nl_cgroup_within(id.path, "/kubepods.slice/"));
	assert_false(nl_cgroup_within(id.path, "/kubepods.sl"));
	assert_true(nl_cgroup_within(id.path, "/"));
}

static void test_cgroupfs_docker_crio(void **state)
{
	struct nl_cgroup_id id;

	(void)state;
	assert_int_equal(nl_cgroup_parse("0::/kubepods/besteffort/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/" CID "\n",
					 &id),
			 0);
	assert_string_equal(id.container_id, CID);
	assert_string_equal(id.pod_uid, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");
	assert_int_equal(nl_cgroup_parse("0::/system.slice/docker-" CID ".scope\n", &id), 0);
	assert_string_equal(id.runtime, "docker");
	assert_string_equal(id.pod_uid, "");
	assert_int_equal(nl_cgroup_parse("0::/machine.slice/crio-" CID ".scope\n", &id), 0);
	assert_string_equal(id.runtime, "crio");
	/* cgroup v1: the first line will do when there is no v2 line */
	assert_int_equal(nl_cgroup_parse("12:pids:/docker/" CID "\n11:cpu,cpuacct:/docker/" CID "\n", &id), 0);
	assert_string_equal(id.container_id, CID);
	assert_string_equal(id.runtime, "docker");
}

static void test_plain_and_bad(void **state)
{
	struct nl_cgroup_id id;

	(void)state;
	assert_int_equal(nl_cgroup_parse("0::/user.slice/user-0.slice/session-1.scope\n", &id), 0);
	assert_string_equal(id.container_id, "");
	assert_string_equal(id.pod_uid, "");
	assert_string_equal(id.path, "/user.slice/user-0.slice/session-1.scope");
	/* 63 hex digits or uppercase: not a container id */
	assert_int_equal(nl_cgroup_parse("0::/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", &id), 0);
	assert_string_equal(id.container_id, "");
	assert_int_equal(nl_cgroup_parse("garbage", &id), -EINVAL);
	assert_int_equal(nl_cgroup_parse("", &id), -EINVAL);
	assert_int_equal(nl_cgroup_parse(NULL, &id), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_systemd_containerd),
		cmocka_unit_test(test_cgroupfs_docker_crio),
		cmocka_unit_test(test_plain_and_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
