/* SPDX-License-Identifier: MIT */
/*
 * Task readers' blocked lists (include/treercu/task.h; the hooks and the
 * read side are src/task.c, one layer up): the kernel's preemptible-RCU
 * blocked-tasks lists, with a registered worker thread as the CPU and a
 * user-level task as the preempted task, and the per-CPU blocked lists of
 * the kernel's "per-CPU blocked task lists" series as the worker lists.
 *
 * A task switched out inside its section (trcu_task_switch_out()) is queued
 * and its worker becomes quiescent at once.  Where it is queued:
 *   - the worker's own list (per_worker_blocked_lists=1) while no grace
 *     period is in progress: only that worker's list lock, on its own cache
 *     line, no shared lock; the next grace period's init promotes the list
 *     to the worker's leaf rcu_node (rcu_task_promote_locked());
 *   - the leaf rcu_node's list otherwise: at the tail, as a blocker of the
 *     current grace period, when the worker still owes it a quiescent state,
 *     else at the head (the kernel's rcu_preempt_ctxt_queue() with one kind
 *     of grace period).
 * Its outermost unlock leaves the worker list with no report (no grace
 * period waits on it: the early return), or leaves the node, advancing
 * ->gp_tasks, and reports the node's quiescent state up the tree when it
 * was the last blocker (rcu_report_unblock_qs_rnp()).
 *
 * Ordering (docs/design.md, "Task readers", pairs T1-T4):
 *   T1 switch-out vs promotion (store buffering): the switch-out counts the
 *      task on its worker list (seq_cst RMW) before it reads gp_seq
 *      (seq_cst); the GP stores gp_seq, runs a seq_cst fence and reads the
 *      counts.  At least one sees the other: the GP promotes the task, or
 *      the task sees the GP and goes to the node.  The naive order (read
 *      gp_seq, then count) loses the task (tests/model/test_task_model.c).
 *   T2 list removal is a clean quiescent state: the section's accesses
 *      precede the unlink under a lock (release); the GP learns the list
 *      emptied under the same lock (acquire), or through the chain of
 *      node locks up to the root's release store of gp_root_done.
 *   T3 queue before even: the worker's even ->watching store after the
 *      queue is a release store, so a scan that sees the worker quiescent
 *      sees the task queued (or the worker's report finds it there).
 *   T4 a worker list's count drops with a release RMW after the unlink; a
 *      GP that reads the lower count with acquire and skips the list sees
 *      the section's accesses done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/task.h>

#include "gp.h"
#include "internal.h"
#include "task.h"

enum { WHERE_RUNNING = 0, WHERE_WORKER = 1, WHERE_NODE = 2 };

/*
 * A worker's blocked list, one per slot, never freed (an unlock that still
 * holds the pointer after the worker left finds its task moved, under the
 * lock).  The lock has its own cache line: nothing another thread writes
 * shares it (a shared line cost the seed's placement its lead in the
 * experiment, docs/benchmarks.md).
 */
struct task_blkd {
	pthread_mutex_t lock;
	struct trcu_task *head;       /* under ->lock */
	_Atomic long nr;              /* tasks on the list (T1, T4) */
	int slot;
} __attribute__((aligned(64)));

static struct task_blkd *_Atomic *_Atomic blkd_chunks[SLOT_MAX_CHUNKS];
static pthread_mutex_t blkd_alloc_lock = PTHREAD_MUTEX_INITIALIZER;
/* Slots below this may have a worker list: seq_cst (T1, with the fence in
 * rcu_task_promote_locked()). */
static _Atomic int blkd_hwm;

static _Atomic(struct rcu_task_stats *) stats_all;
static struct rcu_task_stats stats_fallback;   /* a thread's calloc() failed */
static __thread struct rcu_task_stats *stats_mine;
static struct rcu_task_stats_snap stats_base;  /* rcu_task_stats_reset() */
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic bool rcu_task_lock_timing;
_Atomic bool rcu_task_test_skip_promotion;
_Atomic bool rcu_task_test_naive_order;
void (*rcu_task_test_promote_hook)(void);

