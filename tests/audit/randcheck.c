/* SPDX-License-Identifier: MIT */
/*
 * A random program through the engine, as --replay feeds it, compared with
 * its truth; the program written as a --record file; shrinking a program
 * that disagrees (randprog.h).
 */
#include "randprog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "record/decode.h"
#include "record/recording.h"

#define RP_MAX_EVENTS_PRINT 256

/* Whether call x is the one whose record says ts: the same time in a
 * generated program; inside the call's span in a live run (end_ns). */
static bool call_at(const struct rp_call *x, uint64_t ts)
{
	return x->end_ns ? ts >= x->rec.ts_ns && ts <= x->end_ns : ts == x->rec.ts_ns;
}

void rp_result_batch(const struct rp_prog *p, struct rp_result *r, const struct nl_batch_audit *a)
{
	if (a->pid != p->pid)
		return;
	r->naudits++;
	/* the batch is the one whose first copy opens the audit's copy window:
	 * an engine that merged or split copy segments numbers the rest shifted */
	const struct nl_stage_audit *cp = &a->stage[NL_STAGE_COPY];
	int T = -1;

	for (int i = 0; i < p->n && T < 0; i++) {
		const struct rp_call *x = &p->calls[i];

		if (x->stage == NL_STAGE_COPY && call_at(x, cp->first_ns))
			T = x->batch;
	}
	for (int i = 0; i < p->n; i++) {
		const struct rp_call *x = &p->calls[i];
		uint64_t end = x->end_ns ? x->end_ns : x->rec.ts_ns;

		if (x->stage == NL_STAGE_COPY && x->batch != T && cp->ops &&
		    end >= cp->first_ns && x->rec.ts_ns <= cp->last_ns)
			r->merged[x->batch] = true;
	}
	if (T < 0 || r->have[T]) {
		r->extra++;
		r->extra_untrusted += a->verdict == NL_VERDICT_UNTRUSTED;
		return;
	}
	if (a->batch != (uint64_t)p->local[T])
		r->numbering++;
	r->have[T] = true;
	r->got[T].verdict = a->verdict;
	r->got[T].skip_mask = a->skip_mask;
	r->got[T].missing_mask = a->missing_mask;
	r->got[T].pipeline = a->pipeline;
	r->got[T].number = a->batch;
}

static int expected_role(char name)
{
	switch (name) {
	case 'M':
	case 'A':
	case 'm':
		return NL_ROLE_COPY;
	case 'D':
	case 'N':
	case 'd':
		return NL_ROLE_SPARSE;
	case 'C':
		return NL_ROLE_COMPUTE;
	default:
		return NL_ROLE_OTHER;
	}
}

void rp_result_summary(const struct rp_prog *p, struct rp_result *r, const struct nl_summary *s)
{
	size_t o = strlen(r->roles);

	r->summary = true;
	r->evidence_valid = s->evidence_valid;
	r->invalid_mask = s->invalid_mask;
	for (uint32_t i = 0; !r->mid && i < s->nstreams; i++) {
		const struct nl_stream_summary *ss = &s->streams[i];

		if (ss->pid != p->pid)
			continue;
		for (int k = 0; k < p->nstreams; k++) {
			bool pt = p->stream_owner[k] != 0, again = false;

			if (ss->handle != p->stream_handle[k] || (pt && ss->tid != p->stream_owner[k]))
				continue;
			/* a recreated stream: its handle is named once, by the
			 * summary's last occupant of it (the handles of a
			 * turn's two streams may alternate, spec.lifo) */
			for (int j = k + 1; j < p->nstreams; j++)
				again |= p->stream_handle[j] == p->stream_handle[k] &&
					 p->stream_owner[j] == p->stream_owner[k];
			if (again)
				continue;
			if (ss->role != expected_role(p->stream_name[k]) &&
			    o + 12 < sizeof(r->roles))
				o += (size_t)snprintf(r->roles + o, sizeof(r->roles) - o, "%s%c=%s",
						      o ? "," : "", p->stream_name[k],
						      nl_role_name(ss->role));
		}
	}
}

static void edges_str(uint32_t mask, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int e = 0; e < NL_NEDGES; e++)
		if (mask & (1u << e))
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", nl_edge_name(e));
	if (!o)
		snprintf(buf, len, "none");
}

static void drop_str(const struct rp_prog *p, const struct rp_drop *d, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s",
		 p->truth[d->batch].verdict == NL_VERDICT_TRUSTED ? "redundant-" : "",
		 rp_purpose_name(d->purpose), d->with_record ? "+rec" : "");
}

