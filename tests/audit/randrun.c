/* SPDX-License-Identifier: MIT */
/*
 * randrun: one random pipeline program (the one fuzz_audit makes of the seed,
 * tests/audit/randprog.h) executed for real on simhip, so that the audit of
 * real probes can be compared with the program's truth (docs/engine.md,
 * "Model-based random testing").
 *
 *   randrun [-g] [-o FILE] SEED
 *   randrun -d SEED          print the program's spec (as fuzz_audit -p does) and exit
 *
 * Every call of the program is made in the program's order, each from its own
 * thread (main, loader, autograd, watchdog): one host thread per thread of
 * the program, taking turns on a global step counter, so the calls happen in
 * exactly the generated global order and each per-thread default stream is
 * its thread's. The program's stream and event handles are mapped to the ones
 * simhip returns; the calls RCCL makes inside a collective (the communicator's
 * done event, the all-to-all's kernel) are made by simulated RCCL itself.
 * Streams the program says were created before tracing are created before
 * the gate (-g: "ready PID" on stderr, then wait for SIGUSR1), so that they
 * are not traced: such a program must be held at the gate and the tool
 * attached by pid. A gated run is one the tool attached to while it was
 * running (mid-run); without -g the tool is meant to start it (-- CMD).
 *
 * -o FILE: JSON lines: the program (seed, pid, mid_run), its streams with the real
 * handles and threads, every call with its thread and the CLOCK_MONOTONIC
 * span it was made in, and the truth per batch. `fuzz_audit --check-audit`
 * reads it back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"
#include "out/json.h"
#include "app/options.h"
#include "randprog.h"
#include "rccl.h"
#include "simhip.h"

#define RR_MAX_THREADS 8
#define RR_MAX_MAP 256
#define RR_MAX_KERNELS 32
/* a simulated kernel's device time: long enough that a later op can find it running */
#define RR_KERNEL_NS 30000ull
/* the largest copy the generator makes (4096 << 7) */
#define RR_BUF_BYTES (4096u << 7)

struct rr_map {
	uint64_t from;
	void *to;
};

struct rr_thread {
	uint32_t ptid; /* the program's thread id */
	pid_t tid;     /* the real one */
	pthread_t th;
};

static struct {
	struct rp_prog p;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool go;      /* the gate is open */
	int next;     /* the call whose turn it is */
	int err, err_call;
	struct rr_thread thr[RR_MAX_THREADS];
	int nthr;
	uint64_t *t0, *t1;
	pid_t *tid;
	struct rr_map streams[RR_MAX_MAP], events[RR_MAX_MAP];
	int nstreams, nevents;
	struct {
		uint64_t fn;
		simhip_kernel_t k;
	} kernels[RR_MAX_KERNELS];
	int nkernels;
	/* one pair of buffers per logical stream: copies on two streams never
	 * touch the same bytes */
	void *dev[RP_MAX_STREAMS], *host[RP_MAX_STREAMS];
	ncclComm_t comm;
} L = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int map_put(struct rr_map *m, int *n, uint64_t from, void *to)
{
	for (int i = 0; i < *n; i++)
		if (m[i].from == from) {
			m[i].to = to;
			return 0;
		}
	if (*n == RR_MAX_MAP)
		return -ENOSPC;
	m[*n].from = from;
	m[(*n)++].to = to;
	return 0;
}

static int map_get(const struct rr_map *m, int n, uint64_t from, void **to)
{
	for (int i = 0; i < n; i++)
		if (m[i].from == from) {
			*to = m[i].to;
			return 0;
		}
	return -ENOENT;
}

/* The program's stream handle as simhip's: 0 is the null stream, 2 the
 * calling thread's per-thread stream, the rest were created. */
static int stream_of(uint64_t h, hipStream_t *s)
{
	void *v;

	if (h == 0 || h == 2) {
		*s = (hipStream_t)(uintptr_t)h;
		return 0;
	}
	if (map_get(L.streams, L.nstreams, h, &v))
		return -ENOENT;
	*s = v;
	return 0;
}

static int event_of(uint64_t h, hipEvent_t *e)
{
	void *v;

	if (map_get(L.events, L.nevents, h, &v))
		return -ENOENT;
	*e = v;
	return 0;
}

