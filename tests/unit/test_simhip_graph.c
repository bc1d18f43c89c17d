/* SPDX-License-Identifier: MIT */
/*
 * simhip graphs: stream capture records instead of running, a launch replays
 * the captured ops in captured order on the launch stream (ordered after its
 * earlier work, before its later work), forks and joins inside a capture,
 * and the errors ROCm gives for capture misuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "simhip.h"

#define OK(call) assert_int_equal((call), hipSuccess)
#define SLOW_NS 100000000ull /* 100 ms */

static const dim3 one = { 1, 1, 1 };

/* args[0] = int *log, args[1] = int *pos, args[2] = int value: log[pos++] = value */
static void append_fn(void **args)
{
	int *log = args[0], *pos = args[1];

	log[__atomic_fetch_add(pos, 1, __ATOMIC_RELAXED)] = *(int *)args[2];
}

SIMHIP_KERNEL(k_append, "append", append_fn, 0);
SIMHIP_KERNEL(k_slow, "slow", NULL, SLOW_NS);

struct tape {
	int log[64], pos;
	int v[8];
	void *args[8][3];
};

static void tape_init(struct tape *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < 8; i++) {
		t->v[i] = i;
		t->args[i][0] = t->log;
		t->args[i][1] = &t->pos;
		t->args[i][2] = &t->v[i];
	}
}

static hipError_t append(struct tape *t, int v, hipStream_t s)
{
	return hipLaunchKernel(&k_append, one, one, t->args[v], 0, s);
}

static void test_capture_records_and_replays_in_order(void **state)
{
	hipStream_t cs, ls;
	hipGraph_t g = NULL;
	hipGraphExec_t x = NULL;
	hipStreamCaptureStatus st = hipStreamCaptureStatusNone;
	struct tape t;

	(void)state;
	tape_init(&t);
	OK(hipStreamCreateWithFlags(&cs, hipStreamNonBlocking));
	OK(hipStreamCreateWithFlags(&ls, hipStreamNonBlocking));
	OK(hipStreamBeginCapture(cs, hipStreamCaptureModeGlobal));
	OK(hipStreamIsCapturing(cs, &st));
	assert_int_equal(st, hipStreamCaptureStatusActive);
	OK(append(&t, 1, cs));
	OK(append(&t, 2, cs));
	OK(append(&t, 3, cs));
	/* capture runs nothing and the stream cannot be synchronized meanwhile */
	assert_int_equal(hipStreamSynchronize(cs), hipErrorStreamCaptureUnsupported);
	assert_int_equal(hipStreamQuery(cs), hipErrorStreamCaptureUnsupported);
	OK(hipStreamEndCapture(cs, &g));
	assert_non_null(g);
	OK(hipStreamIsCapturing(cs, &st));
	assert_int_equal(st, hipStreamCaptureStatusNone);
	OK(hipDeviceSynchronize());
	assert_int_equal(t.pos, 0);

	OK(hipGraphInstantiate(&x, g, NULL, NULL, 0));
	OK(hipGraphDestroy(g)); /* the instance keeps its own copy */
	/* launch stream order: 0, the graph (1 2 3), 4; twice */
	for (int r = 0; r < 2; r++) {
		OK(append(&t, 0, ls));
		OK(hipGraphLaunch(x, ls));
		OK(append(&t, 4, ls));
	}
	OK(hipStreamSynchronize(ls));
	assert_int_equal(t.pos, 10);
	for (int i = 0; i < 10; i++)
		assert_int_equal(t.log[i], i % 5);
	OK(hipGraphExecDestroy(x));
	assert_int_equal(hipGraphExecDestroy(x), hipErrorInvalidValue);
	assert_int_equal(hipGraphLaunch(x, ls), hipErrorInvalidValue);
	assert_int_equal(hipGraphDestroy(g), hipErrorInvalidValue);
	OK(hipStreamDestroy(cs));
	OK(hipStreamDestroy(ls));
}

/* The launch is one op of its stream: it waits for the stream's earlier
 * (slow) work and for an event edge made before it. */
static void test_launch_is_ordered_on_its_stream(void **state)
{
	hipStream_t cs, a, b;
	hipGraph_t g;
	hipGraphExec_t x;
	hipEvent_t e;
	struct tape t;

	(void)state;
	tape_init(&t);
	OK(hipStreamCreateWithFlags(&cs, hipStreamNonBlocking));
	OK(hipStreamCreateWithFlags(&a, hipStreamNonBlocking));
	OK(hipStreamCreateWithFlags(&b, hipStreamNonBlocking));
	OK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
	OK(hipStreamBeginCapture(cs, hipStreamCaptureModeThreadLocal));
	OK(append(&t, 2, cs));
	OK(hipStreamEndCapture(cs, &g));
	OK(hipGraphInstantiateWithFlags(&x, g, 0));
	assert_int_equal(hipGraphInstantiateWithFlags(&x, g, 8), hipErrorInvalidValue);

	OK(hipLaunchKernel(&k_slow, one, one, NULL, 0, a));
	OK(append(&t, 1, a));
	OK(hipEventRecord(e, a));
	OK(hipStreamWaitEvent(b, e, 0));
	OK(hipGraphLaunch(x, b));
	OK(hipStreamSynchronize(b));
	assert_int_equal(t.pos, 2);
	assert_int_equal(t.log[0], 1);
	assert_int_equal(t.log[1], 2);

	OK(hipGraphExecDestroy(x));
	OK(hipGraphDestroy(g));
	OK(hipEventDestroy(e));
	OK(hipStreamDestroy(cs));
	OK(hipStreamDestroy(a));
	OK(hipStreamDestroy(b));
}

