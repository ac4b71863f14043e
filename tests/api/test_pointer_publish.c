/* SPDX-License-Identifier: MIT */
/*
 * The pointer macros, in liburcu's forms where the name is liburcu's:
 * - rcu_xchg_pointer(&p, v) stores v and returns the old pointer;
 * - rcu_cmpxchg_pointer(&p, old, new) stores new only when p held old and
 *   returns what p held;
 * - rcu_set_pointer(&p, v) and rcu_assign_pointer(p, v) store v;
 * - each evaluates its arguments once, accepts pointers to const and void
 *   pointers, and in C _Atomic pointers too (with gcc and clang);
 * - rcu_cmpxchg_pointer is atomic: threads pushing onto one stack with it
 *   lose no element;
 * - rcu_xchg_pointer publishes: a reader that finds the new pointer sees
 *   the pointee's initialisation.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

struct node {
	struct node *next;
	long v;
};

static void check_plain(void)
{
	struct node a = { NULL, 1 }, b = { NULL, 2 }, c = { NULL, 3 };
	struct node *p = &a, *slots[3] = { &a, &b, &c };
	const struct node *cp = &a;
	void *vp = &a;
	int i = 0;

	CHECK(rcu_xchg_pointer(&p, &b) == &a);
	CHECK(p == &b);
	CHECK(rcu_cmpxchg_pointer(&p, &a, &c) == &b);   /* p is not &a: no store */
	CHECK(p == &b);
	CHECK(rcu_cmpxchg_pointer(&p, &b, &c) == &b);   /* p is &b: stores &c */
	CHECK(p == &c);
	rcu_set_pointer(&p, &a);
	CHECK(p == &a);
	rcu_assign_pointer(p, NULL);
	CHECK(p == NULL);
	CHECK(rcu_dereference(p) == NULL);

	/* Arguments are evaluated once. */
	CHECK(rcu_xchg_pointer(&slots[i++], &c) == &a);
	CHECK_EQ(i, 1);
	CHECK(rcu_cmpxchg_pointer(&slots[i++], &b, &a) == &b);
	CHECK_EQ(i, 2);
	rcu_set_pointer(&slots[i++], &b);
	CHECK_EQ(i, 3);
	CHECK(slots[0] == &c && slots[1] == &a && slots[2] == &b);
	i = 0;
	CHECK(rcu_dereference(slots[i++]) == &c);
	CHECK_EQ(i, 1);

	/* Pointers to const, void pointers. */
	CHECK(rcu_xchg_pointer(&cp, &b) == &a);
	CHECK(rcu_cmpxchg_pointer(&cp, &b, &c) == &b);
	CHECK(rcu_dereference(cp)->v == 3);
	CHECK(rcu_xchg_pointer(&vp, &c) == &a);
	CHECK(rcu_cmpxchg_pointer(&vp, &c, NULL) == &c);
	CHECK(rcu_dereference(vp) == NULL);
}

/* _Atomic pointers: clang's __atomic builtins refuse them as they are. */
static struct node *_Atomic ap;

static void check_atomic(void)
{
	struct node a = { NULL, 1 }, b = { NULL, 2 };

	rcu_assign_pointer(ap, &a);
	CHECK(rcu_dereference(ap) == &a);
	CHECK(rcu_xchg_pointer(&ap, &b) == &a);
	CHECK(rcu_cmpxchg_pointer(&ap, &a, &a) == &b);
	CHECK(rcu_cmpxchg_pointer(&ap, &b, &a) == &b);
	CHECK(rcu_dereference(ap) == &a);
	rcu_set_pointer(&ap, NULL);
	CHECK(rcu_dereference(ap) == NULL);
}

/* Concurrent pushes with rcu_cmpxchg_pointer() lose nothing. */
#define PUSHERS 4
#define PUSHES  20000
static struct node *top;
static struct node pool[PUSHERS][PUSHES];

static void *pusher(void *arg)
{
	struct node *mine = pool[(long)arg];

	for (int k = 0; k < PUSHES; k++) {
		struct node *n = &mine[k], *seen = rcu_dereference(top), *was;

		n->v = (long)arg;
		for (;;) {
			n->next = seen;
			was = rcu_cmpxchg_pointer(&top, seen, n);
			if (was == seen)
				break;
			seen = was;        /* lost the race: retry on what is there */
		}
	}
	return NULL;
}

static void check_concurrent_push(void)
{
	pthread_t t[PUSHERS];
	long count[PUSHERS] = { 0 }, total = 0;

	for (long k = 0; k < PUSHERS; k++)
		CHECK(pthread_create(&t[k], NULL, pusher, (void *)k) == 0);
	for (int k = 0; k < PUSHERS; k++)
		CHECK(pthread_join(t[k], NULL) == 0);
	for (struct node *n = top; n; n = n->next) {
		CHECK(n->v >= 0 && n->v < PUSHERS);
		count[n->v]++;
		total++;
	}
	CHECK_EQ(total, (long)PUSHERS * PUSHES);
	for (int k = 0; k < PUSHERS; k++)
		CHECK_EQ(count[k], PUSHES);
}

/* A reader that finds a pointer published by rcu_xchg_pointer() sees the
 * pointee as it was initialised before the exchange. */
#define PUBLISHES 20000
struct cell {
	long a, b;
};
static struct cell *cur;
static int stop;

static void *reader(void *arg)
{
	long bad = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		rcu_read_lock();
		struct cell *c = rcu_dereference(cur);
		if (c && c->b != -c->a)
			bad++;
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	return (void *)bad;
}

static void check_publication(void)
{
	pthread_t r;
	void *bad;

	alarm(120);   /* hang guard: PUBLISHES grace periods */
	CHECK(pthread_create(&r, NULL, reader, NULL) == 0);
	for (long k = 1; k <= PUBLISHES; k++) {
		struct cell *c = malloc(sizeof(*c)), *old;

		CHECK(c);
		c->a = k;
		c->b = -k;
		old = rcu_xchg_pointer(&cur, c);
		if (old) {
			if (k % 64 == 0) {
				synchronize_rcu();
				free(old);
			} else {
				rcu_free(old);
			}
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	CHECK(pthread_join(r, &bad) == 0);
	CHECK_EQ((long)bad, 0);
	free(rcu_xchg_pointer(&cur, NULL));
	rcu_barrier();
	alarm(0);
}

int main(void)
{
	check_plain();
	check_atomic();
	check_concurrent_push();
	check_publication();
	return 0;
}
