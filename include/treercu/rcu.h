/* SPDX-License-Identifier: MIT */
/*
 * treercu: the Linux kernel's Tree RCU for userspace programs.
 *
 * Read side: inline, no atomic read-modify-write and no fence on the fast
 * path.  The update side pairs the readers' compiler barriers with
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED); where membarrier is refused
 * the library switches every thread to the fenced read side at init and says
 * so on stderr (see docs/design.md, "Read side").
 *
 * Every exported symbol starts with trcu_.  The familiar kernel/liburcu names
 * (rcu_read_lock(), synchronize_rcu(), call_rcu(), ...) are what users type;
 * define TREERCU_NO_SHORT_NAMES before including this header to get only the
 * trcu_ names (for a program that also includes liburcu's headers).  See
 * "Familiar names" at the end of this header for what the short names are.
 */
#ifndef TREERCU_RCU_H
#define TREERCU_RCU_H

#ifndef __cplusplus
#include <stdbool.h>
#endif
#include <stddef.h>

#include <treercu/options.h>  /* build options, version, TRCU_API */

/* Built with ThreadSanitizer: its __tsan_release() for the read side's
 * TRCU_TSAN_SECTION_END() (below), from its own header where there is one
 * (outside extern "C": it includes the C library's headers). */
#if defined(__SANITIZE_THREAD__)
#define TRCU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRCU_TSAN 1
#endif
#endif
#if defined(TRCU_TSAN) && defined(__has_include)
#if __has_include(<sanitizer/tsan_interface.h>)
#include <sanitizer/tsan_interface.h>
#endif
#endif
/* Without that header (its guard, gcc's and clang's alike), our own. */
#if defined(TRCU_TSAN) && !defined(SANITIZER_TSAN_INTERFACE_H)
#ifdef __cplusplus
extern "C"
#endif
void __tsan_release(void *addr);
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TREERCU_NO_SHORT_NAMES
#ifdef _URCU_CALL_RCU_H
#error "treercu: liburcu's <urcu/call-rcu.h> already defines struct rcu_head; define TREERCU_NO_SHORT_NAMES to use treercu beside liburcu (prefixed names only)"
#endif
/*
 * With the short names the kernel's type names are the real tags: the
 * callback head is struct rcu_head and struct trcu_head is another spelling
 * of it (a user's own struct rcu_head then collides loudly instead of being
 * renamed).  With TREERCU_NO_SHORT_NAMES the tags are trcu_head and
 * trcu_gp_oldstate and nothing named rcu_* is declared.  Tags do not reach
 * the ABI: the functions are extern "C" and take pointers.
 */
#define trcu_head        rcu_head
#define trcu_gp_oldstate rcu_gp_oldstate
#endif

#define TRCU_LIKELY(x)   __builtin_expect(!!(x), 1)
#define TRCU_UNLIKELY(x) __builtin_expect(!!(x), 0)

#if __SIZEOF_LONG__ != 8
#error "treercu: trcu_reader.nest_flags needs a 64-bit unsigned long (LP64: x86-64, arm64)"
#endif

/*
 * trcu_reader.nest_flags: the read-side nesting depth in the low 32 bits,
 * flags in the high 32, so that one load and one compare test both on the
 * fast path.  Owner-written, read by the owner's read side only.
 */
#define TRCU_NEST_MASK 0xffffffffUL
#define TRCU_RF_FENCED (1UL << 32) /* fenced read side (no membarrier) */
#define TRCU_RF_QSBR   (1UL << 33) /* online QSBR thread: nesting biased by one */
/* Not registered: set in every thread's initial TLS and again at
 * unregistration, so that the fast path's one compare of nest_flags also
 * says "registered" and need not load ->watching for it. */
#define TRCU_RF_UNREG  (1UL << 34)
/* Blocked waiting for a grace period (the early report counts the thread
 * quiescent): a section on it, which only a signal handler can run, takes
 * the slow path's fenced entry. */
#define TRCU_RF_BLOCKED (1UL << 35)
/* An emergency section: a signal handler's section on a thread whose
 * registration, unregistration or library initialisation it interrupted,
 * counted in a global instead of the thread's slot (src/thread.c). */
#define TRCU_RF_EMERG  (1UL << 36)
/* A worker of task readers (<treercu/task.h>): set at the thread's first
 * trcu_task_switch_in() and kept for the thread's life, registrations
 * included.  Task code may run a plain rcu_read_lock() through a thread
 * pointer the compiler computed before a switch that moved the task to
 * another worker: the nest_flags it then loads are a worker's, which carry
 * this flag, so the inline code stores nothing and goes out of line, where
 * the thread is read afresh. */
#define TRCU_RF_TASK   (1UL << 37)
/* A worker whose task resumed inside a section it was switched out of (the
 * task's list entry holds the grace periods; include/treercu/task.h). */
#define TRCU_RF_TASK_BLOCKED (1UL << 38)
/* An offline QSBR thread: a section on it takes the slow path's fenced
 * entry (as a blocked thread's does), and going online fences, so that a
 * grace period counts it quiescent from an even ->watching without a
 * membarrier (src/gp.c, rcu_early_qs()). */
