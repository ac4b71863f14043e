/* SPDX-License-Identifier: MIT */
/*
 * liburcu's qsbr flavor on treercu: the urcu_qsbr_* names; with URCU_API_MAP
 * (defined by <urcu.h>-style headers) the short names too.
 * QSBR: rcu_register_thread() makes a treercu QSBR thread, online;
 * rcu_quiescent_state(), rcu_thread_offline()/online() are treercu's.
 */
#ifndef _URCU_QSBR_H
#define _URCU_QSBR_H

#include <urcu/pointer.h>
#include <urcu/call-rcu.h>
#include <urcu/defer.h>
#include <urcu/flavor.h>
#include <urcu/urcu-poll.h>

#define TRCU_URCU_F urcu_qsbr
#define TRCU_URCU_F_QSBR 1
#include <urcu/treercu-flavor.h>
#undef TRCU_URCU_F
#undef TRCU_URCU_F_QSBR

/* liburcu's inline (_LGPL_SOURCE) spellings. */
#define _urcu_qsbr_read_lock       urcu_qsbr_read_lock
#define _urcu_qsbr_read_unlock     urcu_qsbr_read_unlock
#define _urcu_qsbr_read_ongoing    urcu_qsbr_read_ongoing
#define _urcu_qsbr_quiescent_state urcu_qsbr_quiescent_state
#define _urcu_qsbr_thread_offline  urcu_qsbr_thread_offline
#define _urcu_qsbr_thread_online   urcu_qsbr_thread_online

/* The flavor structure liburcu-cds takes (cds_lfht_new() and friends). */
#define urcu_qsbr_flavor trcu_urcu_qsbr_flavor

#ifdef URCU_API_MAP
#include <urcu/map/urcu-qsbr.h>
#endif
#endif /* _URCU_QSBR_H */
