/* SPDX-License-Identifier: MIT */
/*
 * The BPF side of the tool: load the skeleton, attach the probes of the API
 * table to each target's HIP and RCCL libraries, poll the ring buffer.
 * Lifecycle: nl_loader_open -> nl_loader_add_target... -> nl_loader_poll...
 * -> nl_loader_close (accepts NULL). Functions return 0 or -errno.
 */
#ifndef NANLOG_LOADER_H
#define NANLOG_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nanlog_apis.h"
#include "nanlog_rec.h"
#include "proc/policy.h"

/* What one attach of one library into one target did. */
struct nl_attach_report {
	pid_t pid;
	int lib;                /* NL_LIB_* */
	const char *path;       /* as the target sees it */
	const char *host_path;  /* what was attached (through /proc/PID/root) */
	int attached;           /* symbols with their entry probe */
	int retprobes;          /* of which also a return probe */
	int placed;             /* of which probed past an endbr64 (user/placement.h) */
	bool retprobes_allowed;
	const char *retprobe_why;
	int nmissing;
	int missing[NL_API_COUNT]; /* api ids not found in the library */
	uint64_t elapsed_ns;
};

struct nl_loader_cb {
	void *ctx;
	/* one raw ring-buffer record; return 0 or a negative value to stop polling */
	int (*record)(void *ctx, const void *data, size_t size);
	void (*attached)(void *ctx, const struct nl_attach_report *r);
	void (*log)(void *ctx, int level, const char *msg); /* level 0 err, 1 info, 2 debug */
};

struct nl_loader;

/* What the loader is told by the command line (the app's options). */
struct nl_loader_conf {
	enum nl_retprobe_policy retprobes; /* --retprobes */
	bool every_launch;                 /* --every-launch: no counted launch runs */
	bool no_placement;                 /* --no-placement: every probe at its symbol */
	uint64_t ringbuf_size;             /* bytes, power of two >= page size */
};

int nl_loader_open(struct nl_loader **out, const struct nl_loader_conf *conf,
		   const struct nl_loader_cb *cb);
void nl_loader_close(struct nl_loader *l);

/*
 * Start tracing pid. Libraries come from /proc/PID/maps (through
 * /proc/PID/root) and from explicit paths. With require_hip, a target that
 * maps no HIP runtime and has no explicit path is refused with -ENOENT.
 */
int nl_loader_add_target(struct nl_loader *l, pid_t pid, const char *const *paths, int npaths,
			 bool require_hip);
/* Stop tracing pid: probes detached, filter entry removed. */
void nl_loader_remove_target(struct nl_loader *l, pid_t pid);
/* At the end of a run: no target is traced any more, and the launches their
 * open counted runs hold are handed to the record callback. */
void nl_loader_untrace_all(struct nl_loader *l);

/* Re-read every target's maps and attach libraries loaded since. */
int nl_loader_rescan(struct nl_loader *l);

/* Poll the ring buffer for up to timeout_ms; returns records handled or -errno. */
int nl_loader_poll(struct nl_loader *l, int timeout_ms);
/* Consume whatever is in the ring buffer now. */
int nl_loader_drain(struct nl_loader *l);

/* Sum of the per-CPU BPF counters (enum nl_stat). */
int nl_loader_stats(struct nl_loader *l, uint64_t out[NL_STAT_MAX]);

/* Number of probe links currently attached, all targets. */
int nl_loader_links(const struct nl_loader *l);
/* Whether the probes are perf links, one per symbol (no uprobe_multi: Linux before 6.6). */
bool nl_loader_perf_links(const struct nl_loader *l);

/* Resolve a library for a command not started yet (-- mode). */
int nl_find_library(const char *name_prefix, char *out, size_t outlen);

#endif