#define TRCU_RF_QSBR_OFL (1UL << 39)

/*
 * Per-thread reader state, one per thread, in TLS, on its own cache line:
 * only what the inline read side touches (the library keeps the rest of a
 * thread's state in src/).  Plain fields accessed with the compiler's
 * __atomic builtins, so that this header is the same in C and C++.  The
 * grace-period machinery reads ->watching and ->need_qs through the
 * thread's slot.
 *
 * watching: written only by the owner (relaxed stores).  0 means "not
 *   registered"; odd means "this thread may hold references"; even and
 *   non-zero means "extended quiescent state".  From an odd value the owner
 *   can only move on through a quiescent state, so a grace-period scan that
 *   sees a value different from its odd snapshot, or an even one, knows the
 *   thread passed through one (the kernel's dyntick snapshot, docs/design.md
 *   section 2).  On x86-64 the outermost lock stores trcu_reader_gen (below)
 *   rather than ->watching + 1, so the same odd value can come back within
 *   one grace period; a scan counts the current GP's generation as a
 *   quiescent state, and ->need_qs settles an older one.
 * nest_flags: nesting depth and flags (above); online QSBR threads keep a
 *   bias of one so that rcu_read_lock()/unlock() only move the counter.
 * need_qs: set by a grace-period driver that is about to sleep on this
 *   holdout; the outermost unlock then reports the quiescent state itself.
 *   1: through the combining tree; 2: a spinning driver watches for the
 *   0 and reports for it (src/qsbr_poll.c, "Polled reports").
 */
struct trcu_reader {
	unsigned long watching;
	unsigned long nest_flags;
	unsigned int need_qs;
} __attribute__((aligned(64)));

TRCU_API extern __thread struct trcu_reader trcu_reader_tls;

/*
 * The generation an outermost rcu_read_lock() stores into ->watching on
 * x86-64: odd, tagged with TRCU_READER_GEN_TAG, advanced by 2 at every
 * grace-period start before the GP-start membarrier (src/gp.c,
 * rcu_gp_init()), read-mostly, on its own cache line.  Only this fast path
 * stores tagged odd values (the slow paths strip the tag), so a scan that
 * finds exactly the current GP's generation knows the section began after
 * the GP started: on a TSO machine it then sees every update that preceded
 * the GP, and is quiescent for it (docs/design.md section 1).  Storing
 * ->watching + 1 instead makes each call wait for the previous call's store
 * (store-to-load forwarding, twice per pair: docs/decisions.md, "The read
 * side on x86-64 stores the reader generation").  Elsewhere (arm64, the
 * fenced build) the lock keeps ->watching + 1: the GP-end membarrier is
 * skipped there only when a reader's even value is unchanged across the
 * GP start, which needs every section to leave a distinct value.  The one
 * piece of grace-period state outside rcu_state: the inline read side
 * cannot see rcu_state (as liburcu's readers read rcu_gp.ctr).
 */
#define TRCU_READER_GEN_TAG (1UL << 62)
#if defined(__x86_64__) && !defined(TREERCU_FENCED)
#define TRCU_READ_GEN 1
#else
#define TRCU_READ_GEN 0
#endif
TRCU_API extern unsigned long trcu_reader_gen;

/*
 * ThreadSanitizer in the program: it sees the program's accesses but not the
 * library's atomics or membarrier(), so a grace period's end does not order
 * the readers' loads before the updater's free for it.  Every read-side
 * section's end (and a QSBR quiescent state) releases at the address of
 * trcu_tsan_sections; the library, when the program has ThreadSanitizer's
 * runtime, acquires there wherever a grace period has ended for its caller
 * (src/tsan.h).  Without ThreadSanitizer this compiles to nothing.
 */
TRCU_API extern char trcu_tsan_sections;
#ifdef TRCU_TSAN
#define TRCU_TSAN_SECTION_END() __tsan_release(&trcu_tsan_sections)
#else
#define TRCU_TSAN_SECTION_END() ((void)0)
#endif

/* Out-of-line slow paths (src/thread.c). */
TRCU_API void trcu_read_lock_slow(struct trcu_reader *r);
TRCU_API void trcu_read_lock_nested_slow(struct trcu_reader *r);
TRCU_API void trcu_read_unlock_slow(struct trcu_reader *r);
TRCU_API void trcu_report_qs_slow(struct trcu_reader *r);
TRCU_API void trcu_quiescent_state_slow(struct trcu_reader *r);
TRCU_API void trcu_unbalanced_unlock(struct trcu_reader *r) __attribute__((noreturn));
/* On a worker of task readers (TRCU_RF_TASK), src/task.c: they act on the
 * task switched in now, or on the thread's own section. */
TRCU_API void trcu_read_lock_task(void);
TRCU_API void trcu_read_unlock_task(void);
TRCU_API bool trcu_read_lock_held_task(void);

