/* SPDX-License-Identifier: MIT */
/*
 * call_rcu() inside a read-side section, pushed after trcu_shutdown() stopped
 * the offload threads and swept their lists: no grace period can be waited
 * for there, so the callback stays queued (with a warning), and runs at the
 * thread's next call_rcu() outside a section.  It used to stay queued for
 * good, under a warning that it would not run even when the sweep still
 * could run it (review, session 6).
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
static _Atomic int in_window, in_shutdown, joined, ran_b, ran_c;

int __wrap_pthread_join(pthread_t t, void **r)
{
	int rc = __real_pthread_join(t, r);

	if (atomic_load(&in_shutdown))
		atomic_store(&joined, 1);
	return rc;
}

/* The thread's first call_rcu(): its callback state does not exist yet,
 * so the sweep cannot see this push; wait until the threads are gone. */
static void hook(void)
{
	atomic_store(&in_window, 1);
	for (int i = 0; i < 20000 && !atomic_load(&joined); i++)
		usleep(100);
	usleep(100000);
}

static void cb_b(struct trcu_head *h) { (void)h; atomic_store(&ran_b, 1); }
static void cb_c(struct trcu_head *h) { (void)h; atomic_store(&ran_c, 1); }

static void *caller(void *arg)
{
	static struct trcu_head b, c;

	(void)arg;
	rcu_read_lock();
	call_rcu(&b, cb_b);        /* inside the section: left queued */
	rcu_read_unlock();
	CHECK_EQ(atomic_load(&ran_b), 0);
	call_rcu(&c, cb_c);        /* outside: runs c, then b */
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
	CHECK_EQ(pthread_create(&t, NULL, caller, NULL), 0);
	while (!atomic_load(&in_window))
		usleep(100);
	atomic_store(&in_shutdown, 1);
	trcu_shutdown();
	__real_pthread_join(t, NULL);
	printf("test_shutdown_insection: in-section callback %s, later one %s\n",
	       atomic_load(&ran_b) ? "ran" : "NEVER RAN", atomic_load(&ran_c) ? "ran" : "NEVER RAN");
	CHECK_EQ(atomic_load(&ran_c), 1);
	CHECK_EQ(atomic_load(&ran_b), 1);
	return 0;
}
