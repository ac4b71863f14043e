/* SPDX-License-Identifier: MIT */
/*
 * A liburcu qsbr program: an online QSBR thread is inside a read-side
 * section everywhere, so a reference it holds must outlive every grace
 * period that starts while it stays online, whatever it calls meanwhile.
 * Here it floods call_rcu() (far more callbacks than treercu's
 * cb_max_pending) while holding a reference; another thread retires the
 * object with synchronize_rcu() and poisons it.  call_rcu() is no
 * quiescent state: the object must still be alive after the flood, and the
 * updater's synchronize_rcu() may return only once the thread goes offline.
 * Written against liburcu's API only (<urcu-qsbr.h>).
 */
#include <urcu-qsbr.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define FLOOD 200000

struct obj {
	long alive;
};

static struct obj *gp;
static int go, retired;

static void free_head(struct rcu_head *h)
{
	free(h);
}

static void *updater(void *arg)
{
	struct obj *n = malloc(sizeof(*n)), *o;

	(void)arg;
	if (!n)
		abort();
	n->alive = 1;
	rcu_register_thread();
	rcu_thread_offline();
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	o = rcu_xchg_pointer(&gp, n);
	synchronize_rcu();
	o->alive = 0;                  /* poison: no reader may hold it now */
	__atomic_store_n(&retired, 1, __ATOMIC_RELEASE);
	rcu_thread_online();
	rcu_unregister_thread();
	return o;
}

int main(void)
{
	struct obj *first = malloc(sizeof(*first)), *p;
	pthread_t t;
	void *old;
	int i, early = 0;

	if (!first)
		abort();
	first->alive = 1;
	gp = first;
	rcu_register_thread();         /* online: a read-side section until offline */
	p = rcu_dereference(gp);
	if (pthread_create(&t, NULL, updater, NULL))
		abort();
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < FLOOD; i++) {
		struct rcu_head *h = malloc(sizeof(*h));

		if (!h)
			abort();
		call_rcu(h, free_head);
	}
	early = __atomic_load_n(&retired, __ATOMIC_ACQUIRE);
	if (!p->alive || early) {
		fprintf(stderr, "FAIL: synchronize_rcu() ended while an online QSBR thread "
			"held a reference (call_rcu() counted as a quiescent state)\n");
		return 1;
	}
	rcu_thread_offline();
	if (pthread_join(t, &old))
		abort();
	rcu_thread_online();
	rcu_barrier();
	rcu_unregister_thread();
	free(old);
	free(gp);
	printf("urcu qsbr call_rcu flood: the reference outlived %d call_rcu() calls\n", FLOOD);
	return 0;
}
