/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure: grace periods never allocate, and every call that
 * documents ENOMEM returns it and leaves the library as it was.
 *
 * The test wraps the allocator (-Wl,--wrap=malloc, calloc, realloc,
 * posix_memalign, aligned_alloc: every allocation of the library and of
 * this file) and fails every call while a window is open, counting them.
 * Each case runs in a child process (a fresh library; an abort is reported
 * with the case's name):
 *  - gp_never_allocates: 20 registered threads (the tree must grow), then,
 *    with every allocation failing, synchronize_rcu() on each path,
 *    synchronize_rcu_expedited() and a polled GP complete, and not one
 *    allocation was attempted;
 *  - wakeme_first_use: synchronize_rcu() on the wakeme path, whose first
 *    use sets up callback state, waits on the GP-end futex instead when that
 *    cannot be allocated;
 *  - register_enomem: a registration that needs a bigger rcu_node tree
 *    fails with -1/ENOMEM and leaves the slot count as it was; grace
 *    periods still work; the same registration succeeds once memory is back;
 *  - read_lock_enomem: rcu_read_lock() on a thread it cannot register (no
 *    memory for the tree the slot needs) runs an emergency section, which
 *    holds grace periods; the thread registers at a later section;
 *  - tunable_enomem: trcu_set_tunable("fanout_leaf") and trcu_set_profile()
 *    that need a new tree fail with -1/ENOMEM and keep the old values;
 *  - wq_enomem: the process's first trcu_alloc_workqueue() returns NULL
 *    with ENOMEM, the topology queries -ENOMEM, the first delayed item
 *    (which needs the timer heap) is refused with ENOMEM rather than run at
 *    once; all work once memory is back;
 *  - nth_allocation_fails: a scenario of registrations, callbacks, workqueues (per-CPU
 *    and unbound, immediate and delayed work, flush, destroy), a fan-out
 *    change and grace periods of each kind, run once per allocation it
 *    makes with that one allocation failing: every call returns success or
 *    a documented error, and nothing aborts or hangs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include <treercu/workqueue.h>
#include "check.h"

/* ---- The allocation-failure injector ------------------------------------ */

static _Atomic int fail_all;        /* window open: every allocation fails */
static _Atomic long failed;         /* allocations refused in the window */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);

static _Atomic long fail_nth;       /* > 0: the fail_nth-th allocation from now fails */
static _Atomic long nr_allocs;      /* allocations seen since fail_nth was set */

static int refuse(void)
{
	long nth = atomic_load(&fail_nth);

	if (nth > 0 && atomic_fetch_add(&nr_allocs, 1) + 1 == nth) {
		errno = ENOMEM;
		return 1;
	}
	if (!atomic_load(&fail_all))
		return 0;
	atomic_fetch_add(&failed, 1);
	errno = ENOMEM;
	return 1;
}

void *__wrap_malloc(size_t n)
{
	return refuse() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
	return refuse() ? NULL : __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
	return refuse() ? NULL : __real_realloc(p, n);
}

int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	return refuse() ? ENOMEM : __real_posix_memalign(p, a, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	return refuse() ? NULL : __real_aligned_alloc(a, n);
}

static void window_open(void)
{
	atomic_store(&failed, 0);
	atomic_store(&fail_all, 1);
}

/* Closes the window; returns how many allocations it refused. */
static long window_close(void)
{
	atomic_store(&fail_all, 0);
	return atomic_load(&failed);
}

/* ---- Registered threads that park until told to leave -------------------- */

struct parked {
	pthread_t tid;
	_Atomic int state;     /* 0 start, 1 register now, 2 registered, 3 failed, 4 leave */
	int err;
};

#define MAX_PARKED 64
static struct parked parked[MAX_PARKED];
static int nr_parked;

