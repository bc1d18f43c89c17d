// SPDX-License-Identifier: MIT
/* The targets: their entries in the targets map, added and removed. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach/loader_int.h"
#include "base/util.h"
#include "nanlog.skel.h"
#include "proc/policy.h"
#include "proc/procmaps.h"

static struct target *find_target(struct nl_loader *l, pid_t pid)
{
	for (int i = 0; i < l->ntargets; i++)
		if (l->targets[i].pid == pid)
			return &l->targets[i];
	return NULL;
}

static void target_policy(struct nl_loader *l, struct target *t)
{
	char path[64], *text = NULL;
	int mode = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)t->pid);
	if (nl_read_text(path, &text) == 0) {
		mode = nl_status_seccomp_mode(text);
		free(text);
	}
	t->retprobes = nl_retprobes_allowed(l->o.retprobes, l->kernel_risk, mode, &t->why);
	nl_attach_log(l, 1, "pid %d: seccomp mode %d; %s", (int)t->pid, mode, t->why);
}

_Static_assert(NL_API_COUNT <= 0xffff, "the attach cookie keeps the API id in 16 bits");

/* The lowest free slot of the targets map, now held; -ENOSPC when none is left. */
static int take_slot(struct nl_loader *l)
{
	for (unsigned w = 0; w < NL_MAX_TARGETS / 64; w++) {
		if (l->slot_used[w] == ~0ull)
			continue;
		for (unsigned b = 0; b < 64; b++)
			if (!(l->slot_used[w] & (1ull << b))) {
				l->slot_used[w] |= 1ull << b;
				return (int)(w * 64 + b);
			}
	}
	return -ENOSPC;
}

static void give_slot(struct nl_loader *l, __u32 slot)
{
	l->slot_used[slot / 64] &= ~(1ull << (slot % 64));
}

int nl_loader_add_target(struct nl_loader *l, pid_t pid, const char *const *paths, int npaths,
			 bool require_hip)
{
	struct nl_target tv = { .pid = (__u32)pid };
	struct target *t;
	int err, nhip = 0, slot;

	if (find_target(l, pid))
		return -EEXIST;
	slot = take_slot(l);
	if (slot < 0) {
		nl_attach_log(l, 0, "pid %d: already tracing %d processes, the most one run can", (int)pid,
			      l->ntargets);
		return slot;
	}
	if (l->ntargets == l->cap_targets) {
		int nc = l->cap_targets ? l->cap_targets * 2 : 8;
		struct target *nt = realloc(l->targets, sizeof(*nt) * (size_t)nc);

		if (!nt) {
			give_slot(l, (__u32)slot);
			return -ENOMEM;
		}
		l->targets = nt;
		l->cap_targets = nc;
	}
	t = &l->targets[l->ntargets];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->slot = (__u32)slot;
	target_policy(l, t);
	tv.flags = NL_TGT_TRACE | (t->retprobes ? 0 : NL_TGT_NORET) |
		   (l->o.every_launch ? NL_TGT_EVERY_LAUNCH : 0);
	/* the entry first: probes that fire during attach are already wanted */
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.targets), &t->slot, &tv, BPF_ANY)) {
		err = -errno;
		give_slot(l, t->slot);
		return err;
	}
	l->ntargets++;
	nl_attach_log(l, 1, "pid %d: slot %u of the targets map", (int)pid, t->slot);

	for (int i = 0; i < npaths; i++) {
		int lib = nl_lib_of_path(paths[i]);

		if (lib < 0) {
			nl_attach_log(l, 0, "%s: not a libamdhip64.so* or librccl.so* file name", paths[i]);
			err = -EINVAL;
			goto fail;
		}
		err = nl_target_add_lib(l, t, paths[i], lib, 0);
		if (err)
			goto fail;
		if (lib == NL_LIB_HIP)
			nhip++;
	}
	err = nl_target_scan_maps(l, t);
	if (err == -ENOENT || err == -ESRCH) {
		nl_attach_log(l, 0, "no such process: %d", (int)pid);
		err = -ESRCH;
		goto fail;
	}
	if (err)
		goto fail;
	for (int i = 0; i < t->nlibs; i++)
		if (t->libs[i].lib == NL_LIB_HIP)
			nhip++;
	if (require_hip && nhip == 0) {
		err = -ENOENT;
		goto fail;
	}
	return 0;
