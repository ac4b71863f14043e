/* SPDX-License-Identifier: MIT */
/*
 * Bad input gets a defined result and a message, never a crash:
 * NULL work / workqueue, uninitialised work, bad CPU, bad flags and
 * max_active, destroyed workqueue (queue refused with ESHUTDOWN, also while
 * another thread is queueing during the destroy), double destroy, flush /
 * drain / destroy from the workqueue's own item (-EDEADLK), a flush from an
 * ordered workqueue's item of an item queued behind it (false, EDEADLK),
 * bad topology
 * strings (API and environment), topology change while workqueues exist;
 * and the two aborts: a pointer that is not a workqueue, and
 * trcu_wq_shutdown() from a work item.
 */
#define CHECK_WANT_DEATH
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"

static void nop_fn(struct trcu_work *w)
{
}

static atomic_int self_rc[3], self_done;
static struct trcu_workqueue *self_wq;
static void self_fn(struct trcu_work *w)
{
	atomic_store(&self_rc[0], trcu_flush_workqueue(self_wq));
	atomic_store(&self_rc[1], trcu_drain_workqueue(self_wq));
	atomic_store(&self_rc[2], trcu_destroy_workqueue(self_wq));
	atomic_store(&self_done, 1);
}

/* An item of an ordered workqueue flushes an item it queued behind itself
 * on the same queue: that one cannot start before this one returns. */
static struct trcu_workqueue *ord_wq;
static struct trcu_work ord_b;
static atomic_int ord_flush_rc = -1, ord_errno, ord_b_ran;
static void ord_b_fn(struct trcu_work *w)
{
	(void)w;
	atomic_store(&ord_b_ran, 1);
}

static void ord_a_fn(struct trcu_work *w)
{
	(void)w;
	CHECK(trcu_queue_work(ord_wq, &ord_b));
	errno = 0;
	atomic_store(&ord_flush_rc, trcu_flush_work(&ord_b));
	atomic_store(&ord_errno, errno);
}

/* Wait (up to 10 s) for a counter another thread advances: a fixed sleep
 * is not enough on a loaded machine, where that thread may not run at all
 * during it. */
static bool wait_positive(atomic_long *v)
{
	for (int i = 0; i < 10000 && atomic_load(v) <= 0; i++)
		usleep(1000);
	return atomic_load(v) > 0;
}

static atomic_int qstop;
static atomic_long q_ok, q_refused;
static void *queuer(void *arg)
{
	struct trcu_workqueue *wq = arg;
	static struct trcu_work w[16];

	for (int i = 0; i < 16; i++)
		TRCU_INIT_WORK(&w[i], nop_fn);
	for (unsigned i = 0; !atomic_load(&qstop); i++) {
		errno = 0;
		if (trcu_queue_work(wq, &w[i % 16]))
			atomic_fetch_add(&q_ok, 1);
		else if (errno == ESHUTDOWN)
			atomic_fetch_add(&q_refused, 1);
	}
	return NULL;
}

static void not_a_wq(void)
{
	static long junk[16];
	TRCU_DECLARE_WORK(w, nop_fn);

	trcu_queue_work((struct trcu_workqueue *)junk, &w);
}

static void shutdown_fn(struct trcu_work *w)
{
	trcu_wq_shutdown();
}

static void shutdown_from_worker(void)
{
	TRCU_DECLARE_WORK(w, shutdown_fn);

	trcu_queue_work(trcu_system_wq(), &w);
	sleep(5);
}

static void bad_env(void)
{
	setenv("TREERCU_WQ_TOPOLOGY", "cpus=6,smt=4", 1);
	trcu_wq_nr_cpus();   /* first use: refused, real topology used */
}

