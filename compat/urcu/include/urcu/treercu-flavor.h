/* SPDX-License-Identifier: MIT */
/*
 * One liburcu flavor's prefixed API on treercu.  Included (no include guard,
 * on purpose) by each flavor header with:
 *   TRCU_URCU_F       the prefix: urcu_memb, urcu_mb, urcu_signal, urcu_qsbr,
 *                     urcu_bp;
 *   TRCU_URCU_F_QSBR  1 for the QSBR flavor, else 0.
 * Every name is a function, so that it is usable as a value as liburcu's are.
 * All flavors share treercu's one RCU domain: a grace period waits for every
 * registered thread, whichever flavor's header it was compiled with.
 */
#include <urcu/treercu-compat.h>

/* Paste the flavor prefix and a name.  The name is pasted to "_" before
 * anything can expand it (synchronize_rcu, call_rcu, ... may be macros
 * already, from another flavor's short names). */
#define TRCU_URCU_CAT_(a, b) a##b
#define TRCU_URCU_CAT(a, b) TRCU_URCU_CAT_(a, b)
#define TRCU_URCU_N(x) TRCU_URCU_CAT(TRCU_URCU_F, _##x)

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Read side ---- */
#if TRCU_URCU_F_QSBR
/* QSBR: free, as liburcu qsbr's (its threads are online QSBR threads);
 * checked with TREERCU_DEBUG, as liburcu's are with its debug build. */
static inline void TRCU_URCU_N(read_lock)(void)
{
	trcu_qsbr_read_lock();
}

static inline void TRCU_URCU_N(read_unlock)(void)
{
	trcu_qsbr_read_unlock();
}
#else
static inline void TRCU_URCU_N(read_lock)(void)
{
	trcu_read_lock();
}

static inline void TRCU_URCU_N(read_unlock)(void)
{
	trcu_read_unlock();
}
#endif

/* Inside a read-side section (QSBR: online, as in liburcu). */
static inline int TRCU_URCU_N(read_ongoing)(void)
{
	return trcu_read_lock_held();
}

#if TRCU_URCU_F_QSBR
/* QSBR: the thread's own quiescent states (treercu's QSBR thread). */
static inline void TRCU_URCU_N(quiescent_state)(void)
{
	trcu_quiescent_state();
}

static inline void TRCU_URCU_N(thread_offline)(void)
{
	trcu_thread_offline();
}

static inline void TRCU_URCU_N(thread_online)(void)
{
	trcu_thread_online();
}

/* Registration makes a QSBR thread, online. */
static inline void TRCU_URCU_N(register_thread)(void)
{
	trcu_urcu_qsbr_register_thread();
}
#else
/* Not QSBR: quiescent states are implicit (outside rcu_read_lock()), so
 * these are no-ops as in liburcu; treercu's trcu_quiescent_state() is not
 * called (it is for QSBR threads). */
static inline void TRCU_URCU_N(quiescent_state)(void)
{
}

static inline void TRCU_URCU_N(thread_offline)(void)
{
}

static inline void TRCU_URCU_N(thread_online)(void)
{
}

static inline void TRCU_URCU_N(register_thread)(void)
{
	trcu_urcu_register_thread();
}
#endif

static inline void TRCU_URCU_N(unregister_thread)(void)
{
	trcu_unregister_thread();
}

/* treercu initialises itself on first use. */
static inline void TRCU_URCU_N(init)(void)
{
}

static inline void TRCU_URCU_N(exit)(void)
{
}

/* ---- Grace periods ---- */
static inline void TRCU_URCU_N(synchronize_rcu)(void)
{
	trcu_synchronize_rcu();
}

static inline struct urcu_gp_poll_state TRCU_URCU_N(start_poll_synchronize_rcu)(void)
{
	return trcu_urcu_start_poll();
}

static inline bool TRCU_URCU_N(poll_state_synchronize_rcu)(struct urcu_gp_poll_state state)
{
	return trcu_urcu_poll_state(state);
}

/* ---- Callbacks ---- */
static inline void TRCU_URCU_N(call_rcu)(struct rcu_head *head,
					 void (*func)(struct rcu_head *head))
{
	trcu_urcu_call_rcu(head, func);
}

