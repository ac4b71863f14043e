/* SPDX-License-Identifier: MIT */
/*
 * Headless bulk freeing: trcu_rcu_free(ptr), the userspace twin of the
 * kernel's single-argument kvfree_rcu().  No rcu_head in the object: each
 * thread collects pointers in page-sized blocks; a full block (or one older
 * than rcu_free_drain_ms, or any block at rcu_barrier()) gets a grace-period
 * cookie and goes to the offload thread of group 0, which frees every pointer
 * in it once the cookie's grace period has ended.  When no block can be
 * allocated, rcu_free() waits for a grace period and frees the pointer
 * itself (outside a read-side section; inside one it aborts with a message).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kvfree.h"
#include "nocb.h"

#define KVFREE_BLOCK_BYTES 4096
#define KVFREE_NR_PTRS ((KVFREE_BLOCK_BYTES - 4 * sizeof(long)) / sizeof(void *))

struct kvfree_block {
	struct kvfree_block *next;
	unsigned long cookie;       /* get_state_synchronize_rcu() when sealed */
	long n;
	long born_ns;
	void *ptrs[KVFREE_NR_PTRS];
};
_Static_assert(sizeof(struct kvfree_block) == KVFREE_BLOCK_BYTES, "one page per block");

/* Per-thread cache: the block being filled, under ->lock (the owner and,
 * to drain it, the offload thread). */
struct kvfree_cache {
	pthread_mutex_t lock;
	struct kvfree_block *cur;
	struct kvfree_cache *next;  /* in kvfree.caches */
	bool orphan;                /* owner exited; under ->lock */
};

static struct {
	pthread_mutex_t lock;                 /* ->caches, ->sealed */
	struct kvfree_cache *caches;
	struct kvfree_block *sealed_head;     /* oldest first */
	struct kvfree_block **sealed_tail;
	pthread_key_t exit_key;
	_Atomic bool inited;
	_Atomic long n_freed, n_queued, n_fallback;
} kvfree = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static __thread struct kvfree_cache *kvfree_self;

/* Seal a block: it waits for a GP that starts after every pointer in it
 * was handed over.  Caller holds kvfree.lock. */
static void kvfree_seal_locked(struct kvfree_block *b)
{
	b->cookie = rcu_gp_snap();
	b->next = NULL;
	*kvfree.sealed_tail = b;
	kvfree.sealed_tail = &b->next;
}

static void kvfree_cache_exit(void *arg)
{
	struct kvfree_cache *kc = arg;

	pthread_mutex_lock(&kc->lock);
	kc->orphan = true;   /* the offload thread drains and frees it */
	pthread_mutex_unlock(&kc->lock);
}

static void kvfree_init_once(void)
{
	if (atomic_load_explicit(&kvfree.inited, memory_order_acquire))
		return;
	pthread_mutex_lock(&kvfree.lock);
	if (!atomic_load_explicit(&kvfree.inited, memory_order_relaxed)) {
		kvfree.sealed_tail = &kvfree.sealed_head;
		if (pthread_key_create(&kvfree.exit_key, kvfree_cache_exit))
			sys_die("rcu_free(): pthread_key_create failed");
		/* Release: pairs with the acquire above. */
		atomic_store_explicit(&kvfree.inited, true, memory_order_release);
	}
	pthread_mutex_unlock(&kvfree.lock);
}

static struct kvfree_cache *kvfree_cache_get(void)
{
	struct kvfree_cache *kc = kvfree_self;

	if (kc)
		return kc;
	kvfree_init_once();
	kc = calloc(1, sizeof(*kc));
	if (!kc)
		return NULL;
	pthread_mutex_init(&kc->lock, NULL);
	pthread_mutex_lock(&kvfree.lock);
	kc->next = kvfree.caches;
	kvfree.caches = kc;
	pthread_mutex_unlock(&kvfree.lock);
	kvfree_self = kc;
	pthread_setspecific(kvfree.exit_key, kc);
	return kc;
}

/* No memory for a block: wait for a grace period and free it here. */
static void kvfree_fallback(void *ptr)
{
	if (rcu_section_depth())
		sys_die("rcu_free(%p): out of memory inside an RCU read-side critical section "
			 "(it would have to wait for a grace period)", ptr);
	atomic_fetch_add_explicit(&kvfree.n_fallback, 1, memory_order_relaxed);
	trcu_synchronize_rcu();
	free(ptr);
}

void trcu_rcu_free(void *ptr)
{
	struct kvfree_cache *kc;
	struct kvfree_block *b, *full = NULL;
	bool fresh = false;

	if (!ptr)
		return;   /* like free(NULL) */
	rcu_init();
	kc = kvfree_cache_get();
	if (!kc) {
		kvfree_fallback(ptr);
		return;
	}
	pthread_mutex_lock(&kc->lock);
	b = kc->cur;
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b) {
			pthread_mutex_unlock(&kc->lock);
			kvfree_fallback(ptr);
			return;
		}
		b->n = 0;
		b->born_ns = sys_now_ns();
		kc->cur = b;
		fresh = true;
	}
	b->ptrs[b->n++] = ptr;
	if (b->n == (long)KVFREE_NR_PTRS) {
		full = b;
		kc->cur = NULL;
	}
	pthread_mutex_unlock(&kc->lock);
	atomic_fetch_add_explicit(&kvfree.n_queued, 1, memory_order_relaxed);
	if (full) {
		pthread_mutex_lock(&kvfree.lock);
		kvfree_seal_locked(full);
		pthread_mutex_unlock(&kvfree.lock);
	}
	/* A sealed block needs its GP; a new block needs the drain timer
	 * armed: once per block either way. */
	if (full || fresh)
		rcu_nocb_kick();
}

