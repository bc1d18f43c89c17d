// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "record/decode.h"

_Static_assert(sizeof(struct nl_rec_call) == 176, "record layout changed: bump the schema");
_Static_assert(offsetof(struct nl_rec_call, args) == 48, "record layout changed");
_Static_assert(NL_API_COUNT < 65536, "api id must fit __u16");

static int slot_ok(int s)
{
	return s >= 0 && s < NL_NARGS;
}

void nl_decode_rec(const struct nl_rec_call *r, struct nl_call *c)
{
	const struct nl_api_info *a = &nl_api_info[r->api];
	const __u64 *v = r->args;
	/* Stack slots are only valid when the probe could read them. */
	const int stack_ok = !(r->flags & NL_RF_STACK_ERR);

	memset(c, 0, sizeof(*c));
	c->pid = r->pid;
	c->tid = r->tid;
	c->api = r->api;
	c->kind = (uint8_t)a->kind;
	c->coll_depth = r->coll_depth;
	c->ts_ns = r->ts_ns;
	c->lost_before = r->args[NL_ARG_LOST_BEFORE];
	if (!(r->flags & NL_RF_RET)) { /* the words of a return carry a counted run's instead */
		c->run_token = NL_RUN_TOKEN(r->run);
		if (NL_RUN_COUNT(r->flush)) {
			c->flush_token = NL_RUN_TOKEN(r->flush);
			c->flush_count = NL_RUN_COUNT(r->flush);
			c->flush_ts = r->flush_ts;
			c->flush_copy = (r->flush & NL_RUN_CLOSING) != 0;
		}
	}
	if (r->type == NL_REC_RUN) {
		c->api = 0;
		c->kind = 0;
		c->coll_depth = 0;
		c->run_token = 0;
		c->fields = NL_F_RUN_END;
		return;
	}

#define NL_TAKE(slot, field, bit, conv)                                  \
	do {                                                             \
		if (slot_ok(slot) && (slot < 6 || stack_ok)) {           \
			c->field = conv(v[slot]);                        \
			c->fields |= (bit);                              \
		}                                                        \
	} while (0)
#define NL_ID(x) (x)
#define NL_U32(x) ((uint32_t)(x))
#define NL_I32(x) ((int32_t)(uint32_t)(x))
	NL_TAKE(a->slot_stream, stream, NL_F_STREAM, NL_ID);
	NL_TAKE(a->slot_event, event, NL_F_EVENT, NL_ID);
	NL_TAKE(a->slot_event2, event2, NL_F_EVENT2, NL_ID);
	NL_TAKE(a->slot_dst, dst, NL_F_DST, NL_ID);
	NL_TAKE(a->slot_src, src, NL_F_SRC, NL_ID);
	NL_TAKE(a->slot_bytes, bytes, NL_F_BYTES, NL_ID);
	NL_TAKE(a->slot_kind, kindarg, NL_F_KIND, NL_U32);
	NL_TAKE(a->slot_flags, flags, NL_F_FLAGS, NL_U32);
	NL_TAKE(a->slot_prio, prio, NL_F_PRIO, NL_I32);
	NL_TAKE(a->slot_fn, fn, NL_F_FN, NL_ID);
	NL_TAKE(a->slot_peer, peer, NL_F_PEER, NL_I32);
	NL_TAKE(a->slot_count, count, NL_F_COUNT, NL_ID);
#undef NL_TAKE
#undef NL_ID
#undef NL_U32
#undef NL_I32
	if (a->fixed_kind >= 0) {
		c->kindarg = (uint32_t)a->fixed_kind;
		c->fields |= NL_F_KIND;
	}
	if (r->flags & NL_RF_RET) {
		c->fields |= NL_F_RC;
		c->rc = r->rc;
		c->ret_ns = r->ret_ns;
		if ((r->flags & NL_RF_OUT) && r->rc == 0 && a->slot_out != NL_NA) {
			if (a->kind == NL_K_EVENT_ELAPSED) {
				float ms;
				uint32_t bits = (uint32_t)r->out;

				memcpy(&ms, &bits, sizeof(ms));
				c->ms = ms;
				c->fields |= NL_F_MS;
			} else {
				c->handle = r->out;
				c->fields |= NL_F_HANDLE;
			}
		}
	}
}

/*
 * A known tag and API; in an entry-only record, counted-run words that hold
 * together (nanlog_rec.h): a run is started by a countable launch with no
 * launch counted yet and not closing, an end names its run, and a run-end
 * record has one.
 */
static bool rec_ok(const struct nl_rec_call *r)
{
	if ((r->type != NL_REC_CALL && r->type != NL_REC_RUN) || r->api >= NL_API_COUNT)
		return false;
	if (r->flags & NL_RF_RET)
		return r->type == NL_REC_CALL; /* the words hold the return's values */
	if (r->type == NL_REC_CALL && r->run &&
	    ((r->run & NL_RUN_CLOSING) || NL_RUN_COUNT(r->run) || !NL_RUN_TOKEN(r->run) ||
	     !nl_api_info[r->api].countable))
		return false;
	return NL_RUN_COUNT(r->flush) ? NL_RUN_TOKEN(r->flush) != 0 : r->type != NL_REC_RUN;
}

int nl_wire_expand(const void *data, size_t size, struct nl_rec_call *r)
{
	struct nl_wire w;
	size_t words;

	if (!data || size < NL_WIRE_HEAD || size > sizeof(w) || size % sizeof(__u64))
		return -EINVAL;
	memcpy(&w, data, size); /* ring-buffer data is only 8-byte aligned */
	words = (size - NL_WIRE_HEAD) / sizeof(__u64);
	if ((w.type != NL_WIRE_CALL && w.type != NL_WIRE_RUN) ||
	    (w.words & ~(NL_WW_TRIPLE | NL_WW_LOST)) || w.nargs > NL_ARG_LOST_BEFORE)
		return -EINVAL;
	if (words != (size_t)w.nargs + ((w.words & NL_WW_TRIPLE) ? 3 : 0) +
			     ((w.words & NL_WW_LOST) ? 1 : 0))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->type = w.type == NL_WIRE_CALL ? NL_REC_CALL : NL_REC_RUN;
	r->api = w.api;
	r->flags = w.flags;
	r->coll_depth = w.coll_depth;
	r->pid = w.pid;
	r->tid = w.tid;
	r->ts_ns = w.ts_ns;
	memcpy(r->args, w.w, w.nargs * sizeof(__u64));
	words = w.nargs;
	if (w.words & NL_WW_TRIPLE) {
		r->ret_ns = w.w[words]; /* the same words as run, flush, flush_ts */
		r->rc = (__s64)w.w[words + 1];
		r->out = w.w[words + 2];
		words += 3;
	}
	if (w.words & NL_WW_LOST)
		r->args[NL_ARG_LOST_BEFORE] = w.w[words];
	return 0;
}

int nl_decode(const void *data, size_t size, struct nl_call *out)
{
	struct nl_rec_call r;

	if (!data || size != sizeof(r))
		return -EINVAL;
	memcpy(&r, data, sizeof(r)); /* ring-buffer data is only 8-byte aligned */
	if (!rec_ok(&r))
		return -EINVAL;
	nl_decode_rec(&r, out);
	return 0;
}
