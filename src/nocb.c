/* SPDX-License-Identifier: MIT */
/*
 * Callback-offload threads (the kernel's NOCB design, tree_nocb.h):
 * callbacks never run on the caller's thread.  This file owns the callback
 * layer's state, the offload groups and each thread's rcu_data.
 *
 * Each thread that queues callbacks gets an rcu_data (src/call_rcu.c pushes
 * onto its lock-free bypass stack).  Each offload thread owns a group of
 * rcu_data: it flushes their bypass stacks into their segmented callback
 * lists (rcu_segcblist, tagged with GP numbers), advances and accelerates
 * them, invokes the callbacks whose grace period ended (batch limits as in
 * rcu_do_batch()), and waits for the next grace period.
 *
 * A thread that exits leaves its rcu_data to its offload thread ("adopted"),
 * which runs the remaining callbacks and then frees it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#ifdef TREERCU_DEBUG_OBJECTS
#include <dlfcn.h>
#endif

#include "internal.h"
#include "trace.h"
#include "nocb.h"
#include "nocb_internal.h"
#include "sync_hint.h"
#include "test_hooks.h"

struct nocb_state nocb = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.barrier_mutex = PTHREAD_MUTEX_INITIALIZER,
	.shared_lock = PTHREAD_MUTEX_INITIALIZER,
	.shared_run_lock = PTHREAD_MUTEX_INITIALIZER,
};

__thread struct rcu_data *nocb_rdp;
_Atomic bool rcu_nocb_test_no_rdp;
__thread bool nocb_self;   /* this thread is an offload thread */
/* Set in a fork() child whose only thread is an offload thread (a callback
 * called fork()): that child may only exec or _exit (nocb_fork_check()). */
__thread bool nocb_forked_here;

/* After each callback: a child of a fork() from a callback that returns
 * into the offload loop would run the parent's callbacks a second time,
 * over state the fork reset freed. */
void nocb_fork_check(void)
{
	if (TRCU_UNLIKELY(nocb_forked_here))
		sys_die("fork() from an RCU callback: the child returned from the callback "
			 "into the library; such a child may only exec or _exit");
}

/* ---- Offload threads ------------------------------------------------------ */

void nocb_wake(struct nocb_group *grp)
{
	/* seq_cst: pairs with the offload thread's store to ->state followed
	 * by its bypass check in nocb_sleep(). */
	atomic_fetch_add_explicit(&grp->futex, 1, memory_order_seq_cst);
	sys_futex_wake(&grp->futex, 1);
}

/*
 * A synchronize_rcu() caller woken since the last check has not run yet (it
 * was probably queued on this CPU behind us), or one waits for a GP whose
 * driver may be queued behind us: with `left` callbacks still to handle,
 * sleep until that changes, at most nocb_defer_us, once per situation (see
 * rcu_note_sync_wake()).  Not for short work: when the rest of the batch is
 * the wakeme callbacks of the waiting callers, napping delays the callers
 * it would serve (docs/decisions.md, "Offload threads nap only before long
 * batches").
 */
#define NOCB_DEFER_MIN_CBS 1000

static void nocb_defer_to_woken(struct nocb_group *grp, long left)
{
	struct rcu_sync_key k;

	if (!TUN(nocb_defer_us) || left < NOCB_DEFER_MIN_CBS || !rcu_sync_caller_pending(&k) ||
	    rcu_sync_key_same(&k, &grp->defer))
		return;
	grp->defer = k;
	TRACE_RECORD("nocb_defer", left);
	rcu_sync_wait_resume(&k, TUN(nocb_defer_us) * 1000L);
	TRACE_RECORD("nocb_defer_end", 0);
	atomic_fetch_add_explicit(&nocb.n_defer, 1, memory_order_relaxed);
}

void call_rcu_queued_twice(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	sys_die("call_rcu(): rcu_head %p queued again before its callback ran (callback %p): "
		 "a head may be queued once until its callback starts", (void *)head,
		 (void *)(uintptr_t)func);
}

/* Take the bypass stack and append it, oldest first, to NEXT.  Reversing
 * 100k entries takes a quarter of a millisecond: deferral points inside. */
