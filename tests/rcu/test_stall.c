/* SPDX-License-Identifier: MIT */
/*
 * Stall warnings: a reader that stays in its section (and a QSBR thread that
 * stays online without a quiescent state) past stall_timeout_ms while a GP
 * waits is named with tid, thread name, duration and GP number through the
 * application's hook; warnings repeat with back-off, not on every scan.
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

static _Atomic int held, release_it, nmsg, tid_seen;
static char last[512];
static pthread_mutex_t mlock = PTHREAD_MUTEX_INITIALIZER;

static void hook(const char *msg, void *arg)
{
	char want[64];

	pthread_mutex_lock(&mlock);
	snprintf(last, sizeof(last), "%s", msg);
	snprintf(want, sizeof(want), "thread %d (", atomic_load(&tid_seen));
	CHECK(strstr(msg, want));
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

static void *releaser_fn(void *arg)
{
	usleep(550 * 1000);
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
	/* stall_timeout_ms=100: warnings at ~100 ms and ~400 ms (back-off of
	 * three timeouts); the reader is released after 550 ms. */
	pthread_create(&r, NULL, releaser_fn, NULL);
	synchronize_rcu();
	pthread_join(r, NULL);
	pthread_join(t, NULL);
	n = atomic_load(&nmsg);
	printf("  %s: %d warnings, last: %s", name, n, last);
	CHECK(n >= 2 && n <= 3);    /* back-off: no flood */
	CHECK(strstr(last, name));
	CHECK(strstr(last, what));
	CHECK(strstr(last, "blocking grace period"));
	CHECK(strstr(last, "for at least"));
}

int main(void)
{
	struct trcu_stats st;

	CHECK_EQ(trcu_set_tunable("stall_timeout_ms", 100), 0);
	trcu_set_stall_handler(hook, &nmsg);
	run(0, "stuckreader", "in a read-side critical section");
	run(1, "stuckqsbr", "online (QSBR) without a quiescent state");
	trcu_get_stats(&st);
	CHECK(st.stall_warnings >= 4);
	printf("test_stall: OK\n");
	return 0;
}
