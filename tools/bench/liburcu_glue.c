/* SPDX-License-Identifier: MIT */
/*
 * liburcu glue for the callback benchmarks: includes liburcu memb, never
 * treercu (the peer units, peer_lu_*.c, bind liburcu for the other
 * benchmarks).
 */
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>

#include "common.h"
#include "liburcu_glue.h"

/* ---- memb ------------------------------------------------------------------ */

void lu_memb_register_thread(void)
{
	urcu_memb_register_thread();
}

void lu_memb_unregister_thread(void)
{
	urcu_memb_unregister_thread();
}

void lu_memb_read_lock(void)
{
	urcu_memb_read_lock();
}

void lu_memb_read_unlock(void)
{
	urcu_memb_read_unlock();
}

void lu_memb_barrier(void)
{
	urcu_memb_barrier();
}

struct lu_cb {
	struct rcu_head head;
	void (*fn)(void *arg);
	void *arg;
};

static void lu_cb_invoke(struct rcu_head *head)
{
	struct lu_cb *cb = caa_container_of(head, struct lu_cb, head);

	cb->fn(cb->arg);
	free(cb);
}

int lu_memb_call_rcu(void (*fn)(void *arg), void *arg)
{
	struct lu_cb *cb = malloc(sizeof(*cb));

	if (!cb)
		return -1;
	cb->fn = fn;
	cb->arg = arg;
	urcu_memb_call_rcu(&cb->head, lu_cb_invoke);
	return 0;
}

int lu_memb_has_membarrier(void)
{
	return urcu_memb_has_sys_membarrier;
}