static struct rcu_task_stats *stats_self(void)
{
	struct rcu_task_stats *st = stats_mine;

	if (TRCU_LIKELY(st != NULL))
		return st;
	st = calloc(1, sizeof(*st));
	if (!st)
		return &stats_fallback;   /* shared: updates may be lost, figures only */
	st->next = atomic_load_explicit(&stats_all, memory_order_relaxed);
	/* Release: initialised before it is reachable; pairs with the
	 * acquire in rcu_task_stats_get(). */
	while (!atomic_compare_exchange_weak_explicit(&stats_all, &st->next, st,
						      memory_order_release, memory_order_relaxed))
		;
	stats_mine = st;
	return st;
}

/* Owner-only counter: a plain (relaxed) load and store. */
#define STAT_ADD(f, v) do { \
	struct rcu_task_stats *st_ = stats_self(); \
	atomic_store_explicit(&st_->f, atomic_load_explicit(&st_->f, memory_order_relaxed) + (v), \
			      memory_order_relaxed); \
	} while (0)

/* ---- Locks, timed on request (the experiment's node-lock figures) ---------- */

static long lock_timed(pthread_mutex_t *l)
{
	pthread_mutex_lock(l);
	if (!atomic_load_explicit(&rcu_task_lock_timing, memory_order_relaxed))
		return 0;
	return sys_now_ns();
}

static long node_lock(struct rcu_node *leaf)
{
	long t0 = lock_timed(&leaf->lock);

	if (t0)
		STAT_ADD(node_lock_acq, 1);
	return t0;
}

static void node_unlock(struct rcu_node *leaf, long t0)
{
	if (t0)
		STAT_ADD(node_lock_ns, (unsigned long)(sys_now_ns() - t0));
	pthread_mutex_unlock(&leaf->lock);
}

static long blkd_lock(struct task_blkd *b)
{
	long t0 = lock_timed(&b->lock);

	if (t0)
		STAT_ADD(worker_lock_acq, 1);
	return t0;
}

static void blkd_unlock(struct task_blkd *b, long t0)
{
	if (t0)
		STAT_ADD(worker_lock_ns, (unsigned long)(sys_now_ns() - t0));
	pthread_mutex_unlock(&b->lock);
}

/* ---- Names and checks -------------------------------------------------------- */

const char *rcu_task_name(const struct trcu_task *t)
{
	return t->name[0] ? t->name : "?";
}

/* A list walk met something that is not a live task: freed while queued. */
static void rcu_task_check_live(const struct trcu_task *t, const char *where)
{
	if (t->magic != TASK_MAGIC)
		sys_die("%s: the task at %p on a blocked list is not a live trcu_task (magic "
			 "%#x): its memory was freed or reused while it was switched out inside "
			 "an RCU read-side critical section; call trcu_task_exit() before freeing it",
			 where, (const void *)t, t->magic);
}

void rcu_task_check_init(const struct trcu_task *t, const char *what)
{
	if (!t)
		sys_die("%s: NULL task", what);
	if (t->magic != TASK_MAGIC)
		sys_die("%s: task at %p is not initialised (trcu_task_init() not called, or "
			 "trcu_task_exit() already was)", what, (const void *)t);
}

/*
 * Switched out, a task's depth and BLOCKED flag are saved in its
 * ->nest_state and ->cpu points here: nest_flags that send the task read
 * side's inline code out of line, where it is refused (not switched in).
 * Never written.
 */
struct trcu_reader rcu_task_out_reader = { .nest_flags = TRCU_RF_UNREG };

bool rcu_task_switched_in(const struct trcu_task *t)
{
	return __atomic_load_n(&t->cpu, __ATOMIC_RELAXED) != &rcu_task_out_reader;
}

