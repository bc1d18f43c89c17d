/* SPDX-License-Identifier: MIT */
/*
 * What a program needs, beyond Debian's real HIP headers, to run on simhip,
 * the project's CPU implementation of the HIP stream/event ABI
 * (build/sim/libamdhip64.so.5). Programs built with this header run unchanged
 * on the real ROCm 5.2.3 library, where every device call fails with
 * hipErrorNoDevice.
 *
 * Kernel convention: the `function_address` given to hipLaunchKernel and
 * friends (and the hipFunction_t given to hipModuleLaunchKernel) points to a
 * struct simhip_kernel. The stream's worker thread calls fn(args, user) with
 * the launch's kernel-argument array, then lets the simulated device time
 * `duration_ns` elapse (measured from the start of the kernel) before the next
 * op of that stream starts. A launch whose function_address does not carry
 * SIMHIP_KERNEL_MAGIC fails with hipErrorInvalidDeviceFunction.
 */
#ifndef SIMHIP_H
#define SIMHIP_H

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>
#include <stdint.h>

#define SIMHIP_KERNEL_MAGIC 0x4c4e52454b4d4953ull /* "SIMKERNL" */

typedef struct simhip_kernel {
	uint64_t magic;       /* SIMHIP_KERNEL_MAGIC */
	const char *name;
	void (*fn)(void **args); /* run on the stream worker; may be NULL */
	uint64_t duration_ns; /* simulated device time of one launch */
} simhip_kernel_t;

#define SIMHIP_KERNEL(var, kname, kfn, dur_ns) \
	static simhip_kernel_t var = { SIMHIP_KERNEL_MAGIC, kname, kfn, dur_ns }

/* hip_ext.h is C++ only in ROCm 5.2.3; this is its extern "C" entry point. */
#ifndef __cplusplus
hipError_t hipExtLaunchKernel(const void *function_address, dim3 numBlocks, dim3 dimBlocks,
			      void **args, size_t sharedMemBytes, hipStream_t stream,
			      hipEvent_t startEvent, hipEvent_t stopEvent, int flags);

/* ROCm 5.2.3 exports hipExtModuleLaunchKernel with C++ linkage only. */
hipError_t simhip_hipExtModuleLaunchKernel(hipFunction_t f, uint32_t globalWorkSizeX,
					   uint32_t globalWorkSizeY, uint32_t globalWorkSizeZ,
					   uint32_t localWorkSizeX, uint32_t localWorkSizeY,
					   uint32_t localWorkSizeZ, size_t sharedMemBytes,
					   hipStream_t hStream, void **kernelParams, void **extra,
					   hipEvent_t startEvent, hipEvent_t stopEvent,
					   uint32_t flags)
	__asm__("_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j");
#endif

#endif /* SIMHIP_H */
