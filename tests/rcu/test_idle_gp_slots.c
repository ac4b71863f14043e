/* SPDX-License-Identifier: MIT */
/*
 * Slots follow the live threads, and an idle grace period costs no FQS scan
 * and no membarrier, also once the GP kthread runs: a thread queues a
 * callback flood (which starts the GP kthread) and exits; afterwards the
 * slots in use are the live registered threads' (this one and the GP
 * kthread, whose slot is offline and blocked while it idles), and each
 * idle synchronize_rcu() on any path is reported at GP init without a scan.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "threads.h"

#define FLOOD 20000
#define IDLE_GPS 100

static struct trcu_head heads[FLOOD];

static void cb(struct trcu_head *h)
{
	(void)h;
}

static void *flooder(void *arg)
{
	(void)arg;
	CHECK_EQ(rcu_register_thread(), 0);
	for (int i = 0; i < FLOOD; i++)
		call_rcu(&heads[i], cb);
	return NULL;   /* exits registered, with callbacks pending */
}

/* Threads of this process named "trcu_gp" (the GP kthread). */
static int gp_kthreads(void)
{
	return threads_named("trcu_gp");
}

static int slots(void)
{
	struct trcu_stats st;

	trcu_get_stats(&st);
	return st.nr_slots;
}

static void idle_gps_cost_nothing(long path)
{
	struct trcu_stats a, b;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", path), 0);
	synchronize_rcu();   /* settle: a GP requested before the switch */
	trcu_get_stats(&a);
	for (int i = 0; i < IDLE_GPS; i++)
		synchronize_rcu();
	trcu_get_stats(&b);
	printf("  path %ld: %d idle GPs: %lu FQS scans, %lu membarriers, %d slots\n", path,
	       IDLE_GPS, b.fqs_scans - a.fqs_scans, b.membarriers - a.membarriers, b.nr_slots);
	CHECK(b.gp_completed - a.gp_completed >= IDLE_GPS);
	CHECK_EQ(b.fqs_scans - a.fqs_scans, 0);
	CHECK_EQ(b.membarriers - a.membarriers, 0);
}

int main(void)
{
	pthread_t t;
	unsigned long cookie;

	alarm(120);   /* a hang fails the test (SIGALRM) */
	CHECK_EQ(rcu_register_thread(), 0);
	CHECK_EQ(slots(), 1);
	CHECK(pthread_create(&t, NULL, flooder, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	rcu_barrier();
	/* The GP kthread runs from here on, whether the flood started it or
	 * this polled request does. */
	cookie = start_poll_synchronize_rcu();
	CHECK_WITHIN_MS(poll_state_synchronize_rcu(cookie), 30000);
	CHECK_EQ(gp_kthreads(), 1);
	/* The flooder's slot went with it: this thread's and the GP kthread's. */
	CHECK_WITHIN_MS(slots() == 1 + gp_kthreads(), 30000);
	printf("slots after the flooder exited: %d (this thread and the GP kthread)\n", slots());
	for (long path = 0; path <= 2; path++)
		idle_gps_cost_nothing(path);
	printf("ok\n");
	return 0;
}
