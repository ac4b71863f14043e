/* SPDX-License-Identifier: MIT */
/*
 * A read-mostly hash map, per peer (`treercu peers`): the mixed workload of
 * a program that uses RCU for a lookup table.
 *
 * The table: HM_BUCKETS chained buckets over a fixed key space of HM_KEYS
 * keys, half of them present at the start.  Readers walk a chain inside a
 * read-side section; writers take the bucket's mutex, publish with a release
 * store and retire what they unlinked after dropping the lock.
 *
 * HM_WORKERS threads each run the same mix: lookup_pct% lookups, the rest
 * split 2:1:1 between replacing an element (a new node with the next value
 * takes the old one's place, the old one is retired), inserting an absent
 * key and deleting a present one.  Keys are uniform.  A QSBR worker reports
 * a quiescent state every PEER_QS_EVERY operations.
 *
 * Figures per run: operations per second (both workers), unfreed memory
 * (retired nodes not yet freed, times the node size; peak and mean of the
 * samples every 2 ms), peak RSS growth over the run's start, and CPU spent
 * outside the workers (process CPU minus the workers' and the sampler's, as
 * % of one CPU: the library's helper threads).
 */
#define _GNU_SOURCE   /* malloc_trim */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "peers.h"
#include "peers_work.h"

#define HM_BUCKETS 1024
#define HM_KEYS 8192
#define HM_WORKERS 2
#define HM_NODE 64

struct hm_node {
	char head[PEER_HEAD];            /* the peer's deferred-free head */
	uint64_t canary;                 /* PEER_CANARY until freed */
	struct hm_node *next;
	uint64_t key, val;
	char pad[HM_NODE - PEER_HEAD - 32];
};

struct hm_bucket {
	struct hm_node *head;
	pthread_mutex_t lock;            /* writers only */
} __attribute__((aligned(64)));

struct hm_run {
	const struct peer_ops *p;
	struct hm_bucket *b;
	int lookup_pct;
	int stop, pause;
	pthread_barrier_t start;
};

struct hm_worker {
	struct hm_run *run;
	uint64_t rng;
	unsigned long ops, retired, bad;
};

static struct hm_node *hm_new(uint64_t key, uint64_t val, struct hm_node *next)
{
	struct hm_node *n = malloc(sizeof(*n));

	if (!n) {
		fprintf(stderr, "peers: out of memory\n");
		exit(1);
	}
	memset(n->head, 0, sizeof(n->head));
	n->canary = PEER_CANARY;
	n->key = key;
	n->val = val;
	n->next = next;
	return n;
}

static uint64_t hm_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/* Read side: the chain of key's bucket, in a section. */
static void hm_lookup(struct hm_worker *w, uint64_t key)
{
	const struct peer_ops *p = w->run->p;
	struct hm_node *n;

	p->read_lock();
	/* Acquire: pairs with the writers' release stores of head/next. */
	n = __atomic_load_n(&w->run->b[key % HM_BUCKETS].head, __ATOMIC_ACQUIRE);
	while (n) {
		w->bad += *(volatile uint64_t *)&n->canary != PEER_CANARY;
		if (n->key == key) {
			(void)*(volatile uint64_t *)&n->val;
			break;
		}
		n = __atomic_load_n(&n->next, __ATOMIC_ACQUIRE);   /* pairs as above */
	}
	p->read_unlock();
}

/* Under the bucket lock: the link that points at key's node, or at NULL. */
static struct hm_node **hm_find(struct hm_bucket *b, uint64_t key)
{
	struct hm_node **link = &b->head;

	while (*link && (*link)->key != key)
		link = &(*link)->next;
	return link;
}

/* op 0 replace, 1 insert, 2 delete; retires what it unlinked. */
static void hm_update(struct hm_worker *w, uint64_t key, int op)
{
	struct hm_bucket *b = &w->run->b[key % HM_BUCKETS];
	struct hm_node **link, *old, *gone = NULL;

	pthread_mutex_lock(&b->lock);
	link = hm_find(b, key);
	old = *link;
	if (op == 0 && old) {
		/* Release: the new node's fields before it is reachable; pairs
		 * with hm_lookup()'s acquire loads. */
		__atomic_store_n(link, hm_new(key, old->val + 1, old->next), __ATOMIC_RELEASE);
		gone = old;
	} else if (op == 1 && !old) {
		__atomic_store_n(link, hm_new(key, 0, NULL), __ATOMIC_RELEASE);   /* as above */
	} else if (op == 2 && old) {
		/* Release: old->next was published already; the store only has
		 * to be atomic against the readers' loads. */
		__atomic_store_n(link, old->next, __ATOMIC_RELEASE);
		gone = old;
	}
	pthread_mutex_unlock(&b->lock);
	if (gone) {
		w->run->p->retire(gone);
		/* Relaxed: the sampler's estimate; exact after pthread_join(). */
		__atomic_store_n(&w->retired, w->retired + 1, __ATOMIC_RELAXED);
	}
}

static void hm_op(struct hm_worker *w)
{
	uint64_t r = hm_rand(&w->rng);
	uint64_t key = (r >> 16) % HM_KEYS;
	int pm = (int)(r % 1000), lk = w->run->lookup_pct * 10, rest = 1000 - lk;

	if (pm < lk)
		hm_lookup(w, key);
	else if (pm < lk + rest / 2)
		hm_update(w, key, 0);
	else if (pm < lk + rest * 3 / 4)
		hm_update(w, key, 1);
	else
		hm_update(w, key, 2);
}

