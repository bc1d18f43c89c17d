// SPDX-License-Identifier: MIT
/*
 * Attach reports: what one attach of one library into one target did, as
 * an "attach" line, a stderr line and the run's probe totals.
 */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "app/app_int.h"
#include "out/json.h"
#include "record/recording.h"

void nl_app_json_api_names(struct nl_json *j, const char *key, const int *ids, int n)
{
	nl_json_key(j, key);
	nl_json_arr(j);
	for (int i = 0; i < n; i++)
		nl_json_str(j, nl_api_name((unsigned)ids[i]));
	nl_json_arr_end(j);
}

void nl_app_attached(struct nl_app *a, const struct nl_attach_report *r)
{
	if (a->rec && !a->rec_err) {
		struct nl_recording_lib rl = { .pid = (uint32_t)r->pid, .lib = r->lib, .path = r->path,
					       .attached = r->attached, .retprobes = r->retprobes,
					       .retprobes_allowed = r->retprobes_allowed,
					       .elapsed_ns = r->elapsed_ns, .ts_ns = nl_mono_ns(),
					       .nmissing = r->nmissing };

		memcpy(rl.missing, r->missing, sizeof(int) * (size_t)r->nmissing);
		nl_app_rec_check(a, nl_recording_write_lib(a->rec, &rl));
	}
	if (a->o.format != NL_FMT_TABLE) { /* the table is for people: the stderr line says it */
		struct nl_json j;

		nl_json_begin(&j, a->out);
		nl_json_kstr(&j, "type", "attach");
		nl_json_ki64(&j, "schema", NL_OUTPUT_SCHEMA);
		nl_json_ki64(&j, "pid", r->pid);
		nl_json_kstr(&j, "lib", nl_lib_name(r->lib));
		nl_json_kstr(&j, "path", r->path);
		nl_json_ki64(&j, "attached", r->attached);
		nl_json_ki64(&j, "retprobes", r->retprobes);
		nl_json_kbool(&j, "retprobes_allowed", r->retprobes_allowed);
		nl_app_json_api_names(&j, "missing", r->missing, r->nmissing);
		nl_json_kdbl(&j, "attach_ms", (double)r->elapsed_ns / 1e6);
		nl_json_end(&j);
		nl_app_note_write(a);
	}
	a->probes_attached += r->attached;
	a->retprobes_attached += r->retprobes;
	for (int i = 0; i < r->nmissing; i++) {
		int dup = 0;

		for (int j = 0; j < a->nmissing; j++)
			dup |= a->missing[j] == r->missing[i];
		if (!dup && a->nmissing < NL_API_COUNT)
			a->missing[a->nmissing++] = r->missing[i];
	}
	if (!a->o.quiet) {
		char miss[1024], placed[48] = "";
		size_t off = 0;

		miss[0] = '\0';
		for (int i = 0; i < r->nmissing && off < sizeof(miss); i++)
			off += (size_t)snprintf(miss + off, sizeof(miss) - off, "%s%s", i ? " " : "",
						nl_api_name((unsigned)r->missing[i]));
		if (r->placed)
			snprintf(placed, sizeof(placed), ", %d placed past endbr64", r->placed);
		fprintf(stderr, "nanlog-bpf: pid %d: %s: %d symbols attached (%d with return probes%s%s)%s%s\n",
			(int)r->pid, r->path, r->attached, r->retprobes,
			r->retprobes_allowed ? "" : ", not allowed here", placed,
			r->nmissing ? "; missing: " : "", miss);
	}
}
