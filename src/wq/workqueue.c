/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: workqueues.  Owns a workqueue's life: allocation (its
 * pool_workqueues, manager and rescuer threads), the system workqueues, the
 * handle checks every API call makes, and destruction.
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

/* ---- Workqueues -------------------------------------------------------------------------- */


int start_manager_locked(void)
{
	if (wq_state.mgr_started)
		return 0;
	atomic_store_explicit(&wq_state.mgr_stop, false, memory_order_relaxed);
	if (wq_thread_create(&wq_state.mgr, manager_thread, NULL))
		return -EAGAIN;
	wq_state.mgr_started = true;
	return 0;
}

void wq_free_pwqs(struct trcu_workqueue *wq)
{
	for (int i = 0; i < wq->nr_pwqs; i++)
		free(wq->pwqs[i]);
	free(wq->pwqs);
	wq->pwqs = NULL;
	wq->nr_pwqs = 0;
}

static void wq_put_pools_locked(struct trcu_workqueue *wq)
{
	for (int i = 0; i < wq->nr_pwqs; i++)
		if (wq->pwqs[i])
			wq->pwqs[i]->pool->refcnt--;
}

/* A TRCU_WQ_MEM_RECLAIM workqueue's rescuer thread (wq_state.mutex held):
 * 0, or ENOMEM / EAGAIN. */
int start_rescuer_locked(struct trcu_workqueue *wq)
{
	struct worker *r = alloc_worker();

	if (!r)
		return ENOMEM;
	r->flags = WORKER_RESCUER;
	r->rescue_wq = wq;
	r->pool = wq->pwqs[0]->pool;
	wq->rescuer = r;
	if (wq_thread_create(&r->thread, rescuer_thread, r)) {
		wq->rescuer = NULL;
		recycle_worker(r);
		atomic_fetch_add_explicit(&wq_state.n_create_fail, 1, memory_order_relaxed);
		return EAGAIN;
	}
	r->joinable = true;
	return 0;
}

static struct trcu_workqueue *alloc_wq_locked(const char *name, unsigned int flags, int max_active,
					      enum trcu_wq_affn scope)
{
	struct trcu_workqueue *wq;
	const struct wq_topo *t = &wq_state.topo;
	bool unbound = flags & TRCU_WQ_UNBOUND, highpri = flags & TRCU_WQ_HIGHPRI;
	int err = ENOMEM;

	if (wq_init_locked()) {
		errno = ENOMEM;
		return NULL;
	}
	if (start_manager_locked()) {
		errno = EAGAIN;
		return NULL;
	}
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		goto fail_errno;
	atomic_store_explicit(&wq->magic, WQ_MAGIC, memory_order_relaxed);
	snprintf(wq->name, sizeof(wq->name), "%s", name);
	wq->flags = flags;
	wq->max_active = max_active ? max_active : TRCU_WQ_DFL_ACTIVE;
	if (scope == TRCU_WQ_AFFN_DFL)
		scope = (enum trcu_wq_affn)WQ_TUN(wq_affinity_scope);
	wq->scope = unbound ? scope : TRCU_WQ_AFFN_CPU;
	pthread_mutex_init(&wq->flush_mutex, NULL);
	pthread_mutex_init(&wq->mayday_lock, NULL);
	list_init(&wq->maydays);
	wq->nr_pwqs = unbound ? t->pt[wq->scope].nr_pods : t->nr_cpus;
	wq->pwqs = calloc((size_t)wq->nr_pwqs, sizeof(*wq->pwqs));
	if (!wq->pwqs)
		goto fail;
	for (int i = 0; i < wq->nr_pwqs; i++) {
		struct pool_workqueue *pwq = calloc(1, sizeof(*pwq));
		struct worker_pool *pool;

		if (!pwq)
			goto fail;
		pool = unbound ? get_pool_locked(-1, &t->pt[wq->scope].pod_cpus[i], highpri)
			       : get_pool_locked(i, NULL, highpri);
		if (!pool) {
			free(pwq);
			err = EAGAIN;
			goto fail;
		}
		pwq->pool = pool;
		pwq->wq = wq;
		pwq->max_active = wq->max_active;
		pwq->flush_color = -1;
		list_init(&pwq->inactive_works);
		list_init(&pwq->mayday_node);
		wq->pwqs[i] = pwq;
	}
	if (flags & TRCU_WQ_MEM_RECLAIM) {
		err = start_rescuer_locked(wq);
		if (err)
			goto fail;
	}
	wq->next = wq_state.wqs;
	wq_state.wqs = wq;
	return wq;
fail:
	if (wq->pwqs) {
		wq_put_pools_locked(wq);
		wq_free_pwqs(wq);
	}
	pthread_mutex_destroy(&wq->flush_mutex);
	pthread_mutex_destroy(&wq->mayday_lock);
	free(wq);
fail_errno:
	errno = err;
	return NULL;
}

