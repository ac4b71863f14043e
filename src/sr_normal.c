/* SPDX-License-Identifier: MIT */
/*
 * synchronize_rcu() woken straight from the grace period (seeds 003, 004):
 * the kernel's rcu_sr_normal_* machinery.
 *
 * One lock-free LIFO list (srs_next) of waiters.  At each GP init a wait-head
 * sentinel is pushed, so everything older than it waits for this GP while
 * new callers keep pushing in front of it:
 *
 *   srs_next -> [new callers] -> W2 -> [GP2's callers] -> W1 -> [GP1's ...]
 *                               ^wait tail                ^done tail
 *
 * At GP cleanup the driver wakes up to sr_wake_max of the GP's callers
 * itself, oldest first (the kernel: 5, newest first), makes the wait tail
 * the done tail, and queues a cleanup work item (on a TRCU_WQ_MEM_RECLAIM
 * workqueue, so it runs even when no worker thread can be created) that
 * detaches everything older than the done tail, wakes the rest and returns
 * wait heads to their pool.
 *
 * The driver (init, cleanup) runs under rcu_state.gp_mutex, so wait_tail is
 * its alone; done_tail is handed to the cleanup work with release/acquire.
 * The work may see an old or a new done tail: an old one only means the
 * newer callers wait for the next run of the work, which the cleanup that
 * published the newer tail has queued.
 *
 * The workqueue subsystem frees every workqueue when it shuts down, at exit
 * before trcu_shutdown() when trcu_sync_wq was its first use (its atexit
 * handler is registered later, so it runs earlier), and GPs may still end
 * after that.  Its shutdown notifier clears srs.sync_wq under wq_lock, which
 * the driver holds from loading the handle to the end of its queueing, so
 * nobody queues on freed memory; from then on the driver cleans up inline.
 * The work queued before is run by the shutdown's drain.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include <treercu/workqueue.h>

#include "internal.h"
#include "sr_normal.h"
#include "trace.h"

#define SR_NORMAL_GP_WAIT_HEAD_MAX 5

struct sr_wait_head {
	struct sr_node node;
	_Atomic int inuse;
};

static struct {
	_Atomic(struct sr_node *) srs_next;       /* the list (LIFO) */
	struct sr_node *srs_wait_tail;            /* under gp_mutex */
	_Atomic(struct sr_node *) srs_done_tail;  /* driver -> cleanup work */
	struct sr_wait_head wait_heads[SR_NORMAL_GP_WAIT_HEAD_MAX];
	struct trcu_work cleanup_work;
	/* Under wq_lock, with wq_gone.  (_Atomic only because
	 * tests/model/test_sync_list_states.c stores to it; relaxed under the lock.) */
	_Atomic(struct trcu_workqueue *) sync_wq;
	bool wq_gone;                             /* subsystem shut down: inline */
	bool wq_notifier;                         /* sr_wq_shutdown() registered */
	pthread_mutex_t wq_lock;
	pthread_mutex_t cleanup_lock;             /* one cleanup pass at a time */
	_Atomic int cleanups_pending;             /* queued or running works */
	_Atomic long nr_waiting;                  /* waiters not yet returned */
	_Atomic long n_direct, n_deferred, n_no_head, n_inline;
} srs = {
	.wq_lock = PTHREAD_MUTEX_INITIALIZER,
	.cleanup_lock = PTHREAD_MUTEX_INITIALIZER,
};

static bool rcu_sr_is_wait_head(struct sr_node *n)
{
	return n->is_wait_head;
}

static struct sr_node *rcu_sr_get_wait_head(void)
{
	for (int i = 0; i < SR_NORMAL_GP_WAIT_HEAD_MAX; i++) {
		struct sr_wait_head *wh = &srs.wait_heads[i];
		int expect = 0;

		/* Acquire: pairs with the release in rcu_sr_put_wait_head(): the
		 * cleanup work is done with the node before we reuse it. */
		if (atomic_compare_exchange_strong_explicit(&wh->inuse, &expect, 1,
							    memory_order_acquire,
							    memory_order_relaxed)) {
			wh->node.is_wait_head = true;
			return &wh->node;
		}
	}
	return NULL;
}

