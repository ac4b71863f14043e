/* SPDX-License-Identifier: MIT */
/*
 * The synchronize_rcu() waiter list: the list path's waiters, woken straight
 * from the grace period.  This file owns the list, its wait heads, its
 * cleanup and its counters; the function names are the kernel's
 * (rcu_sr_normal_*), whose machinery this is.
 *
 * One lock-free LIFO list (srs_next) of waiters.  At each GP init a wait-head
 * sentinel is pushed, so everything older than it waits for this GP while
 * new callers keep pushing in front of it:
 *
 *   srs_next -> [new callers] -> W2 -> [GP2's callers] -> W1 -> [GP1's ...]
 *                               ^wait tail                ^done tail
 *
 * At GP cleanup the driver takes this GP's waiters, keeps up to sr_wake_max
 * of the oldest aside, leaves the rest (also oldest first) linked behind the
 * wait tail, makes the wait tail the done tail, asks for a cleanup pass when
 * anything is left, and only then completes the ones it kept aside (the
 * kernel wakes 5, newest first, and hands the rest to a work item); the
 * futex wakes of those asleep wait until the driver unlocks gp_mutex.
 *
 * The cleanup pass (detach everything older than the done tail, wake it,
 * return the wait heads to their pool) is run by the waiters the driver
 * woke, on their way out of synchronize_rcu(): a request is counted before
 * those wakes, so at least one of them (sr_wake_max >= 1) sees it.  Passes
 * are serialized by cleanup_lock; a waiter that finds the lock taken leaves
 * the request to the holder, which rechecks the count after its pass.  No
 * thread of its own and no workqueue: the list needs nothing above it.
 *
 * The driver (init, cleanup) runs under rcu_state.gp_mutex, so wait_tail is
 * its alone; done_tail is handed to the cleanup pass with release/acquire.
 * A pass may see an old or a new done tail: an old one only means the newer
 * callers wait for the next pass, which the cleanup that published the newer
 * tail has requested.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "internal.h"
#include "sync_hint.h"
#include "sync_list.h"
#include "test_hooks.h"
#include "trace.h"

#define SR_NORMAL_GP_WAIT_HEAD_MAX 5

struct sr_wait_head {
	struct sr_node node;
	_Atomic int inuse;
};

static struct {
	_Atomic(struct sr_node *) srs_next;       /* the list (LIFO) */
	struct sr_node *srs_wait_tail;            /* under gp_mutex */
	_Atomic(struct sr_node *) srs_done_tail;  /* driver -> cleanup pass */
	struct sr_wait_head wait_heads[SR_NORMAL_GP_WAIT_HEAD_MAX];
	/* Futex words of waiters a GP cleanup found asleep and completed,
	 * woken after the driver unlocks gp_mutex (under gp_mutex). */
	_Atomic uint32_t *asleep[SR_WAKE_BATCH];
	int n_asleep;
	pthread_mutex_t cleanup_lock;             /* one cleanup pass at a time */
	_Atomic int cleanups_pending;             /* requested, pass not finished */
	_Atomic long n_direct, n_deferred, n_no_head;
} srs = {
	.cleanup_lock = PTHREAD_MUTEX_INITIALIZER,
};

static void rcu_sr_normal_cleanup_help(void);

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
		 * cleanup pass is done with the node before we reuse it. */
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
 * driver waking its own node, nor a waiter still on its way to sleep (an
 * idle synchronize_rcu() would pay a system call for its own node:
 * docs/decisions.md, "Who drives and who is woken"). */
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

/*
 * The driver's form of rcu_sr_normal_complete() (gp_mutex held): complete
 * the waiter now and leave its futex wake, if it sleeps, for after the
 * unlock (rcu_sr_take_asleep()).  The wakes are the slow part of a GP
 * cleanup (a system call each, and a wake-up IPI to an idle CPU); made
 * under gp_mutex they kept the next driver, and every caller polling for
 * the mutex, waiting behind them, and the callers stopped polling and
 * slept, which made every call cost a wake (docs/decisions.md, "The
 * driver wakes its waiters after it unlocks").  Beyond SR_WAKE_BATCH
 * sleepers the rest are woken here.
 */
