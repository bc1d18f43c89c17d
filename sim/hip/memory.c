/* SPDX-License-Identifier: MIT */
/*
 * simhip memory: "device" memory is zeroed host memory, tracked so hipFree
 * can reject pointers it did not hand out. Copies and memsets run on the
 * stream's worker and take max(real time, bytes / SIMHIP_BANDWIDTH_MBPS).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SIM_ALLOC_ALIGN 256

static struct ptrset allocations;

static hipError_t alloc_common(void **ptr, size_t size)
{
	size_t rounded = (size + SIM_ALLOC_ALIGN - 1) & ~(size_t)(SIM_ALLOC_ALIGN - 1);
	hipError_t e = sim_enter();
	void *p = NULL;

	if (e == hipSuccess && !ptr)
		e = hipErrorInvalidValue;
	if (e == hipSuccess && size && (rounded < size ||
					!(p = aligned_alloc(SIM_ALLOC_ALIGN, rounded))))
		e = hipErrorOutOfMemory;
	if (e == hipSuccess && p && ptrset_add(&allocations, p)) {
		free(p);
		e = hipErrorOutOfMemory;
	}
	if (e == hipSuccess) {
		if (p)
			memset(p, 0, rounded);
		*ptr = p; /* size 0: NULL */
	}
	return sim_leave(e);
}

/* Like ROCm, freeing first waits for the device, so no queued op still uses it. */
static hipError_t free_common(void *ptr)
{
	hipError_t e = sim_enter();

	if (e == hipSuccess && ptr && !ptrset_has(&allocations, ptr))
		e = hipErrorInvalidValue;
	if (e == hipSuccess && ptr) {
		sim_device_sync_locked();
		/* another thread may have freed it while we waited */
		if (ptrset_del(&allocations, ptr))
			free(ptr);
		else
			e = hipErrorInvalidValue;
	}
	return sim_leave(e);
}

SIMHIP_API hipError_t hipMalloc(void **ptr, size_t size)
{
	return alloc_common(ptr, size);
}

SIMHIP_API hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags)
{
	(void)flags;
	return alloc_common(ptr, size);
}

SIMHIP_API hipError_t hipFree(void *ptr)
{
	return free_common(ptr);
}

SIMHIP_API hipError_t hipHostFree(void *ptr)
{
	return free_common(ptr);
}

/* ---- copies ---------------------------------------------------------- */

static hipError_t copy_bytes(void *dst, const void *src, size_t bytes, hipStream_t h,
				 bool spt, bool wait)
{
	hipError_t e = sim_init();
	struct sim_op *op;

	if (e != hipSuccess)
		return e;
	if (bytes && (!dst || !src))
		return hipErrorInvalidValue;
	op = sim_op_new(SIM_OP_COPY);
	if (!op)
		return hipErrorOutOfMemory;
	op->u.copy.dst = dst;
	op->u.copy.src = src;
	op->u.copy.bytes = bytes;
	op->sim_ns = sim_copy_ns(bytes);
	return sim_submit(op, h, spt, wait);
}

static hipError_t copy_kind(void *dst, const void *src, size_t bytes, hipMemcpyKind kind,
			    hipStream_t h, bool spt, bool wait)
{
	if ((unsigned)kind > hipMemcpyDefault)
		return hipErrorInvalidMemcpyDirection;
	return copy_bytes(dst, src, bytes, h, spt, wait);
}

SIMHIP_API hipError_t hipMemcpy(void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind)
{
	return sim_ret(copy_kind(dst, src, sizeBytes, kind, NULL, false, true));
}

SIMHIP_API hipError_t hipMemcpy_spt(void *dst, const void *src, size_t sizeBytes,
				    hipMemcpyKind kind)
{
	return sim_ret(copy_kind(dst, src, sizeBytes, kind, NULL, true, true));
}

SIMHIP_API hipError_t hipMemcpyWithStream(void *dst, const void *src, size_t sizeBytes,
					  hipMemcpyKind kind, hipStream_t stream)
{
	return sim_ret(copy_kind(dst, src, sizeBytes, kind, stream, false, true));
}

SIMHIP_API hipError_t hipMemcpyAsync(void *dst, const void *src, size_t sizeBytes,
				     hipMemcpyKind kind, hipStream_t stream)
{
	return sim_ret(copy_kind(dst, src, sizeBytes, kind, stream, false, false));
}

SIMHIP_API hipError_t hipMemcpyAsync_spt(void *dst, const void *src, size_t sizeBytes,
					 hipMemcpyKind kind, hipStream_t stream)
{
	return sim_ret(copy_kind(dst, src, sizeBytes, kind, stream, true, false));
}

