/* SPDX-License-Identifier: MIT */
/* Bulk freeing (src/kvfree.c), driven by the offload thread of group 0. */
#ifndef TREERCU_KVFREE_H
#define TREERCU_KVFREE_H

#include <stdbool.h>

bool kvfree_pass(unsigned long cur, bool flush, unsigned long *need, bool *more);
void kvfree_stats(long *queued, long *freed, long *fallback);
/* fork() steps (src/fork.c). */
void kvfree_fork_prepare(void);
void kvfree_fork_parent(void);
void kvfree_fork_child(void);

#endif
