/* SPDX-License-Identifier: MIT */
/*
 * One grace period and nothing else: its start (rcu_gp_init: the waiter
 * list's wait head, the tree's init, early reports, the prescan, the reader
 * generation and the GP-start membarrier), the force-quiescent-state loop
 * (rcu_gp_fqs_loop: scans, sleeps, stall checks) and its end
 * (rcu_gp_cleanup: the GP-end membarrier, gp_seq, the waiter list's
 * wake-ups).  rcu_gp_one_locked() runs one for the thread holding gp_mutex
 * and reports whether it ended or was handed over; it wakes no GP-end
 * sleeper (src/gp_drive.c does).  Names follow kernel/rcu/tree.c.
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
#include "fqs_rule.h"
#include "sync_hint.h"
#include "sync_list.h"
#include "test_hooks.h"

/*
 * An online QSBR holdout reports its own quiescent state when asked: its
 * next rcu_quiescent_state() (or going offline) sees ->need_qs and reports
 * through its leaf's lock, which is valid whenever it happens: taking the
 * lock that this GP's init released orders the thread's next section after
 * the GP start (so after every update that preceded it), and releasing it
 * orders the previous section before the GP end (the QSBR ordering,
 * docs/design.md).  So it is asked without a membarrier (arm); a QSBR
 * GP's spinning driver asks for polled answers instead (src/qsbr_poll.c).
 * TRCU_RF_QSBR is the owner's flag, read as a hint: asking a thread that
 * just went offline costs it one report, and one that just came online is
 * asked at the next sleep.  Returns whether r is such a holdout.
 */
static bool rcu_qsbr_holdout(struct rcu_thread *r, bool arm)
{
	if (r == rcu_state.driver ||
	    !(__atomic_load_n(&r->rdr->nest_flags, __ATOMIC_RELAXED) & TRCU_RF_QSBR))
		return false;
	/* Under the leaf lock, after this GP's init: the report's lock
	 * acquisition pairs with it (above). */
	if (arm)
		rcu_qs_ask(r->rdr, false);
	return true;
}

/* Snapshot every holdout's ->watching before the GP-start membarrier. */
static bool rcu_prescan_leaf(struct rcu_node *leaf, void *arg)
{
	for (unsigned long m = leaf->qsmask; m; m &= m - 1) {
		int i = __builtin_ctzl(m);
		struct trcu_reader *rdr = rcu_slot_reader(leaf->grplo + i);

		if (!rdr)
			continue;
		leaf->snap[i] = __atomic_load_n(&rdr->watching, __ATOMIC_ACQUIRE);
		leaf->snap_valid |= 1UL << i;
		leaf->snap_pre |= 1UL << i;
	}
	rcu_stat_add_locked(&rcu_state.n_slot_checks, (unsigned long)__builtin_popcountl(leaf->qsmask));
	pthread_mutex_unlock(&leaf->lock);
	return true;
}

/*
 * QSBR grace periods.  When every holdout left after the early report is
 * a QSBR thread (online, or offline and caught between its steps) the GP
 * runs without the GP-start membarrier, as liburcu qsbr's does: it asks
 * the online ones at once (->need_qs) and takes only their own reports,
 * whose leaf lock orders them (rcu_qsbr_holdout()), never a ->watching
 * value they left (only the membarrier makes a plain store evidence); an
 * offline one is quiescent by rcu_early_qs().  With two busy readers on
 * two CPUs the membarrier's IPI was a third of the caller's GP; a
 * default thread, a worker of task readers or a holdout whose thread is
 * unknown keeps it.  GP driver only (gp_mutex held).
 */
static bool gp_qsbr;
static int qsbr_asked;   /* holdouts the last walk asked (or left asked) */
static int qsbr_nospin;  /* GPs left with the spin off (below); gp_mutex held */

struct qsbr_gp_arg {
	bool act;       /* ask the online ones and report the quiescent ones */
	bool poll;      /* ask for polled answers: the driver will spin */
	bool qsbr;      /* every holdout seen so far is a QSBR thread */
	int asked;      /* holdouts left to report themselves */
};

