/* SPDX-License-Identifier: MIT */
/* Command-line options: parsed and validated here, no libbpf, unit-tested. */
#ifndef NANLOG_OPTIONS_H
#define NANLOG_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/policy.h" /* enum nl_retprobe_policy */

#define NL_MAX_PIDS 64
#define NL_MAX_LIBS 8
#define NL_MAX_ROLE_STREAMS 8

/* Exit codes, documented in --help and docs/usage.md. */
#define NL_EXIT_OK 0
#define NL_EXIT_FAIL 1
#define NL_EXIT_USAGE 2
#define NL_EXIT_INVALID 3     /* --check: the summary's evidence_valid is false */
#define NL_EXIT_CMD_FAILED 4  /* --check with -- CMD: the command failed */

enum nl_format { NL_FMT_JSON = 0, NL_FMT_TABLE };

struct nl_opts {
	pid_t pids[NL_MAX_PIDS];
	int npids;
	const char *libs[NL_MAX_LIBS]; /* --lib: explicit runtime library paths */
	int nlibs;
	bool wait_lib;        /* --wait-lib: a -p target may load HIP later */
	int select;           /* enum nl_select: --all, --cgroup, --container, --comm */
	const char *select_arg;
	bool raw;             /* --raw: print every call */
	bool no_audit;        /* --no-audit: only raw calls */
	const char *out_path; /* -o */
	bool force;           /* --force: overwrite an existing -o file */
	double duration_s;    /* --duration, 0 = until signal / targets exit */
	int verbose;          /* -v (repeatable) */
	bool quiet;           /* -q */
	enum nl_format format;
	enum nl_retprobe_policy retprobes;
	bool every_launch;    /* --every-launch: no counted launch runs */
	bool no_placement;    /* --no-placement: every probe at its symbol */
	uint64_t ringbuf_size; /* bytes, power of two >= page size */
	bool post_step;
	bool assume_nonblocking; /* --assume-nonblocking: unseen streams are NonBlocking */
	bool strict_attach;      /* --strict-attach: no accusation resting on the attach */
	bool check;           /* --check: the exit status says whether the evidence is valid */
	bool has_copy_stream, has_compute_stream;
	uint64_t copy_stream, compute_stream;
	uint64_t sparse_streams[NL_MAX_ROLE_STREAMS];
	int nsparse;
	double poll_interval_s; /* how often /proc is re-read for late libraries */
	const char *record_path; /* --record: the record stream to a file */
	const char *trace_path;  /* --trace: Chrome/Perfetto JSON trace */
	const char *replay_path; /* --replay: audit a recording offline */
	uint64_t attach_at;      /* --attach-at: replay as if attached at that record (1-based) */
	double heartbeat_s;      /* stderr heartbeat interval, 0 = off */
	const char *metrics_addr; /* --metrics ADDR:PORT (checked at parse time) */
	bool live;               /* --live: a terminal view on stderr */
	char **cmd;           /* after "--" */
	int ncmd;
	bool help, version;
	bool version_json;    /* --version --format json: one JSON line */
};

/*
 * Parse argv. Returns 0 to run, 1 when --help or --version was given (print
 * and exit 0), or -EINVAL with a one-line reason in err.
 */
int nl_opts_parse(int argc, char **argv, struct nl_opts *o, char *err, size_t errlen);

/* Strict number parsing: the whole string, within [min, max]. 0 or -EINVAL. */
int nl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int nl_parse_seconds(const char *s, double max, double *out);

extern const char nl_usage[];

#endif
