// SPDX-License-Identifier: MIT
/* A target's runtime libraries: opened in its root, their symbols probed. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach/caps.h"
#include "attach/loader_int.h"
#include "attach/umulti.h"
#include "base/util.h"
#include "nanlog.skel.h"
#include "proc/elfsym.h"
#include "proc/placement.h"
#include "proc/procmaps.h"
#include "record/call.h"

void nl_target_detach(struct target *t)
{
	for (int i = 0; i < t->nlibs; i++) {
		for (int j = 0; j < t->libs[i].nlinks; j++)
			bpf_link__destroy(t->libs[i].links[j]);
		for (int j = 0; j < 2; j++)
			if (t->libs[i].mfd[j] >= 0)
				close(t->libs[i].mfd[j]);
		free(t->libs[i].links);
		t->libs[i].links = NULL;
		t->libs[i].nlinks = 0;
	}
	t->nlibs = 0;
}

/*
 * Open a path as the target sees it, resolved inside its root so that a
 * symlink in a container cannot point the tool at a host file.
 */
static int open_in_root(pid_t pid, const char *path)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char root[64];
	int rfd, fd;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) /* kernels before 5.6: plain lookup under the root */
		fd = openat(rfd, path[0] == '/' ? path + 1 : path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	close(rfd);
	return fd;
}

static int attach_perf(struct nl_loader *l, struct libent *e, pid_t pid, const char *file,
		       uint64_t cookie, bool ret, uint64_t off)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookie, .retprobe = ret);
	struct bpf_program *prog = ret ? l->skel->progs.nl_return : l->skel->progs.nl_entry;
	struct bpf_link *link, **nl;

	link = bpf_program__attach_uprobe_opts(prog, pid, file, (size_t)off, &uo);
	if (!link)
		return errno ? -abs(errno) : -EINVAL;
	nl = realloc(e->links, sizeof(*nl) * (size_t)(e->nlinks + 1));
	if (!nl) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	e->links = nl;
	e->links[e->nlinks++] = link;
	return 0;
}

/* Attach every table entry of e->lib found in the file. */
static int attach_lib(struct nl_loader *l, struct target *t, struct libent *e, int fd)
{
	struct nl_attach_report rep = { .pid = t->pid, .lib = e->lib, .path = e->path,
					.retprobes_allowed = t->retprobes,
					.retprobe_why = t->why };
	uint64_t offs[NL_API_COUNT];
	uint64_t eo[NL_API_COUNT], ec[NL_API_COUNT], ro[NL_API_COUNT], rc[NL_API_COUNT];
	unsigned ne = 0, nr = 0;
	char file[64];
	uint64_t t0 = nl_mono_ns();
	int err = 0;

	/* The open descriptor pins the very file that was checked. */
	snprintf(file, sizeof(file), "/proc/self/fd/%d", fd);
	rep.host_path = file;
	err = nl_elf_resolve_apis(fd, e->lib, offs);
	if (err < 0) {
		nl_attach_log(l, 0, "pid %d: %s: cannot read its symbols: %s", (int)t->pid, e->path,
			      err == -ENOEXEC ? "not an ELF shared object" : strerror(-err));
		return err;
	}
	err = 0;
	for (int api = 0; api < NL_API_COUNT; api++) {
		const struct nl_api_info *a = &nl_api_info[api];
		uint64_t off = offs[api];
		struct nl_placement pl;
		uint32_t delta;

		if (a->lib != e->lib)
			continue;
		if (!off) {
			rep.missing[rep.nmissing++] = api;
			nl_attach_log(l, 2, "pid %d: %s not in %s%s", (int)t->pid, a->name, e->path,
				      (a->flags & NL_AF_OPT) ? " (optional)" : "");
			continue;
		}
		/*
		 * Past an endbr64 the registers, the stack and the return address
		 * at [rsp] are what they were at the symbol, so the entry program
		 * reads the same arguments and the return probe takes the same
		 * return address; the kernel then emulates the push there instead
		 * of single-stepping the endbr64 (docs/performance.md).
		 */
		err = nl_place_fd(fd, off, &pl);
		if (err) {
			nl_attach_log(l, 0, "pid %d: %s: cannot read %s: %s", (int)t->pid, e->path, a->name,
				      strerror(-err));
			return err;
		}
		delta = l->o.no_placement ? 0 : pl.delta;
		rep.placed += delta != 0;
		eo[ne] = off + delta;
		ec[ne++] = NL_COOKIE(api, t->slot);
		if ((a->flags & NL_AF_RET) && t->retprobes) {
			ro[nr] = off + delta;
			rc[nr++] = NL_COOKIE(api, t->slot);
		}
		nl_attach_log(l, 1, "pid %d: %s at file offset 0x%llx+%u%s (%s: %s)", (int)t->pid, a->name,
			      (unsigned long long)off, delta,
			      (a->flags & NL_AF_RET) && t->retprobes ? ", entry and return" : "",
			      nl_prologue_name(pl.prologue), nl_placement_effect(&pl, !l->o.no_placement));
	}
	/*
	 * Return probes first: a call whose entry probe fired must find its
	 * return probe in place, or the nesting depth it opened would never
	 * close and every later call of that thread would look nested. A return
	 * without its entry (a call already running) is told apart in BPF.
	 */
	if (l->multi) {
		if (nr) {
			err = nl_uprobe_multi_link(bpf_program__fd(l->skel->progs.nl_return), file, ro,
						   rc, nr, true, t->pid);
			if (err >= 0)
				e->mfd[1] = err;
		}
		if (err >= 0 && ne) {
			err = nl_uprobe_multi_link(bpf_program__fd(l->skel->progs.nl_entry), file, eo, ec,
						   ne, false, t->pid);
			if (err >= 0)
				e->mfd[0] = err;
		}
		err = err < 0 ? err : 0;
	} else {
		for (unsigned i = 0; i < nr && !err; i++)
			err = attach_perf(l, e, t->pid, file, rc[i], true, ro[i]);
		for (unsigned i = 0; i < ne && !err; i++)
			err = attach_perf(l, e, t->pid, file, ec[i], false, eo[i]);
	}
	if (err) {
		bool perf_denied = !l->multi && (err == -EACCES || err == -EPERM) && !nl_caps_sys_admin();

		nl_attach_log(l, 0, "pid %d: cannot attach probes to %s: %s%s", (int)t->pid, e->path,
			      strerror(-err),
			      perf_denied ? ": CAP_SYS_ADMIN missing: without uprobe_multi links (Linux 6.6+) "
					    "each probe is a perf event, and kernels carrying the fix for "
					    "CVE-2025-38466 allow uprobe perf events only with CAP_SYS_ADMIN, "
					    "CAP_PERFMON is not enough (docs/usage.md, \"Privileges\")" : "");
		return err;
	}
	rep.attached = (int)ne;
	rep.retprobes = (int)nr;
	rep.elapsed_ns = nl_mono_ns() - t0;
	if (l->cb.attached)
		l->cb.attached(l->cb.ctx, &rep);
	return 0;
}

