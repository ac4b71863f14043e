/* SPDX-License-Identifier: MIT */
/*
 * Headless bulk freeing: trcu_rcu_free(ptr), the userspace twin of the
 * kernel's single-argument kvfree_rcu(), as a client of call_rcu().  No
 * rcu_head in the object: each thread collects pointers in a page-sized
 * block; a block that fills, or a partly filled one sealed by a drain (the
 * drain timer after rcu_free_drain_ms, rcu_barrier(), trcu_shutdown(),
 * process exit, its thread's exit), is queued with call_rcu() as one
 * callback that frees every pointer in it.  The callback layer knows
 * nothing of blocks: its flood push-back bounds them as any callback.
 *
 * When no block can be allocated, rcu_free() waits for a grace period and
 * frees the pointer itself, as the kernel's headless kvfree_rcu() does
 * (outside a read-side section; inside one it aborts with a message).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kvfree.h"
#include "nocb.h"
#include "tsan.h"

#define KVFREE_BLOCK_BYTES 4096
#define KVFREE_NR_PTRS \
	((KVFREE_BLOCK_BYTES - sizeof(struct trcu_head) - 2 * sizeof(long)) / sizeof(void *))

/* One page: the callback's head, then the pointers it frees. */
struct kvfree_block {
	struct trcu_head rh;        /* call_rcu(); ->next links a drain's list before */
	long n;
	long born_ns;               /* first pointer: the drain timer's clock */
	void *ptrs[KVFREE_NR_PTRS];
};
_Static_assert(sizeof(struct kvfree_block) == KVFREE_BLOCK_BYTES, "one page per block");

/* Per-thread cache: the block being filled, under ->lock (the owner, and to
 * seal it the drain timer, rcu_barrier() and shutdown). */
struct kvfree_cache {
	pthread_mutex_t lock;
	struct kvfree_block *cur;
	struct kvfree_cache *next;  /* in kvfree.caches */
	bool orphan;                /* owner exited; under ->lock */
};

/* The drain timer's states (kvfree.timer_state). */
enum { KVFREE_TIMER_OFF, KVFREE_TIMER_ARMED, KVFREE_TIMER_IDLE, KVFREE_TIMER_STOPPED };

static struct {
	pthread_mutex_t lock;                 /* ->caches */
	struct kvfree_cache *caches;
	/* A drain's whole length, its seal and its queueing: a drain that
	 * rcu_barrier() or shutdown runs starts after the blocks another
	 * drain sealed are queued (held across call_rcu()'s push-back, so
	 * not taken by fork's prepare: the child re-initialises it). */
	pthread_mutex_t drain_lock;
	pthread_key_t exit_key;               /* created by kvfree_init() */
	/* The drain timer: a thread started by the first block (never before
	 * first use), stopped by trcu_shutdown(). */
	pthread_mutex_t timer_lock;           /* ->timer_state's start and stop */
	pthread_t timer;
	_Atomic int timer_state;
	_Atomic uint32_t timer_futex;
	/* Set by trcu_shutdown(): rcu_free() then frees one pointer at a time
	 * after a grace period (read under a cache's lock). */
	_Atomic bool stopped;
	_Atomic long n_freed, n_queued, n_fallback;
} kvfree = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.drain_lock = PTHREAD_MUTEX_INITIALIZER,
	.timer_lock = PTHREAD_MUTEX_INITIALIZER,
};

static __thread struct kvfree_cache *kvfree_self;
/* Inside this thread's rcu_free(): a call from a signal handler that
 * interrupted it would deadlock on the cache's lock. */
static __thread volatile int kvfree_busy;

/* ---- The grace-period side: one callback per block ------------------------------ */

/* Free a block's pointers and the block, a grace period after the last
 * one went in.  ThreadSanitizer: each after its rcu_free() caller's
 * writes (src/tsan.h; the grace period's edge is the callback's, or the
 * synchronize_rcu() of the fall-back). */
static void kvfree_free_ptrs(struct kvfree_block *b)
{
	for (long i = 0; i < b->n; i++) {
		rcu_tsan_acquire(b->ptrs[i]);
		free(b->ptrs[i]);
	}
	free(b);
}

static void kvfree_rcu_work(struct trcu_head *rh)
{
	struct kvfree_block *b = (struct kvfree_block *)((char *)rh -
							 offsetof(struct kvfree_block, rh));
	long n = b->n;

	kvfree_free_ptrs(b);
	atomic_fetch_add_explicit(&kvfree.n_freed, n, memory_order_relaxed);
}

