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
			  .stream = NL_API_COUNTABLE(kind, flags_, st, ev, ev2) ? (st) : NL_NA, \
			  .nargs = NL_API_NARGS(st, ev, ev2, dst, src, by, ka, af, pr, fn, peer,   \
						cnt, out_) },
	NL_API_TABLE(NL_X_DESC)
#undef NL_X_DESC
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* resized by the loader (--ringbuf-size) */
} events SEC(".maps");

/*
 * The tool's PID namespace when it is not the initial one (a sidecar sharing
 * its pod's namespace): records then carry the ids the tool, and its user,
 * see. Set by the loader; 0 leaves the namespace code out of the programs.
 */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/* The processes being traced, by the slot in the attach cookie; the loader fills it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NL_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct nl_target);
} targets SEC(".maps");

/*
 * Per-thread state, in task storage: no hash lookup on the hot path, and it
 * goes away with the thread. depth[] counts the open export calls per
 * library (nested calls are folded into the outer one); stash[] holds the
 * entry record of a call that waits for its return probe, one slot per
 * nesting level (the total depth when the call began). run_* say which
 * counted run the thread started last (nanlog_rec.h). ns_id: the thread's
 * ids in the tool's PID namespace, once read (thread_ids()). rec is where an
 * entry-only record is written before it is copied to the ring at its
 * compact size: the thread's own, so a probe preempted on this CPU cannot
 * have it overwritten, and warm in the cache of the thread's CPU.
 */
#define NL_STASH_LEVELS 8 /* a power of two; deeper calls are lost (NL_STAT_LOST_STASH) */

struct tstate {
	__u8 depth[NL_NLIBS];
	__u8 seq_n; /* launches in the thread's row so far, 2 at most (nanlog_rec.h) */
	__u8 pad[5];
	__u64 run_token, run_stream, run_api;
	__u64 seq_fn[NL_SEQ_STARTS]; /* kernels that began its last rows, newest first */
	__u32 seq_last[NL_SEQ_STARTS]; /* seq_nl when each was last launched */
	__u32 seq_nl; /* the thread's launches */
	__u64 seq_stream; /* the stream of the row's last launch */
	__u64 ns_id;
	struct nl_wire rec;
	struct nl_wire stash[NL_STASH_LEVELS];
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

/*
 * Records lost and not told yet (NL_ARG_LOST_BEFORE), on any CPU: the next
 * record to go out, from whichever CPU, tells them and takes them (xchg).
 * A count per CPU was told only by that CPU's next record, which may come
 * seconds later, after records of other CPUs that the lost ones preceded:
 * the engine judged batches the loss had touched before it heard of it.
 * The word is read before it is taken, so it stays shared in the caches
 * while nothing is lost.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pending_lost SEC(".maps");

#define VOLATILE_READ(x) (*(volatile __typeof__(x) *)&(x))

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		(*v)++;
}

/* One more record lost: counted, and told in the next record to go out. */
static __always_inline void lost(__u32 why, __u64 *pend)
{
	stat_inc(why);
	if (pend)
		__sync_fetch_and_add(pend, 1);
}

/* When this CPU last forced a wakeup of the reader (wake_flags()). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} woke SEC(".maps");

#define NL_WAKE_GAP_NS 1000000 /* at most one forced wakeup a millisecond per CPU */

/*
 * Ring-buffer output without a wakeup per record: user space reads the ring
 * every poll period (50 ms) anyway. Each wakeup is an irq_work on the probed
 * thread's CPU (an interrupt the CPU sends itself) and a context switch for
 * the reader, which on a VM costs more than the rest of the program. The
 * reader is woken when the ring is a quarter full, so a burst cannot fill it
 * between two polls; and then at most once a millisecond from each CPU: a
 * reader that is late (a busy node, a sidecar at its CPU limit) leaves the
 * ring above a quarter until it drains it, and a wakeup for every record
 * sent meanwhile cost the job 7.8 us per call of the microbenchmark instead
 * of 2.3 (docs/performance.md).
 */
static __always_inline __u64 wake_flags(void)
{
	__u32 zero = 0;
	__u64 *last, now;

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) <
	    bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4)
		return BPF_RB_NO_WAKEUP;
	last = bpf_map_lookup_elem(&woke, &zero);
	if (!last)
		return BPF_RB_FORCE_WAKEUP;
	now = bpf_ktime_get_ns();
	if (now - *last < NL_WAKE_GAP_NS)
		return BPF_RB_NO_WAKEUP;
	*last = now;
	return BPF_RB_FORCE_WAKEUP;
}

