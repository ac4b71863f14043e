/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: fork().  Owns the subsystem's fork handlers, which the
 * core's fork handling (src/fork.c) calls through the hooks this layer
 * registers: every lock taken before the fork and released after it in the
 * parent; in the child, items queued in the parent dropped (the parent runs
 * them) and the threads marked gone, to start again on next use.
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

/* The locking order of the file's header: mutex, every pool lock, every
 * workqueue's mayday_lock, then the two leaves.  A workqueue's flush_mutex
 * is held across a flush's wait: not taken, re-initialised in the child. */
static void wq_fork_lock_all(bool lock)
{
	int (*op)(pthread_mutex_t *) = lock ? pthread_mutex_lock : pthread_mutex_unlock;
	struct trcu_workqueue *lists[2] = { wq_state.wqs, wq_state.dead_wqs };

	for (int i = 0; i < wq_state.nr_pools; i++)
		op(&wq_state.pools[i]->lock);
	for (int l = 0; l < 2; l++)
		for (struct trcu_workqueue *wq = lists[l]; wq; wq = wq->next)
			op(&wq->mayday_lock);
	op(&wq_state.timer_lock);
	op(&wq_state.free_lock);
	op(&wq_state.owner_lock);
}

static void wq_fork_prepare(void)
{
	pthread_mutex_lock(&wq_state.mutex);
	wq_fork_lock_all(true);
}

static void wq_fork_parent(void)
{
	wq_fork_lock_all(false);
	pthread_mutex_unlock(&wq_state.mutex);
}

/* A work item queued in the parent: the parent runs it.  In the child it
 * is neither pending nor queued, so that it can be queued again. */
static void wq_fork_drop_work(struct trcu_work *work, struct worker_pool *pool)
{
	__atomic_store_n(&work->priv.data, (uintptr_t)pool, __ATOMIC_RELAXED);
	list_init(&work->priv.entry);
	work->priv.pwq = NULL;
}

static void wq_fork_drop_list(struct trcu_wq_link *head, struct worker_pool *pool)
{
	for (struct trcu_wq_link *e = head->next, *next; e != head; e = next) {
		next = e->next;
		wq_fork_drop_work(work_of(e), pool);
	}
	list_init(head);
}

/* Items the parent's threads owned PENDING of outside any list or timer:
 * drop their pending state (their owners do not exist here), and the
 * other threads' records (heap memory, still readable; freed here). */
static void wq_fork_child_owners(void)
{
	struct wq_owner *o = wq_state.owners, *next;

	wq_state.owners = NULL;
	for (; o; o = next) {
		struct trcu_work *work = atomic_load_explicit(&o->work, memory_order_relaxed);

		next = o->next;
		if (work)
			wq_fork_drop_work(work, data_pool(__atomic_load_n(&work->priv.data,
								       __ATOMIC_RELAXED)));
		if (o == wq_owner_self) {
			atomic_store_explicit(&o->work, NULL, memory_order_relaxed);
			o->next = wq_state.owners;
			wq_state.owners = o;
		} else {
			free(o);
		}
	}
}

static void wq_fork_child_wq(struct trcu_workqueue *wq)
{
	pthread_mutex_init(&wq->flush_mutex, NULL);
	pthread_mutex_init(&wq->mayday_lock, NULL);
	list_init(&wq->maydays);
	atomic_store_explicit(&wq->nr_pwqs_to_flush, 0, memory_order_relaxed);
	for (int i = 0; i < wq->nr_pwqs; i++) {
		struct pool_workqueue *pwq = wq->pwqs[i];

		if (!pwq)
			continue;
		wq_fork_drop_list(&pwq->inactive_works, pwq->pool);
		pwq->nr_active = 0;
		pwq->nr_in_flight[0] = pwq->nr_in_flight[1] = 0;
		pwq->flush_color = -1;
		pwq->on_mayday = false;
		list_init(&pwq->mayday_node);
	}
	if (wq->rescuer) {
		wq->rescuer = NULL;
		wq->rescuer_lost = true;
	}
	/* A drain or destroy in progress was another thread's. */
	wq->nr_drainers = 0;
	if (!wq->destroying &&
	    atomic_load_explicit(&wq->state, memory_order_relaxed) == WQ_DRAINING)
		atomic_store_explicit(&wq->state, WQ_ALIVE, memory_order_relaxed);
}

