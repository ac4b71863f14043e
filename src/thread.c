/* SPDX-License-Identifier: MIT */
/*
 * Threads: registration (a "CPU coming online", applied at the next GP
 * start), the slot table, automatic unregistration at thread exit, QSBR
 * online/offline, and the read side's out-of-line slow paths and misuse
 * checks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

__thread struct trcu_reader trcu_reader_tls = { .slot = -1, .flags = TRCU_RF_UNREG };

/*
 * The calling thread's reader state, out of line, for slow paths in other
 * files.  GCC 12's UBSan null check on an inlined TLS address can branch
 * on stale flags (seen in nocb_pushback(): a false "member access within
 * null pointer" report); a call returns the address plainly.
 */
__attribute__((noinline)) struct trcu_reader *trcu_reader_self(void)
{
	return &trcu_reader_tls;
}

/* ---- The slot table ------------------------------------------------------ */

struct trcu_reader *trcu_slot_get(int slot)
{
	_Atomic(struct trcu_reader *) *chunk = rcu_state.slot_chunks[slot / SLOT_CHUNK];

	/* Acquire pairs with the release in slot_set(): the reader's
	 * initialised fields are visible before its pointer. */
	return chunk ? atomic_load_explicit(&chunk[slot % SLOT_CHUNK], memory_order_acquire)
		     : NULL;
}

static void slot_set(int slot, struct trcu_reader *r)
{
	atomic_store_explicit(&rcu_state.slot_chunks[slot / SLOT_CHUNK][slot % SLOT_CHUNK], r,
			      memory_order_release);
}

/* Lowest free slot, growing the bitmap and chunk table; under ofl_lock. */
static int slot_alloc(void)
{
	int w, b, slot;

	for (w = 0; w < rcu_state.slot_used_words; w++)
		if (~rcu_state.slot_used[w])
			break;
	if (w == rcu_state.slot_used_words) {
		int nw = w ? 2 * w : 4;
		unsigned long *nb;

		if ((long)nw * 64 > (long)SLOT_CHUNK * SLOT_MAX_CHUNKS)
			return -1;
		nb = realloc(rcu_state.slot_used, (size_t)nw * sizeof(*nb));
		if (!nb)
			return -1;
		memset(nb + w, 0, (size_t)(nw - w) * sizeof(*nb));
		rcu_state.slot_used = nb;
		rcu_state.slot_used_words = nw;
	}
	b = __builtin_ctzl(~rcu_state.slot_used[w]);
	slot = w * 64 + b;
	if (slot >= SLOT_CHUNK * SLOT_MAX_CHUNKS)
		return -1;
	if (!rcu_state.slot_chunks[slot / SLOT_CHUNK]) {
		void *c = calloc(SLOT_CHUNK, sizeof(struct trcu_reader *));

		if (!c)
			return -1;
		rcu_state.slot_chunks[slot / SLOT_CHUNK] = c;
	}
	rcu_state.slot_used[w] |= 1UL << b;
	return slot;
}

static void slot_free(int slot)
{
	rcu_state.slot_used[slot / 64] &= ~(1UL << (slot % 64));
}

/* Mark a slot online in its leaf, or ask for a bigger tree; under ofl_lock. */
static void slot_online_locked(int slot, bool online)
{
	struct rcu_tree *t = atomic_load_explicit(&rcu_state.tree, memory_order_acquire);
	struct rcu_node *leaf;
	unsigned long bit;

	if (slot >= t->capacity) {
		rcu_state.tree_grow_needed = true;
		return;
	}
	leaf = rcu_tree_leaf(t, slot);
	bit = 1UL << (slot - leaf->grplo);
	pthread_mutex_lock(&leaf->lock);
	if (online)
		leaf->qsmaskinitnext |= bit;
	else
		leaf->qsmaskinitnext &= ~bit;
	pthread_mutex_unlock(&leaf->lock);
}

