/* SPDX-License-Identifier: MIT */
/*
 * Stall warnings: a reader that stays in its section (and a QSBR thread that
 * stays online without a quiescent state) past stall_timeout_ms while a GP
 * waits is named with tid, thread name, duration and GP number through the
 * application's hook; warnings repeat with back-off, not on every scan:
 * each one says how long the GP has waited, and consecutive ones are at
 * least three stall timeouts apart by that measure (a loaded machine only
 * makes them later).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

#define STALL_MS 100
#define MAX_MSG 16

static _Atomic int held, release_it, nmsg, tid_seen;
static char last[512];
static long waited_ms[MAX_MSG];   /* each warning's "for at least N ms" */
static pthread_mutex_t mlock = PTHREAD_MUTEX_INITIALIZER;

static void hook(const char *msg, void *arg)
{
	const char *at = strstr(msg, "for at least ");
	char want[64];
	int n;

	pthread_mutex_lock(&mlock);
	snprintf(last, sizeof(last), "%s", msg);
	snprintf(want, sizeof(want), "thread %d (", atomic_load(&tid_seen));
	CHECK(strstr(msg, want));
	CHECK(at);
	n = atomic_load(&nmsg);
	if (n < MAX_MSG)
		waited_ms[n] = strtol(at + strlen("for at least "), NULL, 10);
	pthread_mutex_unlock(&mlock);
	CHECK(arg == (void *)&nmsg);
	atomic_fetch_add(&nmsg, 1);
}

static void *stuck_reader(void *arg)
{
	long qsbr = (long)arg;

	pthread_setname_np(pthread_self(), qsbr ? "stuckqsbr" : "stuckreader");
	if (qsbr)
		trcu_thread_qsbr();
	else
		rcu_read_lock();
	atomic_store(&tid_seen, (int)syscall(SYS_gettid));
	atomic_store(&held, 1);
	while (!atomic_load(&release_it))
		usleep(1000);
	if (qsbr)
		rcu_thread_offline();
	else
		rcu_read_unlock();
	return NULL;
}

/* Releases the reader after its second warning (bounded generously: a
 * missing warning fails below, it does not hang). */
static void *releaser_fn(void *arg)
{
	long t0 = check_now_ms();

	while (atomic_load(&nmsg) < 2 && check_now_ms() - t0 < 60000)
		usleep(1000);
	atomic_store(&release_it, 1);
	return NULL;
}

static void run(long qsbr, const char *name, const char *what)
{
	pthread_t t, r;
	int n;

	atomic_store(&held, 0);
	atomic_store(&release_it, 0);
	atomic_store(&nmsg, 0);
	pthread_create(&t, NULL, stuck_reader, (void *)qsbr);
	while (!atomic_load(&held))
		usleep(100);
	/* stall_timeout_ms=STALL_MS: warnings at STALL_MS and then every
	 * three timeouts or later; the reader is released after the second. */
	pthread_create(&r, NULL, releaser_fn, NULL);
	synchronize_rcu();
	pthread_join(r, NULL);
	pthread_join(t, NULL);
	n = atomic_load(&nmsg);
	printf("  %s: %d warnings, last: %s", name, n, last);
	CHECK(n >= 2);
	CHECK(waited_ms[0] >= STALL_MS);
	for (int i = 1; i < n && i < MAX_MSG; i++)   /* back-off: no flood */
		CHECK(waited_ms[i] - waited_ms[i - 1] >= 3 * STALL_MS);
	CHECK(strstr(last, name));
	CHECK(strstr(last, what));
	CHECK(strstr(last, "blocking grace period"));
	CHECK(strstr(last, "for at least"));
}

int main(void)
{
	struct trcu_stats st;

	CHECK_EQ(trcu_set_tunable("stall_timeout_ms", STALL_MS), 0);
	trcu_set_stall_handler(hook, &nmsg);
	run(0, "stuckreader", "in a read-side critical section");
	run(1, "stuckqsbr", "online (QSBR) without a quiescent state");
	trcu_get_stats(&st);
	CHECK(st.stall_warnings >= 4);
	printf("test_stall: OK\n");
	return 0;
}
