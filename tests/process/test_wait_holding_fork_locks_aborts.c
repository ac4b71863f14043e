/* SPDX-License-Identifier: MIT */
/*
 * A wait for a grace period on the thread that holds the library's fork
 * locks (between trcu_before_fork() and its after-fork call; a
 * pthread_atfork() prepare handler registered before treercu was loaded
 * runs there) would wait for ever: it aborts instead, naming the call and
 * the reason.  After the after-fork call the same waits work, and so do
 * they after a trcu_before_fork() made before the library's first use,
 * which takes nothing.  Each scenario runs in its own process
 * (tests/common/subproc.h); a hang fails on its timeout.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include <treercu/rcu.h>

#include "subproc.h"

static void s_sync(void)
{
	rcu_register_thread();
	trcu_before_fork();
	synchronize_rcu();
	exit(0);   /* not reached */
}

static void s_expedited(void)
{
	rcu_register_thread();
	trcu_before_fork();
	synchronize_rcu_expedited();
	exit(0);
}

/* Before the library's first use the prepare step takes nothing (there is
 * nothing to protect): a wait after it works. */
static void s_before_first_use(void)
{
	trcu_before_fork();
	synchronize_rcu();
	trcu_after_fork_parent();
	synchronize_rcu();
	exit(0);
}

static void s_barrier(void)
{
	rcu_register_thread();
	trcu_before_fork();
	rcu_barrier();
	exit(0);
}

/* The after-fork call releases the locks: the waits work again. */
static void s_after_parent(void)
{
	rcu_register_thread();
	trcu_before_fork();
	trcu_after_fork_parent();
	synchronize_rcu();
	synchronize_rcu_expedited();
	rcu_barrier();
	rcu_unregister_thread();
	exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "sync", s_sync },
	{ "expedited", s_expedited },
	{ "barrier", s_barrier },
	{ "after_parent", s_after_parent },
	{ "before_first_use", s_before_first_use },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	ok &= sp_expect_abort("sync", NULL, 30,
			      "synchronize_rcu() called between trcu_before_fork() and its "
			      "after-fork call");
	ok &= sp_expect_abort("expedited", NULL, 30,
			      "synchronize_rcu_expedited() called between trcu_before_fork()");
	ok &= sp_expect_abort("barrier", NULL, 30,
			      "rcu_barrier() called between trcu_before_fork()");
	ok &= sp_expect_exit("after_parent", NULL, 30, 0, NULL, 0);
	ok &= sp_expect_exit("before_first_use", NULL, 30, 0, NULL, 0);
	return ok ? 0 : 1;
}
