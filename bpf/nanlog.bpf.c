// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Two generic programs, attached once per probed symbol: the attach cookie is
 * the API id (include/nanlog_apis.h), which says which argument slots to read
 * and whether the call waits for its return probe before it is emitted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "nanlog_rec.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static const struct nl_api_desc apis[NL_API_COUNT] = {
#define NL_X_DESC(id, name, alt, lib_, kind, flags_, nst, st, ev, ev2, dst, src, by, ka, fk, \
		  af, pr, fn, peer, cnt, out_, osz)                                        \
	[NL_API_##id] = { .flags = (flags_), .lib = (lib_), .nstack = (nst), .out = (out_), \
			  .out_size = (osz) },
	NL_API_TABLE(NL_X_DESC)
#undef NL_X_DESC
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* resized by the loader (--ringbuf-size) */
} events SEC(".maps");

/* tgids being traced; the loader fills it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

/*
 * Per-thread state, in task storage: no hash lookup on the hot path, and it
 * goes away with the thread. depth[] counts the open export calls per
 * library (nested calls are folded into the outer one); stash[] holds the
 * entry record of a call that waits for its return probe, one slot per
 * nesting level (the total depth when the call began).
 */
#define NL_STASH_LEVELS 8 /* a power of two; deeper calls are lost (NL_STAT_LOST_STASH) */

struct tstate {
	__u8 depth[NL_NLIBS];
	__u8 pad[6];
	struct nl_rec_call stash[NL_STASH_LEVELS];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tstate);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NL_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Records this CPU lost since its last record went out (NL_ARG_LOST_BEFORE). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pending_lost SEC(".maps");

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		(*v)++;
}

/* One more record lost on this CPU: counted, and told in its next record. */
static __always_inline void lost(__u32 why, __u64 *pend)
{
	stat_inc(why);
	if (pend)
		(*pend)++;
}

/*
 * Ring-buffer output without a wakeup per record: user space reads the ring
 * every poll period (50 ms) anyway. Each wakeup is an irq_work on the probed
 * thread's CPU and a context switch for the reader, which on a VM costs more
 * than the rest of the program; the reader is woken only when the ring is a
 * quarter full, so a burst cannot fill it between two polls.
 */
static __always_inline __u64 wake_flags(void)
{
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >=
	    bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline __u64 *pending(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&pending_lost, &zero);
}

/* A record completed in the stash is copied out. */
static __always_inline void output(struct nl_rec_call *rec)
{
	__u64 *pend = pending();

	rec->args[NL_ARG_LOST_BEFORE] = pend ? *pend : 0;
	if (bpf_ringbuf_output(&events, rec, sizeof(*rec), wake_flags()))
		lost(NL_STAT_LOST_RINGBUF, pend);
	else if (pend)
		*pend = 0;
}

static __always_inline __u32 total_depth(const struct tstate *t)
{
	return t ? (__u32)t->depth[NL_LIB_HIP] + t->depth[NL_LIB_RCCL] : 0;
}

/* Everything an entry probe knows, written to rec; every byte is set. */
static __always_inline void fill_entry(struct nl_rec_call *rec, struct pt_regs *ctx,
				       const struct nl_api_desc *d, __u64 api, __u64 id,
				       __u8 coll_depth)
{
	__u8 flags = 0;

	rec->type = NL_REC_CALL;
	rec->api = api;
	rec->coll_depth = coll_depth;
	rec->pid = id >> 32;
	rec->tid = (__u32)id;
	rec->ts_ns = bpf_ktime_get_ns();
	rec->ret_ns = 0;
	rec->rc = 0;
	rec->out = 0;
	rec->args[0] = PT_REGS_PARM1(ctx);
	rec->args[1] = PT_REGS_PARM2(ctx);
	rec->args[2] = PT_REGS_PARM3(ctx);
	rec->args[3] = PT_REGS_PARM4(ctx);
	rec->args[4] = PT_REGS_PARM5(ctx);
	rec->args[5] = ctx->r9; /* PT_REGS_PARM6 is missing from libbpf 1.1 */
	__builtin_memset(&rec->args[6], 0, (NL_NARGS - 6) * sizeof(__u64));
	if (d->nstack) {
		__u32 n = d->nstack > NL_MAX_STACK ? NL_MAX_STACK : d->nstack;

		/* [rsp] is the return address; stack arguments start at [rsp+8] */
		if (bpf_probe_read_user(&rec->args[6], n * sizeof(__u64),
					(void *)(PT_REGS_SP(ctx) + 8)))
			flags |= NL_RF_STACK_ERR;
	}
	if (d->flags & NL_AF_CFG_STREAM) {
		/* the stream lives in the launch configuration, not in a register */
		if (bpf_probe_read_user(&rec->args[NL_D0], sizeof(__u64),
					(void *)(rec->args[0] + NL_CFG_STREAM_OFFSET)))
			flags |= NL_RF_STACK_ERR;
	}
	rec->flags = flags;
}

