/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: waiting for work.  Owns the barrier work items,
 * trcu_flush_work(), and the flush colours behind trcu_flush_workqueue()
 * and trcu_drain_workqueue().
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

/* ---- Barriers and flush_work ----------------------------------------------------------- */

static void wq_barrier_func(struct trcu_work *work)
{
	struct wq_barrier *b = container_of(work, struct wq_barrier, work);

	/* Release: pairs with the acquire load in wait_barrier(); the flusher
	 * may return (and reuse its stack) as soon as it sees it.  The futex
	 * wake only passes the address to the kernel. */
	atomic_store_explicit(&b->done, 1, memory_order_release);
	sys_futex_wake(&b->done, 1);
}

bool is_barrier(struct trcu_work *work)
{
	return work->func == wq_barrier_func;
}

/* The kernel's insert_wq_barrier() (pool->lock held): right after @target
 * (linked to it) if it is queued, else at the head of @w's scheduled list. */
static void insert_wq_barrier(struct pool_workqueue *pwq, struct wq_barrier *b,
			      struct trcu_work *target, struct worker *w)
{
	struct trcu_wq_link *head;
	uintptr_t linked = 0;

	trcu_init_work(&b->work, wq_barrier_func);
	atomic_store_explicit(&b->done, 0, memory_order_relaxed);
	if (w) {
		head = w->scheduled.next;
	} else {
		head = target->priv.entry.next;
		/* Relaxed RMW under the pool lock (LINKED's lock). */
		linked = __atomic_fetch_or(&target->priv.data, WORK_LINKED,
					   __ATOMIC_RELAXED) & WORK_LINKED;
	}
	insert_work(pwq, &b->work, head, linked);
}

void wait_barrier(struct wq_barrier *b)
{
	while (!atomic_load_explicit(&b->done, memory_order_acquire))
		wq_wait_word(&b->done, 0);
	rcu_tsan_acquire(&wq_tsan_works);   /* after the work items it waited for */
}

/* Queue a barrier behind the pending or running instance of @work. */
bool start_flush_work(struct trcu_work *work, struct wq_barrier *b)
{
	for (;;) {
		uintptr_t d = work_data(work);
		struct worker_pool *pool = data_pool(d);
		struct worker *w;

		if (!pool)
			return false;
		pthread_mutex_lock(&pool->lock);
		d = __atomic_load_n(&work->priv.data, __ATOMIC_RELAXED);
		if (data_pool(d) != pool) {
			pthread_mutex_unlock(&pool->lock);
			continue;   /* moved on meanwhile: look again */
		}
		if (d & WORK_QUEUED) {
			insert_wq_barrier(work->priv.pwq, b, work, NULL);
		} else {
			w = find_worker_executing_work(pool, work);
			if (!w) {
				pthread_mutex_unlock(&pool->lock);
				return false;
			}
			insert_wq_barrier(w->current_pwq, b, work, w);
		}
		pthread_mutex_unlock(&pool->lock);
		return true;
	}
}

bool own_function(struct trcu_work *work)
{
	return current_worker && current_worker->current_work == work;
}

/*
 * Called from a work item A: is @work queued behind A on A's own pwq with
 * max_active 1 (an ordered workqueue)?  Then it cannot start before A
 * returns, and a flush from A would wait for ever (the kernel's lockdep
 * reports this).  A look under the pool lock; a @work queued after it is
 * not caught, as lockdep catches only what it saw.
 */
static bool queued_behind_self(struct trcu_work *work)
{
	struct worker *cw = current_worker;
	struct worker_pool *pool;
	bool stuck = false;
	uintptr_t d;

	if (!cw || !cw->current_work || !cw->current_pwq)
		return false;
	d = work_data(work);
	pool = data_pool(d);
	if (!pool || pool != cw->current_pwq->pool)
		return false;
	pthread_mutex_lock(&pool->lock);
	d = __atomic_load_n(&work->priv.data, __ATOMIC_RELAXED);
	stuck = data_pool(d) == pool && (d & WORK_QUEUED) &&
		work->priv.pwq == cw->current_pwq && cw->current_pwq->max_active == 1;
	pthread_mutex_unlock(&pool->lock);
	return stuck;
}

bool trcu_flush_work(struct trcu_work *work)
{
	struct wq_barrier b;

	if (!work) {
		sys_warn("trcu_flush_work: NULL work item");
		errno = EINVAL;
		return false;
	}
	if (own_function(work)) {
		/* Said once per process: an item may flush itself on every run.
		 * Relaxed, no pair: the flag only picks the one caller that prints. */
		static atomic_bool warned;

		if (!atomic_exchange_explicit(&warned, true, memory_order_relaxed))
			sys_warn("trcu_flush_work: called from the work item's own function; it "
				  "cannot wait for itself (returning false; said once)");
		errno = EDEADLK;
		return false;
	}
	if (queued_behind_self(work)) {
		/* Said once per process, as above. */
		static atomic_bool warned;

		if (!atomic_exchange_explicit(&warned, true, memory_order_relaxed))
			sys_warn("trcu_flush_work: called from a work item of \"%s\" (max_active 1) "
				  "for an item queued behind it, which cannot start before the "
				  "caller returns (returning false; said once)",
				  current_worker->current_pwq->wq->name);
		errno = EDEADLK;
		return false;
	}
	if (!start_flush_work(work, &b))
		return false;
	wait_barrier(&b);
	return true;
}


