/* SPDX-License-Identifier: MIT */
/*
 * Simulated librccl.so.1 on top of simhip, with RCCL's call pattern:
 *
 *  - ncclAllToAll / ncclAllToAllv call the exported ncclGroupStart, ncclSend
 *    and ncclRecv per peer, and ncclGroupEnd (plain calls to default-visibility
 *    functions built with -fPIC: they go through the PLT, so uprobes on them
 *    fire nested inside the collective);
 *  - ncclGroupEnd launches one data-moving kernel per (communicator, stream)
 *    through the exported hipExtLaunchKernel, with the communicator's done
 *    event (created once per communicator with hipEventDisableTiming) as
 *    stopEvent.
 *
 * Every communicator lives in this one process. The other ranks are virtual
 * peers that mirror this rank: a receive from peer p gets the bytes this rank
 * sends to peer p in the same group (zeros where nothing was sent), so with
 * one rank an all-to-all is a local copy. ncclAllReduce treats every peer as
 * holding the same data.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rccl.h"
#include "../hip/env.h" /* shared with simhip */

#define RCCL_API __attribute__((visibility("default")))
#define COMM_MAGIC 0x4d4d4f434c434352ull /* "RCCLCOMM" */

struct ncclComm {
	uint64_t magic;
	int nranks, rank;
	hipEvent_t done;
	struct ncclComm *next;
};

static pthread_mutex_t comms_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm *comms;

/* ---- environment ----------------------------------------------------- */

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static double bandwidth_mbps, latency_us;

static void read_env(void)
{
	bandwidth_mbps = sim_env_double("SIMRCCL_BANDWIDTH_MBPS", 10000.0);
	latency_us = sim_env_double("SIMRCCL_LATENCY_US", 10.0);
}

/* Simulated device time of moving `bytes` (simhip scales it by SIMHIP_TIME_SCALE). */
static uint64_t coll_ns(size_t bytes)
{
	double ns;

	pthread_once(&env_once, read_env);
	ns = latency_us * 1000.0;
	if (bandwidth_mbps > 0)
		ns += (double)bytes * 1000.0 / bandwidth_mbps;
	return ns < 1.8e19 ? (uint64_t)ns : UINT64_MAX / 2;
}

/* ---- communicators --------------------------------------------------- */

static bool comm_ok(const struct ncclComm *c)
{
	bool found = false;

	pthread_mutex_lock(&comms_lock);
	for (const struct ncclComm *it = comms; it && !found; it = it->next)
		found = it == c;
	pthread_mutex_unlock(&comms_lock);
	return found;
}

static size_t dtype_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8:
	case ncclUint8:
		return 1;
	case ncclFloat16:
	case ncclBfloat16:
		return 2;
	case ncclInt32:
	case ncclUint32:
	case ncclFloat32:
		return 4;
	case ncclInt64:
	case ncclUint64:
	case ncclFloat64:
		return 8;
	default:
		return 0;
	}
}

static ncclResult_t comm_new(int nranks, int rank, ncclComm_t *out)
{
	struct ncclComm *c = calloc(1, sizeof(*c));

	if (!c)
		return ncclSystemError;
	if (hipEventCreateWithFlags(&c->done, hipEventDisableTiming) != hipSuccess) {
		free(c);
		return ncclUnhandledCudaError;
	}
	c->magic = COMM_MAGIC;
	c->nranks = nranks;
	c->rank = rank;
	pthread_mutex_lock(&comms_lock);
	c->next = comms;
	comms = c;
	pthread_mutex_unlock(&comms_lock);
	*out = c;
	return ncclSuccess;
}

RCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	static uint64_t counter;
	uint64_t v[2];

	if (!uniqueId)
		return ncclInvalidArgument;
	memset(uniqueId, 0, sizeof(*uniqueId));
	v[0] = (uint64_t)getpid();
	v[1] = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	memcpy(uniqueId->internal, v, sizeof(v));
	return ncclSuccess;
}

RCCL_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	(void)commId;
	if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	return comm_new(nranks, rank, comm);
}

RCCL_API ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	ncclResult_t r = ncclSuccess;

	(void)devlist;
	if (!comm || ndev < 1)
		return ncclInvalidArgument;
	for (int i = 0; i < ndev && r == ncclSuccess; i++)
		r = comm_new(ndev, i, &comm[i]);
	return r;
}

RCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	struct ncclComm **pp;
	bool found = false;

	if (!comm)
		return ncclSuccess; /* as NCCL */
	pthread_mutex_lock(&comms_lock);
	for (pp = &comms; *pp; pp = &(*pp)->next) {
		if (*pp == comm) {
			*pp = comm->next;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&comms_lock);
	if (!found)
		return ncclInvalidArgument;
	(void)hipEventDestroy(comm->done);
	comm->magic = 0;
	free(comm);
	return ncclSuccess;
}

RCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	if (!count || !comm_ok(comm))
		return ncclInvalidArgument;
	*count = comm->nranks;
	return ncclSuccess;
}

RCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!rank || !comm_ok(comm))
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}

RCCL_API const char *ncclGetErrorString(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error";
	case ncclSystemError: return "unhandled system error";
	case ncclInternalError: return "internal error";
	case ncclInvalidArgument: return "invalid argument";
	case ncclInvalidUsage: return "invalid usage";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

/* ---- the data-moving kernel ------------------------------------------ */

struct move {
	void *dst;
	const void *src; /* NULL: zero-fill */
	size_t dst_bytes, src_bytes;
};

struct plan {
	void *args[1];        /* args[0] = the plan itself */
	simhip_kernel_t *kernel; /* one descriptor per kernel, as RCCL has one function */
	void (*reduce)(struct plan *p);
	ncclDataType_t dtype;
	ncclRedOp_t op;
	int nranks;
	size_t n;
	struct move m[];
};

static void move_kernel(void **args)
{
	struct plan *p = args[0];

	for (size_t i = 0; i < p->n; i++) {
		struct move *m = &p->m[i];
		size_t k = m->src ? (m->src_bytes < m->dst_bytes ? m->src_bytes : m->dst_bytes) : 0;

		if (k)
			memmove(m->dst, m->src, k);
		if (k < m->dst_bytes)
			memset((char *)m->dst + k, 0, m->dst_bytes - k);
	}
	if (p->reduce)
		p->reduce(p);
	free(p);
}

/* The kernels RCCL launches are functions of its own, one address each
 * whatever the call (a tool that names kernels by address sees the same one
 * at every all-to-all); the simulated duration, per call, is set under
 * launch_lock just before the launch, which copies the descriptor. */
SIMHIP_KERNEL(k_generic, "ncclDevKernel_Generic", move_kernel, 0);
SIMHIP_KERNEL(k_allreduce, "ncclDevKernel_AllReduce", move_kernel, 0);
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

static struct plan *plan_new(size_t nmoves, simhip_kernel_t *kernel)
{
	struct plan *p = calloc(1, sizeof(*p) + nmoves * sizeof(p->m[0]));

	if (p) {
		p->args[0] = p;
		p->kernel = kernel;
	}
	return p;
}

/* Launch like RCCL: hipExtLaunchKernel(..., stream, NULL, comm->done, 0). The kernel frees p. */
static ncclResult_t plan_launch(struct plan *p, size_t bytes, ncclComm_t comm, hipStream_t stream)
{
	dim3 grid = { 1, 1, 1 }, block = { 256, 1, 1 };
	simhip_kernel_t *k = p->kernel;
	hipError_t e;

	pthread_mutex_lock(&launch_lock);
	k->duration_ns = coll_ns(bytes);
	e = hipExtLaunchKernel(k, grid, block, p->args, 0, stream, NULL, comm->done, 0);
	pthread_mutex_unlock(&launch_lock);
	if (e != hipSuccess) {
		free(p);
		return ncclUnhandledCudaError;
	}
	return ncclSuccess;
}

/* ---- groups and point-to-point ---------------------------------------- */

struct p2p {
	bool send, used, matched;
	ncclComm_t comm;
	hipStream_t stream;
	void *buf;
	size_t bytes;
	int peer;
};

static _Thread_local struct {
	int depth;
	struct p2p *ops;
	size_t n, cap;
	ncclResult_t err;
} grp;

static void group_reset(void)
{
	free(grp.ops);
	grp.ops = NULL;
	grp.n = grp.cap = 0;
	grp.err = ncclSuccess;
}

/* One kernel per (comm, stream), in order of first appearance. */
static ncclResult_t group_flush(void)
{
	ncclResult_t r = grp.err;

	for (size_t i = 0; i < grp.n && r == ncclSuccess; i++) {
		struct p2p *lead = &grp.ops[i];
		size_t nrecv = 0, bytes = 0, k = 0;
		struct plan *p;

		if (lead->used)
			continue;
		for (size_t j = i; j < grp.n; j++)
			if (grp.ops[j].comm == lead->comm && grp.ops[j].stream == lead->stream &&
			    !grp.ops[j].send)
				nrecv++;
		p = plan_new(nrecv, &k_generic);
		if (!p)
			return ncclSystemError;
		for (size_t j = i; j < grp.n; j++) {
			struct p2p *o = &grp.ops[j];

			if (o->comm != lead->comm || o->stream != lead->stream)
				continue;
			o->used = true;
			bytes += o->bytes;
			if (o->send)
				continue;
			p->m[k] = (struct move){ .dst = o->buf, .dst_bytes = o->bytes };
			/* the virtual peer sends back what this rank sends it */
			for (size_t s = 0; s < grp.n; s++) {
				struct p2p *src = &grp.ops[s];

				if (src->send && !src->matched && src->comm == o->comm &&
				    src->peer == o->peer) {
					p->m[k].src = src->bytes ? src->buf : NULL;
					p->m[k].src_bytes = src->bytes;
					src->matched = true;
					break;
				}
			}
			k++;
		}
		p->n = k;
		r = plan_launch(p, bytes / 2, lead->comm, lead->stream);
	}
	return r;
}

/* RCCL's internal group calls: a lone ncclSend/ncclRecv does not re-enter the exports. */
static void group_start(void)
{
	grp.depth++;
}

static ncclResult_t group_end(void)
{
	ncclResult_t r;

	if (grp.depth == 0)
		return ncclInvalidUsage;
	if (--grp.depth > 0)
		return ncclSuccess;
	r = group_flush();
	group_reset();
	return r;
}

RCCL_API ncclResult_t ncclGroupStart(void)
{
	group_start();
	return ncclSuccess;
}

RCCL_API ncclResult_t ncclGroupEnd(void)
{
	return group_end();
}

/* Errors inside a group are sticky: ncclGroupEnd reports the first one. */
static ncclResult_t p2p_queue(bool send, const void *buf, size_t count, ncclDataType_t dtype,
			      int peer, ncclComm_t comm, hipStream_t stream)
{
	size_t sz = dtype_size(dtype);
	struct p2p *grown;

	if (!comm_ok(comm) || !sz || peer < 0 || peer >= comm->nranks || (count && !buf) ||
	    count > SIZE_MAX / sz)
		return ncclInvalidArgument;
	if (grp.n == grp.cap) {
		size_t ncap = grp.cap ? grp.cap * 2 : 16;

		grown = realloc(grp.ops, ncap * sizeof(*grown));
		if (!grown)
			return ncclSystemError;
		grp.ops = grown;
		grp.cap = ncap;
	}
	grp.ops[grp.n++] = (struct p2p){ .send = send, .comm = comm, .stream = stream,
					 .buf = (void *)buf, .bytes = count * sz, .peer = peer };
	return ncclSuccess;
}

static ncclResult_t p2p(bool send, const void *buf, size_t count, ncclDataType_t dtype, int peer,
			ncclComm_t comm, hipStream_t stream)
{
	ncclResult_t r, e;

	group_start(); /* a lone send/recv is a group of one */
	r = p2p_queue(send, buf, count, dtype, peer, comm, stream);
	if (r != ncclSuccess && grp.err == ncclSuccess)
		grp.err = r;
	e = group_end();
	return r != ncclSuccess ? r : e;
}

RCCL_API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
			       int peer, ncclComm_t comm, hipStream_t stream)
{
	return p2p(true, sendbuff, count, datatype, peer, comm, stream);
}

