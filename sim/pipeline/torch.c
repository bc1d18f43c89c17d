// SPDX-License-Identifier: MIT
/*
 * The PyTorch machinery whose HIP calls surround the pipeline's own work:
 * event pools, Stream.wait_stream, the pinned host allocator's events,
 * ProcessGroupNCCL's collectives and watchdog thread, and the autograd
 * thread that launches backward kernels.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pl.h"

#define EVPOOL_CAP ((int)(sizeof(((struct pl_evpool *)0)->ev) / sizeof(hipEvent_t)))
/* Every Nth release destroys the event instead of pooling it, so a later
 * create gets a recycled handle, as the tracer must expect. */
#define EVPOOL_DESTROY_EVERY 7

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "pipeline: out of memory\n");
		_exit(1);
	}
	return p;
}

static const char *stream_letter(const struct pl_ctx *x, hipStream_t s)
{
	if (s == x->M)
		return "M";
	if (s == x->D)
		return "D";
	if (s == x->N)
		return "N";
	return "C";
}

static const char *edge_name(const struct pl_ctx *x, hipStream_t from, hipStream_t to)
{
	static const char *const names[] = { "M->D", "D->C", "D->N", "N->D", "C->N", "N->C",
					     "M->C" };
	char buf[8];

	snprintf(buf, sizeof(buf), "%s->%s", stream_letter(x, from), stream_letter(x, to));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(buf, names[i]) == 0)
			return names[i];
	return "?";
}

/* ---- event pool ----------------------------------------------------------- */

void evpool_init(struct pl_evpool *p, unsigned flags)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	p->flags = flags;
}

/* The oldest pooled event, or NULL. */
static hipEvent_t evpool_pop(struct pl_evpool *p)
{
	hipEvent_t e = NULL;

	pthread_mutex_lock(&p->mu);
	if (p->n > 0) {
		e = p->ev[p->head];
		p->head = (p->head + 1) % EVPOOL_CAP;
		p->n--;
	}
	pthread_mutex_unlock(&p->mu);
	return e;
}

hipEvent_t evpool_get(struct pl_evpool *p)
{
	hipEvent_t e = evpool_pop(p);

	if (!e)
		hw_event_create(&e, p->flags);
	return e;
}

void evpool_put(struct pl_evpool *p, hipEvent_t e)
{
	bool destroy;

	pthread_mutex_lock(&p->mu);
	p->releases++;
	destroy = p->n == EVPOOL_CAP || p->releases % EVPOOL_DESTROY_EVERY == 0;
	if (!destroy) {
		p->ev[(p->head + p->n) % EVPOOL_CAP] = e;
		p->n++;
	}
	pthread_mutex_unlock(&p->mu);
	if (destroy)
		hw_event_destroy(e);
}

void evpool_drain(struct pl_evpool *p)
{
	hipEvent_t e;

	while ((e = evpool_pop(p)) != NULL)
		hw_event_destroy(e);
}

/* ---- pinned host allocator ------------------------------------------------ */

struct pl_hblock *halloc_get(struct pl_halloc *h, long batch)
{
	struct pl_hblock *blk;
	long ob;
	int ost, osp;

	pl_attr_get(&ob, &ost, &osp);
	/* Like CachingHostAllocator: reclaim blocks in free order while their
	 * events say the copy that read them is done; never wait. */
	while ((blk = h->pend) != NULL) {
		pl_attr(blk->batch, ST_ALLOCATOR, osp);
		if (hw_event_query(blk->ev) != hipSuccess)
			break;
		h->pend = blk->next;
		if (!h->pend)
			h->pend_tail = NULL;
		evpool_put(h->pool, blk->ev);
		blk->ev = NULL;
		blk->next = h->free;
		h->free = blk;
	}
	pl_attr(ob, ost, osp);
	blk = h->free;
	if (blk) {
		h->free = blk->next;
	} else {
		blk = xcalloc(1, sizeof(*blk));
		blk->p = xcalloc(1, h->size);
		h->fresh++;
	}
	blk->next = NULL;
	blk->batch = batch;
	return blk;
}

void halloc_put(struct pl_halloc *h, struct pl_hblock *blk, hipStream_t s)
{
	long ob;
	int ost, osp;

	pl_attr_get(&ob, &ost, &osp);
	pl_attr(blk->batch, ST_ALLOCATOR, osp);
	blk->ev = evpool_get(h->pool);
	hw_event_record(blk->ev, s, NULL);
	pl_attr(ob, ost, osp);
	if (h->pend_tail)
		h->pend_tail->next = blk;
	else
		h->pend = blk;
	h->pend_tail = blk;
}

