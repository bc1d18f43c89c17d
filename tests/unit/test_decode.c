// SPDX-License-Identifier: MIT
/* Record decoding, the raw writer, /proc/PID/maps parsing and safety policy. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "base/util.h"
#include "record/decode.h"
#include "record/runs.h"
#include "proc/policy.h"
#include "proc/procmaps.h"
#include "out/raw.h"

static struct nl_rec_call rec(int api)
{
	struct nl_rec_call r;

	memset(&r, 0, sizeof(r));
	r.type = NL_REC_CALL;
	r.api = (__u16)api;
	r.pid = 100;
	r.tid = 101;
	r.ts_ns = 5;
	return r;
}

static void test_table_is_consistent(void **state)
{
	(void)state;
	for (int i = 0; i < NL_API_COUNT; i++) {
		const struct nl_api_info *a = &nl_api_info[i];
		const int8_t slots[] = { a->slot_stream, a->slot_event, a->slot_event2, a->slot_dst,
					 a->slot_src, a->slot_bytes, a->slot_kind, a->slot_flags,
					 a->slot_prio, a->slot_fn, a->slot_peer, a->slot_count,
					 a->slot_out };

		assert_non_null(a->name);
		assert_int_equal(nl_api_by_name(a->name), i);
		assert_true(a->nstack >= 0 && a->nstack <= NL_MAX_STACK);
		for (size_t k = 0; k < sizeof(slots); k++) {
			if (slots[k] == NL_NA)
				continue;
			/* NL_D0 holds what was read through the config pointer */
			if (slots[k] == NL_D0) {
				assert_true(a->flags & NL_AF_CFG_STREAM);
				continue;
			}
			assert_true(slots[k] >= 0 && slots[k] < 6 + a->nstack);
		}
		/* a ring record carries every named slot, and no slot the probe does not read */
		for (size_t k = 0; k < sizeof(slots); k++)
			if (slots[k] != NL_NA)
				assert_true(slots[k] < a->nargs);
		assert_true(a->nargs <= NL_ARG_LOST_BEFORE);
		assert_true(a->nargs <= 6 + a->nstack || a->nargs == NL_D0 + 1);
		if (a->flags & NL_AF_CFG_STREAM)
			assert_int_equal(a->slot_stream, NL_D0);
		/* an out parameter is only readable at return */
		if (a->slot_out != NL_NA)
			assert_true(a->flags & NL_AF_RET);
		/* nesting is tracked through return probes */
		if (a->flags & NL_AF_NESTS)
			assert_true(a->flags & NL_AF_RET);
	}
	assert_int_equal(nl_api_by_name("nope"), -1);
	assert_null(nl_api_name(NL_API_COUNT));
}

static void test_decode_copy(void **state)
{
	struct nl_rec_call r = rec(NL_API_MEMCPY_ASYNC);
	struct nl_call c;

	(void)state;
	r.args[0] = 0x1000;
	r.args[1] = 0x2000;
	r.args[2] = 4096;
	r.args[3] = 1;
	r.args[4] = 0x5000;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(c.kind, NL_K_COPY);
	assert_true(c.fields & NL_F_STREAM);
	assert_int_equal(c.stream, 0x5000);
	assert_int_equal(c.dst, 0x1000);
	assert_int_equal(c.src, 0x2000);
	assert_int_equal(c.bytes, 4096);
	assert_int_equal(c.kindarg, 1);
	assert_false(c.fields & (NL_F_EVENT | NL_F_RC | NL_F_FN));
}

static void test_decode_stack_args(void **state)
{
	struct nl_rec_call r = rec(NL_API_EXT_LAUNCH_KERNEL);
	struct nl_call c;

	(void)state;
	r.args[0] = 0xabc;
	r.args[6] = 0;      /* shmem */
	r.args[7] = 0x6000; /* stream */
	r.args[8] = 0x7100; /* start */
	r.args[9] = 0x7200; /* stop */
	r.args[10] = 3;     /* flags */
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(c.stream, 0x6000);
	assert_int_equal(c.event, 0x7100);
	assert_int_equal(c.event2, 0x7200);
	assert_int_equal(c.flags, 3);
	assert_int_equal(c.fn, 0xabc);
	/* the probe could not read the stack: those fields are absent, not zero */
	r.flags = NL_RF_STACK_ERR;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_false(c.fields & (NL_F_STREAM | NL_F_EVENT | NL_F_EVENT2));
	assert_true(c.fields & NL_F_FN);
}

