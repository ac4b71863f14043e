/* SPDX-License-Identifier: MIT */
/*
 * call_rcu(): one compare-and-swap onto the calling thread's bypass stack
 * and, at most once per batch, a wake of its offload thread (src/nocb.c);
 * the flood push-back that makes a caller far ahead of its offload thread
 * wait for it; and the callbacks stranded when the offload threads are
 * gone (shutdown), which run on the caller's thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "trace.h"
#include "nocb.h"
#include "nocb_internal.h"
#include "test_hooks.h"

/* ---- call_rcu --------------------------------------------------------------------- */

/*
 * Flood push-back: a thread with more than cb_max_pending callbacks not yet
 * run waits (outside read-side sections only: inside one, waiting for a
 * grace period would wait for itself; not on an online QSBR thread nor on
 * an offload thread, see nocb_pushback()) until it is back under qhimark, but
 * only while grace periods end or its callbacks run: after
 * nocb_pushback_limit_ns() with neither (a reader stalled in a section), it
 * returns, and the thread queues without push-back until the next grace
 * period ends.  Memory then grows for as long as the stall lasts; the stall
 * warning counts the callbacks waiting (rcu_nocb_stall_info()).  The
 * kernel's and liburcu's call_rcu() never wait at all.
 */

/*
 * How long the push-back waits without grace-period progress before it
 * counts the grace period as stalled: cb_pushback_ms, or by default (0) a
 * tenth of stall_timeout_ms.  A loaded machine preempts readers inside
 * their sections for hundreds of ms while grace periods still end; giving
 * up then lets a flood run past cb_max_pending until gp_seq moves
 * (docs/decisions.md).  The stall detector's own threshold is what
 * separates slow from stalled; a tenth of it bounds the wait well below it.
 */
static long nocb_pushback_limit_ns(void)
{
	long ms = TUN(cb_pushback_ms);

	if (!ms)
		ms = TUN(stall_timeout_ms) / 10;
	return (ms > 0 ? ms : 1) * 1000000L;
}
static void nocb_pushback(struct rcu_data *rdp)
{
	struct rcu_thread *r = rcu_thread_self();
	unsigned long gp = rcu_gp_seq_current();
	long inv = atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed);
	long since = sys_now_ns(), limit = nocb_pushback_limit_ns();
	int was;

	/* Not where waiting would be wrong: inside a section, on an online
	 * QSBR thread (its wait would count it quiescent while it holds
	 * references), on an offload thread (a callback flooding its own
	 * group would wait for itself). */
	if (rcu_caller_reading() || nocb_self ||
	    gp == atomic_load_explicit(&rdp->pushback_gave_up_gp, memory_order_relaxed))
		return;
	atomic_fetch_add_explicit(&nocb.n_pushback, 1, memory_order_relaxed);
	was = rcu_thread_registered(r) ? rcu_enter_gp_wait(r) : 0;
	nocb_wake(rdp->grp);
	rcu_cb_waiter_enter_hurry();
	/* seq_cst, before the pending checks below: pairs with
	 * nocb_do_batch()'s waiting check after it publishes n_invoked.  A
	 * count: the shared rcu_data's callers may wait together. */
	atomic_fetch_add_explicit(&rdp->pushback_waiting, 1, memory_order_seq_cst);
	while (rdp_pending(rdp) > TUN(qhimark)) {
		uint32_t v = atomic_load_explicit(&rdp->pushback_futex, memory_order_seq_cst);
		unsigned long gp_now = rcu_gp_seq_current();
		long inv_now = atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed);
		long now = sys_now_ns();

		if (gp_now != gp || inv_now != inv) {
			gp = gp_now;
			inv = inv_now;
			since = now;
		} else if (now - since >= limit) {
			/* Read by the next call_rcu() on rdp. */
			atomic_store_explicit(&rdp->pushback_gave_up_gp, gp, memory_order_relaxed);
			atomic_fetch_add_explicit(&nocb.n_pushback_gave_up, 1, memory_order_relaxed);
			break;
		}
		if (rdp_pending(rdp) <= TUN(qhimark))
			break;
		sys_futex_wait(&rdp->pushback_futex, v, limit - (now - since));
	}
	rcu_cb_waiter_exit();
	atomic_fetch_sub_explicit(&rdp->pushback_waiting, 1, memory_order_relaxed);
	if (rcu_thread_registered(r))
		rcu_exit_gp_wait(r, was);
}

