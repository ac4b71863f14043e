/* SPDX-License-Identifier: MIT */
/*
 * Who drives a grace period and who is woken: whichever thread holds
 * rcu_state.gp_mutex drives (src/gp.c runs the GP itself).  A
 * synchronize_rcu() caller on an idle process drives its own grace period
 * (drive_from_caller=1, no wake-ups); asynchronous needs (callbacks, polled
 * cookies) and the kernel timing profile use the GP kthread.  This file
 * holds becoming the driver (takeover), the hand-off after driving, serving
 * the waiters already there, the GP-end wake-ups (the only ones), the GP
 * kthread and the futex wait (rcu_wait_gp) that synchronize_rcu()'s futex
 * path, synchronize_rcu_expedited() and the offload threads share.
 *
 * Invariant: every thread that raised gp_seq_needed either drives, is a
 * caller served by the driver's hand-off, sleeps with a bound, or woke the
 * GP kthread.
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

/*
 * Move gp_end_futex and say whether its sleepers need the wake that makes
 * each recheck its cookie (a GP's driver makes it after its unlock:
 * rcu_gp_unlock(); rcu_wake_gp_waiters() makes it at once).  async_too=false
 * (a synchronize_rcu() caller that drove the GP, on its way out): only when a
 * synchronize_rcu() caller sleeps there, or a wakeme-path caller or an
 * rcu_barrier() waits for callbacks (nr_cb_waiters).  The others (the GP
 * kthread and the offload threads, "asynchronous" waiters) sleep at most an
 * async recheck interval (rcu_async_wait_ns(): 1 to 4 ticks) and look again
 * by themselves: a futex wake is paid by the caller on its way out (an IPI
 * to the idle CPU, or the woken thread preempting it), a cost of the order
 * of the GP it waited for (docs/decisions.md, "Who drives and who is
 * woken").  Callbacks nobody waits for may run up to 4 ticks later.
 */
static bool rcu_gp_waiters_to_wake(bool async_too)
{
	/* Counted only for synchronize_rcu() callers sleeping here (not the
	 * GP kthread, an offload thread or list callers), and before the
	 * increment below that lets them resume (see wakeme_after_rcu()). */
	if (atomic_load_explicit(&rcu_state.nr_sync_gp_waiters, memory_order_relaxed))
		rcu_note_sync_wake();
	/* seq_cst: pairs with the waiter's increment of nr_gp_waiters before
	 * it loads gp_end_futex and gp_seq in rcu_wait_gp(); also publishes
	 * the count to a waiter that sees the new value. */
	atomic_fetch_add_explicit(&rcu_state.gp_end_futex, 1, memory_order_seq_cst);
	if (!atomic_load_explicit(&rcu_state.nr_gp_waiters, memory_order_seq_cst))
		return false;
	/* After the seq_cst load above (acquire): a synchronize_rcu() caller
	 * counts itself here before its seq_cst nr_gp_waiters increment
	 * (rcu_gp_waiter_enter()), so one whose increment we read is seen.
	 * This rests on every write to nr_gp_waiters being a read-modify-
	 * write (a release sequence): a plain store there would break it.
	 * nr_cb_waiters is a hint: a miss costs that caller one recheck
	 * interval, never a hang. */
	if (async_too || atomic_load_explicit(&rcu_state.nr_sync_gp_waiters, memory_order_relaxed) ||
	    atomic_load_explicit(&rcu_state.nr_cb_waiters, memory_order_relaxed))
		return true;
	atomic_fetch_add_explicit(&rcu_state.n_async_skip, 1, memory_order_relaxed);
	return false;
}

static void rcu_wake_gp_waiters(bool async_too)
{
	if (rcu_gp_waiters_to_wake(async_too))
		sys_futex_wake(&rcu_state.gp_end_futex, INT_MAX);
}

/*
 * How long an asynchronous waiter (GP kthread, offload thread) sleeps on
 * gp_end_futex before it looks again, since a caller that drives does not
 * wake it (rcu_wake_gp_waiters()): a tick, doubled while gp_seq stands
 * still (a long GP: a reader holding on), up to RCU_ASYNC_RECHECK_TICKS.
 */
