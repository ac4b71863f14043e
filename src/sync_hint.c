/* SPDX-License-Identifier: MIT */
/*
 * Hints only: the offload threads' deferral to synchronize_rcu() callers.
 * Counters of callers waiting, woken and resumed, and of threads waiting
 * for an offload thread; an offload thread reads them to decide whether to
 * hold its callbacks back for a moment; the GP driver's hand-off reads two
 * of them to decide whom to wake.  A stale value costs one nap, one missed
 * one, or a waiter's bounded recheck, never correctness: nothing here
 * orders the memory of anybody's updates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "gp.h"
#include "trace.h"
#include "sync_hint.h"

/* ---- Offload threads defer to synchronize_rcu() callers ---------------------------------- */

/*
 * A woken synchronize_rcu() caller is placed on its waker's CPU or on one
 * that looks idle; on a small machine that is often where an offload thread
 * is about to invoke a long batch, and the caller then waits for the whole
 * batch: the scheduler protects the running thread's slice whatever its nice
 * value, and a yield does not help a caller that has used more than its
 * share (docs/decisions.md, "Who drives and who is woken").  So wakers count here, woken callers record the count once
 * they run, and an offload thread that sees the two differ sleeps until a
 * caller has run, at most nocb_defer_us (nocb_defer_to_woken()): the
 * callbacks can wait, the caller is blocked.  The counters are relaxed (a
 * hint: a stale value costs one short deferral or one missed one, never
 * correctness).
 */
void rcu_note_sync_wake(void)
{
	atomic_fetch_add_explicit(&rcu_state.sync_wake_seq, 1, memory_order_relaxed);
}

void rcu_note_sync_resume(void)
{
	unsigned long w = atomic_load_explicit(&rcu_state.sync_wake_seq, memory_order_relaxed);

	/* Write only on a change: the line stays shared while nobody waits. */
	if (atomic_load_explicit(&rcu_state.sync_resume_seq, memory_order_relaxed) != w)
		atomic_store_explicit(&rcu_state.sync_resume_seq, w, memory_order_relaxed);
}

/*
 * Should an offload thread hold its callbacks back?  Yes while a woken
 * synchronize_rcu() caller has not run yet, and while a caller waits for a
 * GP that has been requested but not ended: its driver (the GP kthread,
 * say) may be the thread this one just preempted, the one whose wake-up
 * gave this thread the CPU (docs/decisions.md, "Offload threads nap only
 * before long batches").  The key names the situation, so that each is
 * deferred to once.
 */
/* A synchronize_rcu() caller (futex or list path; the wakeme path's caller
 * needs the offload thread to run its callback) starts or ends its wait.
 * A hint, as above; the increment is seq_cst for rcu_gp_hurry() (a locked
 * add on x86 whatever the order). */
void rcu_sync_caller_enter(void)
{
	atomic_fetch_add_explicit(&rcu_state.nr_sync_waiters, 1, memory_order_seq_cst);
}

void rcu_sync_caller_exit(void)
{
	atomic_fetch_sub_explicit(&rcu_state.nr_sync_waiters, 1, memory_order_relaxed);
	rcu_note_sync_resume();
}

/*
 * A thread waits for an offload thread to run callbacks (a wakeme-path
 * synchronize_rcu(), an rcu_barrier(), a flood push-back): counted so that a
 * caller driving a GP still wakes the offload threads at its end
 * (rcu_wake_gp_waiters()).  Relaxed, a hint: a miss costs at most the offload
 * thread's recheck interval, never a hang.
 */
void rcu_cb_waiter_enter(void)
{
	/* seq_cst: pairs with nocb_batch_sleep()'s NOCB_BATCH store followed
	 * by its load of this count (rcu_cb_waiters()); the waiter's
	 * call_rcu() then pushes and loads that state: one of the two sees
	 * the other, so a batch never holds back a waiter's callback. */
	atomic_fetch_add_explicit(&rcu_state.nr_cb_waiters, 1, memory_order_seq_cst);
}

void rcu_cb_waiter_exit(void)
{
	atomic_fetch_sub_explicit(&rcu_state.nr_cb_waiters, 1, memory_order_relaxed);
}

