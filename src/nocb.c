/* SPDX-License-Identifier: MIT */
/*
 * Callbacks: call_rcu(), callback-offload threads, rcu_barrier(), flood
 * control.  The model is the kernel's NOCB design (tree_nocb.h): callbacks
 * never run on the caller's thread.
 *
 * Each thread that queues callbacks gets an rcu_data.  call_rcu() pushes onto
 * the rcu_data's lock-free bypass stack (one compare-and-swap) and, at most
 * once per batch, wakes its offload thread.  Each offload thread owns a group
 * of rcu_data: it flushes their bypass stacks into their segmented callback
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
#include "kvfree.h"
#include "test_hooks.h"
#include "segcblist.h"

/* Offload-thread sleep states (nocb_group.state). */
enum { NOCB_AWAKE, NOCB_IDLE, NOCB_LAZY };

struct nocb_group;

struct rcu_data {
	/* Newly queued callbacks, newest first.  Pushed by the owner with a
	 * CAS, taken whole by the offload thread with an exchange. */
	_Atomic(struct trcu_head *) bypass __attribute__((aligned(64)));
	_Atomic long n_queued;      /* written by the owner only */
	_Atomic bool lazy_queued;   /* owner queued lazy callbacks */
	_Atomic uint32_t pushback_futex;
	_Atomic int pushback_waiting;
	/* gp_seq at which the owner's push-back last gave up (no grace
	 * period ended for the push-back limit): none again until it moves.
	 * Owner only. */
	unsigned long pushback_gave_up_gp;

	/* Offload thread only. */
	_Atomic long n_invoked __attribute__((aligned(64)));
	struct rcu_segcblist cblist;
	struct trcu_head barrier_head;
	bool barrier_entrained;
	_Atomic bool orphan;        /* owner exited: free once empty */
	struct nocb_group *grp;
	struct rcu_data *next;      /* in grp->rdps, under grp->lock */
};

struct nocb_group {
	pthread_mutex_t lock;       /* ->rdps membership */
	struct rcu_data *rdps;
	_Atomic uint32_t futex;
	_Atomic int state;          /* NOCB_* */
	_Atomic unsigned long barrier_req;  /* latest rcu_barrier() number */
	unsigned long barrier_done;         /* offload thread only */
	pthread_t thread;
	long blimit;                /* adaptive batch limit */
	struct rcu_sync_key defer;  /* nocb_defer_to_woken(): last situation deferred to */
	bool kvfree;                /* group 0 also runs the rcu_free() blocks */
	bool kvfree_barrier;        /* an rcu_barrier() waits for blocks ... */
	unsigned long kvfree_barrier_cookie;   /* ... sealed up to this cookie */
};

#define NOCB_MAX_GROUPS 256

static struct {
	pthread_mutex_t lock;       /* start/stop, group assignment */
	struct nocb_group *groups;
	int nr_groups;
	int next_group;
	_Atomic bool started;
	_Atomic bool stopping;
	_Atomic bool stopped;       /* offload threads joined (nocb_run_stranded()) */
	_Atomic bool swept;         /* ... and their leftovers run (rcu_barrier()) */
	/* The exit drain gave up (rcu_nocb_exit_drain()): it keeps
	 * barrier_mutex, and rcu_barrier() returns at once from then on. */
	_Atomic bool barrier_abandoned;
	pthread_key_t exit_key;
	bool key_created;           /* exit_key exists (created once, under lock) */

	pthread_mutex_t barrier_mutex;
	_Atomic unsigned long barrier_seq;
	_Atomic long barrier_cpu_count;
	_Atomic uint32_t barrier_futex;

	_Atomic long n_pushback;
	_Atomic long n_pushback_gave_up;  /* push-backs cut short by a stall */
	_Atomic long n_defer;       /* nocb_defer_to_woken() sleeps */
	/* Totals of rcu_data already freed, so statistics stay monotonic. */
	_Atomic long n_queued_dead, n_invoked_dead;
} nocb = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.barrier_mutex = PTHREAD_MUTEX_INITIALIZER,
};

