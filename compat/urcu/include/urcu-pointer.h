/* SPDX-License-Identifier: MIT */
/* liburcu's older spelling of <urcu/pointer.h>. */
#include <urcu/pointer.h>
