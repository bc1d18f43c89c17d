/* SPDX-License-Identifier: MIT */
/*
 * simhip streams: one worker thread per stream executes its queue in order.
 *
 * Null stream (handle 0, and 1 = hipStreamLegacy): an op enqueued on it waits
 * for everything already enqueued on blocking streams (flags 0, including the
 * per-thread streams); an op enqueued on a blocking stream waits for
 * everything already enqueued on the null stream. NonBlocking streams are
 * never synchronised implicitly.
 *
 * hipStreamPerThread (2), and 0 given to an _spt entry point, mean the
 * calling host thread's own stream: created lazily with flags 0 and priority
 * 0 (a blocking stream, as ROCm does), drained and recycled when the thread
 * exits.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static struct sim_stream *null_stream;
static struct sim_stream **all_streams; /* every stream ever made, never freed */
static size_t n_streams, cap_streams;
static struct sim_stream *free_streams;  /* destroyed, ready for reuse (LIFO) */
static struct ptrset live_streams;
static pthread_key_t pts_key;
static _Thread_local struct sim_stream *pts; /* this thread's per-thread stream */

/* ---- positions and dependencies ------------------------------------- */

bool sim_pos_done_locked(const struct sim_pos *pos)
{
	return pos->s->gen != pos->gen || pos->s->completed >= pos->seq;
}

void sim_pos_wait_locked(const struct sim_pos *pos)
{
	while (!sim_pos_done_locked(pos))
		pthread_cond_wait(&sim_progress, &sim_lock);
}

static bool pending(const struct sim_stream *s)
{
	return s->enqueued > s->completed;
}

static struct sim_pos tail_pos(struct sim_stream *s)
{
	return (struct sim_pos){ s, s->gen, s->enqueued };
}

static bool is_blocking(const struct sim_stream *s)
{
	return !s->is_null && !(s->flags & hipStreamNonBlocking);
}

/* Would an op enqueued on s now have no implicit dependency left? */
static bool implicit_idle_locked(const struct sim_stream *s)
{
	if (s->is_null) {
		for (size_t i = 0; i < n_streams; i++)
			if (is_blocking(all_streams[i]) && pending(all_streams[i]))
				return false;
		return true;
	}
	return !is_blocking(s) || !pending(null_stream);
}