/*
 * trcu_read_lock: enter a read-side critical section.
 * Outermost entry makes ->watching odd.  The compiler barrier after the store
 * keeps the section's loads after it; the CPU ordering is supplied by the
 * grace-period driver's membarrier() (sys_gp_mb() in src/sys.c), which
 * pairs with this barrier.
 *
 * Async-signal-safe (docs/design.md, "Signal handlers"): a handler may run
 * a section of its own between any two instructions here.  The outermost
 * lock publishes nesting 1 before it makes ->watching odd, with a compiler
 * barrier between: a handler that lands before the nesting store runs a
 * whole section of its own and leaves nesting 0 behind it; one that lands
 * after finds nesting 1 and ->watching even, the one state that says "an
 * outermost lock is half done", and makes ->watching odd itself in the
 * nested branch's slow path.
 */
static inline void trcu_read_lock(void)
{
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	if (TRCU_LIKELY(nf == 0)) {
		/* Outermost, registered, no flags (not fenced, not QSBR).
		 * Whole-word stores: a 32-bit store followed by the next
		 * 64-bit load would defeat store-to-load forwarding. */
		__atomic_store_n(&r->nest_flags, 1, __ATOMIC_RELAXED);
		/* Signal handlers: nesting before ->watching (see above). */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
#if TRCU_READ_GEN
		/* No load of ->watching at all: no store-load chain from call
		 * to call, and no load for a "registered?" test
		 * (docs/decisions.md, "The read side on x86-64 stores the
		 * reader generation").  Relaxed: TSO keeps this load before the section's
		 * loads, and a section that read the current GP's generation
		 * sees what preceded that GP (causality through the GP
		 * driver's stores: rcu_watching_qs()); one that read an older
		 * one and stored it before the GP-start membarrier's IPI is
		 * seen by the scans, as with w + 1. */
		__atomic_store_n(&r->watching, __atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
#else
		/* | 1, not + 1: a handler that landed after the nesting store
		 * may have made ->watching odd already; it stays that value. */
		__atomic_store_n(&r->watching, __atomic_load_n(&r->watching, __ATOMIC_RELAXED) | 1,
				 __ATOMIC_RELAXED);
#endif
		/* Pairs with sys_gp_mb() at GP start (membarrier). */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	} else if (TRCU_LIKELY((nf & TRCU_NEST_MASK) != 0 && !(nf & TRCU_RF_TASK))) {
		/* Nested, or an online QSBR thread. */
		__atomic_store_n(&r->nest_flags, nf + 1, __ATOMIC_RELAXED);
		/* Signal handlers: nesting before the ->watching check. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		/* Even under nesting >= 1 only in a handler that interrupted
		 * an outermost lock between its two stores (or a thread's
		 * registration): make it odd out of line. */
		if (TRCU_UNLIKELY(!(__atomic_load_n(&r->watching, __ATOMIC_RELAXED) & 1)))
			trcu_read_lock_nested_slow(r);
	} else if (nf & TRCU_RF_TASK) {
		/* A worker of task readers: r may be another worker's (a
		 * switch since it was computed); store nothing through it. */
		trcu_read_lock_task();
	} else {
		/* Unregistered, fenced, blocked, or an offline QSBR thread. */
		__atomic_store_n(&r->nest_flags, nf + 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		trcu_read_lock_slow(r);
	}
}

/*
 * trcu_read_unlock: leave a read-side critical section.
 * The compiler barrier before the store keeps the section's accesses before
 * the store that makes ->watching even; it pairs with sys_gp_mb() at GP end.
 * The barrier after it orders that store before the ->need_qs load: the
 * driver sets ->need_qs, runs membarrier(), then rereads ->watching, so
 * either it sees the even value or this load sees ->need_qs set (store
 * buffering resolved by membarrier).
 *
 * Async-signal-safe: the outermost unlock publishes nesting 0 before it
 * makes ->watching even.  A handler that lands before the nesting store
 * nests in this section (->watching is odd); one that lands after runs a
 * whole section of its own, which leaves ->watching even, as this one's
 * store does.
 */
static inline void trcu_read_unlock(void)
{
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	TRCU_TSAN_SECTION_END();

	if (TRCU_LIKELY(nf == 1)) {
		/* Outermost, no flags. */
		unsigned long w = __atomic_load_n(&r->watching, __ATOMIC_RELAXED);

		/* Pairs with sys_gp_mb() at GP end (membarrier). */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&r->nest_flags, 0, __ATOMIC_RELAXED);
		/* Signal handlers: nesting 0 before ->watching even. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&r->watching, w + 1, __ATOMIC_RELAXED);
		/* Pairs with the driver's store of ->need_qs + membarrier(). */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (TRCU_UNLIKELY(__atomic_load_n(&r->need_qs, __ATOMIC_RELAXED)))
			trcu_report_qs_slow(r);
	} else if (TRCU_LIKELY((nf & TRCU_NEST_MASK) > 1 && !(nf & TRCU_RF_TASK))) {
		__atomic_store_n(&r->nest_flags, nf - 1, __ATOMIC_RELAXED);
	} else if (nf & TRCU_RF_TASK) {
		trcu_read_unlock_task();       /* worker of task readers (see lock) */
	} else if ((nf & TRCU_NEST_MASK) == 1) {
		trcu_read_unlock_slow(r);      /* fenced, QSBR, blocked, emergency */
	} else {
		trcu_unbalanced_unlock(r);
	}
}

/* True when the calling thread is inside a read-side critical section
 * (a QSBR thread that is online always is). */
static inline bool trcu_read_lock_held(void)
{
	unsigned long nf = __atomic_load_n(&trcu_reader_tls.nest_flags, __ATOMIC_RELAXED);

	if (TRCU_UNLIKELY(nf & TRCU_RF_TASK))
		return trcu_read_lock_held_task();   /* the task's section counts */
	return (nf & TRCU_NEST_MASK) != 0;
}

/* ---- Pointer publication ------------------------------------------------ */

/*
 * The pointer macros take plain pointers in C and C++ and, in C, _Atomic
 * ones too.  TRCU_PTR_ADDR(pp) is what the __atomic builtins are given:
 * clang refuses an _Atomic operand there, so in C with clang the address is
 * converted to one of the unqualified pointer type (same size, alignment and
 * representation; "(void)0, x" drops the qualifiers, as gcc's own
 * <stdatomic.h> does).  gcc and C++ take the address as it is.
 */
#if defined(__clang__) && !defined(__cplusplus)
#define TRCU_PTR_ADDR(pp)  ((__typeof__((void)0, *(pp)) *)(pp))
#define TRCU_PTR_CADDR(pp) ((__typeof__((void)0, *(pp)) const *)(pp))
#else
#define TRCU_PTR_ADDR(pp)  (pp)
#define TRCU_PTR_CADDR(pp) (pp)
#endif

/*
 * trcu_dereference(p): load the pointer p (an lvalue) published with one of
 * the macros below.  A consume load; compilers implement consume as acquire,
 * which costs nothing on x86-64 and one ldar on arm64.  Pairs with the
 * release (or stronger) store of trcu_assign_pointer(), trcu_set_pointer(),
 * trcu_xchg_pointer() and trcu_cmpxchg_pointer().
 */
#define trcu_dereference(p) \
	__atomic_load_n(TRCU_PTR_CADDR(&(p)), __ATOMIC_CONSUME)

/* trcu_assign_pointer(p, v): the kernel's form, p an lvalue.  Release store:
 * the pointee's initialisation is visible before the pointer.  Pairs with
 * the consume load in trcu_dereference(). */
#define trcu_assign_pointer(p, v) \
	__atomic_store_n(TRCU_PTR_ADDR(&(p)), (v), __ATOMIC_RELEASE)

/* trcu_set_pointer(pp, v): liburcu's form, pp the pointer's address; the
 * same release store as trcu_assign_pointer(*pp, v) (pairs with
 * trcu_dereference()). */
#define trcu_set_pointer(pp, v) \
	__atomic_store_n(TRCU_PTR_ADDR(pp), (v), __ATOMIC_RELEASE)

/* trcu_xchg_pointer(pp, v): liburcu's form.  Stores v into *pp and returns
 * the old pointer (for a later grace period to free).  Full ordering, as
 * liburcu's: its release half publishes v (pairs with trcu_dereference()),
 * its acquire half orders the old pointee's use after the load. */
#define trcu_xchg_pointer(pp, v) \
	__atomic_exchange_n(TRCU_PTR_ADDR(pp), (v), __ATOMIC_SEQ_CST)

/* trcu_cmpxchg_pointer(pp, old, new): liburcu's form.  If *pp is old, stores
 * new; returns what *pp held (equal to old exactly when new was stored).
 * Ordered as trcu_xchg_pointer() when it stores; when it does not, an
 * acquire load, so the pointer returned may be followed as one from
 * trcu_dereference() (pairs with the publishing release store). */
#define trcu_cmpxchg_pointer(pp, old, new_) \
	(__extension__({ \
		__typeof__((void)0, *(pp)) trcu_cmpxchg_old_ = (old); \
		__atomic_compare_exchange_n(TRCU_PTR_ADDR(pp), &trcu_cmpxchg_old_, (new_), \
					    0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE); \
		trcu_cmpxchg_old_; \
	}))

/*
 * The kernel's other accessors, p an lvalue as in trcu_dereference():
 * - trcu_access_pointer(p): the pointer's value, not to be followed (a
 *   test against NULL, a comparison): a relaxed load, inside or outside a
 *   read-side section; orders nothing.
 * - trcu_dereference_protected(p, c): the updater's load, where c (the
 *   update-side lock held, say) keeps p from changing: relaxed, as no
 *   concurrent store can publish a new pointee.  c is type-checked, never
 *   evaluated (the kernel checks it only under lockdep).
 * - trcu_dereference_check(p, c), trcu_dereference_raw(p): trcu_dereference().
 * - TRCU_INIT_POINTER(p, v): store without ordering, for NULL or for a
 *   pointee that readers cannot reach yet or that was published before.
 * - trcu_replace_pointer(p, v, c): publish v (as trcu_assign_pointer()) and
 *   return the old pointer, loaded as trcu_dereference_protected(p, c).
 * - trcu_pointer_handoff(p): p; marks where a pointer leaves RCU's protection.
 */
#define trcu_access_pointer(p) \
	__atomic_load_n(TRCU_PTR_CADDR(&(p)), __ATOMIC_RELAXED)
#define trcu_dereference_protected(p, c) \
	((void)(0 && (c)), __atomic_load_n(TRCU_PTR_CADDR(&(p)), __ATOMIC_RELAXED))
#define trcu_dereference_check(p, c) ((void)(0 && (c)), trcu_dereference(p))
#define trcu_dereference_raw(p) trcu_dereference(p)
#define TRCU_INIT_POINTER(p, v) \
	__atomic_store_n(TRCU_PTR_ADDR(&(p)), (v), __ATOMIC_RELAXED)
#define trcu_replace_pointer(p, v, c) \
	(__extension__({ \
		__typeof__((void)0, p) trcu_replace_old_ = trcu_dereference_protected(p, c); \
		trcu_assign_pointer(p, v); \
		trcu_replace_old_; \
	}))
#define trcu_pointer_handoff(p) (p)

/* ---- Threads ------------------------------------------------------------ */

/* Register the calling thread (a "CPU coming online": counted from the next
 * grace period on).  Idempotent.  A thread that enters a read-side section
 * unregistered is registered automatically (out of memory, that aborts with
 * a message: register explicitly to get ENOMEM instead); one that exits is
 * unregistered automatically.  Returns 0, or -1 with errno ENOMEM (the slot
 * table or the rcu_node tree it needs cannot grow) and nothing changed. */
TRCU_API int trcu_register_thread(void);
/* Unregister; aborts with a message if called inside a read-side section. */
TRCU_API void trcu_unregister_thread(void);

/* QSBR-style operation for the calling thread (opt-in).  Online, the thread
 * is always in a read-side section except at trcu_quiescent_state(); its
 * rcu_read_lock()/unlock() only move a counter. */
TRCU_API void trcu_thread_qsbr(void);       /* switch the calling thread to QSBR, online */
TRCU_API void trcu_thread_online(void);     /* QSBR: leave the extended quiescent state */
TRCU_API void trcu_thread_offline(void);    /* QSBR: enter an extended quiescent state */

/*
 * fork().  Handled automatically (pthread_atfork() handlers registered at
 * the library's first use): the child keeps the forking thread, with its
 * read-side state, and can use every API; callbacks, rcu_free() pointers
 * and work items queued before the fork run once, in the parent only.  A
 * program that creates its child without fork() (a raw clone() system call,
 * which runs no atfork handlers) calls these around it instead: before, then
 * after_fork_parent() in the parent and after_fork_child() in the child.
 * Nesting with the automatic handlers is fine.  Not from a signal handler.
 * docs/design.md, "Guarantees".
 */
TRCU_API void trcu_before_fork(void);
TRCU_API void trcu_after_fork_parent(void);
TRCU_API void trcu_after_fork_child(void);

/*
 * trcu_quiescent_state: QSBR momentary quiescent state (the kernel's
 * rcu_momentary_eqs()).  ->watching += 2 keeps it odd while telling a scan
 * that a quiescent state passed.  Compiler barriers on both sides pair with
 * the driver's membarrier() at GP start and end, as in lock/unlock.
 */
static inline void trcu_quiescent_state(void)
{
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned long w = __atomic_load_n(&r->watching, __ATOMIC_RELAXED);

	TRCU_TSAN_SECTION_END();

	/* Fast path: online QSBR thread (TRCU_RF_QSBR is set only while
	 * online), not fenced, outside any explicit nested section. */
	if (TRCU_UNLIKELY(__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) != (TRCU_RF_QSBR | 1))) {
		trcu_quiescent_state_slow(r);
		return;
	}
	/* Pairs with sys_gp_mb() at GP end: earlier section before the store. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&r->watching, w + 2, __ATOMIC_RELAXED);
	/* Pairs with the driver's ->need_qs store + membarrier() (for an
	 * online QSBR holdout, the store alone: the report's leaf lock
	 * orders it, src/gp.c, rcu_qsbr_holdout(), or a polled answer's
	 * exchange, src/qsbr_poll.c), and with sys_gp_mb() at GP start for
	 * the next section. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (TRCU_UNLIKELY(__atomic_load_n(&r->need_qs, __ATOMIC_RELAXED)))
		trcu_report_qs_slow(r);
}

/*
 * The QSBR read side: trcu_qsbr_read_lock()/trcu_qsbr_read_unlock(), for
 * code that runs only on online QSBR threads (liburcu qsbr's read side).
 * An online QSBR thread is in a read-side section everywhere except at
 * trcu_quiescent_state() and while offline, so these need do nothing: no
 * load, no store, not even a compiler barrier (the compiler barriers that
 * matter are trcu_quiescent_state()'s and the online/offline transitions').
 * Plain rcu_read_lock()/unlock() keep working on every thread, QSBR or
 * not, in the same domain; the two pairs may nest in each other on a QSBR
 * thread.  From a signal handler only while the thread is online (a
 * handler that may land while it is offline uses rcu_read_lock()).
 *
 * With TREERCU_DEBUG defined before this header is included, they check
 * what the free pair cannot: the thread is an online QSBR thread (lock and
 * unlock), the pair is balanced, and no quiescent state, offline or
 * grace-period wait happens inside it (the pair then counts nesting as
 * rcu_read_lock() does, and the library's checks name the misuse).
 */
TRCU_API void trcu_qsbr_read_misuse(const char *what) __attribute__((noreturn));

#ifdef TREERCU_DEBUG
static inline void trcu_qsbr_read_lock(void)
{
	if (TRCU_UNLIKELY(!(__atomic_load_n(&trcu_reader_tls.nest_flags, __ATOMIC_RELAXED) &
			    TRCU_RF_QSBR)))
		trcu_qsbr_read_misuse("trcu_qsbr_read_lock()");
	trcu_read_lock();
}

static inline void trcu_qsbr_read_unlock(void)
{
	unsigned long nf = __atomic_load_n(&trcu_reader_tls.nest_flags, __ATOMIC_RELAXED);

	if (TRCU_UNLIKELY(!(nf & TRCU_RF_QSBR)))
		trcu_qsbr_read_misuse("trcu_qsbr_read_unlock()");
	/* Nesting 1 is the online bias alone: trcu_read_unlock() dies
	 * naming the unbalanced unlock. */
	trcu_read_unlock();
}
#else
static inline void trcu_qsbr_read_lock(void)
{
}

static inline void trcu_qsbr_read_unlock(void)
{
}
#endif

/* ---- Grace periods ------------------------------------------------------ */

TRCU_API void trcu_synchronize_rcu(void);
TRCU_API void trcu_synchronize_rcu_expedited(void);

/* Polled grace periods.  A cookie is a grace-period sequence snapshot. */
#define TRCU_GET_STATE_COMPLETED 0x1UL
TRCU_API unsigned long trcu_get_state_synchronize_rcu(void);
TRCU_API unsigned long trcu_start_poll_synchronize_rcu(void);
TRCU_API bool trcu_poll_state_synchronize_rcu(unsigned long cookie);
TRCU_API void trcu_cond_synchronize_rcu(unsigned long cookie);
TRCU_API unsigned long trcu_get_completed_synchronize_rcu(void);
/* Two cookies name the same grace-period state. */
TRCU_API bool trcu_same_state_synchronize_rcu(unsigned long a, unsigned long b);
/* Expedited: start_poll's cookie, its grace period driven without sleeps
 * (as while a synchronize_rcu_expedited() caller waits); cond_ waits with
 * synchronize_rcu_expedited() when the cookie is not done. */
TRCU_API unsigned long trcu_start_poll_synchronize_rcu_expedited(void);
TRCU_API void trcu_cond_synchronize_rcu_expedited(unsigned long cookie);

/* Full cookies: satisfied by a normal or an expedited grace period, and
 * exact (no false "completed" across wrap). */
struct trcu_gp_oldstate {
	unsigned long rgos_norm;
	unsigned long rgos_exp;
};
TRCU_API void trcu_get_state_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp);
TRCU_API void trcu_start_poll_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp);
TRCU_API bool trcu_poll_state_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp);
TRCU_API void trcu_cond_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp);
TRCU_API void trcu_get_completed_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp);
TRCU_API bool trcu_same_state_synchronize_rcu_full(struct trcu_gp_oldstate *a,
					  struct trcu_gp_oldstate *b);
