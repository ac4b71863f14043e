/* SPDX-License-Identifier: MIT */
/*
 * Every blocking call treats an online QSBR caller as synchronize_rcu()
 * does: quiescent for the length of the wait, online again after.  Called
 * from the only registered thread, online in QSBR mode, each call returns
 * (the caller's own missing quiescent state held up rcu_barrier() for
 * good).  Each call runs in its own process (tests/common/subproc.h) under a hard
 * alarm, on each synchronize_rcu() path.  call_rcu() is no quiescent state:
 * its flood push-back does not run on an online QSBR thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include <treercu/treercu.h>

#include "subproc.h"

static _Atomic int ran;

static void cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran, 1);
}

static void qsbr_online(void)
{
	trcu_thread_qsbr();
}

/* The caller is online again afterwards: a GP started now waits for it. */
static void check_online_after(void)
{
	unsigned long c = start_poll_synchronize_rcu();

	usleep(20000);
	if (poll_state_synchronize_rcu(c)) {
		fprintf(stderr, "a grace period ended while the QSBR caller was online\n");
		_exit(2);
	}
	rcu_quiescent_state();
}

static void sc_barrier(void)
{
	static struct trcu_head h;

	qsbr_online();
	call_rcu(&h, cb);
	rcu_barrier();
	CHECK_EQ(atomic_load(&ran), 1);
	check_online_after();
	_exit(0);
}

static void sc_sync(void)
{
	qsbr_online();
	synchronize_rcu();
	check_online_after();
	_exit(0);
}

static void sc_expedited(void)
{
	qsbr_online();
	synchronize_rcu_expedited();
	check_online_after();
	_exit(0);
}

static void sc_cond(void)
{
	unsigned long c;
	struct trcu_gp_oldstate os;

	qsbr_online();
	c = get_state_synchronize_rcu();
	cond_synchronize_rcu(c);
	get_state_synchronize_rcu_full(&os);
	cond_synchronize_rcu_full(&os);
	check_online_after();
	_exit(0);
}

/* No flood push-back on an online QSBR thread: its wait would count the
 * thread quiescent while it may still hold references (call_rcu() is no
 * quiescent state, in liburcu qsbr either).  A plain thread's flood in the
 * same run is pushed back. */
static void *plain_flood(void *arg)
{
	static struct trcu_head h[3000];

	(void)arg;
	for (int i = 0; i < 3000; i++)
		call_rcu(&h[i], cb);
	return NULL;
}

static void sc_pushback(void)
{
	static struct trcu_head h[3000];
	struct trcu_stats st;
	pthread_t t;

	qsbr_online();
	for (int i = 0; i < 3000; i++)
		call_rcu(&h[i], cb);
	trcu_get_stats(&st);
	CHECK_EQ(st.cbs_pushback, 0);
	rcu_barrier();
	CHECK_EQ(atomic_load(&ran), 3000);
	CHECK(pthread_create(&t, NULL, plain_flood, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	rcu_barrier();
	CHECK_EQ(atomic_load(&ran), 6000);
	trcu_get_stats(&st);
	CHECK(st.cbs_pushback > 0);
	_exit(0);
}

static void sc_shutdown(void)
{
	static struct trcu_head h;

	qsbr_online();
	call_rcu(&h, cb);
	trcu_shutdown();
	CHECK_EQ(atomic_load(&ran), 1);
	_exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "rcu_barrier", sc_barrier },
	{ "synchronize_rcu", sc_sync },
	{ "synchronize_rcu_expedited", sc_expedited },
	{ "cond_synchronize_rcu", sc_cond },
	{ "call_rcu_pushback", sc_pushback },
	{ "trcu_shutdown", sc_shutdown },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const paths[][3] = {
		{ "TREERCU_NORMAL_WAKE_FROM_GP=0", NULL },
		{ "TREERCU_NORMAL_WAKE_FROM_GP=1", NULL },
		{ "TREERCU_NORMAL_WAKE_FROM_GP=2", NULL },
	};
	static const char *const flood[] = { "TREERCU_CB_MAX_PENDING=1000", "TREERCU_QHIMARK=100",
					     NULL };
	bool ok = true;

	sp_child(argc, argv, scenarios);
	alarm(600);
	printf("test_qsbr_blocking: each call from an online QSBR thread, own process, 20 s alarm\n");
	for (int p = 0; p < 3; p++) {
		printf(" %s\n", paths[p][0]);
		for (const struct sp_scenario *s = scenarios; s->name; s++) {
			if (!strcmp(s->name, "call_rcu_pushback"))
				continue;
			ok &= sp_expect_exit(s->name, paths[p], 20, 0, NULL, 0);
		}
	}
	printf(" TREERCU_CB_MAX_PENDING=1000 TREERCU_QHIMARK=100\n");
	ok &= sp_expect_exit("call_rcu_pushback", flood, 20, 0, NULL, 0);
	if (!ok) {
		printf("test_qsbr_blocking: FAILED\n");
		return 1;
	}
	printf("test_qsbr_blocking: every blocking call returned and left the caller online\n");
	return 0;
}
