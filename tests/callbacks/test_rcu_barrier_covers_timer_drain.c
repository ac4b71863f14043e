/* SPDX-License-Identifier: MIT */
/*
 * rcu_barrier() frees every pointer passed to rcu_free() before it, even a
 * block that the drain timer has just sealed and not yet queued: the
 * timer is held (a wrapped call_rcu_core(), up to HOLD_MS) between its
 * seal and its call_rcu() while this thread runs rcu_barrier().
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <treercu/treercu.h>
#include "check.h"

#define HOLD_MS 300

struct trcu_head;
void __real_call_rcu_core(struct trcu_head *head, void (*func)(struct trcu_head *), bool lazy);
void __wrap_call_rcu_core(struct trcu_head *head, void (*func)(struct trcu_head *), bool lazy);

static atomic_int timer_held;

static bool on_drain_timer(void)
{
	char name[16] = "";

	pthread_getname_np(pthread_self(), name, sizeof(name));
	return strcmp(name, "trcu_kvfree") == 0;
}

void __wrap_call_rcu_core(struct trcu_head *head, void (*func)(struct trcu_head *), bool lazy)
{
	if (on_drain_timer() && !atomic_exchange(&timer_held, 1)) {
		struct timespec ts = { 0, HOLD_MS * 1000000L };

		atomic_store(&timer_held, 2);
		nanosleep(&ts, NULL);
	}
	__real_call_rcu_core(head, func, lazy);
}

int main(void)
{
	struct trcu_stats st;

	alarm(60);
	CHECK_EQ(trcu_set_tunable("rcu_free_drain_ms", 1), 0);
	rcu_free(malloc(16));
	/* The timer seals the block after 1 ms and is held before its queueing. */
	CHECK_WITHIN_MS(atomic_load(&timer_held) == 2, 20000);
	rcu_barrier();
	trcu_get_stats(&st);
	if (st.frees_done != st.frees_queued) {
		fprintf(stderr, "rcu_barrier() returned with %ld of %ld rcu_free() pointers freed\n",
			st.frees_done, st.frees_queued);
		return 1;
	}
	printf("rcu_barrier_covers_timer_drain: ok\n");
	return 0;
}
