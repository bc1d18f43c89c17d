// SPDX-License-Identifier: MIT
/*
 * Makes a long recording out of a short one, for the engine throughput and
 * memory figures of `make bench` (docs/performance.md), without tracing a job
 * for minutes.
 *
 *   bigrec [-b ITERATIONS] [-r RECORDS] IN.rec OUT.rec
 *
 * IN is a --record of the pipeline workload. Its steady state is cut at the
 * records of hipStreamSynchronize, which the workload makes once per
 * iteration (step e's .tolist()): the middle half of those iterations is the
 * section that is repeated, each copy with its timestamps shifted by the
 * section's length, so time keeps running forward. Handles, threads and the
 * process stay the same, as in a job that goes on: new copy segments mint new
 * batch tokens in the engine. Everything before the section is written as it
 * was, then the copies until at least ITERATIONS iterations (default 100000)
 * and RECORDS records (default 0) are in the file, then the rest of IN (its
 * teardown, the exit item) shifted, and a trailer with the new record count.
 * Prints "records N iterations M" on stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/recording.h"

static struct nl_recording_item *items;
static size_t nitems, cap;

static int load(struct nl_recording_reader *r)
{
	char err[512];
	int rc;

	for (;;) {
		if (nitems == cap) {
			size_t nc = cap ? cap * 2 : 4096;
			struct nl_recording_item *ni = realloc(items, nc * sizeof(*ni));

			if (!ni)
				return -ENOMEM;
			items = ni;
			cap = nc;
		}
		rc = nl_recording_next(r, &items[nitems], err, sizeof(err));
		if (rc != NL_RECORDING_ITEM)
			break;
		if (items[nitems].kind == NL_RI_LIB || items[nitems].kind == NL_RI_TARGET) {
			/* their strings live until the next call: keep copies */
			const char **s = items[nitems].kind == NL_RI_LIB ? &items[nitems].lib.path :
									     &items[nitems].target.comm;

			*s = strdup(*s ? *s : "");
			if (!*s)
				return -ENOMEM;
		}
		nitems++;
	}
	if (rc != NL_RECORDING_END) {
		fprintf(stderr, "bigrec: %s\n", rc < 0 ? err : "input has no trailer");
		return rc < 0 ? rc : -EBADMSG;
	}
	return 0;
}

static bool is_anchor(const struct nl_recording_item *it)
{
	return it->kind == NL_RI_RECORD && it->rec.size == sizeof(struct nl_rec_call) &&
	       it->rec.data.call.api == NL_API_STREAM_SYNCHRONIZE;
}

static int put(struct nl_recording_writer *w, const struct nl_recording_item *it, uint64_t shift,
	       uint64_t *nrec)
{
	switch (it->kind) {
	case NL_RI_RECORD: {
		struct nl_rec_call c;

		if (it->rec.size != sizeof(c))
			return nl_recording_write_record(w, it->rec.data.bytes, it->rec.size);
		c = it->rec.data.call;
		c.ts_ns += shift;
		if ((c.flags & NL_RF_RET) && c.ret_ns)
			c.ret_ns += shift;
		else if (!(c.flags & NL_RF_RET) && c.flush_ts)
			c.flush_ts += shift;
		(*nrec)++;
		return nl_recording_write_record(w, &c, sizeof(c));
	}
	case NL_RI_LIB: {
		struct nl_recording_lib l = it->lib;

		l.ts_ns += shift;
		return nl_recording_write_lib(w, &l);
	}
	case NL_RI_LOST:
		return nl_recording_write_lost(w, it->lost.pid, it->lost.count, it->lost.ts_ns + shift);
	case NL_RI_EXIT:
		return nl_recording_write_exit(w, it->exit.pid, it->exit.ts_ns + shift);
	case NL_RI_TARGET: {
		struct nl_recording_target t = it->target;

		t.ts_ns += shift;
		return nl_recording_write_target(w, &t);
	}
	default:
		return 0;
	}
}

int main(int argc, char **argv)
{
	long want_iter = 100000, want_rec = 0, iter = 0;
	struct nl_recording_reader *r = NULL;
	struct nl_recording_writer *w = NULL;
	struct nl_recording_trailer t;
	size_t *anchors, nanch = 0, i0, i1;
	uint64_t shift = 0, span, nrec = 0;
	char err[512];
	int opt, rc;

	while ((opt = getopt(argc, argv, "b:r:")) != -1) {
		if (opt == 'b')
			want_iter = strtol(optarg, NULL, 10);
		else if (opt == 'r')
			want_rec = strtol(optarg, NULL, 10);
		else
			goto usage;
	}
	if (argc - optind != 2 || want_iter < 0 || want_rec < 0)
		goto usage;
	rc = nl_recording_open(&r, argv[optind], 1, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "bigrec: %s\n", err);
		return 1;
	}
	if (load(r))
		return 1;
	anchors = malloc((nitems + 1) * sizeof(*anchors));
	if (!anchors)
		return 1;
	for (size_t i = 0; i < nitems; i++)
		if (is_anchor(&items[i]))
			anchors[nanch++] = i;
	if (nanch < 8) {
		fprintf(stderr, "bigrec: %s: %zu hipStreamSynchronize records, need 8 or more "
				"(a --record of build/sim/pipeline)\n", argv[optind], nanch);
		return 1;
	}
	i0 = anchors[nanch / 4];
	i1 = anchors[nanch / 4 + nanch / 2];
	span = items[i1].rec.data.call.ts_ns - items[i0].rec.data.call.ts_ns;

	rc = nl_recording_create(&w, argv[optind + 1], true, nl_recording_header(r), err,
				 sizeof(err));
	if (rc) {
		fprintf(stderr, "bigrec: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < i1; i++) {
		iter += is_anchor(&items[i]);
		rc = put(w, &items[i], 0, &nrec);
		if (rc)
			goto werr;
	}
	while (iter < want_iter || (long)nrec < want_rec) {
		shift += span;
		for (size_t i = i0; i < i1; i++) {
			if (items[i].kind != NL_RI_RECORD)
				continue; /* libraries, targets, losses happened once */
			iter += is_anchor(&items[i]);
			rc = put(w, &items[i], shift, &nrec);
			if (rc)
				goto werr;
		}
	}
	for (size_t i = i1; i < nitems; i++) {
		iter += is_anchor(&items[i]);
		rc = put(w, &items[i], shift, &nrec);
		if (rc)
			goto werr;
	}
	t = *nl_recording_trailer(r);
	t.records = nrec;
	t.end_ns += shift;
	t.duration_ns += shift;
	rc = nl_recording_finish(w, &t);
	if (rc)
		goto werr;
	rc = nl_recording_close(w);
	if (rc) {
		w = NULL;
		goto werr;
	}
	printf("records %llu iterations %ld\n", (unsigned long long)nrec, iter);
	nl_recording_free(r);
	return 0;
werr:
	fprintf(stderr, "bigrec: %s: %s\n", argv[optind + 1], strerror(-rc));
	nl_recording_close(w);
	return 1;
usage:
	fprintf(stderr, "usage: bigrec [-b ITERATIONS] [-r RECORDS] IN.rec OUT.rec\n");
	return 2;
}
