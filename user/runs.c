// SPDX-License-Identifier: MIT
#include <string.h>

#include "runs.h"

uint64_t nl_runs_take(struct nl_runs *r, const struct nl_call *c, struct nl_call *proto,
		      uint64_t *lost)
{
	uint64_t ts;

	*lost = 0;
	if (!c->flush_count)
		return 0;
	if (c->flush_token != r->token) {
		/* told twice (by the process and by the end of the trace), or lost */
		if (c->flush_token != r->done_token)
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
}
