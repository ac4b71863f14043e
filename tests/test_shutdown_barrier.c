/* SPDX-License-Identifier: MIT */
/*
 * rcu_barrier() while trcu_shutdown() is stopping the offload threads must
 * still wait for every callback queued before it.  A call_rcu() that checked
 * "stopping" before it was set and pushed after the offload threads exited
 * leaves its callback to the shutdown's sweep, which first waits for a grace
 * period; rcu_barrier() returned at once when it saw "stopping" (review,
 * session 6).  The window is held open: a hook in the thread's first
 * call_rcu() waits for the offload threads' join, and the join wrapper then
 * holds the shutdown back 200 ms, before it sweeps.
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
static _Atomic int in_window, in_shutdown, joined, ran, ran_at_barrier = -1;

int __wrap_pthread_join(pthread_t t, void **r)
{
	int rc = __real_pthread_join(t, r);

	if (atomic_load(&in_shutdown)) {
		atomic_store(&joined, 1);
		usleep(200000);        /* the sweep comes after this */
	}
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
	call_rcu(&h, cb);          /* pushed before the sweep: the sweep's */
	rcu_barrier();
	atomic_store(&ran_at_barrier, atomic_load(&ran));
	return NULL;
}

static void warm_cb(struct trcu_head *h) { (void)h; }

int main(void)
{
	static struct trcu_head warm;
	pthread_t t;

	call_rcu(&warm, warm_cb);
	rcu_barrier();
	rcu_state.test_first_cb_hook = hook;
	CHECK_EQ(pthread_create(&t, NULL, late_caller, NULL), 0);
	while (!atomic_load(&in_window))
		usleep(100);
	atomic_store(&in_shutdown, 1);
	trcu_shutdown();
	__real_pthread_join(t, NULL);
	printf("test_shutdown_barrier: rcu_barrier() returned with the callback %s\n",
	       atomic_load(&ran_at_barrier) == 1 ? "run" : "NOT RUN YET");
	CHECK_EQ(atomic_load(&ran_at_barrier), 1);
	CHECK_EQ(atomic_load(&ran), 1);
	return 0;
}
