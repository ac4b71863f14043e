/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: pools of worker threads behind per-CPU and unbound
 * workqueues, modelled on the Linux kernel's kernel/workqueue.c.
 * docs/workqueue.md explains the design; the comments here name the kernel
 * functions each piece corresponds to.
 *
 * Locking order: wq_state.mutex -> wq->flush_mutex -> pool->lock ->
 * wq->mayday_lock.  wq_state.timer_lock and wq_state.free_lock are leaves:
 * nothing else is taken while they are held.
 *
 * Memory lifetime: pools and worker structures are never freed before
 * trcu_wq_shutdown() (worker structures are recycled), so a pool pointer
 * read from a work item's data word, or a worker picked for a deferred
 * wake-up, stays valid after the pool lock is dropped (the kernel gets the
 * same from RCU).  A destroyed workqueue keeps its handle and pwq array
 * until shutdown for the same reason (a racing trcu_queue_work() may still
 * read them; it is then refused under the pool lock).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "internal.h"

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

static int mask_weight(const struct wq_cpumask *m)
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

#define WQ_SHUTDOWN_FNS_MAX 8

struct wq_state {
	pthread_mutex_t mutex;            /* lists below, init, pool creation */
	bool inited;
	bool atexit_done;
	struct wq_topo topo;
	bool topo_set;                    /* topo built */
	char *topo_spec;                  /* trcu_wq_set_topology() override */

	struct worker_pool **pools;       /* every pool, by id */
	int nr_pools, cap_pools;
	struct trcu_workqueue *wqs, *dead_wqs;
	struct trcu_workqueue *system_wq, *system_unbound_wq;

	/* Tunables: relaxed atomics, each value is used on its own. */
	_Atomic bool wake_under_lock;
	_Atomic unsigned int idle_timeout_ms;
	_Atomic unsigned int stall_us;
	_Atomic unsigned int max_workers;
	_Atomic int default_scope;
	bool tun_env_read;

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

	/* Worker structures: every one ever made, and the recycled ones. */
	pthread_mutex_t free_lock;
	struct worker *all_workers, *free_workers;
	int worker_seq;

	/* trcu_wq_at_shutdown() functions: under mutex, kept across
	 * shutdowns. */
	void (*shutdown_fns[WQ_SHUTDOWN_FNS_MAX])(void);
	int nr_shutdown_fns;

	/* A fork() child's threads (manager, workers, rescuers) are gone:
	 * set by wq_fork_child(), cleared once wq_fork_respawn() has
	 * started them again. */
	_Atomic bool fork_respawn;
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

static struct wq_state wq_state = {
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
static __thread struct worker *current_worker;
static __thread int thread_cpu_hint = -1;

static uint64_t now_ns(void)
{
	return (uint64_t)sys_now_ns();
}

/* ---- Topology: real (sysfs) or described by TREERCU_WQ_TOPOLOGY ------------ */

static const char *const affn_names[TRCU_WQ_AFFN_NR] = {
	[TRCU_WQ_AFFN_DFL] = "default",
	[TRCU_WQ_AFFN_CPU] = "cpu",
	[TRCU_WQ_AFFN_SMT] = "smt",
	[TRCU_WQ_AFFN_CACHE] = "cache",
	[TRCU_WQ_AFFN_CACHE_SHARD] = "cache_shard",
	[TRCU_WQ_AFFN_NUMA] = "numa",
	[TRCU_WQ_AFFN_SYSTEM] = "system",
};

#define TOPO_FORM "cpus=N[,smt=S][,llc=L][,numa=M][,shard=K] or \"real\""

static void topo_free(struct wq_topo *t)
{
	free(t->core_of);
	free(t->llc_of);
	free(t->node_of);
	for (int s = 0; s < TRCU_WQ_AFFN_NR; s++) {
		free(t->pt[s].cpu_pod);
		free(t->pt[s].pod_node);
		free(t->pt[s].pod_cpus);
	}
	memset(t, 0, sizeof(*t));
}

/* First CPU number of a sysfs cpulist ("0-3,8"), or -1. */
static int read_first_cpu(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int read_int_file(const char *path, int dfl)
{
	return read_first_cpu(path) < 0 ? dfl : read_first_cpu(path);
}

/* The last-level cache of @cpu: the first CPU sharing the highest-level
 * data/unified cache, or -1 when sysfs does not say. */
static int real_llc_of(int cpu)
{
	char path[160], type[32];
	int best_level = -1, best = -1;

	for (int i = 0; i < 16; i++) {
		FILE *f;
		int level;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/type",
			 cpu, i);
		f = fopen(path, "r");
		if (!f)
			break;
		if (!fgets(type, sizeof(type), f))
			type[0] = '\0';
		fclose(f);
		if (!strncmp(type, "Instruction", 11))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/level",
			 cpu, i);
		level = read_int_file(path, -1);
		if (level <= best_level)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, i);
		best = read_first_cpu(path);
		best_level = level;
	}
	return best;
}

static int real_node_of(int cpu)
{
	char path[96];
	DIR *d;
	struct dirent *e;
	int node = 0;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, "node", 4) && isdigit((unsigned char)e->d_name[4])) {
			node = atoi(e->d_name + 4);
			break;
		}
	}
	closedir(d);
	return node;
}

static int topo_alloc(struct wq_topo *t, int n)
{
	t->nr_cpus = n;
	t->core_of = calloc((size_t)n, sizeof(int));
	t->llc_of = calloc((size_t)n, sizeof(int));
	t->node_of = calloc((size_t)n, sizeof(int));
	return t->core_of && t->llc_of && t->node_of ? 0 : -ENOMEM;
}

static int topo_read_files(struct wq_topo *t);

/* fopen()/opendir() are cancellation points, and wq_state.mutex is held:
 * none may act in there (internal.h). */
static int topo_read_real(struct wq_topo *t)
{
	int cs = sys_cancel_disable();
	int ret = topo_read_files(t);

	sys_cancel_restore(cs);
	return ret;
}

static int topo_read_files(struct wq_topo *t)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	char path[128];

	if (n < 1)
		n = 1;
	if (n > WQ_MAX_CPUS)
		n = WQ_MAX_CPUS;
	if (topo_alloc(t, (int)n))
		return -ENOMEM;
	for (int c = 0; c < n; c++) {
		int v;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		v = read_first_cpu(path);
		t->core_of[c] = v >= 0 && v < n ? v : c;
		v = real_llc_of(c);
		t->llc_of[c] = v >= 0 && v < n ? v : 0;
		t->node_of[c] = real_node_of(c);
	}
	t->override = false;
	return 0;
}

/* Parses "key=value" fields of the override; 0 or -EINVAL with a message
 * naming the variable (@what) and the accepted form. */
static int topo_parse(struct wq_topo *t, const char *what, const char *spec, int dfl_shard)
{
	long cpus = 0, smt = 1, llc = 0, numa = 1, shard = dfl_shard;
	char buf[256], *save = NULL, *tok;

	if (strlen(spec) >= sizeof(buf))
		goto bad_form;
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		long v, *dst;

		if (!eq)
			goto bad_form;
		*eq = '\0';
		if (!strcmp(tok, "cpus"))
			dst = &cpus;
		else if (!strcmp(tok, "smt"))
			dst = &smt;
		else if (!strcmp(tok, "llc"))
			dst = &llc;
		else if (!strcmp(tok, "numa"))
			dst = &numa;
		else if (!strcmp(tok, "shard"))
			dst = &shard;
		else
			goto bad_form;
		errno = 0;
		v = strtol(eq + 1, &end, 10);
		if (end == eq + 1 || *end || errno || v < 1 || v > WQ_MAX_CPUS) {
			sys_warn("%s=\"%s\" refused: %s must be a number in 1..%d (accepted: %s)",
				  what, spec, tok, WQ_MAX_CPUS, TOPO_FORM);
			return -EINVAL;
		}
		*dst = v;
	}
	if (!cpus) {
		sys_warn("%s=\"%s\" refused: cpus=N is required (accepted: %s)", what, spec,
			  TOPO_FORM);
		return -EINVAL;
	}
	if (!llc)
		llc = cpus;
	if (cpus % smt || llc % smt || cpus % llc || (cpus / llc) % numa) {
		sys_warn("%s=\"%s\" refused: smt must divide llc, llc must divide cpus and "
			  "numa must divide the number of LLCs (cpus/llc) (accepted: %s)",
			  what, spec, TOPO_FORM);
		return -EINVAL;
	}
	if (topo_alloc(t, (int)cpus))
		return -ENOMEM;
	for (int c = 0; c < cpus; c++) {
		long nllc = cpus / llc;

		t->core_of[c] = (int)(c - c % smt);
		t->llc_of[c] = (int)(c - c % llc);
		t->node_of[c] = (int)((c / llc) / (nllc / numa));
	}
	t->override = true;
	t->shard_size = (int)shard;
	snprintf(t->desc, sizeof(t->desc), "override cpus=%ld,smt=%ld,llc=%ld,numa=%ld,shard=%ld",
		 cpus, smt, llc, numa, shard);
	return 0;

bad_form:
	sys_warn("%s=\"%s\" refused: not of the form %s", what, spec, TOPO_FORM);
	return -EINVAL;
}

/*
 * Shard ids within one LLC, the kernel's cache_shard rule: count the LLC's
 * cores, use max(1, round(cores / shard_size)) shards, give the first
 * (cores % shards) shards one extra core, and walk the CPUs in order,
 * advancing at each new core so SMT siblings never straddle shards.
 */
static void topo_shards(const struct wq_topo *t, int llc, int *shard_of)
{
	int nr_cores = 0, nr_shards, per, rem, pos = -1, shard = 0;
	int *seen = calloc((size_t)t->nr_cpus, sizeof(int));

	if (!seen)
		return;  /* leaves every CPU in shard 0 */
	for (int c = 0; c < t->nr_cpus; c++)
		if (t->llc_of[c] == llc && !seen[t->core_of[c]]++)
			nr_cores++;
	nr_shards = (nr_cores + t->shard_size / 2) / t->shard_size;
	if (nr_shards < 1)
		nr_shards = 1;
	per = nr_cores / nr_shards;
	rem = nr_cores % nr_shards;
	memset(seen, 0, (size_t)t->nr_cpus * sizeof(int));
	for (int c = 0; c < t->nr_cpus; c++) {
		if (t->llc_of[c] != llc)
			continue;
		if (!seen[t->core_of[c]]++) {
			pos++;
			if (pos < rem * (per + 1))
				shard = pos / (per + 1);
			else
				shard = rem + (pos - rem * (per + 1)) / per;
		}
		shard_of[c] = shard;
	}
	free(seen);
}

/* Groups CPUs by key[] into pods numbered in order of first appearance. */
static int pod_type_build(struct wq_topo *t, enum trcu_wq_affn s, const long *key)
{
	struct wq_pod_type *pt = &t->pt[s];
	int n = t->nr_cpus;

	pt->cpu_pod = calloc((size_t)n, sizeof(int));
	pt->pod_node = calloc((size_t)n, sizeof(int));
	pt->pod_cpus = calloc((size_t)n, sizeof(struct wq_cpumask));
	if (!pt->cpu_pod || !pt->pod_node || !pt->pod_cpus)
		return -ENOMEM;
	pt->nr_pods = 0;
	for (int c = 0; c < n; c++) {
		int p = -1;

		for (int d = 0; d < c; d++) {
			if (key[d] == key[c]) {
				p = pt->cpu_pod[d];
				break;
			}
		}
		if (p < 0) {
			p = pt->nr_pods++;
			pt->pod_node[p] = t->node_of[c];
		}
		pt->cpu_pod[c] = p;
		mask_set(&pt->pod_cpus[p], c);
	}
	return 0;
}

static int topo_build_pods(struct wq_topo *t)
{
	int n = t->nr_cpus;
	long *key = calloc((size_t)n, sizeof(long));
	int *shard = calloc((size_t)n, sizeof(int));
	int ret = -ENOMEM;

	if (!key || !shard)
		goto out;
	for (int c = 0; c < n; c++) {
		bool first = true;

		for (int d = 0; d < c && first; d++)
			first = t->llc_of[d] != t->llc_of[c];
		if (first)
			topo_shards(t, t->llc_of[c], shard);
	}
	for (enum trcu_wq_affn s = TRCU_WQ_AFFN_CPU; s < TRCU_WQ_AFFN_NR; s++) {
		for (int c = 0; c < n; c++) {
			switch (s) {
			case TRCU_WQ_AFFN_CPU: key[c] = c; break;
			case TRCU_WQ_AFFN_SMT: key[c] = t->core_of[c]; break;
			case TRCU_WQ_AFFN_CACHE: key[c] = t->llc_of[c]; break;
			case TRCU_WQ_AFFN_CACHE_SHARD:
				key[c] = (long)t->llc_of[c] * WQ_MAX_CPUS + shard[c];
				break;
			case TRCU_WQ_AFFN_NUMA: key[c] = t->node_of[c]; break;
			default: key[c] = 0; break;
			}
		}
		if (pod_type_build(t, s, key))
			goto out;
	}
	if (!t->override) {
		snprintf(t->desc, sizeof(t->desc),
			 "real: %d cpus, %d cores, %d LLCs, %d NUMA nodes, %d cache shards (shard=%d)",
			 n, t->pt[TRCU_WQ_AFFN_SMT].nr_pods, t->pt[TRCU_WQ_AFFN_CACHE].nr_pods,
			 t->pt[TRCU_WQ_AFFN_NUMA].nr_pods, t->pt[TRCU_WQ_AFFN_CACHE_SHARD].nr_pods,
			 t->shard_size);
	}
	ret = 0;
out:
	free(key);
	free(shard);
	return ret;
}

/*
 * Builds wq_state.topo (wq_state.mutex held): 0, or -ENOMEM with nothing
 * built (the next call tries again; the callers report ENOMEM).
 */
