/* SPDX-License-Identifier: MIT */
/*
 * A synchronize_rcu() caller with a cancellation pending that drives its
 * grace period while a signal handler's emergency section is in progress
 * (one that interrupted library code on another thread) waits that section
 * out and returns: the wait is no cancellation point, so the caller is not
 * ended holding gp_mutex with its grace period half cleaned up, and later
 * grace periods still end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "internal.h"

static atomic_bool in_section, release_section, call_returned;

static void nap_us(long us)
{
	struct timespec ts = { 0, us * 1000L };

	nanosleep(&ts, NULL);
}

/* Runs on a thread inside library code (->busy): an emergency section. */
static void handler(int sig)
{
	(void)sig;
	rcu_read_lock();
	atomic_store(&in_section, true);
	while (!atomic_load(&release_section))
		nap_us(1000);
	rcu_read_unlock();
}

static void *busy_thread(void *arg)
{
	(void)arg;
	rcu_busy_enter();   /* as inside a registration */
	pthread_kill(pthread_self(), SIGUSR1);
	rcu_busy_exit();
	return NULL;
}

static void *cancelled_caller(void *arg)
{
	(void)arg;
	CHECK_EQ(rcu_register_thread(), 0);
	pthread_cancel(pthread_self());   /* pending: deferred, enabled */
	synchronize_rcu();
	atomic_store(&call_returned, true);
	pthread_testcancel();
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t b, c;
	void *ret;

	signal(SIGALRM, check_hang_handler);
	alarm(60);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	synchronize_rcu();   /* the library is up */

	check_phase = "emergency section";
	CHECK(pthread_create(&b, NULL, busy_thread, NULL) == 0);
	CHECK_WITHIN_MS(atomic_load(&in_section), 10000);

	check_phase = "cancelled caller";
	CHECK(pthread_create(&c, NULL, cancelled_caller, NULL) == 0);
	nap_us(200 * 1000);   /* its GP reaches the emergency wait */
	atomic_store(&release_section, true);
	CHECK(pthread_join(b, NULL) == 0);
	CHECK(pthread_join(c, &ret) == 0);
	CHECK(ret == PTHREAD_CANCELED);   /* at its pthread_testcancel() */
	CHECK(atomic_load(&call_returned));

	check_phase = "grace period after the cancelled caller";
	synchronize_rcu();
	return 0;
}
