/* SPDX-License-Identifier: MIT */
/*
 * rcu_segcblist: enqueue order, accelerate (NEXT gets the GP number of the
 * snapshot, merging with a waiting segment of the same number), advance
 * (segments whose GP ended move to DONE, in order), extract/insert of DONE,
 * and all of it with GP numbers that wrap around ULONG_MAX.
 */
#include "internal.h"
#include "segcblist.h"
#include "check.h"

#define N 64
static struct trcu_head h[N];

static int idx(struct trcu_head *rhp)
{
	return (int)(rhp - h);
}

static long done_count(struct rcu_segcblist *l)
{
	return l->seglen[RCU_DONE_TAIL];
}

/* Extract DONE and check it is exactly callbacks lo..hi-1 in order. */
static void expect_done(struct rcu_segcblist *l, int lo, int hi)
{
	struct rcu_cblist c;
	struct trcu_head *rhp;

	rcu_cblist_init(&c);
	rcu_segcblist_extract_done_cbs(l, &c);
	CHECK_EQ(c.len, hi - lo);
	for (int i = lo; i < hi; i++) {
		rhp = rcu_cblist_dequeue(&c);
		CHECK(rhp);
		CHECK_EQ(idx(rhp), i);
	}
	CHECK(!rcu_cblist_dequeue(&c));
}

static void run(unsigned long base)
{
	struct rcu_segcblist l;
	unsigned long gp = base, s1, s2, need;
	struct rcu_cblist back;

	rcu_segcblist_init(&l);
	CHECK(rcu_segcblist_empty(&l));
	CHECK(!rcu_segcblist_accelerate(&l, rcu_seq_snap_val(gp)));
	/* Batch A (0..9) queued while idle: needs the next GP. */
	for (int i = 0; i < 10; i++)
		rcu_segcblist_enqueue(&l, &h[i]);
	s1 = rcu_seq_snap_val(gp);
	CHECK(rcu_segcblist_accelerate(&l, s1));
	CHECK(rcu_segcblist_nextgp(&l, &need));
	CHECK_EQ(need, s1);
	/* GP starts; batch B (10..19) needs the GP after it. */
	gp = rcu_seq_startval(gp);
	for (int i = 10; i < 20; i++)
		rcu_segcblist_enqueue(&l, &h[i]);
	s2 = rcu_seq_snap_val(gp);
	CHECK(s2 != s1);
	CHECK(rcu_segcblist_accelerate(&l, s2));
	/* Batch C (20..24) with the same snapshot merges into B's segment. */
	for (int i = 20; i < 25; i++)
		rcu_segcblist_enqueue(&l, &h[i]);
	CHECK(rcu_segcblist_accelerate(&l, s2));
	CHECK(!rcu_segcblist_segempty(&l, RCU_WAIT_TAIL));
	CHECK(!rcu_segcblist_segempty(&l, RCU_NEXT_READY_TAIL));
	CHECK(rcu_segcblist_segempty(&l, RCU_NEXT_TAIL));
	/* Nothing is ready before the GP ends. */
	rcu_segcblist_advance(&l, gp);
	CHECK(!rcu_segcblist_ready_cbs(&l));
	/* First GP ends: A is done, B+C still wait. */
	gp = rcu_seq_endval(gp);
	CHECK_EQ(gp, s1);
	rcu_segcblist_advance(&l, gp);
	CHECK_EQ(done_count(&l), 10);
	CHECK(rcu_segcblist_nextgp(&l, &need));
	CHECK_EQ(need, s2);
	/* Extract only part of DONE, then put the rest back in front. */
	{
		struct rcu_cblist c;

		rcu_cblist_init(&c);
		rcu_segcblist_extract_done_cbs(&l, &c);
		CHECK_EQ(c.len, 10);
		for (int i = 0; i < 4; i++)
			CHECK_EQ(idx(rcu_cblist_dequeue(&c)), i);
		rcu_cblist_init(&back);
		back = c;
		if (!back.head)
			back.tail = &back.head;
		rcu_segcblist_insert_done_cbs(&l, &back);
		CHECK_EQ(done_count(&l), 6);
	}
	expect_done(&l, 4, 10);
	/* Second GP: B and C done, in order. */
	gp = rcu_seq_endval(rcu_seq_startval(gp));
	CHECK_EQ(gp, s2);
	rcu_segcblist_advance(&l, gp);
	expect_done(&l, 10, 25);
	CHECK(rcu_segcblist_empty(&l));
	CHECK_EQ(l.len, 0);
	/* Three different GP numbers: the oldest two stay separate, NEXT
	 * callbacks that cannot get a segment of their own stay in NEXT. */
	for (int i = 30; i < 33; i++) {
		rcu_segcblist_enqueue(&l, &h[i]);
		rcu_segcblist_accelerate(&l, rcu_seq_snap_val(gp));
		gp = (i == 31) ? rcu_seq_startval(gp) : gp;
	}
	CHECK_EQ(l.len, 3);
	gp = rcu_seq_endval(gp);
	gp = rcu_seq_endval(rcu_seq_startval(gp));
	rcu_segcblist_advance(&l, gp);
	expect_done(&l, 30, 33);
}

int main(void)
{
	run(0);
	run(RCU_SEQ_INIT);
	run(ULONG_MAX - 3);   /* GP numbers wrap inside the test */
	run(ULONG_MAX - 7);
	printf("test_segcblist: OK\n");
	return 0;
}
