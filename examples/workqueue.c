/* SPDX-License-Identifier: MIT */
/*
 * The workqueue: deferred work on a pool of worker threads, as in the
 * kernel.  Two patterns:
 *
 * - A batch reclaimer.  Updaters unlink objects and put them on a
 *   "to free" list; one work item takes the whole list, waits for a grace
 *   period (synchronize_rcu() blocks the worker, not the updater) and frees
 *   it.  Queueing an item that is already pending does nothing, so a burst
 *   of retirements costs one grace period per batch.
 * - A delayed work item (a periodic "stats" job) that re-queues itself,
 *   then is stopped with trcu_cancel_delayed_work_sync().
 *
 * Checks: every retired object is freed, after readers are done with it;
 * the periodic job ran and is neither pending nor running after the cancel;
 * the workqueue is destroyed cleanly.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>
#include <treercu/workqueue.h>

#define OBJECTS 5000

struct obj {
	unsigned long id, check;        /* check == ~id while alive */
	struct obj *next_free;
};

static struct obj *shared;                      /* what readers see */
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj *to_free;                     /* retired, not yet freed */
static atomic_long freed, batches, ticks;
static atomic_bool stop;
static struct trcu_workqueue *wq;

static void reclaim_fn(struct trcu_work *work)
{
	struct obj *list;

	(void)work;
	pthread_mutex_lock(&free_lock);
	list = to_free;                 /* take the whole batch */
	to_free = NULL;
	pthread_mutex_unlock(&free_lock);
	synchronize_rcu();              /* readers are done with every one */
	while (list) {
		struct obj *o = list;

		list = o->next_free;
		memset(o, 0xff, sizeof(*o));
		free(o);
		atomic_fetch_add(&freed, 1);
	}
	atomic_fetch_add(&batches, 1);
}

static TRCU_DECLARE_WORK(reclaim_work, reclaim_fn);

static void retire(struct obj *o)
{
	pthread_mutex_lock(&free_lock);
	o->next_free = to_free;
	to_free = o;
	pthread_mutex_unlock(&free_lock);
	trcu_queue_work(wq, &reclaim_work);   /* false if already pending: fine */
}

static void tick_fn(struct trcu_work *work)
{
	atomic_fetch_add(&ticks, 1);
	/* Periodic: run again in 1 ms. */
	trcu_queue_delayed_work(wq, trcu_to_delayed_work(work), 1000);
}

static TRCU_DECLARE_DELAYED_WORK(tick_work, tick_fn);

static struct obj *obj_new(unsigned long id)
{
	struct obj *o = malloc(sizeof(*o));

	if (!o) {
		fprintf(stderr, "workqueue: out of memory\n");
		exit(1);
	}
	o->id = id;
	o->check = ~id;
	return o;
}

static void *reader(void *arg)
{
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		struct obj *o = rcu_dereference(shared);

		if (o->check != ~o->id) {
			fprintf(stderr, "workqueue: a reader saw a freed object\n");
			exit(1);
		}
		rcu_read_unlock();
	}
	return arg;
}

int main(void)
{
	pthread_t rd;
	int rc;

	wq = trcu_alloc_workqueue("example", TRCU_WQ_UNBOUND, 0);
	if (!wq) {
		perror("trcu_alloc_workqueue");
		return 1;
	}
	shared = obj_new(0);
	pthread_create(&rd, NULL, reader, NULL);
	trcu_queue_delayed_work(wq, &tick_work, 0);

	for (unsigned long id = 1; id <= OBJECTS; id++)
		retire(rcu_xchg_pointer(&shared, obj_new(id)));

	atomic_store_explicit(&stop, true, memory_order_relaxed);
	pthread_join(rd, NULL);
	/* Each retire() queued the item after its push, so the instance
	 * queued last takes the last object: wait for it. */
	trcu_flush_work(&reclaim_work);

	trcu_cancel_delayed_work_sync(&tick_work);
	if (trcu_delayed_work_pending(&tick_work) || atomic_load(&ticks) == 0) {
		fprintf(stderr, "workqueue: periodic job ran %ld times, pending %d\n",
			atomic_load(&ticks), trcu_delayed_work_pending(&tick_work));
		return 1;
	}
	rc = trcu_destroy_workqueue(wq);
	if (rc != 0 || atomic_load(&freed) != OBJECTS) {
		fprintf(stderr, "workqueue: destroy returned %d, %ld of %d objects freed\n", rc,
			atomic_load(&freed), OBJECTS);
		return 1;
	}
	free(shared);
	printf("workqueue: ok (%d objects freed in %ld batches, %ld ticks)\n", OBJECTS,
	       atomic_load(&batches), atomic_load(&ticks));
	return 0;
}
