/* SPDX-License-Identifier: MIT */
/* liburcu's bp flavor as a peer (peer_liburcu.h). */
#define _LGPL_SOURCE
#include <urcu/urcu-bp.h>

#include "peer_liburcu.h"

LU_PLAIN(bp)
LU_OPS(bp, "liburcu bp");