static __thread struct rcu_data *nocb_rdp;
static __thread bool nocb_self;   /* this thread is an offload thread */
/* Set in a fork() child whose only thread is an offload thread (a callback
 * called fork()): that child may only exec or _exit (nocb_fork_check()). */
static __thread bool nocb_forked_here;

/* After each callback: a child of a fork() from a callback that returns
 * into the offload loop would run the parent's callbacks a second time,
 * over state the fork reset freed. */
static void nocb_fork_check(void)
{
	if (TRCU_UNLIKELY(nocb_forked_here))
		sys_die("fork() from an RCU callback: the child returned from the callback "
			 "into the library; such a child may only exec or _exit");
}

/* ---- Debug objects: an rcu_head queued twice ------------------------------ */

#ifdef TREERCU_DEBUG_OBJECTS
/*
 * The kernel's debug-objects idea for rcu_head (debug_rcu_head_queue()):
 * every head between call_rcu() and its invocation is in a hash set, and
 * call_rcu() on a head already there aborts, naming the head and both
 * callbacks.  A head queued twice is relinked by the second push: the
 * first copy is lost and the list behind it cut off or turned into a cycle,
 * losing other threads' callbacks.  Build option TREERCU_DEBUG_OBJECTS; it
 * serialises call_rcu() and invocation on one lock (docs/decisions.md).
 */
#define DEBUG_OBJ_BUCKETS 4096

struct debug_obj {
	struct trcu_head *head;
	void (*func)(struct trcu_head *);
	struct debug_obj *next;
};

static pthread_mutex_t debug_obj_lock = PTHREAD_MUTEX_INITIALIZER;
static struct debug_obj *debug_obj_table[DEBUG_OBJ_BUCKETS];

static struct debug_obj **debug_obj_bucket(struct trcu_head *head)
{
	uintptr_t h = (uintptr_t)head;

	return &debug_obj_table[((h >> 4) ^ (h >> 16)) % DEBUG_OBJ_BUCKETS];
}

static const char *debug_obj_fn_name(void (*func)(struct trcu_head *))
{
	Dl_info info;

	/* Only an exact match: dladdr() otherwise names the nearest exported
	 * symbol, which may be another function. */
	if (dladdr((void *)(uintptr_t)func, &info) && info.dli_sname &&
	    info.dli_saddr == (void *)(uintptr_t)func)
		return info.dli_sname;
	return "?";
}

static void debug_rcu_head_queue(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	struct debug_obj **b = debug_obj_bucket(head), *o;

	pthread_mutex_lock(&debug_obj_lock);
	for (o = *b; o; o = o->next) {
		if (o->head == head)
			sys_die("call_rcu(): rcu_head %p queued again before its callback ran "
				 "(callback %p %s; queued first with %p %s): a head may be queued "
				 "once until its callback starts", (void *)head,
				 (void *)(uintptr_t)func, debug_obj_fn_name(func),
				 (void *)(uintptr_t)o->func, debug_obj_fn_name(o->func));
	}
	o = malloc(sizeof(*o));
	if (!o)
		sys_die("call_rcu(): out of memory for the debug-objects table");
	o->head = head;
	o->func = func;
	o->next = *b;
	*b = o;
	pthread_mutex_unlock(&debug_obj_lock);
}

/* The callback is about to run (or is dropped): the head may be queued again. */
static void debug_rcu_head_unqueue(struct trcu_head *head)
{
	struct debug_obj **pp = debug_obj_bucket(head), *o;

	pthread_mutex_lock(&debug_obj_lock);
	for (; (o = *pp); pp = &o->next) {
		if (o->head == head) {
			*pp = o->next;
			free(o);
			break;
		}
	}
	pthread_mutex_unlock(&debug_obj_lock);
}
#else
static inline void debug_rcu_head_queue(struct trcu_head *head,
					void (*func)(struct trcu_head *))
{
	(void)head;
	(void)func;
}

static inline void debug_rcu_head_unqueue(struct trcu_head *head)
{
	(void)head;
}
#endif

