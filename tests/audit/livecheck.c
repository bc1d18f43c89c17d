/* SPDX-License-Identifier: MIT */
/*
 * The audits of a live run of a random program (build/audit/randrun under
 * nanlog-bpf) against the program's truth, judged by the comparison that
 * judges the in-process replay (randcheck.c), and the two side by side
 * (docs/engine.md, "Model-based random testing").
 *
 * The program is made again from the seed in randrun's file; the live values
 * (pid, stream handles, threads, and the span in which each call was made)
 * replace the generated ones, so that an audit's copy window is matched to
 * the batch whose copy was made when its first copy was seen.
 */
#include "randprog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LC_LINE 1024
#define LC_MAX_STREAMS 256

static int by_name(const char *s, int n, const char *(*name)(int))
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, name(i)))
			return i;
	return -1;
}

/* "a,b" (or "-") as a mask of names; -1 for a name it does not know */
static int64_t mask_of(char *list, int n, const char *(*name)(int))
{
	int64_t m = 0;

	if (!strcmp(list, "-"))
		return 0;
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k = by_name(t, n, name);

		if (k < 0)
			return -1;
		m |= 1ll << k;
	}
	return m;
}

/* Put the live values of randrun's file into the program made from its seed. */
static int read_run(FILE *f, struct rp_prog *p, uint64_t *seed, bool *mid_run)
{
	char line[LC_LINE];
	unsigned long long a, b, c;
	unsigned pid, tid;
	int i, n = 0, calls = 0;
	char name[8], api[64];

	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "{\"type\":\"program\",\"seed\":%llu,\"pid\":%u,\"calls\":%d", &a, &pid,
			   &calls) == 3) {
			struct rp_spec s;

			if (n)
				return -EINVAL; /* one program a file */
			*seed = a;
			rp_spec_random(&s, a);
			if (rp_build(p, &s))
				return -ENOMEM;
			if (p->n != calls)
				return -EINVAL; /* another generator made the file */
			p->pid = pid;
			*mid_run = strstr(line, "\"mid_run\":true") != NULL;
			n++;
		} else if (!n) {
			return -EINVAL;
		} else if (sscanf(line, "{\"type\":\"stream\",\"name\":\"%7[^\"]\",\"stream\":\"%llx\",\"tid\":%u",
				  name, &a, &tid) == 3) {
			for (int k = 0; k < p->nstreams; k++)
				if (p->stream_name[k] == name[0]) {
					p->stream_handle[k] = a;
					if (p->stream_owner[k])
						p->stream_owner[k] = tid;
				}
		} else if (sscanf(line, "{\"type\":\"call\",\"i\":%d,\"api\":\"%63[^\"]\",\"tid\":%u,\"t0\":%llu,\"t1\":%llu",
				  &i, api, &tid, &b, &c) == 5) {
			if (i < 0 || i >= p->n || strcmp(api, nl_api_info[p->calls[i].rec.api].name))
				return -EINVAL;
			p->calls[i].rec.tid = tid;
			p->calls[i].rec.ts_ns = b;
			p->calls[i].end_ns = c;
		}
	}
	return n == 1 ? 0 : -EINVAL;
}

/* The lines of tests/audit/audit_flat.jq, into the result. */
static int read_audits(FILE *f, const struct rp_prog *p, struct rp_result *r)
{
	static struct nl_stream_summary ss[LC_MAX_STREAMS];
	struct nl_summary sum = { .streams = ss };
	char line[LC_LINE], verdict[16], skips[256], missing[128], first[24], last[24], role[16];
	unsigned long long batch, handle, ops;
	unsigned pid, tid, pipeline;

	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "batch %u %llu %15s %255s %127s %23s %23s %llu %u", &pid, &batch,
			   verdict, skips, missing, first, last, &ops, &pipeline) == 9) {
			struct nl_batch_audit a;
			int64_t sm = mask_of(skips, NL_NSKIP, nl_skip_name);
			int64_t mm = mask_of(missing, NL_NEDGES, nl_edge_name);

			memset(&a, 0, sizeof(a));
			a.pid = pid;
			a.batch = batch;
			a.pipeline = pipeline;
			a.verdict = by_name(verdict, 3, nl_verdict_name);
			if (a.verdict < 0 || sm < 0 || mm < 0)
				return -EINVAL;
			a.skip_mask = (uint32_t)sm;
			a.missing_mask = (uint32_t)mm;
			a.stage[NL_STAGE_COPY].ops = ops;
			a.stage[NL_STAGE_COPY].first_ns = strtoull(first, NULL, 10);
			a.stage[NL_STAGE_COPY].last_ns = strtoull(last, NULL, 10);
			rp_result_batch(p, r, &a);
		} else if (!strcmp(line, "valid true\n") || !strcmp(line, "valid false\n")) {
			sum.evidence_valid = line[6] == 't';
		} else if (sscanf(line, "stream %u %llx %u %15s", &pid, &handle, &tid, role) == 4) {
			struct nl_stream_summary *s = &ss[sum.nstreams];

			if (sum.nstreams == LC_MAX_STREAMS)
				return -ENOSPC;
			memset(s, 0, sizeof(*s));
			s->pid = pid;
			s->handle = handle;
			s->tid = tid;
			s->role = by_name(role, 4, nl_role_name);
			if (s->role < 0)
				return -EINVAL;
			sum.nstreams++;
		} else {
			return -EINVAL;
		}
	}
	rp_result_summary(p, r, &sum);
	return 0;
}

