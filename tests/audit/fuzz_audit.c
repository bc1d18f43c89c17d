/* SPDX-License-Identifier: MIT */
/*
 * make fuzz-audit: random pipeline programs through the engine, compared with
 * their truth (docs/engine.md, "Model-based random testing").
 *
 *   fuzz_audit [-s SECONDS] [-n COUNT] [-f FIRST_SEED] [-o DIR] [-k KNOWN] [-l] [-u] [-a]
 *              [-L K] [-M] [-S]
 *   fuzz_audit -w SEED -o DIR [-c CLASS]  write one program, shrunk while its first
 *                                  disagreement (or CLASS) stays, as DIR/seed-SEED.{rec,json}
 *   fuzz_audit -p SEED [-c CLASS] [-j]  print one program (shrunk while its first or CLASS
 *                                  stays) and its summary's evidence_valid with the invalid
 *                                  mask; -j: the engine's batch audits of it too, as JSON lines
 *   fuzz_audit --check-audit FLAT -r RUN  a live run's audits (FLAT: nanlog-bpf's output
 *                                  through tests/audit/audit_flat.jq, - for stdin) against the
 *                                  truth in build/audit/randrun's file RUN, beside the same
 *                                  program in process (with -u: launches counted, as the tool
 *                                  gets them by default); exit 1 when they disagree differently
 *
 * Prints the programs run and the disagreements by group and class with a
 * first seed; with -o, each new group's first program is shrunk and written
 * there as a --record file and its truth (groupNN-seed-SEED.rec, .json). -k: seeds and classes listed there are known
 * (not counted as new); -l prints the disagreements as a known list; -u feeds
 * launches as the probes send them by default (counted in runs, without their
 * kernel address after a run's first), not as --every-launch does. -a prints
 * "healthy-accused SEED" for each healthy program (no batch untrusted in the
 * truth) with a batch accused (or an audit of no batch of it judged
 * untrusted), the worst disagreement, as it is found, and
 * "valid-despite-fault SEED" for each program with a batch untrusted in the
 * truth whose summary still says evidence_valid (--check would pass it), and
 * "healthy-unplaced SEED" for a healthy program whose summary says work was
 * not placed (a false alarm of --check), and "healthy-invalid SEED" for a
 * healthy program whose every batch was judged right and whose summary
 * still says evidence_valid false, for any reason (a false alarm of --check
 * no disagreement counts).
 * -L K: each healthy program the engine judges right is run K times more with
 * records lost (rp_run_lossy: a window of its records not delivered, the loss
 * told as nanlog-bpf tells it); any batch accused there is printed as
 * "lossy-accused SEED K ..." and fails the run. With -p SEED, -L K runs the
 * program whole with the loss of its K-th such run and prints its audits.
 * -N: the programs seeds gave before loops that stop short were drawn (no
 * rp_spec.tail), as the unit tests' pinned seeds name them.
 * -S: the engine as --strict-attach runs it (with -M: a pipeline found
 * mid-run accuses no batch, it skips it attach_offset).
 * -M: every program as if the tool attached by pid (mid-run) at one of its
 * calls drawn from the seed (rp_run_attached_at): the batches begun before
 * it are not compared, nor roles and batch numbers; everything else as
 * above (a class not fixed yet: docs/engine.md, "Lost records"). Not with
 * -w, -o or -L.
 * Exits 1 when a disagreement was found (with -k: one not in the known list),
 * or with -L a batch accused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "app/options.h"
#include "randprog.h"

#define MAX_CLASSES 4096

struct cls {
	char name[RP_CLASS_LEN];
	uint64_t count, programs, first_seed;
};

static struct cls classes[MAX_CLASSES], groups[MAX_CLASSES];
static int nclasses, ngroups;

struct known {
	uint64_t seed;
	char cls[RP_CLASS_LEN];
};

static struct known *known;
static int nknown;
/* -l: the disagreements found, printed grouped by class at the end */
static struct known *found;
static int nfound;

