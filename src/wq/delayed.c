/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: delayed work.  Owns the timer heap (under
 * wq_state.timer_lock) that holds every armed trcu_delayed_work, firing
 * expired timers (called by the manager thread), and the delayed queueing
 * API.
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

/* ---- Delayed work: the timer heap (wq_state.timer_lock held) ---------------------------- */

static void heap_swap(int a, int b)
{
	struct trcu_delayed_work **h = wq_state.heap, *t = h[a];

	h[a] = h[b];
	h[b] = t;
	h[a]->priv.timer_idx = a;
	h[b]->priv.timer_idx = b;
}

static void heap_up(int i)
{
	while (i > 0) {
		int p = (i - 1) / 2;

		if (wq_state.heap[p]->priv.expires_ns <= wq_state.heap[i]->priv.expires_ns)
			break;
		heap_swap(i, p);
		i = p;
	}
}

static void heap_down(int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < wq_state.heap_n &&
		    wq_state.heap[l]->priv.expires_ns < wq_state.heap[m]->priv.expires_ns)
			m = l;
		if (r < wq_state.heap_n &&
		    wq_state.heap[r]->priv.expires_ns < wq_state.heap[m]->priv.expires_ns)
			m = r;
		if (m == i)
			return;
		heap_swap(i, m);
		i = m;
	}
}

/*
 * Make room for one more armed timer before the caller takes PENDING, so
 * that arming it cannot fail: out of memory, the call returns false with
 * errno ENOMEM and the item is untouched.  heap_cap >= heap_n +
 * heap_reserved always (under timer_lock).
 */