/* The grace period for callbacks this thread runs itself: a user thread
 * (not an offload thread) waits for it, and says so (rcu_gp_anyone_waits()). */
static void nocb_wait_gp_here(void)
{
	bool user = !nocb_self;

	if (user)
		rcu_cb_waiter_enter_hurry();
	rcu_gp_wait_seq(rcu_gp_snap());
	if (user)
		rcu_cb_waiter_exit();
}

/* Take rdp's bypass list, wait for a grace period, run it (on the
 * caller: nocb_run_stranded()). */
static void nocb_run_bypass(struct rcu_data *rdp)
{
	/* Acquire: pairs with the pushes' release CAS (->func, ->next). */
	struct trcu_head *list = atomic_exchange_explicit(&rdp->bypass, NULL, memory_order_acq_rel);
	struct trcu_head *fifo = NULL, *next;
	unsigned char was_sync;
	bool was_self;
	long n = 0;
	int cs;

	if (!list)
		return;
	for (; list; list = next) {       /* newest first: reverse */
		next = list->next;
		list->next = fifo;
		fifo = list;
	}
	nocb_wait_gp_here();
	/* As on an offload thread: an rcu_barrier() from one of these
	 * callbacks would wait for the sweep that runs it (it dies instead,
	 * naming the misuse). */
	was_self = nocb_self;
	nocb_self = true;
	/* Nor is a callback run here inside the caller's synchronize_rcu()
	 * (a wakeme-path wake-up pushed while the offload threads stop runs
	 * the stranded lists on the caller): it may wait for a grace period,
	 * as on an offload thread (rcu_check_blocking_allowed()). */
	was_sync = rcu_thread_tls.in_sync;
	rcu_thread_tls.in_sync = 0;
	/* The callbacks run on the caller's thread here: as on an offload
	 * thread, no cancellation point in one may end it with the rest of
	 * the list taken and not run (internal.h). */
	cs = sys_cancel_disable();
	for (; fifo; fifo = next, n++) {
		next = fifo->next;
		rcu_cb_invoke(fifo, fifo->func);
		nocb_fork_check();
	}
	sys_cancel_restore(cs);
	rcu_thread_tls.in_sync = was_sync;
	nocb_self = was_self;
	/* An RMW: the shutdown's sweep and the owner may both run one now
	 * that no offload thread does, and the shared rcu_data's parked
	 * callbacks run here while its offload thread may start.  seq_cst,
	 * as nocb_publish_invoked(): a push-back waiting on the shared
	 * rcu_data reads it. */
	atomic_fetch_add_explicit(&rdp->n_invoked, n, memory_order_seq_cst);
}

/*
 * Run, after a grace period, the callbacks left on rdp's bypass list when
 * no offload thread runs them: the shared rcu_data's parked ones
 * (rcu_barrier(), trcu_shutdown(): blocking calls, outside any section),
 * and those left once the offload threads are gone: a call_rcu() that saw
 * ->stopping still false may push after its group's thread made its last
 * pass and exited (tests/process/test_shutdown_runs_late_callback.c; with
 * normal_wake_from_gp=0 the callback was a synchronize_rcu() caller's
 * wake-up, and the caller hung).  The exchange takes each callback exactly
 * once, from the shutdown's sweep or from its owner's own check.  The
 * shared rcu_data's runs go one at a time: shared_run_lock is held across
 * the exchange, the wait and the callbacks, so that an rcu_barrier() that
 * finds the bypass empty while another caller's run is in flight waits
 * for that run (nocb_wait_shared_runs()).
 */
void nocb_run_stranded(struct rcu_data *rdp)
{
	if (rdp != &nocb.shared) {
		nocb_run_bypass(rdp);
		return;
	}
	pthread_mutex_lock(&nocb.shared_run_lock);
	nocb_run_bypass(rdp);
	pthread_mutex_unlock(&nocb.shared_run_lock);
}

