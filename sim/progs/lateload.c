// SPDX-License-Identifier: MIT
/*
 * lateload [-g] LIB [LIB2]: start without any HIP library, wait for SIGUSR1
 * (-g), then dlopen LIB and make a few known calls through dlsym, like a
 * Python job that imports torch late. Prints one JSON line per call (api,
 * event, rc). With LIB2, it then dlcloses LIB, dlopens LIB2 (the same file
 * again, or another copy) and makes the calls once more.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"

typedef int (*query_fn)(void *event);
typedef int (*record_fn)(void *event, void *stream);

static int calls(const char *lib, int base)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	query_fn query;
	record_fn record;

	if (!h) {
		fprintf(stderr, "lateload: %s\n", dlerror());
		return 1;
	}
	query = (query_fn)(uintptr_t)dlsym(h, "hipEventQuery");
	record = (record_fn)(uintptr_t)dlsym(h, "hipEventRecord");
	if (!query || !record) {
		fprintf(stderr, "lateload: symbols missing in %s\n", lib);
		return 1;
	}
	/* give the tracer's library scan (every 0.25 s by default) time to attach */
	usleep(1500 * 1000);
	for (int i = base; i < base + 3; i++) {
		int rc = record((void *)(uintptr_t)(0x9000 + i), (void *)(uintptr_t)0x9100);

		printf("{\"api\":\"hipEventRecord\",\"event\":\"0x%x\",\"rc\":%d}\n", 0x9000 + i, rc);
		rc = query((void *)(uintptr_t)(0x9000 + i));
		printf("{\"api\":\"hipEventQuery\",\"event\":\"0x%x\",\"rc\":%d}\n", 0x9000 + i, rc);
	}
	fflush(stdout);
	if (dlclose(h)) {
		fprintf(stderr, "lateload: dlclose: %s\n", dlerror());
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int gate = argc > 1 && strcmp(argv[1], "-g") == 0;
	int nlibs = argc - 1 - gate;

	if (nlibs < 1 || nlibs > 2) {
		fprintf(stderr, "usage: lateload [-g] LIB [LIB2]\n");
		return 2;
	}
	if (gate)
		gate_wait();
	if (calls(argv[1 + gate], 0))
		return 1;
	if (nlibs == 2 && calls(argv[2 + gate], 3))
		return 1;
	return 0;
}
