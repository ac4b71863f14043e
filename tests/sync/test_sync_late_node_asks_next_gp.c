/* SPDX-License-Identifier: MIT */
/*
 * The seed-004 list: a caller that pushes its node just after a GP init
 * pushed its wait head, but before that GP says it started.  Its node is in
 * front of the wait head, so that GP does not cover it; a snapshot of
 * gp_seq alone still reads "no GP in progress" and names that GP.  The
 * caller must ask for the next GP, or it waits forever (seeds 004 hung so,
 * once in thousands of calls).  The window is held open here by a test hook
 * inside rcu_gp_init().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "internal.h"
#include "test_hooks.h"

static pthread_t late;
static _Atomic int armed, late_started, late_done;

static void *late_caller(void *arg)
{
	(void)arg;
	synchronize_rcu();
	atomic_store(&late_done, 1);
	return NULL;
}

/* In the window: start the late caller once and give it time to push its
 * node and take its snapshot (it then finds gp_mutex held and waits). */
static void window_hook(void)
{
	if (!atomic_load(&armed) || atomic_exchange(&late_started, 1))
		return;
	CHECK_EQ(pthread_create(&late, NULL, late_caller, NULL), 0);
	usleep(50000);
}

int main(void)
{
	struct timespec dl;
	int rc;

	/* Set before any treercu thread exists, never cleared: the drivers
	 * read it without a lock.  It acts once, after `armed`. */
	rcu_test_hooks.gp_init = window_hook;
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	synchronize_rcu();                      /* initialise, settle */
	atomic_store(&armed, 1);
	synchronize_rcu();                      /* this GP's init opens the window */
	CHECK(atomic_load(&late_started));
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	rc = pthread_timedjoin_np(late, NULL, &dl);
	if (rc == ETIMEDOUT) {
		fprintf(stderr, "the late caller is still waiting after 5 s: its node was not "
			"covered by any grace period\n");
		CHECK_FAIL_EXIT();
	}
	CHECK_EQ(rc, 0);
	CHECK(atomic_load(&late_done));
	printf("late caller returned\n");
	return 0;
}
