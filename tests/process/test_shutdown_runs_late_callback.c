/* SPDX-License-Identifier: MIT */
/*
 * A call_rcu() that checks "offload threads stopping?" just before
 * trcu_shutdown() sets it, and pushes its callback after the offload
 * threads have exited, must still see its callback run, not left on its
 * thread's bypass list for good.  With normal_wake_from_gp=0 that callback
 * is a synchronize_rcu() caller's wake-up, and the caller would hang (a
 * narrow window: rarely hit without help under load).  The window
 * (shutdown_window.h) holds the push until the offload threads are joined.
 */
#define _GNU_SOURCE
#include "shutdown_window.h"

static _Atomic int ran;

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

int main(void)
{
	long end;

	shutdown_window_run(late_caller);
	end = check_now_ms() + 5000;
	while (!atomic_load(&ran) && check_now_ms() < end)
		usleep(1000);
	printf("test_shutdown_runs_late_callback: callback pushed after the offload threads exited %s\n",
	       atomic_load(&ran) ? "ran" : "NEVER RAN");
	CHECK(atomic_load(&ran));
	return 0;
}