struct trcu_workqueue *trcu_alloc_workqueue_scope(const char *name, unsigned int flags,
						  int max_active, enum trcu_wq_affn scope)
{
	struct trcu_workqueue *wq;

	if (!name) {
		sys_warn("trcu_alloc_workqueue: NULL name");
		errno = EINVAL;
		return NULL;
	}
	if (flags & ~TRCU_WQ_FLAGS_MASK) {
		sys_warn("trcu_alloc_workqueue(\"%s\"): unknown flags 0x%x (accepted: "
			  "TRCU_WQ_UNBOUND, TRCU_WQ_HIGHPRI, TRCU_WQ_MEM_RECLAIM)",
			  name, flags & ~TRCU_WQ_FLAGS_MASK);
		errno = EINVAL;
		return NULL;
	}
	if (max_active < 0 || max_active > TRCU_WQ_MAX_ACTIVE) {
		sys_warn("trcu_alloc_workqueue(\"%s\"): max_active %d refused (accepted: 0..%d, "
			  "0 = %d)", name, max_active, TRCU_WQ_MAX_ACTIVE, TRCU_WQ_DFL_ACTIVE);
		errno = EINVAL;
		return NULL;
	}
	if ((int)scope < TRCU_WQ_AFFN_DFL || scope >= TRCU_WQ_AFFN_NR) {
		sys_warn("trcu_alloc_workqueue(\"%s\"): affinity scope %d refused", name,
			  (int)scope);
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&wq_state.mutex);
	wq = alloc_wq_locked(name, flags, max_active, scope);
	pthread_mutex_unlock(&wq_state.mutex);
	return wq;
}

struct trcu_workqueue *trcu_alloc_workqueue(const char *name, unsigned int flags, int max_active)
{
	return trcu_alloc_workqueue_scope(name, flags, max_active, TRCU_WQ_AFFN_DFL);
}

struct trcu_workqueue *trcu_alloc_ordered_workqueue(const char *name, unsigned int flags)
{
	return trcu_alloc_workqueue_scope(name, flags | TRCU_WQ_UNBOUND, 1, TRCU_WQ_AFFN_SYSTEM);
}

static struct trcu_workqueue *system_wq_get(bool unbound)
{
	struct trcu_workqueue **slot;

	pthread_mutex_lock(&wq_state.mutex);
	slot = unbound ? &wq_state.system_unbound_wq : &wq_state.system_wq;
	if (!*slot)
		*slot = alloc_wq_locked(unbound ? "events_unbound" : "events",
					unbound ? TRCU_WQ_UNBOUND : 0, 0, TRCU_WQ_AFFN_DFL);
	pthread_mutex_unlock(&wq_state.mutex);
	return *slot;
}

struct trcu_workqueue *trcu_system_wq(void)
{
	return system_wq_get(false);
}

struct trcu_workqueue *trcu_system_unbound_wq(void)
{
	return system_wq_get(true);
}

/*
 * Checks a handle passed in by the caller.  0: usable; -EINVAL (NULL),
 * -ESHUTDOWN (destroyed) with a message; a pointer that is no workqueue at
 * all cannot be used safely: abort.
 */
