// SPDX-License-Identifier: MIT
/*
 * rtcalls: call every entry point of the API table (include/nanlog_apis.h)
 * that a real HIP runtime (and RCCL) exports, through dlopen and dlsym, with
 * known argument values, and print each call as the tracer's --raw record
 * should show it (api, tid, rc and every argument the table names). Built on
 * the host and run in a root filesystem of a newer release (chroot): dlsym
 * needs no header of that release, and the ABI of each entry point is the
 * one the table describes. Without a GPU every call fails; its arguments and
 * return code are what they are. Entry points the library lacks are printed
 * as {"missing":NAME}; an entry of the table this program cannot call is an
 * error, so the table cannot grow past it unnoticed.
 *   rtcalls [-g] [-L] [-t THREADS] [-r RCCL] HIPLIB
 * -g waits for SIGUSR1 ("ready PID" on stderr) before the calls; -L opens the
 * libraries only after the gate (a runtime loaded late) and then gives the
 * tracer 1.5 s to find them; -t makes the calls in THREADS threads at once;
 * -r also opens RCCL and makes the calls it can make without a device
 * (docs/usage.md, "Runtime releases tested").
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gate.h"
#include "nanlog_apis.h"

#define H(x) ((void *)(uintptr_t)(x))

typedef int (*fn0)(void);
typedef int (*fn1p)(void *);
typedef int (*fn2pp)(void *, void *);
typedef int (*fn3ppu)(void *, void *, unsigned);
typedef int (*fn2pi)(void *, int);
typedef int (*fn3pui)(void *, unsigned, int);
typedef int (*fn3ppp)(void *, void *, void *);
typedef int (*inst5)(void *, void *, void *, char *, size_t);
typedef int (*inst3)(void *, void *, unsigned long long);
typedef int (*copy5)(void *, const void *, size_t, int, void *);
typedef int (*copy4)(void *, const void *, size_t, void *);
typedef int (*peer6)(void *, int, const void *, int, size_t, void *);
typedef int (*copy2d)(void *, size_t, const void *, size_t, size_t, size_t, int, void *);
typedef int (*memset4)(void *, int, size_t, void *);
typedef struct {
	uint32_t x, y, z;
} dim3_t;
typedef int (*launch6)(const void *, dim3_t, dim3_t, void **, size_t, void *);
typedef int (*extlaunch9)(const void *, dim3_t, dim3_t, void **, size_t, void *, void *, void *,
			  int);
typedef int (*modlaunch11)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, void *, void **, void **);
typedef int (*extmodlaunch14)(void *, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
			      size_t, void *, void **, void **, void *, void *, uint32_t);
typedef int (*cfglaunch)(const void *, const void *, void **);
typedef int (*elapsed3)(float *, void *, void *);
typedef int (*p2p6)(const void *, size_t, int, int, void *, void *);
typedef struct {
	char internal[128];
} ncclid_t; /* ncclUniqueId, passed by value */
typedef int (*initrank4)(void **, int, ncclid_t, int);
typedef int (*initall3)(void **, int, const int *);
typedef int (*version1)(int *);
typedef int (*allreduce7)(const void *, void *, size_t, int, int, void *, void *);
typedef int (*alltoallv9)(const void *, const size_t *, const size_t *, void *, const size_t *,
			  const size_t *, int, void *, void *);

static long tid(void)
{
	return syscall(SYS_gettid);
}

