/* SPDX-License-Identifier: MIT */
/*
 * Tree RCU grace periods: the rcu_node combining tree over thread slots,
 * grace-period start (rcu_gp_init), the force-quiescent-state loop
 * (rcu_gp_fqs_loop), cleanup (rcu_gp_cleanup), synchronize_rcu(), the polled
 * API and the GP kthread.  Names follow kernel/rcu/tree.c.
 *
 * Who drives a grace period: whichever thread holds rcu_state.gp_mutex.
 * A synchronize_rcu() caller on an idle process drives its own grace period
 * (no wake-ups at all: drive_from_caller=1, docs/design.md explains the
 * measurement); asynchronous needs (polled cookies) and the kernel timing
 * profile use the GP kthread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "trace.h"
#include "fqs_rule.h"
#include "sync_list.h"
#include "test_hooks.h"

/* include/treercu/rcu.h: tagged, odd, +2 at each GP start (rcu_gp_init()). */
unsigned long trcu_reader_gen __attribute__((aligned(64))) = TRCU_READER_GEN_TAG | 1;

struct rcu_test_hooks rcu_test_hooks;

struct rcu_state rcu_state = {
	.gp_mutex = PTHREAD_MUTEX_INITIALIZER,
	.ofl_lock = PTHREAD_MUTEX_INITIALIZER,
	.stall_lock = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_once_t rcu_init_once_ctl = PTHREAD_ONCE_INIT;
static pthread_mutex_t kthread_start_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- Tree shape ------------------------------------------------------------ */

static int div_up(int a, int b)
{
	return (a + b - 1) / b;
}

/* Count nodes per level, root first; returns the number of levels or -1. */
static int rcu_tree_geometry(int capacity, int fanout, int fanout_leaf, int *cnt)
{
	int tmp[RCU_MAX_LEVELS], k = 0, n = div_up(capacity, fanout_leaf);

	tmp[k++] = n;
	while (n > 1) {
		if (k == RCU_MAX_LEVELS)
			return -1;
		n = div_up(n, fanout);
		tmp[k++] = n;
	}
	for (int i = 0; i < k; i++)
		cnt[i] = tmp[k - 1 - i];
	return k;
}

/* Bytes a tree of this shape takes: header, nodes, leaf snapshots, the
 * active-leaf list. */
static size_t rcu_tree_size(const int *cnt, int levels, int fanout_leaf, size_t *nodes_sz,
			    size_t *snaps_sz)
{
	int total = 0;

	for (int i = 0; i < levels; i++)
		total += cnt[i];
	*nodes_sz = sizeof(struct rcu_tree) + (size_t)total * sizeof(struct rcu_node);
	*snaps_sz = (size_t)cnt[levels - 1] * (size_t)fanout_leaf * sizeof(unsigned long);
	return *nodes_sz + *snaps_sz + (size_t)cnt[levels - 1] * sizeof(int);
}

/* Lay the tree out in mem (64-byte aligned, rcu_tree_size() bytes). */
static struct rcu_tree *rcu_tree_init_mem(void *mem, const int *cnt, int levels, int fanout,
					  int fanout_leaf, size_t nodes_sz, size_t snaps_sz)
{
	struct rcu_tree *t = mem;
	unsigned long gps, *snaps;
	int total = 0;

	for (int i = 0; i < levels; i++)
		total += cnt[i];
	memset(t, 0, nodes_sz + snaps_sz);
	snaps = (unsigned long *)((char *)t + nodes_sz);
	t->active = (int *)((char *)snaps + snaps_sz);
	t->fanout = fanout;
	t->fanout_leaf = fanout_leaf;
	t->levels = levels;
	t->nr_nodes = total;
	t->capacity = cnt[levels - 1] * fanout_leaf;
	gps = atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed);
	for (int i = 0, first = 0; i < levels; first += cnt[i], i++) {
		t->level_first[i] = first;
		t->level_cnt[i] = cnt[i];
	}
	/* Bottom up, so that a node's range comes from its children. */
	for (int i = levels - 1; i >= 0; i--) {
		for (int j = 0; j < cnt[i]; j++) {
			struct rcu_node *rnp = &t->nodes[t->level_first[i] + j];

			pthread_mutex_init(&rnp->lock, NULL);
			rnp->level = i;
			rnp->gp_seq = gps;
			rnp->gp_seq_needed = gps;
			if (i == levels - 1) {
				rnp->grplo = j * fanout_leaf;
				rnp->grphi = (j + 1) * fanout_leaf - 1;
				rnp->snap = snaps + (size_t)j * (size_t)fanout_leaf;
			} else {
				int c0 = j * fanout, c1 = c0 + fanout - 1;

				if (c1 >= cnt[i + 1])
					c1 = cnt[i + 1] - 1;
				rnp->grplo = t->nodes[t->level_first[i + 1] + c0].grplo;
				rnp->grphi = t->nodes[t->level_first[i + 1] + c1].grphi;
			}
			if (i > 0) {
				rnp->parent = &t->nodes[t->level_first[i - 1] + j / fanout];
				rnp->grpmask = 1UL << (j % fanout);
			}
		}
	}
	return t;
}

static bool rcu_tree_geometry_ok(int capacity, int fanout, int fanout_leaf)
{
	return capacity >= 1 && fanout >= 2 && fanout <= RCU_FANOUT_MAX && fanout_leaf >= 1 &&
	       fanout_leaf <= RCU_FANOUT_MAX;
}

struct rcu_tree *rcu_tree_build(int capacity, int fanout, int fanout_leaf)
{
	int cnt[RCU_MAX_LEVELS], levels;
	size_t nodes_sz, snaps_sz, size;
	void *mem;

	if (!rcu_tree_geometry_ok(capacity, fanout, fanout_leaf) ||
	    (levels = rcu_tree_geometry(capacity, fanout, fanout_leaf, cnt)) < 0) {
		errno = EINVAL;
		return NULL;
	}
	size = rcu_tree_size(cnt, levels, fanout_leaf, &nodes_sz, &snaps_sz);
	if (posix_memalign(&mem, 64, size)) {
		errno = ENOMEM;
		return NULL;
	}
	return rcu_tree_init_mem(mem, cnt, levels, fanout, fanout_leaf, nodes_sz, snaps_sz);
}

/*
 * The first tree, one node (a single leaf is the root), in static storage:
 * initialisation, which rcu_register_thread() and every other entry point
 * may run, never allocates and so cannot fail for want of memory.
 */
static char rcu_tree0_mem[sizeof(struct rcu_tree) + sizeof(struct rcu_node) +
			  RCU_FANOUT_MAX * sizeof(unsigned long) + sizeof(int)]
	__attribute__((aligned(64)));

static struct rcu_tree *rcu_tree_build_first(int fanout, int fanout_leaf)
{
	int cnt[RCU_MAX_LEVELS] = { 1 };
	size_t nodes_sz, snaps_sz;

	if (!rcu_tree_geometry_ok(fanout_leaf, fanout, fanout_leaf) ||
	    rcu_tree_size(cnt, 1, fanout_leaf, &nodes_sz, &snaps_sz) > sizeof(rcu_tree0_mem))
		sys_die("fanout=%d fanout_leaf=%d: bad rcu_node tree shape", fanout, fanout_leaf);
	return rcu_tree_init_mem(rcu_tree0_mem, cnt, 1, fanout, fanout_leaf, nodes_sz, snaps_sz);
}

void rcu_tree_free(struct rcu_tree *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nr_nodes; i++)
		pthread_mutex_destroy(&t->nodes[i].lock);
	if ((void *)t != (void *)rcu_tree0_mem)
		free(t);
}

static struct rcu_node *rcu_get_root(struct rcu_tree *t)
{
	return &t->nodes[0];
}

static struct rcu_tree *rcu_tree(void)
{
	/* Acquire pairs with the release in rcu_tree_install_locked(). */
	return atomic_load_explicit(&rcu_state.tree, memory_order_acquire);
}

/* The tree the next GP will use: the one prepared ahead, or the current. */
static struct rcu_tree *rcu_tree_next_locked(void)
{
	return rcu_state.tree_next ? rcu_state.tree_next : rcu_tree();
}

/*
 * Build, ahead of the GP start that installs it, a tree of this shape big
 * enough for slots [0, nr_slots): capacity doubles from one leaf, so that
 * registrations rarely rebuild it.  Called with ofl_lock held by a thread
 * registering or changing a fan-out tunable, where an allocation failure
 * can be reported: the GP machinery never allocates.  A tree prepared
 * earlier and not yet installed (never published) is replaced.  Returns 0,
 * or -1 with errno ENOMEM (EINVAL: a shape that cannot cover them) and
 * nothing changed.
 */
int rcu_tree_prepare_locked(int nr_slots, int fanout, int fanout_leaf)
{
	struct rcu_tree *t;
	int cap = fanout_leaf;

	while (cap < nr_slots)
		cap *= 2;
	t = rcu_tree_build(cap, fanout, fanout_leaf);
	if (!t)
		return -1;   /* errno set */
	rcu_tree_free(rcu_state.tree_next);
	rcu_state.tree_next = t;
	return 0;
}

/* Make sure the next GP's tree covers slot; under ofl_lock.  0, or -1 with
 * errno ENOMEM and nothing changed. */
int rcu_tree_cover_slot_locked(int slot)
{
	struct rcu_tree *next = rcu_tree_next_locked();

	if (slot < next->capacity)
		return 0;
	return rcu_tree_prepare_locked(slot + 1, next->fanout, next->fanout_leaf);
}

/*
 * Install the prepared tree at a GP start (ofl_lock held, no GP in
 * progress) and move the online slots into it; no allocation.  The old tree
 * is kept until shutdown because late reporters may still hold pointers
 * into it (they find no bits set there and do nothing).
 */
static void rcu_tree_install_locked(void)
{
	struct rcu_tree *old = rcu_tree(), *t = rcu_state.tree_next;

	for (int s = 0; s < rcu_state.slot_hwm; s++) {
		if (rcu_slot_get(s)) {
			struct rcu_node *leaf = rcu_tree_leaf(t, s);

			leaf->qsmaskinitnext |= 1UL << (s - leaf->grplo);
		}
	}
	/* Release: the new tree's initialised nodes before the pointer. */
	atomic_store_explicit(&rcu_state.tree, t, memory_order_release);
	rcu_state.tree_next = NULL;
	old->retired_next = rcu_state.retired;
	rcu_state.retired = old;
}

/* ---- Quiescent-state reporting ------------------------------------------------ */

