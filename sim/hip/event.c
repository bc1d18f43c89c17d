/* SPDX-License-Identifier: MIT */
/*
 * simhip events. A record enqueues a marker: the event completes when the
 * marker is reached, i.e. when all work enqueued before it on that stream has
 * executed, and takes its CLOCK_MONOTONIC timestamp then.
 *
 * Destroyed events go to a LIFO free list: the next create hands the same
 * handle value out again. Unknown or destroyed handles answer
 * hipErrorInvalidHandle (ROCm answers that for NULL and does not check
 * further; a stale pointer there is undefined behaviour).
 */
#include <stdlib.h>

#include "internal.h"

static struct sim_event *free_events;
static struct ptrset live_events;

hipError_t sim_event_get_locked(hipEvent_t h, struct sim_event **out)
{
	if (!ptrset_has(&live_events, h))
		return hipErrorInvalidHandle;
	*out = (struct sim_event *)h;
	return hipSuccess;
}

hipError_t sim_event_record_locked(struct sim_event *ev, struct sim_stream *s)
{
	struct sim_op *op;
	hipError_t e;

	if (s->cap) {
		sim_capture_record_locked(ev, s);
		return hipSuccess;
	}
	op = sim_op_new(SIM_OP_MARKER);
	if (!op)
		return hipErrorOutOfMemory;
	op->u.marker.ev = ev;
	op->u.marker.ev_gen = ev->gen;
	op->u.marker.rec = ev->rec + 1;
	e = sim_enqueue_locked(s, op, NULL, 0, &ev->pos);
	if (e == hipSuccess) {
		ev->rec++;
		ev->recorded = true;
	}
	return e;
}

void sim_marker_reached_locked(const struct sim_op *op)
{
	struct sim_event *ev = op->u.marker.ev;

	/* ignore markers of a destroyed event or of an overtaken record */
	if (ev->gen == op->u.marker.ev_gen && ev->rec == op->u.marker.rec)
		ev->t_ns = sim_now_ns();
}

static bool event_done_locked(const struct sim_event *ev)
{
	return !ev->recorded || sim_pos_done_locked(&ev->pos);
}

/* sim_enter, then look the event up. */
static hipError_t enter_event(hipEvent_t h, struct sim_event **out)
{
	hipError_t e = sim_enter();

	return e != hipSuccess ? e : sim_event_get_locked(h, out);
}

/* ---- exported event API --------------------------------------------- */

/* Shared by both create calls: hipEventCreate does not re-enter an export. */
static hipError_t create_common(hipEvent_t *event, unsigned flags)
{
	const unsigned supported = hipEventDefault | hipEventBlockingSync | hipEventDisableTiming |
				   hipEventInterprocess | hipEventReleaseToDevice |
				   hipEventReleaseToSystem;
	const unsigned release = hipEventReleaseToDevice | hipEventReleaseToSystem;
	struct sim_event *ev = NULL;
	hipError_t e = sim_enter();

	if (e == hipSuccess && (!event || (flags & ~supported) || (flags & release) == release))
		e = hipErrorInvalidValue;
	if (e == hipSuccess) {
		ev = free_events ? free_events : calloc(1, sizeof(*ev));
		if (!ev || ptrset_add(&live_events, ev))
			e = hipErrorOutOfMemory;
		else if (ev == free_events)
			free_events = ev->next_free;
	}
	if (e == hipSuccess) {
		ev->next_free = NULL;
		ev->flags = flags;
		ev->recorded = false;
		ev->cap_id = 0;
		*event = (hipEvent_t)ev;
	} else if (ev && ev != free_events) {
		free(ev); /* fresh and never published */
	}
	return sim_leave(e);
}

SIMHIP_API hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned flags)
{
	return create_common(event, flags);
}

SIMHIP_API hipError_t hipEventCreate(hipEvent_t *event)
{
	return create_common(event, hipEventDefault);
}

