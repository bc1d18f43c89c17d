/* SPDX-License-Identifier: MIT */
/*
 * The one table of every probed HIP and RCCL entry point.
 *
 * Read by the BPF programs (which argument slots to capture, whether a return
 * probe is needed), the loader (which symbols to attach in which library), the
 * decoder (which slot holds which field), the docs and the tests. Nothing else
 * repeats this list.
 *
 * Argument slots (x86-64 SysV, at function entry):
 *   R0..R5  = rdi, rsi, rdx, rcx, r8, r9
 *   S1..S8  = [rsp+8] .. [rsp+64] (stack arguments; [rsp] is the return address)
 *   NA      = not present for this API
 *
 * NL_API(id, name, alt_symbol, lib, kind, flags, nstack,
 *        stream, event, event2, dst, src, bytes, kindarg, fixed_kind,
 *        aflags, prio, fn, peer, count, out, out_size)
 *
 *   alt_symbol : another name for the same entry point in some ROCm builds
 *                (ROCm 5.x exports hipExtModuleLaunchKernel C++-mangled), or 0
 *   lib        : NL_LIB_HIP or NL_LIB_RCCL
 *   kind       : what the call does (enum nl_kind)
 *   flags      : NL_AF_RET    needs a return probe (rc, return time, out param)
 *                NL_AF_SPT    per-thread-default-stream twin: stream 0 means
 *                             the calling thread's stream
 *                NL_AF_NESTS  may call other exports of its own library
 *                             (ROCm <= 6.0 hipMemcpyPeerAsync -> hipMemcpyAsync;
 *                             ncclAllToAll -> ncclGroupStart/Send/Recv/GroupEnd):
 *                             the outermost call is reported, inner ones counted.
 *                             A call without it opens no level: made inside an
 *                             open call of its library it is counted, not
 *                             reported (ncclGroupStart calls nothing, so it
 *                             needs no return probe: one trap fewer per
 *                             collective)
 *                NL_AF_OPT    optional: absent from some runtime versions
 *                NL_AF_CFG_STREAM  stream read through the config pointer (below)
 *   nstack     : how many stack slots the entry probe reads (0..8)
 *   fixed_kind : hipMemcpyKind implied by the API (HtoD variants), or -1
 *   out        : slot of an out-pointer dereferenced at return, out_size bytes
 *                (only after rc == 0): the created stream, event, graph
 *                (hipStreamEndCapture) or graph exec (hipGraphInstantiate*),
 *                or hipEventElapsedTime's float
 *   fn         : the kernel; for the graph APIs the graph or graph exec the
 *                call acts on (hipGraphLaunch, *Instantiate*, *Destroy)
 */
#ifndef NANLOG_APIS_H
#define NANLOG_APIS_H

#define NL_R0 0
#define NL_R1 1
#define NL_R2 2
#define NL_R3 3
#define NL_R4 4
#define NL_R5 5
#define NL_S1 6
#define NL_S2 7
#define NL_S3 8
#define NL_S4 9
#define NL_S5 10
#define NL_S6 11
#define NL_S7 12
#define NL_S8 13
#define NL_D0 14 /* a value the entry probe read through a pointer argument (NL_AF_CFG_STREAM) */
#define NL_NA 127 /* outside every slot range, fits int8_t and __u8 */
#define NL_NARGS 16 /* 6 registers + 8 stack slots + 2 spare: a power of two, so BPF can mask slot indexes */
#define NL_MAX_STACK 8

#define NL_LIB_HIP 0
#define NL_LIB_RCCL 1
#define NL_NLIBS 2 /* a power of two: BPF masks library indexes with NL_NLIBS - 1 */

#define NL_AF_RET 0x1
#define NL_AF_SPT 0x2
#define NL_AF_NESTS 0x4
#define NL_AF_OPT 0x8
/*
 * The stream is not an argument but the hipStream_t at byte 32 of the launch
 * configuration the first argument points to (ROCm 6's hipLaunchKernelExC
 * and hipDrvLaunchKernelEx: two dim3 or six unsigned ints and the shared
 * memory size come first, so the 8-byte-aligned stream lands at 32 in both
 * layouts). The entry probe reads it into slot NL_D0.
 */
#define NL_AF_CFG_STREAM 0x10
#define NL_CFG_STREAM_OFFSET 32

