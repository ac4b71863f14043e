/* SPDX-License-Identifier: MIT */
/*
 * fork() of a single-threaded program that has used callbacks: the child
 * can queue callbacks, wait for them with rcu_barrier(), and exit; the
 * callbacks queued before the fork run once, in the parent only.  A fork()
 * from inside a callback: the child may exec or _exit; one that returns
 * into the library aborts with a message naming the problem, and the
 * parent goes on.
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

/* fork() from a callback (on an offload thread). */
static pid_t cb_child_pid = -1;
static int cb_child_err = -1;
static bool cb_child_returns;

static void forking_cb(struct rcu_head *rh)
{
	int fds[2];
	pid_t pid;

	(void)rh;
	if (pipe(fds))
		return;
	pid = fork();
	if (pid == 0) {
		fork_child_arm_timeout();
		dup2(fds[1], 2);
		if (!cb_child_returns)
			_exit(0);
		return;   /* into the library: must abort with a message */
	}
	close(fds[1]);
	cb_child_err = fds[0];
	cb_child_pid = pid;
}

static void fork_from_callback(bool returns)
{
	static struct rcu_head h;
	static struct obj again = { .id = NR_INFLIGHT };
	char buf[512] = "";
	size_t len = 0;
	ssize_t n;
	int st;

	cb_child_returns = returns;
	call_rcu(&h, forking_cb);
	rcu_barrier();
	CHECK(cb_child_pid > 0);
	while (len < sizeof(buf) - 1 && (n = read(cb_child_err, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(cb_child_err);
	CHECK(waitpid(cb_child_pid, &st, 0) == cb_child_pid);
	if (returns) {
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT || !strstr(buf, "fork() from an RCU callback")) {
			fprintf(stderr, "child returning from a forking callback: status %#x, stderr: %s\n",
				st, buf);
			CHECK_FAIL_EXIT();
		}
	} else {
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	/* The parent's offload threads go on. */
	call_rcu(&again.rh, cb);
	rcu_barrier();
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
	fork_from_callback(false);
	fork_from_callback(true);
	printf("fork() from a callback: a child that _exits is fine, one that returns into "
	       "the library aborts naming it; the parent goes on\n");
	return 0;
}