static void rcu_gp_kick_driver(void)
{
	/* seq_cst pairs with the driver's store to ->driver_sleeping and its
	 * root ->qsmask check in rcu_gp_sleep(). */
	atomic_fetch_add_explicit(&rcu_state.qs_futex, 1, memory_order_seq_cst);
	TRACE_RECORD("kick", atomic_load_explicit(&rcu_state.driver_sleeping, memory_order_relaxed));
	if (atomic_load_explicit(&rcu_state.driver_sleeping, memory_order_seq_cst)) {
		/*
		 * A synchronize_rcu() caller driving its own GP (not yieldable)
		 * is a woken caller too: an offload thread flushing or running
		 * a long batch defers to it until it runs (section 9 of
		 * design.md).  Not counted, the woken driver sat behind a 100k
		 * flush on the CPU it was queued on (seeds 004, traced: 250 us).
		 * Counted before the wake, as every sync wake; a hint (relaxed):
		 * a kick that races with the end of a kthread's GP may count a
		 * wake nobody records, which costs one nap of nocb_defer_us.
		 */
		if (!atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed))
			rcu_note_sync_wake();
		sys_futex_wake(&rcu_state.qs_futex, 1);
	}
}

/*
 * rcu_report_qs_rnp: clear mask in rnp (locked by the caller) and walk up
 * while a node empties, handing the lock from child to parent as the kernel
 * does.  Releases the lock.  When the root empties the grace period can end:
 * wake the driver.
 */
static void rcu_report_qs_rnp(unsigned long mask, struct rcu_node *rnp, bool dirty)
{
	for (;;) {
		if (!(rnp->qsmask & mask)) {
			pthread_mutex_unlock(&rnp->lock);
			return;
		}
		if (dirty)  /* read by the driver after it sees the root empty */
			atomic_store_explicit(&rcu_state.gp_dirty_flag, true, memory_order_relaxed);
		rnp->qsmask &= ~mask;
		if (rnp->qsmask || !rnp->parent)
			break;
		mask = rnp->grpmask;
		pthread_mutex_unlock(&rnp->lock);
		rnp = rnp->parent;
		pthread_mutex_lock(&rnp->lock);
	}
	if (!rnp->parent && !rnp->qsmask) {
		/* Release: every report that emptied the tree before this
		 * store; pairs with rcu_root_qs_done(). */
		atomic_store_explicit(&rcu_state.gp_root_done, true, memory_order_release);
		pthread_mutex_unlock(&rnp->lock);
		rcu_gp_kick_driver();
		return;
	}
	pthread_mutex_unlock(&rnp->lock);
}

/* Report a quiescent state for one slot (reader report or unregister).
 * ->busy: node locks held (rcu_busy_enter()). */
void rcu_report_qs_slot(int slot, bool dirty)
{
	struct rcu_tree *t = rcu_tree();
	struct rcu_node *leaf;

	if (slot >= t->capacity)
		return;  /* not in the tree yet: no GP waits on it */
	leaf = rcu_tree_leaf(t, slot);
	rcu_busy_enter();
	pthread_mutex_lock(&leaf->lock);
	rcu_report_qs_rnp(1UL << (slot - leaf->grplo), leaf, dirty);
	rcu_busy_exit();
}

/* Has every quiescent state of this GP been reported?  The acquire load
 * pairs with the release store in rcu_report_qs_rnp() made under the root's
 * lock when its qsmask emptied. */
static bool rcu_root_qs_done(void)
{
	return atomic_load_explicit(&rcu_state.gp_root_done, memory_order_acquire);
}

/* ---- Grace-period start --------------------------------------------------------- */

/*
 * Apply registrations and unregistrations (the kernel's qsmaskinitnext ->
 * qsmaskinit), then set every node's qsmask root first, so that a child
 * emptying early always finds its bit in an initialised parent.
 */
static void rcu_gp_init_tree(unsigned long gps)
{
	struct rcu_tree *t;

	pthread_mutex_lock(&rcu_state.ofl_lock);
	if (rcu_state.tree_next)
		rcu_tree_install_locked();
	t = rcu_tree();
	for (int i = 0; i < t->levels - 1; i++)
		for (int j = 0; j < t->level_cnt[i]; j++)
			t->nodes[t->level_first[i] + j].qsmaskinit = 0;
	t->nr_active = 0;
	for (int i = t->levels - 1; i >= 0; i--) {
		for (int j = 0; j < t->level_cnt[i]; j++) {
			struct rcu_node *rnp = &t->nodes[t->level_first[i] + j];

			if (i == t->levels - 1) {
				/* qsmaskinitnext is written only under ofl_lock,
				 * which we hold: no leaf lock needed to read it. */
				rnp->qsmaskinit = rnp->qsmaskinitnext;
				if (rnp->qsmaskinit)
					t->active[t->nr_active++] = j;
			}
			if (rnp->qsmaskinit && rnp->parent)
				rnp->parent->qsmaskinit |= rnp->grpmask;
		}
	}
	/* Nobody online: the GP is over as soon as it starts. */
	atomic_store_explicit(&rcu_state.gp_root_done, t->nodes[0].qsmaskinit == 0,
			      memory_order_relaxed);
	for (int n = 0; n < t->nr_nodes; n++) {
		struct rcu_node *rnp = &t->nodes[n];

		/* Nothing online below: its qsmask is already 0 (the last GP
		 * ended with every node empty) and stays so. */
		if (!rnp->qsmaskinit && n)
			continue;
		pthread_mutex_lock(&rnp->lock);
		rnp->qsmask = rnp->qsmaskinit;
		rnp->gp_seq = gps;
		rnp->snap_valid = 0;
		rnp->snap_pre = 0;
		pthread_mutex_unlock(&rnp->lock);
	}
	pthread_mutex_unlock(&rcu_state.ofl_lock);
}

/* Iterate the leaves that still owe quiescent states; fn is called with the
 * leaf locked and must release the lock. */
static void rcu_for_each_holdout_leaf(void (*fn)(struct rcu_node *, void *), void *arg)
{
	struct rcu_tree *t = rcu_tree();
	int l = t->levels - 1;

	/* Only the leaves that had online slots at GP init (a tree grown for
	 * 64 callers that have gone keeps its size). */
	for (int a = 0; a < t->nr_active; a++) {
		struct rcu_node *leaf = &t->nodes[t->level_first[l] + t->active[a]];

		pthread_mutex_lock(&leaf->lock);
		if (!leaf->qsmask) {
			pthread_mutex_unlock(&leaf->lock);
			continue;
		}
		fn(leaf, arg);
	}
}

/* Snapshot every holdout's ->watching before the GP-start membarrier. */
static void rcu_prescan_leaf(struct rcu_node *leaf, void *arg)
{
	for (unsigned long m = leaf->qsmask; m; m &= m - 1) {
		int i = __builtin_ctzl(m);
		struct rcu_thread *t = rcu_slot_get(leaf->grplo + i);

		if (!t)
			continue;
		leaf->snap[i] = __atomic_load_n(&t->rdr->watching, __ATOMIC_ACQUIRE);
		leaf->snap_valid |= 1UL << i;
		leaf->snap_pre |= 1UL << i;
	}
	pthread_mutex_unlock(&leaf->lock);
}

/*
 * The seed-000 early report: the driving thread cannot be in a read-side
 * section while it runs GP code, and a thread blocked waiting for this GP
 * is in an extended quiescent state: report both now instead of waiting for
 * FQS scans to notice.  Clean reports: the driver is this thread, and a
 * blocked waiter's accesses happen before its ->gp_blocked release store.
 */
/*
 * Blocked or driving: quiescent now?  A blocked thread runs no code of its
 * own, but a signal handler on it may run a section: that section entered
 * with the fenced slow path (TRCU_RF_BLOCKED), so its odd ->watching is
 * seen here or its loads come after the fence in rcu_gp_early_report()
 * (store buffering, both sides fenced); an even value stored with release
 * after a handler's section closes it.  The driver, when not blocked, is
 * the GP kthread or an offload thread, which block every signal
 * (rcu_kthread_create()): it cannot be in a section while it runs GP code.
 */
static bool rcu_early_qs(struct rcu_thread *r)
{
	/* Acquire pairs with the release in rcu_enter_gp_wait(). */
	if (atomic_load_explicit(&r->gp_blocked, memory_order_acquire))
		/* Acquire pairs with the release store in watching_exit(). */
		return !(__atomic_load_n(&r->rdr->watching, __ATOMIC_ACQUIRE) & 1);
	return r == rcu_state.driver;
}

static void rcu_early_report_leaf(struct rcu_node *leaf, void *arg)
{
	unsigned long mask = 0;

	for (unsigned long m = leaf->qsmask; m; m &= m - 1) {
		int i = __builtin_ctzl(m);
		struct rcu_thread *r = rcu_slot_get(leaf->grplo + i);

		if (r && rcu_early_qs(r))
			mask |= 1UL << i;
	}
	rcu_report_qs_rnp(mask, leaf, false);
}

static void rcu_gp_early_report(void)
{
	/* Pairs with the fence in rcu_exit_gp_wait(): a waiter that has
	 * left is seen as such, or its next section sees this GP's updates. */
	atomic_thread_fence(memory_order_seq_cst);
	rcu_for_each_holdout_leaf(rcu_early_report_leaf, NULL);
}

