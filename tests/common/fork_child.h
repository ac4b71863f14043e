/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the fork() tests: run a function in a child with a hard
 * timeout, and wait for it with one in the parent.
 */
#ifndef TREERCU_FORK_CHILD_H
#define TREERCU_FORK_CHILD_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* The child's hard timeout: a hang in the child ends it with SIGALRM. */
#define FORK_CHILD_TIMEOUT_S 20

/* Wait for pid (parent side) at most FORK_CHILD_TIMEOUT_S + 10 s; return
 * 0 if it exited with status 0, and say what happened otherwise. */
static inline int fork_child_wait(pid_t pid, const char *what)
{
	long end = check_now_ms() + (FORK_CHILD_TIMEOUT_S + 10) * 1000L;
	int st = 0;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (r < 0) {
			perror("waitpid");
			return -1;
		}
		if (check_now_ms() > end) {
			fprintf(stderr, "%s: child %d still running after %d s: killed\n", what,
				(int)pid, FORK_CHILD_TIMEOUT_S + 10);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(1000);
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		fprintf(stderr, "%s: child killed by signal %d (%s)%s\n", what, WTERMSIG(st),
			strsignal(WTERMSIG(st)),
			WTERMSIG(st) == SIGALRM ? ": it hung" : "");
	else
		fprintf(stderr, "%s: child exited with status %d\n", what, WEXITSTATUS(st));
	return -1;
}

/* Set in the child: LeakSanitizer skips its exit-time check there.  The
 * child's copies of the parent's in-flight objects (callbacks and work the
 * parent runs, objects on the stacks of threads the child does not have)
 * are leaked in the child by design; the parent is still checked. */
static int fork_child_in_child;

int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return fork_child_in_child;
}

/* In the child: arm the hard timeout (a hang ends it with SIGALRM, which
 * the parent reports). */
static inline void fork_child_arm_timeout(void)
{
	fork_child_in_child = 1;
	signal(SIGALRM, SIG_DFL);
	alarm(FORK_CHILD_TIMEOUT_S);
}

/*
 * AddressSanitizer builds.  The ASan runtimes of GCC 12 and clang 14 do not
 * lock their allocator around fork() (glibc's malloc does): a parent thread
 * inside malloc()/free() at the fork leaves one of the allocator's
 * size-class locks held in the child, and the child's next thread hangs in
 * its ASan start-up (pthread_getattr_np() -> realloc()) waiting for it.
 * There the tests keep their own threads out of the allocator around each
 * fork: the threads that allocate call fork_child_park_point() at the top
 * of their loop and fork_child_park_exit() when they leave it; the forking
 * thread brackets fork() with fork_child_park(n) and fork_child_unpark().
 * Without ASan these are no-ops and the forks land anywhere.
 * docs/decisions.md, "fork() tests under AddressSanitizer".
 */
#if defined(__SANITIZE_ADDRESS__)
#define FORK_CHILD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FORK_CHILD_ASAN 1
#endif
#endif
#ifndef FORK_CHILD_ASAN
#define FORK_CHILD_ASAN 0
#endif

#if FORK_CHILD_ASAN
#include <sched.h>
#include <stdatomic.h>

static atomic_bool fork_child_hold;
static atomic_int fork_child_parked;   /* threads parked or gone */

/* An allocating thread, between two allocations. */
static inline void fork_child_park_point(void)
{
	if (!atomic_load(&fork_child_hold))
		return;
	/* seq_cst: the forking thread reads the count after it set the
	 * flag; this thread reads the flag again after it counted itself. */
	atomic_fetch_add(&fork_child_parked, 1);
	while (atomic_load(&fork_child_hold))
		sched_yield();
	atomic_fetch_sub(&fork_child_parked, 1);
}

/* An allocating thread that will not allocate again. */
static inline void fork_child_park_exit(void)
{
	atomic_fetch_add(&fork_child_parked, 1);
}

/* The forking thread: wait until all n allocating threads are parked. */
static inline void fork_child_park(int n)
{
	atomic_store(&fork_child_hold, true);
	while (atomic_load(&fork_child_parked) < n)
		sched_yield();
}

static inline void fork_child_unpark(void)
{
	atomic_store(&fork_child_hold, false);
}
#else
static inline void fork_child_park_point(void) {}
static inline void fork_child_park_exit(void) {}
static inline void fork_child_park(int n) { (void)n; }
static inline void fork_child_unpark(void) {}
#endif

#endif
