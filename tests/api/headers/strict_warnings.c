/* SPDX-License-Identifier: MIT */
/*
 * Every inline function and macro of the public headers, expanded in a
 * program's own file: header_matrix.sh compiles this as C and as C++ under
 * the strictest warning sets (clang's -Weverything, GCC's cast and
 * null-pointer warnings) with -Werror.  A program that builds with
 * -Wold-style-cast or -Wzero-as-null-pointer-constant must not see a
 * warning it did not write.  Compiled only, never run.
 */
#include <treercu/treercu.h>
#include <treercu/list.h>
#include <treercu/workqueue.h>

/* The program's own null pointer (its warnings apply to its own NULL). */
#ifdef __cplusplus
#define NIL nullptr
#else
#define NIL NULL
#endif

struct item {
	int key;
	struct list_head node;
	struct hlist_node hnode;
	struct rcu_head rh;
};

static LIST_HEAD(items);
static struct hlist_head buckets;
static struct item *current_item;

static void work_fn(struct trcu_work *w)
{
	(void)trcu_to_delayed_work(w);
}

static TRCU_DECLARE_WORK(a_work, work_fn);
static TRCU_DECLARE_DELAYED_WORK(a_dwork, work_fn);

int strict_read(void);
int strict_read(void)
{
	struct item *it, *tmp;
	int sum = 0;

	rcu_read_lock();
	it = rcu_dereference(current_item);
	if (it)
		sum += it->key;
	list_for_each_entry_rcu(it, &items, node)
		sum += it->key;
	hlist_for_each_entry_rcu(it, &buckets, hnode)
		sum += it->key;
	it = list_first_or_null_rcu(&items, struct item, node);
	if (it)
		sum += list_entry_rcu(it->node.next, struct item, node)->key;
	it = rcu_dereference_check(current_item, rcu_read_lock_held());
	it = rcu_pointer_handoff(rcu_dereference_raw(current_item));
	if (rcu_read_lock_held())
		sum++;
	rcu_read_unlock();
	list_for_each_entry(it, &items, node)
		sum += it->key;
	list_for_each_entry_safe(it, tmp, &items, node)
		sum += it->key;
	if (!list_empty(&items))
		sum += list_first_entry(&items, struct item, node)->key;
	return sum;
}

const struct item *strict_const_entry(const struct list_head *h);
const struct item *strict_const_entry(const struct list_head *h)
{
	return container_of(h->next, struct item, node);
}

void strict_update(struct item *n);
void strict_update(struct item *n)
{
	struct item *old;

	list_add_rcu(&n->node, &items);
	hlist_add_head_rcu(&n->hnode, &buckets);
	hlist_del_init_rcu(&n->hnode);
	list_del_rcu(&n->node);
	rcu_assign_pointer(current_item, n);
	old = rcu_xchg_pointer(&current_item, n);
	(void)rcu_cmpxchg_pointer(&current_item, old, n);
	RCU_INIT_POINTER(current_item, old);
	RCU_INIT_POINTER(current_item, NIL);
	old = rcu_replace_pointer(current_item, n, 1);
	if (rcu_access_pointer(current_item) == old)
		old = rcu_dereference_protected(current_item, n != NIL);
	synchronize_rcu();
	kfree_rcu(old, rh);
	kvfree_rcu(n, rh);
	kvfree_rcu(n->node.next);
	kfree_rcu_mightsleep(n->hnode.pprev);
	trcu_quiescent_state();
}

int strict_work(void);
int strict_work(void)
{
	trcu_init_work(&a_work, work_fn);
	trcu_init_delayed_work(&a_dwork, work_fn);
	return trcu_work_pending(&a_work) + trcu_delayed_work_pending(&a_dwork);
}
