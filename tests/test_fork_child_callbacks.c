/* SPDX-License-Identifier: MIT */
/*
 * fork() of a single-threaded program that has used callbacks: the child
 * can queue callbacks, wait for them with rcu_barrier(), and exit; the
 * callbacks queued before the fork run once, in the parent only.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <treercu/rcu.h>

#include "check.h"
#include "fork_child.h"

#define NR_INFLIGHT 64

struct obj {
	struct rcu_head rh;
	int id;
};

static int ran[NR_INFLIGHT + 1];     /* per callback id: times run */
static atomic_int ran_child;

static void cb(struct rcu_head *rh)
{
	struct obj *o = (struct obj *)rh;

	ran[o->id]++;
}

static void cb_child(struct rcu_head *rh)
{
	(void)rh;
	atomic_fetch_add(&ran_child, 1);
}

static int child(const int *ran_at_fork)
{
	static struct obj o;

	fork_child_arm_timeout();
	call_rcu(&o.rh, cb_child);
	rcu_barrier();
	if (atomic_load(&ran_child) != 1) {
		fprintf(stderr, "child: its callback ran %d times\n", atomic_load(&ran_child));
		return 1;
	}
	/* The inherited copies of the parent's callbacks never run here. */
	if (memcmp(ran, ran_at_fork, sizeof(ran))) {
		fprintf(stderr, "child: a callback queued before the fork ran in the child\n");
		return 1;
	}
	synchronize_rcu();
	return 0;
}

int main(void)
{
	static struct obj first, inflight[NR_INFLIGHT];
	pid_t pid;

	alarm(60);
	/* Start the offload threads and let them run one callback. */
	first.id = NR_INFLIGHT;
	call_rcu(&first.rh, cb);
	rcu_barrier();
	CHECK_EQ(ran[NR_INFLIGHT], 1);
	for (int i = 0; i < NR_INFLIGHT; i++) {
		inflight[i].id = i;
		call_rcu_hurry(&inflight[i].rh, cb);
	}
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int snap[NR_INFLIGHT + 1];

		memcpy(snap, ran, sizeof(snap));
		exit(child(snap));
	}
	CHECK(fork_child_wait(pid, "child of a single-threaded parent") == 0);
	rcu_barrier();
	for (int i = 0; i < NR_INFLIGHT; i++)
		CHECK_EQ(ran[i], 1);
	printf("child: call_rcu + rcu_barrier + exit ok; parent ran its %d in-flight "
	       "callbacks once each\n", NR_INFLIGHT);
	return 0;
}
