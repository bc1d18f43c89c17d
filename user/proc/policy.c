// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/policy.h"

int nl_parse_kernel_release(const char *rel, int *maj, int *min, int *patch)
{
	int n = 0;

	*patch = 0;
	if (!rel || sscanf(rel, "%d.%d%n", maj, min, &n) != 2 || *maj < 0 || *min < 0)
		return -EINVAL;
	if (rel[n] == '.')
		*patch = atoi(rel + n + 1);
	return 0;
}

bool nl_kernel_uretprobe_seccomp_risk(int maj, int min)
{
	return maj == 6 && min >= 11 && min < 14;
}

int nl_status_seccomp_mode(const char *s)
{
	const char *p = s ? strstr(s, "\nSeccomp:") : NULL;

	if (!p && s && strncmp(s, "Seccomp:", 8) == 0)
		p = s - 1;
	if (!p)
		return -1;
	p += 9;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '2')
		return -1;
	return *p - '0';
}

bool nl_retprobes_allowed(enum nl_retprobe_policy p, bool kernel_risk, int seccomp_mode,
			  const char **why)
{
	switch (p) {
	case NL_RET_NEVER:
		*why = "return probes disabled by --retprobes never";
		return false;
	case NL_RET_FORCE:
		*why = "return probes forced by --retprobes force";
		return true;
	case NL_RET_AUTO:
	default:
		break;
	}
	if (kernel_risk && seccomp_mode != 0) {
		*why = seccomp_mode < 0 ?
			       "seccomp state of the target unknown on a kernel (6.11-6.13) whose "
			       "return probes can get seccomp-filtered processes killed: entry probes only" :
			       "target runs under seccomp on a kernel (6.11-6.13) whose return probes "
			       "can get it killed: entry probes only (--retprobes force overrides)";
		return false;
	}
	*why = kernel_risk ? "target not under seccomp" : "kernel routes return probes safely";
	return true;
}
