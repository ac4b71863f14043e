/* SPDX-License-Identifier: MIT */
/*
 * The driver of a grace period wakes the synchronize_rcu() callers it found
 * asleep after it has released gp_mutex, not while it holds it: the next
 * driver, queued on the mutex or polling for it, starts the next GP while
 * the futex wakes are made (docs/decisions.md, "The driver wakes its
 * waiters after it unlocks").
 *
 * List path: caller W may not drive (drive_from_caller=0), so it sleeps on
 * its list node while the GP kthread drives a GP held open by a reader.  W
 * runs on a stack of our own, so a futex wake aimed at its node is one into
 * that stack; the wrapped sys_futex_wake() notes, for each such wake,
 * whether gp_mutex was free at that moment (nobody else drives here).
 *
 * GP-end futex path: caller X drives a GP held open by a reader, caller Y
 * sleeps on gp_end_futex meanwhile.  A driver that goes on to another GP
 * makes the wake before it starts it, under the mutex; the last one is
 * made after the unlock, so at least one wake there finds gp_mutex free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"

#define W_STACK (4 * 1024 * 1024)   /* TSan wants about 1 MiB of its own */

static char *w_stack;
static _Atomic int returned, wakes_into_w, wakes_under_lock, gp_end_wakes_unlocked;

void __real_sys_futex_wake(_Atomic uint32_t *addr, int n);
void __wrap_sys_futex_wake(_Atomic uint32_t *addr, int n);

void __wrap_sys_futex_wake(_Atomic uint32_t *addr, int n)
{
	char *a = (char *)addr;

	if (w_stack && a >= w_stack && a < w_stack + W_STACK) {
		atomic_fetch_add(&wakes_into_w, 1);
		if (pthread_mutex_trylock(&rcu_state.gp_mutex) == EBUSY)
			atomic_fetch_add(&wakes_under_lock, 1);
		else
			pthread_mutex_unlock(&rcu_state.gp_mutex);
	} else if (addr == &rcu_state.gp_end_futex &&
		   pthread_mutex_trylock(&rcu_state.gp_mutex) == 0) {
		pthread_mutex_unlock(&rcu_state.gp_mutex);
		atomic_fetch_add(&gp_end_wakes_unlocked, 1);
	}
	__real_sys_futex_wake(addr, n);
}

static int list_case(void)
{
	struct holder h;
	pthread_attr_t attr;
	pthread_t w;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 0), 0);
	CHECK_EQ(posix_memalign((void **)&w_stack, 4096, W_STACK), 0);
	CHECK_EQ(pthread_attr_init(&attr), 0);
	CHECK_EQ(pthread_attr_setstack(&attr, w_stack, W_STACK), 0);
	holder_start(&h);
	CHECK_EQ(pthread_create(&w, &attr, sync_caller_fn, &returned), 0);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sync_waiters) >= 1, 10000);
	usleep(50000);                        /* W asleep on its node */
	CHECK_EQ(atomic_load(&returned), 0);
	holder_release(&h);
	pthread_join(w, NULL);
	pthread_attr_destroy(&attr);
	CHECK_EQ(atomic_load(&returned), 1);
	CHECK(atomic_load(&wakes_into_w) >= 1);
	CHECK_EQ(atomic_load(&wakes_under_lock), 0);
	free(w_stack);
	w_stack = NULL;
	return 0;
}

static int futex_case(void)
{
	struct holder h;
	pthread_t x, y;

	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 2), 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 1), 0);
	atomic_store(&returned, 0);
	holder_start(&h);
	CHECK_EQ(pthread_create(&x, NULL, sync_caller_fn, &returned), 0);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sync_waiters) >= 1, 10000);
	usleep(20000);                        /* X drives, held by the reader */
	CHECK_EQ(pthread_create(&y, NULL, sync_caller_fn, &returned), 0);
	CHECK_WITHIN_MS(atomic_load(&rcu_state.nr_sync_gp_waiters) >= 1, 10000);
	atomic_store(&gp_end_wakes_unlocked, 0);
	holder_release(&h);
	pthread_join(x, NULL);
	pthread_join(y, NULL);
	CHECK_EQ(atomic_load(&returned), 2);
	CHECK(atomic_load(&gp_end_wakes_unlocked) >= 1);
	return 0;
}

int main(void)
{
	alarm(60);   /* a hang fails with SIGALRM */
	CHECK_EQ(list_case(), 0);
	CHECK_EQ(futex_case(), 0);
	printf("sync_sleepers_woken_after_unlock: ok\n");
	return 0;
}