/* ---- the worker ------------------------------------------------------ */

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { (time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void copy2d(const struct sim_op *op)
{
	char *d = op->u.copy2d.dst;
	const char *s = op->u.copy2d.src;

	for (size_t row = 0; row < op->u.copy2d.height; row++)
		memmove(d + row * op->u.copy2d.dpitch, s + row * op->u.copy2d.spitch,
			op->u.copy2d.width);
}

/* Runs without the lock. */
static void execute(struct sim_op *op)
{
	uint64_t t0 = sim_now_ns();

	switch (op->kind) {
	case SIM_OP_COPY:
		memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.bytes);
		break;
	case SIM_OP_COPY2D:
		copy2d(op);
		break;
	case SIM_OP_MEMSET:
		memset(op->u.memset.dst, op->u.memset.value, op->u.memset.bytes);
		break;
	case SIM_OP_KERNEL:
		if (op->u.kernel.fn)
			op->u.kernel.fn(op->u.kernel.args);
		break;
	case SIM_OP_CALLBACK:
		op->u.callback.fn(op->u.callback.handle, hipSuccess, op->u.callback.user);
		break;
	case SIM_OP_NOP:
	case SIM_OP_MARKER:
		break;
	}
	if (op->sim_ns)
		sleep_until(t0 + op->sim_ns);
}

static void *worker(void *arg)
{
	struct sim_stream *s = arg;
	struct sim_op *op;

	if (sim_batch_workers) {
		struct sched_param sp = { 0 };

		(void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
	}
	pthread_mutex_lock(&sim_lock);
	for (;;) {
		while (!s->head)
			pthread_cond_wait(&s->cv_work, &sim_lock);
		op = s->head;
		for (unsigned i = 0; i < op->ndeps; i++)
			sim_pos_wait_locked(&op->deps[i]);
		pthread_mutex_unlock(&sim_lock);
		execute(op);
		pthread_mutex_lock(&sim_lock);
		if (op->kind == SIM_OP_MARKER)
			sim_marker_reached_locked(op);
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		s->completed = op->seq;
		pthread_cond_broadcast(&sim_progress);
		free(op->deps);
		free(op);
	}
	return NULL;
}

/* ---- creation and destruction ---------------------------------------- */

static int clamp_priority(int p)
{
	return p <= SIM_PRIO_HIGH ? SIM_PRIO_HIGH : p >= SIM_PRIO_LOW ? SIM_PRIO_LOW : SIM_PRIO_NORMAL;
}

static struct sim_stream *stream_alloc_locked(void)
{
	struct sim_stream *s, **grown;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int rc;

	if (free_streams) {
		s = free_streams;
		free_streams = s->next_free;
		s->next_free = NULL;
		return s;
	}
	if (n_streams == cap_streams) {
		size_t ncap = cap_streams ? cap_streams * 2 : 16;

		grown = realloc(all_streams, ncap * sizeof(*grown));
		if (!grown)
			return NULL;
		all_streams = grown;
		cap_streams = ncap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_cond_init(&s->cv_work, NULL);
	/* Workers take no signals: those belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&tid, &attr, worker, s);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&s->cv_work);
		free(s);
		return NULL;
	}
	all_streams[n_streams++] = s;
	return s;
}

static hipError_t stream_create_locked(unsigned flags, int priority, struct sim_stream **out)
{
	struct sim_stream *s = stream_alloc_locked();

	if (!s)
		return hipErrorOutOfMemory;
	if (ptrset_add(&live_streams, s)) {
		s->next_free = free_streams;
		free_streams = s;
		return hipErrorOutOfMemory;
	}
	s->is_null = false;
	s->per_thread = false;
	s->cap = NULL;
	s->cap_last = -1;
	s->flags = flags;
	s->priority = clamp_priority(priority);
	*out = s;
	return hipSuccess;
}

/* Drains the stream (the host waits for its work, as ROCm does), then recycles it. */
static void stream_destroy_locked(struct sim_stream *s)
{
	struct sim_pos end;

	ptrset_del(&live_streams, s);
	end = tail_pos(s);
	sim_pos_wait_locked(&end);
	s->gen++;
	s->next_free = free_streams;
	free_streams = s;
	pthread_cond_broadcast(&sim_progress);
}

static void pts_exit(void *arg)
{
	struct sim_stream *s = arg;

	pthread_mutex_lock(&sim_lock);
	stream_destroy_locked(s);
	pthread_mutex_unlock(&sim_lock);
}

hipError_t sim_streams_init(void)
{
	hipError_t e;

	if (pthread_key_create(&pts_key, pts_exit))
		return hipErrorOutOfMemory;
	pthread_mutex_lock(&sim_lock);
	e = stream_create_locked(hipStreamDefault, SIM_PRIO_NORMAL, &null_stream);
	if (e == hipSuccess) {
		/* the null stream is reached through handles 0 and 1 only */
		ptrset_del(&live_streams, null_stream);
		null_stream->is_null = true;
	}
	pthread_mutex_unlock(&sim_lock);
	return e;
}

static hipError_t per_thread_stream_locked(struct sim_stream **out)
{
	hipError_t e;

	if (!pts) {
		e = stream_create_locked(hipStreamDefault, SIM_PRIO_NORMAL, &pts);
		if (e != hipSuccess)
			return e;
		pts->per_thread = true;
		pthread_setspecific(pts_key, pts);
	}
	*out = pts;
	return hipSuccess;
}

hipError_t sim_stream_get_locked(hipStream_t h, bool spt, struct sim_stream **out)
{
	if (h == NULL && !spt)
		h = SIM_STREAM_LEGACY;
	if (h == NULL || h == hipStreamPerThread)
		return per_thread_stream_locked(out);
	if (h == SIM_STREAM_LEGACY) {
		*out = null_stream;
		return hipSuccess;
	}
	if (!ptrset_has(&live_streams, h))
		return hipErrorContextIsDestroyed;
	*out = (struct sim_stream *)h;
	return hipSuccess;
}

/* ---- enqueueing ------------------------------------------------------ */

struct sim_op *sim_op_new(enum sim_op_kind kind)
{
	struct sim_op *op = calloc(1, sizeof(*op));

	if (op)
		op->kind = kind;
	return op;
}

hipError_t sim_enqueue_locked(struct sim_stream *s, struct sim_op *op,
			      const struct sim_pos *extra, unsigned nextra, struct sim_pos *pos)
{
	unsigned n = 0, max = nextra + 1;

	if (s->cap) {
		/* captured, not run: a position that is already done */
		if (pos)
			*pos = (struct sim_pos){ s, s->gen, 0 };
		return sim_capture_op_locked(s, op);
	}
	if (s->is_null)
		max = nextra + (unsigned)n_streams;
	if (max) {
		op->deps = calloc(max, sizeof(*op->deps));
		if (!op->deps) {
			free(op);
			return hipErrorOutOfMemory;
		}
	}
	for (unsigned i = 0; i < nextra; i++)
		if (extra[i].s != s && !sim_pos_done_locked(&extra[i]))
			op->deps[n++] = extra[i];
	if (s->is_null) {
		for (size_t i = 0; i < n_streams; i++)
			if (is_blocking(all_streams[i]) && pending(all_streams[i]))
				op->deps[n++] = tail_pos(all_streams[i]);
	} else if (is_blocking(s) && pending(null_stream)) {
		op->deps[n++] = tail_pos(null_stream);
	}
	op->ndeps = n;
	op->seq = ++s->enqueued;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	pthread_cond_signal(&s->cv_work);
	if (pos)
		*pos = tail_pos(s);
	return hipSuccess;
}

hipError_t sim_enter_stream(hipStream_t h, bool spt, struct sim_stream **out)
{
	hipError_t e = sim_enter();

	return e != hipSuccess ? e : sim_stream_get_locked(h, spt, out);
}

hipError_t sim_submit(struct sim_op *op, hipStream_t h, bool spt, bool wait)
{
	struct sim_stream *s;
	struct sim_pos pos;
	hipError_t e = sim_enter_stream(h, spt, &s);

	if (e == hipSuccess && wait && s->cap)
		e = hipErrorStreamCaptureUnsupported; /* a blocking call cannot be captured */
	if (e == hipSuccess)
		e = sim_enqueue_locked(s, op, NULL, 0, &pos);
	else
		free(op);
	if (e == hipSuccess && wait)
		sim_pos_wait_locked(&pos);
	pthread_mutex_unlock(&sim_lock);
	return e;
}

void sim_device_sync_locked(void)
{
	size_t n = n_streams;
	struct sim_pos *ends = malloc(n * sizeof(*ends));

	if (!ends) {
		/* no memory for a snapshot: wait until every stream is idle */
		for (size_t i = 0; i < n_streams; i++)
			while (pending(all_streams[i]))
				pthread_cond_wait(&sim_progress, &sim_lock);
		return;
	}
	for (size_t i = 0; i < n; i++)
		ends[i] = tail_pos(all_streams[i]);
	for (size_t i = 0; i < n; i++)
		sim_pos_wait_locked(&ends[i]);
	free(ends);
}

/* ---- exported stream API -------------------------------------------- */

static hipError_t create_common(hipStream_t *stream, unsigned flags, int priority)
{
	struct sim_stream *s;
	hipError_t e = sim_enter();

	if (e == hipSuccess && (!stream || (flags != hipStreamDefault &&
					    flags != hipStreamNonBlocking)))
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		e = stream_create_locked(flags, priority, &s);
	if (e == hipSuccess)
		*stream = (hipStream_t)s;
	return sim_leave(e);
}

SIMHIP_API hipError_t hipStreamCreate(hipStream_t *stream)
{
	return create_common(stream, hipStreamDefault, SIM_PRIO_NORMAL);
}

SIMHIP_API hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned int flags)
{
	return create_common(stream, flags, SIM_PRIO_NORMAL);
}

SIMHIP_API hipError_t hipStreamCreateWithPriority(hipStream_t *stream, unsigned int flags,
						  int priority)
{
	return create_common(stream, flags, priority);
}

SIMHIP_API hipError_t hipStreamDestroy(hipStream_t stream)
{
	struct sim_stream *s;
	hipError_t e;

	if (stream == NULL || stream == SIM_STREAM_LEGACY || stream == hipStreamPerThread)
		return sim_ret(hipErrorInvalidHandle);
	e = sim_enter_stream(stream, false, &s);
	if (e == hipSuccess && s->per_thread)
		e = hipErrorInvalidHandle;
	if (e == hipSuccess)
		stream_destroy_locked(s);
	return sim_leave(e);
}

/*
 * As in ROCm, synchronising or querying a stream first applies the implicit
 * null-stream rule (ROCm enqueues a marker): hipStreamSynchronize(0) also
 * waits for the blocking streams, and a blocking stream's for the null stream.
 */
static hipError_t sync_common(hipStream_t stream, bool spt)
{
	struct sim_stream *s;
	struct sim_op *op;
	struct sim_pos end;
	hipError_t e = sim_enter_stream(stream, spt, &s);

	if (e == hipSuccess && s->cap)
		e = hipErrorStreamCaptureUnsupported;
	if (e == hipSuccess && (pending(s) || !implicit_idle_locked(s))) {
		op = sim_op_new(SIM_OP_NOP);
		e = op ? sim_enqueue_locked(s, op, NULL, 0, &end) : hipErrorOutOfMemory;
		if (e == hipSuccess)
			sim_pos_wait_locked(&end);
	}
	return sim_leave(e);
}

SIMHIP_API hipError_t hipStreamSynchronize(hipStream_t stream)
{
	return sync_common(stream, false);
}

SIMHIP_API hipError_t hipStreamSynchronize_spt(hipStream_t stream)
{
	return sync_common(stream, true);
}

static hipError_t query_common(hipStream_t stream, bool spt)
{
	struct sim_stream *s;
	hipError_t e = sim_enter_stream(stream, spt, &s);

	if (e == hipSuccess && s->cap)
		e = hipErrorStreamCaptureUnsupported;
	if (e == hipSuccess && (pending(s) || !implicit_idle_locked(s)))
		e = hipErrorNotReady;
	return sim_leave(e);
}

SIMHIP_API hipError_t hipStreamQuery(hipStream_t stream)
{
	return query_common(stream, false);
}

SIMHIP_API hipError_t hipStreamQuery_spt(hipStream_t stream)
{
	return query_common(stream, true);
}

/* ROCm 5.2: hipStreamGetFlags(0) is hipErrorInvalidValue; the priority of 0 is 0. */
static hipError_t get_attr_common(hipStream_t stream, bool spt, unsigned *flags, int *priority)
{
	struct sim_stream *s;
	hipError_t e;

	if (!flags && !priority)
		return sim_ret(hipErrorInvalidValue);
	if (stream == NULL && !spt) {
		if (priority)
			*priority = SIM_PRIO_NORMAL;
		return sim_ret(flags ? hipErrorInvalidValue : sim_init());
	}
	e = sim_enter_stream(stream, spt, &s);
	if (e == hipSuccess && flags)
		*flags = s->flags;
	if (e == hipSuccess && priority)
		*priority = s->priority;
	return sim_leave(e);
}

SIMHIP_API hipError_t hipStreamGetFlags(hipStream_t stream, unsigned int *flags)
{
	return flags ? get_attr_common(stream, false, flags, NULL) : sim_ret(hipErrorInvalidValue);
}

SIMHIP_API hipError_t hipStreamGetFlags_spt(hipStream_t stream, unsigned int *flags)
{
	return flags ? get_attr_common(stream, true, flags, NULL) : sim_ret(hipErrorInvalidValue);
}

SIMHIP_API hipError_t hipStreamGetPriority(hipStream_t stream, int *priority)
{
	return priority ? get_attr_common(stream, false, NULL, priority)
			: sim_ret(hipErrorInvalidValue);
}

SIMHIP_API hipError_t hipStreamGetPriority_spt(hipStream_t stream, int *priority)
{
	return priority ? get_attr_common(stream, true, NULL, priority)
			: sim_ret(hipErrorInvalidValue);
}

/* The callback runs on the stream's worker, after all earlier work, before later work. */
SIMHIP_API hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t callback,
					   void *userData, unsigned int flags)
{
	struct sim_op *op;

	if (!callback || flags != 0)
		return sim_ret(hipErrorInvalidValue);
	op = sim_op_new(SIM_OP_CALLBACK);
	if (!op)
		return sim_ret(hipErrorOutOfMemory);
	op->u.callback.fn = callback;
	op->u.callback.handle = stream;
	op->u.callback.user = userData;
	return sim_ret(sim_submit(op, stream, false, false));
}

SIMHIP_API hipError_t hipDeviceSynchronize(void)
{
	hipError_t e = sim_enter();

	if (e == hipSuccess)
		sim_device_sync_locked();
	return sim_leave(e);
}
