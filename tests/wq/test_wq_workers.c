/* SPDX-License-Identifier: MIT */
/*
 * Worker management:
 *  - forward progress: with thread creation failing (test hook) and every
 *    worker of the pool blocked, a TRCU_WQ_MEM_RECLAIM workqueue's items
 *    still run, on its rescuer; workqueues with identical attributes share
 *    the pool;
 *  - the stall watchdog: an item that blocks until a later item of the same
 *    per-CPU pool ran (no concurrency-management hook in userspace) and the
 *    same on an unbound pool at its max-workers cap both complete;
 *  - idle workers are reaped after the idle timeout, down to the reserve.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"
#include "wq/wq_internal.h"   /* test hooks */

static atomic_int gate, blockers_ran, rescued_ran, b_ran;

static void blocker_fn(struct trcu_work *w)
{
	while (!atomic_load(&gate))
		usleep(500);
	atomic_fetch_add(&blockers_ran, 1);
}

static void reclaim_fn(struct trcu_work *w)
{
	atomic_fetch_add(&rescued_ran, 1);
}

static void b_fn(struct trcu_work *w)
{
	atomic_store(&b_ran, 1);
}

/* A waits (up to 10 s) for B, which is queued behind it on the same pool. */
static void a_fn(struct trcu_work *w)
{
	for (int i = 0; i < 10000 && !atomic_load(&b_ran); i++)
		usleep(1000);
	CHECK(atomic_load(&b_ran));
}

static void sleep_fn(struct trcu_work *w)
{
	usleep(20000);
}

