/* SPDX-License-Identifier: MIT */
/*
 * What the attach layer's files share (user/attach/README.md): the loader,
 * its targets and their libraries. loader.c: the skeleton, the ring buffer,
 * the counters; libs.c: a target's libraries and their probes; targets.c:
 * the targets map, adding and removing targets, finding a library.
 */
#ifndef NANLOG_ATTACH_LOADER_INT_H
#define NANLOG_ATTACH_LOADER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/bpf.h>

#include "attach/loader.h"

#define MAX_TARGET_LIBS 8

struct libent {
	int lib;
	dev_t dev;
	ino_t ino;
	char path[4096];
	struct bpf_link **links; /* one per symbol and direction (fallback) */
	int nlinks;
	int mfd[2];              /* uprobe_multi links: entry, return; -1 when unused */
};

struct target {
	pid_t pid;
	__u32 slot; /* its entry in the targets map, carried in its probes' cookies */
	bool retprobes;
	bool rescan_failed; /* said once, not every poll */
	const char *why;
	struct libent libs[MAX_TARGET_LIBS];
	int nlibs;
};

struct nl_loader {
	struct nanlog_bpf *skel;
	struct ring_buffer *rb;
	struct nl_loader_cb cb;
	struct nl_loader_conf o;
	struct target *targets;
	int ntargets, cap_targets;
	uint64_t slot_used[NL_MAX_TARGETS / 64]; /* targets-map slots held by a target */
	int ncpus;
	bool kernel_risk;
	bool multi; /* uprobe_multi links (Linux 6.6) instead of one perf link per symbol */
};

/* A message for the application's log callback (level as struct nl_loader_cb). */
void nl_attach_log(const struct nl_loader *l, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A record in the full layout goes on to the application. */
int nl_attach_deliver(struct nl_loader *l, const void *data, size_t size);

/* libs.c */
/* Attach a library given by path unless already done. map_ino: the inode
 * /proc/PID/maps gave for it, 0 for a path the user named. 0 or -errno. */
int nl_target_add_lib(struct nl_loader *l, struct target *t, const char *path, int lib,
		      uint64_t map_ino);
/* Attach the runtime libraries the target maps and the loader has not attached yet. */
int nl_target_scan_maps(struct nl_loader *l, struct target *t);
/* Close every probe link of the target. */
void nl_target_detach(struct target *t);

#endif