RCCL_API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
			       ncclComm_t comm, hipStream_t stream)
{
	return p2p(false, recvbuff, count, datatype, peer, comm, stream);
}

/* ---- collectives ----------------------------------------------------- */

/* Does [first, first + n*b) elements of sz bytes fit in size_t? */
static bool span_ok(size_t first, size_t n, size_t b, size_t sz)
{
	size_t elems;

	if (b && n > SIZE_MAX / b)
		return false;
	elems = n * b;
	return first <= SIZE_MAX - elems && first + elems <= SIZE_MAX / sz;
}

RCCL_API ncclResult_t ncclAllToAll(const void *sendbuff, void *recvbuff, size_t count,
				   ncclDataType_t datatype, ncclComm_t comm, hipStream_t stream)
{
	size_t sz = dtype_size(datatype), chunk;
	ncclResult_t r = ncclSuccess, e;

	if (!comm_ok(comm) || !sz || !span_ok(0, count, (size_t)comm->nranks, sz) ||
	    (count && (!sendbuff || !recvbuff)))
		return ncclInvalidArgument;
	chunk = count * sz;
	ncclGroupStart();
	for (int p = 0; p < comm->nranks && r == ncclSuccess; p++) {
		r = ncclSend((const char *)sendbuff + (size_t)p * chunk, count, datatype, p, comm,
			     stream);
		if (r == ncclSuccess)
			r = ncclRecv((char *)recvbuff + (size_t)p * chunk, count, datatype, p, comm,
				     stream);
	}
	e = ncclGroupEnd();
	return r != ncclSuccess ? r : e;
}

