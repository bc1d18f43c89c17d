/* SPDX-License-Identifier: MIT */
/*
 * --live: a terminal view of the run, redrawn once a second. Pure: the
 * renderer fills a buffer; the caller writes it to the terminal. Not thread
 * safe (the main thread feeds and renders it). docs/metrics.md shows a screen.
 *
 * A screen starts with ESC[H ESC[2J (cursor home, clear screen), has no other
 * escape sequence, at most rows-1 lines (the cursor keeps the last one) and
 * every line at most NL_LIVE_WIDTH columns: names from the target (comm,
 * container id) show only printable ASCII, anything else as '?'.
 */
#ifndef NANLOG_LIVE_H
#define NANLOG_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "out/metrics.h" /* struct nl_metrics_counters */

#define NL_LIVE_WIDTH 80
#define NL_LIVE_ROWS 24       /* default terminal height */
#define NL_LIVE_BUFSZ 16384   /* enough for a full screen of up to 200 rows */
#define NL_LIVE_WINDOW 256    /* batches behind the latency percentiles */
#define NL_LIVE_RATE_S 5      /* batches per second over this many seconds */
#define NL_LIVE_MAX_TARGETS 256

struct nl_live;

struct nl_live *nl_live_new(void); /* NULL on -ENOMEM */
void nl_live_free(struct nl_live *l); /* accepts NULL */

/* Terminal height (rows), clamped to 10..200; the width is always 80. */
void nl_live_set_rows(struct nl_live *l, unsigned rows);
/* A traced process: comm and container id (NULL or "" when unknown; copied). */
void nl_live_target(struct nl_live *l, uint32_t pid, const char *comm, const char *container_id);
void nl_live_target_exit(struct nl_live *l, uint32_t pid);
/* One final batch audit (the engine's sink->batch). */
void nl_live_batch(struct nl_live *l, const struct nl_batch_audit *a);
/* The tool's counters (absolute values). */
void nl_live_counters(struct nl_live *l, const struct nl_metrics_counters *c);
/* A sink calling nl_live_batch; its summary callback takes the record totals. */
struct nl_sink nl_live_sink(struct nl_live *l);

/*
 * Draw the screen at now_ns (CLOCK_MONOTONIC, the clock of the probes and so
 * of the audits' *_ns). Writes at most len bytes including the NUL (cut at a
 * line end when len is short; NL_LIVE_BUFSZ always suffices) and returns the
 * length written.
 */
size_t nl_live_render(struct nl_live *l, uint64_t now_ns, char *buf, size_t len);

#endif /* NANLOG_LIVE_H */
