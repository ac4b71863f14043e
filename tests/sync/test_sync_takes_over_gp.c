/* SPDX-License-Identifier: MIT */
/*
 * synchronize_rcu() callers and the threads that drive GPs for others:
 * - a caller that arrives while the GP kthread drives a GP (started by
 *   start_poll_synchronize_rcu()) takes that GP over, and still returns
 *   only after the pre-existing reader leaves;
 * - the same while an offload thread drives the GP for its callbacks;
 * - the offload threads' deferral hint ends clear: after every caller of
 *   every path has returned, no woken caller is left "not yet run" (a
 *   wake-up counted after the caller could already return would leave a
 *   stale count, and the offload thread would nap before each batch).
 * Everything runs pinned to one CPU, treercu's threads included (they
 * inherit the mask): the woken caller then preempts its waker, which is
 * what exposes a late count.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"
#include "sync_hint.h"

static _Atomic int returned;

static void cb_count(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&returned, 100);
}

/* Wait until a GP is in progress (state bits of the GP counter). */
static void wait_gp_started(void)
{
	for (int i = 0; i < 100000 && (trcu_gp_seq() & 3) == 0; i++)
		usleep(50);
	CHECK((trcu_gp_seq() & 3) != 0);
}

/* Callers (paths 1 and 2) arriving during a GP driven by someone else. */
static void takeover_round(int path, bool by_offload)
{
	static struct trcu_head head;
	struct trcu_stats a, b;
	struct holder h;
	pthread_t c[3];

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", path), 0);
	synchronize_rcu();
	atomic_store(&returned, 0);
	holder_start(&h);
	trcu_get_stats(&a);
	if (by_offload)
		call_rcu(&head, cb_count);   /* the offload thread drives */
	else
		(void)start_poll_synchronize_rcu();   /* the GP kthread drives */
	wait_gp_started();
	/* Let the driver reach its FQS sleep (it parks the GP there): a
	 * fixed pause was too short on a loaded machine under TSan. */
	for (int i = 0; i < 2000 && !atomic_load(&rcu_state.gp_parked); i++)
		usleep(1000);
	usleep(2000);
	for (int i = 0; i < 3; i++)
		pthread_create(&c[i], NULL, sync_caller_fn, &returned);
	usleep(20000);
	CHECK_EQ(atomic_load(&returned), 0);   /* the reader still holds the GP */
	holder_release(&h);
	for (int i = 0; i < 3; i++)
		pthread_join(c[i], NULL);
	CHECK_EQ(atomic_load(&returned) % 100, 3);
	trcu_get_stats(&b);
	printf("path %d, %s driving: %lu takeover(s)\n", path,
	       by_offload ? "offload thread" : "GP kthread", b.gp_takeovers - a.gp_takeovers);
	CHECK(b.gp_takeovers > a.gp_takeovers);
	rcu_barrier();
	if (by_offload)
		CHECK_EQ(atomic_load(&returned), 103);
}

static void *looper(void *arg)
{
	long n = (long)arg;

	for (long i = 0; i < n; i++)
		synchronize_rcu();
	return NULL;
}

/* After every caller returned, no wake-up is left pending. */
static void hint_clear_round(int path)
{
	struct rcu_sync_key k;
	pthread_t t[4];

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", path), 0);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, looper, (void *)300L);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(!rcu_sync_caller_pending(&k));
	printf("path %d: no stale wake-up after 1200 calls\n", path);
}

int main(void)
{
	long drive = 0;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
	CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
	trcu_register_thread();
	CHECK_EQ(trcu_get_tunable("drive_from_caller", &drive), 0);
	if (drive) {
		for (int path = 1; path <= 2; path++) {
			takeover_round(path, false);
			takeover_round(path, true);
		}
	} else {
		printf("drive_from_caller=0: callers never drive, no takeover\n");
	}
	for (int path = 0; path <= 2; path++)
		hint_clear_round(path);
	trcu_unregister_thread();
	return 0;
}