static bool rcu_qsbr_gp_leaf(struct rcu_node *leaf, void *arg)
{
	struct qsbr_gp_arg *qa = arg;
	unsigned long mask = 0, looked = 0;
	bool dirty = false;

	for (unsigned long m = leaf->qsmask; m; m &= m - 1) {
		int i = __builtin_ctzl(m);
		struct trcu_reader *rdr = rcu_slot_reader(leaf->grplo + i);
		struct rcu_thread *r = rcu_slot_get(leaf->grplo + i);

		looked++;
		if (!rdr || !r) {   /* unregistered after GP start */
			mask |= 1UL << i;
			dirty = true;
			continue;
		}
		if (rcu_early_qs(r)) {
			mask |= 1UL << i;
			continue;
		}
		/* A thread that goes offline meanwhile reports when it sees
		 * ->need_qs (its exit is fenced), or the next walk's
		 * rcu_early_qs() counts it. */
		if (!rcu_qsbr_thread(r)) {
			qa->qsbr = false;
			break;
		}
		/* Under the leaf lock, after this GP's init: the report's lock
		 * acquisition pairs with it (rcu_qsbr_holdout()).  A thread in
		 * a fenced section while offline reports at its fenced exit:
		 * store buffering with the fence at the next walk's start. */
		if (qa->act && rcu_qs_ask(rdr, qa->poll && rcu_qsbr_poll_room()) == TRCU_QS_POLLED)
			rcu_qsbr_poll_add(leaf, 1UL << i);
		qa->asked++;
	}
	rcu_stat_add_locked(&rcu_state.n_slot_checks, looked);
	if (qa->act)
		rcu_report_qs_rnp_driver(mask, leaf, dirty);
	else
		pthread_mutex_unlock(&leaf->lock);
	return qa->qsbr;
}

/* The CPUs this process may run on, read once (a hint). */
static long rcu_gp_cpus(void)
{
	static long cpus;   /* GP driver only (gp_mutex held) */

	if (!cpus) {
		long n = tun_usable_cpus();

		cpus = n > 0 ? n : 1;
	}
	return cpus;
}

/* One walk over the holdouts: are they all QSBR threads (act: ask the
 * online ones, report the quiescent ones; poll: for answers a spin polls,
 * if the driver spins after it)?  Ends at the first that is not. */
static bool rcu_qsbr_gp_walk(bool act, bool poll)
{
	struct qsbr_gp_arg qa = { .act = act, .poll = act && poll, .qsbr = true };

	/* Before the ->gp_blocked and ->watching loads (rcu_early_qs()):
	 * pairs with the fence in rcu_internal_qsbr_online() and with the
	 * fenced entry of an offline thread's section.  And after the
	 * previous walk's ->need_qs stores: pairs with the fence in the
	 * fenced watching_exit() before its ->need_qs load. */
	atomic_thread_fence(memory_order_seq_cst);
	if (act) {
		rcu_stat_add_locked(&rcu_state.n_fqs, 1);
		rcu_qsbr_poll_reset();
	}
	rcu_for_each_holdout_leaf(rcu_qsbr_gp_leaf, &qa);
	if (act)
		qsbr_asked = qa.asked;
	/* No spin follows (rcu_gp_holdout_wait()): plain asks. */
	if (qa.poll && !(qa.qsbr && qa.asked < rcu_gp_cpus()))
		rcu_qsbr_poll_end();
	return qa.qsbr;
}

/*
 * The GP-start membarrier and the reader generation before it (x86-64 read
 * side, include/treercu/rcu.h): sections that begin after the barrier
 * store the new generation, so a scan that saw an older odd value sees
 * theirs differ.  Only GP drivers write it (gp_mutex held).  Run by the
 * GP init, or later by a QSBR GP that finds a holdout of another kind: a
 * GP start that comes late is still one (the scans' snapshots are taken
 * after it).
 */
static void rcu_gp_start_mb(void)
{
	rcu_state.gp_gen = __atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED) + 2;
	/* Release: after the gp_seq store, for the compiler too (x86
	 * keeps stores in order, so it costs nothing there): a reader that
	 * loads it sees this GP started (rcu_watching_qs()). */
	__atomic_store_n(&trcu_reader_gen, rcu_state.gp_gen, __ATOMIC_RELEASE);
	/*
	 * GP-start barrier: every reader either had its ->watching store (odd)
	 * visible before this point, so the scans below see it, or runs its
	 * section's loads after it and sees every update that preceded this GP.
	 * Pairs with the compiler barrier after the store in trcu_read_lock().
	 */
	sys_gp_mb();
	/* A full barrier on this thread too, after the GP start: the
	 * emergency-readers check at cleanup needs no fence of its own if
	 * this thread still drives then (rcu_gp_cleanup()); a QSBR GP that
	 * ran none leaves the epoch behind, and the check fences. */
	rcu_state.gp_mb_epoch = rcu_state.driver_epoch;
	TRACE_RECORD("init_mb_done", 0);
}