/* The generator's kernels are function ids (randprog.c: 0x42xx input_dist,
 * 0x43xx dist_init, 0x44xx the all-to-all, 0x45xx forward, 0x46xx backward);
 * simhip's are descriptors, one per id, named after it for its traces. */
static const void *kernel_of(uint64_t fn)
{
	static const char *const names[] = { "input_dist", "dist_init", "all_to_all", "forward",
					     "backward" };
	int i;

	for (i = 0; i < L.nkernels; i++)
		if (L.kernels[i].fn == fn)
			return &L.kernels[i].k;
	if (i == RR_MAX_KERNELS)
		return NULL;
	L.kernels[i].fn = fn;
	L.kernels[i].k.magic = SIMHIP_KERNEL_MAGIC;
	L.kernels[i].k.name = fn >= 0x4200 && fn < 0x4700 ? names[(fn >> 8) - 0x42] : "kernel";
	L.kernels[i].k.duration_ns = RR_KERNEL_NS;
	L.nkernels++;
	return &L.kernels[i].k;
}


/* whether an API's table row has that argument (NL_NA: it does not) */
static bool has(int slot)
{
	return slot >= 0 && slot < NL_NARGS;
}

static const char *api_name(int api)
{
	return nl_api_info[api].name;
}

/* Make call i of the program. 0, or -EINVAL for a call this runner cannot make,
 * or the failed HIP/RCCL result as a positive number. */
static int make_call(int i)
{
	const struct rp_call *c = &L.p.calls[i];
	const struct nl_api_info *a = &nl_api_info[c->rec.api];
	const __u64 *arg = c->rec.args;
	uint64_t sh = has(a->slot_stream) ? arg[a->slot_stream] : 0;
	hipStream_t s = NULL;
	hipEvent_t e = NULL;
	dim3 one = { 1, 1, 1 };
	void *dev, *host;
	int rc;

	(void)host;

	/* the handles a call takes (a create's slot is its out-pointer) */
	bool creates = nl_api_info[c->rec.api].kind == NL_K_STREAM_CREATE ||
		       nl_api_info[c->rec.api].kind == NL_K_EVENT_CREATE;

	if (!creates && has(a->slot_stream) && stream_of(sh, &s))
		return -ENOENT;
	if (!creates && has(a->slot_event) && event_of(arg[a->slot_event], &e))
		return -ENOENT;
	switch (c->rec.api) {
	case NL_API_STREAM_CREATE_WITH_PRIORITY:
		rc = hipStreamCreateWithPriority(&s, (unsigned)arg[a->slot_flags],
						 (int)(int64_t)arg[a->slot_prio]);
		if (!rc && map_put(L.streams, &L.nstreams, c->rec.out, s))
			return -ENOSPC;
		return rc;
	case NL_API_STREAM_DESTROY:
		/* a recreated stream's program handle maps to the new one (map_put) */
		return hipStreamDestroy(s);
	case NL_API_EVENT_CREATE_WITH_FLAGS:
		rc = hipEventCreateWithFlags(&e, (unsigned)arg[a->slot_flags]);
		if (!rc && map_put(L.events, &L.nevents, c->rec.out, e))
			return -ENOSPC;
		return rc;
	case NL_API_EVENT_DESTROY:
		return hipEventDestroy(e);
	case NL_API_EVENT_RECORD:
		return hipEventRecord(e, s);
	case NL_API_STREAM_WAIT_EVENT:
		return hipStreamWaitEvent(s, e, (unsigned)arg[a->slot_flags]);
	case NL_API_STREAM_WAIT_EVENT_SPT:
		return hipStreamWaitEvent_spt(s, e, (unsigned)arg[a->slot_flags]);
	case NL_API_EVENT_QUERY:
		rc = hipEventQuery(e);
		return rc == hipErrorNotReady ? 0 : rc;
	case NL_API_LAUNCH_KERNEL:
	case NL_API_LAUNCH_KERNEL_SPT: {
		const void *k = kernel_of(arg[a->slot_fn]);

		if (!k)
			return -ENOSPC;
		return c->rec.api == NL_API_LAUNCH_KERNEL ? hipLaunchKernel(k, one, one, NULL, 0, s)
							  : hipLaunchKernel_spt(k, one, one, NULL, 0, s);
	}
	case NL_API_MEMCPY_ASYNC:
	case NL_API_MEMCPY_ASYNC_SPT: {
		hipMemcpyKind kind = (hipMemcpyKind)arg[a->slot_kind];
		size_t n = arg[a->slot_bytes];
		bool h2d = kind == hipMemcpyHostToDevice;

		if (n > RR_BUF_BYTES || (!h2d && kind != hipMemcpyDeviceToHost))
			return -EINVAL;
		if (c->sid < 0)
			return -EINVAL;
		dev = L.dev[c->sid];
		host = L.host[c->sid];
		return c->rec.api == NL_API_MEMCPY_ASYNC
			       ? hipMemcpyAsync(h2d ? dev : host, h2d ? host : dev, n, kind, s)
			       : hipMemcpyAsync_spt(h2d ? dev : host, h2d ? host : dev, n, kind, s);
	}
	case NL_API_STREAM_SYNCHRONIZE:
		return hipStreamSynchronize(s);
	case NL_API_STREAM_SYNCHRONIZE_SPT:
		return hipStreamSynchronize_spt(s);
	case NL_API_DEVICE_SYNCHRONIZE:
		return hipDeviceSynchronize();
	case NL_API_NCCL_COMM_INIT_RANK: {
		ncclUniqueId id;

		rc = (int)ncclGetUniqueId(&id);
		return rc ? rc : (int)ncclCommInitRank(&L.comm, 1, id, 0);
	}
	case NL_API_NCCL_ALLTOALL: {
		size_t count = arg[a->slot_count];

		if (count * sizeof(float) > RR_BUF_BYTES / 2)
			return -EINVAL;
		/* the collective's kernel is the call before it, on its logical stream */
		if (i == 0 || L.p.calls[i - 1].sid < 0)
			return -EINVAL;
		dev = L.dev[L.p.calls[i - 1].sid];
		return (int)ncclAllToAll(dev, (char *)dev + RR_BUF_BYTES / 2, count, ncclFloat, L.comm, s);
	}
	default:
		return -EINVAL;
	}
}

