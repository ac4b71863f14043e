/* SPDX-License-Identifier: MIT */
/*
 * A program built with ThreadSanitizer and linked with the library as
 * installed (built without it) sees no data race in RCU's own hand-offs.
 * ThreadSanitizer sees only the instrumented program: the library's atomics
 * and membarrier() are invisible to it, so without the library telling it
 * (through its __tsan_acquire()/__tsan_release() when the program has them)
 * it reports the free after a grace period as racing with the readers, a
 * callback's free as racing with the call_rcu() caller's writes, and so on.
 *
 * Built with -fsanitize=thread in the builds without a sanitizer, against
 * the shared library; ThreadSanitizer makes the exit status 66 on a report.
 * Every hand-off a user relies on is exercised, each on objects the readers
 * load and the updater writes (a poison) before freeing:
 *   synchronize_rcu(), synchronize_rcu_expedited(), cond_synchronize_rcu(),
 *   the polled API, call_rcu() (the callback writes and frees), rcu_free()
 *   and kfree_rcu(); rcu_barrier() after callbacks that write the caller's
 *   data; default, QSBR and offline-QSBR readers; a work item that reads
 *   what its queuer wrote and writes what trcu_flush_work()'s caller reads.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/treercu.h>
#include <treercu/list.h>

struct obj {
	long v;
	long payload[3];
	struct rcu_head rh;
};

static struct obj *cur;
static int stop;

static long read_obj(void)
{
	struct obj *o = rcu_dereference(cur);

	return o ? o->v + o->payload[o->v & 1] : 0;
}

static void *default_reader(void *arg)
{
	long sum = 0;

	(void)arg;
	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		rcu_read_lock();
		sum += read_obj();
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	return (void *)sum;
}

static void *qsbr_reader(void *arg)
{
	long sum = 0, n = 0;

	(void)arg;
	rcu_register_thread();
	trcu_thread_qsbr();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		sum += read_obj();
		rcu_quiescent_state();
		if (++n % 64 == 0) {
			/* An offline stretch, then sections while offline. */
			rcu_thread_offline();
			rcu_read_lock();
			sum += read_obj();
			rcu_read_unlock();
			rcu_thread_online();
		}
	}
	rcu_thread_offline();
	rcu_unregister_thread();
	return (void *)sum;
}

static struct obj *new_obj(long v)
{
	struct obj *o = malloc(sizeof(*o));

	if (!o) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	o->v = v;
	for (int i = 0; i < 3; i++)
		o->payload[i] = v * i;
	return o;
}

static void poison_free(struct obj *o)
{
	o->v = -1;   /* a write: races with a reader's load unless ordered */
	o->payload[0] = -1;
	free(o);
}

static void free_cb(struct rcu_head *h)
{
	poison_free(trcu_container_of(h, struct obj, rh));
}

static struct obj *swap(long v)
{
	return rcu_xchg_pointer(&cur, new_obj(v));
}

static void retire_all_ways(long i)
{
	struct obj *old = swap(i);
	unsigned long c;

	switch (i % 8) {
	case 0:
		synchronize_rcu();
		poison_free(old);
		break;
	case 1:
		synchronize_rcu_expedited();
		poison_free(old);
		break;
	case 2:
		call_rcu(&old->rh, free_cb);
		break;
	case 3:
		old->payload[2] = 7;   /* the caller's write before rcu_free() */
		rcu_free(old);
		break;
	case 4:
		kfree_rcu(old, rh);
		break;
	case 5:
		c = start_poll_synchronize_rcu();
		while (!poll_state_synchronize_rcu(c))
			usleep(100);
		poison_free(old);
		break;
	case 6:
		c = get_state_synchronize_rcu();
		cond_synchronize_rcu(c);
		poison_free(old);
		break;
	default:
		old->payload[1] = 5;   /* the caller's write before call_rcu() */
		call_rcu_hurry(&old->rh, free_cb);
		break;
	}
}

/* ---- rcu_barrier(): callbacks' writes, then the caller's reads ---------- */

struct tally {
	long in;    /* written before call_rcu(), read by the callback */
	long out;   /* written by the callback, read after rcu_barrier() */
	struct rcu_head rh;
};

static void tally_cb(struct rcu_head *h)
{
	struct tally *t = trcu_container_of(h, struct tally, rh);

	t->out = t->in * 2;
}

static int barrier_orders_callbacks(void)
{
	enum { N = 64 };
	static struct tally t[N];

	for (int i = 0; i < N; i++) {
		t[i].in = i;
		call_rcu(&t[i].rh, tally_cb);
	}
	rcu_barrier();
	for (int i = 0; i < N; i++) {
		if (t[i].out != 2L * i) {
			fprintf(stderr, "callback %d wrote %ld, not %d\n", i, t[i].out, 2 * i);
			return 1;
		}
	}
	return 0;
}

/* ---- The workqueue: queuer -> work item -> flusher ------------------------ */

#if TREERCU_WORKQUEUE
static struct {
	struct trcu_work work;
	long in, out;
} job;

static void job_fn(struct trcu_work *w)
{
	(void)w;
	job.out = job.in + 1;
}

static int work_orders_data(void)
{
	trcu_init_work(&job.work, job_fn);
	for (long i = 0; i < 200; i++) {
		job.in = i;
		trcu_queue_work(trcu_system_wq(), &job.work);
		trcu_flush_work(&job.work);
		if (job.out != i + 1) {
			fprintf(stderr, "work item %ld wrote %ld\n", i, job.out);
			return 1;
		}
	}
	return 0;
}
#else
static int work_orders_data(void)
{
	return 0;
}
#endif

int main(void)
{
	pthread_t r[3];
	int bad;

	rcu_assign_pointer(cur, new_obj(0));
	pthread_create(&r[0], NULL, default_reader, NULL);
	pthread_create(&r[1], NULL, default_reader, NULL);
	pthread_create(&r[2], NULL, qsbr_reader, NULL);
	for (long i = 1; i <= 800; i++)
		retire_all_ways(i);
	bad = barrier_orders_callbacks() | work_orders_data();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(r[i], NULL);
	rcu_barrier();
	free(rcu_xchg_pointer(&cur, NULL));
	if (!bad)
		printf("ok: 800 objects retired eight ways beside default and QSBR readers\n");
	return bad;
}