/* Where batch T stands to the program's dropped waits: the nearest drop of
 * its own pipeline (by number within it); none near, but one in the other
 * pipeline: cross-pipeline. */
static void context(const struct rp_prog *p, int T, char *buf, size_t len)
{
	static const int offs[] = { 0, 1, -1, 2, -2, 3, -3 };
	int P = T < p->spec.nb ? p->pipe[T] : 0, L = T < p->spec.nb ? p->local[T] : T;

	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
		for (int i = 0; i < p->spec.ndrops; i++) {
			const struct rp_drop *d = &p->spec.drops[i];

			if (p->pipe[d->batch] != P || p->local[d->batch] != L + offs[k])
				continue;
			snprintf(buf, len, "drop@T%+d:%s%s%s", offs[k],
				 p->truth[d->batch].verdict == NL_VERDICT_TRUSTED ? "redundant-" : "",
				 rp_purpose_name(d->purpose), d->with_record ? "+rec" : "");
			if (!offs[k])
				buf[6] = '\0' == 0 ? buf[6] : buf[6];
			return;
		}
	for (int i = 0; i < p->spec.ndrops; i++)
		if (p->pipe[p->spec.drops[i].batch] != P) {
			char d[32];

			drop_str(p, &p->spec.drops[i], d, sizeof(d));
			snprintf(buf, len, "cross-pipeline:%s", d);
			return;
		}
	snprintf(buf, len, "%s", p->spec.ndrops ? "drop-far" : "clean");
}

/* The tags of a program's shape (randprog.h, enum rp_shape). */
static const char *shape_tag(const struct rp_prog *p)
{
	static const char *const tags[RP_NSHAPES] = { "", " [altcopy]", " [pipes]",
						      " [pipes] [recreate]" };

	return p->spec.shape > 0 && p->spec.shape < RP_NSHAPES ? tags[p->spec.shape] : "";
}

static void add_diff(const struct rp_prog *p, struct rp_result *r, int T, const char *what)
{
	char ctx[48] = "", pipe[8] = "";

	if (r->ndiffs >= RP_MAX_DIFFS)
		return;
	if (T >= 0)
		context(p, T, ctx, sizeof(ctx));
	if (T >= 0 && T < p->spec.nb && p->spec.shape >= RP_S_TWO)
		snprintf(pipe, sizeof(pipe), " p%d", p->pipe[T]);
	/* tags: a wait covered a newer batch; blocking streams ordered by the null
	 * stream; the shape beyond one pipeline with one copy stream */
	snprintf(r->diffs[r->ndiffs], RP_CLASS_LEN, "%s%s%s%s%s%s%s%s%s", what, ctx[0] ? " " : "", ctx,
		 pipe, p->oversync ? " [oversync]" : "",
		 p->spec.blocking && p->spec.compute == RP_C_NULL ? " [implicit]" : "",
		 shape_tag(p), p->spec.reuse ? " [reuse]" : "", rp_tail_of(&p->spec) ? " [tail]" : "");
	r->diff_batch[r->ndiffs++] = T;
}

/* Pipelines and batch numbers (docs/output.md): each pipeline's batches under
 * one engine pipeline of their own, numbered 0, 1, 2 ... within it (a number
 * is compared only while every earlier batch of its pipeline has its audit).
 * Which pipeline is 0 is the engine's order of discovery, not compared. One
 * disagreement of each kind at most. */
static void numbering(const struct rp_prog *p, struct rp_result *r)
{
	int64_t map[RP_MAX_PIPES] = { -1, -1 };
	bool split = false, number = false, gap[RP_MAX_PIPES] = { false, false };
	char what[64];

	for (int T = 0; T < p->spec.nb; T++) {
		int P = p->pipe[T];

		if (!r->have[T]) {
			gap[P] = true;
			continue;
		}
		if (map[P] < 0)
			map[P] = r->got[T].pipeline;
		else if (map[P] != (int64_t)r->got[T].pipeline && !split) {
			split = true;
			snprintf(what, sizeof(what), "split-pipeline:%u", r->got[T].pipeline);
			add_diff(p, r, T, what);
		}
		if (!gap[P] && r->got[T].number != (uint64_t)p->local[T] && !number) {
			number = true;
			snprintf(what, sizeof(what), "numbering:%llu",
				 (unsigned long long)r->got[T].number);
			add_diff(p, r, T, what);
		}
	}
	if (map[1] >= 0 && map[0] == map[1])
		add_diff(p, r, -1, "one-pipeline");
}

