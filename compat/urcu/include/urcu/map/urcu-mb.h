/* SPDX-License-Identifier: MIT */
/* liburcu's short names for the mb flavor (<urcu.h>-style headers define
 * URCU_API_MAP to get them).  Written by compat/urcu/gen-maps.sh from one
 * name list; every flavor's map has the same shape.  Where <treercu/rcu.h>
 * came first with its own short names, liburcu's replace those it shares. */
#ifndef TREERCU_URCU_MAP_MB_H
#define TREERCU_URCU_MAP_MB_H
#ifdef trcu_head
#undef rcu_read_lock
#undef rcu_read_unlock
#undef rcu_read_ongoing
#undef rcu_quiescent_state
#undef rcu_thread_offline
#undef rcu_thread_online
#undef rcu_register_thread
#undef rcu_unregister_thread
#undef synchronize_rcu
#undef start_poll_synchronize_rcu
#undef poll_state_synchronize_rcu
#undef call_rcu
#undef call_rcu_before_fork
#undef call_rcu_after_fork_parent
#undef call_rcu_after_fork_child
#undef rcu_barrier
#endif
#define rcu_read_lock                    urcu_mb_read_lock
#define rcu_read_unlock                  urcu_mb_read_unlock
#define rcu_read_ongoing                 urcu_mb_read_ongoing
#define rcu_quiescent_state              urcu_mb_quiescent_state
#define rcu_thread_offline               urcu_mb_thread_offline
#define rcu_thread_online                urcu_mb_thread_online
#define rcu_register_thread              urcu_mb_register_thread
#define rcu_unregister_thread            urcu_mb_unregister_thread
#define rcu_init                         urcu_mb_init
#define rcu_exit                         urcu_mb_exit
#define synchronize_rcu                  urcu_mb_synchronize_rcu
#define start_poll_synchronize_rcu       urcu_mb_start_poll_synchronize_rcu
#define poll_state_synchronize_rcu       urcu_mb_poll_state_synchronize_rcu
#define get_cpu_call_rcu_data            urcu_mb_get_cpu_call_rcu_data
#define get_call_rcu_thread              urcu_mb_get_call_rcu_thread
#define create_call_rcu_data             urcu_mb_create_call_rcu_data
#define set_cpu_call_rcu_data            urcu_mb_set_cpu_call_rcu_data
#define get_default_call_rcu_data        urcu_mb_get_default_call_rcu_data
#define get_call_rcu_data                urcu_mb_get_call_rcu_data
#define get_thread_call_rcu_data         urcu_mb_get_thread_call_rcu_data
#define set_thread_call_rcu_data         urcu_mb_set_thread_call_rcu_data
#define create_all_cpu_call_rcu_data     urcu_mb_create_all_cpu_call_rcu_data
#define free_all_cpu_call_rcu_data       urcu_mb_free_all_cpu_call_rcu_data
#define call_rcu                         urcu_mb_call_rcu
#define call_rcu_data_free               urcu_mb_call_rcu_data_free
#define call_rcu_before_fork             urcu_mb_call_rcu_before_fork
#define call_rcu_after_fork_parent       urcu_mb_call_rcu_after_fork_parent
#define call_rcu_after_fork_child        urcu_mb_call_rcu_after_fork_child
/* After <treercu/rcu.hpp> (C++), the standard's function (rcu.hpp says why). */
#if defined(__cplusplus) && defined(TREERCU_RCU_HPP)
using treercu::rcu_barrier;
#else
#define rcu_barrier                      urcu_mb_barrier
#endif
#define defer_rcu                        urcu_mb_defer_rcu
#define rcu_defer_register_thread        urcu_mb_defer_register_thread
#define rcu_defer_unregister_thread      urcu_mb_defer_unregister_thread
#define rcu_defer_barrier                urcu_mb_defer_barrier
#define rcu_defer_barrier_thread         urcu_mb_defer_barrier_thread
#define rcu_defer_exit                   urcu_mb_defer_exit
#define rcu_flavor                       urcu_mb_flavor
#define urcu_register_rculfhash_atfork   urcu_mb_register_rculfhash_atfork
#define urcu_unregister_rculfhash_atfork urcu_mb_unregister_rculfhash_atfork
#define _rcu_read_lock                   _urcu_mb_read_lock
#define _rcu_read_unlock                 _urcu_mb_read_unlock
#define _rcu_read_ongoing                _urcu_mb_read_ongoing
#define _rcu_quiescent_state             _urcu_mb_quiescent_state
#define _rcu_thread_offline              _urcu_mb_thread_offline
#define _rcu_thread_online               _urcu_mb_thread_online
#endif
