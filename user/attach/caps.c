// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "attach/caps.h"

/*
 * CAP_BPF and CAP_PERFMON: create uprobe links for libraries loaded later.
 * CAP_SYS_PTRACE: read /proc/PID/maps and open /proc/PID/root of targets
 * owned by other users. CAP_DAC_READ_SEARCH: open libraries in directories
 * the tool could not otherwise search. CAP_SYS_ADMIN when it is what stood
 * in for CAP_BPF or CAP_PERFMON (a runtime that grants no CAP_BPF: every
 * kernel the programs run on, 5.15+ for attach cookies, knows the two), and
 * when the probes are perf links (no uprobe_multi: Linux before 6.6), whose
 * perf_event_open() on the uprobe PMU kernels carrying the fix for
 * CVE-2025-38466 allow only with CAP_SYS_ADMIN.
 */
static cap_value_t keep[5] = { CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH };
static size_t nkeep = 4;

static bool dropped;
static int raised; /* nesting depth of nl_caps_raise: a scan that attaches raises twice */

static bool has(cap_t c, cap_value_t v, cap_flag_t f)
{
	cap_flag_value_t x = CAP_CLEAR;

	return CAP_IS_SUPPORTED(v) && cap_get_flag(c, v, f, &x) == 0 && x == CAP_SET;
}

bool nl_caps_can_trace(void)
{
	cap_t c = cap_get_proc();
	bool ok;

	if (!c)
		return false;
	ok = has(c, CAP_SYS_ADMIN, CAP_EFFECTIVE) ||
	     (has(c, CAP_BPF, CAP_EFFECTIVE) && has(c, CAP_PERFMON, CAP_EFFECTIVE));
	cap_free(c);
	return ok;
}

bool nl_caps_sys_admin(void)
{
	cap_t c = cap_get_proc();
	bool ok = c && has(c, CAP_SYS_ADMIN, CAP_EFFECTIVE);

	if (c)
		cap_free(c);
	return ok;
}

int nl_caps_drop(bool perf_uprobes, char *desc, size_t desclen)
{
	cap_t cur = cap_get_proc(), next = cap_init();
	size_t off = 0;
	int err = 0;

	if (!cur || !next) {
		err = -errno;
		goto out;
	}
	if ((perf_uprobes || !has(cur, CAP_BPF, CAP_PERMITTED) ||
	     !has(cur, CAP_PERFMON, CAP_PERMITTED)) &&
	    has(cur, CAP_SYS_ADMIN, CAP_PERMITTED) && nkeep < 5)
		keep[nkeep++] = CAP_SYS_ADMIN;
	/* the bounding set first: it needs CAP_SETPCAP, still effective now */
	for (cap_value_t v = 0; v <= CAP_LAST_CAP; v++) {
		bool kept = false;

		for (size_t i = 0; i < nkeep; i++)
			kept |= keep[i] == v;
		if (!kept && CAP_IS_SUPPORTED(v) && prctl(PR_CAPBSET_READ, v, 0, 0, 0) == 1)
			cap_drop_bound(v);
	}
	if (desclen)
		desc[0] = '\0';
	for (size_t i = 0; i < nkeep; i++) {
		if (!has(cur, keep[i], CAP_PERMITTED))
			continue;
		cap_set_flag(next, CAP_PERMITTED, 1, &keep[i], CAP_SET);
		if (off < desclen) {
			char *name = cap_to_name(keep[i]);

			off += (size_t)snprintf(desc + off, desclen - off, "%s%s", off ? "," : "",
						name ? name : "?");
			cap_free(name);
		}
	}
	if (cap_set_proc(next)) {
		err = -errno;
		goto out;
	}
	cap_reset_ambient();
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	dropped = true;
out:
	if (cur)
		cap_free(cur);
	if (next)
		cap_free(next);
	return err;
}

static void set_effective(bool on)
{
	cap_t c;

	if (!dropped)
		return;
	c = cap_get_proc();
	if (!c)
		return;
	for (size_t i = 0; i < nkeep; i++)
		if (has(c, keep[i], CAP_PERMITTED))
			cap_set_flag(c, CAP_EFFECTIVE, 1, &keep[i], on ? CAP_SET : CAP_CLEAR);
	cap_set_proc(c);
	cap_free(c);
}

void nl_caps_raise(void)
{
	if (raised++ == 0)
		set_effective(true);
}

void nl_caps_lower(void)
{
	if (raised > 0 && --raised == 0)
		set_effective(false);
}
