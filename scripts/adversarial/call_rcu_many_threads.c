/* SPDX-License-Identifier: MIT */
/* N threads (64 KiB stacks) each queue 1000 call_rcu() callbacks, half
 * inside a read-side section, skipping what malloc() refuses; then
 * rcu_barrier().  Run under ulimit -v by scripts/adversarial/ulimit_call_rcu.sh:
 * the library must neither abort nor lose a callback. */
#include <treercu/rcu.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
struct obj { struct rcu_head rh; char pad[200]; };
static long freed;
static void free_obj(struct rcu_head *h) { free(h); __atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED); }
static long queued;
static void *thr(void *a) {
	(void)a;
	for (int i = 0; i < 1000; i++) {
		struct obj *o = malloc(sizeof *o);
		if (!o) continue;
		__atomic_fetch_add(&queued, 1, __ATOMIC_RELAXED);
		if (i % 2) { rcu_read_lock(); call_rcu(&o->rh, free_obj); rcu_read_unlock(); }
		else call_rcu(&o->rh, free_obj);
	}
	return NULL;
}
int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 64;
	pthread_t t[1024]; int ok = 0;
	pthread_attr_t at; pthread_attr_init(&at); pthread_attr_setstacksize(&at, 64*1024);
	for (int i = 0; i < n; i++) if (pthread_create(&t[ok], &at, thr, NULL) == 0) ok++;
	for (int i = 0; i < ok; i++) pthread_join(t[i], NULL);
	rcu_barrier();
	printf("threads=%d queued=%ld freed=%ld\n", ok, queued, freed);
	return queued == freed ? 0 : 1;
}
