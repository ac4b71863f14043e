/* SPDX-License-Identifier: MIT */
/*
 * ThreadSanitizer's view of the library's hand-offs, for a program built
 * with ThreadSanitizer and linked with a library built without it (the
 * installed one).  ThreadSanitizer sees the program's accesses and the
 * pthread calls, not the library's atomics, futexes or membarrier(): left
 * alone it reports the free after a grace period as racing with the
 * readers' loads.  When the program has ThreadSanitizer's runtime (its
 * __tsan_acquire()/__tsan_release(), weak references here, NULL
 * otherwise), the library tells it each hand-off: a release where the
 * order starts, an acquire where the wait for it ends, at one address per
 * kind of hand-off:
 *
 *   read-side sections end    -> a grace period ended for its waiter
 *     &trcu_tsan_sections: the inline unlock and quiescent state release
 *     (include/treercu/rcu.h), a QSBR thread going offline too;
 *     synchronize_rcu(), a poll that finds its cookie done, and every
 *     callback (before it runs) acquire
 *   call_rcu() / rcu_free()   -> the callback / the free: the rcu_head, the
 *     pointer
 *   a callback ran            -> rcu_barrier() returns: &rcu_tsan_callbacks
 *   queue_work()              -> the work function: the work item
 *   a work function ran       -> a flush returns: &wq_tsan_works
 *
 * The edges are coarse: everything a thread did before any of its
 * section ends (or quiescent states: for a QSBR thread, nearly all it
 * does) is ordered before whatever follows any later grace-period wait,
 * callback or rcu_barrier() anywhere.  They report nothing RCU excludes
 * and may hide races between such accesses.  And every section end of
 * the program releases at one address, a lock inside the runtime.  A library built with
 * ThreadSanitizer itself compiles them out: its atomics are seen then, and
 * added edges would hide races from its own tests.
 */
#ifndef TREERCU_TSAN_H
#define TREERCU_TSAN_H

#include <stddef.h>

/* trcu_tsan_sections; TRCU_TSAN: this file is built with ThreadSanitizer. */
#include <treercu/rcu.h>

/* Defined in src/state.c (trcu_tsan_sections: the header's, exported). */
extern char rcu_tsan_callbacks;

#ifndef TRCU_TSAN
__attribute__((weak, visibility("default"))) void __tsan_acquire(void *addr);
__attribute__((weak, visibility("default"))) void __tsan_release(void *addr);
/* Go's race runtime (a cgo program built with -race) defines the two
 * above with another signature; its own entry point tells it apart.
 * Never called. */
__attribute__((weak, visibility("default"))) void __tsan_go_start(void);

/* The C/C++ ThreadSanitizer runtime is in the program. */
static inline int rcu_tsan_present(void)
{
	return __builtin_expect(__tsan_acquire != NULL && __tsan_go_start == NULL, 0);
}

static inline void rcu_tsan_acquire(const void *addr)
{
	if (rcu_tsan_present())
		__tsan_acquire((void *)addr);
}

static inline void rcu_tsan_release(const void *addr)
{
	if (rcu_tsan_present())
		__tsan_release((void *)addr);
}
#else
static inline void rcu_tsan_acquire(const void *addr)
{
	(void)addr;
}

static inline void rcu_tsan_release(const void *addr)
{
	(void)addr;
}
#endif

/* A grace period ended for the caller: the sections that ended before it
 * come before what the caller does next (a free). */
static inline void rcu_tsan_gp_end(void)
{
	rcu_tsan_acquire(&trcu_tsan_sections);
}

/* An online QSBR thread's implicit section ends (offline, unregistered). */
static inline void rcu_tsan_section_end(void)
{
	rcu_tsan_release(&trcu_tsan_sections);
}

#endif
