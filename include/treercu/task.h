/* SPDX-License-Identifier: MIT */
/*
 * treercu task readers: read-side critical sections of user-level tasks
 * (fibers, coroutines, green threads, async tasks) that a scheduler may
 * switch out inside the section and resume later, on the same worker
 * thread or on another one.  The library does no context switching: the
 * runtime embeds a struct trcu_task in its task object and calls two hooks
 * on the worker thread that runs it.
 *
 * The kernel's preemptible RCU, with a worker thread in the role of the CPU
 * and a task in the role of the preempted task (docs/design.md, "Task
 * readers"):
 *   - a running task's section is carried by its worker exactly as a
 *     thread's own section is (the worker's ->watching is odd);
 *   - a task switched out inside its section is queued on a blocked list
 *     and its worker is quiescent at once; the grace period waits for the
 *     list entry instead.  Where it is queued is the tunable
 *     "per_worker_blocked_lists": 1, the worker's own list while no grace
 *     period is in progress (promoted to the leaf rcu_node when one
 *     starts, straight to the leaf while one is in progress), or 0, the
 *     leaf rcu_node's list always (the kernel's placement);
 *   - the outermost unlock of a queued task removes it (from the worker
 *     list with no shared lock, or from the node, reporting the quiescent
 *     state up the tree when it was the node's last blocker).
 *
 * Rules for the runtime:
 *   - trcu_task_init() before the task's first switch-in, trcu_task_exit()
 *     before its memory is freed (a task freed while queued is named by the
 *     next walk of its list and the process aborts);
 *   - trcu_task_switch_in(t) on the worker thread before t runs there, and
 *     trcu_task_switch_out(t) after t stopped and before anything else runs
 *     on that worker; never inside a read-side section of the worker's own
 *     (the scheduler's code), and one task switched in per worker at a
 *     time.  A worker is registered automatically at its first switch-in;
 *     QSBR threads cannot be workers;
 *   - handing a task to another worker must be ordered by the runtime
 *     (a lock, or a release store and an acquire load of the hand-off), as
 *     any data the task owns.
 *
 * Read side in task code: trcu_task_read_lock(t) / trcu_task_read_unlock(t)
 * use the task object only (no thread-local storage), so they are correct
 * in a function that spans a switch and a migration.  Plain
 * rcu_read_lock() / rcu_read_unlock() work too: on a worker that ever ran a
 * task they go out of line and act on the task switched in now, never
 * storing through a thread pointer the compiler computed before a switch.
 * Their inline test still reads the worker's state through that pointer:
 * in a function that spans a switch, either the workers outlive the
 * tasks' code (the pointer then leads to a worker, which sends the call
 * out of line), or the plain names are called from functions that do not
 * switch (each reads the thread afresh).  A runtime whose workers exit
 * while tasks that ran on them live on uses trcu_task_read_lock(t) in
 * functions that span a switch: a dead worker's memory may by then belong
 * to another thread.
 * A signal handler that runs on a worker while a task is switched in
 * enters the task's section (it nests in it).
 *
 * Names are trcu_task_* only: "rcu_tasks" is the kernel's Tasks RCU flavour,
 * another thing.
 */
#ifndef TREERCU_TASK_H
#define TREERCU_TASK_H

#include <stdint.h>

