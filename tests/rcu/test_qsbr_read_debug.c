/* SPDX-License-Identifier: MIT */
/*
 * The QSBR read side built with TREERCU_DEBUG names the misuse the free
 * pair cannot see: a section on a thread that is not an online QSBR thread,
 * an unbalanced unlock, and a quiescent state, going offline or a grace-
 * period wait inside a section (each case in a child process).  Balanced
 * use passes and leaves the thread as it found it.
 */
#define TREERCU_DEBUG
#define CHECK_WANT_DEATH
#include <treercu/rcu.h>
#include "check.h"

static void lock_on_default_thread(void)
{
	rcu_register_thread();
	trcu_qsbr_read_lock();
}

static void lock_offline(void)
{
	trcu_thread_qsbr();
	rcu_thread_offline();
	trcu_qsbr_read_lock();
}

static void unlock_on_default_thread(void)
{
	rcu_register_thread();
	trcu_read_lock();
	trcu_qsbr_read_unlock();
}

static void unbalanced_unlock(void)
{
	trcu_thread_qsbr();
	trcu_qsbr_read_lock();
	trcu_qsbr_read_unlock();
	trcu_qsbr_read_unlock();
}

static void qs_in_section(void)
{
	trcu_thread_qsbr();
	trcu_qsbr_read_lock();
	rcu_quiescent_state();
}

static void offline_in_section(void)
{
	trcu_thread_qsbr();
	trcu_qsbr_read_lock();
	rcu_thread_offline();
}

static void sync_in_section(void)
{
	trcu_thread_qsbr();
	trcu_qsbr_read_lock();
	synchronize_rcu();
}

int main(void)
{
	unsigned long nf;

	expect_death(lock_on_default_thread,
		     "trcu_qsbr_read_lock() on thread");
	expect_death(lock_offline, "which is not an online QSBR thread");
	expect_death(unlock_on_default_thread,
		     "trcu_qsbr_read_unlock() on thread");
	expect_death(unbalanced_unlock,
		     "rcu_read_unlock() without a matching rcu_read_lock() in QSBR thread");
	expect_death(qs_in_section,
		     "rcu_quiescent_state() called inside an RCU read-side critical section");
	expect_death(offline_in_section,
		     "rcu_thread_offline() called inside an RCU read-side critical section");
	expect_death(sync_in_section,
		     "synchronize_rcu() called inside an RCU read-side critical section");
	/* Balanced use: nesting counted, and back where it was. */
	trcu_thread_qsbr();
	nf = __atomic_load_n(&trcu_reader_tls.nest_flags, __ATOMIC_RELAXED);
	trcu_qsbr_read_lock();
	trcu_qsbr_read_lock();
	CHECK_EQ(__atomic_load_n(&trcu_reader_tls.nest_flags, __ATOMIC_RELAXED), nf + 2);
	trcu_qsbr_read_unlock();
	trcu_qsbr_read_unlock();
	CHECK_EQ(__atomic_load_n(&trcu_reader_tls.nest_flags, __ATOMIC_RELAXED), nf);
	rcu_quiescent_state();
	synchronize_rcu();
	rcu_thread_offline();
	rcu_unregister_thread();
	printf("test_qsbr_read_debug: OK\n");
	return 0;
}
