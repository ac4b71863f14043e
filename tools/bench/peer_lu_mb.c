/* SPDX-License-Identifier: MIT */
/* liburcu's mb flavor as a peer (peer_liburcu.h). */
#define _LGPL_SOURCE
#include <urcu/urcu-mb.h>

#include "peer_liburcu.h"

LU_PLAIN(mb)
LU_OPS(mb, "liburcu mb");