int main(void)
{
	struct trcu_workqueue *wq;
	struct trcu_work w, blank;
	pthread_t th;

	/* aborts first (forked children) */
	expect_death(not_a_wq, "is not a treercu workqueue");
	expect_death(shutdown_from_worker, "trcu_wq_shutdown() called from a workqueue thread");
	expect_message(bad_env, "TREERCU_WQ_TOPOLOGY=\"cpus=6,smt=4\" refused");

	CHECK_EQ(trcu_wq_set_topology("cpus=0"), -EINVAL);
	CHECK_EQ(trcu_wq_set_topology("cpus=8,llc=3"), -EINVAL);
	CHECK_EQ(trcu_wq_set_topology("cores=8"), -EINVAL);
	CHECK_EQ(trcu_wq_set_topology("cpus=4,smt=2,llc=4,numa=1"), 0);
	CHECK_EQ(trcu_wq_affn_from_name("bogus"), -EINVAL);
	CHECK_EQ(trcu_wq_affn_from_name("cache_shard"), TRCU_WQ_AFFN_CACHE_SHARD);
	CHECK_EQ(trcu_wq_set_thread_cpu(99), -EINVAL);
	CHECK_EQ(trcu_wq_set_idle_timeout_ms(0), -EINVAL);
	CHECK_EQ(trcu_wq_set_stall_us(1), -EINVAL);

	errno = 0;
	CHECK(!trcu_alloc_workqueue("bad", 1u << 20, 0));
	CHECK_EQ(errno, EINVAL);
	CHECK(!trcu_alloc_workqueue("bad", 0, -1));
	CHECK(!trcu_alloc_workqueue("bad", 0, TRCU_WQ_MAX_ACTIVE + 1));
	CHECK(!trcu_alloc_workqueue(NULL, 0, 0));

	wq = trcu_alloc_workqueue("m", TRCU_WQ_UNBOUND, 0);
	CHECK(wq);
	CHECK_EQ(trcu_wq_set_topology("cpus=2"), -EBUSY);
	TRCU_INIT_WORK(&w, nop_fn);
	memset(&blank, 0, sizeof(blank));
	errno = 0;
	CHECK(!trcu_queue_work(wq, NULL));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!trcu_queue_work(wq, &blank));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!trcu_queue_work(NULL, &w));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!trcu_queue_work_on(4, wq, &w));
	CHECK_EQ(errno, EINVAL);
	CHECK(!trcu_queue_work_node(7, wq, &w));
	CHECK(!trcu_queue_delayed_work(wq, NULL, 10));
	CHECK(!trcu_flush_work(NULL));
	CHECK(!trcu_cancel_work(NULL));
	CHECK(!trcu_cancel_work_sync(NULL));
	CHECK(!trcu_cancel_delayed_work_sync(NULL));
	CHECK(!trcu_flush_delayed_work(NULL));
	CHECK_EQ(trcu_flush_workqueue(NULL), -EINVAL);
	CHECK_EQ(trcu_destroy_workqueue(NULL), -EINVAL);
	CHECK_EQ(trcu_destroy_workqueue(trcu_system_wq()), -EINVAL);

	/* flush / drain / destroy from the workqueue's own item */
	self_wq = wq;
	{
		TRCU_DECLARE_WORK(sw, self_fn);

		CHECK(trcu_queue_work(wq, &sw));
		/* false only if it was idle: the item finished before the call
		 * (a worker may run it before this thread gets the CPU back) */
		CHECK(trcu_flush_work(&sw) || atomic_load(&self_done));
		CHECK_EQ(atomic_load(&self_done), 1);
		CHECK_EQ(atomic_load(&self_rc[0]), -EDEADLK);
		CHECK_EQ(atomic_load(&self_rc[1]), -EDEADLK);
		CHECK_EQ(atomic_load(&self_rc[2]), -EDEADLK);
	}

	/* flush from an ordered workqueue's item of an item queued behind it */
	{
		TRCU_DECLARE_WORK(ord_a, ord_a_fn);

		ord_wq = trcu_alloc_ordered_workqueue("ordered", 0);
		CHECK(ord_wq);
		TRCU_INIT_WORK(&ord_b, ord_b_fn);
		CHECK(trcu_queue_work(ord_wq, &ord_a));
		/* Until empty: b is queued by a, after a flush would begin. */
		CHECK_EQ(trcu_drain_workqueue(ord_wq), 0);   /* a, then b */
		CHECK_EQ(atomic_load(&ord_flush_rc), 0);
		CHECK_EQ(atomic_load(&ord_errno), EDEADLK);
		CHECK_EQ(atomic_load(&ord_b_ran), 1);
		CHECK_EQ(trcu_destroy_workqueue(ord_wq), 0);
		printf("  ordered queue: an item's flush of an item queued behind it: false, "
		       "EDEADLK; both ran\n");
	}

	/* destroy while another thread queues on it */
	CHECK(!pthread_create(&th, NULL, queuer, wq));
	usleep(20000);
	CHECK(wait_positive(&q_ok));          /* the queuer got going */
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	usleep(10000);
	CHECK(wait_positive(&q_refused));     /* and has been refused since */
	atomic_store(&qstop, 1);
	pthread_join(th, NULL);
	printf("  destroy while queueing: %ld queued before, %ld refused after (ESHUTDOWN)\n",
	       atomic_load(&q_ok), atomic_load(&q_refused));
	errno = 0;
	CHECK(!trcu_queue_work(wq, &w));            /* the handle stays valid until shutdown */
	CHECK_EQ(errno, ESHUTDOWN);
	CHECK_EQ(trcu_destroy_workqueue(wq), -EINVAL);
	CHECK_EQ(trcu_flush_workqueue(wq), -EINVAL);
	trcu_wq_shutdown();
	printf("test_wq_misuse: PASS\n");
	return 0;
}