static __always_inline __u64 *pending(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&pending_lost, &zero);
}

/*
 * The record goes out at its compact size (nanlog_rec.h, struct nl_wire):
 * its argument slots, the three words when NL_WW_TRIPLE, and this CPU's
 * losses since its previous record, when there are any.
 */
static __always_inline void send(struct nl_wire *r, __u64 *pend)
{
	__u32 n = r->nargs & (NL_NARGS - 1);
	__u64 told = 0;

	if (r->words & NL_WW_TRIPLE)
		n += 3;
	if (pend && VOLATILE_READ(*pend))
		told = __sync_lock_test_and_set(pend, 0);
	if (told) {
		r->w[n & (NL_WIRE_WORDS - 1)] = told;
		r->words |= NL_WW_LOST;
		n++;
	}
	n &= NL_WIRE_WORDS - 1;
	if (bpf_ringbuf_output(&events, r, NL_WIRE_HEAD + 8 * n, wake_flags())) {
		/* not told after all: for the next record, with this one */
		if (told && pend)
			__sync_fetch_and_add(pend, told);
		lost(NL_STAT_LOST_RINGBUF, pend);
	}
}

/* The three words after the argument slots (NL_WW_TRIPLE). */
static __always_inline void put_triple(struct nl_wire *r, __u64 a, __u64 b, __u64 c)
{
	__u32 n = r->nargs & (NL_NARGS - 1);

	r->w[n] = a;
	r->w[n + 1] = b;
	r->w[n + 2] = c;
	r->words |= NL_WW_TRIPLE;
}

static __always_inline __u32 total_depth(const struct tstate *t)
{
	return (__u32)t->depth[NL_LIB_HIP] + t->depth[NL_LIB_RCCL];
}

/*
 * Everything an entry probe knows, written to r: every byte that goes out is
 * set (the argument slots up to d->nargs; the table names no stack slot past
 * those read, test_decode checks).
 */
static __always_inline void fill_entry(struct nl_wire *r, struct pt_regs *ctx,
				       const struct nl_api_desc *d, __u64 api, __u64 id,
				       __u8 coll_depth)
{
	__u8 flags = 0;

	r->type = NL_WIRE_CALL;
	r->api = api;
	r->coll_depth = coll_depth;
	r->nargs = d->nargs;
	r->words = 0;
	r->pad = 0;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->ts_ns = bpf_ktime_get_ns();
	r->w[0] = PT_REGS_PARM1(ctx);
	r->w[1] = PT_REGS_PARM2(ctx);
	r->w[2] = PT_REGS_PARM3(ctx);
	r->w[3] = PT_REGS_PARM4(ctx);
	r->w[4] = PT_REGS_PARM5(ctx);
	r->w[5] = ctx->r9; /* PT_REGS_PARM6 is missing from libbpf 1.1 */
	if (d->nstack) {
		__u32 n = d->nstack > NL_MAX_STACK ? NL_MAX_STACK : d->nstack;

		/* [rsp] is the return address; stack arguments start at [rsp+8] */
		if (bpf_probe_read_user(&r->w[NL_S1], n * sizeof(__u64),
					(void *)(PT_REGS_SP(ctx) + 8)))
			flags |= NL_RF_STACK_ERR;
	}
	if (d->flags & NL_AF_CFG_STREAM) {
		/* the stream lives in the launch configuration, not in a register */
		__builtin_memset(&r->w[NL_S1], 0, (NL_D0 - NL_S1) * sizeof(__u64));
		if (bpf_probe_read_user(&r->w[NL_D0], sizeof(__u64),
					(void *)(r->w[0] + NL_CFG_STREAM_OFFSET)))
			flags |= NL_RF_STACK_ERR;
	}
	r->flags = flags;
}

/* What the caller of end_run must do once its record is sent. */
enum run_end {
	RUN_ENDED,   /* nothing: no run is left open, or `next` is open */
	RUN_HELD,    /* release the word (run_release): this call is ending its run */
	RUN_CLOSING, /* nothing, but `next` is not open: another call is ending the run */
};