/* A grace period here, outside a read-side section (inside one it would
 * wait for itself: abort, naming why it had to wait). */
static void kvfree_wait_gp(void *ptr, const char *why)
{
	if (rcu_section_depth())
		sys_die("rcu_free(%p): %s inside an RCU read-side critical section "
			 "(it would have to wait for a grace period)", ptr, why);
	if (rcu_caller_reading())
		sys_die("rcu_free(%p): %s on an online QSBR thread (it would have to wait "
			 "for a grace period, counting the thread quiescent while it may hold "
			 "references)", ptr, why);
	trcu_synchronize_rcu();
}

/*
 * Hand a sealed block to a grace period.  The pointers went in under the
 * owner's cache lock, which the sealer took after: call_rcu()'s own
 * ordering (the GP it waits for starts after the push) then covers them.
 * No per-thread callback state can be had (out of memory, no offload
 * thread), outside a section: wait for the grace period here and free the
 * block, the kernel's fall-back.
 */
static void kvfree_queue_block(struct kvfree_block *b)
{
	/* A caller that may not wait queues it anyway: call_rcu() parks it
	 * on the shared queue when no offload thread runs. */
	if (rcu_cb_ready() || rcu_caller_reading()) {
		call_rcu_core(&b->rh, kvfree_rcu_work, false);
		return;
	}
	kvfree_wait_gp(b->ptrs[0], "out of memory for callback state");
	atomic_fetch_add_explicit(&kvfree.n_fallback, b->n, memory_order_relaxed);
	atomic_fetch_sub_explicit(&kvfree.n_queued, b->n, memory_order_relaxed);
	kvfree_free_ptrs(b);
}

/* No memory for a block, or after trcu_shutdown(): the per-object path.
 * With the object's own rcu_head (kfree_rcu(ptr, rhf)) that is a callback,
 * which never waits nor allocates (call_rcu() falls back to its shared
 * queue); without one, a grace period waited for here. */
static void kvfree_one(void *ptr, struct trcu_head *head, const char *why)
{
	uintptr_t off = (uintptr_t)head - (uintptr_t)ptr;

	if (head && (uintptr_t)head >= (uintptr_t)ptr && off <= RCU_KFREE_OFFSET_MAX) {
		atomic_fetch_add_explicit(&kvfree.n_fallback, 1, memory_order_relaxed);
		call_rcu_kfree(head, off);
		return;
	}
	kvfree_wait_gp(ptr, why);
	atomic_fetch_add_explicit(&kvfree.n_fallback, 1, memory_order_relaxed);
	free(ptr);   /* the caller's own thread: no hand-off */
}

/* ---- Drains -------------------------------------------------------------------- */

/*
 * Seal the partly filled blocks that are due: all of them (all), else
 * those of exited threads and those older than rcu_free_drain_ms; queue
 * each with call_rcu(), outside every lock (a flood push-back may wait
 * there).  Frees exited threads' caches.  Returns how long until the next
 * block is due, -1 when no block is left filling.
 */
static long kvfree_drain(bool all)
{
	long now = sys_now_ns(), drain = TUN(rcu_free_drain_ms) * 1000000L, next = -1;
	struct trcu_head *sealed = NULL;

	/* Sealed blocks leave the caches, where rcu_barrier()'s own drain
	 * would find them, before they reach call_rcu(): the lock pairs this
	 * drain's queueing with the next drain's start (rcu_barrier(), then
	 * the callback layer's barrier, which covers them). */
	pthread_mutex_lock(&kvfree.drain_lock);
	pthread_mutex_lock(&kvfree.lock);
	for (struct kvfree_cache **pp = &kvfree.caches; *pp;) {
		struct kvfree_cache *kc = *pp;
		struct kvfree_block *b;
		bool gone;

		pthread_mutex_lock(&kc->lock);
		b = kc->cur;
		if (b && (all || kc->orphan || now - b->born_ns >= drain)) {
			kc->cur = NULL;
			b->rh.next = sealed;
			sealed = &b->rh;
		} else if (b) {
			long left = b->born_ns + drain - now;

			if (next < 0 || left < next)
				next = left;
		}
		gone = kc->orphan;
		pthread_mutex_unlock(&kc->lock);
		if (gone) {
			*pp = kc->next;
			pthread_mutex_destroy(&kc->lock);
			free(kc);
			continue;
		}
		pp = &kc->next;
	}
	pthread_mutex_unlock(&kvfree.lock);
	while (sealed) {
		struct trcu_head *rh = sealed;

		sealed = rh->next;
		kvfree_queue_block((struct kvfree_block *)((char *)rh -
							   offsetof(struct kvfree_block, rh)));
	}
	pthread_mutex_unlock(&kvfree.drain_lock);
	return next;
}

