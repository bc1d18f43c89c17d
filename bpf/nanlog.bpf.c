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
			  .out_size = (osz),                                                \
			  .stream = NL_API_COUNTABLE(kind, flags_, st, ev, ev2) ? (st) : NL_NA },
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
	__type(value, struct nl_target);
} targets SEC(".maps");

/*
 * Per-thread state, in task storage: no hash lookup on the hot path, and it
 * goes away with the thread. depth[] counts the open export calls per
 * library (nested calls are folded into the outer one); stash[] holds the
 * entry record of a call that waits for its return probe, one slot per
 * nesting level (the total depth when the call began). run_* say which
 * counted run the thread started last (nanlog_rec.h).
 */
#define NL_STASH_LEVELS 8 /* a power of two; deeper calls are lost (NL_STAT_LOST_STASH) */

struct tstate {
	__u8 depth[NL_NLIBS];
	__u8 pad[6];
	__u64 run_token, run_stream, run_api;
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
	rec->ret_ns = 0; /* and run, flush, flush_ts: the same words */
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

#define VOLATILE_READ(x) (*(volatile __typeof__(x) *)&(x))

/*
 * Ends the process's open counted run and opens `next` (0: none); *flush
 * and *flush_ts: what the next record must carry, 0 when no launch was
 * counted in the run. Without a run to open, the plain read first keeps the
 * atomic off the common path (no run open).
 */
static __always_inline void end_run(struct nl_target *tgt, __u64 next, __u64 *flush,
				    __u64 *flush_ts)
{
	__u64 old = 0;

	*flush = 0;
	*flush_ts = 0;
	if (next || VOLATILE_READ(tgt->run))
		old = __sync_lock_test_and_set(&tgt->run, next);
	if (NL_RUN_COUNT(old)) {
		*flush = old;
		*flush_ts = VOLATILE_READ(tgt->run_ts);
	}
}

/* A slot in the ring, or NULL with the loss counted. */
static __always_inline struct nl_rec_call *reserve(__u64 *pend)
{
	struct nl_rec_call *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

	if (!rec)
		lost(NL_STAT_LOST_RINGBUF, pend);
	return rec;
}

/* The record goes out, telling the losses of this CPU before it. */
static __always_inline void submit(struct nl_rec_call *rec, __u64 *pend)
{
	rec->args[NL_ARG_LOST_BEFORE] = pend ? *pend : 0;
	if (pend)
		*pend = 0; /* told, in this record */
	bpf_ringbuf_submit(rec, wake_flags());
}

/*
 * An entry-only record: reserved in the ring and filled in place. run: the
 * counted run this launch starts (0: none), whose stream the starting
 * thread's state `starter` takes from the record.
 */
static __always_inline void emit_entry(struct pt_regs *ctx, const struct nl_api_desc *d,
				       __u64 api, __u64 id, __u8 coll_depth, __u64 *pend,
				       __u64 run, __u64 flush, __u64 flush_ts,
				       struct tstate *starter)
{
	struct nl_rec_call *rec = reserve(pend);
	__u32 slot;

	if (!rec)
		return;
	fill_entry(rec, ctx, d, api, id, coll_depth);
	rec->run = run;
	rec->flush = flush;
	rec->flush_ts = flush_ts;
	if (run && starter && !(rec->flags & NL_RF_STACK_ERR)) {
		slot = d->stream;
		barrier_var(slot);
		starter->run_token = NL_RUN_TOKEN(run);
		starter->run_stream = rec->args[slot & (NL_NARGS - 1)];
		starter->run_api = api;
	}
	submit(rec, pend);
}

/*
 * The API a probe hit is for, from the attach cookie; NULL when the process
 * is not traced (or the cookie is out of range). *tgt: the target's entry.
 */
static __always_inline const struct nl_api_desc *hit_api(struct pt_regs *ctx, __u32 pid,
							 __u64 *api, struct nl_target **tgt)
{
	*tgt = bpf_map_lookup_elem(&targets, &pid);
	if (!*tgt)
		return NULL;
	*api = bpf_get_attach_cookie(ctx);
	return *api < NL_API_COUNT ? &apis[*api] : NULL;
}

/* The stream argument of a countable launch, from its register or stack slot. */
static __always_inline int launch_stream(struct pt_regs *ctx, __u32 slot, __u64 *stream)
{
	switch (slot) {
	case NL_R0:
		*stream = PT_REGS_PARM1(ctx);
		return 0;
	case NL_R1:
		*stream = PT_REGS_PARM2(ctx);
		return 0;
	case NL_R2:
		*stream = PT_REGS_PARM3(ctx);
		return 0;
	case NL_R3:
		*stream = PT_REGS_PARM4(ctx);
		return 0;
	case NL_R4:
		*stream = PT_REGS_PARM5(ctx);
		return 0;
	case NL_R5:
		*stream = ctx->r9;
		return 0;
	default:
		/* S1 is [rsp+8] */
		return bpf_probe_read_user(stream, sizeof(*stream),
					   (void *)(PT_REGS_SP(ctx) + 8 * (slot - NL_S1 + 1)));
	}
}

/*
 * A launch that can be counted (nanlog_rec.h, counted runs): added to the
 * open run when that run is this thread's, for the same API and stream, and
 * nothing else happened in the process since; otherwise it starts a run and
 * goes out as a record. The stream is read only when the run could go on:
 * a launch that starts a run takes it from its own record. A CPU that lost
 * records counts nothing until a record of its own has told the loss: the
 * engine must hear of it before the batches it touches are judged.
 */
static __always_inline void count_launch(struct pt_regs *ctx, const struct nl_api_desc *d,
					 __u64 api, __u64 id, struct nl_target *tgt,
					 struct tstate *t, __u64 *pend)
{
	__u64 stream, old, token, flush, flush_ts;

