/* SPDX-License-Identifier: MIT */
/*
 * Counted launch runs (include/nanlog_rec.h) back into calls: the kernel
 * sends the first launch of a run and, with the process's next record, how
 * many more launches of the same API on the same stream by the same thread
 * it counted. One struct per process; pure C, unit-tested without root.
 */
#ifndef NANLOG_RUNS_H
#define NANLOG_RUNS_H

#include <stdint.h>

#include "record/call.h"

struct nl_runs {
	uint64_t token;      /* the open run's token, 0 when none is known */
	uint64_t done_token; /* the run repeated last: a second end of it is a duplicate */
	struct nl_call first; /* the open run's first launch */
};

/*
 * Before c is used: how many launches c's end of a run (c->flush_*) stands
 * for; *proto is the call to use for each of them (the run's first launch,
 * marked NL_F_COUNTED, at the time of the run's last launch, its kernel
 * unknown). *lost: the launches of a run whose first record never arrived
 * (lost in the ring), 0 otherwise. Returns 0 when c ends no run, or ends
 * one already repeated.
 */
uint64_t nl_runs_take(struct nl_runs *r, const struct nl_call *c, struct nl_call *proto,
		      uint64_t *lost);

/* After c is used: remembered when it starts a run. */
void nl_runs_note(struct nl_runs *r, const struct nl_call *c);

/*
 * The whole of it for one decoded record: use() for each launch c's end of a
 * run stands for, or lost() (may be NULL) for the launches of a run whose
 * first record was lost, then use() for c itself unless it is only a run's
 * end, then c noted. *counted: the launches repeated. Returns the first
 * non-zero use() result, which stops it.
 */
int nl_runs_feed(struct nl_runs *r, const struct nl_call *c,
		 int (*use)(void *ctx, const struct nl_call *c),
		 void (*lost)(void *ctx, const struct nl_call *c, uint64_t n), void *ctx,
		 uint64_t *counted);

#endif
