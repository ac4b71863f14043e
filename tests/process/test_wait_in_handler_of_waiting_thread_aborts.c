/* SPDX-License-Identifier: MIT */
/*
 * A signal handler that waits for a grace period (synchronize_rcu(),
 * rcu_barrier()) while its thread is inside the same kind of wait would
 * wait for what its own thread holds (gp_mutex while it drives, the
 * barrier mutex): it aborts instead, naming the call and the reason, as
 * the kernel refuses a sleeping call in interrupt context.  A handler
 * that interrupts the thread outside the library may wait, and exit()
 * from a handler inside a wait keeps its exit status.  A profiling-timer
 * signal every 100 us of CPU time reaches the main thread (the library's
 * threads block every signal) while it loops; not SIGALRM, whose timer is
 * the scenario's hard limit.  Each scenario runs in its own process
 * (tests/common/subproc.h), and a hang fails on its timeout.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/time.h>

#include <treercu/rcu.h>

#include "subproc.h"

static _Atomic long handled;
static void (*handler_body)(void);

static void on_tick(int sig)
{
	(void)sig;
	handler_body();
	atomic_fetch_add(&handled, 1);
}

static void start_timer(void (*body)(void))
{
	struct sigaction sa = { 0 };
	struct itimerval it = { { 0, 100 }, { 0, 100 } };

	handler_body = body;
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
}

static void stop_timer(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_PROF, &it, NULL);
}

static void h_sync(void)
{
	synchronize_rcu();
}

static void h_barrier(void)
{
	rcu_barrier();
}

static void h_exit(void)
{
	if (atomic_load(&handled) >= 50)
		exit(7);
}

static void cb(struct rcu_head *h)
{
	free(h);
}

static void s_sync_in_sync(void)
{
	rcu_register_thread();
	start_timer(h_sync);
	for (long i = 0; i < 20000000; i++)
		synchronize_rcu();
	exit(0);   /* not reached: a handler lands inside a wait first */
}

static void s_barrier_in_barrier(void)
{
	rcu_register_thread();
	start_timer(h_barrier);
	for (long i = 0; i < 20000000; i++) {
		struct rcu_head *h = malloc(sizeof(*h));

		if (h)
			call_rcu(h, cb);
		rcu_barrier();
	}
	exit(0);
}

/* Outside the library a handler may wait: 50 handler waits, then exit 0. */
static void s_handler_outside(void)
{
	volatile unsigned long spin = 0;

	rcu_register_thread();
	start_timer(h_sync);
	while (atomic_load(&handled) < 50)
		spin++;
	stop_timer();
	rcu_unregister_thread();
	exit(0);
}

/* exit() from a handler inside synchronize_rcu(): status 7, no hang. */
static void s_exit_in_sync(void)
{
	rcu_register_thread();
	start_timer(h_exit);
	for (;;)
		synchronize_rcu();
}

static const struct sp_scenario scenarios[] = {
	{ "sync_in_sync", s_sync_in_sync },
	{ "barrier_in_barrier", s_barrier_in_barrier },
	{ "handler_outside", s_handler_outside },
	{ "exit_in_sync", s_exit_in_sync },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	ok &= sp_expect_abort("sync_in_sync", NULL, 30,
			      "synchronize_rcu() called from a signal handler that interrupted");
	ok &= sp_expect_abort("barrier_in_barrier", NULL, 30,
			      "called from a signal handler that interrupted");
	ok &= sp_expect_exit("handler_outside", NULL, 30, 0, NULL, 0);
	ok &= sp_expect_exit("exit_in_sync", NULL, 30, 7, NULL, 0);
	return ok ? 0 : 1;
}
