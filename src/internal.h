/* SPDX-License-Identifier: MIT */
/*
 * treercu internals: the one RCU state structure, the rcu_node tree, the
 * sequence-number helpers, and the system primitives (membarrier, futex).
 */
#ifndef TREERCU_INTERNAL_H
#define TREERCU_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <treercu/rcu.h>

/* ---- Sequence numbers (the kernel's rcu_seq_*) --------------------------
 * The low two bits hold the grace-period state: 0 idle, 1 in progress.
 * ULONG_CMP_* compare modulo wrap. */
#define RCU_SEQ_CTR_SHIFT  2
#define RCU_SEQ_STATE_MASK ((1UL << RCU_SEQ_CTR_SHIFT) - 1)
#define ULONG_CMP_GE(a, b) (ULONG_MAX / 2 >= (unsigned long)((a) - (b)))
#define ULONG_CMP_LT(a, b) (ULONG_MAX / 2 < (unsigned long)((a) - (b)))
/* First gp_seq: close to wrap so that wrap is exercised early, as the
 * kernel does. */
#define RCU_SEQ_INIT ((0UL - 300UL) << RCU_SEQ_CTR_SHIFT)

static inline unsigned long rcu_seq_state(unsigned long s)
{
	return s & RCU_SEQ_STATE_MASK;
}

static inline unsigned long rcu_seq_ctr(unsigned long s)
{
	return s >> RCU_SEQ_CTR_SHIFT;
}

/* The value gp_seq will have once a full grace period has elapsed after
 * now: the end of the next GP to start. */
static inline unsigned long rcu_seq_snap_val(unsigned long s)
{
	return (s + 2 * RCU_SEQ_STATE_MASK + 1) & ~RCU_SEQ_STATE_MASK;
}

static inline unsigned long rcu_seq_startval(unsigned long s)
{
	return s + 1;
}

static inline unsigned long rcu_seq_endval(unsigned long s)
{
	return (s | RCU_SEQ_STATE_MASK) + 1;
}

static inline bool rcu_seq_done_val(unsigned long cur, unsigned long s)
{
	return ULONG_CMP_GE(cur, s);
}

/* Like rcu_seq_done_val() but also true when cur is so far behind s that
 * s must be from before a wrap: a cookie never reads "not done" forever. */
static inline bool rcu_seq_done_exact_val(unsigned long cur, unsigned long s)
{
	return ULONG_CMP_GE(cur, s) ||
	       ULONG_CMP_LT(cur, s - (3 * RCU_SEQ_STATE_MASK + 1));
}

/*
 * TSO: on x86-64 a store is never reordered before an earlier load, so when
 * the GP driver sees a reader's ->watching store, the loads of the section it
 * closed have already been performed (the load-buffering outcome is
 * forbidden), and no GP-end membarrier is needed.  arm64 allows load->store
 * reordering: there the GP-end membarrier stays.  See docs/design.md
 * "Memory ordering", litmus test GP-END.
 */
#if defined(__x86_64__) && !defined(TREERCU_FENCED)
#define RCU_TSO 1
#else
#define RCU_TSO 0
#endif

/* ---- The rcu_node combining tree ----------------------------------------- */
#define RCU_MAX_LEVELS 24     /* fanout 2, leaf 1 covers 2^23 slots */
#define RCU_FANOUT_MAX 64

struct rcu_node {
	pthread_mutex_t lock;
	unsigned long gp_seq;         /* GP this node has been initialised for */
	unsigned long gp_seq_needed;  /* furthest GP requested through here */
	unsigned long qsmask;         /* children/slots still owing a QS */
	unsigned long qsmaskinit;     /* children/slots online at GP start */
	unsigned long qsmaskinitnext; /* leaves: slots online now */
	unsigned long grpmask;        /* this node's bit in parent->qsmask */
	int grplo, grphi;             /* slot range covered, inclusive */
	int level;
	struct rcu_node *parent;
	/* Leaves only: FQS snapshots of ->watching, indexed slot - grplo. */
	unsigned long snap_valid;     /* bit set: snap[] holds this GP's value */
	unsigned long snap_pre;       /* bit set: taken before the GP-start mb */
	unsigned long *snap;          /* fanout_leaf entries, after the nodes */
	/* Leaves only, under ->lock: tasks switched out inside a read-side
	 * section (src/task.c), newest non-blockers at the head; every entry
	 * from ->gp_tasks to the tail blocks the current grace period (the
	 * kernel's ->blkd_tasks and ->gp_tasks).  ->retired: this leaf's tree
	 * was replaced and its tasks moved to the new one. */
	struct trcu_task *blkd_head, *blkd_tail;
	struct trcu_task *gp_tasks;
	bool retired;
	/* Leaves only, GP init (ofl_lock held): at the last init this leaf
	 * had no online slot and no blocked task (rcu_gp_init_tree()). */
	bool idle_empty;
} __attribute__((aligned(64)));

