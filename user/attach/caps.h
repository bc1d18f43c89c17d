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
/* Whether CAP_SYS_ADMIN is effective (perf-link uprobes need it on kernels with the CVE-2025-38466 fix). */
bool nl_caps_sys_admin(void);
/*
 * Drop everything but the kept set from permitted and bounding; empty
 * effective. perf_uprobes: the probes are perf links, so CAP_SYS_ADMIN is
 * kept when held (late libraries need it where the kernel does).
 */
int nl_caps_drop(bool perf_uprobes, char *desc, size_t desclen);
/* Nest: the effective set empties again at the outermost nl_caps_lower. */
void nl_caps_raise(void);
void nl_caps_lower(void);

#endif
