// SPDX-License-Identifier: MIT
/*
 * nl_opts_parse on a command line: the input split at newlines and NULs into
 * argv strings after "nanlog-bpf" (one argument per line in the corpus). The
 * parser runs twice on the same argv and must agree with itself; the number
 * parsers run on every argument.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>

#include "fuzz.h"
#include "app/options.h"

#define MAX_ARGS 256

static void check_numbers(const char *s)
{
	uint64_t v;
	double d;

	if (nl_parse_u64(s, 0, UINT64_MAX, &v) == 0) {
		/* the whole string is a number: no sign, no blank, no trailing text */
		FUZZ_CHECK(*s >= '0' && *s <= '9');
		FUZZ_CHECK(nl_parse_u64(s, v, v, &v) == 0);
		if (v)
			FUZZ_CHECK(nl_parse_u64(s, 0, v - 1, &v) == -EINVAL);
	}
	if (nl_parse_seconds(s, 60.0, &d) == 0)
		FUZZ_CHECK(isfinite(d) && d > 0 && d <= 60.0 && !isspace((unsigned char)*s));
}

static void check_opts(const struct nl_opts *o, int ret, int argc, char **argv)
{
	FUZZ_CHECK(ret == 0 || ret == 1 || ret == -EINVAL);
	if (ret != 0)
		return;
	FUZZ_CHECK(o->npids >= 0 && o->npids <= NL_MAX_PIDS);
	FUZZ_CHECK(o->nlibs >= 0 && o->nlibs <= NL_MAX_LIBS);
	FUZZ_CHECK(o->nsparse >= 0 && o->nsparse <= NL_MAX_ROLE_STREAMS);
	FUZZ_CHECK(!(o->npids && o->ncmd));
	FUZZ_CHECK(!(o->quiet && o->verbose));
	for (int i = 0; i < o->npids; i++)
		FUZZ_CHECK(o->pids[i] >= 1 && o->pids[i] <= 4194304);
	FUZZ_CHECK(o->ringbuf_size >= 4096 && o->ringbuf_size <= (1u << 30) &&
		   !(o->ringbuf_size & (o->ringbuf_size - 1)));
	FUZZ_CHECK(o->poll_interval_s >= 0.01 && o->poll_interval_s <= 60.0);
	FUZZ_CHECK(o->duration_s >= 0 && o->duration_s <= 31536000.0);
	if (o->ncmd) {
		/* the command is the tail of argv, right after "--" */
		FUZZ_CHECK(o->cmd == &argv[argc - o->ncmd]);
		FUZZ_CHECK(strcmp(argv[argc - o->ncmd - 1], "--") == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	char *argv[MAX_ARGS + 1], *copy[MAX_ARGS + 1];
	char err[256], err2[256];
	struct nl_opts o, o2;
	int argc = 0, ret, ret2;

	FUZZ_CHECK(text);
	if (size)
		memcpy(text, data, size);
	text[size] = '\0';
	argv[argc++] = "nanlog-bpf";
	for (size_t i = 0, start = 0; i <= size && argc < MAX_ARGS; i++) {
		if (i < size && text[i] != '\n' && text[i] != '\0')
			continue;
		text[i] = '\0';
		if (i > start || i < size)
			argv[argc++] = text + start;
		start = i + 1;
	}
	argv[argc] = NULL;
	memcpy(copy, argv, sizeof(argv));

	ret = nl_opts_parse(argc, argv, &o, err, sizeof(err));
	check_opts(&o, ret, argc, argv);
	if (ret < 0)
		FUZZ_CHECK(err[0] && strnlen(err, sizeof(err)) < sizeof(err));
	/* '+' in the option string: getopt never permutes argv */
	FUZZ_CHECK(memcmp(copy, argv, sizeof(argv)) == 0);
	ret2 = nl_opts_parse(argc, argv, &o2, err2, sizeof(err2));
	FUZZ_CHECK(ret == ret2 && strcmp(err, err2) == 0);
	FUZZ_CHECK(memcmp(&o, &o2, sizeof(o)) == 0);
	/* a short error buffer is cut, not overrun */
	ret2 = nl_opts_parse(argc, argv, &o2, err2, 8);
	FUZZ_CHECK(ret == ret2 && (ret >= 0 || strnlen(err2, 8) < 8));
	for (int i = 1; i < argc; i++)
		check_numbers(argv[i]);
	free(text);
	return 0;
}
