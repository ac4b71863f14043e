/* SPDX-License-Identifier: MIT */
/*
 * A callback may wait for a grace period: synchronize_rcu() (on each of
 * its three paths) and synchronize_rcu_expedited() called from an RCU
 * callback return, and the callbacks queued behind it still run.  On the
 * wakeme path (normal_wake_from_gp=0) a wake-up callback landing on the
 * offload thread's own list, behind the callback waiting for it, would be
 * a silent hang.  rcu_barrier() from a callback would wait for itself: it
 * aborts with a message naming the problem.  Each case runs in its own
 * process (tests/common/subproc.h) under a hard alarm.
 */
#define _GNU_SOURCE
#include <stdatomic.h>

#include <treercu/treercu.h>

#include "subproc.h"

static _Atomic int waited, ran_after;
static struct trcu_head h_wait, h_after[64];

static void cb_sync(struct trcu_head *h)
{
	(void)h;
	synchronize_rcu();
	atomic_store(&waited, 1);
}

static void cb_exp(struct trcu_head *h)
{
	(void)h;
	synchronize_rcu_expedited();
	atomic_store(&waited, 1);
}

static void cb_barrier(struct trcu_head *h)
{
	(void)h;
	rcu_barrier();
	atomic_store(&waited, 1);
}

static void cb_after(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran_after, 1);
}

static void run(void (*fn)(struct trcu_head *))
{
	call_rcu(&h_wait, fn);
	for (int i = 0; i < 64; i++)
		call_rcu(&h_after[i], cb_after);
	rcu_barrier();
	CHECK_EQ(atomic_load(&waited), 1);
	CHECK_EQ(atomic_load(&ran_after), 64);
	exit(0);
}

static void sc_sync(void) { run(cb_sync); }
static void sc_exp(void) { run(cb_exp); }
static void sc_barrier(void) { run(cb_barrier); }

static const struct sp_scenario scenarios[] = {
	{ "synchronize_rcu", sc_sync },
	{ "synchronize_rcu_expedited", sc_exp },
	{ "rcu_barrier", sc_barrier },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const paths[][2] = {
		{ "TREERCU_NORMAL_WAKE_FROM_GP=0", NULL },
		{ "TREERCU_NORMAL_WAKE_FROM_GP=1", NULL },
		{ "TREERCU_NORMAL_WAKE_FROM_GP=2", NULL },
	};
	bool ok = true;

	sp_child(argc, argv, scenarios);
	alarm(600);
	printf("test_gp_wait_from_callback: each case in its own process, 20 s alarm\n");
	for (int p = 0; p < 3; p++) {
		printf(" %s\n", paths[p][0]);
		ok &= sp_expect_exit("synchronize_rcu", paths[p], 20, 0, NULL, 0);
		ok &= sp_expect_exit("synchronize_rcu_expedited", paths[p], 20, 0, NULL, 0);
		ok &= sp_expect_abort("rcu_barrier", paths[p], 20,
				      "rcu_barrier() called from an RCU callback");
	}
	if (!ok) {
		printf("test_gp_wait_from_callback: FAILED\n");
		return 1;
	}
	printf("test_gp_wait_from_callback: a callback waited for a grace period on every "
	       "path; rcu_barrier() from one aborts naming it\n");
	return 0;
}
