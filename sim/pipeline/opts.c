// SPDX-License-Identifier: MIT
/* Command line of the pipeline workload. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl.h"

const struct pl_wait_info pl_waits[W_COUNT] = {
	[W_B_DATA_DIST] = { "b_data_dist_wait", "M->D", "b", "copy->sparse", PAT_TORCHREC },
	[W_D_COMPUTE] = { "d_compute_wait", "D->C", "d", "sparse->forward", PAT_TORCHREC },
	/* Step d waits on everything step a did: dropping step a is harmless. */
	[W_A_COMPUTE] = { "a_compute_wait", "D->C", "a", NULL, PAT_TORCHREC },
	[W_SIMPLE_COMPUTE] = { "simple_compute_wait", "M->C", "a", "copy->forward", PAT_SIMPLE },
};

const char *const pl_stall_names[STALL_COUNT] = { "copy", "sparse" };

static const char usage[] =
	"usage: pipeline [options]\n"
	"  --batches N          batches to train (default 8)\n"
	"  --steps N            stop after N training steps, as a loop with a step limit\n"
	"                       over a longer dataloader does: the batches prefetched for\n"
	"                       steps that never come are never consumed (default --batches)\n"
	"  --depth 1|2          pipeline depth (torchrec only; default 2)\n"
	"  --pattern P          torchrec (TrainPipelineSparseDist) or simple (copy -> forward)\n"
	"  --drop WAIT@K        skip one named wait for batch K: b_data_dist_wait,\n"
	"                       d_compute_wait, a_compute_wait, simple_compute_wait\n"
	"  --stall STAGE@K:MS   copy or sparse producer of batch K takes MS ms longer\n"
	"  --exit-at K          _exit(3) in the iteration that runs forward K\n"
	"  --iter-sleep-ms MS   host time per iteration (default 1)\n"
	"  --mlp-layers N       dense layers after the lookup: N more hipLaunchKernel\n"
	"                       in a row on the compute stream in forward, N in\n"
	"                       backward (default 0; a real model has hundreds)\n"
	"  --watchdog-ms MS     collective watchdog period (default 10)\n"
	"  --torch              also PyTorch's own calls: record_stream events, loss.item(),\n"
	"                       per-thread stream launches, per-iteration timing events and\n"
	"                       the dense part replayed as a graph (torchrec only)\n"
	"  --seed N             content seed (default 1)\n"
	"  --gate-signal        print \"ready PID\", wait for SIGUSR1 before the first HIP call\n"
	"  --gate-file PATH     print \"ready PID\", wait until PATH exists\n"
	"  --gate-timeout-ms MS give up waiting at the gate (default 60000, 0 = never)\n"
	"  --truth FILE         write the ground truth (JSON Lines)\n"
	"exit: 0 ok, 1 failed HIP call or unexpected content check result, 2 usage, 3 --exit-at\n";

static int errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* Whole-string decimal in [lo, hi]; *end (if given) receives the stop point. */
static int parse_long(const char *s, long lo, long hi, long *out, const char **end)
{
	char *e;
	long v;

	if (!s || !*s || *s == ' ' || *s == '+')
		return -1;
	errno = 0;
	v = strtol(s, &e, 10);
	if (errno || e == s || v < lo || v > hi)
		return -1;
	if (end)
		*end = e;
	else if (*e)
		return -1;
	*out = v;
	return 0;
}

/* Whether arg's text before `at` is exactly name. */
static bool prefix_is(const char *arg, const char *at, const char *name)
{
	return strlen(name) == (size_t)(at - arg) && strncmp(arg, name, at - arg) == 0;
}

static int parse_drop(const char *arg, struct pl_opts *o, char *err, size_t len)
{
	const char *at = strchr(arg, '@');
	struct pl_fault *f;
	int w;

	if (o->ndrops == PL_MAX_FAULTS)
		return errf(err, len, "too many --drop (at most %d)", PL_MAX_FAULTS);
	if (!at)
		return errf(err, len, "--drop '%s': expected WAIT@K", arg);
	for (w = 0; w < W_COUNT && !prefix_is(arg, at, pl_waits[w].name); w++)
		;
	if (w == W_COUNT)
		return errf(err, len, "--drop '%s': unknown wait", arg);
	f = &o->drops[o->ndrops];
	if (parse_long(at + 1, 0, LONG_MAX, &f->batch, NULL))
		return errf(err, len, "--drop '%s': bad batch number", arg);
	f->what = w;
	f->ms = 0;
	o->ndrops++;
	return 0;
}