/* A call RCCL makes inside a collective: made by the outer call, the next
 * one of the program that is not nested (the generator puts the inner calls
 * first, in ring order). */
static bool nested(int i)
{
	return L.p.calls[i].rec.coll_depth != 0;
}

static int next_call(int i)
{
	while (i < L.p.n && nested(i))
		i++;
	return i;
}

static void take_turns(uint32_t ptid)
{
	pid_t me = gettid();

	pthread_mutex_lock(&L.mu);
	for (;;) {
		while (!L.go || (!L.err && L.next < L.p.n && L.p.calls[L.next].rec.tid != ptid))
			pthread_cond_wait(&L.cv, &L.mu);
		if (L.err || L.next >= L.p.n)
			break;
		int i = L.next;

		pthread_mutex_unlock(&L.mu);
		uint64_t t0 = mono_ns();
		int rc = make_call(i);
		uint64_t t1 = mono_ns();

		pthread_mutex_lock(&L.mu);
		/* the nested calls before i were made inside it */
		for (int k = i; k >= 0 && (k == i || nested(k)); k--) {
			L.t0[k] = t0;
			L.t1[k] = t1;
			L.tid[k] = me;
		}
		if (rc) {
			L.err = rc;
			L.err_call = i;
		}
		L.next = next_call(i + 1);
		pthread_cond_broadcast(&L.cv);
	}
	pthread_mutex_unlock(&L.mu);
}

static void *thread_main(void *arg)
{
	struct rr_thread *t = arg;

	pthread_mutex_lock(&L.mu);
	t->tid = gettid();
	pthread_cond_broadcast(&L.cv);
	pthread_mutex_unlock(&L.mu);
	take_turns(t->ptid);
	return NULL;
}

static pid_t real_tid(uint32_t ptid)
{
	for (int i = 0; i < L.nthr; i++)
		if (L.thr[i].ptid == ptid)
			return L.thr[i].tid;
	return 0;
}