static void rcu_gp_init(void)
{
	unsigned long gps = rcu_seq_startval(atomic_load_explicit(&rcu_state.gp_seq,
								  memory_order_relaxed));

	TRACE_RECORD("init", gps);
	atomic_store_explicit(&rcu_state.gp_dirty_flag, false, memory_order_relaxed);
	/*
	 * Seed 004: cover the synchronize_rcu() waiters added so far, *before*
	 * gp_seq says this GP started.  Otherwise a caller could take its
	 * cookie while gp_seq already reads "started" (cookie = the end of the
	 * next GP), push its node, and be covered and woken by this GP: its
	 * cookie would not be done when synchronize_rcu() returns (found by
	 * torture rotating the paths).  The push (seq_cst CAS) is ordered
	 * before the release store below; a caller that sees the GP started
	 * pushes behind the wait head, i.e. waits for the next GP.
	 *
	 * The other side of that window: a caller that pushes in front of the
	 * wait head (not covered) while gp_seq still reads idle would name this
	 * GP as its own and wait forever.  So sr_init_seq says "this GP's init
	 * has begun" before the push; rcu_wait_gp_sr() reads it after its own
	 * push.  seq_cst: store, then the wait head's CAS; the caller's CAS,
	 * then its load: a caller in front of the head sees this value.
	 */
	atomic_store_explicit(&rcu_state.sr_init_seq, gps, memory_order_seq_cst);
	rcu_state.sr_uncovered = !rcu_sr_normal_gp_init();
	if (rcu_test_hooks.gp_init)
		rcu_test_hooks.gp_init();
	/* Release: pollers that see the GP in progress see what preceded it. */
	atomic_store_explicit(&rcu_state.gp_seq, gps, memory_order_release);
	rcu_state.exp_at_init = rcu_state.expedited;
	if (rcu_state.exp_at_init)
		atomic_store_explicit(&rcu_state.exp_seq,
				      rcu_seq_startval(atomic_load_explicit(&rcu_state.exp_seq,
									    memory_order_relaxed)),
				      memory_order_release);
	rcu_state.gp_start_ns = sys_now_ns();
	rcu_stall_reset();
	rcu_gp_init_tree(gps);
	/* Early report first: when it empties the tree (only the driver and
	 * blocked waiters were online) the GP needs no membarrier at all. */
	if (TUN(early_report)) {
		rcu_gp_early_report();
		if (rcu_root_qs_done()) {
			TRACE_RECORD("init_done_early", 0);
			return;
		}
	}
	if (TUN(jiffies_till_first_fqs) == 0)
		rcu_for_each_holdout_leaf(rcu_prescan_leaf, NULL);
	/*
	 * A new reader generation (x86-64 read side, include/treercu/rcu.h):
	 * sections that begin after the barrier below store it, so a scan
	 * that saw an older odd value sees theirs differ.  Only GP drivers
	 * write it (gp_mutex held); ordered before the readers' later loads
	 * by the barrier below.
	 */
	rcu_state.gp_gen = __atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED) + 2;
	/* Release: after the gp_seq store above, for the compiler too (x86
	 * keeps stores in order, so it costs nothing there): a reader that
	 * loads it sees this GP started (rcu_watching_qs()). */
	__atomic_store_n(&trcu_reader_gen, rcu_state.gp_gen, __ATOMIC_RELEASE);
	/*
	 * GP-start barrier: every reader either had its ->watching store (odd)
	 * visible before this point, so the scans below see it, or runs its
	 * section's loads after it and sees every update that preceded this GP.
	 * Pairs with the compiler barrier after the store in trcu_read_lock().
	 */
	sys_gp_mb();
	TRACE_RECORD("init_mb_done", 0);
}

/* ---- Force-quiescent-state scans -------------------------------------------------- */

struct fqs_arg {
	bool arm;       /* set ->need_qs on holdouts */
	int armed;      /* how many were newly armed */
};

static void rcu_fqs_leaf(struct rcu_node *leaf, void *arg)
{
	struct fqs_arg *fa = arg;
	unsigned long mask = 0;
	bool dirty = false;

	for (unsigned long m = leaf->qsmask; m; m &= m - 1) {
		int i = __builtin_ctzl(m);
		struct rcu_thread *r = rcu_slot_get(leaf->grplo + i);

		if (!r) {   /* unregistered after GP start */
			mask |= 1UL << i;
			dirty = true;
			continue;
		}
		/* Acquire: pairs with the fenced read side's release store. */
		if (rcu_watching_qs(leaf, i, __atomic_load_n(&r->rdr->watching, __ATOMIC_ACQUIRE),
				    &dirty)) {
			mask |= 1UL << i;
		} else if (fa->arm && r != rcu_state.driver &&
			   !__atomic_load_n(&r->rdr->need_qs, __ATOMIC_RELAXED)) {
			/* Ordered before the reader's ->watching reread by the
			 * sys_gp_mb() the caller runs next; pairs with the
			 * barrier before the ->need_qs load in trcu_read_unlock(). */
			__atomic_store_n(&r->rdr->need_qs, 1, __ATOMIC_RELAXED);
			fa->armed++;
		}
	}
	rcu_report_qs_rnp(mask, leaf, dirty);
}

static int rcu_fqs_scan(bool arm)
{
	struct fqs_arg fa = { .arm = arm };

	atomic_fetch_add_explicit(&rcu_state.n_fqs, 1, memory_order_relaxed);
	rcu_for_each_holdout_leaf(rcu_fqs_leaf, &fa);
	return fa.armed;
}

static bool rcu_exp_pending(void)
{
	return atomic_load_explicit(&rcu_state.exp_waiters, memory_order_relaxed) > 0;
}

/* A caller asks to drive and this driver may hand the GP over.  seq_cst:
 * pairs with the caller's increment before rcu_gp_kick_driver(). */
static bool rcu_gp_takeover_wanted(void)
{
	return atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed) &&
	       atomic_load_explicit(&rcu_state.takeover_req, memory_order_seq_cst) > 0;
}

/*
 * Sleep until target_ns, until the root empties, until a caller asks to take
 * the GP over, or until an expedited request arrives.  A QSBR driver (the GP kthread) is offline while it
 * sleeps, as a CPU is idle while its GP kthread sleeps.
 */
static void rcu_gp_sleep_until(long target)
{
	struct rcu_thread *drv = rcu_state.driver;
	bool was_online = drv && drv->depth_bias;

	if (was_online)
		rcu_internal_qsbr_offline(drv);
	for (;;) {
		uint32_t v = atomic_load_explicit(&rcu_state.qs_futex, memory_order_seq_cst);
		long now = sys_now_ns();

		/* seq_cst pairs with rcu_gp_kick_driver(). */
		atomic_store_explicit(&rcu_state.driver_sleeping, 1, memory_order_seq_cst);
		if (now >= target || rcu_root_qs_done() || rcu_gp_takeover_wanted() ||
		    (rcu_exp_pending() && !rcu_state.expedited))
			break;
		sys_futex_wait(&rcu_state.qs_futex, v, target - now);
		TRACE_RECORD("drv_wake", 0);
		/* A caller that drives runs again (rcu_gp_kick_driver()):
		 * recorded now, not when it returns, or a caller serving GP
		 * after GP would start a new deferral at every kick. */
		if (!atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed))
			rcu_note_sync_resume();
	}
	atomic_store_explicit(&rcu_state.driver_sleeping, 0, memory_order_relaxed);
	if (was_online)
		rcu_internal_qsbr_online(drv);
}

/* Sleep until the tick boundary `ticks` ticks from now (jiffies-like). */
static void rcu_gp_sleep(long ticks)
{
	long tick = TUN(tick_us) * 1000L;

	rcu_gp_sleep_until((sys_now_ns() / tick + ticks) * tick);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

#define RCU_EXP_SLEEP_NS (50 * 1000L)

/*
 * What to do after a scan left holdouts.  For fqs_spin_us: pause briefly
 * and rescan (a reader running on another CPU leaves its section within
 * nanoseconds).  Not sched_yield(): on a machine whose CPUs are all busy
 * that hands the CPU to a busy thread for a whole time slice while the
 * holdout, preempted, cannot run (4 ms p50 with two busy readers on two
 * CPUs).  Then ask the holdouts to report (->need_qs + membarrier + rescan)
 * and sleep until a report empties the root or the next FQS tick.
 * Expedited: the same, with short sleeps instead of ticks.
 */
static void rcu_gp_holdout_wait(long spin_until_ns)
{
	if (rcu_exp_pending())
		rcu_state.expedited = true;  /* an expedited caller joined */
	if (sys_now_ns() < spin_until_ns) {
		for (int i = 0; i < 32; i++)
			cpu_relax();
		return;
	}
	if (rcu_fqs_scan(true)) {
		/* SB: ->need_qs stores before the holdouts' ->watching reread.
		 * Pairs with the compiler barrier in trcu_read_unlock(). */
		sys_gp_mb();
		return;   /* the caller rescans at once */
	}
	if (rcu_state.expedited)
		rcu_gp_sleep_until(sys_now_ns() + RCU_EXP_SLEEP_NS);
	else
		rcu_gp_sleep(TUN(jiffies_till_next_fqs));
}

/* Returns false when the GP, still in progress, is left to a caller that
 * takes it over. */
static bool rcu_gp_fqs_loop(bool resumed)
{
	long first = TUN(jiffies_till_first_fqs);
	long spin_until;

	if (first > 0 && !rcu_state.expedited && !resumed)
		rcu_gp_sleep(first);
	spin_until = sys_now_ns() + TUN(fqs_spin_us) * 1000L;
	for (;;) {
		if (rcu_root_qs_done())
			return true;
		rcu_fqs_scan(false);
		if (rcu_root_qs_done())
			return true;
		if (rcu_gp_takeover_wanted()) {
			TRACE_RECORD("yield", 0);
			return false;
		}
		rcu_check_stall();
		rcu_gp_holdout_wait(spin_until);
	}
}

static bool rcu_start_this_gp(unsigned long s, struct rcu_thread *r);

/* ---- Grace-period end ------------------------------------------------------------------ */

static void rcu_gp_cleanup(void)
{
	unsigned long gps = atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed);

	/*
	 * GP-end barrier: a reader whose quiescent state was seen only through
	 * a plain ->watching store has all its section's accesses complete
	 * before this returns.  Pairs with the compiler barrier before the
	 * store in trcu_read_unlock().  Skipped when every slot was seen even
	 * and unchanged on both sides of the GP-start barrier, and on TSO
	 * machines (RCU_TSO), where the store cannot pass the section's loads.
	 */
	/* Signal handlers' emergency sections (src/thread.c) are not in
	 * the tree: wait for the ones in progress now, after the GP start. */
	rcu_emerg_readers_wait();
	if (!RCU_TSO && atomic_load_explicit(&rcu_state.gp_dirty_flag, memory_order_relaxed))
		sys_gp_mb();
	if (rcu_state.exp_at_init)
		atomic_store_explicit(&rcu_state.exp_seq,
				      rcu_seq_endval(atomic_load_explicit(&rcu_state.exp_seq,
									  memory_order_relaxed)),
				      memory_order_release);
	/* Release: pairs with the acquire loads in rcu_seq_done() callers:
	 * whoever sees the GP ended sees every reader's section finished. */
	atomic_store_explicit(&rcu_state.gp_seq, rcu_seq_endval(gps), memory_order_release);
	TRACE_RECORD("gp_end", gps);
	atomic_fetch_add_explicit(&rcu_state.n_gp, 1, memory_order_relaxed);
	/* Seed 004: wake this GP's synchronize_rcu() waiters. */
	rcu_sr_normal_gp_cleanup();
	TRACE_RECORD("sr_cleanup_done", 0);
	if (rcu_state.sr_uncovered)   /* no wait head was free: another GP */
		rcu_start_this_gp(rcu_seq_snap_val(rcu_seq_endval(gps)), NULL);
}

/* Longest a caller that relies on others sleeps before it looks again (a
 * lost hand-off, shutdown): a safety net, not the wake-up. */
