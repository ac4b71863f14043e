/* SPDX-License-Identifier: MIT */
/*
 * liburcu's memb flavor on treercu: the urcu_memb_* names; with URCU_API_MAP
 * (defined by <urcu.h>-style headers) the short names too.
 * Quiescent-state calls are no-ops, as in liburcu.
 */
#ifndef _URCU_MEMB_H
#define _URCU_MEMB_H

#include <urcu/pointer.h>
#include <urcu/call-rcu.h>
#include <urcu/defer.h>
#include <urcu/flavor.h>
#include <urcu/urcu-poll.h>

#define TRCU_URCU_F urcu_memb
#define TRCU_URCU_F_QSBR 0
#include <urcu/treercu-flavor.h>
#undef TRCU_URCU_F
#undef TRCU_URCU_F_QSBR

/* liburcu's inline (_LGPL_SOURCE) spellings. */
#define _urcu_memb_read_lock       urcu_memb_read_lock
#define _urcu_memb_read_unlock     urcu_memb_read_unlock
#define _urcu_memb_read_ongoing    urcu_memb_read_ongoing
#define _urcu_memb_quiescent_state urcu_memb_quiescent_state
#define _urcu_memb_thread_offline  urcu_memb_thread_offline
#define _urcu_memb_thread_online   urcu_memb_thread_online

/* The flavor structure liburcu-cds takes (cds_lfht_new() and friends). */
#define urcu_memb_flavor trcu_urcu_memb_flavor

#ifdef URCU_API_MAP
#include <urcu/map/urcu-memb.h>
#endif
#endif /* _URCU_MEMB_H */
