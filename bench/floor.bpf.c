// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor tracer's programs (docs/performance.md), attached where
 * nanlog-bpf attaches its own, entry and return alike; bench/floor.c attaches
 * one pair of the three:
 *
 *   floor_*    return at once: a probed call costs what the kernel's uprobe
 *              machinery costs and nothing more (the floor, b);
 *   capture_*  take the time, the thread and the argument registers (the
 *              return value at a return) into a per-CPU buffer and send
 *              nothing: the least any tool that timestamps calls pays;
 *   ring_*     the same, sent as one record per hit through a BPF ring buffer
 *              without wakeups: the least a ring-buffer tracer pays.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* An entry hit; a return hit fills the first four words (w[0]: the return value). */
struct hit {
	__u64 api, id, ts;
	__u64 w[6];
};

#define HIT_RET_SIZE (4 * sizeof(__u64))

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hit);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* nanlog-bpf's default size; floor.c reads it */
} ring SEC(".maps");

SEC("uprobe")
int floor_entry(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_return(void *ctx)
{
	return 0;
}

static __always_inline void fill_entry(struct hit *h, struct pt_regs *ctx)
{
	h->api = bpf_get_attach_cookie(ctx);
	h->id = bpf_get_current_pid_tgid();
	h->ts = bpf_ktime_get_ns();
	h->w[0] = PT_REGS_PARM1(ctx);
	h->w[1] = PT_REGS_PARM2(ctx);
	h->w[2] = PT_REGS_PARM3(ctx);
	h->w[3] = PT_REGS_PARM4(ctx);
	h->w[4] = PT_REGS_PARM5(ctx);
	h->w[5] = ctx->r9;
}

static __always_inline void fill_return(struct hit *h, struct pt_regs *ctx)
{
	h->api = bpf_get_attach_cookie(ctx);
	h->id = bpf_get_current_pid_tgid();
	h->ts = bpf_ktime_get_ns();
	h->w[0] = PT_REGS_RC(ctx);
}

static __always_inline struct hit *scratch_hit(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

SEC("uprobe")
int capture_entry(struct pt_regs *ctx)
{
	struct hit *h = scratch_hit();

	if (h)
		fill_entry(h, ctx);
	return 0;
}

SEC("uretprobe")
int capture_return(struct pt_regs *ctx)
{
	struct hit *h = scratch_hit();

	if (h)
		fill_return(h, ctx);
	return 0;
}

SEC("uprobe")
int ring_entry(struct pt_regs *ctx)
{
	struct hit *h = bpf_ringbuf_reserve(&ring, sizeof(*h), 0);

	if (h) {
		fill_entry(h, ctx);
		bpf_ringbuf_submit(h, BPF_RB_NO_WAKEUP);
	}
	return 0;
}

SEC("uretprobe")
int ring_return(struct pt_regs *ctx)
{
	struct hit *h = bpf_ringbuf_reserve(&ring, HIT_RET_SIZE, 0);

	if (h) {
		fill_return(h, ctx);
		bpf_ringbuf_submit(h, BPF_RB_NO_WAKEUP);
	}
	return 0;
}
