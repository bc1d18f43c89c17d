// SPDX-License-Identifier: MIT
/* BPF skeleton lifecycle, per-target library discovery and probe attachment. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/util.h"
#include "record/call.h"
#include "record/decode.h"
#include "proc/elfsym.h"
#include "attach/loader.h"
#include "attach/caps.h"
#include "attach/umulti.h"
#include "nanlog.skel.h"
#include "proc/placement.h"
#include "proc/policy.h"
#include "proc/procmaps.h"

#define MAX_TARGET_LIBS 8

struct libent {
	int lib;
	dev_t dev;
	ino_t ino;
	char path[4096];
	struct bpf_link **links; /* one per symbol and direction (fallback) */
	int nlinks;
	int mfd[2];              /* uprobe_multi links: entry, return; -1 when unused */
};

struct target {
	pid_t pid;
	__u32 slot; /* its entry in the targets map, carried in its probes' cookies */
	bool retprobes;
	bool rescan_failed; /* said once, not every poll */
	const char *why;
	struct libent libs[MAX_TARGET_LIBS];
	int nlibs;
};

struct nl_loader {
	struct nanlog_bpf *skel;
	struct ring_buffer *rb;
	struct nl_loader_cb cb;
	struct nl_loader_conf o;
	struct target *targets;
	int ntargets, cap_targets;
	uint64_t slot_used[NL_MAX_TARGETS / 64]; /* targets-map slots held by a target */
	int ncpus;
	bool kernel_risk;
	bool multi; /* uprobe_multi links (Linux 6.6) instead of one perf link per symbol */
};

static struct nl_loader_cb *g_log_cb; /* libbpf's print hook has no context */

static void logf_(const struct nl_loader *l, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void logf_(const struct nl_loader *l, int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!l->cb.log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	l->cb.log(l->cb.ctx, level, buf);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[1024];
	size_t n;

	if (!g_log_cb || !g_log_cb->log || level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	g_log_cb->log(g_log_cb->ctx, 3, buf); /* level 3: libbpf's own chatter, -vvv */
	return 0;
}

/* A record in the full layout goes on to the application. */
static int deliver(struct nl_loader *l, const void *data, size_t size)
{
	return l->cb.record ? l->cb.record(l->cb.ctx, data, size) : 0;
}

/*
 * The ring carries compact records (include/nanlog_rec.h, struct nl_wire);
 * everything after the loader sees struct nl_rec_call. One that does not
 * expand goes on as it came, and the application judges it as any record:
 * nl_decode takes only a well-formed full record (which a compact tag never
 * is) and the rest is counted bad, and recorded so that replay counts it too.
 */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct nl_loader *l = ctx;
	struct nl_rec_call rec;

	if (nl_wire_expand(data, size, &rec))
		return deliver(l, data, size);
	return deliver(l, &rec, sizeof(rec));
}

/*
 * In a PID namespace of its own (a sidecar sharing its pod's), the tool
 * knows its targets by the pids of that namespace, and so must the records:
 * the programs are told the namespace. The initial one has a fixed inode
 * number (PROC_PID_INIT_INO); there the kernel's ids are the tool's.
 */
#define NL_PID_INIT_INO 0xEFFFFFFCu

static void pid_namespace(struct nl_loader *l)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) != 0) {
		logf_(l, 1, "cannot tell the PID namespace (%s): taking the kernel's ids",
		      strerror(errno));
		return;
	}
	if (st.st_ino == NL_PID_INIT_INO)
		return;
	l->skel->rodata->pidns_dev = (__u64)st.st_dev;
	l->skel->rodata->pidns_ino = (__u64)st.st_ino;
	logf_(l, 1, "in PID namespace %llu: records carry its ids", (unsigned long long)st.st_ino);
}

