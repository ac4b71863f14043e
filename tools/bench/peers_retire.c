/* SPDX-License-Identifier: MIT */
/*
 * Deferred free, one updater and one reader, per peer (`treercu peers`).
 *
 * The updater publishes a fresh 64-byte object in one shared pointer and
 * retires the one it replaced (call_rcu(), or ck_epoch_call() + poll), as
 * fast as it can.  The reader loops over short read-side sections that load
 * the pointer and read the object (its canary word must be intact: a freed
 * object reads PEER_POISON).  The main thread samples retired-but-unfreed
 * objects every millisecond.
 *
 * Figures per run: objects retired per second, reader sections per second,
 * CPU per retired object (process CPU minus the reader's and the sampler's:
 * the updater plus the library's helper threads), helper CPU (process CPU
 * minus the three threads', as % of one CPU) and the peak of unfreed objects.
 */
#define _GNU_SOURCE   /* malloc_trim */
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "peers.h"
#include "peers_work.h"

struct rt_obj {
	char head[PEER_HEAD];            /* the peer's deferred-free head */
	uint64_t canary;                 /* PEER_CANARY until freed */
	uint64_t val;
	char pad[64 - PEER_HEAD - 16];
};

struct rt_run {
	const struct peer_ops *p;
	struct rt_obj *shared;           /* the published object */
	int stop, pause, reader_done;
	unsigned long retired;           /* written by the updater only */
	unsigned long sections, bad;
	pthread_barrier_t start;
};

static struct rt_obj *rt_new(uint64_t val)
{
	struct rt_obj *o = malloc(sizeof(*o));

	if (!o) {
		fprintf(stderr, "peers: out of memory\n");
		exit(1);
	}
	memset(o->head, 0, sizeof(o->head));
	o->canary = PEER_CANARY;
	o->val = val;
	return o;
}

static void rt_paused(struct rt_run *run)
{
	run->p->thread_offline();
	sleep_ns(1000000);
	run->p->thread_online();
}

static void *rt_updater(void *arg)
{
	struct rt_run *run = arg;
	const struct peer_ops *p = run->p;
	unsigned long n = 0;

	p->thread_register();
	/* Release: the object's fields before the pointer; pairs with the
	 * reader's acquire load. */
	__atomic_store_n(&run->shared, rt_new(0), __ATOMIC_RELEASE);
	pthread_barrier_wait(&run->start);
	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		struct rt_obj *old;

		if (__atomic_load_n(&run->pause, __ATOMIC_RELAXED)) {
			rt_paused(run);
			continue;
		}
		/* Release: pairs with the reader's acquire load, as above. */
		old = __atomic_exchange_n(&run->shared, rt_new(n + 1), __ATOMIC_RELEASE);
		p->retire(old);
		/* Relaxed: the sampler's estimate; the final count is read after
		 * pthread_join(). */
		__atomic_store_n(&run->retired, ++n, __ATOMIC_RELAXED);
		if (p->qsbr && n % PEER_QS_EVERY == 0)
			p->quiescent_state();
	}
	/* The reader has left its last section: nothing can see the last object. */
	p->thread_offline();
	while (!__atomic_load_n(&run->reader_done, __ATOMIC_ACQUIRE))
		sleep_ns(100000);
	p->thread_online();
	p->retire(run->shared);
	__atomic_store_n(&run->retired, n + 1, __ATOMIC_RELAXED);
	run->shared = NULL;
	p->barrier();
	p->thread_unregister();
	return NULL;
}

static void *rt_reader(void *arg)
{
	struct rt_run *run = arg;
	const struct peer_ops *p = run->p;
	unsigned long n = 0, bad = 0;
	uint64_t sum = 0;

	p->thread_register();
	pthread_barrier_wait(&run->start);
	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		struct rt_obj *o;

		p->read_lock();
		/* Acquire: pairs with the updater's release store/exchange. */
		o = __atomic_load_n(&run->shared, __ATOMIC_ACQUIRE);
		bad += *(volatile uint64_t *)&o->canary != PEER_CANARY;
		sum += *(volatile uint64_t *)&o->val;
		p->read_unlock();
		n++;
		if (p->qsbr && n % PEER_QS_EVERY == 0)
			p->quiescent_state();
	}
	run->sections = n;
	run->bad = bad;
	(void)sum;
	p->thread_unregister();
	/* Release: pairs with the updater's acquire wait above. */
	__atomic_store_n(&run->reader_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* One run of one peer; false on a correctness failure (message printed). */
bool peers_retire_run(const struct peer_ops *p, double dur_s, double cap,
		      struct peers_retire_point *pt)
{
	struct rt_run run = { .p = p };
	unsigned long freed0, freed, nret;
	uint64_t t0, el, pc0, mc0, uc0, rc0, pcpu, mcpu, ucpu, rcpu, end;
	pthread_t ut, rt;
	double peak = 0;
	bool capped = false;

	malloc_trim(0);
	freed0 = peer_freed();
	pthread_barrier_init(&run.start, NULL, 3);
	work_spawn(&ut, rt_updater, &run);
	work_spawn(&rt, rt_reader, &run);
	pthread_barrier_wait(&run.start);
	t0 = now_ns();
	pc0 = peer_process_cpu_ns();
	mc0 = peer_thread_cpu_ns();
	uc0 = peer_other_cpu_ns(ut);
	rc0 = peer_other_cpu_ns(rt);
	end = t0 + (uint64_t)(dur_s * 1e9);
	while (now_ns() < end) {
		double unfreed;

		sleep_ns(1000000);
		unfreed = (double)__atomic_load_n(&run.retired, __ATOMIC_RELAXED) -
			  (double)(peer_freed() - freed0);
		peak = unfreed > peak ? unfreed : peak;
		capped = work_cap(&run.pause, unfreed, cap) || capped;
	}
	/* Every clock read at the same instants, before the threads stop. */
	el = now_ns() - t0;
	pcpu = peer_process_cpu_ns() - pc0;
	mcpu = peer_thread_cpu_ns() - mc0;
	ucpu = peer_other_cpu_ns(ut) - uc0;
	rcpu = peer_other_cpu_ns(rt) - rc0;
	nret = __atomic_load_n(&run.retired, __ATOMIC_RELAXED);
	__atomic_store_n(&run.stop, 1, __ATOMIC_RELAXED);
	pthread_join(rt, NULL);
	pthread_join(ut, NULL);
	pthread_barrier_destroy(&run.start);
	freed = peer_freed() - freed0;
	pt->objs_s = (double)nret / ((double)el / 1e9);
	pt->sections_s = (double)run.sections / ((double)el / 1e9);
	pt->cpu_ns_per_obj = ((double)pcpu - (double)rcpu - (double)mcpu) /
			     (double)(nret ? nret : 1);
	pt->helper_cpu_pct = 100.0 * ((double)pcpu - (double)rcpu - (double)ucpu -
				      (double)mcpu) / (double)el;
	pt->peak_unfreed = peak;
	if (capped)
		printf("peers: %s: deferred free reached the tool's cap of %.0f unfreed objects; "
		       "the updater was paused\n", p->name, cap);
	if (run.bad || freed != run.retired) {
		fprintf(stderr, "peers: %s: deferred free: %lu sections read a freed object, "
			"%lu of %lu retired objects freed after the barrier\n",
			p->name, run.bad, freed, run.retired);
		return false;
	}
	return true;
}