/* ---- Offload threads ------------------------------------------------------ */

static void nocb_wake(struct nocb_group *grp)
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
 * the wakeme callbacks of 64 callers, napping delays the callers it would
 * serve (seeds 003: wakeme p50 0.2 -> 1.2 ms).
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

/* Take the bypass stack and append it, oldest first, to NEXT.  Reversing
 * 100k entries takes a quarter of a millisecond: deferral points inside. */
static long nocb_flush_bypass(struct nocb_group *grp, struct rcu_data *rdp)
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
	rcu_segcblist_enqueue_list(&rdp->cblist, &l);
	return n;
}

/* Drop one count of the current rcu_barrier(); the last wakes it. */
static void nocb_barrier_dec(void)
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

static long rdp_pending(struct rcu_data *rdp)
{
	return atomic_load_explicit(&rdp->n_queued, memory_order_relaxed) -
	       atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed);
}

/* Add to the count of callbacks run.  Release: pairs with the owner's
 * relaxed read in call_rcu() flood checks and with trcu_get_stats(); only
 * this (offload) thread writes it. */
static void nocb_publish_invoked(struct rcu_data *rdp, long add)
{
	atomic_store_explicit(&rdp->n_invoked,
			      atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed) + add,
			      memory_order_release);
}

/*
 * rcu_do_batch: invoke ready callbacks, at most grp->blimit (or the time
 * budget), as the kernel does; what is left goes back to the front of DONE.
 */
static bool nocb_do_batch(struct nocb_group *grp, struct rcu_data *rdp, long deadline_ns)
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
		debug_rcu_head_unqueue(rhp);
		f(rhp);
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
	bool partial;        /* rcu_free() blocks still filling (drain timer) */
	bool ready;          /* callbacks left to invoke */
	bool waiting;        /* callbacks waiting for a GP */
	bool lazy_only;      /* every waiting callback is lazy */
	unsigned long need;  /* earliest GP needed */
	long pending;
};

/* Free adopted rcu_data that have run everything (offload thread only: it
 * is the only one that frees, so its list walk needs no lock otherwise). */
static void nocb_reap_orphans(struct nocb_group *grp)
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

/*
 * rcu_free() blocks (group 0): seal partial blocks when due (all of them for
 * an rcu_barrier(), which then also waits until every block sealed so far
 * is freed), free blocks whose grace period ended.
 */
static void nocb_kvfree_pass(struct nocb_group *grp, struct nocb_pass *p, unsigned long cur,
			     bool barrier)
{
	unsigned long need;
	bool waiting = kvfree_pass(cur, barrier, &need, &p->partial);

	if (waiting) {
		nocb_pass_need(p, need);
		p->lazy_only = false;
	}
	if (barrier && waiting && !grp->kvfree_barrier) {
		grp->kvfree_barrier = true;
		grp->kvfree_barrier_cookie = rcu_gp_snap();
		atomic_fetch_add_explicit(&nocb.barrier_cpu_count, 1, memory_order_relaxed);
	}
	if (grp->kvfree_barrier &&
	    (!waiting || ULONG_CMP_LT(grp->kvfree_barrier_cookie, need))) {
		grp->kvfree_barrier = false;
		nocb_barrier_dec();
	}
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

	memset(p, 0, sizeof(*p));
	p->lazy_only = true;
	cur = rcu_gp_seq_current();
	for (struct rcu_data *rdp = nocb_first(grp); rdp; rdp = rdp->next) {
		nocb_flush_bypass(grp, rdp);
		if (barrier != grp->barrier_done)
			nocb_entrain(rdp);
	}
	/*
	 * The snapshot comes after the flush: a callback must wait for a GP
	 * that starts after it was queued.  (Taken before the flush, a
	 * callback queued during the pass could be given a GP that had
	 * already started: TSan caught the wakeme path's free racing with a
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
		}
		p->pending += rdp_pending(rdp);
		orphans |= atomic_load_explicit(&rdp->orphan, memory_order_relaxed);
	}
	if (grp->kvfree)
		nocb_kvfree_pass(grp, p, cur, barrier != grp->barrier_done);
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
 * Sleep until call_rcu(), rcu_free() or rcu_barrier() wakes us, or the
 * timeout.  v is the futex word as read before the pass that decided to
 * sleep: any wake-up since then (a new rcu_free() block, say, which the pass
 * did not see) makes the wait return at once.
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
			/* Keep grace periods flowing while a long batch runs. */
			if (p.waiting)
				rcu_gp_request_async(p.need);
			continue;
		}
		if (p.waiting) {
			if (p.lazy_only && TUN(lazy)) {
				nocb_sleep(grp, NOCB_LAZY, TUN(lazy_flush_ms) * 1000000L, v);
				clear_lazy(grp);
			}
			/* Nothing to invoke: drive or wait for the GP ourselves. */
			TRACE_RECORD("nocb_waitgp", p.need);
			rcu_gp_wait_seq(p.need);
			TRACE_RECORD("nocb_waitgp_end", 0);
			continue;
		}
		if (atomic_load_explicit(&nocb.stopping, memory_order_acquire) && !p.partial)
			break;
		/* rcu_free() blocks still filling: wake to drain them. */
		nocb_sleep(grp, NOCB_IDLE, p.partial ? TUN(rcu_free_drain_ms) * 1000000L : -1, v);
	}
	return NULL;
}