SIMHIP_API hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void *src, size_t sizeBytes)
{
	return sim_ret(copy_bytes(dst, src, sizeBytes, NULL, false, true));
}

SIMHIP_API hipError_t hipMemcpyDtoH(void *dst, hipDeviceptr_t src, size_t sizeBytes)
{
	return sim_ret(copy_bytes(dst, src, sizeBytes, NULL, false, true));
}

SIMHIP_API hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t sizeBytes)
{
	return sim_ret(copy_bytes(dst, src, sizeBytes, NULL, false, true));
}

SIMHIP_API hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void *src, size_t sizeBytes,
					 hipStream_t stream)
{
	return sim_ret(copy_bytes(dst, src, sizeBytes, stream, false, false));
}

SIMHIP_API hipError_t hipMemcpyDtoHAsync(void *dst, hipDeviceptr_t src, size_t sizeBytes,
					 hipStream_t stream)
{
	return sim_ret(copy_bytes(dst, src, sizeBytes, stream, false, false));
}

SIMHIP_API hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t sizeBytes,
					 hipStream_t stream)
{
	return sim_ret(copy_bytes(dst, src, sizeBytes, stream, false, false));
}

SIMHIP_API hipError_t hipMemcpyPeer(void *dst, int dstDeviceId, const void *src, int srcDeviceId,
				    size_t sizeBytes)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && (dstDeviceId != 0 || srcDeviceId != 0))
		e = hipErrorInvalidDevice;
	if (e == hipSuccess)
		e = copy_bytes(dst, src, sizeBytes, NULL, false, true);
	return sim_ret(e);
}

/*
 * As in ROCm <= 6.0, the peer copy re-enters the exported hipMemcpyAsync (a
 * call through the PLT), so a probe on hipMemcpyAsync fires nested in it.
 */
SIMHIP_API hipError_t hipMemcpyPeerAsync(void *dst, int dstDeviceId, const void *src,
					 int srcDevice, size_t sizeBytes, hipStream_t stream)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && (dstDeviceId != 0 || srcDevice != 0))
		e = hipErrorInvalidDevice;
	if (e != hipSuccess)
		return sim_ret(e);
	return hipMemcpyAsync(dst, src, sizeBytes, hipMemcpyDeviceToDevice, stream);
}

SIMHIP_API hipError_t hipMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
				       size_t width, size_t height, hipMemcpyKind kind,
				       hipStream_t stream)
{
	hipError_t e = sim_init();
	struct sim_op *op;

	if (e != hipSuccess)
		return sim_ret(e);
	if ((unsigned)kind > hipMemcpyDefault)
		return sim_ret(hipErrorInvalidMemcpyDirection);
	if (width > dpitch || width > spitch)
		return sim_ret(hipErrorInvalidPitchValue);
	if (width && height && (!dst || !src))
		return sim_ret(hipErrorInvalidValue);
	op = sim_op_new(SIM_OP_COPY2D);
	if (!op)
		return sim_ret(hipErrorOutOfMemory);
	op->u.copy2d.dst = dst;
	op->u.copy2d.dpitch = dpitch;
	op->u.copy2d.src = src;
	op->u.copy2d.spitch = spitch;
	op->u.copy2d.width = width;
	op->u.copy2d.height = height;
	op->sim_ns = sim_copy_ns(width * height);
	return sim_ret(sim_submit(op, stream, false, false));
}

/* ---- memset ---------------------------------------------------------- */

static hipError_t memset_common(void *dst, int value, size_t bytes, hipStream_t h, bool spt,
				bool wait)
{
	hipError_t e = sim_init();
	struct sim_op *op;

	if (e != hipSuccess)
		return e;
	if (bytes && !dst)
		return hipErrorInvalidValue;
	op = sim_op_new(SIM_OP_MEMSET);
	if (!op)
		return hipErrorOutOfMemory;
	op->u.memset.dst = dst;
	op->u.memset.value = value;
	op->u.memset.bytes = bytes;
	op->sim_ns = sim_copy_ns(bytes);
	return sim_submit(op, h, spt, wait);
}

SIMHIP_API hipError_t hipMemset(void *dst, int value, size_t sizeBytes)
{
	return sim_ret(memset_common(dst, value, sizeBytes, NULL, false, true));
}

SIMHIP_API hipError_t hipMemset_spt(void *dst, int value, size_t sizeBytes)
{
	return sim_ret(memset_common(dst, value, sizeBytes, NULL, true, true));
}

SIMHIP_API hipError_t hipMemsetAsync(void *dst, int value, size_t sizeBytes, hipStream_t stream)
{
	return sim_ret(memset_common(dst, value, sizeBytes, stream, false, false));
}