static void rcu_sr_put_wait_head(struct sr_node *n)
{
	struct sr_wait_head *wh = (struct sr_wait_head *)((char *)n -
							  offsetof(struct sr_wait_head, node));

	/* Release: pairs with the acquire in rcu_sr_get_wait_head(). */
	atomic_store_explicit(&wh->inuse, 0, memory_order_release);
}

/* llist_add: push at the head. */
static void sr_llist_add(struct sr_node *n)
{
	struct sr_node *first = atomic_load_explicit(&srs.srs_next, memory_order_relaxed);

	do {
		atomic_store_explicit(&n->next, first, memory_order_relaxed);
		/* seq_cst (a release at least): the node's fields before its
		 * publication; pairs with the acquire loads of srs_next. */
	} while (!atomic_compare_exchange_weak_explicit(&srs.srs_next, &first, n,
							memory_order_seq_cst,
							memory_order_relaxed));
}

/* ->done: SR_WAITING, then SR_ASLEEP once the waiter sleeps on the futex,
 * then SR_DONE.  Only a waiter found asleep costs a futex wake: not the
 * driver waking its own node, nor a waiter still on its way to sleep (the
 * idle synchronize_rcu() paid a syscall for its own node: 0.85 us vs 0.62
 * on the futex path, `treercu scale --callers 1`). */
enum { SR_WAITING = 0, SR_DONE = 1, SR_ASLEEP = 2 };

/* Wake one waiter.  After the exchange the waiter may return and reuse its
 * node's memory: only the address is used afterwards (futex wake). */
static void rcu_sr_normal_complete(struct sr_node *n)
{
	/* Counted first, as in wakeme_after_rcu(). */
	rcu_note_sync_wake();
	/* Release: the GP's end and the count before the waiter returns;
	 * pairs with the acquire loads in rcu_sr_wait_timeout().  Acquire:
	 * an SR_ASLEEP read here follows the waiter's CAS, so its futex wait
	 * is either not yet entered (it then sees SR_DONE and does not
	 * sleep) or woken below. */
	uint32_t was = atomic_exchange_explicit(&n->done, SR_DONE, memory_order_acq_rel);

	TRACE_RECORD("sr_wake", was == SR_ASLEEP);
	if (was == SR_ASLEEP)
		sys_futex_wake(&n->done, 1);
}

/* Add a waiter (before its GP is requested: the GP that satisfies the
 * request starts later, and its init covers this node). */
void rcu_sr_normal_add_req(struct sr_node *n)
{
	atomic_store_explicit(&n->done, SR_WAITING, memory_order_relaxed);
	n->is_wait_head = false;
	atomic_fetch_add_explicit(&srs.nr_waiting, 1, memory_order_seq_cst);
	sr_llist_add(n);
}

/*
 * How many waiters have not returned yet (a caller that drove counts its own
 * node)?  A count, not a look at the list: only the GP driver (under
 * gp_mutex) may dereference list nodes, because a woken waiter's node (on
 * its stack) is gone as soon as it returns.
 */
long rcu_sr_nr_waiting(void)
{
	return atomic_load_explicit(&srs.nr_waiting, memory_order_seq_cst);
}

bool rcu_sr_waiters(void)
{
	return rcu_sr_nr_waiting() > 0;
}

/* Sleep until woken or timeout_ns (< 0: no limit); true once woken. */
bool rcu_sr_wait_timeout(struct sr_node *n, long timeout_ns)
{
	long deadline = timeout_ns < 0 ? 0 : sys_now_ns() + timeout_ns;

	for (;;) {
		/* Acquire: pairs with the exchange in rcu_sr_normal_complete(). */
		uint32_t v = atomic_load_explicit(&n->done, memory_order_acquire);
		long left = timeout_ns < 0 ? -1 : deadline - sys_now_ns();

		if (v == SR_DONE)
			break;
		if (timeout_ns >= 0 && left <= 0) {
			/* Awake again: a waker need not make the syscall (if
			 * it read ASLEEP already, the wake is just spurious). */
			if (v == SR_ASLEEP)
				atomic_compare_exchange_strong_explicit(&n->done, &v, SR_WAITING,
									memory_order_relaxed,
									memory_order_relaxed);
			return false;
		}
		/* Announce the sleep; a failed CAS read SR_DONE (or SR_ASLEEP,
		 * from an earlier round), rechecked above. */
		if (v == SR_WAITING &&
		    !atomic_compare_exchange_strong_explicit(&n->done, &v, SR_ASLEEP,
							     memory_order_acq_rel,
							     memory_order_acquire))
			continue;
		sys_futex_wait(&n->done, SR_ASLEEP, left);
	}
	atomic_fetch_sub_explicit(&srs.nr_waiting, 1, memory_order_relaxed);
	return true;
}

