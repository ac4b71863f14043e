/* SPDX-License-Identifier: MIT */
/*
 * Workqueue guarantees under stress: producers, flushers and cancellers run
 * together against per-CPU and unbound workqueues, in both wake-up modes.
 *  - an item never runs concurrently with itself (per workqueue);
 *  - queueing a pending item returns false, and every true is one run
 *    (runs + successful cancels == successful queueings at the end);
 *  - trcu_flush_work() returns only after every instance queued before it
 *    finished;
 *  - trcu_cancel_work_sync() returns with the item neither pending nor
 *    running, also when the item re-queues itself meanwhile (as in the
 *    kernel, this holds "as long as there aren't racing enqueues": a
 *    producer's attempt that lands after the call released PENDING queues
 *    the item again, legitimately, so producers are held off the item
 *    around a sync cancel, see canceller());
 *  - items re-queue themselves from their own function.
 * Time-bounded (TEST_MS per round), so it stays short under TSan.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"

#define NITEMS 48
#define NPROD 4
#define TEST_MS 700

struct item {
	struct trcu_work work;
	struct trcu_workqueue *wq;
	pthread_mutex_t mu;       /* serialises the flusher and the canceller on it */
	atomic_int running;
	atomic_long runs, queued, cancelled;
	atomic_int frozen;        /* a cancel_sync is in progress: do not queue */
	atomic_int in_prod;       /* producers between their frozen check and the
				     end of their queueing attempt */
	atomic_int rearm;
};

static struct item items[NITEMS];
static atomic_int stop, overlap;

static void item_fn(struct trcu_work *w)
{
	struct item *it = (struct item *)w;

	if (atomic_fetch_add(&it->running, 1))
		atomic_fetch_add(&overlap, 1);
	for (volatile int i = 0; i < 200; i++)
		;
	atomic_fetch_sub(&it->running, 1);
	atomic_fetch_add(&it->runs, 1);
	/* Not held off by frozen: re-queueing from its own function while a
	 * cancel_sync runs is covered by the guarantee (the cancel waits for
	 * this function, and owns PENDING meanwhile). */
	if (atomic_load(&it->rearm) > 0) {
		atomic_fetch_sub(&it->rearm, 1);
		if (trcu_queue_work(it->wq, w))
			atomic_fetch_add(&it->queued, 1);
	}
}

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void *producer(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg * 7919u + 1;
	long ok = 0, dup = 0;

	trcu_wq_set_thread_cpu((int)((uintptr_t)arg % (uintptr_t)trcu_wq_nr_cpus()));
	while (!atomic_load(&stop)) {
		struct item *it = &items[rnd(&seed) % NITEMS];

		/*
		 * Dekker with canceller(): announce, then check frozen (both
		 * seq_cst).  Either the canceller sees us in in_prod and waits
		 * for our attempt to end, or we see frozen and stay away.
		 * Checking frozen alone would leave a window: read frozen == 0,
		 * be preempted through the whole cancel_sync, and queue the
		 * item right after the cancel released PENDING.
		 */
		atomic_fetch_add(&it->in_prod, 1);
		if (atomic_load(&it->frozen)) {
			atomic_fetch_sub(&it->in_prod, 1);
			continue;
		}
		if (rnd(&seed) % 16 == 0)
			atomic_store(&it->rearm, 3);
		if (trcu_queue_work_on((int)(rnd(&seed) % 3) - 1 < 0 ? -1 :
				       (int)(rnd(&seed) % (unsigned)trcu_wq_nr_cpus()), it->wq, &it->work)) {
			atomic_fetch_add(&it->queued, 1);
			ok++;
		} else {
			dup++;
		}
		atomic_fetch_sub(&it->in_prod, 1);
	}
	return (void *)(uintptr_t)(ok + dup);
}

static void *flusher(void *arg)
{
	unsigned int seed = 99;
	long n = 0;

	while (!atomic_load(&stop)) {
		struct item *it = &items[rnd(&seed) % NITEMS];
		long q, done;

		pthread_mutex_lock(&it->mu);
		q = atomic_load(&it->queued);
		trcu_flush_work(&it->work);
		done = atomic_load(&it->runs) + atomic_load(&it->cancelled);
		pthread_mutex_unlock(&it->mu);
		CHECK(done >= q);
		if (++n % 64 == 0)
			CHECK_EQ(trcu_flush_workqueue(it->wq), 0);
	}
	return NULL;
}

