/* SPDX-License-Identifier: MIT */
/*
 * Stall warnings: a thread that keeps a grace period waiting longer than
 * stall_timeout_ms is named on stderr (or to the application's hook) with its
 * tid, its name, how long and the GP number; repeated with back-off (three
 * timeouts between warnings, as the kernel does).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define STALL_MAX_NAMED 16

/* The application's hook (trcu_set_stall_handler()) under stall_lock; the
 * next warning's time, by the GP driver only (gp_mutex); the count. */
static trcu_stall_fn stall_fn;
static void *stall_arg;
static pthread_mutex_t stall_lock = PTHREAD_MUTEX_INITIALIZER;
static long next_stall_ns;
static _Atomic unsigned long n_stall;

unsigned long rcu_stall_count(void)
{
	return atomic_load_explicit(&n_stall, memory_order_relaxed);
}

void rcu_stall_reset(void)
{
	next_stall_ns = rcu_state.gp_start_ns + TUN(stall_timeout_ms) * 1000000L;
}

static void thread_name(int tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, len, "?");
}

struct stall_holdout {
	int tid;
	bool qsbr;
};

struct stall_arg {
	struct stall_holdout h[STALL_MAX_NAMED];
	int n, total;
};

static void stall_collect(struct stall_arg *sa)
{
	struct rcu_tree *t = atomic_load_explicit(&rcu_state.tree, memory_order_acquire);
	int l = t->levels - 1;

	for (int j = 0; j < t->level_cnt[l]; j++) {
		struct rcu_node *leaf = &t->nodes[t->level_first[l] + j];

		pthread_mutex_lock(&leaf->lock);
		for (unsigned long m = leaf->qsmask; m; m &= m - 1) {
			struct rcu_thread *r = rcu_slot_get(leaf->grplo + __builtin_ctzl(m));

			if (!r || r == rcu_state.driver)
				continue;
			if (sa->n < STALL_MAX_NAMED) {
				/* tid and qsbr are written at registration,
				 * before the slot was published (release). */
				sa->h[sa->n].tid = r->tid;
				sa->h[sa->n].qsbr = r->qsbr;
				sa->n++;
			}
			sa->total++;
		}
		pthread_mutex_unlock(&leaf->lock);
	}
}

/* While the application's hook runs on this (driving) thread: a fork()
 * from it leaves a child whose only thread is mid grace period, over state
 * the fork reset (rcu_fork_child()); it may only exec or _exit. */
static __thread bool stall_in_hook;
static __thread bool stall_forked_here;

void rcu_stall_fork_child(void)
{
	/* A hook running on a thread that is gone here held the lock. */
	pthread_mutex_init(&stall_lock, NULL);
	stall_forked_here = stall_in_hook;
}

static void stall_emit(const char *msg)
{
	pthread_mutex_lock(&stall_lock);
	if (stall_fn) {
		stall_in_hook = true;
		stall_fn(msg, stall_arg);
		stall_in_hook = false;
		if (TRCU_UNLIKELY(stall_forked_here))
			sys_die("fork() from the stall-warning hook: the child returned from the "
				 "hook into a grace period; such a child may only exec or _exit");
	} else {
		fputs(msg, stderr);
	}
	pthread_mutex_unlock(&stall_lock);
}

/*
 * The callback layer's counts, for the warning: it sits above the grace
 * periods this file watches, so the top layer hands its function down at
 * init (rcu_stall_set_cb_info()) rather than this file calling up.  Set
 * before any GP runs, then only read.
 */
static void (*stall_cb_info)(long *pending, long *gave_up);

void rcu_stall_set_cb_info(void (*fn)(long *pending, long *gave_up))
{
	stall_cb_info = fn;
}

/* Callbacks wait behind the stall: memory grows while it lasts, and
 * call_rcu()'s flood push-back gives up (nocb_pushback_limit_ns()). */
static void stall_emit_callbacks(long gp)
{
	long pending = 0, gave_up = 0;
	char msg[256];

	if (stall_cb_info)
		stall_cb_info(&pending, &gave_up);
	if (pending <= 0)
		return;
	snprintf(msg, sizeof(msg),
		 "treercu: INFO: %ld callbacks pending behind grace period %ld; call_rcu() "
		 "push-back gave up %ld times (memory grows until the grace period ends)\n",
		 pending, gp, gave_up);
	stall_emit(msg);
}

/* Called by the GP driver in its FQS loop. */
void rcu_check_stall(void)
{
	long now = sys_now_ns(), ms = (now - rcu_state.gp_start_ns) / 1000000L;
	/* Signed, as the kernel prints g%ld: gp_seq starts just below wrap. */
	long gp = (long)atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed) >>
		  RCU_SEQ_CTR_SHIFT;
	struct stall_arg sa = { .n = 0 };
	char msg[512], name[32];
	int cs, ntasks;

	if (now < next_stall_ns)
		return;
	next_stall_ns = now + 3 * TUN(stall_timeout_ms) * 1000000L;
	stall_collect(&sa);
	/* The GP driver holds gp_mutex: no cancellation may act in fopen(),
	 * fputs() or the application's hook (internal.h). */
	cs = sys_cancel_disable();
	/* Tasks switched out inside their sections (src/task.c). */
	ntasks = rcu_task_hooks_get() ? rcu_task_hooks_get()->stall_print(gp, now, stall_emit) : 0;
	if (!sa.total && !ntasks) {
		sys_cancel_restore(cs);
		return;
	}
	atomic_fetch_add_explicit(&n_stall, 1, memory_order_relaxed);
	for (int i = 0; i < sa.n; i++) {
		thread_name(sa.h[i].tid, name, sizeof(name));
		snprintf(msg, sizeof(msg),
			 "treercu: INFO: rcu detected stall: thread %d (%s) %s for at least "
			 "%ld ms, blocking grace period %ld; next warning in %ld ms\n",
			 sa.h[i].tid, name,
			 sa.h[i].qsbr ? "online (QSBR) without a quiescent state"
				      : "in a read-side critical section",
			 ms, gp, 3 * TUN(stall_timeout_ms));
		stall_emit(msg);
	}
	if (sa.total > sa.n) {
		snprintf(msg, sizeof(msg),
			 "treercu: INFO: ... and %d more threads blocking grace period %ld\n",
			 sa.total - sa.n, gp);
		stall_emit(msg);
	}
	stall_emit_callbacks(gp);
	sys_cancel_restore(cs);
}

/* The hook and its lock are static: no init gate. */
void trcu_set_stall_handler(trcu_stall_fn fn, void *arg)
{
	pthread_mutex_lock(&stall_lock);
	stall_fn = fn;
	stall_arg = arg;
	pthread_mutex_unlock(&stall_lock);
}
