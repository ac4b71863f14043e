/* SPDX-License-Identifier: MIT */
/*
 * synchronize_rcu() woken from the grace period (seed 004), threaded:
 * - 24 waiters (more than the driver wakes itself with sr_wake_max=5, the
 *   kernel's limit) behind one reader:
 *   none returns before the reader leaves its section, all return after,
 *   some woken by the driver and the rest by the cleanup work;
 * - switching between the wakeme, list and futex paths while callers wait
 *   loses none of them.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

static _Atomic int held, release_reader, returned, stop;

static void *holder(void *arg)
{
	rcu_read_lock();
	atomic_store(&held, 1);
	while (!atomic_load(&release_reader))
		usleep(100);
	/* Nobody may have returned while we were inside. */
	CHECK_EQ(atomic_load(&returned), 0);
	rcu_read_unlock();
	return NULL;
}

static void *waiter(void *arg)
{
	synchronize_rcu();
	atomic_fetch_add(&returned, 1);
	return NULL;
}

static void *looper(void *arg)
{
	long n = 0;

	while (!atomic_load(&stop)) {
		synchronize_rcu();
		n++;
	}
	return (void *)n;
}

int main(void)
{
	struct trcu_stats st;
	pthread_t h, w[24], l[4];
	long calls = 0;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("sr_wake_max", 5), 0);
	/* Every caller on the list, the one that finds itself alone too. */
	CHECK_EQ(trcu_set_tunable("sr_drive_alone", 0), 0);
	pthread_create(&h, NULL, holder, NULL);
	while (!atomic_load(&held))
		usleep(100);
	for (int i = 0; i < 24; i++)
		pthread_create(&w[i], NULL, waiter, NULL);
	usleep(50000);
	CHECK_EQ(atomic_load(&returned), 0);
	atomic_store(&release_reader, 1);
	pthread_join(h, NULL);
	for (int i = 0; i < 24; i++)
		pthread_join(w[i], NULL);
	CHECK_EQ(atomic_load(&returned), 24);
	trcu_get_stats(&st);
	printf("  24 waiters: %ld woken by the GP driver, %ld by the cleanup work\n",
	       st.sr_woken_direct, st.sr_woken_deferred);
	CHECK_EQ(st.sr_woken_direct + st.sr_woken_deferred, 24);
	CHECK(st.sr_woken_deferred > 0);
	CHECK_EQ(trcu_set_tunable("sr_wake_max", 64), 0);

	/* Switch paths under load: no caller is lost. */
	for (int i = 0; i < 4; i++)
		pthread_create(&l[i], NULL, looper, NULL);
	for (int k = 0; k < 600; k++) {
		CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", k % 3), 0);
		usleep(1000);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++) {
		void *n;

		pthread_join(l[i], &n);
		calls += (long)n;
	}
	printf("  %ld synchronize_rcu() calls while switching paths\n", calls);
	CHECK(calls > 0);
	printf("test_sync_list_wakes_all: OK\n");
	return 0;
}
