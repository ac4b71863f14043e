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

/* ---- Callback benchmarks (appended) ------------------------------------------ */

static unsigned long lu_cb_count, lu_cb_target;
static uint64_t lu_cb_done_ns;

size_t lu_rcu_head_size(void)
{
	return sizeof(struct rcu_head);
}

void lu_memb_cb_reset(unsigned long target)
{
	__atomic_store_n(&lu_cb_done_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&lu_cb_target, target, __ATOMIC_RELAXED);
	__atomic_store_n(&lu_cb_count, 0, __ATOMIC_RELEASE);
}

unsigned long lu_memb_cb_invoked(void)
{
	return __atomic_load_n(&lu_cb_count, __ATOMIC_ACQUIRE);
}

uint64_t lu_memb_cb_target_ns(void)
{
	return __atomic_load_n(&lu_cb_done_ns, __ATOMIC_ACQUIRE);
}

static void lu_cb_hit(void)
{
	unsigned long n = __atomic_add_fetch(&lu_cb_count, 1, __ATOMIC_RELEASE);

	if (n == __atomic_load_n(&lu_cb_target, __ATOMIC_RELAXED))
		__atomic_store_n(&lu_cb_done_ns, now_ns(), __ATOMIC_RELEASE);
}

static void lu_count_cb(struct rcu_head *head)
{
	(void)head;
	lu_cb_hit();
}

static void lu_free_cb(struct rcu_head *head)
{
	lu_cb_hit();
	free(head);
}

__attribute__((noinline)) void lu_memb_enqueue_loop(void *base, unsigned long n, size_t stride)
{
	for (unsigned long i = 0; i < n; i++)
		urcu_memb_call_rcu((struct rcu_head *)((char *)base + i * stride), lu_count_cb);
}

void lu_memb_call_rcu_free(void *obj)
{
	urcu_memb_call_rcu((struct rcu_head *)obj, lu_free_cb);
}
