/* SPDX-License-Identifier: MIT */
/*
 * The seed-000 early quiescent-state report at GP start (rcu_gp_init() in
 * src/gp.c calls it): threads that cannot be in a read-side section now
 * (blocked waiting for this GP, offline QSBR, the driver) are reported
 * before the GP-start membarrier, instead of being left to FQS scans.
 */
#include "internal.h"
#include "gp.h"

/*
 * The seed-000 early report: the driving thread cannot be in a read-side
 * section while it runs GP code, and a thread blocked waiting for this GP
 * is in an extended quiescent state: report both now instead of waiting for
 * FQS scans to notice.  Clean reports: the driver is this thread, and a
 * blocked waiter's accesses happen before its ->gp_blocked release store.
 */
/*
 * Blocked, offline QSBR, or driving: quiescent now?  A blocked thread runs
 * no code of its own, but a signal handler on it may run a section: that
 * section entered with the fenced slow path (TRCU_RF_BLOCKED), so its odd
 * ->watching is seen here or its loads come after the fence in
 * rcu_gp_early_report() (store buffering, both sides fenced); an even value
 * stored with release after a handler's section closes it.  An offline
 * QSBR thread is the same: its sections (a handler's, or a plain
 * rcu_read_lock()) enter fenced (TRCU_RF_QSBR_OFL), and going online
 * clears RCU_BLK_QSBR_OFL, then fences, before it reads anything
 * (rcu_internal_qsbr_online()).  The caller has fenced since the GP began
 * (rcu_gp_early_report(), rcu_qsbr_gp_walk()).  The driver, when not
 * blocked, is the GP kthread or an offload thread, which block every
 * signal (rcu_kthread_create()): it cannot be in a section while it runs
 * GP code.
 */
bool rcu_early_qs(struct rcu_thread *r)
{
	/* Acquire pairs with the release in rcu_enter_gp_wait() and in
	 * rcu_internal_qsbr_offline(). */
	if (atomic_load_explicit(&r->gp_blocked, memory_order_acquire))
		/* Acquire pairs with the release store in watching_exit(). */
		return !(__atomic_load_n(&r->rdr->watching, __ATOMIC_ACQUIRE) & 1);
	return r == rcu_state.driver;
}

/* A QSBR thread, online or offline, and not a worker of task readers?  The
 * owner's flags, read as a hint: a grace period that acts on it rechecks
 * under the leaf lock (rcu_qsbr_gp_leaf()). */
bool rcu_qsbr_thread(struct rcu_thread *r)
{
	unsigned long nf = __atomic_load_n(&r->rdr->nest_flags, __ATOMIC_RELAXED);

	return !(nf & TRCU_RF_TASK) && (nf & (TRCU_RF_QSBR | TRCU_RF_QSBR_OFL));
}

/*
 * Reports this leaf's early quiescent states if all its slots are, and
 * returns true; otherwise false (end the walk), reporting none: the tree
 * cannot empty before the GP-start membarrier then, so this leaf and the
 * others are left to the FQS scan, which finds blocked threads even (and a
 * blocked driver: rcu_gp_early_report()).  A registered thread that is
 * neither blocked nor driving (an idle one sleeping outside the library, a
 * reader) thus costs the early report one look at most, not a walk over
 * every slot, and no lock: the walk runs under the init's ofl_lock, which
 * keeps every slot's thread registered (rcu_for_each_active_leaf_locked()),
 * and takes a leaf's lock only to report it.
 */
struct early_arg {
	struct rcu_node *drv_leaf;   /* the driver's leaf, until reported */
	int stop;                    /* the slot that ended the walk, or -1 */
};

static bool rcu_early_report_leaf(struct rcu_node *leaf, void *arg)
{
	struct early_arg *ea = arg;
	unsigned long want = leaf->qsmaskinit, looked = 0;

	for (unsigned long m = want; m; m &= m - 1) {
		int i = __builtin_ctzl(m);
		struct rcu_thread *r = rcu_slot_get(leaf->grplo + i);

		looked++;
		if (!r || !rcu_early_qs(r)) {
			ea->stop = leaf->grplo + i;
			break;
		}
	}
	rcu_stat_add_locked(&rcu_state.n_slot_checks, looked);
	if (ea->stop >= 0)
		return false;
	if (leaf == ea->drv_leaf)
		ea->drv_leaf = NULL;   /* the driver's slot is reported here */
	/* Bits a thread reported itself since init are clear already. */
	pthread_mutex_lock(&leaf->lock);
	rcu_report_qs_rnp_driver(want, leaf, false);
	return true;
}

/*
 * The slot that ended the last early report (driver only, gp_mutex), or -1.
 * A registered thread's slot is in its leaf's ->qsmaskinit, so while that
 * slot's thread is still neither blocked nor driving, the walk would end
 * there again and report nothing to the tree's end: the next GP looks at
 * that one slot first and skips the walk and its fence (an idle GP with an
 * idle registered thread spares both).  A stale look only costs a
 * membarrier the walk could have spared, as a walk racing with that
 * thread's rcu_enter_gp_wait() does: skipping the early report is always
 * safe (the FQS scan reports every slot; tunable early_report=0).
 */
static int early_stop_slot = -1;

/* The thread in early_stop_slot, or NULL. */
static struct rcu_thread *rcu_early_stop_thread(void)
{
	if (early_stop_slot < 0 || early_stop_slot >= rcu_slot_hwm())
		return NULL;
	return rcu_slot_get(early_stop_slot);
}

static bool rcu_early_stop_still(void)
{
	struct rcu_thread *r = rcu_early_stop_thread();

	return r && !rcu_early_qs(r);
}

/* ofl_lock held: did the early report end (or would it end) at a thread
 * that is not a QSBR thread?  Then this GP is no QSBR grace period. */
bool rcu_early_stop_mixed(void)
{
	struct rcu_thread *r = rcu_early_stop_thread();

	return r && !rcu_qsbr_thread(r);
}

/* ofl_lock held (the init's): see rcu_early_report_leaf(). */
void rcu_gp_early_report(void)
{
	struct rcu_thread *drv = rcu_state.driver;
	struct rcu_tree *t = rcu_tree();
	struct early_arg ea = {
		.drv_leaf = drv && drv->slot >= 0 && drv->slot < t->capacity
			    ? rcu_tree_leaf(t, drv->slot) : NULL,
		.stop = -1,
	};

	if (!rcu_early_stop_still()) {
		/* Pairs with the fence in rcu_exit_gp_wait(): a waiter that
		 * has left is seen as such, or its next section sees this
		 * GP's updates. */
		atomic_thread_fence(memory_order_seq_cst);
		rcu_for_each_active_leaf_locked(rcu_early_report_leaf, &ea);
		early_stop_slot = ea.stop;
	}
	/*
	 * The driver, wherever the walk ended: nothing else reports an
	 * online QSBR driver (the GP kthread) until it sleeps.  Clean: it is
	 * this thread.  Not when the walk reported its leaf (drv_leaf
	 * cleared), nor when it is blocked (a synchronize_rcu() caller):
	 * then its ->watching is even for the whole GP (a signal handler's
	 * section on it while it runs GP code is an emergency one, ->busy)
	 * and the FQS scan reports it; a lock round trip on every idle GP
	 * spared.  Acquire pairs with the release in rcu_enter_gp_wait()
	 * (our own store when drv is this thread, as it is).
	 */
	if (ea.drv_leaf && !atomic_load_explicit(&drv->gp_blocked, memory_order_acquire) &&
	    !rcu_root_qs_done())
		rcu_report_qs_slot(drv->slot, false);
}
