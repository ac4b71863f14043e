/* SPDX-License-Identifier: MIT */
/*
 * A program that creates its child without fork() (a raw clone system call,
 * which runs no pthread_atfork() handlers) keeps treercu usable in the child
 * with trcu_before_fork(), trcu_after_fork_parent() and
 * trcu_after_fork_child().  With the argument "no-calls" it leaves the calls
 * out, and its child must hang (the test then fails: ctest expects it to).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "check.h"
#include "fork_child.h"

static atomic_int child_runs, parent_runs;
static atomic_bool stop;

static void cb_parent(struct rcu_head *rh)
{
	(void)rh;
	atomic_fetch_add(&parent_runs, 1);
}

static void cb_child(struct rcu_head *rh)
{
	(void)rh;
	atomic_fetch_add(&child_runs, 1);
}

/* Keeps a second thread registered and grace periods going. */
static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		rcu_read_lock();
		usleep(500);
		rcu_read_unlock();
		synchronize_rcu();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	bool calls = !(argc > 1 && !strcmp(argv[1], "no-calls"));
	static struct rcu_head h[8], hc;
	pthread_t t;
	pid_t pid;

	alarm(60);
	CHECK(pthread_create(&t, NULL, busy, NULL) == 0);
	for (int i = 0; i < 8; i++)
		call_rcu(&h[i], cb_parent);
	rcu_barrier();
	usleep(10 * 1000);
	if (calls)
		trcu_before_fork();
	/* No atfork handlers run for a raw clone(SIGCHLD). */
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	CHECK(pid >= 0);
	if (pid == 0) {
		if (calls)
			trcu_after_fork_child();
		fork_child_arm_timeout();
		call_rcu(&hc, cb_child);
		rcu_barrier();
		synchronize_rcu();
		_exit(atomic_load(&child_runs) == 1 ? 0 : 1);
	}
	if (calls)
		trcu_after_fork_parent();
	if (fork_child_wait(pid, calls ? "child with the explicit calls"
				       : "child without the explicit calls"))
		CHECK_FAIL_EXIT();
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	CHECK_EQ(atomic_load(&parent_runs), 8);
	printf("raw clone with trcu_before_fork()/trcu_after_fork_*(): child used "
	       "call_rcu + rcu_barrier + synchronize_rcu and exited\n");
	return 0;
}