/* Every partly filled block goes to a grace period now. */
void kvfree_drain_all(void)
{
	kvfree_drain(true);
}

/* Blocks still filling or waiting for their grace period. */
bool kvfree_idle(void)
{
	return atomic_load_explicit(&kvfree.n_freed, memory_order_relaxed) ==
	       atomic_load_explicit(&kvfree.n_queued, memory_order_relaxed);
}

/* ---- The drain timer (the kernel's kfree_rcu_monitor()) ---------------------------- */

static void *kvfree_drain_kthread(void *arg)
{
	(void)arg;
	rcu_kthread_enter();
	pthread_setname_np(pthread_self(), "trcu_kvfree");
	sys_cancel_disable();
	for (;;) {
		/* seq_cst: pairs with kvfree_timer_kick()'s increment and its
		 * state load (a block born after the drain's look wakes us). */
		uint32_t v = atomic_load_explicit(&kvfree.timer_futex, memory_order_seq_cst);
		long next = kvfree_drain(false);
		int st = KVFREE_TIMER_ARMED;

		if (atomic_load_explicit(&kvfree.timer_state, memory_order_acquire) ==
		    KVFREE_TIMER_STOPPED)
			break;
		/* seq_cst: IDLE is stored before the futex's own load of v;
		 * pairs with kvfree_timer_kick().  A CAS, not a store: the
		 * only other value is STOPPED, which must stay. */
		if (next < 0 &&
		    !atomic_compare_exchange_strong_explicit(&kvfree.timer_state, &st,
							     KVFREE_TIMER_IDLE, memory_order_seq_cst,
							     memory_order_relaxed))
			break;
		sys_futex_wait(&kvfree.timer_futex, v, next);
		st = KVFREE_TIMER_IDLE;
		/* Relaxed: a stop that came meanwhile stays (the CAS fails). */
		atomic_compare_exchange_strong_explicit(&kvfree.timer_state, &st, KVFREE_TIMER_ARMED,
							memory_order_relaxed, memory_order_relaxed);
	}
	return NULL;
}

/* Start the timer on the first block; false once shutdown stopped it. */
static bool kvfree_timer_start(void)
{
	bool ok = true;

	pthread_mutex_lock(&kvfree.timer_lock);
	if (atomic_load_explicit(&kvfree.timer_state, memory_order_relaxed) == KVFREE_TIMER_OFF) {
		int err;

		atomic_store_explicit(&kvfree.timer_state, KVFREE_TIMER_ARMED, memory_order_relaxed);
		err = rcu_kthread_create(&kvfree.timer, kvfree_drain_kthread, NULL);
		if (err) {
			/* Blocks are then sealed when full and by the other
			 * drains only; a later block tries again. */
			atomic_store_explicit(&kvfree.timer_state, KVFREE_TIMER_OFF,
					      memory_order_relaxed);
			ok = false;
		}
	}
	pthread_mutex_unlock(&kvfree.timer_lock);
	return ok;
}

/*
 * A new block (the timer sleeps for the oldest, so only an idle timer needs
 * waking: a new block is due after every other), or an exited thread's
 * (always: it is due now).
 */
static void kvfree_timer_kick(bool now)
{
	int st = atomic_load_explicit(&kvfree.timer_state, memory_order_acquire);

	if (st == KVFREE_TIMER_OFF && !kvfree_timer_start())
		return;
	/* seq_cst, then the state: pairs with the timer's futex-word load
	 * and its IDLE store.  Either it sees IDLE and wakes the timer, or
	 * the timer's wait finds the word changed and returns. */
	atomic_fetch_add_explicit(&kvfree.timer_futex, 1, memory_order_seq_cst);
	if (now || atomic_load_explicit(&kvfree.timer_state, memory_order_seq_cst) ==
			   KVFREE_TIMER_IDLE)
		sys_futex_wake(&kvfree.timer_futex, 1);
}

static void kvfree_timer_stop(void)
{
	int st;

	pthread_mutex_lock(&kvfree.timer_lock);
	st = atomic_exchange_explicit(&kvfree.timer_state, KVFREE_TIMER_STOPPED,
				      memory_order_acq_rel);
	pthread_mutex_unlock(&kvfree.timer_lock);
	if (st == KVFREE_TIMER_OFF || st == KVFREE_TIMER_STOPPED)
		return;
	atomic_fetch_add_explicit(&kvfree.timer_futex, 1, memory_order_seq_cst);
	sys_futex_wake(&kvfree.timer_futex, 1);
	pthread_join(kvfree.timer, NULL);
}

