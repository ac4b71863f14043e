/* SPDX-License-Identifier: MIT */
/*
 * trcu_wq_shutdown() while a worker is creating another worker (a worker
 * about to run an item with no idle worker left makes a spare first, with
 * the pool lock dropped): the shutdown neither crashes nor hangs, and every
 * worker thread, the one being created included, is joined.  The new
 * worker is on the pool's list before its thread exists; joining it then
 * would join whatever thread handle its structure held before (none, a
 * thread joined long ago, or in a fork() child a parent's thread whose
 * descriptor a live thread of the child reuses).
 *
 * The window is held open by wrapping pthread_create(): the creation of the
 * spare waits until the shutdown has joined the manager thread (its first
 * join), then 200 ms more.  Two scenarios, each in its own process:
 * trcu_wq_shutdown(), and the same in a fork() child of a process whose
 * workers ran before.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"
#include "subproc.h"
#include "wq/wq_internal.h"   /* worker_thread, to recognise a worker's creation */

int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __real_pthread_join(pthread_t t, void **r);
int __wrap_pthread_join(pthread_t t, void **r);

static atomic_int hold_armed, held, held_done, shutting_down, joined;

/* Every worker thread started and not yet joined, and the joins that
 * failed: a handle that names no thread of this process. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t live[256];
static int nr_live, bad_joins;

static void live_add(pthread_t t)
{
	pthread_mutex_lock(&live_lock);
	CHECK(nr_live < 256);
	live[nr_live++] = t;
	pthread_mutex_unlock(&live_lock);
}

static void live_del(pthread_t t)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < nr_live; i++)
		if (pthread_equal(live[i], t)) {
			live[i] = live[--nr_live];
			break;
		}
	pthread_mutex_unlock(&live_lock);
}

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	int rc;

	if (fn == worker_thread && atomic_exchange(&hold_armed, 0)) {
		atomic_store(&held, 1);
		/* Until the shutdown is past its first join (up to 20 s). */
		for (int i = 0; i < 20000 && !atomic_load(&joined); i++)
			usleep(1000);
		usleep(200 * 1000);
	}
	rc = __real_pthread_create(t, a, fn, arg);
	if (!rc && fn == worker_thread)
		live_add(*t);
	if (atomic_load(&held))
		atomic_store(&held_done, 1);
	return rc;
}

int __wrap_pthread_join(pthread_t t, void **r)
{
	int rc = __real_pthread_join(t, r);

	if (rc) {
		pthread_mutex_lock(&live_lock);
		bad_joins++;
		pthread_mutex_unlock(&live_lock);
	} else {
		live_del(t);
	}
	if (atomic_load(&shutting_down))
		atomic_store(&joined, 1);
	return rc;
}

/* After the shutdown: every worker thread joined, each exactly once. */
static void check_all_joined(void)
{
	/* The held creation has finished (a shutdown that did not wait for it
	 * returned first). */
	CHECK_WITHIN_MS(atomic_load(&held_done), 20000);
	pthread_mutex_lock(&live_lock);
	if (nr_live || bad_joins) {
		fprintf(stderr, "after the shutdown: %d worker thread%s never joined, %d join%s "
			"of a handle naming no thread\n", nr_live, nr_live == 1 ? "" : "s",
			bad_joins, bad_joins == 1 ? "" : "s");
		CHECK_FAIL_EXIT();
	}
	pthread_mutex_unlock(&live_lock);
}

static atomic_int gate, first_running, second_ran;

static void first_fn(struct trcu_work *w)
{
	(void)w;
	atomic_store(&first_running, 1);
	while (!atomic_load(&gate))
		usleep(500);
}

static void second_fn(struct trcu_work *w)
{
	(void)w;
	atomic_store(&second_ran, 1);
}

static void nop_fn(struct trcu_work *w)
{
	(void)w;
}

static struct trcu_work warm, first, second;

