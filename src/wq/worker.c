/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: executing.  Owns the worker thread's loop (taking items
 * off the pool's worklist, running them, concurrency management, creating
 * the next worker when the pool needs one) and the rescuer threads of
 * TRCU_WQ_MEM_RECLAIM workqueues, which guarantee forward progress when no
 * worker can be created.
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

/* ---- Executing ----------------------------------------------------------------------- */

static void send_mayday(struct pool_workqueue *pwq);

/* @fn returned inside a read-side section: say so, and close it. */
static void report_leaked_section(struct trcu_work *work, trcu_work_func_t fn)
{
	unsigned int depth = rcu_close_leaked_sections();

	if (depth)
		sys_warn("work item %p (function %p) returned inside an RCU read-side critical "
			  "section (nesting depth %u); closed it", (void *)work,
			  (void *)(uintptr_t)fn, depth);
}

/* The kernel's process_one_work(); pool->lock held, dropped around the call. */
void process_one_work(struct worker *w, struct trcu_work *work)
{
	struct worker_pool *pool = w->pool;
	struct pool_workqueue *pwq = work->priv.pwq;
	uintptr_t d = __atomic_load_n(&work->priv.data, __ATOMIC_RELAXED);
	bool barrier = is_barrier(work);
	struct worker *wake;
	trcu_work_func_t fn;

	w->current_work = work;
	w->current_func = work->func;
	w->current_pwq = pwq;
	w->current_color = barrier ? -1 : work_color_of(d);
	w->current_start_ns = now_ns();
	pool->watchdog_ts = w->current_start_ns;
	busy_add(pool, w);
	list_del_init(&work->priv.entry);
	/* seq_cst: pairs with the manager's store before it sleeps without a
	 * deadline (see manager_thread()); the load is almost always false. */
	if (atomic_load_explicit(&wq_state.mgr_sleeping_long, memory_order_seq_cst)) {
		atomic_store_explicit(&wq_state.mgr_sleeping_long, false, memory_order_relaxed);
		wake_manager();
	}

	/* Chain kick: for unbound pools (nr_running is always 0) wake another
	 * idle worker if more work is pending.  Picked under the lock, woken
	 * after it is dropped (kick_pool_pick()). */
	wake = wake_locked_or_defer(kick_pool_pick(pool));

	set_work_pool_and_clear_pending(work, pool);
	if (!barrier)
		atomic_fetch_add_explicit(&pool->n_executed, 1, memory_order_relaxed);
	if (w->flags & WORKER_RESCUER)
		atomic_fetch_add_explicit(&pool->n_rescued, 1, memory_order_relaxed);
	pthread_mutex_unlock(&pool->lock);
	wake_worker(wake);

	fn = w->current_func;
	rcu_tsan_acquire(work);   /* after its queuers (src/tsan.h) */
	fn(work);   /* @work may be freed or re-queued from here on */
	rcu_tsan_release(&wq_tsan_works);   /* before the flushes that wait for it */
	if (TRCU_UNLIKELY(wq_forked_here))
		sys_die("fork() from a work item: the child returned from the item into the "
			 "workqueue; such a child may only exec or _exit");
	/* The kernel's "workqueue leaked ... RCU" check: an item that returned
	 * inside a section would hold up every later grace period. */
	if (TRCU_UNLIKELY(rcu_nesting(&trcu_reader_tls)))
		report_leaked_section(work, fn);

	pthread_mutex_lock(&pool->lock);
	if (w->flags & WORKER_CPU_INTENSIVE)
		worker_clr_flags(w, WORKER_CPU_INTENSIVE);
	busy_del(pool, w);
	w->current_work = NULL;
	w->current_func = NULL;
	w->current_pwq = NULL;
	if (!barrier)
		pwq_dec_nr_in_flight(pwq, w->current_color, true);
}

static void process_scheduled_works(struct worker *w)
{
	while (!list_empty(&w->scheduled))
		process_one_work(w, work_of(w->scheduled.next));
}

