/* SPDX-License-Identifier: MIT */
/*
 * A strict reader of the Prometheus text exposition format 0.0.4 for the
 * tests: every line is HELP, TYPE or a sample; names and labels follow the
 * grammar; label values use only the three escapes; a family's lines are
 * contiguous and typed before its samples; every histogram series has
 * increasing `le` bounds, cumulative counts and +Inf equal to _count.
 */
#ifndef TEST_EXPO_H
#define TEST_EXPO_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPO_MAX_FAMILIES 64

struct expo_check {
	int samples, families;
	char err[256]; /* first problem, "" when none */
};

static inline bool expo_name_char(char c, bool first, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

/* Length of a metric (colon) or label name at s; 0 when there is none. */
static inline size_t expo_name(const char *s, bool colon)
{
	size_t n = 0;

	while (expo_name_char(s[n], n == 0, colon))
		n++;
	return n;
}

static inline bool expo_value(const char *s, size_t n, double *out)
{
	char buf[64], *end;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!strcmp(buf, "+Inf") || !strcmp(buf, "-Inf") || !strcmp(buf, "NaN")) {
		*out = !strcmp(buf, "NaN") ? NAN : buf[0] == '+' ? INFINITY : -INFINITY;
		return true;
	}
	*out = strtod(buf, &end);
	return *end == '\0' && !strchr(buf, 'x') && !strchr(buf, 'X') && !strchr(buf, 'n') &&
	       !strchr(buf, 'i');
}

static inline bool expo_fail(struct expo_check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Keeps the first problem (lines cut to fit); always false. */
static inline bool expo_fail(struct expo_check *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->err[0]) {
		va_start(ap, fmt);
		vsnprintf(c->err, sizeof(c->err), fmt, ap);
		va_end(ap);
	}
	return false;
}

#define EXPO_FAIL(c, ...) return expo_fail((c), __VA_ARGS__)

struct expo_hist {
	char key[1024]; /* labels without le */
	double last_le, last_count;
	bool in_series, saw_inf;
	double inf_count;
};

/* One sample line (without its '\n'). */
static inline bool expo_sample(struct expo_check *c, const char *line, char *name, size_t namelen,
			       char *key, size_t keylen, double *le, bool *has_le, double *v)
{
	size_t n = expo_name(line, true), off = 0;
	const char *p = line + n;
	char names[16][64];
	int nnames = 0;

	*has_le = false;
	if (!n || n >= namelen)
		EXPO_FAIL(c, "bad metric name: %s", line);
	memcpy(name, line, n);
	name[n] = '\0';
	off = (size_t)snprintf(key, keylen, "{"); /* labels but le: the series */
	if (*p == '{') {
		p++;
		while (*p != '}') {
			size_t ln = expo_name(p, false);
			const char *vs;
			bool is_le;
			char val[256];
			size_t vn = 0;

			if (!ln || ln >= 64)
				EXPO_FAIL(c, "bad label name: %s", line);
			for (int i = 0; i < nnames; i++)
				if (strlen(names[i]) == ln && !strncmp(names[i], p, ln))
					EXPO_FAIL(c, "repeated label: %s", line);
			if (nnames < 16) {
				memcpy(names[nnames], p, ln);
				names[nnames++][ln] = '\0';
			}
			is_le = ln == 2 && !strncmp(p, "le", 2);
			if (p[ln] != '=' || p[ln + 1] != '"')
				EXPO_FAIL(c, "label without =\"...\": %s", line);
			vs = p;
			p += ln + 2;
			while (*p != '"') {
				if (!*p)
					EXPO_FAIL(c, "unterminated label value: %s", line);
				if (*p == '\\') {
					if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
						EXPO_FAIL(c, "bad escape in label value: %s", line);
					if (vn < sizeof(val) - 1)
						val[vn++] = p[1] == 'n' ? '\n' : p[1];
					p += 2;
					continue;
				}
				if (*p == '\n')
					EXPO_FAIL(c, "raw line feed in label value");
				if (vn < sizeof(val) - 1)
					val[vn++] = *p;
				p++;
			}
			val[vn] = '\0';
			p++;
			if (is_le) {
				if (!expo_value(val, vn, le))
					EXPO_FAIL(c, "bad le: %s", line);
				*has_le = true;
			} else if (off < keylen) {
				off += (size_t)snprintf(key + off, keylen - off, "%.*s,",
							(int)(p - vs), vs);
			}
			if (*p == ',')
				p++;
			else if (*p != '}')
				EXPO_FAIL(c, "expected ',' or '}': %s", line);
		}
		p++;
	}
	if (off < keylen)
		snprintf(key + off, keylen - off, "}");
	if (*p != ' ')
		EXPO_FAIL(c, "expected ' ' before the value: %s", line);
	p++;
	{
		const char *sp = strchr(p, ' ');
		size_t vn = sp ? (size_t)(sp - p) : strlen(p);

		if (!expo_value(p, vn, v))
			EXPO_FAIL(c, "bad value: %s", line);
		if (sp) { /* optional timestamp: an integer */
			char *end;

			strtoll(sp + 1, &end, 10);
			if (*end || end == sp + 1)
				EXPO_FAIL(c, "bad timestamp: %s", line);
		}
	}
	return true;
}

static inline bool expo_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