/* The task's depth: in its worker's nest_flags while switched in, saved in
 * the task otherwise (a relaxed read of another thread's word, for
 * messages). */
unsigned int rcu_task_depth(const struct trcu_task *t)
{
	const struct trcu_reader *r = __atomic_load_n(&t->cpu, __ATOMIC_RELAXED);

	return (unsigned int)((__atomic_load_n(&r->nest_flags, __ATOMIC_RELAXED) |
			       __atomic_load_n(&t->nest_state, __ATOMIC_RELAXED)) &
			      TRCU_TASK_NEST_MASK);
}

/* ---- Worker lists ---------------------------------------------------------------- */

static struct task_blkd *blkd_slot(int slot)
{
	/* Acquire (chunk and entry): pairs with the release stores in
	 * blkd_get(). */
	struct task_blkd *_Atomic *c = atomic_load_explicit(&blkd_chunks[slot / SLOT_CHUNK],
							     memory_order_acquire);

	return c ? atomic_load_explicit(&c[slot % SLOT_CHUNK], memory_order_acquire) : NULL;
}

/*
 * Publish a higher blkd_hwm.  seq_cst: before this worker's first count
 * (T1); the GP reads it after its fence.  The first list of the process
 * (0 to nonzero) is published under ofl_lock, which every GP init holds
 * around its promotion pass: an init that reads 0 there needs no T1 fence,
 * since the first count on any list comes after this unlock and so after
 * that init's gp_seq store, which it then reads (T1 in docs/design.md).
 * An idle GP of a program without task readers spares the fence.
 */
static void blkd_hwm_raise(int hwm)
{
	if (atomic_load_explicit(&blkd_hwm, memory_order_relaxed)) {
		atomic_store_explicit(&blkd_hwm, hwm, memory_order_seq_cst);
		return;
	}
	pthread_mutex_lock(&rcu_state.ofl_lock);
	atomic_store_explicit(&blkd_hwm, hwm, memory_order_seq_cst);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
}

/* Out of memory for a worker's list: said once; the task goes to its leaf
 * node's list instead (the kernel's placement, which allocates nothing). */
static void blkd_alloc_failed(void)
{
	static _Atomic bool said;

	if (!atomic_exchange_explicit(&said, true, memory_order_relaxed))
		sys_warn("trcu_task_switch_out(): out of memory for worker %d's blocked list: "
			 "its blocked tasks queue on the rcu_node lists until one can be allocated",
			 sys_gettid());
}

/* The calling worker's list, allocated at its first blocked switch-out;
 * NULL when it cannot be (out of memory). */
static struct task_blkd *blkd_get(int slot)
{
	struct task_blkd *b = blkd_slot(slot);

	if (b)
		return b;
	pthread_mutex_lock(&blkd_alloc_lock);
	if (!atomic_load_explicit(&blkd_chunks[slot / SLOT_CHUNK], memory_order_relaxed)) {
		struct task_blkd *_Atomic *c = calloc(SLOT_CHUNK, sizeof(*c));

		if (!c) {
			pthread_mutex_unlock(&blkd_alloc_lock);
			blkd_alloc_failed();
			return NULL;
		}
		/* Release: the zeroed chunk before its pointer (blkd_slot()). */
		atomic_store_explicit(&blkd_chunks[slot / SLOT_CHUNK], c, memory_order_release);
	}
	b = blkd_slot(slot);
	if (!b) {
		if (posix_memalign((void **)&b, 64, sizeof(*b))) {
			pthread_mutex_unlock(&blkd_alloc_lock);
			blkd_alloc_failed();
			return NULL;
		}
		memset(b, 0, sizeof(*b));
		pthread_mutex_init(&b->lock, NULL);
		b->slot = slot;
		/* Release: initialised before published (blkd_slot()). */
		atomic_store_explicit(&blkd_chunks[slot / SLOT_CHUNK][slot % SLOT_CHUNK], b,
				      memory_order_release);
		if (atomic_load_explicit(&blkd_hwm, memory_order_relaxed) < slot + 1)
			blkd_hwm_raise(slot + 1);
	}
	pthread_mutex_unlock(&blkd_alloc_lock);
	return b;
}