/* Batch T skipped where the truth says otherwise: the class names the
 * reasons. */
static void skipped_diff(const struct rp_prog *p, struct rp_result *r, int T)
{
	char what[64];
	size_t o = 0;

	o += (size_t)snprintf(what + o, sizeof(what) - o, "skipped(");
	for (int k = 0; k < NL_NSKIP; k++)
		if (r->got[T].skip_mask & (1u << k))
			o += (size_t)snprintf(what + o, sizeof(what) - o, "%s ", nl_skip_name(k));
	snprintf(what + o - (what[o - 1] == ' '), sizeof(what) - o + 1, ")");
	add_diff(p, r, T, what);
}

/* A verdict and its named edges that the truth t accepts: the same verdict,
 * and when untrusted the first edge named and none that was ordered. */
static bool judged_right(const struct rp_truth *t, int v, uint32_t m)
{
	if (v != t->verdict)
		return false;
	return v != NL_VERDICT_UNTRUSTED ||
	       ((m & (1u << t->first)) && !(m & ~t->all_mask));
}

/* Attached mid-run, the skip reasons right for any batch: what began
 * before the tool looked, and what was open at exit (nl_drain) */
static const uint32_t mid_skips = (1u << NL_SKIP_ATTACHED_MID_BATCH) |
				  (1u << NL_SKIP_PRETRACE_STREAM) | (1u << NL_SKIP_UNKNOWN_HANDLE) |
				  (1u << NL_SKIP_TARGET_EXITED);

void rp_result_compare(const struct rp_prog *p, struct rp_result *r)
{
	char what[64], a[40], b[40];

	if (r->naudits == 0 && p->handoffs < 4) {
		/* roles cannot be learned from so few hand-offs: nothing audited is right */
		((struct rp_prog *)p)->undecidable = RP_U_FEW_HANDOFFS;
		return;
	}
	if (r->roles[0]) {
		/* every batch is judged on wrong roles: one disagreement, the roles */
		snprintf(what, sizeof(what), "roles:%s", r->roles);
		add_diff(p, r, -1, what);
		return;
	}
	for (int T = 0; T < p->spec.nb; T++) {
		const struct rp_truth *t = &p->truth[T];

		if (r->excused[T])
			continue;
		if (!r->have[T]) {
			add_diff(p, r, T, r->merged[T] ? "merged-copy-segment" : "no-audit");
			continue;
		}
		int v = r->got[T].verdict;
		uint32_t m = r->got[T].missing_mask;

		if (p->unsure[T]) {
			/* the engine must skip, not guess: a verdict here is a
			 * disagreement, unless it is right both ways (the same
			 * verdict and a named edge unordered both ways) */
			if (v != NL_VERDICT_SKIPPED &&
			    (!p->other_known || !judged_right(t, v, m) ||
			     !judged_right(&p->other[T], v, m)))
				add_diff(p, r, T, "guessed(pretrace_stream)");
		} else if (t->verdict == NL_VERDICT_SKIPPED) {
			/* never consumed: skipped so, or target_exited where the
			 * engine cannot show compute ran no step more (right, not
			 * valid: counted apart; pretrace_stream with it where the
			 * flags of streams created before tracing would order its
			 * reads had there been any), and attached mid-run as any
			 * batch open at exit is (below) */
			uint32_t ok = (1u << NL_SKIP_NOT_CONSUMED) | (1u << NL_SKIP_TARGET_EXITED) |
				      (r->got[T].skip_mask & (1u << NL_SKIP_TARGET_EXITED) ?
					       1u << NL_SKIP_PRETRACE_STREAM : 0);

			r->unconsumed_exited += v == NL_VERDICT_SKIPPED &&
						(r->got[T].skip_mask & (1u << NL_SKIP_TARGET_EXITED));
			if (r->mid)
				ok |= mid_skips;
			if (v != NL_VERDICT_SKIPPED) {
				edges_str(m, a, sizeof(a));
				snprintf(what, sizeof(what), "unconsumed:%s%s%s", nl_verdict_name(v),
					 v == NL_VERDICT_UNTRUSTED ? ":" : "",
					 v == NL_VERDICT_UNTRUSTED ? a : "");
				add_diff(p, r, T, what);
			} else if (r->got[T].skip_mask & ~ok) {
				skipped_diff(p, r, T);
			}
		} else if (v == NL_VERDICT_SKIPPED && r->mid && !(r->got[T].skip_mask & ~mid_skips)) {
			/* attached mid-run: what began before the tool looked
			 * (a batch, a stream, an event) is not known, and a
			 * batch it touches is rightly not judged; nor is one
			 * open at exit (nl_drain) */
		} else if (v == NL_VERDICT_SKIPPED) {
			skipped_diff(p, r, T);
		} else if (t->verdict == NL_VERDICT_TRUSTED && v == NL_VERDICT_UNTRUSTED) {
			edges_str(m, a, sizeof(a));
			snprintf(what, sizeof(what), "accused:%s", a);
			add_diff(p, r, T, what);
		} else if (t->verdict == NL_VERDICT_UNTRUSTED && v == NL_VERDICT_TRUSTED) {
			snprintf(what, sizeof(what), "missed:%s", nl_edge_name(t->first));
			add_diff(p, r, T, what);
		} else if (t->verdict == NL_VERDICT_UNTRUSTED &&
			   (!(m & (1u << t->first)) || (m & ~t->all_mask))) {
			edges_str(m, a, sizeof(a));
			edges_str(t->all_mask, b, sizeof(b));
			snprintf(what, sizeof(what), "wrong-edge:%s->%s", nl_edge_name(t->first), a);
			add_diff(p, r, T, what);
		}
	}
	if (r->extra)
		add_diff(p, r, p->spec.nb, "extra-audits");
	/* the one line a user gates on (--check): a run with a batch read
	 * unordered (whichever way its streams were created) must not say its
	 * evidence is valid; attached mid-run, a batch whose reading ops all
	 * came before the attach is not in the run the tool saw. Before,
	 * such faults were counted: most of the 92 programs of seeds
	 * 1-20,000 under -M (an in-flight batch, a reading op of it after the
	 * attach, is counted still) */
	bool faulty = false;

	for (int T = 0; T < p->spec.nb; T++)
		faulty |= p->truth[T].verdict == NL_VERDICT_UNTRUSTED && !p->unsure[T] &&
			  !r->unseen[T];
	if (faulty && r->summary && r->evidence_valid)
		add_diff(p, r, -1, "valid-despite-fault");
	if (p->spec.shape != RP_S_SINGLE && !r->mid)
		numbering(p, r);
}

