// SPDX-License-Identifier: MIT
/*
 * The pairing engine on graphs: a graph whose capture the engine saw and
 * which kept to its capturing stream is one work op of its launch stream
 * (its batches are judged, a dropped wait before it is named); a graph
 * whose captured edges cross the capture, span streams, or were never seen
 * keeps its batches skipped `graph_capture`.
 */
#include "base/util.h"
#include "test_engine_util.h"

#define GRAPH TB_H(900)
#define EXEC TB_H(901)

static void end_job(struct tb *t)
{
	tb_device_sync(t);
	nl_engine_exit(t->e, t->pid, t->now += 1000);
	tb_finish(t);
}

static void capture_end(struct tb *t, uint64_t s, uint64_t graph, int rc)
{
	struct nl_call c = tb_call(t, NL_API_STREAM_END_CAPTURE);

	tb_set_stream(&c, s);
	c.rc = rc;
	if (!rc) {
		c.handle = graph;
		c.fields |= NL_F_HANDLE;
	}
	tb_feed(t, &c);
}

static void instantiate(struct tb *t, uint64_t graph, uint64_t exec)
{
	struct nl_call c = tb_call(t, NL_API_GRAPH_INSTANTIATE_WITH_FLAGS);

	c.fn = graph;
	c.handle = exec;
	c.fields |= NL_F_FN | NL_F_HANDLE;
	tb_feed(t, &c);
}

static void graph_call(struct tb *t, int api, uint64_t handle, uint64_t s)
{
	struct nl_call c = tb_call(t, api);

	if (api == NL_API_GRAPH_LAUNCH)
		tb_set_stream(&c, s);
	c.fn = handle;
	c.fields |= NL_F_FN;
	tb_feed(t, &c);
}

enum capture_kind {
	CAP_ONE_STREAM,    /* only the capturing stream: decidable */
	CAP_OUTSIDE_WAIT,  /* waits on an event recorded outside the capture */
	CAP_FORK_JOIN,     /* a second stream joins the capture and is joined back */
	CAP_RECORD_LEAKS,  /* a record in the capture is waited on after it */
	CAP_UNSEEN,        /* the launch names an exec the engine never saw made */
};

/* Captures the dense part on its own stream g, as torch.compile's
 * reduce-overhead mode does, and instantiates it as EXEC. */
static void capture_dense(struct tb *t, uint64_t g, uint64_t m, int kind)
{
	uint64_t side, fork, join, out;

	if (kind == CAP_UNSEEN)
		return;
	tb_capture(t, g, true);
	tb_launch(t, g);
	if (kind == CAP_OUTSIDE_WAIT) {
		out = tb_event_create(t);
		tb_record(t, out, 0); /* outside the capture */
		tb_wait(t, g, out);
	}
	if (kind == CAP_FORK_JOIN) {
		side = tb_stream_create(t, 1);
		fork = tb_event_create(t);
		join = tb_event_create(t);
		tb_record(t, fork, g);
		tb_wait(t, side, fork);
		tb_launch(t, side);
		tb_record(t, join, side);
		tb_wait(t, g, join);
	}
	if (kind == CAP_RECORD_LEAKS) {
		out = tb_event_create(t);
		tb_record(t, out, g);
	}
	tb_launch(t, g);
	tb_launch(t, g);
	capture_end(t, g, GRAPH, 0);
	instantiate(t, GRAPH, EXEC);
	graph_call(t, NL_API_GRAPH_DESTROY, GRAPH, 0);
	if (kind == CAP_RECORD_LEAKS)
		tb_wait(t, m, out); /* the copy stream waits on a record made only in the graph */
}

/* A prefetching loop whose forward is a kernel, the dense part and a kernel
 * on C (0). Iteration 0 runs the dense part eagerly; iteration 1 captures it
 * on g, which first waits for C and is waited for after (as PyTorch's graph
 * capture does); every iteration from 1 launches the graph on C. */
static struct tb *graph_loop(int kind, int drop)
{
	struct tb *t = tb_new(NULL);
	uint64_t m = tb_stream_create(t, 1), g = tb_stream_create(t, 1);

