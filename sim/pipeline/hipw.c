// SPDX-License-Identifier: MIT
/*
 * Every HIP and RCCL call the workload makes goes through here: the call,
 * then its truth line with the argument keys nanlog-bpf prints for that API
 * (include/nanlog_apis.h), then, if it failed, the end of the program with
 * the runtime's own error name. On Debian's real libamdhip64 without a GPU
 * the first call fails (hipErrorInvalidDevice on ROCm 5.2.3) and that is how
 * the program ends: a clean exit 1, never a crash on a null handle.
 */
#include <stdio.h>
#include <unistd.h>

#include "pl.h"

#define RUN(c, expr)                        \
	do {                                \
		(c).t_ns = pl_now_ns();     \
		(c).rc = (int)(expr);       \
		pl_called(&(c));            \
	} while (0)

/* A call that frees a handle, logged before any thread can reuse its address. */
#define RUN_FREEING(c, expr)                \
	do {                                \
		pl_hold();                  \
		(c).t_ns = pl_now_ns();     \
		(c).rc = (int)(expr);       \
		pl_called_held(&(c));       \
	} while (0)

#define U(p) ((uint64_t)(uintptr_t)(p))

/* Calls with an out parameter: the handle is read only after the call. */
static void created(struct pl_call *c, uint64_t handle)
{
	c->handle = handle;
	pl_called(c);
}

_Noreturn void pl_die(const char *api, int rc, bool nccl)
{
	const char *name = nccl ? ncclGetErrorString((ncclResult_t)rc)
				: hipGetErrorName((hipError_t)rc);
	struct pl_json j;

	pj_begin(&j, "error");
	pj_str(&j, "api", api);
	pj_num(&j, "rc", rc);
	pj_str(&j, "name", name ? name : "unknown");
	pj_end(&j);
	fprintf(stderr, "pipeline: %s: %s (%d)\n", api, name ? name : "unknown error", rc);
	fflush(NULL);
	/* Other threads may be inside the runtime: no atexit, no destructors. */
	_exit(1);
}

void hw_stream_create_prio(hipStream_t *s, unsigned flags, int prio)
{
	struct pl_call c = { .api = "hipStreamCreateWithPriority",
			     .fields = CF_FLAGS | CF_PRIO | CF_HANDLE, .flags = flags, .prio = prio };

	*s = NULL;
	c.t_ns = pl_now_ns();
	c.rc = (int)hipStreamCreateWithPriority(s, flags, prio);
	created(&c, U(*s));
}

void hw_stream_create_flags(hipStream_t *s, unsigned flags)
{
	struct pl_call c = { .api = "hipStreamCreateWithFlags", .fields = CF_FLAGS | CF_HANDLE,
			     .flags = flags };

	*s = NULL;
	c.t_ns = pl_now_ns();
	c.rc = (int)hipStreamCreateWithFlags(s, flags);
	created(&c, U(*s));
}

void hw_stream_destroy(hipStream_t s)
{
	struct pl_call c = { .api = "hipStreamDestroy", .fields = CF_STREAM, .stream = U(s) };

	RUN_FREEING(c, hipStreamDestroy(s));
}

void hw_stream_sync(hipStream_t s)
{
	struct pl_call c = { .api = "hipStreamSynchronize", .fields = CF_STREAM, .stream = U(s) };

	RUN(c, hipStreamSynchronize(s));
}

void hw_device_sync(void)
{
	struct pl_call c = { .api = "hipDeviceSynchronize" };

	RUN(c, hipDeviceSynchronize());
}

void hw_event_create(hipEvent_t *e, unsigned flags)
{
	struct pl_call c = { .api = "hipEventCreateWithFlags", .fields = CF_FLAGS | CF_HANDLE,
			     .flags = flags };

	*e = NULL;
	c.t_ns = pl_now_ns();
	c.rc = (int)hipEventCreateWithFlags(e, flags);
	created(&c, U(*e));
}

void hw_event_destroy(hipEvent_t e)
{
	struct pl_call c = { .api = "hipEventDestroy", .fields = CF_EVENT, .event = U(e) };

	RUN_FREEING(c, hipEventDestroy(e));
}

