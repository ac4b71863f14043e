/* SPDX-License-Identifier: MIT */
/*
 * The top of the RCU core: the constructor (the hand-downs, and the
 * one-time init registered with src/state.c's gate, run at first use), the statistics, the fork steps
 * of the grace-period state, process exit and trcu_shutdown().  Everything
 * below is called from here; nothing below calls here.
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
#include "kvfree.h"
#include "task.h"
#include "nocb.h"
#include "sync_list.h"

/* ---- Init, stats, shutdown ------------------------------------------------------------------- */

/* The read side's ordering: fenced when the build says so, when
 * TREERCU_FORCE_FENCED=1, or when membarrier is refused. */
static bool rcu_read_side_fenced(void)
{
	bool force = tun_env_bool("TREERCU_FORCE_FENCED");

#ifdef TREERCU_FENCED
	return true;
#endif
	if (force)
		return true;
	if (!sys_membarrier_register())
		return false;
	sys_warn("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) refused: using the fenced "
		  "read side (a full fence per rcu_read_lock/unlock)");
	return true;
}

/*
 * At process exit (atexit): run the pending callbacks and rcu_free()
 * pointers while grace periods can end, then let the process go.  Exit
 * never waits for a reader: when the exiting thread itself is inside a
 * read-side section or is running a callback, nothing can be waited for;
 * when neither a grace period ends nor a callback runs for exit_wait_ms (a
 * reader stuck in a section), the rest is skipped.  Nor for the program's
 * other threads: what they keep queueing after exit() began gets
 * exit_wait_ms after the first barrier (which ran everything queued
 * before), then is skipped.  Either way one line on stderr says how many
 * were skipped and why, and the exit status is untouched.
 * Nothing is stopped or joined: the process is ending, and a join could
 * wait for a reader.  An explicit trcu_shutdown() does the full job.
 */
/* rcu_free() pointers not freed yet (in blocks filling or queued). */
static long rcu_frees_pending(void)
{
	long queued, freed, fallback;

	kvfree_stats(&queued, &freed, &fallback);
	return queued - freed;
}

/* Seal the partly filled rcu_free() blocks and run every callback, again
 * while callbacks fill new blocks; bounded as rcu_nocb_exit_drain(), whose
 * settling time runs across the rounds. */
static enum rcu_exit_drain rcu_exit_drain(long stuck_ns)
{
	long settle_ns = 0;

	for (int i = 0; i < 100; i++) {
		enum rcu_exit_drain ret;

		kvfree_drain_all();
		ret = rcu_nocb_exit_drain(stuck_ns, &settle_ns);
		if (ret != RCU_EXIT_DRAINED)
			return ret;
		if (kvfree_idle())
			return RCU_EXIT_DRAINED;
		if (settle_ns && sys_now_ns() >= settle_ns)
			return RCU_EXIT_BUSY;
	}
	return RCU_EXIT_BUSY;
}

static void rcu_exit_handler(void)
{
	struct rcu_thread *r = rcu_thread_self();
	bool registered;
	char why[192];
	int was;

	if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
		return;
	if (rcu_section_depth()) {
		rcu_nocb_exit_report("exit() was called inside a read-side critical section",
				     rcu_frees_pending());
		return;
	}
	if (rcu_nocb_self()) {
		rcu_nocb_exit_report("exit() was called from an RCU callback (counted here)",
				     rcu_frees_pending());
		return;
	}
	if (r->in_sync || r->in_barrier || rcu_thread_locked(r)) {
		rcu_nocb_exit_report("exit() was called from a signal handler that interrupted "
				     "the library's own waits on the same thread",
				     rcu_frees_pending());
		return;
	}
	/* Quiescent while it waits, as in synchronize_rcu(): an online QSBR
	 * thread returning from main() would hold up the grace periods. */
	registered = rcu_thread_registered(r);
	was = registered ? rcu_enter_gp_wait(r) : 0;
	switch (rcu_exit_drain(TUN(exit_wait_ms) * 1000000L)) {
	case RCU_EXIT_DRAINED:
		break;
	case RCU_EXIT_STUCK:
		snprintf(why, sizeof(why), "no grace period ended for %ld ms (a reader stuck in "
			 "a read-side critical section?)", TUN(exit_wait_ms));
		rcu_nocb_exit_report(why, rcu_frees_pending());
		break;
	case RCU_EXIT_NO_OFFLOAD:
		rcu_nocb_exit_report("no callback-offload thread could be started",
				     rcu_frees_pending());
		break;
	case RCU_EXIT_BUSY:
		snprintf(why, sizeof(why), "still pending %ld ms after every one queued before "
			 "exit() had run (other threads or callbacks kept queueing)",
			 TUN(exit_wait_ms));
		rcu_nocb_exit_report(why, rcu_frees_pending());
		break;
	}
	if (registered)
		rcu_exit_gp_wait(r, was);
}

