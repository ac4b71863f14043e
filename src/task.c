/* SPDX-License-Identifier: MIT */
/*
 * Task readers (include/treercu/task.h): the runtime's hooks (init, exit,
 * switch-in, switch-out), the task read side's out-of-line halves, the
 * plain read-side calls on a worker of task readers, and the misuse
 * checks.  The blocked lists they queue tasks on, and the grace-period
 * core's view of them, are src/task_blocked.c, one layer down; the core
 * reaches this layer only through rcu_task_hooks (src/rcu.c hands them
 * down at init).
 *
 * While a task is switched in, its read-side depth lives in its worker's
 * nest_flags (the worker carries the running task's section, as the
 * kernel's CPU does); the hooks save it in the task (->nest_state) at
 * switch-out and put it back at switch-in.  A task switched out inside its
 * section is queued (rcu_task_block()) and its worker made quiescent.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <treercu/task.h>

#include "internal.h"
#include "task.h"

/* ---- Hooks ----------------------------------------------------------------------------- */

void trcu_task_init(struct trcu_task *t, uint64_t id, const char *name)
{
	if (!t)
		sys_die("trcu_task_init(): NULL task");
	memset(t, 0, sizeof(*t));
	t->id = id;
	if (name)
		snprintf(t->name, sizeof(t->name), "%s", name);
	t->blocked_slot = -1;
	t->cpu = &rcu_task_out_reader;
	t->magic = TASK_MAGIC;
}

/* The calling worker; its own depth must be 0 (a task's, while one is
 * switched in, is the task's). */
static struct rcu_thread *worker_self(const char *what)
{
	struct rcu_thread *w = rcu_thread_self();

	if (!w->cur_task && rcu_section_depth())
		sys_die("%s called inside an RCU read-side critical section of worker thread %d "
			 "(nesting depth %u): the scheduler hooks run outside the worker's own sections",
			 what, sys_gettid(), rcu_section_depth());
	return w;
}

/* Store the owner's nest_flags (relaxed, compiler-ordered: its signal
 * handlers read it). */
