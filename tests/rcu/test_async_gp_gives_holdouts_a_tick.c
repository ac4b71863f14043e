/* SPDX-License-Identifier: MIT */
/*
 * A grace period that nobody waits for (callbacks only, driven by an
 * offload thread or the GP kthread) does not spin on its holdouts: it gives
 * them a tick, as the kernel's first FQS wait does, then asks the ones left.
 * It still waits for every reader: a busy reader with short sections and
 * one that holds a pointer across a sleep inside long ones never see a
 * retired object (retired objects are poisoned, never reused until the
 * end).  The GP raises no stall warning (the tick's wait starts the stall
 * timer), synchronize_rcu() callers beside it are served, and a thread
 * that starts to wait during the tick ends it (rcu_gp_hurry()): with a
 * 300-ms tick and three ticks to the next scan, an rcu_barrier() that
 * comes during the tick returns long before it would have ended.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "internal.h"
#include "check.h"

#define NR_RETIRES 60
#define NR_SYNCS 40
#define MAX_TRIES 200
#define NR_OBJS (NR_RETIRES + NR_SYNCS + MAX_TRIES + 8)
#define POISON 0xdeadL

struct obj {
	struct rcu_head rh;
	long v;
};

static struct obj *_Atomic cur;
static _Atomic int stop, readers_in;
static _Atomic long bad_reads, freed;
/* Retired objects stay here, poisoned, until the end: a reader that still
 * holds one sees the poison, not a reused allocation. */
static struct obj *graveyard[NR_OBJS];
static _Atomic int ngrave;

static void check_ptr(const struct obj *p)
{
	if (p && p->v == POISON)
		atomic_fetch_add(&bad_reads, 1);
}

static void check_obj(void)
{
	check_ptr(rcu_dereference(cur));
}

static void bury(struct obj *o)
{
	o->v = POISON;
	graveyard[atomic_fetch_add(&ngrave, 1)] = o;
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
		struct obj *p;

		rcu_read_lock();
		p = rcu_dereference(cur);
		check_ptr(p);
		usleep(3000);
		check_ptr(p);   /* still ours: its grace period waits for us */
		rcu_read_unlock();
		usleep(500);
	}
	rcu_unregister_thread();
	return NULL;
}

static void free_obj(struct rcu_head *rh)
{
	bury((struct obj *)rh);
	atomic_fetch_add(&freed, 1);
}

static struct obj *publish(long v)
{
	struct obj *n = malloc(sizeof(*n));

	CHECK(n);
	n->v = v;
	return atomic_exchange(&cur, n);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* With ticks of 300 ms and three to the next scan, an unhurried GP would
 * sleep 600-900 ms: an rcu_barrier() that starts meanwhile kicks it.  A GP
 * whose first scan finds no holdout has no such tick: retire again. */
static double barrier_during_tick(long *retired)
{
	double t0;

	CHECK_EQ(trcu_set_tunable("tick_us", 300000), 0);
	CHECK_EQ(trcu_set_tunable("jiffies_till_next_fqs", 3), 0);
	for (*retired = 0; *retired < MAX_TRIES && !atomic_load(&rcu_state.gp_unhurried);) {
		long f = atomic_load(&freed);
		struct obj *old = publish(-1);

		call_rcu(&old->rh, free_obj);
		++*retired;
		/* Until its GP sleeps out the tick, or ends without one. */
		while (!atomic_load(&rcu_state.gp_unhurried) && atomic_load(&freed) == f)
			usleep(50);
	}
	CHECK(atomic_load(&rcu_state.gp_unhurried));
	t0 = now_ms();
	rcu_barrier();
	t0 = now_ms() - t0;
	CHECK_EQ(trcu_set_tunable("tick_us", 1000), 0);
	CHECK_EQ(trcu_set_tunable("jiffies_till_next_fqs", 1), 0);
	return t0;
}

int main(void)
{
	pthread_t r[2];
	unsigned long unhurried;
	struct trcu_stats st;
	double barrier_ms;
	long tries;

	alarm(120);
	signal(SIGALRM, check_hang_handler);
	/* The defaults this test is about, whatever the environment says. */
	CHECK_EQ(trcu_set_tunable("fqs_spin_us", 20), 0);
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
			bury(old);
		} else {
			call_rcu(&old->rh, free_obj);
		}
	}
	rcu_barrier();

	check_phase = "an rcu_barrier() during the unhurried tick";
	barrier_ms = barrier_during_tick(&tries);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	rcu_barrier();
	trcu_get_stats(&st);
	printf("%ld objects retired by callbacks, %lu GPs gave their holdouts a tick, "
	       "%lu grace periods, %lu stall warnings, %ld bad reads; rcu_barrier() during "
	       "a 600-900 ms tick: %.1f ms (%ld tries)\n", atomic_load(&freed), unhurried,
	       st.gp_completed, st.stall_warnings, atomic_load(&bad_reads), barrier_ms, tries);
	CHECK(atomic_load(&bad_reads) == 0);
	CHECK(atomic_load(&freed) == NR_RETIRES - 1 + NR_SYNCS / 2 + tries);
	CHECK(unhurried > 0);
	CHECK(st.stall_warnings == 0);
	CHECK(barrier_ms < 400);
	for (int i = 0; i < atomic_load(&ngrave); i++)
		free(graveyard[i]);
	free(atomic_load(&cur));
	rcu_unregister_thread();
	return 0;
}