static void blkd_link(struct task_blkd *b, struct trcu_task *t)
{
	t->prev = NULL;
	t->next = b->head;
	if (b->head)
		b->head->prev = t;
	b->head = t;
}

static void blkd_unlink(struct task_blkd *b, struct trcu_task *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		b->head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->next = t->prev = NULL;
}

/* ---- Node lists ---------------------------------------------------------------------- */

static struct rcu_tree *task_tree(void)
{
	return rcu_tree();
}

/* The leaf that holds slot's tasks in tree t (a slot beyond the tree, not
 * covered until the next GP start, uses the first leaf: no GP waits on its
 * worker yet). */
static struct rcu_node *task_leaf(struct rcu_tree *t, int slot)
{
	return rcu_tree_leaf(t, slot < t->capacity ? slot : 0);
}

static bool leaf_owes(const struct rcu_node *leaf, int slot)
{
	return slot >= leaf->grplo && slot <= leaf->grphi &&
	       (leaf->qsmask & (1UL << (slot - leaf->grplo)));
}

/* Queue t on leaf (locked): a blocker of the current GP at the tail when
 * slot still owes it a quiescent state, else at the head. */
static void node_link(struct rcu_node *leaf, struct trcu_task *t, int slot)
{
	if (leaf_owes(leaf, slot)) {
		t->next = NULL;
		t->prev = leaf->blkd_tail;
		if (leaf->blkd_tail)
			leaf->blkd_tail->next = t;
		else
			leaf->blkd_head = t;
		leaf->blkd_tail = t;
		if (!leaf->gp_tasks)
			leaf->gp_tasks = t;
	} else {
		t->prev = NULL;
		t->next = leaf->blkd_head;
		if (leaf->blkd_head)
			leaf->blkd_head->prev = t;
		else
			leaf->blkd_tail = t;
		leaf->blkd_head = t;
	}
	/* Release: the leaf (of a tree a reshape may have just installed)
	 * before the pointer; pairs with the acquire in rcu_task_dequeue(). */
	__atomic_store_n(&t->node, leaf, __ATOMIC_RELEASE);
	__atomic_store_n(&t->where_kind, WHERE_NODE, __ATOMIC_RELAXED);
}

static void node_unlink(struct rcu_node *leaf, struct trcu_task *t)
{
	if (t->next)
		rcu_task_check_live(t->next, "rcu_read_unlock()");
	if (t->prev) {
		rcu_task_check_live(t->prev, "rcu_read_unlock()");
		t->prev->next = t->next;
	} else {
		leaf->blkd_head = t->next;
	}
	if (t->next)
		t->next->prev = t->prev;
	else
		leaf->blkd_tail = t->prev;
	t->next = t->prev = NULL;
}

/* Lock the leaf of slot in the current tree; a leaf of a replaced tree
 * (its tasks already moved) is passed over. */
static struct rcu_node *leaf_lock_current(int slot, long *t0)
{
	for (;;) {
		struct rcu_node *leaf = task_leaf(task_tree(), slot);

		*t0 = node_lock(leaf);
		if (!leaf->retired)
			return leaf;
		/* Retired under this lock after the new tree was published:
		 * the next load sees it. */
		node_unlock(leaf, *t0);
	}
}

static void enqueue_node(struct trcu_task *t, int slot)
{
	long t0;
	struct rcu_node *leaf;

	rcu_busy_enter();
	leaf = leaf_lock_current(slot, &t0);
	node_link(leaf, t, slot);
	node_unlock(leaf, t0);
	rcu_busy_exit();
	STAT_ADD(enq_node, 1);
}

