/* SPDX-License-Identifier: MIT */
/*
 * A domain of QSBR threads only: its grace periods run no membarrier (on
 * x86-64 with the membarrier read side; elsewhere the GP-end one at most),
 * and still no reader sees an object retired behind a grace period.  The
 * readers are busy online QSBR threads that now and then go offline and
 * read there with a plain rcu_read_lock() section (fenced while offline),
 * then come back online; one QSBR thread stays offline, asleep; the
 * updater is an online QSBR thread that replaces the object, waits for a
 * grace period, poisons the old one and frees it (ASan catches a late
 * reader too).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

#define NR_READERS 2
#define NR_UPDATES 3000
#define LIVE 0x5a5a5a5aUL
#define DEAD 0xdeadUL

struct obj {
	unsigned long magic;
	unsigned long seq;
};

static struct obj *gp;
static _Atomic int stop, bad;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int idle_stop;

static void check_obj(void)
{
	struct obj *p = rcu_dereference(gp);

	if (__atomic_load_n(&p->magic, __ATOMIC_RELAXED) != LIVE)
		atomic_store(&bad, 1);
}

static void *qsbr_reader(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	trcu_thread_qsbr();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		trcu_qsbr_read_lock();
		check_obj();
		trcu_qsbr_read_unlock();
		if (++n % 64 == 0)
			rcu_quiescent_state();
		if (n % 4096 == 0) {
			/* Offline: a plain section there, then online again. */
			rcu_thread_offline();
			rcu_read_lock();
			check_obj();
			rcu_read_unlock();
			rcu_thread_online();
		}
	}
	rcu_thread_offline();
	rcu_unregister_thread();
	return NULL;
}

static void *qsbr_idle(void *arg)
{
	(void)arg;
	trcu_thread_qsbr();
	rcu_thread_offline();
	pthread_mutex_lock(&lock);
	while (!idle_stop)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	rcu_unregister_thread();
	return NULL;
}

static struct obj *obj_new(unsigned long seq)
{
	struct obj *p = malloc(sizeof(*p));

	CHECK(p != NULL);
	p->magic = LIVE;
	p->seq = seq;
	return p;
}

int main(void)
{
	pthread_t r[NR_READERS], idle;
	struct trcu_stats a, b;
	unsigned long gps, mbs;

	alarm(240);
	signal(SIGALRM, check_hang_handler);
	check_phase = "updates behind QSBR readers";
	rcu_assign_pointer(gp, obj_new(0));
	trcu_thread_qsbr();   /* the updater is a QSBR thread too */
	CHECK(pthread_create(&idle, NULL, qsbr_idle, NULL) == 0);
	for (int i = 0; i < NR_READERS; i++)
		CHECK(pthread_create(&r[i], NULL, qsbr_reader, NULL) == 0);
	usleep(10 * 1000);
	trcu_get_stats(&a);
	for (unsigned long i = 1; i <= NR_UPDATES; i++) {
		struct obj *old = gp;

		rcu_assign_pointer(gp, obj_new(i));
		synchronize_rcu();
		__atomic_store_n(&old->magic, DEAD, __ATOMIC_RELAXED);
		free(old);
	}
	trcu_get_stats(&b);
	atomic_store(&stop, 1);
	for (int i = 0; i < NR_READERS; i++)
		CHECK(pthread_join(r[i], NULL) == 0);
	pthread_mutex_lock(&lock);
	idle_stop = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	CHECK(pthread_join(idle, NULL) == 0);
	gps = b.gp_completed - a.gp_completed;
	mbs = b.membarriers - a.membarriers;
	printf("%lu grace periods, %lu membarriers, %lu FQS scans\n", gps, mbs,
	       b.fqs_scans - a.fqs_scans);
	CHECK(!atomic_load(&bad));
	CHECK(gps >= NR_UPDATES);
#if defined(__x86_64__)
	if (!b.fenced)
		CHECK_EQ(mbs, 0);
#endif
	/* The GP-end one, where the machine is not TSO or the read side is
	 * fenced ("membarriers" then counts the fences that stand in). */
	CHECK(mbs <= gps);
	free(gp);
	rcu_thread_offline();
	rcu_unregister_thread();
	printf("test_qsbr_domain_gps_without_membarrier: OK\n");
	return 0;
}
