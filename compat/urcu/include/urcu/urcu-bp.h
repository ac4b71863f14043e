/* SPDX-License-Identifier: MIT */
/*
 * liburcu's bp flavor on treercu: the urcu_bp_* names; with URCU_API_MAP
 * (defined by <urcu.h>-style headers) the short names too.
 * bp: registration is optional (treercu registers a thread at its first
 * rcu_read_lock() and unregisters it at exit).
 */
#ifndef _URCU_BP_H
#define _URCU_BP_H

#include <urcu/pointer.h>
#include <urcu/call-rcu.h>
#include <urcu/defer.h>
#include <urcu/flavor.h>
#include <urcu/urcu-poll.h>

#define TRCU_URCU_F urcu_bp
#define TRCU_URCU_F_QSBR 0
#include <urcu/treercu-flavor.h>
#undef TRCU_URCU_F
#undef TRCU_URCU_F_QSBR

/* liburcu's inline (_LGPL_SOURCE) spellings. */
#define _urcu_bp_read_lock       urcu_bp_read_lock
#define _urcu_bp_read_unlock     urcu_bp_read_unlock
#define _urcu_bp_read_ongoing    urcu_bp_read_ongoing
#define _urcu_bp_quiescent_state urcu_bp_quiescent_state
#define _urcu_bp_thread_offline  urcu_bp_thread_offline
#define _urcu_bp_thread_online   urcu_bp_thread_online

/* The flavor structure liburcu-cds takes (cds_lfht_new() and friends). */
#define urcu_bp_flavor trcu_urcu_bp_flavor

/* bp's own fork hooks: treercu's fork handling (as call_rcu_before_fork()). */
static inline void urcu_bp_before_fork(void)
{
	trcu_urcu_before_fork();
}

static inline void urcu_bp_after_fork_parent(void)
{
	trcu_urcu_after_fork_parent();
}

static inline void urcu_bp_after_fork_child(void)
{
	trcu_urcu_after_fork_child();
}

#ifdef URCU_API_MAP
#include <urcu/map/urcu-bp.h>
#endif
#endif /* _URCU_BP_H */
