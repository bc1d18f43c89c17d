// SPDX-License-Identifier: MIT
/*
 * The record path: one ring-buffer record decoded, its counted launch run
 * repeated, each call to the raw writer, the trace and the engine.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "app/app_int.h"
#include "engine/engine.h"
#include "out/raw.h"
#include "record/decode.h"
#include "record/recording.h"

/* One call to the raw writer, the trace and the engine (a use of nl_runs_feed). */
struct use_ctx {
	struct nl_app *a;
	const struct nl_app_target *t;
};

static int use_call(void *ctx, const struct nl_call *c)
{
	struct use_ctx *u = ctx;
	struct nl_app *a = u->a;

	if (a->o.raw && !a->write_err) {
		if (nl_raw_write_labeled(a->out, c, u->t ? u->t->container_id : NULL,
					 u->t ? u->t->pod_uid : NULL)) {
			a->write_err = errno ? -errno : -EIO;
			a->diag(0, "cannot write output: %s", strerror(-a->write_err));
			return a->write_err; /* stops the poll */
		}
	}
	nl_trace_call(a->trace, c);
	if (a->engine)
		nl_engine_feed(a->engine, c);
	return 0;
}

/* The launches of a run whose first record was lost in the ring: lost too. */
static void lost_launches(void *ctx, const struct nl_call *c, uint64_t n)
{
	struct use_ctx *u = ctx;

	if (u->a->engine)
		nl_engine_lost(u->a->engine, c->pid, n, c->ts_ns);
}

void nl_app_first_loss(struct nl_app *a)
{
	if (a->loss_said || !a->engine)
		return;
	a->loss_said = true;
	a->diag(0, "records lost (ring buffer full, or a call nested too deep): "
		   "batches not audited yet are skipped lost_records from here on; "
		   "a larger --ringbuf-size avoids the first");
}

int nl_app_record(struct nl_app *a, const void *data, size_t size)
{
	struct nl_app_target *t;
	struct use_ctx u;
	uint64_t counted;
	struct nl_call c;
	int rc;

	/* recorded before decoding, bad ones too: replay counts them the same */
	if (a->rec && !a->rec_err)
		nl_app_rec_check(a, nl_recording_write_record(a->rec, data, size));
	if (nl_decode(data, size, &c)) {
		a->bad_records++;
		return 0;
	}
	a->records++;
	if (c.lost_before) {
		/* a loss, right before this record: in the recording already, so not written again */
		nl_app_first_loss(a);
		a->lost_inline += c.lost_before;
		if (a->engine)
			nl_engine_lost(a->engine, 0, c.lost_before, nl_call_loss_ts(&c));
	}
	if (c.ts_ns > a->last_ts_ns)
		a->last_ts_ns = c.ts_ns;
	if ((c.fields & NL_F_RC) && c.ret_ns > a->last_ts_ns)
		a->last_ts_ns = c.ret_ns;
	t = nl_app_target_of(a, c.pid);
	u.a = a;
	u.t = t;
	/* a process never seen start has no run to repeat: what it counted is lost */
	rc = nl_runs_feed(t ? &t->runs : &(struct nl_runs){ 0 }, &c, use_call, lost_launches, &u,
			  &counted);
	a->counted_launches += counted;
	if (rc)
		return rc;
	if (ferror(a->out) && !a->write_err) {
		a->write_err = errno ? -errno : -EIO;
		a->diag(0, "cannot write output: %s", strerror(-a->write_err));
		return a->write_err;
	}
	return 0;
}
