/* SPDX-License-Identifier: MIT */
/*
 * simhip: stream ordering, implicit null-stream sync, per-thread streams,
 * events (query, synchronize, elapsed time, reuse), bad handles, launches.
 *
 * "Slow" work is a kernel with no function and SLOW_NS of simulated time: a
 * reader that is not ordered after it runs long before it ends, so it sees
 * the old value. Bounds on measured times are deliberately loose.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "simhip.h"

#define SLOW_NS 150000000ull /* 150 ms */
#define OK(call) assert_int_equal((call), hipSuccess)

static const dim3 one = { 1, 1, 1 };

/* kernels: args[0] = int *, args[1] = int * (or int value pointer) */
static void store_fn(void **args)
{
	__atomic_store_n((int *)args[0], *(int *)args[1], __ATOMIC_RELAXED);
}

static void load_fn(void **args)
{
	*(int *)args[1] = __atomic_load_n((int *)args[0], __ATOMIC_RELAXED);
}

static void tid_fn(void **args)
{
	*(pid_t *)args[0] = gettid();
}

static void policy_fn(void **args)
{
	*(int *)args[0] = sched_getscheduler(0);
}

SIMHIP_KERNEL(k_slow, "slow", NULL, SLOW_NS);
SIMHIP_KERNEL(k_store, "store", store_fn, 0);
SIMHIP_KERNEL(k_load, "load", load_fn, 0);
SIMHIP_KERNEL(k_tid, "tid", tid_fn, 0);
SIMHIP_KERNEL(k_30ms, "busy30", NULL, 30000000ull);
SIMHIP_KERNEL(k_policy, "policy", policy_fn, 0);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static hipError_t launch(simhip_kernel_t *k, void **args, hipStream_t s)
{
	return hipLaunchKernel(k, one, one, args, 0, s);
}

/* Slow kernel then "*cell = value" on `w`; a read of *cell on `r` into *out. */
struct rw {
	int cell, value, out;
	void *wargs[2], *rargs[2];
};

static void rw_init(struct rw *t)
{
	memset(t, 0, sizeof(*t));
	t->cell = 1;
	t->value = 2;
	t->out = -1;
	t->wargs[0] = &t->cell;
	t->wargs[1] = &t->value;
	t->rargs[0] = &t->cell;
	t->rargs[1] = &t->out;
}

static void rw_write(struct rw *t, hipStream_t w)
{
	OK(launch(&k_slow, NULL, w));
	OK(launch(&k_store, t->wargs, w));
}

static void rw_read(struct rw *t, hipStream_t r)
{
	OK(launch(&k_load, t->rargs, r));
}

/* ---- basics ----------------------------------------------------------- */

static void test_device_basics(void **state)
{
	int n = -1, d = -1, v = 0, lo = 9, hi = 9;

	(void)state;
	OK(hipInit(0));
	OK(hipGetDeviceCount(&n));
	assert_int_equal(n, 1);
	OK(hipSetDevice(0));
	assert_int_equal(hipSetDevice(1), hipErrorInvalidDevice);
	OK(hipGetDevice(&d));
	assert_int_equal(d, 0);
	OK(hipRuntimeGetVersion(&v));
	assert_int_equal(v, HIP_VERSION);
	OK(hipDriverGetVersion(&v));
	OK(hipDeviceGetStreamPriorityRange(&lo, &hi));
	assert_int_equal(lo, 1);
	assert_int_equal(hi, -1);
	assert_string_equal(hipGetErrorName(hipErrorNotReady), "hipErrorNotReady");
	assert_string_equal(hipGetErrorString(hipErrorInvalidHandle), "hipErrorInvalidHandle");
	assert_string_equal(hipGetErrorName((hipError_t)12345), "hipErrorUnknown");
}

static void test_last_error(void **state)
{
	(void)state;
	assert_int_equal(hipGetDeviceCount(NULL), hipErrorInvalidValue);
	assert_int_equal(hipPeekAtLastError(), hipErrorInvalidValue);
	assert_int_equal(hipGetLastError(), hipErrorInvalidValue);
	assert_int_equal(hipGetLastError(), hipSuccess);
}