/* The threads of the program, each started and its real id known before the gate. */
static int start_threads(void)
{
	L.thr[0].ptid = L.p.pid;
	L.thr[0].tid = gettid();
	L.nthr = 1;
	for (int i = 0; i < L.p.n; i++) {
		uint32_t t = L.p.calls[i].rec.tid;

		bool known = false;

		for (int k = 0; k < L.nthr; k++)
			known |= L.thr[k].ptid == t;
		if (known)
			continue;
		if (L.nthr == RR_MAX_THREADS)
			return -E2BIG;
		L.thr[L.nthr].ptid = t;
		if (pthread_create(&L.thr[L.nthr].th, NULL, thread_main, &L.thr[L.nthr]))
			return -EAGAIN;
		L.nthr++;
	}
	pthread_mutex_lock(&L.mu);
	for (int i = 1; i < L.nthr; i++)
		while (!L.thr[i].tid)
			pthread_cond_wait(&L.cv, &L.mu);
	pthread_mutex_unlock(&L.mu);
	return 0;
}

/* Buffers, and the streams created before tracing (no create call in the program). */
static int set_up(void)
{
	for (int k = 0; k < L.p.nstreams; k++) {
		if (hipMalloc(&L.dev[k], RR_BUF_BYTES) != hipSuccess)
			return -ENOMEM;
		L.host[k] = calloc(1, RR_BUF_BYTES);
		if (!L.host[k])
			return -ENOMEM;
	}
	for (int k = 0; k < L.p.nstreams; k++) {
		uint64_t h = L.p.stream_handle[k];
		bool traced = false;
		hipStream_t s;

		if (h == 0 || h == 2)
			continue;
		for (int i = 0; i < L.p.n && !traced; i++)
			traced = L.p.calls[i].rec.api == NL_API_STREAM_CREATE_WITH_PRIORITY &&
				 L.p.calls[i].rec.out == h;
		if (traced)
			continue;
		if (hipStreamCreateWithFlags(&s, L.p.stream_blocking[k] ? hipStreamDefault
									: hipStreamNonBlocking))
			return -ENOMEM;
		if (map_put(L.streams, &L.nstreams, h, s))
			return -ENOSPC;
	}
	return 0;
}

