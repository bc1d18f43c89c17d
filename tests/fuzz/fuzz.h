/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c): each
 * defines LLVMFuzzerTestOneInput and includes this once. docs/fuzzing.md.
 */
#ifndef NANLOG_FUZZ_H
#define NANLOG_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A harness's own invariant failed: abort, so libFuzzer saves the input. */
#define FUZZ_CHECK(cond)                                                              \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                               \
			abort();                                                      \
		}                                                                     \
	} while (0)

/* The input as a NUL-terminated string (an inner NUL ends it early). Free it. */
static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	FUZZ_CHECK(s);
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Where writers print: output is exercised, not kept. */
static inline FILE *fuzz_devnull(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	FUZZ_CHECK(f);
	return f;
}

#endif
