/* SPDX-License-Identifier: MIT */
/*
 * Exhaustive model of a task's switch-out (worker placement) x grace-period
 * init's promotion x the task's outermost unlock (src/task.c), in the
 * style of test_fqs_model.c: every interleaving of the steps of one task
 * on worker W and one grace period, locks as in the code.  Property: the
 * grace period never ends while a task section that began before its start
 * is still open.
 *
 * Each step is one access or one lock-protected block.  Interleavings are
 * sequentially consistent: the code gets that order for the accesses that
 * matter from the switch-out's seq_cst RMW and load and the GP's seq_cst
 * fence (T1), and from the locks (T2, T4).
 *
 * The model must also catch the orders the code avoids, or it proves
 * nothing:
 *   naive:       the switch-out reads gp_seq before it counts the task on
 *                its worker list (the hole the kernel series closes by
 *                promoting before every quiescent-state report);
 *   even-first:  the worker is made quiescent before the task is queued
 *                (T3 reversed);
 *   no-promote:  GP init does not promote worker lists (torture's
 *                --busted 3).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum variant { CORRECT, NAIVE, EVEN_FIRST, NO_PROMOTE, NR_VARIANTS };
static const char *const variant_name[] = { "correct", "naive", "even-first", "no-promote" };

enum { FREE = 0, BY_T = 1, BY_G = 2 };

struct st {
	unsigned tpc, gpc;          /* program counters */
	unsigned g, n, nodepath;    /* locals: gp seen by T, count seen by G */
	unsigned gp;                /* 0 idle, 1 started */
	unsigned nr;                /* W's list count (0..1) */
	unsigned wlist, nlist;      /* the task is on W's list / the leaf's */
	unsigned blocker;           /* ... at or after ->gp_tasks */
	unsigned qsw, inited;       /* leaf ->qsmask bit of W; leaf initialised */
	unsigned w;                 /* W's ->watching odd */
	unsigned open, before;      /* section open; began before the GP start */
	unsigned lockw, lockn;
	unsigned ended;
};

static enum variant var;
static uint8_t *visited;
static long nstates, violations;

#define BITS(x, n) ((uint64_t)(x) & ((1u << (n)) - 1))
static uint64_t enc(const struct st *s)
{
	uint64_t k = 0;

	k = (k << 5) | BITS(s->tpc, 5);
	k = (k << 4) | BITS(s->gpc, 4);
	k = (k << 1) | BITS(s->g, 1);
	k = (k << 1) | BITS(s->n, 1);
	k = (k << 1) | BITS(s->nodepath, 1);
	k = (k << 1) | BITS(s->gp, 1);
	k = (k << 1) | BITS(s->nr, 1);
	k = (k << 1) | BITS(s->wlist, 1);
	k = (k << 1) | BITS(s->nlist, 1);
	k = (k << 1) | BITS(s->blocker, 1);
	k = (k << 1) | BITS(s->qsw, 1);
	k = (k << 1) | BITS(s->inited, 1);
	k = (k << 1) | BITS(s->w, 1);
	k = (k << 1) | BITS(s->open, 1);
	k = (k << 1) | BITS(s->before, 1);
	k = (k << 2) | BITS(s->lockw, 2);
	k = (k << 2) | BITS(s->lockn, 2);
	k = (k << 1) | BITS(s->ended, 1);
	return k;   /* 27 bits */
}

#define TDONE 20