/* Wait for a run of the shared rcu_data's callbacks in flight. */
void nocb_wait_shared_runs(void)
{
	pthread_mutex_lock(&nocb.shared_run_lock);
	pthread_mutex_unlock(&nocb.shared_run_lock);
}

/*
 * After the join: every group's lists, live threads' and orphans'.  Not
 * under grp->lock while callbacks run (one may call_rcu() on a new thread,
 * whose rdp_get() takes it).  The rdps stay put meanwhile: only
 * nocb_reap_orphans() frees one, and with the offload threads gone only
 * this sweep calls it; new ones are added at the head.
 */
void nocb_sweep_stranded(void)
{
	for (int i = 0; i < nocb.nr_groups; i++) {
		struct nocb_group *grp = &nocb.groups[i];
		struct rcu_data *rdp;

		pthread_mutex_lock(&grp->lock);
		rdp = grp->rdps;
		pthread_mutex_unlock(&grp->lock);
		while (rdp) {
			nocb_run_stranded(rdp);
			pthread_mutex_lock(&grp->lock);
			rdp = rdp->next;
			pthread_mutex_unlock(&grp->lock);
		}
		nocb_reap_orphans(grp);
	}
}

/* After trcu_shutdown() no offload thread runs: wait for a grace period
 * here and run the callback (outside a read-side section), or keep it. */
static void call_rcu_after_shutdown(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	if (rcu_caller_reading()) {
		sys_warn("call_rcu() inside a read-side section after trcu_shutdown(): "
			  "callback %p not run", (void *)head);
		debug_rcu_head_unqueue(head);
		return;
	}
	/*
	 * A grace period that no callback provides: trcu_synchronize_rcu()
	 * on the wakeme path (normal_wake_from_gp=0) would queue a callback,
	 * come back here, and recurse until the stack ran out, for any call
	 * made between the offload threads' stop and shutting_down (the
	 * window is the offload threads' join).  tests/process/test_shutdown_sync_returns_while_offload_stops.c.
	 */
	nocb_wait_gp_here();
	rcu_cb_invoke(head, func);
	/* Callbacks this thread left queued inside a section while the
	 * offload threads stopped (call_rcu_stranded()), and any left on
	 * the shared rcu_data. */
	if (nocb_rdp)
		nocb_run_stranded(nocb_rdp);
	if (atomic_load_explicit(&nocb.shared.bypass, memory_order_acquire))
		nocb_run_stranded(&nocb.shared);
}

/* The push went in after the offload threads stopped: run it here, as
 * call_rcu_after_shutdown() does (not inside a read-side section). */
static void call_rcu_stranded(struct rcu_data *rdp)
{
	if (rcu_caller_reading()) {
		/* No grace period can be waited for here.  The shutdown's sweep
		 * runs it if it has not passed this list yet; else this
		 * thread's next call_rcu() outside a section does
		 * (call_rcu_after_shutdown()). */
		sys_warn("call_rcu() inside a read-side section while trcu_shutdown() stopped "
			  "the offload threads: callback left queued until this thread calls "
			  "call_rcu() outside a read-side section");
		return;
	}
	nocb_run_stranded(rdp);
}

/*
 * More than qhimark callbacks pending: hurry a grace period (the offload
 * thread may be busy invoking, or holding a batch back), once per qhimark
 * more callbacks as the kernel's __call_rcu_core() does (qlen_last_fqs_check):
 * a request per call would run grace periods back to back while the pending
 * callbacks wait for the offload thread to get a CPU, not for a grace
 * period, each GP's membarrier interrupting the readers.  True past
 * cb_max_pending: the caller pushes back (nocb_pushback(), outside the
 * shared rcu_data's lock).
 */
static inline bool call_rcu_flood(struct rcu_data *rdp, long pending)
{
	long hi = TUN(qhimark);

	if (pending > rdp->qlen_last_fqs_check + hi) {
		rcu_gp_request_async(rcu_gp_snap());
		rdp->qlen_last_fqs_check = pending;
	} else if (pending < rdp->qlen_last_fqs_check - hi) {
		rdp->qlen_last_fqs_check = pending;   /* drained: hurry sooner */
	}
	return pending > TUN(cb_max_pending);
}

