// SPDX-License-Identifier: MIT
/*
 * The pairing engine on garbage call streams. The input is an option header
 * and a list of 8-byte ops; an op is one HIP/RCCL call, built as the ring
 * buffer would deliver it (a struct nl_rec_call through nl_decode) with its
 * pid, tid, streams, events and created handles drawn from small pools so
 * that calls meet each other, or one of nl_engine_attach / lost / exit /
 * probe_missing / report / set_run_info, or a malformed call. The list is
 * replayed up to 8 times (time goes on), so a short input is a long run.
 * callgen.h says what the bytes of a call op mean; the header: byte 0 flags
 * (1 copy, 2 compute, 4 sparse stream overrides, 8 post_step, 16
 * no_copy_split, 32 unannounced_from_start, 64 small caps, 128 also run the
 * writers), 1 copy and compute stream, 2 sparse streams, 3-7 caps, and
 * the top 3 bits of byte 4 the number of replays. Ops 0xf0-0xff: see do_op.
 *
 * Checked: nothing crashes or leaks (ASan/LSan after finish and free); the
 * audits keep the documented invariants (output.md); the summary adds up;
 * and the engine does not grow: live memory after the second replay only
 * grows by what retired processes leave for the summary.
 */
#include <errno.h>

#include <sanitizer/allocator_interface.h>

#include "callgen.h"
#include "record/decode.h"
#include "engine/engine.h"
#include "fuzz.h"

#define HDR 8
#define OP CG_OP
#define NPIDS CG_NPIDS
#define MAX_REPS 8
/* what the summary keeps of one retired process: its streams (at most 256) and its line */
#define RETIRED_BYTES (256 * sizeof(struct nl_stream_summary) + sizeof(struct nl_proc_summary))

/* FUZZ_TRACE=1 in the environment: every call and audit on stderr, for triage */
static int trace = -1;

struct run {
	struct nl_engine *e;
	struct nl_engine_opts o;
	bool write;             /* also through the JSON and table writers */
	struct nl_audit_table table;
	int64_t last_batch[NPIDS]; /* per pid since its last exit: batches leave in order */
	uint64_t batches;       /* audits the sink got */
	uint64_t summaries;
	bool finished;
	uint64_t now;
	uint64_t retired;       /* exits of known processes: what the summary keeps */
};

static int pid_index(uint32_t pid)
{
	for (int i = 0; i < NPIDS; i++)
		if (cg_pids[i] == pid)
			return i;
	return -1;
}

static void on_batch(void *ctx, const struct nl_batch_audit *a)
{
	struct run *r = ctx;
	int i = pid_index(a->pid);

	FUZZ_CHECK(i >= 0 && !r->finished);
	FUZZ_CHECK((int64_t)a->batch > r->last_batch[i]);
	if (trace)
		fprintf(stderr, "  -> audit pid %u batch %llu verdict %d skip 0x%x missing 0x%x\n",
			a->pid, (unsigned long long)a->batch, a->verdict, a->skip_mask,
			a->missing_mask);
	r->last_batch[i] = (int64_t)a->batch;
	r->batches++;
	FUZZ_CHECK(a->verdict >= NL_VERDICT_TRUSTED && a->verdict <= NL_VERDICT_SKIPPED);
	FUZZ_CHECK(a->skip_mask < (1u << NL_NSKIP) && a->missing_mask < (1u << NL_NEDGES));
	/* skip reasons exactly when skipped; missing edges and findings only when untrusted */
	FUZZ_CHECK((a->skip_mask != 0) == (a->verdict == NL_VERDICT_SKIPPED));
	FUZZ_CHECK((a->missing_mask != 0) == (a->verdict == NL_VERDICT_UNTRUSTED));
	FUZZ_CHECK(a->nunordered <= NL_AUDIT_MAX_UNORDERED);
	FUZZ_CHECK(a->verdict == NL_VERDICT_UNTRUSTED || a->nunordered == 0);
	for (uint32_t k = 0; k < a->nunordered; k++)
		FUZZ_CHECK(a->unordered[k].edge >= 0 && a->unordered[k].edge < NL_NEDGES);
	FUZZ_CHECK(a->tick >= -1 && a->depth >= -1);
	for (int s = 0; s < NL_NSTAGES; s++)
		FUZZ_CHECK(a->stage[s].nstreams <= NL_AUDIT_MAX_STREAMS);
	if (r->write) {
		nl_audit_json_batch(fuzz_devnull(), a);
		nl_audit_table_batch(fuzz_devnull(), a);
	}
}