static void rcu_gp_init(void)
{
	unsigned long gps = rcu_seq_startval(atomic_load_explicit(&rcu_state.gp_seq,
								  memory_order_relaxed));
	bool mixed = false;   /* the early report saw a holdout that is not QSBR */

	TRACE_RECORD("init", gps);
	gp_qsbr = false;
	atomic_store_explicit(&rcu_state.gp_dirty_flag, false, memory_order_relaxed);
	/*
	 * Seed 004: cover the synchronize_rcu() waiters added so far, *before*
	 * gp_seq says this GP started.  Otherwise a caller could take its
	 * cookie while gp_seq already reads "started" (cookie = the end of the
	 * next GP), push its node, and be covered and woken by this GP: its
	 * cookie would not be done when synchronize_rcu() returns (torture
	 * rotating the paths checks it).  The push (seq_cst CAS) is ordered
	 * before the release store below; a caller that sees the GP started
	 * pushes behind the wait head, i.e. waits for the next GP.
	 *
	 * The other side of that window: a caller that pushes in front of the
	 * wait head (not covered) while gp_seq still reads idle would name this
	 * GP as its own and wait forever.  So sr_init_seq says "this GP's init
	 * has begun" before the push; rcu_wait_gp_sr() reads it after its own
	 * push.  seq_cst: store, then the wait head's CAS; the caller's CAS,
	 * then its load: a caller in front of the head sees this value.
	 */
	atomic_store_explicit(&rcu_state.sr_init_seq, gps, memory_order_seq_cst);
	rcu_state.sr_uncovered = !rcu_sr_normal_gp_init();
	if (rcu_test_hooks.gp_init)
		rcu_test_hooks.gp_init();
	/* Release: pollers that see the GP in progress see what preceded it. */
	atomic_store_explicit(&rcu_state.gp_seq, gps, memory_order_release);
	rcu_state.exp_at_init = rcu_state.expedited;
	if (rcu_state.exp_at_init)
		atomic_store_explicit(&rcu_state.exp_seq,
				      rcu_seq_startval(atomic_load_explicit(&rcu_state.exp_seq,
									    memory_order_relaxed)),
				      memory_order_release);
	/* Read on the first wait (rcu_gp_now_ns()): a GP with no holdout
	 * never reads the clock. */
	rcu_state.gp_start_ns = 0;
	pthread_mutex_lock(&rcu_state.ofl_lock);
	rcu_gp_init_tree_locked(gps);
	/* Early report first: when it empties the tree (only the driver and
	 * blocked waiters were online) the GP needs no membarrier at all. */
	if (TUN(early_report)) {
		rcu_gp_early_report();
		mixed = rcu_early_stop_mixed();
	}
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	if (TUN(early_report) && rcu_root_qs_done()) {
		TRACE_RECORD("init_done_early", 0);
		return;
	}
	/* Only QSBR holdouts left: ask them now, no membarrier.  The first
	 * walk only looks, so that a mixed domain's QSBR threads are not
	 * asked (their reports would meet the scans at the leaf lock); the
	 * early report may have seen a holdout that is not a QSBR thread.
	 * Polled asks when the FQS loop will spin at once. */
	gp_qsbr = !mixed && rcu_qsbr_gp_walk(false, false) &&
		  rcu_qsbr_gp_walk(true, !qsbr_nospin && TUN(jiffies_till_first_fqs) <= 0);
	if (gp_qsbr) {
		TRACE_RECORD("init_qsbr", 0);
		return;
	}
	/* The prescan only tells a clean GP (no GP-end membarrier) from a
	 * dirty one; TSO machines skip that membarrier anyway, and the scan
	 * rule needs no pre-barrier snapshot (an absent one is the kernel
	 * profile's case, tests/model/test_fqs_model.c), so there it would be
	 * one more walk over every slot for nothing. */
	if (!RCU_TSO && TUN(jiffies_till_first_fqs) == 0)
		rcu_for_each_holdout_leaf(rcu_prescan_leaf, NULL);
	rcu_gp_start_mb();
}

