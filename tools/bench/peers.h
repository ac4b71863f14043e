/* SPDX-License-Identifier: MIT */
/*
 * The peers every comparison runs: treercu (default and QSBR threads, and
 * task readers: each reader thread a worker with one task switched in),
 * liburcu (memb, qsbr, mb, bp) and Concurrency Kit's ck_epoch, each behind
 * one small table of operations, so that every benchmark loops over the
 * same list and runs the same code around each peer's primitives.
 *
 * Each library lives in its own translation unit (peer_treercu.c,
 * peer_liburcu.c, peer_ck.c): their headers define the same familiar names.
 * This header includes none of them.  The measurement loops (refscale_loop,
 * busy_reader) are compiled inside each peer's unit with its read side
 * inlined; the workloads (deferred free, hash map) call read_lock/read_unlock
 * through the table, out of line, the same call for every peer.
 */
#ifndef TREERCU_TOOL_PEERS_H
#define TREERCU_TOOL_PEERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fixed indices: the first two are the pair every older table compares. */
enum {
	PEER_TREERCU,          /* treercu, default (preemptible-style) threads */
	PEER_LU_MEMB,          /* liburcu memb flavor */
	PEER_TREERCU_QSBR,     /* treercu, QSBR threads (trcu_thread_qsbr()) */
	PEER_LU_QSBR,          /* liburcu qsbr flavor */
	PEER_LU_MB,            /* liburcu mb flavor */
	PEER_LU_BP,            /* liburcu bp flavor */
	PEER_CK,               /* Concurrency Kit ck_epoch */
	PEER_TREERCU_TASK,     /* treercu, each reader thread a worker with a task in */
	PEER_MAX
};

/* A QSBR reader reports a quiescent state once per this many sections (or
 * operations), as liburcu's own qsbr benchmarks do. */
#define PEER_QS_EVERY 1024

/* common.h's BUSY_READER_LOOP with a quiescent state (QS) every
 * PEER_QS_EVERY sections, for QSBR readers. */
#define PEER_BUSY_QSBR_LOOP(stop, LOCK, UNLOCK, QS, count) do { \
	while (!__atomic_load_n((stop), __ATOMIC_RELAXED)) { \
		LOCK; \
		for (int pb_i_ = 0; pb_i_ < BUSY_SECTION; pb_i_++) \
			(void)tool_busy_word; \
		UNLOCK; \
		if (++(count) % PEER_QS_EVERY == 0) \
			QS; \
	} } while (0)

/* Bytes at the start of every retired object that the peer owns until the
 * object is freed: treercu's and liburcu's struct rcu_head, ck_epoch's
 * ck_epoch_entry_t (checked by peer_check_heads()). */
#define PEER_HEAD 16

struct peer_ops {
	const char *name;        /* in tables: "liburcu memb" */
	const char *id;          /* on the command line: "memb" */
	const char *missing;     /* NULL when built in, else why not */
	bool qsbr;               /* readers must report quiescent states */
	void (*thread_register)(void);
	void (*thread_unregister)(void);      /* every retire() of the thread has run */
	/* Around blocking outside the library (QSBR: offline/online; else no-ops). */
	void (*thread_offline)(void);
	void (*thread_online)(void);
	void (*read_lock)(void);              /* out of line, the same call for all */
	void (*read_unlock)(void);
	void (*quiescent_state)(void);        /* QSBR peers; a no-op for the others */
	/* nbatch x REFSCALE_BATCH pairs, read side inlined (common.h). */
	void (*refscale_loop)(unsigned long nbatch);
	/* BUSY_READER_LOOP until *stop (QSBR: a quiescent state every
	 * PEER_QS_EVERY sections); returns the number of sections. */
	unsigned long (*busy_reader)(const int *stop);
	void (*synchronize)(void);
	/* After a grace period, peer_free_cb(obj).  obj starts with PEER_HEAD
	 * bytes the peer may use. */
	void (*retire)(void *obj);
	/* Returns once every retire() this thread made has run its callback. */
	void (*barrier)(void);
	/* Size of the peer's deferred-free head (<= PEER_HEAD). */
	size_t (*head_size)(void);
};