static void *parked_fn(void *arg)
{
	struct parked *p = arg;

	while (atomic_load(&p->state) == 0)
		usleep(100);
	if (rcu_register_thread()) {
		p->err = errno;
		atomic_store(&p->state, 3);
		while (atomic_load(&p->state) == 3)
			usleep(100);
		if (rcu_register_thread()) {   /* told to try again */
			p->err = errno;
			atomic_store(&p->state, 3);
			return NULL;
		}
	}
	atomic_store(&p->state, 2);
	while (atomic_load(&p->state) != 4)
		usleep(1000);
	rcu_unregister_thread();
	return NULL;
}

static struct parked *park_thread(void)
{
	struct parked *p = &parked[nr_parked++];

	CHECK(nr_parked <= MAX_PARKED);
	CHECK(pthread_create(&p->tid, NULL, parked_fn, p) == 0);
	return p;
}

/* Tell p to register and wait for the outcome: 0 or its errno. */
static int park_register(struct parked *p)
{
	atomic_store(&p->state, 1);
	CHECK_WITHIN_MS(atomic_load(&p->state) >= 2, 30000);
	return atomic_load(&p->state) == 2 ? 0 : p->err;
}

static void park_retry(struct parked *p)
{
	atomic_store(&p->state, 1);
	CHECK_WITHIN_MS(atomic_load(&p->state) == 2, 30000);
}

static void park_register_n(int n)
{
	for (int i = 0; i < n; i++)
		CHECK_EQ(park_register(park_thread()), 0);
}

static void park_release_all(void)
{
	for (int i = 0; i < nr_parked; i++) {
		atomic_store(&parked[i].state, 4);
		CHECK(pthread_join(parked[i].tid, NULL) == 0);
	}
	nr_parked = 0;
}

static struct trcu_stats stats(void)
{
	struct trcu_stats st;

	trcu_get_stats(&st);
	return st;
}

/* ---- Cases ------------------------------------------------------------------ */

static void gp_never_allocates(void)
{
	unsigned long cookie;
	long n;

	CHECK_EQ(rcu_register_thread(), 0);
	/* The wakeme path's first use sets up this thread's callback state
	 * (call_rcu()); that is allocation by call_rcu(), not by GPs. */
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 0), 0);
	synchronize_rcu();
	/* 21 slots and more: more than the first tree's 16, registered
	 * after the last GP, so that the next GP needs the bigger tree. */
	park_register_n(20);
	window_open();
	for (long path = 0; path <= 2; path++) {
		CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", path), 0);
		synchronize_rcu();
		synchronize_rcu();
	}
	synchronize_rcu_expedited();
	cookie = start_poll_synchronize_rcu();
	CHECK_WITHIN_MS(poll_state_synchronize_rcu(cookie), 30000);
	n = window_close();
	printf("  %lu GPs with every allocation failing: %ld allocations attempted, "
	       "tree %d levels for %d slots\n", stats().gp_completed, n, stats().tree_levels,
	       stats().nr_slots);
	CHECK_EQ(n, 0);
	CHECK_EQ(stats().tree_levels, 2);
	park_release_all();
}

/* The wakeme path's first use in the process, which would allocate the
 * offload state and the thread's callback state, waits on the GP-end futex
 * instead when it cannot. */
static void wakeme_first_use(void)
{
	long n;

	CHECK_EQ(rcu_register_thread(), 0);
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 0), 0);
	window_open();
	synchronize_rcu();
	synchronize_rcu();
	n = window_close();
	printf("  2 synchronize_rcu() on the wakeme path with every allocation failing: "
	       "returned (%ld allocations refused)\n", n);
	CHECK(n > 0);
	usleep(20000);       /* past the offload threads' start retry interval */
	synchronize_rcu();   /* and with memory, through a callback */
	CHECK(stats().nocb_threads > 0);
}

static void register_enomem(void)
{
	struct parked *p;
	int slots, levels, err;
	long n;

	CHECK_EQ(rcu_register_thread(), 0);
	park_register_n(31);   /* 32 slots: the tree covers exactly these */
	synchronize_rcu();
	slots = stats().nr_slots;
	levels = stats().tree_levels;
	p = park_thread();
	window_open();
	err = park_register(p);
	synchronize_rcu();
	synchronize_rcu_expedited();
	n = window_close();
	printf("  the 33rd registration with every allocation failing: %s, %ld refused; "
	       "slots %d -> %d\n", err ? strerror(err) : "success", n, slots, stats().nr_slots);
	CHECK_EQ(err, ENOMEM);
	CHECK_EQ(stats().nr_slots, slots);
	CHECK_EQ(stats().tree_levels, levels);
	park_retry(p);
	synchronize_rcu();
	CHECK_EQ(stats().nr_slots, slots + 1);
	park_release_all();
}

