/* SPDX-License-Identifier: MIT */
/*
 * Simulated RCCL. This test executable interposes the exported entry points
 * the collectives use (ncclGroupStart/End, ncclSend/Recv, hipExtLaunchKernel):
 * the libraries' calls land here first only because they go through the
 * dynamic symbols, which is what makes uprobes on them fire nested. Each
 * wrapper counts, notes its nesting depth and forwards with RTLD_NEXT.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rccl.h"

#define OK(call) assert_int_equal((call), hipSuccess)
#define NOK(call) assert_int_equal((call), ncclSuccess)

static const dim3 one = { 1, 1, 1 };
SIMHIP_KERNEL(k_slow, "slow", NULL, 100000000ull);

/* ---- interposers ------------------------------------------------------ */

static struct {
	int depth;         /* inside ncclAllToAll(v) */
	int group_start, group_end, send, recv, launches;
	int nested_group_start, nested_send, nested_recv, nested_group_end;
	hipEvent_t last_stop, last_start;
	hipStream_t last_stream;
} seen;

static void *next_sym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p)
		abort();
	return p;
}

ncclResult_t ncclGroupStart(void)
{
	static ncclResult_t (*real)(void);

	if (!real)
		real = (ncclResult_t(*)(void))next_sym("ncclGroupStart");
	seen.group_start++;
	seen.nested_group_start += seen.depth > 0;
	return real();
}

ncclResult_t ncclGroupEnd(void)
{
	static ncclResult_t (*real)(void);

	if (!real)
		real = (ncclResult_t(*)(void))next_sym("ncclGroupEnd");
	seen.group_end++;
	seen.nested_group_end += seen.depth > 0;
	return real();
}

ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
		      hipStream_t stream)
{
	static ncclResult_t (*real)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
				    hipStream_t);

	if (!real)
		real = (ncclResult_t(*)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
					hipStream_t))next_sym("ncclSend");
	seen.send++;
	seen.nested_send += seen.depth > 0;
	return real(buf, count, dt, peer, comm, stream);
}

ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
		      hipStream_t stream)
{
	static ncclResult_t (*real)(void *, size_t, ncclDataType_t, int, ncclComm_t, hipStream_t);

	if (!real)
		real = (ncclResult_t(*)(void *, size_t, ncclDataType_t, int, ncclComm_t,
					hipStream_t))next_sym("ncclRecv");
	seen.recv++;
	seen.nested_recv += seen.depth > 0;
	return real(buf, count, dt, peer, comm, stream);
}

ncclResult_t ncclAllToAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t dt,
			  ncclComm_t comm, hipStream_t stream)
{
	static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
				    hipStream_t);
	ncclResult_t r;

	if (!real)
		real = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
					hipStream_t))next_sym("ncclAllToAll");
	seen.depth++;
	r = real(sendbuff, recvbuff, count, dt, comm, stream);
	seen.depth--;
	return r;
}

hipError_t hipExtLaunchKernel(const void *fn, dim3 grid, dim3 block, void **args, size_t shmem,
			      hipStream_t stream, hipEvent_t start, hipEvent_t stop, int flags)
{
	static hipError_t (*real)(const void *, dim3, dim3, void **, size_t, hipStream_t,
				  hipEvent_t, hipEvent_t, int);

	if (!real)
		real = (hipError_t(*)(const void *, dim3, dim3, void **, size_t, hipStream_t,
				      hipEvent_t, hipEvent_t, int))next_sym("hipExtLaunchKernel");
	seen.launches++;
	seen.last_stop = stop;
	seen.last_start = start;
	seen.last_stream = stream;
	return real(fn, grid, block, args, shmem, stream, start, stop, flags);
}

static int reset_seen(void **state)
{
	(void)state;
	memset(&seen, 0, sizeof(seen));
	return 0;
}

/* ---- communicators ---------------------------------------------------- */