/*
 * The file a target mapped. A path from /proc/PID/maps is the kernel's
 * canonical name of the mapping as seen from the reader's root: inside the
 * target's root for a target in its own mount namespace, but the host's path
 * for a chrooted one. So: inside the target's root first, then the path as
 * it stands, and either only if it is the very inode the maps named. A path
 * the user gave is looked up inside the target's root only.
 */
static int open_mapped(pid_t pid, const char *path, uint64_t map_ino)
{
	struct stat st;
	int fd = open_in_root(pid, path);

	if (!map_ino)
		return fd;
	if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_ino == map_ino)
		return fd;
	if (fd >= 0)
		close(fd);
	else if (fd != -ENOENT && fd != -ENOTDIR)
		return fd; /* no access to its root (no CAP_SYS_PTRACE): not to be worked around */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == map_ino)
		return fd;
	close(fd);
	return -ENOENT;
}

/* nl_target_add_lib with the capabilities it needs raised */
static int add_lib_caps_held(struct nl_loader *l, struct target *t, const char *path, int lib,
			     uint64_t map_ino)
{
	struct libent *e;
	struct stat st;
	int fd, err;

	fd = open_mapped(t->pid, path, map_ino);
	if (fd < 0) {
		nl_attach_log(l, 0, "pid %d: cannot open %s in its root: %s", (int)t->pid, path,
			      strerror(-fd));
		return fd;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		nl_attach_log(l, 0, "pid %d: %s is not a regular file", (int)t->pid, path);
		return -EINVAL;
	}
	for (int i = 0; i < t->nlibs; i++) {
		if (t->libs[i].dev == st.st_dev && t->libs[i].ino == st.st_ino) {
			close(fd);
			return 0; /* same file, probes already in place */
		}
	}
	if (t->nlibs >= MAX_TARGET_LIBS) {
		close(fd);
		nl_attach_log(l, 0, "pid %d: more than %d runtime libraries, %s ignored", (int)t->pid,
			      MAX_TARGET_LIBS, path);
		return -E2BIG;
	}
	e = &t->libs[t->nlibs];
	memset(e, 0, sizeof(*e));
	e->mfd[0] = e->mfd[1] = -1;
	e->lib = lib;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	snprintf(e->path, sizeof(e->path), "%s", path);
	nl_attach_log(l, 1, "pid %d: attaching to %s (%s)", (int)t->pid, path, nl_lib_name(lib));
	err = attach_lib(l, t, e, fd);
	close(fd);
	t->nlibs++; /* keep partial links so that detach frees them */
	return err;
}

int nl_target_add_lib(struct nl_loader *l, struct target *t, const char *path, int lib,
		      uint64_t map_ino)
{
	int err;

	nl_caps_raise(); /* CAP_SYS_PTRACE for /proc/PID/root, CAP_BPF/PERFMON to attach */
	err = add_lib_caps_held(l, t, path, lib, map_ino);
	nl_caps_lower();
	return err;
}

int nl_target_scan_maps(struct nl_loader *l, struct target *t)
{
	struct nl_maplib libs[MAX_TARGET_LIBS];
	char path[64], *text = NULL;
	int n, err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	nl_caps_raise();
	err = nl_read_text(path, &text);
	nl_caps_lower();
	if (err)
		return err;
	n = nl_maps_find_libs(text, libs, MAX_TARGET_LIBS);
	free(text);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		bool known = false;

		if (libs[i].deleted)
			continue; /* the path now names another file (or none) */
		for (int j = 0; j < t->nlibs; j++)
			known |= t->libs[j].dev == libs[i].dev && t->libs[j].ino == libs[i].inode;
		if (known)
			continue;
		err = nl_target_add_lib(l, t, libs[i].path, libs[i].lib, libs[i].inode);
		if (err)
			return err;
	}
	return 0;
}