	old = VOLATILE_READ(tgt->run);
	if (t->run_token && (!pend || !*pend) && NL_RUN_TOKEN(old) == t->run_token &&
	    t->run_api == api &&
	    NL_RUN_COUNT(old) < NL_RUN_COUNT_MAX && !launch_stream(ctx, d->stream, &stream) &&
	    stream == t->run_stream &&
	    __sync_val_compare_and_swap(&tgt->run, old, old + 1) == old) {
		tgt->run_ts = bpf_ktime_get_ns();
		return;
	}
	/* A new run; opening it ends the one open before, whoever owned it. */
	token = (__sync_fetch_and_add(&tgt->next_token, 1) + 1) & NL_RUN_TOKEN_MASK;
	if (!token)
		token = 1;
	t->run_token = 0; /* until this launch's record says its stream */
	end_run(tgt, NL_RUN_WORD(token, 0), &flush, &flush_ts);
	emit_entry(ctx, d, api, id, 0, pend, NL_RUN_WORD(token, 0), flush, flush_ts, t);
}

/* A record of only the end of a counted run, for a call that is sent later. */
static __always_inline void emit_run_end(__u64 id, __u64 *pend, __u64 flush, __u64 flush_ts)
{
	struct nl_rec_call *rec = reserve(pend);

	if (!rec)
		return;
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->type = NL_REC_RUN;
	rec->pid = id >> 32;
	rec->tid = (__u32)id;
	rec->ts_ns = bpf_ktime_get_ns();
	rec->flush = flush;
	rec->flush_ts = flush_ts;
	submit(rec, pend);
}

SEC("uprobe")
int nl_entry(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	const struct nl_api_desc *d;
	struct nl_target *tgt;
	__u64 api, flush, flush_ts, *pend;
	struct tstate *t;
	__u32 lib, level;
	bool noret, countable;

	d = hit_api(ctx, id >> 32, &api, &tgt);
	if (!d)
		return 0;
	lib = d->lib & (NL_NLIBS - 1); /* a mask the verifier can see; NL_NLIBS is a power of two */
	/* Without return probes nothing closes a nesting level: report every call. */
	noret = tgt->flags & NL_TGT_NORET;
	countable = d->stream <= NL_S8 && !(tgt->flags & NL_TGT_EVERY_LAUNCH);

	/* Only calls that open a level, wait for their return or may be counted need state. */
	t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				 (countable || (!noret && (d->flags & (NL_AF_NESTS | NL_AF_RET)))) ?
					 BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!noret && (d->flags & NL_AF_NESTS)) {
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
	} else if (!noret && t && t->depth[lib] > 0) {
		/* a leaf export called by another export of the same library */
		stat_inc(NL_STAT_NESTED);
		return 0;
	}

	pend = pending();
	/* Launches RCCL makes inside a collective stand for it (engine_ops.c): never counted. */
	if (countable && t && (noret || !t->depth[NL_LIB_RCCL])) {
		count_launch(ctx, d, api, id, tgt, t, pend);
		return 0;
	}

	end_run(tgt, 0, &flush, &flush_ts);
	if (noret || !(d->flags & NL_AF_RET)) {
		emit_entry(ctx, d, api, id, (!noret && t) ? t->depth[NL_LIB_RCCL] : 0, pend, 0,
			   flush, flush_ts, NULL);
	} else {
		/* The record waits in the stash for the return probe; the run's end cannot. */
		if (flush)
			emit_run_end(id, pend, flush, flush_ts);
		level = total_depth(t);
		if (!t || level >= NL_STASH_LEVELS)
			lost(NL_STAT_LOST_STASH, pend);
		else
			fill_entry(&t->stash[level & (NL_STASH_LEVELS - 1)], ctx, d, api, id,
				   t->depth[NL_LIB_RCCL]);
	}
	if (!noret && (d->flags & NL_AF_NESTS) && t)
		t->depth[lib]++;
	return 0;
}

SEC("uretprobe")
int nl_return(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	const struct nl_api_desc *d;
	struct nl_target *tgt;
	struct nl_rec_call *rec;
	struct tstate *t;
	__u32 lib, level;
	__u64 api;

	d = hit_api(ctx, id >> 32, &api, &tgt);
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
