/* SPDX-License-Identifier: MIT */
/*
 * An offload thread naps for a woken synchronize_rcu() caller that has not
 * run yet: the wake count (sync_wake_seq) is ahead of the resume count.  A
 * count that stays ahead with no caller left to catch it up (a wake counted
 * for callers that had already returned) is stale.  A nap once per
 * situation, with gp_seq_needed (which every GP moves) in the situation,
 * would let one stale count make the offload thread nap before every
 * batch.  A woken-caller situation is deferred once per wake count.
 *
 * Injected here: one wake counted with no caller, then ROUNDS batches of
 * BATCH callbacks, each followed by rcu_barrier() (new GPs in between).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include <treercu/rcu.h>
#include "check.h"
#include "internal.h"
#include "sync_hint.h"

#define ROUNDS 8
#define BATCH 5000

static struct trcu_head heads[BATCH];
static _Atomic long ran;

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

int main(void)
{
	struct trcu_stats a, b;

	CHECK_EQ(trcu_set_tunable("nocb_defer_us", 200), 0);
	rcu_barrier();                  /* offload thread up, nothing pending */
	rcu_note_sync_wake();           /* stale: nobody will resume for it */
	trcu_get_stats(&a);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BATCH; i++)
			call_rcu(&heads[i], cb);
		rcu_barrier();
	}
	trcu_get_stats(&b);
	CHECK_EQ(atomic_load(&ran), (long)ROUNDS * BATCH);
	printf("%d batches of %d callbacks after one stale wake count: %ld naps\n",
	       ROUNDS, BATCH, b.nocb_defers - a.nocb_defers);
	CHECK(b.nocb_defers - a.nocb_defers <= 1);
	printf("test_nocb_defers_once_per_wake: OK\n");
	return 0;
}
