/* SPDX-License-Identifier: MIT */
/* Who a process is in a cluster: container and pod, from its cgroup path. */
#ifndef NANLOG_CGROUP_H
#define NANLOG_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

struct nl_cgroup_id {
	char path[1024];        /* the unified (cgroup v2) path, or the first v1 path */
	char container_id[65];  /* 64 hex digits (docker, containerd, cri-o), or "" */
	char pod_uid[37];       /* Kubernetes pod UID with dashes, or "" */
	char runtime[16];       /* "docker", "containerd", "crio", "podman", or "" */
};

/*
 * Parse the text of /proc/PID/cgroup. Returns 0 (fields that the path does
 * not show stay empty) or -EINVAL for text that is not a cgroup file.
 */
int nl_cgroup_parse(const char *text, struct nl_cgroup_id *out);

/* Whether a process's cgroup path is path or lies below it. */
bool nl_cgroup_within(const char *proc_path, const char *path);

#endif
