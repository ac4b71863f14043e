/* SPDX-License-Identifier: MIT */
/*
 * synchronize_rcu() and synchronize_rcu_expedited(): the entry points, and
 * the three ways a caller waits, named by enum rcu_sync_path and chosen per
 * call by the normal_wake_from_gp tunable: through a callback queued behind
 * the caller's others (wakeme, the kernel's wait_rcu_gp()), on the waiter
 * list woken from the GP (list, src/sync_list.c) or on the GP-end futex
 * (futex, src/gp_drive.c).
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
#include "nocb.h"
#include "sync_hint.h"
#include "sync_list.h"
#include "tsan.h"

/*
 * Does a list-path synchronize_rcu() caller drive its GP itself (with
 * drive_from_caller=1; a futex-path caller always does)?  Only while at
 * most sr_drive_max futex- or list-path callers (itself included; wakeme
 * callers are not counted) wait (src/tunables.c gives the default).  Such
 * callers have CPUs to run on, and driving where it stands costs no
 * wake-up; the one that wins gp_mutex serves the others at each GP end.
 * Beyond it callers queue for CPUs, and the GP kthread drives GP after GP
 * and wakes each GP's waiters, as in the kernel, the batch growing while it
 * wakes: callers taking turns there would each drive a short GP and hand
 * off, more GPs for fewer calls.  The futex path keeps turns: there the
 * driver is served first.  Figures: docs/decisions.md, "sr_drive_max" and
 * "Who drives and who is woken".
 *
 * *takeover: take a GP over from the GP kthread or an offload thread only
 * when alone (the caller's own callbacks' GP, say).  With company the
 * kthread serves everyone already, and callers taking its GPs over in turn
 * would cost calls (docs/decisions.md, "sr_drive_max").
 *
 * The count is a hint (relaxed): callers arriving together may both leave
 * the GP to the kthread, which each of them wakes, or both try to drive,
 * and the one that loses the trylock to a caller becomes the next driver,
 * asleep on gp_mutex (rcu_gp_queue_driver(), one at a time), or polls and
 * then waits on its node with a bound (the winner's hand-off wakes the
 * kthread for it unless a poller or the next driver will drive:
 * rcu_gp_handoff()).
 */
static bool rcu_sr_caller_may_drive(bool *takeover)
{
	long n = atomic_load_explicit(&rcu_state.nr_sync_waiters, memory_order_relaxed);

	*takeover = n <= 1;
	/* No GP kthread (its start failed): nobody else would drive. */
	if (TRCU_UNLIKELY(rcu_gp_kthread_missing()))
		return true;
	return TUN(drive_from_caller) && n <= TUN(sr_drive_max);
}

/*
 * Drive (gp_mutex held) until our node is done, then hand off.  A poller
 * that won gp_mutex (polling) still counts in nr_sr_spinning while it
 * drives: a driver leaving meanwhile sees it and leaves the GPs to it
 * instead of waking the GP kthread (rcu_gp_handoff()).  It stops counting
 * after its unlock and before its own hand-off: seq_cst decrement and
 * fence, then the hand-off's loads; pairs with the fence between another
 * driver's unlock and its load of the count, as a poller's exit does in
 * rcu_sr_spin().
 */
