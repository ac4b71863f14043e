/* SPDX-License-Identifier: MIT */
/*
 * call_rcu()'s flood bound holds while grace periods are slow but end.  A
 * reader that holds each section 300 ms (a reader preempted inside its
 * section on a loaded machine looks like this to a grace period) keeps
 * gp_seq still for up to that long between moves; the push-back must keep
 * waiting for it rather than count it as a stalled reader and let the
 * flood run past cb_max_pending until gp_seq moves.  With the defaults the
 * push-back waits up to a tenth of stall_timeout_ms (21 s) without progress.
 * Runs as a child with cb_max_pending 1000 and qhimark 100.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/treercu.h>

#include "holder.h"
#include "subproc.h"

#define NFLOOD 6000
#define SECTION_MS 300

static _Atomic int ran;
static struct trcu_head heads[NFLOOD];

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran, 1);
}

static void sc_slow_gps(void)
{
	struct trcu_stats st;
	struct slow_reader sr;
	long maxp = 0;

	slow_reader_start(&sr, SECTION_MS);
	for (int i = 0; i < NFLOOD; i++) {
		call_rcu(&heads[i], cb);
		if (i % 50 == 0) {
			trcu_get_stats(&st);
			if (st.cbs_pending > maxp)
				maxp = st.cbs_pending;
		}
	}
	slow_reader_stop(&sr);
	trcu_get_stats(&st);
	fprintf(stderr, "most pending: %ld (cb_max_pending 1000), push-backs %ld\n", maxp,
		st.cbs_pushback);
	CHECK(st.cbs_pushback > 0);
	CHECK(maxp <= 1000 + 1);
	rcu_barrier();
	CHECK_EQ(atomic_load(&ran), NFLOOD);
	_exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "slow_gps", sc_slow_gps },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const env[] = { "TREERCU_CB_MAX_PENDING=1000", "TREERCU_QHIMARK=100",
					   NULL };

	sp_child(argc, argv, scenarios);
	alarm(280);
	printf("test_call_rcu_flood_bound_slow_gps: cb_max_pending 1000, qhimark 100, "
	       "%d ms sections back to back\n", SECTION_MS);
	if (!sp_expect_exit("slow_gps", env, 240, 0, NULL, 0)) {
		printf("test_call_rcu_flood_bound_slow_gps: FAILED\n");
		return 1;
	}
	printf("test_call_rcu_flood_bound_slow_gps: pending callbacks stayed at cb_max_pending\n");
	return 0;
}
