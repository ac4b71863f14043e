/* SPDX-License-Identifier: MIT */
/*
 * The GP kthread starts but cannot register (out of memory for the bigger
 * tree its slot needs): the library says so once, synchronize_rcu() callers
 * drive their grace periods meanwhile, and the kthread registers once
 * memory is back and serves polled grace periods alone again.
 * posix_memalign() (the tree's allocation) is wrapped here (ld --wrap) and
 * fails while `fail_memalign` is set.  Before the kthread starts, the test
 * fills the first tree (fanout_leaf slots) with registered threads, so
 * that the kthread's slot is the first one beyond it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <treercu/rcu.h>

#include "check.h"
#define FAIL_WRAP_POSIX_MEMALIGN
#include "fail_wrap.h"

#define LEAF 16                 /* TREERCU_FANOUT_LEAF, set by the test's environment */

static _Atomic int registered;
static _Atomic bool done;

static void *holder(void *arg)
{
	(void)arg;
	CHECK(rcu_register_thread() == 0);
	atomic_fetch_add(&registered, 1);
	while (!atomic_load(&done))
		usleep(1000);
	rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	pthread_t th[LEAF];
	unsigned long cookie;
	int n = 0;

	signal(SIGALRM, check_hang_handler);
	alarm(60);
	CHECK(rcu_register_thread() == 0);
	/* Fill the first tree: main and LEAF - 1 holders. */
	for (; n < LEAF - 1; n++)
		CHECK(pthread_create(&th[n], NULL, holder, NULL) == 0);
	while (atomic_load(&registered) < LEAF - 1)
		usleep(1000);

	check_phase = "the kthread cannot register";
	atomic_store(&fail_memalign, true);
	cookie = start_poll_synchronize_rcu();      /* starts the GP kthread */
	while (atomic_load(&failed_memaligns) == 0)
		usleep(1000);
	for (int i = 0; i < 20; i++)
		synchronize_rcu();                   /* callers drive */
	CHECK(poll_state_synchronize_rcu(cookie));

	check_phase = "the kthread registers once memory is back";
	atomic_store(&fail_memalign, false);
	cookie = start_poll_synchronize_rcu();
	while (!poll_state_synchronize_rcu(cookie))  /* nobody else drives */
		usleep(1000);

	atomic_store(&done, true);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	rcu_unregister_thread();
	alarm(0);
	printf("ok: %ld allocations refused\n", atomic_load(&failed_memaligns));
	return 0;
}