static int by_class(const void *a, const void *b)
{
	const struct known *x = a, *y = b;
	int c = strcmp(x->cls, y->cls);

	return c ? c : (x->seed > y->seed) - (x->seed < y->seed);
}

static void print_list(void)
{
	qsort(found, (size_t)nfound, sizeof(*found), by_class);
	for (int i = 0; i < nfound; i++) {
		if (!i || strcmp(found[i].cls, found[i - 1].cls)) {
			int n = 0;

			for (int j = i; j < nfound && !strcmp(found[j].cls, found[i].cls); j++)
				n++;
			printf("## %s (%d)\n", found[i].cls, n);
		}
		printf("%llu %s\n", (unsigned long long)found[i].seed, found[i].cls);
	}
}

static int load_known(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];

	if (!f) {
		fprintf(stderr, "fuzz_audit: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char *sp, *nl;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if ((nl = strchr(line, '\n')))
			*nl = '\0';
		sp = strchr(line, ' ');
		if (!sp)
			continue;
		known = realloc(known, (size_t)(nknown + 1) * sizeof(*known));
		if (!known) {
			fclose(f);
			return -ENOMEM;
		}
		*sp = '\0';
		/* "fixture NAME" lines name committed fixtures, not seeds: seed 0 */
		if (nl_parse_u64(line, 0, UINT64_MAX, &known[nknown].seed))
			known[nknown].seed = 0;
		snprintf(known[nknown].cls, sizeof(known[nknown].cls), "%s", sp + 1);
		nknown++;
	}
	fclose(f);
	return 0;
}

static bool is_known(uint64_t seed, const char *cls)
{
	for (int i = 0; i < nknown; i++)
		if (known[i].seed == seed && !strcmp(known[i].cls, cls))
			return true;
	return false;
}