/* One step of the task; false when it cannot move (lock held, done). */
static bool step_t(struct st *s)
{
	switch (s->tpc) {
	case 0:   /* outermost lock while running on W */
		s->open = 1;
		s->before = !s->gp;
		s->w = 1;
		s->tpc = var == EVEN_FIRST ? 1 : 2;
		return true;
	case 1:   /* even-first: W quiescent before the task is queued */
		s->w = 0;
		s->tpc = 2;
		return true;
	case 2:   /* switch-out: lock W's list */
		if (s->lockw)
			return false;
		s->lockw = BY_T;
		s->tpc = 3;
		return true;
	case 3:
		if (var == NAIVE)
			s->g = s->gp;
		else
			s->nr++;    /* seq_cst RMW */
		s->tpc = 4;
		return true;
	case 4:
		if (var == NAIVE)
			s->nr++;
		else
			s->g = s->gp;   /* seq_cst load */
		s->tpc = 5;
		return true;
	case 5:
		if (!s->g) {
			s->wlist = 1;
		} else {
			s->nr--;
			s->nodepath = 1;
		}
		s->tpc = 6;
		return true;
	case 6:
		s->lockw = FREE;
		s->tpc = s->nodepath ? 7 : 9;
		return true;
	case 7:   /* node path: lock, queue (a blocker when W still owes the GP) */
		if (s->lockn)
			return false;
		s->nlist = 1;
		s->blocker = s->inited && s->qsw;
		s->tpc = 9;
		return true;
	case 9:   /* W quiescent (release store after the queue) */
		if (var != EVEN_FIRST)
			s->w = 0;
		s->tpc = 10;
		return true;
	case 10:  /* resumed (any worker): outermost unlock */
		s->tpc = s->wlist ? 11 : 13;
		return true;
	case 11:
		if (s->lockw)
			return false;
		if (s->wlist) {   /* still on W's list: the early return */
			s->wlist = 0;
			s->nr--;
			s->open = 0;
			s->tpc = TDONE;
		} else {
			s->tpc = 13;   /* promoted meanwhile */
		}
		return true;
	case 13:
		if (s->lockn)
			return false;
		s->nlist = 0;
		s->blocker = 0;
		s->open = 0;
		s->tpc = TDONE;
		return true;
	default:
		return false;
	}
}

/* One step of the grace period. */
static bool step_g(struct st *s)
{
	switch (s->gpc) {
	case 0:   /* gp_seq: in progress */
		s->gp = 1;
		s->gpc = var == NO_PROMOTE ? 6 : 1;
		return true;
	case 1:   /* fence, read the count */
		s->n = s->nr;
		s->gpc = s->n ? 2 : 6;
		return true;
	case 2:   /* promotion: leaf lock, then W's list lock */
		if (s->lockn)
			return false;
		s->lockn = BY_G;
		s->gpc = 3;
		return true;
	case 3:
		if (s->lockw)
			return false;
		s->lockw = BY_G;
		s->gpc = 4;
		return true;
	case 4:
		if (s->wlist) {
			s->wlist = 0;
			s->nlist = 1;
		}
		s->nr = 0;
		s->lockw = FREE;
		s->gpc = 5;
		return true;
	case 5:
		s->lockn = FREE;
		s->gpc = 6;
		return true;
	case 6:   /* leaf init: W owes; every queued task blocks */
		if (s->lockn)
			return false;
		s->qsw = 1;
		s->inited = 1;
		s->blocker = s->nlist;
		s->gpc = 7;
		return true;
	case 7:   /* scan W, and end once nothing holds the GP */
		if (s->lockn)
			return false;
		if (s->qsw && !s->w)
			s->qsw = 0;
		if (!s->qsw && !s->blocker) {
			s->ended = 1;
			if (s->open && s->before)
				violations++;
			s->gpc = 8;
		}
		return true;
	default:
		return false;
	}
}

static void dfs(const struct st *s)
{
	uint64_t k = enc(s);
	struct st n;

	if (visited[k >> 3] & (1u << (k & 7)))
		return;
	visited[k >> 3] |= (uint8_t)(1u << (k & 7));
	nstates++;
	n = *s;
	if (step_t(&n))
		dfs(&n);
	n = *s;
	if (step_g(&n))
		dfs(&n);
}

static long run(enum variant v)
{
	struct st s0 = { 0 };

	var = v;
	nstates = violations = 0;
	for (size_t i = 0; i < (1u << 24); i++)
		visited[i] = 0;
	dfs(&s0);
	printf("%-11s %6ld states, %ld end(s) of a grace period over an open pre-GP section\n",
	       variant_name[v], nstates, violations);
	return violations;
}

int main(void)
{
	visited = calloc(1u << 24, 1);   /* 2^27 state bits */
	CHECK(visited);
	CHECK_EQ(run(CORRECT), 0);
	CHECK(run(NAIVE) > 0);
	CHECK(run(EVEN_FIRST) > 0);
	CHECK(run(NO_PROMOTE) > 0);
	free(visited);
	printf("ok\n");
	return 0;
}
