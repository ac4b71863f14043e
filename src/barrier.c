/* SPDX-License-Identifier: MIT */
/*
 * rcu_barrier(), and the callback layer's statistics, shutdown and
 * process-exit drain: each bounded by the offload threads' progress.
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

/* ---- rcu_barrier ------------------------------------------------------------------ */

/* ---- Progress, for the bounded waits (process exit) ------------------------------ */

/* Grace periods ended and callbacks run: where the last look left them.
 * Only the exiting thread uses it. */
static struct {
	unsigned long gp;
	long done;
	long since_ns;
} nocb_progress;

static long nocb_done_count(void)
{
	struct trcu_stats st = { 0 };

	rcu_nocb_stats(&st);
	return st.cbs_invoked;
}

static void nocb_progress_reset(void)
{
	nocb_progress.gp = rcu_gp_seq_current();
	nocb_progress.done = nocb_done_count();
	nocb_progress.since_ns = sys_now_ns();
}

/* True once neither a grace period ended nor a callback ran for stuck_ns. */
static bool nocb_stuck(long stuck_ns)
{
	unsigned long gp = rcu_gp_seq_current();
	long done = nocb_done_count(), now = sys_now_ns();

	if (gp != nocb_progress.gp || done != nocb_progress.done) {
		nocb_progress.gp = gp;
		nocb_progress.done = done;
		nocb_progress.since_ns = now;
		return false;
	}
	return now - nocb_progress.since_ns >= stuck_ns;
}

/*
 * An rcu_barrier() caller while the exit drain waits for barrier_mutex:
 * wait until it has had it.  Without this, a thread calling rcu_barrier()
 * back to back takes the mutex again each time before the exit drain's
 * trylock looks, and exit never ends (the drain sees grace periods end,
 * so it does not give up either).  Relaxed: a hint; a caller that missed
 * the flag is at most one more holder the drain waits for.  Returns false
 * when the drain gave up and abandoned the barrier (return at once, as
 * every rcu_barrier() then does).
 */
static bool rcu_barrier_yield_to_exit(void)
{
	while (atomic_load_explicit(&nocb.barrier_exit_waiting, memory_order_relaxed)) {
		if (atomic_load_explicit(&nocb.barrier_abandoned, memory_order_relaxed))
			return false;
		sys_sleep_ns(100000L);
	}
	return true;
}

/*
 * The barrier proper; the caller is quiescent (rcu_barrier_wait()).
 * Returns false if `stuck_ns` >= 0 and neither a grace period ended nor a
 * callback ran for that long: the barrier is then left in flight, its
 * mutex held, and every later rcu_barrier() returns at once (process exit
 * only: rcu_nocb_exit_drain()).
 */
static bool rcu_barrier_wait(long stuck_ns)
{
	unsigned long seq;
	uint32_t v;

	if (atomic_load_explicit(&nocb.stopping, memory_order_acquire)) {
		/* The shutdown ran every callback queued before it stopped the
		 * offload threads, and sweeps up those pushed meanwhile: wait
		 * for that sweep, not return while it still waits for their GP
		 * (tests/process/test_shutdown_barrier_waits_for_sweep.c).
		 * Acquire: pairs with the release after the sweep. */
		while (!atomic_load_explicit(&nocb.swept, memory_order_acquire)) {
			if (stuck_ns >= 0 && nocb_stuck(stuck_ns))
				return false;
			usleep(100);
		}
		return true;
	}
	/* Relaxed: a flag on its own; the exit drain that set it gave up and
	 * keeps barrier_mutex, so waiting for the mutex would never end. */
	if (atomic_load_explicit(&nocb.barrier_abandoned, memory_order_relaxed))
		return true;
	if (stuck_ns < 0) {
		if (!rcu_barrier_yield_to_exit())
			return true;
		pthread_mutex_lock(&nocb.barrier_mutex);
	} else {
		/* Bounded: another thread's rcu_barrier() may hold the mutex
		 * behind the same stuck reader.  barrier_exit_waiting keeps
		 * new ones away meanwhile, so the holder is the last. */
		while (pthread_mutex_trylock(&nocb.barrier_mutex)) {
			if (nocb_stuck(stuck_ns))
				return false;
			sys_sleep_ns(100000L);
		}
	}
	/*
	 * Counts: one held by us until every group was asked, one per group
	 * until it has entrained, one per entrained barrier callback until it
	 * runs.  Zero means every earlier callback has run.
	 */
	atomic_store_explicit(&nocb.barrier_cpu_count, nocb.nr_groups + 1, memory_order_relaxed);
	seq = atomic_fetch_add_explicit(&nocb.barrier_seq, 1, memory_order_relaxed) + 1;
	for (int i = 0; i < nocb.nr_groups; i++) {
		/* Release: callbacks queued before this barrier (happens-
		 * before) are visible to the group when it sees the request. */
		atomic_store_explicit(&nocb.groups[i].barrier_req, seq, memory_order_release);
		nocb_wake(&nocb.groups[i]);
	}
	v = atomic_load_explicit(&nocb.barrier_futex, memory_order_acquire);
	rcu_cb_waiter_enter_hurry();
	nocb_barrier_dec();
	while (atomic_load_explicit(&nocb.barrier_cpu_count, memory_order_acquire) != 0) {
		if (stuck_ns >= 0 && nocb_stuck(stuck_ns)) {
			rcu_cb_waiter_exit();
			atomic_store_explicit(&nocb.barrier_abandoned, true, memory_order_relaxed);
			return false;
		}
		sys_futex_wait(&nocb.barrier_futex, v, stuck_ns >= 0 ? 1000000L : -1);
		v = atomic_load_explicit(&nocb.barrier_futex, memory_order_acquire);
	}
	rcu_cb_waiter_exit();
	pthread_mutex_unlock(&nocb.barrier_mutex);
	return true;
}

