// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "proc/cgroup.h"

static bool is_hex64(const char *s)
{
	for (int i = 0; i < 64; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* The last 64-hex-digit run in a path component, with the runtime its prefix names. */
static void find_container(const char *path, struct nl_cgroup_id *id)
{
	static const struct {
		const char *prefix, *runtime;
	} pre[] = {
		{ "docker-", "docker" }, { "cri-containerd-", "containerd" }, { "crio-", "crio" },
		{ "libpod-", "podman" }, { "containerd-", "containerd" },
	};
	const char *p = path;

	while (p && *p) {
		const char *comp = *p == '/' ? p + 1 : p;
		const char *end = strchr(comp, '/');
		size_t len = end ? (size_t)(end - comp) : strlen(comp);
		const char *rt = "";
		const char *c = comp;

		for (size_t i = 0; i < NL_ARRAY_SIZE(pre); i++) {
			size_t pl = strlen(pre[i].prefix);

			if (len > pl && strncmp(comp, pre[i].prefix, pl) == 0) {
				c = comp + pl;
				rt = pre[i].runtime;
				break;
			}
		}
		if ((size_t)(c - comp) + 64 <= len && is_hex64(c) &&
		    ((size_t)(c - comp) + 64 == len || strncmp(c + 64, ".scope", 6) == 0)) {
			memcpy(id->container_id, c, 64);
			id->container_id[64] = '\0';
			snprintf(id->runtime, sizeof(id->runtime), "%s",
				 *rt ? rt : (strstr(path, "/docker/") ? "docker" : ""));
		}
		p = end;
	}
}

/* 8-4-4-4-12 hex digits, dashes between */
static bool is_uid(const char *u)
{
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? u[i] != '-' : !isxdigit((unsigned char)u[i]))
			return false;
	}
	return true;
}

/* "pod" followed by a UID, with dashes (cgroupfs driver) or underscores (systemd). */
static void find_pod(const char *path, struct nl_cgroup_id *id)
{
	const char *p = path;

	while ((p = strstr(p, "pod"))) {
		const char *u = p + 3;
		char uid[37];
		int n = 0;

		for (; n < 36 && (isxdigit((unsigned char)u[n]) || u[n] == '-' || u[n] == '_'); n++)
			uid[n] = u[n] == '_' ? '-' : u[n];
		uid[n] = '\0';
		/* the whole run is the UID: a longer one is not cut to fit */
		if (n == 36 && is_uid(uid) && !isxdigit((unsigned char)u[36]) && u[36] != '-' &&
		    u[36] != '_') {
			memcpy(id->pod_uid, uid, sizeof(uid));
			return;
		}
		p = u;
	}
}

int nl_cgroup_parse(const char *text, struct nl_cgroup_id *out)
{
	const char *line = text, *chosen = NULL;
	size_t chosen_len = 0;

	memset(out, 0, sizeof(*out));
	if (!text)
		return -EINVAL;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;

		if (!c1 || !c2 || c2[1] != '/')
			return -EINVAL;
		/* the v2 line is "0::/path"; otherwise the first v1 line will do */
		if ((c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) || !chosen) {
			chosen = c2 + 1;
			chosen_len = len - (size_t)(c2 + 1 - line);
		}
		line = nl ? nl + 1 : NULL;
	}
	if (!chosen)
		return -EINVAL;
	if (chosen_len >= sizeof(out->path))
		chosen_len = sizeof(out->path) - 1;
	memcpy(out->path, chosen, chosen_len);
	out->path[chosen_len] = '\0';
	find_container(out->path, out);
	find_pod(out->path, out);
	return 0;
}

bool nl_cgroup_within(const char *proc_path, const char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n == 1 && path[0] == '/')
		return true;
	return strncmp(proc_path, path, n) == 0 && (proc_path[n] == '\0' || proc_path[n] == '/');
}
