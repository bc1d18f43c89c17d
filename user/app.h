/* SPDX-License-Identifier: MIT */
/* The running tool: targets, records in, raw lines and audits out. */
#ifndef NANLOG_APP_H
#define NANLOG_APP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "engine.h"
#include "loader.h"
#include "options.h"

#define NL_APP_SCHEMA 1

struct nl_app_target {
	pid_t pid;
	unsigned long long starttime; /* /proc/PID/stat field 22: tells a reused PID apart */
	bool alive;
	bool has_hip;
	char comm[32];
};

struct nl_app {
	struct nl_opts o;
	FILE *out;
	struct nl_loader *l;
	void (*diag)(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	struct nl_app_target targets[NL_MAX_PIDS];
	int ntargets, ntargets_alive;
	pid_t child;       /* -- mode */
	bool child_reaped;
	int child_status;
	int go_fd;
	int write_err;     /* first output error, -errno */
	uint64_t start_ns, attach_done_ns;
	uint64_t records, bad_records;
	uint64_t stats[NL_STAT_MAX]; /* last BPF counters seen */
	int probes_attached, retprobes_attached;
	int nmissing;
	int missing[NL_API_COUNT]; /* distinct missing api ids */
	struct nl_engine *engine;   /* NULL with --no-audit */
	struct nl_audit_table table; /* --format table state */
};

int nl_app_init(struct nl_app *a, uint64_t now_ns);
int nl_app_add_target(struct nl_app *a, pid_t pid, const char *const *paths, int npaths,
		      bool require_hip);
int nl_app_record(struct nl_app *a, const void *data, size_t size);
void nl_app_attached(struct nl_app *a, const struct nl_attach_report *r);
/* Periodic work: new libraries, exited targets, lost records. */
void nl_app_tick(struct nl_app *a, uint64_t now_ns);
/* Drain, final counters, summary. err is the run's outcome so far. */
void nl_app_finish(struct nl_app *a, uint64_t now_ns, int err);

#endif
