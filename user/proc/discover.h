/* SPDX-License-Identifier: MIT */
/*
 * Finding targets by what they are rather than by PID: every process that
 * maps a HIP runtime (--all), those of a cgroup (--cgroup) or a container
 * (--container), or those with a command name (--comm). A scan reads
 * /proc/PID/stat of every process (cheap) and looks further only at a
 * process it has not judged yet, or whose command or mappings changed since.
 * No libbpf: unit-tested on a fake /proc tree.
 */
#ifndef NANLOG_DISCOVER_H
#define NANLOG_DISCOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/cgroup.h"

enum nl_select { NL_SEL_NONE = 0, NL_SEL_ALL, NL_SEL_CGROUP, NL_SEL_CONTAINER, NL_SEL_COMM };

struct nl_discover_opts {
	const char *proc_root; /* "/proc" */
	int select;            /* enum nl_select */
	const char *arg;       /* cgroup path, container id (or a prefix of 12+), or comm */
	pid_t self;            /* never select this process */
};

/* What a scan found: a process to trace, with its identity. */
struct nl_found {
	pid_t pid;
	unsigned long long starttime;
	char comm[32];
	struct nl_cgroup_id cg;
	bool has_hip; /* maps libamdhip64.so* */
};

struct nl_discover;

struct nl_discover *nl_discover_new(const struct nl_discover_opts *o);
void nl_discover_free(struct nl_discover *d); /* accepts NULL */

/*
 * Scan once. For every selected process that maps a HIP runtime and was not
 * reported before, call found(). Returns how many were reported, or -errno.
 */
int nl_discover_scan(struct nl_discover *d, void (*found)(void *ctx, const struct nl_found *f),
		     void *ctx);

/* Forget pid (it exited, or it was refused): a new process there is judged anew. */
void nl_discover_forget(struct nl_discover *d, pid_t pid);

/*
 * comm, starttime (field 22) and vsize of ROOT/PID/stat; comm may be NULL.
 * -ESRCH when the process is gone, a zombie or a kernel thread.
 */
int nl_proc_stat(const char *root, pid_t pid, char *comm, size_t commlen,
		 unsigned long long *start, unsigned long long *vsize);

/* The identity of one process (stat, cgroup), for labelling -p targets too. */
int nl_identify(const char *proc_root, pid_t pid, struct nl_found *f);

#endif
