/* SPDX-License-Identifier: MIT */
/*
 * A window inside trcu_shutdown() for the tests of callbacks that race it:
 * a thread's first call_rcu() passes the "offload threads stopping?" check,
 * then (rcu_test_hooks.first_cb, between that check and the push)
 * waits until the shutdown has joined the offload threads.  Link the test
 * with -Wl,--wrap=pthread_join.
 */
#ifndef TREERCU_TEST_SHUTDOWN_WINDOW_H
#define TREERCU_TEST_SHUTDOWN_WINDOW_H

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "internal.h"
#include "test_hooks.h"

int __real_pthread_join(pthread_t t, void **r);
int __wrap_pthread_join(pthread_t t, void **r);

static _Atomic int sw_in_window, sw_in_shutdown, sw_joined;
static long sw_hold_after_join_us;   /* keep the shutdown back, before its sweep */
static long sw_hook_extra_us;        /* keep the caller back after the join */

/* trcu_shutdown() joins the offload threads first (rcu_nocb_shutdown()). */
int __wrap_pthread_join(pthread_t t, void **r)
{
	int rc = __real_pthread_join(t, r);

	if (atomic_load(&sw_in_shutdown)) {
		atomic_store(&sw_joined, 1);
		if (sw_hold_after_join_us)
			usleep((useconds_t)sw_hold_after_join_us);
	}
	return rc;
}

static void sw_hook(void)
{
	atomic_store(&sw_in_window, 1);
	for (int i = 0; i < 20000 && !atomic_load(&sw_joined); i++)
		usleep(100);
	if (sw_hook_extra_us)
		usleep((useconds_t)sw_hook_extra_us);
}

static void sw_warm_cb(struct trcu_head *h)
{
	(void)h;
}

/* Start the offload threads, run fn on a new thread whose first
 * call_rcu() opens the window, shut down meanwhile, join fn's thread. */
static void shutdown_window_run(void *(*fn)(void *))
{
	static struct trcu_head warm;
	pthread_t t;

	call_rcu(&warm, sw_warm_cb);
	rcu_barrier();
	rcu_test_hooks.first_cb = sw_hook;
	CHECK_EQ(pthread_create(&t, NULL, fn, NULL), 0);
	while (!atomic_load(&sw_in_window))
		usleep(100);
	atomic_store(&sw_in_shutdown, 1);
	trcu_shutdown();
	CHECK(atomic_load(&sw_joined));
	__real_pthread_join(t, NULL);
}

#endif
