/* SPDX-License-Identifier: MIT */
/*
 * fork() while work items are queued, running, armed on timers, and being
 * queued by another thread: the child can queue every one of them again,
 * flush, delay, destroy and exit, and no item queued before the fork runs
 * in the child.
 *
 * Under AddressSanitizer (FORK_CHILD_ASAN) the fork waits until no library
 * thread allocates: the queuer is parked and the workqueue's worker creation
 * has settled (no worker created for 50 ms, longer than the stall watchdog's
 * 2 ms), since a worker being created holds an ASan allocator lock that the
 * child would inherit held (docs/decisions.md, "fork() tests under
 * AddressSanitizer").  The normal build forks wherever the queuer is.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <treercu/rcu.h>
#include <treercu/workqueue.h>

#include "check.h"
#include "fork_child.h"

#define NR_ITEMS 32

static struct trcu_workqueue *wq, *wq_reclaim, *owq;
static struct trcu_work blocker, behind;
static atomic_bool blocker_hold;
static atomic_int behind_runs;

/* Runs on the ordered workqueue until released: `behind` waits on its
 * inactive list at the fork. */
static void blocker_fn(struct trcu_work *w)
{
	(void)w;
	while (atomic_load(&blocker_hold))
		usleep(1000);
}

static void behind_fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&behind_runs, 1);
}
static struct trcu_work items[NR_ITEMS], slow;
static struct trcu_delayed_work delayed;
static atomic_int item_runs, slow_runs, delayed_runs;
static atomic_bool stop;

static void item_fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&item_runs, 1);
}

static void slow_fn(struct trcu_work *w)
{
	(void)w;
	usleep(20 * 1000);
	atomic_fetch_add(&slow_runs, 1);
}

static void delayed_fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&delayed_runs, 1);
}

static void *queuer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		fork_child_park_point();
		for (int i = 0; i < NR_ITEMS; i++)
			trcu_queue_work(i % 2 ? wq : wq_reclaim, &items[i]);
		trcu_queue_work(wq, &slow);
		usleep(100);
	}
	fork_child_park_exit();
	return NULL;
}

/* ASan builds: no worker created for 50 ms (at most 5 s of waiting). */
static void wq_creation_settle(void)
{
	struct trcu_wq_stats st;
	unsigned long last = ~0UL;
	int still = 0;

	if (!FORK_CHILD_ASAN)
		return;
	for (int i = 0; i < 1000 && still < 10; i++) {
		trcu_wq_get_stats(&st);
		still = st.workers_created == last ? still + 1 : 0;
		last = st.workers_created;
		usleep(5000);
	}
}

#define FAIL(...) do { fprintf(stderr, "child: " __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

static int child(int items_at_fork, int slow_at_fork, int delayed_at_fork, int behind_at_fork)
{
	fork_child_arm_timeout();
	/* The delayed work armed before the fork does not fire here. */
	usleep(300 * 1000);
	if (atomic_load(&delayed_runs) != delayed_at_fork)
		FAIL("a delayed work armed before the fork ran in the child");
	if (atomic_load(&item_runs) != items_at_fork || atomic_load(&slow_runs) != slow_at_fork)
		FAIL("work queued before the fork ran in the child");
	/* Queued (inactive) and running at the fork: idle in the child. */
	if (atomic_load(&behind_runs) != behind_at_fork)
		FAIL("an item waiting at the fork ran in the child");
	atomic_store(&blocker_hold, false);
	if (!trcu_queue_work(owq, &blocker) || !trcu_queue_work(owq, &behind))
		FAIL("an item queued or running at the fork cannot be queued in the child");
	trcu_flush_workqueue(owq);
	if (atomic_load(&behind_runs) != behind_at_fork + 1)
		FAIL("the item queued again in the child did not run once");
	/* The queuer thread may have been inside trcu_queue_work() on any of
	 * these at the fork (pending, on no list yet): idle in the child. */
	for (int i = 0; i < NR_ITEMS; i++)
		if (!trcu_queue_work(i % 2 ? wq : wq_reclaim, &items[i]))
			FAIL("item %d, queued before the fork, cannot be queued in the child", i);
	trcu_flush_workqueue(wq);
	trcu_flush_workqueue(wq_reclaim);
	if (atomic_load(&item_runs) != items_at_fork + NR_ITEMS)
		FAIL("%d of %d items ran after the flushes", atomic_load(&item_runs) - items_at_fork,
		     NR_ITEMS);
	if (!trcu_queue_work(wq, &slow))
		FAIL("the slow item, queued or running at the fork, cannot be queued in the child");
	trcu_flush_work(&slow);
	if (!trcu_queue_delayed_work(wq, &delayed, 1000))
		FAIL("the delayed work armed before the fork cannot be armed in the child");
	trcu_flush_delayed_work(&delayed);
	if (atomic_load(&delayed_runs) != delayed_at_fork + 1)
		FAIL("delayed work ran %d times", atomic_load(&delayed_runs) - delayed_at_fork);
	if (!trcu_queue_work(trcu_system_unbound_wq(), &items[0]))
		FAIL("system_unbound_wq refused work");
	trcu_flush_work(&items[0]);
	synchronize_rcu();
	CHECK(trcu_destroy_workqueue(wq) == 0);
	CHECK(trcu_destroy_workqueue(owq) == 0);
	return 0;
}

int main(void)
{
	pthread_t q;
	pid_t pid;

	alarm(120);
	wq = trcu_alloc_workqueue("forkwq", 0, 0);
	wq_reclaim = trcu_alloc_workqueue("forkwq_reclaim", TRCU_WQ_MEM_RECLAIM | TRCU_WQ_UNBOUND, 0);
	owq = trcu_alloc_ordered_workqueue("forkwq_ordered", 0);
	CHECK(wq && wq_reclaim && owq);
	trcu_init_work(&blocker, blocker_fn);
	trcu_init_work(&behind, behind_fn);
	for (int i = 0; i < NR_ITEMS; i++)
		trcu_init_work(&items[i], item_fn);
	trcu_init_work(&slow, slow_fn);
	trcu_init_delayed_work(&delayed, delayed_fn);
	synchronize_rcu();
	CHECK(pthread_create(&q, NULL, queuer, NULL) == 0);
	for (int f = 0; f < 3; f++) {
		usleep(30 * 1000);
		CHECK(trcu_queue_delayed_work(wq, &delayed, 200 * 1000));
		atomic_store(&blocker_hold, true);
		CHECK(trcu_queue_work(owq, &blocker));
		CHECK(trcu_queue_work(owq, &behind));
		fork_child_park(1);
		wq_creation_settle();
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			exit(child(atomic_load(&item_runs), atomic_load(&slow_runs),
				   atomic_load(&delayed_runs), atomic_load(&behind_runs)));
		fork_child_unpark();
		atomic_store(&blocker_hold, false);
		if (fork_child_wait(pid, "child using the workqueue"))
			CHECK_FAIL_EXIT();
		/* The parent's delayed work runs, once. */
		trcu_flush_delayed_work(&delayed);
		CHECK_EQ(atomic_load(&delayed_runs), f + 1);
		trcu_flush_workqueue(owq);
		CHECK_EQ(atomic_load(&behind_runs), f + 1);
	}
	atomic_store(&stop, true);
	pthread_join(q, NULL);
	trcu_flush_workqueue(wq);
	printf("3 forks with work queued, running and on timers: each child queued, "
	       "flushed, delayed and exited; parent's delayed work ran once per fork\n");
	return 0;
}