static void test_comm_lifecycle(void **state)
{
	ncclUniqueId id;
	ncclComm_t c, all[4];
	int n = 0, r = -1;

	(void)state;
	NOK(ncclGetUniqueId(&id));
	NOK(ncclCommInitRank(&c, 8, id, 3));
	NOK(ncclCommCount(c, &n));
	NOK(ncclCommUserRank(c, &r));
	assert_int_equal(n, 8);
	assert_int_equal(r, 3);
	NOK(ncclCommDestroy(c));
	assert_int_equal(ncclCommCount(c, &n), ncclInvalidArgument);
	assert_int_equal(ncclCommInitRank(&c, 2, id, 2), ncclInvalidArgument);
	assert_int_equal(ncclCommInitRank(&c, 0, id, 0), ncclInvalidArgument);

	NOK(ncclCommInitAll(all, 4, NULL));
	for (int i = 0; i < 4; i++) {
		NOK(ncclCommUserRank(all[i], &r));
		assert_int_equal(r, i);
		NOK(ncclCommDestroy(all[i]));
	}
	assert_string_equal(ncclGetErrorString(ncclInvalidArgument), "invalid argument");
	assert_int_equal(ncclGroupEnd(), ncclInvalidUsage);
}

static ncclComm_t comm_of(int nranks)
{
	ncclUniqueId id;
	ncclComm_t c = NULL;

	assert_int_equal(ncclGetUniqueId(&id), ncclSuccess);
	assert_int_equal(ncclCommInitRank(&c, nranks, id, 0), ncclSuccess);
	return c;
}

/* ---- all-to-all --------------------------------------------------------- */

static void test_alltoall_one_rank_moves_data(void **state)
{
	ncclComm_t c = comm_of(1);
	hipStream_t s;
	int32_t *send, *recv;
	hipEvent_t done;

	(void)state;
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(hipMalloc((void **)&send, 1000 * sizeof(int32_t)));
	OK(hipMalloc((void **)&recv, 1000 * sizeof(int32_t)));
	for (int i = 0; i < 1000; i++)
		send[i] = i * 3 + 1;
	OK(hipLaunchKernel(&k_slow, one, one, NULL, 0, s));
	NOK(ncclAllToAll(send, recv, 1000, ncclInt32, c, s));
	done = seen.last_stop;
	assert_non_null(done);
	assert_null(seen.last_start);
	assert_ptr_equal(seen.last_stream, s);
	assert_int_equal(hipEventQuery(done), hipErrorNotReady); /* behind the slow kernel */
	assert_int_equal(recv[999], 0);
	OK(hipEventSynchronize(done));
	assert_int_equal(hipEventQuery(done), hipSuccess);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(recv[i], i * 3 + 1);
	/* one done event per communicator, reused by every collective */
	NOK(ncclAllToAll(send, recv, 10, ncclInt32, c, s));
	assert_ptr_equal(seen.last_stop, done);
	OK(hipStreamSynchronize(s));
	NOK(ncclCommDestroy(c));
	OK(hipFree(send));
	OK(hipFree(recv));
	OK(hipStreamDestroy(s));
}

static void test_alltoall_calls_exports_nested(void **state)
{
	ncclComm_t c = comm_of(4);
	int64_t send[8], recv[8];

	(void)state;
	for (int i = 0; i < 8; i++)
		send[i] = 100 + i;
	seen.launches = 0;
	NOK(ncclAllToAll(send, recv, 2, ncclInt64, c, NULL));
	assert_int_equal(seen.group_start, 1);
	assert_int_equal(seen.group_end, 1);
	assert_int_equal(seen.send, 4);
	assert_int_equal(seen.recv, 4);
	assert_int_equal(seen.nested_group_start, 1);
	assert_int_equal(seen.nested_group_end, 1);
	assert_int_equal(seen.nested_send, 4);
	assert_int_equal(seen.nested_recv, 4);
	assert_int_equal(seen.launches, 1);
	OK(hipStreamSynchronize(NULL));
	/* virtual peers mirror this rank: chunk p comes back from peer p */
	assert_memory_equal(recv, send, sizeof(send));
	NOK(ncclCommDestroy(c));
}

static void test_lone_send_does_not_reenter_group_exports(void **state)
{
	ncclComm_t c = comm_of(2);
	float buf[4] = { 1, 2, 3, 4 }, out[4] = { 9, 9, 9, 9 };

	(void)state;
	NOK(ncclSend(buf, 4, ncclFloat32, 1, c, NULL));
	NOK(ncclRecv(out, 4, ncclFloat32, 1, c, NULL));
	assert_int_equal(seen.group_start, 0);
	assert_int_equal(seen.group_end, 0);
	assert_int_equal(seen.launches, 2);
	OK(hipDeviceSynchronize());
	/* separate groups: nothing sent in the recv's group, so zeros */
	assert_true(out[0] == 0.0f && out[3] == 0.0f);
	assert_int_equal(ncclSend(buf, 4, ncclFloat32, 2, c, NULL), ncclInvalidArgument);
	NOK(ncclCommDestroy(c));
}

