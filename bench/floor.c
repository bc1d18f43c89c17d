// SPDX-License-Identifier: MIT
/*
 * The floor tracer of `make bench`: the probes nanlog-bpf would place, no
 * more, on the same symbols of the API table (include/nanlog_apis.h), entry
 * probes on every one and return probes where NL_AF_RET says, one
 * uprobe_multi link per library and direction, for one process; programs
 * that return at once (bench/floor.bpf.c).
 *
 *   floor -p PID LIB...
 *
 * LIB: libamdhip64.so* or librccl.so* paths. Prints "attached N entry M
 * return" on stdout once the probes are in place, then waits until PID is
 * gone or a SIGINT/SIGTERM comes; prints the detach time on the way out.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "call.h"
#include "elfsym.h"
#include "floor.skel.h"
#include "loader_umulti.h"
#include "procmaps.h"

#define MAX_LIBS 4

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Both links of one library; returns 0 or -errno and counts the probes. */
static int attach_lib(struct floor_bpf *skel, const char *path, pid_t pid, int fds[2],
		      unsigned *nentry, unsigned *nret)
{
	const char *names[2 * NL_API_COUNT];
	uint64_t offs[2 * NL_API_COUNT];
	uint64_t eo[NL_API_COUNT], ec[NL_API_COUNT], ro[NL_API_COUNT], rc[NL_API_COUNT];
	unsigned ne = 0, nr = 0;
	int lib = nl_lib_of_path(path), fd, err;

	fds[0] = fds[1] = -1;
	if (lib < 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (int api = 0; api < NL_API_COUNT; api++) {
		names[2 * api] = nl_api_info[api].lib == lib ? nl_api_info[api].name : NULL;
		names[2 * api + 1] = nl_api_info[api].lib == lib ? nl_api_info[api].alt : NULL;
	}
	err = nl_elf_resolve(fd, names, 2 * NL_API_COUNT, offs);
	close(fd);
	if (err < 0)
		return err;
	for (int api = 0; api < NL_API_COUNT; api++) {
		uint64_t off = offs[2 * api] ? offs[2 * api] : offs[2 * api + 1];

		if (nl_api_info[api].lib != lib || !off)
			continue;
		eo[ne] = off;
		ec[ne++] = (uint64_t)api;
		if (nl_api_info[api].flags & NL_AF_RET) {
			ro[nr] = off;
			rc[nr++] = (uint64_t)api;
		}
	}
	if (ne) {
		fds[0] = nl_uprobe_multi_link(bpf_program__fd(skel->progs.floor_entry), path, eo, ec,
					      ne, false, pid);
		if (fds[0] < 0)
			return fds[0];
	}
	if (nr) {
		fds[1] = nl_uprobe_multi_link(bpf_program__fd(skel->progs.floor_return), path, ro,
					      rc, nr, true, pid);
		if (fds[1] < 0)
			return fds[1];
	}
	*nentry += ne;
	*nret += nr;
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int fds[MAX_LIBS][2], nlibs = 0, err;
	unsigned nentry = 0, nret = 0;
	struct floor_bpf *skel;
	double t0;
	pid_t pid;

	if (argc < 4 || strcmp(argv[1], "-p") != 0 || argc - 3 > MAX_LIBS) {
		fprintf(stderr, "usage: floor -p PID LIB... (at most %d)\n", MAX_LIBS);
		return 2;
	}
	pid = (pid_t)atoi(argv[2]);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!nl_uprobe_multi_supported()) {
		fprintf(stderr, "floor: the kernel has no uprobe_multi links (Linux 6.6+)\n");
		return 1;
	}
	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "floor: cannot open the BPF object\n");
		return 1;
	}
	bpf_program__set_expected_attach_type(skel->progs.floor_entry, NL_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(skel->progs.floor_return, NL_BPF_TRACE_UPROBE_MULTI);
	err = floor_bpf__load(skel);
	if (err) {
		fprintf(stderr, "floor: cannot load the BPF programs: %s\n", strerror(-err));
		floor_bpf__destroy(skel);
		return 1;
	}
	for (int i = 3; i < argc; i++) {
		err = attach_lib(skel, argv[i], pid, fds[nlibs], &nentry, &nret);
		nlibs++;
		if (err) {
			fprintf(stderr, "floor: %s: %s\n", argv[i], strerror(-err));
			stop = 2;
			break;
		}
	}
	if (!stop) {
		printf("attached %u entry %u return\n", nentry, nret);
		fflush(stdout);
	}
	while (!stop && kill(pid, 0) == 0)
		usleep(20000);
	t0 = mono_ms();
	for (int i = 0; i < nlibs; i++)
		for (int j = 0; j < 2; j++)
			if (fds[i][j] >= 0)
				close(fds[i][j]);
	floor_bpf__destroy(skel);
	fprintf(stderr, "floor: detached in %.1f ms\n", mono_ms() - t0);
	return stop == 2;
}
