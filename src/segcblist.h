/* SPDX-License-Identifier: MIT */
/*
 * Segmented callback lists (the kernel's rcu_segcblist): one singly linked
 * list of rcu_heads cut into four segments by tail pointers, each waiting
 * segment tagged with the grace-period number that ends its wait.
 *
 *   DONE       | WAIT        | NEXT_READY   | NEXT
 *   ready now  | current GP  | a later GP   | no GP assigned yet
 *
 * Owned by one thread at a time (the callback-offload thread): no locking.
 */
#ifndef TREERCU_SEGCBLIST_H
#define TREERCU_SEGCBLIST_H

#include <stdbool.h>

#include <treercu/rcu.h>

enum {
	RCU_DONE_TAIL,
	RCU_WAIT_TAIL,
	RCU_NEXT_READY_TAIL,
	RCU_NEXT_TAIL,
	RCU_CBLIST_NSEGS
};

/* A plain list of callbacks (for extraction and invocation). */
struct rcu_cblist {
	struct trcu_head *head;
	struct trcu_head **tail;
	long len;
};

struct rcu_segcblist {
	struct trcu_head *head;
	struct trcu_head **tails[RCU_CBLIST_NSEGS];
	unsigned long gp_seq[RCU_CBLIST_NSEGS];
	long len;
	long seglen[RCU_CBLIST_NSEGS];
};

void rcu_cblist_init(struct rcu_cblist *rclp);
void rcu_cblist_enqueue(struct rcu_cblist *rclp, struct trcu_head *rhp);
struct trcu_head *rcu_cblist_dequeue(struct rcu_cblist *rclp);

void rcu_segcblist_init(struct rcu_segcblist *rsclp);
bool rcu_segcblist_empty(struct rcu_segcblist *rsclp);
bool rcu_segcblist_segempty(struct rcu_segcblist *rsclp, int seg);
/* Are segments seg+1.. all empty? */
static inline bool rcu_segcblist_restempty(struct rcu_segcblist *rsclp, int seg)
{
	return !*rsclp->tails[seg];
}
bool rcu_segcblist_ready_cbs(struct rcu_segcblist *rsclp);
bool rcu_segcblist_pend_cbs(struct rcu_segcblist *rsclp);
void rcu_segcblist_enqueue(struct rcu_segcblist *rsclp, struct trcu_head *rhp);
void rcu_segcblist_enqueue_list(struct rcu_segcblist *rsclp, struct rcu_cblist *rclp);
void rcu_segcblist_advance(struct rcu_segcblist *rsclp, unsigned long seq);
bool rcu_segcblist_accelerate(struct rcu_segcblist *rsclp, unsigned long seq);
void rcu_segcblist_extract_done_cbs(struct rcu_segcblist *rsclp, struct rcu_cblist *rclp);
void rcu_segcblist_insert_done_cbs(struct rcu_segcblist *rsclp, struct rcu_cblist *rclp);
bool rcu_segcblist_nextgp(struct rcu_segcblist *rsclp, unsigned long *lp);

#endif
