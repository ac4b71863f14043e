/* SPDX-License-Identifier: MIT */
/*
 * A grace period that ends during process exit, before trcu_shutdown(), wakes
 * every list-path waiter, also those beyond sr_wake_max that the GP driver
 * leaves to a cleanup pass; and the waiter list allocates no workqueue for
 * that pass (the RCU core does not depend on the workqueue subsystem).
 *
 * rcu_init_once() registers trcu_shutdown() with atexit(); this test
 * registers its own handler after it, so at exit at_exit() runs first.
 *
 * Round 1: 8 list-path waiters behind a reader with sr_wake_max=1, so the GP
 * driver wakes one and leaves the rest to the cleanup pass.  Round 2 leaves
 * 8 waiters blocked behind a reader and calls exit(); at_exit() releases the
 * reader, the GP ends with more waiters than sr_wake_max, and every waiter
 * must still return.
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
#include <treercu/workqueue.h>
#include "check.h"
#include "holder.h"
#include "internal.h"

#define NW 8

static struct holder h;
static pthread_t w[NW];
static _Atomic int returned;
static long woken_before;   /* waiters woken before exit */

static void *waiter(void *arg)
{
	(void)arg;
	synchronize_rcu();
	atomic_fetch_add(&returned, 1);
	return NULL;
}

/* NW waiters blocked in synchronize_rcu() behind a fresh reader. */
static void start_round(void)
{
	holder_start(&h);
	for (int i = 0; i < NW; i++)
		pthread_create(&w[i], NULL, waiter, NULL);
	while (atomic_load_explicit(&rcu_state.nr_sync_waiters, memory_order_relaxed) < NW)
		usleep(100);
	usleep(20000);
	CHECK_EQ(atomic_load(&returned), 0);
}

/* Release the reader; every waiter returns within 10 s. */
static void finish_round(const char *when)
{
	struct timespec dl;

	holder_release(&h);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	for (int i = 0; i < NW; i++) {
		if (pthread_timedjoin_np(w[i], NULL, &dl) == ETIMEDOUT) {
			fprintf(stderr, "%s: %d of %d synchronize_rcu() callers still "
				"waiting after 10 s\n", when, NW - atomic_load(&returned), NW);
			CHECK(0);
		}
	}
	CHECK_EQ(atomic_load(&returned), NW);
	atomic_store(&returned, 0);
}

/* Runs before trcu_shutdown(). */
static void at_exit(void)
{
	struct trcu_wq_stats ws;
	struct trcu_stats st;

	trcu_wq_get_stats(&ws);
	CHECK_EQ(ws.nr_workqueues, 0);   /* the list used none */
	finish_round("at exit");
	trcu_get_stats(&st);
	CHECK_EQ(st.sr_woken_direct + st.sr_woken_deferred, woken_before + NW);
	printf("test_exit_sync_waiters_woken_without_wq: OK (at exit: %d waiters returned; in all %ld woken by "
	       "the GP driver, %ld by cleanup)\n", NW, st.sr_woken_direct,
	       st.sr_woken_deferred);
	fflush(stdout);
}

int main(void)
{
	struct trcu_wq_stats ws;
	struct trcu_stats st;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("sr_wake_max", 1), 0);
	/* Every caller on the list, the one that finds itself alone too. */
	CHECK_EQ(trcu_set_tunable("sr_drive_alone", 0), 0);
	synchronize_rcu();              /* rcu_init_once(): atexit(trcu_shutdown) */
	trcu_wq_get_stats(&ws);
	CHECK_EQ(ws.nr_workqueues, 0);
	CHECK(atexit(at_exit) == 0);

	/* Round 1: 7 of the 8 waiters are left to the cleanup pass. */
	start_round();
	finish_round("round 1");
	trcu_get_stats(&st);
	CHECK(st.sr_woken_deferred > 0);
	trcu_wq_get_stats(&ws);
	CHECK_EQ(ws.nr_workqueues, 0);   /* the pass needs no workqueue */
	printf("  round 1: %ld woken by the GP driver, %ld by the cleanup pass\n",
	       st.sr_woken_direct, st.sr_woken_deferred);
	woken_before = st.sr_woken_direct + st.sr_woken_deferred;

	/* Round 2: exit with NW waiters blocked behind a reader. */
	start_round();
	printf("  exit() with %d callers waiting behind a reader\n", NW);
	fflush(stdout);
	exit(0);
}
