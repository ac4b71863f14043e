/* SPDX-License-Identifier: MIT */
/*
 * Grace periods end, and never before a pre-existing reader finishes:
 * - synchronize_rcu() on an idle process returns and counts a GP;
 * - a reader inside a section holds synchronize_rcu() until it unlocks;
 * - concurrent callers share grace periods (fewer GPs than calls);
 * - a freed-after-GP element is never seen by readers (poison check);
 * - synchronize_rcu_expedited() and the kthread-driven path work too.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

static _Atomic int reader_in, reader_go_out, sync_done;

static void *holding_reader(void *arg)
{
	rcu_register_thread();
	rcu_read_lock();
	atomic_store(&reader_in, 1);
	while (!atomic_load(&reader_go_out))
		usleep(100);
	/* The updater must still be waiting: we never unlocked. */
	CHECK(!atomic_load(&sync_done));
	rcu_read_unlock();
	rcu_unregister_thread();
	return NULL;
}

static void *sync_thread(void *arg)
{
	synchronize_rcu();
	atomic_store(&sync_done, 1);
	return NULL;
}

static void test_reader_blocks_gp(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pthread_t t, syncer;

	atomic_store(&reader_in, 0);
	atomic_store(&reader_go_out, 0);
	atomic_store(&sync_done, 0);
	pthread_create(&t, NULL, holding_reader, NULL);
	while (!atomic_load(&reader_in))
		usleep(100);
	pthread_create(&syncer, NULL, sync_thread, NULL);
	/* Long enough for a wrong grace period to have ended. */
	nanosleep(&ts, NULL);
	CHECK(!atomic_load(&sync_done));
	atomic_store(&reader_go_out, 1);
	pthread_join(syncer, NULL);
	CHECK(atomic_load(&sync_done));
	pthread_join(t, NULL);
}

/* ---- Poison check with concurrent readers and updaters ---- */
struct elem {
	_Atomic long magic;
	long seq;
};
#define MAGIC 0x5a5a5a5aL
#define POISON 0x6b6b6b6bL
static struct elem *gptr;
static _Atomic int stop;
static _Atomic long bad;

static void *reader(void *arg)
{
	long qsbr = (long)arg;

	rcu_register_thread();
	if (qsbr)
		trcu_thread_qsbr();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 100; i++) {
			rcu_read_lock();
			struct elem *e = rcu_dereference(gptr);
			if (e) {
				long m1 = atomic_load_explicit(&e->magic, memory_order_relaxed);
				for (volatile int k = 0; k < 20; k++)
					;
				long m2 = atomic_load_explicit(&e->magic, memory_order_relaxed);
				if (m1 != MAGIC || m2 != MAGIC)
					atomic_fetch_add(&bad, 1);
			}
			rcu_read_unlock();
			if (qsbr)
				rcu_quiescent_state();
		}
	}
	rcu_unregister_thread();
	return NULL;
}

static void *updater(void *arg)
{
	long n = (long)arg;

	for (long i = 0; i < n; i++) {
		struct elem *e = malloc(sizeof(*e));
		atomic_store_explicit(&e->magic, MAGIC, memory_order_relaxed);
		e->seq = i;
		struct elem *old = rcu_xchg_pointer(&gptr, e);
		if ((i & 3) == 3)
			synchronize_rcu_expedited();
		else
			synchronize_rcu();
		if (old) {
			atomic_store_explicit(&old->magic, POISON, memory_order_relaxed);
			free(old);
		}
	}
	return NULL;
}

static void test_poison(int nupd, long per)
{
	pthread_t r[3], u[4];

	atomic_store(&stop, 0);
	for (long i = 0; i < 3; i++)
		pthread_create(&r[i], NULL, reader, (void *)(long)(i == 2));
	for (int i = 0; i < nupd; i++)
		pthread_create(&u[i], NULL, updater, (void *)per);
	for (int i = 0; i < nupd; i++)
		pthread_join(u[i], NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(r[i], NULL);
	CHECK_EQ(atomic_load(&bad), 0);
	free(gptr);
	gptr = NULL;
}

static void *many_sync(void *arg)
{
	for (int i = 0; i < 50; i++)
		synchronize_rcu();
	return NULL;
}

int main(void)
{
	struct trcu_stats st0, st1;
	pthread_t t[8];

	/* A grace period that never ends fails here, naming the step, rather
	 * than at the harness's timeout. */
	signal(SIGALRM, check_hang_handler);
	alarm(240);
	rcu_register_thread();
	check_phase = "synchronize_rcu() on an idle process";
	trcu_get_stats(&st0);
	synchronize_rcu();
	trcu_get_stats(&st1);
	CHECK(st1.gp_completed >= st0.gp_completed + 1);

	check_phase = "a reader holds synchronize_rcu()";
	test_reader_blocks_gp();

	/* Concurrent callers share GPs. */
	check_phase = "8 threads x 50 synchronize_rcu()";
	trcu_get_stats(&st0);
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, many_sync, NULL);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	trcu_get_stats(&st1);
	{
		long mode = 2;

		/* The futex path never runs a GP nobody asked for; the waiter
		 * list may: when every wait head is still in use, waiters left
		 * uncovered ask for one more GP (as the kernel's list does). */
		CHECK_EQ(trcu_get_tunable("normal_wake_from_gp", &mode), 0);
		if (mode == 2)
			CHECK(st1.gp_completed - st0.gp_completed <= 8 * 50);
	}
	printf("8x50 synchronize_rcu: %lu GPs\n", st1.gp_completed - st0.gp_completed);

	check_phase = "poison check, callers driving";
	test_poison(2, 300);

	/* The same with the GP kthread driving. */
	check_phase = "poison check, the GP kthread driving";
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 0), 0);
	test_poison(2, 100);
	trcu_get_stats(&st1);
	CHECK(st1.gp_driven_by_kthread > 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 1), 0);

	/* The wakeme path (synchronize_rcu through a callback). */
	check_phase = "the wakeme path";
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 0), 0);
	test_reader_blocks_gp();
	test_poison(2, 100);
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 2), 0);

	rcu_unregister_thread();
	printf("test_gp: OK\n");
	return 0;
}