/* A fork (another stream waits on an event recorded in the capture) and a
 * join back: the forked stream's ops are in the graph, in edge order. */
static void test_fork_join_inside_capture(void **state)
{
	hipStream_t cs, side, ls;
	hipGraph_t g;
	hipGraphExec_t x;
	hipEvent_t fork, join;
	hipStreamCaptureStatus st;
	struct tape t;

	(void)state;
	tape_init(&t);
	OK(hipStreamCreateWithFlags(&cs, hipStreamNonBlocking));
	OK(hipStreamCreateWithFlags(&side, hipStreamNonBlocking));
	OK(hipStreamCreateWithFlags(&ls, hipStreamNonBlocking));
	OK(hipEventCreateWithFlags(&fork, hipEventDisableTiming));
	OK(hipEventCreateWithFlags(&join, hipEventDisableTiming));
	OK(hipStreamBeginCapture(cs, hipStreamCaptureModeGlobal));
	OK(append(&t, 1, cs));
	OK(hipEventRecord(fork, cs));
	assert_int_equal(hipEventQuery(fork), hipErrorCapturedEvent);
	OK(hipStreamWaitEvent(side, fork, 0));
	OK(hipStreamIsCapturing(side, &st));
	assert_int_equal(st, hipStreamCaptureStatusActive);
	OK(append(&t, 2, side));
	OK(hipEventRecord(join, side));
	/* ending from a stream that only joined is not allowed */
	assert_int_equal(hipStreamEndCapture(side, &g), hipErrorStreamCaptureUnmatched);
	OK(hipStreamWaitEvent(cs, join, 0));
	OK(append(&t, 3, cs));
	OK(hipStreamEndCapture(cs, &g));
	OK(hipStreamIsCapturing(side, &st));
	assert_int_equal(st, hipStreamCaptureStatusNone);
	OK(hipGraphInstantiate(&x, g, NULL, NULL, 0));
	OK(hipGraphLaunch(x, ls));
	OK(hipStreamSynchronize(ls));
	assert_int_equal(t.pos, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(t.log[i], i + 1);
	OK(hipEventQuery(fork)); /* never recorded outside a capture */

	/* a fork never joined back fails the capture, which still ends */
	OK(hipStreamBeginCapture(cs, hipStreamCaptureModeGlobal));
	OK(hipEventRecord(fork, cs));
	OK(hipStreamWaitEvent(side, fork, 0));
	OK(append(&t, 4, side));
	assert_int_equal(hipStreamEndCapture(cs, &g), hipErrorStreamCaptureUnjoined);
	OK(hipStreamIsCapturing(cs, &st));
	assert_int_equal(st, hipStreamCaptureStatusNone);
	OK(hipStreamIsCapturing(side, &st));
	assert_int_equal(st, hipStreamCaptureStatusNone);

	OK(hipGraphExecDestroy(x));
	OK(hipEventDestroy(fork));
	OK(hipEventDestroy(join));
	OK(hipStreamDestroy(cs));
	OK(hipStreamDestroy(side));
	OK(hipStreamDestroy(ls));
}

static void test_capture_errors(void **state)
{
	hipStream_t cs, other;
	hipGraph_t g;
	hipEvent_t e;
	int h = 0, d;

	(void)state;
	OK(hipStreamCreateWithFlags(&cs, hipStreamNonBlocking));
	OK(hipStreamCreateWithFlags(&other, hipStreamNonBlocking));
	OK(hipEventCreate(&e));
	assert_int_equal(hipStreamBeginCapture(NULL, hipStreamCaptureModeGlobal),
			 hipErrorStreamCaptureUnsupported);
	assert_int_equal(hipStreamBeginCapture(cs, (hipStreamCaptureMode)7), hipErrorInvalidValue);
	assert_int_equal(hipStreamEndCapture(cs, &g), hipErrorIllegalState);
	OK(hipStreamBeginCapture(cs, hipStreamCaptureModeRelaxed));
	assert_int_equal(hipStreamBeginCapture(cs, hipStreamCaptureModeRelaxed),
			 hipErrorIllegalState);
	/* outside work still running cannot become a dependency of the graph */
	OK(hipLaunchKernel(&k_slow, one, one, NULL, 0, other));
	OK(hipEventRecord(e, other));
	assert_int_equal(hipStreamWaitEvent(cs, e, 0), hipErrorStreamCaptureIsolation);
	OK(hipStreamSynchronize(other));
	OK(hipStreamWaitEvent(cs, e, 0)); /* done: nothing to wait for */
	/* a blocking copy cannot be captured */
	assert_int_equal(hipMemcpyWithStream(&d, &h, sizeof(h), hipMemcpyHostToHost, cs),
			 hipErrorStreamCaptureUnsupported);
	assert_int_equal(hipStreamEndCapture(cs, NULL), hipErrorInvalidValue);
	OK(hipStreamEndCapture(cs, &g));
	assert_int_equal(hipGraphInstantiate(NULL, g, NULL, NULL, 0), hipErrorInvalidValue);
	assert_int_equal(hipGraphInstantiate((hipGraphExec_t *)&h, (hipGraph_t)&h, NULL, NULL, 0),
			 hipErrorInvalidValue);
	OK(hipGraphDestroy(g));
	OK(hipEventDestroy(e));
	OK(hipStreamDestroy(cs));
	OK(hipStreamDestroy(other));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_records_and_replays_in_order),
		cmocka_unit_test(test_launch_is_ordered_on_its_stream),
		cmocka_unit_test(test_fork_join_inside_capture),
		cmocka_unit_test(test_capture_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
