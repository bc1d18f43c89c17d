// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json.h"

/* Comma and nesting bookkeeping before any value. */
static void value_prefix(struct nl_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
}

static void open_container(struct nl_json *j, char ch)
{
	value_prefix(j);
	fputc(ch, j->f);
	if (j->depth < NL_JSON_MAX_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_container(struct nl_json *j, char ch)
{
	fputc(ch, j->f);
	if (j->depth > 0)
		j->depth--;
}

void nl_json_begin(struct nl_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	fputc('{', f);
	j->depth = 1;
}

int nl_json_end(struct nl_json *j)
{
	while (j->depth > 0)
		close_container(j, '}');
	fputc('\n', j->f);
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

void nl_json_escape(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		switch (ch) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			/* Bytes >= 0x7f too: the input may not be UTF-8 (paths, comm). */
			if (ch < 0x20 || ch >= 0x7f)
				fprintf(f, "\\u%04x", ch);
			else
				fputc(ch, f);
		}
	}
}

void nl_json_key(struct nl_json *j, const char *key)
{
	value_prefix(j);
	fputc('"', j->f);
	nl_json_escape(j->f, key, strlen(key));
	fputs("\":", j->f);
	j->after_key = true;
}

void nl_json_strn(struct nl_json *j, const char *s, size_t n)
{
	value_prefix(j);
	fputc('"', j->f);
	nl_json_escape(j->f, s, n);
	fputc('"', j->f);
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
	fprintf(j->f, "%" PRIu64, v);
}

void nl_json_i64(struct nl_json *j, int64_t v)
{
	value_prefix(j);
	fprintf(j->f, "%" PRId64, v);
}

void nl_json_raw(struct nl_json *j, const char *literal)
{
	value_prefix(j);
	fputs(literal, j->f);
}

void nl_json_dbl(struct nl_json *j, double v)
{
	if (!isfinite(v)) {
		nl_json_null(j);
		return;
	}
	value_prefix(j);
	fprintf(j->f, "%.6g", v);
}

void nl_json_bool(struct nl_json *j, bool v)
{
	value_prefix(j);
	fputs(v ? "true" : "false", j->f);
}

void nl_json_null(struct nl_json *j)
{
	value_prefix(j);
	fputs("null", j->f);
}

void nl_json_hex(struct nl_json *j, uint64_t v)
{
	value_prefix(j);
	fprintf(j->f, "\"0x%" PRIx64 "\"", v);
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
