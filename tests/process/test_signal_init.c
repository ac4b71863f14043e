/* SPDX-License-Identifier: MIT */
/*
 * A signal handler's rcu_read_lock() may interrupt the library's one-time
 * initialisation, and the registration or unregistration of its thread,
 * without deadlocking: it runs an emergency section (docs/design.md,
 * "Signal handlers"), which grace periods wait for.
 *
 * Many short-lived processes: each arms a per-thread timer that sends its
 * main thread SIGUSR1 every few microseconds, whose handler runs a section,
 * then makes its first treercu call (registration, or synchronize_rcu() on
 * an unregistered thread), unregisters and registers again, waits for a
 * grace period and exits.  A child that does not finish within its alarm()
 * is killed by SIGALRM: the parent reports it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

#define NPROC 60
#define CHILD_TIMEOUT_S 10
#define BATCH 10

static int value = 42;
static int *gp = &value;
static volatile sig_atomic_t handled;

static void handler(int sig)
{
	int saved = errno;

	(void)sig;
	rcu_read_lock();
	if (*rcu_dereference(gp) != 42)
		_exit(3);
	rcu_read_unlock();
	handled++;
	errno = saved;
}

static timer_t arm_timer(long interval_ns)
{
	struct sigevent sev;
	struct itimerspec its = { { 0, interval_ns }, { 0, interval_ns } };
	timer_t timer;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
#ifdef sigev_notify_thread_id   /* musl; glibc from 2.41 */
	sev.sigev_notify_thread_id = (int)syscall(SYS_gettid);
#else
	sev._sigev_un._tid = (int)syscall(SYS_gettid);
#endif
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) || timer_settime(timer, 0, &its, NULL))
		_exit(4);
	return timer;
}

static void child(int i)
{
	struct sigaction sa;
	timer_t timer;

	alarm(CHILD_TIMEOUT_S);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	timer = arm_timer(10000 + 10000L * (i % 8));
	if (i & 1)
		rcu_register_thread();      /* init from the registration */
	else
		synchronize_rcu();          /* init from an unregistered thread */
	rcu_unregister_thread();
	rcu_register_thread();
	rcu_unregister_thread();
	synchronize_rcu();
	timer_delete(timer);
	_exit(handled ? 0 : 5);
}

int main(void)
{
	int hung = 0, failed = 0, no_signal = 0;

	/* Batches run at once: a hung child costs its alarm() only once. */
	for (int b = 0; b < NPROC; b += BATCH) {
		pid_t pids[BATCH];

		for (int i = 0; i < BATCH; i++) {
			pids[i] = fork();
			CHECK(pids[i] >= 0);
			if (pids[i] == 0)
				child(b + i);
		}
		for (int i = 0; i < BATCH; i++) {
			int st;

			CHECK(waitpid(pids[i], &st, 0) == pids[i]);
			if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
				hung++;
			else if (WIFEXITED(st) && WEXITSTATUS(st) == 5)
				no_signal++;
			else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				failed++;
		}
	}
	printf("test_signal_init: %d processes, %d hung, %d failed otherwise, "
	       "%d took no signal\n", NPROC, hung, failed, no_signal);
	CHECK_EQ(hung, 0);
	CHECK_EQ(failed, 0);
	CHECK(no_signal < NPROC);
	return 0;
}