int heap_reserve(void)
{
	int need, ret = 0;

	pthread_mutex_lock(&wq_state.timer_lock);
	need = wq_state.heap_n + wq_state.heap_reserved + 1;
	if (need > wq_state.heap_cap) {
		int cap = wq_state.heap_cap ? wq_state.heap_cap * 2 : 64;
		struct trcu_delayed_work **h;

		if (cap < need)
			cap = need;
		h = realloc(wq_state.heap, (size_t)cap * sizeof(*h));
		if (h) {
			wq_state.heap = h;
			wq_state.heap_cap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		wq_state.heap_reserved++;
	pthread_mutex_unlock(&wq_state.timer_lock);
	return ret;
}

void heap_unreserve(void)
{
	pthread_mutex_lock(&wq_state.timer_lock);
	wq_state.heap_reserved--;
	pthread_mutex_unlock(&wq_state.timer_lock);
}

/* Arm dw in a slot reserved by heap_reserve() (timer_lock held). */
static void heap_insert(struct trcu_delayed_work *dw)
{
	wq_state.heap_reserved--;
	dw->priv.timer_idx = wq_state.heap_n;
	wq_state.heap[wq_state.heap_n++] = dw;
	heap_up(dw->priv.timer_idx);
	/* Relaxed RMW: TIMER changes only under timer_lock. */
	__atomic_fetch_or(&dw->work.priv.data, WORK_TIMER, __ATOMIC_RELAXED);
}

void heap_remove(struct trcu_delayed_work *dw)
{
	int i = dw->priv.timer_idx, last = --wq_state.heap_n;

	if (i != last) {
		heap_swap(i, last);
		heap_down(i);
		heap_up(i);
	}
	dw->priv.timer_idx = -1;
	__atomic_fetch_and(&dw->work.priv.data, ~WORK_TIMER, __ATOMIC_RELAXED);
}

/* Arm @dw (we own PENDING and a heap_reserve() slot, which this uses or
 * gives back).  Returns true (queued or armed) or false. */
bool __queue_delayed_work(int cpu, struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
				 uint64_t delay_us)
{
	bool earliest;

	if (!delay_us) {
		heap_unreserve();
		return __queue_work(cpu, wq, &dw->work);
	}
	wq_fork_respawn();   /* the manager fires the timers */
	pthread_mutex_lock(&wq_state.timer_lock);
	dw->priv.wq = wq;
	dw->priv.cpu = cpu;
	dw->priv.expires_ns = now_ns() + delay_us * 1000;
	heap_insert(dw);
	earliest = wq_state.heap[0] == dw;
	wq_own(NULL);   /* on the timer heap now */
	pthread_mutex_unlock(&wq_state.timer_lock);
	atomic_fetch_add_explicit(&wq_state.n_queued_timer, 1, memory_order_relaxed);
	if (earliest)
		wake_manager();
	return true;
}

/* fire_timers() has queued the item it took off the heap: wake the
 * flushes waiting for that (timer_wait_fired_locked()).  The bump under
 * timer_lock, which the waiters read it under; the futex compares it. */
static void timer_fired_locked(void)
{
	wq_state.timer_firing = NULL;
	if (!wq_state.timer_flush_waiters)
		return;
	atomic_fetch_add_explicit(&wq_state.timer_fired_seq, 1, memory_order_relaxed);
	sys_futex_wake(&wq_state.timer_fired_seq, INT32_MAX);
}

/*
 * (timer_lock held) Return once fire_timers() is not between taking @dw off
 * the heap and queueing it: a flush that looked then would find the timer
 * disarmed and the item on no pool, and return before it ran.  The
 * kernel's del_timer_sync() in flush_delayed_work() waits for a running
 * timer function the same way.
 */
void timer_wait_fired_locked(struct trcu_delayed_work *dw)
{
	while (wq_state.timer_firing == dw) {
		uint32_t seq = atomic_load_explicit(&wq_state.timer_fired_seq,
						    memory_order_relaxed);

		wq_state.timer_flush_waiters++;
		pthread_mutex_unlock(&wq_state.timer_lock);
		wq_wait_word(&wq_state.timer_fired_seq, seq);
		pthread_mutex_lock(&wq_state.timer_lock);
		wq_state.timer_flush_waiters--;
	}
}

/* Fire expired timers; returns the next expiry or UINT64_MAX. */
uint64_t fire_timers(uint64_t now)
{
	uint64_t next = UINT64_MAX;

	pthread_mutex_lock(&wq_state.timer_lock);
	while (wq_state.heap_n && wq_state.heap[0]->priv.expires_ns <= now) {
		struct trcu_delayed_work *dw = wq_state.heap[0];
		struct trcu_workqueue *wq = dw->priv.wq;
		int cpu = dw->priv.cpu;

		wq_own(&dw->work);
		heap_remove(dw);
		wq_state.timer_firing = dw;
		pthread_mutex_unlock(&wq_state.timer_lock);
		/* PENDING is ours now (the kernel's delayed_work_timer_fn()). */
		if (!__queue_work(cpu, wq, &dw->work))
			sys_warn("delayed work dropped: workqueue \"%s\" is draining or destroyed",
				  wq->name);
		pthread_mutex_lock(&wq_state.timer_lock);
		timer_fired_locked();
	}
	if (wq_state.heap_n)
		next = wq_state.heap[0]->priv.expires_ns;
	pthread_mutex_unlock(&wq_state.timer_lock);
	return next;
}

/* Disarm every timer aimed at @wq and release its PENDING; returns how many. */
int cancel_timers_of(struct trcu_workqueue *wq)
{
	int n = 0;

	pthread_mutex_lock(&wq_state.timer_lock);
	for (int i = 0; i < wq_state.heap_n;) {
		struct trcu_delayed_work *dw = wq_state.heap[i];

		if (dw->priv.wq != wq) {
			i++;
			continue;
		}
		heap_remove(dw);
		set_work_pool_and_clear_pending(&dw->work, data_pool(work_data(&dw->work)));
		n++;
		i = 0;   /* the heap was reordered */
	}
	pthread_mutex_unlock(&wq_state.timer_lock);
	return n;
}

bool check_delay(const char *fn, uint64_t delay_us)
{
	if (delay_us > 365ull * 24 * 3600 * 1000000) {
		sys_warn("%s: delay %llu us refused (more than a year)", fn,
			  (unsigned long long)delay_us);
		errno = EINVAL;
		return false;
	}
	return true;
}

bool trcu_queue_delayed_work_on(int cpu, struct trcu_workqueue *wq,
				struct trcu_delayed_work *dw, uint64_t delay_us)
{
	if (!check_queue_args("trcu_queue_delayed_work", cpu, wq, dw ? &dw->work : NULL) ||
	    !check_delay("trcu_queue_delayed_work", delay_us))
		return false;
	if (heap_reserve()) {
		sys_warn("trcu_queue_delayed_work: out of memory for the timer (refused)");
		errno = ENOMEM;
		return false;
	}
	if (!test_and_set_pending(&dw->work)) {
		heap_unreserve();
		return false;
	}
	return __queue_delayed_work(cpu, wq, dw, delay_us);
}

bool trcu_queue_delayed_work(struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
			     uint64_t delay_us)
{
	return trcu_queue_delayed_work_on(-1, wq, dw, delay_us);
}
