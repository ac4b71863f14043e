/* SPDX-License-Identifier: MIT */
/*
 * fork() of a multi-threaded program with readers, grace periods and
 * callbacks in flight (one fork from inside a read-side section): the child
 * can use every API (read side, synchronize_rcu(), expedited, polled,
 * call_rcu() + rcu_barrier(), rcu_free(), the workqueue, new threads) and
 * exit; callbacks queued before a fork run exactly once, in the parent.
 *
 * Under AddressSanitizer the test's own threads stay out of the allocator
 * around each fork (FORK_CHILD_ASAN, common/fork_child.h): objects come
 * from a static pool, and the updaters are parked at the top of their loop
 * while the main thread forks, and the parent queues no rcu_free() (the
 * library frees those pointers on its own threads, at any time).  Grace
 * periods and callbacks are still in flight at the fork, and the child
 * still uses rcu_free() (docs/decisions.md, "fork() tests under
 * AddressSanitizer").
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>
#include <treercu/workqueue.h>

#include "check.h"
#include "fork_child.h"

#define MAX_IDS (1 << 17)
#define NR_FORKS 4

struct obj {
	struct rcu_head rh;
	int id;
	int alive;     /* 1 while published or in a grace period; 0 once freed */
};

static struct obj *_Atomic gp;
#if FORK_CHILD_ASAN
/* Each id's object, never reused: nothing is freed in the parent. */
static struct obj obj_pool[MAX_IDS];
#endif
static atomic_int runs[MAX_IDS];   /* per id: times its callback ran */
static atomic_int next_id;
static atomic_bool stop;

/* After its grace period: counted, marked dead, freed (in the pool: kept
 * dead). */
static void obj_retire(struct obj *o)
{
	atomic_fetch_add(&runs[o->id], 1);
	o->alive = 0;
#if !FORK_CHILD_ASAN
	free(o);
#endif
}

static void free_cb(struct rcu_head *rh)
{
	struct obj *o = (struct obj *)rh;

	obj_retire(o);
}

static struct obj *obj_new(void)
{
	int id = atomic_fetch_add(&next_id, 1);
	struct obj *o;

	CHECK(id < MAX_IDS);
#if FORK_CHILD_ASAN
	o = &obj_pool[id];
#else
	o = malloc(sizeof(*o));
	CHECK(o);
#endif
	o->id = id;
	o->alive = 1;
	return o;
}

static void read_once(void)
{
	struct obj *o;

	rcu_read_lock();
	o = rcu_dereference(gp);
	if (o && !o->alive) {
		fprintf(stderr, "reader saw a freed object %d\n", o->id);
		CHECK_FAIL_EXIT();
	}
	rcu_read_unlock();
}

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		read_once();
	return NULL;
}

/* Sections long enough that a fork often lands while a GP waits for one. */
static void *slow_reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		rcu_read_lock();
		usleep(1000);
		rcu_read_unlock();
		usleep(200);
	}
	return NULL;
}

static void *updater(void *arg)
{
	long n = 0;

	(void)arg;
	while (!atomic_load(&stop) && atomic_load(&next_id) < MAX_IDS - 1000) {
		struct obj *o;

		fork_child_park_point();
		o = rcu_xchg_pointer(&gp, obj_new());

		switch (n++ % 8) {
		case 0:
			synchronize_rcu();
			obj_retire(o);
			break;
		case 1:
			synchronize_rcu_expedited();
			obj_retire(o);
			break;
		default:
			call_rcu(&o->rh, free_cb);
			break;
		}
		/* Without ASan only: the library frees these on its own
		 * threads, which no park point reaches. */
		if (!FORK_CHILD_ASAN && n % 64 == 0)
			rcu_free(malloc(32));
	}
	fork_child_park_exit();
	return NULL;
}

/* ---- The child -------------------------------------------------------------- */

static atomic_int child_cb_runs;
static atomic_int child_work_runs;

static void child_cb(struct rcu_head *rh)
{
	(void)rh;
	atomic_fetch_add(&child_cb_runs, 1);
}

static void child_work(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&child_work_runs, 1);
}

static void *child_thread(void *arg)
{
	(void)arg;
	read_once();
	synchronize_rcu();
	read_once();
	return NULL;
}

#define FAIL(...) do { fprintf(stderr, "child: " __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

