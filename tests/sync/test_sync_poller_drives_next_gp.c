/* SPDX-License-Identifier: MIT */
/*
 * A list-path synchronize_rcu() caller that polls its node (sr_spin_us)
 * drives the next GP itself when the driver before it leaves: caller X
 * drives a GP held open by a reader; caller Y arrives after that GP
 * started, so it needs the next one, finds X driving and polls.  When the
 * reader leaves, X returns without waking the GP kthread and Y drives its
 * own GP: the kthread is never started, and both return.
 * The kthread starts once per process: the test runs before anything
 * else in its own.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"
#include "gp.h"

static _Atomic int returned;

static int run_case(void)
{
	struct trcu_stats a, b;
	struct holder h;
	pthread_t x, y;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 1), 0);
	CHECK_EQ(trcu_set_tunable("sr_drive_max", 2), 0);
	/* Long enough to outlast the held GP on a loaded machine: Y is
	 * still polling when X leaves. */
	CHECK_EQ(trcu_set_tunable("sr_spin_us", 1000000), 0);
	holder_start(&h);
	pthread_create(&x, NULL, sync_caller_fn, &returned);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sync_waiters) >= 1, 10000);
	usleep(20000);                    /* X is driving, held by the reader */
	pthread_create(&y, NULL, sync_caller_fn, &returned);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sr_spinning) >= 1, 10000);
	CHECK_EQ(atomic_load(&returned), 0);
	trcu_get_stats(&a);
	holder_release(&h);
	pthread_join(x, NULL);
	pthread_join(y, NULL);
	trcu_get_stats(&b);
	CHECK_EQ(atomic_load(&returned), 2);
	CHECK(!rcu_gp_kthread_started());
	CHECK_EQ(b.gp_driven_by_kthread - a.gp_driven_by_kthread, 0);
	return 0;
}

int main(void)
{
	alarm(60);   /* a hang fails with SIGALRM */
	CHECK_EQ(run_case(), 0);
	printf("sync_poller_drives_next_gp: ok\n");
	return 0;
}
