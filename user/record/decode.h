/* SPDX-License-Identifier: MIT */
/* Ring-buffer record -> struct nl_call, driven by the API table. */
#ifndef NANLOG_DECODE_H
#define NANLOG_DECODE_H

#include <stddef.h>

#include "record/call.h"
#include "nanlog_rec.h"

/*
 * Decode one record of `size` bytes. Returns 0, or -EINVAL for a record of
 * the wrong size, an unknown type tag or an API id outside the table.
 */
int nl_decode(const void *data, size_t size, struct nl_call *out);

/*
 * The struct nl_rec_call a compact ring record (struct nl_wire) of `size`
 * bytes stands for. Returns 0, or -EINVAL when the size does not match what
 * the record says it holds, or the tag or the word flags are unknown. What
 * the record says of the call is checked later, by nl_decode.
 */
int nl_wire_expand(const void *data, size_t size, struct nl_rec_call *r);

/* Fill *out from a record already known to be well formed. */
void nl_decode_rec(const struct nl_rec_call *r, struct nl_call *out);

#endif