static void test_stream_attributes(void **state)
{
	hipStream_t s;
	unsigned flags = 9;
	int prio = 9;
	hipStreamCaptureStatus cs = hipStreamCaptureStatusActive;

	(void)state;
	OK(hipStreamCreateWithPriority(&s, hipStreamNonBlocking, -7));
	OK(hipStreamGetFlags(s, &flags));
	assert_int_equal(flags, hipStreamNonBlocking);
	OK(hipStreamGetPriority(s, &prio));
	assert_int_equal(prio, -1);
	OK(hipStreamIsCapturing(s, &cs));
	assert_int_equal(cs, hipStreamCaptureStatusNone);
	OK(hipStreamDestroy(s));
	assert_int_equal(hipStreamCreateWithFlags(&s, 4), hipErrorInvalidValue);
	/* ROCm 5.2: flags of the null stream are "invalid value", its priority 0 */
	assert_int_equal(hipStreamGetFlags(NULL, &flags), hipErrorInvalidValue);
	OK(hipStreamGetPriority(NULL, &prio));
	assert_int_equal(prio, 0);
	OK(hipStreamGetFlags(hipStreamPerThread, &flags));
	assert_int_equal(flags, hipStreamDefault);
}

/* ---- ordering through events ------------------------------------------ */

static void test_event_edge_orders(void **state)
{
	hipStream_t a, b;
	hipEvent_t e;
	struct rw t;

	(void)state;
	OK(hipStreamCreateWithFlags(&a, hipStreamNonBlocking));
	OK(hipStreamCreateWithFlags(&b, hipStreamNonBlocking));
	OK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
	rw_init(&t);
	rw_write(&t, a);
	OK(hipEventRecord(e, a));
	OK(hipStreamWaitEvent(b, e, 0));
	rw_read(&t, b);
	OK(hipStreamSynchronize(b));
	assert_int_equal(t.out, 2);
	/* the wait made b wait for a as a whole */
	assert_int_equal(hipStreamQuery(a), hipSuccess);

	OK(hipEventDestroy(e));
	OK(hipStreamDestroy(a));
	OK(hipStreamDestroy(b));
}

static void test_no_edge_reads_stale(void **state)
{
	hipStream_t a, b;
	struct rw t;

	(void)state;
	OK(hipStreamCreateWithFlags(&a, hipStreamNonBlocking));
	OK(hipStreamCreateWithFlags(&b, hipStreamNonBlocking));
	rw_init(&t);
	rw_write(&t, a);
	rw_read(&t, b);
	OK(hipStreamSynchronize(b));
	assert_int_equal(t.out, 1); /* stale: a is still in its slow kernel */
	assert_int_equal(hipStreamQuery(a), hipErrorNotReady);
	OK(hipStreamSynchronize(a));
	assert_int_equal(t.cell, 2);
	OK(hipStreamDestroy(a));
	OK(hipStreamDestroy(b));
}

static void test_wait_unrecorded_event_is_noop(void **state)
{
	hipStream_t b;
	hipEvent_t e;
	double t0;

	(void)state;
	OK(hipStreamCreateWithFlags(&b, hipStreamNonBlocking));
	OK(hipEventCreate(&e));
	OK(hipStreamWaitEvent(b, e, 0));
	assert_int_equal(hipStreamWaitEvent(b, e, 1), hipErrorInvalidValue);
	t0 = now_ms();
	OK(hipStreamSynchronize(b));
	OK(hipEventSynchronize(e));
	assert_true(now_ms() - t0 < 100);
	OK(hipEventDestroy(e));
	OK(hipStreamDestroy(b));
}

/* ---- null stream ------------------------------------------------------- */

static void null_sync_case(unsigned flags, bool writer_on_null, int expect)
{
	hipStream_t s;
	struct rw t;

	OK(hipStreamCreateWithFlags(&s, flags));
	rw_init(&t);
	rw_write(&t, writer_on_null ? NULL : s);
	rw_read(&t, writer_on_null ? s : NULL);
	OK(hipStreamSynchronize(writer_on_null ? s : NULL));
	assert_int_equal(t.out, expect);
	OK(hipDeviceSynchronize());
	OK(hipStreamDestroy(s));
}

