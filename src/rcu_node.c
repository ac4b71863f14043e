/* SPDX-License-Identifier: MIT */
/*
 * The rcu_node combining tree over thread slots: its shape (built, grown,
 * installed at a GP start), quiescent-state reports from a slot up to the
 * root (the root emptying kicks the driver), a GP's per-node init, the walk
 * over the leaves that still owe reports, and the funnel that records GP
 * requests on the way to the root.  Names follow kernel/rcu/tree.c.  It
 * calls nothing above it: the driver it kicks sleeps on a futex word.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "gp.h"
#include "sync_hint.h"
#include "trace.h"

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

struct rcu_tree *rcu_tree_build_first(int fanout, int fanout_leaf)
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

/*
 * Under ofl_lock: the tree the next GP start installs, built ahead by a
 * registration or a fan-out change (rcu_tree_prepare_locked()), and the
 * trees GP starts replaced, kept until shutdown because late reporters may
 * still hold pointers into them.
 */
static struct rcu_tree *tree_next;
static struct rcu_tree *tree_retired;

struct rcu_tree *rcu_tree_retired_locked(void)
{
	return tree_retired;
}

/* Shutdown: every tree but the current one. */
void rcu_trees_free_locked(void)
{
	while (tree_retired) {
		struct rcu_tree *t = tree_retired;

		tree_retired = t->retired_next;
		rcu_tree_free(t);
	}
	rcu_tree_free(tree_next);
	tree_next = NULL;
}

/* The tree the next GP will use: the one prepared ahead, or the current. */
static struct rcu_tree *rcu_tree_next_locked(void)
{
	return tree_next ? tree_next : rcu_tree();
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
	rcu_tree_free(tree_next);
	tree_next = t;
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
	struct rcu_tree *old = rcu_tree(), *t = tree_next;
	int hwm = rcu_slot_hwm();

	for (int s = 0; s < hwm; s++) {
		if (rcu_slot_get(s)) {
			struct rcu_node *leaf = rcu_tree_leaf(t, s);

			leaf->qsmaskinitnext |= 1UL << (s - leaf->grplo);
		}
	}
	/* Release: the new tree's initialised nodes before the pointer. */
	atomic_store_explicit(&rcu_state.tree, t, memory_order_release);
	/* Blocked tasks follow, after the pointer: a switch-out that finds
	 * an old leaf retired (under its lock) then loads the new tree. */
	if (rcu_task_hooks_get())
		rcu_task_hooks_get()->reshape_locked(old, t);
	tree_next = NULL;
	old->retired_next = tree_retired;
	tree_retired = old;
}

/* ---- Quiescent-state reporting ------------------------------------------------ */

void rcu_gp_kick_driver(void)
{
	/* seq_cst pairs with the driver's store to ->driver_sleeping and its
	 * root ->qsmask check in rcu_gp_sleep(). */
	atomic_fetch_add_explicit(&rcu_state.qs_futex, 1, memory_order_seq_cst);
	/* The same for a parked driver (rcu_gp_park(): seq_cst store of
	 * gp_parked, then its load of park_futex).  It sleeps on a word of
	 * its own: once its GP is taken over (gp_parked cleared) kicks leave
	 * it asleep until its own timeout, so that it does not wake, and
	 * then queue on gp_mutex, beside the caller that drives now. */
	atomic_fetch_add_explicit(&rcu_state.park_futex, 1, memory_order_seq_cst);
	TRACE_RECORD("kick", atomic_load_explicit(&rcu_state.driver_sleeping, memory_order_relaxed));
	if (atomic_load_explicit(&rcu_state.driver_sleeping, memory_order_seq_cst)) {
		/*
		 * A synchronize_rcu() caller driving its own GP (not yieldable)
		 * is a woken caller too: an offload thread flushing or running
		 * a long batch defers to it until it runs (section 9 of
		 * design.md).  Not counted, the woken driver waits behind a
		 * long flush on the CPU it was queued on (docs/decisions.md,
		 * "Who drives and who is woken").  Counted before the wake, as every sync wake; a hint (relaxed):
		 * a kick that races with the end of a kthread's GP may count a
		 * wake nobody records, which costs one nap of nocb_defer_us.
		 */
		if (!atomic_load_explicit(&rcu_state.driver_yieldable, memory_order_relaxed))
			rcu_note_sync_wake();
		sys_futex_wake(&rcu_state.qs_futex, 1);
	}
	if (atomic_load_explicit(&rcu_state.gp_parked, memory_order_seq_cst))
		sys_futex_wake(&rcu_state.park_futex, 1);
}