static struct cls *find(struct cls *v, int *n, const char *name, bool *fresh)
{
	*fresh = false;
	for (int i = 0; i < *n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	if (*n == MAX_CLASSES)
		return NULL;
	*fresh = true;
	snprintf(v[*n].name, RP_CLASS_LEN, "%s", name);
	return &v[(*n)++];
}

/* A class's group: its kind, where it stands to the drops (at the dropped
 * batch, near it, far, none) and the oversync tag, without the wait's name. */
static void group_name(const char *cls, char *out, size_t len)
{
	const char *sp = strchr(cls, ' ');
	const char *where = "";
	int kind = sp ? (int)(sp - cls) : (int)strlen(cls);

	if (!strncmp(cls, "roles:", 6))
		kind = 5;
	if (sp && !strncmp(sp + 1, "drop@T+0", 8))
		where = " at-drop";
	else if (sp && !strncmp(sp + 1, "drop@", 5))
		where = " near-drop";
	else if (sp && !strncmp(sp + 1, "drop-far", 8))
		where = " far-from-drop";
	else if (sp && !strncmp(sp + 1, "clean", 5))
		where = " clean";
	else if (sp && !strncmp(sp + 1, "cross-pipeline", 14))
		where = " cross-pipeline";
	snprintf(out, len, "%.*s%s%s%s%s%s%s%s", kind, cls, where,
		 strstr(cls, "[oversync]") ? " [oversync]" : "",
		 strstr(cls, "[implicit]") ? " [implicit]" : "",
		 strstr(cls, "[altcopy]") ? " [altcopy]" : "", strstr(cls, "[pipes]") ? " [pipes]" : "",
		 strstr(cls, "[recreate]") ? " [recreate]" : "", strstr(cls, "[reuse]") ? " [reuse]" : "");
}

static int by_programs(const void *a, const void *b)
{
	const struct cls *x = a, *y = b;

	return (x->programs < y->programs) - (x->programs > y->programs);
}

/* -M: every program run as if the tool attached by pid at one of its
 * calls, drawn from the seed (rp_run_attached_at), not traced from its start */
static bool attach_mid;

static int run_prog(const struct rp_prog *p, uint64_t seed, struct rp_result *r)
{
	return attach_mid ? rp_run_attached_at(p, rp_attach_point(p, seed), r) : rp_run(p, r);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Shrink the program of seed while cls stays, and write it under dir as
 * PREFIXseed-SEED.rec and .json. */
static int write_fixture(uint64_t seed, const char *cls, const char *dir, const char *prefix)
{
	struct rp_spec s;
	struct rp_prog p;
	struct rp_result r;
	char path[1024], desc[512];
	FILE *f;
	int rc;

	rp_spec_random(&s, seed);
	if (cls)
		rp_minimize(&s, cls);
	rc = rp_build(&p, &s);
	if (rc)
		return rc;
	rp_run(&p, &r);
	snprintf(path, sizeof(path), "%s/%sseed-%llu.rec", dir, prefix, (unsigned long long)seed);
	rc = rp_write_recording(&p, path);
	if (!rc) {
		snprintf(path, sizeof(path), "%s/%sseed-%llu.json", dir, prefix,
			 (unsigned long long)seed);
		f = fopen(path, "w");
		if (!f)
			rc = -errno;
		else {
			rc = rp_write_truth(&p, &r, seed, f);
			if (fclose(f) && !rc)
				rc = -EIO;
		}
	}
	rp_spec_describe(&p.spec, desc, sizeof(desc));
	printf("  wrote %s/%sseed-%llu: %d calls, %s\n", dir, prefix, (unsigned long long)seed, p.n,
	       desc);
	rp_free(&p);
	return rc;
}

int main(int argc, char **argv)
{
	double seconds = 0, t0;
	uint64_t count = 0, first = 1, n = 0, undecided[4] = { 0 }, disagree = 0, unknown = 0,
		 oversync = 0, decided = 0, by_tag[4][2] = { { 0 } }, guessed = 0, wrong_guess = 0,
		 by_shape[RP_NSHAPES][5] = { { 0 } }, healthy[4] = { 0 },
		 faulty[2] = { 0 }, tails[5] = { 0 }, lossy_runs = 0, lossy_progs = 0, lossy_accused = 0,
		 lossy_skipped = 0, lossy_per = 0;
	const char *dir = NULL, *known_path = NULL;
	bool list = false, print_healthy = false, print_json = false;
	long long write_seed = -1, print_seed = -1;
	const char *print_cls = NULL, *check_audit = NULL, *check_run = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-l")) {
			list = true;
			continue;
		}
		if (!strcmp(a, "-u")) {
			rp_counted_launches = true;
			continue;
		}
		if (!strcmp(a, "-a")) {
			print_healthy = true;
			continue;
		}
		if (!strcmp(a, "-j")) {
			print_json = true;
			continue;
		}
		if (!strcmp(a, "-M")) {
			attach_mid = true;
			continue;
		}
		if (!strcmp(a, "-N")) {
			rp_tails = false;
			continue;
		}
		if (!strcmp(a, "-S")) {
			rp_strict_attach = true;
			continue;
		}
		if (!v) {
			fprintf(stderr, "fuzz_audit: %s needs a value\n", a);
			return 2;
		}
		i++;
		uint64_t u = 0;
		int bad = 0;

		if (!strcmp(a, "-s"))
			bad = nl_parse_seconds(v, 1e9, &seconds);
		else if (!strcmp(a, "-n"))
			bad = nl_parse_u64(v, 1, UINT64_MAX, &count);
		else if (!strcmp(a, "-f"))
			bad = nl_parse_u64(v, 0, UINT64_MAX / 2, &first);
		else if (!strcmp(a, "-o"))
			dir = v;
		else if (!strcmp(a, "-L"))
			bad = nl_parse_u64(v, 1, 1000, &lossy_per);
		else if (!strcmp(a, "-k"))
			known_path = v;
		else if (!strcmp(a, "-w")) {
			bad = nl_parse_u64(v, 0, INT64_MAX, &u);
			write_seed = (long long)u;
		} else if (!strcmp(a, "-p")) {
			bad = nl_parse_u64(v, 0, INT64_MAX, &u);
			print_seed = (long long)u;
		}
		else if (!strcmp(a, "-c"))
			print_cls = v;
		else if (!strcmp(a, "--check-audit"))
			check_audit = v;
		else if (!strcmp(a, "-r"))
			check_run = v;
		else {
			fprintf(stderr, "fuzz_audit: unknown option %s\n", a);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "fuzz_audit: %s: not a valid number: %s\n", a, v);
			return 2;
		}
	}
	if (check_audit || check_run) {
		int rc;

		if (!check_audit || !check_run) {
			fprintf(stderr, "fuzz_audit: --check-audit FLAT and -r RUN go together\n");
			return 2;
		}
		rc = rp_check_live(check_run, check_audit, stdout);
		if (rc < 0)
			fprintf(stderr, "fuzz_audit: %s, %s: %s\n", check_run, check_audit,
				strerror(-rc));
		return rc < 0 ? 2 : rc;
	}
	if (known_path && load_known(known_path))
		return 2;
	if (dir && mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "fuzz_audit: %s: %s\n", dir, strerror(errno));
		return 2;
	}
	if (print_seed >= 0) {
		struct rp_spec s;
		struct rp_prog p;
		struct rp_result r;
		char desc[512], cls[RP_CLASS_LEN] = "";

		rp_spec_random(&s, (uint64_t)print_seed);
		if (rp_build(&p, &s))
			return 2;
		run_prog(&p, (uint64_t)print_seed, &r);
		if (print_cls)
			snprintf(cls, sizeof(cls), "%s", print_cls);
		else if (r.ndiffs)
			snprintf(cls, sizeof(cls), "%s", r.diffs[0]);
		rp_free(&p);
		if (cls[0] && !lossy_per)
			rp_minimize(&s, cls);
		if (rp_build(&p, &s))
			return 2;
		if (lossy_per) {
			/* -p SEED -L K: the program whole (not shrunk), with the loss of
			 * its K-th lossy run (as -L K runs it), its audits as JSON lines */
			struct rp_loss l;

			rp_audit_json = stdout;
			rp_run_lossy(&p, (uint64_t)print_seed * 1000 + lossy_per - 1, &l);
			rp_audit_json = NULL;
			for (int i = 0; i < p.n; i++)
				printf("{\"type\":\"op\",\"op\":%d,\"ts_ns\":%llu}\n", i,
				       (unsigned long long)p.calls[i].rec.ts_ns);
			printf("loss: records %d+%d (%llu lost), told at %d; %d audits, %d untrusted\n",
			       l.from, l.len, (unsigned long long)l.lost, l.told_at, l.audits,
			       l.untrusted);
			rp_print(&p, &r, stdout);
			rp_free(&p);
			return 0;
		}
		printf("seed %lld class \"%s\"\n", print_seed, cls);
		rp_audit_json = print_json ? stdout : NULL;
		run_prog(&p, (uint64_t)print_seed, &r);
		rp_audit_json = NULL;
		if (attach_mid)
			printf("attached mid-run at call %d\n", rp_attach_point(&p, (uint64_t)print_seed));
		for (int i = 0; print_json && i < p.n; i++) /* to read the audits' times as ops */
			printf("{\"type\":\"op\",\"op\":%d,\"ts_ns\":%llu}\n", i,
			       (unsigned long long)p.calls[i].rec.ts_ns);
		rp_spec_describe(&p.spec, desc, sizeof(desc));
		printf("spec: %s\n", desc);
		rp_print(&p, &r, stdout);
		if (r.summary)
			printf("summary: evidence_valid %s, invalid 0x%x\n",
			       r.evidence_valid ? "true" : "false", r.invalid_mask);
		rp_free(&p);
		return 0;
	}
	if (write_seed >= 0) {
		struct rp_spec s;
		struct rp_prog p;
		struct rp_result r;
		const char *cls = NULL;

		if (!dir) {
			fprintf(stderr, "fuzz_audit: -w needs -o DIR\n");
			return 2;
		}
		rp_spec_random(&s, (uint64_t)write_seed);
		if (rp_build(&p, &s))
			return 2;
		rp_run(&p, &r);
		if (print_cls)
			cls = print_cls;
		else if (r.ndiffs)
			cls = r.diffs[0];
		printf("seed %lld: %s\n", write_seed, cls ? cls : "agrees");
		rp_free(&p);
		return write_fixture((uint64_t)write_seed, cls, dir, "") ? 2 : 0;
	}
	if (!seconds && !count)
		count = 1000;
	t0 = now_s();
	for (uint64_t seed = first; (!count || n < count) && (!seconds || now_s() - t0 < seconds);
	     seed++, n++) {
		struct rp_spec s;
		struct rp_prog p;
		struct rp_result r;

		rp_spec_random(&s, seed);
		if (rp_build(&p, &s)) {
			fprintf(stderr, "fuzz_audit: seed %llu: out of memory\n", (unsigned long long)seed);
			return 2;
		}
		run_prog(&p, seed, &r);
		if (r.ndiffs)
			disagree++;
		if (p.undecidable) {
			/* verdicts are not compared; any verdict but skipped is a guess */
			undecided[p.undecidable]++;
			for (int T = 0; T < p.spec.nb; T++)
				if (p.unsure[T] && r.have[T] && r.got[T].verdict != NL_VERDICT_SKIPPED) {
					guessed++;
					wrong_guess += r.got[T].verdict != p.truth[T].verdict;
				}
		} else {
			int tag = (p.oversync ? 1 : 0) | (s.blocking && s.compute == RP_C_NULL ? 2 : 0);

			bool cross = false, sound = true, accused = false;

			decided++;
			/* no batch untrusted in the truth: no drop, or every one
			 * redundant; an accusation there is the worst disagreement.
			 * Attached mid-run (-M), a fault all of whose batch's calls
			 * came before the attach is not in the run the tool saw */
			for (int T = 0; T < p.spec.nb; T++)
				sound &= p.truth[T].verdict != NL_VERDICT_UNTRUSTED || r.unseen[T];
			for (int i = 0; i < r.ndiffs; i++)
				accused |= !strncmp(r.diffs[i], "accused:", 8);
			/* an audit of no batch of the program (a batch the engine
			 * made up, or a piece of one it split) judged untrusted
			 * accuses the healthy batch its ops are of too */
			accused |= r.extra_untrusted > 0;
			healthy[0] += sound;
			healthy[1] += sound && accused;
			/* records lost in a healthy program the engine judges right:
			 * batches skipped, never one accused */
			for (uint64_t k = 0; sound && !accused && k < lossy_per; k++) {
				struct rp_loss l;

				if (rp_run_lossy(&p, seed * 1000 + k, &l))
					continue;
				lossy_progs += !k;
				lossy_runs++;
				lossy_skipped += l.skipped_lost > 0;
				if (l.untrusted) {
					lossy_accused++;
					printf("lossy-accused %llu %llu (records %d+%d told at %d, batch %u)\n",
					       (unsigned long long)seed, (unsigned long long)k, l.from,
					       l.len, l.told_at, l.untrusted_batch);
				}
			}
			healthy[2] += sound && (r.invalid_mask & (1u << NL_INVALID_UNPLACED));
			if (print_healthy && sound && (r.invalid_mask & (1u << NL_INVALID_UNPLACED)))
				printf("healthy-unplaced %llu\n", (unsigned long long)seed);
			if (print_healthy && sound && accused)
				printf("healthy-accused %llu\n", (unsigned long long)seed);
			/* every batch judged right, and still not valid: a false
			 * alarm of --check the classes above do not count */
			healthy[3] += sound && !r.ndiffs && r.summary && !r.evidence_valid;
			/* a loop stopped before its prefetched batches: how many
			 * of them the engine could not show unconsumed */
			for (int T = 0; T < p.spec.nb; T++)
				tails[0] += p.truth[T].unconsumed;
			tails[1] += (uint64_t)r.unconsumed_exited;
			bool tail = p.spec.nb > 0 && p.truth[p.spec.nb - 1].unconsumed;

			tails[2] += tail;
			tails[3] += tail && sound;
			tails[4] += tail && sound && !r.ndiffs && r.summary && r.evidence_valid;
			if (print_healthy && sound && !r.ndiffs && r.summary && !r.evidence_valid)
				printf("healthy-invalid %llu\n", (unsigned long long)seed);
			/* the one line a user gates on: a faulty run must not be valid */
			faulty[0] += !sound;
			faulty[1] += !sound && r.evidence_valid;
			if (print_healthy && !sound && r.evidence_valid)
				printf("valid-despite-fault %llu\n", (unsigned long long)seed);
			oversync += p.oversync;
			by_tag[tag][0]++;
			by_tag[tag][1] += r.ndiffs > 0;
			for (int i = 0; i < r.ndiffs; i++)
				cross |= strstr(r.diffs[i], "cross-pipeline") != NULL;
			by_shape[s.shape][0]++;
			by_shape[s.shape][1] += r.ndiffs > 0;
			by_shape[s.shape][2] += cross;
			by_shape[s.shape][3] += !tag;
			by_shape[s.shape][4] += !tag && r.ndiffs > 0;
		}
		for (int i = 0; i < r.ndiffs; i++) {
			bool fresh, dup = false;
			struct cls *c;

			for (int j = 0; j < i; j++)
				dup |= !strcmp(r.diffs[j], r.diffs[i]);
			char gname[RP_CLASS_LEN];
			bool gfresh;
			struct cls *gr;

			group_name(r.diffs[i], gname, sizeof(gname));
			gr = find(groups, &ngroups, gname, &gfresh);
			if (gr && !dup) {
				gr->programs++;
				if (gfresh)
					gr->first_seed = seed;
			}
			c = find(classes, &nclasses, r.diffs[i], &fresh);
			if (!c)
				continue;
			c->count++;
			if (!dup)
				c->programs++;
			if (fresh)
				c->first_seed = seed;
			if (dup)
				continue;
			if (list) {
				struct known *nf = realloc(found, (size_t)(nfound + 1) * sizeof(*found));

				if (!nf)
					return 2;
				found = nf;
				found[nfound].seed = seed;
				snprintf(found[nfound].cls, sizeof(found[nfound].cls), "%s", r.diffs[i]);
				nfound++;
			}
			if (!is_known(seed, r.diffs[i])) {
				unknown++;
				if (known_path && unknown <= 20)
					fprintf(stderr, "NEW seed %llu: %s%s\n", (unsigned long long)seed,
						r.diffs[i], unknown == 20 ? " (and so on)" : "");
			}
			if (gfresh && dir) {
				/* the first program of each group, shrunk while its class stays */
				char prefix[32];

				snprintf(prefix, sizeof(prefix), "group%02d-", ngroups);
				printf("group %d: %s\n", ngroups, gname);
				write_fixture(seed, r.diffs[i], dir, prefix);
			}
		}
		rp_free(&p);
	}
	if (list) {
		print_list();
		free(found);
		return 0;
	}
	printf("programs %llu (seeds %llu..%llu) in %.1f s: decided %llu (oversync %llu), "
	       "undecidable: pretrace_stream %llu, few_handoffs %llu\n",
	       (unsigned long long)n, (unsigned long long)first,
	       (unsigned long long)(first + n - 1), now_s() - t0, (unsigned long long)decided,
	       (unsigned long long)oversync, (unsigned long long)undecided[RP_U_PRETRACE_NULL],
	       (unsigned long long)undecided[RP_U_FEW_HANDOFFS]);
	printf("undecidable programs: %llu batches judged (a guess: guessed(...) below), %llu of "
	       "them against the truth\n",
	       (unsigned long long)guessed, (unsigned long long)wrong_guess);
	printf("programs with a disagreement: %llu; groups: %d; classes: %d\n",
	       (unsigned long long)disagree, ngroups, nclasses);
	printf("healthy programs (no batch untrusted in the truth): %llu decided, %llu with a "
	       "batch accused, %llu whose summary names unplaced work, %llu judged right whose "
	       "summary says not valid\n",
	       (unsigned long long)healthy[0], (unsigned long long)healthy[1],
	       (unsigned long long)healthy[2], (unsigned long long)healthy[3]);
	printf("programs stopped before their prefetched batches: %llu decided, %llu healthy, "
	       "%llu of those judged right and valid; %llu batches never consumed, %llu of them "
	       "skipped target_exited (right, not valid), not not_consumed\n",
	       (unsigned long long)tails[2], (unsigned long long)tails[3],
	       (unsigned long long)tails[4], (unsigned long long)tails[0],
	       (unsigned long long)tails[1]);
	printf("faulty programs (a batch untrusted in the truth): %llu decided, %llu whose "
	       "summary says evidence_valid\n",
	       (unsigned long long)faulty[0], (unsigned long long)faulty[1]);
	if (lossy_per)
		printf("records lost (-L %llu): %llu healthy programs, %llu runs, %llu with a batch "
		       "skipped lost_records, %llu with a batch accused\n",
		       (unsigned long long)lossy_per, (unsigned long long)lossy_progs,
		       (unsigned long long)lossy_runs, (unsigned long long)lossy_skipped,
		       (unsigned long long)lossy_accused);
	static const char *const tags[4] = { "untagged", "[oversync]", "[implicit]",
					     "[oversync] [implicit]" };
	for (int t = 0; t < 4; t++)
		printf("  %-22s %7llu decided, %7llu with a disagreement\n", tags[t],
		       (unsigned long long)by_tag[t][0], (unsigned long long)by_tag[t][1]);
	static const char *const shapes[RP_NSHAPES] = { "one pipeline", "[altcopy]", "[pipes]",
							"[pipes] [recreate]" };
	printf("by shape:\n");
	for (int t = 0; t < RP_NSHAPES; t++)
		printf("  %-20s %6llu decided, %6llu with a disagreement (untagged: %6llu, %6llu), "
		       "%5llu cross-pipeline\n",
		       shapes[t], (unsigned long long)by_shape[t][0],
		       (unsigned long long)by_shape[t][1], (unsigned long long)by_shape[t][3],
		       (unsigned long long)by_shape[t][4], (unsigned long long)by_shape[t][2]);
	qsort(groups, (size_t)ngroups, sizeof(*groups), by_programs);
	qsort(classes, (size_t)nclasses, sizeof(*classes), by_programs);
	printf("groups (programs, first seed):\n");
	for (int i = 0; i < ngroups; i++)
		printf("  %6llu  %s  (first seed %llu)\n", (unsigned long long)groups[i].programs,
		       groups[i].name, (unsigned long long)groups[i].first_seed);
	printf("classes (programs, batches, first seed):\n");
	for (int i = 0; i < nclasses; i++)
		printf("  %6llu programs %6llu batches  %s  (first seed %llu)\n",
		       (unsigned long long)classes[i].programs, (unsigned long long)classes[i].count,
		       classes[i].name, (unsigned long long)classes[i].first_seed);
	if (known_path)
		printf("not in the known list: %llu\n", (unsigned long long)unknown);
	free(known);
	return (known_path ? unknown : disagree) || lossy_accused ? 1 : 0;
}
