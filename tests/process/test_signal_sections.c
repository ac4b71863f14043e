/* SPDX-License-Identifier: MIT */
/*
 * A read-side section in a signal handler is waited for by grace periods,
 * wherever the handler interrupts its thread: at any instruction of that
 * thread's own rcu_read_lock()/rcu_read_unlock() (fast and slow paths),
 * of rcu_quiescent_state() and QSBR online/offline, of registration and
 * unregistration, and while the thread is blocked in synchronize_rcu().
 *
 * A target thread runs one mode's loop; a per-thread timer sends it SIGUSR1
 * every 100 us; the handler reads the current object
 * inside a section for up to HANDLER_SPIN_NS; an updater swaps the object,
 * waits for a grace period and poisons the old one (freed a few grace
 * periods later).  The handler must never read the poison.
 *
 * Modes (argv[1]): memb, qsbr, unreg, blocked, or all (the default).  ctest
 * also runs it with TREERCU_FORCE_FENCED=1 (the fenced read side).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

#define LIVE    0x600dUL
#define POISON  0xdeadUL
#define RUN_MS  2000
#define MAX_RUN_MS 60000
#define MIN_SECTIONS 1000
#define MIN_GPS 100
#define HANDLER_SPIN_NS 50000L
#define DELAY_FREE 16
#define TIMER_NS 100000L

struct obj {
	unsigned long val;
};

static struct obj *cur;
static _Atomic int stop, target_tid, target_ready;
static _Atomic unsigned long sections, bad, swaps, gps;

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void handler(int sig)
{
	int saved = errno;
	long end = now_ns() + HANDLER_SPIN_NS;
	struct obj *p;

	(void)sig;
	rcu_read_lock();
	p = rcu_dereference(cur);
	rcu_read_lock();           /* a nested section inside the handler's */
	do {
		if (__atomic_load_n(&p->val, __ATOMIC_RELAXED) != LIVE) {
			atomic_fetch_add(&bad, 1);
			break;
		}
	} while (now_ns() < end);
	rcu_read_unlock();
	rcu_read_unlock();
	atomic_fetch_add(&sections, 1);
	errno = saved;
}

static struct obj *obj_new(void)
{
	struct obj *o = malloc(sizeof(*o));

	CHECK(o);
	o->val = LIVE;
	return o;
}

static void *updater(void *arg)
{
	struct obj *ring[DELAY_FREE] = { 0 };
	unsigned long n = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		struct obj *old = rcu_xchg_pointer(&cur, obj_new());

		synchronize_rcu();
		__atomic_store_n(&old->val, POISON, __ATOMIC_RELAXED);
		free(ring[n % DELAY_FREE]);
		ring[n % DELAY_FREE] = old;
		n++;
		atomic_store(&gps, n);
	}
	synchronize_rcu();
	for (int i = 0; i < DELAY_FREE; i++)
		free(ring[i]);
	atomic_store(&swaps, n);
	return NULL;
}

/* A per-thread timer: SIGUSR1 at the target every TIMER_NS while it runs
 * (the timer interrupt lands at any instruction of its loop). */
static void *kicker(void *arg)
{
	struct sigevent sev;
	struct itimerspec its = { { 0, TIMER_NS }, { 0, TIMER_NS } };
	timer_t timer;

	(void)arg;
	while (!atomic_load(&target_ready))
		usleep(100);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
#ifdef sigev_notify_thread_id   /* musl; glibc from 2.41 */
	sev.sigev_notify_thread_id = atomic_load(&target_tid);
#else
	sev._sigev_un._tid = atomic_load(&target_tid);
#endif
	CHECK(timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0);
	CHECK(timer_settime(timer, 0, &its, NULL) == 0);
	while (!atomic_load(&stop))
		usleep(1000);
	timer_delete(timer);
	return NULL;
}

/* Sections back to back, some nested: the handler lands in every
 * instruction of the outermost and nested lock and unlock. */
