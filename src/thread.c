/* SPDX-License-Identifier: MIT */
/*
 * Threads: registration (a "CPU coming online", applied at the next GP
 * start) into the slot table (src/slots.c), automatic unregistration at
 * thread exit, QSBR online/offline, and the read side's out-of-line slow
 * paths and misuse checks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "trace.h"
#include "task.h"   /* rcu_watching_enter()/exit() */
#include "tsan.h"

__thread struct trcu_reader trcu_reader_tls = { .nest_flags = TRCU_RF_UNREG };

/* Unregisters a thread that exits still registered (rcu_thread_init()). */
static pthread_key_t thread_exit_key;

/* Emergency sections in progress, every thread (see emerg_enter()). */
static unsigned long emerg_readers;

/*
 * The calling thread's private state, out of line, for slow paths in other
 * files.  GCC 12's UBSan null check on an inlined TLS address can branch
 * on stale flags (seen in nocb_pushback(): a false "member access within
 * null pointer" report); a call returns the address plainly.
 */
__attribute__((noinline)) struct rcu_thread *rcu_thread_self(void)
{
	return &rcu_thread_tls;
}

/* Registered: has a slot, counted by grace periods (quiescent or not). */
bool rcu_thread_registered(const struct rcu_thread *t)
{
	return t->rdr && __atomic_load_n(&t->rdr->watching, __ATOMIC_RELAXED) != 0;
}

/* Depth of the caller's explicit read-side sections (an online QSBR
 * thread's bias not counted). */
unsigned int rcu_section_depth(void)
{
	return rcu_nesting(&trcu_reader_tls) - rcu_thread_tls.depth_bias;
}

/* ---- Registration: slots and the tree -------------------------------- */

/* Mark a slot online in its leaf; under ofl_lock.  A slot beyond the
 * current tree is covered by the prepared one (slot_register()), which
 * the next GP start installs with every online slot in it. */
static void slot_online_locked(int slot, bool online)
{
	struct rcu_tree *t = atomic_load_explicit(&rcu_state.tree, memory_order_acquire);
	struct rcu_node *leaf;
	unsigned long bit;

	if (slot >= t->capacity)
		return;
	leaf = rcu_tree_leaf(t, slot);
	bit = 1UL << (slot - leaf->grplo);
	pthread_mutex_lock(&leaf->lock);
	if (online)
		leaf->qsmaskinitnext |= bit;
	else
		leaf->qsmaskinitnext &= ~bit;
	pthread_mutex_unlock(&leaf->lock);
}

static int slot_register(struct rcu_thread *r)
{
	int slot;

	pthread_mutex_lock(&rcu_state.ofl_lock);
	slot = rcu_slot_alloc();
	/* The tree grows here, where ENOMEM can be returned, not at the GP
	 * start that needs it. */
	if (slot >= 0 && rcu_tree_cover_slot_locked(slot)) {
		rcu_slot_free(slot);
		slot = -1;
	}
	if (slot < 0) {
		pthread_mutex_unlock(&rcu_state.ofl_lock);
		errno = ENOMEM;
		return -1;
	}
	r->slot = slot;
	rcu_slot_install(slot, r);
	slot_online_locked(slot, true);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	return 0;
}

/*
 * fork() child (src/fork.c): only the calling thread exists.  Drop every
 * other slot (src/slots.c) and rebuild the leaves' online masks of tree t
 * from what is left; ofl_lock is the caller's (freshly initialised, nobody
 * else runs).
 */
void rcu_slots_fork_child(struct rcu_tree *t)
{
	struct rcu_thread *self = &rcu_thread_tls;
	int l = t->levels - 1;

	for (int j = 0; j < t->level_cnt[l]; j++)
		t->nodes[t->level_first[l] + j].qsmaskinitnext = 0;
	rcu_slot_table_fork_child(self);
	if (self->slot >= 0 && rcu_slot_get(self->slot) == self)
		slot_online_locked(self->slot, true);
	/* Other threads' emergency sections do not exist in the child. */
	__atomic_store_n(&emerg_readers, self->emerg_depth, __ATOMIC_RELAXED);
}