#define RCU_ASYNC_RECHECK_TICKS 4

struct rcu_async_wait { unsigned long seq; long ns; };

static long rcu_async_wait_ns(struct rcu_async_wait *aw)
{
	unsigned long cur = atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed);
	/* At least 100 us: tick_us=1 must not turn this into a busy loop. */
	long tick = (TUN(tick_us) < 100 ? 100 : TUN(tick_us)) * 1000L;
	long max = RCU_ASYNC_RECHECK_TICKS * tick;

	if (max > RCU_WAIT_RECHECK_NS)
		max = RCU_WAIT_RECHECK_NS;
	if (aw->ns && cur == aw->seq)
		aw->ns = aw->ns * 2 > max ? max : aw->ns * 2;
	else
		aw->ns = tick < max ? tick : max;
	aw->seq = cur;
	return aw->ns;
}

/* ->busy for the whole GP: the driver takes ofl_lock and rcu_node locks
 * (rcu_busy_enter()).  A GP that ended wakes its GP-end sleepers here, the
 * only place that does: src/gp.c wakes no one. */
bool rcu_gp_one(struct rcu_thread *driver, enum rcu_driver_kind kind)
{
	bool ended;

	rcu_busy_enter();
	ended = rcu_gp_one_locked(driver, kind);
	rcu_busy_exit();
	/* gp_mutex held: the wake itself waits for rcu_gp_unlock(). */
	if (ended && rcu_gp_waiters_to_wake(!rcu_drv_is_caller(kind)))
		rcu_state.gp_end_wake = true;
	return ended;
}

/*
 * Become the driver: at once if nobody drives; by taking the GP over from
 * the GP kthread or an offload thread if `takeover` (a synchronize_rcu()
 * caller).  Others do not even try while a takeover is asked for, or the
 * driver that just yielded could win the mutex straight back.
 */
bool rcu_gp_acquire_driver(bool takeover)
{
	/* Callers too: a requester blocked in the mutex below cannot see its
	 * GP end, and trylocking callers could keep it there for tens of ms
	 * (32 callers plus a call_rcu() flood).  The requester serves every
	 * waiter. */
	if (atomic_load_explicit(&rcu_state.takeover_req, memory_order_relaxed))
		return false;
	/* A parked GP (rcu_gp_park()) is the driver's still: only a taker
	 * resumes it.  The load before the trylock is a hint that spares
	 * the trylock; under gp_mutex the flag is exact (the parker stores it
	 * before its unlock, which our trylock's acquire sees), and one that
	 * won the mutex just after the park gives it back. */
	if (!takeover && atomic_load_explicit(&rcu_state.gp_parked, memory_order_relaxed))
		return false;
	if (!pthread_mutex_trylock(&rcu_state.gp_mutex)) {
		if (!takeover && atomic_load_explicit(&rcu_state.gp_parked, memory_order_relaxed)) {
			rcu_gp_unlock();
			return false;
		}
		return true;
	}
	if (!takeover || !atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed))
		return false;
	/* seq_cst: pairs with the driver's check in rcu_gp_sleep_until() after
	 * its driver_sleeping store (the kick below wakes it). */
	atomic_fetch_add_explicit(&rcu_state.takeover_req, 1, memory_order_seq_cst);
	TRACE_RECORD("takeover_req", 0);
	rcu_gp_kick_driver();
	pthread_mutex_lock(&rcu_state.gp_mutex);
	TRACE_RECORD("takeover_got", 0);
	atomic_fetch_sub_explicit(&rcu_state.takeover_req, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&rcu_state.n_takeover, 1, memory_order_relaxed);
	return true;
}