static inline void TRCU_URCU_N(barrier)(void)
{
	trcu_urcu_barrier();
}

static inline struct call_rcu_data *TRCU_URCU_N(create_call_rcu_data)(unsigned long flags,
								  int cpu_affinity)
{
	return trcu_urcu_create_call_rcu_data(flags, cpu_affinity);
}

static inline void TRCU_URCU_N(call_rcu_data_free)(struct call_rcu_data *crdp)
{
	trcu_urcu_call_rcu_data_free(crdp);
}

static inline struct call_rcu_data *TRCU_URCU_N(get_default_call_rcu_data)(void)
{
	return trcu_urcu_get_default_call_rcu_data();
}

static inline struct call_rcu_data *TRCU_URCU_N(get_cpu_call_rcu_data)(int cpu)
{
	return trcu_urcu_get_cpu_call_rcu_data(cpu);
}

static inline struct call_rcu_data *TRCU_URCU_N(get_thread_call_rcu_data)(void)
{
	return trcu_urcu_get_thread_call_rcu_data();
}

static inline struct call_rcu_data *TRCU_URCU_N(get_call_rcu_data)(void)
{
	return trcu_urcu_get_call_rcu_data();
}

static inline pthread_t TRCU_URCU_N(get_call_rcu_thread)(struct call_rcu_data *crdp)
{
	return trcu_urcu_get_call_rcu_thread(crdp);
}

static inline void TRCU_URCU_N(set_thread_call_rcu_data)(struct call_rcu_data *crdp)
{
	trcu_urcu_set_thread_call_rcu_data(crdp);
}

static inline int TRCU_URCU_N(set_cpu_call_rcu_data)(int cpu, struct call_rcu_data *crdp)
{
	return trcu_urcu_set_cpu_call_rcu_data(cpu, crdp);
}

static inline int TRCU_URCU_N(create_all_cpu_call_rcu_data)(unsigned long flags)
{
	return trcu_urcu_create_all_cpu_call_rcu_data(flags);
}

static inline void TRCU_URCU_N(free_all_cpu_call_rcu_data)(void)
{
	trcu_urcu_free_all_cpu_call_rcu_data();
}

/* ---- fork() ---- */
static inline void TRCU_URCU_N(call_rcu_before_fork)(void)
{
	trcu_urcu_before_fork();
}

static inline void TRCU_URCU_N(call_rcu_after_fork_parent)(void)
{
	trcu_urcu_after_fork_parent();
}

static inline void TRCU_URCU_N(call_rcu_after_fork_child)(void)
{
	trcu_urcu_after_fork_child();
}

/* ---- defer_rcu() ---- */
static inline void TRCU_URCU_N(defer_rcu)(void (*fct)(void *p), void *p)
{
	trcu_urcu_defer_rcu(fct, p);
}

static inline int TRCU_URCU_N(defer_register_thread)(void)
{
	return trcu_urcu_defer_register_thread();
}

static inline void TRCU_URCU_N(defer_unregister_thread)(void)
{
	trcu_urcu_defer_unregister_thread();
}

static inline void TRCU_URCU_N(defer_barrier)(void)
{
	trcu_urcu_defer_barrier();
}

static inline void TRCU_URCU_N(defer_barrier_thread)(void)
{
	trcu_urcu_defer_barrier();
}

static inline void TRCU_URCU_N(defer_exit)(void)
{
}

/* ---- rculfhash's fork hooks (through the flavor structure) ---- */
static inline void TRCU_URCU_N(register_rculfhash_atfork)(struct urcu_atfork *atfork)
{
	trcu_urcu_register_rculfhash_atfork(atfork);
}

static inline void TRCU_URCU_N(unregister_rculfhash_atfork)(struct urcu_atfork *atfork)
{
	trcu_urcu_unregister_rculfhash_atfork(atfork);
}

#ifdef __cplusplus
}
#endif

#undef TRCU_URCU_N
#undef TRCU_URCU_CAT
#undef TRCU_URCU_CAT_
