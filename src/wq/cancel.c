/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: cancelling.  Owns grabbing an item's PENDING bit from
 * wherever the item is (timer heap, worklist, inactive list), the cancel
 * and modify API, trcu_flush_delayed_work() and trcu_current_work().
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

/* ---- Cancelling -------------------------------------------------------------------------- */

/*
 * The kernel's try_to_grab_pending(): take PENDING away from whoever holds
 * it.  1: it was pending (timer disarmed or removed from its list), and
 * now we own PENDING; 0: it was idle, we own PENDING; -EAGAIN: in transit,
 * try again; -ENOENT: a cancel_sync owns it.
 */
static int try_to_grab_pending(struct trcu_work *work)
{
	uintptr_t d = work_data(work);
	struct worker_pool *pool;
	struct worker *wake;

	/* ThreadSanitizer: a grab that re-arms (mod_delayed_work) hands the
	 * caller's writes to the work function, as a queueing does. */
	rcu_tsan_release(work);
	if (d & WORK_TIMER) {
		struct trcu_delayed_work *dw = trcu_to_delayed_work(work);

		pthread_mutex_lock(&wq_state.timer_lock);
		if (dw->priv.timer_idx >= 0) {
			wq_own(work);
			heap_remove(dw);
			pthread_mutex_unlock(&wq_state.timer_lock);
			return 1;
		}
		pthread_mutex_unlock(&wq_state.timer_lock);
	}
	if (test_and_set_pending(work))
		return 0;
	d = work_data(work);
	if (d & WORK_CANCELING)
		return -ENOENT;
	pool = data_pool(d);
	if (!pool)
		return -EAGAIN;
	pthread_mutex_lock(&pool->lock);
	d = __atomic_load_n(&work->priv.data, __ATOMIC_RELAXED);
	if (!(d & WORK_QUEUED) || data_pool(d) != pool) {
		pthread_mutex_unlock(&pool->lock);
		return -EAGAIN;
	}
	{
		struct pool_workqueue *pwq = work->priv.pwq;

		/* An inactive work may have barriers linked behind it: activate
		 * it first so they move to the worklist (the kernel does the same). */
		if (d & WORK_INACTIVE) {
			pwq->nr_active++;
			move_linked_works(work, &pool->worklist);
		}
		wq_own(work);
		list_del_init(&work->priv.entry);
		pwq_dec_nr_in_flight(pwq, work_color_of(d), true);
		/* Release: pairs with work_data() of later flushers. */
		__atomic_store_n(&work->priv.data, (uintptr_t)pool | WORK_PENDING,
				 __ATOMIC_RELEASE);
	}
	wake = wake_locked_or_defer(kick_pool_pick(pool));
	pthread_mutex_unlock(&pool->lock);
	wake_worker(wake);
	return 1;
}

/* Release PENDING (and CANCELING) that we own. */
static void release_pending(struct trcu_work *work)
{
	set_work_pool_and_clear_pending(work, data_pool(work_data(work)));
	wq_own(NULL);
}

/*
 * @warned: the caller's flag for the message about a cancel_sync from the
 * item's own function, said once per process (a self-cancelling item may
 * call it on every run); NULL for the non-sync calls.
 */
