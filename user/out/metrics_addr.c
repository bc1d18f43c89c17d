// SPDX-License-Identifier: MIT
/*
 * --metrics ADDR:PORT: a numeric IPv4 address or a bracketed IPv6 one (none
 * means 127.0.0.1) and a decimal port, into a socket address ready for
 * bind(), or a one-line reason why not; and the URL that it serves.
 * docs/metrics.md says what is accepted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "out/metrics.h"

static int bad(char *err, size_t errlen, const char *s, const char *why)
{
	snprintf(err, errlen, "--metrics '%s': %s", s, why);
	return -EINVAL;
}

int nl_metrics_parse_addr(const char *s, struct nl_metrics_addr *out, char *err, size_t errlen)
{
	const char *host, *colon, *ps;
	size_t hlen;
	char hbuf[64];
	unsigned long port = 0;

	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return bad(err, errlen, s ? s : "", "expected ADDR:PORT, e.g. 127.0.0.1:9464 or :9464");
	if (strlen(s) > 64)
		return bad(err, errlen, "...", "too long for ADDR:PORT");
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb)
			return bad(err, errlen, s, "missing ']' after the IPv6 address");
		host = s + 1;
		hlen = (size_t)(rb - host);
		if (rb[1] != ':')
			return bad(err, errlen, s, "expected ':PORT' after ']', e.g. [::1]:9464");
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return bad(err, errlen, s, "expected ADDR:PORT, e.g. 127.0.0.1:9464 or :9464");
		if (memchr(s, ':', (size_t)(colon - s)))
			return bad(err, errlen, s, "an IPv6 address goes in brackets, e.g. [::1]:9464");
		host = s;
		hlen = (size_t)(colon - s);
	}
	ps = colon + 1;
	if (!*ps)
		return bad(err, errlen, s, "missing port after ':'");
	for (const char *p = ps; *p; p++) {
		if (*p < '0' || *p > '9')
			return bad(err, errlen, s, "the port must be a decimal number 0..65535");
		port = port * 10 + (unsigned long)(*p - '0');
		if (port > 65535)
			return bad(err, errlen, s, "the port must be a decimal number 0..65535");
	}
	if (s[0] == '[' && hlen == 0)
		return bad(err, errlen, s, "empty IPv6 address in brackets");
	if (hlen == 0) {
		host = NL_METRICS_DEFAULT_HOST;
		hlen = strlen(host);
	}
	if (hlen >= sizeof(hbuf))
		return bad(err, errlen, s, "the address is too long");
	memcpy(hbuf, host, hlen);
	hbuf[hlen] = '\0';
	out->port = (uint16_t)port;
	if (s[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&out->sa;

		if (strchr(hbuf, '%'))
			return bad(err, errlen, s, "IPv6 scope ids (%IFACE) are not supported");
		if (inet_pton(AF_INET6, hbuf, &a6->sin6_addr) != 1)
			return bad(err, errlen, s, "not a numeric IPv6 address");
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(out->port);
		out->salen = sizeof(*a6);
		out->family = AF_INET6;
		out->loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
		inet_ntop(AF_INET6, &a6->sin6_addr, out->host, sizeof(out->host));
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&out->sa;

		if (inet_pton(AF_INET, hbuf, &a4->sin_addr) != 1)
			return bad(err, errlen, s,
				   "ADDR must be a numeric IPv4 address or [IPv6] (no host names)");
		a4->sin_family = AF_INET;
		a4->sin_port = htons(out->port);
		out->salen = sizeof(*a4);
		out->family = AF_INET;
		out->loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
		inet_ntop(AF_INET, &a4->sin_addr, out->host, sizeof(out->host));
	}
	return 0;
}

void nl_metrics_url(const struct nl_metrics_addr *a, uint16_t port, char *buf, size_t len)
{
	if (a->family == AF_INET6)
		snprintf(buf, len, "http://[%s]:%u/metrics", a->host, (unsigned)port);
	else
		snprintf(buf, len, "http://%s:%u/metrics", a->host, (unsigned)port);
}
