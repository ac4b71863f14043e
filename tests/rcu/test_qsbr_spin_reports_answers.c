/* SPDX-License-Identifier: MIT */
/*
 * A QSBR grace period whose driver spins reports its holdouts' answers
 * itself: a QSBR reader on a CPU of its own answers the ask with one
 * exchange at its next quiescent state, and the spinning driver sees the 0
 * and reports it (rcu_state.n_qs_polled), so the reader takes no lock.
 * Every grace period ends, no reader sees a retired object, and readers
 * that go offline, come back, unregister or exit while asked leave no grace
 * period waiting for them.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "internal.h"
#include "check.h"

#define NR_GPS 200
#define NR_ROUNDS 20
#define POISON 0xdeadL

struct obj {
	long v;
};

static struct obj *cur;
static _Atomic int stop, reader_online;
static _Atomic long bad_reads;

/* Online the whole time but for its quiescent states: a holdout at every
 * grace-period start, answering within a microsecond or so. */
static void *busy_reader(void *arg)
{
	(void)arg;
	trcu_thread_qsbr();
	atomic_store(&reader_online, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 16; i++) {
			struct obj *p = rcu_dereference(cur);

			if (p && p->v == POISON)
				atomic_fetch_add(&bad_reads, 1);
		}
		rcu_quiescent_state();
	}
	rcu_thread_offline();
	rcu_unregister_thread();
	return NULL;
}

/* Short-lived QSBR readers: some go offline and online again while a grace
 * period may have asked them, then they unregister or just exit. */
static void *churn_reader(void *arg)
{
	long k = (long)arg;

	trcu_thread_qsbr();
	for (int i = 0; i < 200; i++) {
		struct obj *p = rcu_dereference(cur);

		if (p && p->v == POISON)
			atomic_fetch_add(&bad_reads, 1);
		if (i % 50 == 49) {
			rcu_thread_offline();
			rcu_thread_online();
		}
		rcu_quiescent_state();
	}
	if (k & 1)
		rcu_unregister_thread();   /* else the thread's exit does it */
	return NULL;
}

static void replace_and_retire(long v)
{
	struct obj *n = malloc(sizeof(*n)), *old;

	CHECK(n);
	n->v = v;
	old = rcu_xchg_pointer(&cur, n);
	synchronize_rcu();
	if (old) {
		old->v = POISON;   /* a reader that still sees it counts a bad read */
		free(old);
	}
}

int main(void)
{
	pthread_t r, c[8];
	unsigned long polled;
	struct trcu_stats st;
	int round;

	alarm(120);
	signal(SIGALRM, check_hang_handler);
	/* A spin that outlasts a time slice: on a busy machine the reader
	 * still answers within it (a spin that runs out turns spinning off). */
	setenv("TREERCU_FQS_SPIN_US", "200000", 1);

	check_phase = "grace periods behind one busy QSBR reader";
	pthread_create(&r, NULL, busy_reader, NULL);
	while (!atomic_load(&reader_online))
		usleep(1000);
	/* Rounds until the driver has reported an answer: on a busy machine
	 * a spin that runs out turns spinning off for a while. */
	polled = atomic_load(&rcu_state.n_qs_polled);
	for (round = 0; round < NR_ROUNDS; round++) {
		for (long i = 0; i < NR_GPS; i++)
			replace_and_retire(i);
		if (atomic_load(&rcu_state.n_qs_polled) != polled)
			break;
	}
	polled = atomic_load(&rcu_state.n_qs_polled) - polled;
	trcu_get_stats(&st);
	printf("%d grace periods, %lu answers reported by the spinning driver "
	       "(%lu membarriers, %lu FQS scans)\n", (round + (round < NR_ROUNDS)) * NR_GPS,
	       polled, st.membarriers, st.fqs_scans);
	/* The driver spins only while it and the holdouts fit on the CPUs. */
	if (tun_usable_cpus() >= 2)
		CHECK(polled > 0);

	check_phase = "grace periods while QSBR readers come and go";
	for (round = 0; round < 20; round++) {
		for (long k = 0; k < 8; k++)
			pthread_create(&c[k], NULL, churn_reader, (void *)k);
		for (int i = 0; i < 10; i++)
			replace_and_retire(round * 10 + i);
		for (int k = 0; k < 8; k++)
			pthread_join(c[k], NULL);
	}
	atomic_store(&stop, 1);
	pthread_join(r, NULL);
	CHECK_EQ(atomic_load(&bad_reads), 0);

	check_phase = "a grace period once every reader has gone";
	synchronize_rcu();
	free(cur);
	return 0;
}
