/* SPDX-License-Identifier: MIT */
/*
 * trcu_thread_qsbr() on a thread that is a QSBR thread already: online, it
 * changes nothing (it is liburcu's register-twice, which compat code and
 * libraries layered on each other do); offline, it brings the thread
 * online, as its comment promises.  Neither aborts.  Called inside a
 * read-side section of a thread that is not a QSBR thread it still aborts
 * with its message.  Each case in its own process (tests/common/subproc.h).
 */
#define _GNU_SOURCE
#include <stdatomic.h>

#include <treercu/treercu.h>

#include "subproc.h"

/* The caller is online: a grace period started now waits for it until its
 * next quiescent state. */
static void check_online(void)
{
	unsigned long c = start_poll_synchronize_rcu();

	usleep(20000);
	if (poll_state_synchronize_rcu(c)) {
		fprintf(stderr, "a grace period ended while the QSBR thread was online\n");
		_exit(2);
	}
	rcu_quiescent_state();
	CHECK(rcu_read_lock_held());
}

static void sc_online_again(void)
{
	trcu_thread_qsbr();
	trcu_thread_qsbr();
	check_online();
	_exit(0);
}

static void sc_offline_then_qsbr(void)
{
	trcu_thread_qsbr();
	rcu_thread_offline();
	synchronize_rcu();   /* offline: does not wait for itself */
	trcu_thread_qsbr();
	check_online();
	_exit(0);
}

static void sc_inside_section(void)
{
	rcu_register_thread();
	rcu_read_lock();
	trcu_thread_qsbr();
	_exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "online_again", sc_online_again },
	{ "offline_then_qsbr", sc_offline_then_qsbr },
	{ "inside_section", sc_inside_section },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const none[] = { NULL };
	bool ok = true;

	sp_child(argc, argv, scenarios);
	alarm(120);
	ok &= sp_expect_exit("online_again", none, 20, 0, NULL, 0);
	ok &= sp_expect_exit("offline_then_qsbr", none, 20, 0, NULL, 0);
	ok &= sp_expect_abort("inside_section", none, 20,
			      "trcu_thread_qsbr() called inside an RCU read-side critical section");
	printf("test_qsbr_thread_qsbr_again: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
