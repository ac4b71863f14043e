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

#include "subproc.h"

#define NFLOOD 6000
#define SECTION_MS 300

static _Atomic int ran, flood_done, reader_in;
static struct trcu_head heads[NFLOOD];

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran, 1);
}

/* Sections of 300 ms back to back, a short gap between them. */
static void *slow_reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&flood_done)) {
		rcu_read_lock();
		atomic_store(&reader_in, 1);
		usleep(SECTION_MS * 1000);
		rcu_read_unlock();
		usleep(1000);
	}
	return NULL;
}

static void sc_slow_gps(void)
{
	struct trcu_stats st;
	pthread_t t;
	long maxp = 0;

	CHECK(pthread_create(&t, NULL, slow_reader, NULL) == 0);
	while (!atomic_load(&reader_in))
		usleep(100);
	for (int i = 0; i < NFLOOD; i++) {
		call_rcu(&heads[i], cb);
		if (i % 50 == 0) {
			trcu_get_stats(&st);
			if (st.cbs_pending > maxp)
				maxp = st.cbs_pending;
		}
	}
	atomic_store(&flood_done, 1);
	pthread_join(t, NULL);
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
