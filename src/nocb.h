/* SPDX-License-Identifier: MIT */
/*
 * The callback layer's interface to the layers above it (src/nocb.c):
 * synchronize_rcu()'s wakeme path, bulk freeing, and the top layer's stats,
 * shutdown and exit.  Nothing below the callback layer includes this.
 */
#ifndef TREERCU_NOCB_H
#define TREERCU_NOCB_H

#include <stdbool.h>
#include <stddef.h>

#include <treercu/rcu.h>

void call_rcu_core(struct trcu_head *head, void (*func)(struct trcu_head *), bool lazy);
/* kfree_rcu()'s fall-back: free() the object whose rcu_head is head, offset
 * bytes into it (at most RCU_KFREE_OFFSET_MAX), after a grace period. */
#define RCU_KFREE_OFFSET_MAX 4095
void call_rcu_kfree(struct trcu_head *head, size_t offset);
bool rcu_cb_ready(void);                         /* call_rcu_core() will not allocate */
void rcu_nocb_shutdown(void);
void rcu_barrier_cbs(void);                      /* every callback queued before it ran */
void rcu_nocb_stats(struct trcu_stats *st);
bool rcu_nocb_self(void);                        /* the caller is an offload thread */
/* How the exit drain ended (rcu_nocb_exit_drain()). */
enum rcu_exit_drain {
	RCU_EXIT_DRAINED,   /* nothing pending */
	RCU_EXIT_STUCK,     /* no GP ended and no callback ran for stuck_ns */
	RCU_EXIT_BUSY,      /* still pending after the settling time */
	RCU_EXIT_NO_OFFLOAD, /* parked callbacks, and no offload thread starts */
};
enum rcu_exit_drain rcu_nocb_exit_drain(long stuck_ns, long *settle_ns);  /* process exit */
void rcu_nocb_exit_report(const char *why, long frees);   /* what exit leaves behind */
void rcu_nocb_stall_info(long *pending, long *gave_up);
/* Tests and torture's nomem injector: a thread's callback state is not
 * allocated, as out of memory (its callbacks take the shared queue). */
extern _Atomic bool rcu_nocb_test_no_rdp;

#endif
