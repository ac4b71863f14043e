/* SPDX-License-Identifier: MIT */
/*
 * liburcu's <urcu/call-rcu.h>: struct rcu_head, struct call_rcu_data and its
 * flags.  The functions are each flavor's (urcu_memb_call_rcu(), ...; short
 * names through the flavor's map).
 */
#ifndef _URCU_CALL_RCU_H
#define _URCU_CALL_RCU_H
#include <urcu/treercu-compat.h>
#endif /* _URCU_CALL_RCU_H */