/*
 * Launches of an API can be counted in the kernel (nanlog_rec.h, counted
 * runs) when everything the audit takes from them is the stream, read from a
 * register or a stack slot: no start/stop events, no launch configuration.
 */
#define NL_API_COUNTABLE(kind, flags, st, ev, ev2)                                        \
	((kind) == NL_K_LAUNCH && (ev) == NL_NA && (ev2) == NL_NA &&                     \
	 !((flags) & NL_AF_CFG_STREAM) && (st) <= NL_S8)

/*
 * Argument slots a record of an API carries (include/nanlog_rec.h, struct
 * nl_wire): up to its highest named slot, stack and derived slots included.
 */
#define NL_SLOT_END(s) ((s) == NL_NA ? 0 : (s) + 1)
#define NL_MAX2(a, b) ((a) > (b) ? (a) : (b))
#define NL_API_NARGS(st, ev, ev2, dst, src, by, ka, af, pr, fn, peer, cnt, out)                 \
	NL_MAX2(NL_MAX2(NL_MAX2(NL_MAX2(NL_SLOT_END(st), NL_SLOT_END(ev)),                     \
			    NL_MAX2(NL_SLOT_END(ev2), NL_SLOT_END(dst))),                      \
		    NL_MAX2(NL_MAX2(NL_SLOT_END(src), NL_SLOT_END(by)),                        \
			    NL_MAX2(NL_SLOT_END(ka), NL_SLOT_END(af)))),                       \
		NL_MAX2(NL_MAX2(NL_MAX2(NL_SLOT_END(pr), NL_SLOT_END(fn)),                     \
				NL_MAX2(NL_SLOT_END(peer), NL_SLOT_END(cnt))),                 \
			NL_SLOT_END(out)))

enum nl_kind {
	NL_K_COPY = 1,     /* async or stream-ordered copy */
	NL_K_COPY_SYNC,    /* copy that also blocks the host until done */
	NL_K_MEMSET,
	NL_K_LAUNCH,
	NL_K_GRAPH,
	NL_K_EVENT_CREATE,
	NL_K_EVENT_DESTROY,
	NL_K_EVENT_RECORD,
	NL_K_STREAM_WAIT,
	NL_K_EVENT_QUERY,
	NL_K_EVENT_SYNC,
	NL_K_EVENT_ELAPSED,
	NL_K_STREAM_CREATE,
	NL_K_STREAM_DESTROY,
	NL_K_STREAM_SYNC,
	NL_K_STREAM_QUERY,
	NL_K_DEVICE_SYNC,
	NL_K_CAPTURE_BEGIN,
	NL_K_CAPTURE_END,
	NL_K_COLL,         /* collective on a stream */
	NL_K_P2P,          /* ncclSend / ncclRecv */
	NL_K_GROUP_START,
	NL_K_GROUP_END,
	NL_K_COMM,         /* communicator set-up and tear-down: RCCL's own streams/events */
	NL_K_GRAPH_INST,   /* hipGraphInstantiate*: graph (fn slot) -> exec (out) */
	NL_K_GRAPH_DESTROY, /* hipGraphExecDestroy, hipGraphDestroy: the handle in the fn slot */
};

#define NL_HIP_EXT_MODULE_LAUNCH_MANGLED \
	"_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j"

