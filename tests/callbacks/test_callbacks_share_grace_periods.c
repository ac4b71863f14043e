/* SPDX-License-Identifier: MIT */
/*
 * Grace periods sized to the work (nocb_batch_us, nocb_batch_min):
 *
 * 1. A steady stream of callbacks (one every few microseconds, no reader)
 *    shares grace periods: with nocb_batch_us = 2 ms, about one GP per 2 ms
 *    of streaming (plus one per tick at most when a loaded machine stalls
 *    the stream), not one per offload pass (back to back).  Every
 *    callback still runs.
 * 2. The batch never holds back a thread that waits for the offload thread:
 *    with nocb_batch_us at 10 s and the flood mark (qhimark) out of reach,
 *    a wakeme-path synchronize_rcu() and an rcu_barrier() issued during the
 *    stream return long before the batch delay (a held-back one waits
 *    10 s; the check allows 5 s).
 * 3. A trickle is not batched: one callback queued on a quiet system runs
 *    long before the 10 s delay.
 * A hang in any step is reported by the hard alarm.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <treercu/treercu.h>

#include "check.h"

static const char *volatile step = "start";
static _Atomic long ran;
static _Atomic int stop;

static void on_alarm(int sig)
{
	(void)sig;
	(void)!write(2, "test_callbacks_share_grace_periods: FAILED: hung in ", 52);
	(void)!write(2, step, strlen(step));
	(void)!write(2, "\n", 1);
	_exit(1);
}

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void free_cb(struct trcu_head *h)
{
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
	free(h);
}

/* One callback, then spin gap_ns: a steady rate far above nocb_batch_min
 * per tick. */
static long stream_one(long gap_ns)
{
	struct trcu_head *h = malloc(sizeof(*h));
	long until;

	CHECK(h != NULL);
	call_rcu(h, free_cb);
	until = now_ns() + gap_ns;
	while (now_ns() < until)
		;
	return 1;
}

static void *streamer(void *arg)
{
	long n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		n += stream_one(5000);
	return (void *)n;
}

static void stream_shares_gps(void)
{
	struct trcu_stats a, b;
	long n = 0, t0, el_ms, gps, bound;

	step = "stream";
	CHECK_EQ(trcu_set_tunable("nocb_batch_us", 2000), 0);
	rcu_barrier();
	trcu_get_stats(&a);
	t0 = now_ns();
	while (now_ns() - t0 < 300000000L)
		n += stream_one(5000);
	el_ms = (now_ns() - t0) / 1000000L;
	trcu_get_stats(&b);
	gps = (long)(b.gp_completed - a.gp_completed);
	/* One GP per batch delay (2 ms), half again for GPs that end
	 * batches early or start while the previous one runs; and, on a
	 * loaded machine that stops the stream for a tick or more, up to one
	 * per tick for the trickle that restarts it (fewer than
	 * nocb_batch_min callbacks in a tick are not held back). */
	bound = el_ms * 3 / 4 + el_ms + 10;
	printf("%ld callbacks in %ld ms: %ld grace periods (bound %ld)\n", n, el_ms, gps, bound);
	CHECK(gps <= bound);
	step = "stream: rcu_barrier";
	rcu_barrier();
	trcu_get_stats(&b);
	CHECK_EQ(atomic_load(&ran), n);
}

static void waiters_not_held_back(void)
{
	pthread_t t;
	long t0, sync_ms, barrier_ms;
	void *n;

	CHECK_EQ(trcu_set_tunable("nocb_batch_us", 10000000), 0);
	CHECK_EQ(trcu_set_tunable("cb_max_pending", 1000000000), 0);
	CHECK_EQ(trcu_set_tunable("qhimark", 100000000), 0);
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 0), 0);
	atomic_store(&ran, 0);
	CHECK_EQ(pthread_create(&t, NULL, streamer, NULL), 0);
	usleep(50000);           /* the offload thread holds a batch back */
	step = "wakeme synchronize_rcu() during the stream";
	t0 = now_ns();
	synchronize_rcu();
	sync_ms = (now_ns() - t0) / 1000000L;
	step = "rcu_barrier() during the stream";
	t0 = now_ns();
	rcu_barrier();
	barrier_ms = (now_ns() - t0) / 1000000L;
	atomic_store(&stop, 1);
	CHECK_EQ(pthread_join(t, &n), 0);
	printf("batch delay 10 s: wakeme synchronize_rcu() %ld ms, rcu_barrier() %ld ms\n",
	       sync_ms, barrier_ms);
	CHECK(sync_ms < 5000);
	CHECK(barrier_ms < 5000);
	step = "rcu_barrier() after the stream";
	rcu_barrier();
	CHECK_EQ(atomic_load(&ran), (long)n);
}

static void trickle_not_batched(void)
{
	struct trcu_head *h = malloc(sizeof(*h));
	long t0, ms;

	CHECK(h != NULL);
	usleep(20000);           /* the stream's tick is over */
	atomic_store(&ran, 0);
	step = "one callback (trickle)";
	t0 = now_ns();
	call_rcu(h, free_cb);
	while (!atomic_load(&ran) && now_ns() - t0 < 5000000000L)
		usleep(100);
	ms = (now_ns() - t0) / 1000000L;
	printf("batch delay 10 s: one callback ran after %ld ms\n", ms);
	CHECK_EQ(atomic_load(&ran), 1);
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(120);
	stream_shares_gps();
	waiters_not_held_back();
	trickle_not_batched();
	printf("test_callbacks_share_grace_periods: OK\n");
	return 0;
}