struct collect {
	const struct rp_prog *p;
	struct rp_result *r;
};

FILE *rp_audit_json;

static void on_batch(void *ctx, const struct nl_batch_audit *a)
{
	struct collect *c = ctx;

	if (rp_audit_json)
		nl_audit_json_batch(rp_audit_json, a);
	rp_result_batch(c->p, c->r, a);
}

static void on_summary(void *ctx, const struct nl_summary *s)
{
	struct collect *c = ctx;

	rp_result_summary(c->p, c->r, s);
}

bool rp_counted_launches;
bool rp_strict_attach;

int rp_run(const struct rp_prog *p, struct rp_result *r)
{
	return rp_run_attached(p, false, r);
}

/* Calls at.. of p fed to a fresh engine as --replay feeds them (the
 * target announced at attach_ts, each record decoded, the exit, the end),
 * and compared with the truth. Attached after call 0, the batches any of
 * whose calls came before are not compared (r->excused). */
static int feed_from(const struct rp_prog *p, int at, uint64_t attach_ts, bool mid_run,
		     struct rp_result *r)
{
	struct collect c = { .p = p, .r = r };
	struct nl_sink sink = { .ctx = &c, .batch = on_batch, .summary = on_summary };
	struct nl_engine_opts o;
	struct nl_engine *e;
	bool *cnt = calloc((size_t)p->n + 1, sizeof(*cnt));

	memset(r, 0, sizeof(*r));
	memset(&o, 0, sizeof(o));
	o.strict_attach = rp_strict_attach;
	e = cnt ? nl_engine_new(&o, &sink) : NULL;
	if (!e) {
		free(cnt);
		return -ENOMEM;
	}
	r->mid = at > 0;
	for (int i = 0; i < at; i++)
		if (p->calls[i].batch >= 0 && p->calls[i].batch < p->spec.nb)
			r->excused[p->calls[i].batch] = r->unseen[p->calls[i].batch] = true;
	for (int i = at; i < p->n; i++)
		if (p->calls[i].batch >= 0 && p->calls[i].batch < p->spec.nb && p->calls[i].reads)
			r->unseen[p->calls[i].batch] = false;
	nl_engine_attach(e, p->pid, attach_ts, mid_run);
	if (rp_counted_launches)
		rp_counted_calls(p, cnt);
	for (int i = at; i < p->n; i++) {
		struct nl_call call;

		if (nl_decode(&p->calls[i].rec, sizeof(p->calls[i].rec), &call) == 0) {
			if (rp_counted_launches && cnt[i])
				call.fields &= ~NL_F_FN;
			nl_engine_feed(e, &call);
		}
	}
	free(cnt);
	nl_engine_exit(e, p->pid, p->end_ns);
	nl_engine_finish(e, p->end_ns + 1000);
	nl_engine_free(e);
	rp_result_compare(p, r);
	return 0;
}

