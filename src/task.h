/* SPDX-License-Identifier: MIT */
/*
 * Task readers, library-internal (src/task.c): statistics for the tools,
 * and the switches tests and torture use to break the mechanism on purpose.
 */
#ifndef TREERCU_TASK_INTERNAL_H
#define TREERCU_TASK_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

/* Counted while rcu_task_lock_timing is set (the lock figures), except the
 * enqueue/dequeue counts, which are always kept.  One per thread (its
 * owner's plain load and store: no shared cache line on the timed
 * paths), summed when read. */
struct rcu_task_stats {
	struct rcu_task_stats *next;           /* every thread's, never freed */
	_Atomic unsigned long node_lock_acq;   /* leaf-lock acquisitions by task paths */
	_Atomic unsigned long node_lock_ns;    /* ... and the time they held it */
	_Atomic unsigned long worker_lock_acq; /* worker-list lock acquisitions */
	_Atomic unsigned long worker_lock_ns;
	_Atomic unsigned long enq_worker;      /* switched out onto a worker list */
	_Atomic unsigned long enq_node;        /* ... onto a node list */
	_Atomic unsigned long early_returns;   /* unlocks that left a worker list */
	_Atomic unsigned long node_dequeues;   /* unlocks that left a node list */
	_Atomic unsigned long promoted;        /* moved from a worker list to a node */
};
struct rcu_task_stats_snap {
	unsigned long node_lock_acq, node_lock_ns, worker_lock_acq, worker_lock_ns;
	unsigned long enq_worker, enq_node, early_returns, node_dequeues, promoted;
};
extern _Atomic bool rcu_task_lock_timing;
/* Tests and torture --busted 3: GP init does not promote worker lists
 * (grace periods then end under blocked tasks: the checks must fire). */
extern _Atomic bool rcu_task_test_skip_promotion;
/* Tests only: the switch-out reads gp_seq before it counts the task. */
extern _Atomic bool rcu_task_test_naive_order;
/* Tests only: run at the start of the promotion pass, after gp_seq says
 * "in progress" (widens the switch-out / promotion window). */
extern void (*rcu_task_test_promote_hook)(void);

void rcu_task_stats_get(struct rcu_task_stats_snap *st);
void rcu_task_stats_reset(void);

/* thread.c: the owner's out-of-line ->watching transitions (fenced or
 * membarrier), for a task section on its worker. */
struct trcu_reader;
void rcu_watching_enter(struct trcu_reader *r);
void rcu_watching_exit(struct trcu_reader *r);

/* ---- task_blocked.c, for task.c (the layer above) ---- */
struct trcu_task;
struct rcu_thread;
struct rcu_tree;
#define TASK_MAGIC      0x7a5c0de1u   /* trcu_task.magic of a live task */
#define TASK_DEAD       0x0dead7a5u   /* ... after trcu_task_exit() */
/* A switched-out task's ->cpu: nest_flags that send the inline read side
 * out of line; never written. */
extern struct trcu_reader rcu_task_out_reader;
const char *rcu_task_name(const struct trcu_task *t);
void rcu_task_check_init(const struct trcu_task *t, const char *what);
bool rcu_task_switched_in(const struct trcu_task *t);
unsigned int rcu_task_depth(const struct trcu_task *t);
/* Queue t (running inside its section on worker w, reader r) and make w
 * quiescent; true when w must report a quiescent state (->need_qs). */
bool rcu_task_block(struct rcu_thread *w, struct trcu_reader *r, struct trcu_task *t);
/* The blocked task t leaves its list (its outermost unlock, or its exit). */
void rcu_task_dequeue(struct trcu_task *t);
/* The grace-period core's calls, handed down through rcu_task_hooks
 * (src/task.c): */
void rcu_task_promote_locked(struct rcu_tree *t);
void rcu_task_reshape_locked(struct rcu_tree *old, struct rcu_tree *t);
void rcu_task_worker_offline_locked(struct rcu_thread *w);
int rcu_task_stall_print(long gp, long now_ns, void (*emit)(const char *msg));
void rcu_task_fork_child(void);
/* task.c: the table src/rcu.c hands down (internal.h). */
extern const struct rcu_task_hooks rcu_task_hooks_impl;

#endif
