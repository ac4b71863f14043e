/* SPDX-License-Identifier: MIT */
/*
 * rcu_free()'s blocks are callbacks: each is freed by call_rcu()'s machinery
 * and drained by the events that seal a partly filled block.  Each scenario
 * runs in its own process (common/subproc.h):
 *   flood_bound     a flood while grace periods are slow stays within the
 *                   callback layer's flood bound (cb_max_pending blocks)
 *   exit_seals      a thread that exits with a partly filled block has it
 *                   freed at once, not after rcu_free_drain_ms
 *   full_block      a full block is freed with no drain at all
 *   one_gp          each pointer of a full block is freed after a grace
 *                   period that began after its rcu_free() (a cookie taken
 *                   before the call is complete at its free()), and the
 *                   block needs one grace period: at most two end between
 *                   its last rcu_free() and its frees (one may be in
 *                   progress at the call), none of them anyone else's
 *   barrier_partial rcu_barrier() frees a partly filled block
 *   timer_lifetime  the drain timer's thread starts with the first block,
 *                   never before, and trcu_shutdown() ends it; rcu_free()
 *                   after the shutdown still frees after a grace period
 *   no_memory       no memory for a block: each pointer is freed after a
 *                   grace period on the caller's thread, none lost; inside
 *                   a read-side section that aborts with a message
 *   kfree_rcu_head  kfree_rcu(ptr, rhf) with no memory for a block: the
 *                   object's own rcu_head carries it, as a callback, also
 *                   inside a read-side section (no wait, no abort); each
 *                   object is freed once, after a grace period that began
 *                   after the call, not while a reader holds it
 *   signal_nested   rcu_free() from a signal handler that interrupted the
 *                   same thread's rcu_free() aborts with a message (it
 *                   would deadlock on the thread's block lock)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/treercu.h>

#include "holder.h"
#include "subproc.h"
#include "threads.h"

#define BLOCK_PTRS 508       /* pointers in one page-sized block (docs/api.md) */
#define BOUND_MAX_PENDING 100
#define SECTION_MS 300

/* ---- Allocation failure for the page-sized blocks (no_memory) ------------- */

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void __real_free(void *p);
void __wrap_free(void *p);
static _Atomic int fail_pages;

void *__wrap_malloc(size_t n)
{
	if (n == 4096 && atomic_load(&fail_pages))
		return NULL;
	return __real_malloc(n);
}

/* ---- free() of the tracked block (one_gp) ---------------------------------- */

static void *tracked[BLOCK_PTRS];
static unsigned long tracked_cookie[BLOCK_PTRS];
static _Atomic int tracking, tracked_freed, tracked_early;
static _Atomic long gp_at_first_free = -1;

void __wrap_free(void *p)
{
	if (p && atomic_load(&tracking)) {
		for (int i = 0; i < BLOCK_PTRS; i++) {
			if (tracked[i] != p)
				continue;
			if (!poll_state_synchronize_rcu(tracked_cookie[i]))
				atomic_fetch_add(&tracked_early, 1);
			if (atomic_fetch_add(&tracked_freed, 1) == 0) {
				struct trcu_stats st;

				trcu_get_stats(&st);
				atomic_store(&gp_at_first_free, st.gp_completed);
			}
			break;
		}
	}
	__real_free(p);
}

/* ---- Helpers ----------------------------------------------------------------- */

static struct trcu_stats stats(void)
{
	struct trcu_stats st;

	trcu_get_stats(&st);
	return st;
}

/* Wait up to limit_s for frees_done to reach n. */
static bool wait_freed(long n, int limit_s)
{
	for (int i = 0; i < limit_s * 1000; i++) {
		if (stats().frees_done >= n)
			return true;
		usleep(1000);
	}
	return stats().frees_done >= n;
}

/* ---- flood_bound ------------------------------------------------------------- */

static void sc_flood_bound(void)
{
	const long nflood = 400L * BLOCK_PTRS;
	/* Push-back holds a thread at cb_max_pending callbacks, here blocks,
	 * plus the one that crossed it and the one filling. */
	const long bound = (BOUND_MAX_PENDING + 2) * (long)BLOCK_PTRS;
	struct trcu_stats st;
	long maxp = 0;
	struct slow_reader sr;

	slow_reader_start(&sr, SECTION_MS);
	for (long i = 0; i < nflood; i++) {
		rcu_free(malloc(16));
		if (i % 64 == 0) {
			st = stats();
			if (st.frees_queued - st.frees_done > maxp)
				maxp = st.frees_queued - st.frees_done;
		}
	}
	slow_reader_stop(&sr);
	st = stats();
	fprintf(stderr, "most pointers pending: %ld (bound %ld), push-backs %ld\n", maxp, bound,
		st.cbs_pushback);
	CHECK(maxp <= bound);
	CHECK(st.cbs_pushback > 0);
	rcu_barrier();
	st = stats();
	CHECK_EQ(st.frees_done, nflood);
	CHECK_EQ(st.frees_queued, nflood);
	_exit(0);
}

