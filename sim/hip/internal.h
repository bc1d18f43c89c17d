/* SPDX-License-Identifier: MIT */
/*
 * simhip internals: the objects behind hipStream_t / hipEvent_t handles, the
 * per-stream operation queues and the one lock that guards them.
 *
 * Model: every stream owns a worker thread that executes the stream's queue
 * in order. Each operation gets a sequence number on its stream; a position
 * (stream, generation, seq) is "done" once the stream completed seq or the
 * stream was destroyed (destroy drains first, then bumps the generation).
 * Cross-stream ordering (hipStreamWaitEvent, null-stream implicit sync) is a
 * list of such positions an operation waits for before it starts.
 *
 * Stream and event objects are never freed: destroyed ones go to LIFO free
 * lists and are handed out again, so a stale handle never dangles and handle
 * reuse is deterministic. Live handles are kept in hash sets and every handle
 * coming from the application is looked up before it is dereferenced.
 */
#ifndef SIMHIP_INTERNAL_H
#define SIMHIP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simhip.h"

#define SIMHIP_API __attribute__((visibility("default")))

/* ROCm 5.2 clamps stream priorities to these (hip::Stream::Priority). */
#define SIM_PRIO_HIGH (-1)
#define SIM_PRIO_NORMAL 0
#define SIM_PRIO_LOW 1

/* hipStreamLegacy of later ROCm releases; the 5.2.3 headers lack the name. */
#define SIM_STREAM_LEGACY ((hipStream_t)1)

/* ---- small open-addressing set of pointers (never holds NULL) ---------- */
struct ptrset {
	uintptr_t *slot;
	size_t cap; /* power of two, or 0 */
	size_t n;
};
bool ptrset_has(const struct ptrset *set, const void *p);
int ptrset_add(struct ptrset *set, const void *p); /* 0, or -1 out of memory */
bool ptrset_del(struct ptrset *set, const void *p);

/* ---- operations ------------------------------------------------------ */
struct sim_stream;
struct sim_event;
struct sim_capture;

struct sim_pos {
	struct sim_stream *s;
	uint64_t gen;
	uint64_t seq;
};

enum sim_op_kind {
	SIM_OP_NOP,      /* only waits for its dependencies */
	SIM_OP_MARKER,   /* event record: timestamps the event when reached */
	SIM_OP_COPY,
	SIM_OP_COPY2D,
	SIM_OP_MEMSET,
	SIM_OP_KERNEL,
	SIM_OP_CALLBACK,
};

struct sim_op {
	struct sim_op *next;
	enum sim_op_kind kind;
	uint64_t seq;
	unsigned ndeps;
	struct sim_pos *deps;
	uint64_t sim_ns; /* simulated duration, already scaled */
	union {
		struct {
			void *dst;
			const void *src;
			size_t bytes;
		} copy;
		struct {
			void *dst;
			size_t dpitch;
			const void *src;
			size_t spitch, width, height;
		} copy2d;
		struct {
			void *dst;
			int value;
			size_t bytes;
		} memset;
		struct {
			void (*fn)(void **args);
			void **args;
		} kernel;
		struct {
			struct sim_event *ev;
			uint64_t ev_gen;
			uint64_t rec;
		} marker;
		struct {
			hipStreamCallback_t fn;
			hipStream_t handle;
			void *user;
		} callback;
	} u;
};

/* ---- streams --------------------------------------------------------- */
struct sim_stream {
	uint64_t gen;     /* bumped by destroy; positions of older gens are done */
	bool is_null;     /* the legacy null stream */
	bool per_thread;  /* some host thread's hipStreamPerThread */
	unsigned flags;
	int priority;
	struct sim_op *head, *tail;
	uint64_t enqueued;  /* seq of the last enqueued op */
	uint64_t completed; /* seq of the last completed op */
	pthread_cond_t cv_work;
	struct sim_stream *next_free;
	/* stream capture (graph.c): the capture it belongs to, and the node
	 * its next captured op depends on (-1: none) */
	struct sim_capture *cap;
	long cap_last;
};

