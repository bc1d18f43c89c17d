/* SPDX-License-Identifier: MIT */
/*
 * pipeline: a workload that replays the HIP/RCCL call sequence of TorchRec's
 * TrainPipelineSparseDist (docs/workload.md) on real bytes, and writes the
 * ground truth (every call it makes, every cross-stream edge, the verdict
 * each batch deserves) for nanlog-bpf's tests.
 */
#ifndef PL_H
#define PL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rccl.h"
#include "simhip.h"

/* ---- options (opts.c) ---------------------------------------------------- */

enum pl_pattern { PAT_TORCHREC, PAT_SIMPLE };

/* The named waits --drop can remove (table in opts.c). */
enum pl_wait { W_B_DATA_DIST, W_D_COMPUTE, W_A_COMPUTE, W_SIMPLE_COMPUTE, W_COUNT };

struct pl_wait_info {
	const char *name;    /* --drop NAME@K */
	const char *edge;    /* "M->D" ... */
	const char *step;    /* step that makes the wait */
	const char *missing; /* audit label when dropped, NULL when redundant */
	int pattern;
};
extern const struct pl_wait_info pl_waits[W_COUNT];

enum pl_stall { STALL_COPY, STALL_SPARSE, STALL_COUNT };
extern const char *const pl_stall_names[STALL_COUNT];

#define PL_MAX_FAULTS 8

struct pl_fault {
	int what;   /* enum pl_wait or enum pl_stall */
	long batch;
	long ms;    /* stalls only */
};

struct pl_opts {
	int pattern;
	int depth;
	long batches;        /* the dataloader's */
	long steps;          /* steps run (forward of batches 0..steps-1); the rest prefetched */
	struct pl_fault drops[PL_MAX_FAULTS];
	int ndrops;
	struct pl_fault stalls[PL_MAX_FAULTS];
	int nstalls;
	long exit_at;        /* -1: none */
	long iter_sleep_ms;
	long mlp_layers;     /* extra launches in a row on the compute stream, forward and backward */
	long watchdog_ms;
	bool torch;          /* --torch: PyTorch's own calls around the pipeline */
	uint64_t seed;
	bool gate_signal;
	const char *gate_file;
	long gate_timeout_ms;
	const char *truth;
};

/* 0: run; 1: --help printed; -1: error, one line in err. */
int pl_parse_opts(int argc, char **argv, struct pl_opts *o, char *err, size_t errlen);
bool pl_dropped(const struct pl_opts *o, int wait, long batch);
long pl_stall_ms(const struct pl_opts *o, int stall, long batch);
/* A dropped necessary wait whose producer is stalled: the race must show. */
bool pl_race_forced(const struct pl_opts *o, long batch);

/* ---- attribution and ground truth (truth.c) ------------------------------ */

enum pl_stage { ST_NONE, ST_COPY, ST_SPARSE, ST_FORWARD, ST_BACKWARD, ST_SETUP, ST_TEARDOWN,
		ST_ALLOCATOR, ST_WATCHDOG };
enum pl_step { SP_NONE, SP_FILL, SP_A, SP_B, SP_C, SP_D, SP_E, SP_F };

/* The calling thread's attribution, stamped on every call it logs. */
void pl_attr(long batch, int stage, int step);
void pl_attr_get(long *batch, int *stage, int *step);
const char *pl_step_name(int step);

/* Which optional keys a call line carries. */
enum {
	CF_STREAM = 1u << 0, CF_EVENT = 1u << 1, CF_STOP = 1u << 2, CF_DST = 1u << 3,
	CF_SRC = 1u << 4, CF_BYTES = 1u << 5, CF_KIND = 1u << 6, CF_FLAGS = 1u << 7,
	CF_PRIO = 1u << 8, CF_COUNT = 1u << 9, CF_PEER = 1u << 10, CF_HANDLE = 1u << 11,
	CF_MS = 1u << 12, CF_FN = 1u << 13,
};

struct pl_call {
	const char *api;
	bool nccl;         /* rc is an ncclResult_t */
	int ok_rc;         /* a second return value that is not a failure (600) */
	unsigned fields;
	uint64_t stream, event, stop, dst, src, handle, fn, bytes, count;
	int kind, prio, peer;
	unsigned flags;
	double ms;
	const char *kernel;
	const char *fn_key, *handle_key; /* graph APIs: "graph"/"exec" (NULL: fn, handle) */
	uint64_t t_ns;
	int rc;
	long seq;          /* set when logged */
};

int pl_truth_open(const char *path); /* NULL: count calls, write nothing */
void pl_truth_close(void);
long pl_calls_logged(void);
/* Logs c (assigning seq); a failing call ends the program (hipw.c). */
void pl_called(struct pl_call *c);
/*
 * For calls that free a handle: pl_hold() before the call, pl_called_held()
 * after it. The truth stays locked across the call, so no other thread can
 * log the creation of a handle at the freed address before its destruction.
 */
