/* SPDX-License-Identifier: MIT */
/*
 * Threads that registered and have gone cost a grace period no more locks
 * than before they came: the tree grown for them keeps its leaves, but GP
 * init looks for blocked tasks on an empty leaf only when a slot was
 * removed since it last found none.  Counts pthread_mutex_lock() calls
 * (linker --wrap) over GPs driven by this thread alone, before and after
 * BURST threads registered and unregistered.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

#define BURST 1000   /* alive at once: the tree grows to 16 leaves of 64 */
#define GPS 50
#define SLACK 3   /* the grown tree's root: its init and the reports to it */

int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);

static _Atomic unsigned long locks;

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	atomic_fetch_add_explicit(&locks, 1, memory_order_relaxed);
	return __real_pthread_mutex_lock(m);
}

static pthread_barrier_t registered;

static void *visitor(void *arg)
{
	(void)arg;
	CHECK_EQ(rcu_register_thread(), 0);
	pthread_barrier_wait(&registered);   /* all of them registered at once */
	rcu_unregister_thread();
	return NULL;
}

static double locks_per_gp(void)
{
	unsigned long a = atomic_load(&locks);

	for (int i = 0; i < GPS; i++)
		synchronize_rcu();
	return (double)(atomic_load(&locks) - a) / GPS;
}

int main(void)
{
	static pthread_t t[BURST];
	struct trcu_stats st;
	double before, after;

	alarm(300);   /* a hang fails the test (SIGALRM) */
	CHECK_EQ(rcu_register_thread(), 0);
	synchronize_rcu();
	synchronize_rcu();
	before = locks_per_gp();
	CHECK(pthread_barrier_init(&registered, NULL, BURST) == 0);
	for (int i = 0; i < BURST; i++)
		CHECK(pthread_create(&t[i], NULL, visitor, NULL) == 0);
	for (int i = 0; i < BURST; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	pthread_barrier_destroy(&registered);
	synchronize_rcu();   /* the grown tree installed, the removals seen */
	synchronize_rcu();
	after = locks_per_gp();
	trcu_get_stats(&st);
	printf("locks per GP: %.1f before %d threads came and went, %.1f after "
	       "(tree of %d nodes, %d slots in use)\n", before, BURST, after, st.tree_nodes,
	       st.nr_slots);
	CHECK(st.tree_nodes > 2);   /* the tree did grow */
	CHECK(after <= before + SLACK);
	rcu_unregister_thread();
	printf("ok\n");
	return 0;
}