static void worker_nest_flags(struct trcu_reader *r, unsigned long nf)
{
	__atomic_store_n(&r->nest_flags, nf, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void trcu_task_switch_in(struct trcu_task *t)
{
	struct rcu_thread *w = worker_self("trcu_task_switch_in()");
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned long ns, nf;

	rcu_task_check_init(t, "trcu_task_switch_in()");
	if (w->cur_task)
		sys_die("trcu_task_switch_in(): task '%s' (id %llu) switched in on worker thread %d "
			 "while task '%s' (id %llu) still is (switch it out first)", rcu_task_name(t),
			 (unsigned long long)t->id, sys_gettid(), rcu_task_name(w->cur_task),
			 (unsigned long long)w->cur_task->id);
	if (rcu_task_switched_in(t))
		sys_die("trcu_task_switch_in(): task '%s' (id %llu) is already switched in on "
			 "another worker", rcu_task_name(t), (unsigned long long)t->id);
	if (!rcu_thread_registered(w) && trcu_register_thread())
		sys_die("trcu_task_switch_in(): cannot register worker thread %d: out of memory",
			 sys_gettid());
	if (w->qsbr)
		sys_die("trcu_task_switch_in(): worker thread %d is a QSBR thread; task readers "
			 "need workers with ordinary read-side sections", sys_gettid());
	/* The task's saved state into the worker (its depth was 0): from
	 * here the worker carries the task's section.  TRCU_RF_TASK is
	 * permanent: plain read-side calls on this thread go out of line
	 * from now on (include/treercu/rcu.h). */
	ns = __atomic_load_n(&t->nest_state, __ATOMIC_RELAXED);
	nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) | TRCU_RF_TASK |
	     (ns & TRCU_TASK_NEST_MASK) | ((ns & TRCU_TASK_BLOCKED) ? TRCU_RF_TASK_BLOCKED : 0);
	worker_nest_flags(r, nf);
	__atomic_store_n(&t->nest_state, ns & TRCU_TASK_BLOCKED, __ATOMIC_RELAXED);
	__atomic_store_n(&t->cpu, r, __ATOMIC_RELAXED);
	/* The task before the worker's pointer to it: the worker's signal
	 * handlers read ->cur_task. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w->cur_task = t;
}

/* The running task t leaves its section's worker: queue it, then make the
 * worker quiescent (the kernel's rcu_preempt_note_context_switch()). */
void trcu_task_switch_out(struct trcu_task *t)
{
	struct rcu_thread *w = worker_self("trcu_task_switch_out()");
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned long nf, depth;
	bool blocked, report = false;

	rcu_task_check_init(t, "trcu_task_switch_out()");
	if (w->cur_task != t)
		sys_die("trcu_task_switch_out(): task '%s' (id %llu) is not the task switched in on "
			 "worker thread %d", rcu_task_name(t), (unsigned long long)t->id, sys_gettid());
	nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);
	depth = nf & TRCU_NEST_MASK;
	blocked = nf & TRCU_RF_TASK_BLOCKED;
	if (depth && !blocked) {
		/* The flag first: a dequeue can only come from the task's
		 * own unlock, after it is switched in again. */
		__atomic_store_n(&t->nest_state, TRCU_TASK_BLOCKED, __ATOMIC_RELAXED);
		report = rcu_task_block(w, r, t);
		blocked = true;
	}
	/* The task's state back into the task; the worker's depth is its own
	 * again (0). */
	__atomic_store_n(&t->nest_state, depth | (blocked ? TRCU_TASK_BLOCKED : 0),
			 __ATOMIC_RELAXED);
	w->cur_task = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	worker_nest_flags(r, nf & ~(TRCU_NEST_MASK | TRCU_RF_TASK_BLOCKED));
	__atomic_store_n(&t->cpu, &rcu_task_out_reader, __ATOMIC_RELAXED);
	/* A grace period asked this worker to report: it is quiescent now,
	 * its own depth 0 (trcu_report_qs_slow() checks it). */
	if (report)
		trcu_report_qs_slow(r);
}

struct trcu_task *trcu_task_current(void)
{
	return rcu_thread_self()->cur_task;
}

/* ---- Read side, out of line ---------------------------------------------------------- */

/* The reader of the worker t is switched in on; misuse is named. */
static struct trcu_reader *task_reader(struct trcu_task *t, const char *what)
{
	rcu_task_check_init(t, what);
	if (!rcu_task_switched_in(t))
		sys_die("%s: task '%s' (id %llu) is not switched in on any worker", what,
			 rcu_task_name(t), (unsigned long long)t->id);
	return __atomic_load_n(&t->cpu, __ATOMIC_RELAXED);
}

/* Outermost lock on a fenced worker (the inline code handled the rest). */
void trcu_task_read_lock_slow(struct trcu_task *t)
{
	struct trcu_reader *r = task_reader(t, "trcu_task_read_lock()");
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	worker_nest_flags(r, nf + 1);
	if (!(nf & TRCU_NEST_MASK) && !(nf & TRCU_RF_TASK_BLOCKED))
		rcu_watching_enter(r);
}

void trcu_task_read_unlock_slow(struct trcu_task *t)
{
	struct trcu_reader *r = task_reader(t, "trcu_task_read_unlock()");
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	if (!(nf & TRCU_NEST_MASK))
		sys_die("trcu_task_read_unlock() without a matching trcu_task_read_lock() in task "
			 "'%s' (id %llu)", rcu_task_name(t), (unsigned long long)t->id);
	if ((nf & TRCU_NEST_MASK) > 1) {
		worker_nest_flags(r, nf - 1);
		return;
	}
	if (nf & TRCU_RF_TASK_BLOCKED) {
		/* The section's accesses are ordered before the unlink by its
		 * lock (T2); the depth and flags are the task's own. */
		rcu_task_dequeue(t);
		__atomic_store_n(&t->nest_state, 0, __ATOMIC_RELAXED);
		worker_nest_flags(r, nf & ~(TRCU_NEST_MASK | TRCU_RF_TASK_BLOCKED));
		return;
	}
	/* Running on a fenced worker. */
	worker_nest_flags(r, nf - 1);
	rcu_watching_exit(r);
}

/*
 * Plain rcu_read_lock()/unlock()/rcu_read_lock_held() on a worker of task
 * readers.  noinline and in the library: the thread-local addresses below
 * are computed here, on the thread that runs now.  With a task switched in
 * (and the worker's own depth 0, as the hooks require) they act on the
 * task; otherwise on the worker's own section (the scheduler's code).
 */
__attribute__((noinline)) void trcu_read_lock_task(void)
{
	struct rcu_thread *w = rcu_thread_self();
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned long nf;

	if (w->cur_task) {
		trcu_task_read_lock(w->cur_task);
		return;
	}
	nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);
	/* Signal handlers: nesting before ->watching, as inline. */
	worker_nest_flags(r, nf + 1);
	if (!(nf & TRCU_NEST_MASK))
		trcu_read_lock_slow(r);
	else if (!(__atomic_load_n(&r->watching, __ATOMIC_RELAXED) & 1))
		trcu_read_lock_nested_slow(r);
}

