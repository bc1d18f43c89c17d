// SPDX-License-Identifier: MIT
/*
 * --replay: a recording's items through the very functions the live run
 * used, in the order it used them; its trailer stands for the loader.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app_int.h"
#include "record/recording.h"

/* --replay: a target as the live run had it, labels included. */
static void replay_target(struct nl_app *a, const struct nl_recording_target *rt)
{
	struct nl_app_target *t = NULL;
	char buf[NL_RECORDING_MAX_STR + 1], *cid = NULL, *pod = NULL, *sep;

	snprintf(buf, sizeof(buf), "%s", rt->comm ? rt->comm : "");
	if ((sep = strchr(buf, NL_APP_LABEL_SEP))) {
		*sep = '\0';
		cid = sep + 1;
		if ((sep = strchr(cid, NL_APP_LABEL_SEP))) {
			*sep = '\0';
			pod = sep + 1;
		}
	}
	for (int i = 0; i < a->ntargets && !t; i++)
		if (!a->targets[i].alive)
			t = &a->targets[i];
	if (!t && a->ntargets < NL_MAX_PIDS)
		t = &a->targets[a->ntargets++];
	if (t) {
		memset(t, 0, sizeof(*t));
		t->pid = (pid_t)rt->pid;
		t->alive = true;
		snprintf(t->comm, sizeof(t->comm), "%.31s", buf);
		snprintf(t->container_id, sizeof(t->container_id), "%.64s", cid ? cid : "");
		snprintf(t->pod_uid, sizeof(t->pod_uid), "%.36s", pod ? pod : "");
	}
	nl_app_target_added(a, rt->pid, rt->ts_ns, rt->mid_run, buf, cid, pod);
}

/*
 * --replay --attach-at N: the targets announced before the Nth record, kept
 * (comm and labels copied out of the reader's item) until that record, where
 * each is announced as attached by pid then, mid-run, as the live tool does
 * when -p PID names a running job.
 */
struct held_targets {
	int n;
	struct nl_recording_target t[NL_MAX_PIDS];
	char comm[NL_MAX_PIDS][NL_RECORDING_MAX_STR + 1];
};

static void hold_target(struct held_targets *h, const struct nl_recording_target *rt)
{
	int i;

	for (i = 0; i < h->n && h->t[i].pid != rt->pid; i++)
		;
	if (i == NL_MAX_PIDS)
		return;
	if (i == h->n)
		h->n++;
	h->t[i] = *rt;
	snprintf(h->comm[i], sizeof(h->comm[i]), "%s", rt->comm ? rt->comm : "");
	h->t[i].comm = h->comm[i];
}

static void forget_target(struct held_targets *h, uint32_t pid)
{
	for (int i = 0; i < h->n; i++)
		if (h->t[i].pid == pid) {
			if (i != --h->n) {
				h->t[i] = h->t[h->n];
				memcpy(h->comm[i], h->comm[h->n], sizeof(h->comm[i]));
				h->t[i].comm = h->comm[i];
			}
			return;
		}
}

/*
 * --attach-at: the counted launch runs begun since the attach (their tokens,
 * per process). A run begun before it, its first launch not fed, ends in a
 * record fed after it: live, the probes attached there would not have
 * counted those launches at all (the process's run word starts empty), so
 * its end is taken out of the record (the record itself fed), and a record
 * that only ends such a run (NL_REC_RUN) is not fed. Fed as it is, the end
 * of a run user space never saw begin is counted as records lost.
 */
#define RUNS_KEPT 64

struct runs_since {
	uint32_t n;
	struct {
		uint32_t pid;
		uint64_t token;
	} r[RUNS_KEPT];
};

static bool run_begun_since(const struct runs_since *rs, uint32_t pid, uint64_t token)
{
	for (uint32_t i = 0; i < rs->n && i < RUNS_KEPT; i++)
		if (rs->r[i].pid == pid && rs->r[i].token == token)
			return true;
	return false;
}

/* The record to feed for rec (NULL: none), its run begun before the attach
 * taken out of a copy in *tmp. */
static const struct nl_rec_call *since_attach(struct runs_since *rs, const struct nl_rec_call *rec,
					      struct nl_rec_call *tmp)
{
	if (rec->flags & NL_RF_RET)
		return rec;
	if (rec->type == NL_REC_CALL && rec->run) {
		rs->r[rs->n % RUNS_KEPT].pid = rec->pid;
		rs->r[rs->n % RUNS_KEPT].token = NL_RUN_TOKEN(rec->run);
		rs->n++;
	}
	if (!rec->flush || run_begun_since(rs, rec->pid, NL_RUN_TOKEN(rec->flush)))
		return rec;
	if (rec->type == NL_REC_RUN)
		return NULL;
	*tmp = *rec;
	tmp->flush = 0;
	tmp->flush_ts = 0;
	return tmp;
}

static void attach_held(struct nl_app *a, struct held_targets *h, uint64_t ts)
{
	for (int i = 0; i < h->n; i++) {
		h->t[i].mid_run = true;
		h->t[i].ts_ns = ts;
		replay_target(a, &h->t[i]);
	}
	h->n = 0;
}

/*
 * --replay: the recording's items go through the very functions the live
 * run used, in the order it used them. With --attach-at N, the items before
 * the Nth record are not fed (but for the libraries attached): the run is
 * audited as if the tool had attached by pid right before that record.
 */
