/* SPDX-License-Identifier: MIT */
/*
 * Debug objects for rcu_head (build option TREERCU_DEBUG_OBJECTS): every
 * head between call_rcu() and its invocation is in a hash set, and a second
 * call_rcu() on it aborts, naming the head and both callbacks.  Compiled out
 * otherwise (src/nocb_internal.h's no-op inlines).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#ifdef TREERCU_DEBUG_OBJECTS
#include <dlfcn.h>
#endif

#include "nocb_internal.h"

#ifdef TREERCU_DEBUG_OBJECTS
/*
 * The kernel's debug-objects idea for rcu_head (debug_rcu_head_queue()):
 * every head between call_rcu() and its invocation is in a hash set, and
 * call_rcu() on a head already there aborts, naming the head and both
 * callbacks.  A head queued twice is relinked by the second push: the
 * first copy is lost and the list behind it cut off or turned into a cycle,
 * losing other threads' callbacks.  Build option TREERCU_DEBUG_OBJECTS; it
 * serialises call_rcu() and invocation on one lock (docs/decisions.md).
 */
#define DEBUG_OBJ_BUCKETS 4096

struct debug_obj {
	struct trcu_head *head;
	void (*func)(struct trcu_head *);
	struct debug_obj *next;
};

static pthread_mutex_t debug_obj_lock = PTHREAD_MUTEX_INITIALIZER;
static struct debug_obj *debug_obj_table[DEBUG_OBJ_BUCKETS];

static struct debug_obj **debug_obj_bucket(struct trcu_head *head)
{
	uintptr_t h = (uintptr_t)head;

	return &debug_obj_table[((h >> 4) ^ (h >> 16)) % DEBUG_OBJ_BUCKETS];
}

static const char *debug_obj_fn_name(void (*func)(struct trcu_head *))
{
	Dl_info info;

	/* Only an exact match: dladdr() otherwise names the nearest exported
	 * symbol, which may be another function. */
	if (dladdr((void *)(uintptr_t)func, &info) && info.dli_sname &&
	    info.dli_saddr == (void *)(uintptr_t)func)
		return info.dli_sname;
	return "?";
}

void debug_rcu_head_queue(struct trcu_head *head, void (*func)(struct trcu_head *))
{
	struct debug_obj **b = debug_obj_bucket(head), *o;

	pthread_mutex_lock(&debug_obj_lock);
	for (o = *b; o; o = o->next) {
		if (o->head == head)
			sys_die("call_rcu(): rcu_head %p queued again before its callback ran "
				 "(callback %p %s; queued first with %p %s): a head may be queued "
				 "once until its callback starts", (void *)head,
				 (void *)(uintptr_t)func, debug_obj_fn_name(func),
				 (void *)(uintptr_t)o->func, debug_obj_fn_name(o->func));
	}
	o = malloc(sizeof(*o));
	if (!o)
		sys_die("call_rcu(): out of memory for the debug-objects table");
	o->head = head;
	o->func = func;
	o->next = *b;
	*b = o;
	pthread_mutex_unlock(&debug_obj_lock);
}

/* The callback is about to run (or is dropped): the head may be queued again. */
void debug_rcu_head_unqueue(struct trcu_head *head)
{
	struct debug_obj **pp = debug_obj_bucket(head), *o;

	pthread_mutex_lock(&debug_obj_lock);
	for (; (o = *pp); pp = &o->next) {
		if (o->head == head) {
			*pp = o->next;
			free(o);
			break;
		}
	}
	pthread_mutex_unlock(&debug_obj_lock);
}
#endif
