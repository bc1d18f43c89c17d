/* SPDX-License-Identifier: MIT */
/*
 * Capabilities: after the first attach the tool keeps only what attaching
 * late libraries needs, in its permitted set, and runs with an empty
 * effective set; nl_caps_raise/lower bracket the moments that need them.
 */
#ifndef NANLOG_CAPS_H
#define NANLOG_CAPS_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the process can load BPF and attach uprobes (CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN). */
bool nl_caps_can_trace(void);
/* Drop everything but the kept set from permitted and bounding; empty effective. */
int nl_caps_drop(char *desc, size_t desclen);
/* Nest: the effective set empties again at the outermost nl_caps_lower. */
void nl_caps_raise(void);
void nl_caps_lower(void);

#endif