static void rcu_sr_normal_complete_locked(struct sr_node *n)
{
	uint32_t was;

	rcu_note_sync_wake();
	/* Release and acquire: as in rcu_sr_normal_complete(). */
	was = atomic_exchange_explicit(&n->done, SR_DONE, memory_order_acq_rel);
	TRACE_RECORD("sr_wake", was == SR_ASLEEP);
	if (was != SR_ASLEEP)
		return;
	if (srs.n_asleep < SR_WAKE_BATCH)
		srs.asleep[srs.n_asleep++] = &n->done;
	else
		sys_futex_wake(&n->done, 1);
}

/* Take the futex words left by rcu_sr_normal_complete_locked() (gp_mutex
 * held); the caller wakes them with rcu_sr_wake_asleep() after its unlock.
 * Only their addresses are used: a waiter whose bounded sleep ended saw
 * SR_DONE and may have returned, and a wake on its old word is a spurious
 * one for whatever sleeps there now, which every futex user tolerates. */
int rcu_sr_take_asleep(_Atomic uint32_t **out)
{
	int n = srs.n_asleep;

	for (int i = 0; i < n; i++)
		out[i] = srs.asleep[i];
	srs.n_asleep = 0;
	return n;
}

void rcu_sr_wake_asleep(_Atomic uint32_t *const *w, int n)
{
	for (int i = 0; i < n; i++)
		sys_futex_wake(w[i], 1);
}

/* Add a waiter (before its GP is requested: the GP that satisfies the
 * request starts later, and its init covers this node). */
void rcu_sr_normal_add_req(struct sr_node *n)
{
	atomic_store_explicit(&n->done, SR_WAITING, memory_order_relaxed);
	n->is_wait_head = false;
	rcu_sr_waiting_add();
	sr_llist_add(n);
}