int rp_run_attached(const struct rp_prog *p, bool mid_run, struct rp_result *r)
{
	return feed_from(p, 0, p->start_ns, mid_run, r);
}

struct lossy {
	struct rp_loss *l;
	uint32_t pid;
};

static void on_lossy_batch(void *ctx, const struct nl_batch_audit *a)
{
	struct lossy *c = ctx;

	if (a->pid != c->pid)
		return;
	if (rp_audit_json)
		nl_audit_json_batch(rp_audit_json, a);
	c->l->audits++;
	if (a->verdict == NL_VERDICT_UNTRUSTED && !c->l->untrusted++)
		c->l->untrusted_batch = (uint32_t)a->batch;
	if (a->skip_mask & (1u << NL_SKIP_LOST_RECORDS))
		c->l->skipped_lost++;
}

int rp_run_lossy(const struct rp_prog *p, uint64_t loss_seed, struct rp_loss *out)
{
	struct lossy c = { .l = out, .pid = p->pid };
	struct nl_sink sink = { .ctx = &c, .batch = on_lossy_batch };
	struct nl_engine_opts o;
	struct nl_engine *e;
	bool *cnt = calloc((size_t)p->n + 1, sizeof(*cnt));
	uint64_t x = loss_seed, pend = 0;
	bool half;
	int delay;

	memset(out, 0, sizeof(*out));
	memset(&o, 0, sizeof(o));
	if (!cnt)
		return -ENOMEM;
	e = p->n > 1 ? nl_engine_new(&o, &sink) : NULL;
	if (!e) {
		free(cnt);
		return p->n > 1 ? -ENOMEM : -EINVAL;
	}
	out->from = (int)(rp_rnd(&x) % (uint64_t)p->n);
	/* short losses most often, up to a few iterations' records */
	out->len = 1 + (int)(rp_rnd(&x) % (uint64_t)(1 + (rp_rnd(&x) % 4 == 0 ? 200 : 12)));
	if (out->from + out->len > p->n)
		out->len = p->n - out->from;
	half = rp_rnd(&x) % 2;
	delay = (int)(rp_rnd(&x) % 2);
	out->told_at = -1;
	nl_engine_attach(e, p->pid, p->start_ns, false);
	if (rp_counted_launches)
		rp_counted_calls(p, cnt);
	for (int i = 0; i < p->n; i++) {
		struct nl_call call;

		if (i >= out->from && i < out->from + out->len && (!half || rp_rnd(&x) % 2)) {
			pend++;
			out->lost++;
			if (rp_audit_json)
				fprintf(rp_audit_json, "{\"type\":\"lost\",\"op\":%d}\n", i);
			continue;
		}
		if (nl_decode(&p->calls[i].rec, sizeof(p->calls[i].rec), &call))
			continue;
		if (pend && delay-- <= 0) {
			/* as nl_app_record: the loss before the record that tells it */
			nl_engine_lost(e, 0, pend, nl_call_loss_ts(&call));
			if (out->told_at < 0)
				out->told_at = i;
			pend = 0;
			delay = (int)(rp_rnd(&x) % 2);
		}
		if (rp_counted_launches && cnt[i])
			call.fields &= ~NL_F_FN;
		nl_engine_feed(e, &call);
	}
	free(cnt);
	if (pend) /* never told: the tool's exit reads the counter (nl_app_lost) */
		nl_engine_lost(e, 0, pend, p->end_ns);
	nl_engine_exit(e, p->pid, p->end_ns);
	nl_engine_finish(e, p->end_ns + 1000);
	nl_engine_free(e);
	return 0;
}

int rp_attach_point(const struct rp_prog *p, uint64_t seed)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;

	z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
	z ^= z >> 32;
	return p->n > 1 ? 1 + (int)(z % (uint64_t)(p->n - 1)) : 0;
}

