/* SPDX-License-Identifier: MIT */
/*
 * The short names are usable as a program uses liburcu's:
 * - names of functions are values: call_rcu, synchronize_rcu, rcu_barrier,
 *   rcu_read_lock/unlock, rcu_read_ongoing and the polled calls go into a
 *   table of function pointers (as liburcu's flavor structures hold them)
 *   and work through it;
 * - struct rcu_head is the type call_rcu takes, and struct trcu_head is the
 *   same type, so a callback written for either is accepted by both;
 * - a member named rcu_head (the kernel's habit) is left alone.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include <treercu/rcu.h>
#include "check.h"

struct ops {
	void (*read_lock)(void);
	void (*read_unlock)(void);
	bool (*read_ongoing)(void);
	void (*synchronize_rcu)(void);
	void (*call_rcu)(struct rcu_head *head, void (*func)(struct rcu_head *head));
	void (*rcu_barrier)(void);
	unsigned long (*start_poll)(void);
	bool (*poll_state)(unsigned long cookie);
};

static const struct ops ops = {
	.read_lock = rcu_read_lock,
	.read_unlock = rcu_read_unlock,
	.read_ongoing = rcu_read_ongoing,
	.synchronize_rcu = synchronize_rcu,
	.call_rcu = call_rcu,
	.rcu_barrier = rcu_barrier,
	.start_poll = start_poll_synchronize_rcu,
	.poll_state = poll_state_synchronize_rcu,
};

struct obj {
	long v;
	struct rcu_head rcu_head;
};

static long freed;

static void obj_free(struct rcu_head *h)
{
	struct obj *o = (struct obj *)((char *)h - offsetof(struct obj, rcu_head));

	__atomic_fetch_add(&freed, o->v, __ATOMIC_RELAXED);
	free(o);
}

/* Written against the prefixed tag: the same type. */
static void obj_free_prefixed(struct trcu_head *h)
{
	obj_free(h);
}

static struct obj *gp;

int main(void)
{
	struct obj *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b)), *old;
	unsigned long cookie;

	CHECK(a && b);
	CHECK(ops.call_rcu == &trcu_call_rcu);
	CHECK(ops.synchronize_rcu == &trcu_synchronize_rcu);
	a->v = 1;
	b->v = 2;
	rcu_assign_pointer(gp, a);

	ops.read_lock();
	CHECK(ops.read_ongoing());
	CHECK_EQ(rcu_dereference(gp)->v, 1);
	ops.read_unlock();
	CHECK(!ops.read_ongoing());

	old = rcu_xchg_pointer(&gp, b);
	CHECK(old == a);
	ops.synchronize_rcu();
	cookie = ops.start_poll();
	ops.synchronize_rcu();
	CHECK(ops.poll_state(cookie));

	ops.call_rcu(&old->rcu_head, obj_free);
	old = rcu_xchg_pointer(&gp, NULL);
	call_rcu(&old->rcu_head, obj_free_prefixed);
	ops.rcu_barrier();
	CHECK_EQ(__atomic_load_n(&freed, __ATOMIC_RELAXED), 3);
	CHECK(gp == NULL);
	return 0;
}