/* After hipDeviceSynchronize: every pending event has completed. */
void halloc_drain(struct pl_halloc *h)
{
	struct pl_hblock *blk;

	while ((blk = h->pend) != NULL) {
		pl_attr(blk->batch, ST_ALLOCATOR, SP_NONE);
		hw_event_query(blk->ev);
		h->pend = blk->next;
		evpool_put(h->pool, blk->ev);
		free(blk->p);
		free(blk);
	}
	h->pend_tail = NULL;
	while ((blk = h->free) != NULL) {
		h->free = blk->next;
		free(blk->p);
		free(blk);
	}
}

/* ---- edges ---------------------------------------------------------------- */

void pl_edge(long batch, const char *name, int step, hipEvent_t ev, hipStream_t from,
	     hipStream_t to, long rec_seq, long wait_seq, int wait, bool dropped, bool necessary)
{
	struct pl_json j;

	pj_begin(&j, "edge");
	pj_batch(&j, "batch", batch);
	pj_str(&j, "name", name);
	pj_str(&j, "step", pl_step_name(step));
	if (dropped)
		pj_raw(&j, ",\"event\":null");
	else
		pj_hex(&j, "event", (uint64_t)(uintptr_t)ev);
	pj_hex(&j, "from_stream", (uint64_t)(uintptr_t)from);
	pj_hex(&j, "to_stream", (uint64_t)(uintptr_t)to);
	pj_bool(&j, "dropped", dropped);
	pj_bool(&j, "necessary", necessary);
	pj_str(&j, "wait", wait >= 0 ? pl_waits[wait].name : NULL);
	pj_batch(&j, "record_seq", rec_seq);
	pj_batch(&j, "wait_seq", wait_seq);
	pj_end(&j);
}

void pl_wait_stream(struct pl_ctx *x, hipStream_t to, hipStream_t from, long batch,
		    const char *edge, int step, int wait, bool drop)
{
	bool necessary = wait < 0 || pl_waits[wait].missing != NULL;
	long rs, ws;
	hipEvent_t e;

	if (!edge)
		edge = edge_name(x, from, to);
	if (drop) {
		pl_edge(batch, edge, step, NULL, from, to, -1, -1, wait, true, necessary);
		return;
	}
	e = evpool_get(&x->ev_sync);
	hw_event_record(e, from, &rs);
	hw_stream_wait(to, e, &ws);
	pl_edge(batch, edge, step, e, from, to, rs, ws, wait, false, necessary);
	evpool_put(&x->ev_sync, e);
}

/* ---- collectives and the watchdog ---------------------------------------- */

struct pl_work {
	hipEvent_t start, end;
	struct pl_evpool *pool;
	long batch, end_seq;
	bool timed;
	int refs;
	struct pl_work *next;
};

static struct {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_mutex_t sweep_mu; /* held for a whole sweep; pl_watchdog_freeze keeps it */
	pthread_cond_t cv;
	bool stop, running;
	long period_ms;
	struct pl_work *head;
} wd = { .mu = PTHREAD_MUTEX_INITIALIZER, .sweep_mu = PTHREAD_MUTEX_INITIALIZER,
	 .cv = PTHREAD_COND_INITIALIZER };

static void work_put(struct pl_work *w)
{
	bool last;

	pthread_mutex_lock(&wd.mu);
	last = --w->refs == 0;
	pthread_mutex_unlock(&wd.mu);
	if (!last)
		return;
	if (w->start)
		evpool_put(w->pool, w->start);
	evpool_put(w->pool, w->end);
	free(w);
}

struct pl_work *pl_alltoall(struct pl_ctx *x, hipStream_t from, long batch, int step,
			    bool timed, const struct pl_a2a *ops, int nops)
{
	struct pl_work *w = xcalloc(1, sizeof(*w));

	/* ProcessGroupNCCL: the collective stream first waits on the caller's. */
	pl_wait_stream(x, x->N, from, batch, NULL, step, -1, false);
	w->batch = batch;
	w->timed = timed;
	w->pool = timed ? &x->ev_timed : &x->ev_coll;
	w->refs = 2; /* the caller's Work and the watchdog's */
	if (timed) {
		w->start = evpool_get(w->pool);
		hw_event_record(w->start, x->N, NULL);
	}
	for (int i = 0; i < nops; i++)
		hw_alltoall(ops[i].send, ops[i].recv, ops[i].count, x->comm, x->N);
	w->end = evpool_get(w->pool);
	hw_event_record(w->end, x->N, &w->end_seq);
	pthread_mutex_lock(&wd.mu);
	w->next = wd.head;
	wd.head = w;
	pthread_mutex_unlock(&wd.mu);
	return w;
}

void pl_work_wait(struct pl_ctx *x, struct pl_work *w, hipStream_t to, int step)
{
	long ws;

	hw_stream_wait(to, w->end, &ws);
	pl_edge(w->batch, edge_name(x, x->N, to), step, w->end, x->N, to, w->end_seq, ws, -1,
		false, true);
	work_put(w);
}

