/* SPDX-License-Identifier: MIT */
/*
 * An idle synchronize_rcu() (one caller, one registered thread asleep, no
 * reader) reads no clock, runs one membarrier and takes at most three
 * mutexes (GP init's ofl_lock and the node's lock, the FQS scan's leaf
 * lock; gp_mutex is a trylock; four where the prescan runs: machines
 * without TSO and fenced builds): the clock is read only by a wait that has
 * to wait, and the early report costs the sleeping thread's slot one look
 * without a lock.  Counted on the calling thread through linker --wrap
 * over GPS calls, each of which drives its own GP.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

#define GPS 200
#if defined(__x86_64__) && !defined(TREERCU_FENCED)
#define LOCKS_PER_GP 3
#else
#define LOCKS_PER_GP 4   /* and the prescan's leaf lock (no TSO) */
#endif

int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);
int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);

static __thread unsigned long clocks, locks;

int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	clocks++;
	return __real_clock_gettime(id, ts);
}

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	locks++;
	return __real_pthread_mutex_lock(m);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready, stop;

static void *idle(void *arg)
{
	(void)arg;
	CHECK_EQ(rcu_register_thread(), 0);
	pthread_mutex_lock(&lock);
	ready = 1;
	pthread_cond_broadcast(&cond);
	while (!stop)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	struct trcu_stats a, b;
	unsigned long c0, l0, gps, mbs;
	pthread_t t;

	alarm(120);   /* a hang fails the test (SIGALRM) */
	CHECK(pthread_create(&t, NULL, idle, NULL) == 0);
	pthread_mutex_lock(&lock);
	while (!ready)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	CHECK_EQ(rcu_register_thread(), 0);
	synchronize_rcu();   /* settle: the tree installed */
	synchronize_rcu();
	trcu_get_stats(&a);
	c0 = clocks;
	l0 = locks;
	for (int i = 0; i < GPS; i++)
		synchronize_rcu();
	trcu_get_stats(&b);
	gps = b.gp_driven_by_caller - a.gp_driven_by_caller;
	mbs = b.membarriers - a.membarriers;
	printf("%d calls: %lu GPs driven by the caller, %lu clock reads, %lu mutex locks, "
	       "%lu membarriers on the calling thread (%.2f, %.2f, %.2f per GP)\n", GPS, gps,
	       clocks - c0, locks - l0, mbs, (double)(clocks - c0) / GPS,
	       (double)(locks - l0) / GPS, (double)mbs / GPS);
	CHECK(gps == GPS);   /* each call drove its GP: every count is this thread's */
	CHECK_EQ(clocks - c0, 0);
	CHECK(locks - l0 <= (unsigned long)GPS * LOCKS_PER_GP);
	CHECK(mbs <= GPS);
	pthread_mutex_lock(&lock);
	stop = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	CHECK(pthread_join(t, NULL) == 0);
	rcu_unregister_thread();
	printf("ok\n");
	return 0;
}