int rp_run_attached_at(const struct rp_prog *p, int at, struct rp_result *r)
{
	if (at < 0 || at >= p->n)
		return -EINVAL;
	return feed_from(p, at, p->calls[at].rec.ts_ns - 1, true, r);
}

int rp_write_recording(const struct rp_prog *p, const char *path)
{
	static const char *const argv[] = { "nanlog-bpf", "--record", "randprog" };
	struct nl_recording_target tgt = { .pid = p->pid, .ts_ns = p->start_ns, .comm = "randprog" };
	struct nl_recording_header h = { 0 };
	struct nl_recording_trailer t = { 0 };
	struct nl_recording_writer *w = NULL;
	char err[256];
	int rc;

	h.rec_schema = NL_RECORD_SCHEMA;
	h.tool_version = "randprog";
	h.kernel_release = "";
	h.start_mono_ns = p->start_ns;
	h.start_real_ns = 1700000000000000000ull;
	h.argc = 3;
	h.argv = argv;
	h.ntargets = 1;
	h.targets = &tgt;
	rc = nl_recording_create(&w, path, true, &h, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s\n", err);
		return rc;
	}
	/* traced from its start, as `nanlog-bpf --record -- CMD` records it */
	rc = nl_recording_write_target(w, &tgt);
	for (int i = 0; i < p->n && !rc; i++)
		rc = nl_recording_write_record(w, &p->calls[i].rec, sizeof(p->calls[i].rec));
	if (!rc)
		rc = nl_recording_write_exit(w, p->pid, p->end_ns);
	t.end_ns = p->end_ns + 1000;
	t.records = (uint64_t)p->n;
	t.duration_ns = t.end_ns - p->start_ns;
	if (!rc)
		rc = nl_recording_finish(w, &t);
	int rc2 = nl_recording_close(w);

	return rc ? rc : rc2;
}

int rp_write_truth(const struct rp_prog *p, const struct rp_result *r, uint64_t from_seed,
		   FILE *f)
{
	char desc[512];

	rp_spec_describe(&p->spec, desc, sizeof(desc));
	fprintf(f, "{\"from_seed\":%llu,\"detail_seed\":\"%llu\",\"spec\":\"%s\",\"undecidable\":\"%s\","
		   "\"oversync\":%s,",
		(unsigned long long)from_seed, (unsigned long long)p->spec.seed, desc, rp_undecidable_name(p->undecidable),
		p->oversync ? "true" : "false");
	fprintf(f, "\"class\":\"%s\",\"streams\":[", r && r->ndiffs ? r->diffs[0] : "");
	for (int k = 0; k < p->nstreams; k++)
		fprintf(f, "%s{\"stream\":\"0x%llx\",\"tid\":%u,\"name\":\"%c\",\"role\":\"%s\"}",
			k ? "," : "", (unsigned long long)p->stream_handle[k], p->stream_owner[k],
			p->stream_name[k], nl_role_name(expected_role(p->stream_name[k])));
	fprintf(f, "],\"batches\":[");
	for (int T = 0; T < p->spec.nb; T++) {
		const struct rp_truth *t = &p->truth[T];

		fprintf(f, "%s{\"pipeline\":%d,\"batch\":%d,\"verdict\":\"%s\",\"edge\":",
			T ? "," : "", p->pipe[T], p->local[T], nl_verdict_name(t->verdict));
		if (t->first < 0)
			fprintf(f, "null,\"edges\":[]}");
		else {
			fprintf(f, "\"%s\",\"edges\":[", nl_edge_name(t->first));
			int n = 0;

			for (int e = 0; e < NL_NEDGES; e++)
				if (t->all_mask & (1u << e))
					fprintf(f, "%s\"%s\"", n++ ? "," : "", nl_edge_name(e));
			fprintf(f, "]}");
		}
	}
	fprintf(f, "]}\n");
	return ferror(f) ? -EIO : 0;
}

/* ---- shrinking ---------------------------------------------------------------------- */

/* The class without its batch: what must stay while shrinking. */
static bool still(const struct rp_spec *s, const char *cls)
{
	struct rp_prog p;
	struct rp_result r;
	bool same = false;

	if (rp_build(&p, s))
		return false;
	rp_run(&p, &r);
	for (int i = 0; i < r.ndiffs && !same; i++)
		same = strcmp(r.diffs[i], cls) == 0;
	rp_free(&p);
	return same;
}

