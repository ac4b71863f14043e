/* SPDX-License-Identifier: MIT */
/*
 * synchronize_rcu() behind N busy QSBR readers (free read pair, 20 loads a
 * section, a quiescent state every 1024 sections), for one second: the
 * reader sections completed, grace periods, FQS scans and membarriers per
 * grace period (the library's counters), and the caller's p50 and p99.
 * Build against a library build (the internal archive links statically):
 *   cc -O2 -Iinclude -Ibuild/include scripts/bench/qsbr_gp.c \
 *      build/libtreercu_internal.a -lpthread -o qsbr_gp
 *   ./qsbr_gp 1; ./qsbr_gp 2
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <treercu/rcu.h>

#define MAX_READERS 4
#define MAX_CALLS 200000

static volatile int stop;
static volatile int word;
static unsigned long sections[MAX_READERS];
static long lat[MAX_CALLS];

static void *reader(void *arg)
{
	unsigned long n = 0;

	trcu_thread_qsbr();
	while (!stop) {
		trcu_qsbr_read_lock();
		for (int i = 0; i < 20; i++)
			(void)word;
		trcu_qsbr_read_unlock();
		if (++n % 1024 == 0)
			rcu_quiescent_state();
	}
	rcu_thread_offline();
	sections[(long)arg] = n;
	return NULL;
}

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int nr = argc > 1 ? atoi(argv[1]) : 2, n = 0;
	pthread_t t[MAX_READERS];
	struct trcu_stats a, b;
	unsigned long g, reads = 0;
	struct timespec settle = { 0, 50000000 };
	long end;

	if (nr < 1 || nr > MAX_READERS) {
		fprintf(stderr, "usage: qsbr_gp [READERS 1-%d]\n", MAX_READERS);
		return 2;
	}
	rcu_register_thread();
	for (long i = 0; i < nr; i++)
		pthread_create(&t[i], NULL, reader, (void *)i);
	nanosleep(&settle, NULL);
	trcu_get_stats(&a);
	end = now_ns() + 1000000000L;
	while (now_ns() < end && n < MAX_CALLS) {
		long s = now_ns();

		synchronize_rcu();
		lat[n++] = now_ns() - s;
	}
	trcu_get_stats(&b);
	stop = 1;
	for (int i = 0; i < nr; i++) {
		pthread_join(t[i], NULL);
		reads += sections[i];
	}
	qsort(lat, (size_t)n, sizeof(long), cmp_long);
	g = b.gp_completed - a.gp_completed;
	printf("readers %d: sections %.1f M, calls %d, GPs %lu, FQS scans/GP %.2f, "
	       "membarriers/GP %.2f, p50 %.1f us, p99 %.1f us\n", nr, reads / 1e6, n, g,
	       (double)(b.fqs_scans - a.fqs_scans) / (double)g,
	       (double)(b.membarriers - a.membarriers) / (double)g, lat[n / 2] / 1e3,
	       lat[n * 99 / 100] / 1e3);
	return 0;
}