static bool __cancel_work(struct trcu_work *work, bool sync, const char *fn,
			  atomic_bool *warned)
{
	bool self = own_function(work);
	int ret;

	if (!work) {
		sys_warn("%s: NULL work item", fn);
		errno = EINVAL;
		return false;
	}
	for (;;) {
		uint32_t seq = atomic_load_explicit(&wq_state.cancel_seq, memory_order_acquire);

		ret = try_to_grab_pending(work);
		if (ret >= 0)
			break;
		if (ret == -ENOENT) {
			/* Another cancel_sync owns the item: a non-sync cancel has
			 * nothing to do; a sync one waits for it to finish. */
			if (!sync || self)
				return false;
			/* Acquire: pairs with the release increment after a
			 * cancel_sync let go of the item. */
			sys_futex_wait(&wq_state.cancel_seq, seq, 10000000);
			continue;
		}
		sched_yield();   /* in transit between owner and list */
	}
	if (sync && !self) {
		struct wq_barrier b;

		/* Relaxed RMW: we own PENDING; CANCELING tells others to wait. */
		__atomic_fetch_or(&work->priv.data, WORK_CANCELING, __ATOMIC_RELAXED);
		if (start_flush_work(work, &b))
			wait_barrier(&b);
	}
	release_pending(work);
	if (sync) {
		/* ThreadSanitizer: after the instances this cancel (or the one
		 * it waited for) let finish. */
		rcu_tsan_acquire(&wq_tsan_works);
		atomic_fetch_add_explicit(&wq_state.cancel_seq, 1, memory_order_release);
		sys_futex_wake(&wq_state.cancel_seq, INT32_MAX);
	}
	/* Relaxed, no pair: the flag only picks the one caller that prints. */
	if (sync && self && !atomic_exchange_explicit(warned, true, memory_order_relaxed))
		sys_warn("%s: called from the work item's own function: the pending instance "
			  "(if any) is removed, but it cannot wait for itself (said once)", fn);
	return ret == 1;
}

bool trcu_cancel_work(struct trcu_work *work)
{
	return __cancel_work(work, false, "trcu_cancel_work", NULL);
}

bool trcu_cancel_work_sync(struct trcu_work *work)
{
	static atomic_bool warned;

	return __cancel_work(work, true, "trcu_cancel_work_sync", &warned);
}

bool trcu_cancel_delayed_work(struct trcu_delayed_work *dw)
{
	return __cancel_work(dw ? &dw->work : NULL, false, "trcu_cancel_delayed_work", NULL);
}

bool trcu_cancel_delayed_work_sync(struct trcu_delayed_work *dw)
{
	static atomic_bool warned;

	return __cancel_work(dw ? &dw->work : NULL, true, "trcu_cancel_delayed_work_sync",
			     &warned);
}

bool trcu_mod_delayed_work_on(int cpu, struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
			      uint64_t delay_us)
{
	int ret;

	if (!check_queue_args("trcu_mod_delayed_work", cpu, wq, dw ? &dw->work : NULL) ||
	    !check_delay("trcu_mod_delayed_work", delay_us))
		return false;
	if (heap_reserve()) {
		sys_warn("trcu_mod_delayed_work: out of memory for the timer (refused)");
		errno = ENOMEM;
		return false;
	}
	for (;;) {
		ret = try_to_grab_pending(&dw->work);
		if (ret >= 0)
			break;
		if (ret == -ENOENT) {
			heap_unreserve();
			return false;   /* being cancelled: leave it cancelled */
		}
		sched_yield();
	}
	if (!__queue_delayed_work(cpu, wq, dw, delay_us))
		return false;
	return ret == 1;
}

bool trcu_mod_delayed_work(struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
			   uint64_t delay_us)
{
	return trcu_mod_delayed_work_on(-1, wq, dw, delay_us);
}

bool trcu_flush_delayed_work(struct trcu_delayed_work *dw)
{
	struct trcu_workqueue *wq = NULL;
	int cpu = -1;

	if (!dw) {
		sys_warn("trcu_flush_delayed_work: NULL work item");
		errno = EINVAL;
		return false;
	}
	pthread_mutex_lock(&wq_state.timer_lock);
	timer_wait_fired_locked(dw);
	if (dw->priv.timer_idx >= 0) {
		wq = dw->priv.wq;
		cpu = dw->priv.cpu;
		wq_own(&dw->work);
		heap_remove(dw);
	}
	pthread_mutex_unlock(&wq_state.timer_lock);
	if (wq && !__queue_work(cpu, wq, &dw->work))
		sys_warn("trcu_flush_delayed_work: workqueue \"%s\" is draining or destroyed: "
			  "item dropped", wq->name);
	return trcu_flush_work(&dw->work);
}

struct trcu_work *trcu_current_work(void)
{
	return current_worker ? current_worker->current_work : NULL;
}