/*
 * Only the forking thread exists: every worker, rescuer and the manager are
 * gone.  Work queued, running or on a timer in the parent is the parent's:
 * the child drops it (the items become idle, so they can be queued again),
 * keeps every pool, workqueue and handle, and starts the threads again at
 * its first queueing (wq_fork_respawn()), or while a wait for work waits
 * if that failed (wq_wait_word()).  Forking from a work item is not
 * supported (the child's only thread would be a worker).
 */
static void wq_fork_child(void)
{
	struct trcu_workqueue *lists[2] = { wq_state.wqs, wq_state.dead_wqs };

	pthread_mutex_init(&wq_state.mutex, NULL);
	pthread_mutex_init(&wq_state.timer_lock, NULL);
	wq_state.timer_firing = NULL;   /* the manager's, gone */
	wq_state.timer_flush_waiters = 0;
	pthread_mutex_init(&wq_state.free_lock, NULL);
	pthread_mutex_init(&wq_state.owner_lock, NULL);
	for (struct worker_pool *p = wq_state.retired_pools; p; p = p->next_retired)
		pthread_mutex_init(&p->lock, NULL);
	wq_state.shutdown_running = false;   /* another thread's */
	wq_forked_here = current_worker != NULL;
	current_worker = NULL;
	wq_fork_child_owners();
	wq_state.mgr_started = false;
	atomic_store_explicit(&wq_state.mgr_stop, false, memory_order_relaxed);
	atomic_store_explicit(&wq_state.mgr_sleeping_long, false, memory_order_relaxed);
	/* Every worker structure is free again (none has a thread). */
	wq_state.free_workers = NULL;
	for (struct worker *w = wq_state.all_workers; w; w = w->next_all) {
		w->joinable = false;
		w->next_free = wq_state.free_workers;
		wq_state.free_workers = w;
	}
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];

		pthread_mutex_init(&pool->lock, NULL);
		/* Items assigned to a worker but not started are still pending. */
		for (struct trcu_wq_link *e = pool->workers.next; e != &pool->workers; e = e->next)
			wq_fork_drop_list(&container_of(e, struct worker, node)->scheduled, pool);
		wq_fork_drop_list(&pool->worklist, pool);
		list_init(&pool->idle_list);
		list_init(&pool->workers);
		pool->nr_workers = pool->nr_idle = pool->nr_running = 0;
		pool->manager_active = false;
		pool->create_fail_ns = 0;
		pool->watchdog_ts = now_ns();
		memset(pool->busy_hash, 0, sizeof(pool->busy_hash));
	}
	for (int l = 0; l < 2; l++)
		for (struct trcu_workqueue *wq = lists[l]; wq; wq = wq->next)
			wq_fork_child_wq(wq);
	for (int i = 0; i < wq_state.heap_n; i++) {
		struct trcu_delayed_work *dw = wq_state.heap[i];

		dw->priv.timer_idx = -1;
		wq_fork_drop_work(&dw->work, NULL);
	}
	wq_state.heap_n = 0;
	wq_state.heap_reserved = 0;   /* promised to threads that are gone */
	wq_state.respawn_try_ns = 0;
	wq_state.respawn_warned = false;   /* this child says it again */
	if (wq_state.nr_pools || wq_state.wqs)
		atomic_store_explicit(&wq_state.fork_respawn, true, memory_order_relaxed);
}

static const struct fork_hooks wq_fork_hooks = {
	.prepare = wq_fork_prepare,
	.parent = wq_fork_parent,
	.child = wq_fork_child,
};

/* At load, before any thread exists: the core's fork handling runs these
 * steps from then on (src/fork.c, fork_register_hooks()). */
__attribute__((constructor)) static void wq_fork_hooks_register(void)
{
	fork_register_hooks(&wq_fork_hooks);
}

/*
 * After a fork: start the manager, one worker for every pool in use (as
 * get_pool_locked() keeps), and the lost rescuers (wq_state.mutex held).
 * Clears fork_respawn once every one started.  A failure (thread limit, no
 * memory for a stack) leaves it set: a queueing tries again once
 * CREATE_COOLDOWN_NS passed, and so does a wait for work meanwhile
 * (wq_wait_word()), since the manager
 * that retries failed creations may be one of the threads missing; the work
 * is run meanwhile by whatever started.  Returns true if it failed for the
 * first time in this process (the caller says so, unlocked).
 */