long nocb_flush_bypass(struct nocb_group *grp, struct rcu_data *rdp)
{
	/* Acquire: pairs with the release CAS in call_rcu(): the callbacks'
	 * ->func and ->next are visible. */
	struct trcu_head *rhp = atomic_exchange_explicit(&rdp->bypass, NULL,
							 memory_order_acquire);
	struct trcu_head *rev = NULL;
	struct rcu_cblist l;
	long n = 0;

	if (!rhp)
		return 0;
	rcu_cblist_init(&l);
	/* The newest entry becomes the list's tail (its ->next is set to
	 * NULL by the first step): one pass, not a second one to enqueue
	 * (each pass over a long list walks memory no cache holds). */
	l.tail = &rhp->next;
	while (rhp) {
		struct trcu_head *next = rhp->next;

		rhp->next = rev;
		rev = rhp;
		rhp = next;
		/* The stack's length is unknown; the n entries taken so far
		 * are work still ahead (they are yet to be invoked). */
		if ((++n & 1023) == 0)
			nocb_defer_to_woken(grp, n);
	}
	l.head = rev;
	l.len = n;
	/* The oldest taken is the list's last callback already: a head queued
	 * twice in a row whose first copy an earlier flush moved here
	 * (call_rcu_push() catches it while still on the bypass). */
	if (TRCU_UNLIKELY(rdp->cblist.tails[RCU_NEXT_TAIL] == &rev->next))
		call_rcu_queued_twice(rev, rev->func);
	rcu_segcblist_enqueue_list(&rdp->cblist, &l);
	return n;
}

/* Drop one count of the current rcu_barrier(); the last wakes it. */
void nocb_barrier_dec(void)
{
	/* acq_rel: the last one to finish wakes rcu_barrier(), which then
	 * sees every earlier callback's effects. */
	if (atomic_fetch_sub_explicit(&nocb.barrier_cpu_count, 1, memory_order_acq_rel) == 1) {
		atomic_fetch_add_explicit(&nocb.barrier_futex, 1, memory_order_release);
		sys_futex_wake(&nocb.barrier_futex, INT_MAX);
	}
}

static void rcu_barrier_callback(struct trcu_head *rhp)
{
	struct rcu_data *rdp = (struct rcu_data *)((char *)rhp -
						   offsetof(struct rcu_data, barrier_head));

	rdp->barrier_entrained = false;
	nocb_barrier_dec();
}

/* rcu_barrier_entrain: a barrier callback behind everything this rcu_data
 * holds; an rcu_data with nothing queued needs none. */
static void nocb_entrain(struct rcu_data *rdp)
{
	if (rcu_segcblist_empty(&rdp->cblist) || rdp->barrier_entrained)
		return;
	rdp->barrier_entrained = true;
	atomic_fetch_add_explicit(&nocb.barrier_cpu_count, 1, memory_order_relaxed);
	rdp->barrier_head.func = rcu_barrier_callback;
	rcu_segcblist_enqueue(&rdp->cblist, &rdp->barrier_head);
}

long rdp_pending(struct rcu_data *rdp)
{
	return atomic_load_explicit(&rdp->n_queued, memory_order_relaxed) -
	       atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed);
}

/* Add to the count of callbacks run: read by call_rcu()'s flood checks,
 * the push-back and trcu_get_stats(). */
static void nocb_publish_invoked(struct rcu_data *rdp, long add)
{
	/* An RMW: the runs of stranded callbacks add to the shared
	 * rcu_data's count too.  seq_cst: before the ->pushback_waiting load
	 * in nocb_do_batch(), which pairs with the waiter's seq_cst increment
	 * before its pending check (store buffering). */
	atomic_fetch_add_explicit(&rdp->n_invoked, add, memory_order_seq_cst);
}

/*
 * rcu_do_batch: invoke ready callbacks, at most grp->blimit (or the time
 * budget), as the kernel does; what is left goes back to the front of DONE.
 */
