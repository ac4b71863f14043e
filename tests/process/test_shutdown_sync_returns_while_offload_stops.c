/* SPDX-License-Identifier: MIT */
/*
 * normal_wake_from_gp=0: a synchronize_rcu() between the offload threads'
 * stop and shutting_down (trcu_shutdown() joining the offload threads)
 * returns after a grace period.  A wakeme wait there would recurse until
 * the stack ran out (SIGSEGV): wakeme -> call_rcu_core() ->
 * call_rcu_after_shutdown() -> synchronize_rcu() -> wakeme...  The
 * after-shutdown path waits for a GP without a callback.  The join
 * is stretched by wrapping pthread_join, as an offload thread waiting for a
 * GP behind a reader would.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>
#include <treercu/rcu.h>

int __real_pthread_join(pthread_t t, void **r);
int __wrap_pthread_join(pthread_t t, void **r);
static _Atomic int in_shutdown, stop;
static _Atomic long calls;

int __wrap_pthread_join(pthread_t t, void **r)
{
	if (atomic_load(&in_shutdown))
		usleep(300000);
	return __real_pthread_join(t, r);
}

static void cb(struct trcu_head *h) { (void)h; }

static void *loop(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		synchronize_rcu();
		atomic_fetch_add(&calls, 1);
	}
	return NULL;
}

int main(void)
{
	static struct trcu_head h;
	pthread_t q;

	setvbuf(stdout, NULL, _IONBF, 0);
	trcu_set_tunable("normal_wake_from_gp", 0);
	call_rcu(&h, cb);
	pthread_create(&q, NULL, loop, NULL);
	usleep(100000);
	printf("calls before shutdown: %ld\n", atomic_load(&calls));
	atomic_store(&in_shutdown, 1);
	trcu_shutdown();
	atomic_store(&stop, 1);
	__real_pthread_join(q, NULL);
	printf("test_shutdown_sync_returns_while_offload_stops: OK, calls %ld\n", atomic_load(&calls));
	return 0;
}