void pool_send_maydays(struct worker_pool *pool)
{
	struct pool_workqueue *last = NULL;

	for (struct trcu_wq_link *e = pool->worklist.next; e != &pool->worklist; e = e->next) {
		struct pool_workqueue *pwq = work_of(e)->priv.pwq;

		/* on_mayday is checked by send_mayday() under mayday_lock. */
		if (pwq && pwq != last && pwq->wq->rescuer)
			send_mayday(pwq);
		last = pwq;
	}
}


/*
 * The kernel's manage_workers()/maybe_create_worker(): a worker about to
 * run work while no idle worker is left creates one, so a spare is always
 * ready.  Returns true if it created one (the pool lock was dropped).  On
 * failure it records it and sends maydays; the worker then runs the work
 * itself, and the manager thread retries the creation.
 */
static bool manage_workers(struct worker *w)
{
	struct worker_pool *pool = w->pool;
	uint64_t now = now_ns();
	bool created;

	if (pool->manager_active || pool->nr_workers >= pool_max_workers(pool))
		return false;
	if (pool->create_fail_ns && now - pool->last_retry_ns < CREATE_COOLDOWN_NS)
		return false;
	pool->manager_active = true;
	pthread_mutex_unlock(&pool->lock);
	created = create_worker(pool) != NULL;
	pthread_mutex_lock(&pool->lock);
	pool->manager_active = false;
	if (created) {
		pool->create_fail_ns = 0;
	} else {
		if (!pool->create_fail_ns)
			pool->create_fail_ns = now;
		pool->last_retry_ns = now;
		pool_send_maydays(pool);
	}
	return created;
}

