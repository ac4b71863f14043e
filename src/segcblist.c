/* SPDX-License-Identifier: MIT */
/*
 * Segmented callback lists: enqueue, advance (segments whose GP ended move to
 * DONE), accelerate (give NEXT the earliest GP that is certain to cover it),
 * extract and re-insert the DONE segment.  Names and semantics follow
 * kernel/rcu/rcu_segcblist.c; ULONG_CMP_* make GP numbers wrap-safe.
 */
#include <stddef.h>

#include "internal.h"
#include "segcblist.h"

void rcu_cblist_init(struct rcu_cblist *rclp)
{
	rclp->head = NULL;
	rclp->tail = &rclp->head;
	rclp->len = 0;
}

void rcu_cblist_enqueue(struct rcu_cblist *rclp, struct trcu_head *rhp)
{
	rhp->next = NULL;
	*rclp->tail = rhp;
	rclp->tail = &rhp->next;
	rclp->len++;
}

struct trcu_head *rcu_cblist_dequeue(struct rcu_cblist *rclp)
{
	struct trcu_head *rhp = rclp->head;

	if (!rhp)
		return NULL;
	rclp->len--;
	rclp->head = rhp->next;
	if (!rclp->head)
		rclp->tail = &rclp->head;
	return rhp;
}

void rcu_segcblist_init(struct rcu_segcblist *rsclp)
{
	rsclp->head = NULL;
	for (int i = 0; i < RCU_CBLIST_NSEGS; i++) {
		rsclp->tails[i] = &rsclp->head;
		rsclp->gp_seq[i] = 0;
		rsclp->seglen[i] = 0;
	}
	rsclp->len = 0;
}

bool rcu_segcblist_empty(struct rcu_segcblist *rsclp)
{
	return !rsclp->head;
}

bool rcu_segcblist_segempty(struct rcu_segcblist *rsclp, int seg)
{
	if (seg == RCU_DONE_TAIL)
		return &rsclp->head == rsclp->tails[RCU_DONE_TAIL];
	return rsclp->tails[seg - 1] == rsclp->tails[seg];
}

/* Are there callbacks ready to invoke? */
bool rcu_segcblist_ready_cbs(struct rcu_segcblist *rsclp)
{
	return &rsclp->head != rsclp->tails[RCU_DONE_TAIL];
}

/* Are there callbacks still waiting for a grace period? */
bool rcu_segcblist_pend_cbs(struct rcu_segcblist *rsclp)
{
	return *rsclp->tails[RCU_DONE_TAIL] != NULL;
}

void rcu_segcblist_enqueue(struct rcu_segcblist *rsclp, struct trcu_head *rhp)
{
	rhp->next = NULL;
	*rsclp->tails[RCU_NEXT_TAIL] = rhp;
	rsclp->tails[RCU_NEXT_TAIL] = &rhp->next;
	rsclp->len++;
	rsclp->seglen[RCU_NEXT_TAIL]++;
}

/* Append a whole list to the NEXT segment. */
void rcu_segcblist_enqueue_list(struct rcu_segcblist *rsclp, struct rcu_cblist *rclp)
{
	if (!rclp->len)
		return;
	*rsclp->tails[RCU_NEXT_TAIL] = rclp->head;
	rsclp->tails[RCU_NEXT_TAIL] = rclp->tail;
	rsclp->len += rclp->len;
	rsclp->seglen[RCU_NEXT_TAIL] += rclp->len;
	rcu_cblist_init(rclp);
}

/*
 * Advance: every waiting segment whose grace period `seq` has reached moves
 * into DONE; the remaining segments close up behind it.
 */
void rcu_segcblist_advance(struct rcu_segcblist *rsclp, unsigned long seq)
{
	int i, j;

	if (rcu_segcblist_restempty(rsclp, RCU_DONE_TAIL))
		return;
	for (i = RCU_WAIT_TAIL; i < RCU_NEXT_TAIL; i++) {
		if (ULONG_CMP_LT(seq, rsclp->gp_seq[i]))
			break;
		rsclp->tails[RCU_DONE_TAIL] = rsclp->tails[i];
		rsclp->seglen[RCU_DONE_TAIL] += rsclp->seglen[i];
		rsclp->seglen[i] = 0;
	}
	if (i == RCU_WAIT_TAIL)
		return;
	/* Segments between DONE and i are now empty: point them at DONE. */
	for (j = RCU_WAIT_TAIL; j < i; j++)
		rsclp->tails[j] = rsclp->tails[RCU_DONE_TAIL];
	/* Close the gap: move the remaining waiting segments down. */
	for (j = RCU_WAIT_TAIL; i < RCU_NEXT_TAIL; i++, j++) {
		if (rsclp->tails[j] == rsclp->tails[RCU_NEXT_TAIL])
			break;
		rsclp->tails[j] = rsclp->tails[i];
		rsclp->gp_seq[j] = rsclp->gp_seq[i];
		rsclp->seglen[j] = rsclp->seglen[i];
		rsclp->seglen[i] = 0;
	}
}