static void rcu_init_once(void)
{
	tun_init();
	rcu_state.fenced = rcu_read_side_fenced();
	/* One static node to start with; a registration that needs more
	 * builds the next tree, which a GP start installs. */
	atomic_store_explicit(&rcu_state.tree,
			      rcu_tree_build_first((int)TUN(fanout), (int)TUN(fanout_leaf)),
			      memory_order_release);
	rcu_thread_init();
	kvfree_init();
	atexit(rcu_exit_handler);
}

/*
 * At load, before any thread exists: what needs no environment.  Registers
 * the init, which runs at first use (the environment is read then, threads
 * start later still), and hands the upper layers' functions down
 * (src/stall.c, the GP core and src/thread.c never call up): the callback
 * counts for stall warnings, the task readers' lists for the GP core,
 * threads, stalls and fork.  And the fork handlers, here rather than at
 * first use: pthread_atfork() runs prepare handlers in the reverse order
 * of registration and the others in order, so that treercu's prepare runs
 * after, and its parent and child steps before, every handler registered
 * once the library is loaded, which may then call treercu (a prepare
 * handler registered before treercu's first use that called
 * synchronize_rcu() found the library's locks taken and hung the fork).
 * Its steps are correct on a library never initialised (src/fork.c).
 * Priority 101: before the default constructors of a static link, which
 * may already use the library.  The object holding the library is pinned
 * (sys_pin_loaded_object()).
 */
__attribute__((constructor(101))) void rcu_init_anchor(void)
{
	sys_pin_loaded_object();
	rcu_init_register(rcu_init_once);
	fork_register();
	rcu_stall_set_cb_info(rcu_nocb_stall_info);
	rcu_task_set_hooks(&rcu_task_hooks_impl);
}

void trcu_get_stats(struct trcu_stats *st)
{
	struct rcu_tree *t;

	rcu_init();
	t = rcu_tree();
	memset(st, 0, sizeof(*st));
	st->gp_completed = atomic_load_explicit(&rcu_state.n_gp, memory_order_relaxed);
	st->gp_driven_by_caller = atomic_load_explicit(&rcu_state.n_gp_caller, memory_order_relaxed);
	st->gp_driven_by_kthread = atomic_load_explicit(&rcu_state.n_gp_kthread,
							memory_order_relaxed);
	st->fqs_scans = atomic_load_explicit(&rcu_state.n_fqs, memory_order_relaxed);
	st->gp_takeovers = atomic_load_explicit(&rcu_state.n_takeover, memory_order_relaxed);
	st->async_wakes_skipped = atomic_load_explicit(&rcu_state.n_async_skip,
						       memory_order_relaxed);
	st->stall_warnings = rcu_stall_count();
	st->membarriers = atomic_load_explicit(&rcu_state.n_mb, memory_order_relaxed);
	st->gp_slot_checks = atomic_load_explicit(&rcu_state.n_slot_checks, memory_order_relaxed);
	st->fenced = rcu_state.fenced;
	st->nr_slots = rcu_slot_count();
	st->tree_levels = t->levels;
	st->tree_nodes = t->nr_nodes;
	rcu_nocb_stats(st);
	kvfree_stats(&st->frees_queued, &st->frees_done, &st->frees_fallback);
	rcu_sr_stats(st);
}

static void __trcu_shutdown(void)
{
	struct rcu_thread *r = rcu_thread_self();

	/* Named here: the waits below would name rcu_barrier() or
	 * rcu_unregister_thread() instead. */
	rcu_check_blocking_allowed("trcu_shutdown()");
	if (rcu_nocb_self())
		sys_die("trcu_shutdown() called from an RCU callback: it would wait for itself");
	rcu_init();
	if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
		return;
	/* An online QSBR caller goes offline for good (it is unregistered
	 * below): the callbacks' grace periods and the GP kthread's last one
	 * must not wait for it. */
	if (r->depth_bias && !rcu_section_depth())
		rcu_internal_qsbr_offline(r);
	/* Every callback runs before the GP kthread stops: the offload
	 * threads still need grace periods.  The partly filled rcu_free()
	 * blocks first, so that the callback layer runs them; then those
	 * that callbacks filled meanwhile, each after a grace period here. */
	kvfree_drain_all();
	rcu_nocb_shutdown();
	kvfree_shutdown();
	if (atomic_exchange_explicit(&rcu_state.shutting_down, true, memory_order_acq_rel))
		return;
	rcu_gp_kthread_stop();
	trcu_unregister_thread();
	rcu_busy_enter();   /* ofl_lock: see rcu_busy_enter() */
	pthread_mutex_lock(&rcu_state.ofl_lock);
	rcu_trees_free_locked();
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	rcu_busy_exit();
}

void trcu_shutdown(void)
{
	int cs = sys_cancel_disable();

	__trcu_shutdown();
	sys_cancel_restore(cs);
}
