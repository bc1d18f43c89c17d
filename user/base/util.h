/* SPDX-License-Identifier: MIT */
/* What every layer may use: the lowest layer, header only (user/README.md). */
#ifndef NANLOG_BASE_UTIL_H
#define NANLOG_BASE_UTIL_H

#include <stdint.h>
#include <time.h>

/* The number of elements of an array (not of a pointer). */
#define NL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CLOCK_MONOTONIC in nanoseconds: the clock of the probes' timestamps. */
static inline uint64_t nl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