#define RCU_WAIT_RECHECK_NS (10 * 1000000L)

enum rcu_driver_kind { RCU_DRV_CALLER, RCU_DRV_KTHREAD, RCU_DRV_OFFLOAD };

/*
 * Wake the GP-end sleepers so that each rechecks its cookie.  all=false (a
 * synchronize_rcu() caller that drove the GP, on its way out): only when a
 * synchronize_rcu() caller sleeps there, or a wakeme-path caller or an
 * rcu_barrier() waits for callbacks (nr_cb_waiters).  The others (the GP
 * kthread and the offload threads, "asynchronous" waiters) sleep at most an
 * async recheck interval (rcu_async_wait_ns(): 1 to 4 ticks) and look again
 * by themselves: a futex wake costs the caller tens of microseconds (an IPI
 * to the idle CPU, or the woken thread preempting it), half of what it
 * waited for the GP itself (seeds 004, traced with src/trace.h: figures in
 * docs/design.md).  Callbacks nobody waits for may run up to 4 ticks later.
 */
static void rcu_wake_gp_waiters(bool all)
{
	/* Counted only for synchronize_rcu() callers sleeping here (not the
	 * GP kthread, an offload thread or list callers), and before the
	 * increment below that lets them resume (see wakeme_after_rcu()). */
	if (atomic_load_explicit(&rcu_state.nr_sync_gp_waiters, memory_order_relaxed))
		rcu_note_sync_wake();
	/* seq_cst: pairs with the waiter's increment of nr_gp_waiters before
	 * it loads gp_end_futex and gp_seq in rcu_wait_gp(); also publishes
	 * the count to a waiter that sees the new value. */
	atomic_fetch_add_explicit(&rcu_state.gp_end_futex, 1, memory_order_seq_cst);
	if (!atomic_load_explicit(&rcu_state.nr_gp_waiters, memory_order_seq_cst))
		return;
	/* After the seq_cst load above (acquire): a synchronize_rcu() caller
	 * counts itself here before its seq_cst nr_gp_waiters increment
	 * (rcu_gp_waiter_enter()), so one whose increment we read is seen.
	 * This rests on every write to nr_gp_waiters being a read-modify-
	 * write (a release sequence): a plain store there would break it.
	 * nr_cb_waiters is a hint: a miss costs that caller one recheck
	 * interval, never a hang. */
	if (all || atomic_load_explicit(&rcu_state.nr_sync_gp_waiters, memory_order_relaxed) ||
	    atomic_load_explicit(&rcu_state.nr_cb_waiters, memory_order_relaxed))
		sys_futex_wake(&rcu_state.gp_end_futex, INT_MAX);
	else
		atomic_fetch_add_explicit(&rcu_state.n_async_skip, 1, memory_order_relaxed);
}

/*
 * How long an asynchronous waiter (GP kthread, offload thread) sleeps on
 * gp_end_futex before it looks again, since a caller that drives does not
 * wake it (rcu_wake_gp_waiters()): a tick, doubled while gp_seq stands
 * still (a long GP: a reader holding on), up to RCU_ASYNC_RECHECK_TICKS.
 */
#define RCU_ASYNC_RECHECK_TICKS 4

struct rcu_async_wait { unsigned long seq; long ns; };

static long rcu_async_wait_ns(struct rcu_async_wait *aw)
{
	unsigned long cur = atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed);
	/* At least 100 us: tick_us=1 must not turn this into a busy loop. */
	long tick = (TUN(tick_us) < 100 ? 100 : TUN(tick_us)) * 1000L;
	long max = RCU_ASYNC_RECHECK_TICKS * tick;

	if (max > RCU_WAIT_RECHECK_NS)
		max = RCU_WAIT_RECHECK_NS;
	if (aw->ns && cur == aw->seq)
		aw->ns = aw->ns * 2 > max ? max : aw->ns * 2;
	else
		aw->ns = tick < max ? tick : max;
	aw->seq = cur;
	return aw->ns;
}


/*
 * One grace period, driven by the calling thread (gp_mutex held): a new one,
 * or the rest of the one in progress when a caller took it over.  The GP
 * kthread and offload threads drive yieldably: a synchronize_rcu() caller
 * that arrives during their GP takes it over, so that the reader's report
 * wakes the caller itself, one hand-off instead of two (driver, then
 * caller).  Returns false when this driver handed the GP over.
 */
static bool rcu_gp_one_locked(struct rcu_thread *driver, enum rcu_driver_kind kind);

/* ->busy for the whole GP: the driver takes ofl_lock and rcu_node locks
 * (rcu_busy_enter()). */
static bool rcu_gp_one(struct rcu_thread *driver, enum rcu_driver_kind kind)
{
	bool ret;

	rcu_busy_enter();
	ret = rcu_gp_one_locked(driver, kind);
	rcu_busy_exit();
	return ret;
}

static bool rcu_gp_one_locked(struct rcu_thread *driver, enum rcu_driver_kind kind)
{
	bool resumed = rcu_seq_state(atomic_load_explicit(&rcu_state.gp_seq,
							  memory_order_relaxed)) != 0;

	/*
	 * Between GPs too, not only in the FQS loop: a GP with no holdout
	 * ends at its first scan, before the loop looks, so a driver with
	 * GP after GP to run never yielded and the requester, blocked in
	 * pthread_mutex_lock(), could not even see its own GP end
	 * (tests/sync/test_takeover_yields_between_gps.c; seeds 003: calls of 0.3-1.9 s).
	 * seq_cst: pairs with the requester's increment before it blocks.
	 */
	if (!resumed && kind != RCU_DRV_CALLER &&
	    atomic_load_explicit(&rcu_state.takeover_req, memory_order_seq_cst) > 0)
		return false;
	rcu_state.driver = driver;
	atomic_store_explicit(&rcu_state.driver_yieldable, kind != RCU_DRV_CALLER,
			      memory_order_relaxed);
	if (!resumed) {
		rcu_state.expedited = rcu_exp_pending();
		rcu_gp_init();
	} else {
		rcu_state.expedited |= rcu_exp_pending();
	}
	if (!rcu_gp_fqs_loop(resumed)) {
		rcu_state.driver = NULL;
		atomic_store_explicit(&rcu_state.driver_yieldable, false, memory_order_relaxed);
		return false;
	}
	rcu_gp_cleanup();
	rcu_state.driver = NULL;
	atomic_store_explicit(&rcu_state.driver_yieldable, false, memory_order_relaxed);
	atomic_fetch_add_explicit(kind == RCU_DRV_KTHREAD ? &rcu_state.n_gp_kthread
							 : &rcu_state.n_gp_caller, 1,
				  memory_order_relaxed);
	rcu_wake_gp_waiters(kind != RCU_DRV_CALLER);
	return true;
}

/*
 * Become the driver: at once if nobody drives; by taking the GP over from
 * the GP kthread or an offload thread if `takeover` (a synchronize_rcu()
 * caller).  Others do not even try while a takeover is asked for, or the
 * driver that just yielded could win the mutex straight back.
 */
static bool rcu_gp_acquire_driver(bool takeover)
{
	/* Callers too: a requester blocked in the mutex below cannot see its
	 * GP end, and trylocking callers could keep it there for tens of ms
	 * (32 callers plus a call_rcu() flood).  The requester serves every
	 * waiter. */
	if (atomic_load_explicit(&rcu_state.takeover_req, memory_order_relaxed))
		return false;
	if (!pthread_mutex_trylock(&rcu_state.gp_mutex))
		return true;
	if (!takeover || !atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed))
		return false;
	/* seq_cst: pairs with the driver's check in rcu_gp_sleep_until() after
	 * its driver_sleeping store (the kick below wakes it). */
	atomic_fetch_add_explicit(&rcu_state.takeover_req, 1, memory_order_seq_cst);
	TRACE_RECORD("takeover_req", 0);
	rcu_gp_kick_driver();
	pthread_mutex_lock(&rcu_state.gp_mutex);
	TRACE_RECORD("takeover_got", 0);
	atomic_fetch_sub_explicit(&rcu_state.takeover_req, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&rcu_state.n_takeover, 1, memory_order_relaxed);
	return true;
}

/* ---- Requests -------------------------------------------------------------------------- */

static bool rcu_seq_done(unsigned long s)
{
	return rcu_seq_done_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire), s);
}

static bool rcu_gp_needed(void)
{
	return ULONG_CMP_LT(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire),
			    atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire));
}

/*
 * rcu_start_this_gp: funnel a request for the GP that ends at s from the
 * requester's leaf to the root, stopping where someone already asked for it.
 * Returns true when this call raised rcu_state.gp_seq_needed.
 */
static bool rcu_start_this_gp_funnel(unsigned long s, struct rcu_thread *r);

/* ->busy: the funnel takes rcu_node locks (rcu_busy_enter()). */
static bool rcu_start_this_gp(unsigned long s, struct rcu_thread *r)
{
	bool ret;

	rcu_busy_enter();
	ret = rcu_start_this_gp_funnel(s, r);
	rcu_busy_exit();
	return ret;
}

static bool rcu_start_this_gp_funnel(unsigned long s, struct rcu_thread *r)
{
	struct rcu_tree *t = rcu_tree();
	struct rcu_node *rnp = (r && r->slot >= 0 && r->slot < t->capacity)
			       ? rcu_tree_leaf(t, r->slot) : rcu_get_root(t);
	unsigned long old;

	/* Already asked for, and gp_seq_needed only grows: skip the funnel's
	 * locks (64 callers queued on the leaf lock, seeds 003).  Acquire:
	 * pairs with the CAS below. */
	if (ULONG_CMP_GE(atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire), s))
		return false;
	for (; rnp; rnp = rnp->parent) {
		pthread_mutex_lock(&rnp->lock);
		if (ULONG_CMP_GE(rnp->gp_seq_needed, s)) {
			pthread_mutex_unlock(&rnp->lock);
			return false;
		}
		rnp->gp_seq_needed = s;
		pthread_mutex_unlock(&rnp->lock);
	}
	old = atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_relaxed);
	do {
		if (ULONG_CMP_GE(old, s))
			return false;
		/* seq_cst: pairs with the GP kthread's check of gp_seq_needed
		 * after it announces it is sleeping. */
	} while (!atomic_compare_exchange_weak_explicit(&rcu_state.gp_seq_needed, &old, s,
							memory_order_seq_cst,
							memory_order_relaxed));
	return true;
}

/* ---- The GP kthread ---------------------------------------------------------------------- */

