/* SPDX-License-Identifier: MIT */
/*
 * simhip graphs: stream capture, instantiation and replay.
 *
 * hipStreamBeginCapture puts a stream in capture: the work enqueued on it
 * (kernels, copies, memsets, callbacks) becomes nodes of a graph instead of
 * running. Each node depends on the one captured before it on its stream. A
 * record on a capturing stream enqueues nothing: it remembers the stream's
 * last node, and a wait on that event, from another stream, makes the
 * waiter join the capture (a fork) or, from a stream already in it, adds the
 * dependency (a join, as an empty node). hipStreamEndCapture on the origin
 * stream ends the capture of every stream in it and hands out the graph;
 * a fork that was not joined back fails it with hipErrorStreamCaptureUnjoined.
 *
 * hipGraphLaunch replays an instance's nodes in captured order on the launch
 * stream. Captured order is a topological order of the captured edges, so
 * one stream running them in turn honours every edge, and the launch as a
 * whole is ordered like one op of that stream.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct sim_node {
	struct sim_op *op; /* a template: cloned at each launch */
	long *deps;
	unsigned ndeps;
};

struct sim_graph {
	struct sim_node *n;
	size_t nn, cap;
};

struct sim_exec {
	struct sim_op **ops;
	size_t n;
};

struct sim_capture {
	uint64_t id;
	struct sim_stream *origin;
	struct sim_graph *g;
	struct sim_stream **member; /* streams that joined after the origin */
	size_t nmember;
	struct sim_capture *next;
};

static struct sim_capture *active; /* open captures */
static uint64_t next_capture_id = 1;
static struct ptrset live_graphs, live_execs;

static void graph_free(struct sim_graph *g)
{
	for (size_t i = 0; i < g->nn; i++) {
		free(g->n[i].op);
		free(g->n[i].deps);
	}
	free(g->n);
	free(g);
}

static void exec_free(struct sim_exec *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->ops[i]);
	free(x->ops);
	free(x);
}

/* Append a node depending on up to two earlier nodes (-1: none); its index or -1. */
static long node_add(struct sim_graph *g, struct sim_op *op, long d0, long d1)
{
	struct sim_node *n;

	if (g->nn == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 16;
		struct sim_node *grown = realloc(g->n, ncap * sizeof(*grown));

		if (!grown)
			return -1;
		g->n = grown;
		g->cap = ncap;
	}
	n = &g->n[g->nn];
	*n = (struct sim_node){ .op = op };
	n->deps = calloc(2, sizeof(*n->deps));
	if (!n->deps)
		return -1;
	if (d0 >= 0)
		n->deps[n->ndeps++] = d0;
	if (d1 >= 0 && d1 != d0)
		n->deps[n->ndeps++] = d1;
	return (long)g->nn++;
}

hipError_t sim_capture_op_locked(struct sim_stream *s, struct sim_op *op)
{
	long i;

	/* the dependencies of a live op do not belong in a template */
	free(op->deps);
	op->deps = NULL;
	op->ndeps = 0;
	op->next = NULL;
	i = node_add(s->cap->g, op, s->cap_last, -1);
	if (i < 0) {
		free(op);
		return hipErrorOutOfMemory;
	}
	s->cap_last = i;
	return hipSuccess;
}

void sim_capture_record_locked(struct sim_event *ev, struct sim_stream *s)
{
	ev->cap_id = s->cap->id;
	ev->cap_node = s->cap_last;
}

static struct sim_capture *capture_of_event(const struct sim_event *ev)
{
	for (struct sim_capture *c = active; ev->cap_id && c; c = c->next)
		if (c->id == ev->cap_id)
			return c;
	return NULL;
}

bool sim_event_captured_locked(const struct sim_event *ev)
{
	return capture_of_event(ev) != NULL;
}

static bool event_pending_locked(const struct sim_event *ev)
{
	return ev->recorded && !sim_pos_done_locked(&ev->pos);
}

