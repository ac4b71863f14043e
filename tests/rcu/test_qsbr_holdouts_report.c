/* SPDX-License-Identifier: MIT */
/*
 * Online QSBR holdouts report their own quiescent state: a grace period
 * that waits only for QSBR threads (online, calling rcu_quiescent_state()
 * every 2 ms) costs no arming membarrier (nor a GP-start one: the domain
 * is QSBR only, test_qsbr_domain_gps_without_membarrier.c), and every
 * such grace period ends.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

#define NR_READERS 2
#define NR_GPS 40

static _Atomic int stop;

static void *qsbr_reader(void *arg)
{
	(void)arg;
	trcu_thread_qsbr();
	while (!atomic_load(&stop)) {
		trcu_qsbr_read_lock();
		usleep(2000);   /* online: a holdout at every GP start */
		trcu_qsbr_read_unlock();
		rcu_quiescent_state();
	}
	rcu_thread_offline();
	rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	pthread_t r[NR_READERS];
	struct trcu_stats a, b;
	unsigned long gps, mbs;

	alarm(120);
	signal(SIGALRM, check_hang_handler);
	check_phase = "grace periods behind sleeping-online QSBR readers";
	rcu_register_thread();
	for (int i = 0; i < NR_READERS; i++)
		pthread_create(&r[i], NULL, qsbr_reader, NULL);
	usleep(10 * 1000);
	trcu_get_stats(&a);
	for (int i = 0; i < NR_GPS; i++)
		synchronize_rcu();
	trcu_get_stats(&b);
	atomic_store(&stop, 1);
	for (int i = 0; i < NR_READERS; i++)
		pthread_join(r[i], NULL);
	gps = b.gp_completed - a.gp_completed;
	mbs = b.membarriers - a.membarriers;
	printf("%lu grace periods, %lu membarriers, %lu FQS scans\n", gps,
	       mbs, b.fqs_scans - a.fqs_scans);
	CHECK(gps >= NR_GPS);
	/* No arming membarrier: at most a GP-start one, and the GP-end one
	 * where the machine is not TSO or the read side is fenced (where
	 * "membarriers" counts the fences that stand in for them). */
#if defined(__x86_64__)
	if (!b.fenced)
		CHECK(mbs <= gps);
#endif
	CHECK(mbs <= 2 * gps);
	printf("test_qsbr_holdouts_report: OK\n");
	return 0;
}