static int topo_init_locked(void)
{
	struct wq_topo *t = &wq_state.topo;
	const char *env = getenv("TREERCU_WQ_TOPOLOGY");
	const char *senv = getenv("TREERCU_WQ_CACHE_SHARD_SIZE");
	long shard = 8;
	int ret = -1;

	if (wq_state.topo_set)
		return 0;
	if (senv && tun_parse_long("TREERCU_WQ_CACHE_SHARD_SIZE", senv, 1, WQ_MAX_CPUS, &shard))
		shard = 8;
	if (wq_state.topo_spec) {
		ret = topo_parse(t, "trcu_wq_set_topology", wq_state.topo_spec, (int)shard);
	} else if (env && *env && strcmp(env, "real")) {
		ret = topo_parse(t, "TREERCU_WQ_TOPOLOGY", env, (int)shard);
		if (ret == -EINVAL)
			sys_warn("TREERCU_WQ_TOPOLOGY ignored: using the machine's topology");
	}
	if (ret == -EINVAL || ret == -1) {
		topo_free(t);
		ret = topo_read_real(t);
		t->shard_size = (int)shard;
	}
	if (ret || topo_build_pods(t)) {
		topo_free(t);
		return -ENOMEM;
	}
	wq_state.topo_set = true;
	return 0;
}

/* ---- Tunables and initialisation ----------------------------------------------- */

#define DFL_IDLE_TIMEOUT_MS 10000u
#define DFL_STALL_US        2000u

static long env_long(const char *name, long lo, long hi, long dfl)
{
	const char *v = getenv(name);
	long out;

	if (!v || !*v)
		return dfl;
	if (tun_parse_long(name, v, lo, hi, &out))
		return dfl;
	return out;
}

/* Reads the tunables' environment variables once (wq_state.mutex held). */
static void tunables_init_locked(void)
{
	const char *scope;

	if (wq_state.tun_env_read)
		return;
	wq_state.tun_env_read = true;
	atomic_store_explicit(&wq_state.idle_timeout_ms,
			      (unsigned int)env_long("TREERCU_WQ_IDLE_TIMEOUT_MS", 1, 3600000,
						     DFL_IDLE_TIMEOUT_MS), memory_order_relaxed);
	atomic_store_explicit(&wq_state.stall_us,
			      (unsigned int)env_long("TREERCU_WQ_STALL_US", 100, 10000000,
						     DFL_STALL_US), memory_order_relaxed);
	atomic_store_explicit(&wq_state.max_workers,
			      (unsigned int)env_long("TREERCU_WQ_MAX_WORKERS", 0, 4096, 0),
			      memory_order_relaxed);
	atomic_store_explicit(&wq_state.wake_under_lock,
			      env_long("TREERCU_WQ_WAKE_UNDER_LOCK", 0, 1, 0) != 0,
			      memory_order_relaxed);
	atomic_store_explicit(&wq_state.default_scope, TRCU_WQ_AFFN_CACHE_SHARD,
			      memory_order_relaxed);
	scope = getenv("TREERCU_WQ_AFFINITY_SCOPE");
	if (scope && *scope) {
		int s = -1;

		for (int i = TRCU_WQ_AFFN_CPU; i < TRCU_WQ_AFFN_NR; i++)
			if (!strcmp(scope, affn_names[i]))
				s = i;
		if (s < 0)
			sys_warn("TREERCU_WQ_AFFINITY_SCOPE=\"%s\" refused (accepted: cpu, smt, "
				  "cache, cache_shard, numa, system)", scope);
		else
			atomic_store_explicit(&wq_state.default_scope, s, memory_order_relaxed);
	}
}

static void tunables_init(void)
{
	pthread_mutex_lock(&wq_state.mutex);
	tunables_init_locked();
	pthread_mutex_unlock(&wq_state.mutex);
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
 * At process exit: shut the subsystem down (draining every workqueue) only
 * once no work item is queued or running, waiting for that at most
 * exit_wait_ms; a work item that keeps re-queueing itself would make the
 * drain endless, and exit() from a work item cannot wait for itself.  What
 * is skipped is counted in one line on stderr; the threads are left to the
 * process's end.  An explicit trcu_wq_shutdown() still drains for good.
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
	while ((n = wq_count_in_flight()) > 0 && sys_now_ns() < end_ns)
		sys_sleep_ns(1000000L);
	if (n > 0) {
		sys_warn("exit: %ld work item%s not run: still queued or running after %ld ms "
			  "(one keeps re-queueing itself?)", n, n == 1 ? "" : "s", TUN(exit_wait_ms));
		return;
	}
	trcu_wq_shutdown();
}

/* First use: tunables, topology, atexit (wq_state.mutex held).  0, or
 * -ENOMEM with the workqueue subsystem still uninitialised. */
static int wq_init_locked(void)
{
	tunables_init_locked();
	if (topo_init_locked())   /* again after trcu_wq_set_topology() */
		return -ENOMEM;
	if (wq_state.inited)
		return 0;
	if (!wq_state.atexit_done) {
		wq_state.atexit_done = true;
		atexit(wq_atexit);
		fork_register();
	}
	wq_state.inited = true;
	return 0;
}

/* ---- Threads and worker structures ------------------------------------------------ */