static void test_decode_config_stream(void **state)
{
	struct nl_rec_call r = rec(NL_API_LAUNCH_KERNEL_EXC);
	struct nl_call c;

	(void)state;
	r.args[0] = 0x7000; /* the hipLaunchConfig_t the job passed */
	r.args[1] = 0xabc;  /* the kernel */
	r.args[NL_D0] = 0x6000;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(c.kind, NL_K_LAUNCH);
	assert_true(c.fields & NL_F_STREAM);
	assert_int_equal(c.stream, 0x6000);
	assert_int_equal(c.fn, 0xabc);
	/* the probe could not read the configuration: no stream, not stream 0 */
	r.flags = NL_RF_STACK_ERR;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_false(c.fields & NL_F_STREAM);
}

static void test_decode_return(void **state)
{
	struct nl_rec_call r = rec(NL_API_STREAM_CREATE_WITH_PRIORITY);
	struct nl_call c;
	float ms = 2.5f;
	uint32_t bits;

	(void)state;
	r.args[1] = 1;
	r.args[2] = (uint64_t)(int64_t)-1;
	r.flags = NL_RF_RET | NL_RF_OUT;
	r.rc = 0;
	r.ret_ns = 9;
	r.out = 0xdead0;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_true(c.fields & NL_F_HANDLE);
	assert_int_equal(c.handle, 0xdead0);
	assert_int_equal(c.prio, -1);
	assert_int_equal(c.flags, 1);
	assert_int_equal(c.ret_ns, 9);
	/* a failed create has no handle */
	r.rc = 100;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_false(c.fields & NL_F_HANDLE);
	assert_int_equal(c.rc, 100);

	r = rec(NL_API_EVENT_ELAPSED_TIME);
	memcpy(&bits, &ms, sizeof(bits));
	r.flags = NL_RF_RET | NL_RF_OUT;
	r.out = bits;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_true(c.fields & NL_F_MS);
	assert_true(c.ms > 2.49 && c.ms < 2.51);
}

/* A compact ring record (struct nl_wire) as the BPF program sends it; returns its size. */
static size_t wire(struct nl_wire *w, int type, int api, int flags, int nargs, const uint64_t *args,
		   const uint64_t *triple, uint64_t lost)
{
	size_t n = 0;

	memset(w, 0xee, sizeof(*w)); /* what is not sent must not be read */
	w->type = (uint8_t)type;
	w->api = (uint16_t)api;
	w->flags = (uint8_t)flags;
	w->coll_depth = 1;
	w->nargs = (uint8_t)nargs;
	w->words = 0;
	w->pad = 0;
	w->pid = 100;
	w->tid = 101;
	w->ts_ns = 5;
	for (int i = 0; i < nargs; i++)
		w->w[n++] = args[i];
	if (triple) {
		for (int i = 0; i < 3; i++)
			w->w[n++] = triple[i];
		w->words |= NL_WW_TRIPLE;
	}
	if (lost) {
		w->w[n++] = lost;
		w->words |= NL_WW_LOST;
	}
	return NL_WIRE_HEAD + n * sizeof(uint64_t);
}

