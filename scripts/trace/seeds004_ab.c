/* SPDX-License-Identifier: MIT */
/*
 * Seeds 004 in miniature, for tracing: alternate samples with 0 and K
 * callbacks queued while a holder thread sits in a read-side section
 * (released 200 us after synchronize_rcu() is called); latency from the
 * release (or the call, if later) to the return.  Prints p50/p90/p99 of
 * both.  Linked against a -DTREERCU_TRACE=ON build, it also marks each
 * sample and each release in the trace (see run.sh and timeline.py).
 *
 * Usage: seeds004_ab K SAMPLES
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>

/* Present only in a TREERCU_TRACE build. */
__attribute__((weak)) void trace_record(const char *ev, long arg);
#define MARK(e, a) do { if (trace_record) trace_record(e, a); } while (0)

enum { H_IDLE, H_HOLD, H_HELD, H_CALLING, H_RELEASED, H_STOP };
static int hstate;
static long t_release;
static atomic_long ran;

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void set_state(int v)
{
	__atomic_store_n(&hstate, v, __ATOMIC_RELEASE);
	syscall(SYS_futex, &hstate, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static int wait_state(int want, int not)
{
	int v;

	while ((v = __atomic_load_n(&hstate, __ATOMIC_ACQUIRE)) != want && (want >= 0 || v == not))
		syscall(SYS_futex, &hstate, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
	return v;
}

static void *holder(void *arg)
{
	struct timespec hold = { 0, 200000 };
	int st = H_IDLE;

	(void)arg;
	trcu_register_thread();
	while (st != H_STOP) {
		if (st != H_HOLD) {
			st = wait_state(-1, st);
			continue;
		}
		rcu_read_lock();
		set_state(H_HELD);
		wait_state(H_CALLING, 0);
		nanosleep(&hold, NULL);
		t_release = now_ns();
		MARK("release", 0);
		rcu_read_unlock();
		set_state(H_RELEASED);
		st = H_RELEASED;
	}
	trcu_unregister_thread();
	return NULL;
}

static void cb(struct rcu_head *h)
{
	(void)h;
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static void report(long k, long *lat, int n)
{
	qsort(lat, (size_t)n, sizeof(*lat), cmp);
	printf("K=%-8ld n=%d p50 %.1f p90 %.1f p99 %.1f max %.1f us\n", k, n, lat[n / 2] / 1e3,
	       lat[n * 9 / 10] / 1e3, lat[n * 99 / 100] / 1e3, lat[n - 1] / 1e3);
}

int main(int argc, char **argv)
{
	long k = argc > 1 ? atol(argv[1]) : 100000;
	int n = argc > 2 ? atoi(argv[2]) : 200;
	struct rcu_head *heads = calloc((size_t)k + 1, sizeof(*heads));
	long *lat[2] = { calloc((size_t)n, sizeof(long)), calloc((size_t)n, sizeof(long)) };
	pthread_t th;

	if (!heads || !lat[0] || !lat[1] || n < 1 || k < 0)
		return 2;
	trcu_set_tunable("cb_max_pending", 2 * k + 100000);
	trcu_register_thread();
	pthread_create(&th, NULL, holder, NULL);
	synchronize_rcu();
	for (int i = 0; i < 2 * n; i++) {
		long kk = (i & 1) ? k : 0, t0, t1;

		set_state(H_HOLD);
		wait_state(H_HELD, 0);
		for (long j = 0; j < kk; j++)
			call_rcu(&heads[j], cb);
		set_state(H_CALLING);
		t0 = now_ns();
		MARK("sample", i);
		synchronize_rcu();
		t1 = now_ns();
		wait_state(H_RELEASED, 0);
		if (t_release > t0)
			t0 = t_release < t1 ? t_release : t1;
		lat[i & 1][i / 2] = t1 - t0;
		rcu_barrier();
	}
	set_state(H_STOP);
	pthread_join(th, NULL);
	report(0, lat[0], n);
	report(k, lat[1], n);
	trcu_unregister_thread();
	return 0;
}
