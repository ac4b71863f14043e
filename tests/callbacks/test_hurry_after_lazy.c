/* SPDX-License-Identifier: MIT */
/*
 * A hurried callback queued after lazy ones of the same thread does not
 * wait for the lazy flush: synchronize_rcu() on the wakeme path (whose
 * wake-up is a hurried callback) and call_rcu_hurry() both return within a
 * grace period's time although lazy=1 and lazy callbacks of this thread are
 * pending.  lazy_flush_ms is an hour, so waiting for the flush is a hang
 * that the hard alarm reports.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/treercu.h>

#include "check.h"

static const char *volatile step = "start";
static _Atomic int hurried_ran;

static void on_alarm(int sig)
{
	(void)sig;
	(void)!write(2, "test_hurry_after_lazy: FAILED: hung in ", 39);
	(void)!write(2, step, strlen(step));
	(void)!write(2, " (waiting for the lazy flush?)\n", 31);
	_exit(1);
}

static void free_cb(struct trcu_head *h)
{
	free(h);
}

static void hurried_cb(struct trcu_head *h)
{
	free(h);
	atomic_store(&hurried_ran, 1);
}

static void queue_lazy(int n)
{
	for (int i = 0; i < n; i++) {
		struct trcu_head *h = malloc(sizeof(*h));

		CHECK(h != NULL);
		call_rcu(h, free_cb);
	}
}

int main(void)
{
	struct trcu_head *h;

	signal(SIGALRM, on_alarm);
	alarm(60);
	CHECK(trcu_set_tunable("lazy_flush_ms", 3600000) == 0);
	CHECK(trcu_set_tunable("lazy", 1) == 0);
	CHECK(trcu_set_tunable("normal_wake_from_gp", 0) == 0);
	for (int i = 0; i < 20; i++) {
		step = "synchronize_rcu() on the wakeme path after lazy call_rcu()";
		queue_lazy(1 + i % 5);
		synchronize_rcu();
	}
	for (int i = 0; i < 20; i++) {
		step = "call_rcu_hurry() after lazy call_rcu()";
		queue_lazy(1 + i % 5);
		h = malloc(sizeof(*h));
		CHECK(h != NULL);
		atomic_store(&hurried_ran, 0);
		call_rcu_hurry(h, hurried_cb);
		while (!atomic_load(&hurried_ran))
			usleep(100);
	}
	alarm(0);
	printf("test_hurry_after_lazy: 20 wakeme-path synchronize_rcu() and 20 "
	       "call_rcu_hurry() behind lazy callbacks returned without the lazy flush\n");
	return 0;
}