/* An unregistered thread whose rcu_read_lock() cannot register it: an
 * emergency section, which grace periods wait for; registered at a later
 * section once memory is back. */
static _Atomic int emerg_step;

static void *emerg_reader(void *arg)
{
	(void)arg;
	rcu_read_lock();                     /* registration refused */
	rcu_read_lock();                     /* nested */
	atomic_store(&emerg_step, 1);
	while (atomic_load(&emerg_step) == 1)
		usleep(1000);
	rcu_read_unlock();
	rcu_read_unlock();
	atomic_store(&emerg_step, 3);
	while (atomic_load(&emerg_step) == 3)
		usleep(1000);
	rcu_read_lock();                     /* memory back: registers */
	rcu_read_unlock();
	atomic_store(&emerg_step, 5);
	while (atomic_load(&emerg_step) == 5)
		usleep(1000);
	return NULL;
}

static void read_lock_enomem(void)
{
	pthread_t t;
	unsigned long ck;
	int slots;
	long n;

	CHECK_EQ(rcu_register_thread(), 0);
	/* 32 slots, which the tree covers exactly: this thread, 30 parked
	 * ones and the GP kthread (started by the polled GP). */
	park_register_n(30);
	cond_synchronize_rcu(start_poll_synchronize_rcu());
	CHECK_WITHIN_MS(stats().nr_slots == 32, 30000);   /* the kthread registered */
	slots = stats().nr_slots;
	window_open();
	CHECK(pthread_create(&t, NULL, emerg_reader, NULL) == 0);
	CHECK_WITHIN_MS(atomic_load(&emerg_step) == 1, 30000);
	n = window_close();
	ck = start_poll_synchronize_rcu();
	usleep(50000);
	CHECK(!poll_state_synchronize_rcu(ck));   /* the section holds it */
	atomic_store(&emerg_step, 2);
	CHECK_WITHIN_MS(atomic_load(&emerg_step) == 3, 30000);
	cond_synchronize_rcu(ck);
	CHECK_EQ(stats().nr_slots, slots);
	atomic_store(&emerg_step, 4);
	CHECK_WITHIN_MS(atomic_load(&emerg_step) == 5, 30000);
	CHECK_EQ(stats().nr_slots, slots + 1);
	atomic_store(&emerg_step, 6);
	printf("  rcu_read_lock() on a new thread with every allocation failing: an "
	       "emergency section that held a grace period (%ld allocations refused)\n", n);
	CHECK(n > 0);
	CHECK(pthread_join(t, NULL) == 0);
	park_release_all();
}

static void tunable_enomem(void)
{
	long v = 0;
	int rc;

	CHECK_EQ(rcu_register_thread(), 0);
	park_register_n(7);
	synchronize_rcu();
	CHECK_EQ(stats().tree_levels, 1);
	window_open();
	errno = 0;
	rc = trcu_set_tunable("fanout_leaf", 4);
	printf("  trcu_set_tunable(\"fanout_leaf\", 4) with every allocation failing: %d (%s)\n",
	       rc, strerror(errno));
	CHECK_EQ(rc, -1);
	CHECK_EQ(errno, ENOMEM);
	synchronize_rcu();
	window_close();
	CHECK_EQ(trcu_get_tunable("fanout_leaf", &v), 0);
	CHECK_EQ(v, 16);
	CHECK_EQ(stats().tree_levels, 1);
	/* With memory, the change takes effect at the next GP. */
	CHECK_EQ(trcu_set_tunable("fanout_leaf", 4), 0);
	synchronize_rcu();
	CHECK_EQ(stats().tree_levels, 2);
	/* A profile whose fan-outs need another tree. */
	window_open();
	errno = 0;
	rc = trcu_set_profile("kernel");
	synchronize_rcu();
	window_close();
	printf("  trcu_set_profile(\"kernel\") with every allocation failing: %d (%s)\n", rc,
	       strerror(errno));
	CHECK_EQ(rc, -1);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(trcu_get_tunable("fanout_leaf", &v), 0);
	CHECK_EQ(v, 4);
	CHECK_EQ(trcu_get_tunable("drive_from_caller", &v), 0);
	CHECK_EQ(v, 1);   /* the treercu profile's, untouched */
	CHECK_EQ(trcu_set_profile("kernel"), 0);
	synchronize_rcu();
	CHECK_EQ(stats().tree_levels, 1);
	park_release_all();
}