TRCU_API void trcu_start_poll_synchronize_rcu_expedited_full(struct trcu_gp_oldstate *rgosp);
TRCU_API void trcu_cond_synchronize_rcu_expedited_full(struct trcu_gp_oldstate *rgosp);

/* ---- Callbacks (src/nocb.c) ------------------------------------------------ */

/* Embed one in the object to free; func runs after a grace period, on a
 * callback-offload thread (never inside call_rcu()). */
struct trcu_head {
	struct trcu_head *next;
	void (*func)(struct trcu_head *head);
};

/* Queue func(head) to run after a grace period.  May be lazy (tunable
 * "lazy"): the callback may wait up to lazy_flush_ms to save wake-ups.
 * No error return, and no abort for want of memory or threads: a thread
 * whose callback state cannot be allocated queues on one shared queue
 * (docs/design.md, "Allocation failure").  A head may be queued again only once its
 * callback has started: queued twice in a row on one thread, it aborts
 * naming the head; with other callbacks between, it corrupts the callback
 * list (other callbacks are lost), which the TREERCU_DEBUG_OBJECTS build
 * catches. */
TRCU_API void trcu_call_rcu(struct trcu_head *head, void (*func)(struct trcu_head *head));
/* Same, never lazy: the grace period is requested at once. */
TRCU_API void trcu_call_rcu_hurry(struct trcu_head *head, void (*func)(struct trcu_head *head));
/* Wait until every callback queued before this call, by any thread, has
 * run (lazy ones included), and every pointer passed to rcu_free() before
 * it has been freed. */
