/* SPDX-License-Identifier: MIT */
/*
 * call_rcu() never waits for a stalled reader without limit.  The flood
 * push-back (above cb_max_pending callbacks pending) waits while grace
 * periods end or callbacks run; once neither happens for cb_pushback_ms it
 * returns, the thread's callbacks pile up until a grace period ends, and
 * the stall warning says how many wait.  Without a stall the push-back
 * still keeps the thread's pending callbacks bounded.  Each case runs in
 * its own process (tests/common/subproc.h) under a hard alarm.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include <treercu/treercu.h>

#include "subproc.h"

#define NFLOOD 20000
#define STALL_MS 3000

static _Atomic int reader_in, ran;
static struct trcu_head heads[NFLOOD];

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran, 1);
}

static void *reader(void *arg)
{
	(void)arg;
	rcu_read_lock();
	atomic_store(&reader_in, 1);
	usleep(STALL_MS * 1000);
	rcu_read_unlock();
	return NULL;
}

/* Queue NFLOOD callbacks; returns the longest call in ms. */
static long flood(long *max_pending)
{
	long worst = 0;

	*max_pending = 0;
	for (int i = 0; i < NFLOOD; i++) {
		long t0 = check_now_ms(), d;

		call_rcu(&heads[i], cb);
		d = check_now_ms() - t0;
		if (d > worst)
			worst = d;
		if (i % 100 == 0) {
			struct trcu_stats st;

			trcu_get_stats(&st);
			if (st.cbs_pending > *max_pending)
				*max_pending = st.cbs_pending;
		}
	}
	return worst;
}

/* A reader stalls 3 s while this thread floods: no call waits for it. */
static void sc_stalled(void)
{
	pthread_t t;
	long worst, maxp;

	CHECK(pthread_create(&t, NULL, reader, NULL) == 0);
	while (!atomic_load(&reader_in))
		usleep(100);
	worst = flood(&maxp);
	fprintf(stderr, "longest call_rcu(): %ld ms, most pending: %ld\n", worst, maxp);
	CHECK(worst < 1000);
	pthread_join(t, NULL);
	rcu_barrier();
	CHECK_EQ(atomic_load(&ran), NFLOOD);
	_exit(0);
}

static _Atomic int flood_done;

/* Sections of 2 ms back to back: grace periods end, slowly. */
static void *slow_reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&flood_done)) {
		rcu_read_lock();
		usleep(2000);
		rcu_read_unlock();
	}
	return NULL;
}

/* Grace periods slow but ending: the push-back keeps this thread's pending
 * callbacks at cb_max_pending. */
static void sc_flowing(void)
{
	struct trcu_stats st;
	pthread_t t;
	long maxp;

	CHECK(pthread_create(&t, NULL, slow_reader, NULL) == 0);
	flood(&maxp);
	atomic_store(&flood_done, 1);
	pthread_join(t, NULL);
	fprintf(stderr, "most pending: %ld\n", maxp);
	trcu_get_stats(&st);
	CHECK(st.cbs_pushback > 0);
	CHECK(maxp <= 1000 + 1);
	rcu_barrier();
	CHECK_EQ(atomic_load(&ran), NFLOOD);
	_exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "stalled", sc_stalled },
	{ "flowing", sc_flowing },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const env[] = { "TREERCU_CB_MAX_PENDING=1000", "TREERCU_QHIMARK=100",
					   "TREERCU_STALL_TIMEOUT_MS=500", NULL };
	/* A generous limit: here the grace periods end, however slowly the
	 * machine runs them. */
	static const char *const env_flowing[] = { "TREERCU_CB_MAX_PENDING=1000",
						   "TREERCU_QHIMARK=100",
						   "TREERCU_CB_PUSHBACK_MS=2000", NULL };
	bool ok = true;

	sp_child(argc, argv, scenarios);
	alarm(300);
	printf("test_call_rcu_stall_bound: cb_max_pending 1000, qhimark 100, stall timeout 500 ms\n");
	ok &= sp_expect_exit("stalled", env, 30, 0, "callbacks pending", -1);
	ok &= sp_expect_exit("flowing", env_flowing, 60, 0, NULL, 0);
	if (!ok) {
		printf("test_call_rcu_stall_bound: FAILED\n");
		return 1;
	}
	printf("test_call_rcu_stall_bound: no call_rcu() waited for the stalled reader; the "
	       "stall warning counts the pending callbacks\n");
	return 0;
}
