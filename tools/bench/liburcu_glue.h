/* SPDX-License-Identifier: MIT */
/*
 * liburcu memb (Debian liburcu-dev) behind plain lu_ functions, for the
 * tools that call liburcu directly.  liburcu's headers define the
 * same familiar names as treercu's, so liburcu code lives only in
 * liburcu_glue.c and the peer units (peer_lu_*.c, peers.h); this header
 * includes neither library.
 */
#ifndef TREERCU_TOOL_LIBURCU_GLUE_H
#define TREERCU_TOOL_LIBURCU_GLUE_H

/* memb flavor (liburcu's default, like treercu's preemptible-style threads). */
void lu_memb_register_thread(void);
void lu_memb_unregister_thread(void);
void lu_memb_read_lock(void);          /* out-of-line wrappers */
void lu_memb_read_unlock(void);
void lu_memb_barrier(void);
int lu_memb_call_rcu(void (*fn)(void *arg), void *arg);
int lu_memb_has_membarrier(void);

#endif
