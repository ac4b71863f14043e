/* SPDX-License-Identifier: MIT */
/*
 * A program that uses treercu as an installed or vendored dependency
 * (scripts/check-install.sh builds it every supported way).  It also
 * defines a global and a function with the names of two of the library's
 * internals: neither may clash with the library, at a static or a dynamic
 * link, and the library must not write into the program's object.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <treercu/treercu.h>

struct conf {
	int v;
	struct rcu_head rh;
};

static struct conf *cur;
static _Atomic int freed;

struct { long x[64]; } rcu_state;                     /* the program's own */
int rcu_tree_build(int n);
int rcu_tree_build(int n) { return n + 1; }           /* the program's own */

static void conf_free(struct rcu_head *rh)
{
	free((struct conf *)((char *)rh - offsetof(struct conf, rh)));
	atomic_fetch_add(&freed, 1);
}

static void set_v(int v)
{
	struct conf *c = malloc(sizeof(*c)), *old;

	if (!c)
		exit(1);
	c->v = v;
	old = rcu_xchg_pointer(&cur, c);
	if (old)
		call_rcu(&old->rh, conf_free);
}

static int read_v(void)
{
	int v;

	rcu_read_lock();
	v = rcu_dereference(cur)->v;
	rcu_read_unlock();
	return v;
}

#define FAIL(...) do { fprintf(stderr, "consumer: " __VA_ARGS__); exit(1); } while (0)

int main(void)
{
	unsigned long gp0;

	for (int i = 0; i < 64; i++)
		rcu_state.x[i] = 0x5a5a5a5a + i;
	if (strcmp(trcu_version(), TREERCU_VERSION_STRING))
		FAIL("library version %s, headers %s\n", trcu_version(), TREERCU_VERSION_STRING);
	if (rcu_register_thread())
		FAIL("rcu_register_thread failed\n");
	gp0 = trcu_gp_seq();
	for (int v = 1; v <= 100; v++) {
		set_v(v);
		if (read_v() != v)
			FAIL("read %d after setting %d\n", read_v(), v);
	}
	synchronize_rcu();
	rcu_barrier();
	if (atomic_load(&freed) != 99)
		FAIL("%d callbacks ran after rcu_barrier(), expected 99\n", atomic_load(&freed));
	if (trcu_gp_seq() == gp0)
		FAIL("no grace period ended\n");
	for (int i = 0; i < 64; i++)
		if (rcu_state.x[i] != 0x5a5a5a5a + i)
			FAIL("the program's rcu_state was overwritten (x[%d] = %#lx)\n", i, rcu_state.x[i]);
	if (rcu_tree_build(1) != 2)
		FAIL("the program's rcu_tree_build() was replaced\n");
	free(cur);
	rcu_unregister_thread();
	printf("consumer ok: treercu %s, %d callbacks\n", trcu_version(), atomic_load(&freed));
	return 0;
}