static void test_alltoallv_counts_and_displacements(void **state)
{
	ncclComm_t c = comm_of(2);
	int32_t send[10], recv[12];
	size_t scounts[2] = { 3, 4 }, sdispls[2] = { 0, 5 };
	size_t rcounts[2] = { 3, 2 }, rdispls[2] = { 6, 0 };

	(void)state;
	for (int i = 0; i < 10; i++)
		send[i] = 10 + i;
	for (int i = 0; i < 12; i++)
		recv[i] = -1;
	NOK(ncclAllToAllv(send, scounts, sdispls, recv, rcounts, rdispls, ncclInt32, c, NULL));
	assert_int_equal(seen.nested_send, 0); /* ncclAllToAllv is not wrapped here */
	assert_int_equal(seen.send, 2);
	assert_int_equal(seen.recv, 2);
	assert_int_equal(seen.group_start, 1);
	OK(hipStreamSynchronize(NULL));
	/* peer 0: 3 elements from send[0..2] to recv[6..8] */
	assert_int_equal(recv[6], 10);
	assert_int_equal(recv[8], 12);
	/* peer 1: 4 sent from send[5..8], 2 received into recv[0..1] */
	assert_int_equal(recv[0], 15);
	assert_int_equal(recv[1], 16);
	assert_int_equal(recv[2], -1); /* untouched */
	NOK(ncclCommDestroy(c));
}

/* The PyTorch all_to_all_single(async_op=True) sequence on an internal stream N. */
static void test_pytorch_pattern_orders(void **state)
{
	ncclComm_t c = comm_of(1);
	hipStream_t n;
	hipEvent_t ev, end;
	int32_t *send, *recv, expect = 0;

	(void)state;
	OK(hipStreamCreateWithFlags(&n, hipStreamNonBlocking));
	OK(hipEventCreateWithFlags(&ev, hipEventDisableTiming));
	OK(hipEventCreateWithFlags(&end, hipEventDisableTiming));
	OK(hipMalloc((void **)&send, 256 * sizeof(int32_t)));
	OK(hipMalloc((void **)&recv, 256 * sizeof(int32_t)));
	/* producer on the current stream (0): slow kernel, then fill send */
	OK(hipLaunchKernel(&k_slow, one, one, NULL, 0, NULL));
	OK(hipMemsetAsync(send, 0x01, 256 * sizeof(int32_t), NULL));
	OK(hipEventRecord(ev, NULL));
	OK(hipStreamWaitEvent(n, ev, 0));
	NOK(ncclAllToAll(send, recv, 256, ncclInt32, c, n));
	OK(hipEventRecord(end, n));
	assert_int_equal(hipEventQuery(end), hipErrorNotReady);
	OK(hipStreamWaitEvent(NULL, end, 0));
	OK(hipStreamSynchronize(NULL));
	assert_int_equal(hipEventQuery(end), hipSuccess);
	memset(&expect, 0x01, sizeof(expect));
	assert_int_equal(recv[0], expect);
	assert_int_equal(recv[255], expect);
	OK(hipEventDestroy(ev));
	OK(hipEventDestroy(end));
	OK(hipFree(send));
	OK(hipFree(recv));
	OK(hipStreamDestroy(n));
	NOK(ncclCommDestroy(c));
}

static void test_user_group_batches_collectives(void **state)
{
	ncclComm_t cs[2];
	int8_t send[2][4] = { { 1, 2, 3, 4 }, { 5, 6, 7, 8 } }, recv[2][4] = { { 0 } };

	(void)state;
	NOK(ncclCommInitAll(cs, 2, NULL));
	NOK(ncclGroupStart());
	NOK(ncclAllToAll(send[0], recv[0], 2, ncclInt8, cs[0], NULL));
	NOK(ncclAllToAll(send[1], recv[1], 2, ncclUint8, cs[1], NULL));
	assert_int_equal(seen.launches, 0); /* nothing runs before the outer group ends */
	NOK(ncclGroupEnd());
	assert_int_equal(seen.launches, 2); /* one kernel per communicator */
	OK(hipStreamSynchronize(NULL));
	assert_memory_equal(recv, send, sizeof(send));
	for (int i = 0; i < 2; i++)
		NOK(ncclCommDestroy(cs[i]));
}

