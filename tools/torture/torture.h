/* SPDX-License-Identifier: MIT */
/*
 * The torture run's shared state and the calls between its parts:
 * pipeline.c (readers, writers, fake writers), callbacks.c (callback
 * writers, rcu_barrier(), the call_rcu() flood), inject.c (fault
 * injectors) and torture.c (options, driver, reports).  torture.c says
 * what the run does.
 */
#ifndef TREERCU_TOOL_TORTURE_H
#define TREERCU_TOOL_TORTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <treercu/rcu.h>

#include "common.h"

#define PIPE_LEN 10                 /* RCU_TORTURE_PIPE_LEN */
#define POOL 64
#define ELEM_MAGIC 0x7472637574727475UL
#define ELEM_POISON 0x6b6b6b6b6b6b6b6bUL   /* slab's POISON_FREE bytes */
#define SEQ_STATE_MASK 3UL          /* gp_seq: two low state bits */
#define MAX_THREADS 64

struct elem {
	_Atomic unsigned long magic;     /* ELEM_MAGIC live, ELEM_POISON freed */
	_Atomic unsigned long seq;       /* publication number */
	_Atomic unsigned long seq_check; /* ~seq, written before publication */
	_Atomic int pipe_count;
};

enum { GP_SYNC, GP_COND, GP_POLL, GP_COND_FULL, GP_POLL_FULL, GP_EXP, GP_COMPLETED, GP_NTYPES };
extern const char *const gp_name[GP_NTYPES];

enum {
	E_MB, E_POISON, E_REUSE, E_COOKIE, E_GPCHECK, E_STALL, E_THREAD,
	E_CB, E_BARRIER, E_FWD, E_FORK, E_CANCEL, E_NTYPES
};
extern const char *const err_name[E_NTYPES];

#define NPATH 3                     /* normal_wake_from_gp values */
extern const char *const path_name[NPATH];

struct tt_state {
	long readers, qsbr_readers, fakewriters, churners;
	long busted;                     /* writer skips its grace periods */
	long sync_path;                  /* normal_wake_from_gp; -1: rotate */
	long wake_max_saved;             /* sr_wake_max before the run */
	_Atomic unsigned long sync_calls[NPATH];
	int stop;
	struct elem pool[POOL];
	struct elem *current;
	_Atomic unsigned long errors[E_NTYPES];
	_Atomic unsigned long updates, churns, gp_types[GP_NTYPES];
	pthread_mutex_t lock;            /* protects the merged histograms */
	uint64_t pipe[PIPE_LEN + 1], batch[PIPE_LEN + 1], reads;
	uint64_t wcount[PIPE_LEN + 1];   /* Free-Block Circulation (writer only) */
	unsigned long freelist_empty;
};
extern struct tt_state tt;

/* Callback writers, rcu_barrier() thread, call_rcu() flood (fwd_prog). */
#define MAX_CBW 4
#define CB_INFLIGHT 2048            /* callback-writer elements not yet retired */
#define RING 1024                   /* poisoned elements kept before free() */
#define FWD_TL 48                   /* fwd_prog drain timeline entries */
enum { CB_CALL, CB_HURRY, CB_FREE, CB_NKINDS };
extern const char *const cb_kind_name[CB_NKINDS];

struct cbelem {
	struct elem e;                   /* first: free() overwrites ->magic */
	struct rcu_head rh;
	unsigned long cookie;            /* get_state_synchronize_rcu() at call_rcu() */
	_Atomic int removed;             /* set before the first call_rcu() */
	int kind;
	struct cbelem *deferred_next;    /* on cbt.deferred during fwd_prog's drain */
};

