/* SPDX-License-Identifier: MIT */
/*
 * A woken list waiter runs a cleanup pass only while one is requested.
 * Single-threaded and deterministic: the interleaving is forced through a
 * wrapped pthread_mutex_trylock() and a test hook (src/test_hooks.h).
 *
 *  1. GP1 ends with sr_wake_max=1: A0 is woken by the driver, A1 and A2
 *     are left behind wait head W1 (the done tail), one pass requested.
 *  2. A0's waiter sees the request; before it takes the cleanup lock,
 *     another woken waiter runs the pass and takes the request back
 *     (forced in the trylock wrapper): nothing is requested any more.
 *  3. Meanwhile the driver ends GP2 on its fast path, which may recycle W1
 *     because no pass is requested, and starts GP3, which pushes W1 again
 *     in front of C0 (forced in the pass hook, or after A0's waiter left).
 *  4. C0's GP has not ended: C0 must not be woken.  A pass run by A0's
 *     waiter without a request, holding W1 from before step 3, detached
 *     C0 from the recycled W1 and woke it.
 * Then GP3 ends and every waiter has been woken exactly once.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include <treercu/rcu.h>
#include "check.h"
#include "sync_hint.h"
#include "test_hooks.h"

static struct sr_node A[3], B0, C0;
static struct sr_node *w1;
static int armed, driver_ran;

int __real_pthread_mutex_trylock(pthread_mutex_t *m);
int __wrap_pthread_mutex_trylock(pthread_mutex_t *m);

static struct sync_list_peek peek(void)
{
	struct sync_list_peek p;

	sync_list_peek(&p);
	return p;
}

/* Step 3: the driver ends GP2 (fast path) and starts GP3. */
static void driver_gp2_gp3(void)
{
	if (driver_ran)
		return;
	driver_ran = 1;
	rcu_sr_normal_add_req(&B0);
	CHECK(rcu_sr_normal_gp_init());
	rcu_sr_normal_gp_cleanup();
	CHECK(rcu_sr_done(&B0));
	rcu_sr_normal_add_req(&C0);
	CHECK(rcu_sr_normal_gp_init());
	/* The scene needs W1 recycled and pushed in front of C0. */
	CHECK(peek().wait_tail == w1);
}

/* Step 2, at A0's waiter's trylock of the cleanup lock. */
int __wrap_pthread_mutex_trylock(pthread_mutex_t *m)
{
	if (armed) {
		armed = 0;
		rcu_sr_normal_cleanup_pass();        /* another waiter's pass ... */
		sync_list_test_set_pending(0);       /* ... and its request taken back */
		CHECK(rcu_sr_done(&A[1]) && rcu_sr_done(&A[2]));
		rcu_test_hooks.sr_pass_loaded = driver_gp2_gp3;
	}
	return __real_pthread_mutex_trylock(m);
}

int main(void)
{
	CHECK_EQ(trcu_set_tunable("sr_wake_max", 1), 0);
	sync_list_test_reset(0, 0);
	memset(A, 0, sizeof(A));
	/* 1 */
	for (int i = 0; i < 3; i++)
		rcu_sr_normal_add_req(&A[i]);
	CHECK(rcu_sr_normal_gp_init());
	w1 = peek().wait_tail;
	rcu_sr_normal_gp_cleanup();
	CHECK(rcu_sr_done(&A[0]) && !rcu_sr_done(&A[1]) && !rcu_sr_done(&A[2]));
	CHECK_EQ(peek().cleanups_pending, 1);
	/* 2, 3: A0's waiter leaves */
	armed = 1;
	CHECK(rcu_sr_wait_timeout(&A[0], 0));
	rcu_test_hooks.sr_pass_loaded = NULL;
	driver_gp2_gp3();   /* when no pass ran to reach the hook */
	/* 4 */
	CHECK(!rcu_sr_done(&C0));
	/* GP3 ends: C0 is woken by the driver, and every head comes back. */
	rcu_sr_normal_gp_cleanup();
	CHECK(rcu_sr_done(&C0));
	rcu_sr_normal_cleanup_pass();
	CHECK_EQ(peek().heads_in_use, 1);   /* the done tail's own */
	printf("sync_list_pass_only_when_requested: ok\n");
	return 0;
}