static void loop_memb(void)
{
	rcu_register_thread();
	atomic_store(&target_ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 16; i++) {
			rcu_read_lock();
			rcu_read_unlock();
		}
		rcu_read_lock();
		rcu_read_lock();
		rcu_read_unlock();
		rcu_read_unlock();
	}
}

/* An online QSBR thread: nested-only lock/unlock, momentary quiescent
 * states, and offline/online transitions. */
static void loop_qsbr(void)
{
	trcu_thread_qsbr();
	atomic_store(&target_ready, 1);
	for (unsigned long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		rcu_read_lock();
		rcu_read_unlock();
		rcu_quiescent_state();
		if (i & 1) {
			rcu_thread_offline();
			rcu_read_lock();   /* an explicit section while offline */
			rcu_read_unlock();
			rcu_thread_online();
		}
	}
	rcu_thread_offline();
}

/* Registration by the first lock, sections, unregistration, a pause while
 * unregistered (the handler's lock then finds the thread unregistered). */
static void loop_unreg(void)
{
	atomic_store(&target_ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		rcu_read_unlock();
		rcu_read_lock();
		rcu_read_unlock();
		rcu_unregister_thread();
		for (volatile int i = 0; i < 200; i++)
			;
		if (rand() & 1)
			rcu_register_thread();
	}
}

/* Blocked waiting for grace periods most of the time. */
static void loop_blocked(void)
{
	rcu_register_thread();
	atomic_store(&target_ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		synchronize_rcu();
}

static void *target(void *arg)
{
	void (*fn)(void) = (void (*)(void))arg;

	sigset_t set;

	atomic_store(&target_tid, (int)syscall(SYS_gettid));
	fn();
	/* No handler after the thread's last unregistration: it would
	 * register the thread again on its way out. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rcu_unregister_thread();
	return NULL;
}

static void run(const char *name, void (*fn)(void))
{
	pthread_t t, k, u;

	atomic_store(&stop, 0);
	atomic_store(&target_ready, 0);
	atomic_store(&sections, 0);
	atomic_store(&bad, 0);
	atomic_store(&gps, 0);
	cur = obj_new();
	CHECK(pthread_create(&t, NULL, target, (void *)fn) == 0);
	CHECK(pthread_create(&u, NULL, updater, NULL) == 0);
	CHECK(pthread_create(&k, NULL, kicker, NULL) == 0);
	/* At least RUN_MS, and until the handler ran MIN_SECTIONS sections
	 * and the updater MIN_GPS grace periods (slow under load), bounded. */
	for (long t0 = check_now_ms();;) {
		long ms = check_now_ms() - t0;

		usleep(10 * 1000);
		if (ms >= RUN_MS && atomic_load(&sections) >= MIN_SECTIONS &&
		    atomic_load(&gps) >= MIN_GPS)
			break;
		if (ms >= MAX_RUN_MS)
			break;
	}
	atomic_store(&stop, 1);
	pthread_join(k, NULL);
	pthread_join(t, NULL);
	pthread_join(u, NULL);
	free(cur);
	printf("test_signal_sections %s: %lu handler sections, %lu grace periods, "
	       "%lu read the poison\n", name, atomic_load(&sections), atomic_load(&swaps),
	       atomic_load(&bad));
	fflush(stdout);
	CHECK(atomic_load(&sections) >= MIN_SECTIONS);
	CHECK(atomic_load(&swaps) >= MIN_GPS);
	CHECK_EQ(atomic_load(&bad), 0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	struct sigaction sa;
	bool all = !strcmp(mode, "all");

	/* A hang (a handler deadlocked on the thread it interrupted) fails. */
	alarm(280);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	if (all || !strcmp(mode, "memb"))
		run("memb", loop_memb);
	if (all || !strcmp(mode, "qsbr"))
		run("qsbr", loop_qsbr);
	if (all || !strcmp(mode, "unreg"))
		run("unreg", loop_unreg);
	if (all || !strcmp(mode, "blocked"))
		run("blocked", loop_blocked);
	return 0;
}