TRCU_API void trcu_rcu_barrier(void);

/* Headless bulk freeing (the kernel's single-argument kvfree_rcu()):
 * free(ptr) after a grace period, with no rcu_head in the object.  Pointers
 * are batched in page-sized blocks, each freed by one call_rcu() callback
 * (rcu_barrier() covers the partly filled ones); if no block can be
 * allocated it waits for a grace period and frees ptr itself (so, out of
 * memory, it must not be inside a read-side section: it then aborts with a
 * message).  Not from a signal handler. */
TRCU_API void trcu_rcu_free(void *ptr);

/* The kernel's two-argument kfree_rcu(ptr, rhf): free(ptr) after a grace
 * period, ptr a malloc()ed object whose struct rcu_head member is rhf.  As
 * trcu_rcu_free(), batched in blocks; when no block can be allocated, the
 * object's own rcu_head carries it (a callback: no wait, no abort, also
 * inside a read-side section), if rhf lies within its first 4096 bytes.
 * NULL is ignored.  Not from a signal handler.  trcu_kvfree_call_rcu(head,
 * ptr) is the call behind it (head may be NULL: trcu_rcu_free()). */
TRCU_API void trcu_kvfree_call_rcu(struct trcu_head *head, void *ptr);
#define trcu_kfree_rcu(ptr, rhf) \
	do { \
		__typeof__(ptr) trcu_kf_ = (ptr); \
		if (trcu_kf_) \
			trcu_kvfree_call_rcu(&trcu_kf_->rhf, trcu_kf_); \
	} while (0)
