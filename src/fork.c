/* SPDX-License-Identifier: MIT */
/*
 * fork(): the child of a process that uses treercu starts with one thread,
 * the one that called fork(), and copies of everything else: locks owned by
 * threads that do not exist in it, slots of those threads, callbacks and
 * work items that the parent will run, helper threads that are gone.
 *
 * Prepare (parent, before the fork): take every library lock that guards
 * data the child must trust, outermost first, so that no such data is
 * mid-update in the copy.  None of them is held across a wait for a grace
 * period, so a fork from inside a read-side section cannot deadlock here.
 * The locks that are held across such waits (the GP mutex, rcu_barrier()'s
 * and a workqueue's flush mutex) are not taken: the child re-initialises
 * them and rebuilds the state they guard from what the fork can leave
 * behind.  Parent: release.  Child: re-initialise every lock, drop the
 * other threads' slots and the inherited callbacks, rcu_free() blocks and
 * work items (the parent runs them, once), mark the GP kthread, offload
 * threads and workqueue workers not started (they start again on first
 * use), and restart an in-flight grace period for the child's threads.
 *
 * Lock order (outermost first): srs.cleanup_lock (the waiter list); the layer
 * above the core (fork_register_hooks(): the workqueue's wq_state.mutex,
 * every pool lock, every workqueue's mayday_lock, wq_state.timer_lock,
 * wq_state.free_lock, wq_state.owner_lock); nocb.lock, every offload group's
 * lock; kvfree.timer_lock, kvfree.lock, every per-thread kvfree cache lock;
 * the GP kthread's start lock, ofl_lock, every rcu_node lock.
 * docs/design.md, "Guarantees".
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "internal.h"
#include "kvfree.h"

/* Nesting of trcu_before_fork() on this thread: the explicit calls and the
 * pthread_atfork() handlers may both run around one fork().  Only the
 * outermost pair locks and releases (or resets, in the child). */
static __thread int fork_depth;

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* The layer above the core (fork_register_hooks()): set by its constructor
 * before any thread exists, read-only after; NULL without that layer. */
static const struct fork_hooks *fork_upper;
/* The hooks this thread's outermost trcu_before_fork() ran, so that the
 * parent and child steps match the prepare step that ran. */
static __thread const struct fork_hooks *fork_upper_ran;
/* This thread's outermost trcu_before_fork() found the library never
 * initialised and took nothing: the after-fork steps do nothing either. */
static __thread bool fork_skipped;

void fork_register_hooks(const struct fork_hooks *hooks)
{
	if (!hooks || !hooks->prepare || !hooks->parent || !hooks->child ||
	    (fork_upper && fork_upper != hooks))
		sys_die("fork_register_hooks: incomplete hooks, or a second layer");
	fork_upper = hooks;
}

static void fork_register_once(void)
{
	if (pthread_atfork(trcu_before_fork, trcu_after_fork_parent, trcu_after_fork_child))
		sys_die("pthread_atfork() failed: fork() would not be handled");
}

void fork_register(void)
{
	pthread_once(&fork_once, fork_register_once);
}

void trcu_before_fork(void)
{
	if (fork_depth++)
		return;
	/*
	 * The handlers are registered at load (src/rcu.c): in a process that
	 * has not used the library there is nothing to protect, and the child
	 * starts from the static state as the parent would.  A first use
	 * racing this fork on another thread is the case it always was: the
	 * init takes none of these locks, and its first locking calls come
	 * after it.  (Taking and re-initialising the static locks anyway
	 * would be correct, but ThreadSanitizer reports the child's
	 * re-initialised mutexes as locked twice.)
	 */
	fork_skipped = !rcu_initialized();
	if (fork_skipped)
		return;
	/* Until after the fork: a signal handler on this thread must not
	 * take the locks the prepare steps hold (rcu_busy_enter()). */
	rcu_busy_enter();
	rcu_thread_tls.fork_locked = true;
	rcu_sr_fork_prepare();
	fork_upper_ran = fork_upper;
	if (fork_upper_ran)
		fork_upper_ran->prepare();
	rcu_nocb_fork_prepare();
	kvfree_fork_prepare();
	rcu_fork_prepare();
}

static void fork_depth_drop(const char *what)
{
	if (fork_depth <= 0)
		sys_die("%s called without a matching trcu_before_fork()", what);
	fork_depth--;
}

void trcu_after_fork_parent(void)
{
	fork_depth_drop("trcu_after_fork_parent()");
	if (fork_depth || fork_skipped)
		return;
	rcu_fork_parent();
	kvfree_fork_parent();
	rcu_nocb_fork_parent();
	if (fork_upper_ran)
		fork_upper_ran->parent();
	rcu_sr_fork_parent();
	rcu_thread_tls.fork_locked = false;
	rcu_busy_exit();
}

void trcu_after_fork_child(void)
{
	fork_depth_drop("trcu_after_fork_child()");
	if (fork_depth || (fork_skipped && !rcu_initialized()))
		return;
	/* Skipped, but initialised since (by a prepare handler that ran after
	 * ours, one registered before treercu was loaded): the child still
	 * needs its reset (no helper thread exists here).  Nothing was locked
	 * in prepare; re-initialising unlocked mutexes is as good. */
	if (fork_skipped) {
		rcu_busy_enter();
		fork_upper_ran = fork_upper;
	}
	/* The RCU core first: its slots and GP state are what the others'
	 * resets may use (none waits for a grace period here). */
	rcu_fork_child();
	kvfree_fork_child();
	rcu_nocb_fork_child();
	if (fork_upper_ran)
		fork_upper_ran->child();
	rcu_sr_fork_child();
	/* Last: a grace period the child still needs (a polled cookie taken
	 * before the fork) may end on the GP kthread, started from here: every
	 * state it touches is reset above. */
	rcu_fork_child_kick();
	rcu_thread_tls.fork_locked = false;
	rcu_busy_exit();
}