static void test_null_stream_syncs_blocking(void **state)
{
	(void)state;
	null_sync_case(hipStreamDefault, false, 2); /* blocking -> null */
	null_sync_case(hipStreamDefault, true, 2);  /* null -> blocking */
}

static void test_null_stream_ignores_nonblocking(void **state)
{
	(void)state;
	null_sync_case(hipStreamNonBlocking, false, 1);
	null_sync_case(hipStreamNonBlocking, true, 1);
}

/* ROCm: synchronising or querying the null stream applies the implicit rule too. */
static void test_null_stream_sync_and_query(void **state)
{
	hipStream_t blk, nb;

	(void)state;
	OK(hipStreamCreate(&blk));
	OK(hipStreamCreateWithFlags(&nb, hipStreamNonBlocking));
	OK(launch(&k_slow, NULL, nb));
	assert_int_equal(hipStreamQuery(NULL), hipSuccess);
	OK(hipStreamSynchronize(NULL));
	assert_int_equal(hipStreamQuery(nb), hipErrorNotReady); /* not waited for */
	OK(launch(&k_slow, NULL, blk));
	assert_int_equal(hipStreamQuery(NULL), hipErrorNotReady);
	OK(hipStreamSynchronize(NULL));
	assert_int_equal(hipStreamQuery(blk), hipSuccess);
	/* and a blocking stream's sync waits for the null stream */
	OK(launch(&k_slow, NULL, NULL));
	assert_int_equal(hipStreamQuery(blk), hipErrorNotReady);
	OK(hipStreamSynchronize(blk));
	assert_int_equal(hipStreamQuery(NULL), hipSuccess);
	OK(hipStreamDestroy(blk));
	OK(hipStreamDestroy(nb));
}

static void test_legacy_handle_is_null_stream(void **state)
{
	hipStream_t s;
	struct rw t;

	(void)state;
	OK(hipStreamCreate(&s));
	rw_init(&t);
	rw_write(&t, s);
	rw_read(&t, (hipStream_t)1);
	OK(hipStreamSynchronize((hipStream_t)1));
	assert_int_equal(t.out, 2);
	OK(hipStreamDestroy(s));
}

static void test_blocking_streams_do_not_sync_each_other(void **state)
{
	hipStream_t a, b;
	struct rw t;

	(void)state;
	OK(hipStreamCreate(&a));
	OK(hipStreamCreate(&b));
	rw_init(&t);
	rw_write(&t, a);
	rw_read(&t, b);
	OK(hipStreamSynchronize(b));
	assert_int_equal(t.out, 1);
	OK(hipDeviceSynchronize());
	assert_int_equal(hipStreamQuery(a), hipSuccess);
	OK(hipStreamDestroy(a));
	OK(hipStreamDestroy(b));
}

/* ---- per-thread streams ------------------------------------------------ */

struct pts_probe {
	pid_t spt_tid, pts_tid;
	void *a1[1], *a2[1];
};

static void *pts_thread(void *arg)
{
	struct pts_probe *p = arg;

	p->a1[0] = &p->spt_tid;
	p->a2[0] = &p->pts_tid;
	if (hipLaunchKernel_spt(&k_tid, one, one, p->a1, 0, NULL) != hipSuccess ||
	    hipLaunchKernel(&k_tid, one, one, p->a2, 0, hipStreamPerThread) != hipSuccess ||
	    hipStreamSynchronize_spt(NULL) != hipSuccess)
		p->spt_tid = -1;
	return NULL;
}

