/* SPDX-License-Identifier: MIT */
/*
 * liburcu's default flavor selection: RCU_MEMBARRIER (default), RCU_MB or
 * RCU_SIGNAL.  On treercu the three behave the same (treercu's read side).
 */
#ifndef _URCU_H
#define _URCU_H

#if !defined(RCU_MEMBARRIER) && !defined(RCU_SIGNAL) && !defined(RCU_MB)
#define RCU_MEMBARRIER
#endif

#ifdef RCU_MEMBARRIER
#include <urcu/urcu-memb.h>
#elif defined(RCU_SIGNAL)
#include <urcu/urcu-signal.h>
#elif defined(RCU_MB)
#include <urcu/urcu-mb.h>
#else
#error "Unknown urcu flavor"
#endif

#endif /* _URCU_H */
