/* SPDX-License-Identifier: MIT */
/*
 * treercu's liburcu-compatible API: what every flavor header shares.
 *
 * These headers (installed under include/treercu/urcu/, reached through
 * `pkg-config treercu-urcu`) take the place of liburcu's flavor headers:
 * <urcu.h>, <urcu-qsbr.h>, <urcu-bp.h>, <urcu/urcu-memb.h>, ...,
 * <urcu/call-rcu.h>, <urcu/defer.h>, <urcu/flavor.h>, <urcu/pointer.h>,
 * <urcu/urcu-poll.h>.  Every flavor maps onto treercu's one RCU domain
 * through its public API (<treercu/rcu.h>, included here with
 * TREERCU_NO_SHORT_NAMES: liburcu's names are defined by these headers).
 * liburcu's other headers (uatomic, compiler, lists, rculfhash, queues,
 * stacks) are not replaced: found after this directory, they work as they
 * are, and liburcu-cds runs on treercu through the flavor structures.
 *
 * Out-of-line pieces live in libtreercu-urcu, every symbol prefixed
 * trcu_urcu_, so that a process may also hold the real liburcu (a library
 * linked against it) without a clash.  docs/from-liburcu.md has the table.
 */
#ifndef TREERCU_URCU_COMPAT_H
#define TREERCU_URCU_COMPAT_H

/* Compile-time test for "liburcu's API, provided by treercu". */
#define TREERCU_URCU 1

/*
 * <treercu/rcu.h> without its short names, unless it came first with them
 * (a C++ file that included <treercu/rcu.hpp> before these headers, say):
 * then its struct rcu_head is the callback head here too, and liburcu's
 * names replace those of its short names they share (urcu/pointer.h,
 * urcu/map/).  It defines trcu_head as rcu_head exactly then.
 */
#ifndef TREERCU_NO_SHORT_NAMES
#define TREERCU_NO_SHORT_NAMES 1
#endif
#include <treercu/rcu.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * liburcu's callback head: two words, laid out as treercu's struct
 * trcu_head (next, func), so that liburcu-cds (built against liburcu) and
 * treercu agree on it.  The member named next has liburcu's spelling
 * (a struct whose only member is the link) without pulling in
 * <urcu/wfcqueue.h>.  After <treercu/rcu.h> with its short names the
 * struct is that header's, the same two words (its next is the pointer
 * itself).
 */
#ifndef trcu_head
struct trcu_urcu_head_link {
	struct trcu_urcu_head_link *next;
};
struct rcu_head {
	struct trcu_urcu_head_link next;
	void (*func)(struct rcu_head *head);
};
#endif

/* Opaque: a handle that says where callbacks go (docs/from-liburcu.md). */
struct call_rcu_data;

/* liburcu's create_call_rcu_data() flags (accepted, see the docs). */
#define URCU_CALL_RCU_RT	(1U << 0)
#define URCU_CALL_RCU_RUNNING	(1U << 1)
#define URCU_CALL_RCU_STOP	(1U << 2)
#define URCU_CALL_RCU_STOPPED	(1U << 3)
#define URCU_CALL_RCU_PAUSE	(1U << 4)
#define URCU_CALL_RCU_PAUSED	(1U << 5)

/* Polled grace periods: a treercu cookie
 * (trcu_start_poll_synchronize_rcu()). */
struct urcu_gp_poll_state {
	unsigned long grace_period_id;
};

struct urcu_atfork;
struct rcu_flavor_struct;

/* ---- Shared by every flavor (libtreercu-urcu) ---- */
void trcu_urcu_read_lock(void);
void trcu_urcu_read_unlock(void);
int trcu_urcu_read_ongoing(void);
void trcu_urcu_nop(void);
void trcu_urcu_register_thread(void);
void trcu_urcu_qsbr_register_thread(void);
void trcu_urcu_qsbr_quiescent_state(void);
void trcu_urcu_qsbr_thread_offline(void);
void trcu_urcu_qsbr_thread_online(void);
void trcu_urcu_synchronize_rcu(void);

void trcu_urcu_call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head));
struct call_rcu_data *trcu_urcu_create_call_rcu_data(unsigned long flags, int cpu_affinity);
void trcu_urcu_call_rcu_data_free(struct call_rcu_data *crdp);
struct call_rcu_data *trcu_urcu_get_default_call_rcu_data(void);
struct call_rcu_data *trcu_urcu_get_cpu_call_rcu_data(int cpu);
struct call_rcu_data *trcu_urcu_get_thread_call_rcu_data(void);
struct call_rcu_data *trcu_urcu_get_call_rcu_data(void);
pthread_t trcu_urcu_get_call_rcu_thread(struct call_rcu_data *crdp);
void trcu_urcu_set_thread_call_rcu_data(struct call_rcu_data *crdp);
int trcu_urcu_set_cpu_call_rcu_data(int cpu, struct call_rcu_data *crdp);
int trcu_urcu_create_all_cpu_call_rcu_data(unsigned long flags);
void trcu_urcu_free_all_cpu_call_rcu_data(void);
void trcu_urcu_barrier(void);

void trcu_urcu_before_fork(void);
void trcu_urcu_after_fork_parent(void);
void trcu_urcu_after_fork_child(void);

void trcu_urcu_defer_rcu(void (*fct)(void *p), void *p);
int trcu_urcu_defer_register_thread(void);
void trcu_urcu_defer_unregister_thread(void);
void trcu_urcu_defer_barrier(void);

void trcu_urcu_register_rculfhash_atfork(struct urcu_atfork *atfork);
void trcu_urcu_unregister_rculfhash_atfork(struct urcu_atfork *atfork);

extern const struct rcu_flavor_struct trcu_urcu_memb_flavor;
extern const struct rcu_flavor_struct trcu_urcu_mb_flavor;
extern const struct rcu_flavor_struct trcu_urcu_signal_flavor;
extern const struct rcu_flavor_struct trcu_urcu_qsbr_flavor;
extern const struct rcu_flavor_struct trcu_urcu_bp_flavor;

static inline struct urcu_gp_poll_state trcu_urcu_start_poll(void)
{
	struct urcu_gp_poll_state s = { trcu_start_poll_synchronize_rcu() };

	return s;
}

static inline bool trcu_urcu_poll_state(struct urcu_gp_poll_state s)
{
	return trcu_poll_state_synchronize_rcu(s.grace_period_id);
}

#ifdef __cplusplus
}
#endif
#endif /* TREERCU_URCU_COMPAT_H */
