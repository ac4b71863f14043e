/* SPDX-License-Identifier: MIT */
/*
 * While the GP kthread cannot be started (thread limit), the library tries
 * pthread_create() for it at most once per 10 ms, however often it is
 * woken: a loop of start_poll_synchronize_rcu() calls (each one wakes the
 * kthread that is not running) makes a bounded number of failing creates,
 * not one per call.  Once threads can be created again, the cookies
 * complete.  pthread_create() is wrapped here (ld --wrap) and fails while
 * `fail_create` is set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <treercu/rcu.h>

#include "check.h"
#define FAIL_WRAP_PTHREAD_CREATE
#include "fail_wrap.h"

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int main(void)
{
	struct trcu_gp_oldstate full;
	unsigned long cookie = 0;
	long calls = 0, t0, elapsed, fails;

	trcu_register_thread();
	atomic_store(&fail_create, true);
	t0 = now_ms();
	/* 100 ms of requests and polls. */
	while (now_ms() - t0 < 100) {
		for (int i = 0; i < 100; i++) {
			cookie = trcu_start_poll_synchronize_rcu();
			trcu_start_poll_synchronize_rcu_full(&full);
			(void)trcu_poll_state_synchronize_rcu(cookie);
			calls += 2;
		}
	}
	elapsed = now_ms() - t0;
	fails = atomic_load(&failed_creates);
	printf("%ld start_poll calls in %ld ms made %ld failing pthread_create() calls\n",
	       calls, elapsed, fails);
	CHECK(fails > 0);
	/* One per 10 ms, and a few for the offload and workqueue threads'
	 * own (separately limited) tries. */
	CHECK(fails <= elapsed / 10 + 8);
	atomic_store(&fail_create, false);
	for (int i = 0; i < 10000 && !trcu_poll_state_synchronize_rcu_full(&full); i++) {
		struct timespec ts = { 0, 1000000L };

		nanosleep(&ts, NULL);
	}
	CHECK(trcu_poll_state_synchronize_rcu(cookie));
	CHECK(trcu_poll_state_synchronize_rcu_full(&full));
	trcu_unregister_thread();
	printf("test_gp_kthread_start_rate_limited: OK\n");
	return 0;
}