/* ---- Flush and drain ------------------------------------------------------------------- */

/*
 * Flush colours: every pwq tags new works with pwq->work_color.  A flush
 * (serialised by wq->flush_mutex) flips each pwq's colour under its pool
 * lock and waits until no work of the old colour is left in any pwq.  With
 * flushes serialised two colours suffice: the previous flush emptied the
 * colour this one flips to.
 */
static void flush_workqueue_inner(struct trcu_workqueue *wq)
{
	pthread_mutex_lock(&wq->flush_mutex);
	atomic_store_explicit(&wq->flush_done, 0, memory_order_relaxed);
	/* Bias of 1 so that no pwq can complete the flush before all are set. */
	atomic_store_explicit(&wq->nr_pwqs_to_flush, 1, memory_order_relaxed);
	for (int i = 0; i < wq->nr_pwqs; i++) {
		struct pool_workqueue *pwq = wq->pwqs[i];
		int c;

		pthread_mutex_lock(&pwq->pool->lock);
		c = pwq->work_color;
		if (pwq->nr_in_flight[c]) {
			pwq->flush_color = c;
			atomic_fetch_add_explicit(&wq->nr_pwqs_to_flush, 1, memory_order_relaxed);
		}
		pwq->work_color = c ^ 1;
		pthread_mutex_unlock(&pwq->pool->lock);
	}
	/* acq_rel: pairs with the decrements in pwq_dec_nr_in_flight(). */
	if (atomic_fetch_sub_explicit(&wq->nr_pwqs_to_flush, 1, memory_order_acq_rel) != 1) {
		/* Acquire: pairs with the release store of flush_done. */
		while (!atomic_load_explicit(&wq->flush_done, memory_order_acquire))
			wq_wait_word(&wq->flush_done, 0);
	}
	rcu_tsan_acquire(&wq_tsan_works);   /* after the work items it waited for */
	pthread_mutex_unlock(&wq->flush_mutex);
}

int trcu_flush_workqueue(struct trcu_workqueue *wq)
{
	int ret = wq_check(wq, "trcu_flush_workqueue");

	if (ret)
		return ret == -ESHUTDOWN ? -EINVAL : ret;
	if (is_chained_work(wq)) {
		sys_warn("trcu_flush_workqueue(\"%s\"): called from one of its own work items; "
			  "it would wait for itself (refused)", wq->name);
		return -EDEADLK;
	}
	flush_workqueue_inner(wq);
	return 0;
}

static bool wq_is_empty(struct trcu_workqueue *wq)
{
	bool empty = true;

	for (int i = 0; i < wq->nr_pwqs && empty; i++) {
		struct pool_workqueue *pwq = wq->pwqs[i];

		pthread_mutex_lock(&pwq->pool->lock);
		empty = !pwq->nr_in_flight[0] && !pwq->nr_in_flight[1];
		pthread_mutex_unlock(&pwq->pool->lock);
	}
	return empty;
}

/* Flush until empty; the workqueue is in WQ_DRAINING meanwhile. */
void drain_inner(struct trcu_workqueue *wq)
{
	for (unsigned int n = 1;; n++) {
		flush_workqueue_inner(wq);
		if (wq_is_empty(wq))
			return;
		if (n == 10 || n % 1000 == 0)
			sys_warn("workqueue \"%s\": still not empty after %u flushes while "
				  "draining (a work item keeps re-queueing itself?)", wq->name, n);
	}
}

int trcu_drain_workqueue(struct trcu_workqueue *wq)
{
	int ret = wq_check(wq, "trcu_drain_workqueue");

	if (ret)
		return ret == -ESHUTDOWN ? -EINVAL : ret;
	if (is_chained_work(wq)) {
		sys_warn("trcu_drain_workqueue(\"%s\"): called from one of its own work items; "
			  "it would wait for itself (refused)", wq->name);
		return -EDEADLK;
	}
	pthread_mutex_lock(&wq_state.mutex);
	/* Relaxed store: __queue_work() reads it under the pool lock, which the
	 * flush below takes for every pwq after this store. */
	if (wq->nr_drainers++ == 0)
		atomic_store_explicit(&wq->state, WQ_DRAINING, memory_order_relaxed);
	pthread_mutex_unlock(&wq_state.mutex);
	drain_inner(wq);
	pthread_mutex_lock(&wq_state.mutex);
	if (--wq->nr_drainers == 0 && !wq->destroying)
		atomic_store_explicit(&wq->state, WQ_ALIVE, memory_order_relaxed);
	pthread_mutex_unlock(&wq_state.mutex);
	return 0;
}
