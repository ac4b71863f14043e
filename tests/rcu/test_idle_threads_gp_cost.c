/* SPDX-License-Identifier: MIT */
/*
 * A registered thread that sleeps outside the library costs a grace period
 * one look at its slot (two where the prescan runs: machines without TSO
 * and fenced builds), not one per walk: the early report stops at the first
 * leaf with a slot that is neither blocked nor driving, and TSO machines
 * take no prescan.  Counted through trcu_stats.gp_slot_checks over GPs
 * driven by this thread with IDLE threads asleep on a condition variable,
 * their slots registered before this thread's.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

#define IDLE 100
#define GPS 50
#define FANOUT_LEAF 16   /* the early report looks at one leaf of 16 */

#if defined(__x86_64__) && !defined(TREERCU_FENCED)
#define LOOKS_PER_THREAD 1   /* the FQS scan */
#else
#define LOOKS_PER_THREAD 2   /* the prescan and the FQS scan */
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready, stop;

static void *idle(void *arg)
{
	(void)arg;
	CHECK_EQ(rcu_register_thread(), 0);
	pthread_mutex_lock(&lock);
	ready++;
	pthread_cond_broadcast(&cond);
	while (!stop)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	pthread_t t[IDLE];
	struct trcu_stats a, b;
	unsigned long looks, bound;

	alarm(120);   /* a hang fails the test (SIGALRM) */
	CHECK_EQ(trcu_set_tunable("fanout_leaf", FANOUT_LEAF), 0);
	for (int i = 0; i < IDLE; i++)
		CHECK(pthread_create(&t[i], NULL, idle, NULL) == 0);
	pthread_mutex_lock(&lock);
	while (ready < IDLE)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	/* Registered after the idle threads: its slot comes after theirs. */
	CHECK_EQ(rcu_register_thread(), 0);
	synchronize_rcu();   /* settle: the tree for every slot installed */
	trcu_get_stats(&a);
	for (int i = 0; i < GPS; i++)
		synchronize_rcu();
	trcu_get_stats(&b);
	looks = b.gp_slot_checks - a.gp_slot_checks;
	bound = (unsigned long)GPS * ((unsigned long)LOOKS_PER_THREAD * (IDLE + 1) + FANOUT_LEAF);
	printf("%d idle threads, %lu GPs: %lu slot looks (%.1f per GP; at most %lu per GP), "
	       "%lu FQS scans\n", IDLE, b.gp_completed - a.gp_completed, looks,
	       (double)looks / GPS, bound / GPS, b.fqs_scans - a.fqs_scans);
	CHECK(b.gp_completed - a.gp_completed >= GPS);
	/* Every idle slot is looked at (the GP must see each one). */
	CHECK(looks >= (unsigned long)GPS * IDLE);
	CHECK(looks <= bound);
	pthread_mutex_lock(&lock);
	stop = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < IDLE; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	rcu_unregister_thread();
	printf("ok\n");
	return 0;
}