/* ---- Force-quiescent-state scans -------------------------------------------------- */

/*
 * The clock, for a GP that has to wait (a scan left holdouts, or the
 * profile sleeps before the first scan).  Its first read is the GP's start
 * for stall warnings, microseconds after init: an idle GP ends at its first
 * scan and reads no clock at all (tests/rcu/test_idle_gp_reads_no_clock.c;
 * docs/decisions.md, "The idle grace period").
 */
static long rcu_gp_now_ns(void)
{
	long now = sys_now_ns();

	if (!rcu_state.gp_start_ns) {
		rcu_state.gp_start_ns = now;
		rcu_stall_reset();
	}
	return now;
}

struct fqs_arg {
	bool arm;       /* set ->need_qs on holdouts */
	bool arm_qsbr;  /* set it on online QSBR holdouts (no membarrier) */
	int armed;      /* how many were newly armed */
	int waiting;    /* holdouts that are not QSBR threads asked to report */
	int checked;    /* slots looked at */
};

static bool rcu_fqs_leaf(struct rcu_node *leaf, void *arg)
{
	struct fqs_arg *fa = arg;
	unsigned long mask = 0;
	bool dirty = false;

	fa->checked += __builtin_popcountl(leaf->qsmask);
	for (unsigned long m = leaf->qsmask; m; m &= m - 1) {
		int i = __builtin_ctzl(m);
		struct trcu_reader *rdr = rcu_slot_reader(leaf->grplo + i);
		struct rcu_thread *r;

		if (!rdr) {   /* unregistered after GP start */
			mask |= 1UL << i;
			dirty = true;
			continue;
		}
		/* Acquire: pairs with the fenced read side's release store. */
		if (rcu_watching_qs(leaf, i, __atomic_load_n(&rdr->watching, __ATOMIC_ACQUIRE),
				    &dirty)) {
			mask |= 1UL << i;
			continue;
		}
		/* A holdout: its thread's structure (set while its bit is). */
		r = rcu_slot_get(leaf->grplo + i);
		if (r && !rcu_qsbr_holdout(r, fa->arm || fa->arm_qsbr)) {
			fa->waiting++;
			if (fa->arm && r != rcu_state.driver &&
			    __atomic_load_n(&r->rdr->need_qs, __ATOMIC_RELAXED) != TRCU_QS_ASKED) {
				/* Ordered before the reader's ->watching reread
				 * by the sys_gp_mb() the caller runs next; pairs
				 * with the barrier before the ->need_qs load in
				 * trcu_read_unlock(). */
				rcu_qs_ask(r->rdr, false);
				fa->armed++;
			}
		}
	}
	rcu_report_qs_rnp_driver(mask, leaf, dirty);
	return true;
}

/* One scan.  Returns how many holdouts other than online QSBR ones it newly
 * armed; *waiting (if not NULL): how many holdouts are left that are not
 * online QSBR threads. */
static int rcu_fqs_scan(bool arm, bool arm_qsbr, int *waiting)
{
	struct fqs_arg fa = { .arm = arm, .arm_qsbr = arm_qsbr };

	rcu_stat_add_locked(&rcu_state.n_fqs, 1);
	rcu_for_each_holdout_leaf(rcu_fqs_leaf, &fa);
	rcu_stat_add_locked(&rcu_state.n_slot_checks, (unsigned long)fa.checked);
	if (waiting)
		*waiting = fa.waiting;
	return fa.armed;
}

/* A caller asks to drive and this driver may hand the GP over.  seq_cst:
 * pairs with the caller's increment before rcu_gp_kick_driver(). */
static bool rcu_gp_takeover_wanted(void)
{
	return atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed) &&
	       atomic_load_explicit(&rcu_state.takeover_req, memory_order_seq_cst) > 0;
}

/*
 * A yieldable driver (the GP kthread, an offload thread) sleeps without
 * gp_mutex: it parks the GP.  A synchronize_rcu() caller that takes it
 * over (rcu_gp_acquire_driver()) then needs nothing from the parked
 * driver, not even a CPU: with every CPU busy invoking callbacks, a caller
 * that had to wait for the kicked driver to be scheduled and yield waited
 * milliseconds for it.  The parked driver takes gp_mutex back when it
 * wakes; whoever ran rcu_gp_one_locked() in between moved driver_epoch,
 * and the GP is then no longer this driver's (it returns false as after a
 * yield, gp_mutex held).
 */
