/* SPDX-License-Identifier: MIT */
/*
 * treercu/list.h: the kernel's RCU lists.
 *
 * Single-threaded: the pointer rules the kernel documents (list_del_rcu()
 * keeps ->next and poisons ->prev, list_replace_rcu() likewise for the old
 * entry, hlist_del_init_rcu() leaves the node unhashed and may be repeated,
 * list_splice_init_rcu() waits for one grace period and only when there is
 * something to splice, ...).
 *
 * Concurrent: readers walk a sorted list_head list and the hlist chains of a
 * small hash table, both holding the same entries, while an updater
 * replaces the even keys (list_replace_rcu() + hlist_replace_rcu()),
 * deletes and re-adds the odd ones (list_del_rcu() + hlist_del_rcu() or
 * hlist_del_init_rcu(), then list_add_rcu() at the sorted place +
 * hlist_add_head_rcu()), adds and removes entries at both ends and splices
 * a private list onto the tail; what it removed it marks dead after
 * synchronize_rcu() and frees a few rounds later.  Readers must never see a
 * dead entry (nor a freed one: ASan), must see the keys strictly
 * increasing, and must find every even key on every walk: a replaced entry
 * is never missing, and a removed entry's ->next leads on.
 *
 * Built as strict C11 with -pedantic (and compiled as gnu11 too).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/list.h>
#include "check.h"

#define NKEYS     32              /* keys 0..NKEYS-1: even replaced, odd re-added */
#define NBUCKETS  8
#define NREADERS  2
#define ROUNDS    300             /* one synchronize_rcu() each (two every 16th) */
#define GRAVE     64              /* dead entries kept (and checked) before free() */

enum { LIVE = 0x11fe, DEAD = 0xdead };

struct item {
	_Atomic int magic;
	long key;
	struct list_head link;
	struct hlist_node hnode;
};

static LIST_HEAD(sorted);
static struct hlist_head buckets[NBUCKETS];
static _Atomic int stop, readers_started;
static _Atomic long walks;

static struct item *item_new(long key)
{
	struct item *it = calloc(1, sizeof(*it));

	CHECK(it);
	it->key = key;
	atomic_store_explicit(&it->magic, LIVE, memory_order_relaxed);
	INIT_HLIST_NODE(&it->hnode);
	return it;
}

static struct hlist_head *bucket_of(long key)
{
	return &buckets[(unsigned long)key % NBUCKETS];
}

/* ---- Single-threaded rules ------------------------------------------------- */

static int syncs;
static void count_sync(void)
{
	syncs++;
	trcu_synchronize_rcu();
}

