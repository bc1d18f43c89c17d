/* SPDX-License-Identifier: MIT */
/*
 * Records shared by the BPF programs and user space. Only fixed-width types
 * and fixed arrays; every record starts with a __u32 type tag. User space
 * checks the size it is handed against sizeof and _Static_asserts the layout.
 */
#ifndef NANLOG_REC_H
#define NANLOG_REC_H

#include "nanlog_apis.h"

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define NL_REC_CALL 1

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
	__u64 ret_ns;    /* CLOCK_MONOTONIC at return, 0 without return probe */
	__s64 rc;        /* return value (hipError_t / ncclResult_t) */
	__u64 out;       /* dereferenced out-parameter (handle, or float bits of ms) */
	__u64 args[NL_NARGS]; /* R0..R5, S1..S8 as in nanlog_apis.h */
};

/*
 * args[NL_ARG_LOST_BEFORE] of every record: how many records this CPU lost
 * (ring buffer full, stash full) since its previous record. It puts a loss
 * at its place in the stream, so that the batches it can affect are known
 * exactly; the per-CPU counters give the totals. Table slots never reach it.
 */
#define NL_ARG_LOST_BEFORE 15

/* Value flags of the targets map. */
#define NL_TGT_TRACE 0x1 /* trace this tgid */
#define NL_TGT_NORET 0x2 /* no return probes on this target: emit at entry, no nesting */

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
	__u8 pad[3];
};

#endif /* NANLOG_REC_H */
