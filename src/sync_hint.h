/* SPDX-License-Identifier: MIT */
/*
 * Hints only (src/sync_hint.c): the offload threads' deferral to
 * synchronize_rcu() callers.  A stale value costs one nap, never
 * correctness.
 */
#ifndef TREERCU_SYNC_HINT_H
#define TREERCU_SYNC_HINT_H

#include <stdbool.h>

void rcu_sync_caller_enter(void);                /* a synchronize_rcu() caller waits */
void rcu_sync_caller_exit(void);
void rcu_note_sync_wake(void);                   /* a synchronize_rcu() caller was woken */
void rcu_note_sync_resume(void);                 /* ... and runs again */
void rcu_cb_waiter_enter(void);                  /* a thread waits for an offload thread */
void rcu_cb_waiter_exit(void);
bool rcu_cb_waiters(void);                       /* ... any such thread now */
bool rcu_gp_anyone_waits(void);                  /* a caller or a callback waiter */
/* The waiter list's callers not yet returned (a count, never the list). */
void rcu_sr_waiting_add(void);
void rcu_sr_waiting_sub(void);
void rcu_sr_waiting_fork_child(void);
long rcu_sr_nr_waiting(void);
bool rcu_sr_waiters(void);
struct rcu_sync_key { unsigned long wake, need; bool woken; };
bool rcu_sync_caller_pending(struct rcu_sync_key *key);  /* callbacks should wait */
bool rcu_sync_key_same(const struct rcu_sync_key *k, const struct rcu_sync_key *old);
void rcu_sync_wait_resume(const struct rcu_sync_key *key, long timeout_ns);

#endif
