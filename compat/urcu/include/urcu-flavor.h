/* SPDX-License-Identifier: MIT */
/* liburcu's older spelling of <urcu/flavor.h>. */
#include <urcu/flavor.h>
