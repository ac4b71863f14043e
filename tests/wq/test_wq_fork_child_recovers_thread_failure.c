/* SPDX-License-Identifier: MIT */
/*
 * A fork() child whose workqueue threads cannot be started again at its
 * first queueing (pthread_create() fails: thread limit, no memory for a
 * stack) recovers once threads can be created: the wait that follows
 * (flush, flush_work, drain, destroy, flush_delayed, shutdown) tries the
 * start again while it waits, so the queued work runs and the wait
 * returns, delayed items fire once the manager is back, and the failure is
 * said once on stderr.  Without those tries the waits would sleep for
 * ever: no queueing need follow, and the manager, which retries failed
 * creations, is one of the threads missing.  A child that queues in a
 * loop meanwhile tries the start at most every 10 ms, not at every
 * queueing.
 *
 * Also the same failure at first use, without a fork: the workqueue that
 * cannot get its first threads is not created (NULL, errno EAGAIN), and
 * the next allocation once threads can be created works.
 *
 * pthread_create() is wrapped (ld --wrap): it fails for WINDOW_MS from the
 * scenario's fail_for_window() (after `allow` creations, if set).  Each
 * scenario runs in its own process (a hang ends on its alarm); the fork
 * scenarios fork a child of a process whose workers ran before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include <treercu/workqueue.h>

#include "check.h"
#include "fork_child.h"
#include "subproc.h"

#define WINDOW_MS 300
#define CHILD_ALARM_S 6        /* the fork child's own limit */
#define SCENARIO_TIMEOUT_S 20  /* the scenario process's */

int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);

static _Atomic long fail_until_ms;   /* creations fail until then */
static atomic_int allow;             /* ... except the first `allow` of the window */
static atomic_int failed_creates;

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	if (check_now_ms() < atomic_load(&fail_until_ms) && atomic_fetch_sub(&allow, 1) <= 0) {
		atomic_fetch_add(&failed_creates, 1);
		return EAGAIN;
	}
	return __real_pthread_create(t, a, fn, arg);
}

static void fail_for_window(int allowed)
{
	atomic_store(&allow, allowed);
	atomic_store(&failed_creates, 0);
	atomic_store(&fail_until_ms, check_now_ms() + WINDOW_MS);
}

static void wait_window_end(void)
{
	while (check_now_ms() < atomic_load(&fail_until_ms))
		usleep(1000);
}

static struct trcu_workqueue *wq;
static atomic_int runs, delayed_runs;

static void item_fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&runs, 1);
}

static void delayed_fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&delayed_runs, 1);
}

static struct trcu_work item = TRCU_WORK_INITIALIZER(item_fn);
static struct trcu_work other = TRCU_WORK_INITIALIZER(item_fn);
static struct trcu_work sys_item = TRCU_WORK_INITIALIZER(delayed_fn);
static struct trcu_delayed_work delayed;

#define FAIL(...) do { fprintf(stderr, "child: " __VA_ARGS__); fputc('\n', stderr); \
		       _exit(1); } while (0)

/* The workqueue, with workers that ran an item; then quiet, so that no
 * library thread is in the allocator at the fork (common/fork_child.h). */
static void setup(unsigned int flags)
{
	wq = trcu_alloc_workqueue("recover", flags, 0);
	CHECK(wq);
	trcu_init_delayed_work(&delayed, delayed_fn);
	CHECK(trcu_queue_work(wq, &item));
	CHECK(trcu_flush_workqueue(wq) == 0);
	CHECK(atomic_load(&runs) == 1);
	usleep(100 * 1000);
	atomic_store(&runs, 0);
}

/* In the fork child: queue while no thread can be created; the item must
 * not have run a moment later (nothing can run it). */
static void child_queue_in_window(int allowed)
{
	fork_child_in_child = 1;
	signal(SIGALRM, SIG_DFL);
	alarm(CHILD_ALARM_S);
	fail_for_window(allowed);
	if (!trcu_queue_work(wq, &item))
		FAIL("trcu_queue_work() refused (errno %d)", errno);
	usleep(50 * 1000);
	if (!allowed && atomic_load(&runs))
		FAIL("the item ran while no thread could be created");
	if (!atomic_load(&failed_creates))
		FAIL("no thread creation failed: the scenario did not happen");
}

static long t_wait;

static void child_done(const char *what)
{
	long ms = check_now_ms() - t_wait;

	if (atomic_load(&runs) != 1)
		FAIL("%s returned, the item ran %d times (want 1)", what, atomic_load(&runs));
	printf("  child: %s returned after %ld ms (creations failed %d times, for %d ms)\n",
	       what, ms, atomic_load(&failed_creates), WINDOW_MS);
	fflush(stdout);
	exit(0);
}

