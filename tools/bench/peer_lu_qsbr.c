/* SPDX-License-Identifier: MIT */
/* liburcu's qsbr flavor as a peer (peer_liburcu.h): readers online between
 * quiescent states. */
#define _LGPL_SOURCE
#include <urcu/urcu-qsbr.h>

#include "peer_liburcu.h"

LU_FLAVOR(qsbr)

/* liburcu's unregister takes an online thread offline first. */
static void qsbr_unregister(void)
{
	urcu_qsbr_unregister_thread();
}

static void qsbr_offline(void)
{
	urcu_qsbr_thread_offline();
}

static void qsbr_online(void)
{
	urcu_qsbr_thread_online();
}

static void qsbr_quiescent(void)
{
	urcu_qsbr_quiescent_state();
}

/* urcu_qsbr_barrier() refuses an online caller (it counts as a reader). */
static void qsbr_barrier(void)
{
	urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	urcu_qsbr_thread_online();
}

static __attribute__((noinline)) void qsbr_refscale_qs(unsigned long nbatch)
{
	REFSCALE_LOOP(nbatch, urcu_qsbr_read_lock(), urcu_qsbr_read_unlock(),
		      urcu_qsbr_quiescent_state());
}

static __attribute__((noinline)) unsigned long qsbr_busy(const int *stop)
{
	unsigned long n = 0;

	PEER_BUSY_QSBR_LOOP(stop, urcu_qsbr_read_lock(), urcu_qsbr_read_unlock(),
			    urcu_qsbr_quiescent_state(), n);
	return n;
}

const struct peer_ops peer_lu_qsbr = {
	.name = "liburcu qsbr", .id = "qsbr", .qsbr = true,
	.thread_register = qsbr_register, .thread_unregister = qsbr_unregister,
	.thread_offline = qsbr_offline, .thread_online = qsbr_online,
	.read_lock = qsbr_read_lock, .read_unlock = qsbr_read_unlock,
	.quiescent_state = qsbr_quiescent, .refscale_loop = qsbr_refscale_qs,
	.busy_reader = qsbr_busy, .synchronize = qsbr_synchronize, .retire = qsbr_retire,
	.barrier = qsbr_barrier, .head_size = lu_head_size,
};
