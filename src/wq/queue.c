/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: queueing.  Owns the pool_workqueue accounting (active
 * and inactive items, flush colours), the work item's data word and its
 * PENDING ownership (with the per-thread owner records a fork() child
 * needs), choosing the CPU and pool for an item, and the queueing API.
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

/* ---- pool_workqueue accounting (pool->lock held) ---------------------------------- */


/* Activate the first inactive work: move it (and its linked barriers) to the
 * worklist.  Returns true if one was activated. */
static bool pwq_activate_first_inactive(struct pool_workqueue *pwq)
{
	struct trcu_work *work;

	if (list_empty(&pwq->inactive_works) || pwq->nr_active >= pwq->max_active)
		return false;
	work = work_of(pwq->inactive_works.next);
	/* Relaxed RMW: INACTIVE changes only under this pool lock; the RMW keeps
	 * a concurrent fetch_or of PENDING by a queuer intact. */
	__atomic_fetch_and(&work->priv.data, ~WORK_INACTIVE, __ATOMIC_RELAXED);
	pwq->nr_active++;
	move_linked_works(work, &pwq->pool->worklist);
	return true;
}

/*
 * A work of @pwq and colour @color left the pool (ran or was cancelled).
 * @active: it was counted in nr_active.  Completes a flush waiting for the
 * colour.  Returns true if an inactive work was activated (the caller must
 * make sure a worker sees it).
 */
bool pwq_dec_nr_in_flight(struct pool_workqueue *pwq, int color, bool active)
{
	bool activated = false;

	if (active) {
		pwq->nr_active--;
		activated = pwq_activate_first_inactive(pwq);
	}
	if (--pwq->nr_in_flight[color] == 0 && pwq->flush_color == color) {
		struct trcu_workqueue *wq = pwq->wq;

		pwq->flush_color = -1;
		/* acq_rel: the last decrement orders every pwq's completions
		 * before the flusher's wake-up (pairs with the acquire load in
		 * flush_workqueue()). */
		if (atomic_fetch_sub_explicit(&wq->nr_pwqs_to_flush, 1, memory_order_acq_rel) == 1) {
			atomic_store_explicit(&wq->flush_done, 1, memory_order_release);
			sys_futex_wake(&wq->flush_done, 1);
		}
	}
	return activated;
}

/* Put a work we own (PENDING) on a list of @pwq's pool (locked). */
void insert_work(struct pool_workqueue *pwq, struct trcu_work *work,
			struct trcu_wq_link *head, uintptr_t extra)
{
	work->priv.pwq = pwq;
	list_add_tail(&work->priv.entry, head);
	/* Release: pairs with the acquire load in work_data() (flush/cancel
	 * read the pool from the word, then lock it and re-check). */
	__atomic_store_n(&work->priv.data,
			 (uintptr_t)pwq->pool | WORK_PENDING | WORK_QUEUED | extra,
			 __ATOMIC_RELEASE);
}

/*
 * The item this thread owns PENDING of while no list or timer holds it
 * (between test_and_set_pending() or a grab and the insertion, arming or
 * release): a fork() child drops the pending state of the items the
 * parent's threads held so, which nothing else would ever clear there
 * (wq_fork_child()).  Per thread, so the queueing path shares no
 * cache line for it.  Set before the ownership is taken and cleared after
 * it is given up, under the lock (pool, timer) that makes it visible, or
 * before the call returns; the item is alive all that time (a pending item
 * must stay allocated).  Relaxed: the fork snapshot is ordered by those
 * locks, which the prepare step holds, and by test_and_set_pending()'s
 * seq_cst RMW after the store.  A thread whose record cannot be allocated
 * goes without (its items are then not covered in a child).
 */
__thread struct wq_owner *wq_owner_self;
/* Set in a fork() child whose only thread is a worker (a work item called
 * fork()): that child may only exec or _exit (process_one_work()). */
__thread bool wq_forked_here;

