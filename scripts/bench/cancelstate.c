/* SPDX-License-Identifier: MIT */
/*
 * What disabling cancellation costs a blocking call: the pair
 * pthread_setcancelstate(DISABLE) + restore that synchronize_rcu() and
 * rcu_barrier() now run, beside an idle synchronize_rcu() (one registered
 * thread, nothing to wait for) in the same run.
 *
 *   cc -O2 -Iinclude scripts/bench/cancelstate.c build/libtreercu.a -lpthread \
 *      -o /tmp/cancelstate && /tmp/cancelstate
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <treercu/rcu.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
	const long n_pair = 20 * 1000 * 1000, n_sync = 200 * 1000;
	double t0, t_pair, t_sync;
	int old, unused;

	rcu_register_thread();
	for (int rep = 0; rep < 3; rep++) {
		t0 = now_ns();
		for (long i = 0; i < n_pair; i++) {
			pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
			pthread_setcancelstate(old, &unused);
		}
		t_pair = (now_ns() - t0) / n_pair;
		t0 = now_ns();
		for (long i = 0; i < n_sync; i++)
			synchronize_rcu();
		t_sync = (now_ns() - t0) / n_sync;
		printf("setcancelstate pair: %.1f ns   idle synchronize_rcu(): %.1f ns   (%.1f%%)\n",
		       t_pair, t_sync, 100.0 * t_pair / t_sync);
	}
	return 0;
}
