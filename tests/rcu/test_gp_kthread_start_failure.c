/* SPDX-License-Identifier: MIT */
/*
 * The GP kthread cannot be started (out of memory, thread limit): the
 * library says so once and carries on.  call_rcu() and
 * start_poll_synchronize_rcu() do not abort, synchronize_rcu() callers
 * beyond sr_drive_max (who would leave their grace periods to the
 * kthread) drive them themselves, and the kthread starts at a later
 * request once threads can be created again.  pthread_create() is
 * wrapped here (ld --wrap) and fails while `fail_create` is set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <treercu/rcu.h>

#include "check.h"
#define FAIL_WRAP_PTHREAD_CREATE
#include "fail_wrap.h"

#define NR_CALLERS 4
#define CALLS 300

static _Atomic long calls_done;
static _Atomic bool go;

static void *caller(void *arg)
{
	(void)arg;
	trcu_register_thread();
	while (!atomic_load(&go))
		;
	for (int i = 0; i < CALLS; i++) {
		trcu_synchronize_rcu();
		atomic_fetch_add(&calls_done, 1);
	}
	trcu_unregister_thread();
	return NULL;
}

/* The driver counts its GP after the GP's end, which a poller may see
 * first: the count is read until it shows (bounded). */
static unsigned long kthread_gps(void)
{
	struct trcu_stats st;

	trcu_get_stats(&st);
	return (unsigned long)st.gp_driven_by_kthread;
}

int main(void)
{
	pthread_t t[NR_CALLERS];
	unsigned long cookie;

	/* One caller may drive at a time: the others ask the GP kthread. */
	CHECK(trcu_set_tunable("sr_drive_max", 1) == 0);
	for (int i = 0; i < NR_CALLERS; i++)
		CHECK(pthread_create(&t[i], NULL, caller, NULL) == 0);
	/* From here no thread can be created: the library has started none
	 * yet (no thread before first use). */
	atomic_store(&fail_create, true);
	atomic_store(&go, true);
	cookie = trcu_start_poll_synchronize_rcu();
	for (int i = 0; i < NR_CALLERS; i++)
		pthread_join(t[i], NULL);
	printf("%ld synchronize_rcu() calls by %d callers (sr_drive_max 1) while "
	       "pthread_create() failed %ld times\n", atomic_load(&calls_done), NR_CALLERS,
	       atomic_load(&failed_creates));
	CHECK(atomic_load(&calls_done) == NR_CALLERS * CALLS);
	CHECK(atomic_load(&failed_creates) > 0);
	CHECK(trcu_poll_state_synchronize_rcu(cookie));
	/* Threads can be created again: a later request starts the kthread,
	 * which then serves a polled cookie nobody else drives. */
	atomic_store(&fail_create, false);
	cookie = trcu_start_poll_synchronize_rcu();
	for (long spins = 0; !trcu_poll_state_synchronize_rcu(cookie); spins++)
		CHECK(spins < 100000000L);
	CHECK_WITHIN_MS(kthread_gps() > 0, 10000);
	printf("after threads can be created again: a polled cookie completed, "
	       "%lu GPs driven by the kthread\n", kthread_gps());
	printf("test_gp_kthread_start_failure: OK\n");
	return 0;
}
