/* SPDX-License-Identifier: MIT */
/*
 * call_rcu() and rcu_barrier():
 * - a callback runs after a grace period, on an offload thread, never inside
 *   call_rcu() and never while a pre-existing reader is still in its section;
 * - rcu_barrier() waits for every callback queued before it, from every
 *   thread, lazy ones included;
 * - callbacks of a thread that exits are adopted and run;
 * - a callback may queue another callback;
 * - flood: a producer far ahead of the grace periods is pushed back, so
 *   pending callbacks stay bounded, and every callback runs exactly once.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"

struct obj {
	struct rcu_head rh;
	pthread_t queuer;
	long tag;
	_Atomic int *ran;
};

static _Atomic long nran;
static _Atomic int in_call_rcu;

static void obj_cb(struct rcu_head *rh)
{
	struct obj *o = (struct obj *)rh;

	CHECK(!atomic_load(&in_call_rcu) || !pthread_equal(o->queuer, pthread_self()));
	CHECK(!pthread_equal(o->queuer, pthread_self()));
	if (o->ran)
		CHECK_EQ(atomic_fetch_add(o->ran, 1), 0);   /* exactly once */
	atomic_fetch_add(&nran, 1);
	free(o);
}

static struct obj *obj_new(_Atomic int *ran)
{
	struct obj *o = calloc(1, sizeof(*o));

	o->queuer = pthread_self();
	o->ran = ran;
	return o;
}

static struct holder reader;

static void test_waits_for_reader(void)
{
	_Atomic int ran = 0;

	holder_start(&reader);
	atomic_store(&in_call_rcu, 1);
	call_rcu(&obj_new(&ran)->rh, obj_cb);
	atomic_store(&in_call_rcu, 0);
	usleep(30000);
	CHECK_EQ(atomic_load(&ran), 0);     /* the reader still holds the GP */
	holder_release(&reader);
	rcu_barrier();
	CHECK_EQ(atomic_load(&ran), 1);
}

static void *queue_and_exit(void *arg)
{
	long n = (long)arg;

	for (long i = 0; i < n; i++)
		call_rcu(&obj_new(NULL)->rh, obj_cb);
	return NULL;   /* exits with callbacks pending: adopted */
}

static void test_barrier_all_threads(void)
{
	pthread_t t[4];
	long before = atomic_load(&nran);

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, queue_and_exit, (void *)1000L);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	rcu_barrier();
	CHECK_EQ(atomic_load(&nran) - before, 4000);
}

static void test_lazy(void)
{
	long before = atomic_load(&nran);

	CHECK_EQ(trcu_set_tunable("lazy", 1), 0);
	CHECK_EQ(trcu_set_tunable("lazy_flush_ms", 3600000), 0);
	for (int i = 0; i < 100; i++)
		call_rcu(&obj_new(NULL)->rh, obj_cb);
	rcu_barrier();   /* flushes lazy callbacks: no hour-long wait */
	CHECK_EQ(atomic_load(&nran) - before, 100);
	CHECK_EQ(trcu_set_tunable("lazy", 0), 0);
}

static _Atomic int barrier_returned;

static void *barrier_thread(void *arg)
{
	rcu_barrier();
	atomic_store(&barrier_returned, 1);
	return NULL;
}

/*
 * Regression: rcu_barrier() entrained behind lazy callbacks while a reader
 * held the grace period; the offload thread then took the lazy sleep
 * (lazy_flush_ms, an hour here) with the barrier callback queued, and
 * rcu_barrier() hung.  The barrier must end laziness.
 */
static void test_lazy_barrier_with_reader(void)
{
	pthread_t b;
	long before = atomic_load(&nran);

	CHECK_EQ(trcu_set_tunable("lazy", 1), 0);
	CHECK_EQ(trcu_set_tunable("lazy_flush_ms", 3600000), 0);
	holder_start(&reader);
	for (int i = 0; i < 10; i++)
		call_rcu(&obj_new(NULL)->rh, obj_cb);
	pthread_create(&b, NULL, barrier_thread, NULL);
	usleep(50000);   /* the offload thread entrains and must not sleep lazily */
	CHECK_EQ(atomic_load(&barrier_returned), 0);
	holder_release(&reader);
	for (int i = 0; i < 5000 && !atomic_load(&barrier_returned); i++)
		usleep(1000);
	CHECK_EQ(atomic_load(&barrier_returned), 1);   /* not an hour later */
	pthread_join(b, NULL);
	CHECK_EQ(atomic_load(&nran) - before, 10);
	CHECK_EQ(trcu_set_tunable("lazy", 0), 0);
}

static _Atomic int chained;

static void chain_cb(struct rcu_head *rh)
{
	if (atomic_fetch_add(&chained, 1) < 9)
		call_rcu_hurry(rh, chain_cb);   /* re-queue from a callback */
	else
		free(rh);
}

static void test_chain(void)
{
	call_rcu(calloc(1, sizeof(struct rcu_head)), chain_cb);
	while (atomic_load(&chained) < 10)
		rcu_barrier();
	CHECK_EQ(atomic_load(&chained), 10);
}

static void *flood(void *arg)
{
	for (long i = 0; i < 400000; i++)
		call_rcu(&obj_new(NULL)->rh, obj_cb);
	return NULL;
}

static void test_flood(void)
{
	struct trcu_stats st;
	long before = atomic_load(&nran), max_pending = 0;
	pthread_t t[2];
	_Atomic int *done = calloc(1, sizeof(*done));

	CHECK_EQ(trcu_set_tunable("cb_max_pending", 20000), 0);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, flood, NULL);
	for (int k = 0; k < 2000; k++) {
		trcu_get_stats(&st);
		if (st.cbs_pending > max_pending)
			max_pending = st.cbs_pending;
		if (atomic_load(&nran) - before >= 800000)
			break;
		usleep(500);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	rcu_barrier();
	trcu_get_stats(&st);
	printf("  flood: max pending seen %ld (bound 2 x 20000 + slack), pushbacks %ld\n",
	       max_pending, st.cbs_pushback);
	CHECK_EQ(atomic_load(&nran) - before, 800000);
	CHECK(max_pending < 2 * 20000 + 2 * 20000);
	CHECK_EQ(st.cbs_pending, 0);
	free(done);
}

int main(void)
{
	rcu_register_thread();
	test_waits_for_reader();
	test_barrier_all_threads();
	test_lazy();
	test_lazy_barrier_with_reader();
	test_chain();
	test_flood();
	rcu_unregister_thread();
	printf("test_callbacks: OK (%ld callbacks)\n", atomic_load(&nran));
	return 0;
}