/* The seed's fast path: no GP in progress, the worker's own list. */
static bool enqueue_worker(struct trcu_task *t, int slot)
{
	struct task_blkd *b;
	unsigned long gs;
	long t0;

	/* A GP in progress already: the node, without the worker lock (the
	 * node path is right at any time; only "idle" needs T1 below). */
	if (rcu_seq_state(atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed)))
		return false;
	b = blkd_get(slot);
	if (!b)
		return false;   /* out of memory: the node */
	t0 = blkd_lock(b);

	if (atomic_load_explicit(&rcu_task_test_naive_order, memory_order_relaxed)) {
		/* Tests only: the order T1 forbids. */
		gs = atomic_load_explicit(&rcu_state.gp_seq, memory_order_seq_cst);
		atomic_fetch_add_explicit(&b->nr, 1, memory_order_seq_cst);
	} else {
		/* T1: counted (seq_cst RMW) before gp_seq is read (seq_cst);
		 * pairs with the fence in rcu_task_promote_locked(). */
		atomic_fetch_add_explicit(&b->nr, 1, memory_order_seq_cst);
		gs = atomic_load_explicit(&rcu_state.gp_seq, memory_order_seq_cst);
	}
	if (rcu_seq_state(gs)) {
		/* A GP is in progress (normal or expedited): the node. */
		atomic_fetch_sub_explicit(&b->nr, 1, memory_order_relaxed);
		blkd_unlock(b, t0);
		return false;
	}
	blkd_link(b, t);
	t->blkd = b;
	__atomic_store_n(&t->where_kind, WHERE_WORKER, __ATOMIC_RELAXED);
	blkd_unlock(b, t0);
	STAT_ADD(enq_worker, 1);
	return true;
}

/* Move every task of b (locked) to leaf (locked, current tree). */
static void blkd_move_locked(struct task_blkd *b, struct rcu_node *leaf)
{
	while (b->head) {
		struct trcu_task *t = b->head;

		rcu_task_check_live(t, "grace-period start");
		blkd_unlink(b, t);
		node_link(leaf, t, b->slot);
		STAT_ADD(promoted, 1);
	}
	/* Under b's lock, which every count change also holds. */
	atomic_store_explicit(&b->nr, 0, memory_order_relaxed);
}

/* ---- The grace-period core's calls ---------------------------------------------------- */

/*
 * GP init, ofl_lock held, after gp_seq says "in progress" and the tree is
 * installed, before any node's ->qsmask and ->gp_tasks are set: splice
 * every worker list onto its leaf (seed: "Promote blocked tasks from
 * per-CPU to rnp lists").  Then every task queued so far blocks this GP.
 */
void rcu_task_promote_locked(struct rcu_tree *tree)
{
	int hwm;

	if (rcu_task_test_promote_hook)
		rcu_task_test_promote_hook();
	/* No worker list yet: published under the ofl_lock we hold
	 * (blkd_hwm_raise()), so no task can be counted on one before this
	 * init's gp_seq store is visible to it. */
	if (!atomic_load_explicit(&blkd_hwm, memory_order_relaxed))
		return;
	/* T1: pairs with the seq_cst RMW + load in enqueue_worker(). */
	atomic_thread_fence(memory_order_seq_cst);
	hwm = atomic_load_explicit(&blkd_hwm, memory_order_relaxed);
	if (atomic_load_explicit(&rcu_task_test_skip_promotion, memory_order_relaxed))
		return;
	for (int s = 0; s < hwm; s++) {
		struct task_blkd *b = blkd_slot(s);
		struct rcu_node *leaf;
		long t0, t1;

		/* Acquire (T4): a list its unlocks emptied is skipped only
		 * after their sections' accesses. */
		if (!b || !atomic_load_explicit(&b->nr, memory_order_acquire))
			continue;
		leaf = task_leaf(tree, s);
		t0 = node_lock(leaf);
		t1 = blkd_lock(b);
		blkd_move_locked(b, leaf);
		blkd_unlock(b, t1);
		node_unlock(leaf, t0);
	}
}