/*
 * A thread has counted itself as waiting for a grace period (src/sync_hint.c):
 * a driver sleeping out an unhurried tick (src/gp.c) is kicked, to spin for
 * it.  seq_cst: the count's seq_cst increment, then this load, pair with
 * the driver's seq_cst store of the flag, then its seq_cst load of the
 * counts (rcu_gp_anyone_waits()): either we kick it or it sees us.
 */
void rcu_gp_hurry(void)
{
	if (atomic_load_explicit(&rcu_state.gp_unhurried, memory_order_seq_cst))
		rcu_gp_kick_driver();
}

/* A thread starts to wait for callbacks to run (rcu_barrier(), a push-back,
 * a wakeme-path caller, a user thread running its own): counted, then an
 * unhurried tick ended, in that order (above). */
void rcu_cb_waiter_enter_hurry(void)
{
	rcu_cb_waiter_enter();
	rcu_gp_hurry();
}

/*
 * rcu_report_qs_rnp: clear mask in rnp (locked by the caller) and walk up
 * while a node empties, handing the lock from child to parent as the kernel
 * does.  Releases the lock.  When the root empties the grace period can end:
 * wake the driver, unless the driver is the reporter (kick false).
 */
static void rcu_report_qs_rnp_kick(unsigned long mask, struct rcu_node *rnp, bool dirty,
				   bool kick)
{
	for (;;) {
		if (!(rnp->qsmask & mask)) {
			pthread_mutex_unlock(&rnp->lock);
			return;
		}
		if (dirty)  /* read by the driver after it sees the root empty */
			atomic_store_explicit(&rcu_state.gp_dirty_flag, true, memory_order_relaxed);
		rnp->qsmask &= ~mask;
		/* A leaf whose blocked tasks still hold this GP does not
		 * report: the last one's unlock does (src/task_blocked.c,
		 * rcu_report_unblock_qs_rnp()). */
		if (rnp->qsmask || rnp->gp_tasks || !rnp->parent)
			break;
		mask = rnp->grpmask;
		pthread_mutex_unlock(&rnp->lock);
		rnp = rnp->parent;
		pthread_mutex_lock(&rnp->lock);
	}
	if (!rnp->parent && !rnp->qsmask && !rnp->gp_tasks) {
		/* Release: every report that emptied the tree before this
		 * store; pairs with rcu_root_qs_done(). */
		atomic_store_explicit(&rcu_state.gp_root_done, true, memory_order_release);
		pthread_mutex_unlock(&rnp->lock);
		if (kick)
			rcu_gp_kick_driver();
		return;
	}
	pthread_mutex_unlock(&rnp->lock);
}

void rcu_report_qs_rnp(unsigned long mask, struct rcu_node *rnp, bool dirty)
{
	rcu_report_qs_rnp_kick(mask, rnp, dirty, true);
}

/*
 * The running GP driver's own walks (gp_mutex held, not asleep nor parked):
 * no kick.  The kick's seq_cst increments pair with a sleeping driver's
 * driver_sleeping store (or a parked one's gp_parked store) and its root
 * check in rcu_gp_sleep_until(); here that driver is this thread, which
 * checks rcu_root_qs_done() after its walk, program order being enough.  A
 * driver parked earlier in this GP was taken over (gp_parked cleared), and
 * kicks no longer wake it (rcu_gp_kick_driver()).  The two seq_cst
 * increments are an idle GP's for nothing.
 */
