/* SPDX-License-Identifier: MIT */
/*
 * Process exit never hangs and never changes the exit status, wherever the
 * exiting thread is (in a read-side section, in a callback, in a work item,
 * online in QSBR mode) and whatever the others do (a reader stuck in a
 * section, synchronize_rcu() behind it, a work item that keeps re-queueing
 * itself).  What cannot run at exit is skipped with one line on stderr
 * saying how many; pending callbacks still run at exit when grace periods
 * can end.  Each scenario runs in its own process (tests/common/subproc.h) under a
 * hard alarm.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include <treercu/treercu.h>
#include <treercu/workqueue.h>

#include "subproc.h"

#define NCB 100

static _Atomic int cbs_ran;
static _Atomic int reader_in;
static struct trcu_head heads[NCB];

static void cb_count(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&cbs_ran, 1);
}

/* Registered before treercu's first use, so it runs after treercu's exit
 * handler (atexit runs handlers in reverse order). */
static void report_cbs(void)
{
	fprintf(stderr, "callbacks run by exit: %d\n", atomic_load(&cbs_ran));
}

static void queue_cbs(int n)
{
	for (int i = 0; i < n; i++)
		call_rcu(&heads[i], cb_count);
}

/* A reader that enters a section and stays in it for ms (< 0: for good). */
static void *reader(void *arg)
{
	long ms = (long)arg;

	rcu_read_lock();
	atomic_store(&reader_in, 1);
	if (ms < 0)
		for (;;)
			pause();
	usleep((useconds_t)ms * 1000);
	rcu_read_unlock();
	return NULL;
}

static void start_reader(long ms)
{
	pthread_t t;

	CHECK(pthread_create(&t, NULL, reader, (void *)ms) == 0);
	pthread_detach(t);
	while (!atomic_load(&reader_in))
		usleep(100);
}

/* Normal exit: every pending callback runs first (the documented promise). */
static void sc_cbs_run(void)
{
	atexit(report_cbs);
	queue_cbs(NCB);
	exit(0);
}

/* A reader leaves its section 300 ms after exit began: exit waits for it. */
static void sc_reader_slow(void)
{
	atexit(report_cbs);
	start_reader(300);
	queue_cbs(NCB);
	exit(0);
}

/* A reader sleeps in its section for good: exit skips the callbacks. */
static void sc_reader_stuck(void)
{
	atexit(report_cbs);
	start_reader(-1);
	queue_cbs(3);
	exit(0);
}

/* The main thread returns from main() online in QSBR mode. */
static void sc_qsbr_return(void)
{
	atexit(report_cbs);
	trcu_thread_qsbr();
	queue_cbs(NCB);
	/* As a return from main() does. */
	exit(0);
}

static void sc_exit_in_section(void)
{
	atexit(report_cbs);
	/* The section first: the callback's grace period cannot end before
	 * exit. */
	rcu_read_lock();
	queue_cbs(1);
	exit(3);
}

static void cb_exit5(struct trcu_head *h)
{
	(void)h;
	exit(5);
}

static void sc_exit_from_callback(void)
{
	call_rcu(&heads[0], cb_exit5);
	for (;;)
		pause();
}

static void work_exit6(struct trcu_work *w)
{
	(void)w;
	exit(6);
}

static void sc_exit_from_work(void)
{
	static struct trcu_work w;
	struct trcu_workqueue *wq = trcu_alloc_workqueue("exit6", 0, 0);

	CHECK(wq);
	trcu_init_work(&w, work_exit6);
	CHECK(trcu_queue_work(wq, &w));
	for (;;)
		pause();
}

static struct trcu_workqueue *requeue_wq;
static _Atomic int requeue_runs;

static void work_requeue(struct trcu_work *w)
{
	atomic_fetch_add(&requeue_runs, 1);
	usleep(100);
	trcu_queue_work(requeue_wq, w);
}

static void sc_requeue_work(void)
{
	static struct trcu_work w;

	requeue_wq = trcu_alloc_workqueue("requeue", 0, 0);
	CHECK(requeue_wq);
	trcu_init_work(&w, work_requeue);
	CHECK(trcu_queue_work(requeue_wq, &w));
	while (atomic_load(&requeue_runs) < 10)
		usleep(100);
	exit(0);
}

