// SPDX-License-Identifier: MIT
/*
 * Per-thread record order under load (tests/e2e/test_order.sh). One thread
 * makes runs of hipLaunchKernel, the launches the tracer counts in the
 * kernel, interleaved with hipMemcpyAsync; other threads record and query
 * events in a tight loop meanwhile, so their calls keep ending the launch
 * thread's runs from other CPUs. Every call says where it is in its thread's
 * program order, in arguments the tracer records:
 *   - iteration i (from 0) of the launch thread makes k(i) = 1 + i % KMAX
 *     launches, launch j (from 0) of kernel j (a distinct function address
 *     per position), the first half on compute stream 0 and the rest on
 *     compute stream 1 (a launch on the other stream ends the run), then one
 *     hipMemcpyAsync of i + 1 bytes on the copy stream;
 *   - round r of query thread q records event r % NEV of its own on its
 *     stream, then queries that event.
 * The longest iterations (k(i) = KMAX) are made while every query thread
 * waits between two rounds: their runs are broken by no other thread, so
 * the launches the tracer counts in them (its rule alone decides which:
 * the thread's own calls) are counted whatever the scheduling, and a check
 * that the counted path carried the stress cannot fail on a busy machine.
 * stdout gets, once the threads are done, one JSON line saying all of it
 * (thread ids, handles, kernels, iterations and rounds made), so a checker
 * can rebuild each thread's calls and compare.
 *   orderstress [-g] [-n ITERATIONS] [-t QUERY_THREADS] [-k KMAX]
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gate.h"
#include "simhip.h"

#define MAX_KMAX 16
#define MAX_QUERY_THREADS 16
#define NEV 8 /* events per query thread, used in turn */
#define MAX_BYTES 65536

SIMHIP_KERNEL(k0, "k0", NULL, 0);
SIMHIP_KERNEL(k1, "k1", NULL, 0);
SIMHIP_KERNEL(k2, "k2", NULL, 0);
SIMHIP_KERNEL(k3, "k3", NULL, 0);
SIMHIP_KERNEL(k4, "k4", NULL, 0);
SIMHIP_KERNEL(k5, "k5", NULL, 0);
SIMHIP_KERNEL(k6, "k6", NULL, 0);
SIMHIP_KERNEL(k7, "k7", NULL, 0);
SIMHIP_KERNEL(k8, "k8", NULL, 0);
SIMHIP_KERNEL(k9, "k9", NULL, 0);
SIMHIP_KERNEL(k10, "k10", NULL, 0);
SIMHIP_KERNEL(k11, "k11", NULL, 0);
SIMHIP_KERNEL(k12, "k12", NULL, 0);
SIMHIP_KERNEL(k13, "k13", NULL, 0);
SIMHIP_KERNEL(k14, "k14", NULL, 0);
SIMHIP_KERNEL(k15, "k15", NULL, 0);

static simhip_kernel_t *const kernels[MAX_KMAX] = { &k0, &k1, &k2,  &k3,  &k4,  &k5,  &k6,  &k7,
						    &k8, &k9, &k10, &k11, &k12, &k13, &k14, &k15 };

struct querier {
	pthread_t th;
	long tid;
	hipStream_t stream;
	hipEvent_t ev[NEV];
	long rounds;
	int failed;
};

static atomic_int launches_done;
static atomic_int quiet;  /* the launch thread asks the query threads to wait */
static atomic_int parked; /* query threads waiting */
static int iterations = 2000, nquery = 3, kmax = 8;

static long gettid_(void)
{
	return syscall(SYS_gettid);
}

static int fail(const char *what, hipError_t rc)
{
	fprintf(stderr, "orderstress: %s failed: %d\n", what, (int)rc);
	return 1;
}

static void *query_loop(void *arg)
{
	struct querier *q = arg;
	hipError_t rc;

	q->tid = gettid_();
	/* at least one round, then until the launch thread is done */
	do {
		hipEvent_t ev = q->ev[q->rounds % NEV];

		if (atomic_load(&quiet)) {
			atomic_fetch_add(&parked, 1);
			while (atomic_load(&quiet))
				sched_yield();
			atomic_fetch_sub(&parked, 1);
		}

		if ((rc = hipEventRecord(ev, q->stream)) != hipSuccess) {
			q->failed = fail("hipEventRecord", rc);
			break;
		}
		rc = hipEventQuery(ev);
		if (rc != hipSuccess && rc != hipErrorNotReady) {
			q->failed = fail("hipEventQuery", rc);
			break;
		}
		q->rounds++;
	} while (!atomic_load(&launches_done));
	return NULL;
}