static void rcu_gp_park(void)
{
	/* seq_cst: pairs with rcu_gp_kick_driver()'s load (the parked driver
	 * is woken when the root empties, as a sleeping one is). */
	atomic_store_explicit(&rcu_state.gp_parked, true, memory_order_seq_cst);
	rcu_gp_unlock();
}

static bool rcu_gp_unpark(unsigned long epoch)
{
	pthread_mutex_lock(&rcu_state.gp_mutex);
	if (rcu_state.driver_epoch != epoch)
		return false;   /* taken over; gp_parked is the new driver's */
	atomic_store_explicit(&rcu_state.gp_parked, false, memory_order_relaxed);
	return true;
}

/*
 * Sleep until target_ns, until the root empties, until a caller asks to take
 * the GP over, or until an expedited request arrives.  A QSBR driver (the GP
 * kthread) is offline while it sleeps, as a CPU is idle while its GP kthread
 * sleeps.  Returns false when the GP was taken over meanwhile (parked).
 */
static bool rcu_gp_sleep_until(long target)
{
	struct rcu_thread *drv = rcu_state.driver;
	bool was_online = drv && drv->depth_bias;
	bool exp = rcu_state.expedited;
	bool park = atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed);
	unsigned long epoch = rcu_state.driver_epoch;
	_Atomic uint32_t *word = park ? &rcu_state.park_futex : &rcu_state.qs_futex;
	bool ours = true;

	if (was_online)
		rcu_internal_qsbr_offline(drv);
	if (park)
		rcu_gp_park();   /* nothing under gp_mutex is read until unpark */
	for (;;) {
		uint32_t v = atomic_load_explicit(word, memory_order_seq_cst);
		long now = sys_now_ns();

		/* seq_cst pairs with rcu_gp_kick_driver().  A parked driver
		 * sleeps on park_futex and leaves driver_sleeping to a driver
		 * that takes over (the kick sees it through gp_parked). */
		if (!park)
			atomic_store_explicit(&rcu_state.driver_sleeping, 1, memory_order_seq_cst);
		/* The unhurried tick ends when a thread waits: gp_unhurried is
		 * our own store (or a taker's clear), relaxed; the counts'
		 * seq_cst loads pair with rcu_gp_hurry(). */
		if (now >= target || rcu_root_qs_done() || (!park && rcu_gp_takeover_wanted()) ||
		    (rcu_exp_pending() && !exp) ||
		    (park && atomic_load_explicit(&rcu_state.gp_unhurried, memory_order_relaxed) &&
		     rcu_gp_anyone_waits()))
			break;
		TRACE_RECORD("drv_sleep", 0);
		sys_futex_wait(word, v, target - now);
		TRACE_RECORD("drv_wake", park);
		if (rcu_test_hooks.driver_woken)
			rcu_test_hooks.driver_woken();
		/* A caller that drives runs again (rcu_gp_kick_driver()):
		 * recorded now, not when it returns, or a caller serving GP
		 * after GP would start a new deferral at every kick. */
		if (!park)
			rcu_note_sync_resume();
	}
	if (park)
		ours = rcu_gp_unpark(epoch);
	else
		atomic_store_explicit(&rcu_state.driver_sleeping, 0, memory_order_relaxed);
	if (was_online)
		rcu_internal_qsbr_online(drv);
	return ours;
}

/* Sleep until the tick boundary `ticks` ticks from now (jiffies-like). */
static bool rcu_gp_sleep(long ticks)
{
	long tick = TUN(tick_us) * 1000L;

	return rcu_gp_sleep_until((sys_now_ns() / tick + ticks) * tick);
}

#define RCU_EXP_SLEEP_NS (50 * 1000L)

