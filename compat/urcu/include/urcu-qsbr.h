/* SPDX-License-Identifier: MIT */
/* liburcu's <urcu-qsbr.h>: the flavor with its short names. */
#define URCU_API_MAP
#include <urcu/urcu-qsbr.h>