hipError_t sim_capture_wait_locked(struct sim_stream *s, struct sim_event *ev, bool *handled)
{
	struct sim_capture *c = capture_of_event(ev);
	struct sim_stream **grown;
	struct sim_op *op;
	long i;

	*handled = c || s->cap;
	if (!*handled)
		return hipSuccess;
	if (!c) {
		/* A capture may only depend on outside work already done: the
		 * graph cannot wait for it at replay. */
		return event_pending_locked(ev) ? hipErrorStreamCaptureIsolation : hipSuccess;
	}
	if (s->cap && s->cap != c)
		return hipErrorStreamCaptureMerge;
	if (!s->cap) { /* fork: s joins the capture after the recorded node */
		if (s->is_null)
			return hipErrorStreamCaptureImplicit;
		grown = realloc(c->member, (c->nmember + 1) * sizeof(*grown));
		if (!grown)
			return hipErrorOutOfMemory;
		c->member = grown;
		c->member[c->nmember++] = s;
		s->cap = c;
		s->cap_last = ev->cap_node;
		return hipSuccess;
	}
	if (ev->cap_node < 0 || ev->cap_node == s->cap_last)
		return hipSuccess;
	if (s->cap_last < 0) {
		s->cap_last = ev->cap_node;
		return hipSuccess;
	}
	op = sim_op_new(SIM_OP_NOP); /* join: an empty node after both */
	if (!op)
		return hipErrorOutOfMemory;
	i = node_add(c->g, op, s->cap_last, ev->cap_node);
	if (i < 0) {
		free(op);
		return hipErrorOutOfMemory;
	}
	s->cap_last = i;
	return hipSuccess;
}

/* Whether node `want` is `from` or one of its ancestors. */
static bool reaches(const struct sim_graph *g, long from, long want, uint8_t *seen)
{
	if (from == want)
		return true;
	if (from < want || seen[from])
		return false; /* nodes depend only on earlier ones */
	seen[from] = 1;
	for (unsigned d = 0; d < g->n[from].ndeps; d++)
		if (reaches(g, g->n[from].deps[d], want, seen))
			return true;
	return false;
}

/* Every forked stream's last node must be joined back into the origin's. */
static hipError_t check_joined(const struct sim_capture *c)
{
	uint8_t *seen;
	hipError_t e = hipSuccess;

	for (size_t m = 0; m < c->nmember && e == hipSuccess; m++) {
		long last = c->member[m]->cap_last;

		if (last < 0)
			continue;
		seen = calloc(c->g->nn ? c->g->nn : 1, 1);
		if (!seen)
			return hipErrorOutOfMemory;
		if (c->origin->cap_last < 0 || !reaches(c->g, c->origin->cap_last, last, seen))
			e = hipErrorStreamCaptureUnjoined;
		free(seen);
	}
	return e;
}

static void capture_end_locked(struct sim_capture *c)
{
	struct sim_capture **pp = &active;

	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
	c->origin->cap = NULL;
	c->origin->cap_last = -1;
	for (size_t m = 0; m < c->nmember; m++) {
		c->member[m]->cap = NULL;
		c->member[m]->cap_last = -1;
	}
	free(c->member);
	free(c);
}

/* ---- exported capture API -------------------------------------------- */

SIMHIP_API hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode)
{
	struct sim_stream *s;
	struct sim_capture *c = NULL;
	hipError_t e = sim_enter_stream(stream, false, &s);

	if (e == hipSuccess && (unsigned)mode > hipStreamCaptureModeRelaxed)
		e = hipErrorInvalidValue;
	if (e == hipSuccess && s->is_null)
		e = hipErrorStreamCaptureUnsupported; /* the legacy stream cannot capture */
	if (e == hipSuccess && s->cap)
		e = hipErrorIllegalState;
	if (e == hipSuccess) {
		c = calloc(1, sizeof(*c));
		if (c)
			c->g = calloc(1, sizeof(*c->g));
		if (!c || !c->g) {
			free(c);
			e = hipErrorOutOfMemory;
		}
	}
	if (e == hipSuccess) {
		c->id = next_capture_id++;
		c->origin = s;
		c->next = active;
		active = c;
		s->cap = c;
		s->cap_last = -1;
	}
	return sim_leave(e);
}

SIMHIP_API hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *pGraph)
{
	struct sim_stream *s;
	struct sim_capture *c;
	struct sim_graph *g = NULL;
	hipError_t e = sim_enter_stream(stream, false, &s);

	if (e == hipSuccess && !pGraph)
		e = hipErrorInvalidValue;
	if (e == hipSuccess && !s->cap)
		e = hipErrorIllegalState;
	if (e == hipSuccess && s->cap->origin != s)
		e = hipErrorStreamCaptureUnmatched;
	if (e != hipSuccess)
		return sim_leave(e);
	c = s->cap;
	e = check_joined(c);
	if (e == hipSuccess && ptrset_add(&live_graphs, c->g))
		e = hipErrorOutOfMemory;
	if (e == hipSuccess)
		g = c->g;
	else
		graph_free(c->g);
	capture_end_locked(c); /* a failed end still ends the capture */
	*pGraph = (hipGraph_t)g;
	return sim_leave(e);
}

