/* SPDX-License-Identifier: MIT */
/*
 * With TREERCU_NO_SHORT_NAMES the header declares nothing named like the
 * kernel's or liburcu's API, so a program's own identifiers of those names
 * keep their meaning: its own struct rcu_head, a function of its own named
 * call_rcu, members named synchronize_rcu and rcu_read_lock, a local named
 * rcu_barrier.  The prefixed API is all there, as values too.
 */
#define TREERCU_NO_SHORT_NAMES
#include <stddef.h>
#include <stdlib.h>

#include <treercu/rcu.h>
#include "check.h"

/* The program's own types and functions, unrelated to treercu's. */
struct rcu_head {
	int mine;
	int other;
};

static int call_rcu(struct rcu_head *h, int x)
{
	return h->mine + h->other + x;
}

static int rcu_dereference(int x)
{
	return x * 2;
}

struct my_ops {
	void (*synchronize_rcu)(void);
	void (*call_rcu)(struct trcu_head *head, void (*func)(struct trcu_head *head));
	int rcu_read_lock;
	int rcu_head;
};

struct obj {
	int v;
	struct trcu_head rh;
};

static int freed;

static void obj_free(struct trcu_head *h)
{
	struct obj *o = (struct obj *)((char *)h - offsetof(struct obj, rh));

	__atomic_fetch_add(&freed, o->v, __ATOMIC_RELAXED);
	free(o);
}

static struct obj *gp;

int main(void)
{
	struct rcu_head mine = { 3, 4 };
	struct my_ops o = { trcu_synchronize_rcu, trcu_call_rcu, 5, 6 };
	struct obj *a = calloc(1, sizeof(*a)), *old;
	int rcu_barrier = 7;

	CHECK(a);
	CHECK_EQ(sizeof(struct rcu_head), 2 * sizeof(int));
	CHECK_EQ(call_rcu(&mine, 1), 8);
	CHECK_EQ(rcu_dereference(21), 42);
	CHECK_EQ(o.rcu_read_lock + o.rcu_head + rcu_barrier, 18);

	a->v = 9;
	trcu_assign_pointer(gp, a);
	trcu_read_lock();
	CHECK_EQ(trcu_dereference(gp)->v, 9);
	trcu_read_unlock();
	old = trcu_xchg_pointer(&gp, NULL);
	o.synchronize_rcu();
	o.call_rcu(&old->rh, obj_free);
	trcu_rcu_barrier();
	CHECK_EQ(__atomic_load_n(&freed, __ATOMIC_RELAXED), 9);
	return 0;
}