int trcu_slot_register(struct trcu_reader *r)
{
	int slot;

	pthread_mutex_lock(&rcu_state.ofl_lock);
	slot = slot_alloc();
	if (slot < 0) {
		pthread_mutex_unlock(&rcu_state.ofl_lock);
		errno = ENOMEM;
		return -1;
	}
	r->slot = slot;
	slot_set(slot, r);
	if (slot + 1 > rcu_state.slot_hwm)
		rcu_state.slot_hwm = slot + 1;
	slot_online_locked(slot, true);
	atomic_fetch_add_explicit(&rcu_state.nr_slots, 1, memory_order_relaxed);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	return 0;
}

/* ---- Registration --------------------------------------------------------- */

int trcu_register_thread(void)
{
	struct trcu_reader *r = &trcu_reader_tls;

	trcu_init();
	if (atomic_load_explicit(&r->watching, memory_order_relaxed))
		return 0;
	r->tid = trcu_gettid();
	/* Clears TRCU_RF_UNREG: the fast path may run from now on. */
	r->flags = rcu_state.fenced ? TRCU_RF_FENCED : 0;
	r->depth_bias = 0;
	atomic_store_explicit(&r->need_qs, 0, memory_order_relaxed);
	atomic_store_explicit(&r->gp_blocked, 0, memory_order_relaxed);
	/* Even and non-zero: registered, quiescent.  Published to the GP
	 * machinery by slot_set()'s release. */
	atomic_store_explicit(&r->watching, 2, memory_order_relaxed);
	if (trcu_slot_register(r)) {
		atomic_store_explicit(&r->watching, 0, memory_order_relaxed);
		r->flags = TRCU_RF_UNREG;
		return -1;
	}
	/* The destructor unregisters a thread that exits without doing so. */
	pthread_setspecific(rcu_state.exit_key, r);
	return 0;
}

void trcu_unregister_thread(void)
{
	struct trcu_reader *r = &trcu_reader_tls;
	int slot = r->slot;

	if (!atomic_load_explicit(&r->watching, memory_order_relaxed))
		return;
	if (r->nesting > r->depth_bias)
		trcu_die("rcu_unregister_thread() called inside an RCU read-side critical "
			 "section (nesting depth %u)", r->nesting - r->depth_bias);
	if (r->depth_bias)
		trcu_thread_offline();
	pthread_mutex_lock(&rcu_state.ofl_lock);
	slot_online_locked(slot, false);
	/* A GP may be waiting on this slot: the thread is quiescent for good. */
	rcu_report_qs_slot(slot, true);
	slot_set(slot, NULL);
	slot_free(slot);
	atomic_fetch_sub_explicit(&rcu_state.nr_slots, 1, memory_order_relaxed);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	r->slot = -1;
	r->flags = TRCU_RF_UNREG;
	r->nesting = 0;
	atomic_store_explicit(&r->watching, 0, memory_order_relaxed);
	pthread_setspecific(rcu_state.exit_key, NULL);
}

/*
 * The owner's ->watching without the reader-generation tag, for the slow
 * paths' arithmetic: they never store a tagged odd value, only the fast
 * path's rcu_read_lock() may (include/treercu/rcu.h, trcu_reader_gen), or a
 * thread that went online before a GP could pass for one that began after
 * it (rcu_watching_qs()).  Parity is kept.
 */
static unsigned long watching_untagged(struct trcu_reader *r)
{
	return atomic_load_explicit(&r->watching, memory_order_relaxed) & ~TRCU_READER_GEN_TAG;
}

