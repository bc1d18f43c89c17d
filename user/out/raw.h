/* SPDX-License-Identifier: MIT */
/* --raw: one JSON object per decoded call. */
#ifndef NANLOG_RAW_H
#define NANLOG_RAW_H

#include <stdio.h>

#include "record/call.h"


/* Write one "type":"call" line. Returns 0 or -errno (from the stream). */
int nl_raw_write(FILE *f, const struct nl_call *c);
/* The same with the process's container and pod (NULL or "": left out). */
int nl_raw_write_labeled(FILE *f, const struct nl_call *c, const char *container_id,
			 const char *pod_uid);

#endif