bool nocb_do_batch(struct nocb_group *grp, struct rcu_data *rdp, long deadline_ns)
{
	struct rcu_cblist rcl;
	struct trcu_head *rhp;
	long bl = grp->blimit, n = 0, n_pub = 0, pending = rdp_pending(rdp);

	/* The kernel's rcu_divisor (7): bigger batches when much is pending. */
	if (pending >> 7 > bl)
		bl = pending >> 7;
	rcu_cblist_init(&rcl);
	rcu_segcblist_extract_done_cbs(&rdp->cblist, &rcl);
	TRACE_RECORD("batch", rcl.len);
	nocb_defer_to_woken(grp, rcl.len);
	while ((rhp = rcu_cblist_dequeue(&rcl))) {
		void (*f)(struct trcu_head *) = rhp->func;

		if (f != rcu_barrier_callback) {
			n++;
		} else {
			/* Counted before the barrier callback can let
			 * rcu_barrier() return: a caller reading
			 * trcu_get_stats() then sees every earlier callback as
			 * run (test_callbacks under TSan saw 4 pending). */
			nocb_publish_invoked(rdp, n - n_pub);
			n_pub = n;
		}
		rcu_cb_invoke(rhp, f);
		nocb_fork_check();
		if ((n & 31) == 0) {
			if (sys_now_ns() > deadline_ns)
				break;
			nocb_defer_to_woken(grp, rcl.len);
		}
		if (n >= bl)
			break;
	}
	TRACE_RECORD("batch_end", n);
	rcu_segcblist_insert_done_cbs(&rdp->cblist, &rcl);
	nocb_publish_invoked(rdp, n - n_pub);
	if (atomic_load_explicit(&rdp->pushback_waiting, memory_order_seq_cst)) {
		atomic_fetch_add_explicit(&rdp->pushback_futex, 1, memory_order_seq_cst);
		sys_futex_wake(&rdp->pushback_futex, INT_MAX);
	}
	return rcu_segcblist_ready_cbs(&rdp->cblist);
}

/* Adjust the batch limit: unlimited above qhimark, back to blimit below
 * qlowmark (the kernel's rdp->blimit policy). */
static void nocb_adjust_blimit(struct nocb_group *grp, long pending)
{
	if (pending > TUN(qhimark))
		grp->blimit = LONG_MAX;
	else if (pending < TUN(qlowmark) || grp->blimit != LONG_MAX)
		grp->blimit = TUN(blimit);
}

static void nocb_free_rdp(struct nocb_group *grp, struct rcu_data **pp)
{
	struct rcu_data *rdp = *pp;

	*pp = rdp->next;
	atomic_fetch_add_explicit(&nocb.n_queued_dead,
				  atomic_load_explicit(&rdp->n_queued, memory_order_relaxed),
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&nocb.n_invoked_dead,
				  atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed),
				  memory_order_relaxed);
	free(rdp);
}

struct nocb_pass {
	bool ready;          /* callbacks left to invoke */
	bool waiting;        /* callbacks waiting for a GP */
	bool lazy_only;      /* every waiting callback is lazy */
	bool hurry;          /* an rcu_barrier() waits: no batching */
	unsigned long need;  /* earliest GP needed */
	long pending;
	long gp_waiting;     /* callbacks waiting for a GP (not DONE) */
};

/* Free adopted rcu_data that have run everything (offload thread only: it
 * is the only one that frees, so its list walk needs no lock otherwise). */
void nocb_reap_orphans(struct nocb_group *grp)
{
	pthread_mutex_lock(&grp->lock);
	for (struct rcu_data **pp = &grp->rdps; *pp;) {
		struct rcu_data *rdp = *pp;

		if (atomic_load_explicit(&rdp->orphan, memory_order_acquire) &&
		    rcu_segcblist_empty(&rdp->cblist) &&
		    !atomic_load_explicit(&rdp->bypass, memory_order_acquire)) {
			nocb_free_rdp(grp, pp);
			continue;
		}
		pp = &rdp->next;
	}
	pthread_mutex_unlock(&grp->lock);
}

static struct rcu_data *nocb_first(struct nocb_group *grp)
{
	struct rcu_data *rdp;

	pthread_mutex_lock(&grp->lock);
	rdp = grp->rdps;
	pthread_mutex_unlock(&grp->lock);
	return rdp;
}

static void nocb_pass_need(struct nocb_pass *p, unsigned long need)
{
	if (!p->waiting || ULONG_CMP_LT(need, p->need))
		p->need = need;
	p->waiting = true;
}

/* ---- Grace periods sized to the work ----------------------------------------- */

/*
 * The arrival rate, as the kernel's nocb_nobypass_count: callbacks flushed
 * within the current tick.  A new tick right after a busy one starts from
 * the excess over nocb_batch_min, at most nocb_batch_min: restarting from
 * zero would take the few callbacks flushed just after a batch's grace
 * period for a trickle, and give each such pass a grace period of its own.
 * After a tick or more with no pass, from zero.
 */
static void nocb_batch_count(struct nocb_group *grp, long flushed)
{
	long now = sys_now_ns(), tick = TUN(tick_us) * 1000L, min = TUN(nocb_batch_min);

	if (now - grp->rate_window_ns >= tick) {
		long carry = grp->rate_n - min;

		if (now - grp->rate_window_ns >= 2 * tick || carry < 0)
			carry = 0;
		grp->rate_window_ns = now;
		grp->rate_n = carry < min ? carry : min;
	}
	grp->rate_n += flushed;
}