fail:
	nl_loader_remove_target(l, pid);
	return err;
}

/*
 * The target's entry in the map is cleared, so its calls are no longer
 * traced; the launches still counted in its open run (include/nanlog_rec.h)
 * are told last, after what the ring holds, in the run-end record the
 * process would have sent with its next call. The slot stays the target's
 * until its links are closed.
 */
static void untrace(struct nl_loader *l, const struct target *t)
{
	int fd = bpf_map__fd(l->skel->maps.targets);
	struct nl_target tv, none = { 0 };
	struct nl_rec_call rec;
	bool had = bpf_map_lookup_elem(fd, &t->slot, &tv) == 0 && (tv.flags & NL_TGT_TRACE);

	bpf_map_update_elem(fd, &t->slot, &none, BPF_ANY);
	nl_loader_drain(l);
	if (!had || !NL_RUN_COUNT(tv.run))
		return;
	memset(&rec, 0, sizeof(rec));
	rec.type = NL_REC_RUN;
	rec.pid = (__u32)t->pid;
	rec.tid = (__u32)t->pid;
	rec.ts_ns = nl_mono_ns();
	rec.flush = tv.run; /* a copy when closing: the closer's end may be in the ring */
	rec.flush_ts = tv.run_ts;
	nl_attach_deliver(l, &rec, sizeof(rec));
}

void nl_loader_remove_target(struct nl_loader *l, pid_t pid)
{
	struct target *t = find_target(l, pid);

	if (!t)
		return;
	untrace(l, t);
	nl_target_detach(t);
	give_slot(l, t->slot);
	*t = l->targets[--l->ntargets];
}

void nl_loader_untrace_all(struct nl_loader *l)
{
	for (int i = 0; i < l->ntargets; i++)
		untrace(l, &l->targets[i]);
}

int nl_loader_rescan(struct nl_loader *l)
{
	for (int i = 0; i < l->ntargets; i++) {
		struct target *t = &l->targets[i];
		int err = nl_target_scan_maps(l, t);

		if (err && err != -ENOENT && err != -ESRCH && !t->rescan_failed)
			nl_attach_log(l, 0, "pid %d: looking for new libraries failed: %s", (int)t->pid,
				      strerror(-err));
		t->rescan_failed = err != 0;
	}
	return 0;
}

static int find_in_dir(const char *d, const char *prefix, char *out, size_t outlen)
{
	size_t plen = strlen(prefix);
	DIR *dir = opendir(*d ? d : ".");
	struct dirent *de;
	int found = -ENOENT;

	if (!dir)
		return -ENOENT;
	while ((de = readdir(dir))) {
		char rel[4096 + 256];

		if (strncmp(de->d_name, prefix, plen) != 0 ||
		    (de->d_name[plen] != '\0' && de->d_name[plen] != '.'))
			continue;
		snprintf(rel, sizeof(rel), "%s/%s", *d ? d : ".", de->d_name);
		/* absolute, links resolved: the target resolves it from its own root */
		if (realpath(rel, out) && strlen(out) < outlen) {
			found = 0;
			break;
		}
	}
	closedir(dir);
	return found;
}

/* Search LD_LIBRARY_PATH, then the usual directories, for PREFIX or PREFIX.*. */
int nl_find_library(const char *prefix, char *out, size_t outlen)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
					    "/usr/local/lib", "/usr/lib", "/lib", "/opt/rocm/lib" };
	const char *llp = getenv("LD_LIBRARY_PATH");
	char buf[PATH_MAX];
	int err = -ENOENT;

	if (outlen < PATH_MAX)
		return -EINVAL;
	if (llp) {
		char *copy = strdup(llp), *save = NULL;

		if (!copy)
			return -ENOMEM;
		for (char *d = strtok_r(copy, ":", &save); d && err; d = strtok_r(NULL, ":", &save))
			err = find_in_dir(d, prefix, buf, sizeof(buf));
		free(copy);
	}
	for (size_t i = 0; err && i < NL_ARRAY_SIZE(dirs); i++)
		err = find_in_dir(dirs[i], prefix, buf, sizeof(buf));
	if (!err)
		snprintf(out, outlen, "%s", buf);
	return err;
}
