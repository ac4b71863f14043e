/* SPDX-License-Identifier: MIT */
/*
 * Deferred free with rcu_free(): UPDATERS threads each hand NOBJ/UPDATERS
 * 64-byte objects to rcu_free() as fast as they can while one reader runs
 * sections back to back; the window ends when rcu_barrier() has freed them
 * all.  Prints objects/s over the window, the process's CPU time (every
 * thread: the updaters, the reader, the offload and GP threads) per object,
 * and the updaters' own rate (rcu_free() calls/s until the last returned).
 *
 *   cc -O2 -Iinclude scripts/bench/rcu_free.c build/libtreercu.a -lpthread \
 *      -o build/rcu_free_bench && build/rcu_free_bench [NOBJ] [UPDATERS]
 * scripts/bench/rcu_free_ab.sh runs two builds of it alternately.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <treercu/rcu.h>

static long per_thread;
static _Atomic int stop;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec * 1e-6;
}

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	return NULL;
}

static void *updater(void *arg)
{
	(void)arg;
	for (long i = 0; i < per_thread; i++)
		rcu_free(malloc(64));
	return NULL;
}

int main(int argc, char **argv)
{
	long nobj = argc > 1 ? atol(argv[1]) : 1000000;
	int nupd = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t r, u[64];
	struct trcu_stats st;
	double t0, c0, tu, t1, c1;

	if (nobj <= 0 || nupd <= 0 || nupd > 64) {
		fprintf(stderr, "usage: %s [NOBJ > 0] [UPDATERS 1..64]\n", argv[0]);
		return 2;
	}
	per_thread = nobj / nupd;
	nobj = per_thread * nupd;
	rcu_free(malloc(64));   /* start the library's threads outside the window */
	rcu_barrier();
	pthread_create(&r, NULL, reader, NULL);
	t0 = now_s();
	c0 = cpu_s();
	for (int i = 0; i < nupd; i++)
		pthread_create(&u[i], NULL, updater, NULL);
	for (int i = 0; i < nupd; i++)
		pthread_join(u[i], NULL);
	tu = now_s();
	rcu_barrier();
	t1 = now_s();
	c1 = cpu_s();
	atomic_store(&stop, 1);
	pthread_join(r, NULL);
	trcu_get_stats(&st);
	if (st.frees_done != nobj + 1) {
		fprintf(stderr, "rcu_free_bench: %ld of %ld objects freed\n", st.frees_done, nobj + 1);
		return 1;
	}
	printf("objects/s %.0f cpu_ns/object %.1f calls/s %.0f gps %ld\n", nobj / (t1 - t0),
	       (c1 - c0) * 1e9 / nobj, nobj / (tu - t0), st.gp_completed);
	return 0;
}
