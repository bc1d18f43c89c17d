/* SPDX-License-Identifier: MIT */
/*
 * The kernel's rows of launches (include/nanlog_rec.h, "Step starts stay
 * named"; bpf/nanlog.bpf.c count_launch), for the programs that feed the
 * engine launches as the probes count them: the random programs
 * (randprog.c) and the unit tests' builder (tests/unit/test_engine_util.h).
 * tests/e2e/test_audit_random_live.sh checks it against the probes.
 */
#ifndef NANLOG_LAUNCH_ROWS_H
#define NANLOG_LAUNCH_ROWS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "nanlog_rec.h"
#include "record/call.h"

/* One thread's row: launches in it so far (2 at most), the stream of its
 * last (a launch on another stream begins a row), and the kernels
 * that began its last rows, newest first, with the thread's launch count
 * when each was last launched. */
struct rp_row {
	uint32_t tid;
	bool used;
	uint8_t n;
	uint64_t stream; /* of its row's last launch */
	uint64_t fn[NL_SEQ_STARTS];
	uint32_t last[NL_SEQ_STARTS], nl;
};

/* Whether the kernel keeps call c (any call, in the process's order) named
 * as far as rows go; c's thread's row updated. rows: nrows slots, zeroed
 * before the first call. */
static inline bool rp_row_named(struct rp_row *rows, int nrows, const struct nl_call *c)
{
	struct rp_row *r;
	int j, at;
	bool in, named;

	for (j = 0; j < nrows && rows[j].used && rows[j].tid != c->tid; j++)
		;
	if (j == nrows)
		return true;
	r = &rows[j];
	r->used = true;
	r->tid = c->tid;
	if (c->kind != NL_K_LAUNCH || !nl_api_info[c->api].countable || c->coll_depth) {
		r->n = 0; /* any other call of the thread ends its row */
		return true;
	}
	if (r->n && c->stream != r->stream)
		r->n = 0; /* a launch on another stream begins a row */
	r->stream = c->stream;
	for (at = 0; at < NL_SEQ_STARTS && r->fn[at] != c->fn; at++)
		;
	in = at < NL_SEQ_STARTS && r->nl - r->last[at] > 1;
	named = in || r->n < 2;
	/* a row's first kernel, or one of them met again: the newest */
	if (at < NL_SEQ_STARTS || !r->n) {
		int m = at < NL_SEQ_STARTS ? at : NL_SEQ_STARTS - 1;

		memmove(&r->fn[1], &r->fn[0], (size_t)m * sizeof(r->fn[0]));
		memmove(&r->last[1], &r->last[0], (size_t)m * sizeof(r->last[0]));
		r->fn[0] = c->fn;
		r->last[0] = r->nl;
	}
	r->nl++;
	r->n = in || !r->n ? 1 : 2;
	return named;
}

/* Whether the probes count launch c in the run of prev, the process's call
 * before it (NULL: none): the same thread's launch, of the same API on the
 * same stream, not one its row keeps named. Called for every call in
 * order (the rows follow them). */
static inline bool rp_launch_counted(struct rp_row *rows, int nrows, const struct nl_call *prev,
				     const struct nl_call *c)
{
	bool named = rp_row_named(rows, nrows, c);

	return !named && prev && c->kind == NL_K_LAUNCH && nl_api_info[c->api].countable &&
	       !c->coll_depth && prev->kind == NL_K_LAUNCH && prev->api == c->api &&
	       prev->tid == c->tid && prev->stream == c->stream;
}

#endif
