/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: the Linux kernel's concurrency-managed workqueue
 * (kernel/workqueue.c) for userspace programs.  docs/workqueue.md describes
 * the design; this header is the whole public interface.
 *
 * A work item (struct trcu_work) is a function to run later on a worker
 * thread.  Workqueues are front ends: the threads live in shared pools, one
 * pair of pools (normal, high priority) per CPU for per-CPU workqueues and
 * one pool per affinity-scope pod (and priority) for unbound workqueues.
 * Workqueues with identical attributes share pools.
 *
 * Guarantees (as in the kernel):
 *  - a work item never runs concurrently with itself on one workqueue;
 *  - queueing a pending item is a no-op and returns false;
 *  - an item may re-queue itself from its own function;
 *  - trcu_flush_work() returns only after every instance queued before the
 *    call has finished executing;
 *  - trcu_cancel_work_sync() returns only when the item is neither pending
 *    nor running (unless the caller is the item's own function, see below),
 *    even if the item re-queues itself meanwhile; as in the kernel this
 *    holds as long as nobody else queues the item concurrently;
 *  - trcu_flush_workqueue() returns after every item queued before the call
 *    has finished; trcu_drain_workqueue() also waits for the items those
 *    items queue (chained work), refusing new work from outside meanwhile.
 *
 * Bad input never crashes: NULL pointers, a destroyed workqueue, an
 * out-of-range CPU, calls that would wait for themselves are refused with a
 * false / negative-errno return, errno set, and a one-line message on stderr.
 * Only misuse that cannot be made safe (a pointer that is not a workqueue,
 * trcu_wq_shutdown() called from a worker) aborts, with a message naming it.
 * To tell "already pending" (false, errno untouched) from an error (false,
 * errno set), set errno to 0 before the call.
 *
 * No thread is started before the first workqueue is allocated.  Call
 * trcu_wq_shutdown() to drain and destroy every workqueue, join every thread
 * and free everything.  Process exit (atexit, registered on first use)
 * waits, at most exit_wait_ms, until no work item is queued or running
 * (from a work item it waits for nothing) and says how many it left; it
 * stops, joins and frees nothing, so the program's other threads may keep
 * using their handles while exit runs.
 * Handles from before a shutdown must not be used after it.
 */
#ifndef TREERCU_WORKQUEUE_H
#define TREERCU_WORKQUEUE_H

#ifndef __cplusplus
#include <stdbool.h>
#endif
#include <stddef.h>
#include <stdint.h>

#include <treercu/options.h>  /* TRCU_API, TREERCU_WORKQUEUE */

#ifdef __cplusplus
extern "C" {
#endif

struct trcu_work;
struct trcu_workqueue;
typedef void (*trcu_work_func_t)(struct trcu_work *work);

/* Doubly linked list node (library-private use). */
struct trcu_wq_link {
	struct trcu_wq_link *next, *prev;
};

/*
 * A work item.  Embed it in your own structure and recover the container
 * with offsetof in the function.  Initialise with TRCU_INIT_WORK() or
 * TRCU_WORK_INITIALIZER(); everything under priv belongs to the library.
 * The item must stay allocated while it is pending; the function may free
 * it (the library does not touch the item after calling its function).
 * A function that returns inside a read-side section (rcu_read_lock()
 * without the unlock) is reported on stderr, naming the item, the function
 * and the nesting depth, and the section is closed, as the kernel reports
 * a work function that leaked an RCU lock.
 * priv.data is a plain field accessed only with the compiler's __atomic
 * builtins, so that the header is the same in C and C++.
 */
struct trcu_work {
	trcu_work_func_t func;
	struct {
		uintptr_t data;            /* PENDING and state bits | pool */
		struct trcu_wq_link entry; /* on a worklist while queued */
		void *pwq;                 /* pool_workqueue while queued */
	} priv;
};

/* A work item queued after a delay (microseconds). */
struct trcu_delayed_work {
	struct trcu_work work;
	struct {
		uint64_t expires_ns;       /* CLOCK_MONOTONIC */
		struct trcu_workqueue *wq; /* target when the timer fires */
		int cpu;                   /* target CPU, or -1 */
		int timer_idx;             /* slot in the timer heap, -1 if unarmed */
	} priv;
};

/* Positional (not designated) so that C++17 accepts them too.  The fields
 * are { func, { data, entry, pwq } } and { work, { expires_ns, wq, cpu,
 * timer_idx } }. */
#define TRCU_WORK_INITIALIZER(fn) \
	{ (fn), { 0, { TRCU_NIL_, TRCU_NIL_ }, TRCU_NIL_ } }
#define TRCU_DELAYED_WORK_INITIALIZER(fn) \
	{ TRCU_WORK_INITIALIZER(fn), { 0, TRCU_NIL_, -1, -1 } }
#define TRCU_DECLARE_WORK(name, fn) struct trcu_work name = TRCU_WORK_INITIALIZER(fn)
#define TRCU_DECLARE_DELAYED_WORK(name, fn) \
	struct trcu_delayed_work name = TRCU_DELAYED_WORK_INITIALIZER(fn)

static inline void trcu_init_work(struct trcu_work *w, trcu_work_func_t fn)
{
	w->func = fn;
	/* Relaxed: the item is not yet visible to any other thread. */
	__atomic_store_n(&w->priv.data, 0, __ATOMIC_RELAXED);
	w->priv.entry.next = w->priv.entry.prev = &w->priv.entry;
	w->priv.pwq = TRCU_NIL_;
}

static inline void trcu_init_delayed_work(struct trcu_delayed_work *dw, trcu_work_func_t fn)
{
	trcu_init_work(&dw->work, fn);
	dw->priv.expires_ns = 0;
	dw->priv.wq = TRCU_NIL_;
	dw->priv.cpu = -1;
	dw->priv.timer_idx = -1;
}

#define TRCU_INIT_WORK(w, fn) trcu_init_work((w), (fn))
#define TRCU_INIT_DELAYED_WORK(dw, fn) trcu_init_delayed_work((dw), (fn))

/* The delayed work that contains @work (for use in a delayed work's function). */
static inline struct trcu_delayed_work *trcu_to_delayed_work(struct trcu_work *work)
{
	/* Through void *: the member's offset keeps the object's alignment. */
	return TRCU_CAST_(struct trcu_delayed_work *,
			     TRCU_CAST_(void *, TRCU_BYTES_(work) -
						   offsetof(struct trcu_delayed_work, work)));
}

/* Bit 0 of priv.data: set while the item is pending (queued or timer armed). */
#define TRCU_WORK_PENDING_BIT TRCU_CAST_(uintptr_t, 1)

/* Relaxed: a snapshot that may be stale by the time it is returned, as the
 * kernel's work_pending(); nothing is ordered by it. */
static inline bool trcu_work_pending(const struct trcu_work *w)
{
	return (__atomic_load_n(&w->priv.data, __ATOMIC_RELAXED) & TRCU_WORK_PENDING_BIT) != 0;
}

static inline bool trcu_delayed_work_pending(const struct trcu_delayed_work *dw)
{
	return trcu_work_pending(&dw->work);
}

/* ---- Workqueues ------------------------------------------------------- */

/* Flags for trcu_alloc_workqueue(). */
#define TRCU_WQ_UNBOUND     (1u << 1)  /* served by per-pod pools, not per-CPU ones */
#define TRCU_WQ_HIGHPRI     (1u << 4)  /* separate high-priority pools */
#define TRCU_WQ_MEM_RECLAIM (1u << 3)  /* own rescuer thread: forward progress
					  even when no thread can be created */
#define TRCU_WQ_FLAGS_MASK  (TRCU_WQ_UNBOUND | TRCU_WQ_HIGHPRI | TRCU_WQ_MEM_RECLAIM)

#define TRCU_WQ_DFL_ACTIVE  256   /* max_active 0 means this */
#define TRCU_WQ_MAX_ACTIVE  2048  /* largest accepted max_active */

/* Affinity scopes for unbound workqueues (the kernel's wq_affn_scope). */
enum trcu_wq_affn {
	TRCU_WQ_AFFN_DFL = 0,     /* the default: TREERCU_WQ_AFFINITY_SCOPE or cache_shard */
	TRCU_WQ_AFFN_CPU,         /* one pod per CPU */
	TRCU_WQ_AFFN_SMT,         /* one pod per core (SMT siblings) */
	TRCU_WQ_AFFN_CACHE,       /* one pod per last-level cache */
	TRCU_WQ_AFFN_CACHE_SHARD, /* LLCs split into shards of ~shard cores */
	TRCU_WQ_AFFN_NUMA,        /* one pod per NUMA node */
	TRCU_WQ_AFFN_SYSTEM,      /* one pod for the whole machine */
	TRCU_WQ_AFFN_NR
};

/*
 * trcu_alloc_workqueue: a new workqueue, or NULL with errno set (EINVAL for
 * bad flags / max_active, ENOMEM, EAGAIN when a needed thread cannot be
 * created).  max_active: how many items of this workqueue may run at once
 * per pool_workqueue (per CPU for per-CPU, per pod for unbound); 0 means
 * TRCU_WQ_DFL_ACTIVE.  The name is copied (up to 31 characters).
 */
TRCU_API struct trcu_workqueue *trcu_alloc_workqueue(const char *name, unsigned int flags, int max_active);
/* Same, with an explicit affinity scope (unbound workqueues only). */
TRCU_API struct trcu_workqueue *trcu_alloc_workqueue_scope(const char *name, unsigned int flags,
						  int max_active, enum trcu_wq_affn scope);
/* Unbound, one pod, max_active 1: items run one at a time in queueing order. */
TRCU_API struct trcu_workqueue *trcu_alloc_ordered_workqueue(const char *name, unsigned int flags);
/*
 * Drain and free.  Returns 0, -EINVAL (NULL or already destroyed) or
 * -EDEADLK (called from one of the workqueue's own work items).  Delayed
 * items whose timers are still armed are cancelled, with a warning.  A
 * concurrent or later trcu_queue_work() on the destroyed workqueue is
 * refused (false, errno ESHUTDOWN); the small handle stays allocated until
 * trcu_wq_shutdown() for that purpose.
 */
TRCU_API int trcu_destroy_workqueue(struct trcu_workqueue *wq);

/* Shared workqueues, created on first use (per-CPU and unbound). */
TRCU_API struct trcu_workqueue *trcu_system_wq(void);
TRCU_API struct trcu_workqueue *trcu_system_unbound_wq(void);

/* ---- Queueing --------------------------------------------------------- */

/*
 * Queue @work on @wq: true if queued, false if it was already pending (a
 * no-op) or on error (errno: EINVAL bad argument, ESHUTDOWN destroyed or
 * draining workqueue).  The CPU is the caller's (trcu_wq_set_thread_cpu()
 * hint, else sched_getcpu()); unbound workqueues use that CPU's pod.
 */
TRCU_API bool trcu_queue_work(struct trcu_workqueue *wq, struct trcu_work *work);
/* On @cpu's pool (per-CPU) or the pod containing @cpu (unbound). */
TRCU_API bool trcu_queue_work_on(int cpu, struct trcu_workqueue *wq, struct trcu_work *work);
/* On a CPU of NUMA node @node (the caller's CPU if it is in the node). */
TRCU_API bool trcu_queue_work_node(int node, struct trcu_workqueue *wq, struct trcu_work *work);
static inline bool trcu_schedule_work(struct trcu_work *work)
{
	return trcu_queue_work(trcu_system_wq(), work);
}

/* Queue after @delay_us microseconds (0: now).  False if already pending,
 * or on error (errno as trcu_queue_work(); EINVAL also for a delay over a
 * year, 365 days = 31,536,000,000,000 us, with a message; ENOMEM: no memory
 * for the timer; the item is left as it was). */
TRCU_API bool trcu_queue_delayed_work(struct trcu_workqueue *wq, struct trcu_delayed_work *dwork,
			     uint64_t delay_us);
TRCU_API bool trcu_queue_delayed_work_on(int cpu, struct trcu_workqueue *wq,
				struct trcu_delayed_work *dwork, uint64_t delay_us);
/*
 * Queue, or change the delay of a pending item, to @delay_us from now.
 * Returns true if it was pending before (its timer or queueing was replaced),
 * false if it was idle (and is now queued) or on error (errno as
 * trcu_queue_delayed_work(); a delay over a year and ENOMEM leave the item
 * as it was).
 */
TRCU_API bool trcu_mod_delayed_work(struct trcu_workqueue *wq, struct trcu_delayed_work *dwork,
			   uint64_t delay_us);
TRCU_API bool trcu_mod_delayed_work_on(int cpu, struct trcu_workqueue *wq,
			      struct trcu_delayed_work *dwork, uint64_t delay_us);

/* ---- Waiting and cancelling ------------------------------------------- */

/* Wait for the last queued instance to finish; false if it was idle (or
 * called from the item's own function: it cannot wait for itself; errno
 * EDEADLK, and a message on stderr once per process). */
TRCU_API bool trcu_flush_work(struct trcu_work *work);
/* Fire an armed timer now (or wait while the timer thread fires it), then
 * trcu_flush_work(). */
TRCU_API bool trcu_flush_delayed_work(struct trcu_delayed_work *dwork);
/* Every item queued before the call has finished.  0, -EINVAL, -EDEADLK. */
TRCU_API int trcu_flush_workqueue(struct trcu_workqueue *wq);
/* Flush repeatedly until empty; meanwhile only chained queueing (from the
 * workqueue's own items) is accepted.  0, -EINVAL, -EDEADLK. */
TRCU_API int trcu_drain_workqueue(struct trcu_workqueue *wq);

/* Remove a pending instance; true if there was one.  Does not wait. */
TRCU_API bool trcu_cancel_work(struct trcu_work *work);
TRCU_API bool trcu_cancel_delayed_work(struct trcu_delayed_work *dwork);
/*
 * Remove a pending instance and wait for a running one; on return the item
 * is neither pending nor running.  Queueing attempts while the call holds
 * the item return false; this covers the item re-queueing itself from its
 * function (an instance it queued earlier is removed).  An attempt by
 * another thread that races with the return (it lands after the call
 * released PENDING) queues the item again, as in the kernel ("as long as
 * there aren't racing enqueues"): keep other queuers off the item around
 * the call if you rely on the post-condition.  Called from the item's own
 * function it removes the pending instance, does not wait (it would wait
 * for itself), says so on stderr (once per process for each of the two
 * functions) and returns whether an instance was pending.
 */
TRCU_API bool trcu_cancel_work_sync(struct trcu_work *work);
TRCU_API bool trcu_cancel_delayed_work_sync(struct trcu_delayed_work *dwork);

/* The work item the calling thread is executing, or NULL. */
TRCU_API struct trcu_work *trcu_current_work(void);

/* ---- CPUs, topology, tunables ----------------------------------------- */

/*
 * The calling thread's CPU as the workqueue sees it (used by
 * trcu_queue_work()): @cpu in [0, trcu_wq_nr_cpus()), or -1 to go back to
 * sched_getcpu().  With a topology override the machine is virtual, so a
 * benchmark producer can say which virtual CPU it stands for.  0, -EINVAL
 * or -ENOMEM.
 */
TRCU_API int trcu_wq_set_thread_cpu(int cpu);

/*
 * Topology.  By default read from /sys/devices/system/cpu.  The environment
 * variable TREERCU_WQ_TOPOLOGY (read at first use) or trcu_wq_set_topology()
 * describes another machine instead:
 *
 *     cpus=N[,smt=S][,llc=L][,numa=M][,shard=K]
 *
 * N CPUs (1..1024) numbered 0..N-1; S SMT threads per core (default 1, must
 * divide N); L CPUs per last-level cache (default N, a multiple of S that
 * divides N); M NUMA nodes (default 1, must divide the number of LLCs);
 * K cache_shard size in cores (default 8 or TREERCU_WQ_CACHE_SHARD_SIZE).
 * Consecutive CPUs are SMT siblings, LLCs and nodes are consecutive ranges.
 * "real" (or NULL) selects the machine's own topology.
 * trcu_wq_set_topology() returns 0, -EINVAL (message names the problem and
 * the accepted form), -EBUSY (a workqueue exists; call it first, or after
 * trcu_wq_shutdown()) or -ENOMEM.  The topology is built at first use; the
 * calls below that need it return -ENOMEM when it cannot be allocated
 * (the first trcu_alloc_workqueue() returns NULL with errno ENOMEM), and the
 * next call tries again.
 */
TRCU_API int trcu_wq_set_topology(const char *spec);
/* One line: "real: 2 cpus, smt 1, ..." or "override cpus=8,...". */
TRCU_API int trcu_wq_topology_describe(char *buf, size_t len);
TRCU_API int trcu_wq_nr_cpus(void);
TRCU_API int trcu_wq_nr_pods(enum trcu_wq_affn scope);
TRCU_API int trcu_wq_cpu_pod(enum trcu_wq_affn scope, int cpu);
TRCU_API const char *trcu_wq_affn_name(enum trcu_wq_affn scope);
/* "cpu", "smt", "cache", "cache_shard", "numa", "system", "default";
 * -EINVAL for anything else. */
TRCU_API int trcu_wq_affn_from_name(const char *name);

/*
 * Wake-up placement.  false (default): the worker to wake is picked under
 * the pool lock (kick_pool_pick()) and woken after the lock is dropped.
 * true: woken while the lock is held, for comparison.  Environment:
 * TREERCU_WQ_WAKE_UNDER_LOCK=0|1.  Takes effect for the next wake-up.
 */
TRCU_API void trcu_wq_set_wake_under_lock(bool on);
TRCU_API bool trcu_wq_get_wake_under_lock(void);

/*
 * Tunables: rows of the library's tunables table (docs/tunables.md), also
 * reachable as trcu_set_tunable("wq_stall_us", ...) and so on; environment
 * variable read at first use / setter; 0 or -EINVAL (with the table's message):
 *  idle timeout    TREERCU_WQ_IDLE_TIMEOUT_MS  idle workers above the reserve
 *                  are reaped after this long (default 10000, 1..3600000)
 *  stall threshold TREERCU_WQ_STALL_US  a pool with pending work whose
 *                  workers started nothing for this long gets another worker
 *                  (default 2000, 100..10000000)
 *  max workers     TREERCU_WQ_MAX_WORKERS  soft cap on workers per pool
 *                  (0 = the default, max(4, 2 * CPUs in the pod); 0..4096); only
 *                  the stall watchdog goes past it
 *  affinity scope  TREERCU_WQ_AFFINITY_SCOPE  default scope (cache_shard)
 *  shard size      TREERCU_WQ_CACHE_SHARD_SIZE  cores per cache shard (8)
 */
TRCU_API int trcu_wq_set_idle_timeout_ms(unsigned int ms);
TRCU_API int trcu_wq_set_stall_us(unsigned int us);
TRCU_API int trcu_wq_set_max_workers(unsigned int n);
TRCU_API int trcu_wq_set_default_scope(enum trcu_wq_affn scope);

struct trcu_wq_stats {
	unsigned long nr_workqueues;   /* alive */
	unsigned long nr_pools;
	unsigned long nr_workers;      /* alive, all pools, rescuers excluded */
	unsigned long nr_idle;
	unsigned long nr_rescuers;
	unsigned long queued;          /* successful queueings (items, incl. delayed) */
	unsigned long executed;        /* work functions run (rescuer runs included) */
	unsigned long rescued;         /* of which by a rescuer */
	unsigned long wakeups;         /* workers woken (futex wakes issued) */
	unsigned long workers_created;
	unsigned long workers_reaped;
	unsigned long create_failures;
	unsigned long maydays;         /* rescuer requests */
	unsigned long stalls;          /* stall-watchdog interventions */
	unsigned long refused;         /* queueing refused (draining/destroyed) */
};
TRCU_API void trcu_wq_get_stats(struct trcu_wq_stats *st);

/* Drain and destroy every workqueue, join every thread, free everything.
 * Idempotent; the subsystem starts again on next use.  Every handle is
 * freed: none may be used after it.  Process exit does not call it. */
TRCU_API void trcu_wq_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif /* TREERCU_WORKQUEUE_H */
