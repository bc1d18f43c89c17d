// SPDX-License-Identifier: MIT
/*
 * pipeline: TorchRec TrainPipelineSparseDist's HIP call sequence on real
 * bytes, with faults on demand and the ground truth to judge a tracer by.
 * See docs/workload.md.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pl.h"

static void write_header(const struct pl_opts *o)
{
	struct pl_json j;

	pj_begin(&j, "run");
	pj_num(&j, "schema", 1);
	pj_num(&j, "pid", getpid());
	pj_str(&j, "pattern", o->pattern == PAT_SIMPLE ? "simple" : "torchrec");
	pj_num(&j, "depth", o->depth);
	pj_num(&j, "batches", o->batches);
	pj_num(&j, "steps", o->steps);
	pj_raw(&j, ",\"drop\":[");
	for (int i = 0; i < o->ndrops; i++)
		pj_raw(&j, "%s{\"wait\":\"%s\",\"batch\":%ld}", i ? "," : "",
		       pl_waits[o->drops[i].what].name, o->drops[i].batch);
	pj_raw(&j, "],\"stall\":[");
	for (int i = 0; i < o->nstalls; i++)
		pj_raw(&j, "%s{\"stage\":\"%s\",\"batch\":%ld,\"ms\":%ld}", i ? "," : "",
		       pl_stall_names[o->stalls[i].what], o->stalls[i].batch, o->stalls[i].ms);
	pj_raw(&j, "]");
	pj_batch(&j, "exit_at", o->exit_at);
	pj_num(&j, "seed", (long long)o->seed);
	pj_num(&j, "iter_sleep_ms", o->iter_sleep_ms);
	pj_num(&j, "watchdog_ms", o->watchdog_ms);
	pj_bool(&j, "torch", o->torch);
	pj_end(&j);
}

static int sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	return nanosleep(&ts, NULL);
}

/* Hold still before the first HIP call so a tracer can attach. */
static int gate(const struct pl_opts *o)
{
	long waited = 0;

	if (!o->gate_signal && !o->gate_file)
		return 0;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (o->gate_signal) {
		sigset_t set;
		struct timespec ts = { o->gate_timeout_ms / 1000,
				       (o->gate_timeout_ms % 1000) * 1000000L };
		int sig;

		/* Blocked before "ready" went out (main), so it cannot be lost. */
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		do
			sig = o->gate_timeout_ms ? sigtimedwait(&set, NULL, &ts)
						 : sigwaitinfo(&set, NULL);
		while (sig < 0 && errno == EINTR);
		if (sig < 0) {
			fprintf(stderr, "pipeline: no SIGUSR1 within %ld ms\n", o->gate_timeout_ms);
			return -1;
		}
	}
	while (o->gate_file && access(o->gate_file, F_OK) != 0) {
		if (o->gate_timeout_ms && waited >= o->gate_timeout_ms) {
			fprintf(stderr, "pipeline: %s did not appear within %ld ms\n", o->gate_file,
				o->gate_timeout_ms);
			return -1;
		}
		sleep_ms(10);
		waited += 10;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct pl_opts o;
	static struct pl_ctx x;
	char err[256];
	sigset_t set;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = pl_parse_opts(argc, argv, &o, err, sizeof(err));
	if (rc > 0)
		return 0;
	if (rc < 0) {
		fprintf(stderr, "pipeline: %s\n", err);
		return 2;
	}
	if (o.gate_signal) {
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
	}
	rc = pl_truth_open(o.truth);
	if (rc) {
		fprintf(stderr, "pipeline: --truth %s: %s\n", o.truth, strerror(-rc));
		return 2;
	}
	write_header(&o);
	if (gate(&o)) {
		pl_truth_close();
		return 1;
	}
	x.o = &o;
	pl_setup(&x);
	pl_run(&x);
	pl_teardown(&x);
	rc = pl_verdicts(&x, false);
	pl_truth_close();
	free(x.b);
	return rc;
}