/* Sleep until woken or timeout_ns (< 0: no limit); true once woken. */
bool rcu_sr_wait_timeout(struct sr_node *n, long timeout_ns)
{
	long deadline = 0;
	bool armed = false;

	for (;;) {
		/* Acquire: pairs with the exchange in rcu_sr_normal_complete(). */
		uint32_t v = atomic_load_explicit(&n->done, memory_order_acquire);
		long left = -1;

		if (v == SR_DONE)
			break;
		/* The clock only when we may wait: a caller whose node is
		 * done (it drove its GP) reads none. */
		if (timeout_ns >= 0) {
			long now = sys_now_ns();

			if (!armed)
				deadline = now + timeout_ns;
			armed = true;
			left = deadline - now;
		}
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
	rcu_sr_waiting_sub();
	rcu_sr_normal_cleanup_help();
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
		 * Every wait head waits for a cleanup pass.  Run one here
		 * (serialized by cleanup_lock) rather than start GPs that
		 * cover nobody while holding gp_mutex: that starves the pass
		 * (docs/decisions.md, the waiter list).
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
	 * driver's unlinks are visible. */
	struct sr_node *done = atomic_load_explicit(&srs.srs_done_tail, memory_order_acquire);
	struct sr_node *n, *next;

	if (!done)
		return;
	if (rcu_test_hooks.sr_pass_loaded)
		rcu_test_hooks.sr_pass_loaded();
	/* Detach the older part: only a pass touches ->next of a done tail
	 * (the driver moved on to a newer wait tail, and recycles this one
	 * only while no pass is requested: rcu_sr_normal_gp_cleanup()). */
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

/* One cleanup pass (tests run it at chosen points: src/test_hooks.h). */
void rcu_sr_normal_cleanup_pass(void)
{
	pthread_mutex_lock(&srs.cleanup_lock);
	rcu_sr_normal_cleanup_locked();
	pthread_mutex_unlock(&srs.cleanup_lock);
}

/*
 * Run the requested cleanup passes, if nobody else is running one: called
 * by each woken waiter on its way out.  A waiter that finds cleanup_lock
 * taken leaves: the holder rechecks the count after its pass, so a request
 * counted meanwhile is not lost.
 */
static void rcu_sr_normal_cleanup_help(void)
{
	/* Acquire: pairs with the seq_cst request in rcu_sr_normal_gp_cleanup();
	 * the done tail it published is visible to the pass. */
	while (atomic_load_explicit(&srs.cleanups_pending, memory_order_acquire) > 0) {
		int n;

		if (pthread_mutex_trylock(&srs.cleanup_lock))
			return;
		/* Under the lock: the requests this pass covers (each one's
		 * done tail was published before it was counted).  None left
		 * (another waiter's pass served them between our check and the
		 * lock): no pass.  A pass runs only while the count is above
		 * zero, which keeps the driver's fast path from recycling the
		 * done tail it holds (rcu_sr_normal_gp_cleanup()): an unrequested
		 * pass could detach, from a wait head recycled and pushed again
		 * meanwhile, waiters whose GP has not ended. */
		n = atomic_load_explicit(&srs.cleanups_pending, memory_order_acquire);
		if (n <= 0) {
			pthread_mutex_unlock(&srs.cleanup_lock);
			return;
		}
		rcu_sr_normal_cleanup_locked();
		/* Still under the lock: the next pass reads the count after
		 * this one took its requests off, so no request is taken off
		 * twice.  Subtracted after the unlock, the next holder could
		 * read ours too and subtract them again: the count would go
		 * below zero, a later request would look like none, its pass
		 * would never run and the waiters left behind its done tail
		 * would sleep forever (tests/sync/test_sync_callers_beyond_wake_max.c).
		 * Release: our list changes before the driver's fast path may
		 * recycle wait heads itself; pairs with its acquire load. */
		atomic_fetch_sub_explicit(&srs.cleanups_pending, n, memory_order_release);
		pthread_mutex_unlock(&srs.cleanup_lock);
	}
}

/*
 * Take this GP's waiters off the list, oldest first: the first `max` of
 * them are returned as a private chain (*count set) for the driver to wake
 * once the done tail is published; the rest stay linked behind wait_tail,
 * also oldest first, for the cleanup pass.  The list is newest first (a
 * LIFO push), so the segment from wait_tail to the older wait head is
 * reversed first: the kernel wakes the newest, and with many callers on
 * few CPUs the oldest, left to the pass, made the tail (docs/decisions.md).
 * Driver only, gp_mutex held: until srs_done_tail is published the
 * segment's nodes are ours, so relaxed accesses suffice.
 */
static struct sr_node *rcu_sr_take_oldest(struct sr_node *wait_tail, long max, long *count)
{
	struct sr_node *seg = NULL, *newest = NULL, *n, *next, *direct, *last = NULL;
	long taken = 0;

	/* Acquire: pairs with sr_llist_add(); the pushed nodes' ->next. */
	for (n = atomic_load_explicit(&wait_tail->next, memory_order_acquire);
	     n && !rcu_sr_is_wait_head(n); n = next) {
		next = atomic_load_explicit(&n->next, memory_order_acquire);
		atomic_store_explicit(&n->next, seg, memory_order_relaxed);
		if (!seg)
			newest = n;
		seg = n;
	}
	/* n: the older wait head, or NULL.  seg: oldest first. */
	direct = seg;
	while (seg && taken < max) {
		last = seg;
		seg = atomic_load_explicit(&seg->next, memory_order_relaxed);
		taken++;
	}
	if (seg)
		atomic_store_explicit(&newest->next, n, memory_order_relaxed);
	atomic_store_explicit(&wait_tail->next, seg ? seg : n, memory_order_relaxed);
	*count = taken;
	return last ? direct : NULL;
}

/*
 * GP cleanup (driver, gp_mutex held, after gp_seq ended): publish the done
 * tail, ask for a cleanup pass when waiters are left behind it, then wake
 * the oldest sr_wake_max waiters directly; they run the pass.
 */
void rcu_sr_normal_gp_cleanup(void)
{
	struct sr_node *wait_tail = srs.srs_wait_tail, *direct, *n, *next;
	long count;

	if (!wait_tail)
		return;
	srs.srs_wait_tail = NULL;
	/* The tunable's range starts at 1: a pass requested below always has
	 * a woken waiter to run it. */
	direct = rcu_sr_take_oldest(wait_tail, TUN(sr_wake_max), &count);
	atomic_fetch_add_explicit(&srs.n_direct, count, memory_order_relaxed);
	/*
	 * Fast path (the kernel's): every waiter of this GP is taken, only
	 * the previous wait head follows, and no cleanup pass is pending (so
	 * that head's older part was already detached): recycle it here.
	 * Acquire pairs with the release at the end of a pass.
	 */
	n = atomic_load_explicit(&wait_tail->next, memory_order_acquire);
	if (n && rcu_sr_is_wait_head(n) &&
	    !atomic_load_explicit(&srs.cleanups_pending, memory_order_acquire)) {
		atomic_store_explicit(&wait_tail->next, NULL, memory_order_relaxed);
		rcu_sr_put_wait_head(n);
	}
	/* Release: pairs with the acquire in rcu_sr_normal_cleanup_locked(). */
	atomic_store_explicit(&srs.srs_done_tail, wait_tail, memory_order_release);
	/* seq_cst: counted before the wakes below, so a woken waiter's
	 * acquire load in rcu_sr_normal_cleanup_help() sees it. */
	if (atomic_load_explicit(&wait_tail->next, memory_order_relaxed))
		atomic_fetch_add_explicit(&srs.cleanups_pending, 1, memory_order_seq_cst);
	/* Wake the kept-aside waiters, oldest first; read ->next before the
	 * wake, after which the node may be gone. */
	for (n = direct; count > 0; n = next, count--) {
		next = atomic_load_explicit(&n->next, memory_order_relaxed);
		rcu_sr_normal_complete_locked(n);
	}
}

/* ---- fork() (src/fork.c) ---------------------------------------------------- */

void rcu_sr_fork_prepare(void)
{
	pthread_mutex_lock(&srs.cleanup_lock);
}

void rcu_sr_fork_parent(void)
{
	pthread_mutex_unlock(&srs.cleanup_lock);
}

/* Every waiter on the list is another thread's (on its stack): none exists
 * in the child.  Start from an empty list with every wait head free and no
 * pass pending. */
void rcu_sr_fork_child(void)
{
	pthread_mutex_init(&srs.cleanup_lock, NULL);
	atomic_store_explicit(&srs.srs_next, NULL, memory_order_relaxed);
	srs.srs_wait_tail = NULL;
	srs.n_asleep = 0;
	atomic_store_explicit(&srs.srs_done_tail, NULL, memory_order_relaxed);
	for (int i = 0; i < SR_NORMAL_GP_WAIT_HEAD_MAX; i++) {
		atomic_store_explicit(&srs.wait_heads[i].inuse, 0, memory_order_relaxed);
		atomic_store_explicit(&srs.wait_heads[i].node.next, NULL, memory_order_relaxed);
	}
	atomic_store_explicit(&srs.cleanups_pending, 0, memory_order_relaxed);
	rcu_sr_waiting_fork_child();
}

void rcu_sr_stats(struct trcu_stats *st)
{
	st->sr_woken_direct = atomic_load_explicit(&srs.n_direct, memory_order_relaxed);
	st->sr_woken_deferred = atomic_load_explicit(&srs.n_deferred, memory_order_relaxed);
	st->sr_no_wait_head = atomic_load_explicit(&srs.n_no_head, memory_order_relaxed);
}

/* ---- White-box tests (src/test_hooks.h) --------------------------------------- */

void sync_list_peek(struct sync_list_peek *p)
{
	p->next = atomic_load_explicit(&srs.srs_next, memory_order_acquire);
	p->wait_tail = srs.srs_wait_tail;
	p->done_tail = atomic_load_explicit(&srs.srs_done_tail, memory_order_acquire);
	p->heads_in_use = 0;
	for (int i = 0; i < SR_NORMAL_GP_WAIT_HEAD_MAX; i++)
		p->heads_in_use += atomic_load_explicit(&srs.wait_heads[i].inuse,
							memory_order_acquire);
	p->heads_max = SR_NORMAL_GP_WAIT_HEAD_MAX;
	p->cleanups_pending = atomic_load_explicit(&srs.cleanups_pending, memory_order_acquire);
}

void sync_list_test_reset(int heads_in_use, int cleanups_pending)
{
	atomic_store_explicit(&srs.srs_next, NULL, memory_order_relaxed);
	srs.srs_wait_tail = NULL;
	srs.n_asleep = 0;
	atomic_store_explicit(&srs.srs_done_tail, NULL, memory_order_relaxed);
	for (int i = 0; i < SR_NORMAL_GP_WAIT_HEAD_MAX; i++)
		atomic_store_explicit(&srs.wait_heads[i].inuse, i < heads_in_use,
				      memory_order_relaxed);
	atomic_store_explicit(&srs.cleanups_pending, cleanups_pending, memory_order_relaxed);
}

void sync_list_test_set_pending(int cleanups_pending)
{
	atomic_store_explicit(&srs.cleanups_pending, cleanups_pending, memory_order_relaxed);
}
