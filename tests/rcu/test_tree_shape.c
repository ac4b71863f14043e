/* SPDX-License-Identifier: MIT */
/*
 * rcu_node tree shaping for many capacities and fan-outs (leaf fan-out 1
 * included): leaves partition the slots, every node's range is the union of
 * its children's, group masks are distinct per parent, depth is minimal.
 * Then QS propagation through a deep tree (fanout 2, leaf 1) with 40 live
 * reader threads.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "internal.h"
#include "check.h"

static void check_shape(int cap, int fo, int leaf)
{
	struct rcu_tree *t = rcu_tree_build(cap, fo, leaf);
	int l, expect_levels = 1;

	if (!t)
		fprintf(stderr, "build(%d, %d, %d) failed\n", cap, fo, leaf);
	CHECK(t);
	l = t->levels - 1;
	for (long n = (cap + leaf - 1) / leaf; n > 1; n = (n + fo - 1) / fo)
		expect_levels++;
	CHECK_EQ(t->levels, expect_levels);
	CHECK(t->capacity >= cap);
	CHECK_EQ(t->level_cnt[0], 1);
	CHECK_EQ(t->nodes[0].grplo, 0);
	CHECK(t->nodes[0].grphi >= cap - 1);
	CHECK(t->nodes[0].parent == NULL);
	for (int s = 0; s < cap; s++) {
		struct rcu_node *lf = rcu_tree_leaf(t, s);

		CHECK(lf->level == l);
		CHECK(s >= lf->grplo && s <= lf->grphi);
		CHECK(s - lf->grplo < 64);
	}
	for (int n = 1; n < t->nr_nodes; n++) {
		struct rcu_node *rnp = &t->nodes[n], *p = rnp->parent;

		CHECK(p);
		CHECK_EQ(p->level, rnp->level - 1);
		CHECK(rnp->grplo >= p->grplo && rnp->grphi <= p->grphi);
		CHECK(__builtin_popcountl(rnp->grpmask) == 1);
		/* Siblings have distinct bits and disjoint ranges. */
		if (n > 1 && t->nodes[n - 1].parent == p) {
			CHECK(t->nodes[n - 1].grpmask != rnp->grpmask);
			CHECK_EQ(t->nodes[n - 1].grphi + 1, rnp->grplo);
		}
	}
	rcu_tree_free(t);
}

static _Atomic int stop;

static void *reader(void *arg)
{
	rcu_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		rcu_read_unlock();
		/* 40 spinning readers on 2 CPUs would measure the scheduler
		 * (a reader preempted inside its section), not propagation. */
		usleep(20 + (long)arg);
	}
	rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	static const int fos[] = { 2, 3, 4, 16, 64 };
	static const int leaves[] = { 1, 2, 16, 64 };
	struct trcu_stats st;
	pthread_t th[40];

	for (int cap = 1; cap <= 130; cap++)
		for (unsigned i = 0; i < 5; i++)
			for (unsigned j = 0; j < 4; j++)
				check_shape(cap, fos[i], leaves[j]);
	check_shape(4096, 64, 16);
	check_shape(100000, 64, 64);
	check_shape(5000, 3, 2);
	/* Bad geometry is refused, not mis-built. */
	CHECK(rcu_tree_build(0, 16, 16) == NULL);
	CHECK(rcu_tree_build(64, 1, 16) == NULL);
	CHECK(rcu_tree_build(64, 16, 65) == NULL);
	check_shape(1 << 20, 2, 1);   /* 21 levels: every tunable covers 1M threads */

	/* Deep tree, live: 40 readers over fanout 2, leaf 1. */
	CHECK_EQ(trcu_set_tunable("fanout", 2), 0);
	CHECK_EQ(trcu_set_tunable("fanout_leaf", 1), 0);
	for (long i = 0; i < 40; i++)
		pthread_create(&th[i], NULL, reader, (void *)i);
	/* The tree grows at GP starts as threads register: wait for all 40
	 * (a loaded machine starts them late), then run the GPs. */
	do {
		synchronize_rcu();
		trcu_get_stats(&st);
	} while (st.nr_slots < 40);
	for (int i = 0; i < 200; i++)
		synchronize_rcu();
	trcu_get_stats(&st);
	/* 40 slots -> capacity 64 -> 64 leaves, fan-out 2: 7 levels. */
	CHECK(st.tree_levels >= 7);
	printf("deep tree: %d levels, %d nodes, %d slots\n", st.tree_levels, st.tree_nodes,
	       st.nr_slots);
	atomic_store(&stop, 1);
	for (int i = 0; i < 40; i++)
		pthread_join(th[i], NULL);
	printf("test_tree_shape: OK\n");
	return 0;
}
