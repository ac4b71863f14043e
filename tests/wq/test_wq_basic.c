/* SPDX-License-Identifier: MIT */
/*
 * Workqueue basics: queue / flush / re-queue / chained re-queue from the
 * item's own function / flush_workqueue / drain / destroy / shutdown, on
 * per-CPU, unbound (every scope), ordered and high-priority workqueues.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"

struct item {
	struct trcu_work work;
	atomic_int runs;
	atomic_int running;     /* concurrent executions seen */
	int rearm;              /* re-queue itself this many times */
	struct trcu_workqueue *wq;
	atomic_bool gate;       /* closed: the function waits until it opens */
};

static atomic_int overlap;
static void item_fn(struct trcu_work *w)
{
	struct item *it = (struct item *)((char *)w - offsetof(struct item, work));

	if (atomic_fetch_add(&it->running, 1) != 0)
		atomic_fetch_add(&overlap, 1);
	CHECK(trcu_current_work() == w);
	while (atomic_load(&it->gate))
		usleep(200);
	atomic_fetch_add(&it->runs, 1);
	atomic_fetch_sub(&it->running, 1);
	if (it->rearm > 0) {
		it->rearm--;
		CHECK(trcu_queue_work(it->wq, w));   /* chained: allowed even while draining */
	}
}

static void basic_on(struct trcu_workqueue *wq, const char *what)
{
	struct item it = { .wq = wq };
	int n = 0;

	check_phase = what;
	TRCU_INIT_WORK(&it.work, item_fn);
	CHECK(!trcu_work_pending(&it.work));
	CHECK(!trcu_flush_work(&it.work));          /* idle: nothing to wait for */

	/* queue, flush: it has run once when flush returns */
	CHECK(trcu_queue_work(wq, &it.work));
	CHECK(trcu_flush_work(&it.work) || atomic_load(&it.runs) == 1);
	CHECK_EQ(atomic_load(&it.runs), 1);
	CHECK(!trcu_work_pending(&it.work));

	/* a pending item: second queue is a no-op returning false.  The first
	 * instance waits at the gate, so the second one stays pending (it cannot
	 * start while the first runs) for as long as the gate is closed. */
	atomic_store(&it.gate, true);
	CHECK(trcu_queue_work(wq, &it.work));       /* starts running, waits */
	CHECK_WITHIN_MS(atomic_load(&it.running), 10000);
	CHECK(trcu_queue_work(wq, &it.work));       /* running, not pending: queued again */
	errno = 0;
	for (int i = 0; i < 10; i++)
		n += !trcu_queue_work(wq, &it.work);    /* pending: refused */
	CHECK_EQ(n, 10);
	CHECK_EQ(errno, 0);                          /* "already pending" is no error */
	CHECK_EQ(atomic_load(&it.runs), 1);         /* the first instance is still running */
	atomic_store(&it.gate, false);
	trcu_flush_work(&it.work);
	CHECK_EQ(atomic_load(&it.runs), 3);

	/* re-queue from its own function; flush_workqueue waits for the
	 * instances queued before it, drain for the chain */
	it.rearm = 50;
	CHECK(trcu_queue_work(wq, &it.work));
	CHECK_EQ(trcu_drain_workqueue(wq), 0);
	CHECK_EQ(atomic_load(&it.runs), 3 + 51);
	CHECK(!trcu_work_pending(&it.work));

	/* many items, flush_workqueue */
	{
		enum { N = 500 };
		static struct item many[N];

		for (int i = 0; i < N; i++) {
			memset(&many[i], 0, sizeof(many[i]));
			TRCU_INIT_WORK(&many[i].work, item_fn);
			CHECK(trcu_queue_work_on(i % trcu_wq_nr_cpus(), wq, &many[i].work));
		}
		CHECK_EQ(trcu_flush_workqueue(wq), 0);
		for (int i = 0; i < N; i++)
			CHECK_EQ(atomic_load(&many[i].runs), 1);
	}
	CHECK_EQ(atomic_load(&overlap), 0);
	printf("  %-28s ok\n", what);
}

