/* SPDX-License-Identifier: MIT */
/* Numeric settings from the environment, shared by simhip and the simulated RCCL. */
#ifndef SIMHIP_ENV_H
#define SIMHIP_ENV_H

#include <errno.h>
#include <stdlib.h>

/* $name as a finite number >= 0, else dflt. */
static inline double sim_env_double(const char *name, double dflt)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return dflt;
	errno = 0;
	d = strtod(v, &end);
	return (errno || *end || !(d >= 0) || d > 1e300) ? dflt : d;
}

#endif /* SIMHIP_ENV_H */
