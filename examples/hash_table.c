/* SPDX-License-Identifier: MIT */
/*
 * A read-mostly hash table: lookups take no lock (an RCU read-side section
 * around hlist_for_each_entry_rcu()), updates take the one bucket's lock,
 * and removed or replaced entries are freed with rcu_free() (no rcu_head
 * in the entry: the pointer is freed after a grace period).
 *
 * Two updaters insert, replace and delete keys that hash into the same
 * buckets (each owns the keys of one parity and remembers what it stored);
 * readers look keys up and check that every entry they reach is whole (its
 * value is derived from its key and version).  At the end the table must
 * hold exactly what the updaters remember.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/list.h>
#include <treercu/rcu.h>

#define NBUCKETS 64
#define NKEYS    512
#define READERS  2
#define ROUNDS   40000

struct entry {
	struct hlist_node node;
	unsigned long key;
	unsigned long version;
	unsigned long value;            /* value_of(key, version) */
};

struct bucket {
	pthread_mutex_t lock;           /* serialises this bucket's updaters */
	struct hlist_head head;
};

static struct bucket table[NBUCKETS];
static atomic_bool stop;

static unsigned long value_of(unsigned long key, unsigned long version)
{
	return key * 1000003UL ^ version * 7919UL;
}

static struct bucket *bucket_of(unsigned long key)
{
	return &table[(key * 2654435761UL >> 8) % NBUCKETS];
}

static void table_init(void)
{
	for (int i = 0; i < NBUCKETS; i++) {
		pthread_mutex_init(&table[i].lock, NULL);
		INIT_HLIST_HEAD(&table[i].head);
	}
}

/* Readers: no lock.  Returns the version found, 0 if the key is absent. */
static unsigned long lookup(unsigned long key)
{
	struct bucket *b = bucket_of(key);
	struct entry *e;
	unsigned long version = 0;

	rcu_read_lock();
	hlist_for_each_entry_rcu(e, &b->head, node) {
		if (e->key != key)
			continue;
		if (e->value != value_of(e->key, e->version)) {
			fprintf(stderr, "hash_table: reader reached a damaged entry (key %lu)\n",
				key);
			exit(1);
		}
		version = e->version;
		break;
	}
	rcu_read_unlock();
	return version;
}

/* The entry for key; the caller holds the bucket's lock. */
static struct entry *find_locked(struct bucket *b, unsigned long key)
{
	struct entry *e;

	hlist_for_each_entry_rcu(e, &b->head, node)
		if (e->key == key)
			return e;
	return NULL;
}

static struct entry *entry_new(unsigned long key, unsigned long version)
{
	struct entry *e = malloc(sizeof(*e));

	if (!e) {
		fprintf(stderr, "hash_table: out of memory\n");
		exit(1);
	}
	INIT_HLIST_NODE(&e->node);
	e->key = key;
	e->version = version;
	e->value = value_of(key, version);
	return e;
}

/* Insert key, or replace its entry with a new version. */
static void store(unsigned long key, unsigned long version)
{
	struct bucket *b = bucket_of(key);
	struct entry *n = entry_new(key, version), *old;

	pthread_mutex_lock(&b->lock);
	old = find_locked(b, key);
	if (old)
		hlist_replace_rcu(&old->node, &n->node);
	else
		hlist_add_head_rcu(&n->node, &b->head);
	pthread_mutex_unlock(&b->lock);
	if (old)
		rcu_free(old);          /* freed once no reader can hold it */
}

static bool erase(unsigned long key)
{
	struct bucket *b = bucket_of(key);
	struct entry *e;

	pthread_mutex_lock(&b->lock);
	e = find_locked(b, key);
	if (e)
		hlist_del_rcu(&e->node);
	pthread_mutex_unlock(&b->lock);
	if (e)
		rcu_free(e);
	return e != NULL;
}

struct updater {
	unsigned long parity;
	unsigned long version[NKEYS];   /* what this updater stored; 0: absent */
	unsigned long seed;
};

static unsigned long next_rand(unsigned long *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *updater(void *arg)
{
	struct updater *u = arg;

	for (unsigned long i = 1; i <= ROUNDS; i++) {
		unsigned long r = next_rand(&u->seed);
		unsigned long key = (r % (NKEYS / 2)) * 2 + u->parity;

		if (r >> 32 & 3) {
			store(key, i);
			u->version[key] = i;
		} else {
			if (erase(key) != (u->version[key] != 0)) {
				fprintf(stderr, "hash_table: erase(%lu) disagrees with the table\n",
					key);
				exit(1);
			}
			u->version[key] = 0;
		}
	}
	return NULL;
}

static void *reader(void *arg)
{
	unsigned long r = 88172645463325252UL, found = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		found += lookup(next_rand(&r) % NKEYS) != 0;
	*(unsigned long *)arg = found;
	return NULL;
}

int main(void)
{
	static struct updater u[2] = { { .parity = 0, .seed = 12345 },
				       { .parity = 1, .seed = 67890 } };
	pthread_t ut[2], rt[READERS];
	unsigned long found[READERS];
	int present = 0;

	table_init();
	for (int i = 0; i < READERS; i++)
		pthread_create(&rt[i], NULL, reader, &found[i]);
	for (int i = 0; i < 2; i++)
		pthread_create(&ut[i], NULL, updater, &u[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(ut[i], NULL);
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	for (int i = 0; i < READERS; i++)
		pthread_join(rt[i], NULL);

	/* Quiescent now: the table holds exactly what the updaters stored. */
	for (unsigned long key = 0; key < NKEYS; key++) {
		unsigned long want = u[key % 2].version[key];

		if (lookup(key) != want) {
			fprintf(stderr, "hash_table: key %lu has version %lu, expected %lu\n",
				key, lookup(key), want);
			return 1;
		}
		present += want != 0;
	}
	for (unsigned long key = 0; key < NKEYS; key++)
		erase(key);
	rcu_barrier();          /* every rcu_free() pointer so far has been freed */
	printf("hash_table: ok (%d keys present at the end, %lu + %lu hits)\n", present,
	       found[0], found[1]);
	return 0;
}