static void test_wire_expand(void **state)
{
	const uint64_t launch[8] = { 0xf00, 1, 2, 3, 4, 5, 64, 0x5700 };
	const uint64_t run[3] = { NL_RUN_WORD(7, 0), NL_RUN_WORD(6, 3), 44 };
	const uint64_t ret[3] = { 9, (uint64_t)(int64_t)-600, 0 };
	const uint64_t flush[3] = { 0, NL_RUN_WORD(7, 2), 50 };
	const uint64_t ev[1] = { 0xe1 };
	const uint64_t many[NL_NARGS] = { 0 };
	struct nl_rec_call r;
	struct nl_wire w;
	struct nl_call c;
	size_t n;

	(void)state;
	/* a launch: its eight slots, nothing else */
	n = wire(&w, NL_WIRE_CALL, NL_API_LAUNCH_KERNEL, 0, 8, launch, NULL, 0);
	assert_int_equal(n, 88);
	assert_int_equal(nl_wire_expand(&w, n, &r), 0);
	assert_int_equal(r.type, NL_REC_CALL);
	assert_int_equal(r.api, NL_API_LAUNCH_KERNEL);
	assert_int_equal(r.pid, 100);
	assert_int_equal(r.tid, 101);
	assert_int_equal(r.ts_ns, 5);
	assert_int_equal(r.coll_depth, 1);
	assert_memory_equal(r.args, launch, sizeof(launch));
	for (int i = 8; i < NL_NARGS; i++)
		assert_int_equal(r.args[i], 0);
	assert_int_equal(r.run, 0);
	assert_int_equal(r.flush, 0);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(c.fn, 0xf00);
	assert_int_equal(c.stream, 0x5700);

	/* a launch that starts a run and ends another, after three losses on its CPU */
	n = wire(&w, NL_WIRE_CALL, NL_API_LAUNCH_KERNEL, 0, 8, launch, run, 3);
	assert_int_equal(n, 120);
	assert_int_equal(nl_wire_expand(&w, n, &r), 0);
	assert_int_equal(r.run, NL_RUN_WORD(7, 0));
	assert_int_equal(r.flush, NL_RUN_WORD(6, 3));
	assert_int_equal(r.flush_ts, 44);
	assert_int_equal(r.args[NL_ARG_LOST_BEFORE], 3);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(c.run_token, 7);
	assert_int_equal(c.flush_count, 3);
	assert_int_equal(c.lost_before, 3);

	/* a query completed by its return probe */
	n = wire(&w, NL_WIRE_CALL, NL_API_EVENT_QUERY, NL_RF_RET, 1, ev, ret, 0);
	assert_int_equal(n, 56);
	assert_int_equal(nl_wire_expand(&w, n, &r), 0);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_true(c.fields & NL_F_RC);
	assert_int_equal(c.rc, -600);
	assert_int_equal(c.ret_ns, 9);
	assert_int_equal(c.event, 0xe1);

	/* the longest: a launch whose stream was read through its config (slot NL_D0), all words */
	{
		uint64_t cfg[NL_D0 + 1] = { 0xc0f, 0xf00 };

		cfg[NL_D0] = 0x5800;
		n = wire(&w, NL_WIRE_CALL, NL_API_LAUNCH_KERNEL_EXC, 0, NL_D0 + 1, cfg, flush, 2);
		assert_int_equal(n, sizeof(struct nl_rec_call));
		assert_int_equal(nl_wire_expand(&w, n, &r), 0);
		assert_int_equal(r.args[NL_ARG_LOST_BEFORE], 2);
		assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
		assert_int_equal(c.stream, 0x5800);
		assert_int_equal(c.fn, 0xf00);
		assert_int_equal(c.flush_count, 2);
	}

	/* only the end of a run */
	n = wire(&w, NL_WIRE_RUN, 0, 0, 0, NULL, flush, 0);
	assert_int_equal(nl_wire_expand(&w, n, &r), 0);
	assert_int_equal(r.type, NL_REC_RUN);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(c.fields, NL_F_RUN_END);
	assert_int_equal(c.flush_token, 7);
	assert_int_equal(c.flush_count, 2);

	/* refused: sizes that disagree with the record, unknown tags and flags, too many slots */
	n = wire(&w, NL_WIRE_CALL, NL_API_LAUNCH_KERNEL, 0, 8, launch, run, 3);
	assert_int_equal(nl_wire_expand(&w, n - 8, &r), -EINVAL);
	assert_int_equal(nl_wire_expand(&w, n + 8, &r), -EINVAL);
	assert_int_equal(nl_wire_expand(&w, n - 1, &r), -EINVAL);
	assert_int_equal(nl_wire_expand(&w, NL_WIRE_HEAD - 8, &r), -EINVAL);
	assert_int_equal(nl_wire_expand(&w, sizeof(w) + 8, &r), -EINVAL);
	assert_int_equal(nl_wire_expand(NULL, n, &r), -EINVAL);
	w.words |= 0x4;
	assert_int_equal(nl_wire_expand(&w, n, &r), -EINVAL);
	n = wire(&w, NL_REC_CALL, NL_API_EVENT_QUERY, 0, 1, ev, NULL, 0);
	assert_int_equal(nl_wire_expand(&w, n, &r), -EINVAL);
	n = wire(&w, NL_WIRE_CALL, NL_API_EVENT_QUERY, 0, NL_ARG_LOST_BEFORE + 1, many, NULL, 0);
	assert_int_equal(nl_wire_expand(&w, n, &r), -EINVAL);
	/* a full record is not a compact one, nor the other way round */
	r = rec(NL_API_EVENT_RECORD);
	assert_int_equal(nl_wire_expand(&r, sizeof(r), &r), -EINVAL);
	memset(&r, 0, sizeof(r));
	memcpy(&r, &w, sizeof(r));
	assert_int_equal(nl_decode(&r, sizeof(r), &c), -EINVAL);
}

