/* SPDX-License-Identifier: MIT */
/*
 * A synchronize_rcu() caller takes a grace period over from the GP kthread
 * sleeping in it without the kthread having to run: on a machine whose
 * CPUs are busy (invoking callbacks, say) a woken GP kthread may wait
 * milliseconds for one, and a caller that needed it to yield waited as
 * long.  The test holds the GP kthread, once it wakes from its FQS sleep,
 * in a hook (as a scheduler that gives it no CPU would), for up to
 * HOLD_MS; the caller must return well before that, once the reader it
 * waits for leaves.  Both waiting paths are checked (list and futex).
 * Runs in a child process per path: the kthread starts once per process.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"
#include "test_hooks.h"

#define HOLD_MS 4000

static _Atomic int hold_kthread, returned, kthread_held;

/* In the GP kthread (by name) woken in its FQS sleep: no CPU for it
 * while the test says so, HOLD_MS at most. */
static void hold_driver(void)
{
	char name[16] = "";
	long t0 = check_now_ms();

	pthread_getname_np(pthread_self(), name, sizeof(name));
	if (strcmp(name, "trcu_gp") != 0)
		return;
	while (atomic_load(&hold_kthread) && check_now_ms() - t0 < HOLD_MS) {
		atomic_store(&kthread_held, 1);
		usleep(1000);
	}
}

static int run_case(long path)
{
	struct holder h;
	pthread_t c;
	long t0, waited;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", path), 0);
	rcu_test_hooks.driver_woken = hold_driver;
	holder_start(&h);
	(void)start_poll_synchronize_rcu();   /* the GP kthread drives */
	CHECK_WITHIN_MS((trcu_gp_seq() & 3) != 0, 10000);
	usleep(5000);                         /* it reaches its FQS sleep */
	atomic_store(&hold_kthread, 1);
	pthread_create(&c, NULL, sync_caller_fn, &returned);
	usleep(20000);
	CHECK_EQ(atomic_load(&returned), 0);  /* the reader still holds the GP */
	t0 = check_now_ms();
	holder_release(&h);
	while (!atomic_load(&returned) && check_now_ms() - t0 < HOLD_MS + 2000)
		usleep(500);
	waited = check_now_ms() - t0;
	atomic_store(&hold_kthread, 0);
	pthread_join(c, NULL);
	printf("path %ld: the caller returned %ld ms after the reader left (GP kthread %s)\n",
	       path, waited, atomic_load(&kthread_held) ? "held" : "never woken");
	fflush(stdout);
	CHECK(waited < HOLD_MS / 2);
	return 0;
}

int main(void)
{
	alarm(60);   /* a hang fails with SIGALRM */
	for (long path = 1; path <= 2; path++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(run_case(path));
		CHECK(pid >= 0);
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	printf("sync_takeover_needs_no_driver_cpu: ok\n");
	return 0;
}
