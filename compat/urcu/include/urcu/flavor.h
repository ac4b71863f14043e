/* SPDX-License-Identifier: MIT */
/*
 * liburcu's flavor structure, member for member in liburcu's order (so that
 * liburcu-cds, compiled against liburcu, reads ours), and its fork hook
 * registration.  The structures themselves (urcu_memb_flavor, ...) are in
 * libtreercu-urcu; rcu_flavor names the flavor that <urcu.h> & co. selected.
 */
#ifndef _URCU_FLAVOR_H
#define _URCU_FLAVOR_H

#include <urcu/treercu-compat.h>

#ifdef __cplusplus
extern "C" {
#endif

struct urcu_atfork {
	void (*before_fork)(void *priv);
	void (*after_fork_parent)(void *priv);
	void (*after_fork_child)(void *priv);
	void *priv;
};

struct rcu_flavor_struct {
	void (*read_lock)(void);
	void (*read_unlock)(void);
	int (*read_ongoing)(void);
	void (*read_quiescent_state)(void);
	void (*update_call_rcu)(struct rcu_head *head,
				void (*func)(struct rcu_head *head));
	void (*update_synchronize_rcu)(void);
	void (*update_defer_rcu)(void (*fct)(void *p), void *p);
	void (*thread_offline)(void);
	void (*thread_online)(void);
	void (*register_thread)(void);
	void (*unregister_thread)(void);
	void (*barrier)(void);
	void (*register_rculfhash_atfork)(struct urcu_atfork *atfork);
	void (*unregister_rculfhash_atfork)(struct urcu_atfork *atfork);
};

#ifdef __cplusplus
}
#endif
#endif /* _URCU_FLAVOR_H */
