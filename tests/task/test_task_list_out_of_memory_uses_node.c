/* SPDX-License-Identifier: MIT */
/*
 * A worker whose blocked-task list cannot be allocated (out of memory) is
 * no abort: the task switched out inside its section goes to its leaf
 * node's list (the kernel's placement, which allocates nothing), holds the
 * grace periods that started before its unlock, and releases them when it
 * unlocks on resuming.  posix_memalign() (the worker list's allocation) is
 * wrapped here (ld --wrap) and fails while `fail_memalign` is set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <treercu/task.h>

#include "check.h"
#define FAIL_WRAP_POSIX_MEMALIGN
#include "fail_wrap.h"
#include "task.h"

int main(void)
{
	struct rcu_task_stats_snap a, b;
	struct trcu_task t;
	unsigned long cookie;

	signal(SIGALRM, check_hang_handler);
	alarm(60);
	trcu_task_init(&t, 1, "oom-task");
	rcu_task_stats_get(&a);

	check_phase = "switch-out inside a section, no memory for the worker list";
	atomic_store(&fail_memalign, true);
	trcu_task_switch_in(&t);
	trcu_task_read_lock(&t);
	trcu_task_switch_out(&t);
	atomic_store(&fail_memalign, false);
	CHECK(atomic_load(&failed_memaligns) > 0);
	rcu_task_stats_get(&b);
	CHECK(b.enq_node == a.enq_node + 1);
	CHECK(b.enq_worker == a.enq_worker);

	check_phase = "the queued task holds the grace period";
	cookie = start_poll_synchronize_rcu();
	for (int i = 0; i < 50; i++) {
		usleep(1000);
		CHECK(!poll_state_synchronize_rcu(cookie));
	}

	check_phase = "its unlock ends the grace period";
	trcu_task_switch_in(&t);
	trcu_task_read_unlock(&t);
	trcu_task_switch_out(&t);
	while (!poll_state_synchronize_rcu(cookie))
		usleep(1000);
	synchronize_rcu();
	trcu_task_exit(&t);
	alarm(0);
	printf("ok: %ld allocations refused\n", atomic_load(&failed_memaligns));
	return 0;
}
