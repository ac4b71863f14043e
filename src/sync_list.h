/* SPDX-License-Identifier: MIT */
/* synchronize_rcu() waiters woken from the grace period (src/sync_list.c). */
#ifndef TREERCU_SR_NORMAL_H
#define TREERCU_SR_NORMAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <treercu/rcu.h>

/* A waiter (on the caller's stack) or a wait-head sentinel. */
struct sr_node {
	_Atomic(struct sr_node *) next;
	_Atomic uint32_t done;       /* futex word: 0 waiting, 2 asleep, 1 woken */
	bool is_wait_head;
};

void rcu_sr_normal_add_req(struct sr_node *n);
bool rcu_sr_wait_timeout(struct sr_node *n, long timeout_ns);
bool rcu_sr_done(struct sr_node *n);
bool rcu_sr_normal_gp_init(void);
void rcu_sr_normal_gp_cleanup(void);

/* Sleepers a GP cleanup completed, at most SR_WAKE_BATCH of them: taken
 * under gp_mutex, woken after its unlock (rcu_gp_unlock()). */
#define SR_WAKE_BATCH 64
int rcu_sr_take_asleep(_Atomic uint32_t **out);
void rcu_sr_wake_asleep(_Atomic uint32_t *const *w, int n);
void rcu_sr_stats(struct trcu_stats *st);

#endif
