/* SPDX-License-Identifier: MIT */
/*
 * The polled grace-period API: cookies (get_state, start_poll, poll_state,
 * cond_synchronize, the _full variants) over gp_seq and exp_seq, as the
 * kernel's.  A cookie that needs a GP nobody drives asks the GP kthread.
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
#include "tsan.h"

/* ---- Polled grace periods -------------------------------------------------------------------- */

/*
 * Taking and checking a cookie reads only gp_seq and exp_seq, which static
 * initialisers set: no init gate, so these work before first use.  (A
 * check that finds its cookie not done while the GP kthread's start has
 * failed also retries that start, which takes a lock: not from a signal
 * handler, as docs/api.md says of all of them.)  Starting a GP for a
 * cookie needs the tree: the gate.
 */
unsigned long trcu_get_state_synchronize_rcu(void)
{
	/* Full barrier: updates before the cookie are covered by its GP. */
	atomic_thread_fence(memory_order_seq_cst);
	return rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire));
}

/*
 * Polled expedited grace periods (the kernel's
 * start_poll_synchronize_rcu_expedited()): the cookie's GP is requested as
 * start_poll's is, and marked expedited up to it (exp_poll_seq, raised by
 * a CAS loop), so that its driver, the GP kthread or whoever takes it,
 * runs it without sleeps; a driver sleeping in its FQS wait is kicked.
 */
static void rcu_exp_poll_request(unsigned long s)
{
	unsigned long cur = atomic_load_explicit(&rcu_state.exp_poll_seq, memory_order_relaxed);

	/* Relaxed: a hint (rcu_exp_pending()); the kick below wakes a
	 * sleeping driver, whose next check reads it. */
	while (ULONG_CMP_LT(cur, s) &&
	       !atomic_compare_exchange_weak_explicit(&rcu_state.exp_poll_seq, &cur, s,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

/* Request GP s for a polled cookie (expedited: exp) and make sure the GP
 * kthread will run it: woken when this call raised the request, and also
 * when the request was there already but the kthread sleeps or never
 * started (a second guard against a request whose raiser left without
 * it).  seq_cst load: pairs with the kthread's store to ->kthread_sleeping
 * before its rcu_gp_needed() check; a kthread not yet asleep sees the
 * request.  No shared write otherwise.  Expedited: marked before the
 * request, and a driver asleep in its FQS wait is kicked after it.  The
 * caller ran rcu_init(). */
static void rcu_gp_start_poll(unsigned long s, bool exp)
{
	struct rcu_thread *r = &rcu_thread_tls;

	if (exp)
		rcu_exp_poll_request(s);
	if (rcu_start_this_gp(s, r->slot >= 0 ? r : NULL) ||
	    (!rcu_seq_done(s) &&
	     (!rcu_gp_kthread_started() ||
	      atomic_load_explicit(&rcu_state.kthread_sleeping, memory_order_seq_cst))))
		rcu_gp_kthread_wake();
	if (exp)
		rcu_gp_kick_driver();
}

/* start_poll and its expedited and full forms. */
static unsigned long rcu_start_poll(bool exp)
{
	unsigned long s;

	rcu_init();
	s = trcu_get_state_synchronize_rcu();
	rcu_gp_start_poll(s, exp);
	return s;
}

static void rcu_start_poll_full(struct trcu_gp_oldstate *rgosp, bool exp)
{
	rcu_init();
	trcu_get_state_synchronize_rcu_full(rgosp);
	rcu_gp_start_poll(rgosp->rgos_norm, exp);
}

unsigned long trcu_start_poll_synchronize_rcu(void)
{
	return rcu_start_poll(false);
}

unsigned long trcu_start_poll_synchronize_rcu_expedited(void)
{
	return rcu_start_poll(true);
}

void trcu_start_poll_synchronize_rcu_expedited_full(struct trcu_gp_oldstate *rgosp)
{
	rcu_start_poll_full(rgosp, true);
}

void trcu_cond_synchronize_rcu_expedited(unsigned long cookie)
{
	if (!trcu_poll_state_synchronize_rcu(cookie))
		trcu_synchronize_rcu_expedited();
}

void trcu_cond_synchronize_rcu_expedited_full(struct trcu_gp_oldstate *rgosp)
{
	if (!trcu_poll_state_synchronize_rcu_full(rgosp))
		trcu_synchronize_rcu_expedited();
}

bool trcu_same_state_synchronize_rcu(unsigned long a, unsigned long b)
{
	return a == b;
}

/*
 * A cookie found not done.  While the GP kthread's last start has failed
 * (thread limit, no memory), a program that only polls makes no further
 * request, and with no synchronize_rcu() caller and no callbacks nobody
 * else drives its GP: the wake tries the start again (at most once per
 * RCU_WAIT_RECHECK_NS, rcu_gp_kthread_start()), and the kthread, once
 * running, sees the pending request under gp_mutex.
 */
static rcu_cold void rcu_poll_retry_gp_kthread(void)
{
	if (rcu_gp_kthread_missing())
		rcu_gp_kthread_wake();
}

bool trcu_poll_state_synchronize_rcu(unsigned long cookie)
{
	if (cookie == TRCU_GET_STATE_COMPLETED ||
	    rcu_seq_done_exact_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire),
				   cookie)) {
		/* Full barrier: the caller's later accesses (a free) after the
		 * GP end it just observed. */
		atomic_thread_fence(memory_order_seq_cst);
		rcu_tsan_gp_end();
		return true;
	}
	rcu_poll_retry_gp_kthread();
	return false;
}

void trcu_cond_synchronize_rcu(unsigned long cookie)
{
	if (!trcu_poll_state_synchronize_rcu(cookie))
		trcu_synchronize_rcu();
}

unsigned long trcu_get_completed_synchronize_rcu(void)
{
	return TRCU_GET_STATE_COMPLETED;
}

void trcu_get_state_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	/* Full barrier, as in trcu_get_state_synchronize_rcu(). */
	atomic_thread_fence(memory_order_seq_cst);
	rgosp->rgos_norm = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq,
								  memory_order_acquire));
	rgosp->rgos_exp = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.exp_seq,
								 memory_order_acquire));
}

void trcu_start_poll_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	rcu_start_poll_full(rgosp, false);
}

bool trcu_poll_state_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	if (rgosp->rgos_norm == TRCU_GET_STATE_COMPLETED ||
	    rcu_seq_done_exact_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire),
				   rgosp->rgos_norm) ||
	    rgosp->rgos_exp == TRCU_GET_STATE_COMPLETED ||
	    rcu_seq_done_exact_val(atomic_load_explicit(&rcu_state.exp_seq, memory_order_acquire),
				   rgosp->rgos_exp)) {
		/* Full barrier, as in trcu_poll_state_synchronize_rcu(). */
		atomic_thread_fence(memory_order_seq_cst);
		rcu_tsan_gp_end();
		return true;
	}
	rcu_poll_retry_gp_kthread();
	return false;
}

void trcu_cond_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	if (!trcu_poll_state_synchronize_rcu_full(rgosp))
		trcu_synchronize_rcu();
}

void trcu_get_completed_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	rgosp->rgos_norm = TRCU_GET_STATE_COMPLETED;
	rgosp->rgos_exp = TRCU_GET_STATE_COMPLETED;
}

bool trcu_same_state_synchronize_rcu_full(struct trcu_gp_oldstate *a,
					  struct trcu_gp_oldstate *b)
{
	return a->rgos_norm == b->rgos_norm && a->rgos_exp == b->rgos_exp;
}

unsigned long trcu_gp_seq(void)
{
	return atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire);
}
