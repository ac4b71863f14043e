/* SPDX-License-Identifier: MIT */
/*
 * A program that only polls (start_poll_synchronize_rcu() once, then
 * poll_state_synchronize_rcu() until true) while the GP kthread cannot be
 * started: once threads can be created again, polling starts the kthread
 * and the cookie completes.  Nobody else would drive its grace period (no
 * synchronize_rcu() caller, no callbacks), and the one request was made
 * while the start failed.  pthread_create() is wrapped here (ld --wrap)
 * and fails while `fail_create` is set.  Both cookie forms.
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

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Polls every millisecond for up to 10 s; returns the polls it took. */
static long poll_until_done(unsigned long cookie, struct trcu_gp_oldstate *full)
{
	for (long polls = 1; polls <= 10000; polls++) {
		if (full ? trcu_poll_state_synchronize_rcu_full(full)
			 : trcu_poll_state_synchronize_rcu(cookie))
			return polls;
		sleep_ms(1);
	}
	return -1;
}

int main(void)
{
	struct trcu_gp_oldstate full;
	unsigned long cookie;
	long polls;

	trcu_register_thread();
	atomic_store(&fail_create, true);
	cookie = trcu_start_poll_synchronize_rcu();
	trcu_start_poll_synchronize_rcu_full(&full);
	CHECK(atomic_load(&failed_creates) > 0);
	/* Still failing: polling does not complete, nor crash or hang. */
	for (int i = 0; i < 30; i++) {
		CHECK(!trcu_poll_state_synchronize_rcu(cookie));
		CHECK(!trcu_poll_state_synchronize_rcu_full(&full));
		sleep_ms(1);
	}
	printf("pthread_create() failed %ld times while the program polled\n",
	       atomic_load(&failed_creates));
	atomic_store(&fail_create, false);
	polls = poll_until_done(cookie, NULL);
	printf("threads can be created again: the cookie completed after %ld polls\n", polls);
	CHECK(polls > 0);
	polls = poll_until_done(0, &full);
	printf("the _full cookie completed after %ld more polls\n", polls);
	CHECK(polls > 0);
	trcu_unregister_thread();
	printf("test_poll_retries_gp_kthread_start: OK\n");
	return 0;
}