static void __rcu_barrier_cbs(void)
{
	struct rcu_thread *r = rcu_thread_self();
	bool registered;
	int was;

	rcu_check_blocking_allowed("rcu_barrier()");
	if (nocb_self)
		sys_die("rcu_barrier() called from an RCU callback: it would wait for itself");
	rcu_init();
	/* Acquire: pairs with nocb_start()'s release (its groups, and the
	 * shared rcu_data linked into them). */
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire)) {
		/* No callback was ever queued, or no offload thread could
		 * start: the ones queued are parked on the shared rcu_data.
		 * Try to start one; else run them here (a grace period first),
		 * after any run in flight. */
		if (!nocb_shared_parked() || !nocb_start()) {
			nocb_run_stranded(&nocb.shared);
			return;
		}
	}
	/* Quiescent while it waits, as synchronize_rcu() is: an online QSBR
	 * caller would otherwise hold up the grace periods it waits for. */
	registered = rcu_thread_registered(r);
	was = registered ? rcu_enter_gp_wait(r) : 0;
	rcu_barrier_wait(-1);
	/* Parked callbacks that a run began on before the offload threads
	 * adopted the shared rcu_data. */
	nocb_wait_shared_runs();
	if (registered)
		rcu_exit_gp_wait(r, was);
}

/* The callback layer's rcu_barrier(): every callback queued before it has
 * run.  The public trcu_rcu_barrier() (src/kvfree.c) seals the partly
 * filled rcu_free() blocks first. */
void rcu_barrier_cbs(void)
{
	int cs = sys_cancel_disable();

	__rcu_barrier_cbs();
	sys_cancel_restore(cs);
}

/* ---- Statistics and shutdown --------------------------------------------------------- */

void rcu_nocb_stats(struct trcu_stats *st)
{
	long q = atomic_load_explicit(&nocb.n_queued_dead, memory_order_relaxed);
	long inv = atomic_load_explicit(&nocb.n_invoked_dead, memory_order_relaxed);
	/* Read once, before the walk: the shared rcu_data is counted from the
	 * groups' lists when linked then, else here, never twice.  Acquire:
	 * pairs with the link's release. */
	bool shared_linked = atomic_load_explicit(&nocb.shared_linked, memory_order_acquire);

	if (atomic_load_explicit(&nocb.started, memory_order_acquire)) {
		for (int i = 0; i < nocb.nr_groups; i++) {
			struct nocb_group *grp = &nocb.groups[i];

			pthread_mutex_lock(&grp->lock);
			for (struct rcu_data *rdp = grp->rdps; rdp; rdp = rdp->next) {
				if (rdp == &nocb.shared && !shared_linked)
					continue;   /* linked during the walk */
				q += atomic_load_explicit(&rdp->n_queued, memory_order_relaxed);
				inv += atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed);
			}
			pthread_mutex_unlock(&grp->lock);
		}
		st->nocb_threads = nocb.nr_groups;
	}
	/* The shared rcu_data in no group yet (zero when never used). */
	if (!shared_linked) {
		q += atomic_load_explicit(&nocb.shared.n_queued, memory_order_relaxed);
		inv += atomic_load_explicit(&nocb.shared.n_invoked, memory_order_relaxed);
	}
	st->cbs_queued = q;
	st->cbs_invoked = inv;
	st->cbs_pending = q - inv;
	st->cbs_pushback = atomic_load_explicit(&nocb.n_pushback, memory_order_relaxed);
	st->nocb_defers = atomic_load_explicit(&nocb.n_defer, memory_order_relaxed);
}

/*
 * Shutdown with no offload thread running (none was needed, or none could
 * start): none may start from now on (->stopping, under nocb.lock, which
 * nocb_start() checks), and the parked callbacks run here, again while
 * callbacks queue more.  ->stopped then sends a later push to run its
 * callback itself (call_rcu_shared()); the run after the store catches a
 * push that missed it.  False when an offload thread started first.
 */