__attribute__((noinline)) void trcu_read_unlock_task(void)
{
	struct rcu_thread *w = rcu_thread_self();
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned long nf = __atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED);

	if (w->cur_task) {
		trcu_task_read_unlock(w->cur_task);
		return;
	}
	if ((nf & TRCU_NEST_MASK) > 1)
		__atomic_store_n(&r->nest_flags, nf - 1, __ATOMIC_RELAXED);
	else if ((nf & TRCU_NEST_MASK) == 1)
		trcu_read_unlock_slow(r);
	else
		trcu_unbalanced_unlock(r);
}

__attribute__((noinline)) bool trcu_read_lock_held_task(void)
{
	return rcu_nesting(&trcu_reader_tls) != 0;
}

/* ---- Exit and misuse ----------------------------------------------------- */

void trcu_task_exit(struct trcu_task *t)
{
	struct rcu_thread *w = rcu_thread_self();
	unsigned long ns;

	rcu_task_check_init(t, "trcu_task_exit()");
	if (w->cur_task == t)
		trcu_task_switch_out(t);
	else if (rcu_task_switched_in(t))
		sys_die("trcu_task_exit(): task '%s' (id %llu) is switched in on another worker",
			 rcu_task_name(t), (unsigned long long)t->id);
	ns = __atomic_load_n(&t->nest_state, __ATOMIC_RELAXED);
	if (ns & TRCU_TASK_NEST_MASK) {
		sys_warn("task '%s' (id %llu) exited inside an RCU read-side critical section "
			  "(nesting depth %u); closing it", rcu_task_name(t), (unsigned long long)t->id,
			  (unsigned int)(ns & TRCU_TASK_NEST_MASK));
		/* Switched out above, so queued: the outermost unlock's
		 * dequeue (the kernel's exit_rcu()). */
		rcu_task_dequeue(t);
		__atomic_store_n(&t->nest_state, 0, __ATOMIC_RELAXED);
	}
	t->magic = TASK_DEAD;
}

/* A worker unregisters or exits with a task switched in: switch it out
 * first, so that a section it is in stays counted (queued). */
static void task_worker_exit(struct rcu_thread *w)
{
	if (w->cur_task)
		trcu_task_switch_out(w->cur_task);
}

static void task_check_blocking(struct rcu_thread *w, const char *what)
{
	struct trcu_task *t = w->cur_task;

	if (t && rcu_task_depth(t))
		sys_die("%s called by task '%s' (id %llu) inside an RCU read-side critical section "
			 "(nesting depth %u): it would wait for itself forever", what, rcu_task_name(t),
			 (unsigned long long)t->id, rcu_task_depth(t));
}

const struct rcu_task_hooks rcu_task_hooks_impl = {
	.promote_locked = rcu_task_promote_locked,
	.reshape_locked = rcu_task_reshape_locked,
	.worker_exit = task_worker_exit,
	.worker_offline_locked = rcu_task_worker_offline_locked,
	.check_blocking = task_check_blocking,
	.stall_print = rcu_task_stall_print,
	.fork_child = rcu_task_fork_child,
};
