/* SPDX-License-Identifier: MIT */
/*
 * Many synchronize_rcu() callers: CALLERS registered threads call
 * synchronize_rcu() back to back for SECONDS while one registered thread
 * sleeps (the idle thread of `treercu scale`).  Prints the calls made, the
 * median and 99th percentile latency of one call (ns), and the share of
 * calls under 2 us (a caller that drove its own GP with the other CPUs
 * idle).  One short run shows which mode the machine's scheduler put the
 * callers in; scripts/bench/sync_callers_ab.sh runs two builds alternately.
 *
 *   cc -O2 -Iinclude -Ibuild/include scripts/bench/sync_callers.c \
 *      build/libtreercu.a -lpthread -o build/sync_callers \
 *      && build/sync_callers [SECONDS] [CALLERS]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>

#define MAX_CALLERS 512
#define MAX_CALLS (1L << 20)

static long *lat[MAX_CALLERS], nlat[MAX_CALLERS];
static _Atomic int stop;
static pthread_barrier_t start;

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	rcu_register_thread();
	while (!atomic_load(&stop))
		usleep(10000);
	rcu_unregister_thread();
	return NULL;
}

static void *caller(void *arg)
{
	long i = (long)arg;

	rcu_register_thread();
	pthread_barrier_wait(&start);
	while (!atomic_load_explicit(&stop, memory_order_relaxed) && nlat[i] < MAX_CALLS) {
		long t0 = now_ns();

		synchronize_rcu();
		lat[i][nlat[i]++] = now_ns() - t0;
	}
	rcu_unregister_thread();
	return NULL;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.2;
	long callers = argc > 2 ? atol(argv[2]) : 8, n = 0, fast = 0, *all;
	pthread_t t[MAX_CALLERS], it;

	if (secs <= 0 || callers < 1 || callers > MAX_CALLERS) {
		fprintf(stderr, "usage: sync_callers [SECONDS > 0] [CALLERS 1-%d]\n", MAX_CALLERS);
		return 2;
	}
	pthread_barrier_init(&start, NULL, (unsigned)callers + 1);
	pthread_create(&it, NULL, idle_thread, NULL);
	for (long i = 0; i < callers; i++) {
		lat[i] = malloc(MAX_CALLS * sizeof(long));
		if (!lat[i]) {
			fprintf(stderr, "sync_callers: out of memory\n");
			return 1;
		}
		pthread_create(&t[i], NULL, caller, (void *)i);
	}
	pthread_barrier_wait(&start);
	usleep((useconds_t)(secs * 1e6));
	atomic_store(&stop, 1);
	for (long i = 0; i < callers; i++) {
		pthread_join(t[i], NULL);
		n += nlat[i];
	}
	pthread_join(it, NULL);
	all = malloc((size_t)(n ? n : 1) * sizeof(long));
	if (!all)
		return 1;
	n = 0;
	for (long i = 0; i < callers; i++)
		for (long j = 0; j < nlat[i]; j++) {
			fast += lat[i][j] < 2000;
			all[n++] = lat[i][j];
		}
	qsort(all, (size_t)n, sizeof(long), cmp_long);
	printf("calls %ld p50_ns %ld p99_ns %ld under_2us %.2f\n", n, n ? all[n / 2] : 0,
	       n ? all[n * 99 / 100] : 0, n ? (double)fast / (double)n : 0);
	return 0;
}