/*
 * A synchronize_rcu() caller that found gp_mutex held by another caller
 * (rcu_gp_acquire_driver() failed) becomes the next driver: it sleeps in
 * pthread_mutex_lock() until the driver unlocks, as liburcu's next leader
 * does, instead of polling for the mutex on a CPU of its own.  One at a
 * time: takeover_req, which keeps every other caller, the GP kthread and
 * the offload threads from trylocking meanwhile (they poll or sleep on
 * their nodes, covered by the GP it will drive), and which makes a
 * yieldable driver that took gp_mutex in between yield as to a takeover.
 * Why: a caller polling on the other CPU of a small machine turns every
 * GP's membarrier into an IPI to it, tens of times the cost of the GP
 * (docs/decisions.md, "The next driver sleeps on gp_mutex").  Returns
 * false, not queued, when a next driver is there already, the holder is
 * yieldable or the GP is parked (rcu_gp_acquire_driver(true) serves those).
 */
bool rcu_gp_queue_driver(void)
{
	int none = 0;

	if (atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed) ||
	    atomic_load_explicit(&rcu_state.gp_parked, memory_order_relaxed))
		return false;
	/* seq_cst: as the takeover's increment in rcu_gp_acquire_driver()
	 * (pairs with the driver's check after its driver_sleeping store in
	 * rcu_gp_sleep_until() and with rcu_gp_one_locked()'s entry check). */
	if (!atomic_compare_exchange_strong_explicit(&rcu_state.takeover_req, &none, 1,
						     memory_order_seq_cst,
						     memory_order_relaxed))
		return false;
	TRACE_RECORD("queue_driver", 0);
	/* From here a poller for rcu_gp_handoff(): the holder leaves the GPs
	 * still wanted to us, and we drive them or hand off after our own
	 * unlock (rcu_sr_drive(), src/sync.c).  Relaxed, as a poller's
	 * increment: a holder that misses it wakes the GP kthread. */
	atomic_fetch_add_explicit(&rcu_state.nr_sr_spinning, 1, memory_order_relaxed);
	/* Only a sleeping driver is woken: a yieldable one that took the
	 * mutex since our check yields to us; a driving caller asleep in
	 * its FQS wait wakes and looks again. */
	rcu_gp_kick_driver();
	pthread_mutex_lock(&rcu_state.gp_mutex);
	atomic_fetch_sub_explicit(&rcu_state.takeover_req, 1, memory_order_relaxed);
	return true;
}

/* ---- The GP kthread ---------------------------------------------------------------------- */

static _Atomic bool gp_kthread_start_failed;

/*
 * Register the GP kthread's slot.  Out of memory (a new slot chunk, a
 * bigger tree) it is counted as missing, as a failed start is: callers
 * drive their grace periods (rcu_sr_caller_may_drive()) while it tries
 * again every 10 ms.  False: shutdown came first.
 */
static bool rcu_gp_kthread_register(void)
{
	bool said = false;

	while (trcu_register_thread()) {
		if (!said && !atomic_exchange_explicit(&gp_kthread_start_failed, true,
						       memory_order_relaxed))
			sys_warn("GP kthread: cannot register (out of memory): tried again every "
				 "10 ms; synchronize_rcu() callers drive their grace periods meanwhile");
		said = true;
		if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
			return false;
		sys_sleep_ns(10 * 1000000L);
	}
	if (said)
		atomic_store_explicit(&gp_kthread_start_failed, false, memory_order_relaxed);
	return true;
}

