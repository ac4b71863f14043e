/* SPDX-License-Identifier: MIT */
/*
 * The synchronize_rcu() waiter list, state by state (single-threaded,
 * deterministic): six states, and the race where the cleanup pass sees an
 * old or a new done tail.  The pass is run at chosen points through
 * src/test_hooks.h (woken waiters run it in the library).
 *
 *  a. initial: waiters A1..A7 on the list
 *  b. GP1 starts: wait head W1 pushed, wait tail = W1
 *  c. GP1 ends: the oldest 5 waiters (sr_wake_max=5, the kernel's limit)
 *     woken by the driver, in the order they came; done tail = W1, 2 left,
 *     one cleanup pass requested
 *  d. new waiters B1..B3, GP2 starts: W2 pushed in front of them
 *  e. GP2 ends: done tail = W2; the pass runs now and sees W2 (case 2), or
 *     it already ran between c and e and saw W1 (case 1)
 *  f. cleanup done: every waiter woken exactly once, every wait head free
 */
#define _GNU_SOURCE
#include <string.h>

#include "check.h"
#include "sync_hint.h"
#include "test_hooks.h"

static struct sr_node A[7], B[3];

static int woken(struct sr_node *v, int n)
{
	int c = 0;

	for (int i = 0; i < n; i++)
		c += rcu_sr_done(&v[i]);
	return c;
}

static struct sync_list_peek peek(void)
{
	struct sync_list_peek p;

	sync_list_peek(&p);
	return p;
}

static int heads_in_use(void)
{
	return peek().heads_in_use;
}

static void run_work(void)
{
	rcu_sr_normal_cleanup_pass();
}

static void scenario(int work_sees_old_tail)
{
	memset(A, 0, sizeof(A));
	memset(B, 0, sizeof(B));
	/* a */
	for (int i = 0; i < 7; i++)
		rcu_sr_normal_add_req(&A[i]);
	CHECK(rcu_sr_waiters());
	/* b */
	CHECK(rcu_sr_normal_gp_init());
	CHECK(peek().wait_tail && peek().wait_tail->is_wait_head);
	CHECK(peek().next == peek().wait_tail);
	CHECK_EQ(woken(A, 7), 0);        /* nobody before the GP ends */
	struct sr_node *w1 = peek().wait_tail;
	/* c: the driver wakes the oldest 5 (A0..A4), leaves A5, A6 to a
	 * pass.  Pretend a pass is pending already, so that the driver's
	 * fast path keeps every wait head for the pass. */
	sync_list_test_set_pending(1);
	rcu_sr_normal_gp_cleanup();
	CHECK_EQ(woken(A, 7), 5);
	for (int i = 0; i < 5; i++)
		CHECK(rcu_sr_done(&A[i]));
	CHECK(peek().done_tail == w1);
	CHECK_EQ(peek().cleanups_pending, 2);   /* the pretended one and GP1's */
	if (work_sees_old_tail) {
		/* case 1: the work runs between c and e and sees W1 */
		run_work();
		CHECK_EQ(woken(A, 7), 7);
	}
	/* d */
	for (int i = 0; i < 3; i++)
		rcu_sr_normal_add_req(&B[i]);
	CHECK(rcu_sr_normal_gp_init());
	struct sr_node *w2 = peek().wait_tail;
	CHECK(w2 != w1);
	CHECK_EQ(woken(B, 3), 0);
	/* e */
	rcu_sr_normal_gp_cleanup();
	CHECK_EQ(woken(B, 3), 3);        /* 3 <= 5: all woken by the driver */
	CHECK(peek().done_tail == w2);
	/* case 2: the work sees only the new tail W2 and finds A5, A6 and W1
	 * behind it; case 1: only W1 is left to recycle. */
	run_work();
	/* f */
	CHECK_EQ(woken(A, 7), 7);
	CHECK_EQ(woken(B, 3), 3);
	CHECK_EQ(heads_in_use(), 1);     /* only W2, the newest, stays listed */
}

int main(void)
{
	CHECK_EQ(trcu_set_tunable("sr_wake_max", 5), 0);
	scenario(0);
	/* Reset the list between scenarios: W2 is the list's only node. */
	sync_list_test_reset(0, 0);
	scenario(1);
	/* Exhaustion: with every wait head in use, GP init says so. */
	sync_list_test_reset(peek().heads_max, 0);
	memset(A, 0, sizeof(A));
	rcu_sr_normal_add_req(&A[0]);
	CHECK(!rcu_sr_normal_gp_init());
	printf("test_sync_list_states: OK\n");
	return 0;
}
