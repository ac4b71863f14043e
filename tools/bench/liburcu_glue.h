/* SPDX-License-Identifier: MIT */
/*
 * liburcu memb (Debian liburcu-dev) behind plain lu_ functions, for the
 * callback benchmarks (`scale --callbacks`).  liburcu's headers define the
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

/* ---- Callback benchmarks (`scale --callbacks`; appended) ------------------
 * Objects whose first 16 bytes are liburcu's struct rcu_head (the size of
 * treercu's).  Every callback counts itself; the one that brings the count
 * to the target set by lu_memb_cb_reset() records now_ns(). */
#include <stddef.h>
#include <stdint.h>
size_t lu_rcu_head_size(void);
void lu_memb_cb_reset(unsigned long target);
unsigned long lu_memb_cb_invoked(void);
uint64_t lu_memb_cb_target_ns(void);        /* 0 until the target was reached */
/* call_rcu() of n objects at base + i * stride; the callback only counts. */
void lu_memb_enqueue_loop(void *base, unsigned long n, size_t stride);
/* call_rcu(obj); the callback counts, then free(obj). */
void lu_memb_call_rcu_free(void *obj);

#endif
