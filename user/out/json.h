/* SPDX-License-Identifier: MIT */
/*
 * A tiny streaming JSON writer for JSON Lines output: one object per line,
 * commas and escaping handled here. Used by the audit writers and usable by
 * the raw call writer. Pure C, no allocation: a line is built in a buffer in
 * struct nl_json and written with one fwrite (several for a line longer than
 * the buffer).
 *
 *   struct nl_json j;
 *   nl_json_begin(&j, f);            // opens the line's object
 *   nl_json_kstr(&j, "type", "batch");
 *   nl_json_key(&j, "streams"); nl_json_arr(&j); nl_json_hex(&j, 0x10); nl_json_arr_end(&j);
 *   err = nl_json_end(&j);            // closes the object, writes '\n'
 */
#ifndef NANLOG_JSON_H
#define NANLOG_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The "schema" of every JSON line the tool writes (docs/output.md). */
#define NL_OUTPUT_SCHEMA 1

#define NL_JSON_MAX_DEPTH 16

#define NL_JSON_BUF 1024

/* On the caller's stack: a line is built in buf and written in one go. */
struct nl_json {
	FILE *f;
	int depth;
	bool after_key;
	bool need_comma[NL_JSON_MAX_DEPTH];
	size_t n; /* bytes in buf */
	char buf[NL_JSON_BUF];
};

/* Start a line: writes '{'. */
void nl_json_begin(struct nl_json *j, FILE *f);
/* Close every open container, write '\n'; 0 or -errno of the stream. */
int nl_json_end(struct nl_json *j);

void nl_json_obj(struct nl_json *j);
void nl_json_obj_end(struct nl_json *j);
void nl_json_arr(struct nl_json *j);
void nl_json_arr_end(struct nl_json *j);
void nl_json_key(struct nl_json *j, const char *key);

void nl_json_str(struct nl_json *j, const char *s); /* NULL -> null */
void nl_json_strn(struct nl_json *j, const char *s, size_t n);
void nl_json_u64(struct nl_json *j, uint64_t v);
void nl_json_i64(struct nl_json *j, int64_t v);
void nl_json_dbl(struct nl_json *j, double v); /* not finite -> null */
/* A value the caller has already formatted as valid JSON (e.g. a fixed-point number). */
void nl_json_raw(struct nl_json *j, const char *literal);
void nl_json_bool(struct nl_json *j, bool v);
void nl_json_null(struct nl_json *j);
void nl_json_hex(struct nl_json *j, uint64_t v); /* "0x1f" */

/* key + value in one call */
void nl_json_kstr(struct nl_json *j, const char *key, const char *s);
void nl_json_ku64(struct nl_json *j, const char *key, uint64_t v);
void nl_json_ki64(struct nl_json *j, const char *key, int64_t v);
void nl_json_kdbl(struct nl_json *j, const char *key, double v);
void nl_json_kbool(struct nl_json *j, const char *key, bool v);
void nl_json_knull(struct nl_json *j, const char *key);
void nl_json_khex(struct nl_json *j, const char *key, uint64_t v);

#endif /* NANLOG_JSON_H */