/* ---- events ---------------------------------------------------------- */
struct sim_event {
	uint64_t gen;
	unsigned flags;
	bool recorded;
	struct sim_pos pos; /* where the last record sits */
	uint64_t rec;       /* number of records so far */
	uint64_t t_ns;      /* CLOCK_MONOTONIC at completion of the last record */
	struct sim_event *next_free;
	/* last recorded inside a capture (graph.c): its id (0: never) and the
	 * node a wait on it depends on (-1: the capture's start) */
	uint64_t cap_id;
	long cap_node;
};

/* ---- global state (core.c) ------------------------------------------- */
extern pthread_mutex_t sim_lock;     /* guards every object above */
extern pthread_cond_t sim_progress;  /* broadcast whenever any op completes */
extern double sim_time_scale;        /* SIMHIP_TIME_SCALE */
extern double sim_bandwidth_mbps;    /* SIMHIP_BANDWIDTH_MBPS, 0 = no delay */
extern bool sim_batch_workers;       /* SIMHIP_BATCH_WORKERS: workers in SCHED_BATCH */

/* Every exported entry point starts with sim_init (one-time initialisation)
 * and returns through sim_ret (sets the calling thread's last error). */
hipError_t sim_init(void);
hipError_t sim_ret(hipError_t err);
/* sim_init, then take sim_lock: held on return whatever the result. */
hipError_t sim_enter(void);
/* Release sim_lock and return through sim_ret. */
hipError_t sim_leave(hipError_t err);
uint64_t sim_now_ns(void);
uint64_t sim_scale_ns(uint64_t ns);
uint64_t sim_copy_ns(size_t bytes);

/* ---- stream layer (stream.c); all *_locked need sim_lock held --------- */
hipError_t sim_streams_init(void);
/* Resolve an application handle. spt: stream 0 means the per-thread stream. */
hipError_t sim_stream_get_locked(hipStream_t h, bool spt, struct sim_stream **out);
/* sim_enter, then sim_stream_get_locked. */
hipError_t sim_enter_stream(hipStream_t h, bool spt, struct sim_stream **out);
struct sim_op *sim_op_new(enum sim_op_kind kind);
/* Append op (takes ownership, also of extra deps copied in); returns its position. */
hipError_t sim_enqueue_locked(struct sim_stream *s, struct sim_op *op,
			      const struct sim_pos *extra, unsigned nextra, struct sim_pos *pos);
bool sim_pos_done_locked(const struct sim_pos *pos);
void sim_pos_wait_locked(const struct sim_pos *pos);
/* Resolve the handle, enqueue op (always consumed), optionally block until it completed. */
hipError_t sim_submit(struct sim_op *op, hipStream_t h, bool spt, bool wait);
void sim_device_sync_locked(void);

/* ---- event layer (event.c) ------------------------------------------- */
hipError_t sim_event_get_locked(hipEvent_t h, struct sim_event **out);
hipError_t sim_event_record_locked(struct sim_event *ev, struct sim_stream *s);
void sim_marker_reached_locked(const struct sim_op *op);

/* ---- graphs and stream capture (graph.c) ------------------------------ */
/* Append op to the capture of s instead of running it (op consumed). */
hipError_t sim_capture_op_locked(struct sim_stream *s, struct sim_op *op);
/* hipEventRecord on a capturing stream: remember where, enqueue nothing. */
void sim_capture_record_locked(struct sim_event *ev, struct sim_stream *s);
/* hipStreamWaitEvent where s captures or ev was recorded in an active
 * capture; *handled false: an ordinary wait. */
hipError_t sim_capture_wait_locked(struct sim_stream *s, struct sim_event *ev, bool *handled);
/* The event's last record was made in a capture still open. */
bool sim_event_captured_locked(const struct sim_event *ev);

#endif /* SIMHIP_INTERNAL_H */
