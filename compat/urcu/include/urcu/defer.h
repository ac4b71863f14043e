/* SPDX-License-Identifier: MIT */
/*
 * liburcu's <urcu/defer.h>.  defer_rcu(fct, p) runs fct(p) after a grace
 * period, on a treercu callback-offload thread; the functions are each
 * flavor's (urcu_memb_defer_rcu(), ...; short names through the flavor's
 * map).
 */
#ifndef _URCU_DEFER_H
#define _URCU_DEFER_H
#include <urcu/treercu-compat.h>
#endif /* _URCU_DEFER_H */