/* Fork, run @child in the child, end with its verdict. */
static void run_forked(void (*child)(void))
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		child();
		_exit(100);
	}
	_exit(fork_child_wait(pid, "fork child") ? 1 : 0);
}

static void c_flush_workqueue(void)
{
	child_queue_in_window(0);
	t_wait = check_now_ms();
	if (trcu_flush_workqueue(wq))
		FAIL("trcu_flush_workqueue() failed");
	child_done("trcu_flush_workqueue()");
}

static void c_flush_work(void)
{
	child_queue_in_window(0);
	t_wait = check_now_ms();
	if (!trcu_flush_work(&item))
		FAIL("trcu_flush_work() returned false");
	child_done("trcu_flush_work()");
}

static void c_drain(void)
{
	child_queue_in_window(0);
	t_wait = check_now_ms();
	if (trcu_drain_workqueue(wq))
		FAIL("trcu_drain_workqueue() failed");
	child_done("trcu_drain_workqueue()");
}

static void c_destroy(void)
{
	child_queue_in_window(0);
	t_wait = check_now_ms();
	if (trcu_destroy_workqueue(wq))
		FAIL("trcu_destroy_workqueue() failed");
	child_done("trcu_destroy_workqueue()");
}

static void c_shutdown(void)
{
	child_queue_in_window(0);
	t_wait = check_now_ms();
	trcu_wq_shutdown();
	child_done("trcu_wq_shutdown()");
}

/* Only the manager starts; the workers do not (the flag stays set). */
static void c_manager_only(void)
{
	child_queue_in_window(1);
	t_wait = check_now_ms();
	if (trcu_flush_workqueue(wq))
		FAIL("trcu_flush_workqueue() failed");
	child_done("trcu_flush_workqueue() (manager started, workers not)");
}

/* Armed far ahead while the manager (which fires timers) is missing. */
static void c_flush_delayed(void)
{
	fork_child_in_child = 1;
	signal(SIGALRM, SIG_DFL);
	alarm(CHILD_ALARM_S);
	fail_for_window(0);
	if (!trcu_queue_delayed_work(wq, &delayed, 60 * 1000000ull))
		FAIL("trcu_queue_delayed_work() refused (errno %d)", errno);
	if (!atomic_load(&failed_creates))
		FAIL("no thread creation failed: the scenario did not happen");
	t_wait = check_now_ms();
	if (!trcu_flush_delayed_work(&delayed))
		FAIL("trcu_flush_delayed_work() returned false");
	atomic_store(&runs, atomic_load(&delayed_runs));
	child_done("trcu_flush_delayed_work()");
}

/* A short timer armed while the manager is missing fires once a wait
 * (for another item) has started the threads again: no call after it. */
static void c_delayed_fires(void)
{
	fork_child_in_child = 1;
	signal(SIGALRM, SIG_DFL);
	alarm(CHILD_ALARM_S);
	fail_for_window(0);
	if (!trcu_queue_delayed_work(wq, &delayed, 1000))
		FAIL("trcu_queue_delayed_work() refused (errno %d)", errno);
	if (!trcu_queue_work(wq, &other))
		FAIL("trcu_queue_work() refused (errno %d)", errno);
	usleep(50 * 1000);
	if (atomic_load(&delayed_runs) || atomic_load(&runs))
		FAIL("an item ran while no thread could be created");
	t_wait = check_now_ms();
	if (!trcu_flush_work(&other))
		FAIL("trcu_flush_work() returned false");
	for (int i = 0; i < 2000 && !atomic_load(&delayed_runs); i++)
		usleep(1000);
	if (atomic_load(&delayed_runs) != 1)
		FAIL("the delayed item ran %d times within 2 s of the flush (want 1)",
		     atomic_load(&delayed_runs));
	child_done("trcu_flush_work(), then the timer");
}

/* Queueing in a loop while no thread can be created: the start is tried
 * again at most every 10 ms, not at every queueing (each try is one failed
 * pthread_create() per missing thread); the work runs once it can. */
static void c_queue_loop_rate_limited(void)
{
	long calls = 0, t0;
	int tries;

	child_queue_in_window(0);
	t0 = check_now_ms();
	while (check_now_ms() - t0 < 100) {
		/* Taken off again, so that every call queues. */
		if (!trcu_cancel_work(&item) || !trcu_queue_work(wq, &item))
			FAIL("cancel and queue again: not pending, or refused");
		calls++;
	}
	tries = atomic_load(&failed_creates);
	if (tries > 100)
		FAIL("%ld queueings in 100 ms made %d failed thread creations (want at most "
		     "100: one try per 10 ms)", calls, tries);
	printf("  child: %ld queueings in 100 ms, %d failed thread creations\n", calls, tries);
	wait_window_end();
	t_wait = check_now_ms();
	if (trcu_flush_workqueue(wq))
		FAIL("trcu_flush_workqueue() failed");
	child_done("trcu_flush_workqueue() after the queueing loop");
}