static void test_per_thread_streams(void **state)
{
	struct pts_probe p[2] = { { 0 } };
	pthread_t th[2];
	pid_t null_tid = 0;
	void *args[1] = { &null_tid };

	(void)state;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, pts_thread, &p[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	OK(launch(&k_tid, args, NULL));
	OK(hipStreamSynchronize(NULL));
	for (int i = 0; i < 2; i++) {
		assert_true(p[i].spt_tid > 0);
		/* _spt with 0 and hipStreamPerThread are the same stream (worker) */
		assert_int_equal(p[i].spt_tid, p[i].pts_tid);
		assert_int_not_equal(p[i].spt_tid, null_tid);
	}
}

struct pts_pair {
	pthread_barrier_t *bar;
	pid_t tid;
	void *args[1];
};

static void *pts_concurrent(void *arg)
{
	struct pts_pair *p = arg;

	p->args[0] = &p->tid;
	pthread_barrier_wait(p->bar);
	if (hipLaunchKernel_spt(&k_tid, one, one, p->args, 0, NULL) != hipSuccess ||
	    hipStreamSynchronize_spt(NULL) != hipSuccess)
		p->tid = -1;
	pthread_barrier_wait(p->bar); /* both streams alive at once */
	return NULL;
}

static void test_per_thread_streams_differ(void **state)
{
	pthread_barrier_t bar;
	struct pts_pair p[2] = { { &bar, 0, { 0 } }, { &bar, 0, { 0 } } };
	pthread_t th[2];

	(void)state;
	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, pts_concurrent, &p[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&bar);
	assert_true(p[0].tid > 0 && p[1].tid > 0);
	assert_int_not_equal(p[0].tid, p[1].tid);
}

static void test_per_thread_stream_is_blocking(void **state)
{
	struct rw t;

	(void)state;
	rw_init(&t);
	rw_write(&t, NULL);
	OK(hipLaunchKernel_spt(&k_load, one, one, t.rargs, 0, NULL));
	OK(hipStreamSynchronize_spt(NULL));
	assert_int_equal(t.out, 2);
	assert_int_equal(hipStreamDestroy(hipStreamPerThread), hipErrorInvalidHandle);
}

/* ---- event queries and timing ------------------------------------------ */

static void test_query_before_and_after(void **state)
{
	hipStream_t s;
	hipEvent_t e, never;

	(void)state;
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(hipEventCreate(&e));
	OK(hipEventCreate(&never));
	assert_int_equal(hipEventQuery(never), hipSuccess);
	assert_int_equal(hipStreamQuery(s), hipSuccess);
	OK(launch(&k_slow, NULL, s));
	OK(hipEventRecord(e, s));
	assert_int_equal(hipEventQuery(e), hipErrorNotReady);
	assert_int_equal(hipStreamQuery(s), hipErrorNotReady);
	OK(hipEventSynchronize(e));
	assert_int_equal(hipEventQuery(e), hipSuccess);
	assert_int_equal(hipStreamQuery(s), hipSuccess);
	OK(hipEventDestroy(e));
	OK(hipEventDestroy(never));
	OK(hipStreamDestroy(s));
}

static void test_elapsed_time(void **state)
{
	hipStream_t s;
	hipEvent_t a, b, nt, never;
	float ms = -1;

	(void)state;
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(hipEventCreate(&a));
	OK(hipEventCreate(&b));
	OK(hipEventCreateWithFlags(&nt, hipEventDisableTiming));
	OK(hipEventCreate(&never));
	assert_int_equal(hipEventElapsedTime(NULL, a, b), hipErrorInvalidValue);
	assert_int_equal(hipEventElapsedTime(&ms, NULL, b), hipErrorInvalidHandle);
	assert_int_equal(hipEventElapsedTime(&ms, a, never), hipErrorInvalidHandle);

	OK(hipEventRecord(a, s));
	OK(launch(&k_slow, NULL, s));
	OK(hipEventRecord(b, s));
	OK(hipEventRecord(nt, s));
	assert_int_equal(hipEventElapsedTime(&ms, a, b), hipErrorNotReady);
	assert_int_equal(hipEventElapsedTime(&ms, a, never), hipErrorInvalidHandle);
	OK(hipStreamSynchronize(s));
	assert_int_equal(hipEventElapsedTime(&ms, a, nt), hipErrorInvalidHandle);
	assert_int_equal(hipEventElapsedTime(&ms, nt, nt), hipErrorInvalidHandle);
	OK(hipEventElapsedTime(&ms, a, b));
	assert_true(ms >= 140.0f && ms < 2000.0f);
	OK(hipEventElapsedTime(&ms, b, b));
	assert_true(ms == 0.0f);
	OK(hipEventElapsedTime(&ms, b, a));
	assert_true(ms < 0.0f);

	OK(hipEventDestroy(a));
	OK(hipEventDestroy(b));
	OK(hipEventDestroy(nt));
	OK(hipEventDestroy(never));
	OK(hipStreamDestroy(s));
}

static void test_event_rerecord_follows_latest(void **state)
{
	hipStream_t s;
	hipEvent_t e;

	(void)state;
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(hipEventCreate(&e));
	OK(hipEventRecord(e, s));
	OK(hipEventSynchronize(e));
	OK(launch(&k_slow, NULL, s));
	OK(hipEventRecord(e, s));
	assert_int_equal(hipEventQuery(e), hipErrorNotReady);
	OK(hipStreamSynchronize(s));
	assert_int_equal(hipEventQuery(e), hipSuccess);
	OK(hipEventDestroy(e));
	OK(hipStreamDestroy(s));
}

static void test_event_handle_reuse(void **state)
{
	hipEvent_t a, b, c, d;

	(void)state;
	OK(hipEventCreate(&a));
	OK(hipEventDestroy(a));
	assert_int_equal(hipEventQuery(a), hipErrorInvalidHandle);
	assert_int_equal(hipEventDestroy(a), hipErrorInvalidHandle);
	OK(hipEventCreateWithFlags(&b, hipEventDisableTiming));
	assert_ptr_equal(a, b); /* freed handle handed out again */
	OK(hipEventQuery(b));   /* fresh: never recorded */

	OK(hipEventCreate(&c));
	OK(hipEventDestroy(b));
	OK(hipEventDestroy(c));
	OK(hipEventCreate(&d));
	assert_ptr_equal(d, c); /* LIFO */
	OK(hipEventCreate(&a));
	assert_ptr_equal(a, b);
	OK(hipEventDestroy(a));
	OK(hipEventDestroy(d));
}

static void test_destroyed_event_with_pending_record(void **state)
{
	hipStream_t s;
	hipEvent_t e, again;

	(void)state;
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(hipEventCreate(&e));
	OK(launch(&k_slow, NULL, s));
	OK(hipEventRecord(e, s));
	OK(hipEventDestroy(e));
	OK(hipEventCreate(&again));
	assert_ptr_equal(e, again);
	/* the reused handle does not inherit the pending record */
	assert_int_equal(hipEventQuery(again), hipSuccess);
	OK(hipStreamSynchronize(s));
	OK(hipEventDestroy(again));
	OK(hipStreamDestroy(s));
}

/* ---- bad handles ------------------------------------------------------- */

static void test_bad_stream_handles(void **state)
{
	hipStream_t s, garbage = (hipStream_t)(uintptr_t)0xdeadbeef0ull;
	hipEvent_t e;
	int local = 0;
	hipStream_t stack_ptr = (hipStream_t)&local;
	unsigned flags;

	(void)state;
	OK(hipStreamCreate(&s));
	OK(hipStreamDestroy(s));
	OK(hipEventCreate(&e));
	hipStream_t bad[] = { s, garbage, stack_ptr };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hipStream_t b = bad[i];

		assert_int_equal(hipStreamQuery(b), hipErrorContextIsDestroyed);
		assert_int_equal(hipStreamSynchronize(b), hipErrorContextIsDestroyed);
		assert_int_equal(hipStreamDestroy(b), hipErrorContextIsDestroyed);
		assert_int_equal(hipStreamGetFlags(b, &flags), hipErrorContextIsDestroyed);
		assert_int_equal(hipEventRecord(e, b), hipErrorContextIsDestroyed);
		assert_int_equal(hipStreamWaitEvent(b, e, 0), hipErrorContextIsDestroyed);
		assert_int_equal(launch(&k_tid, NULL, b), hipErrorContextIsDestroyed);
		assert_int_equal(hipMemcpyAsync(&local, &local, 4, hipMemcpyHostToHost, b),
				 hipErrorContextIsDestroyed);
		assert_int_equal(hipMemsetAsync(&local, 0, 4, b), hipErrorContextIsDestroyed);
	}
	assert_int_equal(hipStreamDestroy(NULL), hipErrorInvalidHandle);
	OK(hipEventDestroy(e));
}