/*
 * A new tree replaces old at a GP start (ofl_lock held, no GP in progress,
 * so no task blocks one): move each old leaf's tasks to the new leaf of the
 * slot they switched out on, and retire the old leaf under its lock.
 */
void rcu_task_reshape_locked(struct rcu_tree *old, struct rcu_tree *t)
{
	int l = old->levels - 1;

	for (int j = 0; j < old->level_cnt[l]; j++) {
		struct rcu_node *ol = &old->nodes[old->level_first[l] + j];

		pthread_mutex_lock(&ol->lock);
		ol->retired = true;
		while (ol->blkd_head) {
			struct trcu_task *tk = ol->blkd_head;
			struct rcu_node *nl = task_leaf(t, tk->blocked_slot);

			rcu_task_check_live(tk, "rcu_node tree reshape");
			node_unlink(ol, tk);
			pthread_mutex_lock(&nl->lock);
			node_link(nl, tk, tk->blocked_slot);
			pthread_mutex_unlock(&nl->lock);
		}
		ol->gp_tasks = NULL;
		pthread_mutex_unlock(&ol->lock);
	}
}

/*
 * A worker unregisters or exits (ofl_lock held, before its slot goes
 * offline): hand its list to its leaf, where the tasks keep blocking GPs
 * with no online slot left (the seed's promotion in
 * rcutree_report_cpu_dead()).
 */
void rcu_task_worker_offline_locked(struct rcu_thread *w)
{
	struct task_blkd *b = w->slot >= 0 ? blkd_slot(w->slot) : NULL;
	struct rcu_node *leaf;
	long t0, t1;

	if (!b || !atomic_load_explicit(&b->nr, memory_order_acquire))
		return;
	leaf = task_leaf(task_tree(), w->slot);   /* stable: ofl_lock */
	t0 = node_lock(leaf);
	t1 = blkd_lock(b);
	blkd_move_locked(b, leaf);
	blkd_unlock(b, t1);
	node_unlock(leaf, t0);
}

/*
 * The running task t, inside its section, leaves worker w (whose reader is
 * r): queue it, then make the worker quiescent (the kernel's
 * rcu_preempt_note_context_switch()).  Returns whether a grace period asked
 * the worker to report (->need_qs): the caller reports.
 */
bool rcu_task_block(struct rcu_thread *w, struct trcu_reader *r, struct trcu_task *t)
{
	unsigned long wv;

	t->blocked_ns = sys_now_ns();
	t->blocked_gp = atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed);
	t->blocked_tid = w->tid;
	t->blocked_slot = w->slot;
	if (!(TUN(per_worker_blocked_lists) && enqueue_worker(t, w->slot)))
		enqueue_node(t, w->slot);
	/* T3: queue before even.  Release: a scan that sees the worker
	 * quiescent sees the task queued (x86: program order; arm64: stlr).
	 * The fence orders the store before the ->need_qs load (pairs with
	 * the driver's ->need_qs store + membarrier or fence). */
	wv = ((__atomic_load_n(&r->watching, __ATOMIC_RELAXED) & ~TRCU_READER_GEN_TAG) | 1) + 1;
	__atomic_store_n(&r->watching, wv, __ATOMIC_RELEASE);
	atomic_thread_fence(memory_order_seq_cst);
	return __atomic_load_n(&r->need_qs, __ATOMIC_RELAXED) != 0;
}

/*
 * The last task blocking the current GP on leaf (locked by the caller, who
 * cleared its ->gp_tasks) left: if no slot of the leaf owes a quiescent
 * state either, report the leaf to its parent, or end the GP at the root
 * (the kernel's rcu_report_unblock_qs_rnp()).  Releases the lock.  Clean:
 * the tasks' sections precede their unlinks under this lock (T2), and the
 * report climbs through the parents' locks to the release store of
 * gp_root_done.
 */
