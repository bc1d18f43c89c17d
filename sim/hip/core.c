/* SPDX-License-Identifier: MIT */
/*
 * simhip core: one-time initialisation, environment, clocks, the last-error
 * slot, error names, the device and version queries, and the pointer set.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "internal.h"

pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_progress;
double sim_time_scale = 1.0;
double sim_bandwidth_mbps = 4000.0;
bool sim_batch_workers;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static hipError_t init_status = hipSuccess;
static _Thread_local hipError_t last_error = hipSuccess;

/*
 * Stream workers run this library's code until the process ends: keep it
 * mapped even if whoever loaded it calls dlclose.
 */
static void pin_library(void)
{
	Dl_info info;

	if (dladdr((void *)pin_library, &info) && info.dli_fname)
		(void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void init_once_fn(void)
{
	pthread_condattr_t ca;

	pin_library();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sim_progress, &ca);
	pthread_condattr_destroy(&ca);
	sim_time_scale = sim_env_double("SIMHIP_TIME_SCALE", 1.0);
	sim_bandwidth_mbps = sim_env_double("SIMHIP_BANDWIDTH_MBPS", 4000.0);
	sim_batch_workers = sim_env_double("SIMHIP_BATCH_WORKERS", 0) != 0;
	init_status = sim_streams_init();
}

hipError_t sim_init(void)
{
	pthread_once(&init_once, init_once_fn);
	return init_status;
}

hipError_t sim_ret(hipError_t err)
{
	last_error = err;
	return err;
}

hipError_t sim_enter(void)
{
	hipError_t e = sim_init();

	pthread_mutex_lock(&sim_lock);
	return e;
}

hipError_t sim_leave(hipError_t err)
{
	pthread_mutex_unlock(&sim_lock);
	return sim_ret(err);
}

uint64_t sim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sim_scale_ns(uint64_t ns)
{
	double d = (double)ns * sim_time_scale;

	return d >= 1.8e19 ? UINT64_MAX / 2 : (uint64_t)d;
}

uint64_t sim_copy_ns(size_t bytes)
{
	if (sim_bandwidth_mbps <= 0)
		return 0;
	/* MB/s = 1e6 bytes per second, i.e. 1e-3 bytes per ns */
	return sim_scale_ns((uint64_t)((double)bytes * 1000.0 / sim_bandwidth_mbps));
}

/* ---- pointer set ----------------------------------------------------- */

static size_t ptr_hash(uintptr_t p, size_t mask)
{
	uint64_t x = (uint64_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & mask;
}

static size_t ptrset_find(const struct ptrset *set, uintptr_t p, bool *found)
{
	size_t mask = set->cap - 1, i = ptr_hash(p, mask);

	while (set->slot[i] && set->slot[i] != p)
		i = (i + 1) & mask;
	*found = set->slot[i] == p;
	return i;
}

bool ptrset_has(const struct ptrset *set, const void *p)
{
	bool found;

	if (!p || !set->cap)
		return false;
	ptrset_find(set, (uintptr_t)p, &found);
	return found;
}

static int ptrset_grow(struct ptrset *set)
{
	size_t ncap = set->cap ? set->cap * 2 : 64;
	uintptr_t *old = set->slot;
	size_t ocap = set->cap;
	bool found;

	set->slot = calloc(ncap, sizeof(*set->slot));
	if (!set->slot) {
		set->slot = old;
		return -1;
	}
	set->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i])
			set->slot[ptrset_find(set, old[i], &found)] = old[i];
	free(old);
	return 0;
}

int ptrset_add(struct ptrset *set, const void *p)
{
	bool found;
	size_t i;

	if ((set->n + 1) * 2 > set->cap && ptrset_grow(set))
		return -1;
	i = ptrset_find(set, (uintptr_t)p, &found);
	if (!found) {
		set->slot[i] = (uintptr_t)p;
		set->n++;
	}
	return 0;
}

bool ptrset_del(struct ptrset *set, const void *p)
{
	size_t mask, i, j, k;
	bool found;

	if (!p || !set->cap)
		return false;
	mask = set->cap - 1;
	i = ptrset_find(set, (uintptr_t)p, &found);
	if (!found)
		return false;
	/* backward-shift deletion keeps every probe chain unbroken */
	for (j = (i + 1) & mask; set->slot[j]; j = (j + 1) & mask) {
		k = ptr_hash(set->slot[j], mask);
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			set->slot[i] = set->slot[j];
			i = j;
		}
	}
	set->slot[i] = 0;
	set->n--;
	return true;
}

/* ---- errors ---------------------------------------------------------- */