/* Someone already asked for grace period s: waiting for it costs no GP. */
static bool nocb_gp_requested(unsigned long s)
{
	/* Acquire: pairs with the seq_cst CAS that raises gp_seq_needed in
	 * rcu_start_this_gp(), as rcu_gp_request_async()'s check; a stale
	 * value only makes this thread request the GP itself. */
	return ULONG_CMP_GE(atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire),
			    s);
}

/*
 * GP batching, the kernel's NOCB bypass rule (rcu_nocb_try_bypass(): the
 * bypass list is flushed once its oldest callback is a jiffy old or it holds
 * qhimark callbacks): callbacks waiting for a grace period that nobody has
 * requested yet are held back until the oldest of them has waited
 * nocb_batch_us, or qhimark wait for a GP, so that one grace period serves
 * everything queued meanwhile.  Fewer grace periods: fewer membarriers
 * interrupting readers, less CPU per callback; the flood bound is untouched
 * (qhimark ends the wait long before cb_max_pending).  Never held back:
 * a trickle (fewer than nocb_batch_min callbacks in the current tick: the
 * kernel's nocb_nobypass_lim_per_jiffy), callbacks whose GP someone has
 * already requested, and any callback while a thread waits for an offload
 * thread (rcu_barrier(), a wakeme-path synchronize_rcu(), a flood
 * push-back) or while the offload threads stop.  Returns true when the GP
 * is due now; else *left_ns is how long the batch may still wait.
 */
static bool nocb_gp_due(struct nocb_group *grp, const struct nocb_pass *p, long *left_ns)
{
	long delay = TUN(nocb_batch_us) * 1000L, now;

	*left_ns = 0;
	if (!delay || p->hurry || p->gp_waiting >= TUN(qhimark) || nocb_gp_requested(p->need) ||
	    rcu_cb_waiters() || atomic_load_explicit(&nocb.stopping, memory_order_acquire))
		goto due;
	now = sys_now_ns();
	if (!grp->batch_since_ns) {
		if (grp->rate_n < TUN(nocb_batch_min))
			goto due;
		grp->batch_since_ns = now;
	}
	if (now - grp->batch_since_ns >= delay)
		goto due;
	*left_ns = delay - (now - grp->batch_since_ns);
	return false;
due:
	grp->batch_since_ns = 0;
	return true;
}

/*
 * Hold the batch back for at most left_ns: call_rcu() wakes NOCB_BATCH
 * only for a flood (qhimark) or a waiting thread, rcu_barrier() and
 * through the futex as always (v: the futex word read before the
 * pass).  Unlike nocb_sleep(), the bypass stacks are expected to fill.
 */
static void nocb_batch_sleep(struct nocb_group *grp, long left_ns, uint32_t v)
{
	/* seq_cst: pairs with call_rcu()'s push followed by its ->state load,
	 * and (the waiter count) with rcu_cb_waiter_enter(). */
	atomic_store_explicit(&grp->state, NOCB_BATCH, memory_order_seq_cst);
	if (!rcu_cb_waiters() && !atomic_load_explicit(&nocb.stopping, memory_order_acquire)) {
		TRACE_RECORD("nocb_batch", left_ns);
		sys_futex_wait(&grp->futex, v, left_ns);
		TRACE_RECORD("nocb_batch_end", 0);
	}
	atomic_store_explicit(&grp->state, NOCB_AWAKE, memory_order_relaxed);
}

/*
 * One housekeeping pass over the group's rcu_data: flush, entrain barrier
 * callbacks, advance, accelerate, and (invoke) run ready callbacks.  New
 * rcu_data are only ever inserted at the head and only this thread frees
 * them, so the walk runs unlocked and callbacks may call call_rcu().
 */
