/* SPDX-License-Identifier: MIT */
/*
 * A thread's pthread key destructors run in key order, treercu's own
 * (created at the library's first use) before a key the program creates
 * later.  Such a later destructor may wait for grace periods:
 * synchronize_rcu(), synchronize_rcu_expedited() and rcu_barrier() there
 * return (the library's exit destructor left the thread marked for good,
 * which is not a signal handler interrupting the library), and so does
 * exit() with the thread's callbacks run.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <treercu/rcu.h>
#include "check.h"

static pthread_key_t late_key;
static _Atomic int waited, ran;

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran, 1);
}

static void late_destructor(void *arg)
{
	synchronize_rcu();
	synchronize_rcu_expedited();
	call_rcu((struct trcu_head *)arg, cb);
	rcu_barrier();
	atomic_store(&waited, 1);
}

static void *thread_fn(void *arg)
{
	rcu_read_lock();          /* registers the thread */
	rcu_read_unlock();
	pthread_setspecific(late_key, arg);
	return NULL;
}

int main(void)
{
	static struct trcu_head head;
	pthread_t t;

	synchronize_rcu();        /* the library's key first */
	CHECK_EQ(pthread_key_create(&late_key, late_destructor), 0);
	CHECK_EQ(pthread_create(&t, NULL, thread_fn, &head), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK(atomic_load(&waited));
	CHECK_EQ(atomic_load(&ran), 1);
	printf("test_key_destructor_after_exit_may_wait: OK\n");
	return 0;
}
