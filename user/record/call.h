/* SPDX-License-Identifier: MIT */
/*
 * A decoded HIP/RCCL call: what the raw writer prints and the pairing engine
 * consumes. Pure C, no libbpf: unit tests build it without root.
 */
#ifndef NANLOG_CALL_H
#define NANLOG_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nanlog_apis.h"

/* Which optional fields of struct nl_call are present (bit per field). */
enum nl_field {
	NL_F_STREAM = 1u << 0,
	NL_F_EVENT = 1u << 1,
	NL_F_EVENT2 = 1u << 2, /* stop event (hipExtLaunchKernel, hipEventElapsedTime) */
	NL_F_DST = 1u << 3,
	NL_F_SRC = 1u << 4,
	NL_F_BYTES = 1u << 5,
	NL_F_KIND = 1u << 6,
	NL_F_FLAGS = 1u << 7,
	NL_F_PRIO = 1u << 8,
	NL_F_FN = 1u << 9,
	NL_F_PEER = 1u << 10,
	NL_F_COUNT = 1u << 11,
	NL_F_RC = 1u << 12,    /* return probe ran: rc and ret_ns valid */
	NL_F_HANDLE = 1u << 13, /* created stream/event handle (out param, rc == 0) */
	NL_F_MS = 1u << 14,    /* elapsed milliseconds (out param, rc == 0) */
	NL_F_COUNTED = 1u << 15, /* a launch counted in the kernel, repeated from its run's
				  * first (user/runs.h): its time is the run's last launch */
	NL_F_RUN_END = 1u << 16, /* not a call: only the end of a counted run (NL_REC_RUN) */
};

struct nl_call {
	uint32_t pid;
	uint32_t tid;
	uint16_t api;       /* enum nl_api_id */
	uint8_t kind;       /* enum nl_kind, from the table */
	uint8_t coll_depth; /* > 0: issued by RCCL inside a collective */
	uint32_t fields;    /* enum nl_field bits */
	uint64_t ts_ns;     /* CLOCK_MONOTONIC at entry */
	uint64_t ret_ns;    /* at return (NL_F_RC) */
	int64_t rc;
	uint64_t stream, event, event2, dst, src, bytes;
	uint64_t handle;    /* NL_F_HANDLE: the created stream or event */
	int64_t prio;
	uint32_t kindarg;   /* hipMemcpyKind */
	uint32_t flags;
	int32_t peer;
	uint64_t count;
	uint64_t fn;
	double ms;
	uint64_t lost_before; /* records lost on this CPU just before this one */
	uint64_t run_token;   /* this launch starts the counted run with this token */
	uint64_t flush_token; /* a counted run ended right before this call: its token, */
	uint64_t flush_count; /* the launches counted after its first, */
	uint64_t flush_ts;    /* and the time of the last of them */
	bool flush_copy;      /* that end is a copy (NL_RUN_CLOSING): only its run's first end counts */
};

struct nl_api_info {
	const char *name;
	const char *alt;
	int lib;
	int kind;
	unsigned flags;
	int nstack;
	int8_t slot_stream, slot_event, slot_event2, slot_dst, slot_src, slot_bytes,
		slot_kind, fixed_kind, slot_flags, slot_prio, slot_fn, slot_peer,
		slot_count, slot_out, out_size;
	int nargs;      /* argument slots its ring records carry (nanlog_rec.h, struct nl_wire) */
	bool countable; /* its launches may come as counted runs (nanlog_rec.h) */
};

extern const struct nl_api_info nl_api_info[NL_API_COUNT];

/* The name of an API id, or NULL when out of range. */
const char *nl_api_name(unsigned api);
/* Look an API up by its symbol name (unversioned); -1 when unknown. */
int nl_api_by_name(const char *name);
/* Human name of a library index ("libamdhip64", "librccl"). */
const char *nl_lib_name(int lib);

/* A call of this kind enqueues work on its stream (not a record or a wait). */
static inline bool nl_kind_is_work(int kind)
{
	switch (kind) {
	case NL_K_COPY:
	case NL_K_COPY_SYNC:
	case NL_K_MEMSET:
	case NL_K_LAUNCH:
	case NL_K_GRAPH:
	case NL_K_COLL:
	case NL_K_P2P:
		return true;
	default:
		return false;
	}
}

/*
 * The time up to which a record's lost_before may reach: a record with a
 * return probe goes into the ring at return, stamped with its entry, so
 * the records its CPU lost before it may have been made up to its return.
 */
static inline uint64_t nl_call_loss_ts(const struct nl_call *c)
{
	return (c->fields & NL_F_RC) && c->ret_ns > c->ts_ns ? c->ret_ns : c->ts_ns;
}

#endif /* NANLOG_CALL_H */