/* The kernel's kvfree_rcu(ptr) and kvfree_rcu(ptr, rhf). */
#define TRCU_KVFREE_PICK_(a1, a2, name, ...) name
#define trcu_kvfree_rcu(...) \
	TRCU_KVFREE_PICK_(__VA_ARGS__, trcu_kfree_rcu, trcu_rcu_free, )(__VA_ARGS__)

/* Current grace-period sequence number (for diagnostics and tests). */
TRCU_API unsigned long trcu_gp_seq(void);

/* ---- Tunables ----------------------------------------------------------- */

/*
 * Every tunable has an environment variable TREERCU_<NAME> (upper case),
 * read at init, and this runtime API.  Invalid values are refused with a
 * message naming the tunable and its accepted range.
 * Returns 0, or -1 with errno = EINVAL (bad name or out of range) or
 * ENOMEM (fanout, fanout_leaf: the rcu_node tree of the new shape cannot be
 * allocated); on error nothing changed.
 * See docs/tunables.md for the list.
 */
TRCU_API int trcu_set_tunable(const char *name, long value);
TRCU_API int trcu_get_tunable(const char *name, long *value);
/* Selects a timing profile: "treercu" (default) or "kernel" (HZ=1000).
 * Returns 0, or -1 with errno = EINVAL (unknown name) or ENOMEM (the
 * profile's fan-outs need an rcu_node tree that cannot be allocated); on
 * error nothing changed. */