static void check_list_rules(void)
{
	LIST_HEAD(h);
	LIST_HEAD(priv);
	struct item *a = item_new(1), *b = item_new(2), *c = item_new(3), *d = item_new(4);
	struct item *pos, *n;
	/* The short names are usable as function pointers. */
	void (*add)(struct list_head *, struct list_head *) = list_add_rcu;
	long keys[8];
	int i = 0;

	CHECK(list_empty(&h));
	CHECK(list_first_or_null_rcu(&h, struct item, link) == NULL);
	add(&b->link, &h);                        /* b */
	list_add_rcu(&a->link, &h);               /* a b */
	list_add_tail_rcu(&c->link, &h);          /* a b c */
	CHECK(!list_empty(&h));
	CHECK(list_first_or_null_rcu(&h, struct item, link) == a);
	list_for_each_entry_rcu(pos, &h, link)
		keys[i++] = pos->key;
	CHECK_EQ(i, 3);
	CHECK(keys[0] == 1 && keys[1] == 2 && keys[2] == 3);

	/* list_del_rcu(): ->next intact (a reader on b walks on to c),
	 * ->prev poisoned. */
	list_del_rcu(&b->link);
	CHECK(b->link.next == &c->link);
	CHECK(b->link.prev == LIST_POISON2);
	CHECK(a->link.next == &c->link && c->link.prev == &a->link);

	/* list_replace_rcu(): d in c's place; c keeps ->next, ->prev poisoned. */
	list_replace_rcu(&c->link, &d->link);
	CHECK(c->link.next == &h && c->link.prev == LIST_POISON2);
	CHECK(a->link.next == &d->link && d->link.next == &h && h.prev == &d->link);

	/* list_splice_init_rcu(): one grace period, only when non-empty. */
	syncs = 0;
	list_splice_init_rcu(&priv, &h, count_sync);
	CHECK_EQ(syncs, 0);
	list_add_tail(&b->link, &priv);
	list_add_tail(&c->link, &priv);           /* priv: b c */
	list_splice_tail_init_rcu(&priv, &h, count_sync);   /* h: a d b c */
	CHECK_EQ(syncs, 1);
	CHECK(list_empty(&priv));
	i = 0;
	list_for_each_entry(pos, &h, link)
		keys[i++] = pos->key;
	CHECK_EQ(i, 4);
	CHECK(keys[0] == 1 && keys[1] == 4 && keys[2] == 2 && keys[3] == 3);
	CHECK(h.prev == &c->link && c->link.prev == &b->link);

	list_del(&a->link);
	CHECK(a->link.next == LIST_POISON1 && a->link.prev == LIST_POISON2);
	list_add(&a->link, &priv);
	list_splice_init_rcu(&priv, &h, count_sync);        /* h: a d b c */
	CHECK_EQ(syncs, 2);
	CHECK(list_first_entry(&h, struct item, link) == a);

	/* list_for_each_entry_safe() may delete as it goes. */
	i = 0;
	list_for_each_entry_safe(pos, n, &h, link) {
		list_del(&pos->link);
		free(pos);
		i++;
	}
	CHECK_EQ(i, 4);
	INIT_LIST_HEAD(&h);
	CHECK(list_empty(&h));
}

static void check_hlist_rules(void)
{
	HLIST_HEAD(h);
	struct item *a = item_new(1), *b = item_new(2), *c = item_new(3), *d = item_new(4);
	struct item *pos;
	long keys[4];
	int i = 0;

	CHECK(hlist_empty(&h));
	CHECK(hlist_unhashed(&a->hnode));
	hlist_add_head_rcu(&c->hnode, &h);
	hlist_add_head_rcu(&b->hnode, &h);
	hlist_add_head_rcu(&a->hnode, &h);        /* a b c */
	CHECK(!hlist_empty(&h) && !hlist_unhashed(&b->hnode));
	CHECK(a->hnode.pprev == &h.first && b->hnode.pprev == &a->hnode.next);
	hlist_for_each_entry_rcu(pos, &h, hnode)
		keys[i++] = pos->key;
	CHECK_EQ(i, 3);
	CHECK(keys[0] == 1 && keys[1] == 2 && keys[2] == 3);

	/* hlist_del_rcu(): ->next intact, ->pprev poisoned. */
	hlist_del_rcu(&b->hnode);
	CHECK(b->hnode.next == &c->hnode);
	CHECK(b->hnode.pprev == (struct hlist_node **)LIST_POISON2);
	CHECK(a->hnode.next == &c->hnode && c->hnode.pprev == &a->hnode.next);

	/* hlist_replace_rcu(): d in a's place (the first node). */
	hlist_replace_rcu(&a->hnode, &d->hnode);
	CHECK(h.first == &d->hnode && d->hnode.pprev == &h.first);
	CHECK(d->hnode.next == &c->hnode && c->hnode.pprev == &d->hnode.next);
	CHECK(a->hnode.next == &c->hnode);
	CHECK(a->hnode.pprev == (struct hlist_node **)LIST_POISON2);

	/* hlist_del_init_rcu(): unhashed afterwards, ->next intact, and a
	 * second call does nothing. */
	hlist_del_init_rcu(&c->hnode);
	CHECK(hlist_unhashed(&c->hnode) && c->hnode.next == NULL);
	CHECK(d->hnode.next == NULL);
	hlist_del_init_rcu(&c->hnode);
	CHECK(h.first == &d->hnode && d->hnode.next == NULL);
	hlist_del_init_rcu(&d->hnode);
	CHECK(hlist_empty(&h));
	free(a);
	free(b);
	free(c);
	free(d);
}