/*
 * Ends the process's open counted run and opens `next` (0: none), for a
 * call about to send a record (nanlog_rec.h, counted runs); *flush and
 * *flush_ts: what that record must carry, 0 when no launch was counted in
 * the run. A run with nothing counted is swapped for `next` at once: no
 * record has to tell its end. One with launches counted is marked closing,
 * and the word is released (cleared, or `next` opened) only once the record
 * telling its end is in the ring (RUN_HELD); a run another call is closing
 * is copied into this record, which opens nothing (RUN_CLOSING). The plain
 * read first keeps the atomics off the common path (no run open).
 */
static __always_inline enum run_end end_run(struct nl_target *tgt, __u64 next, __u64 *flush,
					    __u64 *flush_ts)
{
	__u64 w = VOLATILE_READ(tgt->run);

	*flush = 0;
	*flush_ts = 0;
	if (!w && !next)
		return RUN_ENDED;
	if (!(w & NL_RUN_CLOSING)) {
		if (!NL_RUN_COUNT(w) && __sync_val_compare_and_swap(&tgt->run, w, next) == w)
			return RUN_ENDED;
		/* launches counted (or one just added): ours to end, unless another call is */
		w = __sync_fetch_and_or(&tgt->run, NL_RUN_CLOSING);
	}
	/* a closing word stays as it is until its closer releases it: no atomic needed */
	if (NL_RUN_COUNT(w)) {
		*flush = w;
		*flush_ts = VOLATILE_READ(tgt->run_ts);
	}
	return (w & NL_RUN_CLOSING) ? RUN_CLOSING : RUN_HELD;
}

/* After a RUN_HELD end_run, once the record telling the run's end is sent. */
static __always_inline void run_release(struct nl_target *tgt, __u64 next)
{
	__sync_lock_test_and_set(&tgt->run, next);
}

/*
 * An entry-only record, written in the thread's state t and sent. run: the
 * counted run this launch starts (0: none), whose stream t takes from the
 * record; flush, flush_ts: the run this record ends (0: none).
 */
static __always_inline void emit_entry(struct pt_regs *ctx, const struct nl_api_desc *d,
				       __u64 api, __u64 id, __u8 coll_depth, __u64 *pend,
				       __u64 run, __u64 flush, __u64 flush_ts, struct tstate *t)
{
	struct nl_wire *r = &t->rec;
	__u32 slot;

	fill_entry(r, ctx, d, api, id, coll_depth);
	if (run || flush)
		put_triple(r, run, flush, flush_ts);
	if (run && !(r->flags & NL_RF_STACK_ERR)) {
		slot = d->stream;
		barrier_var(slot);
		t->run_token = NL_RUN_TOKEN(run);
		t->run_stream = r->w[slot & (NL_NARGS - 1)];
		t->run_api = api;
	}
	send(r, pend);
}

/*
 * The thread's process and thread ids as the tool numbers them, process in
 * the upper half (bpf_get_current_pid_tgid's layout); false when the hit is
 * not the target's process. The links are made for one process each, so the
 * kernel has filtered the hit already: this checks it once more. In a PID
 * namespace of the tool's own, the ids there are read at the thread's first
 * hit and kept in its state. The helper answers only for a thread whose own
 * namespace is the tool's: a thread of a process in a namespace below it
 * keeps its kernel-wide thread id (the process id is the target's, from its
 * entry).
 */
static __always_inline bool thread_ids(const struct nl_target *tgt, struct tstate *t, __u64 *id)
{
	struct bpf_pidns_info ns;

	if (!pidns_ino) {
		*id = bpf_get_current_pid_tgid();
		return *id >> 32 == tgt->pid;
	}
	if (!t->ns_id) {
		if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)) == 0)
			t->ns_id = ((__u64)ns.tgid << 32) | ns.pid;
		else
			t->ns_id = ((__u64)tgt->pid << 32) | (__u32)bpf_get_current_pid_tgid();
	}
	*id = t->ns_id;
	return *id >> 32 == tgt->pid;
}

/*
 * The API a probe hit is for and its process's entry (*tgt), both from the
 * attach cookie; NULL when the process is no longer traced (or the cookie is
 * out of range).
 */
