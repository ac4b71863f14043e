/* SPDX-License-Identifier: MIT */
/*
 * A list-path synchronize_rcu() caller that left its GP to the GP kthread
 * (another caller was waiting, so it did not drive) still returns when
 * trcu_shutdown() stops the kthread before that GP: the kthread ends its GP
 * loop on shutting_down and nobody else drives.  A caller sleeping with no
 * time limit would hang forever: its waits are bounded, and a caller that
 * sees shutting_down drives.  (Shutdown running the pending GPs itself
 * could hang exit behind a reader.)
 *
 * The second caller is simulated by one extra count in nr_sync_waiters
 * while the real caller decides whether to drive.  With argument 2: the
 * futex path under drive_from_caller=0 (the kernel profile's), where no
 * caller drives; its waiters wake at every GP end and see the flag, so
 * this is a check, not a reproduction.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "internal.h"

static _Atomic int held, release_reader, returned;

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	rcu_read_lock();
	atomic_store(&held, 1);
	while (!atomic_load(&release_reader))
		usleep(1000);
	rcu_read_unlock();
	rcu_unregister_thread();
	return NULL;
}

static void *caller(void *arg)
{
	(void)arg;
	rcu_register_thread();
	synchronize_rcu();
	atomic_store(&returned, 1);
	rcu_unregister_thread();
	return NULL;
}

static void *shutdown_thread(void *arg)
{
	(void)arg;
	trcu_shutdown();
	return NULL;
}

int main(int argc, char **argv)
{
	int path = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t r, a, s;
	struct timespec dl;

	CHECK(path == 1 || path == 2);
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", path), 0);
	if (path == 2)
		CHECK_EQ(trcu_set_tunable("drive_from_caller", 0), 0);
	synchronize_rcu();
	pthread_create(&r, NULL, reader, NULL);
	while (!atomic_load(&held))
		usleep(100);
	(void)start_poll_synchronize_rcu();       /* GP1: the kthread drives it */
	while (!(trcu_gp_seq() & 3))
		usleep(100);
	atomic_fetch_add(&rcu_state.nr_sync_waiters, 1);   /* "another caller" */
	pthread_create(&a, NULL, caller, NULL);   /* needs GP2, leaves it to the kthread */
	usleep(50000);
	atomic_fetch_sub(&rcu_state.nr_sync_waiters, 1);
	pthread_create(&s, NULL, shutdown_thread, NULL);
	usleep(50000);
	atomic_store(&release_reader, 1);         /* GP1 ends; the kthread exits */
	pthread_join(r, NULL);
	pthread_join(s, NULL);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	if (pthread_timedjoin_np(a, NULL, &dl) == ETIMEDOUT) {
		fprintf(stderr, "the caller is still waiting 5 s after shutdown: its GP was "
			"left to a GP kthread that had stopped\n");
		CHECK(0);
	}
	CHECK(atomic_load(&returned));
	printf("test_shutdown_releases_sync_waiters (path %d): OK\n", path);
	return 0;
}
