/* SPDX-License-Identifier: MIT */
/*
 * rcu_free(): pointers are freed only after a grace period (a reader in its
 * section keeps them alive), in page-sized batches, partial batches are
 * drained by rcu_barrier() and by the drain timer, and pointers handed over
 * by a thread that exits are freed too.  ASan checks that every pointer is
 * freed exactly once; the counters check that all of them were.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

static _Atomic int held, release_reader;
static _Atomic long *shared;

static void *holder(void *arg)
{
	rcu_read_lock();
	_Atomic long *p = rcu_dereference(shared);
	atomic_store(&held, 1);
	while (!atomic_load(&release_reader))
		usleep(100);
	/* Still readable: rcu_free() must not have freed it (ASan). */
	CHECK_EQ(atomic_load(p), 42);
	rcu_read_unlock();
	return NULL;
}

static void *freer(void *arg)
{
	for (int i = 0; i < 3000; i++)
		rcu_free(malloc(32));
	return NULL;   /* exits with a partial block */
}

static long freed(void)
{
	struct trcu_stats st;

	trcu_get_stats(&st);
	return st.frees_done;
}

int main(void)
{
	struct trcu_stats st;
	pthread_t t, f[2];
	_Atomic long *p = malloc(sizeof(*p));

	atomic_store(p, 42);
	rcu_assign_pointer(shared, p);
	pthread_create(&t, NULL, holder, NULL);
	while (!atomic_load(&held))
		usleep(100);
	rcu_assign_pointer(shared, NULL);
	rcu_free((void *)p);
	rcu_free(NULL);   /* like free(NULL) */
	for (int i = 0; i < 2000; i++)   /* several full blocks */
		rcu_free(malloc(16));
	usleep(20000);
	atomic_store(&release_reader, 1);
	pthread_join(t, NULL);
	rcu_barrier();
	CHECK_EQ(freed(), 2001);

	/* Threads that exit with partial blocks. */
	for (int i = 0; i < 2; i++)
		pthread_create(&f[i], NULL, freer, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(f[i], NULL);
	rcu_barrier();
	CHECK_EQ(freed(), 8001);

	/* The drain timer empties a partial block without a barrier. */
	CHECK_EQ(trcu_set_tunable("rcu_free_drain_ms", 20), 0);
	rcu_free(malloc(8));
	for (int i = 0; i < 2000 && freed() != 8002; i++)
		usleep(1000);
	CHECK_EQ(freed(), 8002);
	trcu_get_stats(&st);
	CHECK_EQ(st.frees_queued, 8002);
	CHECK_EQ(st.frees_fallback, 0);
	printf("test_rcu_free: OK\n");
	return 0;
}
