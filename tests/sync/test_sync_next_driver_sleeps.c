/* SPDX-License-Identifier: MIT */
/*
 * A list-path synchronize_rcu() caller that may drive and finds another
 * caller driving becomes the next driver and sleeps on gp_mutex (liburcu's
 * next leader) instead of polling for it on a CPU: caller X drives a GP
 * held open by a reader; caller Y arrives, with a polling bound (sr_spin_us)
 * longer than the check below.  Y queues (takeover_req, one next driver
 * at a time) and its thread sleeps while X drives; when the reader leaves,
 * X returns, Y drives its own GP, both return, and the GP kthread is never
 * started.  A caller polling on the other CPU of a small machine makes
 * every GP's membarrier an IPI to it (docs/decisions.md).
 * The kthread starts once per process: the test runs before anything
 * else in its own.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"
#include "gp.h"

static _Atomic int returned;
static _Atomic int y_tid;

static void *caller_y(void *arg)
{
	atomic_store(&y_tid, (int)syscall(SYS_gettid));
	return sync_caller_fn(arg);
}

/* The thread's scheduler state letter from /proc ('R', 'S', ...). */
static char thread_state(int tid)
{
	char path[64], buf[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : '?';
}

static int run_case(void)
{
	struct holder h;
	pthread_t x, y;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 1), 0);
	CHECK_EQ(trcu_set_tunable("sr_drive_max", 2), 0);
	/* Longer than the whole check: a polling Y stays runnable through it. */
	CHECK_EQ(trcu_set_tunable("sr_spin_us", 1000000), 0);
	holder_start(&h);
	pthread_create(&x, NULL, sync_caller_fn, &returned);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sync_waiters) >= 1, 10000);
	usleep(20000);                    /* X is driving, held by the reader */
	pthread_create(&y, NULL, caller_y, &returned);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.takeover_req) == 1, 10000);
	CHECK_WITHIN_MS(thread_state(atomic_load(&y_tid)) == 'S', 10000);
	CHECK_EQ(atomic_load(&rcu_state.nr_sr_spinning), 1);
	CHECK_EQ(atomic_load(&returned), 0);
	holder_release(&h);
	pthread_join(x, NULL);
	pthread_join(y, NULL);
	CHECK_EQ(atomic_load(&returned), 2);
	CHECK_EQ(atomic_load(&rcu_state.takeover_req), 0);
	CHECK(!rcu_gp_kthread_started());
	return 0;
}

int main(void)
{
	alarm(60);   /* a hang fails with SIGALRM */
	CHECK_EQ(run_case(), 0);
	printf("sync_next_driver_sleeps: ok\n");
	return 0;
}