static void test_bad_event_handles(void **state)
{
	hipEvent_t e, garbage = (hipEvent_t)(uintptr_t)0x1234560ull;
	int local;
	hipEvent_t stack_ptr = (hipEvent_t)&local;
	float ms;

	(void)state;
	OK(hipEventCreate(&e));
	OK(hipEventDestroy(e));
	hipEvent_t bad[] = { e, garbage, stack_ptr, NULL };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hipEvent_t b = bad[i];

		assert_int_equal(hipEventQuery(b), hipErrorInvalidHandle);
		assert_int_equal(hipEventSynchronize(b), hipErrorInvalidHandle);
		assert_int_equal(hipEventRecord(b, NULL), hipErrorInvalidHandle);
		assert_int_equal(hipEventDestroy(b), hipErrorInvalidHandle);
		assert_int_equal(hipEventElapsedTime(&ms, b, b), hipErrorInvalidHandle);
		assert_int_equal(hipStreamWaitEvent(NULL, b, 0), hipErrorInvalidHandle);
		if (b) /* NULL start/stop events are allowed */
			assert_int_equal(hipExtLaunchKernel(&k_30ms, one, one, NULL, 0, NULL, b,
							    NULL, 0),
					 hipErrorInvalidHandle);
	}
	assert_int_equal(hipEventCreateWithFlags(&e, 0x100), hipErrorInvalidValue);
	assert_int_equal(hipEventCreate(NULL), hipErrorInvalidValue);
}