/* The kernel's worker_thread(). */
void *worker_thread(void *arg)
{
	struct worker *w = arg;
	struct worker_pool *pool = w->pool;

	current_worker = w;
	/* A work item that cancels its worker must not end it (internal.h). */
	sys_cancel_disable();
	worker_sleep(w);   /* until create_worker() kicks it */
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		if (w->flags & WORKER_DIE)
			break;
		worker_leave_idle(w);
recheck:
		if (!need_more_worker(pool))
			goto sleep;
		if (!may_start_working(pool) && manage_workers(w))
			goto recheck;
		worker_clr_flags(w, WORKER_PREP);
		do {
			struct trcu_work *work;

			if (list_empty(&pool->worklist))
				break;
			work = work_of(pool->worklist.next);
			if (assign_work(work, w, NULL))
				process_scheduled_works(w);
		} while (keep_working(pool));
		worker_set_flags(w, WORKER_PREP);
sleep:
		if (w->flags & WORKER_DIE)
			break;   /* shutdown caught it before it went idle */
		worker_enter_idle(w);
		pthread_mutex_unlock(&pool->lock);
		worker_sleep(w);
		pthread_mutex_lock(&pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	current_worker = NULL;
	return NULL;
}

static void worker_set_affinity(struct worker *w)
{
	struct worker_pool *pool = w->pool;
	cpu_set_t set;

	if (wq_state.topo.override)
		return;   /* virtual CPUs: nothing to pin to */
	CPU_ZERO(&set);
	if (pool->cpu >= 0) {
		CPU_SET(pool->cpu, &set);
	} else {
		for (int c = 0; c < wq_state.topo.nr_cpus && c < CPU_SETSIZE; c++)
			if (mask_test(&pool->cpus, c))
				CPU_SET(c, &set);
	}
	/* Best effort: a restricted cpuset may refuse it. */
	(void)pthread_setaffinity_np(w->thread, sizeof(set), &set);
}

/* The kernel's create_worker(): no pool lock held.  The new worker is
 * attached idle, then kicked. */
struct worker *create_worker(struct worker_pool *pool)
{
	struct worker *w = alloc_worker();

	if (!w)
		goto fail;
	w->pool = pool;
	w->flags = WORKER_PREP | (pool->unbound ? WORKER_UNBOUND : 0);
	pthread_mutex_lock(&pool->lock);
	list_add_tail(&w->node, &pool->workers);
	pool->nr_workers++;
	/* A newly attached worker starts out of nr_running (PREP); entering
	 * idle must not decrement it, so mark it idle by hand. */
	w->flags |= WORKER_IDLE;
	pool->nr_idle++;
	w->last_active_ns = now_ns();
	list_add(&w->idle_entry, &pool->idle_list);
	atomic_store_explicit(&w->wake, 0, memory_order_relaxed);
	pthread_mutex_unlock(&pool->lock);

	if (wq_thread_create(&w->thread, worker_thread, w)) {
		pthread_mutex_lock(&pool->lock);
		list_del_init(&w->idle_entry);
		list_del_init(&w->node);
		pool->nr_idle--;
		pool->nr_workers--;
		pthread_mutex_unlock(&pool->lock);
		recycle_worker(w);
		goto fail;
	}
	pthread_mutex_lock(&pool->lock);
	w->joinable = true;
	pthread_mutex_unlock(&pool->lock);
	worker_set_affinity(w);
	atomic_fetch_add_explicit(&wq_state.n_created, 1, memory_order_relaxed);
	wake_worker(w);
	return w;
fail:
	atomic_fetch_add_explicit(&wq_state.n_create_fail, 1, memory_order_relaxed);
	return NULL;
}

/* ---- Rescuer (forward progress for TRCU_WQ_MEM_RECLAIM) ------------------------------ */

/* Ask @pwq's workqueue's rescuer for help (pool->lock held). */
static void send_mayday(struct pool_workqueue *pwq)
{
	struct trcu_workqueue *wq = pwq->wq;

	if (!wq->rescuer)
		return;
	pthread_mutex_lock(&wq->mayday_lock);
	if (!pwq->on_mayday) {
		pwq->on_mayday = true;
		list_add_tail(&pwq->mayday_node, &wq->maydays);
		atomic_fetch_add_explicit(&wq_state.n_maydays, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&wq->mayday_lock);
	/* Release: pairs with the rescuer's acquire load before it sleeps. */
	atomic_fetch_add_explicit(&wq->rescuer_wake, 1, memory_order_release);
	sys_futex_wake(&wq->rescuer_wake, 1);
}

/* Run @pwq's works from its pool's worklist on the rescuer. */
static void rescue_pwq(struct worker *r, struct pool_workqueue *pwq)
{
	struct worker_pool *pool = pwq->pool;
	struct trcu_wq_link *e, *next;
	bool more = false;

	pthread_mutex_lock(&pool->lock);
	r->pool = pool;   /* attach: process_one_work() uses r->pool */
	for (e = pool->worklist.next; e != &pool->worklist; e = next) {
		struct trcu_work *work = work_of(e);

		next = e->next;
		if (work->priv.pwq == pwq)
			assign_work(work, r, &next);
	}
	process_scheduled_works(r);
	for (e = pool->worklist.next; e != &pool->worklist && !more; e = e->next)
		more = work_of(e)->priv.pwq == pwq;
	/* Still short of workers and more of ours queued: stay on the list. */
	if (more && need_to_create_worker(pool))
		send_mayday(pwq);
	pthread_mutex_unlock(&pool->lock);
}

void *rescuer_thread(void *arg)
{
	struct worker *r = arg;
	struct trcu_workqueue *wq = r->rescue_wq;

	current_worker = r;
	sys_cancel_disable();   /* as worker_thread() */
	for (;;) {
		/* Acquire: pairs with the release increment in send_mayday(). */
		uint32_t seq = atomic_load_explicit(&wq->rescuer_wake, memory_order_acquire);

		pthread_mutex_lock(&wq->mayday_lock);
		while (!list_empty(&wq->maydays)) {
			struct pool_workqueue *pwq =
				container_of(wq->maydays.next, struct pool_workqueue, mayday_node);

			list_del_init(&pwq->mayday_node);
			pwq->on_mayday = false;
			pthread_mutex_unlock(&wq->mayday_lock);
			rescue_pwq(r, pwq);
			pthread_mutex_lock(&wq->mayday_lock);
		}
		pthread_mutex_unlock(&wq->mayday_lock);
		if (atomic_load_explicit(&wq->rescuer_stop, memory_order_acquire))
			break;
		sys_futex_wait(&wq->rescuer_wake, seq, -1);
	}
	current_worker = NULL;
	return NULL;
}