static void rcu_report_unblock_qs_rnp(struct rcu_node *leaf)
{
	unsigned long mask;

	if (leaf->qsmask || leaf->gp_tasks) {
		pthread_mutex_unlock(&leaf->lock);
		return;
	}
	if (!leaf->parent) {
		/* Release: pairs with rcu_root_qs_done(). */
		atomic_store_explicit(&rcu_state.gp_root_done, true, memory_order_release);
		pthread_mutex_unlock(&leaf->lock);
		rcu_gp_kick_driver();
		return;
	}
	mask = leaf->grpmask;
	pthread_mutex_unlock(&leaf->lock);
	pthread_mutex_lock(&leaf->parent->lock);
	rcu_report_qs_rnp(mask, leaf->parent, false);
}

void rcu_task_dequeue(struct trcu_task *t)
{
	struct rcu_node *leaf;
	bool was_blocker;
	long t0;

	if (__atomic_load_n(&t->where_kind, __ATOMIC_RELAXED) == WHERE_WORKER) {
		struct task_blkd *b = t->blkd;

		t0 = blkd_lock(b);
		if (__atomic_load_n(&t->where_kind, __ATOMIC_RELAXED) == WHERE_WORKER) {
			/* The seed's early return: no GP waits on it. */
			blkd_unlink(b, t);
			__atomic_store_n(&t->where_kind, WHERE_RUNNING, __ATOMIC_RELAXED);
			/* T4: release, after the section (and the unlink). */
			atomic_fetch_sub_explicit(&b->nr, 1, memory_order_release);
			blkd_unlock(b, t0);
			STAT_ADD(early_returns, 1);
			return;
		}
		/* Promoted meanwhile (under this lock): the node path. */
		blkd_unlock(b, t0);
	}
	rcu_busy_enter();
	for (;;) {
		/* Acquire: pairs with the release in node_link(). */
		leaf = __atomic_load_n(&t->node, __ATOMIC_ACQUIRE);
		t0 = node_lock(leaf);
		/* A reshape moves tasks under the old and new leaf locks. */
		if (__atomic_load_n(&t->node, __ATOMIC_RELAXED) == leaf)
			break;
		node_unlock(leaf, t0);
	}
	was_blocker = leaf->gp_tasks != NULL;
	if (leaf->gp_tasks == t)
		leaf->gp_tasks = t->next;   /* the blockers are the tail */
	node_unlink(leaf, t);
	__atomic_store_n(&t->where_kind, WHERE_RUNNING, __ATOMIC_RELAXED);
	STAT_ADD(node_dequeues, 1);
	if (was_blocker && !leaf->gp_tasks) {
		/* T2: the last blocker left; report under the lock chain. */
		if (t0)
			STAT_ADD(node_lock_ns, (unsigned long)(sys_now_ns() - t0));
		rcu_report_unblock_qs_rnp(leaf);
	} else {
		node_unlock(leaf, t0);
	}
	rcu_busy_exit();
}

struct stall_task {
	char name[16];
	unsigned long long id;
	long blocked_ns;
	int tid;
	unsigned int depth;
};

/* Stall warnings: the tasks that block the current GP (from each leaf's
 * ->gp_tasks to its tail), copied under the leaf lock and printed after.
 * Returns how many block it. */
