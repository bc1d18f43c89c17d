/* SPDX-License-Identifier: MIT */
/* Ring-buffer record -> struct nl_call, driven by the API table. */
#ifndef NANLOG_DECODE_H
#define NANLOG_DECODE_H

#include <stddef.h>

#include "call.h"
#include "nanlog_rec.h"

/*
 * Decode one record of `size` bytes. Returns 0, or -EINVAL for a record of
 * the wrong size, an unknown type tag or an API id outside the table.
 */
int nl_decode(const void *data, size_t size, struct nl_call *out);

/* Fill *out from a record already known to be well formed. */
void nl_decode_rec(const struct nl_rec_call *r, struct nl_call *out);

#endif
