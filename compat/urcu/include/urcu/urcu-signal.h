/* SPDX-License-Identifier: MIT */
/*
 * liburcu's signal flavor on treercu: the urcu_signal_* names; with URCU_API_MAP
 * (defined by <urcu.h>-style headers) the short names too.
 * Quiescent-state calls are no-ops, as in liburcu.
 */
#ifndef _URCU_SIGNAL_H
#define _URCU_SIGNAL_H

#include <urcu/pointer.h>
#include <urcu/call-rcu.h>
#include <urcu/defer.h>
#include <urcu/flavor.h>
#include <urcu/urcu-poll.h>

#define TRCU_URCU_F urcu_signal
#define TRCU_URCU_F_QSBR 0
#include <urcu/treercu-flavor.h>
#undef TRCU_URCU_F
#undef TRCU_URCU_F_QSBR

/* liburcu's inline (_LGPL_SOURCE) spellings. */
#define _urcu_signal_read_lock       urcu_signal_read_lock
#define _urcu_signal_read_unlock     urcu_signal_read_unlock
#define _urcu_signal_read_ongoing    urcu_signal_read_ongoing
#define _urcu_signal_quiescent_state urcu_signal_quiescent_state
#define _urcu_signal_thread_offline  urcu_signal_thread_offline
#define _urcu_signal_thread_online   urcu_signal_thread_online

/* The flavor structure liburcu-cds takes (cds_lfht_new() and friends). */
#define urcu_signal_flavor trcu_urcu_signal_flavor

#ifdef URCU_API_MAP
#include <urcu/map/urcu-signal.h>
#endif
#endif /* _URCU_SIGNAL_H */
