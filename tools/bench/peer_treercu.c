/* SPDX-License-Identifier: MIT */
/*
 * treercu as a peer (peers.h): default threads, QSBR threads, and task
 * readers (each reader thread a worker with one task switched in, reading
 * with trcu_task_read_lock(t)).  The loops inline treercu's read side, as
 * peer_liburcu.c's inline liburcu's.
 */
#include <treercu/rcu.h>
#include <treercu/task.h>

#include "common.h"
#include "peers.h"

static void tr_register(void)
{
	trcu_register_thread();
}

static void tr_register_qsbr(void)
{
	trcu_register_thread();
	trcu_thread_qsbr();
}

/* trcu_unregister_thread() leaves queued callbacks to the library, which
 * runs them; barrier() waits for them where the caller needs it. */
static void tr_unregister(void)
{
	trcu_unregister_thread();
}

static void tr_unregister_qsbr(void)
{
	trcu_thread_offline();
	trcu_unregister_thread();
}

static void tr_nothing(void)
{
}

static void tr_offline(void)
{
	trcu_thread_offline();
}

static void tr_online(void)
{
	trcu_thread_online();
}

static void tr_read_lock(void)
{
	rcu_read_lock();
}

static void tr_read_unlock(void)
{
	rcu_read_unlock();
}

/* QSBR threads read with the QSBR read side, as liburcu qsbr's readers do. */
static void tr_qsbr_read_lock(void)
{
	trcu_qsbr_read_lock();
}

static void tr_qsbr_read_unlock(void)
{
	trcu_qsbr_read_unlock();
}

static void tr_quiescent(void)
{
	rcu_quiescent_state();
}

static __attribute__((noinline)) void tr_refscale(unsigned long nbatch)
{
	REFSCALE_LOOP(nbatch, rcu_read_lock(), rcu_read_unlock(), (void)0);
}

static __attribute__((noinline)) void tr_refscale_qsbr(unsigned long nbatch)
{
	REFSCALE_LOOP(nbatch, trcu_qsbr_read_lock(), trcu_qsbr_read_unlock(),
		      rcu_quiescent_state());
}

static __attribute__((noinline)) unsigned long tr_busy(const int *stop)
{
	unsigned long n = 0;

	BUSY_READER_LOOP(stop, rcu_read_lock(), rcu_read_unlock(), n);
	return n;
}

static __attribute__((noinline)) unsigned long tr_busy_qsbr(const int *stop)
{
	unsigned long n = 0;

	PEER_BUSY_QSBR_LOOP(stop, trcu_qsbr_read_lock(), trcu_qsbr_read_unlock(),
			    rcu_quiescent_state(), n);
	return n;
}

static void tr_synchronize(void)
{
	synchronize_rcu();
}

static void tr_free_cb(struct rcu_head *h)
{
	peer_free_cb(h);
}

static void tr_retire(void *obj)
{
	call_rcu((struct rcu_head *)obj, tr_free_cb);
}

static void tr_barrier(void)
{
	rcu_barrier();
}

static size_t tr_head_size(void)
{
	return sizeof(struct rcu_head);
}

const struct peer_ops peer_treercu = {
	.name = "treercu", .id = "treercu", .qsbr = false,
	.thread_register = tr_register, .thread_unregister = tr_unregister,
	.thread_offline = tr_nothing, .thread_online = tr_nothing,
	.read_lock = tr_read_lock, .read_unlock = tr_read_unlock,
	.quiescent_state = tr_nothing, .refscale_loop = tr_refscale, .busy_reader = tr_busy,
	.synchronize = tr_synchronize, .retire = tr_retire, .barrier = tr_barrier,
	.head_size = tr_head_size,
};

const struct peer_ops peer_treercu_qsbr = {
	.name = "treercu qsbr", .id = "treercu-qsbr", .qsbr = true,
	.thread_register = tr_register_qsbr, .thread_unregister = tr_unregister_qsbr,
	.thread_offline = tr_offline, .thread_online = tr_online,
	.read_lock = tr_qsbr_read_lock, .read_unlock = tr_qsbr_read_unlock,
	.quiescent_state = tr_quiescent, .refscale_loop = tr_refscale_qsbr,
	.busy_reader = tr_busy_qsbr, .synchronize = tr_synchronize, .retire = tr_retire,
	.barrier = tr_barrier, .head_size = tr_head_size,
};

/* ---- Task readers ---------------------------------------------------------- */

static __thread struct trcu_task tr_task;

static void tr_register_task(void)
{
	trcu_register_thread();
	trcu_task_init(&tr_task, 0, "peer");
	trcu_task_switch_in(&tr_task);
}

static void tr_unregister_task(void)
{
	trcu_task_switch_out(&tr_task);
	trcu_task_exit(&tr_task);
	trcu_unregister_thread();
}

static void tr_task_read_lock(void)
{
	trcu_task_read_lock(&tr_task);
}

static void tr_task_read_unlock(void)
{
	trcu_task_read_unlock(&tr_task);
}

static __attribute__((noinline)) void tr_refscale_task(unsigned long nbatch)
{
	struct trcu_task *t = &tr_task;

	REFSCALE_LOOP(nbatch, trcu_task_read_lock(t), trcu_task_read_unlock(t), (void)0);
}

static __attribute__((noinline)) unsigned long tr_busy_task(const int *stop)
{
	struct trcu_task *t = &tr_task;
	unsigned long n = 0;

	BUSY_READER_LOOP(stop, trcu_task_read_lock(t), trcu_task_read_unlock(t), n);
	return n;
}

const struct peer_ops peer_treercu_task = {
	.name = "treercu task", .id = "treercu-task", .qsbr = false,
	.thread_register = tr_register_task, .thread_unregister = tr_unregister_task,
	.thread_offline = tr_nothing, .thread_online = tr_nothing,
	.read_lock = tr_task_read_lock, .read_unlock = tr_task_read_unlock,
	.quiescent_state = tr_nothing, .refscale_loop = tr_refscale_task,
	.busy_reader = tr_busy_task, .synchronize = tr_synchronize, .retire = tr_retire,
	.barrier = tr_barrier, .head_size = tr_head_size,
};