static void *rcu_gp_kthread(void *arg)
{
	struct rcu_thread *r = &rcu_thread_tls;
	struct rcu_async_wait aw = { 0, 0 };

	pthread_setname_np(pthread_self(), "trcu_gp");
	/* The library's threads never act on a cancellation (internal.h). */
	sys_cancel_disable();
	if (trcu_register_thread())
		sys_die("GP kthread: cannot register: out of memory");
	/* A QSBR-style slot, offline while idle: like a CPU running the
	 * kernel's GP kthread, it is "watching" only while it runs. */
	r->qsbr = true;
	/*
	 * And blocked (->gp_blocked) whenever it does not hold gp_mutex: it
	 * goes online only while it holds gp_mutex, so a GP that another
	 * thread drives reports this slot at init like a blocked waiter's
	 * (rcu_early_report_leaf()) instead of scanning it and paying the
	 * GP-end membarrier for it: an idle synchronize_rcu() after the
	 * kthread started costs what it cost before
	 * (tests/rcu/test_idle_gp_slots.c).
	 */
	rcu_enter_gp_wait(r);
	for (;;) {
		uint32_t v = atomic_load_explicit(&rcu_state.kthread_futex, memory_order_seq_cst);

		if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
			break;
		atomic_store_explicit(&rcu_state.kthread_sleeping, 1, memory_order_seq_cst);
		if (!rcu_gp_needed()) {
			sys_futex_wait(&rcu_state.kthread_futex, v, -1);
			TRACE_RECORD("kth_run", 0);
			continue;
		}
		atomic_store_explicit(&rcu_state.kthread_sleeping, 0, memory_order_relaxed);
		if (!rcu_gp_acquire_driver(false)) {
			/* A caller is driving: wait for its GP to end; a caller
			 * does not wake us (rcu_wake_gp_waiters()). */
			uint32_t e = atomic_load_explicit(&rcu_state.gp_end_futex,
							  memory_order_seq_cst);

			atomic_fetch_add_explicit(&rcu_state.nr_gp_waiters, 1, memory_order_seq_cst);
			if (!rcu_gp_acquire_driver(false)) {
				sys_futex_wait(&rcu_state.gp_end_futex, e, rcu_async_wait_ns(&aw));
				atomic_fetch_sub_explicit(&rcu_state.nr_gp_waiters, 1,
							  memory_order_relaxed);
				continue;
			}
			atomic_fetch_sub_explicit(&rcu_state.nr_gp_waiters, 1, memory_order_relaxed);
		}
		/* Cleared before going online, set again after going offline,
		 * both with gp_mutex held (the release and fence pairs of
		 * rcu_enter_gp_wait()/rcu_exit_gp_wait()). */
		rcu_exit_gp_wait(r, 0);
		rcu_internal_qsbr_online(r);
		while (rcu_gp_needed() &&
		       !atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
			if (!rcu_gp_one(r, RCU_DRV_KTHREAD))
				break;   /* a caller took the GP over */
		rcu_internal_qsbr_offline(r);
		rcu_enter_gp_wait(r);
		pthread_mutex_unlock(&rcu_state.gp_mutex);
	}
	trcu_unregister_thread();
	return NULL;
}

/* Make sure the GP kthread runs and sees the latest request. */
static void rcu_gp_kthread_wake(void)
{
	if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
		return;
	if (!atomic_load_explicit(&rcu_state.kthread_started, memory_order_acquire)) {
		pthread_mutex_lock(&kthread_start_lock);
		if (!atomic_load_explicit(&rcu_state.kthread_started, memory_order_relaxed)) {
			if (rcu_kthread_create(&rcu_state.kthread, rcu_gp_kthread, NULL))
				sys_die("cannot start the GP kthread: %s", strerror(errno));
			/* Release pairs with the acquire above and in shutdown. */
			atomic_store_explicit(&rcu_state.kthread_started, true,
					      memory_order_release);
		}
		pthread_mutex_unlock(&kthread_start_lock);
	}
	/* seq_cst pairs with the kthread's store to ->kthread_sleeping followed
	 * by its gp_seq_needed check. */
	atomic_fetch_add_explicit(&rcu_state.kthread_futex, 1, memory_order_seq_cst);
	TRACE_RECORD("kth_wake", atomic_load_explicit(&rcu_state.kthread_sleeping, memory_order_relaxed));
	if (atomic_load_explicit(&rcu_state.kthread_sleeping, memory_order_seq_cst))
		sys_futex_wake(&rcu_state.kthread_futex, 1);
}

/*
 * After a thread stops driving: if more GPs are wanted, let a waiting caller
 * take over, or the GP kthread when nobody waits.  When the driver was a
 * synchronize_rcu() caller and no other one waits (self_sr: the caller's own
 * list node still counts in rcu_sr_nr_waiting()), nor a wakeme or
 * rcu_barrier() caller, the GPs still wanted are asynchronous (callbacks,
 * polled cookies): their requesters are awake, woke the GP kthread after
 * raising gp_seq_needed, or sleep on gp_end_futex at most an async recheck
 * interval, so the caller returns without a wake-up (rcu_wake_gp_waiters()).
 * A list caller that leaves its own request undone wakes the GP kthread for
 * it on its way out (rcu_wait_gp_sr()).
 */
static void rcu_gp_handoff(bool caller, bool self_sr)
{
	bool gp_waiters, sync_gp, sr_others;

	if (!rcu_gp_needed())
		return;
	/* The GP kthread too may be waiting here, on gp_end_futex, for
	 * gp_mutex: its own wake-up word would leave it asleep (seeds 003: a
	 * 10 ms max on the list path).  seq_cst, then the sync count: see
	 * rcu_wake_gp_waiters(). */
	gp_waiters = atomic_load_explicit(&rcu_state.nr_gp_waiters, memory_order_seq_cst) != 0;
	sync_gp = gp_waiters &&
		  atomic_load_explicit(&rcu_state.nr_sync_gp_waiters, memory_order_relaxed) != 0;
	sr_others = rcu_sr_nr_waiting() > (self_sr ? 1 : 0);
	if (caller && !sync_gp && !sr_others && !rcu_exp_pending() &&
	    !atomic_load_explicit(&rcu_state.nr_cb_waiters, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&rcu_state.n_async_skip, 1, memory_order_relaxed);
		return;   /* asynchronous needs only */
	}
	if (gp_waiters)
		rcu_wake_gp_waiters(true);
	/* seed-004 waiters sleep on their own node, not on gp_end_futex:
	 * only the GP kthread can take over for them. */
	if (!gp_waiters || sr_others)
		rcu_gp_kthread_wake();
}

/*
 * A grace period usually ends within microseconds, and a futex wake-up costs
 * tens of them here: poll gp_end_futex briefly before sleeping (as liburcu's
 * waiters do).  Bounded, and with pause instructions, so an oversubscribed
 * machine loses little.  Returns true when the word moved.
 */
#define RCU_WAIT_SPIN_NS (5 * 1000L)

static bool rcu_wait_gp_spin(uint32_t v)
{
	long until = sys_now_ns() + RCU_WAIT_SPIN_NS;

	do {
		for (int i = 0; i < 16; i++)
			cpu_relax();
		/* Acquire: pairs with the seq_cst increment in
		 * rcu_wake_gp_waiters(), as the futex path does. */
		if (atomic_load_explicit(&rcu_state.gp_end_futex, memory_order_acquire) != v)
			return true;
	} while (sys_now_ns() < until);
	return false;
}

/*
 * Before handing off, serve the callers already waiting: drive until the
 * furthest GP requested *now* (at most two more GPs, since the target is
 * fixed).  Handing off instead wakes every sleeper to race for gp_mutex,
 * and with 64 callers on 2 CPUs some lost that race for a second and more
 * (seeds 003: max 1.6 s, one thread making 3x its share of the calls).
 */
static void rcu_gp_serve_waiters(struct rcu_thread *r, enum rcu_driver_kind kind)
{
	unsigned long need = atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire);

	/* Seed-004 list waiters too: left to the GP kthread, their GP waited
	 * for it to be scheduled, behind an offload thread's batch when the
	 * driver was that thread (seeds 004: p99 0.7 ms at 100k callbacks). */
	/* A caller serves synchronize_rcu() callers only: the asynchronous
	 * waiters look again by themselves (rcu_wake_gp_waiters()). */
	_Atomic int *waiters = kind == RCU_DRV_CALLER ? &rcu_state.nr_sync_gp_waiters
						      : &rcu_state.nr_gp_waiters;

	while ((atomic_load_explicit(waiters, memory_order_relaxed) > 0 || rcu_sr_waiters()) &&
	       !rcu_seq_done(need))
		if (!rcu_gp_one(r, kind))
			return;
}

/* ---- Offload threads defer to synchronize_rcu() callers ---------------------------------- */

/*
 * A woken synchronize_rcu() caller is placed on its waker's CPU or on one
 * that looks idle; on a small machine that is often where an offload thread
 * is about to invoke a long batch, and the caller then waits for the whole
 * batch: the scheduler protects the running thread's slice whatever its nice
 * value, and a yield does not help a caller that has used more than its
 * share (seeds 004 traced with sched events: 0.7-0.9 ms behind 100k
 * callbacks).  So wakers count here, woken callers record the count once
 * they run, and an offload thread that sees the two differ sleeps until a
 * caller has run, at most nocb_defer_us (nocb_defer_to_woken()): the
 * callbacks can wait, the caller is blocked.  The counters are relaxed (a
 * hint: a stale value costs one short deferral or one missed one, never
 * correctness).
 */
void rcu_note_sync_wake(void)
{
	atomic_fetch_add_explicit(&rcu_state.sync_wake_seq, 1, memory_order_relaxed);
}

void rcu_note_sync_resume(void)
{
	unsigned long w = atomic_load_explicit(&rcu_state.sync_wake_seq, memory_order_relaxed);

	/* Write only on a change: the line stays shared while nobody waits. */
	if (atomic_load_explicit(&rcu_state.sync_resume_seq, memory_order_relaxed) != w)
		atomic_store_explicit(&rcu_state.sync_resume_seq, w, memory_order_relaxed);
}

/*
 * Should an offload thread hold its callbacks back?  Yes while a woken
 * synchronize_rcu() caller has not run yet, and while a caller waits for a
 * GP that has been requested but not ended: its driver (the GP kthread,
 * say) may be the thread this one just preempted (traced: the GP kthread
 * woke the offload thread, which took its CPU for 0.65 ms).  The key names
 * the situation, so that each is deferred to once.
 */
/* A synchronize_rcu() caller (futex or list path; the wakeme path's caller
 * needs the offload thread to run its callback) starts or ends its wait.
 * Relaxed: a hint, as above. */