/* clang-format off */
#define NL_API_TABLE(X) \
/*  id                        name                              alt  lib          kind                 flags                      nst stream  event  event2 dst    src    bytes  kindarg fk aflags prio   fn     peer   count  out    osz */ \
X(MEMCPY_ASYNC,               "hipMemcpyAsync",                 0,   NL_LIB_HIP,  NL_K_COPY,           0,                         0, NL_R4, NL_NA, NL_NA, NL_R0, NL_R1, NL_R2, NL_R3, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(MEMCPY_ASYNC_SPT,           "hipMemcpyAsync_spt",             0,   NL_LIB_HIP,  NL_K_COPY,           NL_AF_SPT|NL_AF_OPT,       0, NL_R4, NL_NA, NL_NA, NL_R0, NL_R1, NL_R2, NL_R3, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(MEMCPY_WITH_STREAM,         "hipMemcpyWithStream",            0,   NL_LIB_HIP,  NL_K_COPY_SYNC,      NL_AF_RET,                 0, NL_R4, NL_NA, NL_NA, NL_R0, NL_R1, NL_R2, NL_R3, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(MEMCPY_HTOD_ASYNC,          "hipMemcpyHtoDAsync",             0,   NL_LIB_HIP,  NL_K_COPY,           0,                         0, NL_R3, NL_NA, NL_NA, NL_R0, NL_R1, NL_R2, NL_NA,  1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(MEMCPY_DTOH_ASYNC,          "hipMemcpyDtoHAsync",             0,   NL_LIB_HIP,  NL_K_COPY,           0,                         0, NL_R3, NL_NA, NL_NA, NL_R0, NL_R1, NL_R2, NL_NA,  2, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(MEMCPY_DTOD_ASYNC,          "hipMemcpyDtoDAsync",             0,   NL_LIB_HIP,  NL_K_COPY,           0,                         0, NL_R3, NL_NA, NL_NA, NL_R0, NL_R1, NL_R2, NL_NA,  3, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(MEMCPY_PEER_ASYNC,          "hipMemcpyPeerAsync",             0,   NL_LIB_HIP,  NL_K_COPY,           NL_AF_RET|NL_AF_NESTS,     0, NL_R5, NL_NA, NL_NA, NL_R0, NL_R2, NL_R4, NL_NA,  3, NL_NA, NL_NA, NL_NA, NL_R3, NL_NA, NL_NA, 0) \
X(MEMCPY_2D_ASYNC,            "hipMemcpy2DAsync",               0,   NL_LIB_HIP,  NL_K_COPY,           0,                         2, NL_S2, NL_NA, NL_NA, NL_R0, NL_R2, NL_NA, NL_S1, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(MEMSET_ASYNC,               "hipMemsetAsync",                 0,   NL_LIB_HIP,  NL_K_MEMSET,         0,                         0, NL_R3, NL_NA, NL_NA, NL_R0, NL_NA, NL_R2, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(LAUNCH_KERNEL,              "hipLaunchKernel",                0,   NL_LIB_HIP,  NL_K_LAUNCH,         0,                         2, NL_S2, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(LAUNCH_KERNEL_SPT,          "hipLaunchKernel_spt",            0,   NL_LIB_HIP,  NL_K_LAUNCH,         NL_AF_SPT|NL_AF_OPT,       2, NL_S2, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(LAUNCH_COOP_KERNEL,         "hipLaunchCooperativeKernel",     0,   NL_LIB_HIP,  NL_K_LAUNCH,         0,                         2, NL_S2, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(LAUNCH_COOP_KERNEL_SPT,     "hipLaunchCooperativeKernel_spt", 0,   NL_LIB_HIP,  NL_K_LAUNCH,         NL_AF_SPT|NL_AF_OPT,       2, NL_S2, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(EXT_LAUNCH_KERNEL,          "hipExtLaunchKernel",             0,   NL_LIB_HIP,  NL_K_LAUNCH,         0,                         5, NL_S2, NL_S3, NL_S4, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_S5, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(MODULE_LAUNCH_KERNEL,       "hipModuleLaunchKernel",          0,   NL_LIB_HIP,  NL_K_LAUNCH,         0,                         3, NL_S3, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(EXT_MODULE_LAUNCH_KERNEL,   "hipExtModuleLaunchKernel",       NL_HIP_EXT_MODULE_LAUNCH_MANGLED, \
                                                                     NL_LIB_HIP,  NL_K_LAUNCH,         NL_AF_OPT,                 8, NL_S3, NL_S6, NL_S7, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_S8, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(LAUNCH_KERNEL_EXC,          "hipLaunchKernelExC",             0,   NL_LIB_HIP,  NL_K_LAUNCH,         NL_AF_OPT|NL_AF_CFG_STREAM, 0, NL_D0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R1, NL_NA, NL_NA, NL_NA, 0) \
X(DRV_LAUNCH_KERNEL_EX,       "hipDrvLaunchKernelEx",           0,   NL_LIB_HIP,  NL_K_LAUNCH,         NL_AF_OPT|NL_AF_CFG_STREAM, 0, NL_D0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R1, NL_NA, NL_NA, NL_NA, 0) \
X(GRAPH_LAUNCH,               "hipGraphLaunch",                 0,   NL_LIB_HIP,  NL_K_GRAPH,          NL_AF_OPT,                 0, NL_R1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(GRAPH_INSTANTIATE,          "hipGraphInstantiate",            0,   NL_LIB_HIP,  NL_K_GRAPH_INST,     NL_AF_RET|NL_AF_OPT,       0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R1, NL_NA, NL_NA, NL_R0, 8) \
X(GRAPH_INSTANTIATE_WITH_FLAGS,"hipGraphInstantiateWithFlags", 0,   NL_LIB_HIP,  NL_K_GRAPH_INST,     NL_AF_RET|NL_AF_OPT,       0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_R2, NL_NA, NL_R1, NL_NA, NL_NA, NL_R0, 8) \
X(GRAPH_EXEC_DESTROY,         "hipGraphExecDestroy",            0,   NL_LIB_HIP,  NL_K_GRAPH_DESTROY,  NL_AF_OPT,                 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(GRAPH_DESTROY,              "hipGraphDestroy",                0,   NL_LIB_HIP,  NL_K_GRAPH_DESTROY,  NL_AF_OPT,                 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, 0) \
X(EVENT_CREATE,               "hipEventCreate",                 0,   NL_LIB_HIP,  NL_K_EVENT_CREATE,   NL_AF_RET,                 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_R0, 8) \
X(EVENT_CREATE_WITH_FLAGS,    "hipEventCreateWithFlags",        0,   NL_LIB_HIP,  NL_K_EVENT_CREATE,   NL_AF_RET,                 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_R1, NL_NA, NL_NA, NL_NA, NL_NA, NL_R0, 8) \
X(EVENT_DESTROY,              "hipEventDestroy",                0,   NL_LIB_HIP,  NL_K_EVENT_DESTROY,  0,                         0, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(EVENT_RECORD,               "hipEventRecord",                 0,   NL_LIB_HIP,  NL_K_EVENT_RECORD,   0,                         0, NL_R1, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(EVENT_RECORD_SPT,           "hipEventRecord_spt",             0,   NL_LIB_HIP,  NL_K_EVENT_RECORD,   NL_AF_SPT|NL_AF_OPT,       0, NL_R1, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(EVENT_RECORD_WITH_FLAGS,    "hipEventRecordWithFlags",        0,   NL_LIB_HIP,  NL_K_EVENT_RECORD,   NL_AF_OPT,                 0, NL_R1, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_R2, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(STREAM_WAIT_EVENT,          "hipStreamWaitEvent",             0,   NL_LIB_HIP,  NL_K_STREAM_WAIT,    0,                         0, NL_R0, NL_R1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_R2, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(STREAM_WAIT_EVENT_SPT,      "hipStreamWaitEvent_spt",         0,   NL_LIB_HIP,  NL_K_STREAM_WAIT,    NL_AF_SPT|NL_AF_OPT,       0, NL_R0, NL_R1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_R2, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(EVENT_QUERY,                "hipEventQuery",                  0,   NL_LIB_HIP,  NL_K_EVENT_QUERY,    NL_AF_RET,                 0, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(EVENT_SYNCHRONIZE,          "hipEventSynchronize",            0,   NL_LIB_HIP,  NL_K_EVENT_SYNC,     NL_AF_RET,                 0, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(EVENT_ELAPSED_TIME,         "hipEventElapsedTime",            0,   NL_LIB_HIP,  NL_K_EVENT_ELAPSED,  NL_AF_RET,                 0, NL_NA, NL_R1, NL_R2, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_R0, 4) \
X(STREAM_CREATE,              "hipStreamCreate",                0,   NL_LIB_HIP,  NL_K_STREAM_CREATE,  NL_AF_RET,                 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_R0, 8) \
X(STREAM_CREATE_WITH_FLAGS,   "hipStreamCreateWithFlags",       0,   NL_LIB_HIP,  NL_K_STREAM_CREATE,  NL_AF_RET,                 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_R1, NL_NA, NL_NA, NL_NA, NL_NA, NL_R0, 8) \
X(STREAM_CREATE_WITH_PRIORITY,"hipStreamCreateWithPriority",    0,   NL_LIB_HIP,  NL_K_STREAM_CREATE,  NL_AF_RET,                 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_R1, NL_R2, NL_NA, NL_NA, NL_NA, NL_R0, 8) \
X(STREAM_DESTROY,             "hipStreamDestroy",               0,   NL_LIB_HIP,  NL_K_STREAM_DESTROY, 0,                         0, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(STREAM_SYNCHRONIZE,         "hipStreamSynchronize",           0,   NL_LIB_HIP,  NL_K_STREAM_SYNC,    NL_AF_RET,                 0, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(STREAM_SYNCHRONIZE_SPT,     "hipStreamSynchronize_spt",       0,   NL_LIB_HIP,  NL_K_STREAM_SYNC,    NL_AF_RET|NL_AF_SPT|NL_AF_OPT, 0, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(STREAM_QUERY,               "hipStreamQuery",                 0,   NL_LIB_HIP,  NL_K_STREAM_QUERY,   NL_AF_RET,                 0, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(STREAM_QUERY_SPT,           "hipStreamQuery_spt",             0,   NL_LIB_HIP,  NL_K_STREAM_QUERY,   NL_AF_RET|NL_AF_SPT|NL_AF_OPT, 0, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(DEVICE_SYNCHRONIZE,         "hipDeviceSynchronize",           0,   NL_LIB_HIP,  NL_K_DEVICE_SYNC,    NL_AF_RET,                 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(STREAM_BEGIN_CAPTURE,       "hipStreamBeginCapture",          0,   NL_LIB_HIP,  NL_K_CAPTURE_BEGIN,  NL_AF_RET|NL_AF_OPT,       0, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_R1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(STREAM_END_CAPTURE,         "hipStreamEndCapture",            0,   NL_LIB_HIP,  NL_K_CAPTURE_END,    NL_AF_RET|NL_AF_OPT,       0, NL_R0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_R1, 8) \
X(NCCL_ALLTOALL,              "ncclAllToAll",                   0,   NL_LIB_RCCL, NL_K_COLL,           NL_AF_RET|NL_AF_NESTS,     0, NL_R5, NL_NA, NL_NA, NL_R1, NL_R0, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_R2, NL_NA, 0) \
X(NCCL_ALLTOALLV,             "ncclAllToAllv",                  0,   NL_LIB_RCCL, NL_K_COLL,           NL_AF_RET|NL_AF_NESTS|NL_AF_OPT, 3, NL_S3, NL_NA, NL_NA, NL_R3, NL_R0, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(NCCL_ALLREDUCE,             "ncclAllReduce",                  0,   NL_LIB_RCCL, NL_K_COLL,           NL_AF_RET|NL_AF_NESTS|NL_AF_OPT, 2, NL_S2, NL_NA, NL_NA, NL_R1, NL_R0, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_R2, NL_NA, 0) \
X(NCCL_SEND,                  "ncclSend",                       0,   NL_LIB_RCCL, NL_K_P2P,            NL_AF_RET|NL_AF_NESTS,     0, NL_R5, NL_NA, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_R3, NL_R1, NL_NA, 0) \
X(NCCL_RECV,                  "ncclRecv",                       0,   NL_LIB_RCCL, NL_K_P2P,            NL_AF_RET|NL_AF_NESTS,     0, NL_R5, NL_NA, NL_NA, NL_R0, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_R3, NL_R1, NL_NA, 0) \
X(NCCL_GROUP_START,           "ncclGroupStart",                 0,   NL_LIB_RCCL, NL_K_GROUP_START,    0,                         0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(NCCL_GROUP_END,             "ncclGroupEnd",                   0,   NL_LIB_RCCL, NL_K_GROUP_END,      NL_AF_RET|NL_AF_NESTS,     0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0) \
X(NCCL_COMM_INIT_RANK,        "ncclCommInitRank",               0,   NL_LIB_RCCL, NL_K_COMM,           NL_AF_RET|NL_AF_NESTS,     0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_R1, NL_NA, 0) \
X(NCCL_COMM_INIT_ALL,         "ncclCommInitAll",                0,   NL_LIB_RCCL, NL_K_COMM,           NL_AF_RET|NL_AF_NESTS|NL_AF_OPT, 0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_R1, NL_NA, 0) \
X(NCCL_COMM_DESTROY,          "ncclCommDestroy",                0,   NL_LIB_RCCL, NL_K_COMM,           NL_AF_RET|NL_AF_NESTS,     0, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, -1, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, NL_NA, 0)
/* clang-format on */

enum nl_api_id {
#define NL_X_ENUM(id, ...) NL_API_##id,
	NL_API_TABLE(NL_X_ENUM)
#undef NL_X_ENUM
	NL_API_COUNT
};

#endif /* NANLOG_APIS_H */
