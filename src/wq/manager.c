/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: the manager thread.  One thread per process runs the
 * delayed-work timers, the stall watchdog (a pool whose workers started
 * nothing for too long gets another worker), the reaper of idle workers,
 * and the retries of failed worker creation and of rescuer requests.
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

/* ---- The manager thread: timers, stall watchdog, reaper, mayday retries ----------------- */

/* The kernel's too_many_workers() (pool->lock and wq_state.mutex held).
 * Pools no workqueue uses any more may lose every idle worker. */
static bool too_many_workers(struct worker_pool *pool)
{
	int nr_idle = pool->nr_idle, nr_busy = pool->nr_workers - pool->nr_idle;

	if (pool->manager_active)
		return false;
	if (!pool->refcnt)
		return nr_idle > 0;
	return nr_idle > 2 && (nr_idle - 2) * 4 >= nr_busy;
}

/*
 * Userspace has no scheduler hook to tell that a work item blocked.  The
 * watchdog stands in for it: a pool with pending work where no item started
 * for stall_us is stalled.  Workers of a per-CPU pool running an item for
 * that long leave concurrency management (WORKER_CPU_INTENSIVE, as the
 * kernel does for CPU hogs); then an idle worker is woken or, if none, one
 * is created even past the max-workers cap (once per CREATE_COOLDOWN_NS
 * while creation fails).  pool->lock held; dropped and retaken around a
 * creation.
 */
static void pool_watchdog(struct worker_pool *pool, uint64_t now, uint64_t stall_ns)
{
	struct worker *wake;
	bool create;

	if (list_empty(&pool->worklist) || now - pool->watchdog_ts < stall_ns)
		return;
	for (struct trcu_wq_link *e = pool->workers.next; e != &pool->workers; e = e->next) {
		struct worker *w = container_of(e, struct worker, node);

		if (w->current_work && !(w->flags & WORKER_NOT_RUNNING) &&
		    now - w->current_start_ns >= stall_ns)
			worker_set_flags(w, WORKER_CPU_INTENSIVE);
	}
	wake = kick_pool_pick(pool);
	/* A creation that failed is retried after its cooldown only
	 * (pool_retry_create()): the watchdog fires every stall_us, and under
	 * a thread limit each firing would be one more failing
	 * pthread_create(). */
	create = !wake && !pool->manager_active && need_to_create_worker(pool) &&
		 (!pool->create_fail_ns || now - pool->last_retry_ns >= CREATE_COOLDOWN_NS);
	pool->watchdog_ts = now;
	atomic_fetch_add_explicit(&wq_state.n_stalls, 1, memory_order_relaxed);
	if (create)
		pool->manager_active = true;
	pthread_mutex_unlock(&pool->lock);
	wake_worker(wake);
	if (create) {
		bool ok = create_worker(pool) != NULL;

		pthread_mutex_lock(&pool->lock);
		pool->manager_active = false;
		if (!ok) {
			if (!pool->create_fail_ns)
				pool->create_fail_ns = now;
			pool->last_retry_ns = now;
			pool_send_maydays(pool);
		} else {
			pool->create_fail_ns = 0;
		}
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_lock(&pool->lock);
}

/* Creation failed earlier and work is waiting: retry after the cooldown,
 * and keep the rescuers asked (the kernel's mayday timer). */
static void pool_retry_create(struct worker_pool *pool, uint64_t now)
{
	bool ok;

	if (!pool->create_fail_ns || pool->manager_active || !need_to_create_worker(pool) ||
	    now - pool->last_retry_ns < CREATE_COOLDOWN_NS)
		return;
	pool->last_retry_ns = now;
	pool->manager_active = true;
	pthread_mutex_unlock(&pool->lock);
	ok = create_worker(pool) != NULL;
	pthread_mutex_lock(&pool->lock);
	pool->manager_active = false;
	if (ok)
		pool->create_fail_ns = 0;
	else
		pool_send_maydays(pool);
}

/* One pass over the pools; returns when the next pass is due and sets
 * *busy if some pool has work pending or running (the watchdog's tick). */
static uint64_t watch_pools(uint64_t now, bool *busy)
{
	uint64_t stall_ns = (uint64_t)WQ_TUN(wq_stall_us) * 1000;
	uint64_t idle_ns = (uint64_t)WQ_TUN(wq_idle_timeout_ms) * 1000000;
	uint64_t next = UINT64_MAX;
	struct worker *zombies = NULL;

	pthread_mutex_lock(&wq_state.mutex);
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];
		struct worker *dying = NULL;

		pthread_mutex_lock(&pool->lock);
		pool_watchdog(pool, now, stall_ns);
		pool_retry_create(pool, now);
		if (!list_empty(&pool->worklist) || pool->nr_workers > pool->nr_idle) {
			uint64_t t = now + (stall_ns / 2 > 500000 ? stall_ns / 2 : 500000);

			next = t < next ? t : next;
			*busy = true;
		}
		/* Reap the least recently idle workers past the timeout. */
		while (too_many_workers(pool)) {
			struct worker *w = container_of(pool->idle_list.prev, struct worker,
							idle_entry);
			uint64_t expires = w->last_active_ns + idle_ns;

			if (expires > now) {
				next = expires < next ? expires : next;
				break;
			}
			list_del_init(&w->idle_entry);
			list_del_init(&w->node);
			pool->nr_idle--;
			pool->nr_workers--;
			w->flags |= WORKER_DIE;
			w->next_free = dying;
			dying = w;
			atomic_fetch_add_explicit(&wq_state.n_reaped, 1, memory_order_relaxed);
		}
		pthread_mutex_unlock(&pool->lock);
		while (dying) {
			struct worker *w = dying;

			dying = w->next_free;
			wake_worker(w);
			w->next_free = zombies;
			zombies = w;
		}
	}
	pthread_mutex_unlock(&wq_state.mutex);
	while (zombies) {
		struct worker *w = zombies;

		zombies = w->next_free;
		pthread_join(w->thread, NULL);
		recycle_worker(w);
	}
	return next;
}

