// SPDX-License-Identifier: MIT
/*
 * --metrics ADDR:PORT: a numeric IPv4 address or a bracketed IPv6 one (none
 * means 127.0.0.1) and a decimal port, into a socket address ready for
 * bind(), or a one-line reason why not; and the URL that it serves.
 * docs/metrics.md says what is accepted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "out/metrics.h"

static int bad(char *err, size_t errlen, const char *s, const char *why)
{
	snprintf(err, errlen, "--metrics '%s': %s", s, why);
	return -EINVAL;
}

/*
 * The numeric address hbuf of family with port into out, through
 * getaddrinfo(): AI_NUMERICHOST, so never a name lookup, and AI_NUMERICSERV
 * for the port, already checked to be decimal (getaddrinfo's own reading of
 * it takes "+80", " 80" and 65536). No AI_PASSIVE: there is always a host, the
 * default being the loopback address written out.
 */
static int resolve(const char *s, const char *hbuf, int family, uint16_t port,
		   struct nl_metrics_addr *out, char *err, size_t errlen)
{
	const char *not_numeric = family == AF_INET6 ? "not a numeric IPv6 address"
						     : "ADDR must be a numeric IPv4 address or [IPv6] (no host names)";
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&out->sa;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&out->sa;
	char serv[8];
	int ret;

	snprintf(serv, sizeof(serv), "%u", (unsigned)port);
	ret = getaddrinfo(hbuf, serv, &hints, &res);
	if (ret == EAI_MEMORY) {
		snprintf(err, errlen, "--metrics '%s': %s", s, gai_strerror(ret));
		return -ENOMEM;
	}
	if (ret || !res || res->ai_addrlen > sizeof(out->sa)) {
		if (res)
			freeaddrinfo(res);
		return bad(err, errlen, s, not_numeric);
	}
	memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
	out->salen = res->ai_addrlen;
	freeaddrinfo(res);
	out->family = family;
	out->port = port;
	if (family == AF_INET6) {
		out->loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
		inet_ntop(AF_INET6, &a6->sin6_addr, out->host, sizeof(out->host));
		return 0;
	}
	out->loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
	inet_ntop(AF_INET, &a4->sin_addr, out->host, sizeof(out->host));
	/* getaddrinfo reads IPv4 as inet_aton does: "1.2.3", "010.0.0.1" (octal,
	 * 8.0.0.1), "0x7f.1". Only the dotted quad itself is taken. */
	if (strcmp(out->host, hbuf))
		return bad(err, errlen, s, not_numeric);
	return 0;
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
	if (s[0] == '[' && strchr(hbuf, '%'))
		return bad(err, errlen, s, "IPv6 scope ids (%IFACE) are not supported");
	return resolve(s, hbuf, s[0] == '[' ? AF_INET6 : AF_INET, (uint16_t)port, out, err, errlen);
}

void nl_metrics_url(const struct nl_metrics_addr *a, uint16_t port, char *buf, size_t len)
{
	if (a->family == AF_INET6)
		snprintf(buf, len, "http://[%s]:%u/metrics", a->host, (unsigned)port);
	else
		snprintf(buf, len, "http://%s:%u/metrics", a->host, (unsigned)port);
}