	for (int k = 0; k < 5; k++) {
		tb_copy(t, m, 1, 1024);
		tb_copy(t, m, 1, 1024);
		if (k != drop)
			tb_wait_stream(t, 0, m);
		tb_launch(t, 0);
		if (k == 1) {
			tb_wait_stream(t, g, 0);
			capture_dense(t, g, m, kind);
			tb_wait_stream(t, 0, g);
		}
		if (k == 0) {
			tb_launch(t, 0);
			tb_launch(t, 0);
		} else {
			graph_call(t, NL_API_GRAPH_LAUNCH, EXEC, 0);
		}
		tb_launch(t, 0);
	}
	end_job(t);
	return t;
}

static void one_stream_graph_is_audited(void **state)
{
	struct tb *t = graph_loop(CAP_ONE_STREAM, -1);

	(void)state;
	assert_int_equal(t->n, 5);
	for (int k = 0; k < 5; k++)
		assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);

	/* the dropped wait before a graph launch is named, on its batch only */
	t = graph_loop(CAP_ONE_STREAM, 2);
	assert_int_equal(t->n, 5);
	for (int k = 0; k < 5; k++)
		if (k == 2)
			assert_verdict(t, 2, NL_VERDICT_UNTRUSTED, EDGE(COPY_FORWARD), 0);
		else
			assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);
}

static void undecidable_graphs_are_skipped(void **state)
{
	static const int kinds[] = { CAP_OUTSIDE_WAIT, CAP_FORK_JOIN, CAP_RECORD_LEAKS, CAP_UNSEEN };

	(void)state;
	for (size_t i = 0; i < NL_ARRAY_SIZE(kinds); i++) {
		struct tb *t = graph_loop(kinds[i], -1);

		if (t->n != 5)
			fail_msg("capture kind %d: %d batches", kinds[i], t->n);
		assert_verdict(t, 0, NL_VERDICT_TRUSTED, 0, 0); /* eager, before the capture */
		for (int k = 1; k < 5; k++)
			assert_verdict(t, (uint64_t)k, NL_VERDICT_SKIPPED, 0, SKIPR(GRAPH_CAPTURE));
		tb_free(t);
	}
}

/* The exec's handle, destroyed and made again from a graph that cannot be
 * decided, must not keep the old graph's standing; a failed end of capture
 * ends it (the stream's later ops count again). */
static void exec_reuse_and_failed_end(void **state)
{
	struct tb *t = tb_new(NULL);
	uint64_t m = tb_stream_create(t, 1), g = tb_stream_create(t, 1), out;

	(void)state;
	capture_dense(t, g, m, CAP_ONE_STREAM);
	for (int k = 0; k < 4; k++) {
		if (k == 2) {
			graph_call(t, NL_API_GRAPH_EXEC_DESTROY, EXEC, 0);
			tb_capture(t, g, true);
			out = tb_event_create(t);
			tb_record(t, out, 0); /* outside the capture */
			tb_wait(t, g, out);
			tb_launch(t, g);
			capture_end(t, g, GRAPH, 0);
			instantiate(t, GRAPH, EXEC);
		}
		tb_copy(t, m, 1, 1024);
		tb_wait_stream(t, 0, m);
		graph_call(t, NL_API_GRAPH_LAUNCH, EXEC, 0);
		tb_launch(t, 0);
	}
	tb_capture(t, g, true);
	tb_launch(t, g);
	capture_end(t, g, 0, 901); /* hipErrorStreamCaptureInvalidated */
	for (int k = 4; k < 6; k++) {
		tb_copy(t, m, 1, 1024);
		tb_wait_stream(t, 0, m);
		/* were g still capturing, this would fork C into the capture */
		tb_wait_stream(t, 0, g);
		tb_launch(t, 0);
	}
	end_job(t);
	assert_int_equal(t->n, 6);
	for (int k = 0; k < 6; k++)
		if (k == 2 || k == 3)
			assert_verdict(t, (uint64_t)k, NL_VERDICT_SKIPPED, 0, SKIPR(GRAPH_CAPTURE));
		else
			assert_verdict(t, (uint64_t)k, NL_VERDICT_TRUSTED, 0, 0);
	tb_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_stream_graph_is_audited),
		cmocka_unit_test(undecidable_graphs_are_skipped),
		cmocka_unit_test(exec_reuse_and_failed_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