/* After the batches of s changed from those of old (first: pipeline whose
 * first batch went, -1 none): each drop follows its batch, by pipeline and
 * number within it; a drop whose batch went goes too. */
static void drops_follow(struct rp_spec *s, const struct rp_spec *old, int first)
{
	int8_t op[RP_MAX_BATCHES], ol[RP_MAX_BATCHES], np[RP_MAX_BATCHES], nl[RP_MAX_BATCHES];
	int n = 0;

	rp_schedule(old, op, ol);
	rp_schedule(s, np, nl);
	for (int i = 0; i < s->ndrops; i++) {
		struct rp_drop d = s->drops[i];
		int P = op[d.batch], L = ol[d.batch] - (P == first), T;

		for (T = 0; T < s->nb && (np[T] != P || nl[T] != L); T++)
			;
		if (L < 0 || T == s->nb)
			continue;
		d.batch = (int8_t)T;
		s->drops[n++] = d;
	}
	s->ndrops = n;
}

void rp_minimize(struct rp_spec *s, const char *cls)
{
	bool changed = true;
	/* a program of several copy streams or pipelines keeps what its draw
	 * gives at least (4 batches, 2 of pipeline 1): fewer cannot show the
	 * roles of its streams, and the class would be about too few batches */
	int min0 = s->shape ? 4 : 2, min1 = 2;

	while (changed) {
		changed = false;
		for (int step = 0; step < 34; step++) {
			struct rp_spec t = *s;

			switch (step) {
			case 0: /* fewer batches: the last */
				if (t.nb - t.nb1 <= min0)
					continue;
				t.nb--;
				drops_follow(&t, s, -1);
				break;
			case 1: /* the first */
				if (t.nb - t.nb1 <= min0)
					continue;
				t.nb--;
				drops_follow(&t, s, 0);
				break;
			case 2: t.noise_pool = false; break;
			case 3: t.noise_watchdog = false; break;
			case 4: t.noise_item = false; break;
			case 5: t.loader = t.midcopy = false; break;
			case 6: t.autograd = false; break;
			case 7: t.early = false; break;
			case 8: t.buf_wait = false; break;
			case 9: t.added_cm = false; break;
			case 10: t.spt = false; break;
			case 11: t.pretrace = false; break;
			case 12: t.blocking = false; break;
			case 13: t.split = false; break;
			case 14: t.coll = t.split = t.noise_watchdog = false; break;
			case 15:
				if (t.ncopies <= 1)
					continue;
				t.ncopies = 1;
				break;
			case 16:
				if (t.depth <= 1)
					continue;
				t.depth--;
				if (t.lag > t.depth)
					t.lag = t.depth;
				break;
			case 17:
				if (t.slots == t.depth + 1 || t.fresh)
					continue;
				t.slots = t.depth + 1;
				break;
			case 18: case 19: case 20:
				if (step - 18 >= t.ndrops)
					continue;
				for (int i = step - 18; i + 1 < t.ndrops; i++)
					t.drops[i] = t.drops[i + 1];
				t.ndrops--;
				break;
			case 21: case 22: case 23:
				if (step - 21 >= t.ndrops || !t.drops[step - 21].with_record)
					continue;
				t.drops[step - 21].with_record = false;
				break;
			case 24: /* fewer batches of pipeline 1: the last, the first */
			case 25:
				if (t.nb1 <= min1)
					continue;
				t.nb1--;
				t.nb--;
				drops_follow(&t, s, step == 25 ? 1 : -1);
				break;
			case 29: /* pipeline 0's first turn shorter */
			case 30:
				if (!t.lead0)
					continue;
				t.nb -= step == 29 ? 1 : t.lead0;
				t.lead0 -= step == 29 ? 1 : t.lead0;
				drops_follow(&t, s, -1);
				break;
			case 32: t.midcopy = false; break;
			case 33: /* one batch fewer never consumed */
				if (!t.tail)
					continue;
				t.tail--;
				break;
			case 31: /* pipeline 1's batches the first's size */
				if (!t.ncopies1)
					continue;
				t.ncopies1 = 0;
				break;
			case 28: /* pipeline 1 shallower */
				if (t.depth1 <= 1)
					continue;
				t.depth1--;
				if (t.lag1 > t.depth1)
					t.lag1 = t.depth1;
				break;
			case 26: /* longer turns: fewer switches */
			case 27:
				if (!t.nb1 || (step == 26 ? t.run1 >= t.nb1 : t.run0 >= t.nb - t.nb1))
					continue;
				if (step == 26)
					t.run1++;
				else
					t.run0++;
				drops_follow(&t, s, -1);
				break;
			}
			if (memcmp(&t, s, sizeof(t)) && still(&t, cls)) {
				*s = t;
				changed = true;
			}
		}
	}
}