void hw_event_record(hipEvent_t e, hipStream_t s, long *seq)
{
	struct pl_call c = { .api = "hipEventRecord", .fields = CF_EVENT | CF_STREAM,
			     .event = U(e), .stream = U(s) };

	RUN(c, hipEventRecord(e, s));
	if (seq)
		*seq = c.seq;
}

void hw_stream_wait(hipStream_t s, hipEvent_t e, long *seq)
{
	struct pl_call c = { .api = "hipStreamWaitEvent", .fields = CF_STREAM | CF_EVENT | CF_FLAGS,
			     .stream = U(s), .event = U(e), .flags = 0 };

	RUN(c, hipStreamWaitEvent(s, e, 0));
	if (seq)
		*seq = c.seq;
}

int hw_event_query(hipEvent_t e)
{
	struct pl_call c = { .api = "hipEventQuery", .fields = CF_EVENT, .event = U(e),
			     .ok_rc = hipErrorNotReady };

	RUN(c, hipEventQuery(e));
	return c.rc;
}

void hw_event_elapsed(float *ms, hipEvent_t start, hipEvent_t stop)
{
	struct pl_call c = { .api = "hipEventElapsedTime", .fields = CF_EVENT | CF_STOP | CF_MS,
			     .event = U(start), .stop = U(stop) };

	*ms = 0;
	c.t_ns = pl_now_ns();
	c.rc = (int)hipEventElapsedTime(ms, start, stop);
	c.ms = *ms;
	pl_called(&c);
}

void hw_malloc(void **p, size_t n)
{
	struct pl_call c = { .api = "hipMalloc", .fields = CF_BYTES | CF_HANDLE, .bytes = n };

	*p = NULL;
	c.t_ns = pl_now_ns();
	c.rc = (int)hipMalloc(p, n);
	created(&c, U(*p));
}

void hw_free(void *p)
{
	struct pl_call c = { .api = "hipFree", .fields = CF_DST, .dst = U(p) };

	RUN_FREEING(c, hipFree(p));
}

void hw_memcpy_async(void *dst, const void *src, size_t n, hipMemcpyKind k, hipStream_t s)
{
	struct pl_call c = { .api = "hipMemcpyAsync",
			     .fields = CF_DST | CF_SRC | CF_BYTES | CF_KIND | CF_STREAM,
			     .dst = U(dst), .src = U(src), .bytes = n, .kind = k, .stream = U(s) };

	RUN(c, hipMemcpyAsync(dst, src, n, k, s));
}

void hw_memcpy_with_stream(void *dst, const void *src, size_t n, hipMemcpyKind k, hipStream_t s)
{
	struct pl_call c = { .api = "hipMemcpyWithStream",
			     .fields = CF_DST | CF_SRC | CF_BYTES | CF_KIND | CF_STREAM,
			     .dst = U(dst), .src = U(src), .bytes = n, .kind = k, .stream = U(s) };

	RUN(c, hipMemcpyWithStream(dst, src, n, k, s));
}

void hw_launch(simhip_kernel_t *k, unsigned grid, void **args, hipStream_t s)
{
	struct pl_call c = { .api = "hipLaunchKernel", .fields = CF_STREAM | CF_FN,
			     .stream = U(s), .fn = U(k), .kernel = k->name };

	RUN(c, hipLaunchKernel(k, (dim3){ grid, 1, 1 }, (dim3){ 256, 1, 1 }, args, 0, s));
}

void hw_launch_gemm(simhip_kernel_t *k, unsigned grid, void **args, hipStream_t s)
{
	struct pl_call c = { .api = "hipExtModuleLaunchKernel",
			     .fields = CF_STREAM | CF_EVENT | CF_STOP | CF_FLAGS | CF_FN,
			     .stream = U(s), .fn = U(k), .kernel = k->name };

	/* Tensile kernels take global work sizes, not block counts. */
	RUN(c, simhip_hipExtModuleLaunchKernel((hipFunction_t)k, grid * 256, 1, 1, 256, 1, 1, 0, s,
					       args, NULL, NULL, NULL, 0));
}