static void put_hex(const char *sep, const void *p)
{
	printf("%s\"0x%llx\"", sep, (unsigned long long)(uintptr_t)p);
}

int main(int argc, char **argv)
{
	struct querier q[MAX_QUERY_THREADS] = { 0 };
	hipStream_t compute[2], copy;
	void *src, *dst;
	dim3 g = { 1, 1, 1 }, b = { 64, 1, 1 };
	int gate = 0, opt, failed = 0;
	hipError_t rc;

	while ((opt = getopt(argc, argv, "gn:t:k:")) != -1) {
		if (opt == 'g')
			gate = 1;
		else if (opt == 'n')
			iterations = atoi(optarg);
		else if (opt == 't')
			nquery = atoi(optarg);
		else if (opt == 'k')
			kmax = atoi(optarg);
		else
			goto usage;
	}
	if (optind != argc || iterations < 1 || iterations >= MAX_BYTES || nquery < 0 ||
	    nquery > MAX_QUERY_THREADS || kmax < 1 || kmax > MAX_KMAX)
		goto usage;
	/* set-up first: the stress is the calls after the gate */
	if ((rc = hipStreamCreateWithFlags(&compute[0], hipStreamNonBlocking)) ||
	    (rc = hipStreamCreateWithFlags(&compute[1], hipStreamNonBlocking)) ||
	    (rc = hipStreamCreateWithFlags(&copy, hipStreamNonBlocking)) ||
	    (rc = hipMalloc(&src, MAX_BYTES)) || (rc = hipMalloc(&dst, MAX_BYTES)))
		return fail("set-up", rc);
	for (int t = 0; t < nquery; t++) {
		if ((rc = hipStreamCreateWithFlags(&q[t].stream, hipStreamNonBlocking)))
			return fail("hipStreamCreateWithFlags", rc);
		for (int e = 0; e < NEV; e++)
			if ((rc = hipEventCreateWithFlags(&q[t].ev[e], hipEventDisableTiming)))
				return fail("hipEventCreateWithFlags", rc);
	}
	if (gate)
		gate_wait();

	for (int t = 0; t < nquery; t++)
		if (pthread_create(&q[t].th, NULL, query_loop, &q[t])) {
			fprintf(stderr, "orderstress: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < iterations && !failed; i++) {
		int k = 1 + i % kmax;
		bool hush = k == kmax && nquery > 0;

		if (hush) {
			atomic_store(&quiet, 1);
			while (atomic_load(&parked) < nquery)
				sched_yield();
		}

		for (int j = 0; j < k && !failed; j++) {
			rc = hipLaunchKernel(kernels[j], g, b, NULL, 0, compute[j < (k + 1) / 2 ? 0 : 1]);
			if (rc != hipSuccess)
				failed = fail("hipLaunchKernel", rc);
		}
		if (!failed && (rc = hipMemcpyAsync(dst, src, (size_t)i + 1, hipMemcpyDeviceToDevice,
						    copy)) != hipSuccess)
			failed = fail("hipMemcpyAsync", rc);
		if (hush)
			atomic_store(&quiet, 0);
	}
	atomic_store(&launches_done, 1);
	for (int t = 0; t < nquery; t++) {
		pthread_join(q[t].th, NULL);
		failed |= q[t].failed;
	}
	if (failed)
		return 1;

	printf("{\"pid\":%d,\"launch_tid\":%ld,\"iterations\":%d,\"kmax\":%d,\"kernels\":[",
	       (int)getpid(), gettid_(), iterations, kmax);
	for (int j = 0; j < kmax; j++)
		put_hex(j ? "," : "", kernels[j]);
	printf("],\"compute\":[");
	put_hex("", compute[0]);
	put_hex(",", compute[1]);
	printf("],\"copy\":");
	put_hex("", copy);
	printf(",\"queries\":[");
	for (int t = 0; t < nquery; t++) {
		printf("%s{\"tid\":%ld,\"rounds\":%ld,\"stream\":", t ? "," : "", q[t].tid, q[t].rounds);
		put_hex("", q[t].stream);
		printf(",\"events\":[");
		for (int e = 0; e < NEV; e++)
			put_hex(e ? "," : "", q[t].ev[e]);
		printf("]}");
	}
	printf("]}\n");
	return hipDeviceSynchronize() == hipSuccess ? 0 : 1;
usage:
	fprintf(stderr, "usage: orderstress [-g] [-n ITERATIONS 1..%d] [-t QUERY_THREADS 0..%d] "
			"[-k KMAX 1..%d]\n",
		MAX_BYTES - 1, MAX_QUERY_THREADS, MAX_KMAX);
	return 2;
}