/* ---- Registration --------------------------------------------------------- */

/* Set or clear flag bits of the owner's nest_flags, nesting kept. */
static void reader_flags_set(struct trcu_reader *r, unsigned long set, unsigned long clear)
{
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	/* Relaxed and compiler-ordered: the owner's signal handlers read it. */
	__atomic_store_n(&r->nest_flags, (nf & ~clear) | set, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Set the owner's nesting depth, flags kept. */
static void reader_nesting_set(struct trcu_reader *r, unsigned int n)
{
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	__atomic_store_n(&r->nest_flags, (nf & ~TRCU_NEST_MASK) | n, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static int register_thread(struct trcu_reader *r, struct rcu_thread *t);

int trcu_register_thread(void)
{
	struct rcu_thread *t = &rcu_thread_tls;
	int ret;

	/* A handler that interrupts the registration (or the init inside it)
	 * runs an emergency section (trcu_read_lock_slow()). */
	rcu_busy_enter();
	ret = register_thread(&trcu_reader_tls, t);
	rcu_busy_exit();
	return ret;
}

static int register_thread(struct trcu_reader *r, struct rcu_thread *t)
{
	rcu_init();
	if (__atomic_load_n(&r->watching, __ATOMIC_RELAXED))
		return 0;
	t->rdr = r;
	t->tid = sys_gettid();
	t->depth_bias = 0;
	t->qsbr = false;
	__atomic_store_n(&r->need_qs, 0, __ATOMIC_RELAXED);
	atomic_store_explicit(&t->gp_blocked, 0, memory_order_relaxed);
	/* Even and non-zero: registered, quiescent.  Published to the GP
	 * machinery by rcu_slot_install()'s release. */
	__atomic_store_n(&r->watching, 2, __ATOMIC_RELAXED);
	if (slot_register(t)) {
		__atomic_store_n(&r->watching, 0, __ATOMIC_RELAXED);
		return -1;
	}
	/* Clears TRCU_RF_UNREG: the fast path may run from now on (a
	 * handler's too: the slot is published). */
	reader_flags_set(r, rcu_state.fenced ? TRCU_RF_FENCED : 0,
			 TRCU_RF_UNREG | TRCU_RF_FENCED | TRCU_RF_QSBR | TRCU_RF_QSBR_OFL);
	/* The destructor unregisters a thread that exits without doing so. */
	pthread_setspecific(thread_exit_key, t);
	return 0;
}

static void unregister_thread(struct trcu_reader *r, struct rcu_thread *t);

void trcu_unregister_thread(void)
{
	struct rcu_thread *t = &rcu_thread_tls;

	rcu_busy_enter();
	unregister_thread(&trcu_reader_tls, t);
	rcu_busy_exit();
}

static void unregister_thread(struct trcu_reader *r, struct rcu_thread *t)
{
	int slot = t->slot;

	/* A task still switched in: out first, queued if inside a section
	 * (its depth is in this thread's nest_flags until then). */
	if (rcu_task_hooks_get())
		rcu_task_hooks_get()->worker_exit(t);
	/* Before the registration test: a section on a thread that is not
	 * registered (before the library's init) is a section too. */
	if (rcu_nesting(r) > t->depth_bias)
		sys_die("rcu_unregister_thread() called inside an RCU read-side critical "
			 "section (nesting depth %u)", rcu_nesting(r) - t->depth_bias);
	if (!__atomic_load_n(&r->watching, __ATOMIC_RELAXED))
		return;
	if (t->depth_bias)
		rcu_internal_qsbr_offline(t);
	/* From here a handler's section on this thread takes the slow path
	 * (and, ->busy, the emergency one): the slot is about to go.  A
	 * worker of task readers stays one (TRCU_RF_TASK, include/treercu/rcu.h). */
	__atomic_store_n(&r->nest_flags,
			 TRCU_RF_UNREG | (__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) & TRCU_RF_TASK),
			 __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&rcu_state.ofl_lock);
	/* Its blocked list to its leaf, before the slot goes offline: the
	 * tasks keep blocking grace periods there. */
	if (rcu_task_hooks_get())
		rcu_task_hooks_get()->worker_offline_locked(t);
	slot_online_locked(slot, false);
	/* A GP may be waiting on this slot: the thread is quiescent for good. */
	rcu_report_qs_slot(slot, true);
	rcu_slot_remove(slot);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	t->slot = -1;
	t->qsbr = false;
	__atomic_store_n(&r->watching, 0, __ATOMIC_RELAXED);
	pthread_setspecific(thread_exit_key, NULL);
}

/*
 * The owner's ->watching without the reader-generation tag, for the slow
 * paths' arithmetic: they never store a tagged odd value, only the fast
 * path's rcu_read_lock() may (include/treercu/rcu.h, trcu_reader_gen), or a
 * thread that went online before a GP could pass for one that began after
 * it (rcu_watching_qs()).  Parity is kept.
 */
static unsigned long watching_untagged(struct trcu_reader *r)
{
	return __atomic_load_n(&r->watching, __ATOMIC_RELAXED) & ~TRCU_READER_GEN_TAG;
}

/*
 * Close the sections the owner left open (the kernel's exit_rcu()): nesting
 * back to the QSBR bias, ->watching even if that leaves none.  Returns the
 * depth closed, 0 if none was open.
 */
static unsigned int close_open_sections(struct trcu_reader *r, struct rcu_thread *t)
{
	unsigned int depth = rcu_nesting(r) - t->depth_bias;

	if (rcu_nesting(r) <= t->depth_bias)
		return 0;
	reader_nesting_set(r, t->depth_bias);
	if (!t->depth_bias) {
		/* Close the section: make ->watching even again.  Pairs
		 * with sys_gp_mb() like an outermost unlock. */
		atomic_thread_fence(memory_order_seq_cst);
		__atomic_store_n(&r->watching, (watching_untagged(r) | 1) + 1,
				 __ATOMIC_RELAXED);
	}
	return depth;
}

/*
 * The caller returned from code that had to leave no section open (a work
 * item, src/wq/worker.c) and did: close them, so that the thread holds up
 * no later grace period.  A task switched in keeps its own section (it
 * carries it to its next worker).  Returns the depth closed.
 */
unsigned int rcu_close_leaked_sections(void)
{
	struct rcu_thread *t = &rcu_thread_tls;
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned int depth;

	if (t->cur_task)
		return 0;
	depth = close_open_sections(r, t);
	if (depth && !t->depth_bias) {
		/* The even store before the ->need_qs load: pairs with the
		 * driver's ->need_qs store and its fence or membarrier, as in
		 * watching_exit(). */
		atomic_thread_fence(memory_order_seq_cst);
		if (__atomic_load_n(&r->need_qs, __ATOMIC_RELAXED))
			trcu_report_qs_slow(r);
	}
	return depth;
}

/* pthread key destructor: the thread exited still registered. */
static void thread_exit_destructor(void *arg)
{
	struct rcu_thread *t = arg;
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned int depth;

	if (t != &rcu_thread_tls)
		return;
	/* For good: a signal handler's section from here to the thread's
	 * end is an emergency one, and never registers the thread again
	 * (its slot would outlive the thread). */
	if (!t->exiting) {   /* once, if a later destructor registered it again */
		rcu_busy_enter();
		t->exiting = 1;
	}
	/* A worker that exits with a task switched in: the task's section
	 * (in this thread's nest_flags) is queued, not this thread's. */
	if (rcu_task_hooks_get())
		rcu_task_hooks_get()->worker_exit(t);
	depth = close_open_sections(r, t);
	if (depth)
		sys_warn("thread %d exited inside an RCU read-side critical section "
			  "(nesting depth %u); treating it as quiescent", t->tid, depth);
	trcu_unregister_thread();
}

/*
 * The library's own threads (GP kthread, callback offload threads) start
 * with every signal blocked, as liburcu's call_rcu threads do: no
 * application handler runs on them, so the early report may count a
 * driving GP kthread quiescent without looking at its ->watching.
 */
int rcu_kthread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* True on the library's own threads: the only user code they run is
 * callbacks (on the offload threads). */
static __thread bool rcu_kthread_self;

/* First thing each of the library's threads does (rcu_kthread_create()). */
void rcu_kthread_enter(void)
{
	rcu_kthread_self = true;
}

void rcu_thread_init(void)
{
	if (pthread_key_create(&thread_exit_key, thread_exit_destructor))
		sys_die("pthread_key_create failed");
}

/* ---- Watching transitions (out of line) ---------------------------------- */

/* The owner's fenced transitions: the fenced read side, and a section on a
 * thread blocked waiting for a GP or on an offline QSBR thread (the early
 * report and a QSBR grace period read ->watching without a membarrier:
 * rcu_early_qs()). */
static bool watching_fenced(const struct trcu_reader *r)
{
	return (__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) &
		(TRCU_RF_FENCED | TRCU_RF_BLOCKED | TRCU_RF_QSBR_OFL)) != 0;
}

/*
 * Even -> odd: the thread may now hold references.  | 1, not + 1, and the
 * exits' (w | 1) + add: a signal handler that interrupted this thread
 * between its nesting store and its ->watching store may have moved
 * ->watching already (docs/design.md, "Signal handlers"); the values stay
 * odd inside a section, even outside, and never go back.
 */
static void watching_enter(struct trcu_reader *r)
{
	unsigned long w = watching_untagged(r) | 1;

	if (watching_fenced(r)) {
		/* seq_cst store + fence: the section's loads stay after it.
		 * Pairs with sys_gp_mb() (a full fence in fenced mode), and
		 * with the fence in rcu_gp_early_report(). */
		__atomic_store_n(&r->watching, w, __ATOMIC_SEQ_CST);
		atomic_thread_fence(memory_order_seq_cst);
	} else {
		__atomic_store_n(&r->watching, w, __ATOMIC_RELAXED);
		/* Pairs with sys_gp_mb() at GP start (membarrier). */
		atomic_signal_fence(memory_order_seq_cst);
	}
}

/* Odd -> even (add 1) or odd -> odd (add 2, a momentary QS). */
static void watching_exit(struct trcu_reader *r, unsigned long add)
{
	unsigned long w = (watching_untagged(r) | 1) + add;

	if (watching_fenced(r)) {
		/* Release: the section's accesses before the store; pairs with
		 * the GP scan's and the early report's acquire loads.  The
		 * fence orders the store before the ->need_qs load (pairs with
		 * the driver's fence). */
		__atomic_store_n(&r->watching, w, __ATOMIC_RELEASE);
		atomic_thread_fence(memory_order_seq_cst);
	} else {
		/* Pairs with sys_gp_mb() at GP end. */
		atomic_signal_fence(memory_order_seq_cst);
		__atomic_store_n(&r->watching, w, __ATOMIC_RELAXED);
		/* Pairs with the driver's ->need_qs store + membarrier. */
		atomic_signal_fence(memory_order_seq_cst);
	}
	if (__atomic_load_n(&r->need_qs, __ATOMIC_RELAXED))
		trcu_report_qs_slow(r);
}

void rcu_watching_enter(struct trcu_reader *r)
{
	watching_enter(r);
}

void rcu_watching_exit(struct trcu_reader *r)
{
	watching_exit(r, 1);
}

/* ---- Emergency sections ----------------------------------------------------- */

/*
 * A signal handler's section on a thread whose registration, unregistration
 * or library init it interrupted (->busy), or on an unregistered thread
 * half way into its first lock: it can neither register (locks, malloc,
 * pthread_once() re-entered) nor rely on a slot that is coming or going.
 * It is counted here instead, and every grace period waits, after it
 * started, until no emergency section is left (rcu_emerg_readers_wait()):
 * any section that began before the GP has then ended.
 */
static void emerg_enter(struct trcu_reader *r, unsigned long nf_before)
{
	struct rcu_thread *t = &rcu_thread_tls;
	unsigned int d = t->emerg_depth;

	if (d >= RCU_EMERG_MAX)
		sys_die("rcu_read_lock(): more than %d nested signal handlers in "
			 "emergency read-side sections on thread %d", RCU_EMERG_MAX, sys_gettid());
	/* Counted before the section's loads: the fence pairs with the one in
	 * rcu_emerg_readers_wait() (store buffering: the GP sees this count,
	 * or the section sees every update that preceded the GP). */
	__atomic_fetch_add(&emerg_readers, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* A handler nested in this one between these steps uses the next
	 * entry and leaves ->emerg_depth as it found it. */
	t->emerg_depth = d + 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->emerg_saved[d] = nf_before;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&r->nest_flags, TRCU_RF_EMERG | 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void emerg_exit(struct trcu_reader *r)
{
	struct rcu_thread *t = &rcu_thread_tls;
	unsigned int d = t->emerg_depth - 1;

	__atomic_store_n(&r->nest_flags, t->emerg_saved[d], __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->emerg_depth = d;
	/* Release: the section's accesses before the count drops; pairs with
	 * the acquire load in rcu_emerg_readers_wait(). */
	__atomic_fetch_sub(&emerg_readers, 1, __ATOMIC_RELEASE);
}

/* Grace-period side, after the GP started: wait until no emergency section
 * is in progress.  They are a signal handler's short sections that
 * interrupted a registration, an unregistration or the init, so rare.
 * fenced: the caller ran a full barrier after the GP started (its GP-start
 * membarrier), which serves as the fence below. */
void rcu_emerg_readers_wait(bool fenced)
{
	/* Pairs with the fence in emerg_enter(). */
	if (!fenced)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Acquire: pairs with the release decrement in emerg_exit(). */
	while (__atomic_load_n(&emerg_readers, __ATOMIC_ACQUIRE)) {
		/* nanosleep() is a cancellation point, and a synchronize_rcu()
		 * caller may be the driver here, gp_mutex held (internal.h). */
		int cs = sys_cancel_disable();

		sys_sleep_ns(10 * 1000L);
		sys_cancel_restore(cs);
	}
}

/* ---- Read-side slow paths --------------------------------------------------- */

/* The nest_flags an entry just incremented had before it. */
static unsigned long nest_flags_before(const struct trcu_reader *r)
{
	return __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) - 1;
}

/* Said once per process. */
static void read_lock_unregistered_warn(void)
{
	static _Atomic bool said;

	/* Relaxed, no pair: the flag only picks the one caller that says it. */
	if (!atomic_exchange_explicit(&said, true, memory_order_relaxed))
		sys_warn("rcu_read_lock(): cannot register thread %d automatically (out of "
			 "memory): its sections are counted globally, and every grace period "
			 "waits for them, until it can", sys_gettid());
}

/* Outermost lock on an unregistered, fenced, blocked or offline-QSBR
 * thread; nesting is already 1. */
void trcu_read_lock_slow(struct trcu_reader *r)
{
	struct rcu_thread *t = &rcu_thread_tls;

	if (t->busy) {
		/* A signal handler that interrupted this thread's
		 * registration, unregistration, init or GP code. */
		emerg_enter(r, nest_flags_before(r));
		return;
	}
	if (!__atomic_load_n(&r->watching, __ATOMIC_RELAXED)) {
		reader_nesting_set(r, 0);
		if (trcu_register_thread()) {
			/* Out of memory (a slot chunk, a bigger tree): an
			 * emergency section, which every GP waits for; the
			 * next section tries to register again. */
			reader_nesting_set(r, 1);
			read_lock_unregistered_warn();
			emerg_enter(r, nest_flags_before(r));
			return;
		}
		reader_nesting_set(r, 1);
	} else if (__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) & TRCU_RF_UNREG) {
		/* A signal handler registered this thread after the inline
		 * lock read nest_flags: keep the flags registration set. */
		__atomic_store_n(&r->nest_flags, (rcu_state.fenced ? TRCU_RF_FENCED : 0) |
				 (__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) & TRCU_RF_TASK) | 1,
				 __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
	watching_enter(r);
}

/*
 * A nested lock found ->watching even: a signal handler that interrupted
 * its thread's outermost lock between the nesting store and the ->watching
 * store (inline, slow path, or a QSBR thread going online).  Make ->watching
 * odd here; the interrupted lock's own store keeps it odd.  On a thread
 * not registered yet (its first lock, before registration) or busy, an
 * emergency section.
 */
void trcu_read_lock_nested_slow(struct trcu_reader *r)
{
	if (__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) & TRCU_RF_EMERG)
		return;   /* inside an emergency section already */
	if (rcu_thread_tls.busy || !__atomic_load_n(&r->watching, __ATOMIC_RELAXED)) {
		emerg_enter(r, nest_flags_before(r));
		return;
	}
	watching_enter(r);
}

/* Outermost unlock on a fenced, QSBR, blocked thread, or of an emergency
 * section. */
void trcu_read_unlock_slow(struct trcu_reader *r)
{
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	if (nf & TRCU_RF_EMERG) {
		emerg_exit(r);
		return;
	}
	/* The flag, not ->depth_bias: a handler that interrupts going online
	 * between the two sees the bias already set and nesting 0 (fenced
	 * build: its own section comes here). */
	if (nf & TRCU_RF_QSBR)
		sys_die("rcu_read_unlock() without a matching rcu_read_lock() "
			 "in QSBR thread %d", rcu_thread_tls.tid);
	/* Signal handlers: nesting 0 before ->watching even, as inline. */
	__atomic_store_n(&r->nest_flags, nf - 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	watching_exit(r, 1);
}

/* The driver set ->need_qs on this holdout: report the quiescent state. */
void trcu_report_qs_slow(struct trcu_reader *r)
{
	struct rcu_thread *t = &rcu_thread_tls;

	unsigned int asked;

	/* A signal handler's unlock on a thread inside the library's locked
	 * code: reporting would take an rcu_node lock this thread may hold.
	 * ->need_qs stays set; the driver's next scan sees the even value. */
	if (t->busy)
		return;
	if (t->slot < 0 || rcu_nesting(r) != t->depth_bias) {
		/* Not a quiescent state: a plain ask is dropped (the driver's
		 * next scan sees the even value or asks again); a polled one
		 * stays for the next quiescent state, since a 0 is an answer
		 * to a polling driver (src/qsbr_poll.c, "Polled reports"). */
		asked = TRCU_QS_ASKED;
		__atomic_compare_exchange_n(&r->need_qs, &asked, 0, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
		return;
	}
	/* acq_rel: pairs with the driver's store of the ask (acquire: the
	 * next section after the GP start) and, polled, with its acquire
	 * load of the 0 (release: the previous section before the GP end);
	 * the tree report below takes the leaf lock anyway. */
	asked = __atomic_exchange_n(&r->need_qs, 0, __ATOMIC_ACQ_REL);
	if (!asked)
		return;
	TRACE_RECORD("qs_report", t->slot);
	if (asked == TRCU_QS_ASKED)
		rcu_report_qs_slot(t->slot, true);
	/* TRCU_QS_POLLED: the spinning driver reports it. */
}

void trcu_quiescent_state_slow(struct trcu_reader *r)
{
	struct rcu_thread *t = &rcu_thread_tls;

	if (rcu_nesting(r) > t->depth_bias)
		sys_die("rcu_quiescent_state() called inside an RCU read-side critical "
			 "section (nesting depth %u)", rcu_nesting(r) - t->depth_bias);
	if (!t->depth_bias) {
		/* Not an online QSBR thread: already quiescent. */
		trcu_report_qs_slow(r);
		return;
	}
	watching_exit(r, 2);   /* fenced QSBR thread */
}

void trcu_unbalanced_unlock(struct trcu_reader *r)
{
	(void)r;
	sys_die("rcu_read_unlock() without a matching rcu_read_lock() in thread %d",
		 sys_gettid());
}

/* The TREERCU_DEBUG QSBR read side found a thread that is not an online
 * QSBR thread: its free section would protect nothing. */
void trcu_qsbr_read_misuse(const char *what)
{
	sys_die("%s on thread %d, which is not an online QSBR thread (trcu_thread_qsbr(), "
		"rcu_thread_online()): use rcu_read_lock() there", what, sys_gettid());
}

/* ---- QSBR ------------------------------------------------------------------------ */

/* TRCU_RF_QSBR is set exactly while a QSBR thread is online (depth_bias 1):
 * the inline rcu_quiescent_state() tests it alone. */
void rcu_internal_qsbr_online(struct rcu_thread *t)
{
	struct trcu_reader *r = &trcu_reader_tls;

	if (t->depth_bias)
		return;
	if (rcu_nesting(r))
		sys_die("rcu_thread_online() called inside an RCU read-side critical section");
	t->depth_bias = 1;
	/* No longer counted quiescent by rcu_early_qs(), then a full fence
	 * before anything the thread reads online (store buffering, as in
	 * rcu_exit_gp_wait()): pairs with the fence before a driver's
	 * ->gp_blocked load (rcu_gp_early_report(), rcu_qsbr_gp_walk()).
	 * The driver sees the bit gone, or this thread sees every update
	 * that preceded the GP.  liburcu's thread_online() fences too. */
	atomic_store_explicit(&t->gp_blocked,
			      atomic_load_explicit(&t->gp_blocked, memory_order_relaxed) &
			      ~RCU_BLK_QSBR_OFL, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	/* Signal handlers: nesting before ->watching odd, as in the inline
	 * lock (a handler in between makes ->watching odd itself). */
	__atomic_store_n(&r->nest_flags,
			 (__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) &
			  ~(TRCU_NEST_MASK | TRCU_RF_QSBR_OFL)) | TRCU_RF_QSBR | 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	watching_enter(r);
}

void rcu_internal_qsbr_offline(struct rcu_thread *t)
{
	struct trcu_reader *r = &trcu_reader_tls;

	if (!t->depth_bias)
		return;
	if (rcu_nesting(r) != 1)
		sys_die("rcu_thread_offline() called inside an RCU read-side critical "
			 "section (nesting depth %u)", rcu_nesting(r) - 1);
	rcu_tsan_section_end();
	t->depth_bias = 0;
	/* Signal handlers: nesting 0 before ->watching even, as in the
	 * inline unlock.  TRCU_RF_QSBR_OFL in the same store: from here a
	 * section on this thread (a handler's, or a plain rcu_read_lock()
	 * while offline) enters fenced, as a blocked thread's does, and the
	 * exit below stores the even value with release. */
	__atomic_store_n(&r->nest_flags,
			 (__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) &
			  ~(TRCU_NEST_MASK | TRCU_RF_QSBR)) | TRCU_RF_QSBR_OFL, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	watching_exit(r, 1);
	/* Release: the thread's accesses before it (the even store
	 * included); pairs with the driver's acquire in rcu_early_qs(),
	 * which then counts the thread quiescent without a membarrier. */
	atomic_store_explicit(&t->gp_blocked,
			      atomic_load_explicit(&t->gp_blocked, memory_order_relaxed) |
			      RCU_BLK_QSBR_OFL, memory_order_release);
}

void trcu_thread_qsbr(void)
{
	struct rcu_thread *t = &rcu_thread_tls;

	/* One of the library's threads (an offload thread running a
	 * callback) made an online QSBR thread would never pass a quiescent
	 * state again: every later grace period would wait for it
	 * (trcu_thread_offline() there is refused as not QSBR). */
	if (rcu_kthread_self)
		sys_die("trcu_thread_qsbr() called from an RCU callback: the library's "
			"callback thread would hold up every grace period");
	if (trcu_register_thread())
		sys_die("rcu_thread_qsbr(): cannot register thread: out of memory");
	if (t->qsbr) {
		/* Already QSBR: online, nothing changes (its "section" is
		 * being online); offline, it comes online. */
		rcu_internal_qsbr_online(t);
		return;
	}
	if (rcu_nesting(&trcu_reader_tls))
		sys_die("trcu_thread_qsbr() called inside an RCU read-side critical section");
	t->qsbr = true;
	rcu_internal_qsbr_online(t);
}

static struct rcu_thread *qsbr_self(const char *what)
{
	struct rcu_thread *t = &rcu_thread_tls;

	if (!t->qsbr)
		sys_die("%s called by thread %d, which is not a QSBR thread "
			 "(call trcu_thread_qsbr() first)", what, sys_gettid());
	return t;
}

void trcu_thread_online(void)
{
	rcu_internal_qsbr_online(qsbr_self("rcu_thread_online()"));
}

void trcu_thread_offline(void)
{
	rcu_internal_qsbr_offline(qsbr_self("rcu_thread_offline()"));
}

/* ---- Blocking waits ---------------------------------------------------------- */

void rcu_check_blocking_allowed(const char *what)
{
	unsigned int depth = rcu_section_depth();

	if (rcu_task_hooks_get())
		rcu_task_hooks_get()->check_blocking(&rcu_thread_tls, what);
	if (depth)
		sys_die("%s called inside an RCU read-side critical section (nesting depth "
			 "%u): it would wait for itself forever", what, depth);
	if (TRCU_UNLIKELY(rcu_thread_tls.fork_locked))
		sys_die("%s called between trcu_before_fork() and its after-fork call on the "
			 "same thread, which holds the library's locks until then (a "
			 "pthread_atfork() prepare handler registered before treercu was loaded "
			 "runs there): it would wait forever", what);
	/* After the fork check: trcu_before_fork() marks the thread ->busy. */
	if (TRCU_UNLIKELY(rcu_thread_tls.in_sync || rcu_thread_locked(&rcu_thread_tls)))
		sys_die("%s called from a signal handler that interrupted %s on the same "
			"thread: it would wait for a grace period that its own thread holds up",
			what, rcu_thread_tls.in_sync ? "synchronize_rcu()"
						     : "library code that holds the library's locks");
}

/* Enter an extended quiescent state for a blocking wait.  Returns whether
 * the thread was an online QSBR thread (to go back online after). */
int rcu_enter_gp_wait(struct rcu_thread *t)
{
	int was_online = t->depth_bias != 0;

	if (was_online)
		rcu_internal_qsbr_offline(t);
	/* A section on this thread from now on (only a signal handler can
	 * run one) takes the slow path's fenced entry: the early report
	 * reads ->watching without a membarrier (rcu_early_report_leaf()). */
	reader_flags_set(&trcu_reader_tls, TRCU_RF_BLOCKED, 0);
	/* Release: the caller's earlier accesses (it already ran a full fence)
	 * before the flag; pairs with the driver's acquire in the early report. */
	atomic_store_explicit(&t->gp_blocked,
			      atomic_load_explicit(&t->gp_blocked, memory_order_relaxed) |
			      RCU_BLK_GP_WAIT, memory_order_release);
	return was_online;
}

void rcu_exit_gp_wait(struct rcu_thread *t, int was_online)
{
	atomic_store_explicit(&t->gp_blocked,
			      atomic_load_explicit(&t->gp_blocked, memory_order_relaxed) &
			      ~RCU_BLK_GP_WAIT, memory_order_relaxed);
	/* Store buffering with a driver's early report: this clear must be
	 * visible before any later read-side section's loads.  Pairs with the
	 * fence in rcu_gp_early_report() before it reads ->gp_blocked. */
	atomic_thread_fence(memory_order_seq_cst);
	reader_flags_set(&trcu_reader_tls, 0, TRCU_RF_BLOCKED);
	if (was_online)
		rcu_internal_qsbr_online(t);
}
