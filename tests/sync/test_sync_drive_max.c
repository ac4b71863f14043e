/* SPDX-License-Identifier: MIT */
/*
 * sr_drive_max: how many synchronize_rcu() callers may wait, a list-path
 * caller included, for it still to drive its own GP instead of waking the
 * GP kthread.  Caller X drives a GP held open by a reader; caller Y arrives.
 * - sr_drive_max=1 (drive only when alone): Y wakes the
 *   GP kthread, which starts it;
 * - sr_drive_max=2: Y may drive, finds X driving and waits on its node
 *   without waking anyone: the kthread is not started.
 * In both, neither returns before the reader leaves, and both return after.
 * - A list caller that finds the GP kthread driving takes the GP over only
 *   when alone; with company (another caller counted waiting) it leaves
 *   the GP to the kthread, which serves everyone (callers taking the
 *   kthread's GPs over in turn would cost a third of the calls with 3
 *   callers).
 * Each case runs in a child process: the kthread starts once per process.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"
#include "gp.h"

static _Atomic int returned;

static int run_case(long drive_max, bool kthread_expected)
{
	struct holder h;
	pthread_t x, y;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 1), 0);
	CHECK_EQ(trcu_set_tunable("sr_drive_max", drive_max), 0);
	holder_start(&h);
	pthread_create(&x, NULL, sync_caller_fn, &returned);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sync_waiters) >= 1, 10000);
	usleep(20000);                    /* X is driving, held by the reader */
	CHECK(!rcu_gp_kthread_started());
	pthread_create(&y, NULL, sync_caller_fn, &returned);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sync_waiters) >= 2, 10000);
	if (kthread_expected) {
		CHECK_WITHIN_MS(rcu_gp_kthread_started(), 10000);
	} else {
		usleep(50000);            /* Y has decided (a slower Y passes too) */
		CHECK(!rcu_gp_kthread_started());
	}
	CHECK_EQ(atomic_load(&returned), 0);
	holder_release(&h);
	pthread_join(x, NULL);
	pthread_join(y, NULL);
	CHECK_EQ(atomic_load(&returned), 2);
	return 0;
}

/* The GP kthread drives a GP held by a reader; a list caller arrives,
 * alone or with one more caller counted waiting. */
static int takeover_case(bool company)
{
	struct trcu_stats a, b;
	struct holder h;
	pthread_t x;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 1), 0);
	CHECK_EQ(trcu_set_tunable("sr_drive_max", 2), 0);
	holder_start(&h);
	(void)start_poll_synchronize_rcu();            /* the GP kthread drives */
	CHECK_WITHIN_MS(atomic_load(&rcu_state.driver_yieldable), 10000);
	usleep(2000);                                  /* in its FQS sleep */
	if (company)   /* a caller counted waiting, as rcu_sync_caller_enter() does */
		atomic_fetch_add(&rcu_state.nr_sync_waiters, 1);
	trcu_get_stats(&a);
	pthread_create(&x, NULL, sync_caller_fn, &returned);
	usleep(50000);
	CHECK_EQ(atomic_load(&returned), 0);
	trcu_get_stats(&b);
	CHECK_EQ(b.gp_takeovers - a.gp_takeovers, company ? 0 : 1);
	holder_release(&h);
	pthread_join(x, NULL);
	CHECK_EQ(atomic_load(&returned), 1);
	if (company)
		atomic_fetch_sub(&rcu_state.nr_sync_waiters, 1);
	return 0;
}

static void child_done(pid_t pid)
{
	int st;

	CHECK(pid >= 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void in_child(long drive_max, bool kthread_expected)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(run_case(drive_max, kthread_expected));
	child_done(pid);
}

static void takeover_in_child(bool company)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(takeover_case(company));
	child_done(pid);
}

int main(void)
{
	long def = -1;

	in_child(1, true);
	in_child(2, false);
	takeover_in_child(false);
	takeover_in_child(true);
	/* The default: eight callers per CPU this process may use (after the
	 * children: the library is initialised only now, in this process). */
	CHECK_EQ(trcu_get_tunable("sr_drive_max", &def), 0);
	CHECK_EQ(def, 8 * tun_usable_cpus());
	printf("sr_drive_max: ok\n");
	return 0;
}