static void rcu_sync_caller_enter(void)
{
	atomic_fetch_add_explicit(&rcu_state.nr_sync_waiters, 1, memory_order_relaxed);
}

static void rcu_sync_caller_exit(void)
{
	atomic_fetch_sub_explicit(&rcu_state.nr_sync_waiters, 1, memory_order_relaxed);
	rcu_note_sync_resume();
}

/*
 * A thread waits for an offload thread to run callbacks (a wakeme-path
 * synchronize_rcu(), an rcu_barrier(), a flood push-back): counted so that a
 * caller driving a GP still wakes the offload threads at its end
 * (rcu_wake_gp_waiters()).  Relaxed, a hint: a miss costs at most the offload
 * thread's recheck interval, never a hang.
 */
void rcu_cb_waiter_enter(void)
{
	atomic_fetch_add_explicit(&rcu_state.nr_cb_waiters, 1, memory_order_relaxed);
}

void rcu_cb_waiter_exit(void)
{
	atomic_fetch_sub_explicit(&rcu_state.nr_cb_waiters, 1, memory_order_relaxed);
}

bool rcu_sync_caller_pending(struct rcu_sync_key *key)
{
	key->wake = atomic_load_explicit(&rcu_state.sync_wake_seq, memory_order_relaxed);
	key->need = atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_relaxed);
	key->woken = atomic_load_explicit(&rcu_state.sync_resume_seq, memory_order_relaxed) !=
		     key->wake;
	if (key->woken)
		return true;
	if (!atomic_load_explicit(&rcu_state.nr_sync_waiters, memory_order_relaxed) &&
	    !rcu_sr_waiters())
		return false;
	return ULONG_CMP_LT(atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed),
			    key->need);
}

/*
 * Is k (pending) the situation `old` was?  A woken caller not yet run is one
 * situation per wake count, whatever GPs are requested meanwhile: a count
 * left stale (a wake counted for callers that had already returned) made
 * an offload thread nap before every batch, each GP moving gp_seq_needed
 * (tests/callbacks/test_nocb_defers_once_per_wake.c: 9 naps in 8 batches, now 1).
 */
bool rcu_sync_key_same(const struct rcu_sync_key *k, const struct rcu_sync_key *old)
{
	return k->wake == old->wake && (k->woken || k->need == old->need);
}

/*
 * Nap until the situation `key` has changed, or timeout_ns.  Naps, not a
 * futex wait the caller ends: a wake-up from the caller would hand the
 * offload thread the caller's CPU at once (traced: the caller then waited
 * 1.2 ms more before returning).  A nap ends on a timer, by which time the
 * caller has returned.
 */
#define RCU_SYNC_NAP_NS (20 * 1000L)

void rcu_sync_wait_resume(const struct rcu_sync_key *key, long timeout_ns)
{
	long end = sys_now_ns() + timeout_ns;
	struct rcu_sync_key k;

	while (rcu_sync_caller_pending(&k) && rcu_sync_key_same(&k, key)) {
		long left = end - sys_now_ns();

		if (left <= 0)
			return;
		sys_sleep_ns(left < RCU_SYNC_NAP_NS ? left : RCU_SYNC_NAP_NS);
	}
}

/* ---- Waiting for a grace period ------------------------------------------------------------ */

/*
 * Does a list-path synchronize_rcu() caller drive its GP itself (with
 * drive_from_caller=1; a futex-path caller always does)?  Only while at
 * most sr_drive_max futex- or list-path callers (itself included; wakeme
 * callers are not counted) wait: one per CPU by default.  Each of those
 * has a CPU of its own, and driving where it stands costs no wake-up; the
 * one that wins gp_mutex serves the others at each GP end (seeds 003, one
 * job per CPU: p50 41 us -> under 1 us, 7.5x the calls/s, against waking
 * the GP kthread as soon as a second caller waited).  Beyond it callers
 * queue for CPUs, and the GP kthread drives GP after GP and wakes each
 * GP's waiters, as in the kernel, the batch growing while it wakes.
 * Callers taking turns instead each drove a short GP and handed off (seeds
 * 003, 64 callers on 2 CPUs: 195k calls/s with turns, 280k with the
 * kthread, and a p50 below the wakeme path's).  The futex path keeps
 * turns: there the driver is served first, which is what puts its p50
 * below liburcu's with 64 callers.
 *
 * *takeover: take a GP over from the GP kthread or an offload thread only
 * when alone (seed 004: the caller's own callbacks' GP).  With company the
 * kthread serves everyone already, and callers taking its GPs over in turn
 * cost a third of the calls with 3 callers (seeds 003 --quick --threads 3
 * --idle 0 --seed-jobs 0: 104-112k calls/s, 147-161k when only a lone
 * caller takes over).
 *
 * The count is a hint (relaxed): callers arriving together may both leave
 * the GP to the kthread, which each of them wakes, or both try to drive,
 * and the one that loses the trylock waits on its node with a bound (the
 * winner's hand-off wakes the kthread for it: rcu_gp_handoff()).
 */
static bool rcu_sr_caller_may_drive(bool *takeover)
{
	long n = atomic_load_explicit(&rcu_state.nr_sync_waiters, memory_order_relaxed);

	*takeover = n <= 1;
	return TUN(drive_from_caller) && n <= TUN(sr_drive_max);
}

/* A thread about to sleep on gp_end_futex, or done with it.  seq_cst:
 * pairs with the load of nr_gp_waiters in rcu_wake_gp_waiters() (store
 * buffering against its gp_end_futex increment).  Synchronize_rcu() callers
 * are also counted apart, so that only their wake-ups count as sync wakes
 * (the offload threads' hint): list callers, which sleep on their own
 * nodes, would make every GP end count one nobody catches up. */
static void rcu_gp_waiter_enter(bool sync)
{
	if (sync)
		atomic_fetch_add_explicit(&rcu_state.nr_sync_gp_waiters, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&rcu_state.nr_gp_waiters, 1, memory_order_seq_cst);
}

static void rcu_gp_waiter_exit(bool sync)
{
	atomic_fetch_sub_explicit(&rcu_state.nr_gp_waiters, 1, memory_order_relaxed);
	if (sync)
		atomic_fetch_sub_explicit(&rcu_state.nr_sync_gp_waiters, 1, memory_order_relaxed);
}

/* sync: a synchronize_rcu() caller (not an offload thread waiting for its
 * callbacks' GP), counted for the offload threads' deferral. */
static void rcu_wait_gp(unsigned long s, bool exp, bool sync)
{
	struct rcu_thread *r = &rcu_thread_tls;
	bool registered = rcu_thread_registered(r);
	int was_online = registered ? rcu_enter_gp_wait(r) : 0;
	struct rcu_async_wait aw = { 0, 0 };
	bool drive;

	if (sync)
		rcu_sync_caller_enter();
	if (rcu_start_this_gp(s, registered ? r : NULL) && exp)
		rcu_gp_kick_driver();
	for (;;) {
		uint32_t v;

		rcu_gp_waiter_enter(sync);
		/* Acquire: pairs with the exchange in trcu_shutdown().  A
		 * caller that misses the flag and relies on a kthread that
		 * shutdown stopped looks again within RCU_WAIT_RECHECK_NS. */
		drive = exp || TUN(drive_from_caller) ||
			atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire);
		v = atomic_load_explicit(&rcu_state.gp_end_futex, memory_order_seq_cst);
		if (rcu_seq_done(s)) {
			rcu_gp_waiter_exit(sync);
			break;
		}
		if (drive && rcu_gp_acquire_driver(sync)) {
			enum rcu_driver_kind kind = sync ? RCU_DRV_CALLER : RCU_DRV_OFFLOAD;
			bool ours = true;

			rcu_gp_waiter_exit(sync);
			while (ours && !rcu_seq_done(s))
				ours = rcu_gp_one(registered ? r : NULL, kind);
			if (ours)
				rcu_gp_serve_waiters(registered ? r : NULL, kind);
			pthread_mutex_unlock(&rcu_state.gp_mutex);
			TRACE_RECORD("drv_unlock", ours);
			if (ours) {
				rcu_gp_handoff(sync, false);
				break;
			}
			continue;     /* taken over: wait for the GP as a waiter */
		}
		if (!drive)
			rcu_gp_kthread_wake();
		/* Bounded, as on the list path: shutdown may stop the kthread
		 * before our GP (drive_from_caller=0), and a caller that may
		 * drive relies on its failed trylock being ordered before the
		 * driver's hand-off load of nr_gp_waiters, which POSIX does not
		 * promise (glibc's locked RMWs do).  An asynchronous
		 * waiter (!sync) is not woken by a caller that drives
		 * (rcu_wake_gp_waiters()): it looks again sooner. */
		if (!rcu_wait_gp_spin(v))
			sys_futex_wait(&rcu_state.gp_end_futex, v,
					!sync ? rcu_async_wait_ns(&aw) : RCU_WAIT_RECHECK_NS);
		if (sync)
			rcu_note_sync_resume();
		rcu_gp_waiter_exit(sync);
	}
	if (sync)
		rcu_sync_caller_exit();
	if (registered)
		rcu_exit_gp_wait(r, was_online);
}

/*
 * Seed 004: add a node to the waiter list, request the GP that will cover
 * it, drive it if we may, and sleep on the node until a GP cleanup (or its
 * work item) wakes us.
 */
