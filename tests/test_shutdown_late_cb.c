/* SPDX-License-Identifier: MIT */
/*
 * A call_rcu() that checks "offload threads stopping?" just before
 * trcu_shutdown() sets it, and pushes its callback after the offload
 * threads have exited, left the callback on its thread's bypass list for
 * good: never run.  With normal_wake_from_gp=0 that callback is a
 * synchronize_rcu() caller's wake-up, and the caller hung
 * (tests/test_shutdown_wakeme.c timed out once in 300 s under load,
 * session 6; 1 of 40 runs with two busy loops beside it).  The test opens
 * the window with a hook between the check and the push (a thread's first
 * call_rcu()) that waits until the offload threads are joined.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "internal.h"

int __real_pthread_join(pthread_t t, void **r);
int __wrap_pthread_join(pthread_t t, void **r);
static _Atomic int in_window, in_shutdown, joined, ran;

/* trcu_shutdown() joins the offload threads first (rcu_nocb_shutdown()). */
int __wrap_pthread_join(pthread_t t, void **r)
{
	int rc = __real_pthread_join(t, r);

	if (atomic_load(&in_shutdown))
		atomic_store(&joined, 1);
	return rc;
}

static void hook(void)
{
	atomic_store(&in_window, 1);
	for (int i = 0; i < 20000 && !atomic_load(&joined); i++)
		usleep(100);
}

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_store(&ran, 1);
}

static void *late_caller(void *arg)
{
	static struct trcu_head h;

	(void)arg;
	call_rcu(&h, cb);
	return NULL;
}

static void warm_cb(struct trcu_head *h) { (void)h; }

int main(void)
{
	static struct trcu_head warm;
	pthread_t t;
	long end;

	call_rcu(&warm, warm_cb);          /* the offload threads start */
	rcu_barrier();
	rcu_state.test_first_cb_hook = hook;
	CHECK_EQ(pthread_create(&t, NULL, late_caller, NULL), 0);
	while (!atomic_load(&in_window))
		usleep(100);
	atomic_store(&in_shutdown, 1);
	trcu_shutdown();
	CHECK(atomic_load(&joined));
	__real_pthread_join(t, NULL);
	end = check_now_ms() + 5000;
	while (!atomic_load(&ran) && check_now_ms() < end)
		usleep(1000);
	printf("test_shutdown_late_cb: callback pushed after the offload threads exited %s\n",
	       atomic_load(&ran) ? "ran" : "NEVER RAN");
	CHECK(atomic_load(&ran));
	return 0;
}
