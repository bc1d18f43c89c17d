// SPDX-License-Identifier: MIT
/*
 * Targets: the table of traced processes (added, refused, reused slots),
 * their reaping when they exit, discovery of new ones, and the periodic
 * tick that does both and polls the loader's loss counters.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/util.h"
#include "app/app_int.h"
#include "attach/caps.h"
#include "engine/engine.h"
#include "record/recording.h"

struct nl_app_target *nl_app_target_of(struct nl_app *a, uint32_t pid)
{
	struct nl_app_target *found = NULL;

	for (int i = 0; i < a->ntargets; i++)
		if ((uint32_t)a->targets[i].pid == pid && (!found || a->targets[i].alive))
			found = &a->targets[i];
	return found;
}

int nl_app_add_target(struct nl_app *a, pid_t pid, const char *const *paths, int npaths,
		      bool require_hip)
{
	struct nl_app_target *t = NULL;
	struct nl_found id;
	int err;

	/* the slot of a target that exited is free again */
	for (int i = 0; i < a->ntargets && !t; i++)
		if (!a->targets[i].alive)
			t = &a->targets[i];
	if (!t) {
		if (a->ntargets >= NL_MAX_PIDS) {
			a->diag(0, "process %d not traced: already %d targets", (int)pid, NL_MAX_PIDS);
			return -E2BIG;
		}
		t = &a->targets[a->ntargets++];
	}
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (nl_identify("/proc", pid, &id)) {
		a->diag(0, "no such process: %d", (int)pid);
		return -ESRCH;
	}
	t->starttime = id.starttime;
	snprintf(t->comm, sizeof(t->comm), "%s", id.comm);
	snprintf(t->container_id, sizeof(t->container_id), "%s", id.cg.container_id);
	snprintf(t->pod_uid, sizeof(t->pod_uid), "%s", id.cg.pod_uid);
	err = nl_loader_add_target(a->l, pid, paths, npaths, require_hip);
	if (err == -ENOENT) {
		a->diag(0, "process %d (%s) has no HIP runtime mapped (libamdhip64.so*); "
			   "--wait-lib waits for it, --lib PATH names it", (int)pid, t->comm);
		return err;
	}
	if (err == -ESRCH) {
		return err; /* loader said which */
	}
	if (err) {
		a->diag(0, "cannot attach to process %d (%s): %s", (int)pid, t->comm, strerror(-err));
		return err;
	}
	t->alive = true;
	a->ntargets_alive++;
	if (a->metrics)
		nl_metrics_set_target(a->metrics, (uint32_t)pid, t->container_id, t->pod_uid);
	if (a->live)
		nl_live_target(a->live, (uint32_t)pid, t->comm, t->container_id);
	if (t->container_id[0])
		a->diag(1, "process %d (%s): container %.12s%s%s", (int)pid, t->comm, t->container_id,
			t->pod_uid[0] ? ", pod " : "", t->pod_uid);
	/* a running target was there before the probes: its first batch may be partial */
	nl_app_target_added(a, (uint32_t)pid, nl_mono_ns(), pid != a->child, t->comm, t->container_id,
			    t->pod_uid);
	return 0;
}

void nl_app_target_added(struct nl_app *a, uint32_t pid, uint64_t ts, bool mid_run,
			 const char *comm, const char *container_id, const char *pod_uid)
{
	if (a->engine)
		nl_engine_attach(a->engine, pid, ts, mid_run);
	if (a->rec && !a->rec_err) {
		char packed[32 + 1 + 65 + 1 + 37];
		struct nl_recording_target rt = { .pid = pid, .mid_run = mid_run, .ts_ns = ts,
						  .comm = packed };

		if (container_id && *container_id)
			snprintf(packed, sizeof(packed), "%s%c%s%c%s", comm, NL_APP_LABEL_SEP, container_id,
				 NL_APP_LABEL_SEP, pod_uid ? pod_uid : "");
		else
			snprintf(packed, sizeof(packed), "%s", comm);
		nl_app_rec_check(a, nl_recording_write_target(a->rec, &rt));
	}
}