TRCU_API int trcu_set_profile(const char *name);

/* Stall warnings: route them to the application's log.  NULL restores the
 * default (stderr). */
typedef void (*trcu_stall_fn)(const char *msg, void *arg);
TRCU_API void trcu_set_stall_handler(trcu_stall_fn fn, void *arg);

/* Statistics (for tools and tests). */
struct trcu_stats {
	unsigned long gp_completed;   /* grace periods ended */
	unsigned long gp_driven_by_caller;
	unsigned long gp_driven_by_kthread;
	unsigned long fqs_scans;
	unsigned long gp_takeovers;        /* GPs taken over by a synchronize_rcu() caller */
	unsigned long stall_warnings;
	unsigned long membarriers;
	int fenced;                  /* read side is fenced (no membarrier) */
	int nr_slots;                /* thread slots in use */
	int tree_levels;
	int tree_nodes;
	long cbs_queued;             /* call_rcu() calls */
	long cbs_invoked;            /* callbacks run */
	long cbs_pending;            /* queued - invoked */
	long cbs_pushback;           /* call_rcu() calls that waited (flood) */
	long nocb_defers;            /* offload-thread waits for woken synchronize_rcu() callers */
	long frees_queued;           /* rcu_free() calls */
	long frees_done;             /* pointers freed after their GP */
	long frees_fallback;         /* no block: rcu_free() waited, kfree_rcu() used its head */
	long sr_woken_direct;        /* synchronize_rcu() waiters woken by the GP driver */
	long sr_woken_deferred;      /* ... by the cleanup work item */
	long sr_no_wait_head;        /* GP inits that found every wait head in use */
	int nocb_threads;            /* callback-offload threads running */
	/* A synchronize_rcu() caller that drove its GP left the asynchronous
	 * GP-end sleepers (GP kthread, offload threads) to their own timed
	 * recheck instead of waking them (design.md section 5). */
	unsigned long async_wakes_skipped;
	/* Thread slots the grace periods' walks looked at (early report,
	 * prescan, FQS scans): what a registered thread costs each GP. */
	unsigned long gp_slot_checks;
};
TRCU_API void trcu_get_stats(struct trcu_stats *st);

/* Stop every treercu thread and free everything, after running every
 * pending callback (it waits for them).  Process exit does not call it: at
 * exit pending callbacks run while grace periods end (at most exit_wait_ms
 * without one), and no thread is stopped (docs/design.md, "Guarantees"). */
TRCU_API void trcu_shutdown(void);

/* The version of the library linked: "MAJOR.MINOR.PATCH" (the headers'
 * version is TREERCU_VERSION_STRING, from <treercu/version.h>). */
TRCU_API const char *trcu_version(void);