static void rdp_exit(void *arg);

/* Start the offload threads on first use: one per two CPUs by default. */
static bool nocb_start(void)
{
	long n = TUN(nocb_threads), ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	pthread_mutex_lock(&nocb.lock);
	if (atomic_load_explicit(&nocb.started, memory_order_relaxed)) {
		pthread_mutex_unlock(&nocb.lock);
		return true;
	}
	if (n <= 0)
		n = ncpu > 1 ? ncpu / 2 : 1;
	if (n > NOCB_MAX_GROUPS)
		n = NOCB_MAX_GROUPS;
	nocb.groups = calloc((size_t)n, sizeof(*nocb.groups));
	if (!nocb.groups) {
		/* Nothing started: a later call tries again. */
		pthread_mutex_unlock(&nocb.lock);
		return false;
	}
	/* Once: a child of fork() starts its offload threads again. */
	if (!nocb.key_created && pthread_key_create(&nocb.exit_key, rdp_exit))
		sys_die("call_rcu(): pthread_key_create failed");
	nocb.key_created = true;
	nocb.groups[0].kvfree = true;
	for (long i = 0; i < n; i++) {
		pthread_mutex_init(&nocb.groups[i].lock, NULL);
		if (rcu_kthread_create(&nocb.groups[i].thread, rcu_nocb_kthread, &nocb.groups[i]))
			sys_die("call_rcu(): cannot start a callback-offload thread: %s",
				 strerror(errno));
	}
	nocb.nr_groups = (int)n;
	/* Release: pairs with the acquire in rdp_try_get(). */
	atomic_store_explicit(&nocb.started, true, memory_order_release);
	pthread_mutex_unlock(&nocb.lock);
	return true;
}

void rcu_nocb_kick(void)
{
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire) && !nocb_start())
		sys_die("rcu_free(): cannot allocate callback-offload state");
	nocb_wake(&nocb.groups[0]);
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
 * start again at the child's first call_rcu() or rcu_free().  The
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

/* The calling thread's rcu_data, created on first use; NULL when the
 * offload state or the rcu_data cannot be allocated. */
static struct rcu_data *rdp_try_get(void)
{
	struct rcu_data *rdp = nocb_rdp;
	struct nocb_group *grp;

	if (TRCU_LIKELY(rdp != NULL))
		return rdp;
	if (rcu_test_hooks.first_cb)
		rcu_test_hooks.first_cb();
	rcu_init();
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire) && !nocb_start())
		return NULL;
	if (posix_memalign((void **)&rdp, 64, sizeof(*rdp)))
		return NULL;
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