static int child(bool in_section, unsigned long cookie, int *snap)
{
	static struct rcu_head heads[16];
	struct trcu_workqueue *wq;
	struct trcu_work work;
	struct rcu_gp_oldstate full;
	unsigned long c;
	struct trcu_stats st;
	pthread_t t;

	fork_child_arm_timeout();
	if (in_section)
		rcu_read_unlock();
	/* A cookie taken before the fork completes in the child. */
	while (!poll_state_synchronize_rcu(cookie))
		usleep(100);
	read_once();
	synchronize_rcu();
	synchronize_rcu_expedited();
	c = start_poll_synchronize_rcu();
	cond_synchronize_rcu(c);
	if (!poll_state_synchronize_rcu(c))
		FAIL("cond_synchronize_rcu() returned before its cookie completed");
	start_poll_synchronize_rcu_full(&full);
	while (!poll_state_synchronize_rcu_full(&full))
		usleep(100);
	for (int i = 0; i < 16; i++)
		call_rcu(&heads[i], child_cb);
	for (int i = 0; i < 100; i++)
		rcu_free(malloc(64));
	rcu_barrier();
	if (atomic_load(&child_cb_runs) != 16)
		FAIL("%d of 16 callbacks ran by rcu_barrier()", atomic_load(&child_cb_runs));
	trcu_get_stats(&st);
	if (st.frees_done < 100)
		FAIL("%ld of 100 rcu_free() pointers freed by rcu_barrier()", st.frees_done);
	CHECK(pthread_create(&t, NULL, child_thread, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	wq = trcu_alloc_workqueue("forkchild", 0, 0);
	if (!wq)
		FAIL("trcu_alloc_workqueue() failed");
	trcu_init_work(&work, child_work);
	CHECK(trcu_queue_work(wq, &work));
	trcu_flush_work(&work);
	CHECK(trcu_queue_work(trcu_system_wq(), &work));
	trcu_flush_work(&work);
	if (atomic_load(&child_work_runs) != 2)
		FAIL("%d of 2 work items ran", atomic_load(&child_work_runs));
	CHECK(trcu_destroy_workqueue(wq) == 0);
	/* No callback queued before the fork ran in the child. */
	for (int i = 0; i < MAX_IDS; i++)
		if (atomic_load(&runs[i]) != snap[i])
			FAIL("callback of object %d, queued before the fork, ran in the child", i);
	return 0;
}

int main(void)
{
	pthread_t rd[2], slow, up[2];
	static int snap[MAX_IDS];

	alarm(240);
	rcu_assign_pointer(gp, obj_new());
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&rd[i], NULL, reader, NULL) == 0);
	CHECK(pthread_create(&slow, NULL, slow_reader, NULL) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&up[i], NULL, updater, NULL) == 0);
	for (int f = 0; f < NR_FORKS; f++) {
		bool in_section = f % 2 == 1;
		unsigned long cookie;
		pid_t pid;

		usleep(50 * 1000);
		cookie = start_poll_synchronize_rcu();
		/* Before the read-side section: a parked updater is in no
		 * synchronize_rcu() that would wait for it. */
		fork_child_park(2);
		if (in_section)
			rcu_read_lock();
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			for (int i = 0; i < MAX_IDS; i++)
				snap[i] = atomic_load(&runs[i]);
			exit(child(in_section, cookie, snap));
		}
		fork_child_unpark();
		if (in_section)
			rcu_read_unlock();
		if (fork_child_wait(pid, in_section ? "child forked inside a read-side section"
						    : "child of a multi-threaded parent"))
			CHECK_FAIL_EXIT();
		/* The parent's own cookie is unaffected. */
		while (!poll_state_synchronize_rcu(cookie))
			usleep(100);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++) {
		pthread_join(rd[i], NULL);
		pthread_join(up[i], NULL);
	}
	pthread_join(slow, NULL);
	{
		struct obj *last = rcu_xchg_pointer(&gp, NULL);

		call_rcu(&last->rh, free_cb);
	}
	rcu_barrier();
	for (int i = 0; i < atomic_load(&next_id); i++)
		if (atomic_load(&runs[i]) != 1) {
			fprintf(stderr, "object %d: freed %d times in the parent (want 1)\n", i,
				atomic_load(&runs[i]));
			CHECK_FAIL_EXIT();
		}
	printf("%d forks (%d inside a read-side section): every child used every API and "
	       "exited; %d objects freed exactly once in the parent\n", NR_FORKS, NR_FORKS / 2,
	       atomic_load(&next_id));
	return 0;
}
