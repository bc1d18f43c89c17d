// SPDX-License-Identifier: MIT
/*
 * Ground truth writer: one JSON object per line, each line written with one
 * write(2) under a mutex, so an abrupt _exit leaves a valid file up to there
 * and the global seq is strictly increasing in file order. Every call is
 * logged by the thread that made it, right after it returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pl.h"

static pthread_mutex_t truth_mu = PTHREAD_MUTEX_INITIALIZER;
static int truth_fd = -1;
static long next_seq;

static _Thread_local long cur_batch = -1;
static _Thread_local int cur_stage = ST_NONE, cur_step = SP_NONE;

static const char *const stage_names[] = {
	[ST_NONE] = NULL, [ST_COPY] = "copy", [ST_SPARSE] = "sparse", [ST_FORWARD] = "forward",
	[ST_BACKWARD] = "backward", [ST_SETUP] = "setup", [ST_TEARDOWN] = "teardown",
	[ST_ALLOCATOR] = "allocator", [ST_WATCHDOG] = "watchdog",
};
static const char *const step_names[] = {
	[SP_NONE] = NULL, [SP_FILL] = "fill", [SP_A] = "a", [SP_B] = "b",
	[SP_C] = "c", [SP_D] = "d", [SP_E] = "e", [SP_F] = "f",
};

void pl_attr(long batch, int stage, int step)
{
	cur_batch = batch;
	cur_stage = stage;
	cur_step = step;
}

void pl_attr_get(long *batch, int *stage, int *step)
{
	*batch = cur_batch;
	*stage = cur_stage;
	*step = cur_step;
}

const char *pl_step_name(int step)
{
	return step_names[step];
}

uint64_t pl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int pl_truth_open(const char *path)
{
	if (!path)
		return 0;
	truth_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	return truth_fd < 0 ? -errno : 0;
}

void pl_truth_close(void)
{
	if (truth_fd >= 0)
		close(truth_fd);
	truth_fd = -1;
}

long pl_calls_logged(void)
{
	long n;

	pthread_mutex_lock(&truth_mu);
	n = next_seq;
	pthread_mutex_unlock(&truth_mu);
	return n;
}

/* Caller holds truth_mu. */
static void write_line(const char *s, size_t n)
{
	while (truth_fd >= 0 && n > 0) {
		ssize_t w = write(truth_fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/* A truth file that silently stops would fake a clean run. */
			static const char msg[] = "pipeline: writing the truth file failed\n";
			ssize_t ignored = write(2, msg, sizeof(msg) - 1);
			(void)ignored;
			_exit(1);
		}
		s += w;
		n -= (size_t)w;
	}
}

void pl_truth_line(const char *json)
{
	pthread_mutex_lock(&truth_mu);
	write_line(json, strlen(json));
	pthread_mutex_unlock(&truth_mu);
}

/* ---- JSON builder --------------------------------------------------------- */

void pj_raw(struct pl_json *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->n >= sizeof(j->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(j->buf + j->n, sizeof(j->buf) - j->n, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->n += (size_t)n;
}

void pj_begin(struct pl_json *j, const char *type)
{
	j->n = 0;
	pj_raw(j, "{\"type\":\"%s\"", type);
}

/* Keys and values here are the program's own identifiers: nothing to escape. */
void pj_str(struct pl_json *j, const char *key, const char *val)
{
	if (val)
		pj_raw(j, ",\"%s\":\"%s\"", key, val);
	else
		pj_raw(j, ",\"%s\":null", key);
}

void pj_hex(struct pl_json *j, const char *key, uint64_t v)
{
	pj_raw(j, ",\"%s\":\"0x%llx\"", key, (unsigned long long)v);
}

void pj_num(struct pl_json *j, const char *key, long long v)
{
	pj_raw(j, ",\"%s\":%lld", key, v);
}

void pj_batch(struct pl_json *j, const char *key, long batch)
{
	if (batch >= 0)
		pj_num(j, key, batch);
	else
		pj_raw(j, ",\"%s\":null", key);
}

void pj_bool(struct pl_json *j, const char *key, bool v)
{
	pj_raw(j, ",\"%s\":%s", key, v ? "true" : "false");
}

void pj_end(struct pl_json *j)
{
	pj_raw(j, "}\n");
	if (j->n >= sizeof(j->buf)) { /* cannot happen with our sizes; never emit half a line */
		static const char msg[] = "pipeline: truth line too long\n";
		ssize_t ignored = write(2, msg, sizeof(msg) - 1);
		(void)ignored;
		_exit(1);
	}
	pl_truth_line(j->buf);
}

/* ---- call lines ----------------------------------------------------------- */

static void format_call(struct pl_json *j, const struct pl_call *c, long seq)
{
	pj_begin(j, "call");
	pj_num(j, "seq", seq);
	pj_str(j, "api", c->api);
	pj_num(j, "tid", (long long)gettid());
	pj_num(j, "ts_ns", (long long)c->t_ns);
	if (c->fields & CF_STREAM)
		pj_hex(j, "stream", c->stream);
	if (c->fields & CF_EVENT)
		pj_hex(j, "event", c->event);
	if (c->fields & CF_STOP)
		pj_hex(j, "stop_event", c->stop);
	if (c->fields & CF_DST)
		pj_hex(j, "dst", c->dst);
	if (c->fields & CF_SRC)
		pj_hex(j, "src", c->src);
	if (c->fields & CF_BYTES)
		pj_num(j, "bytes", (long long)c->bytes);
	if (c->fields & CF_KIND)
		pj_num(j, "kind", c->kind);
	if (c->fields & CF_FLAGS)
		pj_num(j, "flags", c->flags);
	if (c->fields & CF_PRIO)
		pj_num(j, "prio", c->prio);
	if (c->fields & CF_COUNT)
		pj_num(j, "count", (long long)c->count);
	if (c->fields & CF_PEER)
		pj_num(j, "peer", c->peer);
	if (c->fields & CF_FN) {
		pj_hex(j, c->fn_key ? c->fn_key : "fn", c->fn);
		if (c->kernel)
			pj_str(j, "kernel", c->kernel);
	}
	pj_num(j, "rc", c->rc);
	if ((c->fields & CF_HANDLE) && c->rc == 0)
		pj_hex(j, c->handle_key ? c->handle_key : "handle", c->handle);
	if ((c->fields & CF_MS) && c->rc == 0)
		pj_raw(j, ",\"ms\":%.6g", c->ms);
	pj_batch(j, "batch", cur_batch);
	pj_str(j, "stage", stage_names[cur_stage]);
	pj_str(j, "step", step_names[cur_step]);
	pj_raw(j, "}\n");
}

/* Caller holds truth_mu (pl_hold); releases it. */
void pl_called_held(struct pl_call *c)
{
	struct pl_json j;

	c->seq = next_seq++;
	if (truth_fd >= 0) {
		format_call(&j, c, c->seq);
		write_line(j.buf, j.n < sizeof(j.buf) ? j.n : sizeof(j.buf) - 1);
	}
	pthread_mutex_unlock(&truth_mu);
	if (c->rc != 0 && c->rc != c->ok_rc)
		pl_die(c->api, c->rc, c->nccl);
}

void pl_called(struct pl_call *c)
{
	pthread_mutex_lock(&truth_mu);
	pl_called_held(c);
}

void pl_hold(void)
{
	pthread_mutex_lock(&truth_mu);
}
