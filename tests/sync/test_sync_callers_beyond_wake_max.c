/* SPDX-License-Identifier: MIT */
/*
 * More synchronize_rcu() callers waiting on the list than the GP driver
 * wakes itself (sr_wake_max): the rest are woken by cleanup passes that the
 * woken waiters run, and every call returns.
 * - sr_wake_max=1 with 8 callers looping: nearly every GP leaves waiters
 *   for a pass, and passes overlap (a second waiter takes the pass lock
 *   just after the first one's pass);
 * - the default sr_wake_max with more callers than it (80): a server with
 *   that many threads calling synchronize_rcu() at once.
 * Afterwards the count of pending passes is not below zero and the newest
 * list entry is no waiter's.  A hang (a waiter left behind a done tail whose pass never
 * runs) fails through the alarm.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "sync_list.h"
#include "test_hooks.h"

#define MANY 80

static _Atomic int stop;
static _Atomic long calls;

static void *looper(void *arg)
{
	long n = 0;

	(void)arg;
	rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		synchronize_rcu();
		n++;
	}
	rcu_unregister_thread();
	atomic_fetch_add(&calls, n);
	return NULL;
}

/* Every caller returned: the pending-pass count is not below zero, and the
 * newest list entry is a wait head (or none), not a waiter's node. */
static void check_list_settled(void)
{
	struct sync_list_peek p;

	sync_list_peek(&p);
	CHECK(p.cleanups_pending >= 0);
	CHECK(p.next == NULL || p.next->is_wait_head);
}

static long run_loopers(int n, long ms)
{
	pthread_t t[MANY];

	atomic_store(&stop, 0);
	atomic_store(&calls, 0);
	for (int i = 0; i < n; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, looper, NULL), 0);
	usleep((useconds_t)ms * 1000);
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return atomic_load(&calls);
}

int main(void)
{
	struct trcu_stats st;
	long n, wake_max;

	signal(SIGALRM, check_hang_handler);
	CHECK_EQ(trcu_get_tunable("sr_wake_max", &wake_max), 0);
	CHECK(wake_max < MANY);
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);

	check_phase = "8 callers looping with sr_wake_max=1";
	alarm(60);
	CHECK_EQ(trcu_set_tunable("sr_wake_max", 1), 0);
	n = run_loopers(8, 500);
	alarm(0);
	trcu_get_stats(&st);
	printf("  sr_wake_max=1, 8 callers: %ld calls, %ld woken by a cleanup pass\n", n,
	       st.sr_woken_deferred);
	CHECK(n > 0);
	CHECK(st.sr_woken_deferred > 0);
	check_list_settled();

	check_phase = "80 callers with the default sr_wake_max";
	alarm(60);
	CHECK_EQ(trcu_set_tunable("sr_wake_max", wake_max), 0);
	n = run_loopers(MANY, 500);
	alarm(0);
	CHECK(n > 0);
	printf("  sr_wake_max=%ld (the default), %d callers: %ld calls\n", wake_max, MANY, n);
	check_list_settled();
	printf("test_sync_callers_beyond_wake_max: OK\n");
	return 0;
}