/* Work pending or running anywhere?  (Rechecked after announcing a long
 * sleep: see manager_thread().) */
static bool pools_busy(void)
{
	bool busy = false;

	pthread_mutex_lock(&wq_state.mutex);
	for (int i = 0; i < wq_state.nr_pools && !busy; i++) {
		struct worker_pool *pool = wq_state.pools[i];

		pthread_mutex_lock(&pool->lock);
		busy = !list_empty(&pool->worklist) || pool->nr_workers > pool->nr_idle;
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&wq_state.mutex);
	return busy;
}

void *manager_thread(void *arg)
{
	sys_cancel_disable();   /* as worker_thread() */
	while (!atomic_load_explicit(&wq_state.mgr_stop, memory_order_acquire)) {
		/* Acquire: pairs with the release increment in wake_manager(). */
		uint32_t seq = atomic_load_explicit(&wq_state.mgr_futex, memory_order_acquire);
		uint64_t now = now_ns(), next, t;
		bool busy = false;
		long timeout;

		next = fire_timers(now);
		t = watch_pools(now_ns(), &busy);
		next = t < next ? t : next;
		if (!busy) {
			/*
			 * Nothing to watch: sleep until the next timer or reaping
			 * deadline, however far.  seq_cst store, then recheck the
			 * pools under their locks; a worker starting an item (under
			 * the pool lock) loads the flag with seq_cst after that
			 * (process_one_work): either the recheck sees it busy or it
			 * sees the flag and wakes us.
			 */
			atomic_store_explicit(&wq_state.mgr_sleeping_long, true, memory_order_seq_cst);
			if (pools_busy()) {
				t = now_ns() + 500000;
				next = t < next ? t : next;
			}
		}
		now = now_ns();
		timeout = next == UINT64_MAX ? -1 : (next > now ? (long)(next - now) : 0);
		if (timeout)
			sys_futex_wait(&wq_state.mgr_futex, seq, timeout);
		atomic_store_explicit(&wq_state.mgr_sleeping_long, false, memory_order_relaxed);
	}
	return NULL;
}