#include <treercu/rcu.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * While a task is switched in, its read-side depth lives in its worker's
 * trcu_reader.nest_flags (the worker carries the running task's section, as
 * the kernel's CPU does), beside TRCU_RF_TASK and, for a task that resumed
 * inside a section it was switched out of, TRCU_RF_TASK_BLOCKED; so the task
 * read side is the thread read side reached through t->cpu, one more load.
 * While it is switched out they are saved in the task:
 * trcu_task.nest_state: the depth in the low 32 bits, and
 *   TRCU_TASK_BLOCKED: switched out inside its section and queued on a
 *     blocked list (the kernel's rcu_read_unlock_special.b.blocked); the
 *     outermost unlock dequeues it.
 * Both are written only by the code that runs the task and the hooks on
 * its worker.
 */
#define TRCU_TASK_NEST_MASK 0xffffffffUL
#define TRCU_TASK_BLOCKED   (1UL << 32)

/* Embed in the runtime's task object; opaque apart from what the inline
 * read side touches.  trcu_task_init() it before use. */
struct trcu_task {
	unsigned int magic;            /* first: freed memory is caught (free() writes here) */
	unsigned int where_kind;       /* 0 running, 1 on a worker list, 2 on a node list */
	unsigned long nest_state;      /* saved depth and BLOCKED while switched out */
	/* The worker's reader while switched in; else a reader of the
	 * library's whose flags send the read side out of line (misuse). */
	struct trcu_reader *cpu;
	struct trcu_task *next, *prev; /* blocked-list links */
	void *blkd;                    /* the worker list it was queued on */
	void *node;                    /* the rcu_node holding it (where_kind 2) */
	long blocked_ns;               /* when it switched out inside its section */
	unsigned long blocked_gp;      /* grace-period sequence then */
	int blocked_tid;               /* the worker thread it switched out on */
	int blocked_slot;              /* that worker's slot */
	uint64_t id;                   /* the runtime's id, for stall warnings */
	char name[16];                 /* copied at init, for stall warnings */
};

/* Initialise t (not switched in, outside any section).  name may be NULL;
 * it is copied (15 characters kept). */
TRCU_API void trcu_task_init(struct trcu_task *t, uint64_t id, const char *name);
/* Before t's memory is freed, with t not switched in on another worker.
 * Switched in on the calling worker: switched out first.  Inside a
 * section: a warning naming the task, then the section is closed (the
 * kernel's exit_rcu()). */
TRCU_API void trcu_task_exit(struct trcu_task *t);

/* Scheduler hooks, on the worker thread, outside any section of its own. */
TRCU_API void trcu_task_switch_in(struct trcu_task *t);
TRCU_API void trcu_task_switch_out(struct trcu_task *t);

/* The task switched in on the calling worker, or NULL.  Out of line: it
 * reads the thread it runs on now. */
TRCU_API struct trcu_task *trcu_task_current(void);

/* Out-of-line halves of the task read side (src/task.c). */
TRCU_API void trcu_task_read_lock_slow(struct trcu_task *t);
TRCU_API void trcu_task_read_unlock_slow(struct trcu_task *t);

/*
 * trcu_task_read_lock(t): enter a read-side section of task t, which runs
 * on the calling worker.  The thread fast path of trcu_read_lock() on the
 * worker's reader, reached through t->cpu (set by trcu_task_switch_in(),
 * read from the task object after any switch, never from thread-local
 * storage), with the same compiler barriers and the same pairing with
 * sys_gp_mb() (include/treercu/rcu.h).  The outermost test compares with
 * TRCU_RF_TASK, which every worker carries.  Nested, or in a section the
 * task resumed inside after a switch-out (its list entry holds the grace
 * periods; the new worker stays quiescent): only the depth moves.
 */
static inline void trcu_task_read_lock(struct trcu_task *t)
{
	struct trcu_reader *r = __atomic_load_n(&t->cpu, __ATOMIC_RELAXED);
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	if (TRCU_LIKELY(nf == TRCU_RF_TASK)) {
		__atomic_store_n(&r->nest_flags, TRCU_RF_TASK | 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
#if TRCU_READ_GEN
		/* As trcu_read_lock(): the current reader generation. */
		__atomic_store_n(&r->watching, __atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
#else
		__atomic_store_n(&r->watching, __atomic_load_n(&r->watching, __ATOMIC_RELAXED) | 1,
				 __ATOMIC_RELAXED);
#endif
		/* Pairs with sys_gp_mb() at GP start (membarrier). */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	} else if (TRCU_LIKELY(nf & TRCU_NEST_MASK)) {
		/* Nested (flags kept), or a blocked task's continuing section. */
		__atomic_store_n(&r->nest_flags, nf + 1, __ATOMIC_RELAXED);
	} else {
		trcu_task_read_lock_slow(t);   /* fenced worker, or misuse */
	}
}

/*
 * trcu_task_read_unlock(t): leave a section of task t.  Outermost on a
 * running task: the thread unlock's store sequence on t->cpu (pairs with
 * sys_gp_mb() at GP end, and with the driver's ->need_qs store +
 * membarrier).  Outermost in a section the task was switched out of: out of
 * line, the task leaves its blocked list (the kernel's
 * rcu_read_unlock_special()).
 */
static inline void trcu_task_read_unlock(struct trcu_task *t)
{
	struct trcu_reader *r = __atomic_load_n(&t->cpu, __ATOMIC_RELAXED);
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	TRCU_TSAN_SECTION_END();

	if (TRCU_LIKELY(nf == (TRCU_RF_TASK | 1))) {
		unsigned long w = __atomic_load_n(&r->watching, __ATOMIC_RELAXED);

		/* Pairs with sys_gp_mb() at GP end (membarrier). */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&r->nest_flags, TRCU_RF_TASK, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&r->watching, w + 1, __ATOMIC_RELAXED);
		/* Pairs with the driver's store of ->need_qs + membarrier(). */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (TRCU_UNLIKELY(__atomic_load_n(&r->need_qs, __ATOMIC_RELAXED)))
			trcu_report_qs_slow(r);
	} else if (TRCU_LIKELY((nf & TRCU_NEST_MASK) > 1)) {
		__atomic_store_n(&r->nest_flags, nf - 1, __ATOMIC_RELAXED);
	} else {
		trcu_task_read_unlock_slow(t);  /* blocked, fenced, or unbalanced */
	}
}

/* True when task t is inside a read-side section (for assertions in the
 * task's own code, or about a task switched out). */
static inline bool trcu_task_read_lock_held(const struct trcu_task *t)
{
	const struct trcu_reader *r = __atomic_load_n(&t->cpu, __ATOMIC_RELAXED);

	return ((__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) |
		 __atomic_load_n(&t->nest_state, __ATOMIC_RELAXED)) & TRCU_NEST_MASK) != 0;
}

#ifdef __cplusplus
}
#endif
#endif /* TREERCU_TASK_H */
