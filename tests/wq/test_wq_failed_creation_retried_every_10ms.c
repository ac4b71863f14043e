/* SPDX-License-Identifier: MIT */
/*
 * A pool whose every worker is blocked, with work waiting and thread
 * creation failing (thread limit): the manager tries a new worker at most
 * once per 10 ms (CREATE_COOLDOWN_NS), whether the try comes from its
 * retry or from the stall watchdog, which fires every wq_stall_us (2 ms
 * here).  Once creation works again the waiting work runs.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"
#include "wq/wq_internal.h"   /* test hooks */

static atomic_int gate, ran;

static void blocker_fn(struct trcu_work *w)
{
	(void)w;
	while (!atomic_load(&gate))
		usleep(500);
	atomic_fetch_add(&ran, 1);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(void)
{
	static struct trcu_work blk[4];
	struct trcu_workqueue *wq;
	struct trcu_wq_stats st0, st;
	struct timespec t0;
	long ms;

	CHECK_EQ(trcu_wq_set_topology("cpus=2"), 0);
	CHECK_EQ(trcu_wq_set_stall_us(2000), 0);
	wq = trcu_alloc_workqueue_scope("blocked", TRCU_WQ_UNBOUND, 0, TRCU_WQ_AFFN_SYSTEM);
	CHECK(wq);
	wq_test_fail_thread_create(-1);
	for (int i = 0; i < 4; i++) {
		TRCU_INIT_WORK(&blk[i], blocker_fn);
		CHECK(trcu_queue_work(wq, &blk[i]));
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {   /* every worker busy, work waiting, creation failing */
		usleep(1000);
		trcu_wq_get_stats(&st0);
	} while ((st0.nr_idle || !st0.create_failures) && ms_since(&t0) < 5000);
	CHECK(st0.create_failures > 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	usleep(200000);
	trcu_wq_get_stats(&st);
	ms = ms_since(&t0);
	printf("%lu failed worker creations in %ld ms (%lu watchdog interventions)\n",
	       st.create_failures - st0.create_failures, ms, st.stalls - st0.stalls);
	CHECK(st.create_failures - st0.create_failures <= (unsigned long)(ms / 10 + 2));
	wq_test_fail_thread_create(0);
	atomic_store(&gate, 1);
	CHECK_EQ(trcu_flush_workqueue(wq), 0);
	CHECK_EQ(atomic_load(&ran), 4);
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	trcu_wq_shutdown();
	printf("test_wq_failed_creation_retried_every_10ms: PASS\n");
	return 0;
}