/* An entry-only record: reserved in the ring and filled in place. */
static __always_inline void emit_entry(struct pt_regs *ctx, const struct nl_api_desc *d,
				       __u64 api, __u64 id, __u8 coll_depth)
{
	__u64 *pend = pending();
	struct nl_rec_call *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

	if (!rec) {
		lost(NL_STAT_LOST_RINGBUF, pend);
		return;
	}
	fill_entry(rec, ctx, d, api, id, coll_depth);
	rec->args[NL_ARG_LOST_BEFORE] = pend ? *pend : 0;
	if (pend)
		*pend = 0; /* told, in this record */
	bpf_ringbuf_submit(rec, wake_flags());
}

/*
 * The API a probe hit is for, from the attach cookie; NULL when the process
 * is not traced (or the cookie is out of range). *tflags: the target's
 * NL_TGT_* flags.
 */
static __always_inline const struct nl_api_desc *hit_api(struct pt_regs *ctx, __u32 pid,
							 __u64 *api, __u8 *tflags)
{
	__u8 *tgt = bpf_map_lookup_elem(&targets, &pid);

	if (!tgt)
		return NULL;
	*tflags = *tgt;
	*api = bpf_get_attach_cookie(ctx);
	return *api < NL_API_COUNT ? &apis[*api] : NULL;
}

SEC("uprobe")
int nl_entry(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	const struct nl_api_desc *d;
	struct tstate *t;
	__u32 lib, level;
	__u8 tflags;
	__u64 api;

	d = hit_api(ctx, id >> 32, &api, &tflags);
	if (!d)
		return 0;
	lib = d->lib & (NL_NLIBS - 1); /* a mask the verifier can see; NL_NLIBS is a power of two */

	if (tflags & NL_TGT_NORET) {
		/* Without return probes nothing closes a nesting level: report every call. */
		emit_entry(ctx, d, api, id, 0);
		return 0;
	}

	/* Only calls that open a level or wait for their return need state of their own. */
	t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				 (d->flags & (NL_AF_NESTS | NL_AF_RET)) ?
					 BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (d->flags & NL_AF_NESTS) {
		if (!t) {
			lost(NL_STAT_LOST_STASH, pending()); /* no memory for the thread's state */
			return 0;
		}
		if (t->depth[lib] > 0) {
			/* an export called by another export of the same library */
			t->depth[lib]++;
			stat_inc(NL_STAT_NESTED);
			return 0;
		}
	} else if (t && t->depth[lib] > 0) {
		/* a leaf export called by another export of the same library */
		stat_inc(NL_STAT_NESTED);
		return 0;
	}

	if (!(d->flags & NL_AF_RET)) {
		emit_entry(ctx, d, api, id, t ? t->depth[NL_LIB_RCCL] : 0);
	} else {
		/* The record waits in the stash for the return probe. */
		level = total_depth(t);
		if (!t || level >= NL_STASH_LEVELS)
			lost(NL_STAT_LOST_STASH, pending());
		else
			fill_entry(&t->stash[level & (NL_STASH_LEVELS - 1)], ctx, d, api, id,
				   t->depth[NL_LIB_RCCL]);
	}
	if ((d->flags & NL_AF_NESTS) && t)
		t->depth[lib]++;
	return 0;
}

SEC("uretprobe")
int nl_return(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	const struct nl_api_desc *d;
	struct nl_rec_call *rec;
	struct tstate *t;
	__u32 lib, level;
	__u8 tflags;
	__u64 api;

	d = hit_api(ctx, id >> 32, &api, &tflags);
	if (!d)
		return 0;
	lib = d->lib & (NL_NLIBS - 1); /* a mask the verifier can see; NL_NLIBS is a power of two */

	t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, 0);
	if (!t)
		return 0; /* entry was before attach */
	if (d->flags & NL_AF_NESTS) {
		if (t->depth[lib] == 0)
			return 0; /* entry was before attach */
		t->depth[lib]--;
		if (t->depth[lib] > 0)
			return 0; /* nested call: folded into the outer one */
	} else if (t->depth[lib] > 0) {
		return 0; /* folded at entry */
	}
	level = total_depth(t);
	if (level >= NL_STASH_LEVELS)
		return 0;
	rec = &t->stash[level & (NL_STASH_LEVELS - 1)];
	if (rec->type != NL_REC_CALL || rec->api != api || rec->tid != (__u32)id)
		return 0; /* entry happened before the probes were attached */

	rec->ret_ns = bpf_ktime_get_ns();
	rec->rc = (__s64)PT_REGS_RC(ctx);
	if (d->lib == NL_LIB_HIP || d->lib == NL_LIB_RCCL)
		rec->rc = (__s32)rec->rc; /* hipError_t and ncclResult_t are C enums */
	rec->flags |= NL_RF_RET;
	if (d->out < NL_NARGS && d->out_size) {
		__u32 slot = d->out;
		__u64 v = 0, ptr;

		/* keep the mask: clang drops it after the check above, the verifier needs it */
		barrier_var(slot);
		ptr = rec->args[slot & (NL_NARGS - 1)];

		if (d->out_size == 4) {
			__u32 v4 = 0;

			if (!bpf_probe_read_user(&v4, sizeof(v4), (void *)ptr)) {
				v = v4;
				rec->flags |= NL_RF_OUT;
			}
		} else if (!bpf_probe_read_user(&v, sizeof(v), (void *)ptr)) {
			rec->flags |= NL_RF_OUT;
		}
		rec->out = v;
	}
	output(rec);
	rec->type = 0; /* the slot is free */
	return 0;
}