void nl_app_lost(struct nl_app *a, uint32_t pid, uint64_t count, uint64_t ts)
{
	if (a->engine) /* the counters do not say whose records they were: pid 0 */
		nl_engine_lost(a->engine, pid, count, ts);
	if (a->rec && !a->rec_err)
		nl_app_rec_check(a, nl_recording_write_lost(a->rec, pid, count, ts));
}

void nl_app_exited(struct nl_app *a, uint32_t pid, uint64_t ts)
{
	if (a->engine)
		nl_engine_exit(a->engine, pid, ts);
	if (a->rec && !a->rec_err)
		nl_app_rec_check(a, nl_recording_write_exit(a->rec, pid, ts));
}

void nl_app_poll_lost(struct nl_app *a)
{
	uint64_t s[NL_STAT_MAX];

	if (nl_loader_stats(a->l, s))
		return;
	if (s[NL_STAT_LOST_RINGBUF] > a->stats[NL_STAT_LOST_RINGBUF] ||
	    s[NL_STAT_LOST_STASH] > a->stats[NL_STAT_LOST_STASH]) {
		uint64_t n = s[NL_STAT_LOST_RINGBUF] - a->stats[NL_STAT_LOST_RINGBUF] +
			     s[NL_STAT_LOST_STASH] - a->stats[NL_STAT_LOST_STASH];

		/*
		 * The engine hears of a loss from the next record of the CPU that
		 * lost it (lost_before), at its place in the stream; these totals
		 * are for the summary, and for what no record told at the end.
		 */
		a->diag(1, "%" PRIu64 " records lost since the last check", n);
	}
	memcpy(a->stats, s, sizeof(s));
}

static void target_gone(struct nl_app *a, struct nl_app_target *t)
{
	t->alive = false;
	a->ntargets_alive--;
	/* drains the records the target wrote before it died, then its open run */
	nl_loader_remove_target(a->l, t->pid);
	nl_app_exited(a, (uint32_t)t->pid, nl_mono_ns());
	if (a->metrics)
		nl_metrics_target_exit(a->metrics, (uint32_t)t->pid);
	if (a->live)
		nl_live_target_exit(a->live, (uint32_t)t->pid);
	a->diag(1, "process %d (%s) exited", (int)t->pid, t->comm);
}

static void on_found(void *ctx, const struct nl_found *f)
{
	struct nl_app *a = ctx;

	a->diag(1, "found process %d (%s)%s%.12s", (int)f->pid, f->comm,
		f->cg.container_id[0] ? " in container " : "", f->cg.container_id);
	/* a process that exits meanwhile, or that we cannot attach, is said and skipped */
	nl_app_add_target(a, f->pid, NULL, 0, true);
}

void nl_app_discover(struct nl_app *a)
{
	int rc;

	if (!a->discover)
		return;
	/* CAP_SYS_PTRACE: the maps and cgroup files of other users' processes */
	nl_caps_raise();
	rc = nl_discover_scan(a->discover, on_found, a);
	nl_caps_lower();
	if (rc < 0)
		a->diag(0, "cannot scan /proc: %s", strerror(-rc));
}

void nl_app_tick(struct nl_app *a, uint64_t now_ns)
{
	for (int i = 0; i < a->ntargets; i++) {
		struct nl_app_target *t = &a->targets[i];
		unsigned long long st, vsize;

		if (!t->alive)
			continue;
		if (t->pid == a->child && !a->child_reaped) {
			if (waitpid(a->child, &a->child_status, WNOHANG) == a->child) {
				a->child_reaped = true;
				target_gone(a, t);
			}
			continue;
		}
		/* gone, a zombie, or the PID now belongs to another process */
		if (nl_proc_stat("/proc", t->pid, NULL, 0, &st, &vsize) || st != t->starttime) {
			target_gone(a, t);
			nl_discover_forget(a->discover, t->pid);
		}
	}
	nl_loader_rescan(a->l);
	nl_app_discover(a);
	nl_app_poll_lost(a);
	nl_app_publish_counters(a);
	nl_app_live_tick(a, now_ns);
	/* a SIGKILLed tool leaves a recording readable up to here */
	if (a->rec && !a->rec_err)
		nl_app_rec_check(a, nl_recording_flush(a->rec));
	nl_app_heartbeat_tick(a, now_ns);
}