/* pthread key destructor: the thread exited still registered. */
static void thread_exit_destructor(void *arg)
{
	struct trcu_reader *r = arg;

	if (r != &trcu_reader_tls)
		return;
	if (r->nesting > r->depth_bias) {
		trcu_warn("thread %d exited inside an RCU read-side critical section "
			  "(nesting depth %u); treating it as quiescent",
			  r->tid, r->nesting - r->depth_bias);
		r->nesting = r->depth_bias;
		if (!r->depth_bias) {
			/* Close the section: make ->watching even again.  Pairs
			 * with trcu_gp_mb() like an outermost unlock. */
			atomic_thread_fence(memory_order_seq_cst);
			atomic_store_explicit(&r->watching, watching_untagged(r) + 1,
					      memory_order_relaxed);
		}
	}
	trcu_unregister_thread();
}

void trcu_thread_init(void)
{
	if (pthread_key_create(&rcu_state.exit_key, thread_exit_destructor))
		trcu_die("pthread_key_create failed");
}

/* ---- Watching transitions (out of line) ---------------------------------- */

/* Even -> odd: the thread may now hold references. */
static void watching_enter(struct trcu_reader *r)
{
	unsigned long w = watching_untagged(r);

	if (r->flags & TRCU_RF_FENCED) {
		/* seq_cst store + fence: the section's loads stay after it.
		 * Pairs with trcu_gp_mb() (a full fence in fenced mode). */
		atomic_store_explicit(&r->watching, w + 1, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
	} else {
		atomic_store_explicit(&r->watching, w + 1, memory_order_relaxed);
		/* Pairs with trcu_gp_mb() at GP start (membarrier). */
		atomic_signal_fence(memory_order_seq_cst);
	}
}

/* Odd -> even (add 1) or odd -> odd (add 2, a momentary QS). */
static void watching_exit(struct trcu_reader *r, unsigned long add)
{
	unsigned long w = watching_untagged(r);

	if (r->flags & TRCU_RF_FENCED) {
		/* Release: the section's accesses before the store; pairs with
		 * the GP scan's acquire load.  The fence orders the store before
		 * the ->need_qs load (pairs with the driver's fence). */
		atomic_store_explicit(&r->watching, w + add, memory_order_release);
		atomic_thread_fence(memory_order_seq_cst);
	} else {
		/* Pairs with trcu_gp_mb() at GP end. */
		atomic_signal_fence(memory_order_seq_cst);
		atomic_store_explicit(&r->watching, w + add, memory_order_relaxed);
		/* Pairs with the driver's ->need_qs store + membarrier. */
		atomic_signal_fence(memory_order_seq_cst);
	}
	if (atomic_load_explicit(&r->need_qs, memory_order_relaxed))
		trcu_report_qs_slow(r);
}

/* ---- Read-side slow paths --------------------------------------------------- */

/* Outermost lock on an unregistered, fenced or offline-QSBR thread; nesting
 * is already 1. */
void trcu_read_lock_slow(struct trcu_reader *r)
{
	if (!atomic_load_explicit(&r->watching, memory_order_relaxed)) {
		r->nesting = 0;
		if (trcu_register_thread())
			trcu_die("rcu_read_lock(): cannot register thread %d automatically: "
				 "out of memory", trcu_gettid());
		r->nesting = 1;
	}
	watching_enter(r);
}

/* Outermost unlock on a fenced or QSBR thread. */
void trcu_read_unlock_slow(struct trcu_reader *r)
{
	if (r->depth_bias)
		trcu_die("rcu_read_unlock() without a matching rcu_read_lock() "
			 "in QSBR thread %d", r->tid);
	r->nesting = 0;
	watching_exit(r, 1);
}

/* The driver set ->need_qs on this holdout: report the quiescent state. */
void trcu_report_qs_slow(struct trcu_reader *r)
{
	/* acq_rel: pairs with the driver's store of ->need_qs (under the leaf
	 * lock); the report below takes the leaf lock anyway. */
	if (!atomic_exchange_explicit(&r->need_qs, 0, memory_order_acq_rel))
		return;
	if (r->slot >= 0 && r->nesting == r->depth_bias)
		rcu_report_qs_slot(r->slot, true);
}

void trcu_quiescent_state_slow(struct trcu_reader *r)
{
	if (r->nesting > r->depth_bias)
		trcu_die("rcu_quiescent_state() called inside an RCU read-side critical "
			 "section (nesting depth %u)", r->nesting - r->depth_bias);
	if (!r->depth_bias) {
		/* Not an online QSBR thread: already quiescent. */
		trcu_report_qs_slow(r);
		return;
	}
	watching_exit(r, 2);   /* fenced QSBR thread */
}

void trcu_unbalanced_unlock(struct trcu_reader *r)
{
	trcu_die("rcu_read_unlock() without a matching rcu_read_lock() in thread %d",
		 trcu_gettid());
}

/* ---- QSBR ------------------------------------------------------------------------ */

void trcu_internal_qsbr_online(struct trcu_reader *r)
{
	if (r->depth_bias)
		return;
	if (r->nesting)
		trcu_die("rcu_thread_online() called inside an RCU read-side critical section");
	r->depth_bias = 1;
	r->nesting = 1;
	watching_enter(r);
}

void trcu_internal_qsbr_offline(struct trcu_reader *r)
{
	if (!r->depth_bias)
		return;
	if (r->nesting != 1)
		trcu_die("rcu_thread_offline() called inside an RCU read-side critical "
			 "section (nesting depth %u)", r->nesting - 1);
	r->depth_bias = 0;
	r->nesting = 0;
	watching_exit(r, 1);
}

void trcu_thread_qsbr(void)
{
	struct trcu_reader *r = &trcu_reader_tls;

	if (trcu_register_thread())
		trcu_die("rcu_thread_qsbr(): cannot register thread: out of memory");
	if (r->nesting)
		trcu_die("trcu_thread_qsbr() called inside an RCU read-side critical section");
	r->flags |= TRCU_RF_QSBR;
	trcu_internal_qsbr_online(r);
}

static struct trcu_reader *qsbr_self(const char *what)
{
	struct trcu_reader *r = &trcu_reader_tls;

	if (!(r->flags & TRCU_RF_QSBR))
		trcu_die("%s called by thread %d, which is not a QSBR thread "
			 "(call trcu_thread_qsbr() first)", what, trcu_gettid());
	return r;
}

void trcu_thread_online(void)
{
	trcu_internal_qsbr_online(qsbr_self("rcu_thread_online()"));
}

void trcu_thread_offline(void)
{
	trcu_internal_qsbr_offline(qsbr_self("rcu_thread_offline()"));
}

/* ---- Blocking waits ---------------------------------------------------------- */

void trcu_check_blocking_allowed(const char *what)
{
	struct trcu_reader *r = &trcu_reader_tls;

	if (r->nesting > r->depth_bias)
		trcu_die("%s called inside an RCU read-side critical section (nesting depth "
			 "%u): it would wait for itself forever", what, r->nesting - r->depth_bias);
}

/* Enter an extended quiescent state for a blocking wait.  Returns whether
 * the thread was an online QSBR thread (to go back online after). */
int trcu_enter_gp_wait(struct trcu_reader *r)
{
	int was_online = r->depth_bias != 0;

	if (was_online)
		trcu_internal_qsbr_offline(r);
	/* Release: the caller's earlier accesses (it already ran a full fence)
	 * before the flag; pairs with the driver's acquire in the early report. */
	atomic_store_explicit(&r->gp_blocked, 1, memory_order_release);
	return was_online;
}

void trcu_exit_gp_wait(struct trcu_reader *r, int was_online)
{
	atomic_store_explicit(&r->gp_blocked, 0, memory_order_relaxed);
	/* Store buffering with a driver's early report: this clear must be
	 * visible before any later read-side section's loads.  Pairs with the
	 * fence in rcu_gp_early_report() before it reads ->gp_blocked. */
	atomic_thread_fence(memory_order_seq_cst);
	if (was_online)
		trcu_internal_qsbr_online(r);
}
