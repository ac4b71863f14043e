/* SPDX-License-Identifier: MIT */
/*
 * A liburcu program built with ThreadSanitizer, linked with treercu's
 * liburcu API as installed (built without it), sees no data race in
 * synchronize_rcu(), call_rcu() or defer_rcu(): defer_rcu()'s blocks are
 * sealed by a callback on another thread, a hand-off ThreadSanitizer cannot
 * see unless the library names it (src/tsan.h).  One reader goes through
 * the flavor structure (rcu_flavor.read_lock/read_unlock, liburcu-cds's
 * way), whose functions live in the library.  Each retired object is
 * written (a poison) by whatever frees it.
 */
#define _LGPL_SOURCE
#include <urcu.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct obj {
	long v;
	struct rcu_head rh;
};

static struct obj *cur;
static int stop;

static void *reader(void *arg)
{
	const struct rcu_flavor_struct *f = arg;
	long n = 0;

	rcu_register_thread();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (f)
			f->read_lock();
		else
			rcu_read_lock();
		struct obj *o = rcu_dereference(cur);
		if (o)
			n += o->v;
		if (f)
			f->read_unlock();
		else
			rcu_read_unlock();
	}
	rcu_unregister_thread();
	return (void *)n;
}

static void free_cb(struct rcu_head *h)
{
	struct obj *o = caa_container_of(h, struct obj, rh);

	o->v = -1;
	free(o);
}

static void defer_free(void *p)
{
	((struct obj *)p)->v = -2;
	free(p);
}

int main(void)
{
	pthread_t t[2];

	rcu_register_thread();
	pthread_create(&t[0], NULL, reader, NULL);
	pthread_create(&t[1], NULL, reader, (void *)&rcu_flavor);
	for (long i = 0; i < 3000; i++) {
		struct obj *o = malloc(sizeof(*o)), *old;

		if (!o)
			return 1;
		o->v = i;
		old = rcu_xchg_pointer(&cur, o);
		if (!old)
			continue;
		switch (i % 3) {
		case 0:
			synchronize_rcu();
			old->v = -3;
			free(old);
			break;
		case 1:
			call_rcu(&old->rh, free_cb);
			break;
		default:
			defer_rcu(defer_free, old);
			break;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	rcu_defer_barrier();
	rcu_barrier();
	free(rcu_xchg_pointer(&cur, NULL));
	rcu_unregister_thread();
	printf("ok: 3000 objects retired three ways\n");
	return 0;
}