bool rcu_sr_done(struct sr_node *n)
{
	return atomic_load_explicit(&n->done, memory_order_acquire) == SR_DONE;
}

static void rcu_sr_normal_cleanup_locked(void);

/*
 * GP init (driver, gp_mutex held): cover every waiter added so far with a
 * new wait head.  Returns false when waiters could not be covered because
 * every wait head is still in use (the caller then asks for another GP, as
 * the kernel's start_new_poll does).
 */
bool rcu_sr_normal_gp_init(void)
{
	/* seq_cst (acquire at least: pairs with sr_llist_add(); the nodes'
	 * ->next are valid): when nothing is pushed below, this load must not
	 * pass the seq_cst sr_init_seq store before it (store buffering), or a
	 * caller pushing right after could miss both. */
	struct sr_node *first = atomic_load_explicit(&srs.srs_next, memory_order_seq_cst);
	struct sr_node *wh;

	if (!first || rcu_sr_is_wait_head(first))
		return true;   /* nobody new to cover */
	wh = rcu_sr_get_wait_head();
	if (!wh) {
		/*
		 * Every wait head waits for the cleanup work.  Do its job here
		 * (serialized with it by cleanup_lock) rather than start GPs
		 * that cover nobody while holding gp_mutex: that starved the
		 * work (helper's seeds 004 run: 2M empty GP inits).
		 */
		atomic_fetch_add_explicit(&srs.n_no_head, 1, memory_order_relaxed);
		pthread_mutex_lock(&srs.cleanup_lock);
		rcu_sr_normal_cleanup_locked();
		pthread_mutex_unlock(&srs.cleanup_lock);
		wh = rcu_sr_get_wait_head();
		if (!wh)
			return false;
	}
	sr_llist_add(wh);
	srs.srs_wait_tail = wh;
	return true;
}

/* Wake everything older than the done tail and recycle the wait heads
 * found there.  Caller holds cleanup_lock. */
static void rcu_sr_normal_cleanup_locked(void)
{
	/* Acquire: pairs with the release in rcu_sr_normal_gp_cleanup(): the
	 * driver's direct wakes and unlinks are visible. */
	struct sr_node *done = atomic_load_explicit(&srs.srs_done_tail, memory_order_acquire);
	struct sr_node *n, *next;

	if (!done)
		return;
	/* Detach the older part: only this work touches ->next of a done
	 * tail (the driver moved on to a newer wait tail). */
	n = atomic_exchange_explicit(&done->next, NULL, memory_order_acq_rel);
	for (; n; n = next) {
		next = atomic_load_explicit(&n->next, memory_order_acquire);
		if (rcu_sr_is_wait_head(n)) {
			rcu_sr_put_wait_head(n);
			continue;
		}
		atomic_fetch_add_explicit(&srs.n_deferred, 1, memory_order_relaxed);
		rcu_sr_normal_complete(n);
	}
}

/* The cleanup work item. */
static void rcu_sr_normal_gp_cleanup_work(struct trcu_work *work)
{
	pthread_mutex_lock(&srs.cleanup_lock);
	rcu_sr_normal_cleanup_locked();
	pthread_mutex_unlock(&srs.cleanup_lock);
	/* Release: our list changes before the driver's fast path may
	 * recycle wait heads itself; pairs with its acquire load. */
	atomic_fetch_sub_explicit(&srs.cleanups_pending, 1, memory_order_release);
}

/* Tests that drive the cleanup work by hand set this. */
static bool srs_cleanup_inline_disabled;