static void work_fn(struct trcu_work *w);
static _Atomic int work_runs;

static void wq_enomem(void)
{
	struct trcu_workqueue *wq;
	struct trcu_delayed_work dw;
	int err, ncpu;
	bool armed;

	window_open();
	errno = 0;
	wq = trcu_alloc_workqueue("alloc_test", 0, 0);
	err = errno;
	ncpu = trcu_wq_nr_cpus();
	window_close();
	printf("  first trcu_alloc_workqueue() with every allocation failing: %p (%s); "
	       "trcu_wq_nr_cpus() %d\n", (void *)wq, strerror(err), ncpu);
	CHECK(wq == NULL);
	CHECK_EQ(err, ENOMEM);
	CHECK_EQ(ncpu, -ENOMEM);
	wq = trcu_alloc_workqueue("alloc_test", 0, 0);
	CHECK(wq != NULL);
	CHECK(trcu_wq_nr_cpus() > 0);
	/* The first delayed item needs the timer heap: refused, not run early. */
	TRCU_INIT_DELAYED_WORK(&dw, work_fn);
	atomic_store(&work_runs, 0);
	window_open();
	errno = 0;
	armed = trcu_queue_delayed_work(wq, &dw, 1000000);
	err = errno;
	window_close();
	CHECK_EQ(trcu_flush_workqueue(wq), 0);
	printf("  first trcu_queue_delayed_work() with every allocation failing: %s (%s), "
	       "item ran %d times\n", armed ? "true" : "false", strerror(err),
	       atomic_load(&work_runs));
	CHECK(!armed);
	CHECK_EQ(err, ENOMEM);
	CHECK_EQ(atomic_load(&work_runs), 0);
	CHECK(trcu_queue_delayed_work(wq, &dw, 1000));
	trcu_flush_delayed_work(&dw);
	CHECK_EQ(atomic_load(&work_runs), 1);
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
}

/*
 * Every documented call in a row, each accepting only its documented
 * errors: run once counting allocations, then once per allocation with
 * that one failing (nth_allocation_fails).
 */
static _Atomic int work_runs;

static void work_fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&work_runs, 1);
}

static void scenario_wq(unsigned int flags)
{
	struct trcu_workqueue *wq;
	struct trcu_work w;
	struct trcu_delayed_work dw;
	bool armed;

	errno = 0;
	wq = trcu_alloc_workqueue("nth", flags, 0);
	if (!wq) {
		CHECK(errno == ENOMEM || errno == EAGAIN);
		return;
	}
	TRCU_INIT_WORK(&w, work_fn);
	TRCU_INIT_DELAYED_WORK(&dw, work_fn);
	atomic_store(&work_runs, 0);
	CHECK(trcu_queue_work(wq, &w));
	errno = 0;
	armed = trcu_queue_delayed_work(wq, &dw, 1000);
	CHECK(armed || errno == ENOMEM);
	trcu_flush_delayed_work(&dw);   /* false if it already ran */
	CHECK_EQ(trcu_flush_workqueue(wq), 0);
	CHECK_EQ(atomic_load(&work_runs), armed ? 2 : 1);
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
}

static struct rcu_head scenario_heads[4];
static _Atomic int scenario_cbs;

static void scenario_cb(struct rcu_head *h)
{
	(void)h;
	atomic_fetch_add(&scenario_cbs, 1);
}