/* line(api, rc, "json fields"...): one expected record */
static void line(const char *api, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(const char *api, int rc, const char *fmt, ...)
{
	char args[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	printf("{\"api\":\"%s\",\"tid\":%ld,\"rc\":%d%s%s}\n", api, tid(), rc, *args ? "," : "", args);
}

/* the handle an out-parameter got, where the call succeeded */
static const char *handle(int rc, void *h, char *buf, size_t len)
{
	if (rc)
		return "";
	snprintf(buf, len, ",\"handle\":\"%#lx\"", (unsigned long)(uintptr_t)h);
	return buf;
}

#define STREAM "\"stream\":\"%#x\""
#define EVENT "\"event\":\"%#x\""
#define COPY "\"dst\":\"%#x\",\"src\":\"%#x\",\"bytes\":%d,\"kind\":%d"

/*
 * One call of entry point `name` at address f, in thread round r: handle
 * values differ per round so that two threads' records differ too.
 */
static int call(const char *name, void *f, unsigned r)
{
	unsigned s = 0x5000 + r, s2 = 0x6000 + r, e = 0x7000 + r, e2 = 0x7100 + r;
	dim3_t g = { 2, 1, 1 }, b = { 64, 1, 1 };
	char hb[64];
	/* a launch configuration: grid, block (or six unsigned), shared memory, stream at 32 */
	uint64_t cfg[6] = { 0x100000002ull, 0x4000000001ull, 0x1, 0, 0x5000 + r, 0 };
	void *out = NULL;
	float ms = 0;
	int rc;

#define IS(n) (strcmp(name, n) == 0)
	if (IS("hipMemcpyAsync") || IS("hipMemcpyAsync_spt") || IS("hipMemcpyWithStream")) {
		rc = ((copy5)f)(H(0x1000), H(0x2000), 4096, 1, H(s));
		line(name, rc, STREAM "," COPY, s, 0x1000, 0x2000, 4096, 1);
	} else if (IS("hipMemcpyHtoDAsync") || IS("hipMemcpyDtoHAsync") || IS("hipMemcpyDtoDAsync")) {
		int kind = IS("hipMemcpyHtoDAsync") ? 1 : IS("hipMemcpyDtoHAsync") ? 2 : 3;

		rc = ((copy4)f)(H(0x1100), H(0x2100), 100, H(s));
		line(name, rc, STREAM "," COPY, s, 0x1100, 0x2100, 100, kind);
	} else if (IS("hipMemcpyPeerAsync")) {
		rc = ((peer6)f)(H(0x1200), 1, H(0x2200), 2, 300, H(s));
		line(name, rc, STREAM "," COPY ",\"peer\":2", s, 0x1200, 0x2200, 300, 3);
	} else if (IS("hipMemcpy2DAsync")) {
		rc = ((copy2d)f)(H(0x1300), 64, H(0x2300), 64, 32, 4, 4, H(s));
		line(name, rc, STREAM ",\"dst\":\"%#x\",\"src\":\"%#x\",\"kind\":4", s, 0x1300, 0x2300);
	} else if (IS("hipMemsetAsync")) {
		rc = ((memset4)f)(H(0x3000), 7, 512, H(s));
		line(name, rc, STREAM ",\"dst\":\"0x3000\",\"bytes\":512", s);
	} else if (IS("hipLaunchKernel") || IS("hipLaunchKernel_spt") ||
		   IS("hipLaunchCooperativeKernel") || IS("hipLaunchCooperativeKernel_spt")) {
		rc = ((launch6)f)(H(0xabc0), g, b, NULL, 0, H(s2));
		line(name, rc, STREAM ",\"fn\":\"0xabc0\"", s2);
	} else if (IS("hipExtLaunchKernel")) {
		rc = ((extlaunch9)f)(H(0xabd0), g, b, NULL, 0, H(s2), H(e), H(e2), 1);
		line(name, rc, STREAM "," EVENT ",\"stop_event\":\"%#x\",\"flags\":1,\"fn\":\"0xabd0\"", s2,
		     e, e2);
	} else if (IS("hipModuleLaunchKernel")) {
		rc = ((modlaunch11)f)(H(0xabe0), 2, 1, 1, 64, 1, 1, 0, H(s2), NULL, NULL);
		line(name, rc, STREAM ",\"fn\":\"0xabe0\"", s2);
	} else if (IS("hipExtModuleLaunchKernel")) {
		rc = ((extmodlaunch14)f)(H(0xabf0), 128, 1, 1, 64, 1, 1, 0, H(s2), NULL, NULL, H(e), H(e2),
					 2);
		line(name, rc, STREAM "," EVENT ",\"stop_event\":\"%#x\",\"flags\":2,\"fn\":\"0xabf0\"", s2,
		     e, e2);
	} else if (IS("hipLaunchKernelExC") || IS("hipDrvLaunchKernelEx")) {
		rc = ((cfglaunch)f)(cfg, H(0xac00), NULL);
		line(name, rc, STREAM ",\"fn\":\"0xac00\"", s);
	} else if (IS("hipGraphLaunch")) {
		rc = ((fn2pp)f)(H(0xac10), H(s));
		line(name, rc, STREAM ",\"exec\":\"0xac10\"", s);
	} else if (IS("hipGraphInstantiate")) {
		rc = ((inst5)f)(&out, H(0xad00 + r), NULL, NULL, 0);
		line(name, rc, "\"graph\":\"%#x\"", 0xad00 + r);
	} else if (IS("hipGraphInstantiateWithFlags")) {
		rc = ((inst3)f)(&out, H(0xad00 + r), 0);
		line(name, rc, "\"graph\":\"%#x\"", 0xad00 + r);
	} else if (IS("hipGraphExecDestroy")) {
		rc = ((fn1p)f)(H(0xae00 + r));
		line(name, rc, "\"exec\":\"%#x\"", 0xae00 + r);
	} else if (IS("hipGraphDestroy")) {
		rc = ((fn1p)f)(H(0xad00 + r));
		line(name, rc, "\"graph\":\"%#x\"", 0xad00 + r);
	} else if (IS("hipEventCreate") || IS("hipStreamCreate")) {
		rc = ((fn1p)f)(&out);
		line(name, rc, "%s", handle(rc, out, hb, sizeof(hb)) + (rc ? 0 : 1));
	} else if (IS("hipEventCreateWithFlags") || IS("hipStreamCreateWithFlags")) {
		rc = ((fn2pi)f)(&out, 2);
		line(name, rc, "\"flags\":2%s", handle(rc, out, hb, sizeof(hb)));
	} else if (IS("hipStreamCreateWithPriority")) {
		rc = ((fn3pui)f)(&out, 1, -1);
		line(name, rc, "\"flags\":1,\"prio\":-1%s", handle(rc, out, hb, sizeof(hb)));
	} else if (IS("hipEventDestroy") || IS("hipEventQuery") || IS("hipEventSynchronize")) {
		rc = ((fn1p)f)(H(e));
		line(name, rc, EVENT, e);
	} else if (IS("hipEventRecord") || IS("hipEventRecord_spt")) {
		rc = ((fn2pp)f)(H(e), H(s));
		line(name, rc, STREAM "," EVENT, s, e);
	} else if (IS("hipEventRecordWithFlags")) {
		rc = ((fn3ppu)f)(H(e), H(s), 1);
		line(name, rc, STREAM "," EVENT ",\"flags\":1", s, e);
	} else if (IS("hipStreamWaitEvent") || IS("hipStreamWaitEvent_spt")) {
		rc = ((fn3ppu)f)(H(s2), H(e), 0);
		line(name, rc, STREAM "," EVENT ",\"flags\":0", s2, e);
	} else if (IS("hipEventElapsedTime")) {
		rc = ((elapsed3)f)(&ms, H(e), H(e2));
		line(name, rc, EVENT ",\"stop_event\":\"%#x\"", e, e2);
	} else if (IS("hipStreamDestroy") || IS("hipStreamSynchronize") ||
		   IS("hipStreamSynchronize_spt") || IS("hipStreamQuery") || IS("hipStreamQuery_spt")) {
		rc = ((fn1p)f)(H(s2));
		line(name, rc, STREAM, s2);
	} else if (IS("hipDeviceSynchronize")) {
		rc = ((fn0)f)();
		line(name, rc, "%s", "");
	} else if (IS("hipStreamBeginCapture")) {
		rc = ((fn2pi)f)(H(s), 0);
		line(name, rc, STREAM ",\"flags\":0", s);
	} else if (IS("hipStreamEndCapture")) {
		rc = ((fn2pp)f)(H(s), &out);
		line(name, rc, STREAM, s);
	} else {
		fprintf(stderr, "rtcalls: no call for %s\n", name);
		return -1;
	}
#undef IS
	return 0;
}

static void *hip, *rccl;
static unsigned nthreads = 1;

static void *sym(void *h, const char *name, const char *alt)
{
	void *f = dlsym(h, name);

	return f || !alt ? f : dlsym(h, alt);
}

/* every HIP entry point of the table, in table order */
static int hip_round(unsigned r)
{
#define NL_X_HIP(id, name, alt, lib, ...)                                   \
	if (lib == NL_LIB_HIP) {                                              \
		void *f = sym(hip, name, alt);                                \
		if (f && call(name, f, r))                                    \
			return -1;                                            \
	}
	NL_API_TABLE(NL_X_HIP)
#undef NL_X_HIP
	return 0;
}

static void *thread_round(void *arg)
{
	return (void *)(intptr_t)hip_round((unsigned)(uintptr_t)arg);
}

static void *rccl_sym(const char *name)
{
	void *f = dlsym(rccl, name);

	if (!f) {
		fprintf(stderr, "rtcalls: %s not in RCCL\n", name);
		exit(1);
	}
	return f;
}

/*
 * What real RCCL 5.4 does without a device: group calls, and the calls that
 * check their communicator (a null one) or the device before they use it.
 * ncclAllToAll dereferences the communicator at once, and a real one needs
 * a device, so no collective reaches the calls it makes inside (docs/usage.md).
 */
static void rccl_calls(void)
{
	size_t counts[1] = { 10 };
	ncclid_t id = { { 0 } };
	void *comm = NULL;
	int rc, v;

#define NCCL(name, type, ...) ((type)rccl_sym(name))(__VA_ARGS__)
	/* ncclGetVersion and ncclGetUniqueId are not probed: the trace has no record of them */
	rc = NCCL("ncclGetVersion", version1, &v);
	fprintf(stderr, "rtcalls: ncclGetVersion rc %d version %d\n", rc, v);
	NCCL("ncclGetUniqueId", fn1p, &id);
	line("ncclGroupStart", NCCL("ncclGroupStart", fn0), "%s", "");
	line("ncclGroupEnd", NCCL("ncclGroupEnd", fn0), "%s", "");
	line("ncclGroupStart", NCCL("ncclGroupStart", fn0), "%s", "");
	line("ncclGroupStart", NCCL("ncclGroupStart", fn0), "%s", "");
	line("ncclGroupEnd", NCCL("ncclGroupEnd", fn0), "%s", "");
	rc = NCCL("ncclSend", p2p6, H(0x1000), 10, 7, 1, NULL, H(0x5000));
	line("ncclSend", rc, "\"stream\":\"0x5000\",\"src\":\"0x1000\",\"count\":10,\"peer\":1");
	rc = NCCL("ncclRecv", p2p6, H(0x2000), 10, 7, 1, NULL, H(0x5000));
	line("ncclRecv", rc, "\"stream\":\"0x5000\",\"dst\":\"0x2000\",\"count\":10,\"peer\":1");
	line("ncclGroupEnd", NCCL("ncclGroupEnd", fn0), "%s", "");
	rc = NCCL("ncclAllReduce", allreduce7, H(0x1000), H(0x2000), 10, 7, 0, NULL, H(0x5100));
	line("ncclAllReduce", rc,
	     "\"stream\":\"0x5100\",\"src\":\"0x1000\",\"dst\":\"0x2000\",\"count\":10");
	rc = NCCL("ncclAllToAllv", alltoallv9, H(0x1000), counts, counts, H(0x2000), counts, counts, 7,
		  NULL, H(0x5200));
	line("ncclAllToAllv", rc, "\"stream\":\"0x5200\",\"src\":\"0x1000\",\"dst\":\"0x2000\"");
	rc = NCCL("ncclCommInitRank", initrank4, &comm, 1, id, 0);
	line("ncclCommInitRank", rc, "\"count\":1");
	rc = NCCL("ncclCommInitAll", initall3, &comm, 1, NULL);
	line("ncclCommInitAll", rc, "\"count\":1");
	line("ncclCommDestroy", NCCL("ncclCommDestroy", fn1p, NULL), "%s", "");
#undef NCCL
}

int main(int argc, char **argv)
{
	const char *rccl_path = NULL;
	int gate = 0, late = 0, opt;

	while ((opt = getopt(argc, argv, "gLt:r:")) != -1) {
		if (opt == 'g')
			gate = 1;
		else if (opt == 'L')
			late = 1;
		else if (opt == 't')
			nthreads = (unsigned)atoi(optarg);
		else if (opt == 'r')
			rccl_path = optarg;
		else
			break;
	}
	if (optind != argc - 1 || nthreads < 1 || nthreads > 16) {
		fprintf(stderr, "usage: rtcalls [-g] [-L] [-t THREADS] [-r RCCL] HIPLIB\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gate && late)
		gate_wait();
	hip = dlopen(argv[optind], RTLD_NOW | RTLD_LOCAL);
	if (!hip || (rccl_path && !(rccl = dlopen(rccl_path, RTLD_NOW | RTLD_LOCAL)))) {
		fprintf(stderr, "rtcalls: %s\n", dlerror());
		return 1;
	}
	if (gate && !late)
		gate_wait();
	if (late)
		usleep(1500 * 1000); /* the tracer's library scan runs every 0.25 s */
	/* entry points the library lacks, as the tracer's attach record lists them */
#define NL_X_MISSING(id, name, alt, lib, ...)                                             \
	if (!sym(lib == NL_LIB_HIP ? hip : rccl, name, alt) && (lib == NL_LIB_HIP || rccl)) \
		printf("{\"missing\":\"%s\"}\n", name);
	NL_API_TABLE(NL_X_MISSING)
#undef NL_X_MISSING
	if (nthreads == 1) {
		if (hip_round(0))
			return 1;
	} else {
		pthread_t th[16];
		void *res;
		int bad = 0;

		for (unsigned i = 0; i < nthreads; i++)
			if (pthread_create(&th[i], NULL, thread_round, (void *)(uintptr_t)i))
				return 1;
		for (unsigned i = 0; i < nthreads; i++)
			bad |= pthread_join(th[i], &res) || res;
		if (bad)
			return 1;
	}
	if (rccl)
		rccl_calls();
	return 0;
}