static int write_truth(FILE *f, uint64_t seed, bool mid_run)
{
	const struct rp_prog *p = &L.p;
	static const char *const role[] = { ['M'] = "copy",    ['D'] = "sparse", ['N'] = "sparse",
					    ['C'] = "compute", ['B'] = "other" };
	char desc[512];
	struct nl_json j;
	int rc = 0;
	/* the launches the probes count by default, as the tool gets them */
	bool *counted = calloc((size_t)p->n, sizeof(*counted));

	if (!counted)
		return -ENOMEM;
	rp_counted_calls(p, counted);
	rp_spec_describe(&p->spec, desc, sizeof(desc));
	nl_json_begin(&j, f);
	nl_json_kstr(&j, "type", "program");
	nl_json_ku64(&j, "seed", seed);
	nl_json_ku64(&j, "pid", (uint64_t)getpid());
	nl_json_ku64(&j, "calls", (uint64_t)p->n);
	nl_json_kstr(&j, "spec", desc);
	nl_json_kstr(&j, "undecidable", rp_undecidable_name(p->undecidable));
	nl_json_kbool(&j, "oversync", p->oversync);
	nl_json_kbool(&j, "mid_run", mid_run);
	rc |= nl_json_end(&j);
	for (int k = 0; k < p->nstreams; k++) {
		uint64_t h = p->stream_handle[k];
		hipStream_t s = NULL;

		stream_of(h, &s);
		nl_json_begin(&j, f);
		nl_json_kstr(&j, "type", "stream");
		nl_json_kstr(&j, "name", (char[2]){ p->stream_name[k], 0 });
		nl_json_khex(&j, "stream", (uint64_t)(uintptr_t)s);
		nl_json_ku64(&j, "tid", p->stream_owner[k] ? (uint64_t)real_tid(p->stream_owner[k]) : 0);
		nl_json_kstr(&j, "role", role[(unsigned char)p->stream_name[k]]);
		rc |= nl_json_end(&j);
	}
	for (int i = 0; i < p->n; i++) {
		nl_json_begin(&j, f);
		nl_json_kstr(&j, "type", "call");
		nl_json_ku64(&j, "i", (uint64_t)i);
		nl_json_kstr(&j, "api", api_name(p->calls[i].rec.api));
		nl_json_ku64(&j, "tid", (uint64_t)L.tid[i]);
		nl_json_ku64(&j, "t0", L.t0[i]);
		nl_json_ku64(&j, "t1", L.t1[i]);
		if (counted[i])
			nl_json_kbool(&j, "counted", true);
		rc |= nl_json_end(&j);
	}
	for (int T = 0; T < p->spec.nb; T++) {
		const struct rp_truth *t = &p->truth[T];

		nl_json_begin(&j, f);
		nl_json_kstr(&j, "type", "batch");
		nl_json_ku64(&j, "batch", (uint64_t)T);
		nl_json_kstr(&j, "verdict", nl_verdict_name(t->verdict));
		if (t->first < 0)
			nl_json_knull(&j, "edge");
		else
			nl_json_kstr(&j, "edge", nl_edge_name(t->first));
		nl_json_key(&j, "edges");
		nl_json_arr(&j);
		for (int e = 0; e < NL_NEDGES; e++)
			if (t->all_mask & (1u << e))
				nl_json_str(&j, nl_edge_name(e));
		nl_json_arr_end(&j);
		rc |= nl_json_end(&j);
	}
	free(counted);
	return rc ? -EIO : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: randrun [-g] [-o FILE] SEED | randrun -d SEED\n");
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	bool gate = false, describe = false;
	uint64_t seed;
	struct rp_spec s;
	int opt, rc;

	while ((opt = getopt(argc, argv, "dgo:")) != -1) {
		if (opt == 'g')
			gate = true;
		else if (opt == 'd')
			describe = true;
		else if (opt == 'o')
			out = optarg;
		else {
			usage();
			return 2;
		}
	}
	if (optind + 1 != argc || nl_parse_u64(argv[optind], 0, INT64_MAX, &seed)) {
		usage();
		return 2;
	}
	rp_spec_random(&s, seed);
	if (describe) {
		char desc[512];

		rp_spec_describe(&s, desc, sizeof(desc));
		printf("%s\n", desc);
		return 0;
	}
	if (s.pretrace && !gate) {
		fprintf(stderr, "randrun: seed %llu creates streams before tracing: run it with -g "
				"and attach by pid\n", (unsigned long long)seed);
		return 2;
	}
	if (rp_build(&L.p, &s)) {
		fprintf(stderr, "randrun: seed %llu: out of memory\n", (unsigned long long)seed);
		return 1;
	}
	L.t0 = calloc((size_t)L.p.n, sizeof(*L.t0));
	L.t1 = calloc((size_t)L.p.n, sizeof(*L.t1));
	L.tid = calloc((size_t)L.p.n, sizeof(*L.tid));
	if (!L.t0 || !L.t1 || !L.tid) {
		fprintf(stderr, "randrun: out of memory\n");
		return 1;
	}
	rc = set_up();
	if (!rc)
		rc = start_threads();
	if (rc) {
		fprintf(stderr, "randrun: seed %llu: set-up failed: %s\n", (unsigned long long)seed,
			strerror(-rc));
		return 1;
	}
	if (gate)
		gate_wait();
	pthread_mutex_lock(&L.mu);
	L.next = next_call(0);
	L.go = true;
	pthread_cond_broadcast(&L.cv);
	pthread_mutex_unlock(&L.mu);
	take_turns(L.p.pid);
	for (int i = 1; i < L.nthr; i++)
		pthread_join(L.thr[i].th, NULL);
	if (L.err) {
		fprintf(stderr, "randrun: seed %llu: call %d (%s) failed: %d\n",
			(unsigned long long)seed, L.err_call, api_name(L.p.calls[L.err_call].rec.api),
			L.err);
		return 1;
	}
	if (out) {
		FILE *f = fopen(out, "w");

		if (!f) {
			fprintf(stderr, "randrun: %s: %s\n", out, strerror(errno));
			return 1;
		}
		rc = write_truth(f, seed, gate);
		if (fclose(f) || rc) {
			fprintf(stderr, "randrun: %s: write error\n", out);
			return 1;
		}
	}
	rp_free(&L.p);
	return 0;
}
