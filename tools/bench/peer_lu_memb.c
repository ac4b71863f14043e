/* SPDX-License-Identifier: MIT */
/* liburcu's memb flavor as a peer (peer_liburcu.h). */
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>

#include "peer_liburcu.h"

LU_PLAIN(memb)
LU_OPS(memb, "liburcu memb");