/* Push onto rdp's bypass stack; returns rdp's queued count.  The caller
 * is rdp's owner (or holds nocb.shared_lock for the shared one). */
static rcu_always_inline long call_rcu_push(struct rcu_data *rdp, struct trcu_head *head,
					   void (*func)(struct trcu_head *))
{
	struct trcu_head *old;
	long n;

	head->func = func;
	old = atomic_load_explicit(&rdp->bypass, memory_order_relaxed);
	do {
		/* The head on top already: queued twice in a row, its callback
		 * not run; the push would link it to itself (a release build's
		 * check of this misuse, with nocb_flush_bypass()'s:
		 * docs/decisions.md). */
		if (TRCU_UNLIKELY(old == head))
			call_rcu_queued_twice(head, func);
		head->next = old;
		/* Release (seq_cst for the ->state check below): publishes
		 * ->func/->next; pairs with nocb_flush_bypass()'s exchange. */
	} while (!atomic_compare_exchange_weak_explicit(&rdp->bypass, &old, head,
							memory_order_seq_cst,
							memory_order_relaxed));
	n = atomic_load_explicit(&rdp->n_queued, memory_order_relaxed) + 1;
	atomic_store_explicit(&rdp->n_queued, n, memory_order_relaxed);
	return n;
}

/* What call_rcu_queue() leaves its caller to do. */
enum call_rcu_then { CR_DONE, CR_PUSHBACK, CR_STRANDED };

/*
 * Queue on rdp, whose group's offload thread runs it, and wake that thread
 * when it sleeps.  Then: CR_PUSHBACK past cb_max_pending, CR_STRANDED when
 * the offload threads stopped under the push (the caller runs it:
 * call_rcu_stranded()).
 */
static rcu_always_inline enum call_rcu_then call_rcu_queue(struct rcu_data *rdp,
							   struct trcu_head *head,
							   void (*func)(struct trcu_head *),
							   bool lazy)
{
	long n = call_rcu_push(rdp, head, func), pending;
	int st;

	/* seq_cst, after the seq_cst CAS: pairs with rcu_nocb_shutdown()'s
	 * store before its sweep.  Set: the offload threads are gone and the
	 * sweep may have missed this push. */
	if (TRCU_UNLIKELY(atomic_load_explicit(&nocb.stopped, memory_order_seq_cst)))
		return CR_STRANDED;
	if (lazy && !atomic_load_explicit(&rdp->lazy_queued, memory_order_relaxed)) {
		atomic_store_explicit(&rdp->lazy_queued, true, memory_order_relaxed);
	} else if (!lazy &&
		   TRCU_UNLIKELY(atomic_load_explicit(&rdp->lazy_queued, memory_order_relaxed))) {
		/* A hurried callback behind this thread's lazy ones: the flag
		 * would make the offload thread's next pass sleep lazy_flush_ms
		 * with this one too (a wakeme-path synchronize_rcu() waited
		 * 10 s).  Clear it and wake the thread: its seq_cst increment
		 * orders the clear before it, pairing with the offload loop's
		 * seq_cst ->futex read before its pass; a pass that read the
		 * flag still set sleeps on a stale ->futex value and returns. */
		atomic_store_explicit(&rdp->lazy_queued, false, memory_order_relaxed);
		nocb_wake(rdp->grp);
	}
	/* Wake the offload thread only if it sleeps with nothing to do (or
	 * only lazy work, for a non-lazy callback): one wake-up per batch. */
	st = atomic_load_explicit(&rdp->grp->state, memory_order_seq_cst);
	pending = n - atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed);
	/* A batch held back (nocb_batch_sleep()) ends early for a flood or a
	 * thread waiting for the offload thread.  seq_cst ->state load after
	 * the seq_cst push: pairs with nocb_batch_sleep()'s NOCB_BATCH store
	 * followed by its waiter-count load (a wakeme-path synchronize_rcu()
	 * counted itself before this push). */
	if (st == NOCB_IDLE || (st == NOCB_LAZY && !lazy) ||
	    (st == NOCB_BATCH && (pending > TUN(qhimark) || rcu_cb_waiters()))) {
		if (atomic_exchange_explicit(&rdp->grp->state, NOCB_AWAKE, memory_order_seq_cst) != NOCB_AWAKE)
			nocb_wake(rdp->grp);
	}
	if (TRCU_UNLIKELY(pending > TUN(qhimark)))
		return call_rcu_flood(rdp, pending) ? CR_PUSHBACK : CR_DONE;
	if (rdp->qlen_last_fqs_check)
		rdp->qlen_last_fqs_check = 0;
	return CR_DONE;
}