static void test_decode_rejects(void **state)
{
	struct nl_rec_call r = rec(NL_API_EVENT_RECORD);
	struct nl_call c;

	(void)state;
	assert_int_equal(nl_decode(&r, sizeof(r) - 1, &c), -EINVAL);
	assert_int_equal(nl_decode(NULL, sizeof(r), &c), -EINVAL);
	r.type = 99;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), -EINVAL);
	r.type = NL_REC_CALL;
	r.api = NL_API_COUNT;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), -EINVAL);
}

static void test_raw_line(void **state)
{
	struct nl_rec_call r = rec(NL_API_MEMCPY_HTOD_ASYNC);
	struct nl_call c;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	r.args[0] = 0x10;
	r.args[1] = 0x20;
	r.args[2] = 64;
	r.args[3] = 0x30;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(nl_raw_write(f, &c), 0);
	fclose(f);
	assert_string_equal(buf, "{\"type\":\"call\",\"schema\":1,\"api\":\"hipMemcpyHtoDAsync\",\"pid\":100,"
				 "\"tid\":101,\"ts_ns\":5,\"stream\":\"0x30\",\"dst\":\"0x10\","
				 "\"src\":\"0x20\",\"bytes\":64,\"kind\":1}\n");
	free(buf);
}

/* One graph call decoded and printed by --raw. */
static char *graph_raw(int api, uint64_t a0, uint64_t a1, uint64_t out)
{
	struct nl_rec_call r = rec(api);
	struct nl_call c;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	r.args[0] = a0;
	r.args[1] = a1;
	r.flags = (nl_api_info[api].flags & NL_AF_RET) ? NL_RF_RET | NL_RF_OUT : 0;
	r.out = out;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(nl_raw_write(f, &c), 0);
	fclose(f);
	return buf;
}

/* What an auditor follows a graph by: the graph EndCapture hands out, the
 * exec Instantiate makes of which graph, the exec a launch or destroy names. */
static void test_graph_handles(void **state)
{
	static const struct {
		int api;
		uint64_t a0, a1, out;
		const char *want, *absent;
	} cases[] = {
		{ NL_API_STREAM_END_CAPTURE, 0x30, 0x7f00, 0x6000,
		  "\"stream\":\"0x30\",\"graph\":\"0x6000\"", "\"handle\"" },
		{ NL_API_GRAPH_INSTANTIATE, 0x7f10, 0x6000, 0x9000,
		  "\"graph\":\"0x6000\",\"exec\":\"0x9000\"", "\"fn\"" },
		{ NL_API_GRAPH_INSTANTIATE_WITH_FLAGS, 0x7f10, 0x6000, 0x9000,
		  "\"graph\":\"0x6000\",\"exec\":\"0x9000\"", "\"handle\"" },
		{ NL_API_GRAPH_LAUNCH, 0x9000, 0x30, 0, "\"stream\":\"0x30\",\"exec\":\"0x9000\"",
		  "\"fn\"" },
		{ NL_API_GRAPH_EXEC_DESTROY, 0x9000, 0, 0, "\"exec\":\"0x9000\"", "\"graph\"" },
		{ NL_API_GRAPH_DESTROY, 0x6000, 0, 0, "\"graph\":\"0x6000\"", "\"exec\"" },
	};

	(void)state;
	for (size_t i = 0; i < NL_ARRAY_SIZE(cases); i++) {
		char *l = graph_raw(cases[i].api, cases[i].a0, cases[i].a1, cases[i].out);

		if (!strstr(l, cases[i].want) || strstr(l, cases[i].absent))
			fail_msg("%s: %s", nl_api_name((unsigned)cases[i].api), l);
		free(l);
	}
}

