/* SPDX-License-Identifier: MIT */
/*
 * The x86-64 read side stores the reader generation (trcu_reader_gen) at its
 * outermost lock instead of ->watching + 1 (include/treercu/rcu.h):
 * - an outermost lock stores the current generation, odd, and the unlock
 *   makes it even; a nested lock does not touch ->watching;
 * - a grace period that has to look at a registered thread advances the
 *   generation (by 2 at its start);
 * - a reader running section after section with no pause, so that the same
 *   odd value keeps coming back within a grace period, neither blocks
 *   grace periods (->need_qs settles it) nor sees an element freed under
 *   it: the updater swaps a pointer, waits with synchronize_rcu(), then
 *   poisons the old element, and the reader checks each element it reads.
 * The last part runs on every build (it holds for the w + 1 encoding too).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <treercu/rcu.h>
#include "check.h"

#define LIVE 0x6c697665UL
#define POISON 0x6b6b6b6bUL

struct elem {
	_Atomic unsigned long magic;
};

static struct elem *_Atomic cur;
static _Atomic int stop, started;
static _Atomic unsigned long reads, bad;

static void check_encoding(void)
{
#if TRCU_READ_GEN
	struct trcu_reader *r = &trcu_reader_tls;
	unsigned long g;

	rcu_read_lock();
	g = __atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED);
	CHECK(g & 1);
	CHECK_EQ(__atomic_load_n(&r->watching, __ATOMIC_RELAXED), g);
	rcu_read_lock();                       /* nested: no store */
	CHECK_EQ(__atomic_load_n(&r->watching, __ATOMIC_RELAXED), g);
	rcu_read_unlock();
	CHECK_EQ(__atomic_load_n(&r->watching, __ATOMIC_RELAXED), g);
	rcu_read_unlock();
	CHECK_EQ(__atomic_load_n(&r->watching, __ATOMIC_RELAXED), g + 1);
	printf("test_read_gen: lock stores generation %lu\n", g);
#else
	printf("test_read_gen: this build keeps ->watching + 1 (TRCU_READ_GEN 0)\n");
#endif
}

/* A registered thread that sits outside sections: GPs must look at it. */
static void *idle_fn(void *arg)
{
	(void)arg;
	rcu_register_thread();
	atomic_store(&started, 1);
	while (!atomic_load(&stop))
		usleep(1000);
	rcu_unregister_thread();
	return NULL;
}

static void check_gen_advances(void)
{
	unsigned long g0 = __atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED);

	synchronize_rcu();
	synchronize_rcu();
	/* Always odd; on every build the GP start moves it. */
	CHECK(__atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED) & 1);
	CHECK(__atomic_load_n(&trcu_reader_gen, __ATOMIC_RELAXED) > g0);
}

/* Section after section, no pause between them. */
static void *reader_fn(void *arg)
{
	unsigned long n = 0, b = 0;

	(void)arg;
	rcu_register_thread();
	atomic_store(&started, 2);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		struct elem *e = rcu_dereference(cur);

		if (atomic_load_explicit(&e->magic, memory_order_relaxed) != LIVE)
			b++;
		rcu_read_unlock();
		n++;
	}
	atomic_store(&reads, n);
	atomic_store(&bad, b);
	rcu_unregister_thread();
	return NULL;
}

static struct elem *elem_new(void)
{
	struct elem *e = malloc(sizeof(*e));

	CHECK(e != NULL);
	atomic_store_explicit(&e->magic, LIVE, memory_order_relaxed);
	return e;
}

int main(void)
{
	pthread_t idle, rd;
	struct elem *old;
	int gps = 0;
	long end;

	rcu_register_thread();
	check_encoding();
	CHECK_EQ(pthread_create(&idle, NULL, idle_fn, NULL), 0);
	while (atomic_load(&started) != 1)
		usleep(100);
	check_gen_advances();

	atomic_store(&cur, elem_new());
	CHECK_EQ(pthread_create(&rd, NULL, reader_fn, NULL), 0);
	while (atomic_load(&started) != 2)
		usleep(100);
	/* 2 s of updates against the back-to-back reader; a GP that never
	 * ends hangs here (ctest's timeout), one that ends early lets the
	 * reader see POISON. */
	end = check_now_ms() + 2000;
	while (check_now_ms() < end) {
		old = rcu_xchg_pointer(&cur, elem_new());
		synchronize_rcu();
		atomic_store_explicit(&old->magic, POISON, memory_order_relaxed);
		free(old);
		gps++;
	}
	atomic_store(&stop, 1);
	pthread_join(rd, NULL);
	pthread_join(idle, NULL);
	printf("test_read_gen: %d grace periods against %lu back-to-back sections, %lu bad reads\n",
	       gps, atomic_load(&reads), atomic_load(&bad));
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK(gps > 10);
	CHECK(atomic_load(&reads) > 1000);
	free(atomic_load(&cur));
	rcu_unregister_thread();
	return 0;
}
