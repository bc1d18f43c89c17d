/* SPDX-License-Identifier: MIT */
/* The running tool: targets, records in, raw lines and audits out. */
#ifndef NANLOG_APP_H
#define NANLOG_APP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "proc/discover.h"
#include "record/runs.h"
#include "engine/engine.h"
#include "out/live.h"
#include "attach/loader.h"
#include "out/metrics.h"
#include "out/metrics_http.h"
#include "app/options.h"
#include "record/recording.h"
#include "out/trace.h"

/* NL_APP_VERSION: written by the Makefile from scripts/version.sh, so that
 * --version, the man page and the package carry one version */
#include "version.h"

struct nl_app_target {
	pid_t pid;
	unsigned long long starttime; /* /proc/PID/stat field 22: tells a reused PID apart */
	bool alive;
	bool has_hip;
	char comm[32];
	char container_id[65]; /* from the cgroup path, "" when it does not show one */
	char pod_uid[37];
	struct nl_runs runs; /* its counted launch runs */
};

struct nl_app_sinks;

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
	uint64_t counted_launches;   /* launches counted in the kernel, repeated from their runs */
	uint64_t lost_inline;        /* losses the records told (lost_before) */
	bool loss_said;              /* nl_app_first_loss said it on stderr */
	uint64_t stats[NL_STAT_MAX]; /* last BPF counters seen */
	int probes_attached, retprobes_attached;
	int nmissing;
	int missing[NL_API_COUNT]; /* distinct missing api ids */
	struct nl_engine *engine;   /* NULL with --no-audit */
	struct nl_app_sinks *sinks;  /* app.c: where the audits go, from nl_app_init */
	uint64_t start_real_ns;      /* wall-clock anchor taken with start_ns */
	uint64_t last_ts_ns;         /* newest record time seen */
	struct nl_recording_writer *rec; /* --record */
	struct nl_trace *trace;      /* --trace */
	struct nl_discover *discover; /* --all, --cgroup, --container, --comm */
	struct nl_metrics *metrics;  /* --metrics: the registry ... */
	struct nl_metrics_http *http; /* ... and its endpoint */
	struct nl_live *live;        /* --live */
	bool summary_done;           /* the engine's summary was written: the fields below hold (--check) */
	bool evidence_valid;         /* its verdict on the run, for --check */
	uint32_t invalid_mask, missing_stages;
	int rec_err;
	bool replay;                 /* --replay: no loader, facts from the trailer */
	bool replay_incomplete;      /* the recording had no trailer: exit 1 after the audits */
	struct nl_recording_trailer replay_trailer;
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
/* A run that fails: its output, when JSON, ends with an "error" line saying
 * why (message: the stderr line's text). Nothing under --format table. */
void nl_app_error(struct nl_app *a, const char *message);

/* Events that live runs and replays share (and --record writes down). */
void nl_app_target_added(struct nl_app *a, uint32_t pid, uint64_t ts, bool mid_run,
			 const char *comm, const char *container_id, const char *pod_uid);
/* --metrics: serve the registry (before capabilities are dropped). */
int nl_app_metrics_start(struct nl_app *a);
/* Discovery modes: look for new targets now. */
void nl_app_discover(struct nl_app *a);
void nl_app_lost(struct nl_app *a, uint32_t pid, uint64_t count, uint64_t ts);
/* A loss: the first of the run says once on stderr that the audit stops
 * there, and what avoids it. */
void nl_app_first_loss(struct nl_app *a);
void nl_app_exited(struct nl_app *a, uint32_t pid, uint64_t ts);

/* --record: open the recording (after nl_app_init). */
int nl_app_record_start(struct nl_app *a, int argc, char **argv, const char *kernel,
			const char *version);
/* --version (and --format json, -v, --lib): print what the options ask for. 0 or -errno. */
struct nl_kernel_features;
int nl_app_print_version(struct nl_app *a, const struct nl_kernel_features *k);

/* --replay: run the recording through the app; then nl_app_finish. */
int nl_app_replay(struct nl_app *a);

#endif