static void test_errors(void **state)
{
	ncclComm_t c = comm_of(2);
	int32_t buf[4] = { 0 };
	hipStream_t dead;

	(void)state;
	OK(hipStreamCreate(&dead));
	OK(hipStreamDestroy(dead));
	assert_int_equal(ncclAllToAll(buf, buf, 2, ncclInt32, c, dead), ncclUnhandledCudaError);
	assert_int_equal(ncclAllToAll(buf, buf, 2, (ncclDataType_t)42, c, NULL),
			 ncclInvalidArgument);
	assert_int_equal(ncclAllToAll(buf, buf, 2, ncclInt32, (ncclComm_t)buf, NULL),
			 ncclInvalidArgument);
	assert_int_equal(ncclAllReduce(buf, buf, 4, ncclInt32, (ncclRedOp_t)9, c, NULL),
			 ncclInvalidArgument);
	/* an invalid call inside a group poisons the group */
	NOK(ncclGroupStart());
	assert_int_equal(ncclSend(buf, 1, ncclInt32, 5, c, NULL), ncclInvalidArgument);
	assert_int_equal(ncclGroupEnd(), ncclInvalidArgument);
	NOK(ncclCommDestroy(c));
}

/* ---- all-reduce --------------------------------------------------------- */

static void test_allreduce(void **state)
{
	ncclComm_t one_rank = comm_of(1), four = comm_of(4);
	int32_t a[5] = { 1, 2, 3, -4, 5 }, b[5] = { 0 };
	double x[3] = { 1.5, -2, 0.25 }, y[3] = { 0 };
	uint16_t h[2] = { 0x3c00, 0x4000 };

	(void)state;
	NOK(ncclAllReduce(a, b, 5, ncclInt32, ncclSum, one_rank, NULL));
	OK(hipStreamSynchronize(NULL));
	assert_memory_equal(a, b, sizeof(a));
	NOK(ncclAllReduce(a, b, 5, ncclInt32, ncclSum, four, NULL));
	NOK(ncclAllReduce(x, y, 3, ncclFloat64, ncclProd, four, NULL));
	OK(hipStreamSynchronize(NULL));
	assert_int_equal(b[0], 4);
	assert_int_equal(b[3], -16);
	assert_true(y[0] == 1.5 * 1.5 * 1.5 * 1.5 && y[1] == 16.0);
	NOK(ncclAllReduce(x, y, 3, ncclFloat64, ncclMax, four, NULL));
	NOK(ncclAllReduce(h, h, 2, ncclFloat16, ncclAvg, four, NULL));
	OK(hipStreamSynchronize(NULL));
	assert_memory_equal(x, y, sizeof(x));
	assert_int_equal(ncclAllReduce(h, h, 2, ncclBfloat16, ncclSum, four, NULL),
			 ncclInvalidArgument);
	NOK(ncclCommDestroy(one_rank));
	NOK(ncclCommDestroy(four));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_comm_lifecycle, reset_seen),
		cmocka_unit_test_setup(test_alltoall_one_rank_moves_data, reset_seen),
		cmocka_unit_test_setup(test_alltoall_calls_exports_nested, reset_seen),
		cmocka_unit_test_setup(test_lone_send_does_not_reenter_group_exports, reset_seen),
		cmocka_unit_test_setup(test_alltoallv_counts_and_displacements, reset_seen),
		cmocka_unit_test_setup(test_pytorch_pattern_orders, reset_seen),
		cmocka_unit_test_setup(test_user_group_batches_collectives, reset_seen),
		cmocka_unit_test_setup(test_errors, reset_seen),
		cmocka_unit_test_setup(test_allreduce, reset_seen),
	};

	setenv("SIMHIP_TIME_SCALE", "1", 1);
	setenv("SIMRCCL_BANDWIDTH_MBPS", "10000", 1);
	setenv("SIMRCCL_LATENCY_US", "10", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
