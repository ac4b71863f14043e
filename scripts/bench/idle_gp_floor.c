/* SPDX-License-Identifier: MIT */
/*
 * What one idle grace period cannot avoid on this machine: the cost of
 * one membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) with one idle thread in
 * the process (the GP-start barrier of treercu, one of the two of liburcu
 * memb's synchronize_rcu()), of a plain system call (getppid: the
 * machine's syscall entry and exit, probes included), of an uncontended
 * pthread mutex lock and unlock, and of one locked add.  Medians of 9
 * rounds of 200,000 calls each.  With `treercu scale --readers 0
 * --callers 1 --peers treercu,memb,qsbr` in the same sitting, the floor of
 * a one-membarrier GP is the membarrier plus the leanest user side known
 * (liburcu qsbr's whole idle synchronize_rcu()), which docs/decisions.md
 * ("The idle grace period") compares with the 0.6x target.
 *
 *   cc -O2 scripts/bench/idle_gp_floor.c -lpthread -o build/idle_gp_floor \
 *      && build/idle_gp_floor
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 9
#define CALLS 200000L

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const char *what, double *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp);
	printf("%-34s %8.1f ns  (min %.1f, max %.1f)\n", what, v[ROUNDS / 2], v[0],
	       v[ROUNDS - 1]);
}

int main(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	double mb[ROUNDS], sc[ROUNDS], mx[ROUNDS], la[ROUNDS], t0;
	_Atomic long counter = 0;
	pthread_t t;

	if (pthread_create(&t, NULL, idle_thread, NULL) ||
	    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0)) {
		perror("idle_gp_floor: setup");
		return 1;
	}
	for (int r = 0; r < ROUNDS; r++) {
		t0 = now_ns();
		for (long i = 0; i < CALLS; i++)
			syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
		mb[r] = (now_ns() - t0) / CALLS;
		t0 = now_ns();
		for (long i = 0; i < CALLS; i++)
			syscall(__NR_getppid);
		sc[r] = (now_ns() - t0) / CALLS;
		t0 = now_ns();
		for (long i = 0; i < CALLS; i++) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
		}
		mx[r] = (now_ns() - t0) / CALLS;
		t0 = now_ns();
		for (long i = 0; i < CALLS; i++)
			atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
		la[r] = (now_ns() - t0) / CALLS;
	}
	report("membarrier(PRIVATE_EXPEDITED)", mb);
	report("getppid() (a plain system call)", sc);
	report("pthread mutex lock + unlock", mx);
	report("locked add", la);
	return 0;
}