/* One pass: query every pending work's end event; finished ones leave. */
static bool watchdog_sweep(void)
{
	struct pl_work *w, *next, **pp;
	bool empty;

	pthread_mutex_lock(&wd.mu);
	w = wd.head;
	pthread_mutex_unlock(&wd.mu);
	/* Only this thread unlinks and the main thread only pushes at the head:
	 * the chain from the head read above is stable, and the watchdog's own
	 * reference keeps each node alive until its work_put. */
	for (; w; w = next) {
		float ms;

		next = w->next;
		pl_attr(w->batch, ST_WATCHDOG, SP_NONE);
		if (hw_event_query(w->end) != hipSuccess)
			continue;
		if (w->timed)
			hw_event_elapsed(&ms, w->start, w->end);
		pthread_mutex_lock(&wd.mu);
		for (pp = &wd.head; *pp != w; pp = &(*pp)->next)
			;
		*pp = w->next;
		pthread_mutex_unlock(&wd.mu);
		work_put(w);
	}
	pthread_mutex_lock(&wd.mu);
	empty = wd.head == NULL;
	pthread_mutex_unlock(&wd.mu);
	return empty;
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec until;
		bool stop, empty;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += wd.period_ms * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&wd.mu);
		while (!wd.stop && pthread_cond_timedwait(&wd.cv, &wd.mu, &until) != ETIMEDOUT)
			;
		stop = wd.stop;
		pthread_mutex_unlock(&wd.mu);
		pthread_mutex_lock(&wd.sweep_mu);
		empty = watchdog_sweep();
		pthread_mutex_unlock(&wd.sweep_mu);
		if (empty && stop)
			return NULL;
	}
}

int pl_watchdog_start(struct pl_ctx *x)
{
	int err;

	wd.period_ms = x->o->watchdog_ms;
	wd.stop = false;
	err = pthread_create(&wd.th, NULL, watchdog_main, NULL);
	wd.running = err == 0;
	return -err;
}

/* For an abrupt exit: let a sweep in progress finish, then no more calls
 * from the watchdog, so the truth's last lines are really the last. */
void pl_watchdog_freeze(void)
{
	if (wd.running)
		pthread_mutex_lock(&wd.sweep_mu);
}

void pl_watchdog_stop(void)
{
	if (!wd.running)
		return;
	pthread_mutex_lock(&wd.mu);
	wd.stop = true;
	pthread_cond_signal(&wd.cv);
	pthread_mutex_unlock(&wd.mu);
	pthread_join(wd.th, NULL);
	wd.running = false;
}

/* ---- the autograd thread -------------------------------------------------- */

static struct {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pl_ctx *x;
	long job;
	bool has_job, stop, running;
} ag = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void backward(struct pl_ctx *x, long batch)
{
	void **args = x->b[batch].argv;

	pl_attr(batch, ST_BACKWARD, SP_F);
	hw_launch(&k_bwd_emb, 64, args, x->C);
	hw_launch_gemm(&k_gemm_bwd, 64, args, x->C);
	hw_launch(&k_bwd_elem, 32, args, x->C);
	for (long l = 0; l < x->o->mlp_layers; l++)
		hw_launch(&k_mlp_bwd, 16, args, x->C);
	pl_attr(-1, ST_NONE, SP_NONE);
}

static void *autograd_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&ag.mu);
	for (;;) {
		while (!ag.has_job && !ag.stop)
			pthread_cond_wait(&ag.cv, &ag.mu);
		if (!ag.has_job)
			break;
		pthread_mutex_unlock(&ag.mu);
		backward(ag.x, ag.job);
		pthread_mutex_lock(&ag.mu);
		ag.has_job = false;
		pthread_cond_broadcast(&ag.cv);
	}
	pthread_mutex_unlock(&ag.mu);
	return NULL;
}

int pl_autograd_start(struct pl_ctx *x)
{
	int err;

	ag.x = x;
	err = pthread_create(&ag.th, NULL, autograd_main, NULL);
	ag.running = err == 0;
	return -err;
}

void pl_autograd_run(long batch)
{
	pthread_mutex_lock(&ag.mu);
	ag.job = batch;
	ag.has_job = true;
	pthread_cond_broadcast(&ag.cv);
	while (ag.has_job)
		pthread_cond_wait(&ag.cv, &ag.mu);
	pthread_mutex_unlock(&ag.mu);
}

void pl_autograd_stop(void)
{
	if (!ag.running)
		return;
	pthread_mutex_lock(&ag.mu);
	ag.stop = true;
	pthread_cond_broadcast(&ag.cv);
	pthread_mutex_unlock(&ag.mu);
	pthread_join(ag.th, NULL);
	ag.running = false;
}