int rcu_task_stall_print(long gp, long now_ns, void (*emit)(const char *msg))
{
	struct rcu_tree *tree = task_tree();
	struct stall_task st[16];
	int l = tree->levels - 1, n = 0, shown = 0;
	char msg[512];

	for (int j = 0; j < tree->level_cnt[l]; j++) {
		struct rcu_node *leaf = &tree->nodes[tree->level_first[l] + j];

		pthread_mutex_lock(&leaf->lock);
		for (struct trcu_task *t = leaf->gp_tasks; t; t = t->next, n++) {
			rcu_task_check_live(t, "stall warning");
			if (shown == 16)
				continue;
			snprintf(st[shown].name, sizeof(st[shown].name), "%.15s", rcu_task_name(t));
			st[shown].id = (unsigned long long)t->id;
			st[shown].blocked_ns = t->blocked_ns;
			st[shown].tid = t->blocked_tid;
			st[shown].depth = rcu_task_depth(t);
			shown++;
		}
		pthread_mutex_unlock(&leaf->lock);
	}
	for (int i = 0; i < shown; i++) {
		snprintf(msg, sizeof(msg),
			 "treercu: INFO: rcu detected stall: task '%.15s' (id %llu) blocked in a "
			 "read-side critical section for at least %ld ms (switched out on thread %d, "
			 "depth %u), blocking grace period %ld\n",
			 st[i].name, st[i].id, (now_ns - st[i].blocked_ns) / 1000000L, st[i].tid,
			 st[i].depth, gp);
		emit(msg);
	}
	if (n > shown) {
		snprintf(msg, sizeof(msg),
			 "treercu: INFO: ... and %d more tasks blocking grace period %ld\n",
			 n - shown, gp);
		emit(msg);
	}
	return n;
}

static void leaves_clear(struct rcu_tree *t)
{
	int l = t->levels - 1;

	for (int j = 0; j < t->level_cnt[l]; j++) {
		struct rcu_node *leaf = &t->nodes[t->level_first[l] + j];

		leaf->blkd_head = leaf->blkd_tail = leaf->gp_tasks = NULL;
	}
}

/* fork() child: the other workers and their tasks' sections do not exist
 * there; the tasks' memory is the parent's copy.  Empty every list. */
void rcu_task_fork_child(void)
{
	int hwm = atomic_load_explicit(&blkd_hwm, memory_order_relaxed);

	for (int s = 0; s < hwm; s++) {
		struct task_blkd *b = blkd_slot(s);

		if (b) {
			pthread_mutex_init(&b->lock, NULL);
			b->head = NULL;
			atomic_store_explicit(&b->nr, 0, memory_order_relaxed);
		}
	}
	pthread_mutex_init(&blkd_alloc_lock, NULL);
	leaves_clear(task_tree());
	for (struct rcu_tree *t = rcu_tree_retired_locked(); t; t = t->retired_next)
		leaves_clear(t);
}

static void stats_sum(struct rcu_task_stats_snap *st)
{
	memset(st, 0, sizeof(*st));
	/* Acquire pairs with the release in stats_self(). */
	for (struct rcu_task_stats *p = atomic_load_explicit(&stats_all, memory_order_acquire); ;
	     p = p->next) {
		if (!p)
			p = &stats_fallback;
#define SUM(f) st->f += atomic_load_explicit(&p->f, memory_order_relaxed)
		SUM(node_lock_acq);
		SUM(node_lock_ns);
		SUM(worker_lock_acq);
		SUM(worker_lock_ns);
		SUM(enq_worker);
		SUM(enq_node);
		SUM(early_returns);
		SUM(node_dequeues);
		SUM(promoted);
#undef SUM
		if (p == &stats_fallback)
			break;
	}
}

void rcu_task_stats_get(struct rcu_task_stats_snap *st)
{
	struct rcu_task_stats_snap base;

	pthread_mutex_lock(&stats_lock);
	base = stats_base;
	pthread_mutex_unlock(&stats_lock);
	stats_sum(st);
#define SUB(f) st->f -= base.f
	SUB(node_lock_acq);
	SUB(node_lock_ns);
	SUB(worker_lock_acq);
	SUB(worker_lock_ns);
	SUB(enq_worker);
	SUB(enq_node);
	SUB(early_returns);
	SUB(node_dequeues);
	SUB(promoted);
#undef SUB
}

/* From now on the figures count from zero (other threads' counters are
 * theirs to write: the sums so far become the base). */
void rcu_task_stats_reset(void)
{
	struct rcu_task_stats_snap now;

	stats_sum(&now);
	pthread_mutex_lock(&stats_lock);
	stats_base = now;
	pthread_mutex_unlock(&stats_lock);
}