static void *rcu_gp_kthread(void *arg)
{
	struct rcu_thread *r = &rcu_thread_tls;
	struct rcu_async_wait aw = { 0, 0 };

	rcu_kthread_enter();
	pthread_setname_np(pthread_self(), "trcu_gp");
	/* The library's threads never act on a cancellation (internal.h). */
	sys_cancel_disable();
	if (!rcu_gp_kthread_register())
		return NULL;   /* shutdown while registration kept failing */
	/* A QSBR-style slot, offline while idle: like a CPU running the
	 * kernel's GP kthread, it is "watching" only while it runs. */
	r->qsbr = true;
	/*
	 * And blocked (->gp_blocked) whenever it does not hold gp_mutex: it
	 * goes online only while it holds gp_mutex, so a GP that another
	 * thread drives reports this slot at init like a blocked waiter's
	 * (rcu_early_report_leaf()) instead of scanning it and paying the
	 * GP-end membarrier for it: an idle synchronize_rcu() after the
	 * kthread started costs what it cost before
	 * (tests/rcu/test_idle_gp_slots.c).  The exception: asleep in a GP it
	 * parked (rcu_gp_park(), without gp_mutex) it is offline but not
	 * blocked, so a GP another thread starts meanwhile scans its slot
	 * (quiescent) instead of reporting it at init.
	 */
	rcu_enter_gp_wait(r);
	for (;;) {
		uint32_t v = atomic_load_explicit(&rcu_state.kthread_futex, memory_order_seq_cst);

		if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
			break;
		atomic_store_explicit(&rcu_state.kthread_sleeping, 1, memory_order_seq_cst);
		if (!rcu_gp_needed()) {
			sys_futex_wait(&rcu_state.kthread_futex, v, -1);
			TRACE_RECORD("kth_run", 0);
			continue;
		}
		atomic_store_explicit(&rcu_state.kthread_sleeping, 0, memory_order_relaxed);
		if (!rcu_gp_acquire_driver(false)) {
			/* A caller is driving: wait for its GP to end; a caller
			 * does not wake us (rcu_wake_gp_waiters()). */
			uint32_t e = atomic_load_explicit(&rcu_state.gp_end_futex,
							  memory_order_seq_cst);

			atomic_fetch_add_explicit(&rcu_state.nr_gp_waiters, 1, memory_order_seq_cst);
			if (!rcu_gp_acquire_driver(false)) {
				sys_futex_wait(&rcu_state.gp_end_futex, e, rcu_async_wait_ns(&aw));
				atomic_fetch_sub_explicit(&rcu_state.nr_gp_waiters, 1,
							  memory_order_relaxed);
				continue;
			}
			atomic_fetch_sub_explicit(&rcu_state.nr_gp_waiters, 1, memory_order_relaxed);
		}
		/* Cleared before going online, set again after going offline,
		 * both with gp_mutex held (the release and fence pairs of
		 * rcu_enter_gp_wait()/rcu_exit_gp_wait()). */
		rcu_exit_gp_wait(r, 0);
		rcu_internal_qsbr_online(r);
		while (rcu_gp_needed() &&
		       !atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
			if (!rcu_gp_one(r, RCU_DRV_KTHREAD))
				break;   /* a caller took the GP over */
		rcu_internal_qsbr_offline(r);
		rcu_enter_gp_wait(r);
		rcu_gp_unlock();
	}
	trcu_unregister_thread();
	return NULL;
}

/*
 * The GP kthread's one start, on the first asynchronous need (no thread
 * starts before first use), and its stop at shutdown.  This file owns the
 * handle, the start lock and the flag; fork() takes the lock around the
 * fork (src/gp_fork.c) so that the child sees a start done or not begun.
 */
static pthread_t gp_kthread;
static pthread_mutex_t gp_kthread_start_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool gp_kthread_started;
/* The last start failed (out of memory, thread limit): a wake at least
 * RCU_WAIT_RECHECK_NS later tries again (gp_kthread_next_try_ns), and
 * synchronize_rcu() callers drive meanwhile (rcu_sr_caller_may_drive());
 * gp_kthread_start_failed is also set while the started kthread cannot
 * register (above). */
static _Atomic long gp_kthread_next_try_ns;

bool rcu_gp_kthread_started(void)
{
	/* Acquire pairs with the release in rcu_gp_kthread_start(). */
	return atomic_load_explicit(&gp_kthread_started, memory_order_acquire);
}

bool rcu_gp_kthread_missing(void)
{
	/* Relaxed: a hint; a caller that misses it waits and looks again. */
	return atomic_load_explicit(&gp_kthread_start_failed, memory_order_relaxed);
}

/*
 * Start it, or (out of memory, thread limit) say so once per failing
 * spell and leave it to a later wake: call_rcu() and start_poll never
 * abort for it, and grace periods still end, driven by synchronize_rcu()
 * callers and the offload threads.  While it fails, one pthread_create()
 * per RCU_WAIT_RECHECK_NS at most, whoever wakes: every start_poll, list
 * caller and hand-off wakes the kthread, and each would otherwise pay a
 * failing create.  The time is read only while the start is failing.
 * Relaxed: the time orders nothing (a rate limit); the start itself is
 * serialised by its lock, and callers that passed the unlocked look
 * together see the first one's failure there.
 */
static void rcu_gp_kthread_start(void)
{
	bool failing = atomic_load_explicit(&gp_kthread_start_failed, memory_order_relaxed);
	long now = failing ? sys_now_ns() : 0;
	int err;

	if (failing && now < atomic_load_explicit(&gp_kthread_next_try_ns, memory_order_relaxed))
		return;
	pthread_mutex_lock(&gp_kthread_start_lock);
	if (!atomic_load_explicit(&gp_kthread_started, memory_order_relaxed) &&
	    (!atomic_load_explicit(&gp_kthread_start_failed, memory_order_relaxed) ||
	     now >= atomic_load_explicit(&gp_kthread_next_try_ns, memory_order_relaxed))) {
		err = rcu_kthread_create(&gp_kthread, rcu_gp_kthread, NULL);
		if (err) {
			atomic_store_explicit(&gp_kthread_next_try_ns,
					      sys_now_ns() + RCU_WAIT_RECHECK_NS, memory_order_relaxed);
			if (!atomic_exchange_explicit(&gp_kthread_start_failed, true,
						      memory_order_relaxed))
				sys_warn("cannot start the GP kthread (%s): tried again every "
					 "%ld ms while grace periods are wanted; synchronize_rcu() "
					 "callers drive their grace periods meanwhile", strerror(err),
					 RCU_WAIT_RECHECK_NS / 1000000L);
		} else {
			atomic_store_explicit(&gp_kthread_start_failed, false, memory_order_relaxed);
			/* Release pairs with the acquire in rcu_gp_kthread_started():
			 * the handle is set before the flag (rcu_gp_kthread_stop()). */
			atomic_store_explicit(&gp_kthread_started, true, memory_order_release);
		}
	}
	pthread_mutex_unlock(&gp_kthread_start_lock);
}

/* fork() steps: the start lock is taken before ofl_lock (src/gp_fork.c). */
void rcu_gp_kthread_fork_prepare(void)
{
	pthread_mutex_lock(&gp_kthread_start_lock);
}

void rcu_gp_kthread_fork_parent(void)
{
	pthread_mutex_unlock(&gp_kthread_start_lock);
}

/* Only the forking thread exists: no GP kthread, and a usable lock. */
void rcu_gp_kthread_fork_child(void)
{
	pthread_mutex_init(&gp_kthread_start_lock, NULL);
	atomic_store_explicit(&gp_kthread_started, false, memory_order_relaxed);
	atomic_store_explicit(&gp_kthread_start_failed, false, memory_order_relaxed);
	atomic_store_explicit(&gp_kthread_next_try_ns, 0, memory_order_relaxed);
}

/*
 * Shutdown (shutting_down already set): wake the GP kthread and join it;
 * if a reader keeps its grace period from ending for longer than a stall
 * timeout, say so and leave it rather than hang exit.
 */
void rcu_gp_kthread_stop(void)
{
	struct timespec ts;

	if (!rcu_gp_kthread_started())
		return;
	/* seq_cst pairs with the kthread's load of kthread_futex before its
	 * shutting_down check (rcu_gp_kthread()). */
	atomic_fetch_add_explicit(&rcu_state.kthread_futex, 1, memory_order_seq_cst);
	sys_futex_wake(&rcu_state.kthread_futex, 1);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += TUN(stall_timeout_ms) / 1000 + 1;
	if (pthread_timedjoin_np(gp_kthread, NULL, &ts)) {
		sys_warn("shutdown: the GP kthread is still waiting for a reader after %ld s; "
			  "not joined", TUN(stall_timeout_ms) / 1000 + 1);
		pthread_detach(gp_kthread);
	}
}

/* Make sure the GP kthread runs and sees the latest request. */
void rcu_gp_kthread_wake(void)
{
	if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
		return;
	if (!rcu_gp_kthread_started())
		rcu_gp_kthread_start();
	/* seq_cst pairs with the kthread's store to ->kthread_sleeping followed
	 * by its gp_seq_needed check. */
	atomic_fetch_add_explicit(&rcu_state.kthread_futex, 1, memory_order_seq_cst);
	TRACE_RECORD("kth_wake", atomic_load_explicit(&rcu_state.kthread_sleeping, memory_order_relaxed));
	if (atomic_load_explicit(&rcu_state.kthread_sleeping, memory_order_seq_cst))
		sys_futex_wake(&rcu_state.kthread_futex, 1);
}

/*
 * After a thread stops driving: if more GPs are wanted, let a waiting caller
 * take over, or the GP kthread when nobody waits.  When the driver was a
 * synchronize_rcu() caller and no other one waits (self_sr: the caller's own
 * list node still counts in rcu_sr_nr_waiting()), nor a wakeme or
 * rcu_barrier() caller, the GPs still wanted are asynchronous (callbacks,
 * polled cookies): their requesters are awake, woke the GP kthread after
 * raising gp_seq_needed, or sleep on gp_end_futex at most an async recheck
 * interval, so the caller returns without a wake-up (rcu_wake_gp_waiters()).
 * A list caller that leaves its own request undone wakes the GP kthread for
 * it on its way out (rcu_wait_gp_sr()).
 */
void rcu_gp_handoff(enum rcu_driver_kind kind, bool self_sr)
{
	bool gp_waiters, sync_gp, sr_others;

	if (!rcu_gp_needed())
		return;
	/* The GP kthread too may be waiting here, on gp_end_futex, for
	 * gp_mutex: its own wake-up word would leave it asleep, and the GPs
	 * still wanted with it (docs/decisions.md, "Who drives and who is
	 * woken").  seq_cst, then the sync count: see rcu_gp_waiters_to_wake(). */
	gp_waiters = atomic_load_explicit(&rcu_state.nr_gp_waiters, memory_order_seq_cst) != 0;
	sync_gp = gp_waiters &&
		  atomic_load_explicit(&rcu_state.nr_sync_gp_waiters, memory_order_relaxed) != 0;
	sr_others = rcu_sr_nr_waiting() > (self_sr ? 1 : 0);
	if (rcu_drv_is_caller(kind) && !sync_gp && !sr_others && !rcu_exp_pending() &&
	    !atomic_load_explicit(&rcu_state.nr_cb_waiters, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&rcu_state.n_async_skip, 1, memory_order_relaxed);
		return;   /* asynchronous needs only */
	}
	/*
	 * seed-004 waiters sleep on their own node, not on gp_end_futex:
	 * only the GP kthread can take over for them, unless a list caller
	 * that may drive still polls its node: it drives as soon as
	 * gp_mutex is free, and one that leaves done runs this hand-off
	 * itself (rcu_sr_spin() in src/sync.c).  The fence orders our
	 * unlock (by the caller, before this) before the count's load;
	 * pairs with the poller's seq_cst decrement and fence before its
	 * last trylock or its own hand-off: either it sees gp_mutex free
	 * and the GPs still wanted, or we see it gone.
	 *
	 * That holds when asynchronous waiters (the GP kthread waiting for
	 * gp_mutex, offload threads) sleep on gp_end_futex too: the
	 * poller's grace periods end with the wake-ups a caller's GP makes
	 * (rcu_wake_gp_waiters()), and the last poller to leave runs this
	 * hand-off again.  Waking them here instead puts a third thread on
	 * the CPUs, where it races the poller for gp_mutex, and on a small
	 * machine every GP then pays the membarrier's IPI to it
	 * (docs/decisions.md, "A polling caller spares the GP kthread").
	 * synchronize_rcu() callers sleeping on gp_end_futex (sync_gp) are
	 * woken at once, as before.
	 */
	if (sr_others && rcu_drv_is_caller(kind) && !sync_gp) {
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&rcu_state.nr_sr_spinning, memory_order_seq_cst) > 0)
			return;
	}
	if (gp_waiters)
		rcu_wake_gp_waiters(true);
	if (!gp_waiters || sr_others)
		rcu_gp_kthread_wake();
}