/* Someone waits for an offload thread now. */
bool rcu_cb_waiters(void)
{
	/* seq_cst: pairs with rcu_cb_waiter_enter()'s increment. */
	return atomic_load_explicit(&rcu_state.nr_cb_waiters, memory_order_seq_cst) > 0;
}

/*
 * Does any thread wait for a grace period now: a synchronize_rcu() caller
 * (futex, list or wakeme path) or a thread waiting for callbacks?  An
 * asynchronous GP driver that sees none lets its holdouts have a tick
 * instead of spinning (rcu_gp_fqs_loop()).  One that comes during the
 * tick kicks the driver (rcu_gp_hurry()), which then spins for it.
 */
bool rcu_gp_anyone_waits(void)
{
	/* seq_cst: pairs with the waiter's increment and rcu_gp_hurry()
	 * (the other two counts' loads are seq_cst already). */
	return atomic_load_explicit(&rcu_state.nr_sync_waiters, memory_order_seq_cst) > 0 ||
	       rcu_sr_waiters() || rcu_cb_waiters();
}

bool rcu_sync_caller_pending(struct rcu_sync_key *key)
{
	key->wake = atomic_load_explicit(&rcu_state.sync_wake_seq, memory_order_relaxed);
	key->need = atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_relaxed);
	key->woken = atomic_load_explicit(&rcu_state.sync_resume_seq, memory_order_relaxed) !=
		     key->wake;
	if (key->woken)
		return true;
	if (!atomic_load_explicit(&rcu_state.nr_sync_waiters, memory_order_relaxed) &&
	    !rcu_sr_waiters())
		return false;
	return ULONG_CMP_LT(atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed),
			    key->need);
}

/*
 * Is k (pending) the situation `old` was?  A woken caller not yet run is one
 * situation per wake count, whatever GPs are requested meanwhile: a count
 * left stale (a wake counted for callers that had already returned) made
 * an offload thread nap before every batch, each GP moving gp_seq_needed
 * (tests/callbacks/test_nocb_defers_once_per_wake.c: 9 naps in 8 batches, now 1).
 */
bool rcu_sync_key_same(const struct rcu_sync_key *k, const struct rcu_sync_key *old)
{
	return k->wake == old->wake && (k->woken || k->need == old->need);
}

/*
 * Nap until the situation `key` has changed, or timeout_ns.  Naps, not a
 * futex wait the caller ends: a wake-up from the caller would hand the
 * offload thread the caller's CPU at once, before the caller returns
 * (docs/decisions.md, "Offload threads nap only before long batches").  A
 * nap ends on a timer, by which time the caller has returned.
 */
#define RCU_SYNC_NAP_NS (20 * 1000L)

void rcu_sync_wait_resume(const struct rcu_sync_key *key, long timeout_ns)
{
	long end = sys_now_ns() + timeout_ns;
	struct rcu_sync_key k;

	while (rcu_sync_caller_pending(&k) && rcu_sync_key_same(&k, key)) {
		long left = end - sys_now_ns();

		if (left <= 0)
			return;
		sys_sleep_ns(left < RCU_SYNC_NAP_NS ? left : RCU_SYNC_NAP_NS);
	}
}

/*
 * The waiter list's callers that have not returned yet (a caller that drove
 * counts its own node).  A count, not a look at the list: only the GP
 * driver (under gp_mutex) may dereference list nodes, because a woken
 * waiter's node (on its stack) is gone as soon as it returns.  seq_cst:
 * the hand-off (rcu_gp_handoff()) reads it after its seq_cst load of
 * nr_gp_waiters; a miss costs the waiter its bounded recheck.
 */
static _Atomic long sr_nr_waiting;

void rcu_sr_waiting_add(void)
{
	atomic_fetch_add_explicit(&sr_nr_waiting, 1, memory_order_seq_cst);
}

void rcu_sr_waiting_sub(void)
{
	atomic_fetch_sub_explicit(&sr_nr_waiting, 1, memory_order_relaxed);
}

void rcu_sr_waiting_fork_child(void)
{
	atomic_store_explicit(&sr_nr_waiting, 0, memory_order_relaxed);
}

long rcu_sr_nr_waiting(void)
{
	return atomic_load_explicit(&sr_nr_waiting, memory_order_seq_cst);
}

bool rcu_sr_waiters(void)
{
	return rcu_sr_nr_waiting() > 0;
}