static void *canceller(void *arg)
{
	unsigned int seed = 1234;

	while (!atomic_load(&stop)) {
		struct item *it = &items[rnd(&seed) % NITEMS];
		bool sync = rnd(&seed) & 1;

		pthread_mutex_lock(&it->mu);
		if (sync) {
			long runs;

			/* No racing enqueue from producers (see producer()); the
			 * item's own re-queueing (item_fn) still races with the
			 * cancel, and the flusher is kept out by it->mu. */
			atomic_store(&it->frozen, 1);
			while (atomic_load(&it->in_prod))
				sched_yield();
			if (trcu_cancel_work_sync(&it->work))
				atomic_fetch_add(&it->cancelled, 1);
			/* the guarantee: neither pending nor running now */
			CHECK(!trcu_work_pending(&it->work));
			CHECK_EQ(atomic_load(&it->running), 0);
			/* ... and nothing left queued behind our back: it does
			 * not run again while nobody queues it */
			runs = atomic_load(&it->runs);
			usleep(20);
			CHECK(!trcu_work_pending(&it->work));
			CHECK_EQ(atomic_load(&it->runs), runs);
			atomic_store(&it->frozen, 0);
		} else if (trcu_cancel_work(&it->work)) {
			/* producers race with a plain cancel: no post-condition
			 * but the final accounting */
			atomic_fetch_add(&it->cancelled, 1);
		}
		pthread_mutex_unlock(&it->mu);
		usleep(30);
	}
	return NULL;
}

static void round_on(struct trcu_workqueue *a, struct trcu_workqueue *b, const char *what)
{
	pthread_t prod[NPROD], fl, ca;
	long total_q = 0, total_done = 0;
	struct timespec ts = { TEST_MS / 1000, (TEST_MS % 1000) * 1000000L };

	for (int i = 0; i < NITEMS; i++) {
		struct item *it = &items[i];

		TRCU_INIT_WORK(&it->work, item_fn);
		it->wq = i & 1 ? a : b;
		pthread_mutex_init(&it->mu, NULL);
		atomic_store(&it->running, 0);
		atomic_store(&it->runs, 0);
		atomic_store(&it->queued, 0);
		atomic_store(&it->cancelled, 0);
		atomic_store(&it->frozen, 0);
		atomic_store(&it->in_prod, 0);
		atomic_store(&it->rearm, 0);
	}
	atomic_store(&stop, 0);
	for (int i = 0; i < NPROD; i++)
		CHECK(!pthread_create(&prod[i], NULL, producer, (void *)(uintptr_t)i));
	CHECK(!pthread_create(&fl, NULL, flusher, NULL));
	CHECK(!pthread_create(&ca, NULL, canceller, NULL));
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < NPROD; i++)
		pthread_join(prod[i], NULL);
	pthread_join(fl, NULL);
	pthread_join(ca, NULL);
	for (int i = 0; i < NITEMS; i++)
		atomic_store(&items[i].rearm, 0);
	CHECK_EQ(trcu_drain_workqueue(a), 0);
	CHECK_EQ(trcu_drain_workqueue(b), 0);
	for (int i = 0; i < NITEMS; i++) {
		struct item *it = &items[i];

		CHECK(!trcu_work_pending(&it->work));
		CHECK_EQ(atomic_load(&it->runs) + atomic_load(&it->cancelled), atomic_load(&it->queued));
		total_q += atomic_load(&it->queued);
		total_done += atomic_load(&it->runs);
		pthread_mutex_destroy(&it->mu);
	}
	CHECK_EQ(atomic_load(&overlap), 0);
	printf("  %-34s queued %7ld  ran %7ld  ok\n", what, total_q, total_done);
}

int main(void)
{
	CHECK_EQ(trcu_wq_set_topology("cpus=8,smt=2,llc=8,numa=1,shard=2"), 0);
	for (int mode = 0; mode < 2; mode++) {
		struct trcu_workqueue *pc, *ub, *ub2, *ord;

		trcu_wq_set_wake_under_lock(mode);
		pc = trcu_alloc_workqueue("pc", 0, 0);
		ub = trcu_alloc_workqueue_scope("ub", TRCU_WQ_UNBOUND, 0, TRCU_WQ_AFFN_CACHE_SHARD);
		ub2 = trcu_alloc_workqueue_scope("ub2", TRCU_WQ_UNBOUND | TRCU_WQ_MEM_RECLAIM, 3,
						 TRCU_WQ_AFFN_CPU);
		ord = trcu_alloc_ordered_workqueue("ord", 0);
		CHECK(pc && ub && ub2 && ord);
		printf("wake %s lock:\n", mode ? "under" : "after");
		round_on(pc, ub, "per-CPU + unbound cache_shard");
		round_on(ub2, ord, "unbound cpu max_active 3 + ordered");
		CHECK_EQ(trcu_destroy_workqueue(pc), 0);
		CHECK_EQ(trcu_destroy_workqueue(ub), 0);
		CHECK_EQ(trcu_destroy_workqueue(ub2), 0);
		CHECK_EQ(trcu_destroy_workqueue(ord), 0);
	}
	trcu_wq_shutdown();
	printf("test_wq_stress: PASS\n");
	return 0;
}
