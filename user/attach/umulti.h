/* SPDX-License-Identifier: MIT */
/*
 * uprobe_multi links (Linux 6.6, "bpf: Add uprobe_multi link"): one
 * BPF_LINK_CREATE attaches a program to many offsets of one file. Shared by
 * the loader and the bench's floor tracer (bench/floor.c).
 */
#ifndef NANLOG_LOADER_UMULTI_H
#define NANLOG_LOADER_UMULTI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* expected_attach_type of programs for these links */
#define NL_BPF_TRACE_UPROBE_MULTI 48

/*
 * Attach prog_fd at cnt file offsets of path (cookies may be NULL), as
 * return probes when ret, for pid only (0: every process). Returns the link
 * descriptor or -errno.
 */
int nl_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offs,
			 const uint64_t *cookies, unsigned cnt, bool ret, pid_t pid);

/* Does the kernel take uprobe_multi links? (NANLOG_NO_UPROBE_MULTI says no) */
bool nl_uprobe_multi_supported(void);

#endif
