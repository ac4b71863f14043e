/* SPDX-License-Identifier: MIT */
/*
 * A synchronize_rcu() caller that drives its own grace period does not wake
 * the asynchronous GP-end sleepers (the offload thread waiting for its
 * callbacks' GP, the GP kthread waiting for gp_mutex) on its way out: each
 * wake cost the caller 15-60 us (seeds 004).  They look again by themselves
 * within a tick (doubling while gp_seq stands still, at most 10 ms).
 *
 * Checked for the list path (1) and the futex path (2):
 *  - a caller drives a GP that a reader holds up; callbacks queued after
 *    it started wait for the next GP, their offload thread asleep on
 *    gp_end_futex (it cannot drive: the caller holds gp_mutex); when the
 *    reader leaves, the caller's synchronize_rcu() leaves the offload
 *    thread asleep (async_wakes_skipped grows);
 *  - and yet every callback runs afterwards without any further call into
 *    the library: the timed recheck serves them (within 2 s here; one tick
 *    is expected);
 *  - a synchronize_rcu() caller sleeping on gp_end_futex is still woken by
 *    a driving caller (a second caller thread returns).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"

#define NCB 2000

static struct trcu_head heads[NCB];
static _Atomic long ran;

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

static void *release_later(void *arg)
{
	struct holder *h = arg;

	usleep(20000);          /* the caller is in synchronize_rcu() by now */
	holder_release(h);
	return NULL;
}

static void *sync_caller(void *arg)
{
	(void)arg;
	synchronize_rcu();
	return NULL;
}

static _Atomic int caller_done;

static void one_path(long path)
{
	struct trcu_stats a, b;
	struct holder h;
	pthread_t caller, other;
	long t0, base;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", path), 0);
	rcu_barrier();
	base = atomic_load(&ran);
	atomic_store(&caller_done, 0);
	holder_start(&h);
	pthread_create(&caller, NULL, sync_caller_fn, &caller_done);
	/* The caller drives a GP, held by the reader. */
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sync_waiters) >= 1 && (trcu_gp_seq() & 3), 10000);
	for (int i = 0; i < NCB; i++)
		call_rcu(&heads[i], cb);
	/* The offload thread now sleeps on gp_end_futex for their GP. */
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_gp_waiters) >= 1, 10000);
	CHECK_EQ(atomic_load(&caller_done), 0);
	trcu_get_stats(&a);
	holder_release(&h);
	pthread_join(caller, NULL);
	trcu_get_stats(&b);
	printf("path %ld: async wakes skipped %lu, callbacks run at return %ld of %d\n", path,
	       b.async_wakes_skipped - a.async_wakes_skipped, atomic_load(&ran) - base, NCB);
	CHECK(b.async_wakes_skipped > a.async_wakes_skipped);
	/* No call into the library from here on: the recheck must serve them. */
	t0 = check_now_ms();
	while (atomic_load(&ran) - base < NCB && check_now_ms() - t0 < 2000)
		usleep(100);
	printf("path %ld: all %d callbacks ran %ld ms after synchronize_rcu() returned\n", path,
	       NCB, check_now_ms() - t0);
	CHECK_EQ(atomic_load(&ran) - base, NCB);

	/* A second synchronize_rcu() caller, on gp_end_futex or on its list
	 * node, is woken by the driving caller. */
	holder_start(&h);
	pthread_create(&caller, NULL, release_later, &h);
	pthread_create(&other, NULL, sync_caller, NULL);
	synchronize_rcu();
	pthread_join(other, NULL);
	pthread_join(caller, NULL);
}

int main(void)
{
	CHECK_EQ(trcu_register_thread(), 0);
	one_path(1);
	one_path(2);
	trcu_unregister_thread();
	printf("test_sync_driver_leaves_async_sleepers: OK\n");
	return 0;
}
