/* SPDX-License-Identifier: MIT */
/*
 * The grace-period core's internal interface, one section per file from the
 * bottom up: the rcu_node tree (src/rcu_node.c), a QSBR grace period's
 * spin (src/qsbr_poll.c), the early report (src/gp_early.c), one grace
 * period (src/gp.c), and who drives it (src/gp_drive.c).  Each file calls only the
 * sections above its own in this header, never the ones below.
 */
#ifndef TREERCU_GP_H
#define TREERCU_GP_H

#include <limits.h>

#include "internal.h"
#include "sync_list.h"

/* Longest a caller that relies on others sleeps before it looks again (a
 * lost hand-off, shutdown): a safety net, not the wake-up. */
#define RCU_WAIT_RECHECK_NS (10 * 1000000L)

/* Who runs a grace period or waits for one: a synchronize_rcu() caller, the
 * GP kthread, or an offload thread (waiting for its callbacks' GP).  The one
 * name for "is this a synchronize_rcu() caller?": see the predicates. */
enum rcu_driver_kind { RCU_DRV_CALLER, RCU_DRV_KTHREAD, RCU_DRV_OFFLOAD };

/* A synchronize_rcu() caller: may take a GP over, is served first, and is
 * woken at GP end; the others are asynchronous and look again by themselves. */
static inline bool rcu_drv_is_caller(enum rcu_driver_kind kind)
{
	return kind == RCU_DRV_CALLER;
}

/* ---- src/rcu_node.c ---- */
static inline struct rcu_node *rcu_get_root(struct rcu_tree *t)
{
	return &t->nodes[0];
}

static inline struct rcu_tree *rcu_tree(void)
{
	/* Acquire pairs with the release in rcu_tree_install_locked(). */
	return atomic_load_explicit(&rcu_state.tree, memory_order_acquire);
}

static inline bool rcu_seq_done(unsigned long s)
{
	return rcu_seq_done_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire), s);
}

static inline bool rcu_gp_needed(void)
{
	return ULONG_CMP_LT(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire),
			    atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire));
}

struct rcu_tree *rcu_tree_build_first(int fanout, int fanout_leaf);
void rcu_gp_kick_driver(void);
void rcu_report_qs_rnp(unsigned long mask, struct rcu_node *rnp, bool dirty);
void rcu_report_qs_rnp_driver(unsigned long mask, struct rcu_node *rnp, bool dirty);
bool rcu_root_qs_done(void);
void rcu_gp_init_tree(unsigned long gps);
void rcu_gp_init_tree_locked(unsigned long gps);
void rcu_for_each_active_leaf_locked(bool (*fn)(struct rcu_node *, void *), void *arg);
void rcu_for_each_holdout_leaf(bool (*fn)(struct rcu_node *, void *), void *arg);
bool rcu_start_this_gp(unsigned long s, struct rcu_thread *r);

/* ---- src/qsbr_poll.c ---- */
/* A QSBR GP's asks and spin: an asking walk names the holdouts it asks for
 * polled answers; the spin reports them; the FQS loop's end makes any ask
 * left a plain one. */
void rcu_qsbr_poll_reset(void);
bool rcu_qsbr_poll_room(void);
void rcu_qsbr_poll_add(struct rcu_node *leaf, unsigned long bit);
unsigned int rcu_qs_ask(struct trcu_reader *rdr, bool polled);
void rcu_qsbr_poll_end(void);
void rcu_qsbr_poll_fork_child(void);
bool rcu_qsbr_spin(long spin_until_ns, bool (*interrupted)(void));

/* ---- src/gp_early.c: seed 000's early report (driver only) ---- */
bool rcu_early_qs(struct rcu_thread *r);        /* blocked, offline QSBR or driving */
bool rcu_qsbr_thread(struct rcu_thread *r);     /* QSBR, not a task worker (a hint) */
void rcu_gp_early_report(void);                 /* ofl_lock held (the init's) */
bool rcu_early_stop_mixed(void);                /* the walk stopped at a non-QSBR thread */

/* ---- src/gp.c ---- */
/*
 * The wakes a driver's GPs left (gp_mutex held): the GP-end futex's
 * (rcu_gp_waiters_to_wake()) and those of the list waiters completed asleep
 * (src/sync_list.c), taken under the mutex and made after it is unlocked.
 * A waiter that reads the new futex value does not sleep; one asleep on
 * the old value is woken by them.
 */
struct rcu_gp_wakes {
	bool gp_end;
	int n;
	_Atomic uint32_t *asleep[SR_WAKE_BATCH];
};

static inline void rcu_gp_take_wakes(struct rcu_gp_wakes *k)
{
	k->gp_end = rcu_state.gp_end_wake;
	rcu_state.gp_end_wake = false;
	k->n = rcu_sr_take_asleep(k->asleep);
}

static inline void rcu_gp_make_wakes(const struct rcu_gp_wakes *k)
{
	if (k->gp_end)
		sys_futex_wake(&rcu_state.gp_end_futex, INT_MAX);
	rcu_sr_wake_asleep(k->asleep, k->n);
}

/* A driver going on to another GP makes them before it starts it: those
 * waiters would otherwise wait for that GP too. */
static inline void rcu_gp_wake_left_locked(void)
{
	struct rcu_gp_wakes k;

	rcu_gp_take_wakes(&k);
	rcu_gp_make_wakes(&k);
}

/* Unlock gp_mutex, then make the wakes: the next driver, queued on the
 * mutex or polling for it, starts the next GP meanwhile.  Every unlock of
 * gp_mutex goes through here. */
static inline void rcu_gp_unlock(void)
{
	struct rcu_gp_wakes k;

	rcu_gp_take_wakes(&k);
	pthread_mutex_unlock(&rcu_state.gp_mutex);
	rcu_gp_make_wakes(&k);
}

/* An expedited caller waits, or a polled expedited request is not done.
 * Relaxed: hints the driver reads at each GP start and FQS wait; the
 * requesters kick a sleeping driver (rcu_gp_kick_driver()). */
static inline bool rcu_exp_pending(void)
{
	return atomic_load_explicit(&rcu_state.exp_waiters, memory_order_relaxed) > 0 ||
	       !rcu_seq_done(atomic_load_explicit(&rcu_state.exp_poll_seq, memory_order_relaxed));
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

bool rcu_gp_one_locked(struct rcu_thread *driver, enum rcu_driver_kind kind);

/* ---- src/gp_drive.c ---- */
bool rcu_gp_one(struct rcu_thread *driver, enum rcu_driver_kind kind);
bool rcu_gp_acquire_driver(bool takeover);
bool rcu_gp_queue_driver(void);
void rcu_gp_kthread_wake(void);
bool rcu_gp_kthread_started(void);
bool rcu_gp_kthread_missing(void);   /* its last start failed */
void rcu_gp_kthread_stop(void);
void rcu_gp_kthread_fork_prepare(void);
void rcu_gp_kthread_fork_parent(void);
void rcu_gp_kthread_fork_child(void);
void rcu_gp_handoff(enum rcu_driver_kind kind, bool self_sr);
void rcu_wait_gp(unsigned long s, bool exp, enum rcu_driver_kind kind);

#endif
