/* SPDX-License-Identifier: MIT */
/*
 * A thread's pthread key destructors run in key order; treercu's own (its
 * callback state's) marks the state orphaned, and the offload thread may
 * free it from then on.  A later destructor of the same thread that calls
 * call_rcu() must not use the freed state (the thread-local pointer is
 * cleared with the mark; otherwise a heap-use-after-free under ASan).  Its
 * callback must run, on fresh state.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

static pthread_key_t late_key;
static _Atomic int ran;

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran, 1);
}

/* Runs after treercu's destructor (a key created later; glibc runs them
 * in key order). */
static void late_destructor(void *arg)
{
	usleep(50000);             /* the offload thread reaps the orphan */
	call_rcu((struct trcu_head *)arg, cb);
}

static void *thread_fn(void *arg)
{
	static struct trcu_head first;

	call_rcu(&first, cb);      /* this thread's callback state */
	CHECK_EQ(pthread_setspecific(late_key, arg), 0);
	return NULL;
}

int main(void)
{
	static struct trcu_head warm, late;
	pthread_t t;
	long end;

	call_rcu(&warm, cb);       /* treercu's key is created first */
	rcu_barrier();
	CHECK_EQ(pthread_key_create(&late_key, late_destructor), 0);
	CHECK_EQ(pthread_create(&t, NULL, thread_fn, &late), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	end = check_now_ms() + 5000;
	while (atomic_load(&ran) < 3 && check_now_ms() < end) {
		rcu_barrier();
		usleep(1000);
	}
	printf("test_exit_destructor_gets_fresh_rdp: %d of 3 callbacks ran\n", atomic_load(&ran));
	CHECK_EQ(atomic_load(&ran), 3);
	return 0;
}