RCCL_API ncclResult_t ncclAllToAllv(const void *sendbuff, const size_t sendcounts[],
				    const size_t sdispls[], void *recvbuff,
				    const size_t recvcounts[], const size_t rdispls[],
				    ncclDataType_t datatype, ncclComm_t comm, hipStream_t stream)
{
	size_t sz = dtype_size(datatype);
	ncclResult_t r = ncclSuccess, e;

	if (!comm_ok(comm) || !sz || !sendcounts || !sdispls || !recvcounts || !rdispls)
		return ncclInvalidArgument;
	for (int p = 0; p < comm->nranks; p++)
		if (!span_ok(sdispls[p], sendcounts[p], 1, sz) ||
		    !span_ok(rdispls[p], recvcounts[p], 1, sz) ||
		    (sendcounts[p] && !sendbuff) || (recvcounts[p] && !recvbuff))
			return ncclInvalidArgument;
	ncclGroupStart();
	for (int p = 0; p < comm->nranks && r == ncclSuccess; p++) {
		r = ncclSend(sendcounts[p] ? (const char *)sendbuff + sdispls[p] * sz : sendbuff,
			     sendcounts[p], datatype, p, comm, stream);
		if (r == ncclSuccess)
			r = ncclRecv(recvcounts[p] ? (char *)recvbuff + rdispls[p] * sz : recvbuff,
				     recvcounts[p], datatype, p, comm, stream);
	}
	e = ncclGroupEnd();
	return r != ncclSuccess ? r : e;
}

/* Every virtual peer holds the same data: sum = n*x, prod = x^n, min/max/avg = x. */
#define SCALE_LOOP(T, U)                                                        \
	do {                                                                    \
		T *v = p->m[0].dst;                                             \
		for (size_t i = 0; i < cnt; i++) {                              \
			U x = (U)v[i], acc = x;                                 \
			for (int k = 1; k < p->nranks; k++)                     \
				acc = p->op == ncclSum ? (U)(acc + x) : (U)(acc * x); \
			v[i] = (T)acc;                                          \
		}                                                               \
	} while (0)

static void reduce_kernel(struct plan *p)
{
	size_t cnt = p->m[0].dst_bytes / dtype_size(p->dtype);

	switch (p->dtype) {
	case ncclInt8: SCALE_LOOP(int8_t, uint8_t); break;
	case ncclUint8: SCALE_LOOP(uint8_t, uint8_t); break;
	case ncclInt32: SCALE_LOOP(int32_t, uint32_t); break;
	case ncclUint32: SCALE_LOOP(uint32_t, uint32_t); break;
	case ncclInt64: SCALE_LOOP(int64_t, uint64_t); break;
	case ncclUint64: SCALE_LOOP(uint64_t, uint64_t); break;
	case ncclFloat32: SCALE_LOOP(float, float); break;
	case ncclFloat64: SCALE_LOOP(double, double); break;
	default: break; /* rejected at enqueue */
	}
}

RCCL_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
				    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				    hipStream_t stream)
{
	size_t sz = dtype_size(datatype);
	bool scales;
	struct plan *p;

	if (!comm_ok(comm) || !sz || (unsigned)op >= ncclNumOps || !span_ok(0, count, 1, sz) ||
	    (count && (!sendbuff || !recvbuff)))
		return ncclInvalidArgument;
	scales = comm->nranks > 1 && (op == ncclSum || op == ncclProd);
	if (scales && (datatype == ncclFloat16 || datatype == ncclBfloat16))
		return ncclInvalidArgument; /* not simulated */
	p = plan_new(1, &k_allreduce);
	if (!p)
		return ncclSystemError;
	p->m[0] = (struct move){ .dst = recvbuff, .src = sendbuff, .dst_bytes = count * sz,
				 .src_bytes = count * sz };
	p->n = 1;
	p->dtype = datatype;
	p->op = op;
	p->nranks = comm->nranks;
	if (scales)
		p->reduce = reduce_kernel;
	return plan_launch(p, count * sz, comm, stream);
}