void pl_hold(void);
void pl_called_held(struct pl_call *c);
/* One JSON object (without the braces' newline) written as a line. */
void pl_truth_line(const char *json);
uint64_t pl_now_ns(void);

/* Small JSON builder for the truth lines. */
struct pl_json {
	char buf[2048];
	size_t n;
};
void pj_begin(struct pl_json *j, const char *type);
void pj_raw(struct pl_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pj_str(struct pl_json *j, const char *key, const char *val); /* NULL -> null */
void pj_hex(struct pl_json *j, const char *key, uint64_t v);
void pj_num(struct pl_json *j, const char *key, long long v);
void pj_batch(struct pl_json *j, const char *key, long batch);    /* < 0 -> null */
void pj_bool(struct pl_json *j, const char *key, bool v);
void pj_end(struct pl_json *j); /* closes and writes the line */

/* ---- logged HIP/RCCL calls (hipw.c) -------------------------------------- */

_Noreturn void pl_die(const char *api, int rc, bool nccl);

void hw_stream_create_prio(hipStream_t *s, unsigned flags, int prio);
void hw_stream_create_flags(hipStream_t *s, unsigned flags);
void hw_stream_destroy(hipStream_t s);
void hw_stream_sync(hipStream_t s);
void hw_device_sync(void);
void hw_event_create(hipEvent_t *e, unsigned flags);
void hw_event_destroy(hipEvent_t e);
void hw_event_record(hipEvent_t e, hipStream_t s, long *seq);
void hw_stream_wait(hipStream_t s, hipEvent_t e, long *seq);
int hw_event_query(hipEvent_t e); /* 0 or hipErrorNotReady */
void hw_event_elapsed(float *ms, hipEvent_t start, hipEvent_t stop);
void hw_malloc(void **p, size_t n);
void hw_free(void *p);
void hw_memcpy_async(void *dst, const void *src, size_t n, hipMemcpyKind k, hipStream_t s);
void hw_memcpy_with_stream(void *dst, const void *src, size_t n, hipMemcpyKind k, hipStream_t s);
/* hipLaunchKernel: the ATen/FBGEMM way. */
void hw_launch(simhip_kernel_t *k, unsigned grid, void **args, hipStream_t s);
/* hipExtModuleLaunchKernel: rocBLAS/Tensile GEMMs. */
void hw_launch_gemm(simhip_kernel_t *k, unsigned grid, void **args, hipStream_t s);
/* hipModuleLaunchKernel: Triton. */
void hw_launch_module(simhip_kernel_t *k, unsigned grid, void **args, hipStream_t s);
/* The per-thread default stream: hipLaunchKernel_spt (stream 0 = this thread's). */
void hw_launch_spt(simhip_kernel_t *k, unsigned grid, void **args, hipStream_t s);
void hw_stream_sync_spt(hipStream_t s);
/* Graphs (torch.compile's reduce-overhead mode). */
void hw_capture_begin(hipStream_t s);
void hw_capture_end(hipStream_t s, hipGraph_t *g);
void hw_graph_instantiate(hipGraphExec_t *x, hipGraph_t g);
void hw_graph_launch(hipGraphExec_t x, hipStream_t s);
void hw_graph_exec_destroy(hipGraphExec_t x);
void hw_graph_destroy(hipGraph_t g);
void hw_nccl_init(ncclComm_t *comm);
void hw_nccl_destroy(ncclComm_t comm);
void hw_alltoall(const void *send, void *recv, size_t count, ncclComm_t comm, hipStream_t s);

/* ---- batches and kernels (kernels.c) ------------------------------------- */

#define PL_NT 3        /* tensors per batch: lengths, values, weights */
#define PL_NSLOT 4     /* device buffer sets, reused round-robin */
#define PL_NSPLIT 8    /* split sizes (u32) moved by the splits all-to-all */
#define PL_NEMB 256    /* pooled embedding words per batch */
extern const size_t pl_tensor_words[PL_NT];

/* Device buffers of one slot (carved from one hipMalloc). */
struct pl_slot {
	uint32_t *in[PL_NT];   /* H2D copy destination (M) */
	uint32_t *sp[PL_NT];   /* input_dist output (D), all-to-all send */
	uint32_t *recv[PL_NT]; /* data all-to-all output (N) */
	uint32_t *fin[PL_NT];  /* dist_init output (D), read by forward (C) */
	uint32_t *splits, *splits_recv, *meta, *emb, *emb_out, *loss;
};
size_t pl_slot_bytes(void);
void pl_slot_carve(struct pl_slot *s, uint8_t *base);

struct pl_work;
struct pl_hblock;

struct pl_batch {
	long id;
	uint64_t seed;
	struct pl_slot *slot;
	struct pl_batch *self;
	void *argv[1];            /* kernel arguments: { &self } */
	struct pl_hblock *stage;  /* pinned staging block of its copy */
	struct pl_work *splits_w, *data_w;
	uint32_t h_meta[16];      /* source of the blocking split-size H2D */
	uint32_t h_splits[PL_NSPLIT]; /* .tolist() destination */
	uint32_t h_loss;
	simhip_kernel_t stall_copy_k, stall_sparse_k; /* --stall: their durations */
	bool copied, sparse_started, fwd_started, fwd_done;
	atomic_int checked;       /* forward's content check ran */
	atomic_long mismatches;   /* words forward (and .tolist()) found wrong */
};

void pl_batch_init(struct pl_batch *b, long id, uint64_t seed, struct pl_slot *slot);
uint32_t pl_pattern(uint64_t seed, long batch, int t, size_t j);
void pl_fill_host(const struct pl_batch *b, uint32_t *host); /* PL_NT tensors back to back */
size_t pl_batch_bytes(void);
long pl_check_splits(const struct pl_batch *b); /* host check of .tolist() result */

extern simhip_kernel_t k_input_dist, k_dist_init, k_lookup, k_simple_lookup, k_gemm_fwd,
	k_gemm_plain, k_triton_fwd, k_bwd_emb, k_gemm_bwd, k_bwd_elem, k_optimizer, k_mlp_fwd, k_mlp_bwd;

/* ---- PyTorch-like machinery (torch.c) ------------------------------------ */

/* Events handed out FIFO, created lazily, sometimes destroyed on release. */
struct pl_evpool {
	pthread_mutex_t mu;
	unsigned flags;
	hipEvent_t ev[8];
	int head, n;
	unsigned long releases;
};
void evpool_init(struct pl_evpool *p, unsigned flags);
hipEvent_t evpool_get(struct pl_evpool *p);
void evpool_put(struct pl_evpool *p, hipEvent_t e);
void evpool_drain(struct pl_evpool *p);

/* Pinned staging blocks: freed with an event recorded on the copy stream,
 * reused once hipEventQuery says it completed (CachingHostAllocator). */
struct pl_hblock {
	void *p;
	hipEvent_t ev;
	long batch;
	struct pl_hblock *next;
};
struct pl_halloc {
	struct pl_hblock *free, *pend, *pend_tail;
	struct pl_evpool *pool;
	size_t size;
	long fresh; /* blocks allocated */
};

struct pl_ctx {
	const struct pl_opts *o;
	hipStream_t M, D, N, C; /* copy, data-dist, collective, compute (0) */
	ncclComm_t comm;
	void *dmem;
	struct pl_slot slot[PL_NSLOT];
	struct pl_batch *b;
	struct pl_evpool ev_sync, ev_coll, ev_timed, ev_alloc;
	struct pl_halloc ha;
	/* --torch */
	hipStream_t G;          /* graph capture stream */
	hipGraphExec_t dense;   /* the captured dense part */
	struct pl_evpool ev_dev;
	struct pl_halloc da;    /* device caching allocator: record_stream blocks */
	struct pl_hblock **dblk; /* batch -> its sparse output block */
};

struct pl_hblock *halloc_get(struct pl_halloc *h, long batch);
void halloc_put(struct pl_halloc *h, struct pl_hblock *blk, hipStream_t s);
void halloc_drain(struct pl_halloc *h);

/* to.wait_stream(from), logging the edge; drop: skip it, log it dropped. */
void pl_wait_stream(struct pl_ctx *x, hipStream_t to, hipStream_t from, long batch,
		    const char *edge, int step, int wait, bool drop);
void pl_edge(long batch, const char *name, int step, hipEvent_t ev, hipStream_t from,
	     hipStream_t to, long rec_seq, long wait_seq, int wait, bool dropped, bool necessary);

/* A collective launched like ProcessGroupNCCL: N waits `from`, optional start
 * record, one ncclAllToAll per buffer, end record; the watchdog polls it. */
struct pl_a2a {
	const void *send;
	void *recv;
	size_t count;
};
struct pl_work *pl_alltoall(struct pl_ctx *x, hipStream_t from, long batch, int step,
			    bool timed, const struct pl_a2a *ops, int nops);
/* Work.wait() on stream `to`, then drop the caller's reference. */
void pl_work_wait(struct pl_ctx *x, struct pl_work *w, hipStream_t to, int step);

int pl_watchdog_start(struct pl_ctx *x);
void pl_watchdog_stop(void);
void pl_watchdog_freeze(void);
int pl_autograd_start(struct pl_ctx *x);
void pl_autograd_run(long batch); /* backward of batch on the autograd thread */
void pl_autograd_stop(void);

/* ---- the training loops (train.c) ---------------------------------------- */

void pl_setup(struct pl_ctx *x);
void pl_run(struct pl_ctx *x);
void pl_teardown(struct pl_ctx *x);
/* Writes the batch records for what happened so far; returns the exit code. */
int pl_verdicts(struct pl_ctx *x, bool exiting);

#endif /* PL_H */
