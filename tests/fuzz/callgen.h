/* SPDX-License-Identifier: MIT */
/*
 * 8-byte call ops -> ring-buffer records, shared by fuzz_engine.c and the
 * seed generator (gen/gen_seeds.c), so that seeds and harness agree.
 *
 * An op below 0xf0 is a call of api op[0] % NL_API_COUNT:
 *   op[1]  bits 0-1 pid (pool of 3), 2-3 thread, 4 inside a collective,
 *          5-7 return: 0 rc 0, 1 rc 600 (hipErrorNotReady), 2 rc 1,
 *          3 rc 0 without the out parameter, 7 no return probe
 *   op[2]  bits 0-2 stream, 3-5 event (pools of 8)
 *   op[3]  bits 0-2 created handle, 3-4 kernel function, 5-7 second event
 *   op[4]  time step: < 0xf0 microseconds, else (op[4] - 0xef) seconds
 *   op[5]  a return-probe call's entry is op[5] us before its return;
 *          hipEventElapsedTime's float bits (op[5] in each byte)
 *   op[6]  low byte of the other arguments; priority; 0xff: stack slots unread
 *   op[7]  high byte of the other arguments; hipMemcpyKind op[7] % 5; flags op[7] >> 6
 */
#ifndef NANLOG_FUZZ_CALLGEN_H
#define NANLOG_FUZZ_CALLGEN_H

#include <stdint.h>
#include <string.h>

#include "record/call.h"
#include "nanlog_rec.h"

#define CG_OP 8
#define CG_NPIDS 3

static const uint32_t cg_pids[CG_NPIDS] = { 4000, 4001, 4002 };
static const uint32_t cg_tids[4] = { 0, 1, 7, 8 }; /* added to the pid: main thread first */
/* the null stream, hipStreamLegacy, hipStreamPerThread, then created streams */
static const uint64_t cg_streams[8] = { 0x0, 0x1, 0x2, 0x7f0000001000, 0x7f0000001100,
					0x7f0000001200, 0x7f0000001300, 0x7f0000001400 };
static const uint64_t cg_events[8] = { 0x7e0000002000, 0x7e0000002100, 0x7e0000002200,
				       0x7e0000002300, 0x7e0000002400, 0x7e0000002500,
				       0x7e0000002600, 0x0 };
static const uint64_t cg_fns[4] = { 0x401000, 0x401100, 0x401200, 0x401300 };

/* The record of a call op; *now is the clock, moved on by the op's step. */
static inline void cg_record(const uint8_t *op, uint64_t *now, struct nl_rec_call *rec)
{
	const int api = op[0] % NL_API_COUNT;
	const struct nl_api_info *a = &nl_api_info[api];
	const uint8_t ret = op[1] >> 5;

	memset(rec, 0, sizeof(*rec));
	rec->type = NL_REC_CALL;
	rec->api = (__u16)api;
	rec->pid = cg_pids[op[1] % CG_NPIDS];
	rec->tid = rec->pid + cg_tids[(op[1] >> 2) & 3];
	rec->coll_depth = (op[1] >> 4) & 1;
	*now += op[4] < 0xf0 ? op[4] * 1000ull : (op[4] - 0xefull) * 1000000000ull;
	rec->ts_ns = *now;
	/* records of return-probe calls come at return, stamped with the entry */
	if ((a->flags & NL_AF_RET) && ret != 7) {
		rec->flags |= NL_RF_RET;
		rec->ret_ns = *now;
		rec->ts_ns = *now - (*now > op[5] * 1000ull ? op[5] * 1000ull : 0);
		rec->rc = ret == 1 ? 600 : ret == 2 ? 1 : 0;
		if (a->slot_out != NL_NA && ret != 3)
			rec->flags |= NL_RF_OUT;
	}
	if (op[6] == 0xff)
		rec->flags |= NL_RF_STACK_ERR;
	if (a->kind == NL_K_EVENT_CREATE)
		rec->out = cg_events[op[3] & 7];
	else if (a->kind == NL_K_STREAM_CREATE)
		rec->out = cg_streams[op[3] & 7];
	else if (a->kind == NL_K_EVENT_ELAPSED)
		rec->out = op[5] * 0x01010101u; /* float bits: NaN and infinities too */
	for (int i = 0; i < NL_NARGS; i++)
		rec->args[i] = (uint64_t)op[7] << 8 | op[6]; /* bytes, counts, peers */
#define CG_ARG(slot, v)                                   \
	do {                                              \
		if ((slot) >= 0 && (slot) < NL_NARGS)     \
			rec->args[(slot)] = (v);          \
	} while (0)
	CG_ARG(a->slot_stream, cg_streams[op[2] & 7]);
	CG_ARG(a->slot_event, cg_events[(op[2] >> 3) & 7]);
	CG_ARG(a->slot_event2, cg_events[op[3] >> 5]);
	CG_ARG(a->slot_kind, op[7] % 5u);
	CG_ARG(a->slot_flags, op[7] >> 6);
	CG_ARG(a->slot_prio, (uint64_t)(int64_t)(int8_t)op[6]);
	CG_ARG(a->slot_fn, cg_fns[(op[3] >> 3) & 3]);
#undef CG_ARG
}

#endif