static void s_fork_flush_workqueue(void) { setup(0); run_forked(c_flush_workqueue); }
static void s_fork_queue_loop(void) { setup(0); run_forked(c_queue_loop_rate_limited); }
static void s_fork_flush_work_reclaim(void) { setup(TRCU_WQ_MEM_RECLAIM); run_forked(c_flush_work); }
static void s_fork_flush_workqueue_reclaim(void)
{
	setup(TRCU_WQ_MEM_RECLAIM);
	run_forked(c_flush_workqueue);
}
static void s_fork_drain_unbound(void) { setup(TRCU_WQ_UNBOUND); run_forked(c_drain); }
static void s_fork_destroy(void) { setup(0); run_forked(c_destroy); }
static void s_fork_shutdown(void) { setup(TRCU_WQ_MEM_RECLAIM); run_forked(c_shutdown); }
static void s_fork_manager_only(void) { setup(0); run_forked(c_manager_only); }
static void s_fork_flush_delayed(void) { setup(0); run_forked(c_flush_delayed); }
static void s_fork_delayed_fires(void) { setup(0); run_forked(c_delayed_fires); }

/*
 * No fork: the first use of the workqueue while no thread can be created
 * (all of them, or all after the manager).  The allocation fails with
 * EAGAIN, as documented, and leaves nothing half made: once threads can be
 * created the next one works, with its work run and flushed.
 */
static void first_use(int allowed)
{
	struct trcu_workqueue *q, *r;

	fail_for_window(allowed);
	q = trcu_alloc_workqueue("first", 0, 0);
	CHECK(!q && errno == EAGAIN);
	r = trcu_alloc_workqueue("first_reclaim", TRCU_WQ_MEM_RECLAIM, 0);
	CHECK(!r && errno == EAGAIN);
	CHECK(!trcu_system_wq());
	CHECK(atomic_load(&failed_creates) > 0);
	wait_window_end();
	q = trcu_alloc_workqueue("first", 0, 0);
	r = trcu_alloc_workqueue("first_reclaim", TRCU_WQ_MEM_RECLAIM, 0);
	CHECK(q && r);
	CHECK(trcu_queue_work(q, &item));
	CHECK(trcu_queue_work(r, &other));
	CHECK(trcu_schedule_work(&sys_item));
	CHECK(trcu_flush_workqueue(q) == 0);
	CHECK(trcu_flush_workqueue(r) == 0);
	CHECK(trcu_flush_workqueue(trcu_system_wq()) == 0);
	CHECK(atomic_load(&runs) == 2 && atomic_load(&delayed_runs) == 1);
	printf("  first use: allocation refused (EAGAIN) while creations failed (%d), "
	       "works after\n", atomic_load(&failed_creates));
	fflush(stdout);
	exit(0);
}

static void s_first_use(void) { first_use(0); }
static void s_first_use_manager_only(void) { first_use(1); }

static const struct sp_scenario scenarios[] = {
	{ "fork_flush_workqueue", s_fork_flush_workqueue },
	{ "fork_queue_loop", s_fork_queue_loop },
	{ "fork_flush_work_reclaim", s_fork_flush_work_reclaim },
	{ "fork_flush_workqueue_reclaim", s_fork_flush_workqueue_reclaim },
	{ "fork_drain_unbound", s_fork_drain_unbound },
	{ "fork_destroy", s_fork_destroy },
	{ "fork_shutdown", s_fork_shutdown },
	{ "fork_manager_only", s_fork_manager_only },
	{ "fork_flush_delayed", s_fork_flush_delayed },
	{ "fork_delayed_fires", s_fork_delayed_fires },
	{ "first_use", s_first_use },
	{ "first_use_manager_only", s_first_use_manager_only },
	{ NULL, NULL },
};

/* The one line a child prints when its threads cannot be started again. */
#define SAID "could not all be started again"

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	printf("workqueue threads that cannot be created at first use recover when they can\n");
#if !defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer cannot start threads in a multi-threaded fork's
	 * child.  Under AddressSanitizer the parent is quiet at each fork
	 * (setup()): no thread of it is in the allocator. */
	for (const struct sp_scenario *s = scenarios; s->name; s++)
		if (!strncmp(s->name, "fork_", 5))
			ok &= sp_expect_exit(s->name, NULL, SCENARIO_TIMEOUT_S, 0, SAID, 1);
#endif
	ok &= sp_expect_exit("first_use", NULL, SCENARIO_TIMEOUT_S, 0, SAID, 0);
	ok &= sp_expect_exit("first_use_manager_only", NULL, SCENARIO_TIMEOUT_S, 0, SAID, 0);
	return ok ? 0 : 1;
}