static int parse_stall(const char *arg, struct pl_opts *o, char *err, size_t len)
{
	const char *at = strchr(arg, '@'), *colon;
	struct pl_fault *f;
	int s;

	if (o->nstalls == PL_MAX_FAULTS)
		return errf(err, len, "too many --stall (at most %d)", PL_MAX_FAULTS);
	if (!at)
		return errf(err, len, "--stall '%s': expected copy@K:MS or sparse@K:MS", arg);
	for (s = 0; s < STALL_COUNT && !prefix_is(arg, at, pl_stall_names[s]); s++)
		;
	if (s == STALL_COUNT)
		return errf(err, len, "--stall '%s': stage must be copy or sparse", arg);
	f = &o->stalls[o->nstalls];
	if (parse_long(at + 1, 0, LONG_MAX, &f->batch, &colon) || *colon != ':' ||
	    parse_long(colon + 1, 1, 60000, &f->ms, NULL))
		return errf(err, len, "--stall '%s': expected %s@K:MS with MS in 1..60000", arg,
			    pl_stall_names[s]);
	f->what = s;
	o->nstalls++;
	return 0;
}

enum { O_BATCHES = 256, O_DEPTH, O_PATTERN, O_DROP, O_STALL, O_EXIT_AT, O_STEPS, O_SLEEP, O_MLP, O_WATCHDOG, O_TORCH,
       O_SEED, O_GATE_SIGNAL, O_GATE_FILE, O_GATE_TIMEOUT, O_TRUTH, O_HELP };

