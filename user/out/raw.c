// SPDX-License-Identifier: MIT
#include "out/json.h"
#include "out/raw.h"

/*
 * The graph APIs carry a graph or graph exec where launches carry the kernel
 * (fn) and creates the new handle (handle): print them under their names.
 */
static void graph_keys(const struct nl_call *c, const char **fn_key, const char **handle_key)
{
	*fn_key = "fn";
	*handle_key = "handle";
	switch (c->kind) {
	case NL_K_GRAPH:
		*fn_key = "exec";
		break;
	case NL_K_GRAPH_INST:
		*fn_key = "graph";
		*handle_key = "exec";
		break;
	case NL_K_GRAPH_DESTROY:
		*fn_key = c->api == NL_API_GRAPH_EXEC_DESTROY ? "exec" : "graph";
		break;
	case NL_K_CAPTURE_END:
		*handle_key = "graph";
		break;
	default:
		break;
	}
}

int nl_raw_write(FILE *f, const struct nl_call *c)
{
	return nl_raw_write_labeled(f, c, NULL, NULL);
}

int nl_raw_write_labeled(FILE *f, const struct nl_call *c, const char *container_id,
			 const char *pod_uid)
{
	const char *name = nl_api_name(c->api), *fn_key, *handle_key;
	uint32_t m = c->fields;
	struct nl_json j;

	graph_keys(c, &fn_key, &handle_key);
	nl_json_begin(&j, f);
	nl_json_kstr(&j, "type", "call");
	nl_json_ki64(&j, "schema", NL_OUTPUT_SCHEMA);
	nl_json_kstr(&j, "api", name ? name : "?");
	nl_json_ku64(&j, "pid", c->pid);
	if (container_id && *container_id)
		nl_json_kstr(&j, "container_id", container_id);
	if (pod_uid && *pod_uid)
		nl_json_kstr(&j, "pod_uid", pod_uid);
	nl_json_ku64(&j, "tid", c->tid);
	nl_json_ku64(&j, "ts_ns", c->ts_ns);
	if (m & NL_F_COUNTED)
		nl_json_kbool(&j, "counted", true);
	if (m & NL_F_RC) {
		nl_json_ki64(&j, "rc", c->rc);
		nl_json_ku64(&j, "ret_ns", c->ret_ns);
	}
	if (m & NL_F_STREAM)
		nl_json_khex(&j, "stream", c->stream);
	if (m & NL_F_EVENT)
		nl_json_khex(&j, "event", c->event);
	if (m & NL_F_EVENT2)
		nl_json_khex(&j, "stop_event", c->event2);
	if (m & NL_F_DST)
		nl_json_khex(&j, "dst", c->dst);
	if (m & NL_F_SRC)
		nl_json_khex(&j, "src", c->src);
	if (m & NL_F_BYTES)
		nl_json_ku64(&j, "bytes", c->bytes);
	if (m & NL_F_KIND)
		nl_json_ku64(&j, "kind", c->kindarg);
	if (m & NL_F_FLAGS)
		nl_json_ku64(&j, "flags", c->flags);
	if (m & NL_F_PRIO)
		nl_json_ki64(&j, "prio", c->prio);
	if (m & NL_F_FN)
		nl_json_khex(&j, fn_key, c->fn);
	if (m & NL_F_PEER)
		nl_json_ki64(&j, "peer", c->peer);
	if (m & NL_F_COUNT)
		nl_json_ku64(&j, "count", c->count);
	if (m & NL_F_HANDLE)
		nl_json_khex(&j, handle_key, c->handle);
	if (m & NL_F_MS)
		nl_json_kdbl(&j, "ms", c->ms);
	if (c->coll_depth)
		nl_json_ku64(&j, "coll_depth", c->coll_depth);
	return nl_json_end(&j);
}
