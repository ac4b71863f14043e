/* SPDX-License-Identifier: MIT */
/* A program's shared object that links the static treercu library. */
#include <treercu/rcu.h>

int plugin_run(void);

static int *value;

int plugin_run(void)
{
	static int a = 1, b = 2;
	int v, *old;

	rcu_assign_pointer(value, &a);
	old = rcu_xchg_pointer(&value, &b);
	synchronize_rcu();          /* old is no longer read after this */
	rcu_read_lock();
	v = *rcu_dereference(value) + *old;
	rcu_read_unlock();
	return v;
}