static void test_maps(void **state)
{
	const char *text =
		"55d0c0000000-55d0c0001000 r--p 00000000 fd:01 1234 /usr/bin/python3.11\n"
		"7f0000000000-7f0000100000 r-xp 00010000 fd:01 5555 /opt/x/lib/libamdhip64.so.6.1.0\n"
		"7f0000100000-7f0000200000 r--p 00110000 fd:01 5555 /opt/x/lib/libamdhip64.so.6.1.0\n"
		"7f0000300000-7f0000400000 r-xp 00000000 00:2a 77 /site-packages/torch/lib/librccl.so.1 (deleted)\n"
		"7f0000500000-7f0000600000 rw-p 00000000 00:00 0 \n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
		"7f0000700000-7f0000800000 r-xp 00000000 fd:01 99 /usr/lib/libamdhip64-not.txt\n";
	struct nl_maplib libs[4];
	int n;

	(void)state;
	n = nl_maps_find_libs(text, libs, 4);
	assert_int_equal(n, 2);
	assert_int_equal(libs[0].lib, NL_LIB_HIP);
	assert_string_equal(libs[0].path, "/opt/x/lib/libamdhip64.so.6.1.0");
	assert_int_equal(libs[0].inode, 5555);
	assert_int_equal(libs[0].dev, makedev(0xfd, 1));
	assert_false(libs[0].deleted);
	assert_int_equal(libs[1].lib, NL_LIB_RCCL);
	assert_true(libs[1].deleted);
	assert_string_equal(libs[1].path, "/site-packages/torch/lib/librccl.so.1");
	assert_int_equal(nl_maps_find_libs("garbage line\n", libs, 4), -EINVAL);
	assert_int_equal(nl_maps_find_libs("", libs, 4), 0);
	assert_int_equal(nl_lib_of_path("libamdhip64.so"), NL_LIB_HIP);
	assert_int_equal(nl_lib_of_path("/a/librccl.so.1.0"), NL_LIB_RCCL);
	assert_int_equal(nl_lib_of_path("/a/libfoo.so"), -1);
}

static void test_policy(void **state)
{
	int maj, min, patch;
	const char *why;

	(void)state;
	assert_int_equal(nl_parse_kernel_release("6.12.3-amd64", &maj, &min, &patch), 0);
	assert_int_equal(maj, 6);
	assert_int_equal(min, 12);
	assert_int_equal(patch, 3);
	assert_int_equal(nl_parse_kernel_release("garbage", &maj, &min, &patch), -EINVAL);
	assert_false(nl_kernel_uretprobe_seccomp_risk(6, 10));
	assert_true(nl_kernel_uretprobe_seccomp_risk(6, 11));
	assert_true(nl_kernel_uretprobe_seccomp_risk(6, 13));
	assert_false(nl_kernel_uretprobe_seccomp_risk(6, 14));
	assert_false(nl_kernel_uretprobe_seccomp_risk(5, 15));
	assert_int_equal(nl_status_seccomp_mode("Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t1\n"), 2);
	assert_int_equal(nl_status_seccomp_mode("Name:\tx\nSeccomp:\t0\n"), 0);
	assert_int_equal(nl_status_seccomp_mode("Name:\tx\n"), -1);
	assert_false(nl_retprobes_allowed(NL_RET_AUTO, true, 2, &why));
	assert_non_null(strstr(why, "seccomp"));
	assert_true(nl_retprobes_allowed(NL_RET_FORCE, true, 2, &why));
	assert_true(nl_retprobes_allowed(NL_RET_AUTO, true, 0, &why));
	assert_false(nl_retprobes_allowed(NL_RET_AUTO, true, -1, &why));
	assert_true(nl_retprobes_allowed(NL_RET_AUTO, false, 2, &why));
	assert_false(nl_retprobes_allowed(NL_RET_NEVER, false, 0, &why));
}

/* nl_runs_feed's uses, in order: 'L' a launch, 'C' a counted one, 'E' an event record, 'x' a loss */
static char feed_log[16];
static size_t feed_n;

static void feed_put(char ch)
{
	if (feed_n + 1 < sizeof(feed_log))
		feed_log[feed_n++] = ch;
}

static int feed_use(void *ctx, const struct nl_call *c)
{
	(void)ctx;
	feed_put((c->fields & NL_F_COUNTED) ? 'C' : c->kind == NL_K_LAUNCH ? 'L' : 'E');
	return 0;
}

static void feed_lost(void *ctx, const struct nl_call *c, uint64_t n)
{
	(void)ctx;
	(void)c;
	while (n--)
		feed_put('x');
}