struct rcu_tree {
	int capacity;                 /* slots covered */
	int fanout, fanout_leaf;
	int levels;
	int nr_nodes;
	int level_first[RCU_MAX_LEVELS];
	int level_cnt[RCU_MAX_LEVELS];
	struct rcu_tree *retired_next;
	int *active;                  /* leaves with online slots this GP ... */
	int nr_active;                /* ... (set at GP init, driver only) */
	unsigned long removals_seen;  /* rcu_slot_removals() at the last GP init */
	struct rcu_node nodes[];      /* breadth first: nodes[0] is the root */
};

/* Shape a tree for `capacity` slots; NULL with errno EINVAL (bad geometry)
 * or ENOMEM. */
struct rcu_tree *rcu_tree_build(int capacity, int fanout, int fanout_leaf);
void rcu_tree_free(struct rcu_tree *t);
/* Under ofl_lock: 0, or -1 with errno (ENOMEM) and nothing changed. */
int rcu_tree_prepare_locked(int nr_slots, int fanout, int fanout_leaf);
int rcu_tree_cover_slot_locked(int slot);
/* Under ofl_lock: the trees a GP start replaced (->retired_next links
 * them), and, at shutdown, freeing them with the prepared one. */
struct rcu_tree *rcu_tree_retired_locked(void);
void rcu_trees_free_locked(void);
static inline struct rcu_node *rcu_tree_leaf(struct rcu_tree *t, int slot)
{
	int l = t->levels - 1;

	return &t->nodes[t->level_first[l] + slot / t->fanout_leaf];
}

/* ---- Slots: the registered threads --------------------------------------- */
#define SLOT_CHUNK      256
#define SLOT_MAX_CHUNKS 4096          /* 1M threads */

#define RCU_EMERG_MAX 16   /* nested emergency sections per thread */

/*
 * A thread's library-private state, beside its public struct trcu_reader
 * (include/treercu/rcu.h), which holds only what the inline read side
 * touches.  The slot table points here; ->rdr leads a grace-period scan to
 * the thread's ->watching and ->need_qs.
 */
#define RCU_BLK_GP_WAIT  1
#define RCU_BLK_QSBR_OFL 2

struct rcu_thread {
	struct trcu_reader *rdr;      /* the owner's trcu_reader_tls, set at
				       * its first registration, then fixed */
	int slot;                     /* index in the slot table, -1 if none */
	int tid;                      /* gettid() of the owner */
	unsigned int depth_bias;      /* 1 while a QSBR thread is online */
	bool qsbr;                    /* QSBR-style thread (trcu_thread_qsbr()) */
	/* Owner-written, read by GP drivers: RCU_BLK_GP_WAIT while blocked
	 * waiting for a GP, RCU_BLK_QSBR_OFL while an offline QSBR thread
	 * (src/thread.c); either makes it quiescent with ->watching even
	 * (rcu_early_qs(), src/gp_early.c). */
	_Atomic int gp_blocked;
	/* Owner only, read by its own signal handlers: library code that
	 * holds the library's locks is in progress (rcu_busy_enter()), so a
	 * handler's section on this thread is an emergency one and its wait
	 * for a grace period is refused. */
	unsigned int busy;
	/* Owner only: this thread's trcu_before_fork() holds the library's
	 * locks until its after-fork call (src/fork.c); a wait for a grace
	 * period meanwhile would wait for ever (rcu_check_blocking_allowed()). */
	bool fork_locked;
	/* Owner only, read by its own signal handlers: inside
	 * synchronize_rcu() or its expedited form (in_sync), inside
	 * rcu_barrier() (in_barrier).  A handler's wait on this thread then
	 * could wait for what its own thread holds (gp_mutex, the barrier
	 * mutex, a GP it drives): rcu_check_blocking_allowed() refuses it. */
	unsigned char in_sync;
	unsigned char in_barrier;
	/* Owner only: the exit destructor ran and left ->busy raised for
	 * good (thread_exit_destructor()); that one count is not a handler's
	 * interruption (rcu_thread_locked()). */
	unsigned char exiting;
	/* Emergency sections (nested handlers): the nest_flags each one
	 * interrupted, restored when it ends. */
	unsigned int emerg_depth;
	unsigned long emerg_saved[RCU_EMERG_MAX];
	/* Task readers (src/task.c): the task switched in on this worker. */
	struct trcu_task *cur_task;
};