static long ms_since(struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void rescuer(void)
{
	struct trcu_workqueue *r = trcu_alloc_workqueue_scope("reclaim", TRCU_WQ_UNBOUND |
							      TRCU_WQ_MEM_RECLAIM, 0,
							      TRCU_WQ_AFFN_SYSTEM);
	struct trcu_workqueue *p = trcu_alloc_workqueue_scope("plain", TRCU_WQ_UNBOUND, 0,
							      TRCU_WQ_AFFN_SYSTEM);
	static struct trcu_work blk[3], rw[5];
	struct trcu_wq_stats st;
	struct timespec t0;

	CHECK(r && p);
	CHECK_EQ(wq_pool_id(r, 0), wq_pool_id(p, 0));   /* shared pool */
	wq_test_fail_thread_create(-1);
	for (int i = 0; i < 3; i++) {
		TRCU_INIT_WORK(&blk[i], blocker_fn);
		CHECK(trcu_queue_work(p, &blk[i]));
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {   /* every worker busy, creation failing */
		usleep(1000);
		trcu_wq_get_stats(&st);
	} while ((st.nr_idle || !st.create_failures) && ms_since(&t0) < 5000);
	CHECK_EQ(st.nr_idle, 0);
	CHECK(st.create_failures > 0);
	for (int i = 0; i < 5; i++) {
		TRCU_INIT_WORK(&rw[i], reclaim_fn);
		CHECK(trcu_queue_work(r, &rw[i]));
	}
	while (atomic_load(&rescued_ran) < 5 && ms_since(&t0) < 10000)
		usleep(1000);
	CHECK_EQ(atomic_load(&rescued_ran), 5);
	CHECK_EQ(atomic_load(&blockers_ran), 0);    /* the pool's workers are still stuck */
	trcu_wq_get_stats(&st);
	CHECK(st.rescued >= 5);
	CHECK(st.maydays >= 1);
	CHECK_EQ(st.nr_rescuers, 1);
	printf("  rescuer: 5 items ran while creation failed (%lu failures, %lu maydays, "
	       "%lu rescued)\n", st.create_failures, st.maydays, st.rescued);
	wq_test_fail_thread_create(0);
	atomic_store(&gate, 1);
	CHECK_EQ(trcu_flush_workqueue(p), 0);
	CHECK_EQ(atomic_load(&blockers_ran), 3);
	CHECK_EQ(trcu_destroy_workqueue(p), 0);
	CHECK_EQ(trcu_destroy_workqueue(r), 0);
	/* alloc of a MEM_RECLAIM workqueue when its rescuer cannot start: EAGAIN */
	wq_test_fail_thread_create(1);
	CHECK(!trcu_alloc_workqueue("norescuer", TRCU_WQ_MEM_RECLAIM, 0));
	wq_test_fail_thread_create(0);
}

static void stall(struct trcu_workqueue *wq, const char *what)
{
	TRCU_DECLARE_WORK(a, a_fn);
	TRCU_DECLARE_WORK(b, b_fn);
	struct trcu_wq_stats st0, st;
	struct timespec t0;

	atomic_store(&b_ran, 0);
	trcu_wq_get_stats(&st0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(trcu_queue_work_on(0, wq, &a));
	usleep(2000);
	CHECK(trcu_queue_work_on(0, wq, &b));
	CHECK(trcu_flush_work(&a) || atomic_load(&b_ran));
	trcu_flush_work(&b);
	CHECK(atomic_load(&b_ran));
	trcu_wq_get_stats(&st);
	printf("  %s: blocked item released after %ld ms (%lu watchdog interventions)\n", what,
	       ms_since(&t0), st.stalls - st0.stalls);
}

static void reap(void)
{
	struct trcu_workqueue *wq = trcu_alloc_workqueue_scope("burst", TRCU_WQ_UNBOUND, 0,
							       TRCU_WQ_AFFN_SYSTEM);
	static struct trcu_work w[32];
	struct trcu_wq_stats st;
	struct timespec t0;
	unsigned long peak, reaped0;

	CHECK(wq);
	CHECK_EQ(trcu_wq_set_max_workers(8), 0);
	/* No reaping during the burst: the first workers to go idle would
	 * otherwise be reaped before the flush returns on a loaded machine,
	 * and the count read after it would not be the burst's. */
	CHECK_EQ(trcu_wq_set_idle_timeout_ms(3600000), 0);
	for (int i = 0; i < 32; i++) {
		TRCU_INIT_WORK(&w[i], sleep_fn);
		CHECK(trcu_queue_work(wq, &w[i]));
	}
	CHECK_EQ(trcu_flush_workqueue(wq), 0);
	trcu_wq_get_stats(&st);
	peak = st.nr_workers;
	reaped0 = st.workers_reaped;
	CHECK_EQ(trcu_wq_set_idle_timeout_ms(50), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(10000);
		trcu_wq_get_stats(&st);
	} while (st.nr_workers > 3 + st.nr_rescuers && ms_since(&t0) < 30000);
	printf("  reaper: %lu workers after the burst, %lu after %ld ms idle (%lu reaped)\n",
	       peak, st.nr_workers, ms_since(&t0), st.workers_reaped - reaped0);
	CHECK(peak >= 4);
	CHECK(st.workers_reaped > reaped0);
	CHECK(st.nr_workers < peak);
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	CHECK_EQ(trcu_wq_set_max_workers(0), 0);
}

int main(void)
{
	CHECK_EQ(trcu_wq_set_topology("cpus=2"), 0);
	CHECK_EQ(trcu_wq_set_stall_us(2000), 0);
	rescuer();
	{
		struct trcu_workqueue *pc = trcu_alloc_workqueue("pc", 0, 0);

		CHECK(pc);
		stall(pc, "per-CPU pool");
		CHECK_EQ(trcu_destroy_workqueue(pc), 0);
	}
	{
		struct trcu_workqueue *ub;

		CHECK_EQ(trcu_wq_set_max_workers(1), 0);
		ub = trcu_alloc_workqueue_scope("ub", TRCU_WQ_UNBOUND, 0, TRCU_WQ_AFFN_SYSTEM);
		CHECK(ub);
		stall(ub, "unbound pool at its cap");
		CHECK_EQ(trcu_destroy_workqueue(ub), 0);
		CHECK_EQ(trcu_wq_set_max_workers(0), 0);
	}
	reap();
	trcu_wq_shutdown();
	printf("test_wq_workers: PASS\n");
	return 0;
}