/* ---- Concurrent readers ------------------------------------------------------ */

static void check_live(struct item *it)
{
	if (atomic_load_explicit(&it->magic, memory_order_relaxed) != LIVE) {
		fprintf(stderr, "reader saw an entry (key %ld) freed after a grace period\n",
			it->key);
		CHECK_FAIL_EXIT();
	}
}

static void walk_once(unsigned int *seed)
{
	unsigned long even_seen = 0;
	long prev = LONG_MIN, k;
	struct item *it;
	int n = 0, found = 0;

	rcu_read_lock();
	list_for_each_entry_rcu(it, &sorted, link) {
		check_live(it);
		CHECK(it->key > prev);            /* strictly increasing */
		prev = it->key;
		CHECK(++n <= 2 * NKEYS + 16);
		if (it->key >= 0 && it->key < NKEYS && it->key % 2 == 0)
			even_seen |= 1UL << it->key;
	}
	/* Every even key is only ever replaced: never missing. */
	for (k = 0; k < NKEYS; k += 2)
		if (!(even_seen & (1UL << k))) {
			fprintf(stderr, "list walk missed key %ld, which is only replaced\n", k);
			CHECK_FAIL_EXIT();
		}
	it = list_first_or_null_rcu(&sorted, struct item, link);
	CHECK(it != NULL);
	check_live(it);

	k = 2 * (long)(rand_r(seed) % (NKEYS / 2));
	hlist_for_each_entry_rcu(it, bucket_of(k), hnode) {
		check_live(it);
		CHECK(bucket_of(it->key) == bucket_of(k));
		if (it->key == k)
			found = 1;
	}
	if (!found) {
		fprintf(stderr, "hlist lookup missed key %ld, which is only replaced\n", k);
		CHECK_FAIL_EXIT();
	}
	rcu_read_unlock();
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(unsigned long)arg;

	rcu_register_thread();
	atomic_fetch_add(&readers_started, 1);
	while (!atomic_load(&stop)) {
		walk_once(&seed);
		atomic_fetch_add_explicit(&walks, 1, memory_order_relaxed);
	}
	rcu_unregister_thread();
	return NULL;
}

/* ---- The updater (this thread; the only one) ---------------------------------- */

static struct item *grave[GRAVE];
static int grave_next;
static struct item *dying[4 * NKEYS];
static int ndying;

/* After a grace period: mark every removed entry dead, keep it in the
 * graveyard a while (a reader that still saw it would find it dead), then
 * free it (a reader that still saw it then would trip ASan). */
static void bury_dying(void)
{
	synchronize_rcu();
	for (int i = 0; i < ndying; i++) {
		atomic_store_explicit(&dying[i]->magic, DEAD, memory_order_relaxed);
		free(grave[grave_next]);
		grave[grave_next] = dying[i];
		grave_next = (grave_next + 1) % GRAVE;
	}
	ndying = 0;
}

static struct item *find_key(long key)
{
	struct item *it;

	list_for_each_entry(it, &sorted, link)
		if (it->key == key)
			return it;
	return NULL;
}

/* The entry after which key belongs in the sorted list (its list_head). */
static struct list_head *sorted_pred(long key)
{
	struct list_head *pred = &sorted;
	struct item *it;

	list_for_each_entry(it, &sorted, link) {
		if (it->key > key)
			break;
		pred = &it->link;
	}
	return pred;
}

static void insert_sorted(struct item *it)
{
	list_add_rcu(&it->link, sorted_pred(it->key));
	hlist_add_head_rcu(&it->hnode, bucket_of(it->key));
}

