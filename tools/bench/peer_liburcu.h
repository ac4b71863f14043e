/* SPDX-License-Identifier: MIT */
/*
 * liburcu's flavors as peers (peers.h): one unit per flavor
 * (peer_lu_memb.c, peer_lu_mb.c, peer_lu_bp.c, peer_lu_qsbr.c), since
 * liburcu declares call_rcu() and rcu_barrier() for the first flavor header
 * a unit includes only.  Each unit defines _LGPL_SOURCE and includes its
 * flavor's header, then this one: liburcu's read side is inlined in the
 * loops, as treercu's is in peer_treercu.c.  The flavors link side by side:
 * each has its own urcu_<flavor>_ names.
 */
#ifndef TREERCU_TOOL_PEER_LIBURCU_H
#define TREERCU_TOOL_PEER_LIBURCU_H

#include "common.h"
#include "peers.h"

static inline void lu_nothing(void)
{
}

static inline void lu_free_cb(struct rcu_head *h)
{
	peer_free_cb(h);
}

static inline size_t lu_head_size(void)
{
	return sizeof(struct rcu_head);
}

/* The parts every flavor has, under urcu_<fl>_ names. */
#define LU_FLAVOR(fl) \
static void fl##_register(void) { urcu_##fl##_register_thread(); } \
static void fl##_read_lock(void) { urcu_##fl##_read_lock(); } \
static void fl##_read_unlock(void) { urcu_##fl##_read_unlock(); } \
static void fl##_synchronize(void) { urcu_##fl##_synchronize_rcu(); } \
static void fl##_retire(void *obj) { urcu_##fl##_call_rcu((struct rcu_head *)obj, lu_free_cb); }

/* A flavor whose readers need no quiescent states. */
#define LU_PLAIN(fl) \
LU_FLAVOR(fl) \
static void fl##_unregister(void) { urcu_##fl##_unregister_thread(); } \
static void fl##_barrier(void) { urcu_##fl##_barrier(); } \
static __attribute__((noinline)) void fl##_refscale(unsigned long nbatch) \
{ \
	REFSCALE_LOOP(nbatch, urcu_##fl##_read_lock(), urcu_##fl##_read_unlock(), (void)0); \
} \
static __attribute__((noinline)) unsigned long fl##_busy(const int *stop) \
{ \
	unsigned long n = 0; \
	BUSY_READER_LOOP(stop, urcu_##fl##_read_lock(), urcu_##fl##_read_unlock(), n); \
	return n; \
}

#define LU_OPS(fl, NAME) \
const struct peer_ops peer_lu_##fl = { \
	.name = NAME, .id = #fl, .qsbr = false, \
	.thread_register = fl##_register, .thread_unregister = fl##_unregister, \
	.thread_offline = lu_nothing, .thread_online = lu_nothing, \
	.read_lock = fl##_read_lock, .read_unlock = fl##_read_unlock, \
	.quiescent_state = lu_nothing, .refscale_loop = fl##_refscale, \
	.busy_reader = fl##_busy, .synchronize = fl##_synchronize, .retire = fl##_retire, \
	.barrier = fl##_barrier, .head_size = lu_head_size, \
}

#endif
