/* SPDX-License-Identifier: MIT */
/* Decisions that keep the target safe, as pure functions. */
#ifndef NANLOG_POLICY_H
#define NANLOG_POLICY_H

#include <stdbool.h>

/* --retprobes: auto, force, never */
enum nl_retprobe_policy { NL_RET_AUTO = 0, NL_RET_FORCE, NL_RET_NEVER };

/* "6.18.44-foo" -> 6, 18, 44. 0 or -EINVAL. */
int nl_parse_kernel_release(const char *rel, int *maj, int *min, int *patch);

/*
 * Linux 6.11 routes x86-64 return probes through the uretprobe() syscall
 * (commit "uprobe: Add uretprobe syscall to speed up return probe"); a task
 * under a seccomp filter that does not allow it is killed. Linux 6.14
 * ("seccomp: passthrough uretprobe systemcall without filtering") exempts
 * it. True when this kernel is in that window.
 */
bool nl_kernel_uretprobe_seccomp_risk(int maj, int min);

/* The "Seccomp:" mode from /proc/PID/status text: 0, 1, 2, or -1 unknown. */
int nl_status_seccomp_mode(const char *status_text);

/*
 * Whether return probes may be used on a target. `why` receives a short
 * reason. With NL_RET_AUTO they are refused only for a seccomp-filtered
 * target on a kernel in the risk window.
 */
bool nl_retprobes_allowed(enum nl_retprobe_policy p, bool kernel_risk, int seccomp_mode,
			  const char **why);

#endif
