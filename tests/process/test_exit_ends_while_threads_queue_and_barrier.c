/* SPDX-License-Identifier: MIT */
/*
 * exit() while other threads keep the callback layer busy: one calls
 * synchronize_rcu() back to back, one floods call_rcu(), one alternates
 * call_rcu() and rcu_barrier(), one rcu_free()s.  Grace periods keep
 * ending and callbacks keep running, so the exit-time drain never sees the
 * machinery stuck, yet it must end: it owes the callbacks queued before
 * exit() (and what they queue, for a while), not everything other threads
 * queue afterwards, and another thread's back-to-back rcu_barrier() must
 * not keep it from its own barrier.  The process ends with the status
 * given to exit(), killed by no signal, and its exit line (if any) must not
 * blame a stuck reader: there is none.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "check.h"
#include "subproc.h"

#define NR_PROCS 5

static void free_head(struct trcu_head *h)
{
	free(h);
}

static void *syncer(void *arg)
{
	(void)arg;
	for (;;)
		trcu_synchronize_rcu();
	return NULL;
}

static void *flooder(void *arg)
{
	(void)arg;
	for (;;)
		for (int i = 0; i < 100; i++)
			trcu_call_rcu(malloc(sizeof(struct trcu_head)), free_head);
	return NULL;
}

static void *barrier_loop(void *arg)
{
	(void)arg;
	for (;;) {
		trcu_call_rcu(malloc(sizeof(struct trcu_head)), free_head);
		trcu_rcu_barrier();
	}
	return NULL;
}

static void *freer(void *arg)
{
	(void)arg;
	for (;;)
		trcu_rcu_free(malloc(64));
	return NULL;
}

static void exit_while_busy(void)
{
	void *(*fns[])(void *) = { syncer, flooder, barrier_loop, freer };
	pthread_t t;

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		CHECK(pthread_create(&t, NULL, fns[i], NULL) == 0);
	usleep(300000);
	exit(7);
}

static const struct sp_scenario scenarios[] = {
	{ "exit_while_busy", exit_while_busy },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const env[] = { "TREERCU_EXIT_WAIT_MS=200", NULL };
	static struct sp_result res;
	int bad = 0;

	sp_child(argc, argv, scenarios);
	printf("exit(7) while threads call synchronize_rcu(), call_rcu(), rcu_barrier() "
	       "and rcu_free() back to back (exit_wait_ms=200): %d runs\n", NR_PROCS);
	for (int i = 0; i < NR_PROCS; i++) {
		char how[96];
		bool ok;

		sp_run("exit_while_busy", env, 20, &res);
		ok = WIFEXITED(res.status) && WEXITSTATUS(res.status) == 7 &&
		     !strstr(res.err, "stuck") && !strstr(res.err, "fatal");
		sp_describe(&res, how, sizeof(how));
		printf("  process %d: %s in %ld ms%s\n", i, how, res.ms, ok ? "" : ": FAILED");
		if (!ok) {
			bad++;
			sp_print_err(&res);
		}
	}
	printf("  %d of %d runs did not end with exit status 7 and a true reason: %s\n", bad,
	       NR_PROCS, bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
