/* SPDX-License-Identifier: MIT */
/*
 * --metrics: serves nl_metrics_render() at GET /metrics (libmicrohttpd, one
 * internal thread). Everything else answers 404; methods other than GET and
 * HEAD answer 405. The server thread starts with every signal blocked, so
 * SIGINT/SIGTERM keep reaching the main thread.
 */
#ifndef NANLOG_METRICS_HTTP_H
#define NANLOG_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "out/metrics.h"

struct nl_metrics_http;

/*
 * Bind addr (nl_metrics_parse_addr syntax; port 0 picks a free port) and
 * serve m, which must outlive the server. 0 with *out set, or -errno with a
 * one-line reason in err (bad address, bind failure, libmicrohttpd refusal).
 */
int nl_metrics_http_start(struct nl_metrics_http **out, struct nl_metrics *m, const char *addr,
			  char *err, size_t errlen);
/* The bound port (the chosen one after port 0). */
uint16_t nl_metrics_http_port(const struct nl_metrics_http *s);
/* "http://127.0.0.1:PORT/metrics" with the bound port. */
const char *nl_metrics_http_url(const struct nl_metrics_http *s);
/* Stop serving, wait for the server thread, close the socket. Accepts NULL. */
void nl_metrics_http_stop(struct nl_metrics_http *s);

#endif /* NANLOG_METRICS_HTTP_H */