struct cbt_state {
	long writers, barrier, fwd, fwd_max_gps;
	double fwd_s, fwd_gap_s;
	struct elem *slot[MAX_CBW];      /* published callback-writer elements */
	_Atomic long inflight;
	_Atomic unsigned long queued, invoked, updates, kinds[CB_NKINDS];
	_Atomic unsigned long barriers, lazy_barriers, barrier_cbs;
	pthread_mutex_t ring_lock;       /* protects ring[] and ring_head */
	struct cbelem *ring[RING];
	unsigned int ring_head;
	struct cbelem *deferred;         /* under ring_lock: stages held back */
	_Atomic int quiet, parked;       /* fwd_prog: grace-period requesters park */
	_Atomic int flooding;            /* fwd_prog: a flood round is on (task readers) */
	int requesters;
	_Atomic unsigned long fwd_invoked, fwd_last_gp;
	/* The drain's timeline, for a failure report: per grace period after
	 * the flood ended, when a flood callback first saw it and how many had
	 * run by then (fwd_cb(), the one offload thread invoking them). */
	_Atomic unsigned long fwd_gp_end;
	uint64_t fwd_t_end;
	struct { uint64_t t; unsigned long inv; } fwd_tl[FWD_TL];
	unsigned long fwd_rounds, fwd_cbs, fwd_max_gps_seen, fwd_peak;
	unsigned long fwd_pushback;
	unsigned long fwd_unquiet;       /* rounds where others kept asking for GPs */
	unsigned long fwd_cut;           /* floods cut short by the end of the run */
	unsigned long fwd_max_gps_unquiet;
	int fwd_parked_at_end;           /* requesters parked when the flood ended */
	double fwd_max_drain_ms;
	long cb_max_pending;
	long lazy_saved;                 /* the lazy tunable before the run */
};
extern struct cbt_state cbt;

struct rd {
	bool qsbr;
	unsigned int rng;
	uint64_t pipe[PIPE_LEN + 1], batch[PIPE_LEN + 1], reads;
};

/* A grace-period cookie taken inside a section: done before the unlock
 * means a whole grace period ended inside it. */
struct read_cookie {
	bool full;
	unsigned long c;
	struct trcu_gp_oldstate fc;
};

/* Task readers (torture/tasks.c). */
struct frt;
struct tk_state {
	long readers, workers;           /* fibers and their worker threads */
	long rotate;                     /* rotate placement and fanout_leaf */
	long fl_saved, pl_saved;         /* their values before the run */
	struct frt *frt;
	_Atomic unsigned long switches_in;  /* switched out inside a section */
};
extern struct tk_state tk;


/* ---- Fault injectors ---------------------------------------------------------
 *
 * What ordinary programs do to a library: a signal handler that reads
 * inside any instruction of a reader, an updater or a grace-period driver;
 * fork() with everything in flight, the child using every API; updaters
 * cancelled wherever they are; threads that exit inside a read-side
 * section; QSBR threads that call every blocking API while online; threads
 * with no memory for their callback state.
 * --inject names the ones to run; "all" (the default) rotates them, one at a
 * time for --inject-ms each, as --sync-path all rotates the wake paths.
 */
enum { INJ_SIGNAL, INJ_FORK, INJ_CANCEL, INJ_EXIT, INJ_QSBR, INJ_NOMEM, INJ_N };
extern const char *const inj_name[INJ_N];

enum { QB_SYNC, QB_EXP, QB_BARRIER, QB_COND, QB_COND_FULL, QB_POLL, QB_FREE, QB_CALL, QB_N };
extern const char *const qb_name[QB_N];

#define SIG_INJ SIGUSR2
#define MAX_VICTIMS 4
#define FORK_CHILD_MS 150            /* the child's own torture */
#define FORK_CHILD_TIMEOUT_S 60      /* the child's hard alarm */

