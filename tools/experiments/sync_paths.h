/* SPDX-License-Identifier: MIT */
/*
 * The three synchronize_rcu() paths (tunable normal_wake_from_gp) the
 * wake-from-GP experiments compare:
 *   0  wakeme: the kernel's wait_rcu_gp(), a callback queued behind the
 *      caller's other callbacks wakes it;
 *   1  the lock-free waiter list, woken from the GP (sr_wake_max directly,
 *      the rest by a cleanup work item; the default on <= 16 CPUs);
 *   2  treercu's GP-end futex broadcast (the default above 16 CPUs).
 * The path in force when the run began is marked "(default)".
 */
#ifndef TREERCU_TOOL_SYNC_PATHS_H
#define TREERCU_TOOL_SYNC_PATHS_H

enum { SP_WAKEME, SP_LIST, SP_FUTEX, NSPATH };

extern const char *const sp_base[NSPATH];  /* for tables: "0 wakeme (wait_rcu_gp)" */
extern char sp_name[NSPATH][40];          /* for tables: the default marked */
extern int sp_default;                    /* normal_wake_from_gp when the run began */
extern const char *const sp_key[NSPATH];  /* for JSON */

/* Marks path def as the default in sp_name. */
void sp_names_init(long def);
/* Sets normal_wake_from_gp; -1 (with a message) when refused. */
int sp_apply(int path);
/* A tunable's value, -1 when unknown. */
long sp_tunable(const char *name);

#endif
