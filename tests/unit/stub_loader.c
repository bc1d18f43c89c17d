// SPDX-License-Identifier: MIT
/* The attach layer as the app sees it, for test_app.c (stub_loader.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "stub_loader.h"
#include "attach/caps.h"

struct nl_loader {
	int unused;
};

struct stub_loader stub;
static struct nl_loader handle;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	size_t n = strlen(stub.log);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(stub.log + n, sizeof(stub.log) - n, fmt, ap);
	va_end(ap);
}

struct nl_loader *stub_loader_reset(void)
{
	memset(&stub, 0, sizeof(stub));
	return &handle;
}

void stub_loader_hip(pid_t pid)
{
	if (stub.nhip < STUB_MAX_PIDS)
		stub.hip[stub.nhip++] = pid;
}

static bool in(const pid_t *set, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (set[i] == pid)
			return true;
	return false;
}

int nl_loader_add_target(struct nl_loader *l, pid_t pid, const char *const *paths, int npaths,
			 bool require_hip)
{
	(void)l;
	(void)paths;
	say("add %d hip=%d paths=%d;", (int)pid, (int)require_hip, npaths);
	if (in(stub.traced, stub.ntraced, pid))
		return -EEXIST;
	if (require_hip && npaths == 0 && !in(stub.hip, stub.nhip, pid))
		return -ENOENT;
	if (stub.ntraced >= STUB_MAX_PIDS)
		return -E2BIG;
	stub.traced[stub.ntraced++] = pid;
	return 0;
}

void nl_loader_remove_target(struct nl_loader *l, pid_t pid)
{
	(void)l;
	say("remove %d;", (int)pid);
	for (int i = 0; i < stub.ntraced; i++)
		if (stub.traced[i] == pid)
			stub.traced[i--] = stub.traced[--stub.ntraced];
}

void nl_loader_untrace_all(struct nl_loader *l)
{
	(void)l;
	say("untrace;");
	stub.ntraced = 0;
}

int nl_loader_rescan(struct nl_loader *l)
{
	(void)l;
	say("rescan;");
	return 0;
}

int nl_loader_stats(struct nl_loader *l, uint64_t out[NL_STAT_MAX])
{
	(void)l;
	memcpy(out, stub.stats, sizeof(stub.stats));
	return 0;
}

void nl_caps_raise(void)
{
	stub.caps_raised++;
}

void nl_caps_lower(void)
{
	stub.caps_raised--;
}
