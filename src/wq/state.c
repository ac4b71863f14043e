/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: the subsystem's state and first use.  Owns wq_state
 * (the one state structure), the per-thread worker pointer and CPU hint,
 * first-use initialisation (tunables from the shared table, topology,
 * atexit and fork registration), the exit-time wait, the tunable setters
 * and the statistics.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wq_internal.h"

struct wq_state wq_state = {
	.tun = {
		.wq_idle_timeout_ms = WQ_DFL_IDLE_TIMEOUT_MS,
		.wq_stall_us = WQ_DFL_STALL_US,
		.wq_cache_shard_size = WQ_DFL_CACHE_SHARD_SIZE,
		.wq_affinity_scope = TRCU_WQ_AFFN_CACHE_SHARD,
	},
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.owner_lock = PTHREAD_MUTEX_INITIALIZER,
	.timer_lock = PTHREAD_MUTEX_INITIALIZER,
	.free_lock = PTHREAD_MUTEX_INITIALIZER,
};

/*
 * Per-thread state (the kernel's `current`): the worker this thread is, and
 * the CPU hint of trcu_wq_set_thread_cpu().  These are the only mutable
 * variables outside wq_state.
 */
__thread struct worker *current_worker;
__thread int thread_cpu_hint = -1;
char wq_tsan_works;

/* ---- Tunables and initialisation ----------------------------------------------- */

/*
 * The workqueue's rows of the one tunables table (src/tunables.c,
 * docs/tunables.md): the core reads their TREERCU_WQ_* variables with its
 * own, applies the profiles to them, refuses bad values with its messages,
 * and trcu_set_tunable()/trcu_get_tunable() reach them by name.  The values
 * live in wq_state (statically initialised to the defaults below).
 */
#define WQ_ROW(field_, lo_, hi_, def_)					\
	{ .name = #field_, .field = &wq_state.tun.field_, .lo = (lo_), .hi = (hi_),	\
	  .def = (def_), .kdef = (def_) }
static const struct tunable wq_tunables[] = {
	WQ_ROW(wq_idle_timeout_ms, 1, 3600000, WQ_DFL_IDLE_TIMEOUT_MS),
	WQ_ROW(wq_stall_us, 100, 10000000, WQ_DFL_STALL_US),
	WQ_ROW(wq_max_workers, 0, 4096, 0),
	WQ_ROW(wq_wake_under_lock, 0, 1, 0),
	WQ_ROW(wq_cache_shard_size, 1, WQ_MAX_CPUS, WQ_DFL_CACHE_SHARD_SIZE),
	{ .name = "wq_affinity_scope", .field = &wq_state.tun.wq_affinity_scope,
	  .names = affn_names, .lo = TRCU_WQ_AFFN_CPU, .hi = TRCU_WQ_AFFN_NR - 1,
	  .def = TRCU_WQ_AFFN_CACHE_SHARD, .kdef = TRCU_WQ_AFFN_CACHE_SHARD },
};
#undef WQ_ROW

/* At load, before any thread exists. */
__attribute__((constructor)) static void wq_tunables_register(void)
{
	tun_register(wq_tunables, sizeof(wq_tunables) / sizeof(wq_tunables[0]));
}

/* The environment's values are in force: the core's init reads them. */
static void tunables_init(void)
{
	rcu_init();
}

/* Work items queued or running on every live workqueue. */
static long wq_count_in_flight(void)
{
	long n = 0;

	pthread_mutex_lock(&wq_state.mutex);
	for (struct trcu_workqueue *wq = wq_state.wqs; wq; wq = wq->next) {
		for (int i = 0; i < wq->nr_pwqs; i++) {
			struct pool_workqueue *pwq = wq->pwqs[i];

			pthread_mutex_lock(&pwq->pool->lock);
			n += pwq->nr_in_flight[0] + pwq->nr_in_flight[1];
			pthread_mutex_unlock(&pwq->pool->lock);
		}
	}
	pthread_mutex_unlock(&wq_state.mutex);
	return n;
}

/*
 * At process exit: wait, at most exit_wait_ms, until no work item is queued
 * or running, so that the items queued before exit() run; exit() from a
 * work item cannot wait for itself.  What is skipped is counted in one
 * line on stderr.  Nothing is stopped, joined or freed (the RCU core's rule,
 * rcu_exit_handler()): the program's other threads may still queue, flush
 * or cancel on the handles they hold while exit runs, and the process is
 * ending.  An explicit trcu_wq_shutdown() does the full job.
 */