static void test_runs_feed(void **state)
{
	struct nl_rec_call r = rec(NL_API_LAUNCH_KERNEL);
	struct nl_runs runs = { 0 };
	struct nl_call c;
	uint64_t counted;

	(void)state;
	r.run = NL_RUN_WORD(4, 0);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(nl_runs_feed(&runs, &c, feed_use, feed_lost, NULL, &counted), 0);
	assert_int_equal(counted, 0);
	/* the run's end: its two launches, then the event record that ended it */
	r = rec(NL_API_EVENT_RECORD);
	r.flush = NL_RUN_WORD(4, 2);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(nl_runs_feed(&runs, &c, feed_use, feed_lost, NULL, &counted), 0);
	assert_int_equal(counted, 2);
	/* a run-end record of a run never seen: the loss, and no call */
	r = rec(NL_API_EVENT_RECORD);
	r.type = NL_REC_RUN;
	r.api = 0;
	r.flush = NL_RUN_WORD(5, 1);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(nl_runs_feed(&runs, &c, feed_use, feed_lost, NULL, &counted), 0);
	assert_int_equal(counted, 0);
	assert_string_equal(feed_log, "LCCEx");
}

/* feeds one record to nl_runs_feed and returns how many launches it repeated */
static uint64_t feed_one(struct nl_runs *runs, const struct nl_rec_call *r)
{
	struct nl_call c;
	uint64_t counted;

	assert_int_equal(nl_decode(r, sizeof(*r), &c), 0);
	assert_int_equal(nl_runs_feed(runs, &c, feed_use, feed_lost, NULL, &counted), 0);
	return counted;
}

/*
 * Copies of a run's end (NL_RUN_CLOSING, sent by calls made while another
 * call was ending the run): the first end to arrive, copy or not, places the
 * launches; every later one is dropped, never counted as lost, even after
 * later runs.
 */
static void test_runs_copies(void **state)
{
	struct nl_rec_call r = rec(NL_API_LAUNCH_KERNEL), ev = rec(NL_API_EVENT_RECORD);
	struct nl_runs runs = { 0 };
	struct nl_call c;

	(void)state;
	feed_n = 0;
	memset(feed_log, 0, sizeof(feed_log));
	r.run = NL_RUN_WORD(4, 0);
	assert_int_equal(feed_one(&runs, &r), 0);
	/* the copy comes first: the launches go before its call */
	ev.flush = NL_RUN_CLOSING | NL_RUN_WORD(4, 2);
	assert_int_equal(nl_decode(&ev, sizeof(ev), &c), 0);
	assert_true(c.flush_copy);
	assert_int_equal(c.flush_token, 4);
	assert_int_equal(c.flush_count, 2);
	assert_int_equal(feed_one(&runs, &ev), 2);
	/* the closing call's own end, after it: dropped */
	ev.flush = NL_RUN_WORD(4, 2);
	assert_int_equal(feed_one(&runs, &ev), 0);
	/* the next run, ended by its closer first */
	r.run = NL_RUN_WORD(5, 0);
	assert_int_equal(feed_one(&runs, &r), 0);
	ev.flush = NL_RUN_WORD(5, 1);
	assert_int_equal(feed_one(&runs, &ev), 1);
	/* a copy of either run, late: nothing, and no loss */
	ev.flush = NL_RUN_CLOSING | NL_RUN_WORD(5, 1);
	assert_int_equal(feed_one(&runs, &ev), 0);
	r = rec(NL_API_EVENT_RECORD);
	r.type = NL_REC_RUN;
	r.api = 0;
	r.flush = NL_RUN_CLOSING | NL_RUN_WORD(4, 2);
	assert_int_equal(feed_one(&runs, &r), 0);
	assert_string_equal(feed_log, "LCCEELCEE");
	/* a run is never started closing */
	r = rec(NL_API_LAUNCH_KERNEL);
	r.run = NL_RUN_CLOSING | NL_RUN_WORD(6, 0);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), -EINVAL);
}

