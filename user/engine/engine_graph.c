// SPDX-License-Identifier: MIT
/*
 * Graphs (docs/engine.md, "Graphs"): stream capture (its origin, the
 * streams that join it, the end of it) and the graphs and graph execs it
 * makes, remembered so that a launch can be judged as one op of its stream.
 */
#include "engine/engine_int.h"

/* The origin slot of the open capture with this id, or -1. */
int nl_capture_open(const struct nl_proc *p, uint32_t cap_id)
{
	for (uint32_t i = 0; cap_id && i < p->w; i++)
		if (p->s[i].capturing && p->s[i].capture_origin == (int)i &&
		    p->s[i].cap_id == cap_id)
			return (int)i;
	return -1;
}

/* The capture a capturing stream belongs to: its origin, or NULL when the
 * origin's slot was reused meanwhile. */
struct nl_stream *nl_capture_origin(struct nl_proc *p, const struct nl_stream *s)
{
	struct nl_stream *o = s->capture_origin >= 0 ? &p->s[s->capture_origin] : NULL;

	return o && o->capturing && o->capture_origin == s->capture_origin ? o : NULL;
}

/* A captured op: it runs at each launch, not now. A launch stays one op of
 * its stream only while the capture keeps to the stream that began it. */
void nl_capture_note(struct nl_proc *p, int slot)
{
	struct nl_stream *o = nl_capture_origin(p, &p->s[slot]);

	if (o && &p->s[slot] != o)
		o->cap_ok = false;
}

struct nl_graph *nl_graph_find(struct nl_proc *p, uint64_t handle, bool is_exec)
{
	for (int i = 0; i < NL_MAX_GRAPHS; i++)
		if (p->graphs[i].used && p->graphs[i].handle == handle &&
		    p->graphs[i].is_exec == is_exec)
			return &p->graphs[i];
	return NULL;
}

/* A new graph or exec (a handle seen again replaces the old one); the least
 * recently used is forgotten when full, so its launches are skipped. */
static void graph_add(struct nl_proc *p, uint64_t handle, bool is_exec, bool ok, uint32_t cap_id)
{
	struct nl_graph *g = nl_graph_find(p, handle, is_exec);

	if (!g) {
		g = &p->graphs[0];
		for (int i = 0; i < NL_MAX_GRAPHS; i++) {
			if (!p->graphs[i].used) {
				g = &p->graphs[i];
				break;
			}
			if (p->graphs[i].lru < g->lru)
				g = &p->graphs[i];
		}
	}
	*g = (struct nl_graph){ .used = true, .is_exec = is_exec, .ok = ok, .cap_id = cap_id,
				.handle = handle, .lru = ++p->lru };
}

/* A record made in a capture, waited on outside it: launches of what the
 * capture made cannot be placed. */
void nl_graph_taint(struct nl_proc *p, uint32_t cap_id)
{
	for (int i = 0; i < NL_MAX_GRAPHS; i++)
		if (p->graphs[i].used && p->graphs[i].cap_id == cap_id)
			p->graphs[i].ok = false;
}

/* hipStreamEndCapture, failed or not, ends the capture of every stream in it. */
void nl_capture_end(struct nl_engine *e, struct nl_proc *p, const struct nl_call *c)
{
	struct nl_skey key = nl_call_skey(c);
	int slot = nl_stream_slot(e, p, &key, false);
	struct nl_stream *o = slot >= 0 ? &p->s[slot] : NULL;

	if (!o || !o->capturing || o->capture_origin != slot)
		return;
	if ((c->fields & NL_F_RC) && c->rc == 0 && (c->fields & NL_F_HANDLE))
		graph_add(p, c->handle, false, o->cap_ok, o->cap_id);
	for (uint32_t i = 0; i < p->w; i++)
		if (p->s[i].capturing && p->s[i].capture_origin == slot) {
			p->s[i].capturing = false;
			p->s[i].capture_origin = -1;
		}
}

void nl_graph_lifecycle(struct nl_proc *p, const struct nl_call *c)
{
	struct nl_graph *g;

	if (!(c->fields & NL_F_FN))
		return;
	if (c->kind == NL_K_GRAPH_DESTROY) {
		g = nl_graph_find(p, c->fn, c->api == NL_API_GRAPH_EXEC_DESTROY);
		if (g)
			g->used = false;
	} else if (c->fields & NL_F_HANDLE) { /* instantiated: the exec is what its graph was */
		g = nl_graph_find(p, c->fn, false);
		graph_add(p, c->handle, true, g && g->ok, g ? g->cap_id : 0);
	}
}