static inline bool expo_check_text(const char *text, struct expo_check *c)
{
	char families[EXPO_MAX_FAMILIES][128], types[EXPO_MAX_FAMILIES][16];
	bool helped[EXPO_MAX_FAMILIES] = { false };
	int nf = 0, cur = -1;
	struct expo_hist h = { 0 };
	const char *line = text;

	memset(c, 0, sizeof(*c));
	if (!*text || text[strlen(text) - 1] != '\n')
		EXPO_FAIL(c, "text does not end in a line feed");
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = (size_t)(nl - line);
		char buf[2048];

		if (len >= sizeof(buf))
			EXPO_FAIL(c, "line too long");
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl + 1;
		if (!len)
			EXPO_FAIL(c, "empty line");
		if (buf[0] == '#') {
			bool help = !strncmp(buf, "# HELP ", 7), type = !strncmp(buf, "# TYPE ", 7);
			size_t n = expo_name(buf + 7, true);
			int f;

			if (!help && !type)
				EXPO_FAIL(c, "comment that is neither HELP nor TYPE: %s", buf);
			if (!n || n >= 128 || buf[7 + n] != ' ')
				EXPO_FAIL(c, "bad HELP/TYPE line: %s", buf);
			for (f = 0; f < nf; f++)
				if (strlen(families[f]) == n && !strncmp(families[f], buf + 7, n))
					break;
			if (f == nf) {
				if (nf == EXPO_MAX_FAMILIES)
					EXPO_FAIL(c, "too many families");
				memcpy(families[nf], buf + 7, n);
				families[nf][n] = '\0';
				types[nf][0] = '\0';
				nf++;
			} else if (f != cur) {
				EXPO_FAIL(c, "family %s is not contiguous", families[f]);
			}
			cur = f;
			if (help) {
				const char *d = buf + 8 + n;

				if (helped[f])
					EXPO_FAIL(c, "second HELP for %s", families[f]);
				helped[f] = true;
				for (; *d; d++)
					if (*d == '\\' && d[1] != '\\' && d[1] != 'n')
						EXPO_FAIL(c, "bad escape in HELP: %s", buf);
					else if (*d == '\\')
						d++;
			} else {
				const char *t = buf + 8 + n;

				if (types[f][0])
					EXPO_FAIL(c, "second TYPE for %s", families[f]);
				if (strcmp(t, "counter") && strcmp(t, "gauge") && strcmp(t, "histogram") &&
				    strcmp(t, "summary") && strcmp(t, "untyped"))
					EXPO_FAIL(c, "bad TYPE: %s", buf);
				snprintf(types[f], sizeof(types[f]), "%s", t);
			}
			continue;
		}
		{
			char name[128], key[1024];
			double le = 0, v = 0;
			bool has_le;

			if (!expo_sample(c, buf, name, sizeof(name), key, sizeof(key), &le, &has_le, &v))
				return false;
			c->samples++;
			if (cur < 0 || !types[cur][0])
				EXPO_FAIL(c, "sample before its TYPE: %s", buf);
			if (!strcmp(types[cur], "histogram")) {
				size_t fl = strlen(families[cur]);

				if (strncmp(name, families[cur], fl))
					EXPO_FAIL(c, "sample outside its family: %s", buf);
				if (!strcmp(name + fl, "_bucket")) {
					if (!has_le)
						EXPO_FAIL(c, "bucket without le: %s", buf);
					if (!h.in_series || strcmp(h.key, key)) {
						if (h.in_series)
							EXPO_FAIL(c, "histogram series without _sum/_count before %s", buf);
						memset(&h, 0, sizeof(h));
						snprintf(h.key, sizeof(h.key), "%s", key);
						h.in_series = true;
						h.last_le = -INFINITY;
					}
					if (!(le > h.last_le))
						EXPO_FAIL(c, "le not increasing: %s", buf);
					if (v < h.last_count)
						EXPO_FAIL(c, "buckets not cumulative: %s", buf);
					h.last_le = le;
					h.last_count = v;
					if (isinf(le)) {
						h.saw_inf = true;
						h.inf_count = v;
					}
				} else if (!strcmp(name + fl, "_sum")) {
					if (!h.in_series || !h.saw_inf || strcmp(h.key, key))
						EXPO_FAIL(c, "_sum without a +Inf bucket before it: %s", buf);
				} else if (!strcmp(name + fl, "_count")) {
					if (!h.in_series || !h.saw_inf || strcmp(h.key, key))
						EXPO_FAIL(c, "_count without a +Inf bucket before it: %s", buf);
					if (v != h.inf_count)
						EXPO_FAIL(c, "+Inf bucket %g != _count %g: %s", h.inf_count, v, buf);
					h.in_series = false;
				} else {
					EXPO_FAIL(c, "histogram sample with a bad suffix: %s", buf);
				}
			} else {
				if (strcmp(name, families[cur]))
					EXPO_FAIL(c, "sample outside its family: %s", buf);
				if (has_le)
					EXPO_FAIL(c, "le label outside a histogram: %s", buf);
				if (!strcmp(types[cur], "counter") && (v < 0 || isnan(v)))
					EXPO_FAIL(c, "negative counter: %s", buf);
				if (!strcmp(types[cur], "counter") && !expo_ends_with(name, "_total"))
					EXPO_FAIL(c, "counter not named *_total: %s", buf);
			}
		}
	}
	if (h.in_series)
		EXPO_FAIL(c, "histogram %s ends without _count", h.key);
	c->families = nf;
	return true;
}

/* The value of the sample whose name and labels are exactly series; NAN when absent. */
static inline double expo_get(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

#endif /* TEST_EXPO_H */
