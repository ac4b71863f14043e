/* SPDX-License-Identifier: MIT */
/*
 * The grace-period state's fork() steps (called by src/fork.c): take the
 * GP kthread's start lock, ofl_lock and the tree's node locks around the
 * fork; in the child, re-initialise them, forget the other threads, and
 * restart a grace period in flight over the child's slots.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "internal.h"
#include "gp.h"

/* ofl_lock, then the current tree's nodes: the tree is only replaced under
 * ofl_lock, and no node lock is ever held while another is taken. */
void rcu_fork_prepare(void)
{
	struct rcu_tree *t;

	rcu_gp_kthread_fork_prepare();
	pthread_mutex_lock(&rcu_state.ofl_lock);
	t = rcu_tree();
	for (int n = 0; t && n < t->nr_nodes; n++)
		pthread_mutex_lock(&t->nodes[n].lock);
}

void rcu_fork_parent(void)
{
	struct rcu_tree *t = rcu_tree();

	for (int n = 0; t && n < t->nr_nodes; n++)
		pthread_mutex_unlock(&t->nodes[n].lock);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	rcu_gp_kthread_fork_parent();
}

/*
 * The furthest GP requested anywhere: a requester that died between a
 * node's ->gp_seq_needed and rcu_state's leaves a node claiming a request
 * that the root never saw, which would stop every later request for it at
 * that node.  Make them all agree (at worst one extra GP runs).
 */
static void rcu_fork_child_needed(struct rcu_tree *t)
{
	unsigned long need = atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_relaxed);

	for (int n = 0; n < t->nr_nodes; n++)
		if (ULONG_CMP_LT(need, t->nodes[n].gp_seq_needed))
			need = t->nodes[n].gp_seq_needed;
	for (int n = 0; n < t->nr_nodes; n++)
		t->nodes[n].gp_seq_needed = need;
	atomic_store_explicit(&rcu_state.gp_seq_needed, need, memory_order_relaxed);
}

/*
 * Only the forking thread exists.  Every lock is re-initialised (the ones
 * prepare took, and the GP mutex, which a driver may have held), every
 * waiter count and driver field is cleared, the GP kthread is marked not
 * started, and the other threads' slots are dropped.  A grace period in
 * flight stays in flight (a cookie taken before the fork may name it, and
 * the forking thread may be inside a section it waits for): it is started
 * again over the child's slots, with a new reader generation, so that only
 * what the forking thread does decides when it ends.  No barrier is needed
 * for that restart: no other thread exists, and threads created later are
 * ordered after it by pthread_create().
 */
void rcu_fork_child(void)
{
	struct rcu_tree *t = rcu_tree();
	unsigned long gps;

	/* pthread_mutex_init() over a copy that a thread which does not
	 * exist here (or this one, in prepare) holds: the child's only way to
	 * a usable lock. */
	rcu_gp_kthread_fork_child();
	pthread_mutex_init(&rcu_state.ofl_lock, NULL);
	pthread_mutex_init(&rcu_state.gp_mutex, NULL);
	rcu_stall_fork_child();
	rcu_qsbr_poll_fork_child();
	if (!t)
		return;   /* the RCU core was never initialised */
	for (int n = 0; n < t->nr_nodes; n++)
		pthread_mutex_init(&t->nodes[n].lock, NULL);
	rcu_state.driver = NULL;
	atomic_store_explicit(&rcu_state.driver_yieldable, false, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.takeover_req, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.gp_parked, false, memory_order_relaxed);   /* its driver is gone */
	atomic_store_explicit(&rcu_state.gp_unhurried, false, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.driver_sleeping, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.kthread_sleeping, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.nr_gp_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.nr_sync_gp_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.nr_sync_waiters, 0, memory_order_relaxed);
	/* Pollers of the parent are not in the child: a count left here would
	 * keep drivers from waking the GP kthread (rcu_gp_handoff()). */
	atomic_store_explicit(&rcu_state.nr_sr_spinning, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.nr_cb_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.exp_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.sync_resume_seq,
			      atomic_load_explicit(&rcu_state.sync_wake_seq, memory_order_relaxed),
			      memory_order_relaxed);
	rcu_slots_fork_child(t);
	if (rcu_task_hooks_get())
		rcu_task_hooks_get()->fork_child();   /* the other workers' tasks do not exist here */
	rcu_fork_child_needed(t);
	gps = atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed);
	/* A GP init cut short by the fork (before its gp_seq store) left only
	 * a wait head, which the sr_normal reset drops. */
	atomic_store_explicit(&rcu_state.sr_init_seq, gps, memory_order_relaxed);
	rcu_state.sr_uncovered = false;
	rcu_state.gp_end_wake = false;
	rcu_state.expedited = false;
	/* exp_seq starts after gp_seq and ends before it: in flight only with
	 * this GP. */
	rcu_state.exp_at_init = rcu_seq_state(gps) &&
		rcu_seq_state(atomic_load_explicit(&rcu_state.exp_seq, memory_order_relaxed));
	/* The dead threads' bits: rcu_gp_init_tree() skips nodes with
	 * nothing online below, trusting them to be empty already. */
	for (int n = 0; n < t->nr_nodes; n++)
		t->nodes[n].qsmask = 0;
	atomic_store_explicit(&rcu_state.gp_root_done, false, memory_order_relaxed);
	if (rcu_seq_state(gps)) {
		/* Sections that began before the fork carry an older generation
		 * (rcu_watching_qs()): they count only once left. */
		rcu_state.gp_gen = __atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED) + 2;
		__atomic_store_n(&trcu_reader_gen, rcu_state.gp_gen, __ATOMIC_RELAXED);
		rcu_gp_init_tree(gps);
		/* On arm64 the GP-end membarrier is then not skipped. */
		atomic_store_explicit(&rcu_state.gp_dirty_flag, true, memory_order_relaxed);
		rcu_state.gp_start_ns = sys_now_ns();
		rcu_stall_reset();
	}
}

/* A GP still wanted (a polled cookie the child may hold): start the GP
 * kthread for it. */
void rcu_fork_child_kick(void)
{
	if (rcu_tree() && rcu_gp_needed())
		rcu_gp_kthread_wake();
}