static void on_summary(void *ctx, const struct nl_summary *s)
{
	struct run *r = ctx;
	uint64_t reasons = 0;

	r->summaries++;
	FUZZ_CHECK(s->batches == r->batches);
	FUZZ_CHECK(s->trusted + s->untrusted + s->skipped == s->batches);
	for (int k = 0; k < NL_NSKIP; k++)
		reasons += s->skip_reasons[k];
	FUZZ_CHECK(reasons >= s->skipped);
	FUZZ_CHECK(s->nstreams == 0 || s->streams);
	FUZZ_CHECK(s->nprocs == 0 || s->procs);
	for (uint32_t k = 0; k < s->nprocs; k++)
		FUZZ_CHECK(pid_index(s->procs[k].pid) >= 0);
	if (r->write) {
		nl_audit_json_summary(fuzz_devnull(), s);
		nl_audit_table_summary(fuzz_devnull(), s);
	}
}

static void options(struct run *r, const uint8_t *h)
{
	struct nl_engine_opts *o = &r->o;

	memset(o, 0, sizeof(*o));
	o->has_copy_stream = h[0] & 1;
	o->has_compute_stream = h[0] & 2;
	o->has_sparse_streams = h[0] & 4;
	o->post_step = h[0] & 8;
	o->no_copy_split = h[0] & 16;
	o->unannounced_from_start = h[0] & 32;
	r->write = h[0] & 128;
	o->copy_stream = cg_streams[h[1] & 7];
	o->compute_stream = cg_streams[(h[1] >> 4) & 7];
	o->nsparse = h[2] % 4;
	for (unsigned i = 0; i < o->nsparse; i++)
		o->sparse_streams[i] = cg_streams[(h[2] >> (2 + 2 * i)) & 7];
	if (h[0] & 64) {
		/* small caps, so that eviction and every limit are reached */
		o->max_streams = 1 + h[3] % 8; /* below 4: raised to 4 */
		o->max_events = 1 + h[4] % 8;
		o->max_batches_in_flight = 1 + h[5] % 4;
		o->max_procs = 1 + h[6] % 3;
		o->linger_ticks = h[6] >> 4;
		o->learn_records = 1 + h[7] % 64;
		o->learn_handoffs = 1 + (h[7] >> 6);
		o->learn_ns = 1 + h[3] * 1000000ull;
	}
}