/*
 * What to do after a scan left holdouts.  For fqs_spin_us: pause briefly
 * and rescan (a reader running on another CPU leaves its section within
 * nanoseconds).  Not sched_yield(): on a machine whose CPUs are all busy
 * that hands the CPU to a busy thread for a whole time slice while the
 * holdout, preempted, cannot run (docs/decisions.md, "Who drives and who
 * is woken").  Then ask the holdouts to report (->need_qs + membarrier + rescan)
 * and sleep until a report empties the root or the next FQS tick.
 * Expedited: the same, with short sleeps instead of ticks.
 *
 * When every holdout left is an online QSBR thread there is nothing to
 * arm with a membarrier: spin while spinning pays, then ask them to report
 * (rcu_qsbr_holdout()) and sleep until the last report.  Only the thread's
 * own quiescent state can end the wait: on a CPU of its own it comes within
 * the spin (a sleep would add a futex wake-up from an idle CPU), but with
 * every CPU busy the spinning driver may be what keeps it off a CPU.  So a
 * spin that ran out with only QSBR holdouts turns spinning off for them
 * for the next RCU_QSBR_NOSPIN_GPS grace periods (nospin), then it is
 * tried again.
 */
#define RCU_QSBR_NOSPIN_GPS 16

/* A QSBR GP's sleep between walks: reports wake it; the bound only catches
 * a holdout that went offline unasked (rare: the next walk counts it) and
 * paces stall checks.  Over a scheduler tick (HZ >= 100), so its timer is
 * never the CPU's next event: a 1-ms one is, and arming and cancelling it
 * each reprogram the CPU's timer (docs/decisions.md, "QSBR-only grace
 * periods"). */
#define RCU_QSBR_SLEEP_NS (10 * 1000 * 1000L)

/* What ends a QSBR GP's spin early: a caller asks to take the GP over, or
 * an expedited request arrived. */
static bool rcu_qsbr_spin_interrupted(void)
{
	return rcu_gp_takeover_wanted() || (rcu_exp_pending() && !rcu_state.expedited);
}

/* Returns false when the GP was taken over while this driver slept. */
static bool rcu_gp_holdout_wait(long spin_until_ns, bool only_qsbr, bool nospin)
{
	if (rcu_exp_pending())
		rcu_state.expedited = true;  /* an expedited caller joined */
	if (gp_qsbr) {
		/*
		 * Asked at GP start: the spin only polls, and only while this
		 * driver and every holdout left can be on a CPU at once.  With
		 * more, one of them is off its CPU while the driver spins (or
		 * asleep, online): every spin would run out, and one GP in
		 * RCU_QSBR_NOSPIN_GPS trying it again was the p99.
		 */
		if (!nospin && qsbr_asked < rcu_gp_cpus()) {
			if (rcu_qsbr_spin(spin_until_ns, rcu_qsbr_spin_interrupted))
				return true;
			qsbr_nospin = RCU_QSBR_NOSPIN_GPS;   /* the spin did not pay */
		}
	} else if (!(only_qsbr && nospin) && sys_now_ns() < spin_until_ns) {
		for (int i = 0; i < 32; i++)
			cpu_relax();
		return true;
	} else if (only_qsbr) {
		if (!nospin)
			qsbr_nospin = RCU_QSBR_NOSPIN_GPS;   /* the spin did not pay */
		/* Ask them to report (rcu_qsbr_holdout()); one that passed a
		 * quiescent state meanwhile is reported by this scan. */
		rcu_fqs_scan(false, true, NULL);
		if (rcu_root_qs_done())
			return true;
	} else if (rcu_fqs_scan(true, true, NULL)) {
		/* SB: ->need_qs stores before the holdouts' ->watching reread.
		 * Pairs with the compiler barrier in trcu_read_unlock(). */
		sys_gp_mb();
		return true;   /* the caller rescans at once */
	}
	if (rcu_state.expedited)
		return rcu_gp_sleep_until(sys_now_ns() + RCU_EXP_SLEEP_NS);
	if (gp_qsbr)
		return rcu_gp_sleep_until(sys_now_ns() + RCU_QSBR_SLEEP_NS);
	return rcu_gp_sleep(TUN(jiffies_till_next_fqs));
}

/* A spin to skip, an asynchronous driver, and nobody waits for its GP
 * (src/sync_hint.c): a thread that comes later kicks the driver out of its
 * tick (rcu_gp_hurry()).  Without a spin (the kernel profile) nothing
 * changes. */
static bool rcu_gp_unhurried(void)
{
	return TUN(fqs_spin_us) > 0 &&
	       atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed) &&
	       !rcu_state.expedited && !rcu_exp_pending() && !rcu_gp_takeover_wanted() &&
	       !rcu_gp_anyone_waits();
}