static void replace_key(long key)
{
	struct item *old = find_key(key), *nw = item_new(key);

	CHECK(old);
	list_replace_rcu(&old->link, &nw->link);
	hlist_replace_rcu(&old->hnode, &nw->hnode);
	dying[ndying++] = old;
}

/* init: hlist_del_init_rcu() (a no-op for an entry never hashed: the
 * temporary ones at the ends) rather than hlist_del_rcu(). */
static void remove_item(struct item *it, int init)
{
	list_del_rcu(&it->link);
	if (init)
		hlist_del_init_rcu(&it->hnode);
	else
		hlist_del_rcu(&it->hnode);
	dying[ndying++] = it;
}

static void update_round(unsigned int *seed, int round)
{
	long removed[4];
	struct item *head_tmp = item_new(-1 - round), *tail_tmp = item_new(1000 + round);
	LIST_HEAD(priv);
	int i;

	for (i = 0; i < 4; i++)
		replace_key(2 * (long)(rand_r(seed) % (NKEYS / 2)));
	for (i = 0; i < 4; i++) {
		long k = 2 * (long)(rand_r(seed) % (NKEYS / 2)) + 1;
		struct item *it = find_key(k);

		removed[i] = it ? k : -1;
		if (it)
			remove_item(it, i & 1);
	}
	list_add_rcu(&head_tmp->link, &sorted);
	list_add_tail_rcu(&tail_tmp->link, &sorted);
	if (round % 16 == 0) {
		/* A private list spliced onto the tail, then taken off again. */
		for (i = 0; i < 3; i++)
			list_add_tail(&item_new(2000 + 3L * round + i)->link, &priv);
		list_splice_tail_init_rcu(&priv, &sorted, trcu_synchronize_rcu);
	}
	for (i = 0; i < 4; i++)
		if (removed[i] >= 0)
			insert_sorted(item_new(removed[i]));
	remove_item(head_tmp, 1);
	remove_item(tail_tmp, 1);
	if (round % 16 == 0) {
		struct item *it, *n;

		list_for_each_entry_safe(it, n, &sorted, link)
			if (it->key >= 2000)
				remove_item(it, 1);
	}
	bury_dying();
}

static void on_alarm(int sig)
{
	static const char msg[] = "test_list_rcu: timed out (hang?)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to say */
	}
	_exit(1);
}

int main(void)
{
	pthread_t r[NREADERS];
	unsigned int seed = 12345;
	struct item *it, *n;
	long k;
	int round, i;

	signal(SIGALRM, on_alarm);
	alarm(240);

	check_list_rules();
	check_hlist_rules();
	printf("list/hlist pointer rules: ok\n");

	for (k = 0; k < NKEYS; k++)
		insert_sorted(item_new(k));
	for (i = 0; i < NREADERS; i++)
		pthread_create(&r[i], NULL, reader, (void *)(unsigned long)(i + 1));
	while (atomic_load(&readers_started) < NREADERS)
		usleep(100);

	for (round = 0; round < ROUNDS; round++)
		update_round(&seed, round);
	atomic_store(&stop, 1);
	for (i = 0; i < NREADERS; i++)
		pthread_join(r[i], NULL);
	printf("%d update rounds, %ld reader walks, no dead or missing entry\n",
	       round, atomic_load(&walks));
	CHECK(atomic_load(&walks) > 0);

	/* The final list holds exactly the keys 0..NKEYS-1, in order. */
	k = 0;
	list_for_each_entry(it, &sorted, link)
		CHECK_EQ(it->key, k++);
	CHECK_EQ(k, NKEYS);
	list_for_each_entry_safe(it, n, &sorted, link) {
		list_del_rcu(&it->link);
		hlist_del_rcu(&it->hnode);
		dying[ndying++] = it;
	}
	CHECK(list_empty(&sorted));
	for (i = 0; i < NBUCKETS; i++)
		CHECK(hlist_empty(&buckets[i]));
	bury_dying();
	for (i = 0; i < GRAVE; i++)
		free(grave[i]);
	printf("test_list_rcu: ok\n");
	return 0;
}