void rcu_report_qs_rnp_driver(unsigned long mask, struct rcu_node *rnp, bool dirty)
{
	rcu_report_qs_rnp_kick(mask, rnp, dirty, false);
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
bool rcu_root_qs_done(void)
{
	return atomic_load_explicit(&rcu_state.gp_root_done, memory_order_acquire);
}

/* ---- Grace-period start --------------------------------------------------------- */

/* GP init (ofl_lock held), for a leaf with no online slot: does it hold
 * blocked tasks?  Those that leave before the leaf is initialised are
 * handled there (rcu_gp_init_node()). */
static bool leaf_has_tasks(struct rcu_node *leaf)
{
	bool ret;

	pthread_mutex_lock(&leaf->lock);
	ret = leaf->blkd_head != NULL;
	pthread_mutex_unlock(&leaf->lock);
	return ret;
}

/*
 * leaf_has_tasks() for a leaf with no online slot, without its lock when
 * the answer cannot have changed since the last GP init (ofl_lock held).
 * A task reaches a leaf only from a worker whose slot is online there
 * (its switch-out, or its list promoted at GP init) or, with no slot
 * online, under ofl_lock when a worker's slot goes (its list moves to its
 * leaf before rcu_slot_remove()), a fork child drops slots, or a new tree
 * is installed (fresh leaves, ->idle_empty false).  So a leaf seen empty
 * and without tasks, still empty, with no slot removed since, has none:
 * a tree grown for threads that have gone costs GP init no lock per leaf.
 */
static bool leaf_may_have_tasks(struct rcu_node *leaf, bool removed)
{
	bool ret;

	if (leaf->idle_empty && !removed)
		return false;
	ret = leaf_has_tasks(leaf);
	leaf->idle_empty = !ret;
	return ret;
}

/*
 * Initialise node n of t for the GP gps (ofl_lock held, root first).  A
 * leaf's queued tasks all block the new GP (->gp_tasks from the head: the
 * kernel's rcu_preempt_check_blocked_tasks()).  A node nothing holds ends
 * its part at once: the root (nobody online, no blocked task: the GP is
 * over as soon as it starts), or a leaf counted for blocked tasks that have
 * all left since (its parent is already initialised).
 */
static void rcu_gp_init_node(struct rcu_tree *t, int n, unsigned long gps)
{
	struct rcu_node *rnp = &t->nodes[n];
	bool leaf = n >= t->level_first[t->levels - 1];
	unsigned long mask;

	/* Nothing online below and no blocked task: its qsmask is already 0
	 * (the last GP ended with every node empty) and stays so. */
	if (rnp->parent && !rnp->qsmaskinit && !(rnp->parent->qsmaskinit & rnp->grpmask))
		return;
	pthread_mutex_lock(&rnp->lock);
	rnp->qsmask = rnp->qsmaskinit;
	rnp->gp_seq = gps;
	rnp->snap_valid = 0;
	rnp->snap_pre = 0;
	if (leaf)
		rnp->gp_tasks = rnp->blkd_head;
	if (rnp->qsmask || rnp->gp_tasks) {
		pthread_mutex_unlock(&rnp->lock);
		return;
	}
	if (!rnp->parent) {
		atomic_store_explicit(&rcu_state.gp_root_done, true, memory_order_relaxed);
		pthread_mutex_unlock(&rnp->lock);
		return;
	}
	mask = rnp->grpmask;
	pthread_mutex_unlock(&rnp->lock);
	pthread_mutex_lock(&rnp->parent->lock);
	rcu_report_qs_rnp(mask, rnp->parent, false);
}

/*
 * Apply registrations and unregistrations (the kernel's qsmaskinitnext ->
 * qsmaskinit), then set every node's qsmask root first, so that a child
 * emptying early always finds its bit in an initialised parent.  The
 * _locked form: the caller holds ofl_lock.
 */
void rcu_gp_init_tree_locked(unsigned long gps)
{
	struct rcu_tree *t;
	bool removed;

	if (tree_next)
		rcu_tree_install_locked();
	t = rcu_tree();
	/* Tasks on worker lists to their leaves, after gp_seq says "in
	 * progress" (src/task_blocked.c, T1): from here on every task
	 * switched out inside a section is on a node list, where ->gp_tasks
	 * below sees it. */
	if (rcu_task_hooks_get())
		rcu_task_hooks_get()->promote_locked(t);
	for (int i = 0; i < t->levels - 1; i++)
		for (int j = 0; j < t->level_cnt[i]; j++)
			t->nodes[t->level_first[i] + j].qsmaskinit = 0;
	t->nr_active = 0;
	removed = t->removals_seen != rcu_slot_removals();
	t->removals_seen = rcu_slot_removals();
	for (int i = t->levels - 1; i >= 0; i--) {
		for (int j = 0; j < t->level_cnt[i]; j++) {
			struct rcu_node *rnp = &t->nodes[t->level_first[i] + j];

			if (i == t->levels - 1) {
				/* qsmaskinitnext is written only under ofl_lock,
				 * which we hold: no leaf lock needed to read it. */
				rnp->qsmaskinit = rnp->qsmaskinitnext;
				if (rnp->qsmaskinit) {
					t->active[t->nr_active++] = j;
					rnp->idle_empty = false;
				}
			}
			/* A leaf with blocked tasks counts as online even with
			 * no online slot (the kernel's wait_blkd_tasks): the
			 * tasks' unlocks report it. */
			if ((rnp->qsmaskinit ||
			     (i == t->levels - 1 && leaf_may_have_tasks(rnp, removed))) &&
			    rnp->parent)
				rnp->parent->qsmaskinit |= rnp->grpmask;
		}
	}
	atomic_store_explicit(&rcu_state.gp_root_done, false, memory_order_relaxed);
	for (int n = 0; n < t->nr_nodes; n++)
		rcu_gp_init_node(t, n, gps);
}

void rcu_gp_init_tree(unsigned long gps)
{
	pthread_mutex_lock(&rcu_state.ofl_lock);
	rcu_gp_init_tree_locked(gps);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
}

/*
 * The leaves that had online slots at this GP's init, without their locks:
 * for the driver, which still holds the ofl_lock of its init, so that no
 * slot comes or goes (unregistration removes a slot under ofl_lock) and
 * each leaf's ->qsmaskinit is the one its init just wrote.  fn returns
 * false to end the walk.
 */
void rcu_for_each_active_leaf_locked(bool (*fn)(struct rcu_node *, void *), void *arg)
{
	struct rcu_tree *t = rcu_tree();
	int l = t->levels - 1;

	for (int a = 0; a < t->nr_active; a++)
		if (!fn(&t->nodes[t->level_first[l] + t->active[a]], arg))
			return;
}

/* Iterate the leaves that still owe quiescent states; fn is called with the
 * leaf locked, must release the lock, and returns false to end the walk. */
void rcu_for_each_holdout_leaf(bool (*fn)(struct rcu_node *, void *), void *arg)
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
		if (!fn(leaf, arg))
			return;
	}
}