/*
 * A grace period with no holdout ends sooner than a futex wake-up would
 * reach its sleeper: poll gp_end_futex briefly before sleeping (as
 * liburcu's waiters do).  Bounded, and with pause instructions, so an
 * oversubscribed machine loses little (docs/decisions.md, "Waiters poll
 * before they sleep").  Returns true when the word moved.
 */
#define RCU_WAIT_SPIN_NS (5 * 1000L)

static bool rcu_wait_gp_spin(uint32_t v)
{
	long until = sys_now_ns() + RCU_WAIT_SPIN_NS;

	do {
		for (int i = 0; i < 16; i++)
			cpu_relax();
		/* Acquire: pairs with the seq_cst increment in
		 * rcu_wake_gp_waiters(), as the futex path does. */
		if (atomic_load_explicit(&rcu_state.gp_end_futex, memory_order_acquire) != v)
			return true;
	} while (sys_now_ns() < until);
	return false;
}

/*
 * Before handing off, serve the callers already waiting: drive until the
 * furthest GP requested *now* (at most two more GPs, since the target is
 * fixed).  Handing off instead wakes every sleeper to race for gp_mutex,
 * and with more callers than CPUs some can lose that race again and again:
 * serving them bounds each one's wait to the GPs already asked for
 * (docs/decisions.md, "The driver serves the waiters already there").
 */
