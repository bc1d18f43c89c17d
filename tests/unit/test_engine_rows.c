// SPDX-License-Identifier: MIT
/*
 * The engine follows the probes' rows of launches (bpf/nanlog.bpf.c
 * count_launch, include/nanlog_rec.h "Step starts stay named") from the
 * calls it sees, to tell which kernels a launch counted in a run may have
 * been (nl_counted_may_be, engine_ops.c). Checked against the model of the
 * probes' rule (tests/audit/launch_rows.h, itself checked against the
 * probes by tests/e2e/test_audit_random_live.sh) on random call streams of
 * several threads: a counted launch is never said not to be the kernel it
 * was (the engine would then take a lower bound for an exact count, and a
 * restart could accuse), and the answer is not always "may be".
 */
#include "test_engine_util.h"
#include "engine/engine_int.h"

enum { NK = 6, NCALLS = 4000, MAXT = 80 };

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t sig_of(uint16_t api, uint64_t fn)
{
	return (uint64_t)api << 48 ^ fn;
}

/* Random call streams of nt threads, fed to the probes' model and to the
 * engine: fails on a counted launch said not to be the kernel it was;
 * returns how often another kernel was ruled out of a counted launch, and
 * the launches counted in *counted_out. */
static uint64_t rows_run(int nt, uint64_t *counted_out)
{
	struct nl_engine_opts o;
	struct nl_sink sink = { 0 };
	uint64_t exact = 0, counted = 0;

	memset(&o, 0, sizeof(o));
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct nl_engine *e = nl_engine_new(&o, &sink);
		struct nl_proc *p;
		struct rp_row rows[MAXT];
		struct nl_call last;
		bool has_last = false;
		uint64_t s = seed * 0x9e3779b97f4a7c15ull, now = 1000;
		/* each thread's step: a few kernels in a row, as a model's */
		int favourite[MAXT];

		assert_non_null(e);
		p = nl_proc_new(e, 4242);
		assert_non_null(p);
		memset(rows, 0, sizeof(rows));
		for (int t = 0; t < nt; t++)
			favourite[t] = (int)(rnd(&s) % NK);
		for (int i = 0; i < NCALLS; i++) {
			struct nl_call c;
			int t = (int)(rnd(&s) % (uint64_t)nt), r = (int)(rnd(&s) % 10);
			uint64_t fn;

			memset(&c, 0, sizeof(c));
			c.pid = 4242;
			c.tid = 100 + (uint32_t)t;
			c.ts_ns = (now += 1000);
			if (r < 7) {
				/* a launch: often the thread's favourite, or one
				 * of a few kernels, as back to back repeats too */
				fn = 0x4000 + (uint64_t)(r < 3 ? favourite[t] : (int)(rnd(&s) % NK));
				c.api = NL_API_LAUNCH_KERNEL;
				c.kind = NL_K_LAUNCH;
				/* mostly one stream, sometimes another (a data-dist
				 * launch before forward's on the same thread) */
				c.stream = 0x100 + (uint64_t)t + (rnd(&s) % 4 == 0 ? 0x10 : 0);
				c.fn = fn;
				c.fields = NL_F_STREAM | NL_F_FN;
			} else {
				fn = 0;
				c.api = NL_API_EVENT_QUERY;
				c.kind = (uint8_t)nl_api_info[NL_API_EVENT_QUERY].kind;
				c.event = 0x900;
				c.fields = NL_F_EVENT | NL_F_RC;
				c.ret_ns = c.ts_ns + 100;
			}
			if (rp_launch_counted(rows, MAXT, has_last ? &last : NULL, &c)) {
				struct nl_call cc = c;

				cc.fields &= ~NL_F_FN;
				cc.fn = 0;
				nl_apply(e, p, &cc);
				counted++;
				/* never "not it" for the kernel it was */
				if (!nl_counted_may_be(p, &cc, sig_of(c.api, fn)))
					fail_msg("seed %llu call %d: a counted launch of 0x%llx said not to be it",
						 (unsigned long long)seed, i, (unsigned long long)fn);
				for (int k = 0; k < NK; k++)
					exact += 0x4000 + (uint64_t)k != fn &&
						 !nl_counted_may_be(p, &cc, sig_of(c.api, 0x4000 + (uint64_t)k));
			} else {
				nl_apply(e, p, &c);
			}
			last = c;
			has_last = true;
		}
		nl_proc_free(p);
		nl_engine_free(e);
	}
	*counted_out = counted;
	return exact;
}

static void rows_follow_the_probes(void **state)
{
	uint64_t counted, exact;

	(void)state;
	exact = rows_run(3, &counted);
	/* the rows tell something: most kernels are ruled out of most counted launches */
	assert_true(counted > 1000);
	assert_true(exact > counted);
}

/* More threads than the engine remembers (NL_MAX_THREADS): a thread
 * forgotten and met again has lost its rows, which the probes kept, and
 * the engine must not rule a kernel out by rows it rebuilt from nothing. */
static void rows_of_forgotten_threads(void **state)
{
	uint64_t counted;

	(void)state;
	rows_run(MAXT, &counted);
	assert_true(counted > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_follow_the_probes),
		cmocka_unit_test(rows_of_forgotten_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