int nl_app_replay(struct nl_app *a)
{
	struct nl_recording_reader *r = NULL;
	struct nl_recording_item *it;
	char err[512];
	int rc;

	uint64_t nrec = 0, at = a->o.attach_at;
	struct held_targets *held = NULL;
	struct runs_since runs = { 0 };
	struct nl_rec_call tmp;

	it = malloc(sizeof(*it));
	if (at)
		held = calloc(1, sizeof(*held));
	if (!it || (at && !held)) {
		free(it);
		free(held);
		return -ENOMEM;
	}
	a->replay = true;
	rc = nl_recording_open(&r, a->o.replay_path, NL_RECORD_SCHEMA, err, sizeof(err));
	if (rc) {
		a->diag(0, "%s", err);
		goto out;
	}
	a->start_ns = nl_recording_header(r)->start_mono_ns;
	a->start_real_ns = nl_recording_header(r)->start_real_ns;
	/*
	 * The targets at the start, as the header names them: whether each was
	 * traced from its start or attached mid-run. A recording made since
	 * also has a target item for each (the same announcement again);
	 * older ones have only the header, and their processes were taken as
	 * attached mid-run, whatever the header said.
	 */
	for (int i = 0; a->engine && i < nl_recording_header(r)->ntargets; i++) {
		const struct nl_recording_target *ht = &nl_recording_header(r)->targets[i];

		if (at)
			hold_target(held, ht);
		else
			nl_engine_attach(a->engine, ht->pid, ht->ts_ns, ht->mid_run);
	}
	while ((rc = nl_recording_next(r, it, err, sizeof(err))) == NL_RECORDING_ITEM) {
		switch (it->kind) {
		case NL_RI_RECORD:
			if (at && ++nrec < at)
				break;
			if (at && nrec == at)
				attach_held(a, held,
					    it->rec.size >= sizeof(it->rec.data.call) && it->rec.data.call.ts_ns ?
						    it->rec.data.call.ts_ns - 1 :
						    a->last_ts_ns);
			if (at && it->rec.size == sizeof(it->rec.data.call)) {
				const struct nl_rec_call *rec = since_attach(&runs, &it->rec.data.call, &tmp);

				if (rec)
					nl_app_record(a, rec, sizeof(*rec));
				break;
			}
			nl_app_record(a, it->rec.data.bytes, it->rec.size);
			break;
		case NL_RI_LIB: {
			struct nl_attach_report rep = { .pid = (pid_t)it->lib.pid, .lib = it->lib.lib,
							.path = it->lib.path, .host_path = it->lib.path,
							.attached = it->lib.attached,
							.retprobes = it->lib.retprobes,
							.retprobes_allowed = it->lib.retprobes_allowed,
							.nmissing = it->lib.nmissing,
							.elapsed_ns = it->lib.elapsed_ns };

			memcpy(rep.missing, it->lib.missing, sizeof(int) * (size_t)it->lib.nmissing);
			nl_app_attached(a, &rep);
			break;
		}
		case NL_RI_TARGET:
			if (at && nrec < at)
				hold_target(held, &it->target);
			else
				replay_target(a, &it->target);
			break;
		case NL_RI_EXIT: {
			if (at && nrec < at) { /* gone before the attach: never a target */
				forget_target(held, it->exit.pid);
				break;
			}
			struct nl_app_target *t = nl_app_target_of(a, it->exit.pid);

			if (t)
				t->alive = false;
			nl_app_exited(a, it->exit.pid, it->exit.ts_ns);
			break;
		}
		case NL_RI_LOST:
			if (at && nrec < at) /* lost before the attach: not this run's */
				break;
			/* as the live run said it, when no record had told one */
			nl_app_first_loss(a);
			nl_app_lost(a, it->lost.pid, it->lost.count, it->lost.ts_ns);
			break;
		default:
			break;
		}
		if (a->write_err) {
			rc = a->write_err;
			goto out;
		}
	}
	if (rc < 0) {
		a->diag(0, "%s", err);
		goto out;
	}
	if (at && nrec < at) {
		a->diag(0, "--attach-at %llu: the recording has %llu records", (unsigned long long)at,
			(unsigned long long)nrec);
		rc = -ERANGE;
		goto out;
	}
	if (rc == NL_RECORDING_NO_TRAILER) {
		/*
		 * The recorder died (or the file was cut): audit what is there, up to
		 * the last item, then still fail, since the recording is incomplete.
		 */
		a->diag(0, "%s", err);
		memset(&a->replay_trailer, 0, sizeof(a->replay_trailer));
		a->replay_trailer.end_ns = a->last_ts_ns;
		a->replay_trailer.duration_ns = a->last_ts_ns > a->start_ns ? a->last_ts_ns - a->start_ns : 0;
		a->replay_incomplete = true;
	} else {
		const struct nl_recording_trailer *t = nl_recording_trailer(r);

		a->replay_trailer = *t;
		a->stats[NL_STAT_LOST_RINGBUF] = t->lost_ringbuf;
		a->stats[NL_STAT_LOST_STASH] = t->lost_stash;
		a->stats[NL_STAT_NESTED] = t->nested_folded;
	}
	rc = 0;
out:
	nl_recording_free(r);
	free(it);
	free(held);
	return rc;
}
