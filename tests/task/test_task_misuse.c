/* SPDX-License-Identifier: MIT */
/*
 * Task readers' misuse messages: each aborts naming the task or the worker
 * and what is wrong, instead of hanging or corrupting a list.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <treercu/task.h>

#define CHECK_WANT_DEATH
#include "check.h"

static struct trcu_task t, u;

/* synchronize_rcu() from a task inside its section would wait for itself. */
static void sync_in_task_section(void)
{
	trcu_task_init(&t, 7, "selfwait");
	trcu_task_switch_in(&t);
	trcu_task_read_lock(&t);
	synchronize_rcu();
}

static void barrier_in_task_section(void)
{
	trcu_task_init(&t, 8, "barrier");
	trcu_task_switch_in(&t);
	rcu_read_lock();          /* plain name in task code */
	rcu_barrier();
}

/* The scheduler hooks run outside the worker's own sections. */
static void switch_in_inside_worker_section(void)
{
	trcu_task_init(&t, 9, "hooked");
	rcu_read_lock();
	trcu_task_switch_in(&t);
}

static void switch_out_inside_worker_section(void)
{
	trcu_task_init(&t, 9, "hooked");
	trcu_task_switch_in(&t);
	trcu_task_switch_out(&t);
	rcu_read_lock();          /* the worker's own section (no task in) */
	trcu_task_switch_in(&t);
}

static void two_tasks_switched_in(void)
{
	trcu_task_init(&t, 1, "first");
	trcu_task_init(&u, 2, "second");
	trcu_task_switch_in(&t);
	trcu_task_switch_in(&u);
}

static void switch_out_not_current(void)
{
	trcu_task_init(&t, 1, "first");
	trcu_task_init(&u, 2, "second");
	trcu_task_switch_in(&t);
	trcu_task_switch_out(&u);
}

static void unbalanced_task_unlock(void)
{
	trcu_task_init(&t, 3, "unbalanced");
	trcu_task_switch_in(&t);
	trcu_task_read_unlock(&t);
}

static void task_not_initialised(void)
{
	memset(&t, 0, sizeof(t));
	trcu_task_switch_in(&t);
}

/* The task's memory is freed and reused while it is queued (no
 * trcu_task_exit()): the next walk of its list names it.  The reuse is
 * simulated by overwriting the memory, as the allocator's next user would. */
static void task_freed_while_queued(void)
{
	struct trcu_task *p = malloc(sizeof(*p));

	CHECK(p);
	CHECK(trcu_set_tunable("per_worker_blocked_lists", 1) == 0);
	trcu_task_init(p, 99, "freed");
	trcu_task_switch_in(p);
	trcu_task_read_lock(p);
	trcu_task_switch_out(p);
	memset(p, 0xa5, sizeof(*p));   /* freed and reused */
	synchronize_rcu();             /* the promotion pass walks the list */
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	expect_death(sync_in_task_section,
		     "synchronize_rcu() called by task 'selfwait' (id 7) inside an RCU read-side "
		     "critical section (nesting depth 1): it would wait for itself forever");
	expect_death(barrier_in_task_section,
		     "rcu_barrier() called by task 'barrier' (id 8) inside an RCU read-side "
		     "critical section");
	expect_death(switch_in_inside_worker_section,
		     "trcu_task_switch_in() called inside an RCU read-side critical section of "
		     "worker thread");
	expect_death(switch_out_inside_worker_section,
		     "trcu_task_switch_in() called inside an RCU read-side critical section of "
		     "worker thread");
	expect_death(two_tasks_switched_in,
		     "task 'second' (id 2) switched in on worker thread");
	expect_death(switch_out_not_current,
		     "trcu_task_switch_out(): task 'second' (id 2) is not the task switched in");
	expect_death(unbalanced_task_unlock,
		     "trcu_task_read_unlock() without a matching trcu_task_read_lock() in task "
		     "'unbalanced' (id 3)");
	expect_death(task_not_initialised,
		     "trcu_task_switch_in(): task at");
	expect_death(task_freed_while_queued,
		     "is not a live trcu_task");
	printf("ok\n");
	return 0;
}