static const char *error_name(hipError_t e)
{
	switch (e) {
#define N(x) \
	case x:  \
		return #x;
	N(hipSuccess) N(hipErrorInvalidValue) N(hipErrorOutOfMemory) N(hipErrorNotInitialized)
	N(hipErrorDeinitialized) N(hipErrorProfilerDisabled) N(hipErrorProfilerNotInitialized)
	N(hipErrorProfilerAlreadyStarted) N(hipErrorProfilerAlreadyStopped)
	N(hipErrorInvalidConfiguration) N(hipErrorInvalidPitchValue) N(hipErrorInvalidSymbol)
	N(hipErrorInvalidDevicePointer) N(hipErrorInvalidMemcpyDirection)
	N(hipErrorInsufficientDriver) N(hipErrorMissingConfiguration)
	N(hipErrorPriorLaunchFailure) N(hipErrorInvalidDeviceFunction) N(hipErrorNoDevice)
	N(hipErrorInvalidDevice) N(hipErrorInvalidImage) N(hipErrorInvalidContext)
	N(hipErrorContextAlreadyCurrent) N(hipErrorMapFailed) N(hipErrorUnmapFailed)
	N(hipErrorArrayIsMapped) N(hipErrorAlreadyMapped) N(hipErrorNoBinaryForGpu)
	N(hipErrorAlreadyAcquired) N(hipErrorNotMapped) N(hipErrorNotMappedAsArray)
	N(hipErrorNotMappedAsPointer) N(hipErrorECCNotCorrectable) N(hipErrorUnsupportedLimit)
	N(hipErrorContextAlreadyInUse) N(hipErrorPeerAccessUnsupported)
	N(hipErrorInvalidKernelFile) N(hipErrorInvalidGraphicsContext) N(hipErrorInvalidSource)
	N(hipErrorFileNotFound) N(hipErrorSharedObjectSymbolNotFound)
	N(hipErrorSharedObjectInitFailed) N(hipErrorOperatingSystem) N(hipErrorInvalidHandle)
	N(hipErrorIllegalState) N(hipErrorNotFound) N(hipErrorNotReady) N(hipErrorIllegalAddress)
	N(hipErrorLaunchOutOfResources) N(hipErrorLaunchTimeOut) N(hipErrorSetOnActiveProcess)
	N(hipErrorContextIsDestroyed) N(hipErrorAssert) N(hipErrorNotSupported)
	N(hipErrorStreamCaptureUnsupported) N(hipErrorStreamCaptureInvalidated)
	N(hipErrorStreamCaptureMerge) N(hipErrorStreamCaptureUnmatched)
	N(hipErrorStreamCaptureUnjoined) N(hipErrorStreamCaptureIsolation)
	N(hipErrorStreamCaptureImplicit) N(hipErrorCapturedEvent)
	N(hipErrorStreamCaptureWrongThread) N(hipErrorGraphExecUpdateFailure)
	N(hipErrorUnknown) N(hipErrorRuntimeMemory) N(hipErrorRuntimeOther)
#undef N
	default:
		return "hipErrorUnknown";
	}
}

SIMHIP_API const char *hipGetErrorName(hipError_t hip_error)
{
	return error_name(hip_error);
}

/* ROCm 5.2.3 answers the name here too (checked against the real library). */
SIMHIP_API const char *hipGetErrorString(hipError_t hipError)
{
	return error_name(hipError);
}

SIMHIP_API hipError_t hipGetLastError(void)
{
	hipError_t e = last_error;

	last_error = hipSuccess;
	return e;
}

SIMHIP_API hipError_t hipPeekAtLastError(void)
{
	return last_error;
}

/* ---- device and version queries -------------------------------------- */

SIMHIP_API hipError_t hipInit(unsigned int flags)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && flags != 0)
		e = hipErrorInvalidValue;
	return sim_ret(e);
}

SIMHIP_API hipError_t hipGetDeviceCount(int *count)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && !count)
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		*count = 1;
	return sim_ret(e);
}

SIMHIP_API hipError_t hipSetDevice(int deviceId)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && deviceId != 0)
		e = hipErrorInvalidDevice;
	return sim_ret(e);
}

SIMHIP_API hipError_t hipGetDevice(int *deviceId)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && !deviceId)
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		*deviceId = 0;
	return sim_ret(e);
}

SIMHIP_API hipError_t hipGetDeviceProperties(hipDeviceProp_t *prop, int deviceId)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && !prop)
		e = hipErrorInvalidValue;
	if (e == hipSuccess && deviceId != 0)
		e = hipErrorInvalidDevice;
	if (e == hipSuccess) {
		memset(prop, 0, sizeof(*prop));
		strcpy(prop->name, "simhip CPU device");
		strcpy(prop->gcnArchName, "simhip");
		prop->totalGlobalMem = 16ull << 30;
		prop->sharedMemPerBlock = 64 << 10;
		prop->warpSize = 64;
		prop->maxThreadsPerBlock = 1024;
		prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = prop->maxThreadsDim[2] = 1024;
		prop->maxGridSize[0] = prop->maxGridSize[1] = prop->maxGridSize[2] = 0x7fffffff;
		prop->multiProcessorCount = 1;
		prop->concurrentKernels = 1;
		prop->canMapHostMemory = 1;
		prop->cooperativeLaunch = 1;
	}
	return sim_ret(e);
}

SIMHIP_API hipError_t hipDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	hipError_t e = sim_init();

	if (e == hipSuccess) {
		if (leastPriority)
			*leastPriority = SIM_PRIO_LOW;
		if (greatestPriority)
			*greatestPriority = SIM_PRIO_HIGH;
	}
	return sim_ret(e);
}

SIMHIP_API hipError_t hipRuntimeGetVersion(int *runtimeVersion)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && !runtimeVersion)
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		*runtimeVersion = HIP_VERSION;
	return sim_ret(e);
}

SIMHIP_API hipError_t hipDriverGetVersion(int *driverVersion)
{
	hipError_t e = sim_init();

	if (e == hipSuccess && !driverVersion)
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		*driverVersion = HIP_VERSION;
	return sim_ret(e);
}