/* Counted launch runs: the fields, what is refused, and the repeats (user/record/runs.c). */
static void test_decode_runs(void **state)
{
	struct nl_rec_call r = rec(NL_API_LAUNCH_KERNEL);
	struct nl_call c, first, end, proto;
	struct nl_runs runs = { 0 };
	uint64_t lost;

	(void)state;
	/* which launches may be counted: plain ones, not those carrying events */
	assert_true(nl_api_info[NL_API_LAUNCH_KERNEL].countable);
	assert_true(nl_api_info[NL_API_MODULE_LAUNCH_KERNEL].countable);
	assert_false(nl_api_info[NL_API_EXT_LAUNCH_KERNEL].countable);
	assert_false(nl_api_info[NL_API_LAUNCH_KERNEL_EXC].countable);
	assert_false(nl_api_info[NL_API_EVENT_RECORD].countable);

	r.args[0] = 0xabc;  /* kernel */
	r.args[7] = 0x6000; /* stream */
	r.ts_ns = 1000;
	r.run = NL_RUN_WORD(7, 0);
	assert_int_equal(nl_decode(&r, sizeof(r), &first), 0);
	assert_int_equal(first.run_token, 7);
	assert_int_equal(first.flush_count, 0);
	assert_int_equal(nl_runs_take(&runs, &first, &proto, &lost), 0);
	nl_runs_note(&runs, &first);

	/* the next record ends the run: 5 launches after the first, the last at 1400 */
	r = rec(NL_API_EVENT_RECORD);
	r.ts_ns = 1500;
	r.flush = NL_RUN_WORD(7, 5);
	r.flush_ts = 1400;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), 0);
	assert_int_equal(c.flush_token, 7);
	assert_int_equal(c.flush_count, 5);
	assert_int_equal(nl_runs_take(&runs, &c, &proto, &lost), 5);
	assert_int_equal(lost, 0);
	assert_int_equal(proto.api, NL_API_LAUNCH_KERNEL);
	assert_int_equal(proto.stream, 0x6000);
	assert_int_equal(proto.ts_ns, 1400);
	assert_true(proto.fields & NL_F_COUNTED);
	assert_false(proto.fields & NL_F_FN); /* which kernel was not kept */
	assert_int_equal(proto.run_token, 0);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_int_equal(nl_raw_write(f, &proto), 0);
		fclose(f);
		assert_non_null(strstr(buf, "\"ts_ns\":1400,\"counted\":true,\"stream\":\"0x6000\"}"));
		free(buf);
	}
	/* the same end told again (the trace's own end after the process's): nothing */
	assert_int_equal(nl_runs_take(&runs, &c, &proto, &lost), 0);
	assert_int_equal(lost, 0);

	/* a run whose first record was lost: its launches are lost too */
	r = rec(NL_API_EVENT_RECORD);
	r.type = NL_REC_RUN;
	r.api = 0;
	r.ts_ns = 2000;
	r.flush = NL_RUN_WORD(9, 3);
	r.flush_ts = 1900;
	assert_int_equal(nl_decode(&r, sizeof(r), &end), 0);
	assert_true(end.fields & NL_F_RUN_END);
	assert_int_equal(nl_runs_take(&runs, &end, &proto, &lost), 0);
	assert_int_equal(lost, 3);

	/* a time outside what the records around it allow is clamped */
	first.run_token = 11;
	first.ts_ns = 3000;
	nl_runs_note(&runs, &first);
	end.flush_token = 11;
	end.flush_ts = 5;
	end.ts_ns = 4000;
	assert_int_equal(nl_runs_take(&runs, &end, &proto, &lost), 3);
	assert_int_equal(proto.ts_ns, 3000);

	/* refused: a run started by an API that cannot be counted, a run word with a
	 * count, an end without a token, a run-end record without a run */
	r = rec(NL_API_EVENT_RECORD);
	r.run = NL_RUN_WORD(3, 0);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), -EINVAL);
	r = rec(NL_API_LAUNCH_KERNEL);
	r.run = NL_RUN_WORD(3, 1);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), -EINVAL);
	r = rec(NL_API_LAUNCH_KERNEL);
	r.flush = NL_RUN_WORD(0, 4);
	assert_int_equal(nl_decode(&r, sizeof(r), &c), -EINVAL);
	r = rec(NL_API_LAUNCH_KERNEL);
	r.type = NL_REC_RUN;
	assert_int_equal(nl_decode(&r, sizeof(r), &c), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_consistent), cmocka_unit_test(test_decode_copy),
		cmocka_unit_test(test_decode_stack_args),   cmocka_unit_test(test_decode_return),
		cmocka_unit_test(test_decode_config_stream), cmocka_unit_test(test_decode_runs),
		cmocka_unit_test(test_runs_feed),           cmocka_unit_test(test_runs_copies),
		cmocka_unit_test(test_wire_expand),         cmocka_unit_test(test_decode_rejects),
		cmocka_unit_test(test_raw_line),            cmocka_unit_test(test_graph_handles),
		cmocka_unit_test(test_maps),                cmocka_unit_test(test_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