static void wq_owner_exit(void *arg)
{
	struct wq_owner *o = arg;

	pthread_mutex_lock(&wq_state.owner_lock);
	for (struct wq_owner **pp = &wq_state.owners; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	pthread_mutex_unlock(&wq_state.owner_lock);
	free(o);
}

void wq_own(struct trcu_work *work)
{
	struct wq_owner *o = wq_owner_self;

	if (TRCU_UNLIKELY(!o)) {
		if (!work || !(o = calloc(1, sizeof(*o))))
			return;
		pthread_mutex_lock(&wq_state.owner_lock);
		if (!wq_state.owner_key_made &&
		    !pthread_key_create(&wq_state.owner_key, wq_owner_exit))
			wq_state.owner_key_made = true;
		if (!wq_state.owner_key_made) {
			pthread_mutex_unlock(&wq_state.owner_lock);
			free(o);
			return;
		}
		o->next = wq_state.owners;
		wq_state.owners = o;
		pthread_mutex_unlock(&wq_state.owner_lock);
		pthread_setspecific(wq_state.owner_key, o);
		wq_owner_self = o;
	}
	atomic_store_explicit(&o->work, work, memory_order_relaxed);
}

/* true if we now own PENDING (it was clear). */
bool test_and_set_pending(struct trcu_work *work)
{
	bool ours;

	wq_own(work);
	/* ThreadSanitizer: the queuer's writes before the work function,
	 * also when the work is pending already (src/tsan.h). */
	rcu_tsan_release(work);
	/* seq_cst: pairs with set_work_pool_and_clear_pending(). */
	ours = !(__atomic_fetch_or(&work->priv.data, WORK_PENDING, __ATOMIC_SEQ_CST) &
		 WORK_PENDING);
	if (!ours)
		wq_own(NULL);
	return ours;
}

/* ---- Queueing ----------------------------------------------------------------------- */

static int wq_select_cpu(int cpu)
{
	int n = wq_state.topo.nr_cpus;

	if (cpu >= 0)
		return cpu;
	if (thread_cpu_hint >= 0 && thread_cpu_hint < n)
		return thread_cpu_hint;
	cpu = sched_getcpu();
	return cpu < 0 ? 0 : cpu % n;
}

struct pool_workqueue *wq_cpu_pwq(struct trcu_workqueue *wq, int cpu)
{
	if (wq->flags & TRCU_WQ_UNBOUND)
		return wq->pwqs[wq_state.topo.pt[wq->scope].cpu_pod[cpu]];
	return wq->pwqs[cpu];
}

/*
 * The kernel's __queue_work(): the caller owns PENDING.  Returns true if
 * queued; false (PENDING released, errno ESHUTDOWN) if the workqueue is
 * destroyed, or draining and this is not chained work.
 */

bool __queue_work(int cpu, struct trcu_workqueue *wq, struct trcu_work *work)
{
	struct pool_workqueue *pwq;
	struct worker_pool *pool, *last_pool;
	struct worker *wake = NULL;
	uintptr_t d = work_data(work);
	int state;

	wq_fork_respawn();
	cpu = wq_select_cpu(cpu);
	pwq = wq_cpu_pwq(wq, cpu);
	pool = pwq->pool;

	/*
	 * Non-reentrancy across pools: if the item is still running on the pool
	 * it last ran on, for this workqueue, queue it there so that it runs
	 * after the running instance (assign_work() defers it to that worker).
	 */
	last_pool = data_pool(d);
	if (last_pool && last_pool != pool) {
		struct worker *w;

		pthread_mutex_lock(&last_pool->lock);
		w = find_worker_executing_work(last_pool, work);
		if (w && w->current_pwq && w->current_pwq->wq == wq) {
			pwq = w->current_pwq;
			pool = last_pool;
		} else {
			pthread_mutex_unlock(&last_pool->lock);
			pthread_mutex_lock(&pool->lock);
		}
	} else {
		pthread_mutex_lock(&pool->lock);
	}

	/* Under the pool lock: drain_workqueue()/destroy set the state before
	 * they lock every pool to flush, so an insert that gets here after the
	 * flush passed this pool sees the new state. */
	state = atomic_load_explicit(&wq->state, memory_order_relaxed);
	if (state == WQ_DEAD || (state == WQ_DRAINING && !is_chained_work(wq))) {
		pthread_mutex_unlock(&pool->lock);
		set_work_pool_and_clear_pending(work, last_pool);
		wq_own(NULL);
		atomic_fetch_add_explicit(&wq_state.n_refused, 1, memory_order_relaxed);
		errno = ESHUTDOWN;
		return false;
	}

	{
		int color = pwq->work_color;
		uintptr_t cbit = color ? WORK_COLOR : 0;

		pwq->nr_in_flight[color]++;
		if (pwq->nr_active < pwq->max_active) {
			pwq->nr_active++;
			insert_work(pwq, work, &pool->worklist, cbit);
			wake = wake_locked_or_defer(kick_pool_pick(pool));
		} else {
			insert_work(pwq, work, &pwq->inactive_works, cbit | WORK_INACTIVE);
		}
	}
	atomic_fetch_add_explicit(&pool->n_queued, 1, memory_order_relaxed);
	wq_own(NULL);   /* on a list now: before the unlock, it may run and be freed */
	pthread_mutex_unlock(&pool->lock);
	/* Seed 001: the wake-up (a futex system call, the kernel's
	 * wake_up_process()) happens after the pool lock is dropped. */
	wake_worker(wake);
	return true;
}


/* ---- Queueing API ------------------------------------------------------------------------ */

bool check_queue_args(const char *fn, int cpu, struct trcu_workqueue *wq,
			     struct trcu_work *work)
{
	int ret;

	if (!work || !work->func) {
		sys_warn("%s: %s", fn, work ? "work item has no function (not initialised?)"
					     : "NULL work item");
		errno = EINVAL;
		return false;
	}
	ret = wq_check(wq, fn);
	if (ret) {
		errno = -ret;
		return false;
	}
	if (cpu < -1 || cpu >= wq_state.topo.nr_cpus) {
		sys_warn("%s: CPU %d out of range (0..%d, or -1 for the caller's)", fn, cpu,
			  wq_state.topo.nr_cpus - 1);
		errno = EINVAL;
		return false;
	}
	return true;
}

bool trcu_queue_work_on(int cpu, struct trcu_workqueue *wq, struct trcu_work *work)
{
	if (!check_queue_args("trcu_queue_work", cpu, wq, work))
		return false;
	if (!test_and_set_pending(work))
		return false;
	return __queue_work(cpu, wq, work);
}

bool trcu_queue_work(struct trcu_workqueue *wq, struct trcu_work *work)
{
	return trcu_queue_work_on(-1, wq, work);
}

bool trcu_queue_work_node(int node, struct trcu_workqueue *wq, struct trcu_work *work)
{
	const struct wq_topo *t = &wq_state.topo;
	int cpu, pick = -1;

	if (!check_queue_args("trcu_queue_work_node", -1, wq, work))
		return false;
	cpu = wq_select_cpu(-1);
	if (t->node_of[cpu] == node) {
		pick = cpu;
	} else {
		for (int c = 0; c < t->nr_cpus && pick < 0; c++)
			if (t->node_of[c] == node)
				pick = c;
	}
	if (pick < 0) {
		sys_warn("trcu_queue_work_node: no CPU in NUMA node %d", node);
		errno = EINVAL;
		return false;
	}
	if (!test_and_set_pending(work))
		return false;
	return __queue_work(pick, wq, work);
}