static void rcu_gp_serve_waiters(struct rcu_thread *r, enum rcu_driver_kind kind)
{
	unsigned long need = atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire);

	/* List waiters too: left to the GP kthread, their GP waits for it to
	 * be scheduled, behind an offload thread's batch when the driver is
	 * that thread (docs/decisions.md, "The driver serves the waiters
	 * already there"). */
	/* A caller serves synchronize_rcu() callers only: the asynchronous
	 * waiters look again by themselves (rcu_wake_gp_waiters()). */
	_Atomic int *waiters = kind == RCU_DRV_CALLER ? &rcu_state.nr_sync_gp_waiters
						      : &rcu_state.nr_gp_waiters;

	while ((atomic_load_explicit(waiters, memory_order_relaxed) > 0 || rcu_sr_waiters()) &&
	       !rcu_seq_done(need))
		if (!rcu_gp_one(r, kind))
			return;
}

/* ---- Waiting for a grace period ------------------------------------------------------------ */

/* A thread about to sleep on gp_end_futex, or done with it.  seq_cst:
 * pairs with the load of nr_gp_waiters in rcu_gp_waiters_to_wake() (store
 * buffering against its gp_end_futex increment).  Synchronize_rcu() callers
 * are also counted apart, so that only their wake-ups count as sync wakes
 * (the offload threads' hint): list callers, which sleep on their own
 * nodes, would make every GP end count one nobody catches up. */
