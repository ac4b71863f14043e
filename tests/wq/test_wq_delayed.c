/* SPDX-License-Identifier: MIT */
/*
 * Delayed work and cancelling:
 *  - a delayed item runs no earlier than its delay, once;
 *  - queueing it while its timer is armed returns false;
 *  - mod_delayed_work shortens and lengthens the delay, says whether it
 *    was pending, and queues an idle item;
 *  - cancel_delayed_work disarms (true) and the item never runs;
 *  - cancel_(delayed_)work_sync waits for a running instance;
 *  - flush_delayed_work runs an armed item now and waits for it;
 *  - cancel_work_sync / flush_work from the item's own function do not
 *    deadlock (documented result);
 *  - a delay over a year (365 days) is refused with EINVAL, by queue and
 *    mod alike, leaving the item idle; exactly 365 days is accepted;
 *  - destroying a workqueue with an armed timer cancels it (message).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"

#define YEAR_US (365ull * 24 * 3600 * 1000000)

static atomic_int runs, in_fn;
static atomic_long ran_at;
static long t0;

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void dfn(struct trcu_work *w)
{
	atomic_store(&ran_at, now_us());
	atomic_fetch_add(&runs, 1);
}

static atomic_int release_slow;
static void slow_fn(struct trcu_work *w)
{
	atomic_store(&in_fn, 1);
	while (!atomic_load(&release_slow))
		usleep(1000);
	usleep(20000);
	atomic_fetch_add(&runs, 1);
	atomic_store(&in_fn, 0);
}

static atomic_int self_ret, self_done;
static void self_cancel_fn(struct trcu_work *w)
{
	struct trcu_delayed_work *dw = trcu_to_delayed_work(w);

	atomic_fetch_add(&runs, 1);
	/* re-arm, then cancel from our own function: removes the pending
	 * instance, does not wait for ourselves */
	CHECK(trcu_queue_delayed_work(trcu_system_wq(), dw, 100000));
	atomic_store(&self_ret, trcu_cancel_delayed_work_sync(dw));
	CHECK(!trcu_flush_work(w));   /* cannot wait for itself: false */
	atomic_store(&self_done, 1);
}