/* ---- printing ------------------------------------------------------------------------ */

static char stream_letter(const struct rp_prog *p, const struct nl_call *c)
{
	for (int s = 0; s < p->nstreams; s++) {
		bool pt = p->stream_owner[s] != 0;

		if (pt ? ((c->stream == 0x2 || (c->stream == 0 && (nl_api_info[c->api].flags & NL_AF_SPT))) &&
			  c->tid == p->stream_owner[s])
		       : c->stream == p->stream_handle[s])
			return p->stream_name[s];
	}
	return '?';
}

void rp_print(const struct rp_prog *p, const struct rp_result *r, FILE *f)
{
	static const char *const stage[] = { "copy", "sparse", "forward" };
	uint64_t evs[RP_MAX_EVENTS_PRINT];
	int nevs = 0;

	fprintf(f, "streams:");
	for (int s = 0; s < p->nstreams; s++)
		fprintf(f, " %c=0x%llx%s", p->stream_name[s], (unsigned long long)p->stream_handle[s],
			p->stream_owner[s] ? "(per-thread)" : "");
	fprintf(f, "\n");
	for (int i = 0; i < p->n; i++) {
		const struct rp_call *rc = &p->calls[i];
		struct nl_call c;
		char ev[16] = "";

		if (nl_decode(&rc->rec, sizeof(rc->rec), &c))
			continue;
		if (c.fields & (NL_F_EVENT | NL_F_HANDLE)) {
			uint64_t h = (c.fields & NL_F_HANDLE) ? c.handle : c.event;
			int k;

			for (k = 0; k < nevs && evs[k] != h; k++)
				;
			if (k == nevs && nevs < RP_MAX_EVENTS_PRINT)
				evs[nevs++] = h;
			snprintf(ev, sizeof(ev), " e%d", k);
		}
		fprintf(f, "  %-3d t%-2u %-26s", i, c.tid - p->pid, nl_api_info[c.api].name);
		if (c.fields & NL_F_STREAM)
			fprintf(f, " %c", stream_letter(p, &c));
		fprintf(f, "%s", ev);
		if (c.kind == NL_K_EVENT_QUERY || (c.fields & NL_F_RC && c.rc))
			fprintf(f, " rc=%lld", (long long)c.rc);
		if (rc->stage >= 0)
			fprintf(f, "   %s(%d)%s", stage[rc->stage], rc->batch, rc->reads ? "" : " no-read");
		else if (rc->batch >= 0 && rc->sid >= 0)
			fprintf(f, "   backward(%d)", rc->batch);
		fprintf(f, "\n");
	}
	for (int T = 0; T < p->spec.nb; T++) {
		fprintf(f, "batch %d", T);
		if (p->spec.shape >= RP_S_TWO)
			fprintf(f, " (pipeline %d batch %d)", p->pipe[T], p->local[T]);
		fprintf(f, ": truth %s", nl_verdict_name(p->truth[T].verdict));
		if (p->truth[T].first >= 0)
			fprintf(f, " %s", nl_edge_name(p->truth[T].first));
		if (p->unsure[T]) {
			/* the calls cannot decide: the truth made the other way */
			fprintf(f, " (undecided; other way %s",
				p->other_known ? nl_verdict_name(p->other[T].verdict) : "unknown");
			if (p->other_known && p->other[T].first >= 0)
				fprintf(f, " %s", nl_edge_name(p->other[T].first));
			fprintf(f, ")");
		}
		if (r && r->have[T]) {
			char e[40];

			edges_str(r->got[T].missing_mask, e, sizeof(e));
			fprintf(f, "; engine %s %s", nl_verdict_name(r->got[T].verdict),
				r->got[T].verdict == NL_VERDICT_UNTRUSTED ? e : "");
			if (p->spec.shape != RP_S_SINGLE)
				fprintf(f, " (pipeline %u batch %llu)", r->got[T].pipeline,
					(unsigned long long)r->got[T].number);
		} else if (r)
			fprintf(f, "; engine: %s", r->merged[T] ? "merged into an earlier batch's copies"
								  : "no audit");
		fprintf(f, "\n");
	}
}
