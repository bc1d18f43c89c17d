// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>

#include "raw.h"

int nl_raw_write(FILE *f, const struct nl_call *c)
{
	return nl_raw_write_labeled(f, c, NULL, NULL);
}

int nl_raw_write_labeled(FILE *f, const struct nl_call *c, const char *container_id,
			 const char *pod_uid)
{
	const char *name = nl_api_name(c->api);
	uint32_t m = c->fields;

	fprintf(f, "{\"type\":\"call\",\"schema\":%d,\"api\":\"%s\",\"pid\":%" PRIu32,
		NL_SCHEMA, name ? name : "?", c->pid);
	/* container ids and pod UIDs are hex digits and dashes: nothing to escape */
	if (container_id && *container_id)
		fprintf(f, ",\"container_id\":\"%s\"", container_id);
	if (pod_uid && *pod_uid)
		fprintf(f, ",\"pod_uid\":\"%s\"", pod_uid);
	fprintf(f, ",\"tid\":%" PRIu32 ",\"ts_ns\":%" PRIu64, c->tid, c->ts_ns);
	if (m & NL_F_RC)
		fprintf(f, ",\"rc\":%" PRId64 ",\"ret_ns\":%" PRIu64, c->rc, c->ret_ns);
	if (m & NL_F_STREAM)
		fprintf(f, ",\"stream\":\"0x%" PRIx64 "\"", c->stream);
	if (m & NL_F_EVENT)
		fprintf(f, ",\"event\":\"0x%" PRIx64 "\"", c->event);
	if (m & NL_F_EVENT2)
		fprintf(f, ",\"stop_event\":\"0x%" PRIx64 "\"", c->event2);
	if (m & NL_F_DST)
		fprintf(f, ",\"dst\":\"0x%" PRIx64 "\"", c->dst);
	if (m & NL_F_SRC)
		fprintf(f, ",\"src\":\"0x%" PRIx64 "\"", c->src);
	if (m & NL_F_BYTES)
		fprintf(f, ",\"bytes\":%" PRIu64, c->bytes);
	if (m & NL_F_KIND)
		fprintf(f, ",\"kind\":%" PRIu32, c->kindarg);
	if (m & NL_F_FLAGS)
		fprintf(f, ",\"flags\":%" PRIu32, c->flags);
	if (m & NL_F_PRIO)
		fprintf(f, ",\"prio\":%" PRId64, c->prio);
	if (m & NL_F_FN)
		fprintf(f, ",\"fn\":\"0x%" PRIx64 "\"", c->fn);
	if (m & NL_F_PEER)
		fprintf(f, ",\"peer\":%" PRId32, c->peer);
	if (m & NL_F_COUNT)
		fprintf(f, ",\"count\":%" PRIu64, c->count);
	if (m & NL_F_HANDLE)
		fprintf(f, ",\"handle\":\"0x%" PRIx64 "\"", c->handle);
	if (m & NL_F_MS)
		fprintf(f, ",\"ms\":%.6g", c->ms);
	if (c->coll_depth)
		fprintf(f, ",\"coll_depth\":%u", c->coll_depth);
	if (fputs("}\n", f) == EOF || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}