static void test_bad_kernels_and_pointers(void **state)
{
	int not_a_kernel[8] = { 0 };
	dim3 zero = { 0, 1, 1 };

	(void)state;
	assert_int_equal(launch(NULL, NULL, NULL), hipErrorInvalidDeviceFunction);
	assert_int_equal(launch((simhip_kernel_t *)not_a_kernel, NULL, NULL),
			 hipErrorInvalidDeviceFunction);
	assert_int_equal(launch((simhip_kernel_t *)(uintptr_t)0x10, NULL, NULL),
			 hipErrorInvalidDeviceFunction);
	assert_int_equal(launch((simhip_kernel_t *)(uintptr_t)0x7ff0000000ull, NULL, NULL),
			 hipErrorInvalidDeviceFunction);
	assert_int_equal(hipLaunchKernel(&k_tid, zero, one, NULL, 0, NULL), hipErrorInvalidValue);
	assert_int_equal(hipFree(not_a_kernel), hipErrorInvalidValue);
	OK(hipFree(NULL));
	assert_int_equal(hipHostFree((void *)(uintptr_t)0x10), hipErrorInvalidValue);
	assert_int_equal(hipMalloc(NULL, 16), hipErrorInvalidValue);
}

/* ---- launches, callbacks, device sync ---------------------------------- */

static void test_ext_launch_start_stop(void **state)
{
	hipStream_t s;
	hipEvent_t start, stop;
	float ms = 0;

	(void)state;
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(hipEventCreate(&start));
	OK(hipEventCreate(&stop));
	OK(hipExtLaunchKernel(&k_30ms, one, one, NULL, 0, s, start, stop, 0));
	assert_int_equal(hipEventQuery(stop), hipErrorNotReady);
	OK(hipEventSynchronize(stop));
	assert_int_equal(hipEventQuery(start), hipSuccess);
	OK(hipEventElapsedTime(&ms, start, stop));
	assert_true(ms >= 25.0f && ms < 2000.0f);
	/* NULL start/stop are allowed */
	OK(hipExtLaunchKernel(&k_30ms, one, one, NULL, 0, s, NULL, stop, 0));
	OK(hipStreamSynchronize(s));
	OK(hipEventDestroy(start));
	OK(hipEventDestroy(stop));
	OK(hipStreamDestroy(s));
}