/*
 * The workqueue subsystem is shutting down (trcu_wq_at_shutdown(), called
 * before it destroys and frees any workqueue): forget trcu_sync_wq.  Once
 * wq_lock is ours no driver is queueing on it, and none will again.  For
 * good: a workqueue allocated after an exit-time shutdown would never be
 * shut down, and cleanup_work's data names a pool the shutdown frees.
 */
static void sr_wq_shutdown(void)
{
	pthread_mutex_lock(&srs.wq_lock);
	srs.wq_gone = true;
	atomic_store_explicit(&srs.sync_wq, NULL, memory_order_relaxed);
	pthread_mutex_unlock(&srs.wq_lock);
}

/* trcu_sync_wq, allocated on first use; NULL if it cannot be (or the
 * workqueue subsystem shut down).  Caller holds wq_lock. */
static struct trcu_workqueue *sr_sync_wq_locked(void)
{
	struct trcu_workqueue *wq = atomic_load_explicit(&srs.sync_wq, memory_order_relaxed);

	if (wq || srs.wq_gone)
		return wq;
	/* Without the notifier the handle could dangle: no workqueue then. */
	if (!srs.wq_notifier && trcu_wq_at_shutdown(sr_wq_shutdown))
		return NULL;
	srs.wq_notifier = true;
	trcu_init_work(&srs.cleanup_work, rcu_sr_normal_gp_cleanup_work);
	wq = trcu_alloc_workqueue("trcu_sync_wq", TRCU_WQ_MEM_RECLAIM | TRCU_WQ_UNBOUND, 0);
	atomic_store_explicit(&srs.sync_wq, wq, memory_order_relaxed);
	return wq;
}

/*
 * Wake this GP's waiters in the order they came, oldest first, at most
 * `max` of them; the rest stay linked behind wait_tail, also oldest first,
 * for the cleanup work.  The list is newest first (a LIFO push), so the
 * segment from wait_tail to the older wait head is reversed first: the
 * kernel wakes the newest, and with many callers on few CPUs the oldest,
 * left to the work, made the tail (seeds 003).  Driver only, gp_mutex held:
 * until srs_done_tail is published the segment's nodes are ours, so relaxed
 * accesses suffice; each wake is a release of its own.
 */
static long rcu_sr_wake_oldest(struct sr_node *wait_tail, long max)
{
	struct sr_node *seg = NULL, *newest = NULL, *n, *next;
	long woken = 0;

	/* Acquire: pairs with sr_llist_add(); the pushed nodes' ->next. */
	for (n = atomic_load_explicit(&wait_tail->next, memory_order_acquire);
	     n && !rcu_sr_is_wait_head(n); n = next) {
		next = atomic_load_explicit(&n->next, memory_order_acquire);
		atomic_store_explicit(&n->next, seg, memory_order_relaxed);
		if (!seg)
			newest = n;
		seg = n;
	}
	/* n: the older wait head, or NULL.  Wake from the oldest; read ->next
	 * before the wake, after which the node may be gone. */
	while (seg && woken < max) {
		next = atomic_load_explicit(&seg->next, memory_order_relaxed);
		rcu_sr_normal_complete(seg);
		seg = next;
		woken++;
	}
	if (seg)
		atomic_store_explicit(&newest->next, n, memory_order_relaxed);
	atomic_store_explicit(&wait_tail->next, seg ? seg : n, memory_order_relaxed);
	return woken;
}

/*
 * GP cleanup (driver, gp_mutex held, after gp_seq ended): wake a few of this
 * GP's waiters directly, publish the done tail, hand the rest to the work.
 */
