// SPDX-License-Identifier: MIT
/*
 * The per-call microbenchmark of `make bench` (docs/performance.md): a fixed
 * number of calls to a mix of probed HIP entry points, on the runtime it
 * loads with dlopen: libamdhip64.so.5 as the loader finds it (simhip,
 * build/sim, in the bench), or the file -l names (a real runtime in its root
 * file system: built here, the program runs there, whatever the release's
 * soname and symbol versions).
 *
 * One round is five calls, the kinds a training step makes most:
 *   hipEventRecord(ev, s1)          entry probe only
 *   hipStreamWaitEvent(s2, ev, 0)   entry probe only
 *   hipMemcpyAsync(64 B, H2D, s1)   entry probe only
 *   hipLaunchKernel(k, s2)          entry probe only
 *   hipEventQuery(ev)               entry and return probe (its rc matters)
 * or, with -k launch, five hipLaunchKernel(k, s2); and every 1000 rounds one
 * hipStreamSynchronize(s2) (entry and return) keeps the simulated queues
 * short. Streams, events and the first calls are made before the gate, so
 * the timed part does no set-up.
 *
 *   micro [-g] [-e] [-k mix|launch] [-l LIB] [-n CALLS]
 *
 * -g prints "ready PID" on stdout and waits for SIGUSR1 (tracers attach
 * meanwhile). -e: calls may fail (a real runtime on a machine without a
 * GPU answers hipErrorNoDevice), each still goes through its probes; the
 * failures are counted, not fatal. Prints one line at the end:
 *   calls N elapsed_ns T ns_per_call X failed F
 * with N the probed calls made in the timed part, T its CLOCK_MONOTONIC time.
 */
#include <dlfcn.h>
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

/* The runtime's entry points, as dlsym gives them (each symbol's default version). */
static struct {
	__typeof__(hipEventRecord) *event_record;
	__typeof__(hipStreamWaitEvent) *stream_wait_event;
	__typeof__(hipMemcpyAsync) *memcpy_async;
	__typeof__(hipLaunchKernel) *launch_kernel;
	__typeof__(hipEventQuery) *event_query;
	__typeof__(hipStreamSynchronize) *stream_synchronize;
	__typeof__(hipStreamCreateWithFlags) *stream_create_with_flags;
	__typeof__(hipEventCreateWithFlags) *event_create_with_flags;
	__typeof__(hipMalloc) *malloc_;
	__typeof__(hipEventDestroy) *event_destroy;
	__typeof__(hipStreamDestroy) *stream_destroy;
	__typeof__(hipFree) *free_;
} hip;

static int may_fail;  /* -e */
static long nfailed;