static void test_module_launches(void **state)
{
	hipStream_t s;
	hipEvent_t stop;
	int cell = 0, v1 = 7, v2 = 9;
	void *a1[2] = { &cell, &v1 }, *a2[2] = { &cell, &v2 };

	(void)state;
	OK(hipStreamCreate(&s));
	OK(hipEventCreate(&stop));
	OK(hipModuleLaunchKernel((hipFunction_t)&k_store, 1, 1, 1, 64, 1, 1, 0, s, a1, NULL));
	OK(hipStreamSynchronize(s));
	assert_int_equal(cell, 7);
	OK(simhip_hipExtModuleLaunchKernel((hipFunction_t)&k_store, 64, 1, 1, 64, 1, 1, 0, s, a2,
					   NULL, NULL, stop, 0));
	OK(hipEventSynchronize(stop));
	assert_int_equal(cell, 9);
	OK(hipLaunchCooperativeKernel(&k_store, one, one, a1, 0, s));
	OK(hipLaunchCooperativeKernel_spt(&k_store, one, one, a2, 0, s));
	OK(hipStreamSynchronize(s));
	assert_int_equal(cell, 9);
	assert_int_equal(hipModuleLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
			 hipErrorInvalidDeviceFunction);
	OK(hipEventDestroy(stop));
	OK(hipStreamDestroy(s));
}

static void append_cb(hipStream_t s, hipError_t status, void *user)
{
	int *log = user, n;

	(void)s;
	if (status == hipSuccess) {
		n = ++log[0];
		log[n] = n;
	}
}

static void test_callbacks_in_order(void **state)
{
	hipStream_t s;
	int log[8] = { 0 };

	(void)state;
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(launch(&k_30ms, NULL, s));
	OK(hipStreamAddCallback(s, append_cb, log, 0));
	OK(hipStreamAddCallback(s, append_cb, log, 0));
	assert_int_equal(hipStreamAddCallback(s, NULL, log, 0), hipErrorInvalidValue);
	OK(hipStreamSynchronize(s));
	assert_int_equal(log[0], 2);
	OK(hipStreamDestroy(s));
}

static void test_device_sync_waits_all(void **state)
{
	hipStream_t s[3];

	(void)state;
	for (int i = 0; i < 3; i++) {
		OK(hipStreamCreateWithFlags(&s[i], i ? hipStreamNonBlocking : hipStreamDefault));
		OK(launch(&k_30ms, NULL, s[i]));
	}
	OK(hipLaunchKernel_spt(&k_30ms, one, one, NULL, 0, NULL));
	OK(hipDeviceSynchronize());
	for (int i = 0; i < 3; i++) {
		assert_int_equal(hipStreamQuery(s[i]), hipSuccess);
		OK(hipStreamDestroy(s[i]));
	}
	assert_int_equal(hipStreamQuery_spt(NULL), hipSuccess);
}

static void test_stream_destroy_drains(void **state)
{
	hipStream_t s;
	int cell = 0, v = 5;
	void *args[2] = { &cell, &v };

	(void)state;
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(launch(&k_30ms, NULL, s));
	OK(launch(&k_store, args, s));
	OK(hipStreamDestroy(s));
	assert_int_equal(cell, 5);
}

/* A watchdog polls events while two threads launch and record on stream 0. */
struct hammer {
	hipEvent_t ev;
	int errors;
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	SIMHIP_KERNEL(k_tiny, "tiny", NULL, 100000);

	for (int i = 0; i < 200; i++) {
		if (hipLaunchKernel(&k_tiny, one, one, NULL, 0, NULL) != hipSuccess ||
		    hipEventRecord(h->ev, NULL) != hipSuccess)
			h->errors++;
		hipError_t q = hipEventQuery(h->ev);

		if (q != hipSuccess && q != hipErrorNotReady)
			h->errors++;
	}
	return NULL;
}