/* ---- exit_seals, full_block, barrier_partial ----------------------------------- */

static void *free_three(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++)
		rcu_free(malloc(24));
	return NULL;   /* exits with a partly filled block */
}

static void sc_exit_seals(void)
{
	pthread_t t;

	CHECK(pthread_create(&t, NULL, free_three, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	/* rcu_free_drain_ms is an hour: only the exit can have sealed it. */
	if (!wait_freed(3, 60)) {
		fprintf(stderr, "exited thread's block not freed: %ld of 3 after 60 s\n",
			stats().frees_done);
		_exit(1);
	}
	_exit(0);
}

static void sc_full_block(void)
{
	for (int i = 0; i < BLOCK_PTRS; i++)
		rcu_free(malloc(8));
	if (!wait_freed(BLOCK_PTRS, 60)) {
		fprintf(stderr, "full block not freed: %ld of %d after 60 s\n", stats().frees_done,
			BLOCK_PTRS);
		_exit(1);
	}
	_exit(0);
}

static void sc_one_gp(void)
{
	struct trcu_stats st;
	long gp_last;

	for (int i = 0; i < BLOCK_PTRS; i++)
		tracked[i] = malloc(16);
	atomic_store(&tracking, 1);
	for (int i = 0; i < BLOCK_PTRS; i++) {
		tracked_cookie[i] = get_state_synchronize_rcu();
		if (i == BLOCK_PTRS - 1) {
			trcu_get_stats(&st);
			gp_last = st.gp_completed;
		}
		rcu_free(tracked[i]);
	}
	for (int i = 0; i < 60000 && atomic_load(&tracked_freed) < BLOCK_PTRS; i++)
		usleep(1000);
	fprintf(stderr, "freed %d of %d, %d before their grace period; grace periods between "
		"the last rcu_free() and the first free(): %ld\n", atomic_load(&tracked_freed),
		BLOCK_PTRS, atomic_load(&tracked_early), atomic_load(&gp_at_first_free) - gp_last);
	CHECK_EQ(atomic_load(&tracked_freed), BLOCK_PTRS);
	CHECK_EQ(atomic_load(&tracked_early), 0);
	CHECK(atomic_load(&gp_at_first_free) - gp_last >= 1);
	CHECK(atomic_load(&gp_at_first_free) - gp_last <= 2);
	_exit(0);
}

static void sc_barrier_partial(void)
{
	for (int i = 0; i < 5; i++)
		rcu_free(malloc(8));
	rcu_barrier();
	CHECK_EQ(stats().frees_done, 5);
	_exit(0);
}

/* ---- timer_lifetime --------------------------------------------------------------- */

static void cb_nop(struct trcu_head *h)
{
	(void)h;
}

static void sc_timer_lifetime(void)
{
	static struct trcu_head h;

	/* Every other API first: none of them starts the timer. */
	rcu_read_lock();
	rcu_read_unlock();
	synchronize_rcu();
	call_rcu(&h, cb_nop);
	rcu_barrier();
	CHECK_EQ(threads_named("trcu_kvfree"), 0);
	rcu_free(malloc(8));
	/* The thread names itself: give it time to. */
	CHECK_EQ(threads_named_settle("trcu_kvfree", 1, 10000), 1);
	rcu_free(malloc(8));   /* left filling: the shutdown frees it */
	trcu_shutdown();
	CHECK_EQ(threads_named_settle("trcu_kvfree", 0, 2000), 0);
	CHECK_EQ(stats().frees_done, 2);
	rcu_free(malloc(8));   /* after the shutdown: freed here after a GP */
	CHECK_EQ(stats().frees_fallback, 1);
	CHECK_EQ(threads_named("trcu_kvfree"), 0);
	_exit(0);
}

/* ---- no_memory ---------------------------------------------------------------------- */

static void sc_no_memory(void)
{
	const int n = 20;

	atomic_store(&fail_pages, 1);
	for (int i = 0; i < n; i++)
		rcu_free(malloc(8));
	/* Freed already, each after its own grace period. */
	CHECK_EQ(stats().frees_fallback, n);
	atomic_store(&fail_pages, 0);
	rcu_free(malloc(8));
	rcu_barrier();
	CHECK_EQ(stats().frees_done, 1);
	atomic_store(&fail_pages, 1);
	rcu_read_lock();
	rcu_free(malloc(8));   /* aborts: would wait for a GP inside the section */
	rcu_read_unlock();
	_exit(0);
}

/* ---- kfree_rcu_head ------------------------------------------------------------------- */

struct kobj {
	long pad[3];
	struct rcu_head rh;   /* not the first member: the offset is used */
	long v;
};

static struct kobj *kobj_new(int slot)
{
	struct kobj *o = malloc(sizeof(*o));

	CHECK(o != NULL);
	o->v = 7;
	tracked[slot] = o;
	tracked_cookie[slot] = get_state_synchronize_rcu();
	return o;
}

static void sc_kfree_rcu_head(void)
{
	struct holder h;
	struct kobj *a, *b, *none = NULL;

	atomic_store(&tracking, 1);
	atomic_store(&fail_pages, 1);
	holder_start(&h);
	a = kobj_new(0);
	kfree_rcu(a, rh);             /* returns at once: the holder holds every GP */
	kfree_rcu(none, rh);          /* NULL: nothing */
	rcu_read_lock();
	b = kobj_new(1);
	kvfree_rcu(b, rh);            /* inside a section: no abort, no wait */
	rcu_read_unlock();
	usleep(50 * 1000);
	CHECK_EQ(atomic_load(&tracked_freed), 0);
	CHECK_EQ(stats().frees_fallback, 2);
	holder_release(&h);
	rcu_barrier();
	CHECK_EQ(atomic_load(&tracked_freed), 2);
	CHECK_EQ(atomic_load(&tracked_early), 0);
	/* With memory again, the blocks take them (the head stays unused). */
	atomic_store(&fail_pages, 0);
	a = kobj_new(2);
	kfree_rcu(a, rh);
	kvfree_rcu(malloc(8));        /* the one-argument form: rcu_free() */
	rcu_barrier();
	CHECK_EQ(atomic_load(&tracked_freed), 3);
	CHECK_EQ(atomic_load(&tracked_early), 0);
	CHECK_EQ(stats().frees_fallback, 2);
	CHECK_EQ(stats().frees_done, 2);
	_exit(0);
}

/* ---- signal_nested -------------------------------------------------------------------- */

static void *handler_ptr[64];
static _Atomic int handler_next;

static void on_signal(int sig)
{
	int i = atomic_fetch_add(&handler_next, 1);

	(void)sig;
	/* A pointer allocated before the signals: no malloc() here. */
	rcu_free(handler_ptr[i % 64]);
	handler_ptr[i % 64] = NULL;
}

static pthread_t target;

static void *signaller(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_kill(target, SIGUSR1);
		usleep(200);
	}
	return NULL;
}

static void sc_signal_nested(void)
{
	enum { N = 1 << 20 };
	static void *objs[N];
	pthread_t t;

	for (int i = 0; i < 64; i++)
		handler_ptr[i] = malloc(8);
	for (int i = 0; i < N; i++)
		objs[i] = malloc(8);
	rcu_free(malloc(8));   /* the library's one-time init before any signal */
	target = pthread_self();
	signal(SIGUSR1, on_signal);
	CHECK(pthread_create(&t, NULL, signaller, NULL) == 0);
	/* Until a signal lands inside rcu_free(); no malloc() in the loop
	 * itself, so a handler never interrupts the program's malloc(). */
	for (long i = 0;; i++) {
		rcu_free(objs[i % N]);
		objs[i % N] = NULL;
		if (i % N == N - 1) {
			fprintf(stderr, "no signal landed inside rcu_free() in %ld calls\n", i + 1);
			_exit(1);
		}
	}
}

static const struct sp_scenario scenarios[] = {
	{ "flood_bound", sc_flood_bound },
	{ "exit_seals", sc_exit_seals },
	{ "full_block", sc_full_block },
	{ "one_gp", sc_one_gp },
	{ "barrier_partial", sc_barrier_partial },
	{ "timer_lifetime", sc_timer_lifetime },
	{ "no_memory", sc_no_memory },
	{ "kfree_rcu_head", sc_kfree_rcu_head },
	{ "signal_nested", sc_signal_nested },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const flood_env[] = { "TREERCU_CB_MAX_PENDING=100", "TREERCU_QHIMARK=10",
						 NULL };
	static const char *const hour_env[] = { "TREERCU_RCU_FREE_DRAIN_MS=3600000", NULL };
	bool ok = true;

	sp_child(argc, argv, scenarios);
	alarm(900);
	printf("test_rcu_free_drains: rcu_free() blocks as callbacks, and what seals them\n");
	ok &= sp_expect_exit("flood_bound", flood_env, 240, 0, NULL, 0);
	ok &= sp_expect_exit("exit_seals", hour_env, 120, 0, NULL, 0);
	ok &= sp_expect_exit("full_block", hour_env, 120, 0, NULL, 0);
	ok &= sp_expect_exit("one_gp", hour_env, 120, 0, NULL, 0);
	ok &= sp_expect_exit("barrier_partial", hour_env, 120, 0, NULL, 0);
	ok &= sp_expect_exit("timer_lifetime", NULL, 120, 0, NULL, 0);
	ok &= sp_expect_abort("no_memory", NULL, 120,
			      "out of memory inside an RCU read-side critical section");
	ok &= sp_expect_exit("kfree_rcu_head", NULL, 120, 0, NULL, 0);
	ok &= sp_expect_abort("signal_nested", NULL, 120,
			      "called from a signal handler that interrupted rcu_free()");
	if (!ok) {
		printf("test_rcu_free_drains: FAILED\n");
		return 1;
	}
	printf("test_rcu_free_drains: OK\n");
	return 0;
}