static void nocb_gp_pass(struct nocb_group *grp, struct nocb_pass *p, bool invoke)
{
	unsigned long barrier = atomic_load_explicit(&grp->barrier_req, memory_order_acquire);
	long deadline = sys_now_ns() + TUN(rcu_resched_us) * 1000L;
	unsigned long cur, snap, nextgp;
	bool orphans = false;
	long flushed = 0;

	memset(p, 0, sizeof(*p));
	p->lazy_only = true;
	cur = rcu_gp_seq_current();
	for (struct rcu_data *rdp = nocb_first(grp); rdp; rdp = rdp->next) {
		flushed += nocb_flush_bypass(grp, rdp);
		if (barrier != grp->barrier_done)
			nocb_entrain(rdp);
	}
	nocb_batch_count(grp, flushed);
	/*
	 * The snapshot comes after the flush: a callback must wait for a GP
	 * that starts after it was queued.  (Taken before the flush, a
	 * callback queued during the pass could be given a GP that had
	 * already started, and a wakeme-path free would race with a
	 * reader.)  The fence in rcu_gp_snap() orders the flushes before it.
	 */
	snap = rcu_gp_snap();
	for (struct rcu_data *rdp = nocb_first(grp); rdp; rdp = rdp->next) {
		rcu_segcblist_advance(&rdp->cblist, cur);
		rcu_segcblist_accelerate(&rdp->cblist, snap);
		if (invoke && rcu_segcblist_ready_cbs(&rdp->cblist))
			nocb_do_batch(grp, rdp, deadline);
		p->ready |= rcu_segcblist_ready_cbs(&rdp->cblist);
		if (rcu_segcblist_nextgp(&rdp->cblist, &nextgp)) {
			nocb_pass_need(p, nextgp);
			/* A waiting rcu_barrier() ends laziness. */
			if (!atomic_load_explicit(&rdp->lazy_queued, memory_order_relaxed) ||
			    rdp->barrier_entrained)
				p->lazy_only = false;
			p->hurry |= rdp->barrier_entrained;
		}
		p->pending += rdp_pending(rdp);
		p->gp_waiting += rdp->cblist.len - rdp->cblist.seglen[RCU_DONE_TAIL];
		orphans |= atomic_load_explicit(&rdp->orphan, memory_order_relaxed);
	}
	if (barrier != grp->barrier_done) {
		grp->barrier_done = barrier;
		nocb_barrier_dec();   /* this group has entrained */
	}
	if (orphans)
		nocb_reap_orphans(grp);
	nocb_adjust_blimit(grp, p->pending);
}

static bool nocb_bypass_empty(struct nocb_group *grp)
{
	bool empty = true;

	pthread_mutex_lock(&grp->lock);
	for (struct rcu_data *rdp = grp->rdps; rdp && empty; rdp = rdp->next)
		empty = !atomic_load_explicit(&rdp->bypass, memory_order_seq_cst);
	pthread_mutex_unlock(&grp->lock);
	return empty && atomic_load_explicit(&grp->barrier_req, memory_order_acquire) ==
			grp->barrier_done;	/* barrier_done: this thread's own */
}

/*
 * Sleep until call_rcu() or rcu_barrier() wakes us, or the
 * timeout.  v is the futex word as read before the pass that decided to
 * sleep: any wake-up since then (a barrier request, say, which the pass did
 * not see) makes the wait return at once.
 */
static void nocb_sleep(struct nocb_group *grp, int state, long timeout_ns, uint32_t v)
{
	/* seq_cst: pairs with call_rcu()'s CAS followed by its ->state load. */
	atomic_store_explicit(&grp->state, state, memory_order_seq_cst);
	if (nocb_bypass_empty(grp) && !atomic_load_explicit(&nocb.stopping, memory_order_acquire))
		sys_futex_wait(&grp->futex, v, timeout_ns);
	atomic_store_explicit(&grp->state, NOCB_AWAKE, memory_order_relaxed);
}

static void clear_lazy(struct nocb_group *grp)
{
	pthread_mutex_lock(&grp->lock);
	for (struct rcu_data *rdp = grp->rdps; rdp; rdp = rdp->next)
		atomic_store_explicit(&rdp->lazy_queued, false, memory_order_relaxed);
	pthread_mutex_unlock(&grp->lock);
}

