// SPDX-License-Identifier: MIT
/*
 * The calls that are not ops on a stream: queries and synchronizations,
 * with the completion evidence they carry (docs/engine.md, "Completion
 * evidence, hand-off, overlap"), and the lifecycle of streams, events and
 * graphs (creates, destroys, capture begins).
 */
#include "engine/engine_int.h"

/* When the job learned the call's answer. */
static uint64_t call_end(const struct nl_call *c)
{
	return (c->fields & NL_F_RC) && c->ret_ns ? c->ret_ns : c->ts_ns;
}

static void event_done(struct nl_proc *p, const struct nl_event *ev, const struct nl_call *c)
{
	/* The record the job asked about is the last one before its call. */
	if (ev && ev->recorded && ev->rec_ts <= c->ts_ns)
		nl_evidence_done(p, ev->vc, -1, UINT64_MAX, call_end(c), c->api);
}

/* Everything enqueued on the stream before the call is done at its return.
 * If the stream took another stream's clock after the call began (another
 * thread's wait), only its own ops are proven. */
void nl_stream_done(struct nl_proc *p, int slot, const struct nl_call *c)
{
	const struct nl_stream *s = &p->s[slot];

	nl_evidence_done(p, s->vc, s->last_join_ts > c->ts_ns ? slot : -1, c->ts_ns, call_end(c),
			 c->api);
}

void nl_apply_query(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c)
{
	struct nl_skey key;
	struct nl_event *ev;
	int slot;

	if (!(c->fields & NL_F_RC))
		return;
	if (c->kind == NL_K_EVENT_QUERY) {
		ev = (c->fields & NL_F_EVENT) ? nl_event_find(p, c->event) : NULL;
		if (c->rc == 0)
			event_done(p, ev, c);
		else if (c->rc == 600 && ev && ev->recorded && ev->slot >= 0 && ev->rec_ts <= c->ts_ns)
			nl_evidence_not_done(p, ev->slot, ev->gate, c->ts_ns);
		return;
	}
	key = nl_call_skey(c);
	slot = nl_stream_slot(e, p, &key, false);
	if (slot < 0)
		return;
	if (c->rc == 0)
		nl_stream_done(p, slot, c);
	else if (c->rc == 600)
		nl_evidence_not_done(p, slot, p->s[slot].gate, c->ts_ns);
}

void nl_apply_sync(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c)
{
	struct nl_event *ev, *ev2;
	struct nl_skey key;
	int slot;

	switch (c->kind) {
	case NL_K_EVENT_SYNC:
		event_done(p, (c->fields & NL_F_EVENT) ? nl_event_find(p, c->event) : NULL, c);
		break;
	case NL_K_EVENT_ELAPSED:
		/* Success needs both events complete. */
		ev = (c->fields & NL_F_EVENT) ? nl_event_find(p, c->event) : NULL;
		ev2 = (c->fields & NL_F_EVENT2) ? nl_event_find(p, c->event2) : NULL;
		event_done(p, ev, c);
		event_done(p, ev2, c);
		if ((c->fields & NL_F_MS) && ev && ev2 && ev->recorded && ev2->recorded)
			nl_evidence_ms(p, ev, ev2, c->ms);
		break;
	case NL_K_STREAM_SYNC:
		key = nl_call_skey(c);
		slot = nl_stream_slot(e, p, &key, false);
		if (slot >= 0)
			nl_stream_done(p, slot, c);
		break;
	case NL_K_DEVICE_SYNC:
		nl_evidence_done(p, NULL, -1, c->ts_ns, call_end(c), c->api);
		break;
	default:
		break;
	}
}

void nl_apply_lifecycle(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c)
{
	struct nl_skey key;
	struct nl_event *ev;
	int slot;

	switch (c->kind) {
	case NL_K_STREAM_CREATE:
		if (!(c->fields & NL_F_HANDLE))
			return;
		key = nl_handle_skey(c->handle);
		if (p->mid_run)
			nl_hgen_bump(&p->hgen, c->handle);
		slot = nl_stream_slot(e, p, &key, true);
		if (slot >= 0) {
			const struct nl_stream *o = &p->s[slot];
			uint8_t was = o->destroyed ? nl_producer_role(o) : NL_ROLE_OTHER;
			int8_t was_pipe = o->pipe;
			uint32_t was_k = nl_sure_seg_k(o);
			uint64_t was_ts = o->creation_ts;

			nl_stream_reset(p, slot, &key, true,
					!((c->fields & NL_F_FLAGS) && (c->flags & 1)));
			p->s[slot].creation_seen = true;
			p->s[slot].creation_ts = c->ts_ns;
			if (p->s[slot].role != NL_ROLE_OTHER)
				was = NL_ROLE_OTHER;
			p->s[slot].was_role = was;
			p->s[slot].was_pipe = was != NL_ROLE_OTHER ? was_pipe : -1;
			p->s[slot].was_seg_k = was == NL_ROLE_COPY ? was_k : 0;
			p->s[slot].was_created_ts = was != NL_ROLE_OTHER ? was_ts : 0;
		}
		break;
	case NL_K_STREAM_DESTROY:
		key = nl_call_skey(c);
		slot = nl_stream_slot(e, p, &key, false);
		if (slot >= 0 && !p->learning)
			nl_fill_guess_ends(e, p, slot, true);
		if (slot >= 0)
			p->s[slot].destroyed = true;
		break;
	case NL_K_EVENT_CREATE:
		if (!(c->fields & NL_F_HANDLE))
			return;
		ev = nl_event_get(e, p, c->handle);
		if (ev->created || ev->recorded)
			ev->gen++; /* created again without a destroy we saw */
		ev->created = true;
		ev->recorded = ev->capture = ev->waited = ev->sparse_waited = false;
		ev->records = 0;
		break;
	case NL_K_EVENT_DESTROY:
		ev = (c->fields & NL_F_EVENT) ? nl_event_find(p, c->event) : NULL;
		if (ev)
			nl_event_forget(p, ev);
		break;
	case NL_K_CAPTURE_BEGIN:
		key = nl_call_skey(c);
		slot = nl_stream_slot(e, p, &key, true);
		if (slot >= 0) {
			p->s[slot].capturing = true;
			p->s[slot].capture_origin = slot;
			p->s[slot].cap_id = ++p->next_cap_id ? p->next_cap_id : ++p->next_cap_id;
			p->s[slot].cap_ok = true;
		}
		break;
	case NL_K_GRAPH_INST:
	case NL_K_GRAPH_DESTROY:
		nl_graph_lifecycle(p, c);
		break;
	default:
		break;
	}
}
