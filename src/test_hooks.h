/* SPDX-License-Identifier: MIT */
/*
 * Test hooks: the only door white-box tests have into the RCU core.  Each
 * hook is a function pointer that is NULL in every program but a test, read
 * at one named point of the code; the peek and reset functions let a
 * single-threaded test walk the waiter list state by state.  Nothing here is
 * part of the API, and nothing outside the library's tests may use it.
 */
#ifndef TREERCU_TEST_HOOKS_H
#define TREERCU_TEST_HOOKS_H

#include "sync_list.h"

struct rcu_test_hooks {
	/* Run inside rcu_gp_init() between the waiter list's wait-head push
	 * and the GP-start store (src/gp.c). */
	void (*gp_init)(void);
	/* Run by a thread's first call_rcu(), between its check of the
	 * offload threads' stop and its push (src/call_rcu.c). */
	void (*first_cb)(void);
	/* Run by a GP driver woken in its FQS sleep, before it acts on the
	 * wake-up (src/gp.c). */
	void (*driver_woken)(void);
	/* Run by a waiter-list cleanup pass between its load of the done
	 * tail and its detach of the older part (src/sync_list.c). */
	void (*sr_pass_loaded)(void);
};

extern struct rcu_test_hooks rcu_test_hooks;

/* The waiter list (src/sync_list.c), as a single-threaded test sees it. */
struct sync_list_peek {
	struct sr_node *next;        /* the newest node */
	struct sr_node *wait_tail;   /* wait head of the GP in progress */
	struct sr_node *done_tail;   /* wait head of the last GP that ended */
	int heads_in_use, heads_max;
	int cleanups_pending;        /* passes requested, not finished */
};

void sync_list_peek(struct sync_list_peek *p);
/* An empty list, the first heads_in_use wait heads marked in use. */
void sync_list_test_reset(int heads_in_use, int cleanups_pending);
void sync_list_test_set_pending(int cleanups_pending);
/* One cleanup pass, as a woken waiter runs it. */
void rcu_sr_normal_cleanup_pass(void);

#endif