/* ---- Familiar names ----------------------------------------------------- */
/*
 * Unless TREERCU_NO_SHORT_NAMES is defined, the kernel's and liburcu's names
 * map onto the trcu_ ones.  Names of functions are object-like macros, as in
 * liburcu, so they can be taken as values (a function pointer to call_rcu)
 * and rename a user's identifier of the same name consistently within the
 * file.  Names of macros (rcu_dereference() and the pointer macros) keep
 * their arguments.  Where a name is liburcu's its form is liburcu's
 * (rcu_xchg_pointer(&p, v)); kernel names keep the kernel's meaning
 * (rcu_assign_pointer(p, v)).  The type names are above (struct rcu_head).
 */
#ifndef TREERCU_NO_SHORT_NAMES
#ifdef TREERCU_QSBR
/* This translation unit's code runs on online QSBR threads only (the
 * opt-in of liburcu's <urcu-qsbr.h>): its rcu_read_lock() is the free one. */
#define rcu_read_lock                  trcu_qsbr_read_lock
#define rcu_read_unlock                trcu_qsbr_read_unlock
#else
#define rcu_read_lock                  trcu_read_lock
#define rcu_read_unlock                trcu_read_unlock
#endif
#define rcu_read_lock_held             trcu_read_lock_held
#define rcu_read_ongoing               trcu_read_lock_held
#define rcu_dereference(p)             trcu_dereference(p)
#define rcu_assign_pointer(p, v)       trcu_assign_pointer(p, v)
#define rcu_set_pointer(pp, v)         trcu_set_pointer(pp, v)
#define rcu_xchg_pointer(pp, v)        trcu_xchg_pointer(pp, v)
#define rcu_cmpxchg_pointer(pp, o, n)  trcu_cmpxchg_pointer(pp, o, n)
#define rcu_access_pointer(p)          trcu_access_pointer(p)
#define rcu_dereference_protected(p, c) trcu_dereference_protected(p, c)
#define rcu_dereference_check(p, c)    trcu_dereference_check(p, c)
#define rcu_dereference_raw(p)         trcu_dereference_raw(p)
#define RCU_INIT_POINTER(p, v)         TRCU_INIT_POINTER(p, v)
#define rcu_replace_pointer(p, v, c)   trcu_replace_pointer(p, v, c)
#define rcu_pointer_handoff(p)         trcu_pointer_handoff(p)
#define rcu_register_thread            trcu_register_thread
#define rcu_unregister_thread          trcu_unregister_thread
#define rcu_thread_online              trcu_thread_online
#define rcu_thread_offline             trcu_thread_offline
#define rcu_quiescent_state            trcu_quiescent_state
#define call_rcu_before_fork           trcu_before_fork
#define call_rcu_after_fork_parent     trcu_after_fork_parent
#define call_rcu_after_fork_child      trcu_after_fork_child
#define synchronize_rcu                trcu_synchronize_rcu
#define synchronize_rcu_expedited      trcu_synchronize_rcu_expedited
#define get_state_synchronize_rcu      trcu_get_state_synchronize_rcu
#define start_poll_synchronize_rcu     trcu_start_poll_synchronize_rcu
#define poll_state_synchronize_rcu     trcu_poll_state_synchronize_rcu
#define cond_synchronize_rcu           trcu_cond_synchronize_rcu
#define get_completed_synchronize_rcu  trcu_get_completed_synchronize_rcu
#define get_state_synchronize_rcu_full      trcu_get_state_synchronize_rcu_full
#define start_poll_synchronize_rcu_full     trcu_start_poll_synchronize_rcu_full
#define poll_state_synchronize_rcu_full     trcu_poll_state_synchronize_rcu_full
#define cond_synchronize_rcu_full           trcu_cond_synchronize_rcu_full
#define get_completed_synchronize_rcu_full  trcu_get_completed_synchronize_rcu_full
#define same_state_synchronize_rcu_full     trcu_same_state_synchronize_rcu_full
#define same_state_synchronize_rcu          trcu_same_state_synchronize_rcu
#define start_poll_synchronize_rcu_expedited trcu_start_poll_synchronize_rcu_expedited
#define cond_synchronize_rcu_expedited      trcu_cond_synchronize_rcu_expedited
#define start_poll_synchronize_rcu_expedited_full trcu_start_poll_synchronize_rcu_expedited_full
#define cond_synchronize_rcu_expedited_full trcu_cond_synchronize_rcu_expedited_full
#define RCU_GET_STATE_COMPLETED        TRCU_GET_STATE_COMPLETED
#define call_rcu                       trcu_call_rcu
#define call_rcu_hurry                 trcu_call_rcu_hurry
#define rcu_barrier                    trcu_rcu_barrier
#define rcu_free                       trcu_rcu_free
#define kfree_rcu(ptr, rhf)            trcu_kfree_rcu(ptr, rhf)
#define kvfree_rcu(...)                trcu_kvfree_rcu(__VA_ARGS__)
#define kfree_rcu_mightsleep(ptr)      trcu_rcu_free(ptr)
#define kvfree_rcu_mightsleep(ptr)     trcu_rcu_free(ptr)
#endif

#ifdef __cplusplus
}
#endif
#endif /* TREERCU_RCU_H */