static bool rcu_nocb_shutdown_unstarted(void)
{
	bool started;

	pthread_mutex_lock(&nocb.lock);
	started = atomic_load_explicit(&nocb.started, memory_order_relaxed);
	if (!started)
		atomic_store_explicit(&nocb.stopping, true, memory_order_release);
	pthread_mutex_unlock(&nocb.lock);
	if (started)
		return false;   /* one started meanwhile: the full shutdown */
	for (int i = 0; i < 100 && nocb_shared_parked(); i++)
		nocb_run_stranded(&nocb.shared);
	/* seq_cst: pairs with call_rcu_shared()'s load after its push. */
	atomic_store_explicit(&nocb.stopped, true, memory_order_seq_cst);
	nocb_run_stranded(&nocb.shared);
	/* Release: pairs with rcu_barrier()'s acquire. */
	atomic_store_explicit(&nocb.swept, true, memory_order_release);
	return true;
}

/* Run every callback, then stop and join the offload threads. */
void rcu_nocb_shutdown(void)
{
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire) &&
	    rcu_nocb_shutdown_unstarted())
		return;
	/* Callbacks may queue callbacks: repeat while the barrier finds work. */
	for (int i = 0; i < 100; i++) {
		struct trcu_stats st = { 0 };

		rcu_barrier_cbs();
		rcu_nocb_stats(&st);
		if (!st.cbs_pending)
			break;
	}
	atomic_store_explicit(&nocb.stopping, true, memory_order_release);
	for (int i = 0; i < nocb.nr_groups; i++) {
		nocb_wake(&nocb.groups[i]);
		pthread_join(nocb.groups[i].thread, NULL);
	}
	/* seq_cst: pairs with call_rcu_core()'s push followed by its load
	 * of ->stopped: a push this sweep misses sees it set. */
	atomic_store_explicit(&nocb.stopped, true, memory_order_seq_cst);
	/* Adopted rcu_data are freed once empty; live threads' rcu_data stay
	 * (their TLS still points at them) and call_rcu() now runs callbacks
	 * itself. */
	nocb_sweep_stranded();
	/* Release: the swept callbacks ran; pairs with rcu_barrier()'s
	 * acquire. */
	atomic_store_explicit(&nocb.swept, true, memory_order_release);
}

/* ---- Process exit -------------------------------------------------------------------- */

bool rcu_nocb_self(void)
{
	return nocb_self;
}

/*
 * Run what is queued, as rcu_nocb_shutdown() does, bounded twice:
 * - STUCK once neither a grace period ended nor a callback ran for
 *   stuck_ns (a reader stuck in a section would otherwise hang exit);
 * - BUSY once callbacks are still pending stuck_ns after the first barrier
 *   ended (*settle_ns, set then if 0).  That barrier ran every callback
 *   queued before exit; later rounds run what those queued, while other
 *   threads of the program may keep queueing for ever.
 * The offload threads keep running either way (the process is ending).
 * The caller is quiescent.
 */
enum rcu_exit_drain rcu_nocb_exit_drain(long stuck_ns, long *settle_ns)
{
	enum rcu_exit_drain ret = RCU_EXIT_BUSY;

	/* Callbacks parked while no offload thread could start: one more try
	 * to start one, which runs them under the bounds below. */
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire) &&
	    (!nocb_shared_parked() || !nocb_start()))
		return nocb_shared_parked() ? RCU_EXIT_NO_OFFLOAD : RCU_EXIT_DRAINED;
	nocb_progress_reset();
	atomic_store_explicit(&nocb.barrier_exit_waiting, true, memory_order_relaxed);
	for (int i = 0; i < 100; i++) {
		struct trcu_stats st = { 0 };

		if (!rcu_barrier_wait(stuck_ns)) {
			ret = RCU_EXIT_STUCK;
			break;
		}
		if (!*settle_ns)
			*settle_ns = sys_now_ns() + stuck_ns;
		rcu_nocb_stats(&st);
		if (!st.cbs_pending) {
			ret = RCU_EXIT_DRAINED;
			break;
		}
		if (sys_now_ns() >= *settle_ns)
			break;
	}
	atomic_store_explicit(&nocb.barrier_exit_waiting, false, memory_order_relaxed);
	return ret;
}

/* One line on stderr: how many callbacks and rcu_free() pointers (frees,
 * counted by the caller) exit leaves behind, and why (nothing when none). */
void rcu_nocb_exit_report(const char *why, long frees)
{
	struct trcu_stats st = { 0 };

	rcu_nocb_stats(&st);
	if (frees > 0)
		sys_warn("exit: %ld callback%s not run and %ld rcu_free() pointer%s not freed: %s",
			  st.cbs_pending, st.cbs_pending == 1 ? "" : "s", frees,
			  frees == 1 ? "" : "s", why);
	else if (st.cbs_pending > 0)
		sys_warn("exit: %ld callback%s not run: %s", st.cbs_pending,
			  st.cbs_pending == 1 ? "" : "s", why);
}

/* For the stall warning: callbacks queued and not yet run, and how many
 * push-backs gave up because no grace period ended. */
void rcu_nocb_stall_info(long *pending, long *gave_up)
{
	struct trcu_stats st = { 0 };

	rcu_nocb_stats(&st);
	*pending = st.cbs_pending;
	*gave_up = atomic_load_explicit(&nocb.n_pushback_gave_up, memory_order_relaxed);
}
