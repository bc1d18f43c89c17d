/* SPDX-License-Identifier: MIT */
/*
 * A stub of the attach layer for the app's unit tests (test_app.c): the
 * functions of user/attach/ that user/app/ calls, without BPF or root. It
 * keeps what it was asked, in order, and answers as the loader's contract
 * (user/attach/loader.h) says: -EEXIST for a process it traces already,
 * -ENOENT for one that maps no HIP runtime when HIP is required.
 */
#ifndef NANLOG_STUB_LOADER_H
#define NANLOG_STUB_LOADER_H

#include <stdint.h>
#include <sys/types.h>

#include "attach/loader.h"

#define STUB_MAX_PIDS 128

struct stub_loader {
	char log[4096];              /* "add 12 hip=1 paths=0;remove 12;rescan;..." */
	pid_t hip[STUB_MAX_PIDS];    /* the processes that map a HIP runtime */
	int nhip;
	pid_t traced[STUB_MAX_PIDS]; /* added and not removed */
	int ntraced;
	uint64_t stats[NL_STAT_MAX]; /* what nl_loader_stats answers */
	int caps_raised;             /* nl_caps_raise minus nl_caps_lower */
};

extern struct stub_loader stub;

/* Everything forgotten; the handle to put in struct nl_app's l. */
struct nl_loader *stub_loader_reset(void);
/* pid maps a HIP runtime. */
void stub_loader_hip(pid_t pid);

#endif
