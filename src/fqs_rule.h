/* SPDX-License-Identifier: MIT */
/*
 * The FQS scan rule: whether a reader's ->watching value, against this GP's
 * snapshot, proves a quiescent state.  A header of its own so that the GP
 * scan (src/gp.c) and the model check (tests/model/test_fqs_model.c) compile the
 * same rule.
 */
#ifndef TREERCU_FQS_RULE_H
#define TREERCU_FQS_RULE_H

#include "internal.h"

/*
 * Decide from ->watching (w) and this GP's snapshot whether slot i of leaf
 * passed through a quiescent state.  *dirty: the evidence is a plain store
 * of the reader's, so (on arm64) the GP-end membarrier is needed.
 * A snapshot taken before the GP-start membarrier ("pre") proves nothing
 * about sections that began around that barrier: against it only an even
 * value counts; an odd value becomes a post-barrier snapshot.
 * (tests/model/test_fqs_model.c enumerates the case: pre odd 3, then
 * unlock+lock to 5 before the barrier, is a section that may hold pre-GP
 * references.)
 */
static inline bool rcu_watching_qs(struct rcu_node *leaf, int i, unsigned long w, bool *dirty)
{
	unsigned long bit = 1UL << i, s = leaf->snap[i];

#if RCU_TSO
	/*
	 * This GP's reader generation: only an outermost rcu_read_lock() that
	 * loaded it stores it (the slow paths strip the tag), and that load
	 * came after rcu_gp_init() stored it, after storing gp_seq.  An
	 * updater that waits for this GP read gp_seq before that store, after
	 * its own updates and a full barrier; TSO is multi-copy atomic and
	 * keeps loads in order, so the section sees those updates: a
	 * quiescent state for this GP, whether it began before the
	 * GP-start membarrier or after (tests/model/test_fqs_model.c).  Clean: TSO
	 * skips the GP-end membarrier anyway.  A busy reader whose sections
	 * follow each other is caught at the first scan instead of by
	 * ->need_qs (without this rule, one such reader makes the scan wait
	 * for its next section's end: docs/design.md, section 1).
	 */
	if (w == rcu_state.gp_gen)
		return true;
#endif

	if (!(w & 1)) {
		/* Even: outside any section now, after the barrier.  Clean only
		 * if it was already this value before the barrier. */
		if (!(leaf->snap_valid & leaf->snap_pre & bit) || w != s)
			*dirty = true;
		return true;
	}
	if ((leaf->snap_valid & bit) && !(leaf->snap_pre & bit) && w != s) {
		*dirty = true;   /* left the section seen after the barrier */
		return true;
	}
	if (!(leaf->snap_valid & bit) || (leaf->snap_pre & bit)) {
		leaf->snap[i] = w;          /* post-barrier snapshot */
		leaf->snap_valid |= bit;
		leaf->snap_pre &= ~bit;
	}
	return false;
}

#endif
