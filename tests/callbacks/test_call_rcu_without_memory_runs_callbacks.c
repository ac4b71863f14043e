/* SPDX-License-Identifier: MIT */
/*
 * call_rcu() never aborts for lack of memory or threads: a thread whose
 * callback state cannot be allocated, or a process whose callback-offload
 * threads cannot be started, still has every callback run after a grace
 * period.  posix_memalign() (the per-thread callback state) and
 * pthread_create() (the offload threads) are wrapped here (ld --wrap) and
 * fail while the matching flag is set.
 *
 * 1. No offload thread can start: call_rcu() parks the callback, in a
 *    section or not; it neither runs it on the caller (which may hold a
 *    lock the callback takes) nor waits for a grace period (a reader may
 *    hold the section for long); rcu_barrier() runs it, and an
 *    rcu_barrier() that finds nothing parked while another one's run is in
 *    flight waits for that run.
 * 2. Threads can be created again: call_rcu() starts the offload threads
 *    (tried again every 10 ms), and the parked callbacks run without an
 *    rcu_barrier().
 * 3. No thread can allocate its callback state: threads queue in and out
 *    of sections through the shared queue, and every callback runs.
 * 4. A flood on the shared queue is pushed back: callbacks pending stay
 *    within cb_max_pending.
 * Each in its own process (common/subproc.h), with two more:
 * - trcu_shutdown() runs what was parked while no offload thread ran, and
 *   what those callbacks queue; no offload thread starts after it;
 * - exit() with callbacks parked keeps its status and says why they were
 *   not run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "check.h"
#define FAIL_WRAP_PTHREAD_CREATE
#define FAIL_WRAP_POSIX_MEMALIGN
#include "fail_wrap.h"
#include "subproc.h"

struct obj {
	struct rcu_head rh;
	long v;
};

static _Atomic long freed;

static void free_obj(struct rcu_head *h)
{
	struct obj *o = (struct obj *)h;

	CHECK(o->v == 42);
	o->v = -1;
	free(o);
	atomic_fetch_add(&freed, 1);
}

static void queue_one(bool in_section)
{
	struct obj *o = malloc(sizeof(*o));

	CHECK(o);
	o->v = 42;
	if (in_section)
		rcu_read_lock();
	call_rcu(&o->rh, free_obj);
	if (in_section)
		rcu_read_unlock();
}

#define NR_THREADS 4
#define PER_THREAD 2000

/* Threads made by the test itself: created with the wrap off. */
static void *queuer(void *arg)
{
	(void)arg;
	rcu_register_thread();
	for (int i = 0; i < PER_THREAD; i++)
		queue_one(i & 1);
	rcu_unregister_thread();
	return NULL;
}

#define FLOOD 200000
#define FLOOD_MAX 20000   /* above qhimark (10000): the push-back waits down to it */

static _Atomic long flood_peak;

/* FLOOD callbacks from a thread with no callback state of its own,
 * sampling the callbacks pending. */
static void *flooder(void *arg)
{
	(void)arg;
	for (int i = 0; i < FLOOD; i++) {
		queue_one(false);
		if (i % 100 == 0) {
			struct trcu_stats st = { 0 };

			trcu_get_stats(&st);
			if (st.cbs_pending > atomic_load(&flood_peak))
				atomic_store(&flood_peak, st.cbs_pending);
		}
	}
	return NULL;
}

/* Test threads are created with the real pthread_create(). */
static void spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	CHECK(__real_pthread_create(t, NULL, fn, arg) == 0);
}

static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcu_head lock_head;
static _Atomic int lock_cb_ran;

static void lock_cb(struct rcu_head *h)
{
	(void)h;
	pthread_mutex_lock(&cb_lock);
	atomic_store(&lock_cb_ran, 1);
	pthread_mutex_unlock(&cb_lock);
}

/* A registered reader holding its section for 300 ms. */
static _Atomic int long_reader_in;

static void *long_reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	rcu_read_lock();
	atomic_store(&long_reader_in, 1);
	usleep(300000);
	rcu_read_unlock();
	rcu_unregister_thread();
	return NULL;
}