/* pthread_create() with the test hook's injected failures. */
static int wq_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int f = atomic_load_explicit(&wq_state.fail_create, memory_order_relaxed);

	while (f > 0) {
		/* Consume one injected failure; relaxed: a counter on its own. */
		if (atomic_compare_exchange_weak_explicit(&wq_state.fail_create, &f, f - 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return EAGAIN;
	}
	if (f < 0)
		return EAGAIN;
	return pthread_create(t, NULL, fn, arg);
}

static struct worker *alloc_worker(void)
{
	struct worker *w;

	pthread_mutex_lock(&wq_state.free_lock);
	w = wq_state.free_workers;
	if (w) {
		wq_state.free_workers = w->next_free;
	} else {
		w = calloc(1, sizeof(*w));
		if (w) {
			w->next_all = wq_state.all_workers;
			wq_state.all_workers = w;
		}
	}
	if (w)
		w->id = ++wq_state.worker_seq;
	pthread_mutex_unlock(&wq_state.free_lock);
	if (!w)
		return NULL;
	list_init(&w->idle_entry);
	list_init(&w->node);
	list_init(&w->scheduled);
	w->hnext = NULL;
	w->current_work = NULL;
	w->current_func = NULL;
	w->current_pwq = NULL;
	w->joinable = false;
	w->rescue_wq = NULL;
	w->next_free = NULL;
	return w;
}

/* Structures are recycled, never freed before shutdown: a waker that picked
 * this worker under a pool lock may still write its futex word. */
static void recycle_worker(struct worker *w)
{
	pthread_mutex_lock(&wq_state.free_lock);
	w->next_free = wq_state.free_workers;
	wq_state.free_workers = w;
	pthread_mutex_unlock(&wq_state.free_lock);
}

/*
 * The wake_up_process() of treercu: a worker sleeps on its futex word while
 * it is 0.  Exchange (acq_rel) pairs with the acquire load in worker_sleep():
 * whatever the waker queued before is visible to the woken worker.  Only the
 * 0 -> 1 transition issues the system call; kicking a worker already kicked
 * is a cheap no-op, as waking a running task is in the kernel.
 */
static void wake_worker(struct worker *w)
{
	if (!w)
		return;
	if (atomic_exchange_explicit(&w->wake, 1, memory_order_acq_rel) == 0) {
		sys_futex_wake(&w->wake, 1);
		atomic_fetch_add_explicit(&w->pool->n_wakeups, 1, memory_order_relaxed);
	}
}

static void worker_sleep(struct worker *w)
{
	/* Acquire: pairs with the exchange in wake_worker(). */
	while (atomic_load_explicit(&w->wake, memory_order_acquire) == 0)
		sys_futex_wait(&w->wake, 0, -1);
}

static void wake_manager(void)
{
	/* Release: pairs with the manager's acquire load of mgr_futex. */
	atomic_fetch_add_explicit(&wq_state.mgr_futex, 1, memory_order_release);
	sys_futex_wake(&wq_state.mgr_futex, 1);
}

/* ---- Worker flags and the idle list (pool->lock held) ----------------------------- */

static void worker_set_flags(struct worker *w, unsigned int f)
{
	struct worker_pool *pool = w->pool;

	/* A worker leaves concurrency management when it gains its first
	 * NOT_RUNNING flag. */
	if ((f & WORKER_NOT_RUNNING) && !(w->flags & WORKER_NOT_RUNNING))
		pool->nr_running--;
	w->flags |= f;
}

static void worker_clr_flags(struct worker *w, unsigned int f)
{
	struct worker_pool *pool = w->pool;
	unsigned int old = w->flags;

	w->flags &= ~f;
	if ((old & WORKER_NOT_RUNNING) && !(w->flags & WORKER_NOT_RUNNING))
		pool->nr_running++;
}

static void worker_enter_idle(struct worker *w)
{
	struct worker_pool *pool = w->pool;

	worker_set_flags(w, WORKER_IDLE);
	pool->nr_idle++;
	w->last_active_ns = now_ns();
	/* Most recently idle first: first_idle_worker() takes the head. */
	list_add(&w->idle_entry, &pool->idle_list);
	/* Relaxed: ordered by the pool lock against any kicker that picks this
	 * worker (kick_pool_pick() runs under the same lock). */
	atomic_store_explicit(&w->wake, 0, memory_order_relaxed);
}

static void worker_leave_idle(struct worker *w)
{
	struct worker_pool *pool = w->pool;

	if (!(w->flags & WORKER_IDLE))
		return;
	worker_clr_flags(w, WORKER_IDLE);
	pool->nr_idle--;
	list_del_init(&w->idle_entry);
}

static struct worker *first_idle_worker(struct worker_pool *pool)
{
	if (list_empty(&pool->idle_list))
		return NULL;
	return container_of(pool->idle_list.next, struct worker, idle_entry);
}

/* Per-CPU pools run one worker at a time (nr_running); unbound workers are
 * all WORKER_UNBOUND, so for them this is "is there pending work". */
static bool need_more_worker(struct worker_pool *pool)
{
	return !list_empty(&pool->worklist) && !pool->nr_running;
}

static bool may_start_working(struct worker_pool *pool)
{
	return pool->nr_idle > 0;
}

static bool keep_working(struct worker_pool *pool)
{
	return !list_empty(&pool->worklist) && pool->nr_running <= 1;
}

static bool need_to_create_worker(struct worker_pool *pool)
{
	return need_more_worker(pool) && !may_start_working(pool);
}

static int pool_max_workers(struct worker_pool *pool)
{
	unsigned int m = atomic_load_explicit(&wq_state.max_workers, memory_order_relaxed);

	if (m)
		return (int)m;
	return pool->nr_pod_cpus * 2 > 4 ? pool->nr_pod_cpus * 2 : 4;
}

/*
 * kick_pool_pick: the worker to wake for @pool's pending work, or NULL.
 * Everything that needs the pool lock (the choice of worker) happens here;
 * the caller wakes the worker after dropping the lock (seed 001), or before
 * when wake_under_lock is set.
 */
static struct worker *kick_pool_pick(struct worker_pool *pool)
{
	struct worker *w = first_idle_worker(pool);

	if (!need_more_worker(pool) || !w)
		return NULL;
	return w;
}

static bool wake_under_lock(void)
{
	return atomic_load_explicit(&wq_state.wake_under_lock, memory_order_relaxed);
}

/* Wake @w now if the wake-under-lock switch is on; returns what is left to
 * wake after the unlock. */
static struct worker *wake_locked_or_defer(struct worker *w)
{
	if (w && wake_under_lock()) {
		wake_worker(w);
		return NULL;
	}
	return w;
}

/* ---- Busy workers, linked works (pool->lock held) --------------------------------- */

static unsigned int busy_slot(const struct trcu_work *work)
{
	uintptr_t p = (uintptr_t)work;

	return (unsigned int)((p >> 4) ^ (p >> 12)) % BUSY_HASH;
}

static void busy_add(struct worker_pool *pool, struct worker *w)
{
	unsigned int s = busy_slot(w->current_work);

	w->hnext = pool->busy_hash[s];
	pool->busy_hash[s] = w;
}

static void busy_del(struct worker_pool *pool, struct worker *w)
{
	struct worker **pp = &pool->busy_hash[busy_slot(w->current_work)];

	while (*pp && *pp != w)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = w->hnext;
	w->hnext = NULL;
}

/* The kernel's find_worker_executing_work(): same item and same function. */
static struct worker *find_worker_executing_work(struct worker_pool *pool, struct trcu_work *work)
{
	for (struct worker *w = pool->busy_hash[busy_slot(work)]; w; w = w->hnext)
		if (w->current_work == work && w->current_func == work->func)
			return w;
	return NULL;
}

/* Move @work and the barriers linked after it to the tail of @head.
 * Returns the entry that followed the last one moved. */
static struct trcu_wq_link *move_linked_works(struct trcu_work *work, struct trcu_wq_link *head)
{
	struct trcu_wq_link *e = &work->priv.entry, *n;

	for (;;) {
		struct trcu_work *cur = work_of(e);

		n = e->next;
		list_move_tail(e, head);
		if (!(__atomic_load_n(&cur->priv.data, __ATOMIC_RELAXED) & WORK_LINKED))
			break;
		e = n;
	}
	return n;
}

/* The kernel's assign_work(): give @work to @w unless another worker of the
 * pool is already running it, in which case it goes to that worker's
 * scheduled list (a work item never runs concurrently with itself). */
static bool assign_work(struct trcu_work *work, struct worker *w, struct trcu_wq_link **nextp)
{
	struct worker *collision = find_worker_executing_work(w->pool, work);
	struct trcu_wq_link *n;

	if (collision) {
		n = move_linked_works(work, &collision->scheduled);
		if (nextp)
			*nextp = n;
		return false;
	}
	n = move_linked_works(work, &w->scheduled);
	if (nextp)
		*nextp = n;
	return true;
}

/* ---- pool_workqueue accounting (pool->lock held) ---------------------------------- */

static bool is_barrier(struct trcu_work *work);

/* Activate the first inactive work: move it (and its linked barriers) to the
 * worklist.  Returns true if one was activated. */
static bool pwq_activate_first_inactive(struct pool_workqueue *pwq)
{
	struct trcu_work *work;

	if (list_empty(&pwq->inactive_works) || pwq->nr_active >= pwq->max_active)
		return false;
	work = work_of(pwq->inactive_works.next);
	/* Relaxed RMW: INACTIVE changes only under this pool lock; the RMW keeps
	 * a concurrent fetch_or of PENDING by a queuer intact. */
	__atomic_fetch_and(&work->priv.data, ~WORK_INACTIVE, __ATOMIC_RELAXED);
	pwq->nr_active++;
	move_linked_works(work, &pwq->pool->worklist);
	return true;
}

/*
 * A work of @pwq and colour @color left the pool (ran or was cancelled).
 * @active: it was counted in nr_active.  Completes a flush waiting for the
 * colour.  Returns true if an inactive work was activated (the caller must
 * make sure a worker sees it).
 */
static bool pwq_dec_nr_in_flight(struct pool_workqueue *pwq, int color, bool active)
{
	bool activated = false;

	if (active) {
		pwq->nr_active--;
		activated = pwq_activate_first_inactive(pwq);
	}
	if (--pwq->nr_in_flight[color] == 0 && pwq->flush_color == color) {
		struct trcu_workqueue *wq = pwq->wq;

		pwq->flush_color = -1;
		/* acq_rel: the last decrement orders every pwq's completions
		 * before the flusher's wake-up (pairs with the acquire load in
		 * flush_workqueue()). */
		if (atomic_fetch_sub_explicit(&wq->nr_pwqs_to_flush, 1, memory_order_acq_rel) == 1) {
			atomic_store_explicit(&wq->flush_done, 1, memory_order_release);
			sys_futex_wake(&wq->flush_done, 1);
		}
	}
	return activated;
}

static int work_color_of(uintptr_t d)
{
	return (d & WORK_COLOR) ? 1 : 0;
}

/* Put a work we own (PENDING) on a list of @pwq's pool (locked). */
static void insert_work(struct pool_workqueue *pwq, struct trcu_work *work,
			struct trcu_wq_link *head, uintptr_t extra)
{
	work->priv.pwq = pwq;
	list_add_tail(&work->priv.entry, head);
	/* Release: pairs with the acquire load in work_data() (flush/cancel
	 * read the pool from the word, then lock it and re-check). */
	__atomic_store_n(&work->priv.data,
			 (uintptr_t)pwq->pool | WORK_PENDING | WORK_QUEUED | extra,
			 __ATOMIC_RELEASE);
}

/*
 * The item this thread owns PENDING of while no list or timer holds it
 * (between test_and_set_pending() or a grab and the insertion, arming or
 * release): a fork() child drops the pending state of the items the
 * parent's threads held so, which nothing else would ever clear there
 * (wq_fork_child()).  Per thread, so the queueing path shares no
 * cache line for it.  Set before the ownership is taken and cleared after
 * it is given up, under the lock (pool, timer) that makes it visible, or
 * before the call returns; the item is alive all that time (a pending item
 * must stay allocated).  Relaxed: the fork snapshot is ordered by those
 * locks, which the prepare step holds, and by test_and_set_pending()'s
 * seq_cst RMW after the store.  A thread whose record cannot be allocated
 * goes without (its items are then not covered in a child).
 */
struct wq_owner {
	_Atomic(struct trcu_work *) work;
	struct wq_owner *next;
};

static __thread struct wq_owner *wq_owner_self;
/* Set in a fork() child whose only thread is a worker (a work item called
 * fork()): that child may only exec or _exit (process_one_work()). */
static __thread bool wq_forked_here;

static void wq_owner_exit(void *arg)
{
	struct wq_owner *o = arg;

	pthread_mutex_lock(&wq_state.owner_lock);
	for (struct wq_owner **pp = &wq_state.owners; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	pthread_mutex_unlock(&wq_state.owner_lock);
	free(o);
}

static void wq_own(struct trcu_work *work)
{
	struct wq_owner *o = wq_owner_self;

	if (TRCU_UNLIKELY(!o)) {
		if (!work || !(o = calloc(1, sizeof(*o))))
			return;
		pthread_mutex_lock(&wq_state.owner_lock);
		if (!wq_state.owner_key_made &&
		    !pthread_key_create(&wq_state.owner_key, wq_owner_exit))
			wq_state.owner_key_made = true;
		if (!wq_state.owner_key_made) {
			pthread_mutex_unlock(&wq_state.owner_lock);
			free(o);
			return;
		}
		o->next = wq_state.owners;
		wq_state.owners = o;
		pthread_mutex_unlock(&wq_state.owner_lock);
		pthread_setspecific(wq_state.owner_key, o);
		wq_owner_self = o;
	}
	atomic_store_explicit(&o->work, work, memory_order_relaxed);
}

/* Clear PENDING as the worker takes the item; from now on it may be queued
 * again.  seq_cst exchange: with the queuer's seq_cst fetch_or in
 * test_and_set_pending(), either the queuer sees PENDING clear and queues
 * again, or this worker's function sees what the queuer wrote before its
 * (no-op) queueing attempt (the kernel's smp_mb() in
 * set_work_pool_and_clear_pending()). */
static void set_work_pool_and_clear_pending(struct trcu_work *work, struct worker_pool *pool)
{
	__atomic_exchange_n(&work->priv.data, (uintptr_t)pool, __ATOMIC_SEQ_CST);
}

/* true if we now own PENDING (it was clear). */
static bool test_and_set_pending(struct trcu_work *work)
{
	bool ours;

	wq_own(work);
	/* seq_cst: pairs with set_work_pool_and_clear_pending(). */
	ours = !(__atomic_fetch_or(&work->priv.data, WORK_PENDING, __ATOMIC_SEQ_CST) &
		 WORK_PENDING);
	if (!ours)
		wq_own(NULL);
	return ours;
}

/* ---- Queueing ----------------------------------------------------------------------- */

static bool is_chained_work(struct trcu_workqueue *wq)
{
	struct worker *w = current_worker;

	return w && w->current_pwq && w->current_pwq->wq == wq;
}

static int wq_select_cpu(int cpu)
{
	int n = wq_state.topo.nr_cpus;

	if (cpu >= 0)
		return cpu;
	if (thread_cpu_hint >= 0 && thread_cpu_hint < n)
		return thread_cpu_hint;
	cpu = sched_getcpu();
	return cpu < 0 ? 0 : cpu % n;
}

static struct pool_workqueue *wq_cpu_pwq(struct trcu_workqueue *wq, int cpu)
{
	if (wq->flags & TRCU_WQ_UNBOUND)
		return wq->pwqs[wq_state.topo.pt[wq->scope].cpu_pod[cpu]];
	return wq->pwqs[cpu];
}

/*
 * The kernel's __queue_work(): the caller owns PENDING.  Returns true if
 * queued; false (PENDING released, errno ESHUTDOWN) if the workqueue is
 * destroyed, or draining and this is not chained work.
 */
static void wq_fork_respawn(void);

static bool __queue_work(int cpu, struct trcu_workqueue *wq, struct trcu_work *work)
{
	struct pool_workqueue *pwq;
	struct worker_pool *pool, *last_pool;
	struct worker *wake = NULL;
	uintptr_t d = work_data(work);
	int state;

	wq_fork_respawn();
	cpu = wq_select_cpu(cpu);
	pwq = wq_cpu_pwq(wq, cpu);
	pool = pwq->pool;

	/*
	 * Non-reentrancy across pools: if the item is still running on the pool
	 * it last ran on, for this workqueue, queue it there so that it runs
	 * after the running instance (assign_work() defers it to that worker).
	 */
	last_pool = data_pool(d);
	if (last_pool && last_pool != pool) {
		struct worker *w;

		pthread_mutex_lock(&last_pool->lock);
		w = find_worker_executing_work(last_pool, work);
		if (w && w->current_pwq && w->current_pwq->wq == wq) {
			pwq = w->current_pwq;
			pool = last_pool;
		} else {
			pthread_mutex_unlock(&last_pool->lock);
			pthread_mutex_lock(&pool->lock);
		}
	} else {
		pthread_mutex_lock(&pool->lock);
	}

	/* Under the pool lock: drain_workqueue()/destroy set the state before
	 * they lock every pool to flush, so an insert that gets here after the
	 * flush passed this pool sees the new state. */
	state = atomic_load_explicit(&wq->state, memory_order_relaxed);
	if (state == WQ_DEAD || (state == WQ_DRAINING && !is_chained_work(wq))) {
		pthread_mutex_unlock(&pool->lock);
		set_work_pool_and_clear_pending(work, last_pool);
		wq_own(NULL);
		atomic_fetch_add_explicit(&wq_state.n_refused, 1, memory_order_relaxed);
		errno = ESHUTDOWN;
		return false;
	}

	{
		int color = pwq->work_color;
		uintptr_t cbit = color ? WORK_COLOR : 0;

		pwq->nr_in_flight[color]++;
		if (pwq->nr_active < pwq->max_active) {
			pwq->nr_active++;
			insert_work(pwq, work, &pool->worklist, cbit);
			wake = wake_locked_or_defer(kick_pool_pick(pool));
		} else {
			insert_work(pwq, work, &pwq->inactive_works, cbit | WORK_INACTIVE);
		}
	}
	atomic_fetch_add_explicit(&pool->n_queued, 1, memory_order_relaxed);
	wq_own(NULL);   /* on a list now: before the unlock, it may run and be freed */
	pthread_mutex_unlock(&pool->lock);
	/* Seed 001: the wake-up (a futex system call, the kernel's
	 * wake_up_process()) happens after the pool lock is dropped. */
	wake_worker(wake);
	return true;
}

/* ---- Executing ----------------------------------------------------------------------- */

static void send_mayday(struct pool_workqueue *pwq);

/* The kernel's process_one_work(); pool->lock held, dropped around the call. */
static void process_one_work(struct worker *w, struct trcu_work *work)
{
	struct worker_pool *pool = w->pool;
	struct pool_workqueue *pwq = work->priv.pwq;
	uintptr_t d = __atomic_load_n(&work->priv.data, __ATOMIC_RELAXED);
	bool barrier = is_barrier(work);
	struct worker *wake;
	trcu_work_func_t fn;

	w->current_work = work;
	w->current_func = work->func;
	w->current_pwq = pwq;
	w->current_color = barrier ? -1 : work_color_of(d);
	w->current_start_ns = now_ns();
	pool->watchdog_ts = w->current_start_ns;
	busy_add(pool, w);
	list_del_init(&work->priv.entry);
	/* seq_cst: pairs with the manager's store before it sleeps without a
	 * deadline (see manager_thread()); the load is almost always false. */
	if (atomic_load_explicit(&wq_state.mgr_sleeping_long, memory_order_seq_cst)) {
		atomic_store_explicit(&wq_state.mgr_sleeping_long, false, memory_order_relaxed);
		wake_manager();
	}

	/* Chain kick: for unbound pools (nr_running is always 0) wake another
	 * idle worker if more work is pending.  Picked under the lock, woken
	 * after it is dropped (seed 001). */
	wake = wake_locked_or_defer(kick_pool_pick(pool));

	set_work_pool_and_clear_pending(work, pool);
	if (!barrier)
		atomic_fetch_add_explicit(&pool->n_executed, 1, memory_order_relaxed);
	if (w->flags & WORKER_RESCUER)
		atomic_fetch_add_explicit(&pool->n_rescued, 1, memory_order_relaxed);
	pthread_mutex_unlock(&pool->lock);
	wake_worker(wake);

	fn = w->current_func;
	fn(work);   /* @work may be freed or re-queued from here on */
	if (TRCU_UNLIKELY(wq_forked_here))
		sys_die("fork() from a work item: the child returned from the item into the "
			 "workqueue; such a child may only exec or _exit");

	pthread_mutex_lock(&pool->lock);
	if (w->flags & WORKER_CPU_INTENSIVE)
		worker_clr_flags(w, WORKER_CPU_INTENSIVE);
	busy_del(pool, w);
	w->current_work = NULL;
	w->current_func = NULL;
	w->current_pwq = NULL;
	if (!barrier)
		pwq_dec_nr_in_flight(pwq, w->current_color, true);
}

static void process_scheduled_works(struct worker *w)
{
	while (!list_empty(&w->scheduled))
		process_one_work(w, work_of(w->scheduled.next));
}

static void pool_send_maydays(struct worker_pool *pool)
{
	struct pool_workqueue *last = NULL;

	for (struct trcu_wq_link *e = pool->worklist.next; e != &pool->worklist; e = e->next) {
		struct pool_workqueue *pwq = work_of(e)->priv.pwq;

		/* on_mayday is checked by send_mayday() under mayday_lock. */
		if (pwq && pwq != last && pwq->wq->rescuer)
			send_mayday(pwq);
		last = pwq;
	}
}

static struct worker *create_worker(struct worker_pool *pool);

#define CREATE_COOLDOWN_NS 10000000ull   /* 10 ms between failed attempts */

/*
 * The kernel's manage_workers()/maybe_create_worker(): a worker about to
 * run work while no idle worker is left creates one, so a spare is always
 * ready.  Returns true if it created one (the pool lock was dropped).  On
 * failure it records it and sends maydays; the worker then runs the work
 * itself, and the manager thread retries the creation.
 */
static bool manage_workers(struct worker *w)
{
	struct worker_pool *pool = w->pool;
	uint64_t now = now_ns();
	bool created;

	if (pool->manager_active || pool->nr_workers >= pool_max_workers(pool))
		return false;
	if (pool->create_fail_ns && now - pool->last_retry_ns < CREATE_COOLDOWN_NS)
		return false;
	pool->manager_active = true;
	pthread_mutex_unlock(&pool->lock);
	created = create_worker(pool) != NULL;
	pthread_mutex_lock(&pool->lock);
	pool->manager_active = false;
	if (created) {
		pool->create_fail_ns = 0;
	} else {
		if (!pool->create_fail_ns)
			pool->create_fail_ns = now;
		pool->last_retry_ns = now;
		pool_send_maydays(pool);
	}
	return created;
}

/* The kernel's worker_thread(). */
static void *worker_thread(void *arg)
{
	struct worker *w = arg;
	struct worker_pool *pool = w->pool;

	current_worker = w;
	/* A work item that cancels its worker must not end it (internal.h). */
	sys_cancel_disable();
	worker_sleep(w);   /* until create_worker() kicks it */
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		if (w->flags & WORKER_DIE)
			break;
		worker_leave_idle(w);
recheck:
		if (!need_more_worker(pool))
			goto sleep;
		if (!may_start_working(pool) && manage_workers(w))
			goto recheck;
		worker_clr_flags(w, WORKER_PREP);
		do {
			struct trcu_work *work;

			if (list_empty(&pool->worklist))
				break;
			work = work_of(pool->worklist.next);
			if (assign_work(work, w, NULL))
				process_scheduled_works(w);
		} while (keep_working(pool));
		worker_set_flags(w, WORKER_PREP);
sleep:
		if (w->flags & WORKER_DIE)
			break;   /* shutdown caught it before it went idle */
		worker_enter_idle(w);
		pthread_mutex_unlock(&pool->lock);
		worker_sleep(w);
		pthread_mutex_lock(&pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	current_worker = NULL;
	return NULL;
}

static void worker_set_affinity(struct worker *w)
{
	struct worker_pool *pool = w->pool;
	cpu_set_t set;

	if (wq_state.topo.override)
		return;   /* virtual CPUs: nothing to pin to */
	CPU_ZERO(&set);
	if (pool->cpu >= 0) {
		CPU_SET(pool->cpu, &set);
	} else {
		for (int c = 0; c < wq_state.topo.nr_cpus && c < CPU_SETSIZE; c++)
			if (mask_test(&pool->cpus, c))
				CPU_SET(c, &set);
	}
	/* Best effort: a restricted cpuset may refuse it. */
	(void)pthread_setaffinity_np(w->thread, sizeof(set), &set);
}

/* The kernel's create_worker(): no pool lock held.  The new worker is
 * attached idle, then kicked. */
static struct worker *create_worker(struct worker_pool *pool)
{
	struct worker *w = alloc_worker();

	if (!w)
		goto fail;
	w->pool = pool;
	w->flags = WORKER_PREP | (pool->unbound ? WORKER_UNBOUND : 0);
	pthread_mutex_lock(&pool->lock);
	list_add_tail(&w->node, &pool->workers);
	pool->nr_workers++;
	/* A newly attached worker starts out of nr_running (PREP); entering
	 * idle must not decrement it, so mark it idle by hand. */
	w->flags |= WORKER_IDLE;
	pool->nr_idle++;
	w->last_active_ns = now_ns();
	list_add(&w->idle_entry, &pool->idle_list);
	atomic_store_explicit(&w->wake, 0, memory_order_relaxed);
	pthread_mutex_unlock(&pool->lock);

	if (wq_thread_create(&w->thread, worker_thread, w)) {
		pthread_mutex_lock(&pool->lock);
		list_del_init(&w->idle_entry);
		list_del_init(&w->node);
		pool->nr_idle--;
		pool->nr_workers--;
		pthread_mutex_unlock(&pool->lock);
		recycle_worker(w);
		goto fail;
	}
	pthread_mutex_lock(&pool->lock);
	w->joinable = true;
	pthread_mutex_unlock(&pool->lock);
	worker_set_affinity(w);
	atomic_fetch_add_explicit(&wq_state.n_created, 1, memory_order_relaxed);
	wake_worker(w);
	return w;
fail:
	atomic_fetch_add_explicit(&wq_state.n_create_fail, 1, memory_order_relaxed);
	return NULL;
}

/* ---- Rescuer (forward progress for TRCU_WQ_MEM_RECLAIM) ------------------------------ */

/* Ask @pwq's workqueue's rescuer for help (pool->lock held). */
static void send_mayday(struct pool_workqueue *pwq)
{
	struct trcu_workqueue *wq = pwq->wq;

	if (!wq->rescuer)
		return;
	pthread_mutex_lock(&wq->mayday_lock);
	if (!pwq->on_mayday) {
		pwq->on_mayday = true;
		list_add_tail(&pwq->mayday_node, &wq->maydays);
		atomic_fetch_add_explicit(&wq_state.n_maydays, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&wq->mayday_lock);
	/* Release: pairs with the rescuer's acquire load before it sleeps. */
	atomic_fetch_add_explicit(&wq->rescuer_wake, 1, memory_order_release);
	sys_futex_wake(&wq->rescuer_wake, 1);
}

/* Run @pwq's works from its pool's worklist on the rescuer. */
static void rescue_pwq(struct worker *r, struct pool_workqueue *pwq)
{
	struct worker_pool *pool = pwq->pool;
	struct trcu_wq_link *e, *next;
	bool more = false;

	pthread_mutex_lock(&pool->lock);
	r->pool = pool;   /* attach: process_one_work() uses r->pool */
	for (e = pool->worklist.next; e != &pool->worklist; e = next) {
		struct trcu_work *work = work_of(e);

		next = e->next;
		if (work->priv.pwq == pwq)
			assign_work(work, r, &next);
	}
	process_scheduled_works(r);
	for (e = pool->worklist.next; e != &pool->worklist && !more; e = e->next)
		more = work_of(e)->priv.pwq == pwq;
	/* Still short of workers and more of ours queued: stay on the list. */
	if (more && need_to_create_worker(pool))
		send_mayday(pwq);
	pthread_mutex_unlock(&pool->lock);
}

static void *rescuer_thread(void *arg)
{
	struct worker *r = arg;
	struct trcu_workqueue *wq = r->rescue_wq;

	current_worker = r;
	sys_cancel_disable();   /* as worker_thread() */
	for (;;) {
		/* Acquire: pairs with the release increment in send_mayday(). */
		uint32_t seq = atomic_load_explicit(&wq->rescuer_wake, memory_order_acquire);

		pthread_mutex_lock(&wq->mayday_lock);
		while (!list_empty(&wq->maydays)) {
			struct pool_workqueue *pwq =
				container_of(wq->maydays.next, struct pool_workqueue, mayday_node);

			list_del_init(&pwq->mayday_node);
			pwq->on_mayday = false;
			pthread_mutex_unlock(&wq->mayday_lock);
			rescue_pwq(r, pwq);
			pthread_mutex_lock(&wq->mayday_lock);
		}
		pthread_mutex_unlock(&wq->mayday_lock);
		if (atomic_load_explicit(&wq->rescuer_stop, memory_order_acquire))
			break;
		sys_futex_wait(&wq->rescuer_wake, seq, -1);
	}
	current_worker = NULL;
	return NULL;
}

/* ---- Barriers and flush_work ----------------------------------------------------------- */

struct wq_barrier {
	struct trcu_work work;
	_Atomic uint32_t done;   /* futex: set by wq_barrier_func() */
};

static void wq_barrier_func(struct trcu_work *work)
{
	struct wq_barrier *b = container_of(work, struct wq_barrier, work);

	/* Release: pairs with the acquire load in wait_barrier(); the flusher
	 * may return (and reuse its stack) as soon as it sees it.  The futex
	 * wake only passes the address to the kernel. */
	atomic_store_explicit(&b->done, 1, memory_order_release);
	sys_futex_wake(&b->done, 1);
}

static bool is_barrier(struct trcu_work *work)
{
	return work->func == wq_barrier_func;
}

/* The kernel's insert_wq_barrier() (pool->lock held): right after @target
 * (linked to it) if it is queued, else at the head of @w's scheduled list. */
static void insert_wq_barrier(struct pool_workqueue *pwq, struct wq_barrier *b,
			      struct trcu_work *target, struct worker *w)
{
	struct trcu_wq_link *head;
	uintptr_t linked = 0;

	trcu_init_work(&b->work, wq_barrier_func);
	atomic_store_explicit(&b->done, 0, memory_order_relaxed);
	if (w) {
		head = w->scheduled.next;
	} else {
		head = target->priv.entry.next;
		/* Relaxed RMW under the pool lock (LINKED's lock). */
		linked = __atomic_fetch_or(&target->priv.data, WORK_LINKED,
					   __ATOMIC_RELAXED) & WORK_LINKED;
	}
	insert_work(pwq, &b->work, head, linked);
}

static void wait_barrier(struct wq_barrier *b)
{
	while (!atomic_load_explicit(&b->done, memory_order_acquire))
		sys_futex_wait(&b->done, 0, -1);
}

/* Queue a barrier behind the pending or running instance of @work. */
static bool start_flush_work(struct trcu_work *work, struct wq_barrier *b)
{
	for (;;) {
		uintptr_t d = work_data(work);
		struct worker_pool *pool = data_pool(d);
		struct worker *w;

		if (!pool)
			return false;
		pthread_mutex_lock(&pool->lock);
		d = __atomic_load_n(&work->priv.data, __ATOMIC_RELAXED);
		if (data_pool(d) != pool) {
			pthread_mutex_unlock(&pool->lock);
			continue;   /* moved on meanwhile: look again */
		}
		if (d & WORK_QUEUED) {
			insert_wq_barrier(work->priv.pwq, b, work, NULL);
		} else {
			w = find_worker_executing_work(pool, work);
			if (!w) {
				pthread_mutex_unlock(&pool->lock);
				return false;
			}
			insert_wq_barrier(w->current_pwq, b, work, w);
		}
		pthread_mutex_unlock(&pool->lock);
		return true;
	}
}

static bool own_function(struct trcu_work *work)
{
	return current_worker && current_worker->current_work == work;
}

bool trcu_flush_work(struct trcu_work *work)
{
	struct wq_barrier b;

	if (!work) {
		sys_warn("trcu_flush_work: NULL work item");
		errno = EINVAL;
		return false;
	}
	if (own_function(work)) {
		sys_warn("trcu_flush_work: called from the work item's own function; it "
			  "cannot wait for itself (returning false)");
		errno = EDEADLK;
		return false;
	}
	if (!start_flush_work(work, &b))
		return false;
	wait_barrier(&b);
	return true;
}

/* ---- Pools ------------------------------------------------------------------------------ */

static struct worker_pool *pool_new(int cpu, const struct wq_cpumask *cpus, bool highpri)
{
	struct worker_pool *pool;

	if (wq_state.nr_pools == wq_state.cap_pools) {
		int cap = wq_state.cap_pools ? wq_state.cap_pools * 2 : 16;
		struct worker_pool **p = realloc(wq_state.pools, (size_t)cap * sizeof(*p));

		if (!p)
			return NULL;
		wq_state.pools = p;
		wq_state.cap_pools = cap;
	}
	pool = aligned_alloc(POOL_ALIGN, sizeof(*pool));
	if (!pool)
		return NULL;
	memset(pool, 0, sizeof(*pool));
	pthread_mutex_init(&pool->lock, NULL);
	list_init(&pool->worklist);
	list_init(&pool->idle_list);
	list_init(&pool->workers);
	pool->id = wq_state.nr_pools;
	pool->cpu = cpu;
	pool->unbound = cpu < 0;
	pool->highpri = highpri;
	if (cpus)
		pool->cpus = *cpus;
	else
		mask_set(&pool->cpus, cpu);
	pool->nr_pod_cpus = mask_weight(&pool->cpus);
	pool->watchdog_ts = now_ns();
	wq_state.pools[wq_state.nr_pools++] = pool;
	return pool;
}

/*
 * A reference to the pool with these attributes (wq_state.mutex held):
 * per-CPU pools by (cpu, highpri), unbound ones by (CPU set, highpri), so
 * workqueues with identical attributes share pools, and scopes whose pods
 * coincide (cpu and smt without SMT) share them too, as in the kernel.
 */
static struct worker_pool *get_pool_locked(int cpu, const struct wq_cpumask *cpus, bool highpri)
{
	struct worker_pool *pool = NULL;
	int nr_workers;

	for (int i = 0; i < wq_state.nr_pools && !pool; i++) {
		struct worker_pool *p = wq_state.pools[i];

		if (p->highpri != highpri)
			continue;
		if (cpu >= 0 ? p->cpu == cpu : (p->cpu < 0 && !memcmp(&p->cpus, cpus, sizeof(*cpus))))
			pool = p;
	}
	if (!pool)
		pool = pool_new(cpu, cpus, highpri);
	if (!pool)
		return NULL;
	pthread_mutex_lock(&pool->lock);
	nr_workers = pool->nr_workers;
	pthread_mutex_unlock(&pool->lock);
	/* Every referenced pool keeps at least one worker. */
	if (!nr_workers && !create_worker(pool))
		return NULL;
	pool->refcnt++;
	return pool;
}

/* ---- Workqueues -------------------------------------------------------------------------- */

static void *manager_thread(void *arg);

static int start_manager_locked(void)
{
	if (wq_state.mgr_started)
		return 0;
	atomic_store_explicit(&wq_state.mgr_stop, false, memory_order_relaxed);
	if (wq_thread_create(&wq_state.mgr, manager_thread, NULL))
		return -EAGAIN;
	wq_state.mgr_started = true;
	return 0;
}

static void wq_free_pwqs(struct trcu_workqueue *wq)
{
	for (int i = 0; i < wq->nr_pwqs; i++)
		free(wq->pwqs[i]);
	free(wq->pwqs);
	wq->pwqs = NULL;
	wq->nr_pwqs = 0;
}

static void wq_put_pools_locked(struct trcu_workqueue *wq)
{
	for (int i = 0; i < wq->nr_pwqs; i++)
		if (wq->pwqs[i])
			wq->pwqs[i]->pool->refcnt--;
}

/* A TRCU_WQ_MEM_RECLAIM workqueue's rescuer thread (wq_state.mutex held):
 * 0, or ENOMEM / EAGAIN. */
static int start_rescuer_locked(struct trcu_workqueue *wq)
{
	struct worker *r = alloc_worker();

	if (!r)
		return ENOMEM;
	r->flags = WORKER_RESCUER;
	r->rescue_wq = wq;
	r->pool = wq->pwqs[0]->pool;
	wq->rescuer = r;
	if (wq_thread_create(&r->thread, rescuer_thread, r)) {
		wq->rescuer = NULL;
		recycle_worker(r);
		atomic_fetch_add_explicit(&wq_state.n_create_fail, 1, memory_order_relaxed);
		return EAGAIN;
	}
	r->joinable = true;
	return 0;
}

static struct trcu_workqueue *alloc_wq_locked(const char *name, unsigned int flags, int max_active,
					      enum trcu_wq_affn scope)
{
	struct trcu_workqueue *wq;
	const struct wq_topo *t = &wq_state.topo;
	bool unbound = flags & TRCU_WQ_UNBOUND, highpri = flags & TRCU_WQ_HIGHPRI;
	int err = ENOMEM;

	if (wq_init_locked()) {
		errno = ENOMEM;
		return NULL;
	}
	if (start_manager_locked()) {
		errno = EAGAIN;
		return NULL;
	}
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		goto fail_errno;
	atomic_store_explicit(&wq->magic, WQ_MAGIC, memory_order_relaxed);
	snprintf(wq->name, sizeof(wq->name), "%s", name);
	wq->flags = flags;
	wq->max_active = max_active ? max_active : TRCU_WQ_DFL_ACTIVE;
	if (scope == TRCU_WQ_AFFN_DFL)
		scope = atomic_load_explicit(&wq_state.default_scope, memory_order_relaxed);
	wq->scope = unbound ? scope : TRCU_WQ_AFFN_CPU;
	pthread_mutex_init(&wq->flush_mutex, NULL);
	pthread_mutex_init(&wq->mayday_lock, NULL);
	list_init(&wq->maydays);
	wq->nr_pwqs = unbound ? t->pt[wq->scope].nr_pods : t->nr_cpus;
	wq->pwqs = calloc((size_t)wq->nr_pwqs, sizeof(*wq->pwqs));
	if (!wq->pwqs)
		goto fail;
	for (int i = 0; i < wq->nr_pwqs; i++) {
		struct pool_workqueue *pwq = calloc(1, sizeof(*pwq));
		struct worker_pool *pool;

		if (!pwq)
			goto fail;
		pool = unbound ? get_pool_locked(-1, &t->pt[wq->scope].pod_cpus[i], highpri)
			       : get_pool_locked(i, NULL, highpri);
		if (!pool) {
			free(pwq);
			err = EAGAIN;
			goto fail;
		}
		pwq->pool = pool;
		pwq->wq = wq;
		pwq->max_active = wq->max_active;
		pwq->flush_color = -1;
		list_init(&pwq->inactive_works);
		list_init(&pwq->mayday_node);
		wq->pwqs[i] = pwq;
	}
	if (flags & TRCU_WQ_MEM_RECLAIM) {
		err = start_rescuer_locked(wq);
		if (err)
			goto fail;
	}
	wq->next = wq_state.wqs;
	wq_state.wqs = wq;
	return wq;
fail:
	if (wq->pwqs) {
		wq_put_pools_locked(wq);
		wq_free_pwqs(wq);
	}
	pthread_mutex_destroy(&wq->flush_mutex);
	pthread_mutex_destroy(&wq->mayday_lock);
	free(wq);
fail_errno:
	errno = err;
	return NULL;
}

struct trcu_workqueue *trcu_alloc_workqueue_scope(const char *name, unsigned int flags,
						  int max_active, enum trcu_wq_affn scope)
{
	struct trcu_workqueue *wq;

	if (!name) {
		sys_warn("trcu_alloc_workqueue: NULL name");
		errno = EINVAL;
		return NULL;
	}
	if (flags & ~TRCU_WQ_FLAGS_MASK) {
		sys_warn("trcu_alloc_workqueue(\"%s\"): unknown flags 0x%x (accepted: "
			  "TRCU_WQ_UNBOUND, TRCU_WQ_HIGHPRI, TRCU_WQ_MEM_RECLAIM)",
			  name, flags & ~TRCU_WQ_FLAGS_MASK);
		errno = EINVAL;
		return NULL;
	}
	if (max_active < 0 || max_active > TRCU_WQ_MAX_ACTIVE) {
		sys_warn("trcu_alloc_workqueue(\"%s\"): max_active %d refused (accepted: 0..%d, "
			  "0 = %d)", name, max_active, TRCU_WQ_MAX_ACTIVE, TRCU_WQ_DFL_ACTIVE);
		errno = EINVAL;
		return NULL;
	}
	if ((int)scope < TRCU_WQ_AFFN_DFL || scope >= TRCU_WQ_AFFN_NR) {
		sys_warn("trcu_alloc_workqueue(\"%s\"): affinity scope %d refused", name,
			  (int)scope);
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&wq_state.mutex);
	wq = alloc_wq_locked(name, flags, max_active, scope);
	pthread_mutex_unlock(&wq_state.mutex);
	return wq;
}

struct trcu_workqueue *trcu_alloc_workqueue(const char *name, unsigned int flags, int max_active)
{
	return trcu_alloc_workqueue_scope(name, flags, max_active, TRCU_WQ_AFFN_DFL);
}

struct trcu_workqueue *trcu_alloc_ordered_workqueue(const char *name, unsigned int flags)
{
	return trcu_alloc_workqueue_scope(name, flags | TRCU_WQ_UNBOUND, 1, TRCU_WQ_AFFN_SYSTEM);
}

static struct trcu_workqueue *system_wq_get(bool unbound)
{
	struct trcu_workqueue **slot;

	pthread_mutex_lock(&wq_state.mutex);
	slot = unbound ? &wq_state.system_unbound_wq : &wq_state.system_wq;
	if (!*slot)
		*slot = alloc_wq_locked(unbound ? "events_unbound" : "events",
					unbound ? TRCU_WQ_UNBOUND : 0, 0, TRCU_WQ_AFFN_DFL);
	pthread_mutex_unlock(&wq_state.mutex);
	return *slot;
}

struct trcu_workqueue *trcu_system_wq(void)
{
	return system_wq_get(false);
}

struct trcu_workqueue *trcu_system_unbound_wq(void)
{
	return system_wq_get(true);
}

/*
 * Checks a handle passed in by the caller.  0: usable; -EINVAL (NULL),
 * -ESHUTDOWN (destroyed) with a message; a pointer that is no workqueue at
 * all cannot be used safely: abort.
 */
static int wq_check(struct trcu_workqueue *wq, const char *fn)
{
	if (!wq) {
		sys_warn("%s: NULL workqueue", fn);
		return -EINVAL;
	}
	uint32_t magic = atomic_load_explicit(&wq->magic, memory_order_relaxed);

	if (magic == WQ_MAGIC_DEAD) {
		/* Said once per workqueue: a racing producer may call often. */
		if (!atomic_exchange_explicit(&wq->warned_dead, true, memory_order_relaxed))
			sys_warn("%s: workqueue \"%s\" has been destroyed (refused; said once)",
				  fn, wq->name);
		return -ESHUTDOWN;
	}
	if (magic != WQ_MAGIC)
		sys_die("%s: %p is not a treercu workqueue (bad magic 0x%08x)", fn, (void *)wq,
			 magic);
	return 0;
}

/* ---- Flush and drain ------------------------------------------------------------------- */

/*
 * Flush colours: every pwq tags new works with pwq->work_color.  A flush
 * (serialised by wq->flush_mutex) flips each pwq's colour under its pool
 * lock and waits until no work of the old colour is left in any pwq.  With
 * flushes serialised two colours suffice: the previous flush emptied the
 * colour this one flips to.
 */
static void flush_workqueue_inner(struct trcu_workqueue *wq)
{
	pthread_mutex_lock(&wq->flush_mutex);
	atomic_store_explicit(&wq->flush_done, 0, memory_order_relaxed);
	/* Bias of 1 so that no pwq can complete the flush before all are set. */
	atomic_store_explicit(&wq->nr_pwqs_to_flush, 1, memory_order_relaxed);
	for (int i = 0; i < wq->nr_pwqs; i++) {
		struct pool_workqueue *pwq = wq->pwqs[i];
		int c;

		pthread_mutex_lock(&pwq->pool->lock);
		c = pwq->work_color;
		if (pwq->nr_in_flight[c]) {
			pwq->flush_color = c;
			atomic_fetch_add_explicit(&wq->nr_pwqs_to_flush, 1, memory_order_relaxed);
		}
		pwq->work_color = c ^ 1;
		pthread_mutex_unlock(&pwq->pool->lock);
	}
	/* acq_rel: pairs with the decrements in pwq_dec_nr_in_flight(). */
	if (atomic_fetch_sub_explicit(&wq->nr_pwqs_to_flush, 1, memory_order_acq_rel) != 1) {
		/* Acquire: pairs with the release store of flush_done. */
		while (!atomic_load_explicit(&wq->flush_done, memory_order_acquire))
			sys_futex_wait(&wq->flush_done, 0, -1);
	}
	pthread_mutex_unlock(&wq->flush_mutex);
}

int trcu_flush_workqueue(struct trcu_workqueue *wq)
{
	int ret = wq_check(wq, "trcu_flush_workqueue");

	if (ret)
		return ret == -ESHUTDOWN ? -EINVAL : ret;
	if (is_chained_work(wq)) {
		sys_warn("trcu_flush_workqueue(\"%s\"): called from one of its own work items; "
			  "it would wait for itself (refused)", wq->name);
		return -EDEADLK;
	}
	flush_workqueue_inner(wq);
	return 0;
}

static bool wq_is_empty(struct trcu_workqueue *wq)
{
	bool empty = true;

	for (int i = 0; i < wq->nr_pwqs && empty; i++) {
		struct pool_workqueue *pwq = wq->pwqs[i];

		pthread_mutex_lock(&pwq->pool->lock);
		empty = !pwq->nr_in_flight[0] && !pwq->nr_in_flight[1];
		pthread_mutex_unlock(&pwq->pool->lock);
	}
	return empty;
}

/* Flush until empty; the workqueue is in WQ_DRAINING meanwhile. */
static void drain_inner(struct trcu_workqueue *wq)
{
	for (unsigned int n = 1;; n++) {
		flush_workqueue_inner(wq);
		if (wq_is_empty(wq))
			return;
		if (n == 10 || n % 1000 == 0)
			sys_warn("workqueue \"%s\": still not empty after %u flushes while "
				  "draining (a work item keeps re-queueing itself?)", wq->name, n);
	}
}

int trcu_drain_workqueue(struct trcu_workqueue *wq)
{
	int ret = wq_check(wq, "trcu_drain_workqueue");

	if (ret)
		return ret == -ESHUTDOWN ? -EINVAL : ret;
	if (is_chained_work(wq)) {
		sys_warn("trcu_drain_workqueue(\"%s\"): called from one of its own work items; "
			  "it would wait for itself (refused)", wq->name);
		return -EDEADLK;
	}
	pthread_mutex_lock(&wq_state.mutex);
	/* Relaxed store: __queue_work() reads it under the pool lock, which the
	 * flush below takes for every pwq after this store. */
	if (wq->nr_drainers++ == 0)
		atomic_store_explicit(&wq->state, WQ_DRAINING, memory_order_relaxed);
	pthread_mutex_unlock(&wq_state.mutex);
	drain_inner(wq);
	pthread_mutex_lock(&wq_state.mutex);
	if (--wq->nr_drainers == 0 && !wq->destroying)
		atomic_store_explicit(&wq->state, WQ_ALIVE, memory_order_relaxed);
	pthread_mutex_unlock(&wq_state.mutex);
	return 0;
}

static int cancel_timers_of(struct trcu_workqueue *wq);

/* Drain, then retire @wq (wq_state.mutex not held; @destroying set). */
static void destroy_inner(struct trcu_workqueue *wq)
{
	int n = cancel_timers_of(wq);

	if (n)
		sys_warn("trcu_destroy_workqueue(\"%s\"): %d delayed work item%s still armed: "
			  "cancelled", wq->name, n, n == 1 ? "" : "s");
	drain_inner(wq);
	if (wq->rescuer) {
		/* Release: pairs with the rescuer's acquire load of rescuer_stop. */
		atomic_store_explicit(&wq->rescuer_stop, true, memory_order_release);
		atomic_fetch_add_explicit(&wq->rescuer_wake, 1, memory_order_release);
		sys_futex_wake(&wq->rescuer_wake, 1);
		pthread_join(wq->rescuer->thread, NULL);
		recycle_worker(wq->rescuer);
		wq->rescuer = NULL;
	}
	pthread_mutex_lock(&wq_state.mutex);
	atomic_store_explicit(&wq->state, WQ_DEAD, memory_order_relaxed);
	atomic_store_explicit(&wq->magic, WQ_MAGIC_DEAD, memory_order_relaxed);
	wq_put_pools_locked(wq);
	for (struct trcu_workqueue **pp = &wq_state.wqs; *pp; pp = &(*pp)->next) {
		if (*pp == wq) {
			*pp = wq->next;
			break;
		}
	}
	wq->next = wq_state.dead_wqs;
	wq_state.dead_wqs = wq;
	pthread_mutex_unlock(&wq_state.mutex);
}

static int __trcu_destroy_workqueue(struct trcu_workqueue *wq)
{
	int ret = wq_check(wq, "trcu_destroy_workqueue");

	if (ret)
		return -EINVAL;
	if (is_chained_work(wq)) {
		sys_warn("trcu_destroy_workqueue(\"%s\"): called from one of its own work items "
			  "(refused)", wq->name);
		return -EDEADLK;
	}
	pthread_mutex_lock(&wq_state.mutex);
	if (wq == wq_state.system_wq || wq == wq_state.system_unbound_wq) {
		pthread_mutex_unlock(&wq_state.mutex);
		sys_warn("trcu_destroy_workqueue(\"%s\"): a system workqueue is destroyed only "
			  "by trcu_wq_shutdown() (refused)", wq->name);
		return -EINVAL;
	}
	if (wq->destroying) {
		pthread_mutex_unlock(&wq_state.mutex);
		sys_warn("trcu_destroy_workqueue(\"%s\"): already being destroyed (refused)",
			  wq->name);
		return -EINVAL;
	}
	/* Queueing is refused from here on except chained work (see
	 * __queue_work()). */
	wq->destroying = true;
	atomic_store_explicit(&wq->state, WQ_DRAINING, memory_order_relaxed);
	pthread_mutex_unlock(&wq_state.mutex);
	destroy_inner(wq);
	return 0;
}

int trcu_destroy_workqueue(struct trcu_workqueue *wq)
{
	int cs = sys_cancel_disable();
	int ret = __trcu_destroy_workqueue(wq);

	sys_cancel_restore(cs);
	return ret;
}

/* ---- Queueing API ------------------------------------------------------------------------ */

static bool check_queue_args(const char *fn, int cpu, struct trcu_workqueue *wq,
			     struct trcu_work *work)
{
	int ret;

	if (!work || !work->func) {
		sys_warn("%s: %s", fn, work ? "work item has no function (not initialised?)"
					     : "NULL work item");
		errno = EINVAL;
		return false;
	}
	ret = wq_check(wq, fn);
	if (ret) {
		errno = -ret;
		return false;
	}
	if (cpu < -1 || cpu >= wq_state.topo.nr_cpus) {
		sys_warn("%s: CPU %d out of range (0..%d, or -1 for the caller's)", fn, cpu,
			  wq_state.topo.nr_cpus - 1);
		errno = EINVAL;
		return false;
	}
	return true;
}

bool trcu_queue_work_on(int cpu, struct trcu_workqueue *wq, struct trcu_work *work)
{
	if (!check_queue_args("trcu_queue_work", cpu, wq, work))
		return false;
	if (!test_and_set_pending(work))
		return false;
	return __queue_work(cpu, wq, work);
}

bool trcu_queue_work(struct trcu_workqueue *wq, struct trcu_work *work)
{
	return trcu_queue_work_on(-1, wq, work);
}

bool trcu_queue_work_node(int node, struct trcu_workqueue *wq, struct trcu_work *work)
{
	const struct wq_topo *t = &wq_state.topo;
	int cpu, pick = -1;

	if (!check_queue_args("trcu_queue_work_node", -1, wq, work))
		return false;
	cpu = wq_select_cpu(-1);
	if (t->node_of[cpu] == node) {
		pick = cpu;
	} else {
		for (int c = 0; c < t->nr_cpus && pick < 0; c++)
			if (t->node_of[c] == node)
				pick = c;
	}
	if (pick < 0) {
		sys_warn("trcu_queue_work_node: no CPU in NUMA node %d", node);
		errno = EINVAL;
		return false;
	}
	if (!test_and_set_pending(work))
		return false;
	return __queue_work(pick, wq, work);
}

/* ---- Delayed work: the timer heap (wq_state.timer_lock held) ---------------------------- */

static void heap_swap(int a, int b)
{
	struct trcu_delayed_work **h = wq_state.heap, *t = h[a];

	h[a] = h[b];
	h[b] = t;
	h[a]->priv.timer_idx = a;
	h[b]->priv.timer_idx = b;
}

static void heap_up(int i)
{
	while (i > 0) {
		int p = (i - 1) / 2;

		if (wq_state.heap[p]->priv.expires_ns <= wq_state.heap[i]->priv.expires_ns)
			break;
		heap_swap(i, p);
		i = p;
	}
}

static void heap_down(int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < wq_state.heap_n &&
		    wq_state.heap[l]->priv.expires_ns < wq_state.heap[m]->priv.expires_ns)
			m = l;
		if (r < wq_state.heap_n &&
		    wq_state.heap[r]->priv.expires_ns < wq_state.heap[m]->priv.expires_ns)
			m = r;
		if (m == i)
			return;
		heap_swap(i, m);
		i = m;
	}
}

/*
 * Make room for one more armed timer before the caller takes PENDING, so
 * that arming it cannot fail: out of memory, the call returns false with
 * errno ENOMEM and the item is untouched.  heap_cap >= heap_n +
 * heap_reserved always (under timer_lock).
 */
static int heap_reserve(void)
{
	int need, ret = 0;

	pthread_mutex_lock(&wq_state.timer_lock);
	need = wq_state.heap_n + wq_state.heap_reserved + 1;
	if (need > wq_state.heap_cap) {
		int cap = wq_state.heap_cap ? wq_state.heap_cap * 2 : 64;
		struct trcu_delayed_work **h;

		if (cap < need)
			cap = need;
		h = realloc(wq_state.heap, (size_t)cap * sizeof(*h));
		if (h) {
			wq_state.heap = h;
			wq_state.heap_cap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		wq_state.heap_reserved++;
	pthread_mutex_unlock(&wq_state.timer_lock);
	return ret;
}

static void heap_unreserve(void)
{
	pthread_mutex_lock(&wq_state.timer_lock);
	wq_state.heap_reserved--;
	pthread_mutex_unlock(&wq_state.timer_lock);
}

/* Arm dw in a slot reserved by heap_reserve() (timer_lock held). */
static void heap_insert(struct trcu_delayed_work *dw)
{
	wq_state.heap_reserved--;
	dw->priv.timer_idx = wq_state.heap_n;
	wq_state.heap[wq_state.heap_n++] = dw;
	heap_up(dw->priv.timer_idx);
	/* Relaxed RMW: TIMER changes only under timer_lock. */
	__atomic_fetch_or(&dw->work.priv.data, WORK_TIMER, __ATOMIC_RELAXED);
}

static void heap_remove(struct trcu_delayed_work *dw)
{
	int i = dw->priv.timer_idx, last = --wq_state.heap_n;

	if (i != last) {
		heap_swap(i, last);
		heap_down(i);
		heap_up(i);
	}
	dw->priv.timer_idx = -1;
	__atomic_fetch_and(&dw->work.priv.data, ~WORK_TIMER, __ATOMIC_RELAXED);
}

/* Arm @dw (we own PENDING and a heap_reserve() slot, which this uses or
 * gives back).  Returns true (queued or armed) or false. */
static bool __queue_delayed_work(int cpu, struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
				 uint64_t delay_us)
{
	bool earliest;

	if (!delay_us) {
		heap_unreserve();
		return __queue_work(cpu, wq, &dw->work);
	}
	wq_fork_respawn();   /* the manager fires the timers */
	pthread_mutex_lock(&wq_state.timer_lock);
	dw->priv.wq = wq;
	dw->priv.cpu = cpu;
	dw->priv.expires_ns = now_ns() + delay_us * 1000;
	heap_insert(dw);
	earliest = wq_state.heap[0] == dw;
	wq_own(NULL);   /* on the timer heap now */
	pthread_mutex_unlock(&wq_state.timer_lock);
	atomic_fetch_add_explicit(&wq_state.n_queued_timer, 1, memory_order_relaxed);
	if (earliest)
		wake_manager();
	return true;
}

/* Fire expired timers; returns the next expiry or UINT64_MAX. */
static uint64_t fire_timers(uint64_t now)
{
	uint64_t next = UINT64_MAX;

	pthread_mutex_lock(&wq_state.timer_lock);
	while (wq_state.heap_n && wq_state.heap[0]->priv.expires_ns <= now) {
		struct trcu_delayed_work *dw = wq_state.heap[0];
		struct trcu_workqueue *wq = dw->priv.wq;
		int cpu = dw->priv.cpu;

		wq_own(&dw->work);
		heap_remove(dw);
		pthread_mutex_unlock(&wq_state.timer_lock);
		/* PENDING is ours now (the kernel's delayed_work_timer_fn()). */
		if (!__queue_work(cpu, wq, &dw->work))
			sys_warn("delayed work dropped: workqueue \"%s\" is draining or destroyed",
				  wq->name);
		pthread_mutex_lock(&wq_state.timer_lock);
	}
	if (wq_state.heap_n)
		next = wq_state.heap[0]->priv.expires_ns;
	pthread_mutex_unlock(&wq_state.timer_lock);
	return next;
}

/* Disarm every timer aimed at @wq and release its PENDING; returns how many. */
static int cancel_timers_of(struct trcu_workqueue *wq)
{
	int n = 0;

	pthread_mutex_lock(&wq_state.timer_lock);
	for (int i = 0; i < wq_state.heap_n;) {
		struct trcu_delayed_work *dw = wq_state.heap[i];

		if (dw->priv.wq != wq) {
			i++;
			continue;
		}
		heap_remove(dw);
		set_work_pool_and_clear_pending(&dw->work, data_pool(work_data(&dw->work)));
		n++;
		i = 0;   /* the heap was reordered */
	}
	pthread_mutex_unlock(&wq_state.timer_lock);
	return n;
}

static bool check_delay(const char *fn, uint64_t delay_us)
{
	if (delay_us > 365ull * 24 * 3600 * 1000000) {
		sys_warn("%s: delay %llu us refused (more than a year)", fn,
			  (unsigned long long)delay_us);
		errno = EINVAL;
		return false;
	}
	return true;
}

bool trcu_queue_delayed_work_on(int cpu, struct trcu_workqueue *wq,
				struct trcu_delayed_work *dw, uint64_t delay_us)
{
	if (!check_queue_args("trcu_queue_delayed_work", cpu, wq, dw ? &dw->work : NULL) ||
	    !check_delay("trcu_queue_delayed_work", delay_us))
		return false;
	if (heap_reserve()) {
		sys_warn("trcu_queue_delayed_work: out of memory for the timer (refused)");
		errno = ENOMEM;
		return false;
	}
	if (!test_and_set_pending(&dw->work)) {
		heap_unreserve();
		return false;
	}
	return __queue_delayed_work(cpu, wq, dw, delay_us);
}

bool trcu_queue_delayed_work(struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
			     uint64_t delay_us)
{
	return trcu_queue_delayed_work_on(-1, wq, dw, delay_us);
}

/* ---- Cancelling -------------------------------------------------------------------------- */

/*
 * The kernel's try_to_grab_pending(): take PENDING away from whoever holds
 * it.  1: it was pending (timer disarmed or removed from its list), and
 * now we own PENDING; 0: it was idle, we own PENDING; -EAGAIN: in transit,
 * try again; -ENOENT: a cancel_sync owns it.
 */
static int try_to_grab_pending(struct trcu_work *work)
{
	uintptr_t d = work_data(work);
	struct worker_pool *pool;
	struct worker *wake;

	if (d & WORK_TIMER) {
		struct trcu_delayed_work *dw = trcu_to_delayed_work(work);

		pthread_mutex_lock(&wq_state.timer_lock);
		if (dw->priv.timer_idx >= 0) {
			wq_own(work);
			heap_remove(dw);
			pthread_mutex_unlock(&wq_state.timer_lock);
			return 1;
		}
		pthread_mutex_unlock(&wq_state.timer_lock);
	}
	if (test_and_set_pending(work))
		return 0;
	d = work_data(work);
	if (d & WORK_CANCELING)
		return -ENOENT;
	pool = data_pool(d);
	if (!pool)
		return -EAGAIN;
	pthread_mutex_lock(&pool->lock);
	d = __atomic_load_n(&work->priv.data, __ATOMIC_RELAXED);
	if (!(d & WORK_QUEUED) || data_pool(d) != pool) {
		pthread_mutex_unlock(&pool->lock);
		return -EAGAIN;
	}
	{
		struct pool_workqueue *pwq = work->priv.pwq;

		/* An inactive work may have barriers linked behind it: activate
		 * it first so they move to the worklist (the kernel does the same). */
		if (d & WORK_INACTIVE) {
			pwq->nr_active++;
			move_linked_works(work, &pool->worklist);
		}
		wq_own(work);
		list_del_init(&work->priv.entry);
		pwq_dec_nr_in_flight(pwq, work_color_of(d), true);
		/* Release: pairs with work_data() of later flushers. */
		__atomic_store_n(&work->priv.data, (uintptr_t)pool | WORK_PENDING,
				 __ATOMIC_RELEASE);
	}
	wake = wake_locked_or_defer(kick_pool_pick(pool));
	pthread_mutex_unlock(&pool->lock);
	wake_worker(wake);
	return 1;
}

/* Release PENDING (and CANCELING) that we own. */
static void release_pending(struct trcu_work *work)
{
	set_work_pool_and_clear_pending(work, data_pool(work_data(work)));
	wq_own(NULL);
}

static bool __cancel_work(struct trcu_work *work, bool sync, const char *fn)
{
	bool self = own_function(work);
	int ret;

	if (!work) {
		sys_warn("%s: NULL work item", fn);
		errno = EINVAL;
		return false;
	}
	for (;;) {
		uint32_t seq = atomic_load_explicit(&wq_state.cancel_seq, memory_order_acquire);

		ret = try_to_grab_pending(work);
		if (ret >= 0)
			break;
		if (ret == -ENOENT) {
			/* Another cancel_sync owns the item: a non-sync cancel has
			 * nothing to do; a sync one waits for it to finish. */
			if (!sync || self)
				return false;
			/* Acquire: pairs with the release increment after a
			 * cancel_sync let go of the item. */
			sys_futex_wait(&wq_state.cancel_seq, seq, 10000000);
			continue;
		}
		sched_yield();   /* in transit between owner and list */
	}
	if (sync && !self) {
		struct wq_barrier b;

		/* Relaxed RMW: we own PENDING; CANCELING tells others to wait. */
		__atomic_fetch_or(&work->priv.data, WORK_CANCELING, __ATOMIC_RELAXED);
		if (start_flush_work(work, &b))
			wait_barrier(&b);
	}
	release_pending(work);
	if (sync) {
		atomic_fetch_add_explicit(&wq_state.cancel_seq, 1, memory_order_release);
		sys_futex_wake(&wq_state.cancel_seq, INT32_MAX);
	}
	if (sync && self)
		sys_warn("%s: called from the work item's own function: the pending instance "
			  "(if any) is removed, but it cannot wait for itself", fn);
	return ret == 1;
}

bool trcu_cancel_work(struct trcu_work *work)
{
	return __cancel_work(work, false, "trcu_cancel_work");
}

bool trcu_cancel_work_sync(struct trcu_work *work)
{
	return __cancel_work(work, true, "trcu_cancel_work_sync");
}

bool trcu_cancel_delayed_work(struct trcu_delayed_work *dw)
{
	return __cancel_work(dw ? &dw->work : NULL, false, "trcu_cancel_delayed_work");
}

bool trcu_cancel_delayed_work_sync(struct trcu_delayed_work *dw)
{
	return __cancel_work(dw ? &dw->work : NULL, true, "trcu_cancel_delayed_work_sync");
}

bool trcu_mod_delayed_work_on(int cpu, struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
			      uint64_t delay_us)
{
	int ret;

	if (!check_queue_args("trcu_mod_delayed_work", cpu, wq, dw ? &dw->work : NULL) ||
	    !check_delay("trcu_mod_delayed_work", delay_us))
		return false;
	if (heap_reserve()) {
		sys_warn("trcu_mod_delayed_work: out of memory for the timer (refused)");
		errno = ENOMEM;
		return false;
	}
	for (;;) {
		ret = try_to_grab_pending(&dw->work);
		if (ret >= 0)
			break;
		if (ret == -ENOENT) {
			heap_unreserve();
			return false;   /* being cancelled: leave it cancelled */
		}
		sched_yield();
	}
	if (!__queue_delayed_work(cpu, wq, dw, delay_us))
		return false;
	return ret == 1;
}

bool trcu_mod_delayed_work(struct trcu_workqueue *wq, struct trcu_delayed_work *dw,
			   uint64_t delay_us)
{
	return trcu_mod_delayed_work_on(-1, wq, dw, delay_us);
}

bool trcu_flush_delayed_work(struct trcu_delayed_work *dw)
{
	struct trcu_workqueue *wq = NULL;
	int cpu = -1;

	if (!dw) {
		sys_warn("trcu_flush_delayed_work: NULL work item");
		errno = EINVAL;
		return false;
	}
	pthread_mutex_lock(&wq_state.timer_lock);
	if (dw->priv.timer_idx >= 0) {
		wq = dw->priv.wq;
		cpu = dw->priv.cpu;
		wq_own(&dw->work);
		heap_remove(dw);
	}
	pthread_mutex_unlock(&wq_state.timer_lock);
	if (wq && !__queue_work(cpu, wq, &dw->work))
		sys_warn("trcu_flush_delayed_work: workqueue \"%s\" is draining or destroyed: "
			  "item dropped", wq->name);
	return trcu_flush_work(&dw->work);
}

struct trcu_work *trcu_current_work(void)
{
	return current_worker ? current_worker->current_work : NULL;
}

/* ---- The manager thread: timers, stall watchdog, reaper, mayday retries ----------------- */

/* The kernel's too_many_workers() (pool->lock and wq_state.mutex held).
 * Pools no workqueue uses any more may lose every idle worker. */
static bool too_many_workers(struct worker_pool *pool)
{
	int nr_idle = pool->nr_idle, nr_busy = pool->nr_workers - pool->nr_idle;

	if (pool->manager_active)
		return false;
	if (!pool->refcnt)
		return nr_idle > 0;
	return nr_idle > 2 && (nr_idle - 2) * 4 >= nr_busy;
}

/*
 * Userspace has no scheduler hook to tell that a work item blocked.  The
 * watchdog stands in for it: a pool with pending work where no item started
 * for stall_us is stalled.  Workers of a per-CPU pool running an item for
 * that long leave concurrency management (WORKER_CPU_INTENSIVE, as the
 * kernel does for CPU hogs); then an idle worker is woken or, if none, one
 * is created even past the max-workers cap.  pool->lock held; dropped and
 * retaken around a creation.
 */
static void pool_watchdog(struct worker_pool *pool, uint64_t now, uint64_t stall_ns)
{
	struct worker *wake;
	bool create;

	if (list_empty(&pool->worklist) || now - pool->watchdog_ts < stall_ns)
		return;
	for (struct trcu_wq_link *e = pool->workers.next; e != &pool->workers; e = e->next) {
		struct worker *w = container_of(e, struct worker, node);

		if (w->current_work && !(w->flags & WORKER_NOT_RUNNING) &&
		    now - w->current_start_ns >= stall_ns)
			worker_set_flags(w, WORKER_CPU_INTENSIVE);
	}
	wake = kick_pool_pick(pool);
	create = !wake && !pool->manager_active && need_to_create_worker(pool);
	pool->watchdog_ts = now;
	atomic_fetch_add_explicit(&wq_state.n_stalls, 1, memory_order_relaxed);
	if (create)
		pool->manager_active = true;
	pthread_mutex_unlock(&pool->lock);
	wake_worker(wake);
	if (create) {
		bool ok = create_worker(pool) != NULL;

		pthread_mutex_lock(&pool->lock);
		pool->manager_active = false;
		if (!ok) {
			if (!pool->create_fail_ns)
				pool->create_fail_ns = now;
			pool->last_retry_ns = now;
			pool_send_maydays(pool);
		} else {
			pool->create_fail_ns = 0;
		}
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_lock(&pool->lock);
}

/* Creation failed earlier and work is waiting: retry after the cooldown,
 * and keep the rescuers asked (the kernel's mayday timer). */
static void pool_retry_create(struct worker_pool *pool, uint64_t now)
{
	bool ok;

	if (!pool->create_fail_ns || pool->manager_active || !need_to_create_worker(pool) ||
	    now - pool->last_retry_ns < CREATE_COOLDOWN_NS)
		return;
	pool->last_retry_ns = now;
	pool->manager_active = true;
	pthread_mutex_unlock(&pool->lock);
	ok = create_worker(pool) != NULL;
	pthread_mutex_lock(&pool->lock);
	pool->manager_active = false;
	if (ok)
		pool->create_fail_ns = 0;
	else
		pool_send_maydays(pool);
}

/* One pass over the pools; returns when the next pass is due and sets
 * *busy if some pool has work pending or running (the watchdog's tick). */
static uint64_t watch_pools(uint64_t now, bool *busy)
{
	uint64_t stall_ns = (uint64_t)atomic_load_explicit(&wq_state.stall_us,
							   memory_order_relaxed) * 1000;
	uint64_t idle_ns = (uint64_t)atomic_load_explicit(&wq_state.idle_timeout_ms,
							  memory_order_relaxed) * 1000000;
	uint64_t next = UINT64_MAX;
	struct worker *zombies = NULL;

	pthread_mutex_lock(&wq_state.mutex);
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];
		struct worker *dying = NULL;

		pthread_mutex_lock(&pool->lock);
		pool_watchdog(pool, now, stall_ns);
		pool_retry_create(pool, now);
		if (!list_empty(&pool->worklist) || pool->nr_workers > pool->nr_idle) {
			uint64_t t = now + (stall_ns / 2 > 500000 ? stall_ns / 2 : 500000);

			next = t < next ? t : next;
			*busy = true;
		}
		/* Reap the least recently idle workers past the timeout. */
		while (too_many_workers(pool)) {
			struct worker *w = container_of(pool->idle_list.prev, struct worker,
							idle_entry);
			uint64_t expires = w->last_active_ns + idle_ns;

			if (expires > now) {
				next = expires < next ? expires : next;
				break;
			}
			list_del_init(&w->idle_entry);
			list_del_init(&w->node);
			pool->nr_idle--;
			pool->nr_workers--;
			w->flags |= WORKER_DIE;
			w->next_free = dying;
			dying = w;
			atomic_fetch_add_explicit(&wq_state.n_reaped, 1, memory_order_relaxed);
		}
		pthread_mutex_unlock(&pool->lock);
		while (dying) {
			struct worker *w = dying;

			dying = w->next_free;
			wake_worker(w);
			w->next_free = zombies;
			zombies = w;
		}
	}
	pthread_mutex_unlock(&wq_state.mutex);
	while (zombies) {
		struct worker *w = zombies;

		zombies = w->next_free;
		pthread_join(w->thread, NULL);
		recycle_worker(w);
	}
	return next;
}

/* Work pending or running anywhere?  (Rechecked after announcing a long
 * sleep: see manager_thread().) */
static bool pools_busy(void)
{
	bool busy = false;

	pthread_mutex_lock(&wq_state.mutex);
	for (int i = 0; i < wq_state.nr_pools && !busy; i++) {
		struct worker_pool *pool = wq_state.pools[i];

		pthread_mutex_lock(&pool->lock);
		busy = !list_empty(&pool->worklist) || pool->nr_workers > pool->nr_idle;
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&wq_state.mutex);
	return busy;
}

static void *manager_thread(void *arg)
{
	sys_cancel_disable();   /* as worker_thread() */
	while (!atomic_load_explicit(&wq_state.mgr_stop, memory_order_acquire)) {
		/* Acquire: pairs with the release increment in wake_manager(). */
		uint32_t seq = atomic_load_explicit(&wq_state.mgr_futex, memory_order_acquire);
		uint64_t now = now_ns(), next, t;
		bool busy = false;
		long timeout;

		next = fire_timers(now);
		t = watch_pools(now_ns(), &busy);
		next = t < next ? t : next;
		if (!busy) {
			/*
			 * Nothing to watch: sleep until the next timer or reaping
			 * deadline, however far.  seq_cst store, then recheck the
			 * pools under their locks; a worker starting an item (under
			 * the pool lock) loads the flag with seq_cst after that
			 * (process_one_work): either the recheck sees it busy or it
			 * sees the flag and wakes us.
			 */
			atomic_store_explicit(&wq_state.mgr_sleeping_long, true, memory_order_seq_cst);
			if (pools_busy()) {
				t = now_ns() + 500000;
				next = t < next ? t : next;
			}
		}
		now = now_ns();
		timeout = next == UINT64_MAX ? -1 : (next > now ? (long)(next - now) : 0);
		if (timeout)
			sys_futex_wait(&wq_state.mgr_futex, seq, timeout);
		atomic_store_explicit(&wq_state.mgr_sleeping_long, false, memory_order_relaxed);
	}
	return NULL;
}

/* ---- Topology, tunables, statistics: the small API -------------------------------------- */

/* The topology is built: 0, or -ENOMEM. */
static int wq_topo_ready(void)
{
	int ret;

	pthread_mutex_lock(&wq_state.mutex);
	ret = wq_init_locked();
	pthread_mutex_unlock(&wq_state.mutex);
	return ret;
}

static int __trcu_wq_set_topology(const char *spec)
{
	struct wq_topo probe = { 0 };
	char *copy = NULL;

	if (spec && *spec && strcmp(spec, "real")) {
		if (topo_parse(&probe, "trcu_wq_set_topology", spec, 8)) {
			topo_free(&probe);
			return -EINVAL;
		}
		topo_free(&probe);
		copy = strdup(spec);
		if (!copy)
			return -ENOMEM;
	}
	pthread_mutex_lock(&wq_state.mutex);
	if (wq_state.wqs) {
		pthread_mutex_unlock(&wq_state.mutex);
		free(copy);
		sys_warn("trcu_wq_set_topology: workqueues exist; destroy them (or call "
			  "trcu_wq_shutdown()) first (refused)");
		return -EBUSY;
	}
	free(wq_state.topo_spec);
	wq_state.topo_spec = copy;
	if (wq_state.topo_set) {
		topo_free(&wq_state.topo);
		wq_state.topo_set = false;
	}
	pthread_mutex_unlock(&wq_state.mutex);
	return 0;   /* built at the next use (ENOMEM is reported there) */
}

int trcu_wq_set_topology(const char *spec)
{
	int cs = sys_cancel_disable();
	int ret = __trcu_wq_set_topology(spec);

	sys_cancel_restore(cs);
	return ret;
}

int trcu_wq_topology_describe(char *buf, size_t len)
{
	int n;

	if (wq_topo_ready())
		return -ENOMEM;
	pthread_mutex_lock(&wq_state.mutex);
	n = snprintf(buf, len, "%s", wq_state.topo.desc);
	pthread_mutex_unlock(&wq_state.mutex);
	return n;
}

int trcu_wq_nr_cpus(void)
{
	if (wq_topo_ready())
		return -ENOMEM;
	return wq_state.topo.nr_cpus;
}

int trcu_wq_nr_pods(enum trcu_wq_affn scope)
{
	if (wq_topo_ready())
		return -ENOMEM;
	if (scope == TRCU_WQ_AFFN_DFL)
		scope = atomic_load_explicit(&wq_state.default_scope, memory_order_relaxed);
	if ((int)scope <= TRCU_WQ_AFFN_DFL || scope >= TRCU_WQ_AFFN_NR)
		return -EINVAL;
	return wq_state.topo.pt[scope].nr_pods;
}

int trcu_wq_cpu_pod(enum trcu_wq_affn scope, int cpu)
{
	if (wq_topo_ready())
		return -ENOMEM;
	if (scope == TRCU_WQ_AFFN_DFL)
		scope = atomic_load_explicit(&wq_state.default_scope, memory_order_relaxed);
	if ((int)scope <= TRCU_WQ_AFFN_DFL || scope >= TRCU_WQ_AFFN_NR || cpu < 0 ||
	    cpu >= wq_state.topo.nr_cpus)
		return -EINVAL;
	return wq_state.topo.pt[scope].cpu_pod[cpu];
}

const char *trcu_wq_affn_name(enum trcu_wq_affn scope)
{
	if ((int)scope < 0 || scope >= TRCU_WQ_AFFN_NR)
		return "invalid";
	return affn_names[scope];
}

int trcu_wq_affn_from_name(const char *name)
{
	for (int i = 0; name && i < TRCU_WQ_AFFN_NR; i++)
		if (!strcmp(name, affn_names[i]))
			return i;
	return -EINVAL;
}

int trcu_wq_pool_id(struct trcu_workqueue *wq, int cpu)
{
	if (wq_check(wq, "trcu_wq_pool_id"))
		return -EINVAL;
	if (cpu < 0 || cpu >= wq_state.topo.nr_cpus)
		return -EINVAL;
	return wq_cpu_pwq(wq, cpu)->pool->id;
}

int trcu_wq_set_thread_cpu(int cpu)
{
	int n = trcu_wq_nr_cpus();

	if (n < 0)
		return n;   /* -ENOMEM */
	if (cpu < -1 || cpu >= n) {
		sys_warn("trcu_wq_set_thread_cpu: CPU %d out of range (-1, 0..%d)", cpu, n - 1);
		return -EINVAL;
	}
	thread_cpu_hint = cpu;
	return 0;
}

void trcu_wq_set_wake_under_lock(bool on)
{
	tunables_init();
	atomic_store_explicit(&wq_state.wake_under_lock, on, memory_order_relaxed);
}

bool trcu_wq_get_wake_under_lock(void)
{
	tunables_init();
	return atomic_load_explicit(&wq_state.wake_under_lock, memory_order_relaxed);
}

static int set_tunable(const char *name, _Atomic unsigned int *dst, unsigned int v,
		       unsigned int lo, unsigned int hi)
{
	tunables_init();
	if (v < lo || v > hi) {
		sys_warn("%s: %u refused (accepted: %u..%u)", name, v, lo, hi);
		return -EINVAL;
	}
	atomic_store_explicit(dst, v, memory_order_relaxed);
	wake_manager();   /* re-plan the next pass with the new value */
	return 0;
}

int trcu_wq_set_idle_timeout_ms(unsigned int ms)
{
	return set_tunable("trcu_wq_set_idle_timeout_ms", &wq_state.idle_timeout_ms, ms, 1,
			   3600000);
}

int trcu_wq_set_stall_us(unsigned int us)
{
	return set_tunable("trcu_wq_set_stall_us", &wq_state.stall_us, us, 100, 10000000);
}

int trcu_wq_set_max_workers(unsigned int n)
{
	return set_tunable("trcu_wq_set_max_workers", &wq_state.max_workers, n, 0, 4096);
}

int trcu_wq_set_default_scope(enum trcu_wq_affn scope)
{
	tunables_init();
	if ((int)scope <= TRCU_WQ_AFFN_DFL || scope >= TRCU_WQ_AFFN_NR) {
		sys_warn("trcu_wq_set_default_scope: scope %d refused (cpu..system)", (int)scope);
		return -EINVAL;
	}
	atomic_store_explicit(&wq_state.default_scope, scope, memory_order_relaxed);
	return 0;
}

void trcu_wq_test_fail_thread_create(int n)
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

/* ---- Shutdown ------------------------------------------------------------------------------ */

int trcu_wq_at_shutdown(void (*fn)(void))
{
	int ret = 0;

	if (!fn) {
		sys_warn("trcu_wq_at_shutdown: NULL function (refused)");
		return -EINVAL;
	}
	pthread_mutex_lock(&wq_state.mutex);
	for (int i = 0; i < wq_state.nr_shutdown_fns; i++)
		if (wq_state.shutdown_fns[i] == fn)
			goto out;
	if (wq_state.nr_shutdown_fns == WQ_SHUTDOWN_FNS_MAX) {
		sys_warn("trcu_wq_at_shutdown: %d functions registered already (refused)",
			  WQ_SHUTDOWN_FNS_MAX);
		ret = -ENOSPC;
		goto out;
	}
	wq_state.shutdown_fns[wq_state.nr_shutdown_fns++] = fn;
out:
	pthread_mutex_unlock(&wq_state.mutex);
	return ret;
}

/* ---- fork() (src/fork.c) ------------------------------------------------------------------ */

/* The locking order of the file's header: mutex, every pool lock, every
 * workqueue's mayday_lock, then the two leaves.  A workqueue's flush_mutex
 * is held across a flush's wait: not taken, re-initialised in the child. */
static void wq_fork_lock_all(bool lock)
{
	int (*op)(pthread_mutex_t *) = lock ? pthread_mutex_lock : pthread_mutex_unlock;
	struct trcu_workqueue *lists[2] = { wq_state.wqs, wq_state.dead_wqs };

	for (int i = 0; i < wq_state.nr_pools; i++)
		op(&wq_state.pools[i]->lock);
	for (int l = 0; l < 2; l++)
		for (struct trcu_workqueue *wq = lists[l]; wq; wq = wq->next)
			op(&wq->mayday_lock);
	op(&wq_state.timer_lock);
	op(&wq_state.free_lock);
	op(&wq_state.owner_lock);
}

void wq_fork_prepare(void)
{
	pthread_mutex_lock(&wq_state.mutex);
	wq_fork_lock_all(true);
}

void wq_fork_parent(void)
{
	wq_fork_lock_all(false);
	pthread_mutex_unlock(&wq_state.mutex);
}

/* A work item queued in the parent: the parent runs it.  In the child it
 * is neither pending nor queued, so that it can be queued again. */
static void wq_fork_drop_work(struct trcu_work *work, struct worker_pool *pool)
{
	__atomic_store_n(&work->priv.data, (uintptr_t)pool, __ATOMIC_RELAXED);
	list_init(&work->priv.entry);
	work->priv.pwq = NULL;
}

static void wq_fork_drop_list(struct trcu_wq_link *head, struct worker_pool *pool)
{
	for (struct trcu_wq_link *e = head->next, *next; e != head; e = next) {
		next = e->next;
		wq_fork_drop_work(work_of(e), pool);
	}
	list_init(head);
}

/* Items the parent's threads owned PENDING of outside any list or timer:
 * drop their pending state (their owners do not exist here), and the
 * other threads' records (heap memory, still readable; freed here). */
static void wq_fork_child_owners(void)
{
	struct wq_owner *o = wq_state.owners, *next;

	wq_state.owners = NULL;
	for (; o; o = next) {
		struct trcu_work *work = atomic_load_explicit(&o->work, memory_order_relaxed);

		next = o->next;
		if (work)
			wq_fork_drop_work(work, data_pool(__atomic_load_n(&work->priv.data,
								       __ATOMIC_RELAXED)));
		if (o == wq_owner_self) {
			atomic_store_explicit(&o->work, NULL, memory_order_relaxed);
			o->next = wq_state.owners;
			wq_state.owners = o;
		} else {
			free(o);
		}
	}
}

static void wq_fork_child_wq(struct trcu_workqueue *wq)
{
	pthread_mutex_init(&wq->flush_mutex, NULL);
	pthread_mutex_init(&wq->mayday_lock, NULL);
	list_init(&wq->maydays);
	atomic_store_explicit(&wq->nr_pwqs_to_flush, 0, memory_order_relaxed);
	for (int i = 0; i < wq->nr_pwqs; i++) {
		struct pool_workqueue *pwq = wq->pwqs[i];

		if (!pwq)
			continue;
		wq_fork_drop_list(&pwq->inactive_works, pwq->pool);
		pwq->nr_active = 0;
		pwq->nr_in_flight[0] = pwq->nr_in_flight[1] = 0;
		pwq->flush_color = -1;
		pwq->on_mayday = false;
		list_init(&pwq->mayday_node);
	}
	if (wq->rescuer) {
		wq->rescuer = NULL;
		wq->rescuer_lost = true;
	}
	/* A drain or destroy in progress was another thread's. */
	wq->nr_drainers = 0;
	if (!wq->destroying &&
	    atomic_load_explicit(&wq->state, memory_order_relaxed) == WQ_DRAINING)
		atomic_store_explicit(&wq->state, WQ_ALIVE, memory_order_relaxed);
}

/*
 * Only the forking thread exists: every worker, rescuer and the manager are
 * gone.  Work queued, running or on a timer in the parent is the parent's:
 * the child drops it (the items become idle, so they can be queued again),
 * keeps every pool, workqueue and handle, and starts the threads again at
 * its first queueing (wq_fork_respawn()).  Forking from a work item is not
 * supported (the child's only thread would be a worker).
 */
void wq_fork_child(void)
{
	struct trcu_workqueue *lists[2] = { wq_state.wqs, wq_state.dead_wqs };

	pthread_mutex_init(&wq_state.mutex, NULL);
	pthread_mutex_init(&wq_state.timer_lock, NULL);
	pthread_mutex_init(&wq_state.free_lock, NULL);
	pthread_mutex_init(&wq_state.owner_lock, NULL);
	wq_forked_here = current_worker != NULL;
	current_worker = NULL;
	wq_fork_child_owners();
	wq_state.mgr_started = false;
	atomic_store_explicit(&wq_state.mgr_stop, false, memory_order_relaxed);
	atomic_store_explicit(&wq_state.mgr_sleeping_long, false, memory_order_relaxed);
	/* Every worker structure is free again (none has a thread). */
	wq_state.free_workers = NULL;
	for (struct worker *w = wq_state.all_workers; w; w = w->next_all) {
		w->joinable = false;
		w->next_free = wq_state.free_workers;
		wq_state.free_workers = w;
	}
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];

		pthread_mutex_init(&pool->lock, NULL);
		/* Items assigned to a worker but not started are still pending. */
		for (struct trcu_wq_link *e = pool->workers.next; e != &pool->workers; e = e->next)
			wq_fork_drop_list(&container_of(e, struct worker, node)->scheduled, pool);
		wq_fork_drop_list(&pool->worklist, pool);
		list_init(&pool->idle_list);
		list_init(&pool->workers);
		pool->nr_workers = pool->nr_idle = pool->nr_running = 0;
		pool->manager_active = false;
		pool->create_fail_ns = 0;
		pool->watchdog_ts = now_ns();
		memset(pool->busy_hash, 0, sizeof(pool->busy_hash));
	}
	for (int l = 0; l < 2; l++)
		for (struct trcu_workqueue *wq = lists[l]; wq; wq = wq->next)
			wq_fork_child_wq(wq);
	for (int i = 0; i < wq_state.heap_n; i++) {
		struct trcu_delayed_work *dw = wq_state.heap[i];

		dw->priv.timer_idx = -1;
		wq_fork_drop_work(&dw->work, NULL);
	}
	wq_state.heap_n = 0;
	wq_state.heap_reserved = 0;   /* promised to threads that are gone */
	if (wq_state.nr_pools || wq_state.wqs)
		atomic_store_explicit(&wq_state.fork_respawn, true, memory_order_relaxed);
}

/*
 * After a fork: start the manager, one worker for every pool in use (as
 * get_pool_locked() keeps), and the lost rescuers, once.  Acquire pairs
 * with the release below: a queuer that sees the flag clear sees the
 * threads' state.  A failure leaves the flag set: the next queueing tries
 * again, and the work is run meanwhile by whatever started.
 */
static void wq_fork_respawn(void)
{
	bool failed = false;

	int cs;

	if (TRCU_LIKELY(!atomic_load_explicit(&wq_state.fork_respawn, memory_order_acquire)))
		return;
	cs = sys_cancel_disable();
	pthread_mutex_lock(&wq_state.mutex);
	if (!atomic_load_explicit(&wq_state.fork_respawn, memory_order_relaxed))
		goto out;
	failed |= start_manager_locked() != 0;
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];
		int nr;

		pthread_mutex_lock(&pool->lock);
		nr = pool->nr_workers;
		pthread_mutex_unlock(&pool->lock);
		if (pool->refcnt && !nr)
			failed |= !create_worker(pool);
	}
	for (struct trcu_workqueue *wq = wq_state.wqs; wq; wq = wq->next)
		if (wq->rescuer_lost) {
			failed |= start_rescuer_locked(wq) != 0;
			wq->rescuer_lost = wq->rescuer == NULL;
		}
	if (!failed)
		atomic_store_explicit(&wq_state.fork_respawn, false, memory_order_release);