/* The workqueue's one pool: its workers, and how many of them are idle. */
static bool pool_has(struct trcu_workqueue *wq, int workers, int idle)
{
	struct worker_pool *pool = wq->pwqs[0]->pool;
	bool ok;

	pthread_mutex_lock(&pool->lock);
	ok = pool->nr_workers == workers && pool->nr_idle == idle;
	pthread_mutex_unlock(&pool->lock);
	return ok;
}

/*
 * One unbound pool with two idle workers X and Y.  `first` runs on X until
 * the gate opens; `second` wakes Y, which, with no idle worker left,
 * creates a spare Z (held in pthread_create()); X then runs `second`.  All
 * work is done, Z's creation is still under way: shut down.
 */
static void open_window(void)
{
	struct trcu_workqueue *wq;

	/* No watchdog help: the stalled pool must not get workers of its own. */
	CHECK(trcu_wq_set_stall_us(10000000) == 0);
	wq = trcu_alloc_workqueue_scope("window", TRCU_WQ_UNBOUND, 0, TRCU_WQ_AFFN_SYSTEM);
	CHECK(wq != NULL);
	trcu_init_work(&warm, nop_fn);
	trcu_init_work(&first, first_fn);
	trcu_init_work(&second, second_fn);
	/* The first item makes the pool's worker create its spare. */
	CHECK(trcu_queue_work(wq, &warm));
	CHECK(trcu_flush_work(&warm) || !trcu_work_pending(&warm));
	CHECK_WITHIN_MS(pool_has(wq, 2, 2), 10000);
	CHECK(trcu_queue_work(wq, &first));
	CHECK_WITHIN_MS(atomic_load(&first_running), 10000);
	atomic_store(&hold_armed, 1);
	CHECK(trcu_queue_work(wq, &second));
	CHECK_WITHIN_MS(atomic_load(&held), 10000);
	atomic_store(&gate, 1);
	CHECK_WITHIN_MS(atomic_load(&second_ran), 10000);
	CHECK(trcu_flush_work(&first) || !trcu_work_pending(&first));
	atomic_store(&shutting_down, 1);
}

static void explicit_shutdown(void)
{
	nr_live = bad_joins = 0;   /* a fork() child: the parent's threads */
	open_window();
	trcu_wq_shutdown();
	check_all_joined();
	exit(0);
}

/*
 * A fork() child whose worker structures are the parent's, recycled with
 * the handles of the parent's threads: glibc gives the child's new threads
 * those threads' descriptors again, so a stale handle names a live thread.
 */
static void fork_child(void)
{
	struct trcu_workqueue *pcpu = trcu_system_wq();
	struct trcu_workqueue *unb = trcu_alloc_workqueue_scope("parent", TRCU_WQ_UNBOUND, 0,
								 TRCU_WQ_AFFN_SYSTEM);
	static struct trcu_work w[8];
	pid_t pid;
	int st;

	CHECK(pcpu && unb);
	for (int i = 0; i < 8; i++) {
		trcu_init_work(&w[i], nop_fn);
		CHECK(i < 4 ? trcu_queue_work_on(i % trcu_wq_nr_cpus(), pcpu, &w[i])
			    : trcu_queue_work(unb, &w[i]));
	}
	for (int i = 0; i < 8; i++)
		trcu_flush_work(&w[i]);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(30);
		explicit_shutdown();
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFSIGNALED(st))
		fprintf(stderr, "fork child killed by signal %d\n", WTERMSIG(st));
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 3);
}

static const struct sp_scenario scenarios[] = {
	{ "explicit_shutdown", explicit_shutdown },
	{ "fork_child", fork_child },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	printf("shutdown while a worker is creating another: no crash, no hang, all joined\n");
	ok &= sp_expect_exit("explicit_shutdown", NULL, 60, 0, NULL, 0);
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
	/* ThreadSanitizer cannot start threads in a multi-threaded fork's child;
	 * AddressSanitizer's allocator is not locked around fork() and the
	 * child can inherit its lock held (common/fork_child.h). */
	ok &= sp_expect_exit("fork_child", NULL, 60, 0, NULL, 0);
#endif
	return ok ? 0 : 1;
}
