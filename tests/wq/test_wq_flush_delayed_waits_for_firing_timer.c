/* SPDX-License-Identifier: MIT */
/*
 * trcu_flush_delayed_work() waits for an instance whose timer is firing
 * that very moment: the manager takes the item off the timer heap, then
 * queues it on its pool, and a flush that looked in between found the
 * timer disarmed and the item on no pool, and returned before the item ran
 * (the kernel's flush_delayed_work() closes that window with
 * del_timer_sync(), which waits for a running timer function).  Delays of
 * 0-150 us, each flushed about when it expires, many times over: after
 * every flush the item has run once more.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <treercu/workqueue.h>

#include "check.h"

static atomic_int runs;

static void fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&runs, 1);
}

static void spin_ns(long ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

int main(void)
{
	struct trcu_workqueue *wq = trcu_alloc_workqueue("flushdelayed", TRCU_WQ_UNBOUND, 0);
	struct trcu_delayed_work dw;
	long deadline = check_now_ms() + 2000;
	int i;

	CHECK(wq != NULL);
	trcu_init_delayed_work(&dw, fn);
	for (i = 0; i < 20000 && check_now_ms() < deadline; i++) {
		unsigned int delay_us = (unsigned int)(i * 37) % 150;

		CHECK(trcu_queue_delayed_work(wq, &dw, delay_us));
		spin_ns((long)delay_us * 1000 + (i % 7) * 5000 - 10000);
		trcu_flush_delayed_work(&dw);
		if (atomic_load(&runs) != i + 1) {
			fprintf(stderr, "flush %d returned before its item ran (%d runs, delay %u us)\n",
				i, atomic_load(&runs), delay_us);
			return 1;
		}
	}
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	printf("ok: %d flushes, each after its item ran\n", i);
	return 0;
}