static void do_op(struct run *r, const uint8_t *op)
{
	const uint32_t pid = cg_pids[op[1] % NPIDS];
	struct nl_rec_call rec;
	struct nl_call c;
	int ret;

	if (op[0] < 0xf0) {
		cg_record(op, &r->now, &rec);
		FUZZ_CHECK(nl_decode(&rec, sizeof(rec), &c) == 0);
		if (trace)
			fprintf(stderr,
				"%s pid %u tid %u ts %llu ret %llu rc %lld fields 0x%x stream 0x%llx "
				"event 0x%llx event2 0x%llx handle 0x%llx flags %u kind %u depth %u\n",
				nl_api_name(c.api), c.pid, c.tid, (unsigned long long)c.ts_ns,
				(unsigned long long)c.ret_ns, (long long)c.rc, c.fields,
				(unsigned long long)c.stream, (unsigned long long)c.event,
				(unsigned long long)c.event2, (unsigned long long)c.handle, c.flags,
				c.kindarg, c.coll_depth);
		ret = nl_engine_feed(r->e, &c);
		FUZZ_CHECK(ret == 0 || ret == -ENOSPC);
		return;
	}
	r->now += op[4] * 1000ull;
	if (trace)
		fprintf(stderr, "op 0x%02x pid %u at %llu\n", op[0], pid, (unsigned long long)r->now);
	switch (op[0]) {
	case 0xf0:
	case 0xf1:
		nl_engine_attach(r->e, pid, r->now, op[0] & 1);
		break;
	case 0xf2:
	case 0xf3:
		/* pid 0: not known whose */
		nl_engine_lost(r->e, op[0] & 1 ? pid : 0, 1 + op[2], r->now);
		break;
	case 0xf4:
		r->retired++;
		nl_engine_exit(r->e, pid, r->now);
		r->last_batch[pid_index(pid)] = -1; /* a new process may take the pid */
		break;
	case 0xf5:
		nl_engine_probe_missing(r->e, op[2] & 1 ? pid : 0, op[3] % (NL_API_COUNT + 2) - 1);
		break;
	case 0xf6:
		nl_engine_report(r->e);
		break;
	case 0xf7: {
		const char *names[3] = { "hipMemcpyAsync", NULL, "ncclAllToAll" };
		struct nl_run_info ri = {
			.probes_attached = op[2], .nprobes_missing = op[3] % 4,
			.probes_missing = op[3] & 4 ? names : NULL, .lost_ringbuf = op[5],
			.cpu_ms = op[6] / 3.0, .wall_realtime_ns = r->now, .wall_monotonic_ns = r->now,
		};

		if (ri.nprobes_missing > 3)
			ri.nprobes_missing = 3;
		nl_engine_set_run_info(r->e, &ri);
		break;
	}
	default:
		/* malformed: an api outside the table, or a kind that is not the api's */
		cg_record(op, &r->now, &rec);
		FUZZ_CHECK(nl_decode(&rec, sizeof(rec), &c) == 0);
		if (op[0] & 1)
			c.api = (uint16_t)(NL_API_COUNT + op[2]);
		else
			c.kind = (uint8_t)(c.kind + 1 + op[2] % 8);
		FUZZ_CHECK(nl_engine_feed(r->e, &c) == -EINVAL);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[HDR] = { 0 };
	struct run *r = calloc(1, sizeof(*r));
	struct nl_sink sink = { .batch = on_batch, .summary = on_summary };
	size_t nops = size > HDR ? (size - HDR) / OP : 0;
	int reps;
	size_t base = 0, mark = 0;
	uint64_t retired_mark = 0;
	struct nl_call c;

	FUZZ_CHECK(r);
	if (trace < 0)
		trace = getenv("FUZZ_TRACE") != NULL;
	memcpy(hdr, data, size < HDR ? size : HDR);
	options(r, hdr);
	reps = 1 + (hdr[4] >> 5) % MAX_REPS;
	if (trace)
		fprintf(stderr, "opts 0x%02x copy 0x%llx compute 0x%llx nsparse %u streams %u events %u "
			"batches %u procs %u linger %u learn %u/%u reps %d\n", hdr[0],
			(unsigned long long)r->o.copy_stream, (unsigned long long)r->o.compute_stream,
			r->o.nsparse, r->o.max_streams, r->o.max_events, r->o.max_batches_in_flight,
			r->o.max_procs, r->o.linger_ticks, r->o.learn_records, r->o.learn_handoffs, reps);
	for (int i = 0; i < NPIDS; i++)
		r->last_batch[i] = -1;
	r->now = 1000000000;
	sink.ctx = r;
	r->e = nl_engine_new(&r->o, &sink);
	FUZZ_CHECK(r->e);
	base = __sanitizer_get_current_allocated_bytes();
	for (int rep = 0; rep < reps; rep++) {
		for (size_t i = 0; i < nops; i++)
			do_op(r, data + HDR + i * OP);
		if (rep == 1) {
			mark = __sanitizer_get_current_allocated_bytes();
			retired_mark = r->retired;
		} else if (rep > 1) {
			/* bounded: after two passes every handle was seen; what the
			 * summary keeps of each retired process (streams, its line,
			 * vectors growing by doubling) is all that may still grow */
			size_t now = __sanitizer_get_current_allocated_bytes();
			size_t allow = 64 * 1024 + (r->retired - retired_mark) * 2 * RETIRED_BYTES;

			FUZZ_CHECK(now <= mark + allow);
		}
	}
	FUZZ_CHECK(__sanitizer_get_current_allocated_bytes() - base < (64u << 20));
	nl_engine_finish(r->e, r->now + 1);
	r->finished = true;
	FUZZ_CHECK(r->summaries >= 1);
	/* after finish: refused, and finish again does nothing */
	memset(&c, 0, sizeof(c));
	c.api = NL_API_LAUNCH_KERNEL;
	c.kind = NL_K_LAUNCH;
	c.pid = cg_pids[0];
	FUZZ_CHECK(nl_engine_feed(r->e, &c) == -ESHUTDOWN);
	nl_engine_finish(r->e, r->now + 2);
	nl_engine_free(r->e);
	free(r);
	return 0;
}