static void rcu_wait_gp_sr(void)
{
	struct rcu_thread *r = &rcu_thread_tls;
	bool registered = rcu_thread_registered(r);
	int was_online = registered ? rcu_enter_gp_wait(r) : 0;
	struct sr_node node;
	unsigned long s, si;

	TRACE_RECORD("sr_enter", 0);
	rcu_sync_caller_enter();
	rcu_sr_normal_add_req(&node);
	/* Full barrier (in rcu_gp_snap): the caller's updates and the node's
	 * push before the snapshot; the GP ending at s starts after both. */
	s = rcu_gp_snap();
	/* A GP whose init began may have pushed its wait head behind our node
	 * without covering it: then ours is the next one.  seq_cst pairs with
	 * the store in rcu_gp_init() (tests/sync/test_sync_late_node_asks_next_gp.c). */
	si = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.sr_init_seq, memory_order_seq_cst));
	if (ULONG_CMP_LT(s, si))
		s = si;
	rcu_start_this_gp(s, registered ? r : NULL);
	for (;;) {
		bool takeover, drive = rcu_sr_caller_may_drive(&takeover);

		/* Acquire: pairs with the exchange in trcu_shutdown(); a miss
		 * is caught by the bounded wait below. */
		if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
			drive = takeover = true;
		if (drive && rcu_gp_acquire_driver(takeover)) {
			TRACE_RECORD("sr_drive", 0);
			while (!rcu_sr_done(&node) && (!rcu_seq_done(s) || rcu_gp_needed()))
				rcu_gp_one(registered ? r : NULL, RCU_DRV_CALLER);
			pthread_mutex_unlock(&rcu_state.gp_mutex);
			rcu_gp_handoff(true, true);
		} else if (!drive) {
			rcu_gp_kthread_wake();
		}
		/* Bounded, whether we may drive or not: a driver that stops
		 * before covering us hands off to the GP kthread, and that
		 * hand-off may race with our failed trylock; and trcu_shutdown()
		 * may stop the kthread (or keep it from starting) before our
		 * GP, which we then drive ourselves, having seen shutting_down
		 * (tests/process/test_shutdown_releases_sync_waiters.c; a shutdown that ran the pending
		 * GPs itself could hang process exit behind a reader).  The
		 * timer this arms costs a few % of calls/s with 64 callers on a
		 * 2-CPU machine; not hanging comes first. */
		TRACE_RECORD("sr_wait", drive);
		if (rcu_sr_wait_timeout(&node, RCU_WAIT_RECHECK_NS))
			break;
		rcu_note_sync_resume();
	}
	/*
	 * Our node can be covered by a GP that started between its push and
	 * our snapshot, which then named the GP after it: we leave with a
	 * request for a GP nobody else may need, whether we drove or not.
	 * Nobody would drive it, and a later start_poll cookie naming it
	 * would find it already requested: a polled cookie that never
	 * completes (torture: "writer made no progress for 30 s").  The GP
	 * kthread runs it (tests/sync/test_sync_extra_request_driven.c and
	 * test_sync_extra_request_driven_after_failed_trylock.c).
	 */
	if (!rcu_seq_done(s))
		rcu_gp_kthread_wake();
	rcu_sync_caller_exit();
	TRACE_RECORD("sr_ret", 0);
	if (registered)
		rcu_exit_gp_wait(r, was_online);
}

void trcu_synchronize_rcu(void)
{
	unsigned long s;

	rcu_check_blocking_allowed("synchronize_rcu()");
	rcu_init();
	switch (TUN(normal_wake_from_gp)) {
	case 0:
		/* Not from a callback: the wake-up callback would be queued
		 * behind the one waiting for it, on the same offload thread
		 * (tests/callbacks/test_gp_wait_from_callback.c); the GP-end futex serves
		 * that caller. */
		if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire) ||
		    rcu_nocb_self())
			break;
		if (rcu_wait_gp_wakeme())   /* the kernel's wait_rcu_gp() */
			return;
		break;                      /* no memory for a callback: the futex */
	case 1:
		rcu_wait_gp_sr();       /* seed 004's list */
		return;
	default:
		break;                  /* woken by the GP-end futex */
	}
	/* Full barrier: the caller's updates before the snapshot; pairs with
	 * the GP-start barrier of the grace period that satisfies it. */
	atomic_thread_fence(memory_order_seq_cst);
	s = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire));
	rcu_wait_gp(s, false, true);
}

void trcu_synchronize_rcu_expedited(void)
{
	unsigned long s;

	rcu_check_blocking_allowed("synchronize_rcu_expedited()");
	rcu_init();
	atomic_fetch_add_explicit(&rcu_state.exp_waiters, 1, memory_order_relaxed);
	/* Full barrier, as in trcu_synchronize_rcu(). */
	atomic_thread_fence(memory_order_seq_cst);
	s = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire));
	rcu_wait_gp(s, true, true);
	atomic_fetch_sub_explicit(&rcu_state.exp_waiters, 1, memory_order_relaxed);
}

/* ---- For the callback-offload threads ------------------------------------------------------ */

unsigned long rcu_gp_snap(void)
{
	/* Full barrier: callbacks queued before this are covered by the GP. */
	atomic_thread_fence(memory_order_seq_cst);
	return rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire));
}

unsigned long rcu_gp_seq_current(void)
{
	return atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire);
}

/* Block the calling (unregistered) thread until GP s has ended, driving it
 * when the profile lets callers drive. */
void rcu_gp_wait_seq(unsigned long s)
{
	rcu_wait_gp(s, false, false);
}

void rcu_gp_request_async(unsigned long s)
{
	/* Cheap check first: under a callback flood this runs per call_rcu(). */
	if (ULONG_CMP_GE(atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire), s))
		return;
	if (rcu_start_this_gp(s, NULL))
		rcu_gp_kthread_wake();
}

/* ---- Polled grace periods -------------------------------------------------------------------- */

unsigned long trcu_get_state_synchronize_rcu(void)
{
	rcu_init();
	/* Full barrier: updates before the cookie are covered by its GP. */
	atomic_thread_fence(memory_order_seq_cst);
	return rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire));
}

/* Request GP s for a polled cookie and make sure the GP kthread will run it:
 * woken when this call raised the request, and also when the request was
 * there already but the kthread sleeps or never started (a second guard
 * against a request whose raiser left without it).  seq_cst load: pairs
 * with the kthread's store to ->kthread_sleeping before its
 * rcu_gp_needed() check; a kthread not yet asleep sees the request.  No
 * shared write otherwise. */
static void rcu_gp_start_poll(unsigned long s, struct rcu_thread *r)
{
	if (rcu_start_this_gp(s, r) ||
	    (!rcu_seq_done(s) &&
	     (!atomic_load_explicit(&rcu_state.kthread_started, memory_order_acquire) ||
	      atomic_load_explicit(&rcu_state.kthread_sleeping, memory_order_seq_cst))))
		rcu_gp_kthread_wake();
}

unsigned long trcu_start_poll_synchronize_rcu(void)
{
	unsigned long s = trcu_get_state_synchronize_rcu();
	struct rcu_thread *r = &rcu_thread_tls;

	rcu_gp_start_poll(s, r->slot >= 0 ? r : NULL);
	return s;
}

bool trcu_poll_state_synchronize_rcu(unsigned long cookie)
{
	rcu_init();
	if (cookie == TRCU_GET_STATE_COMPLETED ||
	    rcu_seq_done_exact_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire),
				   cookie)) {
		/* Full barrier: the caller's later accesses (a free) after the
		 * GP end it just observed. */
		atomic_thread_fence(memory_order_seq_cst);
		return true;
	}
	return false;
}

void trcu_cond_synchronize_rcu(unsigned long cookie)
{
	if (!trcu_poll_state_synchronize_rcu(cookie))
		trcu_synchronize_rcu();
}

unsigned long trcu_get_completed_synchronize_rcu(void)
{
	return TRCU_GET_STATE_COMPLETED;
}

void trcu_get_state_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	rcu_init();
	/* Full barrier, as in trcu_get_state_synchronize_rcu(). */
	atomic_thread_fence(memory_order_seq_cst);
	rgosp->rgos_norm = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.gp_seq,
								  memory_order_acquire));
	rgosp->rgos_exp = rcu_seq_snap_val(atomic_load_explicit(&rcu_state.exp_seq,
								 memory_order_acquire));
}

void trcu_start_poll_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	struct rcu_thread *r = &rcu_thread_tls;

	trcu_get_state_synchronize_rcu_full(rgosp);
	rcu_gp_start_poll(rgosp->rgos_norm, r->slot >= 0 ? r : NULL);
}

bool trcu_poll_state_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	rcu_init();
	if (rgosp->rgos_norm == TRCU_GET_STATE_COMPLETED ||
	    rcu_seq_done_exact_val(atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire),
				   rgosp->rgos_norm) ||
	    rgosp->rgos_exp == TRCU_GET_STATE_COMPLETED ||
	    rcu_seq_done_exact_val(atomic_load_explicit(&rcu_state.exp_seq, memory_order_acquire),
				   rgosp->rgos_exp)) {
		/* Full barrier, as in trcu_poll_state_synchronize_rcu(). */
		atomic_thread_fence(memory_order_seq_cst);
		return true;
	}
	return false;
}

void trcu_cond_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	if (!trcu_poll_state_synchronize_rcu_full(rgosp))
		trcu_synchronize_rcu();
}

void trcu_get_completed_synchronize_rcu_full(struct trcu_gp_oldstate *rgosp)
{
	rgosp->rgos_norm = TRCU_GET_STATE_COMPLETED;
	rgosp->rgos_exp = TRCU_GET_STATE_COMPLETED;
}

bool trcu_same_state_synchronize_rcu_full(struct trcu_gp_oldstate *a,
					  struct trcu_gp_oldstate *b)
{
	return a->rgos_norm == b->rgos_norm && a->rgos_exp == b->rgos_exp;
}

unsigned long trcu_gp_seq(void)
{
	rcu_init();
	return atomic_load_explicit(&rcu_state.gp_seq, memory_order_acquire);
}

/* ---- Init, stats, shutdown ------------------------------------------------------------------- */

/* The read side's ordering: fenced when the build says so, when
 * TREERCU_FORCE_FENCED=1, or when membarrier is refused. */
static bool rcu_read_side_fenced(void)
{
	bool force = tun_env_bool("TREERCU_FORCE_FENCED");

#ifdef TREERCU_FENCED
	return true;
#endif
	if (force)
		return true;
	if (!sys_membarrier_register())
		return false;
	sys_warn("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) refused: using the fenced "
		  "read side (a full fence per rcu_read_lock/unlock)");
	return true;
}

/*
 * At process exit (atexit): run the pending callbacks and rcu_free()
 * pointers while grace periods can end, then let the process go.  Exit
 * never waits for a reader: when the exiting thread itself is inside a
 * read-side section or is running a callback, nothing can be waited for;
 * when neither a grace period ends nor a callback runs for exit_wait_ms (a
 * reader stuck in a section), the rest is skipped.  Either way one line on
 * stderr says how many were skipped, and the exit status is untouched.
 * Nothing is stopped or joined: the process is ending, and a join could
 * wait for a reader.  An explicit trcu_shutdown() does the full job.
 */
static void rcu_exit_handler(void)
{
	struct rcu_thread *r = rcu_thread_self();
	bool registered;
	int was;

	if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
		return;
	if (rcu_section_depth()) {
		rcu_nocb_exit_report("exit() was called inside a read-side critical section");
		return;
	}
	if (rcu_nocb_self()) {
		rcu_nocb_exit_report("exit() was called from an RCU callback (counted here)");
		return;
	}
	/* Quiescent while it waits, as in synchronize_rcu(): an online QSBR
	 * thread returning from main() would hold up the grace periods. */
	registered = rcu_thread_registered(r);
	was = registered ? rcu_enter_gp_wait(r) : 0;
	if (!rcu_nocb_exit_drain(TUN(exit_wait_ms) * 1000000L)) {
		char why[128];

		snprintf(why, sizeof(why), "no grace period ended for %ld ms (a reader stuck in "
			 "a read-side critical section?)", TUN(exit_wait_ms));
		rcu_nocb_exit_report(why);
	}
	if (registered)
		rcu_exit_gp_wait(r, was);
}

