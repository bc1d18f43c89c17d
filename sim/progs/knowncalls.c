// SPDX-License-Identifier: MIT
/*
 * Makes a fixed list of HIP calls with known argument values and prints each
 * call as the tracer's --raw line should show it (api and arguments), so a
 * test can compare. Works on Debian's real libamdhip64.so.5 without a GPU:
 * every call fails (hipErrorNoDevice or similar) but its arguments are what
 * they are. Gate: waits for SIGUSR1 when given -g, printing "ready PID".
 * With -s it first installs an allow-everything seccomp filter, so that
 * /proc/PID/status says "Seccomp: 2" like a process in a container.
 * With -t N, N threads in turn make one round each and exit; with -f, a
 * forked child makes three calls (logged on stderr: it is not the traced
 * process) and execs /bin/true, and the parent waits for it.
 *   knowncalls [-g] [-s] [-n ROUNDS] [-t THREADS] [-f]
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gate.h"
#include "simhip.h"

#define S(x) ((hipStream_t)(uintptr_t)(x))
#define E(x) ((hipEvent_t)(uintptr_t)(x))
#define P(x) ((void *)(uintptr_t)(x))

static long tid(void)
{
	return syscall(SYS_gettid);
}

static FILE *log_to; /* stdout, or stderr in a forked child */

static void line(const char *api, const char *args, int rc)
{
	fprintf(log_to, "{\"api\":\"%s\",\"tid\":%ld,\"rc\":%d%s%s}\n", api, tid(), rc,
		*args ? "," : "", args);
}

static void one_round(void);

static void *thread_round(void *arg)
{
	(void)arg;
	one_round();
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = 1, gate = 0, threads = 0, forking = 0, opt;

	while ((opt = getopt(argc, argv, "gsn:t:f")) != -1) {
		if (opt == 'g') {
			gate = 1;
		} else if (opt == 's') {
			struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
			struct sock_fprog prog = { .len = 1, .filter = &allow };

			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
			    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
				perror("knowncalls: seccomp");
				return 1;
			}
		}
		else if (opt == 'n')
			rounds = atoi(optarg);
		else if (opt == 't')
			threads = atoi(optarg);
		else if (opt == 'f')
			forking = 1;
		else {
			fprintf(stderr, "usage: knowncalls [-g] [-s] [-n ROUNDS] [-t THREADS] [-f]\n");
			return 2;
		}
	}
	if (gate)
		gate_wait();
	setvbuf(stdout, NULL, _IOLBF, 0);
	log_to = stdout;
	for (int r = 0; r < rounds; r++)
		one_round();
	for (int i = 0; i < threads; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, thread_round, NULL) || pthread_join(th, NULL)) {
			fprintf(stderr, "knowncalls: thread failed\n");
			return 1;
		}
	}
	if (forking) {
		pid_t child;
		int st;

		/*
		 * Let simhip's worker threads go idle (waiting, their locks
		 * released) before the fork: a lock a worker held at that moment
		 * would stay held forever in the child.
		 */
		line("hipDeviceSynchronize", "", hipDeviceSynchronize());
		usleep(20000);
		child = fork();

		if (child == 0) {
			/*
			 * Calls that fail on their handles at once: the probes fire in
			 * the child (it inherited the breakpoints) and simhip needs
			 * none of the worker threads that did not survive the fork.
			 */
			log_to = stderr;
			line("hipEventRecord", "\"stream\":\"0x5000\",\"event\":\"0x7000\"",
			     hipEventRecord(E(0x7000), S(0x5000)));
			line("hipEventQuery", "\"event\":\"0x7000\"", hipEventQuery(E(0x7000)));
			line("hipStreamWaitEvent", "\"stream\":\"0x6000\",\"event\":\"0x7000\",\"flags\":0",
			     hipStreamWaitEvent(S(0x6000), E(0x7000), 0));
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "knowncalls: child failed\n");
			return 1;
		}
	}
	return 0;
}

static void one_round(void)
{
	hipEvent_t ev = E(0);
	hipStream_t st = S(0);
	float ms = 0;
	dim3 g = { 2, 1, 1 }, b = { 64, 1, 1 };
	int rc;

	rc = hipMemcpyAsync(P(0x1000), P(0x2000), 4096, hipMemcpyHostToDevice, S(0x5000));
	line("hipMemcpyAsync", "\"stream\":\"0x5000\",\"dst\":\"0x1000\",\"src\":\"0x2000\",\"bytes\":4096,\"kind\":1", rc);
	rc = hipEventRecord(E(0x7000), S(0x5000));
	line("hipEventRecord", "\"stream\":\"0x5000\",\"event\":\"0x7000\"", rc);
	rc = hipStreamWaitEvent(S(0x6000), E(0x7000), 0);
	line("hipStreamWaitEvent", "\"stream\":\"0x6000\",\"event\":\"0x7000\",\"flags\":0", rc);
	rc = hipLaunchKernel(P(0xabc0), g, b, NULL, 0, S(0x6000));
	line("hipLaunchKernel", "\"stream\":\"0x6000\",\"fn\":\"0xabc0\"", rc);
	rc = hipExtLaunchKernel(P(0xabd0), g, b, NULL, 0, S(0x6000), E(0x7100), E(0x7200), 0);
	line("hipExtLaunchKernel", "\"stream\":\"0x6000\",\"event\":\"0x7100\",\"stop_event\":\"0x7200\",\"flags\":0,\"fn\":\"0xabd0\"", rc);
	rc = hipMemsetAsync(P(0x3000), 7, 512, S(0x5000));
	line("hipMemsetAsync", "\"stream\":\"0x5000\",\"dst\":\"0x3000\",\"bytes\":512", rc);
	rc = hipMemcpyHtoDAsync(P(0x1100), P(0x2100), 100, S(0x5000));
	line("hipMemcpyHtoDAsync", "\"stream\":\"0x5000\",\"dst\":\"0x1100\",\"src\":\"0x2100\",\"bytes\":100,\"kind\":1", rc);
	rc = hipEventQuery(E(0x7000));
	line("hipEventQuery", "\"event\":\"0x7000\"", rc);
	rc = hipEventSynchronize(E(0x7000));
	line("hipEventSynchronize", "\"event\":\"0x7000\"", rc);
	rc = hipEventElapsedTime(&ms, E(0x7100), E(0x7200));
	line("hipEventElapsedTime", "\"event\":\"0x7100\",\"stop_event\":\"0x7200\"", rc);
	rc = hipStreamSynchronize(S(0x6000));
	line("hipStreamSynchronize", "\"stream\":\"0x6000\"", rc);
	rc = hipStreamQuery(S(0x6000));
	line("hipStreamQuery", "\"stream\":\"0x6000\"", rc);
	rc = hipEventCreateWithFlags(&ev, 2);
	line("hipEventCreateWithFlags", "\"flags\":2", rc);
	rc = hipStreamCreateWithPriority(&st, 1, -1);
	line("hipStreamCreateWithPriority", "\"flags\":1,\"prio\":-1", rc);
	rc = hipDeviceSynchronize();
	line("hipDeviceSynchronize", "", rc);
	rc = hipEventDestroy(E(0x7000));
	line("hipEventDestroy", "\"event\":\"0x7000\"", rc);
}
