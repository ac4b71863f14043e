/* SPDX-License-Identifier: MIT */
/*
 * The QSBR read side (trcu_qsbr_read_lock()/unlock(), and rcu_read_lock()
 * in a translation unit that defines TREERCU_QSBR): it stores nothing, yet
 * a grace period still waits for an online QSBR thread until its next
 * quiescent state; plain rcu_read_lock() keeps working on every thread of
 * the same domain, QSBR or not, and the two pairs nest in each other; a
 * grace period completes while QSBR readers only call
 * rcu_quiescent_state() between free sections.
 */
#define TREERCU_QSBR
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

static _Atomic int phase, sync_done, stop;

static unsigned long nest_flags(void)
{
	return __atomic_load_n(&trcu_reader_tls.nest_flags, __ATOMIC_RELAXED);
}

static unsigned long watching(void)
{
	return __atomic_load_n(&trcu_reader_tls.watching, __ATOMIC_RELAXED);
}

static void *syncer(void *arg)
{
	(void)arg;
	synchronize_rcu();
	atomic_store(&sync_done, 1);
	return NULL;
}

/* Holds a free section (no quiescent state) until phase 2. */
static void *qsbr_holder(void *arg)
{
	unsigned long nf, w;

	(void)arg;
	trcu_thread_qsbr();
	nf = nest_flags();
	w = watching();
	rcu_read_lock();              /* TREERCU_QSBR: the free one */
	CHECK_EQ(nest_flags(), nf);   /* stores nothing */
	CHECK_EQ(watching(), w);
	CHECK(rcu_read_lock_held());
	/* Plain sections nest in the free one and the free one in them. */
	trcu_read_lock();
	trcu_qsbr_read_lock();
	trcu_qsbr_read_unlock();
	trcu_read_unlock();
	CHECK_EQ(nest_flags(), nf);
	atomic_store(&phase, 1);
	while (atomic_load(&phase) == 1)
		usleep(100);
	rcu_read_unlock();
	CHECK_EQ(nest_flags(), nf);
	CHECK_EQ(watching(), w);
	/* Still online and so still holding the GP: only this releases it. */
	usleep(20 * 1000);
	CHECK(!atomic_load(&sync_done));
	rcu_quiescent_state();
	rcu_thread_offline();
	rcu_unregister_thread();
	return NULL;
}

/* A default thread in the same domain: its plain section holds GPs. */
static void *plain_holder(void *arg)
{
	(void)arg;
	rcu_register_thread();
	trcu_read_lock();
	atomic_store(&phase, 1);
	while (atomic_load(&phase) == 1)
		usleep(100);
	usleep(20 * 1000);
	CHECK(!atomic_load(&sync_done));
	trcu_read_unlock();
	rcu_unregister_thread();
	return NULL;
}

static void holds_gp(void *(*holder)(void *))
{
	pthread_t h, s;

	atomic_store(&phase, 0);
	atomic_store(&sync_done, 0);
	pthread_create(&h, NULL, holder, NULL);
	while (atomic_load(&phase) != 1)
		usleep(100);
	pthread_create(&s, NULL, syncer, NULL);
	usleep(50 * 1000);
	CHECK(!atomic_load(&sync_done));   /* the section holds the GP */
	atomic_store(&phase, 2);
	pthread_join(h, NULL);
	pthread_join(s, NULL);
	CHECK(atomic_load(&sync_done));
}

/* Busy QSBR reader: free sections, a quiescent state every 64. */
static void *busy_qsbr(void *arg)
{
	unsigned long n = 0;
	volatile int *shared = arg;

	trcu_thread_qsbr();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		CHECK(*shared == 1);
		rcu_read_unlock();
		if (++n % 64 == 0)
			rcu_quiescent_state();
	}
	rcu_thread_offline();
	rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	static volatile int shared = 1;
	pthread_t r[2];

	alarm(120);
	signal(SIGALRM, check_hang_handler);
	check_phase = "a free section holds a grace period";
	holds_gp(qsbr_holder);
	check_phase = "a plain section on a default thread holds a grace period";
	holds_gp(plain_holder);
	check_phase = "grace periods end behind busy QSBR readers";
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, busy_qsbr, (void *)&shared);
	for (int i = 0; i < 2000; i++)
		synchronize_rcu();
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	printf("test_qsbr_read: OK\n");
	return 0;
}