/*
 * Accelerate: the callbacks in NEXT were all queued before `seq` was
 * computed (rcu_seq_snap of the current gp_seq), so they are ready once GP
 * `seq` ends.  Merge them into the last waiting segment whose GP number is
 * `seq` (or give them the first free waiting segment).  Returns true if
 * callbacks now wait for `seq` (the caller must make sure it is requested).
 */
bool rcu_segcblist_accelerate(struct rcu_segcblist *rsclp, unsigned long seq)
{
	int i, j;

	if (rcu_segcblist_restempty(rsclp, RCU_DONE_TAIL))
		return false;
	/* Find the last non-empty waiting segment that ends before seq. */
	for (i = RCU_NEXT_READY_TAIL; i > RCU_DONE_TAIL; i--)
		if (!rcu_segcblist_segempty(rsclp, i) && ULONG_CMP_LT(rsclp->gp_seq[i], seq))
			break;
	/* Nothing after it, or no waiting segment left to take NEXT. */
	if (rcu_segcblist_restempty(rsclp, i) || ++i >= RCU_NEXT_TAIL)
		return false;
	/* Everything from segment i on now waits for seq. */
	for (j = i + 1; j <= RCU_NEXT_TAIL; j++) {
		rsclp->seglen[i] += rsclp->seglen[j];
		rsclp->seglen[j] = 0;
	}
	for (j = i; j < RCU_NEXT_TAIL; j++) {
		rsclp->tails[j] = rsclp->tails[RCU_NEXT_TAIL];
		rsclp->gp_seq[j] = seq;
	}
	return true;
}

/* Move the DONE segment to rclp (in order). */
void rcu_segcblist_extract_done_cbs(struct rcu_segcblist *rsclp, struct rcu_cblist *rclp)
{
	long n = rsclp->seglen[RCU_DONE_TAIL];

	if (!rcu_segcblist_ready_cbs(rsclp))
		return;
	*rclp->tail = rsclp->head;
	rsclp->head = *rsclp->tails[RCU_DONE_TAIL];
	*rsclp->tails[RCU_DONE_TAIL] = NULL;
	rclp->tail = rsclp->tails[RCU_DONE_TAIL];
	rclp->len += n;
	for (int i = RCU_CBLIST_NSEGS - 1; i >= RCU_DONE_TAIL; i--)
		if (rsclp->tails[i] == rsclp->tails[RCU_DONE_TAIL])
			rsclp->tails[i] = &rsclp->head;
	rsclp->len -= n;
	rsclp->seglen[RCU_DONE_TAIL] = 0;
}

/* Put callbacks that a batch limit left uninvoked back at the front. */
void rcu_segcblist_insert_done_cbs(struct rcu_segcblist *rsclp, struct rcu_cblist *rclp)
{
	if (!rclp->head)
		return;
	*rclp->tail = rsclp->head;
	rsclp->head = rclp->head;
	for (int i = RCU_DONE_TAIL; i < RCU_CBLIST_NSEGS; i++) {
		if (&rsclp->head != rsclp->tails[i])
			break;
		rsclp->tails[i] = rclp->tail;
	}
	rsclp->len += rclp->len;
	rsclp->seglen[RCU_DONE_TAIL] += rclp->len;
	rcu_cblist_init(rclp);
}

/* The GP number the earliest waiting callbacks need; false if none wait
 * with a number assigned. */
bool rcu_segcblist_nextgp(struct rcu_segcblist *rsclp, unsigned long *lp)
{
	if (rcu_segcblist_segempty(rsclp, RCU_WAIT_TAIL) &&
	    rcu_segcblist_segempty(rsclp, RCU_NEXT_READY_TAIL))
		return false;
	*lp = rcu_segcblist_segempty(rsclp, RCU_WAIT_TAIL) ? rsclp->gp_seq[RCU_NEXT_READY_TAIL]
							    : rsclp->gp_seq[RCU_WAIT_TAIL];
	return true;
}