int main(void)
{
	struct trcu_workqueue *wq = trcu_alloc_workqueue("dq", TRCU_WQ_UNBOUND, 0);
	TRCU_DECLARE_DELAYED_WORK(dw, dfn);
	long dt;

	CHECK(wq);
	/* runs after its delay, once */
	t0 = now_us();
	CHECK(trcu_queue_delayed_work(wq, &dw, 30000));
	CHECK(trcu_delayed_work_pending(&dw));
	CHECK(!trcu_queue_delayed_work(wq, &dw, 1000));   /* armed: no-op */
	CHECK(!trcu_queue_work(wq, &dw.work));            /* pending: no-op */
	while (!atomic_load(&runs))
		usleep(1000);
	dt = atomic_load(&ran_at) - t0;
	CHECK(dt >= 30000);
	CHECK(dt < 2000000);
	CHECK(trcu_flush_delayed_work(&dw) || 1);
	CHECK_EQ(atomic_load(&runs), 1);
	printf("  delay 30 ms: ran after %ld us\n", dt);

	/* mod: idle -> queued (false); shorten (true); lengthen (true) */
	atomic_store(&runs, 0);
	t0 = now_us();
	CHECK(!trcu_mod_delayed_work(wq, &dw, 5000000));
	CHECK(trcu_mod_delayed_work(wq, &dw, 20000));     /* 5 s -> 20 ms */
	while (!atomic_load(&runs))
		usleep(1000);
	dt = atomic_load(&ran_at) - t0;
	CHECK(dt >= 20000 && dt < 2000000);
	atomic_store(&runs, 0);
	t0 = now_us();
	CHECK(trcu_queue_delayed_work(wq, &dw, 10000));
	CHECK(trcu_mod_delayed_work(wq, &dw, 80000));     /* 10 ms -> 80 ms */
	usleep(40000);
	CHECK_EQ(atomic_load(&runs), 0);
	while (!atomic_load(&runs))
		usleep(1000);
	CHECK(atomic_load(&ran_at) - t0 >= 80000);
	printf("  mod_delayed_work: shorten and lengthen ok\n");

	/* cancel an armed timer: it never runs */
	atomic_store(&runs, 0);
	CHECK(trcu_queue_delayed_work(wq, &dw, 20000));
	CHECK(trcu_cancel_delayed_work(&dw));
	CHECK(!trcu_delayed_work_pending(&dw));
	CHECK(!trcu_cancel_delayed_work(&dw));            /* nothing left */
	usleep(50000);
	CHECK_EQ(atomic_load(&runs), 0);
	/* delay 0 queues at once; flush_delayed_work on an armed one runs it now */
	CHECK(trcu_queue_delayed_work(wq, &dw, 0));
	trcu_flush_delayed_work(&dw);   /* false if it already ran */
	CHECK_EQ(atomic_load(&runs), 1);
	CHECK(trcu_queue_delayed_work(wq, &dw, 10000000));
	t0 = now_us();
	trcu_flush_delayed_work(&dw);   /* fires it now; false if it finished first */
	CHECK_EQ(atomic_load(&runs), 2);
	CHECK(now_us() - t0 < 5000000);
	printf("  cancel / flush_delayed_work ok\n");

	/* cancel_sync waits for a running instance */
	{
		TRCU_DECLARE_DELAYED_WORK(sw, slow_fn);

		atomic_store(&runs, 0);
		CHECK(trcu_queue_delayed_work(wq, &sw, 1000));
		while (!atomic_load(&in_fn))
			usleep(500);
		CHECK(trcu_queue_work(wq, &sw.work));        /* one more pending */
		atomic_store(&release_slow, 1);
		CHECK(trcu_cancel_delayed_work_sync(&sw));   /* removes the pending one */
		CHECK_EQ(atomic_load(&in_fn), 0);            /* and waited for the running one */
		CHECK(!trcu_delayed_work_pending(&sw));
		CHECK_EQ(atomic_load(&runs), 1);
		usleep(30000);
		CHECK_EQ(atomic_load(&runs), 1);
		printf("  cancel_delayed_work_sync waits for the running instance\n");
	}

	/* from the item's own function */
	{
		TRCU_DECLARE_DELAYED_WORK(cw, self_cancel_fn);

		atomic_store(&runs, 0);
		CHECK(trcu_queue_delayed_work(trcu_system_wq(), &cw, 0));
		/* false only if it finished before the call (idle) */
		CHECK(trcu_flush_work(&cw.work) || atomic_load(&self_done));
		CHECK_EQ(atomic_load(&self_done), 1);
		CHECK_EQ(atomic_load(&self_ret), 1);
		usleep(150000);
		CHECK_EQ(atomic_load(&runs), 1);            /* the re-armed one was cancelled */
		printf("  cancel_sync / flush_work from the own function: no deadlock\n");
	}

	/* over a year: refused, the item left idle; a year exactly: accepted */
	errno = 0;
	CHECK(!trcu_queue_delayed_work(wq, &dw, YEAR_US + 1));
	CHECK_EQ(errno, EINVAL);
	CHECK(!trcu_delayed_work_pending(&dw));
	errno = 0;
	CHECK(!trcu_mod_delayed_work(wq, &dw, UINT64_MAX));
	CHECK_EQ(errno, EINVAL);
	CHECK(!trcu_delayed_work_pending(&dw));
	CHECK(trcu_queue_delayed_work(wq, &dw, YEAR_US));
	CHECK(trcu_cancel_delayed_work(&dw));
	printf("  a delay over a year: refused with EINVAL\n");

	/* destroy with an armed timer: cancelled with a message */
	CHECK(trcu_queue_delayed_work(wq, &dw, 10000000));
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	CHECK(!trcu_delayed_work_pending(&dw));
	trcu_wq_shutdown();
	printf("test_wq_delayed: PASS\n");
	return 0;
}
