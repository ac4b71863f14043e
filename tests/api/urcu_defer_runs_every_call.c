/* SPDX-License-Identifier: MIT */
/*
 * A liburcu defer_rcu() program: every deferred call runs exactly once,
 * after a grace period, without the caller doing anything more.  Threads
 * defer thousands of calls each (more than one batch) and unregister
 * (liburcu requires it before a thread exits); rcu_defer_barrier() returns
 * once every call made before it has run.  A lone call from a thread that then sleeps runs by itself
 * within seconds (liburcu's defer thread flushes a partial queue; treercu's
 * batch is sealed by a callback), and so does the thread's next call once
 * the first has run.  A call deferred while a reader holds a section does
 * not run until that reader leaves.  A fork child's calls run in the child
 * (its parent's pending batch is not the child's).  Written against
 * liburcu's API only (<urcu.h>, <urcu-defer.h>).
 */
#include <urcu.h>
#include <urcu-defer.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define CALLS 10007

static unsigned char ran[THREADS][CALLS];
static long dup_runs, lone_ran, lone_again_ran, guarded_ran;
#ifndef URCU_API_TEST_NO_FORK
static long child_ran;
#endif
static int reader_in, reader_release;

static void fail(const char *what)
{
	fprintf(stderr, "urcu_defer_runs_every_call: %s\n", what);
	abort();
}

static void mark(void *p)
{
	unsigned char *c = p;

	if (__atomic_fetch_add(c, 1, __ATOMIC_RELAXED))
		__atomic_fetch_add(&dup_runs, 1, __ATOMIC_RELAXED);
}

static void set_flag(void *p)
{
	__atomic_store_n((long *)p, 1, __ATOMIC_RELEASE);
}

static void *deferrer(void *arg)
{
	long t = (long)arg;

	rcu_register_thread();
	if (rcu_defer_register_thread())
		fail("rcu_defer_register_thread() failed");
	for (long i = 0; i < CALLS; i++)
		defer_rcu(mark, &ran[t][i]);
	rcu_defer_unregister_thread();
	rcu_unregister_thread();
	return NULL;
}

static void *lone(void *arg)
{
	(void)arg;
	rcu_register_thread();
	if (rcu_defer_register_thread())
		fail("rcu_defer_register_thread() failed");
	defer_rcu(set_flag, &lone_ran);
	/* No barrier, no other call: the call must run by itself. */
	while (!__atomic_load_n(&lone_ran, __ATOMIC_ACQUIRE))
		usleep(1000);
	/* Its batch has run and gone: the next call starts another. */
	defer_rcu(set_flag, &lone_again_ran);
	while (!__atomic_load_n(&lone_again_ran, __ATOMIC_ACQUIRE))
		usleep(1000);
	rcu_defer_unregister_thread();
	rcu_unregister_thread();
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	rcu_read_lock();
	__atomic_store_n(&reader_in, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&reader_release, __ATOMIC_ACQUIRE))
		usleep(1000);
	rcu_read_unlock();
	rcu_unregister_thread();
	return NULL;
}

static long wait_flag(long *flag, int ms)
{
	for (int i = 0; i < ms && !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

int main(void)
{
	pthread_t th[THREADS], l, r;

	alarm(120);
	rcu_register_thread();
	if (rcu_defer_register_thread())
		fail("rcu_defer_register_thread() failed");

	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, deferrer, (void *)t);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	rcu_defer_barrier();
	for (int t = 0; t < THREADS; t++)
		for (int i = 0; i < CALLS; i++)
			if (__atomic_load_n(&ran[t][i], __ATOMIC_RELAXED) != 1)
				fail("a deferred call had not run once when rcu_defer_barrier() returned");
	if (dup_runs)
		fail("a deferred call ran twice");

	pthread_create(&l, NULL, lone, NULL);
	if (!wait_flag(&lone_ran, 10000))
		fail("a lone deferred call did not run within 10 s");
	if (!wait_flag(&lone_again_ran, 10000))
		fail("a thread's next lone deferred call did not run within 10 s");
	pthread_join(l, NULL);

	pthread_create(&r, NULL, reader, NULL);
	while (!__atomic_load_n(&reader_in, __ATOMIC_ACQUIRE))
		usleep(1000);
	defer_rcu(set_flag, &guarded_ran);
	if (wait_flag(&guarded_ran, 200))
		fail("a deferred call ran while a reader that began before it held its section");
	__atomic_store_n(&reader_release, 1, __ATOMIC_RELEASE);
	pthread_join(r, NULL);
	rcu_defer_barrier();
	if (!__atomic_load_n(&guarded_ran, __ATOMIC_ACQUIRE))
		fail("rcu_defer_barrier() returned before the call ran");

#ifndef URCU_API_TEST_NO_FORK
	/* A call pending in this thread's batch, then a fork: the child's own
	 * call runs in the child by its rcu_defer_barrier(). */
	defer_rcu(set_flag, &guarded_ran);
	{
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			defer_rcu(set_flag, &child_ran);
			rcu_defer_barrier();
			_exit(__atomic_load_n(&child_ran, __ATOMIC_ACQUIRE) ? 0 : 3);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			fail("a fork child's deferred call had not run when its rcu_defer_barrier() returned");
	}
	rcu_defer_barrier();
#endif
	rcu_defer_unregister_thread();
	rcu_unregister_thread();
	printf("%d threads x %d deferred calls ran once each; a lone call ran by itself\n",
	       THREADS, CALLS);
	return 0;
}