extern __thread struct rcu_thread rcu_thread_tls;

/*
 * Mark the calling thread "inside library code that holds, or is about to
 * take, ofl_lock, an rcu_node lock, the init once or the callback state's
 * locks" (->busy): a signal handler's section on this thread then neither
 * registers the thread nor reports a quiescent state, either of which
 * would take those locks again and deadlock (src/thread.c, emergency
 * sections), and a handler's wait for a grace period aborts
 * (rcu_check_blocking_allowed()).  Compiler barriers keep the marker
 * around the work; only this thread's handlers read it.
 */
static inline void rcu_busy_enter(void)
{
	rcu_thread_tls.busy++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void rcu_busy_exit(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rcu_thread_tls.busy--;
}

/* Set or clear ->in_sync or ->in_barrier around a wait.  Compiler
 * barriers keep the marker around the wait; only this thread's signal
 * handlers read it (rcu_check_blocking_allowed(), trcu_rcu_barrier()). */
static inline void rcu_wait_mark(unsigned char *marker, bool in)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*marker = in;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Inside library code that holds the library's locks (->busy), not
 * counting the raise the exit destructor leaves for good: a later key
 * destructor of the thread may wait for grace periods. */
static inline bool rcu_thread_locked(const struct rcu_thread *t)
{
	return t->busy > t->exiting;
}

/* The read-side nesting depth in a reader's nest_flags. */
static inline unsigned int rcu_nesting(const struct trcu_reader *r)
{
	return (unsigned int)(r->nest_flags & TRCU_NEST_MASK);
}

/* ---- Tunables ------------------------------------------------------------- */
enum tun_profile { TUN_PROFILE_TREERCU = 0, TUN_PROFILE_KERNEL = 1 };

struct tun_values {
	_Atomic long early_report;
	_Atomic long drive_from_caller;
	_Atomic long fanout;
	_Atomic long fanout_leaf;
	_Atomic long tick_us;
	_Atomic long jiffies_till_first_fqs;
	_Atomic long jiffies_till_next_fqs;
	_Atomic long fqs_spin_us;
	_Atomic long stall_timeout_ms;
	_Atomic long lazy;
	_Atomic long lazy_flush_ms;
	_Atomic long blimit;
	_Atomic long qhimark;
	_Atomic long qlowmark;
	_Atomic long rcu_resched_us;
	_Atomic long cb_max_pending;
	_Atomic long nocb_threads;
	_Atomic long rcu_free_drain_ms;
	_Atomic long normal_wake_from_gp;
	_Atomic long nocb_defer_us;
	_Atomic long sr_wake_max;
	_Atomic long sr_drive_max;
	_Atomic long sr_spin_us;
	_Atomic long sr_drive_alone;
	_Atomic long exit_wait_ms;
	_Atomic long cb_pushback_ms;
	_Atomic long nocb_batch_us;
	_Atomic long nocb_batch_min;
	_Atomic long profile;
	_Atomic long per_worker_blocked_lists;
};
/* Tunables change at run time from any thread: relaxed loads suffice, each
 * value is used on its own. */
#define TUN(name) atomic_load_explicit(&rcu_state.tun.name, memory_order_relaxed)

/* Hot-path steps kept inline where a split would cost a call, and the
 * rare path kept out of line. */
#define rcu_always_inline inline __attribute__((always_inline))
#define rcu_cold __attribute__((noinline, cold))

/* ---- The one RCU state structure ----------------------------------------- */
struct rcu_state {
	/* Grace-period sequence (state in the low bits).  Written by the driver
	 * holding gp_mutex; read anywhere with acquire. */
	_Atomic unsigned long gp_seq __attribute__((aligned(64)));
	_Atomic unsigned long gp_seq_needed;   /* root's furthest request */
	_Atomic unsigned long exp_seq;         /* expedited GPs (full cookies) */
	/* Start value of the GP whose init is pushing (or pushed) its seed-004
	 * wait head: stored before the push, while gp_seq still reads idle. */
	_Atomic unsigned long sr_init_seq;
	/* Futex words. */
	_Atomic uint32_t gp_end_futex __attribute__((aligned(64)));
	_Atomic int nr_gp_waiters;
	_Atomic uint32_t qs_futex;             /* driver sleeps here in FQS */
	_Atomic uint32_t park_futex;           /* ... a parked one here */
	_Atomic int driver_sleeping;
	_Atomic uint32_t kthread_futex;        /* GP kthread sleeps here */
	_Atomic int kthread_sleeping;
	/* synchronize_rcu() wake-ups (any path) and the latest one a woken
	 * caller has run after: while they differ, an offload thread defers
	 * its callbacks (rcu_note_sync_wake()). */
	_Atomic unsigned long sync_wake_seq __attribute__((aligned(64)));
	_Atomic int nr_sync_waiters;           /* synchronize_rcu() callers waiting */
	_Atomic int nr_sync_gp_waiters;        /* ... of them, on gp_end_futex */
	_Atomic int nr_sr_spinning;            /* list callers polling their node (sr_spin_us) */
	/* Wakeme-path synchronize_rcu() and rcu_barrier() callers: they wait
	 * for offload threads, which a driving caller then wakes at GP end. */
	_Atomic int nr_cb_waiters;
	_Atomic unsigned long sync_resume_seq __attribute__((aligned(64)));

	pthread_mutex_t gp_mutex __attribute__((aligned(64)));  /* the driver */
	pthread_mutex_t ofl_lock;   /* the slot table (src/slots.c) and qsmaskinitnext */

	/* The current tree; the next one and the retired ones are
	 * src/rcu_node.c's. */
	_Atomic(struct rcu_tree *) tree;

	/* Per-GP driver state (under gp_mutex). */
	unsigned long gp_gen;            /* trcu_reader_gen this GP set */
	struct rcu_thread *driver;       /* the driving thread, or NULL */
	/* The driver is the GP kthread or an offload thread: a synchronize_rcu()
	 * caller may take the GP over (rcu_gp_acquire_driver()). */
	_Atomic bool driver_yieldable;
	_Atomic int takeover_req;        /* callers asking for that */
	/* The yieldable driver sleeps without gp_mutex (rcu_gp_park()). */
	_Atomic bool gp_parked;
	/* The driver sleeps out an unhurried tick (src/gp.c): a thread that
	 * starts to wait for a GP kicks it (rcu_gp_hurry()). */
	_Atomic bool gp_unhurried;
	unsigned long driver_epoch;      /* drivers of a GP so far (gp_mutex) */
	unsigned long gp_mb_epoch;       /* driver_epoch at this GP's start barrier */
	_Atomic bool gp_dirty_flag;      /* a QS needs the GP-end membarrier */
	_Atomic bool gp_root_done;       /* the root's qsmask emptied this GP */
	bool expedited;                  /* this GP is driven without sleeps */
	bool exp_at_init;                /* ... and counted in exp_seq */
	bool sr_uncovered;               /* sr waiters left for a later GP */
	bool gp_end_wake;                /* gp_end_futex's wake, made after the unlock */
	_Atomic int exp_waiters;         /* synchronize_rcu_expedited() callers */
	/* The furthest GP a polled expedited request wants
	 * (start_poll_synchronize_rcu_expedited()): GPs up to it are
	 * expedited, as while an expedited caller waits. */
	_Atomic unsigned long exp_poll_seq;
	long gp_start_ns;

	_Atomic bool shutting_down;

	/* Read side ordering: membarrier or fences, decided once at init. */
	bool fenced;

	struct tun_values tun;

	/* Statistics.  The first seven are written by GP drivers only
	 * (gp_mutex held): rcu_stat_add_locked(). */
	_Atomic unsigned long n_gp, n_gp_caller, n_gp_kthread, n_fqs, n_mb;
	_Atomic unsigned long n_slot_checks;   /* slots GP-init and FQS walks looked at */
	_Atomic unsigned long n_qs_polled;     /* QSBR answers a spin reported (src/qsbr_poll.c) */
	_Atomic unsigned long n_gp_unhurried;  /* GPs whose holdouts got a tick, no spin (src/gp.c) */
	_Atomic unsigned long n_takeover;
	_Atomic unsigned long n_async_skip;  /* GP-end wakes left to timed rechecks */
};

extern struct rcu_state rcu_state;

/*
 * Add to a statistics counter that only the GP driver writes (gp_mutex
 * held, which orders the drivers' turns): a load and a store, no locked
 * instruction (an idle grace period bumps six).  Readers (trcu_get_stats())
 * load it relaxed and may see an older value, as with a relaxed add.
 */
static inline void rcu_stat_add_locked(_Atomic unsigned long *c, unsigned long n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/*
 * The slot table (src/slots.c owns it).  Written under ofl_lock by
 * src/thread.c only: alloc/free reserve an index, install/remove publish
 * and retract the thread at it.  Read anywhere with rcu_slot_get().
 */
extern _Atomic(struct rcu_thread *) *rcu_slot_chunks[SLOT_MAX_CHUNKS];
extern _Atomic(struct trcu_reader *) *rcu_slot_rdr_chunks[SLOT_MAX_CHUNKS];
int rcu_slot_alloc(void);                        /* lowest free slot, or -1 */
void rcu_slot_free(int slot);
void rcu_slot_install(int slot, struct rcu_thread *r);
void rcu_slot_remove(int slot);
int rcu_slot_hwm(void);                          /* highest slot + 1 ever used */
int rcu_slot_count(void);                        /* registered threads */
/* Slots removed so far (unregistrations, a fork child's drop); under
 * ofl_lock. */
unsigned long rcu_slot_removals(void);
void rcu_slot_table_fork_child(const struct rcu_thread *self);

static inline struct rcu_thread *rcu_slot_get(int slot)
{
	_Atomic(struct rcu_thread *) *chunk = rcu_slot_chunks[slot / SLOT_CHUNK];

	/* Acquire pairs with the release in slot_set() (src/slots.c): the
	 * thread's initialised fields are visible before its pointer. */
	return chunk ? atomic_load_explicit(&chunk[slot % SLOT_CHUNK], memory_order_acquire)
		     : NULL;
}

/* struct trcu_reader's ->need_qs: asked to report through the tree, or
 * polled by a spinning driver that reports for it (src/qsbr_poll.c,
 * "Polled reports"). */
#define TRCU_QS_ASKED  1U
#define TRCU_QS_POLLED 2U

/* rcu_slot_get(slot)->rdr without loading the thread's structure (NULL
 * when the slot is empty): what a scan needs for the common case. */
static inline struct trcu_reader *rcu_slot_reader(int slot)
{
	_Atomic(struct trcu_reader *) *chunk = rcu_slot_rdr_chunks[slot / SLOT_CHUNK];

	/* Acquire pairs with the release in slot_set() (src/slots.c). */
	return chunk ? atomic_load_explicit(&chunk[slot % SLOT_CHUNK], memory_order_acquire)
		     : NULL;
}

/*
 * Initialisation.  Static initialisers set what needs no environment
 * (rcu_state's sequence words and locks, the slot table's first chunk,
 * the first tree's storage, each module's locks); src/rcu.c's one
 * constructor registers the init and hands the upper layers' functions
 * down, and starts no thread.  The init gate (src/state.c) is the only way
 * to the rest: every entry point that needs it (the tunables, the tree, the
 * read side's barrier choice, the exit and fork handlers) passes it, and it
 * runs, once, the registered init.  Lazy, so that the environment is read at
 * first use; entry points that read only statically initialised state (the
 * polled cookies, the stall hook) do not pass it.
 */
void rcu_init(void);
void rcu_init_register(void (*fn)(void));
void rcu_init_anchor(void);   /* src/rcu.c's constructor */

/*
 * Cancellation (docs/design.md, "Guarantees"): every cancellation point the
 * library reaches runs with cancellation disabled (warnings, the stall
 * printer and the application's stall hook, topology reads, joins, sleeps,
 * callbacks run on a caller's thread after shutdown), so no cancellation
 * can end a thread that holds a library lock or counts as a waiter; the
 * rest of every call, futex waits included, has no cancellation point.
 * The rare blocking calls (rcu_barrier(), shutdowns, workqueue destruction)
 * disable it for their whole length; synchronize_rcu() does not pay the two
 * atomic operations (scripts/bench/cancelstate.c).  The library's own
 * threads run with it disabled for life.  A cancellation requested
 * meanwhile acts at the thread's next cancellation point after the call.
 */
static inline int sys_cancel_disable(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void sys_cancel_restore(int old)
{
	int unused;

	pthread_setcancelstate(old, &unused);
}

/*
 * fork() (src/fork.c): pthread_atfork() handlers, registered once at load
 * by the core's constructor (src/rcu.c), and correct on a library never
 * initialised.  Each subsystem has a
 * prepare step (take its locks: no data they guard is mid-update at the
 * fork), a parent step (release them) and a child step (only the forking
 * thread exists: re-initialise every lock, forget the other threads, mark
 * the helper threads not started).  Called in the order src/fork.c gives.
 */
void fork_register(void);
bool rcu_initialized(void);          /* state.c: the init gate has run */
void rcu_fork_prepare(void);         /* rcu.c */
void rcu_fork_parent(void);
void rcu_fork_child(void);
void rcu_fork_child_kick(void);      /* after every subsystem's child step */
void rcu_nocb_fork_prepare(void);    /* nocb.c */
void rcu_nocb_fork_parent(void);
void rcu_nocb_fork_child(void);
void rcu_sr_fork_prepare(void);      /* sync_list.c */
void rcu_sr_fork_parent(void);
void rcu_sr_fork_child(void);
/* A layer above the core (the workqueue, src/wq/) hands its three steps to
 * the core, which runs them where the lock order puts that layer: the core
 * never names it.  One layer, registered from a constructor (before any
 * thread exists); NULL steps are not allowed. */
struct fork_hooks {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};
void fork_register_hooks(const struct fork_hooks *hooks);

/* sys.c */
int sys_membarrier_register(void);
void sys_gp_mb(void);
long sys_now_ns(void);
void sys_pin_loaded_object(void);
void sys_sleep_ns(long ns);
int sys_gettid(void);
void sys_futex_wait(_Atomic uint32_t *addr, uint32_t val, long timeout_ns);
void sys_futex_wake(_Atomic uint32_t *addr, int n);
void sys_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void sys_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The ways a synchronize_rcu() caller waits (src/sync.c), the values of the
 * normal_wake_from_gp tunable, which also accepts the names (src/tunables.c):
 * through a callback (wakeme, the kernel's wait_rcu_gp()), on the waiter
 * list woken from the GP (list), or on the GP-end futex (futex). */
enum rcu_sync_path { RCU_SYNC_WAKEME = 0, RCU_SYNC_LIST = 1, RCU_SYNC_FUTEX = 2 };

/* tunables.c */
/* One row of the tunables table.  The core's rows keep their value in
 * rcu_state.tun (off); a layer above the core (the workqueue) registers
 * rows of its own whose value lives in that layer (field). */
struct tunable {
	const char *name;
	size_t off;        /* offset in struct tun_values (field NULL) */
	_Atomic long *field;          /* a registered row's value */
	const char *const *names;     /* optional: names[v] also means v */
	long lo, hi;
	long def;          /* treercu profile; -1: computed */
	long kdef;         /* kernel profile; -1: computed */
	bool reshape;      /* needs the rcu_node tree rebuilt */
};
/* Add a layer's rows to the table: their environment variables are read
 * (now, or at the core's init if it has not run) and trcu_set_tunable(),
 * trcu_get_tunable() and the profiles reach them.  From a constructor
 * (before any thread exists); one layer. */
void tun_register(const struct tunable *rows, size_t n);
/* trcu_set_tunable() on behalf of @caller (named in the refusal). */
int tun_set(const char *caller, const char *name, long value);
void tun_init(void);
void tun_apply_profile(enum tun_profile p);
long tun_parse_long(const char *name, const char *text, long lo, long hi, long *out);
bool tun_env_bool(const char *name);             /* 0/1 variable, unset = 0 */

/* thread.c */
struct rcu_thread *rcu_thread_self(void);
bool rcu_thread_registered(const struct rcu_thread *t);
unsigned int rcu_section_depth(void);            /* caller's explicit sections */
/* The caller may hold references: inside a section, or an online QSBR
 * thread (whose reads need no section).  Such a caller must not wait for a
 * grace period, nor be counted quiescent for one. */
static inline bool rcu_caller_reading(void)
{
	return rcu_section_depth() || rcu_thread_tls.depth_bias;
}
unsigned int rcu_close_leaked_sections(void);    /* close them; returns the depth */
void rcu_emerg_readers_wait(bool fenced);               /* GP: wait out emergency sections */
int rcu_kthread_create(pthread_t *t, void *(*fn)(void *), void *arg);
void rcu_kthread_enter(void);   /* first in each such thread's function */
void rcu_thread_init(void);
void rcu_check_blocking_allowed(const char *what);
int rcu_enter_gp_wait(struct rcu_thread *t);
void rcu_exit_gp_wait(struct rcu_thread *t, int was);
void rcu_internal_qsbr_online(struct rcu_thread *t);
void rcu_internal_qsbr_offline(struct rcu_thread *t);
struct rcu_tree;
void rcu_slots_fork_child(struct rcu_tree *t);

/* rcu_node.c, used by thread.c (the first) and the callback layer */
void rcu_report_qs_slot(int slot, bool dirty);
void rcu_gp_hurry(void);   /* after counting a wait (src/sync_hint.c) */
void rcu_cb_waiter_enter_hurry(void);   /* rcu_cb_waiter_enter(), then the above */
long tun_usable_cpus(void);   /* CPUs this process may run on (tunable defaults) */

/* gp_drive.c, used by the callback layer (nocb.c) */
unsigned long rcu_gp_snap(void);                 /* full fence + rcu_seq_snap */
unsigned long rcu_gp_seq_current(void);          /* acquire load of gp_seq */
void rcu_gp_wait_seq(unsigned long s);           /* block until GP s ends */
void rcu_gp_request_async(unsigned long s);      /* GP kthread will run it */


/*
 * Task readers (src/task.c, src/task_blocked.c) sit above the grace-period
 * core and the threads; what those need from them is handed down at init
 * (src/rcu.c: rcu_task_set_hooks()), as the stall warnings' callback counts
 * are.  Set before any grace period runs, then only read.  Leaf locks are
 * taken before a worker list's lock.
 */
struct rcu_task_hooks {
	/* GP init, ofl_lock held, after gp_seq says "in progress": worker
	 * lists to their leaves. */
	void (*promote_locked)(struct rcu_tree *t);
	/* A new tree installed (ofl_lock held, no GP in progress): the old
	 * leaves' tasks to the new leaves. */
	void (*reshape_locked)(struct rcu_tree *old, struct rcu_tree *t);
	/* A worker unregisters or exits: the task switched in, if any, out
	 * first (queued if inside its section); before any ofl_lock. */
	void (*worker_exit)(struct rcu_thread *w);
	/* ... then, ofl_lock held, its list to its leaf. */
	void (*worker_offline_locked)(struct rcu_thread *w);
	/* A blocking grace-period wait: refused inside a task's section. */
	void (*check_blocking)(struct rcu_thread *w, const char *what);
	/* Stall warnings: the tasks blocking the GP; returns how many. */
	int (*stall_print)(long gp, long now_ns, void (*emit)(const char *msg));
	void (*fork_child)(void);                 /* fork() child step */
};
void rcu_task_set_hooks(const struct rcu_task_hooks *h);   /* state.c */
extern const struct rcu_task_hooks *rcu_task_hooks;
/* Acquire: pairs with the release store in rcu_task_set_hooks(), so a
 * thread that reaches a hook without passing the init gate (a blocking
 * call's check, a signal handler's section) sees the table filled in.
 * Set once by src/rcu.c's constructor, never cleared. */
static inline const struct rcu_task_hooks *rcu_task_hooks_get(void)
{
	return __atomic_load_n(&rcu_task_hooks, __ATOMIC_ACQUIRE);
}

/* stall.c */
void rcu_stall_fork_child(void);                 /* fork() child step */
void rcu_check_stall(void);
void rcu_stall_reset(void);
unsigned long rcu_stall_count(void);            /* warnings printed */
void rcu_stall_set_cb_info(void (*fn)(long *pending, long *gave_up));

#endif
