/* SPDX-License-Identifier: MIT */
/*
 * trcu_flush_delayed_work() waits for an instance whose timer is firing
 * that very moment: the manager takes the item off the timer heap, then
 * queues it on its pool, and a flush that looked in between found the
 * timer disarmed and the item on no pool, and returned before the item ran
 * (the kernel's flush_delayed_work() closes that window with
 * del_timer_sync(), which waits for a running timer function).
 *
 * The window is held open: __queue_work() is wrapped, and on any thread
 * but this one (the manager firing the timer) it sleeps 20 ms before
 * queueing.  The flush lands inside it every time; when it returns the
 * item has run.  Then the same without the hold, many times over, at
 * whatever moment the timer fires.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"

bool __real___queue_work(int cpu, struct trcu_workqueue *wq, struct trcu_work *work);
bool __wrap___queue_work(int cpu, struct trcu_workqueue *wq, struct trcu_work *work);

static atomic_bool hold;
static atomic_int held;
static pthread_t test_thread;
static atomic_int runs;

bool __wrap___queue_work(int cpu, struct trcu_workqueue *wq, struct trcu_work *work)
{
	if (atomic_load(&hold) && !pthread_equal(pthread_self(), test_thread)) {
		atomic_fetch_add(&held, 1);
		usleep(20000);
	}
	return __real___queue_work(cpu, wq, work);
}

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
	long deadline;
	int i, n = 0;

	CHECK(wq != NULL);
	test_thread = pthread_self();
	trcu_init_delayed_work(&dw, fn);

	/* The window held open: the flush comes 5 ms into the 20-ms hold. */
	atomic_store(&hold, true);
	for (i = 0; i < 5; i++) {
		int before = atomic_load(&held);

		CHECK(trcu_queue_delayed_work(wq, &dw, 1000));
		CHECK_WITHIN_MS(atomic_load(&held) > before, 5000);
		usleep(5000);
		trcu_flush_delayed_work(&dw);   /* false when the item finished first */
		if (atomic_load(&runs) != i + 1) {
			fprintf(stderr, "flush %d returned while its timer was firing, before the "
				"item ran (%d runs)\n", i, atomic_load(&runs));
			return 1;
		}
	}
	atomic_store(&hold, false);

	/* Unheld, flushed about when each timer expires. */
	deadline = check_now_ms() + 1000;
	for (; n < 10000 && check_now_ms() < deadline; n++, i++) {
		unsigned int delay_us = (unsigned int)(n * 37) % 150;

		CHECK(trcu_queue_delayed_work(wq, &dw, delay_us));
		spin_ns((long)delay_us * 1000 + (n % 7) * 5000 - 10000);
		trcu_flush_delayed_work(&dw);
		if (atomic_load(&runs) != i + 1) {
			fprintf(stderr, "flush %d returned before its item ran (%d runs, delay %u us)\n",
				i, atomic_load(&runs), delay_us);
			return 1;
		}
	}
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	printf("ok: 5 flushes inside a firing held open, %d more unheld, each after its item ran\n",
	       n);
	return 0;
}