static void *rcu_nocb_kthread(void *arg)
{
	struct nocb_group *grp = arg;
	struct nocb_pass p;
	long left;

	rcu_kthread_enter();
	pthread_setname_np(pthread_self(), "trcu_nocb");
	/* A callback that cancels its own thread (or hits a cancellation
	 * point after someone did) must not end it (internal.h). */
	sys_cancel_disable();
	/* The deferral naps (nocb_defer_to_woken()) are 20 us: without this
	 * the default 50 us timer slack would stretch each. */
	(void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
	nocb_self = true;
	grp->blimit = TUN(blimit);
	for (;;) {
		/* seq_cst: pairs with nocb_wake()'s increment (see nocb_sleep). */
		uint32_t v = atomic_load_explicit(&grp->futex, memory_order_seq_cst);

		nocb_gp_pass(grp, &p, true);
		if (p.ready) {
			/* Keep grace periods flowing while a long batch runs,
			 * as soon as the waiting ones are due. */
			if (p.waiting && nocb_gp_due(grp, &p, &left))
				rcu_gp_request_async(p.need);
			continue;
		}
		if (p.waiting) {
			if (p.lazy_only && TUN(lazy)) {
				nocb_sleep(grp, NOCB_LAZY, TUN(lazy_flush_ms) * 1000000L, v);
				clear_lazy(grp);
			} else if (!nocb_gp_due(grp, &p, &left)) {
				nocb_batch_sleep(grp, left, v);
				continue;
			}
			/* Nothing to invoke: drive or wait for the GP ourselves. */
			TRACE_RECORD("nocb_waitgp", p.need);
			rcu_gp_wait_seq(p.need);
			TRACE_RECORD("nocb_waitgp_end", 0);
			continue;
		}
		if (atomic_load_explicit(&nocb.stopping, memory_order_acquire))
			break;
		nocb_sleep(grp, NOCB_IDLE, -1, v);
	}
	return NULL;
}

static void rdp_exit(void *arg);

/* Link the shared rcu_data into group 0 (under nocb.lock, the offload
 * threads running) and wake that group for what its bypass already holds. */
static void nocb_link_shared_locked(void)
{
	struct nocb_group *grp = &nocb.groups[0];
	struct rcu_data *rdp = &nocb.shared;

	rdp->grp = grp;
	pthread_mutex_lock(&grp->lock);
	rdp->next = grp->rdps;
	grp->rdps = rdp;
	pthread_mutex_unlock(&grp->lock);
	/* Release: ->grp and the list entry; pairs with the acquire in
	 * call_rcu_shared() and rcu_nocb_stats(). */
	atomic_store_explicit(&nocb.shared_linked, true, memory_order_release);
	nocb_wake(grp);
}

/* Start the offload threads on first use: one per two CPUs by default.
 * Threads that cannot be created (thread limit, no memory for a stack)
 * leave fewer groups; none at all: false, and a later call tries again. */
bool nocb_start(void)
{
	long n = TUN(nocb_threads), ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long i;
	int err = 0;

	pthread_mutex_lock(&nocb.lock);
	if (atomic_load_explicit(&nocb.started, memory_order_relaxed)) {
		pthread_mutex_unlock(&nocb.lock);
		return true;
	}
	/* After trcu_shutdown() none starts again (call_rcu() then runs
	 * callbacks itself). */
	if (atomic_load_explicit(&nocb.stopping, memory_order_relaxed)) {
		pthread_mutex_unlock(&nocb.lock);
		return false;
	}
	if (n <= 0)
		n = ncpu > 1 ? ncpu / 2 : 1;
	if (n > NOCB_MAX_GROUPS)
		n = NOCB_MAX_GROUPS;
	nocb.groups = calloc((size_t)n, sizeof(*nocb.groups));
	if (!nocb.groups) {
		/* Nothing started: a later call tries again. */
		pthread_mutex_unlock(&nocb.lock);
		nocb_warn_shared(ENOMEM);
		return false;
	}
	/* Once: a child of fork() starts its offload threads again. */
	if (!nocb.key_created && pthread_key_create(&nocb.exit_key, rdp_exit))
		sys_die("call_rcu(): pthread_key_create failed");
	nocb.key_created = true;
	for (i = 0; i < n; i++) {
		pthread_mutex_init(&nocb.groups[i].lock, NULL);
		err = rcu_kthread_create(&nocb.groups[i].thread, rcu_nocb_kthread, &nocb.groups[i]);
		if (err)
			break;
	}
	if (i == 0) {
		free(nocb.groups);
		nocb.groups = NULL;
		pthread_mutex_unlock(&nocb.lock);
		nocb_warn_shared(err);
		return false;
	}
	if (i < n)
		sys_warn("call_rcu(): %ld of %ld callback-offload threads started (%s): "
			  "callbacks share those", i, n, strerror(err));
	nocb.nr_groups = (int)i;
	/* Callbacks parked while none ran: linked before `started` says the
	 * groups cover everything (an rcu_barrier() that sees it started
	 * entrains on the groups' lists only). */
	if (nocb.shared_init)
		nocb_link_shared_locked();
	/* Release: pairs with the acquire in rdp_try_get() and rcu_barrier(). */
	atomic_store_explicit(&nocb.started, true, memory_order_release);
	pthread_mutex_unlock(&nocb.lock);
	return true;
}

/* nocb_start() from call_rcu(): while it fails, at most once per
 * NOCB_START_RETRY_NS (a flood would otherwise try pthread_create() per
 * call). */
static bool nocb_start_retry(void)
{
	long now = sys_now_ns();

	/* Relaxed: only a rate limit. */
	if (now < atomic_load_explicit(&nocb.start_retry_ns, memory_order_relaxed))
		return false;
	if (nocb_start())
		return true;
	atomic_store_explicit(&nocb.start_retry_ns, now + NOCB_START_RETRY_NS,
			      memory_order_relaxed);
	return false;
}

/* Said once per process: callbacks go through the shared rcu_data.  err:
 * why no offload thread started (0: a thread's own rcu_data could not be
 * allocated). */
void nocb_warn_shared(int err)
{
	int bit = err ? 2 : 1;

	if (atomic_fetch_or_explicit(&nocb.shared_warned, bit, memory_order_relaxed) & bit)
		return;
	if (err)
		sys_warn("call_rcu(): cannot start a callback-offload thread (%s): callbacks "
			  "wait until one starts (tried again every %ld ms) or rcu_barrier() "
			  "runs them", strerror(err), NOCB_START_RETRY_NS / 1000000L);
	else
		sys_warn("call_rcu(): out of memory for a thread's callback state: its "
			  "callbacks share one process-wide queue");
}

/* A fork() child: the shared rcu_data as never used (the parent's
 * callbacks on it are the parent's, as on every other rcu_data). */
static void nocb_shared_reset(void)
{
	struct rcu_data *rdp = &nocb.shared;

	pthread_mutex_init(&nocb.shared_lock, NULL);
	pthread_mutex_init(&nocb.shared_run_lock, NULL);
	atomic_store_explicit(&nocb.start_retry_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&rdp->bypass, NULL, memory_order_relaxed);
	atomic_store_explicit(&rdp->n_queued, 0, memory_order_relaxed);
	atomic_store_explicit(&rdp->n_invoked, 0, memory_order_relaxed);
	atomic_store_explicit(&rdp->lazy_queued, false, memory_order_relaxed);
	atomic_store_explicit(&rdp->pushback_waiting, 0, memory_order_relaxed);
	atomic_store_explicit(&rdp->pushback_gave_up_gp, 0, memory_order_relaxed);
	rdp->qlen_last_fqs_check = 0;
	rdp->barrier_entrained = false;
	rdp->grp = NULL;
	rdp->next = NULL;
	nocb.shared_init = false;
	atomic_store_explicit(&nocb.shared_warned, 0, memory_order_relaxed);
	atomic_store_explicit(&nocb.shared_linked, false, memory_order_relaxed);
}

/* ---- fork() (src/fork.c) -------------------------------------------------------- */

/* nocb.lock, then every group's lock (nobody takes nocb.lock while holding
 * a group's).  barrier_mutex is held across rcu_barrier()'s wait: not taken,
 * re-initialised in the child. */
void rcu_nocb_fork_prepare(void)
{
	pthread_mutex_lock(&nocb.lock);
	if (atomic_load_explicit(&nocb.started, memory_order_relaxed))
		for (int i = 0; i < nocb.nr_groups; i++)
			pthread_mutex_lock(&nocb.groups[i].lock);
}

void rcu_nocb_fork_parent(void)
{
	if (atomic_load_explicit(&nocb.started, memory_order_relaxed))
		for (int i = 0; i < nocb.nr_groups; i++)
			pthread_mutex_unlock(&nocb.groups[i].lock);
	pthread_mutex_unlock(&nocb.lock);
}

/*
 * The offload threads did not survive the fork.  Every callback queued
 * before it belongs to the parent, which runs it: the child forgets them
 * (their rcu_data and group structures are freed, the callbacks themselves
 * are the program's memory and are left alone), and the offload threads
 * start again at the child's first call_rcu().  The
 * callback counters start again from zero.
 */
void rcu_nocb_fork_child(void)
{
	pthread_mutex_init(&nocb.lock, NULL);
	pthread_mutex_init(&nocb.barrier_mutex, NULL);
	if (atomic_load_explicit(&nocb.started, memory_order_relaxed)) {
		for (int i = 0; i < nocb.nr_groups; i++) {
			struct rcu_data *rdp = nocb.groups[i].rdps, *next;

			for (; rdp; rdp = next) {
				next = rdp->next;
				if (rdp != &nocb.shared)
					free(rdp);
			}
		}
		free(nocb.groups);
	}
	nocb.groups = NULL;
	nocb.nr_groups = 0;
	nocb.next_group = 0;
	atomic_store_explicit(&nocb.started, false, memory_order_relaxed);
	atomic_store_explicit(&nocb.barrier_cpu_count, 0, memory_order_relaxed);
	atomic_store_explicit(&nocb.barrier_abandoned, false, memory_order_relaxed);
	atomic_store_explicit(&nocb.n_queued_dead, 0, memory_order_relaxed);
	atomic_store_explicit(&nocb.n_invoked_dead, 0, memory_order_relaxed);
	nocb_rdp = NULL;
	if (nocb.key_created)
		pthread_setspecific(nocb.exit_key, NULL);
	nocb_forked_here = nocb_self;
	nocb_shared_reset();
}

/* ---- Per-thread rcu_data ------------------------------------------------------ */

/* Thread exit: the offload thread adopts what is left and frees it. */
static void rdp_exit(void *arg)
{
	struct rcu_data *rdp = arg;
	struct nocb_group *grp = rdp->grp;   /* rdp may be freed once orphaned */

	/* Release: the owner's last pushes before the orphan mark; pairs with
	 * the acquire in nocb_reap_orphans(). */
	atomic_store_explicit(&rdp->orphan, true, memory_order_release);
	/* A later key destructor of this thread may call_rcu(): it gets a
	 * new rcu_data, not this one, which the reaper may free from now on
	 * (else a use after free; tests/process/test_exit_destructor_gets_fresh_rdp.c). */
	nocb_rdp = NULL;
	nocb_wake(grp);
}

/* rdp_try_get()'s first use on this thread: start the offload threads if
 * needed and link a new rcu_data into a group. */
static rcu_cold struct rcu_data *rdp_create(void)
{
	struct rcu_data *rdp;
	struct nocb_group *grp;

	if (rcu_test_hooks.first_cb)
		rcu_test_hooks.first_cb();
	rcu_init();
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire) && !nocb_start_retry())
		return NULL;
	if (TRCU_UNLIKELY(atomic_load_explicit(&rcu_nocb_test_no_rdp, memory_order_relaxed)) ||
	    posix_memalign((void **)&rdp, 64, sizeof(*rdp))) {
		nocb_warn_shared(0);
		return NULL;
	}
	memset(rdp, 0, sizeof(*rdp));
	rcu_segcblist_init(&rdp->cblist);
	pthread_mutex_lock(&nocb.lock);
	grp = &nocb.groups[nocb.next_group++ % nocb.nr_groups];
	pthread_mutex_unlock(&nocb.lock);
	rdp->grp = grp;
	pthread_mutex_lock(&grp->lock);
	rdp->next = grp->rdps;
	grp->rdps = rdp;
	pthread_mutex_unlock(&grp->lock);
	nocb_rdp = rdp;
	pthread_setspecific(nocb.exit_key, rdp);   /* rdp_exit() at thread exit */
	return rdp;
}