static void rcu_sr_drive(struct sr_node *node, unsigned long s, struct rcu_thread *r,
			 bool polling)
{
	TRACE_RECORD("sr_drive", 0);
	while (!rcu_sr_done(node) && (!rcu_seq_done(s) || rcu_gp_needed()))
		rcu_gp_one(r, RCU_DRV_CALLER);
	rcu_gp_unlock();
	if (polling) {
		atomic_fetch_sub_explicit(&rcu_state.nr_sr_spinning, 1, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
	}
	rcu_gp_handoff(RCU_DRV_CALLER, true);
}

/*
 * Before sleeping on its node, a list-path caller polls it for up to
 * sr_spin_us (liburcu's waiters poll a bounded number of times before their
 * futex wait): a GP with no holdout ends within a microsecond or two, and a
 * futex wake-up costs the waker a syscall and the sleeper tens of
 * microseconds.  A poller that may drive becomes the driver as soon as
 * gp_mutex is free and its GP is not done (liburcu's next leader) instead
 * of waiting for the GP kthread; while it polls, a driver leaving with GPs
 * still wanted does not wake the GP kthread (rcu_gp_handoff()): the poller
 * drives, or hands off itself when it leaves, done or not.
 * Returns true once the node is completed, false when the bound passed.
 */
static bool rcu_sr_spin(struct sr_node *node, unsigned long s, bool may_drive,
			struct rcu_thread *r)
{
	long spin = TUN(sr_spin_us) * 1000L;
	long until;

	/* Done already (we drove our GP, say): never counted in
	 * nr_sr_spinning, so no driver left its hand-off to us (the count's
	 * seq_cst decrement below pairs with a driver's fence and load of it
	 * in rcu_gp_handoff(); with no increment there is nothing to pair),
	 * and no clock read. */
	if (!spin || !may_drive || rcu_sr_done(node))
		return rcu_sr_done(node);
	until = sys_now_ns() + spin;
	atomic_fetch_add_explicit(&rcu_state.nr_sr_spinning, 1, memory_order_relaxed);
	for (;;) {
		/* A next driver queued on gp_mutex (or a takeover asked for):
		 * nobody else may take the mutex until it has, so polling
		 * only keeps the CPU it needs to run on, and on a small
		 * machine makes its GP's membarrier an IPI: stop, as when
		 * the bound passed (docs/decisions.md, "The next driver
		 * sleeps on gp_mutex").  A hint (relaxed): a late look costs
		 * a few more polls. */
		bool last = sys_now_ns() >= until ||
			    atomic_load_explicit(&rcu_state.takeover_req, memory_order_relaxed) > 0;

		for (int i = 0; i < 16; i++) {
			if (rcu_sr_done(node))
				break;
			cpu_relax();
		}
		if (last) {
			/*
			 * seq_cst, then the trylock below: pairs with the
			 * fence between a driver's unlock and its load of
			 * nr_sr_spinning in rcu_gp_handoff() (store
			 * buffering): either that driver sees us gone and
			 * wakes the GP kthread, or our trylock (or our own
			 * hand-off, when our GP ended) sees its unlock.
			 */
			atomic_fetch_sub_explicit(&rcu_state.nr_sr_spinning, 1,
						  memory_order_seq_cst);
			atomic_thread_fence(memory_order_seq_cst);
		}
		if (rcu_sr_done(node)) {
			/*
			 * A driver may have left its hand-off to us
			 * (rcu_gp_handoff() saw us polling): take it over
			 * on the way out.  seq_cst decrement and fence, then
			 * the hand-off's loads: pairs with the driver's fence
			 * between its unlock and its load of the count.
			 */
			if (!last) {
				atomic_fetch_sub_explicit(&rcu_state.nr_sr_spinning, 1,
							  memory_order_seq_cst);
				atomic_thread_fence(memory_order_seq_cst);
			}
			rcu_gp_handoff(RCU_DRV_CALLER, true);
			return true;
		}
		if (!rcu_seq_done(s) && rcu_gp_acquire_driver(false)) {
			rcu_sr_drive(node, s, r, !last);
			return rcu_sr_done(node);
		}
		if (last) {
			/* The trylock above failed: its holder hands off after
			 * its unlock and sees us gone.  Not tried (our GP ended,
			 * our node waits for its wake-up): hand off as when done. */
			if (rcu_seq_done(s))
				rcu_gp_handoff(RCU_DRV_CALLER, true);
			return false;
		}
	}
}

/*
 * A caller alone (sr_drive_alone; no other synchronize_rcu() caller
 * counted, no waiter on the list) that wins gp_mutex at once drives its GP
 * without a list node, as the futex path's driver does: the node's push,
 * its GP's wait head, the cleanup's wake and the count of list waiters are
 * work an idle synchronize_rcu() does not need (docs/decisions.md, "The
 * idle grace period").  The snapshot after winning: the full barrier in
 * rcu_gp_snap() orders the caller's updates before it, and the GP ending
 * at s starts after both; driving until s is done leaves no request of
 * ours undone.  Callers that arrive meanwhile push nodes that our GP inits
 * cover, or that the hand-off serves (rcu_gp_handoff(), self_sr false: no
 * node of ours is counted).  A caller's GPs are never handed over
 * (rcu_gp_one() returns true for RCU_DRV_CALLER).  False: not alone, or
 * gp_mutex taken or parked; the list path follows.
 */
static bool rcu_sr_drive_alone(struct rcu_thread *r)
{
	unsigned long s;

	if (!TUN(sr_drive_alone) || !TUN(drive_from_caller) ||
	    atomic_load_explicit(&rcu_state.nr_sync_waiters, memory_order_relaxed) != 1 ||
	    rcu_sr_waiters() || !rcu_gp_acquire_driver(false))
		return false;
	s = rcu_gp_snap();
	rcu_start_this_gp(s, r);
	TRACE_RECORD("sr_alone", 0);
	while (!rcu_seq_done(s))
		rcu_gp_one(r, RCU_DRV_CALLER);
	rcu_gp_unlock();
	rcu_gp_handoff(RCU_DRV_CALLER, false);
	return true;
}

/*
 * Seed 004: add a node to the waiter list, request the GP that will cover
 * it, drive it if we may, poll the node briefly, and sleep on it until a GP
 * cleanup (or its work item) wakes us.
 */
static void rcu_wait_gp_sr(void)
{
	struct rcu_thread *r = &rcu_thread_tls;
	bool registered = rcu_thread_registered(r);
	int was_online = registered ? rcu_enter_gp_wait(r) : 0;
	struct sr_node node;
	unsigned long s, si;

	TRACE_RECORD("sr_enter", 0);
	rcu_sync_caller_enter();
	if (rcu_sr_drive_alone(registered ? r : NULL)) {
		rcu_sync_caller_exit();
		if (registered)
			rcu_exit_gp_wait(r, was_online);
		return;
	}
	rcu_sr_normal_add_req(&node);
	/* Full barrier (in rcu_gp_snap): the caller's updates and the node's
	 * push before the snapshot; the GP ending at s starts after both. */
	s = rcu_gp_snap();
	/* A GP whose init began may have pushed its wait head behind our node
	 * without covering it: then ours is the next one.  seq_cst pairs with
	 * the store in rcu_gp_init() (tests/sync/test_sync_late_node_asks_next_gp.c). */
	si = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.sr_init_seq, memory_order_seq_cst));
	if (ULONG_CMP_LT(s, si))
		s = si;
	rcu_start_this_gp(s, registered ? r : NULL);
	for (;;) {
		bool takeover, drive = rcu_sr_caller_may_drive(&takeover);

		/* Acquire: pairs with the exchange in trcu_shutdown(); a miss
		 * is caught by the bounded wait below. */
		if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
			drive = takeover = true;
		if (drive && rcu_gp_acquire_driver(takeover)) {
			rcu_sr_drive(&node, s, registered ? r : NULL, false);
		} else if (drive && !rcu_sr_done(&node) && rcu_gp_queue_driver()) {
			/* Not when our node is done (a GP that ended covered
			 * it): the holder may still run GPs for others.
			 * Counted in nr_sr_spinning since the queueing: the
			 * holder's hand-off left the GPs to us. */
			rcu_sr_drive(&node, s, registered ? r : NULL, true);
		} else {
			if (!drive)
				rcu_gp_kthread_wake();
			/* Not driving: end an unhurried tick (after our count,
			 * rcu_sync_caller_enter()); one that took a parked GP
			 * over spins itself. */
			rcu_gp_hurry();
		}
		if (rcu_sr_spin(&node, s, drive, registered ? r : NULL)) {
			rcu_sr_wait_timeout(&node, 0);   /* done: the waiter's exit steps */
			break;
		}
		/* Bounded, whether we may drive or not: a driver that stops
		 * before covering us hands off to the GP kthread, and that
		 * hand-off may race with our failed trylock; and trcu_shutdown()
		 * may stop the kthread (or keep it from starting) before our
		 * GP, which we then drive ourselves, having seen shutting_down
		 * (tests/process/test_shutdown_releases_sync_waiters.c; a shutdown that ran the pending
		 * GPs itself could hang process exit behind a reader).  The
		 * timer this arms costs a few % of calls/s with 64 callers on a
		 * 2-CPU machine; not hanging comes first. */
		TRACE_RECORD("sr_wait", drive);
		if (rcu_sr_wait_timeout(&node, RCU_WAIT_RECHECK_NS))
			break;
		rcu_note_sync_resume();
	}
	/*
	 * Our node can be covered by a GP that started between its push and
	 * our snapshot, which then named the GP after it: we leave with a
	 * request for a GP nobody else may need, whether we drove or not.
	 * Nobody would drive it, and a later start_poll cookie naming it
	 * would find it already requested: a polled cookie that never
	 * completes (torture: "writer made no progress for 30 s").  The GP
	 * kthread runs it (tests/sync/test_sync_extra_request_driven.c and
	 * test_sync_extra_request_driven_after_failed_trylock.c).
	 */
	if (!rcu_seq_done(s))
		rcu_gp_kthread_wake();
	rcu_sync_caller_exit();
	TRACE_RECORD("sr_ret", 0);
	if (registered)
		rcu_exit_gp_wait(r, was_online);
}