static const struct option longopts[] = {
	{ "batches", required_argument, NULL, O_BATCHES },
	{ "depth", required_argument, NULL, O_DEPTH },
	{ "pattern", required_argument, NULL, O_PATTERN },
	{ "drop", required_argument, NULL, O_DROP },
	{ "stall", required_argument, NULL, O_STALL },
	{ "exit-at", required_argument, NULL, O_EXIT_AT },
	{ "steps", required_argument, NULL, O_STEPS },
	{ "iter-sleep-ms", required_argument, NULL, O_SLEEP },
	{ "mlp-layers", required_argument, NULL, O_MLP },
	{ "watchdog-ms", required_argument, NULL, O_WATCHDOG },
	{ "torch", no_argument, NULL, O_TORCH },
	{ "seed", required_argument, NULL, O_SEED },
	{ "gate-signal", no_argument, NULL, O_GATE_SIGNAL },
	{ "gate-file", required_argument, NULL, O_GATE_FILE },
	{ "gate-timeout-ms", required_argument, NULL, O_GATE_TIMEOUT },
	{ "truth", required_argument, NULL, O_TRUTH },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

/* Checks that need every option: ranges against --batches, pattern fit. */
static int validate(struct pl_opts *o, bool depth_given, char *err, size_t len)
{
	if (o->pattern == PAT_SIMPLE) {
		if (depth_given && o->depth != 1)
			return errf(err, len, "--depth %d needs --pattern torchrec", o->depth);
		o->depth = 1;
		if (o->torch)
			return errf(err, len, "--torch needs --pattern torchrec");
	}
	for (int i = 0; i < o->ndrops; i++) {
		const struct pl_fault *f = &o->drops[i];

		if (pl_waits[f->what].pattern != o->pattern)
			return errf(err, len, "--drop %s does not exist in pattern %s",
				    pl_waits[f->what].name,
				    o->pattern == PAT_SIMPLE ? "simple" : "torchrec");
		if (f->batch >= o->batches)
			return errf(err, len, "--drop %s@%ld: batch out of range 0..%ld",
				    pl_waits[f->what].name, f->batch, o->batches - 1);
	}
	for (int i = 0; i < o->nstalls; i++) {
		const struct pl_fault *f = &o->stalls[i];

		if (f->what == STALL_SPARSE && o->pattern == PAT_SIMPLE)
			return errf(err, len, "--stall sparse needs --pattern torchrec");
		if (f->batch >= o->batches)
			return errf(err, len, "--stall %s@%ld: batch out of range 0..%ld",
				    pl_stall_names[f->what], f->batch, o->batches - 1);
	}
	if (o->steps > o->batches)
		return errf(err, len, "--steps %ld: more than --batches %ld", o->steps, o->batches);
	if (!o->steps)
		o->steps = o->batches;
	if (o->exit_at >= o->steps)
		return errf(err, len, "--exit-at %ld: batch out of range 0..%ld (the steps run)",
			    o->exit_at, o->steps - 1);
	return 0;
}

int pl_parse_opts(int argc, char **argv, struct pl_opts *o, char *err, size_t len)
{
	bool depth_given = false;
	long v;
	int c;

	*o = (struct pl_opts){ .pattern = PAT_TORCHREC, .depth = 2, .batches = 8, .exit_at = -1,
			       .iter_sleep_ms = 1, .watchdog_ms = 10, .seed = 1,
			       .gate_timeout_ms = 60000 };
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case O_BATCHES:
			if (parse_long(optarg, 1, 1000000, &o->batches, NULL))
				return errf(err, len, "--batches '%s': expected 1..1000000", optarg);
			break;
		case O_DEPTH:
			if (parse_long(optarg, 1, 2, &v, NULL))
				return errf(err, len, "--depth '%s': expected 1 or 2", optarg);
			o->depth = (int)v;
			depth_given = true;
			break;
		case O_PATTERN:
			if (strcmp(optarg, "torchrec") == 0)
				o->pattern = PAT_TORCHREC;
			else if (strcmp(optarg, "simple") == 0)
				o->pattern = PAT_SIMPLE;
			else
				return errf(err, len, "--pattern '%s': expected torchrec or simple",
					    optarg);
			break;
		case O_DROP:
			if (parse_drop(optarg, o, err, len))
				return -1;
			break;
		case O_STALL:
			if (parse_stall(optarg, o, err, len))
				return -1;
			break;
		case O_EXIT_AT:
			if (parse_long(optarg, 0, LONG_MAX, &o->exit_at, NULL))
				return errf(err, len, "--exit-at '%s': expected a batch number", optarg);
			break;
		case O_STEPS:
			if (parse_long(optarg, 1, 1000000, &o->steps, NULL))
				return errf(err, len, "--steps '%s': expected 1..1000000", optarg);
			break;
		case O_SLEEP:
			if (parse_long(optarg, 0, 10000, &o->iter_sleep_ms, NULL))
				return errf(err, len, "--iter-sleep-ms '%s': expected 0..10000", optarg);
			break;
		case O_MLP:
			if (parse_long(optarg, 0, 10000, &o->mlp_layers, NULL))
				return errf(err, len, "--mlp-layers '%s': expected 0..10000", optarg);
			break;
		case O_WATCHDOG:
			if (parse_long(optarg, 1, 1000, &o->watchdog_ms, NULL))
				return errf(err, len, "--watchdog-ms '%s': expected 1..1000", optarg);
			break;
		case O_TORCH:
			o->torch = true;
			break;
		case O_SEED:
			if (parse_long(optarg, 0, LONG_MAX, &v, NULL))
				return errf(err, len, "--seed '%s': expected a number >= 0", optarg);
			o->seed = (uint64_t)v;
			break;
		case O_GATE_SIGNAL:
			o->gate_signal = true;
			break;
		case O_GATE_FILE:
			if (!*optarg)
				return errf(err, len, "--gate-file: empty path");
			o->gate_file = optarg;
			break;
		case O_GATE_TIMEOUT:
			if (parse_long(optarg, 0, 86400000, &o->gate_timeout_ms, NULL))
				return errf(err, len, "--gate-timeout-ms '%s': expected 0..86400000",
					    optarg);
			break;
		case O_TRUTH:
			if (!*optarg)
				return errf(err, len, "--truth: empty path");
			o->truth = optarg;
			break;
		case 'h':
		case O_HELP:
			fputs(usage, stdout);
			return 1;
		case ':':
			return errf(err, len, "option '%s' needs an argument", argv[optind - 1]);
		default:
			return errf(err, len, "unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return errf(err, len, "unexpected argument '%s' (see --help)", argv[optind]);
	return validate(o, depth_given, err, len);
}

bool pl_dropped(const struct pl_opts *o, int wait, long batch)
{
	for (int i = 0; i < o->ndrops; i++)
		if (o->drops[i].what == wait && o->drops[i].batch == batch)
			return true;
	return false;
}

long pl_stall_ms(const struct pl_opts *o, int stall, long batch)
{
	long ms = 0;

	for (int i = 0; i < o->nstalls; i++)
		if (o->stalls[i].what == stall && o->stalls[i].batch == batch)
			ms += o->stalls[i].ms;
	return ms;
}

bool pl_race_forced(const struct pl_opts *o, long batch)
{
	/* The stall must sit on the producer the dropped wait would have covered. */
	return (pl_dropped(o, W_B_DATA_DIST, batch) && pl_stall_ms(o, STALL_COPY, batch)) ||
	       (pl_dropped(o, W_SIMPLE_COMPUTE, batch) && pl_stall_ms(o, STALL_COPY, batch)) ||
	       (pl_dropped(o, W_D_COMPUTE, batch) && pl_stall_ms(o, STALL_SPARSE, batch));
}
