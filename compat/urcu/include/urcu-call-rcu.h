/* SPDX-License-Identifier: MIT */
/* liburcu's older spelling of <urcu/call-rcu.h>. */
#include <urcu/call-rcu.h>
