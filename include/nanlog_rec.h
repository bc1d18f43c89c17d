/* SPDX-License-Identifier: MIT */
/*
 * Records shared by the BPF programs and user space. Only fixed-width types
 * and fixed arrays. A full record (struct nl_rec_call, what user space and
 * recordings hold) starts with a __u32 type tag, and user space checks the
 * size it is handed against sizeof and _Static_asserts the layout; its
 * compact form in the ring (struct nl_wire) starts with a __u8 tag, and its
 * size must be what its head says it carries.
 */
#ifndef NANLOG_REC_H
#define NANLOG_REC_H

#include "nanlog_apis.h"

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define NL_REC_CALL 1 /* one call */
#define NL_REC_RUN 2  /* only the end of a counted run: pid, tid, ts_ns, flush, flush_ts */

/* nl_rec_call.flags */
#define NL_RF_RET 0x1     /* a return probe completed this record: rc, ret_ns, out valid */
#define NL_RF_OUT 0x2     /* the out-parameter was read successfully */
#define NL_RF_STACK_ERR 0x4 /* reading the entry stack slots failed */

struct nl_rec_call {
	__u32 type;      /* NL_REC_CALL */
	__u16 api;       /* enum nl_api_id */
	__u8 flags;      /* NL_RF_* */
	__u8 coll_depth; /* RCCL calls open on this thread when the call began */
	__u32 pid;       /* tgid */
	__u32 tid;
	__u64 ts_ns;     /* CLOCK_MONOTONIC at entry */
	union {
		struct { /* NL_RF_RET: a return probe completed the record */
			__u64 ret_ns; /* CLOCK_MONOTONIC at return */
			__s64 rc;     /* return value (hipError_t / ncclResult_t) */
			__u64 out;    /* dereferenced out-parameter (handle, or float bits of ms) */
		};
		struct { /* without NL_RF_RET: counted launch runs (below) */
			__u64 run;      /* this launch starts a counted run: NL_RUN_WORD(token, 0) */
			__u64 flush;    /* a run ended here: NL_RUN_WORD(its token, launches
					 * counted after its first), | NL_RUN_CLOSING
					 * when a copy (below) */
			__u64 flush_ts; /* CLOCK_MONOTONIC of the last launch counted in it */
		};
	};
	__u64 args[NL_NARGS]; /* R0..R5, S1..S8 as in nanlog_apis.h */
};

/*
 * Counted launch runs. A launch by the thread that made the process's
 * previous probed call, of the same API on the same stream (a kernel after
 * a kernel in a model's forward pass), is not sent: the kernel adds one to
 * the process's run word and keeps its time. The first launch of a run goes
 * out as a record with its token in .run; the next record of the process,
 * from any thread, carries the word in .flush (a call that waits for its
 * return probe sends an NL_REC_RUN first instead), and user space repeats the
 * first launch that many times (user/runs.c). The word packs the token and
 * the count so that one compare-and-swap adds to it: a launch racing another
 * thread's call can only start a new run, never land in another run.
 *
 * Ending a run and putting its end in the ring cannot be one atomic step, so
 * the call that ends a run with launches counted in it first marks the word
 * NL_RUN_CLOSING (an atomic or: nothing can be added to it any more), sends
 * its record, and only then clears the word or opens its own run. Until
 * then every other record of the process, the run owner's next one
 * included, carries a copy of the closing word (its NL_RUN_CLOSING bit says
 * so) and no call opens a run. So each thread's next record, and any record
 * made after it, comes after one record that carries the run's end: the
 * launches are repeated at the first of them, and user space drops the
 * others (docs/architecture.md, "Counted runs and record order").
 */

/*
 * Step starts stay named. A launch is counted only as its thread's third or
 * later in a row (no other call of the thread between, and no launch on
 * another stream: a launch on another stream begins a row), and never when its
 * kernel is one of the last NL_SEQ_STARTS kernels that began such a row on
 * the thread (the kernel right after a wait, a copy, a record), launched
 * again but not right after itself: a step's first kernel launched again
 * with no call between (a dropped wait) goes out with its name, and so does
 * the kernel after it, as the engine needs them to see a step begin again
 * (docs/engine.md, "Tick cadence at compute"). A layer's kernel repeated
 * back to back stays counted. A power of two (BPF masks the index).
 */
#define NL_SEQ_STARTS 4
#define NL_RUN_COUNT_BITS 24
#define NL_RUN_CLOSING (1ull << 63) /* the run is being ended (above) */
#define NL_RUN_COUNT_MAX ((1ull << NL_RUN_COUNT_BITS) - 1)
#define NL_RUN_TOKEN_MASK ((1ull << (63 - NL_RUN_COUNT_BITS)) - 1)
#define NL_RUN_WORD(token, count) (((__u64)(token) << NL_RUN_COUNT_BITS) | (__u64)(count))
#define NL_RUN_TOKEN(word) (((__u64)(word) >> NL_RUN_COUNT_BITS) & NL_RUN_TOKEN_MASK)
#define NL_RUN_COUNT(word) ((__u64)(word) & NL_RUN_COUNT_MAX)