/* Sleep out the unhurried tick; a thread that starts to wait ends it
 * (rcu_gp_hurry()).  seq_cst store: pairs with the waiter's increment and
 * load (store buffering, rcu_gp_hurry()); our check of the counts is in
 * rcu_gp_sleep_until().  A driver that takes the GP over clears the flag. */
static bool rcu_gp_unhurried_tick(void)
{
	bool ours;

	atomic_store_explicit(&rcu_state.gp_unhurried, true, memory_order_seq_cst);
	ours = rcu_gp_sleep(TUN(jiffies_till_next_fqs));
	if (ours)
		atomic_store_explicit(&rcu_state.gp_unhurried, false, memory_order_relaxed);
	return ours;
}

/* Returns false when the GP, still in progress, is left to a caller that
 * takes it over, or was taken over while this driver was parked. */
static bool rcu_gp_fqs_loop(bool resumed)
{
	long first = TUN(jiffies_till_first_fqs);
	long spin_until;
	bool nospin = qsbr_nospin > 0, ticked = false;

	if (nospin)
		qsbr_nospin--;
	if (first > 0 && !rcu_state.expedited && !resumed) {
		rcu_gp_now_ns();
		if (!rcu_gp_sleep(first))
			return false;
	}
	spin_until = 0;   /* set by the first scan that leaves holdouts */
	for (;;) {
		int waiting;

		if (rcu_root_qs_done())
			return true;
		/* Polled asks only for a spin still to come. */
		if (gp_qsbr && !rcu_qsbr_gp_walk(true, !nospin && (!spin_until ||
							       rcu_gp_now_ns() < spin_until))) {
			/* A holdout that is no longer a QSBR thread (a worker
			 * of task readers now): the GP-start membarrier after
			 * all, then scans. */
			gp_qsbr = false;
			rcu_gp_start_mb();
		}
		waiting = 0;
		if (!gp_qsbr)
			rcu_fqs_scan(false, false, &waiting);
		if (rcu_root_qs_done())
			return true;
		if (rcu_gp_takeover_wanted()) {
			TRACE_RECORD("yield", 0);
			return false;
		}
		if (!spin_until && !ticked && !gp_qsbr && rcu_gp_unhurried()) {
			/* Nobody waits: no spin; the holdouts get a tick
			 * before they are asked (the kernel's first FQS),
			 * once per GP.  The clock read starts the stall
			 * timer too. */
			ticked = true;
			spin_until = rcu_gp_now_ns();
			rcu_stat_add_locked(&rcu_state.n_gp_unhurried, 1);
			if (!rcu_gp_unhurried_tick())
				return false;
			if (rcu_gp_anyone_waits())
				spin_until = 0;   /* one came: spin for it */
			continue;
		}
		if (!spin_until)
			spin_until = rcu_gp_now_ns() + TUN(fqs_spin_us) * 1000L;
		rcu_check_stall();
		if (!rcu_gp_holdout_wait(spin_until, waiting == 0, nospin))
			return false;   /* taken over while parked */
	}
}

/* ---- Grace-period end ------------------------------------------------------------------ */

static void rcu_gp_cleanup(void)
{
	unsigned long gps = atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed);

	/*
	 * GP-end barrier: a reader whose quiescent state was seen only through
	 * a plain ->watching store has all its section's accesses complete
	 * before this returns.  Pairs with the compiler barrier before the
	 * store in trcu_read_unlock().  Skipped when every slot was seen even
	 * and unchanged on both sides of the GP-start barrier, and on TSO
	 * machines (RCU_TSO), where the store cannot pass the section's loads.
	 */
	/* Signal handlers' emergency sections (src/thread.c) are not in
	 * the tree: wait for the ones in progress now, after the GP start.
	 * Its fence pairs with the one in emerg_enter(); the GP-start
	 * membarrier this thread ran (driver_epoch unchanged since: no other
	 * thread drove this GP meanwhile) is that fence already. */
	rcu_emerg_readers_wait(rcu_state.gp_mb_epoch == rcu_state.driver_epoch);
	if (!RCU_TSO && atomic_load_explicit(&rcu_state.gp_dirty_flag, memory_order_relaxed))
		sys_gp_mb();
	if (rcu_state.exp_at_init)
		atomic_store_explicit(&rcu_state.exp_seq,
				      rcu_seq_endval(atomic_load_explicit(&rcu_state.exp_seq,
									  memory_order_relaxed)),
				      memory_order_release);
	/* Release: pairs with the acquire loads in rcu_seq_done() callers:
	 * whoever sees the GP ended sees every reader's section finished. */
	atomic_store_explicit(&rcu_state.gp_seq, rcu_seq_endval(gps), memory_order_release);
	TRACE_RECORD("gp_end", gps);
	rcu_stat_add_locked(&rcu_state.n_gp, 1);
	/* Seed 004: wake this GP's synchronize_rcu() waiters. */
	rcu_sr_normal_gp_cleanup();
	TRACE_RECORD("sr_cleanup_done", 0);
	if (rcu_state.sr_uncovered)   /* no wait head was free: another GP */
		rcu_start_this_gp(rcu_seq_snap_val(rcu_seq_endval(gps)), NULL);
}

