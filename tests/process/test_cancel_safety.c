/* SPDX-License-Identifier: MIT */
/*
 * pthread_cancel() of a thread anywhere inside a treercu call never breaks
 * the library for the other threads: a thread cancelled while it drives a
 * grace period (and prints a stall warning), while it waits in
 * synchronize_rcu() or rcu_barrier(), and callbacks and work items that
 * cancel their own (library-owned) thread.  The cancelled call completes
 * and the cancellation acts at the thread's next cancellation point.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include <treercu/workqueue.h>

#include "check.h"

static atomic_bool hold, holding;
/* call_started: the thread is about to make its call (set by it);
 * call_returned: the call returned.  Both are cleared by start_caller()
 * before the thread exists, so a thread that has not run yet never shows
 * the previous case's values. */
static atomic_bool call_started, call_returned;

static void *holder(void *arg)
{
	(void)arg;
	rcu_read_lock();
	atomic_store(&holding, true);
	while (atomic_load(&hold))
		usleep(1000);
	rcu_read_unlock();
	return NULL;
}

static void start_holder(pthread_t *t)
{
	atomic_store(&holding, false);
	atomic_store(&hold, true);
	CHECK(pthread_create(t, NULL, holder, NULL) == 0);
	CHECK_WITHIN_MS(atomic_load(&holding), 10000);
}

static void *sync_caller(void *arg)
{
	(void)arg;
	atomic_store(&call_started, true);
	synchronize_rcu();
	atomic_store(&call_returned, true);
	pthread_testcancel();
	return NULL;
}

static atomic_int cb_runs;
static atomic_bool cb_block;

static void blocking_cb(struct rcu_head *rh)
{
	(void)rh;
	while (atomic_load(&cb_block))
		usleep(1000);
	atomic_fetch_add(&cb_runs, 1);
}

static void *barrier_caller(void *arg)
{
	static struct rcu_head h;

	(void)arg;
	atomic_store(&call_started, true);
	call_rcu(&h, blocking_cb);
	rcu_barrier();
	atomic_store(&call_returned, true);
	pthread_testcancel();
	return NULL;
}

static void start_caller(pthread_t *t, void *(*fn)(void *))
{
	atomic_store(&call_started, false);
	atomic_store(&call_returned, false);
	CHECK(pthread_create(t, NULL, fn, NULL) == 0);
}

/* Cancel t while it is inside its treercu call, release what it waits
 * for, and check the call completed before the cancellation acted. */
static void cancel_inside(pthread_t t, int wait_ms, void (*release)(void), const char *what)
{
	void *ret;

	CHECK_WITHIN_MS(atomic_load(&call_started), 10000);
	usleep(wait_ms * 1000);   /* let it get well inside the call */
	CHECK(!atomic_load(&call_returned));
	CHECK(pthread_cancel(t) == 0);
	usleep(wait_ms * 1000);
	release();
	CHECK(pthread_join(t, &ret) == 0);
	if (ret != PTHREAD_CANCELED || !atomic_load(&call_returned)) {
		fprintf(stderr, "%s: call %s, thread %s\n", what,
			atomic_load(&call_returned) ? "completed" : "did not complete",
			ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
		CHECK_FAIL_EXIT();
	}
}

static pthread_t holder_t;

static void release_holder(void)
{
	atomic_store(&hold, false);
	pthread_join(holder_t, NULL);
}

static void release_cb(void)
{
	atomic_store(&cb_block, false);
}

/* Other threads still complete grace periods and callbacks. */
static void check_library_works(const char *after)
{
	static struct rcu_head h;
	int before = atomic_load(&cb_runs);

	check_phase = after;
	alarm(20);
	synchronize_rcu();
	synchronize_rcu_expedited();
	call_rcu(&h, blocking_cb);
	rcu_barrier();
	CHECK_EQ(atomic_load(&cb_runs), before + 1);
	alarm(0);
}

/* Callbacks and work items that cancel their own thread, then reach a
 * cancellation point (usleep). */
static atomic_int self_cancel_runs;

static void self_cancel_cb(struct rcu_head *rh)
{
	(void)rh;
	pthread_cancel(pthread_self());
	usleep(1000);
	atomic_fetch_add(&self_cancel_runs, 1);
}

static void self_cancel_work(struct trcu_work *w)
{
	(void)w;
	pthread_cancel(pthread_self());
	usleep(1000);
	atomic_fetch_add(&self_cancel_runs, 1);
}

int main(void)
{
	pthread_t t;

	signal(SIGALRM, check_hang_handler);
	CHECK(trcu_set_tunable("stall_timeout_ms", 100) == 0);
	/* Make the stall warnings quiet but still printed (fputs to stderr
	 * is the cancellation point under test). */

	/* 1. Cancelled while it drives a GP and prints stall warnings. */
	check_phase = "synchronize_rcu() cancelled while stall-printing";
	alarm(30);
	start_holder(&holder_t);
	start_caller(&t, sync_caller);
	cancel_inside(t, 300, release_holder, check_phase);
	check_library_works("synchronize_rcu() after a caller was cancelled while stall-printing");
	printf("cancelled while stall-printing: call completed, then cancelled; GPs go on\n");

	/* 2. Cancelled while it waits in synchronize_rcu() (no stall). */
	CHECK(trcu_set_tunable("stall_timeout_ms", 60000) == 0);
	check_phase = "synchronize_rcu() cancelled while waiting";
	alarm(30);
	start_holder(&holder_t);
	start_caller(&t, sync_caller);
	cancel_inside(t, 50, release_holder, check_phase);
	check_library_works("synchronize_rcu() after a waiting caller was cancelled");
	printf("cancelled in synchronize_rcu(): call completed, then cancelled; GPs go on\n");

	/* 3. Cancelled while it waits in rcu_barrier(). */
	check_phase = "rcu_barrier() cancelled while waiting";
	alarm(30);
	atomic_store(&cb_block, true);
	start_caller(&t, barrier_caller);
	cancel_inside(t, 50, release_cb, check_phase);
	check_library_works("rcu_barrier() after a waiting caller was cancelled");
	printf("cancelled in rcu_barrier(): call completed, then cancelled; callbacks go on\n");

	/* 4. A callback that cancels its offload thread. */
	{
		static struct rcu_head h[4];

		check_phase = "rcu_barrier() after callbacks cancelled their offload thread";
		alarm(30);
		for (int i = 0; i < 4; i++)
			call_rcu(&h[i], self_cancel_cb);
		rcu_barrier();
		CHECK_EQ(atomic_load(&self_cancel_runs), 4);
		check_library_works(check_phase);
		alarm(0);
		printf("callbacks cancelling their offload thread: every callback ran\n");
	}

	/* 5. A work item that cancels its worker. */
	{
		struct trcu_workqueue *wq = trcu_alloc_workqueue("cancelwq", 0, 1);
		static struct trcu_work w[4];

		CHECK(wq);
		check_phase = "work items after one cancelled its worker";
		alarm(30);
		for (int i = 0; i < 4; i++) {
			trcu_init_work(&w[i], self_cancel_work);
			CHECK(trcu_queue_work(wq, &w[i]));
			trcu_flush_work(&w[i]);
		}
		CHECK_EQ(atomic_load(&self_cancel_runs), 8);
		CHECK(trcu_destroy_workqueue(wq) == 0);
		alarm(0);
		printf("work items cancelling their worker: every item ran\n");
	}
	return 0;
}
