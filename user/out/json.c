// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "out/json.h"

static void flush(struct nl_json *j)
{
	if (j->n)
		fwrite(j->buf, 1, j->n, j->f); /* errors stay in the stream: nl_json_end */
	j->n = 0;
}

static void put(struct nl_json *j, const char *s, size_t n)
{
	if (n > sizeof(j->buf) - j->n) {
		flush(j);
		if (n > sizeof(j->buf)) {
			fwrite(s, 1, n, j->f);
			return;
		}
	}
	memcpy(j->buf + j->n, s, n);
	j->n += n;
}

static void putch(struct nl_json *j, char ch)
{
	if (j->n == sizeof(j->buf))
		flush(j);
	j->buf[j->n++] = ch;
}

static void put_u64(struct nl_json *j, uint64_t v)
{
	char buf[20];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(j, buf + i, sizeof(buf) - i);
}

/* Comma and nesting bookkeeping before any value. */
static void value_prefix(struct nl_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		putch(j, ',');
	j->need_comma[j->depth] = true;
}

static void open_container(struct nl_json *j, char ch)
{
	value_prefix(j);
	putch(j, ch);
	if (j->depth < NL_JSON_MAX_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_container(struct nl_json *j, char ch)
{
	putch(j, ch);
	if (j->depth > 0)
		j->depth--;
}

void nl_json_begin(struct nl_json *j, FILE *f)
{
	memset(j, 0, offsetof(struct nl_json, buf));
	j->f = f;
	putch(j, '{');
	j->depth = 1;
}

int nl_json_end(struct nl_json *j)
{
	while (j->depth > 0)
		close_container(j, '}');
	putch(j, '\n');
	flush(j);
	if (ferror(j->f))
		return errno ? -errno : -EIO;
	return 0;
}

void nl_json_obj(struct nl_json *j)
{
	open_container(j, '{');
}

void nl_json_obj_end(struct nl_json *j)
{
	close_container(j, '}');
}

void nl_json_arr(struct nl_json *j)
{
	open_container(j, '[');
}

void nl_json_arr_end(struct nl_json *j)
{
	close_container(j, ']');
}

/*
 * The escape sequence of a byte that needs one, NULL for a byte that goes
 * as it is. Bytes >= 0x7f are escaped too: the input may not be UTF-8
 * (paths, comm).
 */
static const char *escape_of(unsigned char ch, char u[7])
{
	if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
		return NULL;
	switch (ch) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\n':
		return "\\n";
	case '\t':
		return "\\t";
	case '\r':
		return "\\r";
	default:
		snprintf(u, 7, "\\u%04x", ch);
		return u;
	}
}

/* Runs of bytes that need no escape go in one piece. */
static void escape(struct nl_json *j, const char *s, size_t n)
{
	size_t run = 0; /* bytes before i not yet written */

	for (size_t i = 0; i < n; i++) {
		char u[7];
		const char *esc = escape_of((unsigned char)s[i], u);

		if (!esc) {
			run++;
			continue;
		}
		put(j, s + i - run, run);
		run = 0;
		put(j, esc, strlen(esc));
	}
	put(j, s + n - run, run);
}

void nl_json_key(struct nl_json *j, const char *key)
{
	value_prefix(j);
	putch(j, '"');
	escape(j, key, strlen(key));
	put(j, "\":", 2);
	j->after_key = true;
}

void nl_json_strn(struct nl_json *j, const char *s, size_t n)
{
	value_prefix(j);
	putch(j, '"');
	escape(j, s, n);
	putch(j, '"');
}

void nl_json_str(struct nl_json *j, const char *s)
{
	if (!s) {
		nl_json_null(j);
		return;
	}
	nl_json_strn(j, s, strlen(s));
}

void nl_json_u64(struct nl_json *j, uint64_t v)
{
	value_prefix(j);
	put_u64(j, v);
}

void nl_json_i64(struct nl_json *j, int64_t v)
{
	value_prefix(j);
	if (v < 0) {
		putch(j, '-');
		put_u64(j, -(uint64_t)v);
	} else {
		put_u64(j, (uint64_t)v);
	}
}

void nl_json_raw(struct nl_json *j, const char *literal)
{
	value_prefix(j);
	put(j, literal, strlen(literal));
}

void nl_json_dbl(struct nl_json *j, double v)
{
	if (!isfinite(v)) {
		nl_json_null(j);
		return;
	}
	char buf[32];
	int n;

	value_prefix(j);
	n = snprintf(buf, sizeof(buf), "%.6g", v);
	put(j, buf, n > 0 ? (size_t)n : 0);
}

void nl_json_bool(struct nl_json *j, bool v)
{
	value_prefix(j);
	if (v)
		put(j, "true", 4);
	else
		put(j, "false", 5);
}

void nl_json_null(struct nl_json *j)
{
	value_prefix(j);
	put(j, "null", 4);
}

void nl_json_hex(struct nl_json *j, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char buf[21];
	size_t i = sizeof(buf);

	value_prefix(j);
	buf[--i] = '"';
	do {
		buf[--i] = digits[v & 0xf];
		v >>= 4;
	} while (v);
	buf[--i] = 'x';
	buf[--i] = '0';
	buf[--i] = '"';
	put(j, buf + i, sizeof(buf) - i);
}

void nl_json_kstr(struct nl_json *j, const char *key, const char *s)
{
	nl_json_key(j, key);
	nl_json_str(j, s);
}

void nl_json_ku64(struct nl_json *j, const char *key, uint64_t v)
{
	nl_json_key(j, key);
	nl_json_u64(j, v);
}

void nl_json_ki64(struct nl_json *j, const char *key, int64_t v)
{
	nl_json_key(j, key);
	nl_json_i64(j, v);
}

void nl_json_kdbl(struct nl_json *j, const char *key, double v)
{
	nl_json_key(j, key);
	nl_json_dbl(j, v);
}

void nl_json_kbool(struct nl_json *j, const char *key, bool v)
{
	nl_json_key(j, key);
	nl_json_bool(j, v);
}

void nl_json_knull(struct nl_json *j, const char *key)
{
	nl_json_key(j, key);
	nl_json_null(j);
}

void nl_json_khex(struct nl_json *j, const char *key, uint64_t v)
{
	nl_json_key(j, key);
	nl_json_hex(j, v);
}
