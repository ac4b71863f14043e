/* SPDX-License-Identifier: MIT */
/*
 * A list-path synchronize_rcu() caller whose cookie names one GP too many:
 * its node is pushed, then (preempted before its snapshot) a GP started by
 * the offload thread covers the node, and the snapshot, taken with that GP
 * in progress, names the GP after it.  The caller raises gp_seq_needed for
 * that GP, takes the running GP over, is woken at its end and returns.
 * Nobody else needs the GP it requested.  If the hand-off skips wake-ups
 * for asynchronous needs and nobody drives it, a later
 * start_poll_synchronize_rcu() whose cookie names it neither raises the
 * request nor wakes the GP kthread: the cookie never completes (torture:
 * "writer made no progress for 30 s").
 *
 * Checked: the stale request is driven without any further call (the GP
 * kthread runs it), and a polled cookie completes.
 *
 * The caller is held between its push and its snapshot by wrapping
 * rcu_sr_normal_add_req() (linked with -Wl,--wrap), until it has seen the
 * offload thread's GP in progress.  The reader is released only then: the
 * library promises that call_rcu()'s GP starts, not when, nor that a
 * thread polling gp_seq sees a GP that starts and ends between two of its
 * polls (one that started after the reader's release, or ran while the
 * polling caller was preempted).  A GP the caller missed would leave it
 * waiting for one nothing is obliged to start.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"
#include "sync_list.h"

void __real_rcu_sr_normal_add_req(struct sr_node *n);
void __wrap_rcu_sr_normal_add_req(struct sr_node *n);
static _Atomic int armed, pushed, saw_gp, ran;
static struct trcu_head head;

/* Hold the caller after its push until it sees a GP in progress: as if
 * preempted.  The reader keeps that GP running until saw_gp is set. */
void __wrap_rcu_sr_normal_add_req(struct sr_node *n)
{
	__real_rcu_sr_normal_add_req(n);
	if (atomic_exchange(&armed, 0)) {
		atomic_store(&pushed, 1);
		while (!(trcu_gp_seq() & 3))
			usleep(50);
		atomic_store(&saw_gp, 1);
	}
}

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_store(&ran, 1);
}

static void *caller(void *a)
{
	(void)a;
	synchronize_rcu();
	return NULL;
}

static bool need_served(void)
{
	return ULONG_CMP_GE(trcu_gp_seq(), atomic_load(&rcu_state.gp_seq_needed));
}

int main(void)
{
	struct holder h;
	pthread_t t;
	unsigned long c;
	long t0;

	signal(SIGALRM, check_hang_handler);
	alarm(200);
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 1), 0);
	/* Every caller on the list, the one that finds itself alone too. */
	CHECK_EQ(trcu_set_tunable("sr_drive_alone", 0), 0);
	holder_start(&h);
	atomic_store(&armed, 1);
	check_phase = "the caller pushing its list node";
	CHECK(pthread_create(&t, NULL, caller, NULL) == 0);
	while (!atomic_load(&pushed))
		usleep(50);
	call_rcu(&head, cb);          /* the offload thread starts the next GP */
	/* What call_rcu() promises: a GP starts for its callback.  The
	 * reader holds it until the held caller has seen it running. */
	check_phase = "the held caller seeing call_rcu()'s grace period in progress";
	CHECK_WITHIN_MS(atomic_load(&saw_gp), 60000);
	holder_release(&h);
	check_phase = "the held caller's synchronize_rcu() returning";
	pthread_join(t, NULL);
	check_phase = "the checks after synchronize_rcu() returned";
	t0 = check_now_ms();
	while (!atomic_load(&ran) && check_now_ms() - t0 < 30000)
		usleep(100);
	CHECK(atomic_load(&ran));
	/* No call into the library from here: the stale request is driven. */
	t0 = check_now_ms();
	while (!need_served() && check_now_ms() - t0 < 30000)
		usleep(100);
	printf("gp_seq %lu, gp_seq_needed %lu after %ld ms\n", trcu_gp_seq(),
	       atomic_load(&rcu_state.gp_seq_needed), check_now_ms() - t0);
	CHECK(need_served());
	c = start_poll_synchronize_rcu();
	t0 = check_now_ms();
	while (!poll_state_synchronize_rcu(c) && check_now_ms() - t0 < 30000)
		usleep(100);
	printf("polled cookie %s after %ld ms\n",
	       poll_state_synchronize_rcu(c) ? "completed" : "NOT completed", check_now_ms() - t0);
	CHECK(poll_state_synchronize_rcu(c));
	printf("test_sync_extra_request_driven: OK\n");
	return 0;
}
