/* SPDX-License-Identifier: MIT */
/*
 * What the parts of the app (app*.c) share among themselves; not for other
 * layers, which use app.h.
 */
#ifndef NANLOG_APP_INT_H
#define NANLOG_APP_INT_H

#include "app/app.h"
#include "out/json.h"

/*
 * A recording keeps a target's container and pod after its command name,
 * each behind a unit separator (0x1f): "python\x1f<container>\x1f<pod>".
 */
#define NL_APP_LABEL_SEP '\x1f'

/* app.c */
/* After a write to a->out: the first error is said once and kept. */
void nl_app_note_write(struct nl_app *a);
/* --record: remember the first failure, stop recording, keep auditing. */
void nl_app_rec_check(struct nl_app *a, int err);
/* The loader's counters to the metrics registry and the live view. */
void nl_app_publish_counters(struct nl_app *a);
/* CPU time of the tool so far. */
double nl_app_cpu_ms(void);
/* The tick's part of the sinks: --live redrawn each second, the heartbeat. */
void nl_app_live_tick(struct nl_app *a, uint64_t now_ns);
void nl_app_heartbeat_tick(struct nl_app *a, uint64_t now_ns);
/* At the end: the trace given its track names and closed (0 or -errno),
 * the sinks freed. */
int nl_app_sinks_close(struct nl_app *a);

/* app_targets.c */
/* The newest target entry of pid (a reused PID has a later one), or NULL. */
struct nl_app_target *nl_app_target_of(struct nl_app *a, uint32_t pid);
/* The loader's BPF counters into a->stats. */
void nl_app_poll_lost(struct nl_app *a);

/* app_attach.c */
/* key: an array of the names of n API ids. */
void nl_app_json_api_names(struct nl_json *j, const char *key, const int *ids, int n);

#endif