/* Ordered workqueue: items run one at a time in queueing order. */
static int order_log[200], order_n;
struct oitem { struct trcu_work work; int id; };
static void order_fn(struct trcu_work *w)
{
	struct oitem *o = (struct oitem *)w;

	order_log[order_n++] = o->id;   /* max_active 1: never concurrent */
}

static void ordered(void)
{
	struct trcu_workqueue *wq = trcu_alloc_ordered_workqueue("ordered", 0);
	static struct oitem it[200];

	CHECK(wq);
	for (int i = 0; i < 200; i++) {
		TRCU_INIT_WORK(&it[i].work, order_fn);
		it[i].id = i;
		CHECK(trcu_queue_work_on(i % trcu_wq_nr_cpus(), wq, &it[i].work));
	}
	CHECK_EQ(trcu_flush_workqueue(wq), 0);
	CHECK_EQ(order_n, 200);
	for (int i = 0; i < 200; i++)
		CHECK_EQ(order_log[i], i);
	CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	printf("  %-28s ok\n", "ordered");
}

int main(void)
{
	struct trcu_wq_stats st;
	char desc[256];

	signal(SIGALRM, check_hang_handler);
	alarm(120);

	/* a small virtual machine so every scope has several pods */
	CHECK_EQ(trcu_wq_set_topology("cpus=8,smt=2,llc=4,numa=2,shard=1"), 0);
	trcu_wq_topology_describe(desc, sizeof(desc));
	printf("topology: %s\n", desc);
	CHECK_EQ(trcu_wq_nr_cpus(), 8);
	CHECK_EQ(trcu_wq_nr_pods(TRCU_WQ_AFFN_CPU), 8);
	CHECK_EQ(trcu_wq_nr_pods(TRCU_WQ_AFFN_SMT), 4);
	CHECK_EQ(trcu_wq_nr_pods(TRCU_WQ_AFFN_CACHE), 2);
	CHECK_EQ(trcu_wq_nr_pods(TRCU_WQ_AFFN_CACHE_SHARD), 4);
	CHECK_EQ(trcu_wq_nr_pods(TRCU_WQ_AFFN_NUMA), 2);
	CHECK_EQ(trcu_wq_nr_pods(TRCU_WQ_AFFN_SYSTEM), 1);

	{
		struct trcu_workqueue *wq = trcu_alloc_workqueue("percpu", 0, 0);

		CHECK(wq);
		basic_on(wq, "per-CPU");
		CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	}
	for (int s = TRCU_WQ_AFFN_CPU; s < TRCU_WQ_AFFN_NR; s++) {
		struct trcu_workqueue *wq = trcu_alloc_workqueue_scope("unbound", TRCU_WQ_UNBOUND,
								       4, (enum trcu_wq_affn)s);
		char what[64];

		CHECK(wq);
		snprintf(what, sizeof(what), "unbound %s", trcu_wq_affn_name((enum trcu_wq_affn)s));
		basic_on(wq, what);
		CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	}
	{
		struct trcu_workqueue *wq = trcu_alloc_workqueue("hi", TRCU_WQ_HIGHPRI | TRCU_WQ_UNBOUND, 0);

		CHECK(wq);
		basic_on(wq, "unbound highpri");
		CHECK_EQ(trcu_destroy_workqueue(wq), 0);
	}
	basic_on(trcu_system_wq(), "system_wq");
	basic_on(trcu_system_unbound_wq(), "system_unbound_wq");
	ordered();

	trcu_wq_get_stats(&st);
	printf("stats: pools %lu workers %lu idle %lu queued %lu executed %lu wakeups %lu created %lu\n",
	       st.nr_pools, st.nr_workers, st.nr_idle, st.queued, st.executed, st.wakeups,
	       st.workers_created);
	CHECK(st.executed >= st.queued);
	trcu_wq_shutdown();
	trcu_wq_shutdown();   /* idempotent */
	/* and it starts again */
	{
		struct trcu_workqueue *wq = trcu_alloc_workqueue("again", TRCU_WQ_UNBOUND, 0);

		CHECK(wq);
		basic_on(wq, "after shutdown");
	}
	printf("test_wq_basic: PASS\n");
	return 0;
}