int wq_check(struct trcu_workqueue *wq, const char *fn)
{
	if (!wq) {
		sys_warn("%s: NULL workqueue", fn);
		return -EINVAL;
	}
	uint32_t magic = atomic_load_explicit(&wq->magic, memory_order_relaxed);

	if (magic == WQ_MAGIC_DEAD) {
		/* Said once per workqueue: a racing producer may call often. */
		if (!atomic_exchange_explicit(&wq->warned_dead, true, memory_order_relaxed))
			sys_warn("%s: workqueue \"%s\" has been destroyed (refused; said once)",
				  fn, wq->name);
		return -ESHUTDOWN;
	}
	if (magic != WQ_MAGIC)
		sys_die("%s: %p is not a treercu workqueue (bad magic 0x%08x)", fn, (void *)wq,
			 magic);
	return 0;
}



/* Drain, then retire @wq (wq_state.mutex not held; @destroying set). */
void destroy_inner(struct trcu_workqueue *wq)
{
	int n = cancel_timers_of(wq);

	if (n)
		sys_warn("trcu_destroy_workqueue(\"%s\"): %d delayed work item%s still armed: "
			  "cancelled", wq->name, n, n == 1 ? "" : "s");
	drain_inner(wq);
	if (wq->rescuer) {
		/* Release: pairs with the rescuer's acquire load of rescuer_stop. */
		atomic_store_explicit(&wq->rescuer_stop, true, memory_order_release);
		atomic_fetch_add_explicit(&wq->rescuer_wake, 1, memory_order_release);
		sys_futex_wake(&wq->rescuer_wake, 1);
		pthread_join(wq->rescuer->thread, NULL);
		recycle_worker(wq->rescuer);
		wq->rescuer = NULL;
	}
	pthread_mutex_lock(&wq_state.mutex);
	atomic_store_explicit(&wq->state, WQ_DEAD, memory_order_relaxed);
	atomic_store_explicit(&wq->magic, WQ_MAGIC_DEAD, memory_order_relaxed);
	wq_put_pools_locked(wq);
	for (struct trcu_workqueue **pp = &wq_state.wqs; *pp; pp = &(*pp)->next) {
		if (*pp == wq) {
			*pp = wq->next;
			break;
		}
	}
	wq->next = wq_state.dead_wqs;
	wq_state.dead_wqs = wq;
	pthread_mutex_unlock(&wq_state.mutex);
}

static int __trcu_destroy_workqueue(struct trcu_workqueue *wq)
{
	int ret = wq_check(wq, "trcu_destroy_workqueue");

	if (ret)
		return -EINVAL;
	if (is_chained_work(wq)) {
		sys_warn("trcu_destroy_workqueue(\"%s\"): called from one of its own work items "
			  "(refused)", wq->name);
		return -EDEADLK;
	}
	pthread_mutex_lock(&wq_state.mutex);
	if (wq == wq_state.system_wq || wq == wq_state.system_unbound_wq) {
		pthread_mutex_unlock(&wq_state.mutex);
		sys_warn("trcu_destroy_workqueue(\"%s\"): a system workqueue is destroyed only "
			  "by trcu_wq_shutdown() (refused)", wq->name);
		return -EINVAL;
	}
	if (wq->destroying) {
		pthread_mutex_unlock(&wq_state.mutex);
		sys_warn("trcu_destroy_workqueue(\"%s\"): already being destroyed (refused)",
			  wq->name);
		return -EINVAL;
	}
	/* Queueing is refused from here on except chained work (see
	 * __queue_work()). */
	wq->destroying = true;
	atomic_store_explicit(&wq->state, WQ_DRAINING, memory_order_relaxed);
	pthread_mutex_unlock(&wq_state.mutex);
	destroy_inner(wq);
	return 0;
}

int trcu_destroy_workqueue(struct trcu_workqueue *wq)
{
	int cs = sys_cancel_disable();
	int ret = __trcu_destroy_workqueue(wq);

	sys_cancel_restore(cs);
	return ret;
}
