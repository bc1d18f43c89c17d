// SPDX-License-Identifier: MIT
/*
 * The floor tracer of `make bench`: the probes nanlog-bpf would place, no
 * more, on the same symbols of the API table (include/nanlog_apis.h), entry
 * probes on every one and return probes where NL_AF_RET says, one
 * uprobe_multi link per library and direction, for one process. The
 * programs (bench/floor.bpf.c) return at once, or, with -m, do the least a
 * tracer must do: capture (time, thread, registers, kept per CPU) or ring
 * (the same, sent through a ring buffer that this process reads every 10 ms).
 *
 *   floor [-m floor|capture|ring] [-P] -p PID LIB...
 *
 * LIB: libamdhip64.so* or librccl.so* paths. The probes sit at the symbols,
 * or with -P where nanlog-bpf places them (user/proc/placement.h: past an endbr64
 * onto a push the kernel emulates). Prints "attached N entry M
 * return" on stdout once the probes are in place, then waits until PID is
 * gone or a SIGINT/SIGTERM comes; prints the detach time on the way out, and
 * with -m ring "records N" on stdout, the records it read.
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

#include "record/call.h"
#include "proc/elfsym.h"
#include "floor.skel.h"
#include "attach/umulti.h"
#include "proc/placement.h"
#include "proc/procmaps.h"

#define MAX_LIBS 4

static volatile sig_atomic_t stop;
static unsigned long long nread;

static int on_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	nread++;
	return 0;
}

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
static int attach_lib(const struct bpf_program *progs[2], const char *path, pid_t pid,
		      bool placed, int fds[2], unsigned *nentry, unsigned *nret)
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
	for (int api = 0; err >= 0 && api < NL_API_COUNT; api++) {
		uint64_t off = offs[2 * api] ? offs[2 * api] : offs[2 * api + 1];
		struct nl_placement pl;

		if (nl_api_info[api].lib != lib || !off)
			continue;
		if (placed) {
			err = nl_place_fd(fd, off, &pl);
			off += pl.delta;
		}
		eo[ne] = off;
		ec[ne++] = (uint64_t)api;
		if (nl_api_info[api].flags & NL_AF_RET) {
			ro[nr] = off;
			rc[nr++] = (uint64_t)api;
		}
	}
	close(fd);
	if (err < 0)
		return err;
	if (ne) {
		fds[0] = nl_uprobe_multi_link(bpf_program__fd(progs[0]), path, eo, ec, ne, false,
					      pid);
		if (fds[0] < 0)
			return fds[0];
	}
	if (nr) {
		fds[1] = nl_uprobe_multi_link(bpf_program__fd(progs[1]), path, ro, rc, nr, true,
					      pid);
		if (fds[1] < 0)
			return fds[1];
	}
	*nentry += ne;
	*nret += nr;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "floor", "capture", "ring" };
	struct sigaction sa = { .sa_handler = on_signal };
	int fds[MAX_LIBS][2], nlibs = 0, err, mode = 0, opt;
	const struct bpf_program *progs[2];
	struct ring_buffer *rb = NULL;
	unsigned nentry = 0, nret = 0;
	struct floor_bpf *skel;
	double t0;
	pid_t pid = 0;
	bool placed = false;

	while ((opt = getopt(argc, argv, "m:Pp:")) != -1) {
		if (opt == 'm') {
			for (mode = 0; mode < 3 && strcmp(optarg, modes[mode]) != 0; mode++)
				;
		} else if (opt == 'P') {
			placed = true;
		} else if (opt == 'p') {
			pid = (pid_t)atoi(optarg);
		} else {
			mode = 3;
		}
	}
	if (mode == 3 || pid <= 0 || optind == argc || argc - optind > MAX_LIBS) {
		fprintf(stderr, "usage: floor [-m floor|capture|ring] [-P] -p PID LIB... (at most %d)\n",
			MAX_LIBS);
		return 2;
	}
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
	{
		struct bpf_program *all[3][2] = {
			{ skel->progs.floor_entry, skel->progs.floor_return },
			{ skel->progs.capture_entry, skel->progs.capture_return },
			{ skel->progs.ring_entry, skel->progs.ring_return },
		};

		for (int m = 0; m < 3; m++)
			for (int j = 0; j < 2; j++) {
				bpf_program__set_expected_attach_type(all[m][j],
								      NL_BPF_TRACE_UPROBE_MULTI);
				bpf_program__set_autoload(all[m][j], m == mode);
			}
		progs[0] = all[mode][0];
		progs[1] = all[mode][1];
	}
	err = floor_bpf__load(skel);
	if (err) {
		fprintf(stderr, "floor: cannot load the BPF programs: %s\n", strerror(-err));
		floor_bpf__destroy(skel);
		return 1;
	}
	if (mode == 2) {
		rb = ring_buffer__new(bpf_map__fd(skel->maps.ring), on_record, NULL, NULL);
		if (!rb) {
			fprintf(stderr, "floor: cannot map the ring buffer: %s\n", strerror(errno));
			floor_bpf__destroy(skel);
			return 1;
		}
	}
	for (int i = optind; i < argc; i++) {
		err = attach_lib(progs, argv[i], pid, placed, fds[nlibs], &nentry, &nret);
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
	/* the ring, when there is one, is read every 10 ms: nothing wakes this process */
	while (!stop && kill(pid, 0) == 0) {
		usleep(rb ? 10000 : 20000);
		if (rb)
			ring_buffer__consume(rb);
	}
	t0 = mono_ms();
	for (int i = 0; i < nlibs; i++)
		for (int j = 0; j < 2; j++)
			if (fds[i][j] >= 0)
				close(fds[i][j]);
	if (rb) {
		ring_buffer__consume(rb);
		printf("records %llu\n", nread);
		ring_buffer__free(rb);
	}
	floor_bpf__destroy(skel);
	fprintf(stderr, "floor: detached in %.1f ms\n", mono_ms() - t0);
	return stop == 2;
}
