/* SPDX-License-Identifier: MIT */
/*
 * API misuse the kernel would catch is caught, each with a message that says
 * exactly what went wrong (each case runs in a child process).
 */
#define CHECK_WANT_DEATH
#include <pthread.h>

#include <treercu/rcu.h>
#include "check.h"

static void sync_in_section(void)
{
	rcu_read_lock();
	synchronize_rcu();
}

static void exp_in_section(void)
{
	rcu_read_lock();
	rcu_read_lock();
	synchronize_rcu_expedited();
}

static void cond_in_section(void)
{
	unsigned long c = get_state_synchronize_rcu();

	rcu_read_lock();
	cond_synchronize_rcu(c);
}

static void qsbr_sync_in_section(void)
{
	trcu_thread_qsbr();
	rcu_read_lock();
	synchronize_rcu();
}

static void unbalanced_unlock(void)
{
	rcu_register_thread();
	rcu_read_unlock();
}

static void unbalanced_unlock_unregistered(void)
{
	rcu_read_unlock();
}

static void unbalanced_unlock_after_pair(void)
{
	rcu_read_lock();
	rcu_read_unlock();
	rcu_read_unlock();
}

static void qsbr_unbalanced_unlock(void)
{
	trcu_thread_qsbr();
	rcu_read_unlock();
}

static void unregister_in_section(void)
{
	rcu_read_lock();
	rcu_unregister_thread();
}

static void qs_in_section(void)
{
	trcu_thread_qsbr();
	rcu_read_lock();
	rcu_quiescent_state();
}

/* An offline QSBR thread inside an explicit section: its nesting reads 1,
 * as an online one's outside any section; the inline fast path must not
 * count this as a quiescent state. */
static void offline_qs_in_section(void)
{
	trcu_thread_qsbr();
	rcu_thread_offline();
	rcu_read_lock();
	rcu_quiescent_state();
}

static void online_not_qsbr(void)
{
	rcu_register_thread();
	rcu_thread_online();
}

static void offline_in_section(void)
{
	trcu_thread_qsbr();
	rcu_read_lock();
	rcu_thread_offline();
}

static void *exit_in_section_thread(void *arg)
{
	rcu_read_lock();
	return NULL;   /* exits holding the section */
}

static void exit_in_section(void)
{
	pthread_t t;

	pthread_create(&t, NULL, exit_in_section_thread, NULL);
	pthread_join(t, NULL);
	synchronize_rcu();   /* must not hang: the thread is gone */
}

static void barrier_in_section(void)
{
	rcu_read_lock();
	rcu_barrier();
}

static void null_head(void)
{
	call_rcu(NULL, (void (*)(struct rcu_head *))free);
}

static void null_func(void)
{
	static struct rcu_head h;

	call_rcu(&h, NULL);
	rcu_barrier();
}

static void barrier_cb(struct rcu_head *rh)
{
	rcu_barrier();
}

static void barrier_from_callback(void)
{
	static struct rcu_head h;

	call_rcu(&h, barrier_cb);
	synchronize_rcu();
	for (;;)
		pause();   /* the offload thread aborts the process */
}

static void qsbr_cb(struct rcu_head *rh)
{
	(void)rh;
	trcu_thread_qsbr();
}

static void qsbr_from_callback(void)
{
	static struct rcu_head h;

	call_rcu(&h, qsbr_cb);
	synchronize_rcu();
	for (;;)
		pause();   /* the offload thread aborts the process */
}

static void shutdown_in_section(void)
{
	rcu_read_lock();
	trcu_shutdown();
}

static void shutdown_cb(struct rcu_head *rh)
{
	(void)rh;
	trcu_shutdown();
}

static void shutdown_from_callback(void)
{
	static struct rcu_head h;

	call_rcu(&h, shutdown_cb);
	synchronize_rcu();
	for (;;)
		pause();   /* the offload thread aborts the process */
}

int main(void)
{
	expect_death(sync_in_section,
		     "synchronize_rcu() called inside an RCU read-side critical section");
	expect_death(exp_in_section,
		     "synchronize_rcu_expedited() called inside an RCU read-side critical "
		     "section (nesting depth 2)");
	expect_death(cond_in_section,
		     "synchronize_rcu() called inside an RCU read-side critical section");
	expect_death(qsbr_sync_in_section,
		     "synchronize_rcu() called inside an RCU read-side critical section");
	expect_death(unbalanced_unlock, "rcu_read_unlock() without a matching rcu_read_lock()");
	expect_death(unbalanced_unlock_unregistered,
		     "rcu_read_unlock() without a matching rcu_read_lock()");
	expect_death(unbalanced_unlock_after_pair,
		     "rcu_read_unlock() without a matching rcu_read_lock()");
	expect_death(qsbr_unbalanced_unlock,
		     "rcu_read_unlock() without a matching rcu_read_lock() in QSBR thread");
	expect_death(unregister_in_section,
		     "rcu_unregister_thread() called inside an RCU read-side critical section");
	expect_death(qs_in_section,
		     "rcu_quiescent_state() called inside an RCU read-side critical section");
	expect_death(offline_qs_in_section,
		     "rcu_quiescent_state() called inside an RCU read-side critical section");
	expect_death(online_not_qsbr, "which is not a QSBR thread");
	expect_death(offline_in_section,
		     "rcu_thread_offline() called inside an RCU read-side critical section");
	expect_death(barrier_in_section,
		     "rcu_barrier() called inside an RCU read-side critical section");
	expect_death(null_head, "call_rcu(): NULL rcu_head");
	expect_message(null_func, "NULL callback function: callback not queued");
	expect_death(barrier_from_callback, "rcu_barrier() called from an RCU callback");
	expect_death(qsbr_from_callback, "trcu_thread_qsbr() called from an RCU callback");
	expect_death(shutdown_in_section,
		     "trcu_shutdown() called inside an RCU read-side critical section");
	expect_death(shutdown_from_callback, "trcu_shutdown() called from an RCU callback");
	expect_message(exit_in_section, "exited inside an RCU read-side critical section");
	printf("test_misuse: OK\n");
	return 0;
}