static void rcu_gp_waiter_enter(enum rcu_driver_kind kind)
{
	if (rcu_drv_is_caller(kind))
		atomic_fetch_add_explicit(&rcu_state.nr_sync_gp_waiters, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&rcu_state.nr_gp_waiters, 1, memory_order_seq_cst);
}

static void rcu_gp_waiter_exit(enum rcu_driver_kind kind)
{
	atomic_fetch_sub_explicit(&rcu_state.nr_gp_waiters, 1, memory_order_relaxed);
	if (rcu_drv_is_caller(kind))
		atomic_fetch_sub_explicit(&rcu_state.nr_sync_gp_waiters, 1, memory_order_relaxed);
}

/* kind: a synchronize_rcu() caller (RCU_DRV_CALLER, counted for the
 * offload threads' deferral) or an offload thread waiting for its callbacks'
 * GP (RCU_DRV_OFFLOAD). */
void rcu_wait_gp(unsigned long s, bool exp, enum rcu_driver_kind kind)
{
	bool caller = rcu_drv_is_caller(kind);
	struct rcu_thread *r = &rcu_thread_tls;
	bool registered = rcu_thread_registered(r);
	int was_online = registered ? rcu_enter_gp_wait(r) : 0;
	struct rcu_async_wait aw = { 0, 0 };
	bool drive;

	if (caller)
		rcu_sync_caller_enter();
	if (rcu_start_this_gp(s, registered ? r : NULL) && exp)
		rcu_gp_kick_driver();
	for (;;) {
		uint32_t v;

		rcu_gp_waiter_enter(kind);
		/* Acquire: pairs with the exchange in trcu_shutdown().  A
		 * caller that misses the flag and relies on a kthread that
		 * shutdown stopped looks again within RCU_WAIT_RECHECK_NS. */
		drive = exp || TUN(drive_from_caller) ||
			atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire);
		v = atomic_load_explicit(&rcu_state.gp_end_futex, memory_order_seq_cst);
		if (rcu_seq_done(s)) {
			rcu_gp_waiter_exit(kind);
			break;
		}
		if (drive && rcu_gp_acquire_driver(caller)) {
			bool ours = true;

			rcu_gp_waiter_exit(kind);
			while (ours && !rcu_seq_done(s))
				ours = rcu_gp_one(registered ? r : NULL, kind);
			if (ours)
				rcu_gp_serve_waiters(registered ? r : NULL, kind);
			rcu_gp_unlock();
			TRACE_RECORD("drv_unlock", ours);
			if (ours) {
				rcu_gp_handoff(kind, false);
				break;
			}
			continue;     /* taken over: wait for the GP as a waiter */
		}
		if (!drive)
			rcu_gp_kthread_wake();
		/* Not driving: end an unhurried tick (after our count,
		 * rcu_sync_caller_enter()); one that took a parked GP over
		 * spins itself. */
		if (caller)
			rcu_gp_hurry();
		/* Bounded, as on the list path: shutdown may stop the kthread
		 * before our GP (drive_from_caller=0), and a caller that may
		 * drive relies on its failed trylock being ordered before the
		 * driver's hand-off load of nr_gp_waiters, which POSIX does not
		 * promise (glibc's locked RMWs do).  An asynchronous
		 * waiter (!caller) is not woken by a caller that drives
		 * (rcu_wake_gp_waiters()): it looks again sooner. */
		if (!rcu_wait_gp_spin(v))
			sys_futex_wait(&rcu_state.gp_end_futex, v,
					!caller ? rcu_async_wait_ns(&aw) : RCU_WAIT_RECHECK_NS);
		if (caller)
			rcu_note_sync_resume();
		rcu_gp_waiter_exit(kind);
	}
	if (caller)
		rcu_sync_caller_exit();
	if (registered)
		rcu_exit_gp_wait(r, was_online);
}

/* ---- For the callback-offload threads ------------------------------------------------------ */

unsigned long rcu_gp_snap(void)
{
	/* Full barrier: callbacks queued before this are covered by the GP. */
	atomic_thread_fence(memory_order_seq_cst);
	return rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire));
}

unsigned long rcu_gp_seq_current(void)
{
	return atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire);
}

/* Block the calling (unregistered) thread until GP s has ended, driving it
 * when the profile lets callers drive. */
void rcu_gp_wait_seq(unsigned long s)
{
	rcu_wait_gp(s, false, RCU_DRV_OFFLOAD);
}

void rcu_gp_request_async(unsigned long s)
{
	/* Cheap check first: under a callback flood this runs per call_rcu(). */
	if (ULONG_CMP_GE(atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire), s))
		return;
	if (rcu_start_this_gp(s, NULL))
		rcu_gp_kthread_wake();
}
