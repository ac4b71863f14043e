/* SPDX-License-Identifier: MIT */
/*
 * The application's own pthread_atfork() handlers may use treercu in every
 * step, whenever they were registered: before the library's first use (a
 * program that registers its handlers early in main()) or after it.  Each
 * step reads, waits for grace periods (normal and expedited), queues a
 * callback and waits for it with rcu_barrier().  treercu's own handlers are
 * registered when the library is loaded, so that its prepare step (which
 * takes the library's locks) runs after every handler registered since,
 * and its parent and child steps before them; registered at first use, a
 * prepare handler registered before that hung the fork in its first
 * synchronize_rcu().  A hang fails on the alarm.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "check.h"

struct obj {
	struct rcu_head rh;
	int v;
};

static struct obj *_Atomic shared;
static atomic_int freed, steps[2][3];   /* [handler set][prepare, parent, child] */
static _Atomic bool stop;

static void free_obj(struct rcu_head *rh)
{
	free((struct obj *)rh);
	atomic_fetch_add(&freed, 1);
}

/* What a handler does: read, replace and retire, wait. */
static void use_rcu(void)
{
	struct obj *o, *n = malloc(sizeof(*n));

	CHECK(n);
	n->v = 1;
	rcu_read_lock();
	o = rcu_dereference(shared);
	CHECK(!o || o->v == 1);
	rcu_read_unlock();
	o = rcu_xchg_pointer(&shared, n);
	synchronize_rcu();
	synchronize_rcu_expedited();
	if (o)
		call_rcu(&o->rh, free_obj);
	rcu_barrier();
}

#define HANDLERS(set)                                                              \
	static void prepare##set(void) { use_rcu(); atomic_fetch_add(&steps[set][0], 1); } \
	static void parent##set(void) { use_rcu(); atomic_fetch_add(&steps[set][1], 1); }  \
	static void child##set(void) { use_rcu(); atomic_fetch_add(&steps[set][2], 1); }
HANDLERS(0)
HANDLERS(1)

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	while (!atomic_load(&stop)) {
		struct obj *o;

		rcu_read_lock();
		o = rcu_dereference(shared);
		if (o && o->v != 1)
			abort();
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	return NULL;
}

static void fork_and_check(int round)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* The child steps of both sets ran (each after treercu's). */
		if (atomic_load(&steps[0][2]) != 1 || atomic_load(&steps[1][2]) != round)
			_exit(2);
		use_rcu();
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	pthread_t t;

	alarm(60);
	/* Before the library's first use. */
	CHECK(pthread_atfork(prepare0, parent0, child0) == 0);
	rcu_register_thread();
	CHECK(pthread_create(&t, NULL, reader, NULL) == 0);
	use_rcu();
	fork_and_check(0);
	/* After it: both sets. */
	CHECK(pthread_atfork(prepare1, parent1, child1) == 0);
	fork_and_check(1);
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	CHECK(atomic_load(&steps[0][0]) == 2 && atomic_load(&steps[0][1]) == 2);
	CHECK(atomic_load(&steps[1][0]) == 1 && atomic_load(&steps[1][1]) == 1);
	printf("two forks: the application's atfork handlers, registered before and after "
	       "treercu's first use, used RCU in every step; %d objects freed\n",
	       atomic_load(&freed));
	rcu_unregister_thread();
	return 0;
}