/* ---- synchronize_rcu() through a callback (the kernel's wait_rcu_gp()) ---- */

struct rcu_synchronize {
	struct trcu_head head;
	_Atomic uint32_t done;
};

static void wakeme_after_rcu(struct trcu_head *rhp)
{
	struct rcu_synchronize *rs = (struct rcu_synchronize *)rhp;

	/* Counted before the waiter can see done: it records the count when
	 * it resumes (a count after that would look like a caller never run). */
	rcu_note_sync_wake();
	/* Release: the GP's end (seen by this callback) and the count before
	 * the waiter returns; pairs with the acquire load in
	 * rcu_wait_gp_wakeme(). */
	atomic_store_explicit(&rs->done, 1, memory_order_release);
	sys_futex_wake(&rs->done, 1);
}

/*
 * The wakeme path: queue a callback that wakes us and sleep.  Its latency
 * includes every callback queued before it on this thread's list (seed 004's
 * problem); normal_wake_from_gp=1 and 2 (the defaults) avoid it.
 */
static bool rcu_wait_gp_wakeme(void)
{
	struct rcu_thread *r = rcu_thread_self();
	struct rcu_synchronize rs;
	bool registered;
	int was;

	/* A grace period never allocates: without memory for this thread's
	 * callback state the caller waits on the GP-end futex instead. */
	if (!rcu_cb_ready())
		return false;
	registered = rcu_thread_registered(r);
	was = registered ? rcu_enter_gp_wait(r) : 0;

	atomic_init(&rs.done, 0);
	rcu_cb_waiter_enter_hurry();
	call_rcu_core(&rs.head, wakeme_after_rcu, false);
	/* The callback's futex wake after its store only hashes the address:
	 * returning (and reusing rs) as soon as done is set is safe. */
	while (!atomic_load_explicit(&rs.done, memory_order_acquire))
		sys_futex_wait(&rs.done, 0, -1);
	rcu_cb_waiter_exit();
	rcu_note_sync_resume();
	if (registered)
		rcu_exit_gp_wait(r, was);
	return true;
}

