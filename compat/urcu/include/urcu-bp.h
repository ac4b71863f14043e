/* SPDX-License-Identifier: MIT */
/* liburcu's <urcu-bp.h>: the flavor with its short names. */
#define URCU_API_MAP
#include <urcu/urcu-bp.h>