static bool wq_fork_respawn_locked(void)
{
	bool failed = false;

	wq_state.respawn_try_ns = now_ns();
	failed |= start_manager_locked() != 0;
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];
		int nr;

		pthread_mutex_lock(&pool->lock);
		nr = pool->nr_workers;
		pthread_mutex_unlock(&pool->lock);
		if (pool->refcnt && !nr)
			failed |= !create_worker(pool);
	}
	for (struct trcu_workqueue *wq = wq_state.wqs; wq; wq = wq->next)
		if (wq->rescuer_lost) {
			failed |= start_rescuer_locked(wq) != 0;
			wq->rescuer_lost = wq->rescuer == NULL;
		}
	if (!failed) {
		/* Release: pairs with the acquire load in wq_fork_respawn(): a
		 * queuer that sees the flag clear sees the threads' state. */
		atomic_store_explicit(&wq_state.fork_respawn, false, memory_order_release);
		return false;
	}
	if (wq_state.respawn_warned)
		return false;
	wq_state.respawn_warned = true;
	return true;
}

static void wq_fork_respawn_warn(void)
{
	sys_warn("workqueue: the threads of this fork() child could not all be started "
		 "again (pthread_create() failed: thread limit or no memory for a stack); "
		 "queued work waits for them, and the start is tried again at most "
		 "every %llu ms, at a queueing or while a flush, drain, cancel or "
		 "destroy waits (said once)", CREATE_COOLDOWN_NS / 1000000);
}

/*
 * Start the threads again if a try is due: the first at once (respawn_try_ns
 * is 0 after the fork), then at most every CREATE_COOLDOWN_NS for the whole
 * process, queuers and waiters alike (a child under a thread limit that
 * queues in a loop would otherwise call pthread_create() for every missing
 * thread at every queueing).  A waiter only trylocks: a flush waits holding
 * its workqueue's flush_mutex, which comes after wq_state.mutex in the lock
 * order; while the mutex is busy its try is left to the next round.
 */
static void wq_fork_respawn_try(bool trylock)
{
	bool warn = false;
	int cs = sys_cancel_disable();

	if (trylock ? !pthread_mutex_trylock(&wq_state.mutex)
		    : !pthread_mutex_lock(&wq_state.mutex)) {
		if (atomic_load_explicit(&wq_state.fork_respawn, memory_order_relaxed) &&
		    (!wq_state.respawn_try_ns ||
		     now_ns() - wq_state.respawn_try_ns >= CREATE_COOLDOWN_NS))
			warn = wq_fork_respawn_locked();
		pthread_mutex_unlock(&wq_state.mutex);
	}
	if (warn)
		wq_fork_respawn_warn();
	sys_cancel_restore(cs);
}

/* At every queueing: the threads of a fork() child, started once. */
void wq_fork_respawn(void)
{
	/* Acquire: pairs with the release store in wq_fork_respawn_locked():
	 * a queuer that sees the flag clear sees the threads' state. */
	if (TRCU_LIKELY(!atomic_load_explicit(&wq_state.fork_respawn, memory_order_acquire)))
		return;
	wq_fork_respawn_try(false);
}

/* From a waiter (and the exit handler's wait): wq_fork_respawn() again. */
void wq_fork_respawn_retry(void)
{
	/* Relaxed, no pair: a hint; read again under wq_state.mutex, and the
	 * waiter orders nothing on it (it waits on its own word). */
	if (TRCU_LIKELY(!atomic_load_explicit(&wq_state.fork_respawn, memory_order_relaxed)))
		return;
	wq_fork_respawn_try(true);
}

/*
 * A wait for work to run (flush_work, cancel_sync, flush, drain, destroy)
 * sleeps here while *word == val; the caller loops on its condition.
 * Normally until woken.  In a fork() child whose threads could not all be
 * started again, nothing else may ever try again (no queueing need come,
 * and the manager may be missing): the waiter sleeps CREATE_COOLDOWN_NS
 * at most and tries itself, so the work runs once threads can be created.
 */
void wq_wait_word(_Atomic uint32_t *word, uint32_t val)
{
	/* Relaxed, no pair: picks the timeout only; fork_respawn is set only
	 * by wq_fork_child(), while no other thread exists. */
	if (TRCU_LIKELY(!atomic_load_explicit(&wq_state.fork_respawn, memory_order_relaxed))) {
		sys_futex_wait(word, val, -1);
		return;
	}
	sys_futex_wait(word, val, (long)CREATE_COOLDOWN_NS);
	wq_fork_respawn_retry();
}
