/* SPDX-License-Identifier: MIT */
/*
 * simhip memory: allocations, copies and memsets performed by the stream
 * worker at a simulated bandwidth (set to 200 MB/s here: 4 MB take 20 ms).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "simhip.h"

#define OK(call) assert_int_equal((call), hipSuccess)
#define MB (1u << 20)
#define BIG (4 * MB) /* 4 MiB at 200 MB/s: about 21 ms */

static const dim3 one = { 1, 1, 1 };
SIMHIP_KERNEL(k_slow, "slow", NULL, 50000000ull);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static void test_malloc_free(void **state)
{
	void *d = NULL, *h = NULL, *z = (void *)1;

	(void)state;
	OK(hipMalloc(&d, 1000));
	assert_non_null(d);
	assert_int_equal((uintptr_t)d % 256, 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(((unsigned char *)d)[i], 0);
	OK(hipHostMalloc(&h, 64, 0));
	OK(hipMalloc(&z, 0));
	assert_null(z);
	OK(hipFree(d));
	assert_int_equal(hipFree(d), hipErrorInvalidValue); /* double free */
	OK(hipHostFree(h));
}

static void test_async_copy_takes_bandwidth_time(void **state)
{
	hipStream_t s;
	unsigned char *src = malloc(BIG), *host = malloc(BIG);
	void *dev;
	double t0, dt;

	(void)state;
	assert_non_null(src);
	assert_non_null(host);
	fill(src, BIG, 3);
	OK(hipMalloc(&dev, BIG));
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	t0 = now_ms();
	OK(hipMemcpyAsync(dev, src, BIG, hipMemcpyHostToDevice, s));
	assert_int_equal(hipStreamQuery(s), hipErrorNotReady); /* returned before the copy ended */
	OK(hipMemcpyDtoHAsync(host, dev, BIG, s));
	OK(hipStreamSynchronize(s));
	dt = now_ms() - t0;
	assert_true(dt >= 38.0 && dt < 5000.0); /* two copies of ~21 ms */
	assert_memory_equal(host, src, BIG);
	OK(hipStreamDestroy(s));
	OK(hipFree(dev));
	free(src);
	free(host);
}

static void test_memcpy_with_stream_blocks(void **state)
{
	hipStream_t s;
	unsigned char src[256], dst[256] = { 0 };
	double t0;

	(void)state;
	fill(src, sizeof(src), 7);
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(hipLaunchKernel(&k_slow, one, one, NULL, 0, s));
	t0 = now_ms();
	OK(hipMemcpyWithStream(dst, src, sizeof(src), hipMemcpyHostToHost, s));
	assert_true(now_ms() - t0 >= 40.0); /* waited behind the 50 ms kernel */
	assert_int_equal(hipStreamQuery(s), hipSuccess);
	assert_memory_equal(dst, src, sizeof(src));
	assert_int_equal(hipMemcpyWithStream(dst, src, 4, (hipMemcpyKind)9, s),
			 hipErrorInvalidMemcpyDirection);
	OK(hipStreamDestroy(s));
}

static void test_sync_copies_wait_for_blocking_streams(void **state)
{
	hipStream_t s;
	unsigned char *src = malloc(BIG), *mid = malloc(BIG), *dst = malloc(BIG);

	(void)state;
	fill(src, BIG, 11);
	OK(hipStreamCreate(&s)); /* blocking: the null-stream hipMemcpy waits for it */
	OK(hipLaunchKernel(&k_slow, one, one, NULL, 0, s));
	OK(hipMemcpyAsync(mid, src, BIG, hipMemcpyHostToDevice, s));
	OK(hipMemcpy(dst, mid, BIG, hipMemcpyDeviceToHost));
	assert_memory_equal(dst, src, BIG);
	OK(hipStreamDestroy(s));
	free(src);
	free(mid);
	free(dst);
}

static void test_copy_variants(void **state)
{
	unsigned char a[512], b[512], c[512], d[512];
	void *dev1, *dev2;

	(void)state;
	fill(a, sizeof(a), 1);
	OK(hipMalloc(&dev1, sizeof(a)));
	OK(hipMalloc(&dev2, sizeof(a)));
	OK(hipMemcpyHtoD(dev1, a, sizeof(a)));
	OK(hipMemcpyDtoD(dev2, dev1, sizeof(a)));
	OK(hipMemcpyDtoH(b, dev2, sizeof(a)));
	assert_memory_equal(a, b, sizeof(a));

	OK(hipMemset(dev1, 0x5a, sizeof(a)));
	OK(hipMemcpyHtoDAsync(dev2, a, sizeof(a), NULL));
	OK(hipMemcpyDtoDAsync(dev2, dev1, 100, NULL));
	OK(hipMemcpyPeerAsync(dev1, 0, dev2, 0, sizeof(a), hipStreamPerThread));
	OK(hipStreamSynchronize(hipStreamPerThread));
	OK(hipMemcpyPeer(c, 0, dev1, 0, sizeof(a)));
	for (size_t i = 0; i < sizeof(a); i++)
		assert_int_equal(c[i], i < 100 ? 0x5a : a[i]);
	assert_int_equal(hipMemcpyPeerAsync(dev1, 1, dev2, 0, 4, NULL), hipErrorInvalidDevice);

	OK(hipMemsetAsync(dev1, 0x11, 64, NULL));
	OK(hipMemcpyAsync_spt(d, dev1, sizeof(d), hipMemcpyDeviceToHost, NULL));
	OK(hipStreamSynchronize_spt(NULL));
	assert_int_equal(d[0], 0x11);
	assert_int_equal(d[63], 0x11);
	assert_int_equal(d[64], 0x5a);
	OK(hipMemset_spt(dev1, 0, sizeof(a)));
	OK(hipMemcpy_spt(d, dev1, sizeof(d), hipMemcpyDefault));
	assert_int_equal(d[100], 0);

	assert_int_equal(hipMemcpyAsync(NULL, a, 4, hipMemcpyHostToHost, NULL),
			 hipErrorInvalidValue);
	OK(hipMemcpyAsync(NULL, NULL, 0, hipMemcpyHostToHost, NULL));
	OK(hipFree(dev1));
	OK(hipFree(dev2));
}

static void test_copy_2d(void **state)
{
	unsigned char src[4][16], dst[4][8];

	(void)state;
	fill(&src[0][0], sizeof(src), 5);
	memset(dst, 0, sizeof(dst));
	OK(hipMemcpy2DAsync(dst, 8, src, 16, 6, 4, hipMemcpyHostToHost, NULL));
	OK(hipDeviceSynchronize());
	for (int r = 0; r < 4; r++) {
		assert_memory_equal(dst[r], src[r], 6);
		assert_int_equal(dst[r][6], 0);
	}
	assert_int_equal(hipMemcpy2DAsync(dst, 8, src, 16, 9, 4, hipMemcpyHostToHost, NULL),
			 hipErrorInvalidPitchValue);
}

static void test_free_waits_for_users(void **state)
{
	hipStream_t s;
	unsigned char src[128];
	void *dev;

	(void)state;
	fill(src, sizeof(src), 9);
	OK(hipMalloc(&dev, sizeof(src)));
	OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	OK(hipLaunchKernel(&k_slow, one, one, NULL, 0, s));
	OK(hipMemcpyAsync(dev, src, sizeof(src), hipMemcpyHostToDevice, s));
	OK(hipFree(dev)); /* must not free under the pending copy (ASan would tell) */
	assert_int_equal(hipStreamQuery(s), hipSuccess);
	OK(hipStreamDestroy(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malloc_free),
		cmocka_unit_test(test_async_copy_takes_bandwidth_time),
		cmocka_unit_test(test_memcpy_with_stream_blocks),
		cmocka_unit_test(test_sync_copies_wait_for_blocking_streams),
		cmocka_unit_test(test_copy_variants),
		cmocka_unit_test(test_copy_2d),
		cmocka_unit_test(test_free_waits_for_users),
	};

	setenv("SIMHIP_TIME_SCALE", "1", 1);
	setenv("SIMHIP_BANDWIDTH_MBPS", "200", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