static void *exit4_later(void *arg)
{
	(void)arg;
	usleep(200000);
	exit(4);
}

/* Another thread exits while the main thread waits in synchronize_rcu()
 * behind a stuck reader. */
static void sc_exit_during_sync(void)
{
	pthread_t t;

	start_reader(-1);
	queue_cbs(2);
	CHECK(pthread_create(&t, NULL, exit4_later, NULL) == 0);
	for (;;)
		synchronize_rcu();
}

/* ... and while it calls synchronize_rcu() and call_rcu() in a loop. */
static void sc_exit_during_sync_busy(void)
{
	static struct trcu_head h[1000];
	pthread_t t;

	CHECK(pthread_create(&t, NULL, exit4_later, NULL) == 0);
	for (unsigned long i = 0;; i++) {
		call_rcu(&h[i % 1000], cb_count);
		if (i % 1000 == 999)
			rcu_barrier();
		synchronize_rcu();
	}
}

static void *barrier_thread(void *arg)
{
	(void)arg;
	rcu_barrier();
	return NULL;
}

/* Another thread waits in rcu_barrier() behind a stuck reader. */
static void sc_exit_during_barrier(void)
{
	pthread_t t;

	start_reader(-1);
	queue_cbs(2);
	CHECK(pthread_create(&t, NULL, barrier_thread, NULL) == 0);
	usleep(100000);
	exit(9);
}

/* _exit() and quick_exit() skip treercu's exit handling altogether. */
static void sc_underscore_exit(void)
{
	start_reader(-1);
	queue_cbs(3);
	rcu_read_lock();
	_exit(7);
}

static void sc_quick_exit(void)
{
	start_reader(-1);
	queue_cbs(3);
	rcu_read_lock();
	quick_exit(8);
}

static const struct sp_scenario scenarios[] = {
	{ "cbs_run", sc_cbs_run },
	{ "reader_slow", sc_reader_slow },
	{ "reader_stuck", sc_reader_stuck },
	{ "qsbr_return", sc_qsbr_return },
	{ "exit_in_section", sc_exit_in_section },
	{ "exit_from_callback", sc_exit_from_callback },
	{ "exit_from_work", sc_exit_from_work },
	{ "requeue_work", sc_requeue_work },
	{ "exit_during_sync", sc_exit_during_sync },
	{ "exit_during_sync_busy", sc_exit_during_sync_busy },
	{ "exit_during_barrier", sc_exit_during_barrier },
	{ "underscore_exit", sc_underscore_exit },
	{ "quick_exit", sc_quick_exit },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	alarm(600);
	printf("test_exit_status: each scenario in its own process, 20 s alarm\n");
	ok &= sp_expect_exit("cbs_run", NULL, 20, 0, "callbacks run by exit: 100", 1);
	ok &= sp_expect_exit("reader_slow", NULL, 20, 0, "callbacks run by exit: 100", 1);
	ok &= sp_expect_exit("reader_stuck", NULL, 20, 0, "exit: 3 callbacks not run", 1);
	ok &= sp_expect_exit("qsbr_return", NULL, 20, 0, "callbacks run by exit: 100", 1);
	ok &= sp_expect_exit("exit_in_section", NULL, 20, 3, "exit: 1 callback not run", 1);
	ok &= sp_expect_exit("exit_from_callback", NULL, 20, 5, NULL, 0);
	ok &= sp_expect_exit("exit_from_work", NULL, 20, 6, NULL, 0);
	ok &= sp_expect_exit("requeue_work", NULL, 20, 0, "work item", 1);
	ok &= sp_expect_exit("exit_during_sync", NULL, 20, 4, "exit: 2 callbacks not run", 1);
	ok &= sp_expect_exit("exit_during_sync_busy", NULL, 20, 4, NULL, 0);
	ok &= sp_expect_exit("exit_during_barrier", NULL, 20, 9, "exit: 2 callbacks not run", 1);
	ok &= sp_expect_exit("underscore_exit", NULL, 20, 7, NULL, 0);
	ok &= sp_expect_exit("quick_exit", NULL, 20, 8, NULL, 0);
	if (!ok) {
		printf("test_exit_status: FAILED\n");
		return 1;
	}
	printf("test_exit_status: every scenario exited with its own status, none hung\n");
	return 0;
}
