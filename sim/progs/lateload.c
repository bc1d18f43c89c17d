// SPDX-License-Identifier: MIT
/*
 * lateload [-g] LIB: start without any HIP library, wait for SIGUSR1 (-g),
 * then dlopen LIB and make a few known calls through dlsym, like a Python job
 * that imports torch late. Prints one JSON line per call (api, event, rc).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

typedef int (*query_fn)(void *event);
typedef int (*record_fn)(void *event, void *stream);

int main(int argc, char **argv)
{
	const char *lib = argv[argc - 1];
	void *h;
	query_fn query;
	record_fn record;

	if (argc < 2 || (argc == 3 && strcmp(argv[1], "-g") != 0) || argc > 3) {
		fprintf(stderr, "usage: lateload [-g] LIB\n");
		return 2;
	}
	if (argc == 3) {
		sigset_t none;

		signal(SIGUSR1, on_usr1);
		fprintf(stderr, "ready %d\n", (int)getpid());
		sigemptyset(&none);
		while (!go)
			sigsuspend(&none);
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
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
	for (int i = 0; i < 3; i++) {
		int rc = record((void *)(uintptr_t)(0x9000 + i), (void *)(uintptr_t)0x9100);

		printf("{\"api\":\"hipEventRecord\",\"event\":\"0x%x\",\"rc\":%d}\n", 0x9000 + i, rc);
		rc = query((void *)(uintptr_t)(0x9000 + i));
		printf("{\"api\":\"hipEventQuery\",\"event\":\"0x%x\",\"rc\":%d}\n", 0x9000 + i, rc);
	}
	fflush(stdout);
	return 0;
}