static struct rcu_data *rdp_get(void)
{
	struct rcu_data *rdp = rdp_try_get();

	if (TRCU_UNLIKELY(!rdp))
		sys_die("call_rcu(): out of memory for per-thread callback state");
	return rdp;
}

/* ---- call_rcu --------------------------------------------------------------------- */

/*
 * Flood push-back: a thread with more than cb_max_pending callbacks not yet
 * run waits (outside read-side sections only: inside one, waiting for a
 * grace period would wait for itself) until it is back under qhimark, but
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

	if (rcu_section_depth() || gp == rdp->pushback_gave_up_gp)
		return;
	atomic_fetch_add_explicit(&nocb.n_pushback, 1, memory_order_relaxed);
	was = rcu_thread_registered(r) ? rcu_enter_gp_wait(r) : 0;
	nocb_wake(rdp->grp);
	rcu_cb_waiter_enter();
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
			/* Owner only: read by the owner's next call_rcu(). */
			rdp->pushback_gave_up_gp = gp;
			atomic_fetch_add_explicit(&nocb.n_pushback_gave_up, 1, memory_order_relaxed);
			break;
		}
		/* seq_cst: pairs with nocb_do_batch()'s waiting check. */
		atomic_store_explicit(&rdp->pushback_waiting, 1, memory_order_seq_cst);
		if (rdp_pending(rdp) <= TUN(qhimark))
			break;
		sys_futex_wait(&rdp->pushback_futex, v, limit - (now - since));
	}
	rcu_cb_waiter_exit();
	atomic_store_explicit(&rdp->pushback_waiting, 0, memory_order_relaxed);
	if (rcu_thread_registered(r))
		rcu_exit_gp_wait(r, was);
}

/*
 * Run, after a grace period, the callbacks left on rdp's bypass list once
 * the offload threads are gone: a call_rcu() that saw ->stopping still
 * false may push after its group's thread made its last pass and exited
 * (tests/process/test_shutdown_runs_late_callback.c; with normal_wake_from_gp=0 the callback
 * was a synchronize_rcu() caller's wake-up, and the caller hung).  The
 * exchange takes each callback exactly once, from the shutdown's sweep or
 * from its owner's own check.
 */
static void nocb_run_stranded(struct rcu_data *rdp)
{
	/* Acquire: pairs with the pushes' release CAS (->func, ->next). */
	struct trcu_head *list = atomic_exchange_explicit(&rdp->bypass, NULL, memory_order_acq_rel);
	struct trcu_head *fifo = NULL, *next;
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
	rcu_gp_wait_seq(rcu_gp_snap());
	/* As on an offload thread: an rcu_barrier() from one of these
	 * callbacks would wait for the sweep that runs it (it dies instead,
	 * naming the misuse). */
	was_self = nocb_self;
	nocb_self = true;
	/* The callbacks run on the caller's thread here: as on an offload
	 * thread, no cancellation point in one may end it with the rest of
	 * the list taken and not run (internal.h). */
	cs = sys_cancel_disable();
	for (; fifo; fifo = next, n++) {
		next = fifo->next;
		debug_rcu_head_unqueue(fifo);
		fifo->func(fifo);
		nocb_fork_check();
	}
	sys_cancel_restore(cs);
	nocb_self = was_self;
	/* An RMW: the shutdown's sweep and the owner may both run one now
	 * that no offload thread does.  Relaxed: only the statistics read it
	 * here; an rcu_barrier() after the sweep is ordered by ->swept's
	 * release/acquire, and the owner's flood check cannot fire (every
	 * later call_rcu() takes the after-shutdown path). */
	atomic_fetch_add_explicit(&rdp->n_invoked, n, memory_order_relaxed);
}

/*
 * After the join: every group's lists, live threads' and orphans'.  Not
 * under grp->lock while callbacks run (one may call_rcu() on a new thread,
 * whose rdp_get() takes it).  The rdps stay put meanwhile: only
 * nocb_reap_orphans() frees one, and with the offload threads gone only
 * this sweep calls it; new ones are added at the head.
 */
