/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: worker pools and their workers.  Owns the worker
 * structures (allocation, recycling, wake-up and sleep), worker flags and
 * the idle list, the busy hash of workers executing an item, linked works,
 * and the pools themselves (creation and sharing between workqueues).
 * Every function here that touches a pool runs under its pool->lock unless
 * it says otherwise.
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

/* ---- Threads and worker structures ------------------------------------------------ */

/* pthread_create() with the test hook's injected failures. */
int wq_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int f = atomic_load_explicit(&wq_state.fail_create, memory_order_relaxed);

	while (f > 0) {
		/* Consume one injected failure; relaxed: a counter on its own. */
		if (atomic_compare_exchange_weak_explicit(&wq_state.fail_create, &f, f - 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return EAGAIN;
	}
	if (f < 0)
		return EAGAIN;
	return pthread_create(t, NULL, fn, arg);
}

struct worker *alloc_worker(void)
{
	struct worker *w;

	pthread_mutex_lock(&wq_state.free_lock);
	w = wq_state.free_workers;
	if (w) {
		wq_state.free_workers = w->next_free;
	} else {
		w = calloc(1, sizeof(*w));
		if (w) {
			w->next_all = wq_state.all_workers;
			wq_state.all_workers = w;
		}
	}
	if (w)
		w->id = ++wq_state.worker_seq;
	pthread_mutex_unlock(&wq_state.free_lock);
	if (!w)
		return NULL;
	list_init(&w->idle_entry);
	list_init(&w->node);
	list_init(&w->scheduled);
	w->hnext = NULL;
	w->current_work = NULL;
	w->current_func = NULL;
	w->current_pwq = NULL;
	w->joinable = false;
	w->rescue_wq = NULL;
	w->next_free = NULL;
	return w;
}

/* Structures are recycled, never freed before shutdown: a waker that picked
 * this worker under a pool lock may still write its futex word. */
void recycle_worker(struct worker *w)
{
	pthread_mutex_lock(&wq_state.free_lock);
	w->next_free = wq_state.free_workers;
	wq_state.free_workers = w;
	pthread_mutex_unlock(&wq_state.free_lock);
}

/*
 * The wake_up_process() of treercu: a worker sleeps on its futex word while
 * it is 0.  Exchange (acq_rel) pairs with the acquire load in worker_sleep():
 * whatever the waker queued before is visible to the woken worker.  Only the
 * 0 -> 1 transition issues the system call; kicking a worker already kicked
 * is a cheap no-op, as waking a running task is in the kernel.
 */
void wake_worker(struct worker *w)
{
	if (!w)
		return;
	if (atomic_exchange_explicit(&w->wake, 1, memory_order_acq_rel) == 0) {
		sys_futex_wake(&w->wake, 1);
		atomic_fetch_add_explicit(&w->pool->n_wakeups, 1, memory_order_relaxed);
	}
}

void worker_sleep(struct worker *w)
{
	/* Acquire: pairs with the exchange in wake_worker(). */
	while (atomic_load_explicit(&w->wake, memory_order_acquire) == 0)
		sys_futex_wait(&w->wake, 0, -1);
}

void wake_manager(void)
{
	/* Release: pairs with the manager's acquire load of mgr_futex. */
	atomic_fetch_add_explicit(&wq_state.mgr_futex, 1, memory_order_release);
	sys_futex_wake(&wq_state.mgr_futex, 1);
}

/* ---- Worker flags and the idle list (pool->lock held) ----------------------------- */

void worker_set_flags(struct worker *w, unsigned int f)
{
	struct worker_pool *pool = w->pool;

	/* A worker leaves concurrency management when it gains its first
	 * NOT_RUNNING flag. */
	if ((f & WORKER_NOT_RUNNING) && !(w->flags & WORKER_NOT_RUNNING))
		pool->nr_running--;
	w->flags |= f;
}

void worker_clr_flags(struct worker *w, unsigned int f)
{
	struct worker_pool *pool = w->pool;
	unsigned int old = w->flags;

	w->flags &= ~f;
	if ((old & WORKER_NOT_RUNNING) && !(w->flags & WORKER_NOT_RUNNING))
		pool->nr_running++;
}

void worker_enter_idle(struct worker *w)
{
	struct worker_pool *pool = w->pool;

	worker_set_flags(w, WORKER_IDLE);
	pool->nr_idle++;
	w->last_active_ns = now_ns();
	/* Most recently idle first: first_idle_worker() takes the head. */
	list_add(&w->idle_entry, &pool->idle_list);
	/* Relaxed: ordered by the pool lock against any kicker that picks this
	 * worker (kick_pool_pick() runs under the same lock). */
	atomic_store_explicit(&w->wake, 0, memory_order_relaxed);
}

void worker_leave_idle(struct worker *w)
{
	struct worker_pool *pool = w->pool;

	if (!(w->flags & WORKER_IDLE))
		return;
	worker_clr_flags(w, WORKER_IDLE);
	pool->nr_idle--;
	list_del_init(&w->idle_entry);
}

int pool_max_workers(struct worker_pool *pool)
{
	unsigned int m = (unsigned int)WQ_TUN(wq_max_workers);

	if (m)
		return (int)m;
	return pool->nr_pod_cpus * 2 > 4 ? pool->nr_pod_cpus * 2 : 4;
}

/* Wake @w now if the wake-under-lock switch is on; returns what is left to
 * wake after the unlock. */
struct worker *wake_locked_or_defer(struct worker *w)
{
	if (w && wake_under_lock()) {
		wake_worker(w);
		return NULL;
	}
	return w;
}

/* ---- Busy workers, linked works (pool->lock held) --------------------------------- */

static unsigned int busy_slot(const struct trcu_work *work)
{
	uintptr_t p = (uintptr_t)work;

	return (unsigned int)((p >> 4) ^ (p >> 12)) % BUSY_HASH;
}

void busy_add(struct worker_pool *pool, struct worker *w)
{
	unsigned int s = busy_slot(w->current_work);

	w->hnext = pool->busy_hash[s];
	pool->busy_hash[s] = w;
}

void busy_del(struct worker_pool *pool, struct worker *w)
{
	struct worker **pp = &pool->busy_hash[busy_slot(w->current_work)];

	while (*pp && *pp != w)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = w->hnext;
	w->hnext = NULL;
}

/* The kernel's find_worker_executing_work(): same item and same function. */
struct worker *find_worker_executing_work(struct worker_pool *pool, struct trcu_work *work)
{
	for (struct worker *w = pool->busy_hash[busy_slot(work)]; w; w = w->hnext)
		if (w->current_work == work && w->current_func == work->func)
			return w;
	return NULL;
}

/* Move @work and the barriers linked after it to the tail of @head.
 * Returns the entry that followed the last one moved. */
struct trcu_wq_link *move_linked_works(struct trcu_work *work, struct trcu_wq_link *head)
{
	struct trcu_wq_link *e = &work->priv.entry, *n;

	for (;;) {
		struct trcu_work *cur = work_of(e);

		n = e->next;
		list_move_tail(e, head);
		if (!(__atomic_load_n(&cur->priv.data, __ATOMIC_RELAXED) & WORK_LINKED))
			break;
		e = n;
	}
	return n;
}

/* The kernel's assign_work(): give @work to @w unless another worker of the
 * pool is already running it, in which case it goes to that worker's
 * scheduled list (a work item never runs concurrently with itself). */
bool assign_work(struct trcu_work *work, struct worker *w, struct trcu_wq_link **nextp)
{
	struct worker *collision = find_worker_executing_work(w->pool, work);
	struct trcu_wq_link *n;

	if (collision) {
		n = move_linked_works(work, &collision->scheduled);
		if (nextp)
			*nextp = n;
		return false;
	}
	n = move_linked_works(work, &w->scheduled);
	if (nextp)
		*nextp = n;
	return true;
}


/* ---- Pools ------------------------------------------------------------------------------ */

static struct worker_pool *pool_new(int cpu, const struct wq_cpumask *cpus, bool highpri)
{
	struct worker_pool *pool;

	if (wq_state.nr_pools == wq_state.cap_pools) {
		int cap = wq_state.cap_pools ? wq_state.cap_pools * 2 : 16;
		struct worker_pool **p = realloc(wq_state.pools, (size_t)cap * sizeof(*p));

		if (!p)
			return NULL;
		wq_state.pools = p;
		wq_state.cap_pools = cap;
	}
	pool = wq_state.retired_pools;
	if (pool) {
		/* Under its lock: a stale data word's reader may hold it. */
		wq_state.retired_pools = pool->next_retired;
		pthread_mutex_lock(&pool->lock);
		memset(&pool->id, 0, sizeof(*pool) - offsetof(struct worker_pool, id));
	} else {
		pool = aligned_alloc(POOL_ALIGN, sizeof(*pool));
		if (!pool)
			return NULL;
		memset(pool, 0, sizeof(*pool));
		pthread_mutex_init(&pool->lock, NULL);
		pthread_mutex_lock(&pool->lock);
	}
	list_init(&pool->worklist);
	list_init(&pool->idle_list);
	list_init(&pool->workers);
	pool->id = wq_state.nr_pools;
	pool->cpu = cpu;
	pool->unbound = cpu < 0;
	pool->highpri = highpri;
	if (cpus)
		pool->cpus = *cpus;
	else
		mask_set(&pool->cpus, cpu);
	pool->nr_pod_cpus = mask_weight(&pool->cpus);
	pool->watchdog_ts = now_ns();
	pthread_mutex_unlock(&pool->lock);
	wq_state.pools[wq_state.nr_pools++] = pool;
	return pool;
}

/*
 * A reference to the pool with these attributes (wq_state.mutex held):
 * per-CPU pools by (cpu, highpri), unbound ones by (CPU set, highpri), so
 * workqueues with identical attributes share pools, and scopes whose pods
 * coincide (cpu and smt without SMT) share them too, as in the kernel.
 */
struct worker_pool *get_pool_locked(int cpu, const struct wq_cpumask *cpus, bool highpri)
{
	struct worker_pool *pool = NULL;
	int nr_workers;

	for (int i = 0; i < wq_state.nr_pools && !pool; i++) {
		struct worker_pool *p = wq_state.pools[i];

		if (p->highpri != highpri)
			continue;
		if (cpu >= 0 ? p->cpu == cpu : (p->cpu < 0 && !memcmp(&p->cpus, cpus, sizeof(*cpus))))
			pool = p;
	}
	if (!pool)
		pool = pool_new(cpu, cpus, highpri);
	if (!pool)
		return NULL;
	pthread_mutex_lock(&pool->lock);
	nr_workers = pool->nr_workers;
	pthread_mutex_unlock(&pool->lock);
	/* Every referenced pool keeps at least one worker. */
	if (!nr_workers && !create_worker(pool))
		return NULL;
	pool->refcnt++;
	return pool;
}
