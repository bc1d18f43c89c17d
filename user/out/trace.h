/* SPDX-License-Identifier: MIT */
/*
 * --trace FILE: a Chrome/Perfetto JSON trace (the "traceEvents" format that
 * ui.perfetto.dev and chrome://tracing open). A process per traced PID, a
 * track per stream named by its role, slices for the host enqueue window of
 * every stage and for every batch, a flow arrow for every record->wait edge,
 * instant markers for completion evidence and for untrusted batches.
 *
 * Built from the same decoded calls and batch audits as the other outputs,
 * written as it goes (only complete slices and matched flow pairs, so every
 * slice is closed and every flow start has its end), with the track names
 * added at the end when the roles are final. Pure C, no libbpf.
 */
#ifndef NANLOG_TRACE_H
#define NANLOG_TRACE_H

#include <stdio.h>

#include "record/call.h"
#include "engine/engine.h"

struct nl_trace;

/* Takes over f (closed by nl_trace_close). */
struct nl_trace *nl_trace_new(FILE *f);
void nl_trace_call(struct nl_trace *t, const struct nl_call *c);
void nl_trace_batch(struct nl_trace *t, const struct nl_batch_audit *a);
/* Track names from the final roles; then the closing of the JSON array. */
void nl_trace_summary(struct nl_trace *t, const struct nl_summary *s);
/* Close the file; 0 or -errno of the first write error. Accepts NULL. */
int nl_trace_close(struct nl_trace *t);

#endif
