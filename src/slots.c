/* SPDX-License-Identifier: MIT */
/*
 * The slot table: which registered thread sits at which index.  This file
 * owns it and calls nothing of the library; src/thread.c fills and empties
 * it (under ofl_lock), the grace-period scans, the tree install and the
 * stall warnings read it through rcu_slot_get() (internal.h).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Chunks of SLOT_CHUNK pointers, allocated on demand and never freed: a
 * scan may read a chunk while a registration publishes into it. */
_Atomic(struct rcu_thread *) *rcu_slot_chunks[SLOT_MAX_CHUNKS];
/* The same chunks of each thread's ->rdr: a grace-period scan reads a
 * slot's ->watching through them with one cache miss (the reader's line),
 * not two (the thread's, then the reader's). */
_Atomic(struct trcu_reader *) *rcu_slot_rdr_chunks[SLOT_MAX_CHUNKS];

/* The bitmap of slots in use, its length in words, the highest slot + 1
 * ever used: all under ofl_lock. */
static unsigned long *slot_used;
static int slot_used_words;
static int slot_hwm;

/* Slots removed since init (rcu_slot_removals()): under ofl_lock. */
static unsigned long slot_removals;
/* Registered threads; read without a lock (statistics). */
static _Atomic int nr_slots;

/*
 * The bitmap's first words and the first chunk are static: the library's
 * init and the first SLOT_CHUNK registrations allocate nothing, so a signal
 * handler's first rcu_read_lock(), which may run both (docs/design.md,
 * "Signal handlers"), calls no malloc().
 */
#define SLOT_STATIC_WORDS 4
static unsigned long slot_used_static[SLOT_STATIC_WORDS];
static _Atomic(struct rcu_thread *) slot_chunk_static[SLOT_CHUNK];
static _Atomic(struct trcu_reader *) slot_rdr_chunk_static[SLOT_CHUNK];

/* A bitmap of nw words keeping the w in use; NULL when out of memory. */
static unsigned long *slot_bitmap_grow(int w, int nw)
{
	unsigned long *nb;

	if (nw <= SLOT_STATIC_WORDS)
		return slot_used_static;
	nb = malloc((size_t)nw * sizeof(*nb));
	if (!nb)
		return NULL;
	if (w)
		memcpy(nb, slot_used, (size_t)w * sizeof(*nb));
	if (slot_used != slot_used_static)
		free(slot_used);
	return nb;
}

int rcu_slot_alloc(void)
{
	int w, b, slot;

	for (w = 0; w < slot_used_words; w++)
		if (~slot_used[w])
			break;
	if (w == slot_used_words) {
		int nw = w ? 2 * w : SLOT_STATIC_WORDS;
		unsigned long *nb;

		if ((long)nw * 64 > (long)SLOT_CHUNK * SLOT_MAX_CHUNKS)
			return -1;
		nb = slot_bitmap_grow(w, nw);
		if (!nb)
			return -1;
		memset(nb + w, 0, (size_t)(nw - w) * sizeof(*nb));
		slot_used = nb;
		slot_used_words = nw;
	}
	b = __builtin_ctzl(~slot_used[w]);
	slot = w * 64 + b;
	if (slot >= SLOT_CHUNK * SLOT_MAX_CHUNKS)
		return -1;
	if (!rcu_slot_chunks[slot / SLOT_CHUNK]) {
		void *c = slot / SLOT_CHUNK ? calloc(SLOT_CHUNK, sizeof(struct rcu_thread *))
					    : (void *)slot_chunk_static;
		void *rc = slot / SLOT_CHUNK ? calloc(SLOT_CHUNK, sizeof(struct trcu_reader *))
					     : (void *)slot_rdr_chunk_static;

		if (!c || !rc) {
			if (slot / SLOT_CHUNK) {
				free(c);
				free(rc);
			}
			return -1;
		}
		rcu_slot_rdr_chunks[slot / SLOT_CHUNK] = rc;
		rcu_slot_chunks[slot / SLOT_CHUNK] = c;
	}
	slot_used[w] |= 1UL << b;
	return slot;
}

void rcu_slot_free(int slot)
{
	slot_used[slot / 64] &= ~(1UL << (slot % 64));
}

static void slot_set(int slot, struct rcu_thread *r)
{
	/* Release pairs with the acquire in rcu_slot_get(): the thread's
	 * initialised fields are visible before its pointer. */
	atomic_store_explicit(&rcu_slot_chunks[slot / SLOT_CHUNK][slot % SLOT_CHUNK], r,
			      memory_order_release);
	/* Release pairs with the acquire in rcu_slot_reader(): the reader's
	 * initialised ->watching is visible before its pointer.  Both go
	 * together under ofl_lock; a scan reads them under the slot's leaf
	 * lock with the slot's bit set, which the thread's unregistration
	 * clears (rcu_report_qs_slot()) before it removes the slot. */
	atomic_store_explicit(&rcu_slot_rdr_chunks[slot / SLOT_CHUNK][slot % SLOT_CHUNK],
			      r ? r->rdr : NULL, memory_order_release);
}

void rcu_slot_install(int slot, struct rcu_thread *r)
{
	slot_set(slot, r);
	if (slot + 1 > slot_hwm)
		slot_hwm = slot + 1;
	atomic_fetch_add_explicit(&nr_slots, 1, memory_order_relaxed);
}

void rcu_slot_remove(int slot)
{
	slot_set(slot, NULL);
	rcu_slot_free(slot);
	slot_removals++;
	atomic_fetch_sub_explicit(&nr_slots, 1, memory_order_relaxed);
}

unsigned long rcu_slot_removals(void)
{
	return slot_removals;
}

int rcu_slot_hwm(void)
{
	return slot_hwm;
}

int rcu_slot_count(void)
{
	return atomic_load_explicit(&nr_slots, memory_order_relaxed);
}

/* fork() child: only self exists; every other slot is dropped.  The
 * dropped threads' structures are copies nobody updates. */
void rcu_slot_table_fork_child(const struct rcu_thread *self)
{
	int n = 0;

	for (int s = 0; s < slot_hwm; s++) {
		struct rcu_thread *r = rcu_slot_get(s);

		if (!r)
			continue;
		if (r != self) {
			slot_set(s, NULL);
			rcu_slot_free(s);
			continue;
		}
		n++;
	}
	slot_removals++;   /* the next GP init looks at every empty leaf */
	atomic_store_explicit(&nr_slots, n, memory_order_relaxed);
}