void hw_launch_module(simhip_kernel_t *k, unsigned grid, void **args, hipStream_t s)
{
	struct pl_call c = { .api = "hipModuleLaunchKernel", .fields = CF_STREAM | CF_FN,
			     .stream = U(s), .fn = U(k), .kernel = k->name };

	RUN(c, hipModuleLaunchKernel((hipFunction_t)k, grid, 1, 1, 128, 1, 1, 0, s, args, NULL));
}

void hw_launch_spt(simhip_kernel_t *k, unsigned grid, void **args, hipStream_t s)
{
	struct pl_call c = { .api = "hipLaunchKernel_spt", .fields = CF_STREAM | CF_FN,
			     .stream = U(s), .fn = U(k), .kernel = k->name };

	RUN(c, hipLaunchKernel_spt(k, (dim3){ grid, 1, 1 }, (dim3){ 256, 1, 1 }, args, 0, s));
}

void hw_stream_sync_spt(hipStream_t s)
{
	struct pl_call c = { .api = "hipStreamSynchronize_spt", .fields = CF_STREAM,
			     .stream = U(s) };

	RUN(c, hipStreamSynchronize_spt(s));
}

void hw_capture_begin(hipStream_t s)
{
	struct pl_call c = { .api = "hipStreamBeginCapture", .fields = CF_STREAM | CF_FLAGS,
			     .stream = U(s), .flags = hipStreamCaptureModeThreadLocal };

	RUN(c, hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal));
}

void hw_capture_end(hipStream_t s, hipGraph_t *g)
{
	struct pl_call c = { .api = "hipStreamEndCapture", .fields = CF_STREAM | CF_HANDLE,
			     .stream = U(s), .handle_key = "graph" };

	*g = NULL;
	c.t_ns = pl_now_ns();
	c.rc = (int)hipStreamEndCapture(s, g);
	created(&c, U(*g));
}

void hw_graph_instantiate(hipGraphExec_t *x, hipGraph_t g)
{
	struct pl_call c = { .api = "hipGraphInstantiateWithFlags",
			     .fields = CF_FN | CF_FLAGS | CF_HANDLE, .fn = U(g), .flags = 0,
			     .fn_key = "graph", .handle_key = "exec" };

	*x = NULL;
	c.t_ns = pl_now_ns();
	c.rc = (int)hipGraphInstantiateWithFlags(x, g, 0);
	created(&c, U(*x));
}

void hw_graph_launch(hipGraphExec_t x, hipStream_t s)
{
	struct pl_call c = { .api = "hipGraphLaunch", .fields = CF_STREAM | CF_FN, .stream = U(s),
			     .fn = U(x), .fn_key = "exec" };

	RUN(c, hipGraphLaunch(x, s));
}

void hw_graph_exec_destroy(hipGraphExec_t x)
{
	struct pl_call c = { .api = "hipGraphExecDestroy", .fields = CF_FN, .fn = U(x),
			     .fn_key = "exec" };

	RUN_FREEING(c, hipGraphExecDestroy(x));
}

void hw_graph_destroy(hipGraph_t g)
{
	struct pl_call c = { .api = "hipGraphDestroy", .fields = CF_FN, .fn = U(g),
			     .fn_key = "graph" };

	RUN_FREEING(c, hipGraphDestroy(g));
}

void hw_nccl_init(ncclComm_t *comm)
{
	struct pl_call u = { .api = "ncclGetUniqueId", .nccl = true };
	struct pl_call c = { .api = "ncclCommInitRank", .nccl = true };
	ncclUniqueId id;

	RUN(u, ncclGetUniqueId(&id));
	*comm = NULL;
	RUN(c, ncclCommInitRank(comm, 1, id, 0));
}

void hw_nccl_destroy(ncclComm_t comm)
{
	struct pl_call c = { .api = "ncclCommDestroy", .nccl = true };

	RUN(c, ncclCommDestroy(comm));
}

void hw_alltoall(const void *send, void *recv, size_t count, ncclComm_t comm, hipStream_t s)
{
	struct pl_call c = { .api = "ncclAllToAll", .nccl = true,
			     .fields = CF_STREAM | CF_DST | CF_SRC | CF_COUNT,
			     .stream = U(s), .dst = U(recv), .src = U(send), .count = count };

	RUN(c, ncclAllToAll(send, recv, count, ncclUint32, comm, s));
}