static bool has_diff(const struct rp_result *r, const char *cls, int batch)
{
	for (int i = 0; i < r->ndiffs; i++)
		if (!strcmp(r->diffs[i], cls) && r->diff_batch[i] == batch)
			return true;
	return false;
}

static void print_batch(const char *who, const struct rp_result *r, int T, FILE *out)
{
	if (!r->have[T]) {
		fprintf(out, "; %s: %s", who, r->merged[T] ? "merged" : "no audit");
		return;
	}
	fprintf(out, "; %s %s", who, nl_verdict_name(r->got[T].verdict));
	for (int e = 0; e < NL_NEDGES; e++)
		if (r->got[T].missing_mask & (1u << e))
			fprintf(out, " %s", nl_edge_name(e));
}

int rp_check_live(const char *run_path, const char *audit_path, FILE *out)
{
	struct rp_prog p, g;
	struct rp_result live, replay;
	uint64_t seed = 0;
	bool mid_run = false;
	FILE *f;
	int rc;

	memset(&p, 0, sizeof(p));
	f = fopen(run_path, "r");
	if (!f)
		return -errno;
	rc = read_run(f, &p, &seed, &mid_run);
	fclose(f);
	if (rc) {
		rp_free(&p);
		return rc;
	}
	f = strcmp(audit_path, "-") ? fopen(audit_path, "r") : stdin;
	if (!f) {
		rc = -errno;
		rp_free(&p);
		return rc;
	}
	memset(&live, 0, sizeof(live));
	rc = read_audits(f, &p, &live);
	if (f != stdin)
		fclose(f);
	if (rc) {
		rp_free(&p);
		return rc;
	}
	rp_result_compare(&p, &live);
	/* the same program through the engine in process, as fuzz_audit runs it */
	rc = rp_build(&g, &p.spec);
	if (rc) {
		rp_free(&p);
		return rc;
	}
	rp_run_attached(&g, mid_run, &replay);
	rp_free(&g);

	bool same = live.ndiffs == replay.ndiffs;

	/* the same disagreements, at the same batches */
	for (int i = 0; i < live.ndiffs; i++)
		same &= has_diff(&replay, live.diffs[i], live.diff_batch[i]);
	for (int i = 0; i < replay.ndiffs; i++)
		same &= has_diff(&live, replay.diffs[i], replay.diff_batch[i]);
	fprintf(out, "seed %llu%s: %d live audits, %d in process; %s\n", (unsigned long long)seed,
		mid_run ? " (attached mid-run)" : "", live.naudits, replay.naudits,
		same ? "same classes" : "different classes");
	for (int i = 0; i < replay.ndiffs; i++)
		fprintf(out, "  replay: batch %d: %s\n", replay.diff_batch[i], replay.diffs[i]);
	for (int i = 0; i < live.ndiffs; i++)
		fprintf(out, "  live: batch %d: %s\n", live.diff_batch[i], live.diffs[i]);
	if (!same)
		for (int T = 0; T < p.spec.nb; T++) {
			fprintf(out, "  batch %d: truth %s", T, nl_verdict_name(p.truth[T].verdict));
			if (p.truth[T].first >= 0)
				fprintf(out, " %s", nl_edge_name(p.truth[T].first));
			print_batch("replay", &replay, T, out);
			print_batch("live", &live, T, out);
			fprintf(out, "\n");
		}
	rp_free(&p);
	return same ? 0 : 1;
}