static void rcu_init_once(void)
{
	tun_init();
	atomic_store_explicit(&rcu_state.gp_seq, RCU_SEQ_INIT, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.gp_seq_needed, RCU_SEQ_INIT, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.exp_seq, RCU_SEQ_INIT, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.sr_init_seq, RCU_SEQ_INIT, memory_order_relaxed);
	rcu_state.fenced = rcu_read_side_fenced();
	/* One static node to start with; a registration that needs more
	 * builds the next tree, which a GP start installs. */
	atomic_store_explicit(&rcu_state.tree,
			      rcu_tree_build_first((int)TUN(fanout), (int)TUN(fanout_leaf)),
			      memory_order_release);
	rcu_thread_init();
	atexit(rcu_exit_handler);
	fork_register();
}

void rcu_init(void)
{
	/* A signal handler that interrupts the init on this thread must not
	 * enter pthread_once() again: ->busy sends its sections to the
	 * emergency path (src/thread.c). */
	rcu_busy_enter();
	pthread_once(&rcu_init_once_ctl, rcu_init_once);
	rcu_busy_exit();
}

void trcu_get_stats(struct trcu_stats *st)
{
	struct rcu_tree *t;

	rcu_init();
	t = rcu_tree();
	memset(st, 0, sizeof(*st));
	st->gp_completed = atomic_load_explicit(&rcu_state.n_gp, memory_order_relaxed);
	st->gp_driven_by_caller = atomic_load_explicit(&rcu_state.n_gp_caller, memory_order_relaxed);
	st->gp_driven_by_kthread = atomic_load_explicit(&rcu_state.n_gp_kthread,
							memory_order_relaxed);
	st->fqs_scans = atomic_load_explicit(&rcu_state.n_fqs, memory_order_relaxed);
	st->gp_takeovers = atomic_load_explicit(&rcu_state.n_takeover, memory_order_relaxed);
	st->async_wakes_skipped = atomic_load_explicit(&rcu_state.n_async_skip,
						       memory_order_relaxed);
	st->stall_warnings = atomic_load_explicit(&rcu_state.n_stall, memory_order_relaxed);
	st->membarriers = atomic_load_explicit(&rcu_state.n_mb, memory_order_relaxed);
	st->fenced = rcu_state.fenced;
	st->nr_slots = atomic_load_explicit(&rcu_state.nr_slots, memory_order_relaxed);
	st->tree_levels = t->levels;
	st->tree_nodes = t->nr_nodes;
	rcu_nocb_stats(st);
	rcu_sr_stats(st);
}

/* ---- fork() (src/fork.c) ------------------------------------------------------------------ */

/* ofl_lock, then the current tree's nodes: the tree is only replaced under
 * ofl_lock, and no node lock is ever held while another is taken. */
void rcu_fork_prepare(void)
{
	struct rcu_tree *t;

	pthread_mutex_lock(&kthread_start_lock);
	pthread_mutex_lock(&rcu_state.ofl_lock);
	t = rcu_tree();
	for (int n = 0; t && n < t->nr_nodes; n++)
		pthread_mutex_lock(&t->nodes[n].lock);
}

void rcu_fork_parent(void)
{
	struct rcu_tree *t = rcu_tree();

	for (int n = 0; t && n < t->nr_nodes; n++)
		pthread_mutex_unlock(&t->nodes[n].lock);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	pthread_mutex_unlock(&kthread_start_lock);
}

/*
 * The furthest GP requested anywhere: a requester that died between a
 * node's ->gp_seq_needed and rcu_state's leaves a node claiming a request
 * that the root never saw, which would stop every later request for it at
 * that node.  Make them all agree (at worst one extra GP runs).
 */
static void rcu_fork_child_needed(struct rcu_tree *t)
{
	unsigned long need = atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_relaxed);

	for (int n = 0; n < t->nr_nodes; n++)
		if (ULONG_CMP_LT(need, t->nodes[n].gp_seq_needed))
			need = t->nodes[n].gp_seq_needed;
	for (int n = 0; n < t->nr_nodes; n++)
		t->nodes[n].gp_seq_needed = need;
	atomic_store_explicit(&rcu_state.gp_seq_needed, need, memory_order_relaxed);
}

/*
 * Only the forking thread exists.  Every lock is re-initialised (the ones
 * prepare took, and the GP mutex, which a driver may have held), every
 * waiter count and driver field is cleared, the GP kthread is marked not
 * started, and the other threads' slots are dropped.  A grace period in
 * flight stays in flight (a cookie taken before the fork may name it, and
 * the forking thread may be inside a section it waits for): it is started
 * again over the child's slots, with a new reader generation, so that only
 * what the forking thread does decides when it ends.  No barrier is needed
 * for that restart: no other thread exists, and threads created later are
 * ordered after it by pthread_create().
 */
void rcu_fork_child(void)
{
	struct rcu_tree *t = rcu_tree();
	unsigned long gps;

	/* pthread_mutex_init() over a copy that a thread which does not
	 * exist here (or this one, in prepare) holds: the child's only way to
	 * a usable lock. */
	pthread_mutex_init(&kthread_start_lock, NULL);
	pthread_mutex_init(&rcu_state.ofl_lock, NULL);
	pthread_mutex_init(&rcu_state.gp_mutex, NULL);
	pthread_mutex_init(&rcu_state.stall_lock, NULL);
	rcu_stall_fork_child();
	if (!t)
		return;   /* the RCU core was never initialised */
	for (int n = 0; n < t->nr_nodes; n++)
		pthread_mutex_init(&t->nodes[n].lock, NULL);
	rcu_state.driver = NULL;
	atomic_store_explicit(&rcu_state.driver_yieldable, false, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.takeover_req, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.driver_sleeping, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.kthread_sleeping, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.kthread_started, false, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.nr_gp_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.nr_sync_gp_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.nr_sync_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.nr_cb_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.exp_waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&rcu_state.sync_resume_seq,
			      atomic_load_explicit(&rcu_state.sync_wake_seq, memory_order_relaxed),
			      memory_order_relaxed);
	rcu_slots_fork_child(t);
	rcu_fork_child_needed(t);
	gps = atomic_load_explicit(&rcu_state.gp_seq, memory_order_relaxed);
	/* A GP init cut short by the fork (before its gp_seq store) left only
	 * a wait head, which the sr_normal reset drops. */
	atomic_store_explicit(&rcu_state.sr_init_seq, gps, memory_order_relaxed);
	rcu_state.sr_uncovered = false;
	rcu_state.expedited = false;
	/* exp_seq starts after gp_seq and ends before it: in flight only with
	 * this GP. */
	rcu_state.exp_at_init = rcu_seq_state(gps) &&
		rcu_seq_state(atomic_load_explicit(&rcu_state.exp_seq, memory_order_relaxed));
	/* The dead threads' bits: rcu_gp_init_tree() skips nodes with
	 * nothing online below, trusting them to be empty already. */
	for (int n = 0; n < t->nr_nodes; n++)
		t->nodes[n].qsmask = 0;
	atomic_store_explicit(&rcu_state.gp_root_done, false, memory_order_relaxed);
	if (rcu_seq_state(gps)) {
		/* Sections that began before the fork carry an older generation
		 * (rcu_watching_qs()): they count only once left. */
		rcu_state.gp_gen = __atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED) + 2;
		__atomic_store_n(&trcu_reader_gen, rcu_state.gp_gen, __ATOMIC_RELAXED);
		rcu_gp_init_tree(gps);
		/* On arm64 the GP-end membarrier is then not skipped. */
		atomic_store_explicit(&rcu_state.gp_dirty_flag, true, memory_order_relaxed);
		rcu_state.gp_start_ns = sys_now_ns();
		rcu_stall_reset();
	}
}

/* A GP still wanted (a polled cookie the child may hold): start the GP
 * kthread for it. */
void rcu_fork_child_kick(void)
{
	if (rcu_tree() && rcu_gp_needed())
		rcu_gp_kthread_wake();
}

/* Join the GP kthread; if a reader keeps its grace period from ending for
 * longer than a stall timeout, say so and leave it rather than hang exit. */
static void rcu_gp_kthread_join(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += TUN(stall_timeout_ms) / 1000 + 1;
	if (pthread_timedjoin_np(rcu_state.kthread, NULL, &ts)) {
		sys_warn("shutdown: the GP kthread is still waiting for a reader after %ld s; "
			  "not joined", TUN(stall_timeout_ms) / 1000 + 1);
		pthread_detach(rcu_state.kthread);
	}
}

static void __trcu_shutdown(void)
{
	struct rcu_thread *r = rcu_thread_self();

	rcu_init();
	if (atomic_load_explicit(&rcu_state.shutting_down, memory_order_acquire))
		return;
	/* An online QSBR caller goes offline for good (it is unregistered
	 * below): the callbacks' grace periods and the GP kthread's last one
	 * must not wait for it. */
	if (r->depth_bias && !rcu_section_depth())
		rcu_internal_qsbr_offline(r);
	/* Every callback runs before the GP kthread stops: the offload
	 * threads still need grace periods. */
	rcu_nocb_shutdown();
	if (atomic_exchange_explicit(&rcu_state.shutting_down, true, memory_order_acq_rel))
		return;
	if (atomic_load_explicit(&rcu_state.kthread_started, memory_order_acquire)) {
		atomic_fetch_add_explicit(&rcu_state.kthread_futex, 1, memory_order_seq_cst);
		sys_futex_wake(&rcu_state.kthread_futex, 1);
		rcu_gp_kthread_join();
	}
	trcu_unregister_thread();
	rcu_busy_enter();   /* ofl_lock: see rcu_busy_enter() */
	pthread_mutex_lock(&rcu_state.ofl_lock);
	while (rcu_state.retired) {
		struct rcu_tree *t = rcu_state.retired;

		rcu_state.retired = t->retired_next;
		rcu_tree_free(t);
	}
	rcu_tree_free(rcu_state.tree_next);
	rcu_state.tree_next = NULL;
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	rcu_busy_exit();
}

void trcu_shutdown(void)
{
	int cs = sys_cancel_disable();

	__trcu_shutdown();
	sys_cancel_restore(cs);
}
