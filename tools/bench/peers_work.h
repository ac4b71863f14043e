/* SPDX-License-Identifier: MIT */
/* What the peer workloads share (peers_retire.c, peers_hashmap.c, peers_workloads.c). */
#ifndef TREERCU_TOOL_PEERS_WORK_H
#define TREERCU_TOOL_PEERS_WORK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "peers.h"

static inline void work_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	if (pthread_create(t, NULL, fn, arg)) {
		fprintf(stderr, "peers: pthread_create failed\n");
		exit(1);
	}
}

/* The memory safety cap: pauses the updaters above cap unfreed objects,
 * resumes them below half of it.  Returns true while above the cap. */
static inline bool work_cap(int *pause, double unfreed, double cap)
{
	if (unfreed > cap) {
		__atomic_store_n(pause, 1, __ATOMIC_RELAXED);
		return true;
	}
	if (unfreed < cap / 2)
		__atomic_store_n(pause, 0, __ATOMIC_RELAXED);
	return false;
}

/* One run of one peer; false on a correctness failure (message printed). */
bool peers_retire_run(const struct peer_ops *p, double dur_s, double cap,
		      struct peers_retire_point *pt);
bool peers_hashmap_run(const struct peer_ops *p, double dur_s, double cap, int lookup_pct,
		       struct peers_hashmap_point *pt);

#endif
