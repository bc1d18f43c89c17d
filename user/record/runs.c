// SPDX-License-Identifier: MIT
#include <string.h>

#include "record/runs.h"

uint64_t nl_runs_take(struct nl_runs *r, const struct nl_call *c, struct nl_call *proto,
		      uint64_t *lost)
{
	uint64_t ts;

	*lost = 0;
	if (!c->flush_count)
		return 0;
	if (c->flush_token != r->token) {
		/*
		 * told twice (a copy, made while the run was closing, or by the
		 * process and by the end of the trace), or lost; a copy can come
		 * after later runs, and is never the only end of its run
		 */
		if (!c->flush_copy && c->flush_token != r->done_token)
			*lost = c->flush_count;
		return 0;
	}
	*proto = r->first;
	/* the last launch's time, kept within what the records around it allow */
	ts = c->flush_ts;
	if (ts < r->first.ts_ns)
		ts = r->first.ts_ns;
	if (ts > c->ts_ns)
		ts = c->ts_ns;
	proto->ts_ns = ts;
	proto->fields |= NL_F_COUNTED;
	/* the kernel of each launch was not kept: unknown, not the first's */
	proto->fields &= ~NL_F_FN;
	proto->fn = 0;
	proto->run_token = 0;
	proto->lost_before = 0;
	r->done_token = r->token;
	r->token = 0;
	return c->flush_count;
}

void nl_runs_note(struct nl_runs *r, const struct nl_call *c)
{
	if (!c->run_token)
		return;
	r->token = c->run_token;
	r->first = *c;
	r->first.flush_token = 0;
	r->first.flush_count = 0;
	r->first.flush_ts = 0;
	r->first.flush_copy = false;
}

int nl_runs_feed(struct nl_runs *r, const struct nl_call *c,
		 int (*use)(void *ctx, const struct nl_call *c),
		 void (*lost)(void *ctx, const struct nl_call *c, uint64_t n), void *ctx,
		 uint64_t *counted)
{
	struct nl_call proto;
	uint64_t nlost, n = nl_runs_take(r, c, &proto, &nlost);
	int rc;

	*counted = n;
	if (nlost && lost)
		lost(ctx, c, nlost);
	for (uint64_t i = 0; i < n; i++)
		if ((rc = use(ctx, &proto)))
			return rc;
	if (c->fields & NL_F_RUN_END)
		return 0;
	if ((rc = use(ctx, c)))
		return rc;
	nl_runs_note(r, c);
	return 0;
}
