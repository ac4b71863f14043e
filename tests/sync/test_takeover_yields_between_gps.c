/* SPDX-License-Identifier: MIT */
/*
 * A synchronize_rcu() caller that asks the GP kthread for its grace period
 * (a takeover) is not starved while the kthread keeps finding more GPs to
 * drive.  A test hook in rcu_gp_init() requests the next GP from inside each
 * one, so the kthread has a chain of CHAIN GPs to drive; with no reader to
 * wait for, each ends at its first scan.  A kthread that looked for
 * takeover requests only in its FQS loop, after that scan, would never
 * yield: the requester would sit in pthread_mutex_lock() until the chain
 * ended, its own GP long over (and, on the list path, its node already
 * woken), while every other caller, seeing a takeover asked for, waited
 * behind it (seeds 003 with 64 callers: calls of 0.3-1.9 s).  A yieldable
 * driver also checks between GPs.
 *
 * Measured in GP inits, not time: the GPs started while a takeover is asked
 * for (takeover_req > 0) must be a handful, not the rest of the chain (the
 * count does not grow while a slow, preempted requester wakes up: nobody
 * else may take gp_mutex then).  Rounds in which the caller did not ask for
 * a takeover (it came between two GPs) prove nothing and are repeated.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "internal.h"
#include "test_hooks.h"

#define CHAIN 100000L        /* GPs the kthread is given per round */
#define MAX_LATE_INITS 4L    /* GPs started while a takeover is asked for */
#define ROUNDS 4             /* rounds with a takeover, per path */

static _Atomic long chain_left, inits;

/* Inside rcu_gp_init(), gp_mutex held: count the GPs started over a
 * takeover request, and ask for the GP after this one. */
static void chain_hook(void)
{
	if (atomic_load(&rcu_state.takeover_req) > 0)
		atomic_fetch_add(&inits, 1);
	if (atomic_load(&chain_left) > 0 && atomic_fetch_sub(&chain_left, 1) > 0)
		rcu_gp_request_async(rcu_seq_snap_val(rcu_seq_startval(rcu_gp_seq_current())));
}

static void *caller(void *arg)
{
	long *late = arg, before;

	rcu_register_thread();
	before = atomic_load(&inits);
	synchronize_rcu();
	*late = atomic_load(&inits) - before;
	rcu_unregister_thread();
	return NULL;
}

/* One round: the kthread runs a chain; a caller arrives in the middle.
 * Returns whether the caller asked for a takeover. */
static bool starve_round(long *late)
{
	struct trcu_stats a, b;
	pthread_t c;

	atomic_store(&chain_left, CHAIN);
	(void)start_poll_synchronize_rcu();   /* the kthread drives the chain */
	while (atomic_load(&chain_left) > CHAIN - 50)
		usleep(100);
	trcu_get_stats(&a);
	CHECK_EQ(pthread_create(&c, NULL, caller, late), 0);
	CHECK_EQ(pthread_join(c, NULL), 0);
	trcu_get_stats(&b);
	while (atomic_load(&chain_left) > 0 || (trcu_gp_seq() & 3))   /* drain */
		usleep(1000);
	return b.gp_takeovers != a.gp_takeovers;
}

static void run_path(int path)
{
	int with = 0, tries = 0;
	long worst = 0;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", path), 0);
	while (with < ROUNDS && tries < 50) {
		long late = 0;

		tries++;
		if (!starve_round(&late))
			continue;
		with++;
		if (late > worst)
			worst = late;
		if (late > MAX_LATE_INITS)
			fprintf(stderr, "path %d: %ld GPs started while the caller asked to "
				"take over (starved by the GP kthread)\n", path, late);
		CHECK(late <= MAX_LATE_INITS);
	}
	printf("path %d: %d rounds with a takeover (%d tries), worst %ld GPs started over it\n",
	       path, with, tries, worst);
	CHECK(with > 0);
}

int main(void)
{
	/* Set before any treercu thread exists, never cleared: the drivers
	 * read it without a lock. */
	rcu_test_hooks.gp_init = chain_hook;
	synchronize_rcu();
	run_path(1);
	run_path(2);
	printf("test_takeover_yields_between_gps: OK\n");
	return 0;
}
