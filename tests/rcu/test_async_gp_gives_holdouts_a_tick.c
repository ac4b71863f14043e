/* SPDX-License-Identifier: MIT */
/*
 * A grace period that nobody waits for (callbacks only, driven by an
 * offload thread or the GP kthread) does not spin on its holdouts: it gives
 * them a tick, as the kernel's first FQS wait does, then asks the ones left.
 * It still waits for every reader: a busy reader with short sections and
 * one that sleeps inside long ones never see a retired object.  The GP
 * raises no stall warning (the tick's wait starts the stall timer), and a
 * synchronize_rcu() caller that comes meanwhile is served as before.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "internal.h"
#include "check.h"

#define NR_RETIRES 60
#define NR_SYNCS 40
#define POISON 0xdeadL

struct obj {
	struct rcu_head rh;
	long v;
};

static struct obj *_Atomic cur;
static _Atomic int stop, readers_in;
static _Atomic long bad_reads, freed;

static void check_obj(void)
{
	struct obj *p = rcu_dereference(cur);

	if (p && p->v == POISON)
		atomic_fetch_add(&bad_reads, 1);
}

/* Short sections back to back: a holdout at almost every GP start. */
static void *busy_reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	atomic_fetch_add(&readers_in, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		for (int i = 0; i < 8; i++)
			check_obj();
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	return NULL;
}

/* Sections that outlast the tick: the GP must ask this one after it. */
static void *slow_reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	atomic_fetch_add(&readers_in, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		check_obj();
		usleep(3000);
		check_obj();
		rcu_read_unlock();
		usleep(500);
	}
	rcu_unregister_thread();
	return NULL;
}

static void free_obj(struct rcu_head *rh)
{
	struct obj *o = (struct obj *)rh;

	o->v = POISON;   /* a reader that still sees it counts a bad read */
	free(o);
	atomic_fetch_add(&freed, 1);
}

static struct obj *publish(long v)
{
	struct obj *n = malloc(sizeof(*n));

	CHECK(n);
	n->v = v;
	return atomic_exchange(&cur, n);
}

int main(void)
{
	pthread_t r[2];
	unsigned long unhurried;
	struct trcu_stats st;

	alarm(120);
	signal(SIGALRM, check_hang_handler);
	rcu_register_thread();
	pthread_create(&r[0], NULL, busy_reader, NULL);
	pthread_create(&r[1], NULL, slow_reader, NULL);
	while (atomic_load(&readers_in) < 2)
		usleep(1000);

	check_phase = "retired objects, nobody waiting for their grace periods";
	unhurried = atomic_load(&rcu_state.n_gp_unhurried);
	for (long i = 0; i < NR_RETIRES; i++) {
		struct obj *old = publish(i);

		if (old)
			call_rcu(&old->rh, free_obj);
		/* Poll, not rcu_barrier(): a barrier's caller waits for the
		 * callbacks, and a GP someone waits for spins as before. */
		while (atomic_load(&freed) < i)
			usleep(200);
	}
	unhurried = atomic_load(&rcu_state.n_gp_unhurried) - unhurried;

	check_phase = "synchronize_rcu() beside the callbacks' grace periods";
	for (long i = 0; i < NR_SYNCS; i++) {
		struct obj *old = publish(NR_RETIRES + i);

		if (i & 1) {
			synchronize_rcu();
			old->v = POISON;
			free(old);
		} else {
			call_rcu(&old->rh, free_obj);
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	rcu_barrier();
	trcu_get_stats(&st);
	printf("%ld objects freed by callbacks, %lu GPs gave their holdouts a tick, "
	       "%lu grace periods, %lu stall warnings, %ld bad reads\n", atomic_load(&freed),
	       unhurried, st.gp_completed, st.stall_warnings, atomic_load(&bad_reads));
	CHECK(atomic_load(&bad_reads) == 0);
	CHECK(atomic_load(&freed) == NR_RETIRES - 1 + NR_SYNCS / 2);
	CHECK(unhurried > 0);
	CHECK(st.stall_warnings == 0);
	free(atomic_load(&cur));
	rcu_unregister_thread();
	return 0;
}