/* ---- rcu_free() ------------------------------------------------------------------ */

/* Thread exit: the timer seals what is left and frees the cache (woken
 * even with no block left, so that caches of exited threads do not pile
 * up).  A later key destructor of this thread that calls rcu_free() gets a
 * new cache. */
static void kvfree_cache_exit(void *arg)
{
	struct kvfree_cache *kc = arg;

	pthread_mutex_lock(&kc->lock);
	kc->orphan = true;
	pthread_mutex_unlock(&kc->lock);
	kvfree_self = NULL;
	kvfree_timer_kick(true);
}

static struct kvfree_cache *kvfree_cache_get(void)
{
	struct kvfree_cache *kc = kvfree_self;

	if (TRCU_LIKELY(kc != NULL))
		return kc;
	kc = calloc(1, sizeof(*kc));
	if (!kc)
		return NULL;
	pthread_mutex_init(&kc->lock, NULL);
	pthread_mutex_lock(&kvfree.lock);
	kc->next = kvfree.caches;
	kvfree.caches = kc;
	pthread_mutex_unlock(&kvfree.lock);
	kvfree_self = kc;
	pthread_setspecific(kvfree.exit_key, kc);
	return kc;
}

static void kvfree_add(void *ptr, struct trcu_head *head)
{
	struct kvfree_cache *kc = kvfree_cache_get();
	struct kvfree_block *b, *full = NULL;
	bool fresh = false;

	if (!kc) {
		kvfree_one(ptr, head, "out of memory");
		return;
	}
	pthread_mutex_lock(&kc->lock);
	/* Relaxed, under the lock: kvfree_shutdown() sets it before it takes
	 * each cache's lock to seal the last blocks, so a pointer added here
	 * is sealed by it, or this call sees the flag. */
	if (atomic_load_explicit(&kvfree.stopped, memory_order_relaxed)) {
		pthread_mutex_unlock(&kc->lock);
		kvfree_one(ptr, head, "after trcu_shutdown()");
		return;
	}
	b = kc->cur;
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b) {
			pthread_mutex_unlock(&kc->lock);
			kvfree_one(ptr, head, "out of memory");
			return;
		}
		b->n = 0;
		b->born_ns = sys_now_ns();
		kc->cur = b;
		fresh = true;
	}
	b->ptrs[b->n++] = ptr;
	if (b->n == (long)KVFREE_NR_PTRS) {
		full = b;
		kc->cur = NULL;
	}
	/* Under the lock: counted before a drain can seal and free it. */
	atomic_fetch_add_explicit(&kvfree.n_queued, 1, memory_order_relaxed);
	pthread_mutex_unlock(&kc->lock);
	if (full)
		kvfree_queue_block(full);
	else if (fresh)
		kvfree_timer_kick(false);
}

/* rcu_free() and kfree_rcu(): ptr into a block, head (or NULL) for the
 * fall-back. */
static void kvfree_call(void *ptr, struct trcu_head *head)
{
	if (!ptr)
		return;   /* like free(NULL) */
	/* ThreadSanitizer: the caller's writes before the free (src/tsan.h). */
	rcu_tsan_release(ptr);
	if (kvfree_busy)
		sys_die("rcu_free(%p) called from a signal handler that interrupted rcu_free() "
			 "on the same thread: not allowed from a signal handler (it takes the "
			 "thread's block lock and allocates)", ptr);
	kvfree_busy = 1;
	/* Compiler-only: a handler on this thread sees the flag set before
	 * the one-time init and the lock are taken, and clear only after the
	 * lock is released. */
	atomic_signal_fence(memory_order_seq_cst);
	rcu_init();
	kvfree_add(ptr, head);
	atomic_signal_fence(memory_order_seq_cst);
	kvfree_busy = 0;
}

void trcu_rcu_free(void *ptr)
{
	kvfree_call(ptr, NULL);
}

void trcu_kvfree_call_rcu(struct trcu_head *head, void *ptr)
{
	kvfree_call(ptr, head);
}

/* Wait until every callback queued before this call has run and every
 * pointer passed to rcu_free() before it has been freed: the partly
 * filled blocks are sealed first, so the callback layer's barrier covers
 * them. */
