/* SPDX-License-Identifier: MIT */
/*
 * A work item that ran before trcu_wq_shutdown() can be queued, flushed
 * and cancelled again afterwards: the subsystem starts again on next use,
 * and the item's data word, which still names the pool it last ran on,
 * names memory that is still a pool (read under its lock to find whether
 * the item is running there).  AddressSanitizer reports a use after free
 * otherwise; without it the lock read may be anything.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "check.h"

static atomic_int ran;

static void item_fn(struct trcu_work *w)
{
	(void)w;
	atomic_fetch_add(&ran, 1);
}

int main(void)
{
	static struct trcu_work w[4];
	struct trcu_workqueue *wq;

	alarm(60);
	for (int i = 0; i < 4; i++) {
		trcu_init_work(&w[i], item_fn);
		CHECK(trcu_queue_work(i & 1 ? trcu_system_unbound_wq() : trcu_system_wq(), &w[i]));
	}
	for (int i = 0; i < 4; i++)
		trcu_flush_work(&w[i]);
	CHECK_EQ(atomic_load(&ran), 4);
	for (int round = 0; round < 3; round++) {
		trcu_wq_shutdown();
		CHECK(!trcu_flush_work(&w[0]));         /* idle: nothing to wait for */
		CHECK(!trcu_cancel_work_sync(&w[1]));   /* idle: nothing to cancel */
		wq = trcu_alloc_workqueue("again", TRCU_WQ_UNBOUND, 0);
		CHECK(wq != NULL);
		for (int i = 0; i < 4; i++)
			CHECK(trcu_queue_work(i & 1 ? wq : trcu_system_wq(), &w[i]));
		for (int i = 0; i < 4; i++)
			trcu_flush_work(&w[i]);
		CHECK_EQ(atomic_load(&ran), 8 + 4 * round);
	}
	trcu_wq_shutdown();
	printf("items from before a shutdown queued again after it: %d runs\n", atomic_load(&ran));
	return 0;
}