static void *hm_worker_fn(void *arg)
{
	struct hm_worker *w = arg;
	struct hm_run *run = w->run;
	const struct peer_ops *p = run->p;
	unsigned long n = 0;

	p->thread_register();
	pthread_barrier_wait(&run->start);
	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		if (__atomic_load_n(&run->pause, __ATOMIC_RELAXED)) {
			p->thread_offline();
			sleep_ns(1000000);
			p->thread_online();
			continue;
		}
		hm_op(w);
		n++;
		if (p->qsbr && n % PEER_QS_EVERY == 0)
			p->quiescent_state();
	}
	w->ops = n;
	p->barrier();
	p->thread_unregister();
	return NULL;
}

static struct hm_bucket *hm_table(void)
{
	struct hm_bucket *b = aligned_alloc(64, HM_BUCKETS * sizeof(*b));

	if (!b) {
		fprintf(stderr, "peers: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < HM_BUCKETS; i++) {
		b[i].head = NULL;
		pthread_mutex_init(&b[i].lock, NULL);
	}
	for (uint64_t k = 0; k < HM_KEYS; k += 2)
		b[k % HM_BUCKETS].head = hm_new(k, 0, b[k % HM_BUCKETS].head);
	return b;
}

/* No thread is left: the remaining nodes go straight to free(). */
static void hm_table_free(struct hm_bucket *b)
{
	for (int i = 0; i < HM_BUCKETS; i++) {
		struct hm_node *n = b[i].head;

		while (n) {
			struct hm_node *next = n->next;

			free(n);
			n = next;
		}
		pthread_mutex_destroy(&b[i].lock);
	}
	free(b);
}

static unsigned long hm_retired(struct hm_worker *w)
{
	unsigned long n = 0;

	for (int i = 0; i < HM_WORKERS; i++)
		n += __atomic_load_n(&w[i].retired, __ATOMIC_RELAXED);
	return n;
}

bool peers_hashmap_run(const struct peer_ops *p, double dur_s, double cap, int lookup_pct,
		       struct peers_hashmap_point *pt)
{
	struct hm_run run = { .p = p, .lookup_pct = lookup_pct };
	struct hm_worker w[HM_WORKERS];
	pthread_t t[HM_WORKERS];
	unsigned long freed0, ops = 0, bad = 0, retired, nsamp = 0;
	uint64_t t0, el, pc0, mc0, pcpu, mcpu, wcpu = 0, wc0[HM_WORKERS], end;
	double base, peak = 0, sum = 0, rss_peak = 0;
	bool capped = false;

	malloc_trim(0);
	run.b = hm_table();
	freed0 = peer_freed();
	base = process_rss_bytes();
	pthread_barrier_init(&run.start, NULL, HM_WORKERS + 1);
	for (int i = 0; i < HM_WORKERS; i++) {
		w[i] = (struct hm_worker){ .run = &run, .rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1) };
		work_spawn(&t[i], hm_worker_fn, &w[i]);
	}
	pthread_barrier_wait(&run.start);
	t0 = now_ns();
	pc0 = peer_process_cpu_ns();
	mc0 = peer_thread_cpu_ns();
	for (int i = 0; i < HM_WORKERS; i++)
		wc0[i] = peer_other_cpu_ns(t[i]);
	end = t0 + (uint64_t)(dur_s * 1e9);
	while (now_ns() < end) {
		double unfreed, rss;

		sleep_ns(2000000);
		unfreed = (double)hm_retired(w) - (double)(peer_freed() - freed0);
		rss = process_rss_bytes() - base;
		peak = unfreed > peak ? unfreed : peak;
		rss_peak = rss > rss_peak ? rss : rss_peak;
		sum += unfreed;
		nsamp++;
		capped = work_cap(&run.pause, unfreed, cap) || capped;
	}
	/* Every clock read at the same instants, before the workers stop. */
	el = now_ns() - t0;
	pcpu = peer_process_cpu_ns() - pc0;
	mcpu = peer_thread_cpu_ns() - mc0;
	for (int i = 0; i < HM_WORKERS; i++)
		wcpu += peer_other_cpu_ns(t[i]) - wc0[i];
	__atomic_store_n(&run.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < HM_WORKERS; i++) {
		pthread_join(t[i], NULL);
		ops += w[i].ops;
		bad += w[i].bad;
	}
	pthread_barrier_destroy(&run.start);
	retired = hm_retired(w);
	hm_table_free(run.b);
	pt->ops_s = (double)ops / ((double)el / 1e9);
	pt->peak_unfreed_bytes = peak * HM_NODE;
	pt->mean_unfreed_bytes = nsamp ? sum / (double)nsamp * HM_NODE : 0;
	pt->rss_growth_bytes = rss_peak;
	pt->helper_cpu_pct = 100.0 * ((double)pcpu - (double)wcpu - (double)mcpu) / (double)el;
	if (capped)
		printf("peers: %s: the hash map reached the tool's cap of %.0f unfreed nodes; "
		       "its writers were paused\n", p->name, cap);
	if (bad || peer_freed() - freed0 != retired) {
		fprintf(stderr, "peers: %s: hash map: %lu nodes read after they were freed, "
			"%lu of %lu retired nodes freed after the barriers\n",
			p->name, bad, peer_freed() - freed0, retired);
		return false;
	}
	return true;
}