static inline void call_rcu_then(struct rcu_data *rdp, enum call_rcu_then then)
{
	if (TRCU_UNLIKELY(then == CR_PUSHBACK))
		nocb_pushback(rdp);
	else if (TRCU_UNLIKELY(then == CR_STRANDED))
		call_rcu_stranded(rdp);
}

/*
 * The calling thread has no rcu_data and none can be allocated, or no
 * offload thread can be started (out of memory, thread limit): the shared
 * rcu_data, under its lock (never aborts, as liburcu's call_rcu() does not
 * once its default worker runs); its flood push-back after the unlock.
 * While no offload thread runs, its bypass parks the callbacks: call_rcu()
 * never runs a callback nor waits for a grace period (the caller may hold
 * a lock a callback or a reader takes, or be an online QSBR thread holding
 * references); they run once an offload thread starts, or in rcu_barrier()
 * or trcu_shutdown() (nocb_run_stranded()).  A push that sees the offload
 * threads stopped runs what it can, as after trcu_shutdown().
 */
static rcu_cold void call_rcu_shared(struct trcu_head *head, void (*func)(struct trcu_head *),
				     bool lazy)
{
	struct rcu_data *rdp = rdp_shared_get();
	enum call_rcu_then then = CR_DONE;
	bool linked;

	rcu_busy_enter();   /* shared_lock: see rdp_try_get() */
	pthread_mutex_lock(&nocb.shared_lock);
	/* Acquire: pairs with nocb_link_shared_locked()'s release (->grp). */
	linked = atomic_load_explicit(&nocb.shared_linked, memory_order_acquire);
	if (linked)
		then = call_rcu_queue(rdp, head, func, lazy);
	else
		(void)call_rcu_push(rdp, head, func);
	pthread_mutex_unlock(&nocb.shared_lock);
	/* Parked: seq_cst after the push's seq_cst CAS, pairs with the store
	 * of ->stopped in rcu_nocb_shutdown() before its last run of the
	 * shared callbacks: it runs this one, or this call sees it set. */
	if (!linked && atomic_load_explicit(&nocb.stopped, memory_order_seq_cst))
		then = CR_STRANDED;
	rcu_busy_exit();
	call_rcu_then(rdp, then);
}

void call_rcu_core(struct trcu_head *head, void (*func)(struct trcu_head *), bool lazy)
{
	struct rcu_data *rdp;

	if (TRCU_UNLIKELY(!head))
		sys_die("call_rcu(): NULL rcu_head");
	if (TRCU_UNLIKELY(!func)) {
		sys_warn("call_rcu(%p): NULL callback function: callback not queued", (void *)head);
		return;
	}
	debug_rcu_head_queue(head, func);
	/* ThreadSanitizer: the caller's writes before the callback (src/tsan.h). */
	rcu_tsan_release(head);
	if (TRCU_UNLIKELY(atomic_load_explicit(&nocb.stopping, memory_order_acquire))) {
		call_rcu_after_shutdown(head, func);
		return;
	}
	rdp = rdp_try_get();
	if (TRCU_UNLIKELY(!rdp)) {
		call_rcu_shared(head, func, lazy);
		return;
	}
	call_rcu_then(rdp, call_rcu_queue(rdp, head, func, lazy));
}

void call_rcu_kfree(struct trcu_head *head, size_t offset)
{
	/* The tag rcu_cb_invoke() reads: never NULL, below every function. */
	call_rcu_core(head, (void (*)(struct trcu_head *))(offset + 1), false);
}

void trcu_call_rcu(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	call_rcu_core(head, func, TUN(lazy) != 0);
}

void trcu_call_rcu_hurry(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	call_rcu_core(head, func, false);
}