static void *barrier_thread(void *arg)
{
	(void)arg;
	rcu_barrier();
	return NULL;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void phases(void)
{
	pthread_t th[NR_THREADS], rd, bt;
	long t0;

	rcu_register_thread();

	check_phase = "1: call_rcu() with no offload thread";
	atomic_store(&fail_create, true);
	queue_one(false);
	queue_one(true);
	CHECK(atomic_load(&failed_creates) > 0);
	CHECK(atomic_load(&freed) == 0);     /* parked, not run on the caller */
	rcu_barrier();
	CHECK(atomic_load(&freed) == 2);
	/* The caller holds a lock the callback takes: no deadlock. */
	pthread_mutex_lock(&cb_lock);
	call_rcu(&lock_head, lock_cb);
	pthread_mutex_unlock(&cb_lock);
	rcu_barrier();
	CHECK(atomic_load(&lock_cb_ran) == 1);
	/* A reader holds its section: call_rcu() does not wait for it. */
	spawn(&rd, long_reader, NULL);
	while (!atomic_load(&long_reader_in))
		usleep(1000);
	t0 = now_ms();
	queue_one(false);
	CHECK(now_ms() - t0 < 150);
	/* rcu_barrier() runs it (waiting for the reader); a second one that
	 * finds the queue empty meanwhile waits for that run. */
	spawn(&bt, barrier_thread, NULL);
	usleep(50000);
	rcu_barrier();
	CHECK(atomic_load(&freed) == 3);
	pthread_join(bt, NULL);
	pthread_join(rd, NULL);

	check_phase = "2: parked callbacks run once the offload threads start";
	queue_one(true);
	CHECK(atomic_load(&freed) == 3);
	atomic_store(&fail_create, false);
	usleep(20000);                       /* past the start's retry interval */
	queue_one(false);                    /* starts them */
	while (atomic_load(&freed) < 5)
		usleep(1000);
	rcu_barrier();
	CHECK(atomic_load(&freed) == 5);

	check_phase = "3: threads with no memory for their callback state";
	atomic_store(&fail_memalign, true);
	atomic_store(&fail_create, false);
	for (int i = 0; i < NR_THREADS; i++)
		spawn(&th[i], queuer, NULL);
	for (int i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&failed_memaligns) >= NR_THREADS);
	rcu_barrier();
	CHECK(atomic_load(&freed) == 5 + NR_THREADS * PER_THREAD);

	check_phase = "4: a flood on the shared queue";
	CHECK(trcu_set_tunable("cb_max_pending", FLOOD_MAX) == 0);
	spawn(&th[0], flooder, NULL);
	pthread_join(th[0], NULL);
	CHECK(atomic_load(&flood_peak) <= FLOOD_MAX + 1);
	rcu_barrier();
	CHECK(atomic_load(&freed) == 5 + NR_THREADS * PER_THREAD + FLOOD);
	atomic_store(&fail_memalign, false);

	rcu_unregister_thread();
	fprintf(stderr, "%ld callbacks run, %ld thread creations and %ld allocations refused; "
		"flood peak %ld pending\n", atomic_load(&freed), atomic_load(&failed_creates),
		atomic_load(&failed_memaligns), atomic_load(&flood_peak));
	exit(0);
}

static struct rcu_head chain_head;

/* A callback that queues another. */
static void chain_cb(struct rcu_head *h)
{
	(void)h;
	queue_one(false);
}

static void shutdown_runs_parked(void)
{
	struct trcu_stats st = { 0 };

	atomic_store(&fail_create, true);
	queue_one(true);
	call_rcu(&chain_head, chain_cb);
	CHECK(atomic_load(&freed) == 0);
	trcu_shutdown();
	CHECK(atomic_load(&freed) == 2);    /* the chained one too */
	/* After it: no offload thread starts, and call_rcu() runs the
	 * callback itself, as documented for after trcu_shutdown(). */
	atomic_store(&fail_create, false);
	queue_one(false);
	CHECK(atomic_load(&freed) == 3);
	trcu_get_stats(&st);
	CHECK(st.nocb_threads == 0);
	exit(0);
}

static void exit_with_parked(void)
{
	atomic_store(&fail_create, true);
	queue_one(true);
	exit(7);
}

static const struct sp_scenario scenarios[] = {
	{ "phases", phases },
	{ "shutdown_runs_parked", shutdown_runs_parked },
	{ "exit_with_parked", exit_with_parked },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	ok &= sp_expect_exit("phases", NULL, 60, 0, "allocations refused", 1);
	ok &= sp_expect_exit("shutdown_runs_parked", NULL, 30, 0, NULL, 0);
	ok &= sp_expect_exit("exit_with_parked", NULL, 30, 7,
			     "no callback-offload thread could be started", 1);
	return ok ? 0 : 1;
}
