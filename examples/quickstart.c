#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <treercu/rcu.h>

struct conf {
	int v;
	struct rcu_head rh;
};

static struct conf *cur;                /* NULL until the first set_v() */

static int read_v(void)                 /* any thread, any number at once */
{
	struct conf *c;
	int v = 0;

	rcu_read_lock();                /* registers the thread on first use */
	c = rcu_dereference(cur);
	if (c)
		v = c->v;
	rcu_read_unlock();              /* c must not be used after this */
	return v;
}

static void conf_free(struct rcu_head *rh)
{
	free((char *)rh - offsetof(struct conf, rh));
}

static void set_v(int v)                /* one updater at a time */
{
	struct conf *n = malloc(sizeof(*n)), *old;

	if (!n)
		abort();
	n->v = v;
	old = rcu_xchg_pointer(&cur, n);
	if (old)                        /* or: synchronize_rcu(); free(old); or rcu_free(old); */
		call_rcu(&old->rh, conf_free);
}

static void *reader(void *arg)
{
	int last = 0, v;

	while ((v = read_v()) != 1000) {
		if (v < last)           /* values only move forward */
			abort();
		last = v;
	}
	return arg;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, reader, NULL);
	for (int i = 1; i <= 1000; i++)
		set_v(i);
	pthread_join(t, NULL);
	rcu_barrier();                  /* every conf_free() queued so far has run */
	free(rcu_xchg_pointer(&cur, NULL)); /* no reader left */
	puts("quickstart: ok");
	return 0;
}