static __always_inline const struct nl_api_desc *hit_api(struct pt_regs *ctx, __u64 *api,
							 struct nl_target **tgt)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = NL_COOKIE_SLOT(cookie);

	*tgt = bpf_map_lookup_elem(&targets, &slot);
	if (!*tgt || !((*tgt)->flags & NL_TGT_TRACE))
		return NULL;
	*api = NL_COOKIE_API(cookie);
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
 * goes out as a record. Its stream ends the thread's row of launches where
 * it changes (step starts stay named). While records lost are not
 * told, nothing is counted: the launch goes out and tells the loss, which
 * the engine must hear of before the batches it touches are judged.
 */
static __always_inline void count_launch(struct pt_regs *ctx, const struct nl_api_desc *d,
					 __u64 api, __u64 id, struct nl_target *tgt,
					 struct tstate *t, __u64 *pend)
{
	__u64 stream = 0, old, token, run, flush, flush_ts, fn = PT_REGS_PARM1(ctx);
	bool in, named;
	enum run_end how;
	int at, sr;

	/* Step starts stay named (nanlog_rec.h): a row's first two launches,
	 * and a kernel that began one of the thread's last rows, launched
	 * again but not right after itself. They are kept newest first: one
	 * met again moves to the front. A launch on another stream than the
	 * row's last begins a row. */
	sr = launch_stream(ctx, d->stream, &stream);
	if (!sr) {
		if (t->seq_n && stream != t->seq_stream)
			t->seq_n = 0;
		t->seq_stream = stream;
	}
	for (at = 0; at < NL_SEQ_STARTS && t->seq_fn[at] != fn; at++)
		;
	in = at < NL_SEQ_STARTS && t->seq_nl - t->seq_last[at & (NL_SEQ_STARTS - 1)] > 1;
	named = in || t->seq_n < 2;
	if (at < NL_SEQ_STARTS || !t->seq_n) {
		for (int i = NL_SEQ_STARTS - 1; i > 0; i--) {
			if (i <= at) {
				t->seq_fn[i] = t->seq_fn[i - 1];
				t->seq_last[i] = t->seq_last[i - 1];
			}
		}
		t->seq_fn[0] = fn;
		t->seq_last[0] = t->seq_nl;
	}
	t->seq_nl++;
	t->seq_n = in || !t->seq_n ? 1 : 2;
	old = VOLATILE_READ(tgt->run);
	if (!named && t->run_token && (!pend || !VOLATILE_READ(*pend)) && !(old & NL_RUN_CLOSING) &&
	    NL_RUN_TOKEN(old) == t->run_token && t->run_api == api &&
	    NL_RUN_COUNT(old) < NL_RUN_COUNT_MAX && !sr && stream == t->run_stream) {
		/*
		 * The time first: a call ending the run right after the add
		 * reads it. If the add fails, it is the time of this launch,
		 * which then goes out after that call's record.
		 */
		tgt->run_ts = bpf_ktime_get_ns();
		if (__sync_val_compare_and_swap(&tgt->run, old, old + 1) == old)
			return;
	}
	/* A new run; opening it ends the one open before, whoever owned it. */
	token = (__sync_fetch_and_add(&tgt->next_token, 1) + 1) & NL_RUN_TOKEN_MASK;
	if (!token)
		token = 1;
	t->run_token = 0; /* until this launch's record says its stream */
	run = NL_RUN_WORD(token, 0);
	how = end_run(tgt, run, &flush, &flush_ts);
	if (how == RUN_CLOSING)
		run = 0; /* another call is ending the open run: this launch starts none */
	emit_entry(ctx, d, api, id, 0, pend, run, flush, flush_ts, t);
	if (how == RUN_HELD)
		run_release(tgt, run);
}

/* A record of only the end of a counted run, for a call that is sent later. */
static __always_inline void emit_run_end(struct tstate *t, __u64 id, __u64 *pend, __u64 flush,
					 __u64 flush_ts)
{
	struct nl_wire *r = &t->rec;

	__builtin_memset(r, 0, NL_WIRE_HEAD);
	r->type = NL_WIRE_RUN;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->ts_ns = bpf_ktime_get_ns();
	put_triple(r, 0, flush, flush_ts);
	send(r, pend);
}

