/* SPDX-License-Identifier: MIT */
/*
 * rcu_barrier() while trcu_shutdown() is stopping the offload threads must
 * still wait for every callback queued before it.  A call_rcu() that checked
 * "stopping" before it was set and pushed after the offload threads exited
 * leaves its callback to the shutdown's sweep, which first waits for a grace
 * period; rcu_barrier() must wait for that sweep, not return at once when
 * it sees "stopping".  The window (shutdown_window.h) holds the push until the
 * offload threads are joined, and the shutdown is then held back 200 ms
 * before it sweeps.
 */
#define _GNU_SOURCE
#include "shutdown_window.h"

static _Atomic int ran, ran_at_barrier = -1;

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_store(&ran, 1);
}

static void *late_caller(void *arg)
{
	static struct trcu_head h;

	(void)arg;
	call_rcu(&h, cb);          /* pushed before the sweep: the sweep's */
	rcu_barrier();
	atomic_store(&ran_at_barrier, atomic_load(&ran));
	return NULL;
}

int main(void)
{
	sw_hold_after_join_us = 200000;
	shutdown_window_run(late_caller);
	printf("test_shutdown_barrier_waits_for_sweep: rcu_barrier() returned with the callback %s\n",
	       atomic_load(&ran_at_barrier) == 1 ? "run" : "NOT RUN YET");
	CHECK_EQ(atomic_load(&ran_at_barrier), 1);
	CHECK_EQ(atomic_load(&ran), 1);
	return 0;
}