static void rcu_synchronize_normal(void)
{
	unsigned long s;

	switch ((enum rcu_sync_path)TUN(normal_wake_from_gp)) {
	case RCU_SYNC_WAKEME:
		/* Not from a callback: the wake-up callback would be queued
		 * behind the one waiting for it, on the same offload thread
		 * (tests/callbacks/test_gp_wait_from_callback.c); the GP-end futex serves
		 * that caller. */
		if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire) ||
		    rcu_nocb_self())
			break;
		if (rcu_wait_gp_wakeme())   /* the kernel's wait_rcu_gp() */
			return;
		break;                      /* no memory for a callback: the futex */
	case RCU_SYNC_LIST:
		rcu_wait_gp_sr();       /* the waiter list */
		return;
	case RCU_SYNC_FUTEX:
	default:
		break;                  /* woken by the GP-end futex */
	}
	/* Full barrier: the caller's updates before the snapshot; pairs with
	 * the GP-start barrier of the grace period that satisfies it. */
	atomic_thread_fence(memory_order_seq_cst);
	s = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire));
	rcu_wait_gp(s, false, RCU_DRV_CALLER);
}

void trcu_synchronize_rcu(void)
{
	rcu_check_blocking_allowed("synchronize_rcu()");
	rcu_init();
	rcu_wait_mark(&rcu_thread_tls.in_sync, true);
	rcu_synchronize_normal();
	rcu_wait_mark(&rcu_thread_tls.in_sync, false);
	rcu_tsan_gp_end();
}

void trcu_synchronize_rcu_expedited(void)
{
	unsigned long s;

	rcu_check_blocking_allowed("synchronize_rcu_expedited()");
	rcu_init();
	rcu_wait_mark(&rcu_thread_tls.in_sync, true);
	atomic_fetch_add_explicit(&rcu_state.exp_waiters, 1, memory_order_relaxed);
	/* Full barrier, as in rcu_synchronize_normal(). */
	atomic_thread_fence(memory_order_seq_cst);
	s = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire));
	rcu_wait_gp(s, true, RCU_DRV_CALLER);
	atomic_fetch_sub_explicit(&rcu_state.exp_waiters, 1, memory_order_relaxed);
	rcu_wait_mark(&rcu_thread_tls.in_sync, false);
	rcu_tsan_gp_end();
}