SEC("uprobe")
int nl_entry(struct pt_regs *ctx)
{
	__u64 id;
	const struct nl_api_desc *d;
	struct nl_target *tgt;
	__u64 api, flush, flush_ts, *pend;
	struct tstate *t;
	__u32 lib, level;
	bool noret, countable;
	enum run_end how;

	d = hit_api(ctx, &api, &tgt);
	if (!d)
		return 0;
	lib = d->lib & (NL_NLIBS - 1); /* a mask the verifier can see; NL_NLIBS is a power of two */
	/* Without return probes nothing closes a nesting level: report every call. */
	noret = tgt->flags & NL_TGT_NORET;
	countable = d->stream <= NL_S8 && !(tgt->flags & NL_TGT_EVERY_LAUNCH);

	/* Every call needs the thread's state: its record is written there. */
	t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		lost(NL_STAT_LOST_STASH, pending()); /* no memory for the thread's state */
		return 0;
	}
	if (!thread_ids(tgt, t, &id))
		return 0;
	if (!noret && t->depth[lib] > 0) {
		/* an export called by another export of the same library */
		if (d->flags & NL_AF_NESTS)
			t->depth[lib]++;
		stat_inc(NL_STAT_NESTED);
		return 0;
	}

	pend = pending();
	/* Launches RCCL makes inside a collective stand for it (engine_ops.c): never counted. */
	if (countable && (noret || !t->depth[NL_LIB_RCCL])) {
		count_launch(ctx, d, api, id, tgt, t, pend);
		return 0;
	}

	t->seq_n = 0; /* any other call of the thread ends its row of launches */
	how = end_run(tgt, 0, &flush, &flush_ts);
	if (noret || !(d->flags & NL_AF_RET)) {
		emit_entry(ctx, d, api, id, noret ? 0 : t->depth[NL_LIB_RCCL], pend, 0, flush,
			   flush_ts, t);
		if (how == RUN_HELD)
			run_release(tgt, 0);
	} else {
		/* The record waits in the stash for the return probe; the run's end cannot. */
		if (flush)
			emit_run_end(t, id, pend, flush, flush_ts);
		if (how == RUN_HELD)
			run_release(tgt, 0);
		level = total_depth(t);
		if (level >= NL_STASH_LEVELS)
			lost(NL_STAT_LOST_STASH, pend);
		else
			fill_entry(&t->stash[level & (NL_STASH_LEVELS - 1)], ctx, d, api, id,
				   t->depth[NL_LIB_RCCL]);
	}
	if (!noret && (d->flags & NL_AF_NESTS))
		t->depth[lib]++;
	return 0;
}

SEC("uretprobe")
int nl_return(struct pt_regs *ctx)
{
	__u64 id;
	const struct nl_api_desc *d;
	struct nl_target *tgt;
	struct nl_wire *rec;
	struct tstate *t;
	__u32 lib, level;
	__u64 api, ret_ns, out = 0;
	__s64 rc;

	d = hit_api(ctx, &api, &tgt);
	if (!d)
		return 0;
	lib = d->lib & (NL_NLIBS - 1); /* a mask the verifier can see; NL_NLIBS is a power of two */

	t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, 0);
	if (!t || !thread_ids(tgt, t, &id))
		return 0; /* entry was before attach, or not the target's */
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
	if (rec->type != NL_WIRE_CALL || rec->api != api || rec->tid != (__u32)id)
		return 0; /* entry happened before the probes were attached */

	ret_ns = bpf_ktime_get_ns();
	rc = (__s64)PT_REGS_RC(ctx);
	if (d->lib == NL_LIB_HIP || d->lib == NL_LIB_RCCL)
		rc = (__s32)rc; /* hipError_t and ncclResult_t are C enums */
	rec->flags |= NL_RF_RET;
	if (d->out < NL_NARGS && d->out_size) {
		__u32 slot = d->out;
		__u64 ptr;

		/* keep the mask: clang drops it after the check above, the verifier needs it */
		barrier_var(slot);
		ptr = rec->w[slot & (NL_NARGS - 1)];

		if (d->out_size == 4) {
			__u32 v4 = 0;

			if (!bpf_probe_read_user(&v4, sizeof(v4), (void *)ptr)) {
				out = v4;
				rec->flags |= NL_RF_OUT;
			}
		} else if (!bpf_probe_read_user(&out, sizeof(out), (void *)ptr)) {
			rec->flags |= NL_RF_OUT;
		}
	}
	put_triple(rec, ret_ns, rc, out);
	send(rec, pending());
	rec->type = 0; /* the slot is free */
	return 0;
}