SIMHIP_API hipError_t hipEventDestroy(hipEvent_t event)
{
	struct sim_event *ev;
	hipError_t e = enter_event(event, &ev);

	if (e == hipSuccess) {
		ptrset_del(&live_events, ev);
		ev->gen++;
		ev->next_free = free_events;
		free_events = ev;
	}
	return sim_leave(e);
}

SIMHIP_API hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream)
{
	struct sim_event *ev;
	struct sim_stream *s;
	hipError_t e = enter_event(event, &ev);

	if (e == hipSuccess)
		e = sim_stream_get_locked(stream, false, &s);
	if (e == hipSuccess)
		e = sim_event_record_locked(ev, s);
	return sim_leave(e);
}

static hipError_t wait_event_common(hipStream_t stream, hipEvent_t event, unsigned flags,
				    bool spt)
{
	struct sim_event *ev;
	struct sim_stream *s;
	struct sim_op *op;
	bool captured = false;
	hipError_t e = enter_event(event, &ev);

	if (e == hipSuccess && flags != 0)
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		e = sim_stream_get_locked(stream, spt, &s);
	if (e == hipSuccess)
		e = sim_capture_wait_locked(s, ev, &captured);
	if (captured)
		return sim_leave(e);
	/* never recorded, already complete, or same stream: nothing to wait for */
	if (e == hipSuccess && !event_done_locked(ev) && ev->pos.s != s) {
		op = sim_op_new(SIM_OP_NOP);
		e = op ? sim_enqueue_locked(s, op, &ev->pos, 1, NULL) : hipErrorOutOfMemory;
	}
	return sim_leave(e);
}

SIMHIP_API hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags)
{
	return wait_event_common(stream, event, flags, false);
}

SIMHIP_API hipError_t hipStreamWaitEvent_spt(hipStream_t stream, hipEvent_t event,
					     unsigned int flags)
{
	return wait_event_common(stream, event, flags, true);
}

SIMHIP_API hipError_t hipEventQuery(hipEvent_t event)
{
	struct sim_event *ev;
	hipError_t e = enter_event(event, &ev);

	if (e == hipSuccess && sim_event_captured_locked(ev))
		e = hipErrorCapturedEvent;
	if (e == hipSuccess && !event_done_locked(ev))
		e = hipErrorNotReady;
	return sim_leave(e);
}

SIMHIP_API hipError_t hipEventSynchronize(hipEvent_t event)
{
	struct sim_event *ev;
	struct sim_pos pos;
	hipError_t e = enter_event(event, &ev);

	if (e == hipSuccess && sim_event_captured_locked(ev))
		e = hipErrorCapturedEvent;
	if (e == hipSuccess && ev->recorded) {
		pos = ev->pos; /* the event may be re-recorded or destroyed meanwhile */
		sim_pos_wait_locked(&pos);
	}
	return sim_leave(e);
}

/* Error order as in ROCm 5.2 hip::Event::elapsedTime. */
SIMHIP_API hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop)
{
	struct sim_event *a, *b;
	hipError_t e;

	if (!ms)
		return sim_ret(hipErrorInvalidValue);
	e = enter_event(start, &a);
	if (e == hipSuccess)
		e = sim_event_get_locked(stop, &b);
	if (e == hipSuccess && (sim_event_captured_locked(a) || sim_event_captured_locked(b)))
		e = hipErrorCapturedEvent;
	if (e == hipSuccess && (!a->recorded || !b->recorded))
		e = hipErrorInvalidHandle;
	if (e == hipSuccess && ((a->flags | b->flags) & hipEventDisableTiming))
		e = hipErrorInvalidHandle;
	if (e == hipSuccess && (!event_done_locked(a) || !event_done_locked(b)))
		e = hipErrorNotReady;
	if (e == hipSuccess)
		*ms = (float)((double)((int64_t)b->t_ns - (int64_t)a->t_ns) / 1e6);
	return sim_leave(e);
}
