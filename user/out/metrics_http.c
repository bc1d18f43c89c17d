// SPDX-License-Identifier: MIT
/*
 * The --metrics HTTP endpoint. We bind the listening socket ourselves and hand
 * it to libmicrohttpd (MHD_OPTION_LISTEN_SOCKET): that way a bind failure
 * comes back with its errno, and port 0 can be read back with getsockname().
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "out/metrics_http.h"

struct nl_metrics_http {
	struct MHD_Daemon *d;
	struct nl_metrics *m;
	uint16_t port;
	char url[96];
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO; /* closes the connection */
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	static char not_found[] = "not found; metrics are at /metrics\n";
	static char not_allowed[] = "method not allowed\n";
	static char no_memory[] = "out of memory\n";
	struct nl_metrics_http *s = cls;
	char *text;
	size_t len;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(url, "/metrics") != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found,
			     strlen(not_found), MHD_RESPMEM_PERSISTENT);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
			     not_allowed, strlen(not_allowed), MHD_RESPMEM_PERSISTENT);
	len = nl_metrics_render(s->m, &text);
	if (!text)
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8",
			     no_memory, strlen(no_memory), MHD_RESPMEM_PERSISTENT);
	return reply(c, MHD_HTTP_OK, NL_METRICS_CONTENT_TYPE, text, len, MHD_RESPMEM_MUST_FREE);
}

/* MHD's own messages (bad requests from clients) would land on the tool's
 * stderr between audit lines: silence them. */
static void quiet_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	(void)fmt;
	(void)ap;
}

static int listen_on(const struct nl_metrics_addr *a, char *err, size_t errlen, const char *addr)
{
	int one = 1, fd;

	fd = socket(a->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a->family == AF_INET6) /* [::] means IPv6 only, as written */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&a->sa, a->salen) || listen(fd, 16))
		goto fail;
	return fd;
fail: {
	int e = errno;

	snprintf(err, errlen, "--metrics %s: cannot listen: %s", addr, strerror(e));
	if (fd >= 0)
		close(fd);
	return -e;
}
}

int nl_metrics_http_start(struct nl_metrics_http **out, struct nl_metrics *m, const char *addr,
			  char *err, size_t errlen)
{
	struct nl_metrics_http *s;
	struct nl_metrics_addr a;
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	sigset_t all, old;
	int fd, e;

	*out = NULL;
	e = nl_metrics_parse_addr(addr, &a, err, errlen);
	if (e)
		return e;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "--metrics: out of memory");
		return -ENOMEM;
	}
	s->m = m;
	fd = listen_on(&a, err, errlen, addr);
	if (fd < 0) {
		free(s);
		return fd;
	}
	if (getsockname(fd, (struct sockaddr *)&bound, &blen) == 0)
		s->port = ntohs(bound.ss_family == AF_INET6
					? ((struct sockaddr_in6 *)&bound)->sin6_port
					: ((struct sockaddr_in *)&bound)->sin_port);
	nl_metrics_url(&a, s->port, s->url, sizeof(s->url));
	/* the server thread inherits this mask: signals stay with the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
				on_request, s, MHD_OPTION_EXTERNAL_LOGGER, quiet_log, NULL,
				MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
				(unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->d) {
		snprintf(err, errlen, "--metrics %s: libmicrohttpd could not start its server", addr);
		close(fd);
		free(s);
		return -EIO;
	}
	*out = s;
	return 0;
}

uint16_t nl_metrics_http_port(const struct nl_metrics_http *s)
{
	return s ? s->port : 0;
}

const char *nl_metrics_http_url(const struct nl_metrics_http *s)
{
	return s ? s->url : "";
}

void nl_metrics_http_stop(struct nl_metrics_http *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d); /* joins the thread and closes the listening socket */
	free(s);
}
