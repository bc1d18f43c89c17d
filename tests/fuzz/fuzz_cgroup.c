// SPDX-License-Identifier: MIT
/*
 * nl_cgroup_parse on /proc/PID/cgroup text, and nl_cgroup_within on the path
 * it found against its own prefixes.
 */
#include <ctype.h>
#include <errno.h>

#include "proc/cgroup.h"
#include "fuzz.h"

static bool lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* The UID as the path has it (dashes or underscores), not part of a longer run. */
static bool uid_in_path(const char *path, const char *uid)
{
	for (const char *p = strstr(path, "pod"); p; p = strstr(p + 1, "pod")) {
		const char *u = p + 3;
		int n = 0;

		while (n < 36 && (u[n] == uid[n] || (uid[n] == '-' && u[n] == '_')))
			n++;
		if (n == 36 && !isxdigit((unsigned char)u[36]) && u[36] != '-' && u[36] != '_')
			return true;
	}
	return false;
}

static void check_id(const struct nl_cgroup_id *id)
{
	static const char *const runtimes[] = { "", "docker", "containerd", "crio", "podman" };
	size_t n = strnlen(id->container_id, sizeof(id->container_id));
	bool known = false;

	FUZZ_CHECK(strnlen(id->path, sizeof(id->path)) < sizeof(id->path));
	FUZZ_CHECK(n == 0 || (n == 64 && lower_hex(id->container_id, 64)));
	n = strnlen(id->pod_uid, sizeof(id->pod_uid));
	FUZZ_CHECK(n == 0 || n == 36);
	if (n == 36) {
		for (int i = 0; i < 36; i++)
			FUZZ_CHECK((i == 8 || i == 13 || i == 18 || i == 23) ? id->pod_uid[i] == '-' :
									      isxdigit((unsigned char)id->pod_uid[i]));
		FUZZ_CHECK(uid_in_path(id->path, id->pod_uid));
	}
	FUZZ_CHECK(strnlen(id->runtime, sizeof(id->runtime)) < sizeof(id->runtime));
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		known |= strcmp(id->runtime, runtimes[i]) == 0;
	FUZZ_CHECK(known);
	/* a runtime is only named with a container */
	FUZZ_CHECK(!id->runtime[0] || id->container_id[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strdup(data, size);
	struct nl_cgroup_id *id = malloc(sizeof(*id));
	int ret;

	FUZZ_CHECK(id);
	ret = nl_cgroup_parse(text, id);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL);
	if (ret == 0) {
		char prefix[sizeof(id->path)];

		check_id(id);
		FUZZ_CHECK(nl_cgroup_within(id->path, "/"));
		/* every ancestor of the path holds it */
		for (size_t i = 1; id->path[0] == '/' && id->path[i]; i++) {
			if (id->path[i] != '/')
				continue;
			memcpy(prefix, id->path, i);
			prefix[i] = '\0';
			FUZZ_CHECK(nl_cgroup_within(id->path, prefix));
		}
		if (id->path[0])
			FUZZ_CHECK(nl_cgroup_within(id->path, id->path));
	}
	/* the input text as a path, both ways round: never reads past either string */
	(void)nl_cgroup_within(text, id->path);
	if (*text)
		(void)nl_cgroup_within(id->path, text);
	free(id);
	free(text);
	return 0;
}
