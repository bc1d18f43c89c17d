// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/discover.h"
#include "out/metrics.h"
#include "app/options.h"

const char nl_usage[] =
	"Usage: nanlog-bpf [options] -p PID [-p PID ...]\n"
	"       nanlog-bpf [options] -- CMD [ARGS...]\n"
	"\n"
	"Attach to running ROCm processes (or start CMD) and audit, batch by batch,\n"
	"whether copy, sparse and forward stages are ordered by event edges.\n"
	"\n"
	"Targets:\n"
	"  -p, --pid PID            trace a running process (repeatable)\n"
	"      --lib PATH           use this libamdhip64/librccl instead of the one\n"
	"                           found in /proc/PID/maps (repeatable)\n"
	"      --wait-lib           accept a -p target that has not loaded HIP yet\n"
	"                           and attach when it does\n"
	"      --all                every process that maps a HIP runtime, now and\n"
	"                           later (node agent)\n"
	"      --cgroup PATH        the processes of a cgroup (v2 path), now and later\n"
	"      --container ID       the processes of a container (id or 12+ digit prefix)\n"
	"      --comm NAME          processes with this command name, waiting for them\n"
	"Output:\n"
	"  -o, --output FILE        write to FILE instead of stdout (never through a\n"
	"                           symlink; an existing file needs --force)\n"
	"      --force              overwrite an existing output file\n"
	"      --raw                also print every HIP/RCCL call as JSON\n"
	"      --no-audit           print only the raw calls (implies --raw)\n"
	"      --format json|table  audit format (default json: JSON Lines)\n"
	"      --post-step          check every stage completed by the end of its tick\n"
	"      --trace FILE         also write a Chrome/Perfetto JSON trace to FILE\n"
	"      --record FILE        also write the record stream to FILE (binary)\n"
	"      --metrics ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics\n"
	"                           (ADDR defaults to 127.0.0.1; port 0 picks one)\n"
	"      --live               a terminal view on stderr, refreshed every second\n"
	"      --replay FILE        audit a recording offline (no root, no target)\n"
	"      --attach-at N        with --replay: as if attached by pid at its Nth record\n"
	"      --check              exit 3 when the summary's evidence_valid is false\n"
	"                           (with -- CMD: 4 when CMD fails; docs/usage.md)\n"
	"Roles (stream handles, e.g. 0x5581...; default: inferred):\n"
	"      --copy-stream H      --sparse-stream H (repeatable)   --compute-stream H\n"
	"      --assume-nonblocking streams created before tracing are NonBlocking, as\n"
	"                           PyTorch creates them (default: a verdict resting on\n"
	"                           it is skipped pretrace_stream; docs/usage.md)\n"
	"      --strict-attach      attached mid-run, accuse no batch whose verdict rests\n"
	"                           on how many batches were in flight at the attach\n"
	"                           (skipped attach_offset instead; docs/usage.md)\n"
	"Run:\n"
	"  -d, --duration SEC       stop after SEC seconds\n"
	"      --ringbuf-size BYTES ring buffer size (power of two, default 4194304)\n"
	"      --every-launch       one record per kernel launch (default: a run of\n"
	"                           launches on one stream is counted in the kernel)\n"
	"      --no-placement       probe every symbol at its first byte, not past\n"
	"                           an endbr64 (docs/performance.md)\n"
	"      --retprobes auto|force|never\n"
	"                           return probes: auto = not on a seccomp-filtered\n"
	"                           target on kernels 6.11-6.13 (docs/usage.md)\n"
	"      --poll SEC           how often /proc is re-read for new libraries\n"
	"                           and exited targets (default 0.25)\n"
	"      --heartbeat SEC      progress line on stderr every SEC seconds\n"
	"                           (default 60; 0 = never)\n"
	"  -v, --verbose            explain attach decisions (repeat for more)\n"
	"  -q, --quiet              no diagnostics but errors\n"
	"      --version            version and probed kernel features; with --lib PATH,\n"
	"                           which API-table entries that library exports (-v: each);\n"
	"                           with --format json, one JSON line\n"
	"  -h, --help               this text\n"
	"\n"
	"Exit status: 0 success, 1 runtime failure, 2 usage error; with --check\n"
	"also 3 evidence not valid, 4 the command failed.\n";

