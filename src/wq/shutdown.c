/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: shutdown.  Owns trcu_wq_shutdown(): every workqueue
 * drained and destroyed, every thread joined, every structure freed, the
 * subsystem left ready to start again on next use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wq_internal.h"

/* ---- Shutdown ------------------------------------------------------------------------------ */

/*
 * The kernel's put_unbound_pool(): wait until no worker of @pool is
 * creating another (manage_workers() runs create_worker() with the pool
 * lock dropped, and may have started before the work ran out), then take
 * the manager role for good, so that none starts.  A worker being created
 * is on pool->workers before its thread exists: collected then, its handle
 * would not name its thread.  Returns with pool->lock held.
 */
static void pool_become_last_manager(struct worker_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	while (pool->manager_active) {
		pthread_mutex_unlock(&pool->lock);
		sys_sleep_ns(100000L);
		pthread_mutex_lock(&pool->lock);
	}
	pool->manager_active = true;   /* freed with it set */
}

static void __trcu_wq_shutdown(void)
{
	struct worker *dying = NULL;

	if (current_worker)
		sys_die("trcu_wq_shutdown() called from a workqueue thread (work item %p): it "
			 "would wait for itself", (void *)current_worker->current_work);
	pthread_mutex_lock(&wq_state.mutex);
	/* One at a time: the first drops the mutex around its joins while it
	 * still uses the manager's handle and the pools; a second waits for
	 * it to end, then finds nothing left (or what was started since). */
	while (wq_state.shutdown_running) {
		pthread_mutex_unlock(&wq_state.mutex);
		sys_sleep_ns(1000000L);
		pthread_mutex_lock(&wq_state.mutex);
	}
	wq_state.shutdown_running = true;
	/* Destroy every live workqueue, system ones included. */
	while (wq_state.wqs) {
		struct trcu_workqueue *wq = wq_state.wqs;

		if (wq->destroying) {
			/* Another thread is destroying it: let it finish. */
			pthread_mutex_unlock(&wq_state.mutex);
			sched_yield();
			pthread_mutex_lock(&wq_state.mutex);
			continue;
		}
		wq->destroying = true;
		atomic_store_explicit(&wq->state, WQ_DRAINING, memory_order_relaxed);
		pthread_mutex_unlock(&wq_state.mutex);
		destroy_inner(wq);
		pthread_mutex_lock(&wq_state.mutex);
	}
	wq_state.system_wq = wq_state.system_unbound_wq = NULL;
	if (wq_state.mgr_started) {
		atomic_store_explicit(&wq_state.mgr_stop, true, memory_order_release);
		pthread_mutex_unlock(&wq_state.mutex);
		wake_manager();
		pthread_join(wq_state.mgr, NULL);
		pthread_mutex_lock(&wq_state.mutex);
		wq_state.mgr_started = false;
	}
	/* Every worker is idle or about to be: tell each to exit. */
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];

		pool_become_last_manager(pool);
		while (!list_empty(&pool->workers)) {
			struct worker *w = container_of(pool->workers.next, struct worker, node);

			list_del_init(&w->node);
			list_del_init(&w->idle_entry);
			w->flags |= WORKER_DIE;
			w->next_free = dying;
			dying = w;
		}
		pool->nr_workers = pool->nr_idle = 0;
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&wq_state.mutex);
	for (struct worker *w = dying; w; w = w->next_free)
		wake_worker(w);
	while (dying) {
		struct worker *w = dying;

		dying = w->next_free;
		pthread_join(w->thread, NULL);
	}

	pthread_mutex_lock(&wq_state.mutex);
	/* Kept, not freed: work items' data words still name them. */
	for (int i = 0; i < wq_state.nr_pools; i++) {
		wq_state.pools[i]->next_retired = wq_state.retired_pools;
		wq_state.retired_pools = wq_state.pools[i];
	}
	free(wq_state.pools);
	wq_state.pools = NULL;
	wq_state.nr_pools = wq_state.cap_pools = 0;
	while (wq_state.dead_wqs) {
		struct trcu_workqueue *wq = wq_state.dead_wqs;

		wq_state.dead_wqs = wq->next;
		wq_free_pwqs(wq);
		pthread_mutex_destroy(&wq->flush_mutex);
		pthread_mutex_destroy(&wq->mayday_lock);
		free(wq);
	}
	pthread_mutex_lock(&wq_state.free_lock);
	while (wq_state.all_workers) {
		struct worker *w = wq_state.all_workers;

		wq_state.all_workers = w->next_all;
		free(w);
	}
	wq_state.free_workers = NULL;
	pthread_mutex_unlock(&wq_state.free_lock);
	pthread_mutex_lock(&wq_state.timer_lock);
	free(wq_state.heap);
	wq_state.heap = NULL;
	wq_state.heap_n = wq_state.heap_cap = 0;
	pthread_mutex_unlock(&wq_state.timer_lock);
	if (wq_state.topo_set)
		topo_free(&wq_state.topo);
	wq_state.topo_set = false;
	free(wq_state.topo_spec);
	wq_state.topo_spec = NULL;
	wq_state.inited = false;
	wq_state.shutdown_running = false;
	pthread_mutex_unlock(&wq_state.mutex);
}

void trcu_wq_shutdown(void)
{
	int cs = sys_cancel_disable();

	__trcu_wq_shutdown();
	sys_cancel_restore(cs);
}
