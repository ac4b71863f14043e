/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue, internal header: the structures and helpers shared by
 * the files of src/wq/, modelled on the Linux kernel's kernel/workqueue.c
 * and workqueue_internal.h.  docs/workqueue.md explains the design and the
 * layout; the comments name the kernel functions each piece corresponds to.
 * Only src/wq/ and the white-box tests include it.
 *
 * Locking order: wq_state.mutex -> wq->flush_mutex -> pool->lock ->
 * wq->mayday_lock.  wq_state.timer_lock and wq_state.free_lock are leaves:
 * nothing else is taken while they are held.
 *
 * Memory lifetime: pools are never freed (after trcu_wq_shutdown() they
 * are kept for reuse: a work item's data word may still name one), worker
 * structures not before trcu_wq_shutdown() (they are recycled), so a pool pointer
 * read from a work item's data word, or a worker picked for a deferred
 * wake-up, stays valid after the pool lock is dropped (the kernel gets the
 * same from RCU).  A destroyed workqueue keeps its handle and pwq array
 * until shutdown for the same reason (a racing trcu_queue_work() may still
 * read them; it is then refused under the pool lock).
 */
#ifndef TREERCU_WQ_INTERNAL_H
#define TREERCU_WQ_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <treercu/workqueue.h>

#include "../internal.h"
#include "../tsan.h"

/* Shared between the files of src/wq/ only: never exported from the
 * shared library. */
#pragma GCC visibility push(hidden)

/* ---- Lists ---------------------------------------------------------------- */

#define container_of(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

static inline void list_init(struct trcu_wq_link *h)
{
	h->next = h->prev = h;
}

static inline bool list_empty(const struct trcu_wq_link *h)
{
	return h->next == h;
}

static inline void list_insert(struct trcu_wq_link *n, struct trcu_wq_link *prev,
			       struct trcu_wq_link *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

/* Insert n after h (at the head). */
static inline void list_add(struct trcu_wq_link *n, struct trcu_wq_link *h)
{
	list_insert(n, h, h->next);
}

/* Insert n before h (at the tail). */
static inline void list_add_tail(struct trcu_wq_link *n, struct trcu_wq_link *h)
{
	list_insert(n, h->prev, h);
}

static inline void list_del_init(struct trcu_wq_link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

static inline void list_move_tail(struct trcu_wq_link *n, struct trcu_wq_link *h)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_add_tail(n, h);
}

#define work_of(link) container_of(link, struct trcu_work, priv.entry)

/* ---- Work data word ---------------------------------------------------------
 * priv.data = last/current pool pointer | flags.  Pools are aligned to 128
 * bytes, leaving seven flag bits.  PENDING is owned by whoever set it (the
 * kernel's rule): the owner may queue the item or arm its timer; everyone
 * else only reads.  QUEUED, INACTIVE, LINKED and COLOR change only under the
 * pool lock of the pool named in the word.  TIMER changes only under
 * wq_state.timer_lock.  The word is a plain uintptr_t in the public header
 * (the same in C and C++); every access is an __atomic builtin.
 */
#define WORK_PENDING   TRCU_WORK_PENDING_BIT
#define WORK_QUEUED    ((uintptr_t)2)   /* on a list of the pool in the word */
#define WORK_INACTIVE  ((uintptr_t)4)   /* ... on pwq->inactive_works */
#define WORK_LINKED    ((uintptr_t)8)   /* the next entry is a linked barrier */
#define WORK_COLOR     ((uintptr_t)16)  /* flush colour (0 or 1) */
#define WORK_CANCELING ((uintptr_t)32)  /* a cancel_sync owns PENDING */
#define WORK_TIMER     ((uintptr_t)64)  /* a delayed work on the timer heap */
#define WORK_FLAGS     ((uintptr_t)127)
#define POOL_ALIGN     128

struct worker_pool;
static inline struct worker_pool *data_pool(uintptr_t d)
{
	return (struct worker_pool *)(d & ~WORK_FLAGS);
}

static inline uintptr_t work_data(struct trcu_work *w)
{
	/* Acquire: pairs with the release/seq_cst stores of the data word in
	 * insert_work() and set_work_pool_and_clear_pending(). */
	return __atomic_load_n(&w->priv.data, __ATOMIC_ACQUIRE);
}

/* ---- Topology --------------------------------------------------------------- */

#define WQ_MAX_CPUS   1024
#define MASK_WORDS    (WQ_MAX_CPUS / 64)

struct wq_cpumask {
	uint64_t w[MASK_WORDS];
};

static inline void mask_set(struct wq_cpumask *m, int cpu)
{
	m->w[cpu / 64] |= 1ULL << (cpu % 64);
}

static inline bool mask_test(const struct wq_cpumask *m, int cpu)
{
	return m->w[cpu / 64] >> (cpu % 64) & 1;
}

static inline int mask_weight(const struct wq_cpumask *m)
{
	int n = 0;

	for (int i = 0; i < MASK_WORDS; i++)
		n += __builtin_popcountll(m->w[i]);
	return n;
}

/* The kernel's struct wq_pod_type: CPUs grouped for one affinity scope. */
struct wq_pod_type {
	int nr_pods;
	int *cpu_pod;                 /* [nr_cpus] */
	int *pod_node;                /* [nr_pods] NUMA node of the pod's first CPU */
	struct wq_cpumask *pod_cpus;  /* [nr_pods] */
};

struct wq_topo {
	int nr_cpus;
	bool override;
	int shard_size;               /* cores per cache shard */
	int *core_of;                 /* [nr_cpus] core id (first SMT sibling) */
	int *llc_of;                  /* [nr_cpus] LLC id (first CPU sharing it) */
	int *node_of;                 /* [nr_cpus] NUMA node */
	struct wq_pod_type pt[TRCU_WQ_AFFN_NR];
	char desc[192];
};

/* ---- Pools, workers, workqueues -------------------------------------------- */

/* worker->flags; WORKER_NOT_RUNNING ones keep a worker out of nr_running
 * (the kernel's concurrency management count). */
#define WORKER_DIE           (1u << 1)
#define WORKER_IDLE          (1u << 2)
#define WORKER_PREP          (1u << 3)
#define WORKER_CPU_INTENSIVE (1u << 6)
#define WORKER_UNBOUND       (1u << 7)
#define WORKER_RESCUER       (1u << 8)
#define WORKER_NOT_RUNNING   (WORKER_IDLE | WORKER_PREP | WORKER_CPU_INTENSIVE | \
			      WORKER_UNBOUND | WORKER_RESCUER)

#define BUSY_HASH 64
#define WQ_DFL_IDLE_TIMEOUT_MS  10000
#define WQ_DFL_STALL_US         2000
#define WQ_DFL_CACHE_SHARD_SIZE 8
/* A workqueue tunable's value (a row of the one table: state.c). */
#define WQ_TUN(name) atomic_load_explicit(&wq_state.tun.name, memory_order_relaxed)
#define CREATE_COOLDOWN_NS 10000000ull   /* 10 ms between failed worker creations */

struct pool_workqueue;

struct worker {
	struct trcu_wq_link idle_entry;   /* pool->idle_list while idle */
	struct trcu_wq_link node;         /* pool->workers */
	struct worker *hnext;             /* pool->busy_hash chain while busy */
	struct trcu_work *current_work;
	trcu_work_func_t current_func;
	struct pool_workqueue *current_pwq;
	int current_color;                /* -1 for barriers */
	uint64_t current_start_ns;
	uint64_t last_active_ns;          /* when it last went idle */
	struct trcu_wq_link scheduled;    /* works assigned to this worker */
	struct worker_pool *pool;
	unsigned int flags;               /* under pool->lock */
	/* Futex word: 0 while idle and not yet kicked, 1 once kicked.  Set to 0
	 * under the pool lock when the worker goes idle; wake_worker() sets it
	 * to 1 (exchange, pairs with the worker's load in worker_sleep()). */
	_Atomic uint32_t wake;
	pthread_t thread;
	bool joinable;
	struct trcu_workqueue *rescue_wq; /* rescuer only */
	struct worker *next_free;         /* recycle list / zombie list */
	struct worker *next_all;          /* every worker struct, for shutdown */
	int id;
};

struct worker_pool {
	pthread_mutex_t lock;
	int id;
	int cpu;                          /* per-CPU pool: its CPU, else -1 */
	bool highpri;
	bool unbound;
	struct wq_cpumask cpus;           /* unbound: the pod's CPUs */
	int nr_pod_cpus;
	int refcnt;                       /* workqueues using it (wq_state.mutex) */

	struct trcu_wq_link worklist;     /* active works waiting for a worker */
	struct trcu_wq_link idle_list;    /* most recently idle first */
	struct trcu_wq_link workers;      /* every attached worker */
	int nr_workers, nr_idle, nr_running;
	bool manager_active;              /* a worker is creating a worker */
	uint64_t watchdog_ts;             /* last time a work item started */
	uint64_t create_fail_ns;          /* creation failing since, or 0 */
	uint64_t last_retry_ns;
	struct worker *busy_hash[BUSY_HASH];
	struct worker_pool *next_retired; /* wq_state.retired_pools */

	/* Statistics: relaxed counters on the pool's own lines. */
	_Atomic unsigned long n_queued, n_executed, n_rescued, n_wakeups;
} __attribute__((aligned(POOL_ALIGN)));

/* The link between a workqueue and a pool (the kernel's pool_workqueue). */
struct pool_workqueue {
	struct worker_pool *pool;
	struct trcu_workqueue *wq;
	int nr_active, max_active;        /* under pool->lock */
	struct trcu_wq_link inactive_works;
	int work_color;                   /* colour for new works */
	int flush_color;                  /* colour being flushed, or -1 */
	int nr_in_flight[2];              /* per colour: queued or running */
	struct trcu_wq_link mayday_node;  /* wq->maydays, under mayday_lock */
	bool on_mayday;
};

#define WQ_MAGIC      0x57513a41u     /* "WQ:A" alive or draining */
#define WQ_MAGIC_DEAD 0x57513a44u     /* destroyed, kept until shutdown */

enum { WQ_ALIVE = 0, WQ_DRAINING = 1, WQ_DEAD = 2 };

struct trcu_workqueue {
	_Atomic uint32_t magic;           /* relaxed: checked on its own */
	_Atomic bool warned_dead;         /* "destroyed" said once */
	char name[32];
	unsigned int flags;
	int max_active;
	enum trcu_wq_affn scope;          /* resolved, unbound only */
	/* WQ_ALIVE / WQ_DRAINING / WQ_DEAD.  Written under wq_state.mutex;
	 * read in __queue_work() under the pool lock, which orders it against
	 * the flush that follows a state change (see drain_workqueue()). */
	_Atomic int state;
	int nr_drainers;                  /* under wq_state.mutex */
	bool destroying;                  /* under wq_state.mutex */
	int nr_pwqs;
	struct pool_workqueue **pwqs;     /* per CPU, or per pod */
	pthread_mutex_t flush_mutex;      /* one flush at a time */
	/* Flush completion: pwqs still to drain of the flushed colour; the
	 * last decrement (pwq_dec_nr_in_flight) sets flush_done to 1 and
	 * wakes the flusher (futex). */
	_Atomic int nr_pwqs_to_flush;
	_Atomic uint32_t flush_done;
	struct worker *rescuer;
	pthread_mutex_t mayday_lock;
	struct trcu_wq_link maydays;
	_Atomic uint32_t rescuer_wake;    /* futex: bumped by send_mayday() */
	_Atomic bool rescuer_stop;
	bool rescuer_lost;                /* fork() child: start a rescuer again */
	struct trcu_workqueue *next;      /* wq_state.wqs or .dead_wqs */
};

/* ---- The one state structure -------------------------------------------------- */

struct wq_state {
	pthread_mutex_t mutex;            /* lists below, init, pool creation */
	bool inited;
	bool shutdown_running;            /* a trcu_wq_shutdown() is under way */
	bool atexit_done;
	struct wq_topo topo;
	bool topo_set;                    /* topo built */
	char *topo_spec;                  /* trcu_wq_set_topology() override */

	struct worker_pool **pools;       /* every pool, by id */
	/* Pools of before a shutdown: never freed (a work item's data word may
	 * still name one), reused by pool_new(), locks kept initialised. */
	struct worker_pool *retired_pools;
	int nr_pools, cap_pools;
	struct trcu_workqueue *wqs, *dead_wqs;
	struct trcu_workqueue *system_wq, *system_unbound_wq;

	/* Tunables: the workqueue's rows of the one table (state.c); relaxed
	 * atomics, each value is used on its own. */
	struct {
		_Atomic long wq_idle_timeout_ms;
		_Atomic long wq_stall_us;
		_Atomic long wq_max_workers;
		_Atomic long wq_wake_under_lock;
		_Atomic long wq_cache_shard_size;
		_Atomic long wq_affinity_scope;
	} tun;

	/* The manager thread: timers, stall watchdog, reaping, maydays. */
	pthread_t mgr;
	bool mgr_started;
	_Atomic bool mgr_stop;
	_Atomic uint32_t mgr_futex;       /* bumped to wake the manager */
	_Atomic bool mgr_sleeping_long;   /* asleep with no deadline */

	/* Delayed-work timers: a binary heap ordered by expires_ns. */
	pthread_mutex_t timer_lock;
	struct trcu_delayed_work **heap;
	int heap_n, heap_cap;
	int heap_reserved;               /* slots promised to callers (heap_reserve()) */
	/* The item fire_timers() has taken off the heap and is queueing
	 * (timer_lock), the flushes waiting for it (timer_lock), and the word
	 * they sleep on, bumped under timer_lock when it is queued. */
	struct trcu_delayed_work *timer_firing;
	int timer_flush_waiters;
	_Atomic uint32_t timer_fired_seq;

	/* Worker structures: every one ever made, and the recycled ones. */
	pthread_mutex_t free_lock;
	struct worker *all_workers, *free_workers;
	int worker_seq;


	/* A fork() child's threads (manager, workers, rescuers) are gone:
	 * set by wq_fork_child(), cleared once wq_fork_respawn() has
	 * started them again. */
	_Atomic bool fork_respawn;
	uint64_t respawn_try_ns;          /* its last try (wq_state.mutex) */
	bool respawn_warned;              /* its failure said (wq_state.mutex) */
	/* Every thread's wq_owner record (wq_own()); owner_lock is a leaf. */
	pthread_mutex_t owner_lock;
	struct wq_owner *owners;
	pthread_key_t owner_key;
	bool owner_key_made;

	_Atomic int fail_create;          /* test hook */
	_Atomic uint32_t cancel_seq;      /* futex: a cancel_sync finished */
	_Atomic unsigned long n_refused, n_stalls, n_create_fail, n_created, n_reaped,
		n_maydays, n_queued_timer;
};

/* A thread's record of the work item whose PENDING bit it owns (queue.c). */
struct wq_owner {
	_Atomic(struct trcu_work *) work;
	struct wq_owner *next;
};

/* ---- State (state.c, queue.c, topology.c) ------------------------------------- */

extern struct wq_state wq_state;
/* The worker this thread is (the kernel's `current`), and the CPU hint of
 * trcu_wq_set_thread_cpu(): the only mutable variables outside wq_state. */
extern __thread struct worker *current_worker;
extern __thread int thread_cpu_hint;
extern __thread struct wq_owner *wq_owner_self;
extern __thread bool wq_forked_here;
/* ThreadSanitizer: work functions ran -> a flush returns (src/tsan.h). */
extern char wq_tsan_works;
extern const char *const affn_names[TRCU_WQ_AFFN_NR];

/* A barrier work item: flush_work() and cancel_work_sync() wait on it (flush.c). */
struct wq_barrier {
	struct trcu_work work;
	_Atomic uint32_t done;   /* futex: set by wq_barrier_func() */
};

/* ---- Small helpers (pool->lock held where they read a pool) ---------------- */

static inline uint64_t now_ns(void)
{
	return (uint64_t)sys_now_ns();
}

static inline struct worker *first_idle_worker(struct worker_pool *pool)
{
	if (list_empty(&pool->idle_list))
		return NULL;
	return container_of(pool->idle_list.next, struct worker, idle_entry);
}

/* Per-CPU pools run one worker at a time (nr_running); unbound workers are
 * all WORKER_UNBOUND, so for them this is "is there pending work". */
static inline bool need_more_worker(struct worker_pool *pool)
{
	return !list_empty(&pool->worklist) && !pool->nr_running;
}

static inline bool may_start_working(struct worker_pool *pool)
{
	return pool->nr_idle > 0;
}

static inline bool keep_working(struct worker_pool *pool)
{
	return !list_empty(&pool->worklist) && pool->nr_running <= 1;
}

static inline bool need_to_create_worker(struct worker_pool *pool)
{
	return need_more_worker(pool) && !may_start_working(pool);
}

/*
 * kick_pool_pick: the worker to wake for @pool's pending work, or NULL.
 * Everything that needs the pool lock (the choice of worker) happens here;
 * the caller wakes the worker after dropping the lock, so that producers
 * waiting for the lock do not wait for the waker's system call too
 * (docs/decisions.md), or before when wake_under_lock is set.
 */
static inline struct worker *kick_pool_pick(struct worker_pool *pool)
{
	struct worker *w = first_idle_worker(pool);

	if (!need_more_worker(pool) || !w)
		return NULL;
	return w;
}

static inline bool wake_under_lock(void)
{
	return WQ_TUN(wq_wake_under_lock) != 0;
}

static inline int work_color_of(uintptr_t d)
{
	return (d & WORK_COLOR) ? 1 : 0;
}

/* Clear PENDING as the worker takes the item; from now on it may be queued
 * again.  seq_cst exchange: with the queuer's seq_cst fetch_or in
 * test_and_set_pending(), either the queuer sees PENDING clear and queues
 * again, or this worker's function sees what the queuer wrote before its
 * (no-op) queueing attempt (the kernel's smp_mb() in
 * set_work_pool_and_clear_pending()). */
static inline void set_work_pool_and_clear_pending(struct trcu_work *work, struct worker_pool *pool)
{
	__atomic_exchange_n(&work->priv.data, (uintptr_t)pool, __ATOMIC_SEQ_CST);
}

static inline bool is_chained_work(struct trcu_workqueue *wq)
{
	struct worker *w = current_worker;

	return w && w->current_pwq && w->current_pwq->wq == wq;
}

/* ---- Functions shared between the files -------------------------------------- */

/* delayed.c */
bool __queue_delayed_work(int cpu, struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
				 uint64_t delay_us);
int cancel_timers_of(struct trcu_workqueue *wq);
bool check_delay(const char *fn, uint64_t delay_us);
uint64_t fire_timers(uint64_t now);
void timer_wait_fired_locked(struct trcu_delayed_work *dw);
void heap_remove(struct trcu_delayed_work *dw);
int heap_reserve(void);
void heap_unreserve(void);

/* flush.c */
void drain_inner(struct trcu_workqueue *wq);
bool is_barrier(struct trcu_work *work);
bool own_function(struct trcu_work *work);
bool start_flush_work(struct trcu_work *work, struct wq_barrier *b);
void wait_barrier(struct wq_barrier *b);

/* fork.c */
void wq_fork_respawn(void);
void wq_fork_respawn_retry(void);
void wq_wait_word(_Atomic uint32_t *word, uint32_t val);

/* manager.c */
void *manager_thread(void *arg);

/* pool.c */
struct worker *alloc_worker(void);
bool assign_work(struct trcu_work *work, struct worker *w, struct trcu_wq_link **nextp);
void busy_add(struct worker_pool *pool, struct worker *w);
void busy_del(struct worker_pool *pool, struct worker *w);
struct worker *find_worker_executing_work(struct worker_pool *pool, struct trcu_work *work);
struct worker_pool *get_pool_locked(int cpu, const struct wq_cpumask *cpus, bool highpri);
struct trcu_wq_link *move_linked_works(struct trcu_work *work, struct trcu_wq_link *head);
int pool_max_workers(struct worker_pool *pool);
void recycle_worker(struct worker *w);
struct worker *wake_locked_or_defer(struct worker *w);
void wake_manager(void);
void wake_worker(struct worker *w);
void worker_clr_flags(struct worker *w, unsigned int f);
void worker_enter_idle(struct worker *w);
void worker_leave_idle(struct worker *w);
void worker_set_flags(struct worker *w, unsigned int f);
void worker_sleep(struct worker *w);
int wq_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/* queue.c */
bool __queue_work(int cpu, struct trcu_workqueue *wq, struct trcu_work *work);
bool check_queue_args(const char *fn, int cpu, struct trcu_workqueue *wq,
			     struct trcu_work *work);
void insert_work(struct pool_workqueue *pwq, struct trcu_work *work,
			struct trcu_wq_link *head, uintptr_t extra);
bool pwq_dec_nr_in_flight(struct pool_workqueue *pwq, int color, bool active);
bool test_and_set_pending(struct trcu_work *work);
struct pool_workqueue *wq_cpu_pwq(struct trcu_workqueue *wq, int cpu);
void wq_own(struct trcu_work *work);

/* state.c */
int wq_init_locked(void);

/* topology.c */
void topo_free(struct wq_topo *t);
int topo_init_locked(void);

/* worker.c */
struct worker *create_worker(struct worker_pool *pool);
void pool_send_maydays(struct worker_pool *pool);
void process_one_work(struct worker *w, struct trcu_work *work);
void *rescuer_thread(void *arg);
void *worker_thread(void *arg);

/* workqueue.c */
void destroy_inner(struct trcu_workqueue *wq);
int start_manager_locked(void);
int start_rescuer_locked(struct trcu_workqueue *wq);
int wq_check(struct trcu_workqueue *wq, const char *fn);
void wq_free_pwqs(struct trcu_workqueue *wq);

/* ---- Test hooks (tests include this header) ------------------------------------ */

/* Internal id of the pool that serves @wq on @cpu (pool-sharing checks). */
int wq_pool_id(struct trcu_workqueue *wq, int cpu);
/* Make the next @n thread creations of the subsystem fail as if
 * pthread_create() returned EAGAIN (n < 0: all of them until called with 0). */
void wq_test_fail_thread_create(int n);

#pragma GCC visibility pop

#endif /* TREERCU_WQ_INTERNAL_H */
