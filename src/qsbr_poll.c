/* SPDX-License-Identifier: MIT */
/*
 * A QSBR grace period's spin: the driver polls the root and the answers of
 * the holdouts it asked, and reports those for them.  GP driver only
 * (gp_mutex held).
 */
#include "internal.h"
#include "gp.h"
#include "trace.h"

/*
 * The holdouts the last asking walk asked for polled answers: a leaf and a
 * slot's bit in it.  The spin only runs while fewer holdouts than CPUs are
 * left, so a few entries cover it; one asked beyond them gets a plain ask.
 */
#define RCU_QSBR_POLL_MAX 8
static struct qsbr_poll_ent {
	struct rcu_node *leaf;   /* NULL: settled */
	unsigned long bit;
} qsbr_poll[RCU_QSBR_POLL_MAX];
static int qsbr_npoll;

/*
 * Polled reports.  While the driver spins, the holdouts it asked need not
 * report through the tree: their ask is TRCU_QS_POLLED, their quiescent
 * state's exchange of ->need_qs to 0 is the whole report, and the spin,
 * seeing the 0, reports for them.  The exchange is the reader's ordering,
 * as the leaf lock is on the tree path: acquire, its next section after
 * the ask, stored after the asking walk's fence (so after the GP start);
 * release, its previous section before the 0 that the driver loads with
 * acquire (so before the GP end).  Every change of a nonzero ask is an
 * atomic read-modify-write, so the driver and the reader never both leave
 * it: ASKED -> POLLED by the asking walk (rcu_qs_ask(); failing on 0: the
 * reader took the plain ask and reports through the tree), POLLED ->
 * ASKED when the spin ends (failing on 0: it answered, and the driver
 * reports).  The reader clears a POLLED only at a quiescent state
 * (trcu_report_qs_slow()), so a 0 the spin reads is an answer.  Asks
 * are POLLED only from an asking walk whose driver will spin to the end of
 * that spin or of the FQS loop (src/gp.c), so a sleeping driver, and one
 * that takes the GP over, find plain asks only.  A report made twice (the
 * reader's through the tree and the driver's for it) is cleared once.
 * Each step holds the leaf lock with the slot's bit still set: the thread
 * is registered (its unregistration reports under that lock before the
 * slot goes), so its reader may be read.
 */
enum qsbr_poll_op { QSBR_POLL_CHECK, QSBR_POLL_END };

/* One entry, one step; false once it is settled. */
static bool rcu_qsbr_poll_one(struct qsbr_poll_ent *e, enum qsbr_poll_op op)
{
	struct rcu_node *leaf = e->leaf;
	struct trcu_reader *rdr;
	unsigned int v;

	if (!leaf)
		return false;
	pthread_mutex_lock(&leaf->lock);
	rdr = (leaf->qsmask & e->bit) ? rcu_slot_reader(leaf->grplo + __builtin_ctzl(e->bit))
				      : NULL;
	if (!rdr) {   /* reported meanwhile (itself, or its unregistration) */
		pthread_mutex_unlock(&leaf->lock);
		e->leaf = NULL;
		return false;
	}
	if (op == QSBR_POLL_CHECK) {
		/* Acquire: pairs with the release of the reader's exchange. */
		if (__atomic_load_n(&rdr->need_qs, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(&leaf->lock);
			return true;
		}
	} else {
		/* Acquire on failure, as above: the 0 is its answer. */
		v = TRCU_QS_POLLED;
		if (__atomic_compare_exchange_n(&rdr->need_qs, &v, TRCU_QS_ASKED, false,
						__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE) || v) {
			pthread_mutex_unlock(&leaf->lock);
			e->leaf = NULL;
			return false;
		}
	}
	/* Its answer: the report it left to this driver (releases the lock). */
	TRACE_RECORD("qs_polled", leaf->grplo + __builtin_ctzl(e->bit));
	rcu_stat_add_locked(&rcu_state.n_qs_polled, 1);
	rcu_report_qs_rnp_driver(e->bit, leaf, true);
	e->leaf = NULL;
	return false;
}

/* One step on every entry; true while one is still polled. */
static bool rcu_qsbr_poll_all(enum qsbr_poll_op op)
{
	bool left = false;

	for (int i = 0; i < qsbr_npoll; i++)
		left |= rcu_qsbr_poll_one(&qsbr_poll[i], op);
	return left;
}

/* The asks still polled become plain ones (answers reported). */
void rcu_qsbr_poll_end(void)
{
	rcu_qsbr_poll_all(QSBR_POLL_END);
	qsbr_npoll = 0;
}

/* An asking walk starts: its holdouts replace the last one's. */
void rcu_qsbr_poll_reset(void)
{
	rcu_qsbr_poll_end();
}

/* Room for one more polled holdout (else the walk asks plainly). */
bool rcu_qsbr_poll_room(void)
{
	return qsbr_npoll < RCU_QSBR_POLL_MAX;
}

/* The walk (leaf locked) left this holdout a polled ask. */
void rcu_qsbr_poll_add(struct rcu_node *leaf, unsigned long bit)
{
	qsbr_poll[qsbr_npoll++] = (struct qsbr_poll_ent){ leaf, bit };
}

/* A fork child: the parent's spin is not the child's. */
void rcu_qsbr_poll_fork_child(void)
{
	qsbr_npoll = 0;
}

/*
 * Ask a holdout to report (its leaf locked): plainly, or for a polled
 * answer.  Returns the ask it leaves.  Only an ask the thread has not
 * answered becomes polled: a 0 may be an answer on its way through the
 * tree (the thread waits for this leaf's lock), so it gets a plain ask
 * (a second report finds the bit clear).  A polled ask is written by a
 * read-modify-write after the asking walk's fence, so the reader's acquire
 * exchange reads a value that follows this GP's start, even where a POLLED
 * was left from an earlier GP (its thread went offline through a busy
 * path); a plain ask turns such a POLLED back.  Relaxed otherwise: a plain
 * ask is liveness only (the report's leaf lock orders the thread).  No
 * membarrier: the store reaches the thread's next quiescent states.
 */
unsigned int rcu_qs_ask(struct trcu_reader *rdr, bool polled)
{
	unsigned int v = __atomic_load_n(&rdr->need_qs, __ATOMIC_RELAXED);

	for (;;) {
		unsigned int want = polled ? TRCU_QS_POLLED : TRCU_QS_ASKED;

		if (!v) {   /* the reader never moves a 0 */
			__atomic_store_n(&rdr->need_qs, TRCU_QS_ASKED, __ATOMIC_RELAXED);
			return TRCU_QS_ASKED;
		}
		if (v == TRCU_QS_ASKED && !polled)
			return v;
		/* Failing on 0: it answered meanwhile; ask again, plainly. */
		if (__atomic_compare_exchange_n(&rdr->need_qs, &v, want, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return want;
		polled = false;
	}
}

/* Poll the root and the asked holdouts' answers until spin_until.  True
 * when the driver has something to do (the GP can end, or interrupted()),
 * false when the spin ran out.  The asks are plain ones after it. */
bool rcu_qsbr_spin(long spin_until_ns, bool (*interrupted)(void))
{
	bool polled = qsbr_npoll > 0;
	bool ret = rcu_root_qs_done();

	while (!ret && sys_now_ns() < spin_until_ns) {
		for (int i = 0; i < 32 && !ret; i++) {
			if (polled)
				polled = rcu_qsbr_poll_all(QSBR_POLL_CHECK);
			cpu_relax();
			ret = rcu_root_qs_done();
		}
		ret = ret || interrupted();
	}
	rcu_qsbr_poll_end();
	return ret || rcu_root_qs_done();
}
