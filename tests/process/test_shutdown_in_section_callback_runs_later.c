/* SPDX-License-Identifier: MIT */
/*
 * call_rcu() inside a read-side section, pushed after trcu_shutdown() stopped
 * the offload threads and swept their lists: no grace period can be waited
 * for there, so the callback stays queued (with a warning), and runs at the
 * thread's next call_rcu() outside a section, not stay queued for good
 * under a warning that it will not run.  The window (shutdown_window.h) holds
 * the push until 100 ms after the offload threads are joined; the thread's
 * callback state does not exist before its first call_rcu(), so the sweep
 * cannot see this push.
 */
#define _GNU_SOURCE
#include "shutdown_window.h"

static _Atomic int ran_b, ran_c;

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

int main(void)
{
	sw_hook_extra_us = 100000;
	shutdown_window_run(caller);
	printf("test_shutdown_in_section_callback_runs_later: in-section callback %s, later one %s\n",
	       atomic_load(&ran_b) ? "ran" : "NEVER RAN", atomic_load(&ran_c) ? "ran" : "NEVER RAN");
	CHECK_EQ(atomic_load(&ran_c), 1);
	CHECK_EQ(atomic_load(&ran_b), 1);
	return 0;
}