extern const struct peer_ops peer_treercu, peer_treercu_qsbr;      /* peer_treercu.c */
extern const struct peer_ops peer_treercu_task;
extern const struct peer_ops peer_lu_memb, peer_lu_qsbr, peer_lu_mb, peer_lu_bp;
extern const struct peer_ops peer_ck;                               /* peer_ck.c */

/* Every peer, indexed by the enum above (built in or not). */
const struct peer_ops *peer_get(int i);

/* The callback every retire() ends in: counts the object as freed, poisons
 * its canary word (offset PEER_HEAD) and frees it. */
#define PEER_CANARY 0x7265637963726f57ULL
#define PEER_POISON 0xdeaddeaddeaddeadULL
void peer_free_cb(void *obj);
/* Objects freed through peer_free_cb() since the program started. */
unsigned long peer_freed(void);
/* The callback that brings peer_freed() to target records now_ns(), which
 * peer_freed_mark_ns() returns (0 until then): "the last callback ran". */
void peer_freed_mark(unsigned long target);
uint64_t peer_freed_mark_ns(void);

/*
 * --peers LIST: comma-separated ids ("treercu,memb,ck") or "all".  Fills
 * sel[PEER_MAX] (peers not built in are left out, with one line saying so on
 * stdout); returns 0, or -1 after printing an error naming the bad id.
 */
int peer_select(const char *list, bool sel[PEER_MAX], const char *prog);
/* "treercu, treercu-qsbr, memb, qsbr, mb, bp, ck, treercu-task": for help
 * text. */
#define PEER_IDS "treercu, treercu-qsbr, memb, qsbr, mb, bp, ck, treercu-task"

/* 0 if every built-in peer's head fits PEER_HEAD, else -1 with a message. */
int peer_check_heads(void);

/* ThreadSanitizer sees treercu's grace periods (the library is built
 * instrumented), not those of the prebuilt liburcu and Concurrency Kit: a
 * workload that frees what their readers read would report false races, so
 * under it the workloads run the treercu peers only. */
#if defined(__SANITIZE_THREAD__)
#define PEER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PEER_TSAN 1
#endif
#endif
#ifndef PEER_TSAN
#define PEER_TSAN 0
#endif

/* ---- For the workloads (peers_retire.c, peers_hashmap.c) ------------------ */

uint64_t peer_thread_cpu_ns(void);      /* the calling thread's CPU time */
/* Another thread's CPU time (its CPU clock), so that one thread samples
 * every clock at the same instants. */
uint64_t peer_other_cpu_ns(pthread_t t);
uint64_t peer_process_cpu_ns(void);     /* every thread's, exited ones included */
/* Objects a workload may leave retired but not yet freed before its
 * updaters pause (MemAvailable / 8 in 64-byte objects, at most 4 M): a
 * library that falls behind must not take the machine down. */
double peer_unfreed_cap(void);

/* Selected peers in list order; returns how many. */
int peer_list(const bool sel[PEER_MAX], int idx[PEER_MAX]);

/* Results `quick` shows (medians over the repeats; NAN where not run). */
struct peers_retire_point {
	double objs_s, sections_s, cpu_ns_per_obj, helper_cpu_pct, peak_unfreed;
};
struct peers_hashmap_point {
	double ops_s, peak_unfreed_bytes, mean_unfreed_bytes, rss_growth_bytes, helper_cpu_pct;
};
struct peers_result {
	bool ran_retire[PEER_MAX], ran_hashmap[PEER_MAX];
	struct peers_retire_point retire[PEER_MAX];
	struct peers_hashmap_point hashmap[PEER_MAX];
};

/* `treercu peers` (peers_workloads.c): o->quick for a short run; fills r. */
struct tool_opts;
int peers_main(struct tool_opts *o, struct peers_result *r);

#endif