struct inj_state {
	unsigned int enabled;            /* injectors chosen by --inject */
	bool rotate;                     /* "all": one at a time */
	_Atomic unsigned int active;     /* the ones running now */
	long period_ms, signal_us, fork_ms, cancel_ms, victims;
	double stall_s;
	/* Threads that take the signal: registered, outside QSBR. */
	pthread_mutex_t tlock;
	pthread_t target[MAX_THREADS];
	bool used[MAX_THREADS];
	_Atomic unsigned long sig_sent, sig_sections, sig_pipe[PIPE_LEN + 1];
	_Atomic unsigned long forks, fork_failed;
	_Atomic unsigned long cancels, victim_cbs_queued, victim_cbs_run, victim_ops;
	_Atomic unsigned long exits, exits_nested;
	/* nomem: short-lived threads whose callback state is refused. */
	_Atomic unsigned long nomem_threads, nomem_cbs_queued, nomem_cbs_run;
	_Atomic unsigned long qsbr_calls[QB_N];
	int slots_before, slots_after;   /* registered slots before and after the run */
};
extern struct inj_state inj;

#if defined(__SANITIZE_THREAD__)
#define TORTURE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TORTURE_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TORTURE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TORTURE_ASAN 1
#endif
#endif

/* Where the fork injector cannot run, and why (NULL: it runs). */
#if defined(TORTURE_TSAN)
#define FORK_SKIPPED "ThreadSanitizer does not support threads in the child of a " \
	"multi-threaded fork"
#elif defined(TORTURE_ASAN)
#define FORK_SKIPPED "AddressSanitizer's allocator takes no lock around fork(): a " \
	"child forked while another thread allocates can block in it for ever"
#else
#define FORK_SKIPPED NULL
#endif

/* torture/pipeline.c: readers, writers, fake writers */
unsigned int tt_rnd(unsigned int *s);              /* a thread's own PRNG */
bool tt_stopping(void);                            /* the run is ending */
void tt_fail(int e);                               /* counts one error of kind e */
unsigned long tt_seq_diff(unsigned long new, unsigned long old);  /* GPs between */
unsigned long tt_check_elem(struct elem *p);       /* poison/mbtest/reuse checks */
struct elem *tt_read_pick(struct rd *r);           /* the element a read takes */
void tt_one_read(struct rd *r);                    /* one checked read-side section */
void tt_rd_merge(struct rd *r);                    /* a reader's histograms into tt */
void tt_wait_gp(int type, unsigned int *rng);      /* one GP of the given kind */
void tt_elem_init(struct elem *rp, unsigned long seq);
void tt_pool_free(struct elem *p);
void tt_pool_init(void);                           /* every element free, zeroed */
void tt_park_if_quiet(void);                       /* GP requesters park for fwd_prog */
void *reader_fn(void *arg);
void *churn_fn(void *arg);
void tt_cookie_take(struct read_cookie *k, bool full);  /* a GP cookie in a section */
bool tt_cookie_done(struct read_cookie *k);        /* ... done: a GP ended inside */
unsigned long tt_section_end_checks(struct elem *p, unsigned long seq,
				    struct read_cookie *k);  /* reuse/poison/cookie */
void tt_rd_count(struct rd *r, int pipe, unsigned long started,
		 unsigned long completed);          /* pipe/batch histograms */
void *writer_fn(void *arg);
void *fakewriter_fn(void *arg);

/* torture/callbacks.c: callback writers, rcu_barrier(), call_rcu() flood */
bool tt_nap(double s);                             /* sleeps s; false when stopping */
void *cbwriter_fn(void *arg);
void *barrier_fn(void *arg);
void *fwd_fn(void *arg);
void cb_final_check(void);                         /* every queued callback ran */
void cb_cleanup(void);

/* torture/tasks.c: task readers */
void start_task_readers(void);
void rotate_task_knobs(uint64_t elapsed_ns);
void stop_task_readers(void);
void task_report(void);

/* torture/inject.c: fault injectors */
void sig_install(void);
int sig_target_add(void);                          /* the caller may take SIG_INJ */
void sig_target_del(int slot);
void rotate_inject(uint64_t elapsed_ns);           /* --inject all: one at a time */
void rotate_path(uint64_t elapsed_ns);             /* --sync-path all */
void *signaller_fn(void *arg);
void *forker_fn(void *arg);
void *canceller_fn(void *arg);
void *exiter_fn(void *arg);
void *qsbr_blocker_fn(void *arg);
void *nomem_fn(void *arg);

#endif