enum {
	OPT_LIB = 256,
	OPT_WAIT_LIB,
	OPT_ALL,
	OPT_CGROUP,
	OPT_CONTAINER,
	OPT_COMM,
	OPT_RAW,
	OPT_NO_AUDIT,
	OPT_FORCE,
	OPT_FORMAT,
	OPT_POST_STEP,
	OPT_ASSUME_NONBLOCKING,
	OPT_STRICT_ATTACH,
	OPT_COPY,
	OPT_SPARSE,
	OPT_COMPUTE,
	OPT_RINGBUF,
	OPT_RETPROBES,
	OPT_EVERY_LAUNCH,
	OPT_NO_PLACEMENT,
	OPT_POLL,
	OPT_VERSION,
	OPT_RECORD,
	OPT_REPLAY,
	OPT_ATTACH_AT,
	OPT_TRACE,
	OPT_METRICS,
	OPT_LIVE,
	OPT_HEARTBEAT,
	OPT_CHECK,
};

static const struct option longopts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "lib", required_argument, NULL, OPT_LIB },
	{ "wait-lib", no_argument, NULL, OPT_WAIT_LIB },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "container", required_argument, NULL, OPT_CONTAINER },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "no-audit", no_argument, NULL, OPT_NO_AUDIT },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "post-step", no_argument, NULL, OPT_POST_STEP },
	{ "assume-nonblocking", no_argument, NULL, OPT_ASSUME_NONBLOCKING },
	{ "strict-attach", no_argument, NULL, OPT_STRICT_ATTACH },
	{ "copy-stream", required_argument, NULL, OPT_COPY },
	{ "sparse-stream", required_argument, NULL, OPT_SPARSE },
	{ "compute-stream", required_argument, NULL, OPT_COMPUTE },
	{ "duration", required_argument, NULL, 'd' },
	{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF },
	{ "retprobes", required_argument, NULL, OPT_RETPROBES },
	{ "every-launch", no_argument, NULL, OPT_EVERY_LAUNCH },
	{ "no-placement", no_argument, NULL, OPT_NO_PLACEMENT },
	{ "poll", required_argument, NULL, OPT_POLL },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "record", required_argument, NULL, OPT_RECORD },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "live", no_argument, NULL, OPT_LIVE },
	{ "replay", required_argument, NULL, OPT_REPLAY },
	{ "attach-at", required_argument, NULL, OPT_ATTACH_AT },
	{ "heartbeat", required_argument, NULL, OPT_HEARTBEAT },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int nl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	/* strtoull skips any leading blank and takes a sign ("\t-1" is 2^64 - 1) */
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int nl_parse_seconds(const char *s, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int nl_opts_parse(int argc, char **argv, struct nl_opts *o, char *err, size_t errlen)
{
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->ringbuf_size = 4u << 20;
	o->poll_interval_s = 0.25;
	o->heartbeat_s = 60;
	if (errlen)
		err[0] = '\0';
	optind = 0; /* GNU: full re-initialisation, so the parser can run twice */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:o:d:vqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (o->npids >= NL_MAX_PIDS)
				return fail(err, errlen, "too many -p (at most %d)", NL_MAX_PIDS);
			if (nl_parse_u64(optarg, 1, 4194304, &v))
				return fail(err, errlen, "-p: '%s' is not a process id", optarg);
			o->pids[o->npids++] = (pid_t)v;
			break;
		case OPT_LIB:
			if (o->nlibs >= NL_MAX_LIBS)
				return fail(err, errlen, "too many --lib (at most %d)", NL_MAX_LIBS);
			if (!*optarg)
				return fail(err, errlen, "--lib: empty path");
			o->libs[o->nlibs++] = optarg;
			break;
		case OPT_WAIT_LIB:
			o->wait_lib = true;
			break;
		case OPT_ALL:
		case OPT_CGROUP:
		case OPT_CONTAINER:
		case OPT_COMM: {
			int sel = c == OPT_ALL ? NL_SEL_ALL : c == OPT_CGROUP ? NL_SEL_CGROUP :
				  c == OPT_CONTAINER ? NL_SEL_CONTAINER : NL_SEL_COMM;

			if (o->select)
				return fail(err, errlen, "--all, --cgroup, --container and --comm exclude each other");
			o->select = sel;
			o->select_arg = c == OPT_ALL ? NULL : optarg;
			if (sel == NL_SEL_CGROUP && optarg[0] != '/')
				return fail(err, errlen, "--cgroup: '%s' is not a cgroup path (starts with /)", optarg);
			if (sel == NL_SEL_CONTAINER) {
				size_t n = strlen(optarg);

				if (n < 12 || n > 64 || strspn(optarg, "0123456789abcdef") != n)
					return fail(err, errlen,
						    "--container: '%s' is not a container id (12 to 64 lowercase hex digits)",
						    optarg);
			}
			if (sel == NL_SEL_COMM && (!*optarg || strlen(optarg) > 15 || strchr(optarg, '/')))
				return fail(err, errlen,
					    "--comm: '%s' is not a command name (1 to 15 characters, no '/')", optarg);
			break;
		}
		case 'o':
			if (!*optarg)
				return fail(err, errlen, "-o: empty path");
			o->out_path = optarg;
			break;
		case OPT_FORCE:
			o->force = true;
			break;
		case OPT_RAW:
			o->raw = true;
			break;
		case OPT_NO_AUDIT:
			o->raw = o->no_audit = true;
			break;
		case OPT_FORMAT:
			o->version_json = strcmp(optarg, "json") == 0;
			if (strcmp(optarg, "json") == 0)
				o->format = NL_FMT_JSON;
			else if (strcmp(optarg, "table") == 0)
				o->format = NL_FMT_TABLE;
			else
				return fail(err, errlen, "--format: '%s' is not json or table", optarg);
			break;
		case OPT_POST_STEP:
			o->post_step = true;
			break;
		case OPT_ASSUME_NONBLOCKING:
			o->assume_nonblocking = true;
			break;
		case OPT_STRICT_ATTACH:
			o->strict_attach = true;
			break;
		case OPT_COPY:
		case OPT_COMPUTE:
		case OPT_SPARSE:
			if (nl_parse_u64(optarg, 0, UINT64_MAX, &v))
				return fail(err, errlen, "%s: '%s' is not a stream handle",
					    c == OPT_COPY ? "--copy-stream" :
					    c == OPT_COMPUTE ? "--compute-stream" : "--sparse-stream",
					    optarg);
			if (c == OPT_COPY) {
				o->has_copy_stream = true;
				o->copy_stream = v;
			} else if (c == OPT_COMPUTE) {
				o->has_compute_stream = true;
				o->compute_stream = v;
			} else {
				if (o->nsparse >= NL_MAX_ROLE_STREAMS)
					return fail(err, errlen, "too many --sparse-stream (at most %d)",
						    NL_MAX_ROLE_STREAMS);
				o->sparse_streams[o->nsparse++] = v;
			}
			break;
		case 'd':
			if (nl_parse_seconds(optarg, 31536000.0, &o->duration_s))
				return fail(err, errlen, "--duration: '%s' is not a positive number of seconds", optarg);
			break;
		case OPT_RINGBUF:
			if (nl_parse_u64(optarg, 4096, 1ull << 30, &v) || (v & (v - 1)))
				return fail(err, errlen,
					    "--ringbuf-size: '%s' is not a power of two between 4096 and 1073741824",
					    optarg);
			o->ringbuf_size = v;
			break;
		case OPT_EVERY_LAUNCH:
			o->every_launch = true;
			break;
		case OPT_NO_PLACEMENT:
			o->no_placement = true;
			break;
		case OPT_RETPROBES:
			if (strcmp(optarg, "auto") == 0)
				o->retprobes = NL_RET_AUTO;
			else if (strcmp(optarg, "force") == 0)
				o->retprobes = NL_RET_FORCE;
			else if (strcmp(optarg, "never") == 0)
				o->retprobes = NL_RET_NEVER;
			else
				return fail(err, errlen, "--retprobes: '%s' is not auto, force or never", optarg);
			break;
		case OPT_POLL:
			if (nl_parse_seconds(optarg, 60.0, &o->poll_interval_s) || o->poll_interval_s < 0.01)
				return fail(err, errlen, "--poll: '%s' is not a number of seconds in [0.01, 60]", optarg);
			break;
		case OPT_RECORD:
		case OPT_REPLAY:
		case OPT_TRACE:
			if (!*optarg)
				return fail(err, errlen, "%s: empty path",
					    c == OPT_RECORD ? "--record" : c == OPT_TRACE ? "--trace" : "--replay");
			if (c == OPT_RECORD)
				o->record_path = optarg;
			else if (c == OPT_TRACE)
				o->trace_path = optarg;
			else
				o->replay_path = optarg;
			break;
		case OPT_ATTACH_AT:
			if (nl_parse_u64(optarg, 1, UINT64_MAX, &o->attach_at))
				return fail(err, errlen, "--attach-at: '%s' is not a record number (1 or more)",
					    optarg);
			break;
		case OPT_METRICS: {
			struct nl_metrics_addr ma;

			if (nl_metrics_parse_addr(optarg, &ma, err, errlen))
				return -EINVAL;
			o->metrics_addr = optarg;
			break;
		}
		case OPT_LIVE:
			o->live = true;
			break;
		case OPT_CHECK:
			o->check = true;
			break;
		case OPT_HEARTBEAT:
			if (strcmp(optarg, "0") == 0)
				o->heartbeat_s = 0;
			else if (nl_parse_seconds(optarg, 86400.0, &o->heartbeat_s))
				return fail(err, errlen, "--heartbeat: '%s' is not a number of seconds", optarg);
			break;
		case 'v':
			o->verbose++;
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_VERSION:
			o->version = true;
			break;
		case 'h':
			o->help = true;
			break;
		case ':':
			return fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt && optopt < 256)
				return fail(err, errlen, "unknown option '-%c' (see --help)", optopt);
			return fail(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (o->version && o->version_json && (o->verbose || o->nlibs))
		return fail(err, errlen, "--version --format json: -v and --lib print text lists, "
				       "not JSON (drop them, or --format)");
	o->version_json &= o->version;
	if (o->help || o->version)
		return 1;
	if (optind < argc) {
		/* getopt stops at "--" (consumed) or at the first non-option ('+'). */
		if (strcmp(argv[optind - 1], "--") != 0)
			return fail(err, errlen, "unexpected argument '%s' (a command goes after --)",
				    argv[optind]);
		o->cmd = &argv[optind];
		o->ncmd = argc - optind;
	}
	if (o->replay_path) {
		if (o->npids || o->ncmd || o->nlibs || o->wait_lib)
			return fail(err, errlen, "--replay reads a recording: no -p, -- CMD, --lib or --wait-lib");
		if (o->record_path)
			return fail(err, errlen, "--replay and --record cannot be combined");
		if (o->select)
			return fail(err, errlen, "--replay reads a recording: no --all, --cgroup, --container or --comm");
	} else if (o->attach_at) {
		return fail(err, errlen, "--attach-at replays a recording: it needs --replay FILE");
	} else if (o->npids == 0 && o->ncmd == 0 && !o->select) {
		return fail(err, errlen, "no target: give -p PID, -- CMD, --all, --cgroup, --container or --comm (see --help)");
	}
	if ((o->npids != 0) + (o->ncmd != 0) + (o->select != 0) > 1)
		return fail(err, errlen, "choose one way of naming targets: -p, -- CMD, or a selection (--all ...)");
	if (o->quiet && o->verbose)
		return fail(err, errlen, "-q and -v cannot be combined");
	if (o->no_audit && o->format == NL_FMT_TABLE)
		return fail(err, errlen, "--format table needs the audit (drop --no-audit)");
	if (o->no_audit && o->check)
		return fail(err, errlen, "--check needs the audit (drop --no-audit)");
	return 0;
}
