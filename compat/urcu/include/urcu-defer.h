/* SPDX-License-Identifier: MIT */
/* liburcu's older spelling of <urcu/defer.h>. */
#include <urcu/defer.h>
