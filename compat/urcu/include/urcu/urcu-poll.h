/* SPDX-License-Identifier: MIT */
/*
 * liburcu's grace-period polling API: struct urcu_gp_poll_state, with
 * start_poll_synchronize_rcu() / poll_state_synchronize_rcu() per flavor.
 * The state carries a treercu polled-GP cookie.
 */
#ifndef _URCU_POLL_H
#define _URCU_POLL_H
#include <urcu/treercu-compat.h>
#endif /* _URCU_POLL_H */