int nl_loader_open(struct nl_loader **out, const struct nl_loader_conf *o,
		   const struct nl_loader_cb *cb)
{
	struct nl_loader *l;
	struct utsname u;
	int err, maj, min, patch;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cb = *cb;
	l->o = *o;
	g_log_cb = &l->cb;
	libbpf_set_print(libbpf_print);
	l->ncpus = libbpf_num_possible_cpus();
	if (l->ncpus <= 0) {
		err = l->ncpus ? l->ncpus : -EINVAL;
		goto fail;
	}
	{
		/* tests: pretend to run on another kernel release (the seccomp window) */
		const char *rel = getenv("NANLOG_KERNEL_RELEASE");

		if (!rel && uname(&u) == 0)
			rel = u.release;
		if (rel && nl_parse_kernel_release(rel, &maj, &min, &patch) == 0)
			l->kernel_risk = nl_kernel_uretprobe_seccomp_risk(maj, min);
	}

	l->skel = nanlog_bpf__open();
	if (!l->skel) {
		err = -errno;
		logf_(l, 0, "cannot open the BPF object: %s", strerror(-err));
		goto fail;
	}
	err = bpf_map__set_max_entries(l->skel->maps.events, (__u32)o->ringbuf_size);
	if (err)
		goto fail;
	pid_namespace(l);
	l->multi = nl_uprobe_multi_supported();
	if (l->multi) {
		bpf_program__set_expected_attach_type(l->skel->progs.nl_entry,
						      NL_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(l->skel->progs.nl_return,
						      NL_BPF_TRACE_UPROBE_MULTI);
	}
	logf_(l, 1, "probes: %s", l->multi ? "uprobe_multi links (one per library and direction)" :
		    "one perf link per symbol (kernel before 6.6: slower attach and detach)");
	err = nanlog_bpf__load(l->skel);
	if (err) {
		logf_(l, 0, "cannot load the BPF programs: %s%s", strerror(-err),
		      err == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		goto fail;
	}
	l->rb = ring_buffer__new(bpf_map__fd(l->skel->maps.events), on_sample, l, NULL);
	if (!l->rb) {
		err = -errno;
		logf_(l, 0, "cannot set up the ring buffer: %s", strerror(-err));
		goto fail;
	}
	*out = l;
	return 0;
fail:
	nl_loader_close(l);
	return err;
}

static void detach_target(struct target *t)
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

void nl_loader_close(struct nl_loader *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->ntargets; i++)
		detach_target(&l->targets[i]);
	free(l->targets);
	ring_buffer__free(l->rb);
	nanlog_bpf__destroy(l->skel);
	if (g_log_cb == &l->cb)
		g_log_cb = NULL;
	free(l);
}

static struct target *find_target(struct nl_loader *l, pid_t pid)
{
	for (int i = 0; i < l->ntargets; i++)
		if (l->targets[i].pid == pid)
			return &l->targets[i];
	return NULL;
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
		logf_(l, 0, "pid %d: %s: cannot read its symbols: %s", (int)t->pid, e->path,
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
			logf_(l, 2, "pid %d: %s not in %s%s", (int)t->pid, a->name, e->path,
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
			logf_(l, 0, "pid %d: %s: cannot read %s: %s", (int)t->pid, e->path, a->name,
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
		logf_(l, 1, "pid %d: %s at file offset 0x%llx+%u%s (%s: %s)", (int)t->pid, a->name,
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

		logf_(l, 0, "pid %d: cannot attach probes to %s: %s%s", (int)t->pid, e->path,
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

static int add_lib_locked(struct nl_loader *l, struct target *t, const char *path, int lib,
			  uint64_t map_ino);

/*
 * Attach a library given by path unless already done. map_ino: the inode
 * /proc/PID/maps gave for it, 0 for a path the user named.
 */
static int add_lib(struct nl_loader *l, struct target *t, const char *path, int lib,
		   uint64_t map_ino)
{
	int err;

	nl_caps_raise(); /* CAP_SYS_PTRACE for /proc/PID/root, CAP_BPF/PERFMON to attach */
	err = add_lib_locked(l, t, path, lib, map_ino);
	nl_caps_lower();
	return err;
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

static int add_lib_locked(struct nl_loader *l, struct target *t, const char *path, int lib,
			  uint64_t map_ino)
{
	struct libent *e;
	struct stat st;
	int fd, err;

	fd = open_mapped(t->pid, path, map_ino);
	if (fd < 0) {
		logf_(l, 0, "pid %d: cannot open %s in its root: %s", (int)t->pid, path,
		      strerror(-fd));
		return fd;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		logf_(l, 0, "pid %d: %s is not a regular file", (int)t->pid, path);
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
		logf_(l, 0, "pid %d: more than %d runtime libraries, %s ignored", (int)t->pid,
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
	logf_(l, 1, "pid %d: attaching to %s (%s)", (int)t->pid, path, nl_lib_name(lib));
	err = attach_lib(l, t, e, fd);
	close(fd);
	t->nlibs++; /* keep partial links so that detach frees them */
	return err;
}

static int scan_maps(struct nl_loader *l, struct target *t, int *nhip)
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
	if (nhip)
		*nhip = 0;
	for (int i = 0; i < n; i++) {
		bool known = false;

		if (libs[i].deleted)
			continue; /* the path now names another file (or none) */
		for (int j = 0; j < t->nlibs; j++)
			known |= t->libs[j].dev == libs[i].dev && t->libs[j].ino == libs[i].inode;
		if (known) {
			if (nhip && libs[i].lib == NL_LIB_HIP)
				(*nhip)++;
			continue;
		}
		if (nhip && libs[i].lib == NL_LIB_HIP)
			(*nhip)++;
		err = add_lib(l, t, libs[i].path, libs[i].lib, libs[i].inode);
		if (err)
			return err;
	}
	return 0;
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
	logf_(l, 1, "pid %d: seccomp mode %d; %s", (int)t->pid, mode, t->why);
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
		logf_(l, 0, "pid %d: already tracing %d processes, the most one run can", (int)pid,
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
	logf_(l, 1, "pid %d: slot %u of the targets map", (int)pid, t->slot);

	for (int i = 0; i < npaths; i++) {
		int lib = nl_lib_of_path(paths[i]);

		if (lib < 0) {
			logf_(l, 0, "%s: not a libamdhip64.so* or librccl.so* file name", paths[i]);
			err = -EINVAL;
			goto fail;
		}
		err = add_lib(l, t, paths[i], lib, 0);
		if (err)
			goto fail;
		if (lib == NL_LIB_HIP)
			nhip++;
	}
	err = scan_maps(l, t, NULL);
	if (err == -ENOENT || err == -ESRCH) {
		logf_(l, 0, "no such process: %d", (int)pid);
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
	deliver(l, &rec, sizeof(rec));
}

void nl_loader_remove_target(struct nl_loader *l, pid_t pid)
{
	struct target *t = find_target(l, pid);

	if (!t)
		return;
	untrace(l, t);
	detach_target(t);
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
		int err = scan_maps(l, t, NULL);

		if (err && err != -ENOENT && err != -ESRCH && !t->rescan_failed)
			logf_(l, 0, "pid %d: looking for new libraries failed: %s", (int)t->pid,
			      strerror(-err));
		t->rescan_failed = err != 0;
	}
	return 0;
}

/*
 * The BPF side wakes the reader only when the ring is a quarter full
 * (bpf/nanlog.bpf.c emit()), so the ring is read at every poll, woken or not:
 * records come in batches of one poll period.
 */
int nl_loader_poll(struct nl_loader *l, int timeout_ms)
{
	int n = ring_buffer__poll(l->rb, timeout_ms);

	if (n == -EINTR)
		n = 0;
	if (n >= 0) {
		int m = ring_buffer__consume(l->rb);

		n = m < 0 ? m : n + m;
	}
	return n;
}

int nl_loader_drain(struct nl_loader *l)
{
	return ring_buffer__consume(l->rb);
}

int nl_loader_stats(struct nl_loader *l, uint64_t out[NL_STAT_MAX])
{
	uint64_t *vals = calloc((size_t)l->ncpus, sizeof(*vals));
	int fd = bpf_map__fd(l->skel->maps.stats);

	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < NL_STAT_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < l->ncpus; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

bool nl_loader_perf_links(const struct nl_loader *l)
{
	return l && !l->multi;
}

int nl_loader_links(const struct nl_loader *l)
{
	int n = 0;

	for (int i = 0; i < l->ntargets; i++)
		for (int j = 0; j < l->targets[i].nlibs; j++)
			n += l->targets[i].libs[j].nlinks;
	return n;
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