/*
 * Offload-thread side (group 0), once per pass: seal partial blocks that are
 * old enough (all of them when flush), free every sealed block whose grace
 * period has ended, reap exited threads' caches.  Returns true and the
 * earliest cookie in *need when sealed blocks still wait; *more tells that
 * partial blocks exist (so the caller sleeps with the drain timeout).
 */
bool kvfree_pass(unsigned long cur, bool flush, unsigned long *need, bool *more)
{
	long now = sys_now_ns(), drain = TUN(rcu_free_drain_ms) * 1000000L;
	struct kvfree_block *done = NULL;
	bool waiting = false;

	*more = false;
	if (!atomic_load_explicit(&kvfree.inited, memory_order_acquire))
		return false;
	pthread_mutex_lock(&kvfree.lock);
	for (struct kvfree_cache **pp = &kvfree.caches; *pp;) {
		struct kvfree_cache *kc = *pp;
		bool gone;

		pthread_mutex_lock(&kc->lock);
		if (kc->cur && (flush || kc->orphan || now - kc->cur->born_ns >= drain)) {
			kvfree_seal_locked(kc->cur);
			kc->cur = NULL;
		}
		*more |= kc->cur != NULL;
		gone = kc->orphan;
		pthread_mutex_unlock(&kc->lock);
		if (gone) {
			*pp = kc->next;
			pthread_mutex_destroy(&kc->lock);
			free(kc);
			continue;
		}
		pp = &kc->next;
	}
	while (kvfree.sealed_head && rcu_seq_done_val(cur, kvfree.sealed_head->cookie)) {
		struct kvfree_block *b = kvfree.sealed_head;

		kvfree.sealed_head = b->next;
		b->next = done;
		done = b;
	}
	if (!kvfree.sealed_head)
		kvfree.sealed_tail = &kvfree.sealed_head;
	if (kvfree.sealed_head) {
		*need = kvfree.sealed_head->cookie;
		waiting = true;
	}
	pthread_mutex_unlock(&kvfree.lock);
	while (done) {
		struct kvfree_block *b = done;

		done = b->next;
		for (long i = 0; i < b->n; i++)
			free(b->ptrs[i]);
		atomic_fetch_add_explicit(&kvfree.n_freed, b->n, memory_order_relaxed);
		free(b);
	}
	return waiting;
}

/* ---- fork() (src/fork.c) ---------------------------------------------------- */

/* kvfree.lock, then every cache's lock: the order of kvfree_pass(). */
void kvfree_fork_prepare(void)
{
	pthread_mutex_lock(&kvfree.lock);
	for (struct kvfree_cache *kc = kvfree.caches; kc; kc = kc->next)
		pthread_mutex_lock(&kc->lock);
}

void kvfree_fork_parent(void)
{
	for (struct kvfree_cache *kc = kvfree.caches; kc; kc = kc->next)
		pthread_mutex_unlock(&kc->lock);
	pthread_mutex_unlock(&kvfree.lock);
}

/* The pointers handed to rcu_free() before the fork are the parent's to
 * free: the child drops its copies of the blocks and caches that hold them
 * (the library's memory) and keeps the pointers' memory untouched; its
 * counters start again from zero. */
void kvfree_fork_child(void)
{
	struct kvfree_cache *kc, *kc_next;
	struct kvfree_block *b, *b_next;

	pthread_mutex_init(&kvfree.lock, NULL);
	for (kc = kvfree.caches; kc; kc = kc_next) {
		kc_next = kc->next;
		free(kc->cur);
		free(kc);
	}
	kvfree.caches = NULL;
	for (b = kvfree.sealed_head; b; b = b_next) {
		b_next = b->next;
		free(b);
	}
	kvfree.sealed_head = NULL;
	kvfree.sealed_tail = &kvfree.sealed_head;
	atomic_store_explicit(&kvfree.n_queued, 0, memory_order_relaxed);
	atomic_store_explicit(&kvfree.n_freed, 0, memory_order_relaxed);
	atomic_store_explicit(&kvfree.n_fallback, 0, memory_order_relaxed);
	kvfree_self = NULL;
	if (atomic_load_explicit(&kvfree.inited, memory_order_relaxed))
		pthread_setspecific(kvfree.exit_key, NULL);
}

void kvfree_stats(long *queued, long *freed, long *fallback)
{
	*queued = atomic_load_explicit(&kvfree.n_queued, memory_order_relaxed);
	*freed = atomic_load_explicit(&kvfree.n_freed, memory_order_relaxed);
	*fallback = atomic_load_explicit(&kvfree.n_fallback, memory_order_relaxed);
}
