/* SPDX-License-Identifier: MIT */
/*
 * Registration churn: threads register, read and unregister (or just exit)
 * while grace periods run; slots are reused so the slot count follows the
 * number of live threads; a reader that enters a section unregistered is
 * registered automatically; an exiting thread is unregistered automatically.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

static _Atomic int stop;

static void *churner(void *arg)
{
	long mode = (long)arg;

	/* mode 0: explicit register/unregister; 1: auto-register on lock and
	 * exit registered; 2: QSBR */
	if (mode == 0)
		rcu_register_thread();
	if (mode == 2)
		trcu_thread_qsbr();
	for (int i = 0; i < 50; i++) {
		rcu_read_lock();
		CHECK(rcu_read_lock_held());
		rcu_read_unlock();
		if (mode == 2)
			rcu_quiescent_state();
	}
	if (mode == 0)
		rcu_unregister_thread();
	return NULL;
}

static void *syncer(void *arg)
{
	while (!atomic_load(&stop))
		synchronize_rcu();
	return NULL;
}

static int slots(void)
{
	struct trcu_stats st;

	trcu_get_stats(&st);
	return st.nr_slots;
}

int main(void)
{
	pthread_t s, th[8];
	int base;

	rcu_register_thread();
	base = slots();
	CHECK(base >= 1);
	pthread_create(&s, NULL, syncer, NULL);
	for (int round = 0; round < 300; round++) {
		for (long i = 0; i < 8; i++)
			pthread_create(&th[i], NULL, churner, (void *)(i % 3));
		for (int i = 0; i < 8; i++)
			pthread_join(th[i], NULL);
		/* Every churner is gone: explicit, QSBR and auto-registered
		 * ones alike released their slots. */
		CHECK_EQ(slots(), base);
	}
	atomic_store(&stop, 1);
	pthread_join(s, NULL);

	/* Many threads at once grow the tree; their slots come back. */
	{
		enum { N = 200 };
		pthread_t many[N];

		for (long i = 0; i < N; i++)
			pthread_create(&many[i], NULL, churner, (void *)1);
		synchronize_rcu();
		for (int i = 0; i < N; i++)
			pthread_join(many[i], NULL);
		synchronize_rcu();
		CHECK_EQ(slots(), base);
	}
	/* Double registration is harmless; unregistering twice too. */
	CHECK_EQ(rcu_register_thread(), 0);
	rcu_unregister_thread();
	rcu_unregister_thread();
	CHECK_EQ(slots(), base - 1);
	printf("test_register: OK\n");
	return 0;
}
