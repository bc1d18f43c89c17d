/* SPDX-License-Identifier: MIT */
/*
 * Prometheus metrics of a run: a registry fed with the engine's batch audits
 * and the tool's counters, rendered in the text exposition format 0.0.4.
 * docs/metrics.md lists every metric.
 *
 * Pure C11 (no libbpf, no sockets beyond parsing an address): the HTTP
 * endpoint is metrics_http.c. Every function takes the registry's mutex, so
 * the engine's sink may update it from the main thread while the HTTP thread
 * renders it. Memory is bounded: at most NL_METRICS_MAX_TARGETS processes are
 * tracked; a new one evicts the process that exited first, else the one idle
 * the longest (counted in nanlog_metrics_evicted_targets_total).
 */
#ifndef NANLOG_METRICS_H
#define NANLOG_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "engine/engine.h"

#define NL_METRICS_MAX_TARGETS 256

/*
 * Which of two tracked processes gives up its slot first when a table of
 * them is full (the metrics' and the live view's): one that exited before
 * one alive, of two exited the first to exit, of two alive the one idle the
 * longest. a and b point to structs with the fields alive, active_seq (the
 * last update) and exit_seq (when it exited).
 */
#define NL_EVICTS_BEFORE(a, b)                                                     \
	((a)->alive != (b)->alive ? !(a)->alive                                   \
				  : ((a)->alive ? (a)->active_seq < (b)->active_seq \
						: (a)->exit_seq < (b)->exit_seq))

/* Longest container id or pod UID label kept; longer values are cut. */
#define NL_METRICS_LABEL_MAX 128

/* The tool's own figures, absolute values since the start (not deltas).
 * Shared by the metrics registry and the live view (live.h). */
struct nl_metrics_counters {
	uint64_t records;         /* records decoded and processed */
	uint64_t bad_records;     /* records that did not decode */
	uint64_t lost_ringbuf;    /* records lost: ring buffer full (BPF counter) */
	uint64_t lost_stash;      /* records lost: return-probe stash full (BPF counter) */
	uint32_t probes_attached; /* probes attached, all libraries and targets */
	uint32_t probes_missing;  /* distinct symbols that could not be probed */
	uint32_t targets;         /* traced processes still alive */
	double cpu_seconds;       /* the tool's own CPU time, user + system */
};

struct nl_metrics;

/* version: the build_info label (copied). NULL on -ENOMEM. */
struct nl_metrics *nl_metrics_new(const char *version);
void nl_metrics_free(struct nl_metrics *m); /* accepts NULL */

/* Labels of pid's series: container id and Kubernetes pod UID, NULL or ""
 * when unknown (copied, cut at NL_METRICS_LABEL_MAX). Calling it again
 * relabels; after nl_metrics_target_exit it marks the pid alive again. */
void nl_metrics_set_target(struct nl_metrics *m, uint32_t pid, const char *container_id,
			   const char *pod_uid);
/* The process exited: its series stay until the cap needs the room. */
void nl_metrics_target_exit(struct nl_metrics *m, uint32_t pid);

/* One final batch audit (the engine's sink->batch). */
void nl_metrics_batch(struct nl_metrics *m, const struct nl_batch_audit *a);
/* A run summary (the engine's sink->summary): record and probe totals. */
void nl_metrics_summary(struct nl_metrics *m, const struct nl_summary *s);
/* The tool's counters; counters never go backwards (a smaller value is ignored). */
void nl_metrics_set_counters(struct nl_metrics *m, const struct nl_metrics_counters *c);
/* A sink calling nl_metrics_batch and nl_metrics_summary. */
struct nl_sink nl_metrics_sink(struct nl_metrics *m);

/* The exposition text, NUL-terminated, in *buf (malloc'd; the caller frees).
 * Returns its length, or 0 with *buf = NULL when out of memory. */
size_t nl_metrics_render(struct nl_metrics *m, char **buf);

/* ---- --metrics ADDR:PORT --------------------------------------------------- */

struct nl_metrics_addr {
	struct sockaddr_storage sa; /* address and port, ready for bind() */
	socklen_t salen;
	int family;                 /* AF_INET or AF_INET6 */
	uint16_t port;              /* 0: the kernel picks a free port */
	bool loopback;              /* 127.0.0.0/8 or ::1 */
	char host[46];              /* numeric address, without brackets */
};

#define NL_METRICS_DEFAULT_HOST "127.0.0.1"
#define NL_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Parse "127.0.0.1:9464", "[::1]:9464", ":9464" (= 127.0.0.1:9464) or
 * "0.0.0.0:9464"; port 0 asks for a free port. Numeric addresses only (no
 * DNS). 0, or -EINVAL with a one-line reason in err.
 */
int nl_metrics_parse_addr(const char *s, struct nl_metrics_addr *out, char *err, size_t errlen);
/* "http://127.0.0.1:9464/metrics" or "http://[::1]:9464/metrics". */
void nl_metrics_url(const struct nl_metrics_addr *a, uint16_t port, char *buf, size_t len);

#endif /* NANLOG_METRICS_H */