/*
 * One grace period, driven by the calling thread (gp_mutex held): a new one,
 * or the rest of the one in progress when a caller took it over.  The GP
 * kthread and offload threads drive yieldably: a synchronize_rcu() caller
 * that arrives during their GP takes it over, so that the reader's report
 * wakes the caller itself, one hand-off instead of two (driver, then
 * caller).  Returns false when this driver handed the GP over.
 */
bool rcu_gp_one_locked(struct rcu_thread *driver, enum rcu_driver_kind kind)
{
	unsigned long epoch;
	bool done;
	bool resumed = rcu_seq_state(atomic_load_explicit(&rcu_state.gp_seq,
							  memory_order_relaxed)) != 0;

	/*
	 * Between GPs too, not only in the FQS loop: a GP with no holdout
	 * ends at its first scan, before the loop looks, so a driver with
	 * GP after GP to run would never yield and the requester, blocked in
	 * pthread_mutex_lock(), would not even see its own GP end
	 * (tests/sync/test_takeover_yields_between_gps.c; figures in
	 * docs/decisions.md).
	 * seq_cst: pairs with the requester's increment before it blocks.
	 */
	if (!resumed && kind != RCU_DRV_CALLER &&
	    atomic_load_explicit(&rcu_state.takeover_req, memory_order_seq_cst) > 0)
		return false;
	rcu_gp_wake_left_locked();       /* going on to another GP */
	/* A driver parked in this GP finds it taken over (rcu_gp_unpark()). */
	epoch = ++rcu_state.driver_epoch;
	/* A parked driver's unhurried tick is not ours (rcu_gp_unhurried_tick()). */
	atomic_store_explicit(&rcu_state.gp_unhurried, false, memory_order_relaxed);
	if (atomic_load_explicit(&rcu_state.gp_parked, memory_order_relaxed)) {
		atomic_store_explicit(&rcu_state.gp_parked, false, memory_order_relaxed);
		atomic_fetch_add_explicit(&rcu_state.n_takeover, 1, memory_order_relaxed);
	}
	rcu_state.driver = driver;
	atomic_store_explicit(&rcu_state.driver_yieldable, kind != RCU_DRV_CALLER,
			      memory_order_relaxed);
	if (!resumed) {
		rcu_state.expedited = rcu_exp_pending();
		rcu_gp_init();
	} else {
		rcu_state.expedited |= rcu_exp_pending();
	}
	done = rcu_gp_fqs_loop(resumed);
	rcu_qsbr_poll_end();   /* its asks left are plain ones (src/qsbr_poll.c) */
	if (!done) {
		/* Yielded: the requester resumes the GP.  Taken over while
		 * parked: driver and driver_yieldable are the new driver's. */
		if (rcu_state.driver_epoch == epoch) {
			rcu_state.driver = NULL;
			atomic_store_explicit(&rcu_state.driver_yieldable, false,
					      memory_order_relaxed);
		}
		return false;
	}
	rcu_gp_cleanup();
	rcu_state.driver = NULL;
	atomic_store_explicit(&rcu_state.driver_yieldable, false, memory_order_relaxed);
	rcu_stat_add_locked(kind == RCU_DRV_KTHREAD ? &rcu_state.n_gp_kthread
						   : &rcu_state.n_gp_caller, 1);
	return true;
}