static int load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const struct {
		const char *name;
		void **slot;
	} syms[] = {
#define SYM(field, name) { name, (void **)&hip.field }
		SYM(event_record, "hipEventRecord"),
		SYM(stream_wait_event, "hipStreamWaitEvent"),
		SYM(memcpy_async, "hipMemcpyAsync"),
		SYM(launch_kernel, "hipLaunchKernel"),
		SYM(event_query, "hipEventQuery"),
		SYM(stream_synchronize, "hipStreamSynchronize"),
		SYM(stream_create_with_flags, "hipStreamCreateWithFlags"),
		SYM(event_create_with_flags, "hipEventCreateWithFlags"),
		SYM(malloc_, "hipMalloc"),
		SYM(event_destroy, "hipEventDestroy"),
		SYM(stream_destroy, "hipStreamDestroy"),
		SYM(free_, "hipFree"),
#undef SYM
	};

	if (!h) {
		fprintf(stderr, "micro: %s\n", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			fprintf(stderr, "micro: %s: no %s\n", path, syms[i].name);
			return -1;
		}
	}
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A failed call ends the run, unless -e said the runtime has no device. */
#define CHECK(call)                                                                 \
	do {                                                                        \
		hipError_t rc_ = (call);                                            \
		if (rc_ != hipSuccess && !may_fail) {                               \
			fprintf(stderr, "micro: %s: %d\n", #call, (int)rc_);        \
			return 1;                                                   \
		}                                                                   \
		nfailed += rc_ != hipSuccess;                                       \
	} while (0)

#define ROUND_CALLS 5
#define SYNC_EVERY 1000

/* one round; rounds + rounds / SYNC_EVERY syncs */
static int run(int launch_only, hipStream_t s1, hipStream_t s2, hipEvent_t ev, void *dst,
	       const void *src, long rounds, long *calls)
{
	dim3 g = { 1, 1, 1 }, b = { 1, 1, 1 };
	long n = 0;

	for (long r = 0; r < rounds; r++) {
		hipError_t q;

		if (launch_only) {
			for (int i = 0; i < ROUND_CALLS; i++)
				CHECK(hip.launch_kernel((const void *)&k_noop, g, b, NULL, 0, s2));
		} else {
			CHECK(hip.event_record(ev, s1));
			CHECK(hip.stream_wait_event(s2, ev, 0));
			CHECK(hip.memcpy_async(dst, src, 64, hipMemcpyHostToDevice, s1));
			CHECK(hip.launch_kernel((const void *)&k_noop, g, b, NULL, 0, s2));
			q = hip.event_query(ev);
			if (q != hipSuccess && q != hipErrorNotReady)
				CHECK(q);
		}
		n += ROUND_CALLS;
		if ((r + 1) % SYNC_EVERY == 0) {
			CHECK(hip.stream_synchronize(s2));
			n++;
		}
	}
	CHECK(hip.stream_synchronize(s2));
	CHECK(hip.stream_synchronize(s1));
	*calls = n + 2;
	return 0;
}

int main(int argc, char **argv)
{
	long want = 100000, calls = 0;
	int gate = 0, launch_only = 0, opt;
	const char *lib = "libamdhip64.so.5";
	hipStream_t s1 = NULL, s2 = NULL;
	hipEvent_t ev = NULL;
	void *dst = NULL;
	static char src[64];
	uint64_t t0, t1;

	while ((opt = getopt(argc, argv, "egk:l:n:")) != -1) {
		if (opt == 'g') {
			gate = 1;
		} else if (opt == 'e') {
			may_fail = 1;
		} else if (opt == 'k' && (!strcmp(optarg, "mix") || !strcmp(optarg, "launch"))) {
			launch_only = !strcmp(optarg, "launch");
		} else if (opt == 'l') {
			lib = optarg;
		} else if (opt == 'n') {
			want = strtol(optarg, NULL, 10);
			if (want < ROUND_CALLS || want > 1000000000L) {
				fprintf(stderr, "micro: -n takes %d..1000000000\n", ROUND_CALLS);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: micro [-g] [-e] [-k mix|launch] [-l LIB] [-n CALLS]\n");
			return 2;
		}
	}
	if (load(lib))
		return 1;
	CHECK(hip.stream_create_with_flags(&s1, hipStreamNonBlocking));
	CHECK(hip.stream_create_with_flags(&s2, hipStreamNonBlocking));
	CHECK(hip.event_create_with_flags(&ev, hipEventDisableTiming));
	CHECK(hip.malloc_(&dst, 64));
	/* warm-up, untimed */
	if (run(launch_only, s1, s2, ev, dst, src, 2 * SYNC_EVERY, &calls))
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
	nfailed = 0;
	t0 = mono_ns();
	/* rounds so that 5 * rounds + rounds / 1000 + 2 is about want */
	if (run(launch_only, s1, s2, ev, dst, src,
		(want - 2) * SYNC_EVERY / (ROUND_CALLS * SYNC_EVERY + 1), &calls))
		return 1;
	t1 = mono_ns();
	printf("calls %ld elapsed_ns %llu ns_per_call %.1f failed %ld\n", calls,
	       (unsigned long long)(t1 - t0), (double)(t1 - t0) / (double)calls, nfailed);
	CHECK(hip.event_destroy(ev));
	CHECK(hip.stream_destroy(s1));
	CHECK(hip.stream_destroy(s2));
	CHECK(hip.free_(dst));
	return 0;
}