/* ---- Requests -------------------------------------------------------------------------- */

/* The funnel below the root: false when a node on the way had the request
 * already.  ->busy: it takes rcu_node locks (rcu_busy_enter()). */
static bool rcu_start_this_gp_funnel(unsigned long s, struct rcu_node *rnp)
{
	bool ret = true;

	rcu_busy_enter();
	for (; rnp->parent; rnp = rnp->parent) {
		pthread_mutex_lock(&rnp->lock);
		if (ULONG_CMP_GE(rnp->gp_seq_needed, s)) {
			pthread_mutex_unlock(&rnp->lock);
			ret = false;
			break;
		}
		rnp->gp_seq_needed = s;
		pthread_mutex_unlock(&rnp->lock);
	}
	rcu_busy_exit();
	return ret;
}

/*
 * rcu_start_this_gp: funnel a request for the GP that ends at s from the
 * requester's leaf to the root, stopping where someone already asked for it.
 * Returns true when this call raised rcu_state.gp_seq_needed.
 */
bool rcu_start_this_gp(unsigned long s, struct rcu_thread *r)
{
	struct rcu_tree *t = rcu_tree();
	struct rcu_node *rnp = (r && r->slot >= 0 && r->slot < t->capacity)
			       ? rcu_tree_leaf(t, r->slot) : rcu_get_root(t);
	unsigned long old;

	/* Already asked for, and gp_seq_needed only grows: skip the funnel's
	 * locks, which every caller of a busy GP would otherwise queue on at
	 * its leaf.  Acquire: pairs with the CAS below. */
	if (ULONG_CMP_GE(atomic_load_explicit(&rcu_state.gp_seq_needed, memory_order_acquire), s))
		return false;
	/* Up to the root, not into it: the root's step (check, then raise)
	 * is the CAS on rcu_state.gp_seq_needed below, which needs no lock;
	 * its lock round trip was every idle synchronize_rcu()'s for nothing
	 * (a tree of one node has no funnel at all).  The root's own
	 * ->gp_seq_needed stays unused (the fork child takes the maximum). */
	if (rnp->parent && !rcu_start_this_gp_funnel(s, rnp))
		return false;
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
