/* SPDX-License-Identifier: MIT */
/* Bulk freeing (src/kvfree.c), a client of call_rcu(): for the top layer. */
#ifndef TREERCU_KVFREE_H
#define TREERCU_KVFREE_H

#include <stdbool.h>

void kvfree_init(void);          /* from the init gate */
void kvfree_drain_all(void);     /* seal every partly filled block now */
bool kvfree_idle(void);          /* every pointer handed over has been freed */
void kvfree_shutdown(void);      /* trcu_shutdown(), after the callback layer's */
void kvfree_stats(long *queued, long *freed, long *fallback);
/* fork() steps (src/fork.c). */
void kvfree_fork_prepare(void);
void kvfree_fork_parent(void);
void kvfree_fork_child(void);

#endif
