/* SPDX-License-Identifier: MIT */
/*
 * Two trcu_wq_shutdown() calls at once: both return, no thread is joined
 * twice and nothing freed twice, and the workqueue works again afterwards.
 * The first call is held inside its joins of the workers (it has dropped
 * wq_state.mutex and still uses the worker structures and the pools) by
 * wrapping pthread_join(), until the second call has been made and had
 * 200 ms to run.  In its own process, with an alarm:
 * a hang fails with a message.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"
#include "subproc.h"

int __real_pthread_join(pthread_t t, void **r);
int __wrap_pthread_join(pthread_t t, void **r);

static __thread int is_first, first_joins;
static atomic_int first_in_join, second_called, bad_joins;

/* A join that fails names no joinable thread: one joined already. */
int __wrap_pthread_join(pthread_t t, void **r)
{
	int rc;

	/* The first call's second join: its first worker, the manager joined
	 * and the workers collected. */
	if (is_first && ++first_joins == 2 && !atomic_exchange(&first_in_join, 1)) {
		/* Until the second call is made (up to 20 s), then 200 ms more. */
		for (int i = 0; i < 20000 && !atomic_load(&second_called); i++)
			usleep(1000);
		usleep(200 * 1000);
	}
	rc = __real_pthread_join(t, r);
	if (rc)
		atomic_fetch_add(&bad_joins, 1);
	return rc;
}

static atomic_int ran;

static void item_fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&ran, 1);
}

static void *first(void *arg)
{
	(void)arg;
	is_first = 1;
	trcu_wq_shutdown();
	return NULL;
}

static void *second(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000 && !atomic_load(&first_in_join); i++)
		usleep(1000);
	atomic_store(&second_called, 1);
	trcu_wq_shutdown();
	return NULL;
}

static void two_shutdowns(void)
{
	static struct trcu_work w[8], again;
	struct trcu_workqueue *wq = trcu_alloc_workqueue("both", TRCU_WQ_UNBOUND, 0);
	pthread_t a, b;

	CHECK(wq != NULL);
	for (int i = 0; i < 8; i++) {
		trcu_init_work(&w[i], item_fn);
		CHECK(trcu_queue_work(i & 1 ? wq : trcu_system_wq(), &w[i]));
	}
	for (int i = 0; i < 8; i++)
		trcu_flush_work(&w[i]);
	CHECK_EQ(atomic_load(&ran), 8);
	CHECK_EQ(pthread_create(&a, NULL, first, NULL), 0);
	CHECK_EQ(pthread_create(&b, NULL, second, NULL), 0);
	CHECK_EQ(pthread_join(a, NULL), 0);
	CHECK_EQ(pthread_join(b, NULL), 0);
	CHECK(atomic_load(&first_in_join));
	if (atomic_load(&bad_joins)) {
		fprintf(stderr, "%d join%s of a thread joined already\n", atomic_load(&bad_joins),
			atomic_load(&bad_joins) == 1 ? "" : "s");
		CHECK_FAIL_EXIT();
	}
	/* The subsystem starts again on next use. */
	wq = trcu_alloc_workqueue("again", 0, 0);
	CHECK(wq != NULL);
	trcu_init_work(&again, item_fn);
	CHECK(trcu_queue_work(wq, &again));
	trcu_flush_work(&again);
	CHECK_EQ(atomic_load(&ran), 9);
	trcu_wq_shutdown();
	exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "two_shutdowns", two_shutdowns },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	sp_child(argc, argv, scenarios);
	printf("two trcu_wq_shutdown() calls at once\n");
	return sp_expect_exit("two_shutdowns", NULL, 60, 0, NULL, 0) ? 0 : 1;
}
