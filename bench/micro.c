// SPDX-License-Identifier: MIT
/*
 * The per-call microbenchmark of `make bench` (docs/performance.md): a fixed
 * number of calls to a mix of probed HIP entry points, on whatever
 * libamdhip64.so.5 is found at run time (simhip, build/sim, in the bench).
 *
 * One round is five calls, the kinds a training step makes most:
 *   hipEventRecord(ev, s1)          entry probe only
 *   hipStreamWaitEvent(s2, ev, 0)   entry probe only
 *   hipMemcpyAsync(64 B, H2D, s1)   entry probe only
 *   hipLaunchKernel(k, s2)          entry probe only
 *   hipEventQuery(ev)               entry and return probe (its rc matters)
 * and every 1000 rounds one hipStreamSynchronize(s2) (entry and return) keeps
 * the simulated queues short. Streams, events and the first calls are made
 * before the gate, so the timed part does no set-up.
 *
 *   micro [-g] [-n CALLS]
 *
 * -g prints "ready PID" on stdout and waits for SIGUSR1 (tracers attach
 * meanwhile). Prints one line at the end:
 *   calls N elapsed_ns T ns_per_call X
 * with N the probed calls made in the timed part, T its CLOCK_MONOTONIC time.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "simhip.h"

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static void noop(void **args)
{
	(void)args;
}

SIMHIP_KERNEL(k_noop, "bench_noop", noop, 0);

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CHECK(call)                                                                 \
	do {                                                                        \
		hipError_t rc_ = (call);                                            \
		if (rc_ != hipSuccess) {                                            \
			fprintf(stderr, "micro: %s: %s (%d)\n", #call,              \
				hipGetErrorName(rc_), (int)rc_);                    \
			return 1;                                                   \
		}                                                                   \
	} while (0)

#define ROUND_CALLS 5
#define SYNC_EVERY 1000

/* one round; rounds + rounds / SYNC_EVERY syncs */
static int run(hipStream_t s1, hipStream_t s2, hipEvent_t ev, void *dst, const void *src,
	       long rounds, long *calls)
{
	dim3 g = { 1, 1, 1 }, b = { 1, 1, 1 };
	long n = 0;

	for (long r = 0; r < rounds; r++) {
		hipError_t q;

		CHECK(hipEventRecord(ev, s1));
		CHECK(hipStreamWaitEvent(s2, ev, 0));
		CHECK(hipMemcpyAsync(dst, src, 64, hipMemcpyHostToDevice, s1));
		CHECK(hipLaunchKernel((const void *)&k_noop, g, b, NULL, 0, s2));
		q = hipEventQuery(ev);
		if (q != hipSuccess && q != hipErrorNotReady) {
			fprintf(stderr, "micro: hipEventQuery: %d\n", (int)q);
			return 1;
		}
		n += ROUND_CALLS;
		if ((r + 1) % SYNC_EVERY == 0) {
			CHECK(hipStreamSynchronize(s2));
			n++;
		}
	}
	CHECK(hipStreamSynchronize(s2));
	CHECK(hipStreamSynchronize(s1));
	*calls = n + 2;
	return 0;
}

int main(int argc, char **argv)
{
	long want = 100000, calls = 0;
	int gate = 0, opt;
	hipStream_t s1, s2;
	hipEvent_t ev;
	void *dst;
	static char src[64];
	uint64_t t0, t1;

	while ((opt = getopt(argc, argv, "gn:")) != -1) {
		if (opt == 'g') {
			gate = 1;
		} else if (opt == 'n') {
			want = strtol(optarg, NULL, 10);
			if (want < ROUND_CALLS || want > 1000000000L) {
				fprintf(stderr, "micro: -n takes %d..1000000000\n", ROUND_CALLS);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: micro [-g] [-n CALLS]\n");
			return 2;
		}
	}
	CHECK(hipStreamCreateWithFlags(&s1, hipStreamNonBlocking));
	CHECK(hipStreamCreateWithFlags(&s2, hipStreamNonBlocking));
	CHECK(hipEventCreateWithFlags(&ev, hipEventDisableTiming));
	CHECK(hipMalloc(&dst, 64));
	if (run(s1, s2, ev, dst, src, 2 * SYNC_EVERY, &calls)) /* warm-up, untimed */
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gate) {
		sigset_t none;

		signal(SIGUSR1, on_usr1);
		printf("ready %d\n", (int)getpid());
		sigemptyset(&none);
		while (!go)
			sigsuspend(&none);
	}
	t0 = mono_ns();
	/* rounds so that 5 * rounds + rounds / 1000 + 2 is about want */
	if (run(s1, s2, ev, dst, src, (want - 2) * SYNC_EVERY / (ROUND_CALLS * SYNC_EVERY + 1),
		&calls))
		return 1;
	t1 = mono_ns();
	printf("calls %ld elapsed_ns %llu ns_per_call %.1f\n", calls, (unsigned long long)(t1 - t0),
	       (double)(t1 - t0) / (double)calls);
	CHECK(hipEventDestroy(ev));
	CHECK(hipStreamDestroy(s1));
	CHECK(hipStreamDestroy(s2));
	CHECK(hipFree(dst));
	return 0;
}