static void scenario(void)
{
	struct parked *p;
	int rc, registered = 0;
	unsigned long cookie;

	rc = rcu_register_thread();
	CHECK(rc == 0 || errno == ENOMEM);
	scenario_wq(0);
	scenario_wq(TRCU_WQ_UNBOUND);
	rc = trcu_set_tunable("fanout_leaf", 8);
	CHECK(rc == 0 || errno == ENOMEM);
	for (int i = 0; i < 20; i++) {
		p = park_thread();
		rc = park_register(p);
		CHECK(rc == 0 || rc == ENOMEM);
		if (rc)
			park_retry(p);   /* only one allocation fails */
		registered++;
	}
	synchronize_rcu();
	synchronize_rcu_expedited();
	cookie = start_poll_synchronize_rcu();
	CHECK_WITHIN_MS(poll_state_synchronize_rcu(cookie), 30000);
	/* call_rcu() never fails: each callback runs, wherever it queued. */
	for (int i = 0; i < 4; i++) {
		if (i & 1)
			rcu_read_lock();
		call_rcu(&scenario_heads[i], scenario_cb);
		if (i & 1)
			rcu_read_unlock();
	}
	rcu_barrier();
	CHECK_EQ(atomic_load(&scenario_cbs), 4);
	CHECK_EQ(stats().nr_slots >= registered, 1);
	park_release_all();
	trcu_wq_shutdown();
}

static long scenario_allocs;

static void count_scenario(void)
{
	atomic_store(&fail_nth, LONG_MAX);
	scenario();
	printf("  the scenario makes %ld allocations\n", atomic_load(&nr_allocs));
	fflush(stdout);
	_exit(atomic_load(&nr_allocs) > 250 ? 250 : (int)atomic_load(&nr_allocs));
}

static int run_case_quiet(const char *name, void (*fn)(void));

static int run_case(const char *name, void (*fn)(void))
{
	printf("%s:\n", name);
	if (run_case_quiet(name, fn))
		return 1;
	printf("  ok\n");
	return 0;
}

/* Runs fn in a child; prints only a failure.  1 if it failed. */
static int run_case_quiet(const char *name, void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(60);   /* a hang fails the case (SIGALRM) */
		fn();
		fflush(stdout);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		printf("%s: FAILED: killed by signal %d (%s)\n", name, WTERMSIG(st),
		       strsignal(WTERMSIG(st)));
	else
		printf("%s: FAILED: exit status %d\n", name, WEXITSTATUS(st));
	return 1;
}

static long nth;

static void fail_nth_scenario(void)
{
	atomic_store(&fail_nth, nth);
	scenario();
}

/* The scenario with its 1st, 2nd, ... allocation failing: each run exits 0. */
static int nth_allocation_fails(void)
{
	int st, bad = 0;
	pid_t pid;

	printf("nth_allocation_fails:\n");
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(60);
		count_scenario();
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	scenario_allocs = WEXITSTATUS(st);
	CHECK(scenario_allocs > 0 && scenario_allocs < 250);
	for (nth = 1; nth <= scenario_allocs; nth++) {
		char name[64];

		snprintf(name, sizeof(name), "  allocation %ld of %ld fails", nth, scenario_allocs);
		if (run_case_quiet(name, fail_nth_scenario))
			bad++;
	}
	printf("  %ld runs, %d failed\n", scenario_allocs, bad);
	return bad ? 1 : 0;
}

int main(void)
{
	int bad = 0;

	bad += run_case("gp_never_allocates", gp_never_allocates);
	bad += run_case("wakeme_first_use", wakeme_first_use);
	bad += run_case("register_enomem", register_enomem);
	bad += run_case("read_lock_enomem", read_lock_enomem);
	bad += run_case("tunable_enomem", tunable_enomem);
	bad += run_case("wq_enomem", wq_enomem);
	bad += nth_allocation_fails();
	if (bad) {
		fprintf(stderr, "test_alloc_failure: %d case(s) failed\n", bad);
		return 1;
	}
	printf("ok\n");
	return 0;
}
