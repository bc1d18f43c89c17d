/* SPDX-License-Identifier: MIT */
/*
 * The start gate of the small test programs: say "ready PID" on stderr,
 * then wait for SIGUSR1, so a tracer can attach before the first HIP call.
 * SIGUSR1 is blocked before the line goes out, so a signal sent as soon as
 * it is read cannot come between the check and the wait and be lost.
 */
#ifndef SIM_PROGS_GATE_H
#define SIM_PROGS_GATE_H

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t gate_open;

static void gate_on_usr1(int sig)
{
	(void)sig;
	gate_open = 1;
}

static void gate_wait(void)
{
	sigset_t usr1, old;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	signal(SIGUSR1, gate_on_usr1);
	fprintf(stderr, "ready %d\n", (int)getpid());
	sigdelset(&old, SIGUSR1);
	while (!gate_open)
		sigsuspend(&old);
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
}

#endif
