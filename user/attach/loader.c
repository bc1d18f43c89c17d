// SPDX-License-Identifier: MIT
/* The BPF side's lifecycle: the skeleton, the ring buffer, the counters. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach/loader_int.h"
#include "attach/umulti.h"
#include "nanlog.skel.h"
#include "proc/policy.h"
#include "record/decode.h"

static struct nl_loader_cb *g_log_cb; /* libbpf's print hook has no context */

void nl_attach_log(const struct nl_loader *l, int level, const char *fmt, ...)
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

int nl_attach_deliver(struct nl_loader *l, const void *data, size_t size)
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
		return nl_attach_deliver(l, data, size);
	return nl_attach_deliver(l, &rec, sizeof(rec));
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
		nl_attach_log(l, 1, "cannot tell the PID namespace (%s): taking the kernel's ids",
			      strerror(errno));
		return;
	}
	if (st.st_ino == NL_PID_INIT_INO)
		return;
	l->skel->rodata->pidns_dev = (__u64)st.st_dev;
	l->skel->rodata->pidns_ino = (__u64)st.st_ino;
	nl_attach_log(l, 1, "in PID namespace %llu: records carry its ids", (unsigned long long)st.st_ino);
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
		nl_attach_log(l, 0, "cannot open the BPF object: %s", strerror(-err));
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
	nl_attach_log(l, 1, "probes: %s", l->multi ? "uprobe_multi links (one per library and direction)" :
		      "one perf link per symbol (kernel before 6.6: slower attach and detach)");
	err = nanlog_bpf__load(l->skel);
	if (err) {
		nl_attach_log(l, 0, "cannot load the BPF programs: %s%s", strerror(-err),
			      err == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		goto fail;
	}
	l->rb = ring_buffer__new(bpf_map__fd(l->skel->maps.events), on_sample, l, NULL);
	if (!l->rb) {
		err = -errno;
		nl_attach_log(l, 0, "cannot set up the ring buffer: %s", strerror(-err));
		goto fail;
	}
	*out = l;
	return 0;
fail:
	nl_loader_close(l);
	return err;
}

void nl_loader_close(struct nl_loader *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->ntargets; i++)
		nl_target_detach(&l->targets[i]);
	free(l->targets);
	ring_buffer__free(l->rb);
	nanlog_bpf__destroy(l->skel);
	if (g_log_cb == &l->cb)
		g_log_cb = NULL;
	free(l);
}

/*
 * The BPF side wakes the reader only when the ring is a quarter full
 * (bpf/nanlog.bpf.c wake_flags()), so the ring is read at every poll, woken or not:
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