SIMHIP_API hipError_t hipStreamIsCapturing(hipStream_t stream, hipStreamCaptureStatus *status)
{
	struct sim_stream *s;
	hipError_t e = sim_enter_stream(stream, false, &s);

	if (e == hipSuccess && !status)
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		*status = s->cap ? hipStreamCaptureStatusActive : hipStreamCaptureStatusNone;
	return sim_leave(e);
}

/* ---- graphs and instances -------------------------------------------- */

static hipError_t instantiate(hipGraphExec_t *pExec, hipGraph_t graph)
{
	struct sim_graph *g = (struct sim_graph *)graph;
	struct sim_exec *x = NULL;
	hipError_t e = sim_enter();

	if (e == hipSuccess && (!pExec || !ptrset_has(&live_graphs, g)))
		e = hipErrorInvalidValue;
	if (e == hipSuccess) {
		x = calloc(1, sizeof(*x));
		if (x)
			x->ops = calloc(g->nn ? g->nn : 1, sizeof(*x->ops));
		if (!x || !x->ops)
			e = hipErrorOutOfMemory;
	}
	for (size_t i = 0; e == hipSuccess && i < g->nn; i++) {
		x->ops[i] = malloc(sizeof(*x->ops[i]));
		if (!x->ops[i])
			e = hipErrorOutOfMemory;
		else
			*x->ops[i] = *g->n[i].op;
		x->n = i + 1;
	}
	if (e == hipSuccess && ptrset_add(&live_execs, x))
		e = hipErrorOutOfMemory;
	if (e == hipSuccess) {
		*pExec = (hipGraphExec_t)x;
	} else if (x) {
		exec_free(x);
	}
	return sim_leave(e);
}

SIMHIP_API hipError_t hipGraphInstantiate(hipGraphExec_t *pGraphExec, hipGraph_t graph,
					  hipGraphNode_t *pErrorNode, char *pLogBuffer,
					  size_t bufferSize)
{
	(void)pErrorNode;
	if (pLogBuffer && bufferSize)
		pLogBuffer[0] = 0; /* nothing to report */
	return instantiate(pGraphExec, graph);
}

SIMHIP_API hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *pGraphExec, hipGraph_t graph,
						   unsigned long long flags)
{
	if (flags & ~(unsigned long long)hipGraphInstantiateFlagAutoFreeOnLaunch)
		return sim_ret(hipErrorInvalidValue);
	return instantiate(pGraphExec, graph);
}

/* Replays the nodes in captured order on the stream (or into its capture). */
SIMHIP_API hipError_t hipGraphLaunch(hipGraphExec_t graphExec, hipStream_t stream)
{
	struct sim_exec *x = (struct sim_exec *)graphExec;
	struct sim_stream *s;
	struct sim_op *op;
	hipError_t e = sim_enter_stream(stream, false, &s);

	if (e == hipSuccess && !ptrset_has(&live_execs, x))
		e = hipErrorInvalidValue;
	for (size_t i = 0; e == hipSuccess && i < x->n; i++) {
		op = sim_op_new(x->ops[i]->kind);
		if (!op) {
			e = hipErrorOutOfMemory;
			break;
		}
		op->sim_ns = x->ops[i]->sim_ns;
		op->u = x->ops[i]->u;
		e = sim_enqueue_locked(s, op, NULL, 0, NULL);
	}
	return sim_leave(e);
}

SIMHIP_API hipError_t hipGraphExecDestroy(hipGraphExec_t graphExec)
{
	struct sim_exec *x = (struct sim_exec *)graphExec;
	hipError_t e = sim_enter();

	/* launched copies are independent of the instance: no need to drain */
	if (e == hipSuccess && !ptrset_del(&live_execs, x))
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		exec_free(x);
	return sim_leave(e);
}

SIMHIP_API hipError_t hipGraphDestroy(hipGraph_t graph)
{
	struct sim_graph *g = (struct sim_graph *)graph;
	hipError_t e = sim_enter();

	if (e == hipSuccess && !ptrset_del(&live_graphs, g))
		e = hipErrorInvalidValue;
	if (e == hipSuccess)
		graph_free(g);
	return sim_leave(e);
}
