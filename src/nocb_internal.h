/* SPDX-License-Identifier: MIT */
/*
 * The callback layer's shared internals: the per-thread rcu_data, the
 * offload groups, the layer's state (src/nocb.c owns it), and the functions
 * its files share, bottom up: src/nocb.c (offload threads, per-thread
 * state), src/call_rcu.c (queueing, flood push-back, stranded callbacks),
 * src/barrier.c (rcu_barrier(), statistics, shutdown, process exit).
 */
#ifndef TREERCU_NOCB_INTERNAL_H
#define TREERCU_NOCB_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>

#include "internal.h"
#include "nocb.h"
#include "segcblist.h"
#include "sync_hint.h"
#include "tsan.h"

/* Offload-thread sleep states (nocb_group.state). */
/* NOCB_BATCH: holding callbacks back to share one grace period
 * (nocb_gp_due()); call_rcu() wakes it only for a flood or a waiter. */
enum { NOCB_AWAKE, NOCB_IDLE, NOCB_LAZY, NOCB_BATCH };

struct nocb_group;

struct rcu_data {
	/* Newly queued callbacks, newest first.  Pushed by the owner with a
	 * CAS, taken whole by the offload thread with an exchange. */
	_Atomic(struct trcu_head *) bypass __attribute__((aligned(64)));
	_Atomic long n_queued;      /* written by the owner (shared: under shared_lock) */
	_Atomic bool lazy_queued;   /* owner queued lazy callbacks */
	_Atomic uint32_t pushback_futex;
	_Atomic int pushback_waiting;   /* threads in the push-back on it */
	/* gp_seq at which a push-back last gave up (no grace period ended
	 * for the push-back limit): none again until it moves.  Atomic for
	 * the shared rcu_data, whose callers push back outside its lock. */
	_Atomic unsigned long pushback_gave_up_gp;
	/* Pending count at the owner's last flood hurry (the kernel's
	 * qlen_last_fqs_check): hurry again only qhimark callbacks later.
	 * Owner only. */
	long qlen_last_fqs_check;

	/* Offload thread only, but n_invoked: added to by the offload thread
	 * and by the runs of stranded callbacks (nocb_run_stranded()). */
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
	/* GP batching (nocb_gp_due()), offload thread only: when callbacks
	 * first waited for a GP not yet requested (0: none wait), and the
	 * arrival rate (nocb_batch_count()). */
	long batch_since_ns;
	long rate_window_ns, rate_n;        /* callbacks flushed this tick */
};

#define NOCB_MAX_GROUPS 256
/* While no offload thread can be started, call_rcu() tries again at most
 * this often (each try is a failing pthread_create()). */
#define NOCB_START_RETRY_NS (10 * 1000000L)

struct nocb_state {
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
	/* The exit drain waits for barrier_mutex: rcu_barrier() callers let
	 * it have the mutex next (rcu_barrier_wait()). */
	_Atomic bool barrier_exit_waiting;
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

	/*
	 * The shared rcu_data: callbacks of threads whose own rcu_data
	 * cannot be allocated, or queued while no offload thread could be
	 * started (out of memory, thread limit).  Static, never freed,
	 * pushed to under shared_lock by any thread (its "owner-only" fields
	 * are the lock holder's; the push-back runs after the unlock).
	 * Linked into group 0 at its first use once the offload threads run
	 * (shared_linked); before that its bypass parks what was queued
	 * (call_rcu() never runs a callback nor waits for a grace period):
	 * the offload threads run it once one starts (retried every
	 * NOCB_START_RETRY_NS by call_rcu()); rcu_barrier() and
	 * trcu_shutdown() run it meanwhile, one run at a time under
	 * shared_run_lock, which rcu_barrier() also waits on so that a run
	 * in flight is covered (nocb_run_stranded()).
	 */
	pthread_mutex_t shared_lock;
	pthread_mutex_t shared_run_lock;
	_Atomic long start_retry_ns;    /* no offload-thread start before this */
	bool shared_init;           /* cblist initialised (under lock) */
	_Atomic bool shared_linked; /* in groups[0].rdps */
	_Atomic int shared_warned;  /* nocb_warn_shared()'s messages said (bits) */
	struct rcu_data shared;
};

extern struct nocb_state nocb;
extern __thread struct rcu_data *nocb_rdp;
extern __thread bool nocb_self;
extern __thread bool nocb_forked_here;

void nocb_fork_check(void);
void nocb_wake(struct nocb_group *grp);
long nocb_flush_bypass(struct nocb_group *grp, struct rcu_data *rdp);
long rdp_pending(struct rcu_data *rdp);
bool nocb_do_batch(struct nocb_group *grp, struct rcu_data *rdp, long deadline_ns);
void nocb_reap_orphans(struct nocb_group *grp);
bool nocb_start(void);
void nocb_barrier_dec(void);
struct rcu_data *rdp_try_get(void);
struct rcu_data *rdp_shared_get(void);
void nocb_warn_shared(int err);
void nocb_wait_shared_runs(void);
/* The shared rcu_data holds callbacks and is in no group (no offload
 * thread started).  Acquire, both: pairs with the link's release store
 * (nocb_link_shared_locked()) and with the pushes' seq_cst CAS. */
static inline bool nocb_shared_parked(void)
{
	return !atomic_load_explicit(&nocb.shared_linked, memory_order_acquire) &&
	       atomic_load_explicit(&nocb.shared.bypass, memory_order_acquire) != NULL;
}
void nocb_sweep_stranded(void);
void nocb_run_stranded(struct rcu_data *rdp);

/* call_rcu() on a head whose callback has not run: abort naming it. */
rcu_cold __attribute__((noreturn)) void call_rcu_queued_twice(struct trcu_head *head,
							      void (*func)(struct trcu_head *));

/* Debug objects (src/debug_objects.c): an rcu_head queued twice. */
#ifdef TREERCU_DEBUG_OBJECTS
void debug_rcu_head_queue(struct trcu_head *head, void (*func)(struct trcu_head *));
void debug_rcu_head_unqueue(struct trcu_head *head);
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

/*
 * Run one callback, taken off its list (the debug build's set forgets the
 * head first: the callback may queue it again).  Its function, or
 * call_rcu_kfree()'s tag: 1 + the offset of the rcu_head in a malloc()ed
 * object to free (the kernel's __is_kvfree_rcu_offset(); no function lives
 * in the first page).
 */
static inline void rcu_cb_invoke(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	uintptr_t tag = (uintptr_t)func;

	debug_rcu_head_unqueue(head);
	/* ThreadSanitizer (src/tsan.h): after the call_rcu() caller and the
	 * sections that ended before this grace period; before a barrier. */
	rcu_tsan_acquire(head);
	rcu_tsan_gp_end();
	if (TRCU_UNLIKELY(tag <= RCU_KFREE_OFFSET_MAX + 1))
		free((char *)head - (tag - 1));
	else
		func(head);   /* head may be freed from here on */
	rcu_tsan_release(&rcu_tsan_callbacks);
}

#endif