void trcu_rcu_barrier(void)
{
	int cs = sys_cancel_disable();

	/* The misuse checks first: sealing would queue callbacks. */
	rcu_check_blocking_allowed("rcu_barrier()");
	if (rcu_nocb_self())
		sys_die("rcu_barrier() called from an RCU callback: it would wait for itself");
	/* A handler's rcu_barrier() inside this one would wait for the
	 * barrier mutex its own thread holds. */
	if (rcu_thread_tls.in_barrier)
		sys_die("rcu_barrier() called from a signal handler that interrupted "
			"rcu_barrier() on the same thread: it would wait for itself forever");
	rcu_wait_mark(&rcu_thread_tls.in_barrier, true);
	kvfree_drain(true);
	rcu_barrier_cbs();
	rcu_wait_mark(&rcu_thread_tls.in_barrier, false);
	/* ThreadSanitizer: after the callbacks that ran (src/tsan.h). */
	rcu_tsan_acquire(&rcu_tsan_callbacks);
	sys_cancel_restore(cs);
}

/*
 * trcu_shutdown(), after the callback layer's own: stop the timer and seal
 * the blocks callbacks filled meanwhile (call_rcu() now runs each after a
 * grace period on this thread); later rcu_free() calls take the per-object
 * path.
 */
void kvfree_shutdown(void)
{
	atomic_store_explicit(&kvfree.stopped, true, memory_order_relaxed);
	kvfree_timer_stop();
	kvfree_drain(true);
}

/* The thread-exit key: once, from the init gate (rcu_init()). */
void kvfree_init(void)
{
	if (pthread_key_create(&kvfree.exit_key, kvfree_cache_exit))
		sys_die("rcu_free(): pthread_key_create failed");
}

/* ---- fork() (src/fork.c) ---------------------------------------------------- */

/* timer_lock, kvfree.lock, then every cache's lock: the order of
 * kvfree_drain() (which holds no lock while it queues). */
void kvfree_fork_prepare(void)
{
	pthread_mutex_lock(&kvfree.timer_lock);
	pthread_mutex_lock(&kvfree.lock);
	for (struct kvfree_cache *kc = kvfree.caches; kc; kc = kc->next)
		pthread_mutex_lock(&kc->lock);
}

void kvfree_fork_parent(void)
{
	for (struct kvfree_cache *kc = kvfree.caches; kc; kc = kc->next)
		pthread_mutex_unlock(&kc->lock);
	pthread_mutex_unlock(&kvfree.lock);
	pthread_mutex_unlock(&kvfree.timer_lock);
}

/* The pointers handed to rcu_free() before the fork are the parent's to
 * free: the child drops its copies of the partly filled blocks and the
 * caches that hold them (the library's memory) and keeps the pointers'
 * memory untouched, as the callback layer drops the sealed blocks with
 * every other inherited callback.  The timer did not survive the fork: it
 * starts again at the child's first block.  The counters start again from
 * zero. */
void kvfree_fork_child(void)
{
	struct kvfree_cache *kc, *kc_next;

	pthread_mutex_init(&kvfree.lock, NULL);
	pthread_mutex_init(&kvfree.drain_lock, NULL);
	pthread_mutex_init(&kvfree.timer_lock, NULL);
	for (kc = kvfree.caches; kc; kc = kc_next) {
		kc_next = kc->next;
		free(kc->cur);
		free(kc);
	}
	kvfree.caches = NULL;
	if (atomic_load_explicit(&kvfree.timer_state, memory_order_relaxed) != KVFREE_TIMER_STOPPED)
		atomic_store_explicit(&kvfree.timer_state, KVFREE_TIMER_OFF, memory_order_relaxed);
	atomic_store_explicit(&kvfree.timer_futex, 0, memory_order_relaxed);
	atomic_store_explicit(&kvfree.n_queued, 0, memory_order_relaxed);
	atomic_store_explicit(&kvfree.n_freed, 0, memory_order_relaxed);
	atomic_store_explicit(&kvfree.n_fallback, 0, memory_order_relaxed);
	/* Only a thread with a cache set the key (after the init created
	 * it): before first use the key is not the library's, and may be the
	 * application's.  Thread-local: no ordering pair. */
	if (kvfree_self) {
		kvfree_self = NULL;
		pthread_setspecific(kvfree.exit_key, NULL);
	}
}

void kvfree_stats(long *queued, long *freed, long *fallback)
{
	*queued = atomic_load_explicit(&kvfree.n_queued, memory_order_relaxed);
	*freed = atomic_load_explicit(&kvfree.n_freed, memory_order_relaxed);
	*fallback = atomic_load_explicit(&kvfree.n_fallback, memory_order_relaxed);
}
