/* SPDX-License-Identifier: MIT */
/*
 * QSBR threads: online without a quiescent state they hold grace periods;
 * rcu_quiescent_state() or going offline releases them; their read-side
 * lock/unlock never touch ->watching; synchronize_rcu() from an online QSBR
 * thread goes offline while it waits and comes back online.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

static _Atomic int phase, sync_done;

static void *qsbr_thread(void *arg)
{
	unsigned long w0;

	trcu_thread_qsbr();
	CHECK(rcu_read_lock_held());
	w0 = __atomic_load_n(&trcu_reader_tls.watching, __ATOMIC_RELAXED);
	CHECK(w0 & 1);
	rcu_read_lock();
	rcu_read_lock();
	rcu_read_unlock();
	rcu_read_unlock();
	CHECK_EQ(__atomic_load_n(&trcu_reader_tls.watching, __ATOMIC_RELAXED), w0);  /* lock/unlock cost nothing */
	atomic_store(&phase, 1);
	while (atomic_load(&phase) == 1)
		usleep(100);   /* online, no QS: holds the GP */
	rcu_quiescent_state();
	CHECK_EQ(__atomic_load_n(&trcu_reader_tls.watching, __ATOMIC_RELAXED), w0 + 2);
	while (atomic_load(&phase) != 3)
		usleep(100);
	/* synchronize_rcu from an online QSBR thread. */
	synchronize_rcu();
	CHECK(rcu_read_lock_held());
	rcu_thread_offline();
	CHECK(!rcu_read_lock_held());
	/* An offline QSBR thread may still use a read-side section. */
	rcu_read_lock();
	CHECK(rcu_read_lock_held());
	rcu_read_unlock();
	rcu_thread_online();
	rcu_unregister_thread();
	return NULL;
}

static void *syncer(void *arg)
{
	synchronize_rcu();
	atomic_store(&sync_done, 1);
	return NULL;
}

int main(void)
{
	struct timespec ts = { 0, 30 * 1000 * 1000 };
	pthread_t q, s;

	pthread_create(&q, NULL, qsbr_thread, NULL);
	while (atomic_load(&phase) != 1)
		usleep(100);
	pthread_create(&s, NULL, syncer, NULL);
	nanosleep(&ts, NULL);
	CHECK(!atomic_load(&sync_done));   /* held by the online QSBR thread */
	atomic_store(&phase, 2);
	pthread_join(s, NULL);
	CHECK(atomic_load(&sync_done));
	atomic_store(&phase, 3);
	pthread_join(q, NULL);
	printf("test_qsbr: OK\n");
	return 0;
}
