/* SPDX-License-Identifier: MIT */
/*
 * Debug-only event trace (build with -DTREERCU_TRACE=1): timestamped events
 * in one ring, dumped at exit to $TREERCU_TRACE_FILE.  Compiled out
 * otherwise.  Shows where synchronize_rcu() time goes: who ran, woke and
 * waited, when, on which CPU (docs/design.md, "Tracing").
 */
#ifndef TREERCU_TRACE_H
#define TREERCU_TRACE_H

#ifdef TREERCU_TRACE
void trace_record(const char *ev, long arg);
#define TRACE_RECORD(ev, arg) trace_record(ev, (long)(arg))
#else
#define TRACE_RECORD(ev, arg) do { } while (0)
#endif

#endif