static void test_concurrent_api_calls(void **state)
{
	struct hammer h[3];
	pthread_t th[3];

	(void)state;
	for (int i = 0; i < 3; i++) {
		h[i].errors = 0;
		OK(hipEventCreateWithFlags(&h[i].ev, hipEventDisableTiming));
		assert_int_equal(pthread_create(&th[i], NULL, hammer_thread, &h[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(h[i].errors, 0);
	}
	OK(hipDeviceSynchronize());
	for (int i = 0; i < 3; i++) {
		assert_int_equal(hipEventQuery(h[i].ev), hipSuccess);
		OK(hipEventDestroy(h[i].ev));
	}
}

/* The scheduling policy a stream worker runs under, printed (main's --worker-policy). */
static int print_worker_policy(void)
{
	int policy = -1;
	void *args[] = { &policy };
	hipStream_t s;

	if (hipStreamCreate(&s) != hipSuccess || launch(&k_policy, args, s) != hipSuccess ||
	    hipStreamSynchronize(s) != hipSuccess)
		return 1;
	printf("%d\n", policy);
	return 0;
}

/* The policy of a stream worker in a fresh process with SIMHIP_BATCH_WORKERS=value. */
static int child_worker_policy(const char *value)
{
	char cmd[128];
	int policy = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "SIMHIP_BATCH_WORKERS=%s /proc/%d/exe --worker-policy", value,
		 (int)getpid());
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &policy), 1);
	assert_int_equal(pclose(f), 0);
	return policy;
}

/*
 * SIMHIP_BATCH_WORKERS=1 puts the workers in SCHED_BATCH (the bench's
 * microbenchmark: the simulated device must not preempt the host thread it
 * measures); unset or 0 leaves them as they were created.
 */
static void test_batch_workers(void **state)
{
	(void)state;
	assert_int_equal(child_worker_policy("1"), SCHED_BATCH);
	assert_int_equal(child_worker_policy("0"), SCHED_OTHER);
	assert_int_equal(child_worker_policy(""), SCHED_OTHER);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--worker-policy"))
		return print_worker_policy();

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_basics),
		cmocka_unit_test(test_last_error),
		cmocka_unit_test(test_stream_attributes),
		cmocka_unit_test(test_event_edge_orders),
		cmocka_unit_test(test_no_edge_reads_stale),
		cmocka_unit_test(test_wait_unrecorded_event_is_noop),
		cmocka_unit_test(test_null_stream_syncs_blocking),
		cmocka_unit_test(test_null_stream_ignores_nonblocking),
		cmocka_unit_test(test_null_stream_sync_and_query),
		cmocka_unit_test(test_legacy_handle_is_null_stream),
		cmocka_unit_test(test_blocking_streams_do_not_sync_each_other),
		cmocka_unit_test(test_per_thread_streams),
		cmocka_unit_test(test_per_thread_streams_differ),
		cmocka_unit_test(test_per_thread_stream_is_blocking),
		cmocka_unit_test(test_query_before_and_after),
		cmocka_unit_test(test_elapsed_time),
		cmocka_unit_test(test_event_rerecord_follows_latest),
		cmocka_unit_test(test_event_handle_reuse),
		cmocka_unit_test(test_destroyed_event_with_pending_record),
		cmocka_unit_test(test_bad_stream_handles),
		cmocka_unit_test(test_bad_event_handles),
		cmocka_unit_test(test_bad_kernels_and_pointers),
		cmocka_unit_test(test_ext_launch_start_stop),
		cmocka_unit_test(test_module_launches),
		cmocka_unit_test(test_callbacks_in_order),
		cmocka_unit_test(test_device_sync_waits_all),
		cmocka_unit_test(test_stream_destroy_drains),
		cmocka_unit_test(test_concurrent_api_calls),
		cmocka_unit_test(test_batch_workers),
	};

	/* fixed settings, whatever the caller's environment says */
	setenv("SIMHIP_TIME_SCALE", "1", 1);
	setenv("SIMHIP_BANDWIDTH_MBPS", "4000", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