static void wq_atexit(void)
{
	long n, end_ns;

	rcu_init();
	if (current_worker) {
		/* The item that called exit() is counted in flight. */
		n = wq_count_in_flight() - 1;
		if (n > 0)
			sys_warn("exit: %ld work item%s not run: exit() was called from a work item",
				  n, n == 1 ? "" : "s");
		return;
	}
	end_ns = sys_now_ns() + TUN(exit_wait_ms) * 1000000L;
	while ((n = wq_count_in_flight()) > 0 && sys_now_ns() < end_ns) {
		sys_sleep_ns(1000000L);
		wq_fork_respawn_retry();   /* a fork() child's threads, if they failed */
	}
	if (n > 0)
		sys_warn("exit: %ld work item%s not waited for: still queued or running after "
			  "%ld ms (an item re-queueing itself, or other threads still queueing?)",
			  n, n == 1 ? "" : "s", TUN(exit_wait_ms));
}

/* First use: the RCU core (its init reads the tunables, and registers its
 * atexit handler first, so that the workqueue shuts down before it at exit),
 * topology, atexit (wq_state.mutex held).  The fork steps are registered at
 * load (fork_register_hooks(), src/rcu.c).  0, or
 * -ENOMEM with the workqueue subsystem still uninitialised. */
int wq_init_locked(void)
{
	tunables_init();
	if (topo_init_locked())   /* again after trcu_wq_set_topology() */
		return -ENOMEM;
	if (wq_state.inited)
		return 0;
	if (!wq_state.atexit_done) {
		wq_state.atexit_done = true;
		atexit(wq_atexit);
	}
	wq_state.inited = true;
	return 0;
}


void trcu_wq_set_wake_under_lock(bool on)
{
	tun_set("trcu_wq_set_wake_under_lock", "wq_wake_under_lock", on);
}

bool trcu_wq_get_wake_under_lock(void)
{
	tunables_init();
	return wake_under_lock();
}

/* Through the one table (its range, its refusal message naming @caller). */
static int set_tunable(const char *caller, const char *name, unsigned int v)
{
	if (tun_set(caller, name, (long)v))
		return -EINVAL;
	wake_manager();   /* re-plan the next pass with the new value */
	return 0;
}

int trcu_wq_set_idle_timeout_ms(unsigned int ms)
{
	return set_tunable("trcu_wq_set_idle_timeout_ms", "wq_idle_timeout_ms", ms);
}

int trcu_wq_set_stall_us(unsigned int us)
{
	return set_tunable("trcu_wq_set_stall_us", "wq_stall_us", us);
}

int trcu_wq_set_max_workers(unsigned int n)
{
	return set_tunable("trcu_wq_set_max_workers", "wq_max_workers", n);
}

int trcu_wq_set_default_scope(enum trcu_wq_affn scope)
{
	return tun_set("trcu_wq_set_default_scope", "wq_affinity_scope", (long)scope) ? -EINVAL : 0;
}

void wq_test_fail_thread_create(int n)
{
	atomic_store_explicit(&wq_state.fail_create, n, memory_order_relaxed);
}

void trcu_wq_get_stats(struct trcu_wq_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&wq_state.mutex);
	for (struct trcu_workqueue *wq = wq_state.wqs; wq; wq = wq->next) {
		st->nr_workqueues++;
		st->nr_rescuers += wq->rescuer != NULL;
	}
	st->nr_pools = (unsigned long)wq_state.nr_pools;
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];

		pthread_mutex_lock(&pool->lock);
		st->nr_workers += (unsigned long)pool->nr_workers;
		st->nr_idle += (unsigned long)pool->nr_idle;
		pthread_mutex_unlock(&pool->lock);
		st->queued += atomic_load_explicit(&pool->n_queued, memory_order_relaxed);
		st->executed += atomic_load_explicit(&pool->n_executed, memory_order_relaxed);
		st->rescued += atomic_load_explicit(&pool->n_rescued, memory_order_relaxed);
		st->wakeups += atomic_load_explicit(&pool->n_wakeups, memory_order_relaxed);
	}
	pthread_mutex_unlock(&wq_state.mutex);
	st->workers_created = atomic_load_explicit(&wq_state.n_created, memory_order_relaxed);
	st->workers_reaped = atomic_load_explicit(&wq_state.n_reaped, memory_order_relaxed);
	st->create_failures = atomic_load_explicit(&wq_state.n_create_fail, memory_order_relaxed);
	st->maydays = atomic_load_explicit(&wq_state.n_maydays, memory_order_relaxed);
	st->stalls = atomic_load_explicit(&wq_state.n_stalls, memory_order_relaxed);
	st->refused = atomic_load_explicit(&wq_state.n_refused, memory_order_relaxed);
}