void rcu_sr_normal_gp_cleanup(void)
{
	struct sr_node *wait_tail = srs.srs_wait_tail, *n;
	struct trcu_workqueue *wq;
	bool queued;
	long done;
	int err;

	if (!wait_tail)
		return;
	srs.srs_wait_tail = NULL;
	done = rcu_sr_wake_oldest(wait_tail, TUN(sr_wake_max));
	atomic_fetch_add_explicit(&srs.n_direct, done, memory_order_relaxed);
	/*
	 * Fast path (the kernel's): every waiter of this GP was woken, only
	 * the previous wait head follows, and no cleanup work is in flight (so
	 * that head's older part was already detached): recycle it here.
	 * Acquire pairs with the release at the end of the cleanup work.
	 */
	n = atomic_load_explicit(&wait_tail->next, memory_order_acquire);
	if (n && rcu_sr_is_wait_head(n) &&
	    !atomic_load_explicit(&srs.cleanups_pending, memory_order_acquire)) {
		atomic_store_explicit(&wait_tail->next, NULL, memory_order_relaxed);
		rcu_sr_put_wait_head(n);
	}
	/* Release: pairs with the acquire in the cleanup work. */
	atomic_store_explicit(&srs.srs_done_tail, wait_tail, memory_order_release);
	if (!atomic_load_explicit(&wait_tail->next, memory_order_relaxed))
		return;   /* nothing left for the work */
	if (srs_cleanup_inline_disabled)
		return;
	atomic_fetch_add_explicit(&srs.cleanups_pending, 1, memory_order_relaxed);
	/* wq_lock from the handle's load to the end of the queueing: the
	 * workqueue cannot be freed meanwhile (sr_wq_shutdown()). */
	pthread_mutex_lock(&srs.wq_lock);
	wq = sr_sync_wq_locked();
	errno = 0;
	queued = wq && trcu_queue_work(wq, &srs.cleanup_work);
	err = errno;
	pthread_mutex_unlock(&srs.wq_lock);
	if (queued)
		return;
	if (wq && err != ESHUTDOWN) {
		/* Already pending: that run will see this done tail (a pending
		 * item is run by the drain of a destroy or shutdown too). */
		atomic_fetch_sub_explicit(&srs.cleanups_pending, 1, memory_order_relaxed);
		return;
	}
	/* No workqueue (allocation failed, destroyed, or the subsystem shut
	 * down, as at exit): clean up here so that no waiter is left behind. */
	atomic_fetch_add_explicit(&srs.n_inline, 1, memory_order_relaxed);
	rcu_sr_normal_gp_cleanup_work(&srs.cleanup_work);
}

/* ---- fork() (src/fork.c) ---------------------------------------------------- */

/* wq_lock, then cleanup_lock (never taken the other way round). */
void rcu_sr_fork_prepare(void)
{
	pthread_mutex_lock(&srs.wq_lock);
	pthread_mutex_lock(&srs.cleanup_lock);
}

void rcu_sr_fork_parent(void)
{
	pthread_mutex_unlock(&srs.cleanup_lock);
	pthread_mutex_unlock(&srs.wq_lock);
}

/* Every waiter on the list is another thread's (on its stack): none exists
 * in the child.  Start from an empty list with every wait head free; a
 * queued cleanup work was dropped with the other work items, and
 * trcu_sync_wq (kept) works again in the child. */
void rcu_sr_fork_child(void)
{
	pthread_mutex_init(&srs.wq_lock, NULL);
	pthread_mutex_init(&srs.cleanup_lock, NULL);
	atomic_store_explicit(&srs.srs_next, NULL, memory_order_relaxed);
	srs.srs_wait_tail = NULL;
	atomic_store_explicit(&srs.srs_done_tail, NULL, memory_order_relaxed);
	for (int i = 0; i < SR_NORMAL_GP_WAIT_HEAD_MAX; i++) {
		atomic_store_explicit(&srs.wait_heads[i].inuse, 0, memory_order_relaxed);
		atomic_store_explicit(&srs.wait_heads[i].node.next, NULL, memory_order_relaxed);
	}
	atomic_store_explicit(&srs.cleanups_pending, 0, memory_order_relaxed);
	atomic_store_explicit(&srs.nr_waiting, 0, memory_order_relaxed);
}

void rcu_sr_stats(struct trcu_stats *st)
{
	st->sr_woken_direct = atomic_load_explicit(&srs.n_direct, memory_order_relaxed);
	st->sr_woken_deferred = atomic_load_explicit(&srs.n_deferred, memory_order_relaxed);
	st->sr_no_wait_head = atomic_load_explicit(&srs.n_no_head, memory_order_relaxed);
}
