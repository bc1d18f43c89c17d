/* SPDX-License-Identifier: MIT */
/*
 * simhip kernel launches. The function address (or hipFunction_t) must point
 * to a simhip_kernel_t (see simhip.h). Its fields are read at launch time;
 * the stream's worker later calls fn(args) and lets duration_ns (scaled by
 * SIMHIP_TIME_SCALE) elapse from the kernel's start. The args array is handed
 * through as is: it must stay valid until the kernel has run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* Read the descriptor without faulting on a garbage address. */
static bool read_kernel(const void *addr, simhip_kernel_t *k)
{
	struct iovec local = { k, sizeof(*k) }, remote = { (void *)addr, sizeof(*k) };
	ssize_t n;

	if (!addr || ((uintptr_t)addr & (_Alignof(simhip_kernel_t) - 1)))
		return false;
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n < 0 && (errno == ENOSYS || errno == EPERM))
		memcpy(k, addr, sizeof(*k)); /* syscall filtered: trust the pointer */
	else if (n != (ssize_t)sizeof(*k))
		return false;
	return k->magic == SIMHIP_KERNEL_MAGIC;
}

struct launch {
	const void *fn;
	void **args;
	uint64_t blocks;   /* 0 = invalid configuration */
	hipStream_t stream;
	bool spt;
	hipEvent_t start, stop;
};

static hipError_t launch_common(const struct launch *l)
{
	struct sim_event *start = NULL, *stop = NULL;
	struct sim_stream *s;
	struct sim_op *op;
	simhip_kernel_t k;
	hipError_t e = sim_init();

	if (e != hipSuccess)
		return sim_ret(e);
	if (!read_kernel(l->fn, &k))
		return sim_ret(hipErrorInvalidDeviceFunction);
	if (l->blocks == 0)
		return sim_ret(hipErrorInvalidValue);
	op = sim_op_new(SIM_OP_KERNEL);
	if (!op)
		return sim_ret(hipErrorOutOfMemory);
	op->u.kernel.fn = k.fn;
	op->u.kernel.args = l->args;
	op->sim_ns = sim_scale_ns(k.duration_ns);
	e = sim_enter_stream(l->stream, l->spt, &s);
	if (e == hipSuccess && l->start)
		e = sim_event_get_locked(l->start, &start);
	if (e == hipSuccess && l->stop)
		e = sim_event_get_locked(l->stop, &stop);
	if (e == hipSuccess && start)
		e = sim_event_record_locked(start, s);
	if (e == hipSuccess) {
		e = sim_enqueue_locked(s, op, NULL, 0, NULL);
		op = NULL;
	}
	if (e == hipSuccess && stop)
		e = sim_event_record_locked(stop, s);
	free(op); /* NULL once enqueued */
	return sim_leave(e);
}

static uint64_t dim_blocks(dim3 grid, dim3 block)
{
	return (uint64_t)grid.x * grid.y * grid.z * block.x * block.y * block.z;
}

static hipError_t launch3(const void *fn, dim3 grid, dim3 block, void **args, hipStream_t stream,
			  bool spt)
{
	struct launch l = {
		.fn = fn, .args = args, .blocks = dim_blocks(grid, block), .stream = stream, .spt = spt,
	};

	return launch_common(&l);
}

SIMHIP_API hipError_t hipLaunchKernel(const void *function_address, dim3 numBlocks,
				      dim3 dimBlocks, void **args, size_t sharedMemBytes,
				      hipStream_t stream)
{
	(void)sharedMemBytes;
	return launch3(function_address, numBlocks, dimBlocks, args, stream, false);
}

SIMHIP_API hipError_t hipLaunchKernel_spt(const void *function_address, dim3 numBlocks,
					  dim3 dimBlocks, void **args, size_t sharedMemBytes,
					  hipStream_t stream)
{
	(void)sharedMemBytes;
	return launch3(function_address, numBlocks, dimBlocks, args, stream, true);
}

SIMHIP_API hipError_t hipLaunchCooperativeKernel(const void *f, dim3 gridDim, dim3 blockDimX,
						 void **kernelParams, unsigned int sharedMemBytes,
						 hipStream_t stream)
{
	(void)sharedMemBytes;
	return launch3(f, gridDim, blockDimX, kernelParams, stream, false);
}

SIMHIP_API hipError_t hipLaunchCooperativeKernel_spt(const void *f, dim3 gridDim,
						     dim3 blockDimX, void **kernelParams,
						     uint32_t sharedMemBytes, hipStream_t hStream)
{
	(void)sharedMemBytes;
	return launch3(f, gridDim, blockDimX, kernelParams, hStream, true);
}

/* Records startEvent before and stopEvent after the kernel, on its stream. */
SIMHIP_API hipError_t hipExtLaunchKernel(const void *function_address, dim3 numBlocks,
					 dim3 dimBlocks, void **args, size_t sharedMemBytes,
					 hipStream_t stream, hipEvent_t startEvent,
					 hipEvent_t stopEvent, int flags)
{
	struct launch l = {
		.fn = function_address, .args = args, .blocks = dim_blocks(numBlocks, dimBlocks),
		.stream = stream, .start = startEvent, .stop = stopEvent,
	};

	(void)sharedMemBytes;
	(void)flags;
	return launch_common(&l);
}

/* The kernel gets kernelParams; with only `extra` given, it gets extra. */
SIMHIP_API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX,
					    unsigned int gridDimY, unsigned int gridDimZ,
					    unsigned int blockDimX, unsigned int blockDimY,
					    unsigned int blockDimZ, unsigned int sharedMemBytes,
					    hipStream_t stream, void **kernelParams, void **extra)
{
	struct launch l = {
		.fn = (const void *)f,
		.args = kernelParams ? kernelParams : extra,
		.blocks = dim_blocks((dim3){ gridDimX, gridDimY, gridDimZ },
				     (dim3){ blockDimX, blockDimY, blockDimZ }),
		.stream = stream,
	};

	(void)sharedMemBytes;
	return launch_common(&l);
}

/* Exported under its C++ name, as ROCm 5.2.3 does (asm label in simhip.h). */
SIMHIP_API hipError_t simhip_hipExtModuleLaunchKernel(
	hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY,
	uint32_t globalWorkSizeZ, uint32_t localWorkSizeX, uint32_t localWorkSizeY,
	uint32_t localWorkSizeZ, size_t sharedMemBytes, hipStream_t hStream, void **kernelParams,
	void **extra, hipEvent_t startEvent, hipEvent_t stopEvent, uint32_t flags)
{
	struct launch l = {
		.fn = (const void *)f,
		.args = kernelParams ? kernelParams : extra,
		.blocks = dim_blocks((dim3){ globalWorkSizeX, globalWorkSizeY, globalWorkSizeZ },
				     (dim3){ localWorkSizeX, localWorkSizeY, localWorkSizeZ }),
		.stream = hStream,
		.start = startEvent,
		.stop = stopEvent,
	};

	(void)sharedMemBytes;
	(void)flags;
	return launch_common(&l);
}