out:
	pthread_mutex_unlock(&wq_state.mutex);
	sys_cancel_restore(cs);
}

static void __trcu_wq_shutdown(void)
{
	void (*fns[WQ_SHUTDOWN_FNS_MAX])(void);
	struct worker *dying = NULL;
	int nr_fns;

	if (current_worker)
		sys_die("trcu_wq_shutdown() called from a workqueue thread (work item %p): it "
			 "would wait for itself", (void *)current_worker->current_work);
	/* Notifiers first, while every handle is valid, and without
	 * wq_state.mutex: they take their own locks, which may be held around
	 * trcu_alloc_workqueue() or trcu_queue_work(). */
	pthread_mutex_lock(&wq_state.mutex);
	nr_fns = wq_state.nr_shutdown_fns;
	for (int i = 0; i < nr_fns; i++)
		fns[i] = wq_state.shutdown_fns[i];
	pthread_mutex_unlock(&wq_state.mutex);
	for (int i = 0; i < nr_fns; i++)
		fns[i]();
	pthread_mutex_lock(&wq_state.mutex);
	/* Destroy every live workqueue, system ones included. */
	while (wq_state.wqs) {
		struct trcu_workqueue *wq = wq_state.wqs;

		if (wq->destroying) {
			/* Another thread is destroying it: let it finish. */
			pthread_mutex_unlock(&wq_state.mutex);
			sched_yield();
			pthread_mutex_lock(&wq_state.mutex);
			continue;
		}
		wq->destroying = true;
		atomic_store_explicit(&wq->state, WQ_DRAINING, memory_order_relaxed);
		pthread_mutex_unlock(&wq_state.mutex);
		destroy_inner(wq);
		pthread_mutex_lock(&wq_state.mutex);
	}
	wq_state.system_wq = wq_state.system_unbound_wq = NULL;
	if (wq_state.mgr_started) {
		atomic_store_explicit(&wq_state.mgr_stop, true, memory_order_release);
		pthread_mutex_unlock(&wq_state.mutex);
		wake_manager();
		pthread_join(wq_state.mgr, NULL);
		pthread_mutex_lock(&wq_state.mutex);
		wq_state.mgr_started = false;
	}
	/* Every worker is idle or about to be: tell each to exit. */
	for (int i = 0; i < wq_state.nr_pools; i++) {
		struct worker_pool *pool = wq_state.pools[i];

		pthread_mutex_lock(&pool->lock);
		while (!list_empty(&pool->workers)) {
			struct worker *w = container_of(pool->workers.next, struct worker, node);

			list_del_init(&w->node);
			list_del_init(&w->idle_entry);
			w->flags |= WORKER_DIE;
			w->next_free = dying;
			dying = w;
		}
		pool->nr_workers = pool->nr_idle = 0;
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&wq_state.mutex);
	for (struct worker *w = dying; w; w = w->next_free)
		wake_worker(w);
	while (dying) {
		struct worker *w = dying;

		dying = w->next_free;
		pthread_join(w->thread, NULL);
	}

	pthread_mutex_lock(&wq_state.mutex);
	for (int i = 0; i < wq_state.nr_pools; i++) {
		pthread_mutex_destroy(&wq_state.pools[i]->lock);
		free(wq_state.pools[i]);
	}
	free(wq_state.pools);
	wq_state.pools = NULL;
	wq_state.nr_pools = wq_state.cap_pools = 0;
	while (wq_state.dead_wqs) {
		struct trcu_workqueue *wq = wq_state.dead_wqs;

		wq_state.dead_wqs = wq->next;
		wq_free_pwqs(wq);
		pthread_mutex_destroy(&wq->flush_mutex);
		pthread_mutex_destroy(&wq->mayday_lock);
		free(wq);
	}
	pthread_mutex_lock(&wq_state.free_lock);
	while (wq_state.all_workers) {
		struct worker *w = wq_state.all_workers;

		wq_state.all_workers = w->next_all;
		free(w);
	}
	wq_state.free_workers = NULL;
	pthread_mutex_unlock(&wq_state.free_lock);
	pthread_mutex_lock(&wq_state.timer_lock);
	free(wq_state.heap);
	wq_state.heap = NULL;
	wq_state.heap_n = wq_state.heap_cap = 0;
	pthread_mutex_unlock(&wq_state.timer_lock);
	if (wq_state.topo_set)
		topo_free(&wq_state.topo);
	wq_state.topo_set = false;
	free(wq_state.topo_spec);
	wq_state.topo_spec = NULL;
	wq_state.inited = false;
	pthread_mutex_unlock(&wq_state.mutex);
}

void trcu_wq_shutdown(void)
{
	int cs = sys_cancel_disable();

	__trcu_wq_shutdown();
	sys_cancel_restore(cs);
}