/* The calling thread's rcu_data, created on first use; NULL when the
 * offload state or the rcu_data cannot be allocated.  ->busy while it is
 * created (it takes the offload state's locks): a signal handler's wait
 * for a grace period there is refused rather than left to wait for them
 * (rcu_check_blocking_allowed()). */
struct rcu_data *rdp_try_get(void)
{
	struct rcu_data *rdp = nocb_rdp;

	if (TRCU_LIKELY(rdp != NULL))
		return rdp;
	rcu_busy_enter();
	rdp = rdp_create();
	rcu_busy_exit();
	return rdp;
}

/* The shared rcu_data, initialised at its first use, linked into group 0
 * when the offload threads run. */
struct rcu_data *rdp_shared_get(void)
{
	struct rcu_data *rdp = &nocb.shared;

	/* Acquire: pairs with nocb_link_shared_locked()'s release. */
	if (atomic_load_explicit(&nocb.shared_linked, memory_order_acquire))
		return rdp;
	pthread_mutex_lock(&nocb.lock);
	if (!nocb.shared_init) {
		rcu_segcblist_init(&rdp->cblist);
		nocb.shared_init = true;
	}
	if (atomic_load_explicit(&nocb.started, memory_order_relaxed) &&
	    !atomic_load_explicit(&nocb.shared_linked, memory_order_relaxed))
		nocb_link_shared_locked();
	pthread_mutex_unlock(&nocb.lock);
	return rdp;
}

/* This thread's callback state exists or could be set up now: a
 * call_rcu_core() from it will not need to allocate (src/sync.c). */
bool rcu_cb_ready(void)
{
	return rdp_try_get() != NULL;
}