/*
 * What the ring buffer carries: struct nl_rec_call, compacted. Only the
 * argument slots the API table names go out (args[0..nargs), the table's
 * highest named slot and those before it), and the three words of a return
 * or of a counted run and the loss count only when they say something:
 * hipEventRecord's record is 40 bytes and hipLaunchKernel's 88, where every
 * record was 176. Every byte the probed thread writes to the ring costs it
 * time (docs/performance.md). User space expands each record back into a
 * struct nl_rec_call (nl_wire_expand) before anything else sees it, so
 * recordings, replay and the engine keep the full layout. The type tags
 * differ from NL_REC_*: a compact record never passes for a full one.
 */
#define NL_WIRE_CALL 0x81 /* NL_REC_CALL, compact */
#define NL_WIRE_RUN 0x82  /* NL_REC_RUN, compact */

/* nl_wire.words: what follows args[0..nargs), in this order */
#define NL_WW_TRIPLE 0x1 /* three words: ret_ns, rc, out (NL_RF_RET), else run, flush, flush_ts */
#define NL_WW_LOST 0x2   /* one word: args[NL_ARG_LOST_BEFORE] */

#define NL_WIRE_HEAD 24  /* bytes before w[] */
#define NL_WIRE_WORDS 32 /* room in w[]: a power of two, so BPF can mask word indexes */

struct nl_wire {
	__u8 type;       /* NL_WIRE_CALL / NL_WIRE_RUN */
	__u8 flags;      /* NL_RF_* */
	__u8 coll_depth;
	__u8 nargs;      /* argument slots in w[0..nargs) */
	__u16 api;
	__u8 words;      /* NL_WW_* */
	__u8 pad;
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;
	__u64 w[NL_WIRE_WORDS]; /* a record is NL_WIRE_HEAD + 8 * (words used) bytes */
};

/*
 * The targets map is an array of slots, one per traced process; a probe's
 * attach cookie carries the API id (low 16 bits) and its process's slot, so
 * the program finds the process's entry without a lookup by pid. A slot is
 * given back only once the process's links are closed.
 */
#define NL_MAX_TARGETS 4096
#define NL_COOKIE(api, slot) (((__u64)(slot) << 16) | (__u64)(api))
#define NL_COOKIE_API(c) ((__u64)(c) & 0xffff)
#define NL_COOKIE_SLOT(c) ((__u32)((__u64)(c) >> 16))

/* Value of the targets map: one per traced process, by slot. */
struct nl_target {
	__u64 run;        /* the open run: NL_RUN_WORD(token, count) [| NL_RUN_CLOSING], 0 when none */
	__u64 run_ts;     /* time of the last launch counted in it */
	__u64 next_token; /* tokens handed out so far */
	__u32 pid;        /* the process, as the tool numbers it (its PID namespace) */
	__u8 flags;       /* NL_TGT_* */
	__u8 pad[3];
};

/*
 * args[NL_ARG_LOST_BEFORE] of every record: how many records were lost
 * (ring buffer full, stash full), on any CPU, since the last record that
 * told a loss. It puts a loss at its place in the stream, right after the
 * records that went out before it, so that the engine hears of it before it
 * judges a batch the loss touched; the counters give the totals. Table
 * slots never reach it.
 */
#define NL_ARG_LOST_BEFORE 15

/* Value flags of the targets map. */
#define NL_TGT_TRACE 0x1 /* trace this process (0: a free slot, or a process let go) */
#define NL_TGT_NORET 0x2 /* no return probes on this target: emit at entry, no nesting */
#define NL_TGT_EVERY_LAUNCH 0x4 /* no counted launch runs: a record per launch */

/* Per-CPU counters kept by the BPF side (index into the nl_stats map). */
enum nl_stat {
	NL_STAT_LOST_RINGBUF = 0, /* ring buffer full: call record dropped */
	NL_STAT_LOST_STASH,       /* entry stash full or missing at return */
	NL_STAT_NESTED,           /* inner export calls folded into their outer call */
	NL_STAT_MAX
};

/* BPF-side description of one API, built from the table. */
struct nl_api_desc {
	__u8 flags;   /* NL_AF_* */
	__u8 lib;     /* NL_LIB_* */
	__u8 nstack;  /* stack slots to read at entry */
	__u8 out;     /* slot of the out pointer, NL_NA if none */
	__u8 out_size;
	__u8 stream;  /* slot of the stream when launches of this API can be counted, else NL_NA */
	__u8 nargs;   /* argument slots a record carries: the highest slot the table names, plus one */
	__u8 pad;
};

#endif /* NANLOG_REC_H */