static void nocb_sweep_stranded(void)
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
	if (rcu_section_depth()) {
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
	rcu_gp_wait_seq(rcu_gp_snap());
	debug_rcu_head_unqueue(head);
	func(head);
	/* Callbacks this thread left queued inside a section while the
	 * offload threads stopped (call_rcu_stranded()). */
	if (nocb_rdp)
		nocb_run_stranded(nocb_rdp);
}

/* The push went in after the offload threads stopped: run it here, as
 * call_rcu_after_shutdown() does (not inside a read-side section). */
static void call_rcu_stranded(struct rcu_data *rdp)
{
	if (rcu_section_depth()) {
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

static void call_rcu_core(struct trcu_head *head, void (*func)(struct trcu_head *), bool lazy)
{
	struct rcu_data *rdp;
	struct trcu_head *old;
	long n, pending;
	int st;

	if (TRCU_UNLIKELY(!head))
		sys_die("call_rcu(): NULL rcu_head");
	if (TRCU_UNLIKELY(!func)) {
		sys_warn("call_rcu(%p): NULL callback function: callback not queued", (void *)head);
		return;
	}
	debug_rcu_head_queue(head, func);
	if (TRCU_UNLIKELY(atomic_load_explicit(&nocb.stopping, memory_order_acquire))) {
		call_rcu_after_shutdown(head, func);
		return;
	}
	rdp = rdp_get();
	head->func = func;
	old = atomic_load_explicit(&rdp->bypass, memory_order_relaxed);
	do {
		head->next = old;
		/* Release (seq_cst for the ->state check below): publishes
		 * ->func/->next; pairs with nocb_flush_bypass()'s exchange. */
	} while (!atomic_compare_exchange_weak_explicit(&rdp->bypass, &old, head,
							memory_order_seq_cst,
							memory_order_relaxed));
	n = atomic_load_explicit(&rdp->n_queued, memory_order_relaxed) + 1;
	atomic_store_explicit(&rdp->n_queued, n, memory_order_relaxed);
	/* seq_cst, after the seq_cst CAS: pairs with rcu_nocb_shutdown()'s
	 * store before its sweep.  Set: the offload threads are gone and the
	 * sweep may have missed this push. */
	if (TRCU_UNLIKELY(atomic_load_explicit(&nocb.stopped, memory_order_seq_cst))) {
		call_rcu_stranded(rdp);
		return;
	}
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
	if (st == NOCB_IDLE || (st == NOCB_LAZY && !lazy)) {
		if (atomic_exchange_explicit(&rdp->grp->state, NOCB_AWAKE, memory_order_seq_cst) != NOCB_AWAKE)
			nocb_wake(rdp->grp);
	}
	pending = n - atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed);
	if (TRCU_UNLIKELY(pending > TUN(qhimark))) {
		/* Flood: hurry the grace period (the offload thread is busy
		 * invoking or waiting for it). */
		rcu_gp_request_async(rcu_gp_snap());
		if (pending > TUN(cb_max_pending))
			nocb_pushback(rdp);
	}
}

void trcu_call_rcu(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	call_rcu_core(head, func, TUN(lazy) != 0);
}

void trcu_call_rcu_hurry(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	call_rcu_core(head, func, false);
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
bool rcu_wait_gp_wakeme(void)
{
	struct rcu_thread *r = rcu_thread_self();
	struct rcu_synchronize rs;
	bool registered;
	int was;

	/* A grace period never allocates: without memory for this thread's
	 * callback state the caller waits on the GP-end futex instead. */
	if (!rdp_try_get())
		return false;
	registered = rcu_thread_registered(r);
	was = registered ? rcu_enter_gp_wait(r) : 0;

	atomic_init(&rs.done, 0);
	rcu_cb_waiter_enter();
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
	return st.cbs_invoked + st.frees_done;
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
		pthread_mutex_lock(&nocb.barrier_mutex);
	} else {
		/* Bounded: another thread's rcu_barrier() may hold the mutex
		 * behind the same stuck reader. */
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
	rcu_cb_waiter_enter();
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

static void __trcu_rcu_barrier(void)
{
	struct rcu_thread *r = rcu_thread_self();
	bool registered;
	int was;

	rcu_check_blocking_allowed("rcu_barrier()");
	if (nocb_self)
		sys_die("rcu_barrier() called from an RCU callback: it would wait for itself");
	rcu_init();
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire))
		return;   /* no callback was ever queued */
	/* Quiescent while it waits, as synchronize_rcu() is: an online QSBR
	 * caller would otherwise hold up the grace periods it waits for. */
	registered = rcu_thread_registered(r);
	was = registered ? rcu_enter_gp_wait(r) : 0;
	rcu_barrier_wait(-1);
	if (registered)
		rcu_exit_gp_wait(r, was);
}

void trcu_rcu_barrier(void)
{
	int cs = sys_cancel_disable();

	__trcu_rcu_barrier();
	sys_cancel_restore(cs);
}

/* ---- Statistics and shutdown --------------------------------------------------------- */

void rcu_nocb_stats(struct trcu_stats *st)
{
	long q = atomic_load_explicit(&nocb.n_queued_dead, memory_order_relaxed);
	long inv = atomic_load_explicit(&nocb.n_invoked_dead, memory_order_relaxed);

	if (atomic_load_explicit(&nocb.started, memory_order_acquire)) {
		for (int i = 0; i < nocb.nr_groups; i++) {
			struct nocb_group *grp = &nocb.groups[i];

			pthread_mutex_lock(&grp->lock);
			for (struct rcu_data *rdp = grp->rdps; rdp; rdp = rdp->next) {
				q += atomic_load_explicit(&rdp->n_queued, memory_order_relaxed);
				inv += atomic_load_explicit(&rdp->n_invoked, memory_order_relaxed);
			}
			pthread_mutex_unlock(&grp->lock);
		}
		st->nocb_threads = nocb.nr_groups;
	}
	st->cbs_queued = q;
	st->cbs_invoked = inv;
	st->cbs_pending = q - inv;
	st->cbs_pushback = atomic_load_explicit(&nocb.n_pushback, memory_order_relaxed);
	st->nocb_defers = atomic_load_explicit(&nocb.n_defer, memory_order_relaxed);
	kvfree_stats(&st->frees_queued, &st->frees_done, &st->frees_fallback);
}

/* Run every callback, then stop and join the offload threads. */
void rcu_nocb_shutdown(void)
{
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire))
		return;
	/* Callbacks may queue callbacks: repeat while the barrier finds work. */
	for (int i = 0; i < 100; i++) {
		struct trcu_stats st = { 0 };

		trcu_rcu_barrier();
		rcu_nocb_stats(&st);
		if (!st.cbs_pending && st.frees_done == st.frees_queued - st.frees_fallback)
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
 * Run what is queued, as rcu_nocb_shutdown() does (callbacks may queue
 * more), but give up once neither a grace period ended nor a callback ran
 * for stuck_ns: a reader stuck in a section would otherwise hang exit.
 * The offload threads keep running either way (the process is ending).
 * The caller is quiescent.  Returns whether everything ran.
 */
bool rcu_nocb_exit_drain(long stuck_ns)
{
	if (!atomic_load_explicit(&nocb.started, memory_order_acquire))
		return true;
	nocb_progress_reset();
	for (int i = 0; i < 100; i++) {
		struct trcu_stats st = { 0 };

		if (!rcu_barrier_wait(stuck_ns))
			return false;
		rcu_nocb_stats(&st);
		if (!st.cbs_pending && st.frees_done == st.frees_queued - st.frees_fallback)
			return true;
	}
	return false;
}

/* One line on stderr: how many callbacks and rcu_free() pointers exit
 * leaves behind, and why (nothing when none). */
void rcu_nocb_exit_report(const char *why)
{
	struct trcu_stats st = { 0 };
	long frees;

	rcu_nocb_stats(&st);
	frees = st.frees_queued - st.frees_fallback - st.frees_done;
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
