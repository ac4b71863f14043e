/* SPDX-License-Identifier: MIT */
/*
 * A user's file: includes every public header and expands every inline
 * function and macro of the API.  tests/api/header_matrix.sh compiles it as C
 * and as C++ with each compiler and standard, with and without
 * TREERCU_NO_SHORT_NAMES, and links and runs it: it exits 0 when the calls
 * did what they say.
 */
#include <treercu/treercu.h>
#include <treercu/workqueue.h>   /* also when the build left it out of treercu.h */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

struct obj {
	int v;
	struct trcu_head rh;
};

static struct obj *gp;
static int fails;

#define EXPECT(c) \
	do { \
		if (!(c)) { \
			fprintf(stderr, "use: %s:%d: expected %s\n", __FILE__, __LINE__, #c); \
			fails++; \
		} \
	} while (0)

static struct obj *obj_new(int v)
{
	struct obj *o = (struct obj *)calloc(1, sizeof(*o));

	if (!o)
		abort();
	o->v = v;
	return o;
}

static void obj_free_cb(struct trcu_head *h)
{
	free((char *)h - offsetof(struct obj, rh));
}

static int read_v(void)
{
	int v;

	trcu_read_lock();
	EXPECT(trcu_read_lock_held());
	v = trcu_dereference(gp)->v;
	trcu_read_unlock();
	return v;
}

/* The prefixed names: always there. */
static void use_prefixed(void)
{
	struct obj *a = obj_new(1), *b = obj_new(2), *c = obj_new(3), *old;
	struct trcu_gp_oldstate s1, s2;
	unsigned long cookie;

	trcu_assign_pointer(gp, a);
	EXPECT(read_v() == 1);
	old = trcu_xchg_pointer(&gp, b);
	EXPECT(old == a);
	EXPECT(read_v() == 2);
	EXPECT(trcu_cmpxchg_pointer(&gp, a, c) == b);   /* not a: no store */
	EXPECT(read_v() == 2);
	EXPECT(trcu_cmpxchg_pointer(&gp, b, c) == b);   /* b: stores c */
	EXPECT(read_v() == 3);
	trcu_set_pointer(&gp, a);
	EXPECT(read_v() == 1);
	trcu_synchronize_rcu();
	free(b);
	/* The kernel's other accessors. */
	EXPECT(trcu_access_pointer(gp) == a);
	EXPECT(trcu_dereference_protected(gp, a != NULL) == a);
	EXPECT(trcu_dereference_check(gp, 1) == a && trcu_dereference_raw(gp) == a);
	EXPECT(trcu_replace_pointer(gp, c, 1) == a);
	EXPECT(read_v() == 3);
	TRCU_INIT_POINTER(gp, a);
	EXPECT(trcu_pointer_handoff(trcu_access_pointer(gp)) == a);
	trcu_synchronize_rcu();
	free(c);
	cookie = trcu_start_poll_synchronize_rcu();
	trcu_cond_synchronize_rcu(cookie);
	EXPECT(trcu_poll_state_synchronize_rcu(cookie));
	trcu_get_state_synchronize_rcu_full(&s1);
	trcu_get_state_synchronize_rcu_full(&s2);
	EXPECT(trcu_same_state_synchronize_rcu_full(&s1, &s2));
	old = trcu_xchg_pointer(&gp, (struct obj *)NULL);
	trcu_call_rcu(&old->rh, obj_free_cb);
	trcu_rcu_barrier();
	/* Out of a section on a non-QSBR thread it would abort (misuse):
	 * only expanded here. */
	{
		void (*qs)(void) = trcu_quiescent_state;
		EXPECT(qs != NULL);
	}
}

static int work_ran;
static void work_fn(struct trcu_work *w)
{
	(void)w;
	__atomic_store_n(&work_ran, 1, __ATOMIC_RELEASE);
}
static TRCU_DECLARE_WORK(static_work, work_fn);
static TRCU_DECLARE_DELAYED_WORK(static_dwork, work_fn);

static void use_workqueue(void)
{
	struct trcu_delayed_work dw;

	trcu_init_delayed_work(&dw, work_fn);
	EXPECT(trcu_to_delayed_work(&dw.work) == &dw);
	EXPECT(!trcu_delayed_work_pending(&dw));
	EXPECT(!trcu_delayed_work_pending(&static_dwork));
	EXPECT(!trcu_work_pending(&static_work));
	EXPECT(trcu_schedule_work(&static_work));
	trcu_flush_work(&static_work);
	EXPECT(__atomic_load_n(&work_ran, __ATOMIC_ACQUIRE) == 1);
	EXPECT(!trcu_work_pending(&static_work));
	trcu_wq_shutdown();
}

#ifndef TREERCU_NO_SHORT_NAMES
/* The short names: functions are values, struct rcu_head is the type. */
struct sobj {
	int v;
	struct rcu_head rcu_head;          /* a member named like the type */
};
static struct sobj *sp;

static void sobj_free_cb(struct rcu_head *h)
{
	free((char *)h - offsetof(struct sobj, rcu_head));
}

static void use_short(void)
{
	void (*cr)(struct rcu_head *, void (*)(struct rcu_head *)) = call_rcu;
	void (*sync)(void) = synchronize_rcu;
	void (*lock)(void) = rcu_read_lock;
	void (*unlock)(void) = rcu_read_unlock;
	struct sobj *a = (struct sobj *)calloc(1, sizeof(*a));
	struct sobj *b = (struct sobj *)calloc(1, sizeof(*b));
	struct sobj *old;
	struct trcu_head *th = &a->rcu_head;    /* one type, two spellings */
	struct rcu_gp_oldstate st;

	if (!a || !b)
		abort();
	EXPECT(th == &a->rcu_head);
	a->v = 10;
	b->v = 20;
	rcu_assign_pointer(sp, a);
	lock();
	EXPECT(rcu_read_ongoing());
	EXPECT(rcu_dereference(sp)->v == 10);
	unlock();
	EXPECT(!rcu_read_ongoing());
	old = rcu_xchg_pointer(&sp, b);
	EXPECT(old == a);
	EXPECT(rcu_cmpxchg_pointer(&sp, a, a) == b);
	rcu_set_pointer(&sp, b);
	sync();
	get_state_synchronize_rcu_full(&st);
	EXPECT(RCU_GET_STATE_COMPLETED == TRCU_GET_STATE_COMPLETED);
	cr(&old->rcu_head, sobj_free_cb);
	old = rcu_xchg_pointer(&sp, (struct sobj *)NULL);
	call_rcu(&old->rcu_head, sobj_free_cb);
	rcu_barrier();
}
#endif

#ifndef __cplusplus
/* C: _Atomic pointers go through the same macros. */
static struct obj *_Atomic agp;

static void use_atomic(void)
{
	struct obj *a = obj_new(7), *b = obj_new(8), *old;

	trcu_assign_pointer(agp, a);
	trcu_read_lock();
	EXPECT(trcu_dereference(agp)->v == 7);
	trcu_read_unlock();
	old = trcu_xchg_pointer(&agp, b);
	EXPECT(old == a);
	EXPECT(trcu_cmpxchg_pointer(&agp, a, a) == b);
	trcu_set_pointer(&agp, a);
	EXPECT(trcu_dereference(agp) == a);
	trcu_synchronize_rcu();
	free(a);
	free(b);
}
#endif

int main(void)
{
	if (trcu_register_thread() != 0)
		return 2;
	use_prefixed();
#ifndef TREERCU_NO_SHORT_NAMES
	use_short();
#endif
#ifndef __cplusplus
	use_atomic();
#endif
	use_workqueue();
	trcu_unregister_thread();
	if (fails)
		return 1;
	puts("use: ok");
	return 0;
}
