/* SPDX-License-Identifier: MIT */
/*
 * torture: the rcutorture pipeline in userspace.
 *
 * One writer publishes a new element with rcu_assign_pointer() and ages the
 * replaced ones through a pipe of RCU_TORTURE_PIPE_LEN stages, one grace
 * period per stage (synchronize_rcu, cond, polled, _full and expedited
 * variants in turn), then poisons and frees them into a pool.  Readers
 * (preemptible-style, QSBR, and short-lived threads that register and
 * unregister or just exit) record each element's pipe count (Reader Pipe)
 * and the grace periods that ended during the read (Reader Batch).  A pipe
 * count above 1 means an element went through a whole grace period while a
 * reader held it: failure.  Fake writers run every grace-period primitive
 * concurrently and check its cookie afterwards.  `--busted 1` (rcutorture's
 * torture_type=busted) makes the writer skip its grace periods, to show
 * that the checks fire; `--busted 2` runs the callback writers' callbacks at
 * once, without a grace period.
 *
 * Callbacks (rcutorture's deferred-free writers, rcu_barrier test and
 * fwd_prog): callback writers publish malloc'd elements in their own slots
 * (readers read those too) and retire the replaced ones with call_rcu(),
 * call_rcu_hurry() (the callback re-queues the element once per pipe stage,
 * checking that the element was removed and that the cookie taken at the
 * call_rcu() has completed, then poisons it) or rcu_free().  A barrier
 * thread queues N counting callbacks (lazy now and then), calls
 * rcu_barrier() and checks that all N ran and that every callback queued
 * before it ran.  A flood thread floods call_rcu() for a few seconds, parks
 * every other grace-period requester, and checks that its callbacks are all
 * invoked within --fwd-max-gps grace periods after the flood ended and that
 * cb_max_pending bounded it.  --sync-path 0|1|2|all picks the
 * synchronize_rcu() path (normal_wake_from_gp); "all" rotates it every 100 ms.
 */
#define _GNU_SOURCE   /* pthread_timedjoin_np */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "common.h"
#include "results.h"

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
static const char *const gp_name[GP_NTYPES] = {
	"sync", "cond", "poll", "cond_full", "poll_full", "exp", "completed",
};

enum {
	E_MB, E_POISON, E_REUSE, E_COOKIE, E_GPCHECK, E_STALL, E_THREAD,
	E_CB, E_BARRIER, E_FWD, E_FORK, E_CANCEL, E_NTYPES
};
static const char *const err_name[E_NTYPES] = {
	"mbtest", "poison", "reuse", "gp_during_read", "gp_cookie", "stall", "thread",
	"callback", "barrier", "fwd_prog", "fork", "cancel",
};

#define NPATH 3                     /* normal_wake_from_gp values */
static const char *const path_name[NPATH] = { "wakeme", "waiter_list", "gp_futex" };

static struct {
	long readers, qsbr_readers, fakewriters, churners;
	long busted;                     /* writer skips its grace periods */
	long sync_path;                  /* normal_wake_from_gp; -1: rotate */
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
} tt = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Callback writers, rcu_barrier() thread, call_rcu() flood (fwd_prog). */
#define MAX_CBW 4
#define CB_INFLIGHT 2048            /* callback-writer elements not yet retired */
#define RING 1024                   /* poisoned elements kept before free() */
#define FWD_TL 48                   /* fwd_prog drain timeline entries */
enum { CB_CALL, CB_HURRY, CB_FREE, CB_NKINDS };
static const char *const cb_kind_name[CB_NKINDS] = { "call_rcu", "call_rcu_hurry", "rcu_free" };

struct cbelem {
	struct elem e;                   /* first: free() overwrites ->magic */
	struct rcu_head rh;
	unsigned long cookie;            /* get_state_synchronize_rcu() at call_rcu() */
	_Atomic int removed;             /* set before the first call_rcu() */
	int kind;
	struct cbelem *deferred_next;    /* on cbt.deferred during fwd_prog's drain */
};

static struct {
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
} cbt = { .ring_lock = PTHREAD_MUTEX_INITIALIZER };

struct rd {
	bool qsbr;
	unsigned int rng;
	uint64_t pipe[PIPE_LEN + 1], batch[PIPE_LEN + 1], reads;
};

static unsigned int rnd(unsigned int *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static bool stopping(void)
{
	return __atomic_load_n(&tt.stop, __ATOMIC_RELAXED);
}

static void fail(int e)
{
	atomic_fetch_add(&tt.errors[e], 1);
}

/* rcu_seq_diff(): grace periods between two gp_seq snapshots. */
static unsigned long seq_diff(unsigned long new, unsigned long old)
{
	unsigned long rnd_diff;

	if (old == new)
		return 0;
	rnd_diff = (new & ~SEQ_STATE_MASK) - ((old + SEQ_STATE_MASK) & ~SEQ_STATE_MASK) +
		   ((new & SEQ_STATE_MASK) || (old & SEQ_STATE_MASK));
	if (SEQ_STATE_MASK - rnd_diff <= __LONG_MAX__)   /* ULONG_CMP_GE(mask, d) */
		return 1;
	return ((rnd_diff - SEQ_STATE_MASK - 1) >> 2) + 2;
}

/* The fault injectors' signal goes to these threads (below). */
static int sig_target_add(void);
static void sig_target_del(int slot);

/* ---- Readers ------------------------------------------------------------ */

/* The mbtest: fields set before publication must be seen set. */
static unsigned long check_elem(struct elem *p)
{
	unsigned long magic = atomic_load_explicit(&p->magic, memory_order_relaxed);
	unsigned long seq = atomic_load_explicit(&p->seq, memory_order_relaxed);

	if (magic == ELEM_POISON)
		fail(E_POISON);
	else if (magic != ELEM_MAGIC ||
		 atomic_load_explicit(&p->seq_check, memory_order_relaxed) != ~seq)
		fail(E_MB);
	return seq;
}

/* rcu_read_delay(): now and then stay in the section a while. */
static void read_delay(struct rd *r)
{
	unsigned int x = rnd(&r->rng);

	if (x % 65536 == 0)
		usleep(2000);
	else if (x % 1024 == 0)
		usleep(20 + x % 50);
	else if (x % 128 == 0)
		sched_yield();
}

struct read_cookie {
	bool full;
	unsigned long c;
	struct trcu_gp_oldstate fc;
};

static void cookie_take(struct read_cookie *k, bool full)
{
	k->full = full;
	if (full)
		get_state_synchronize_rcu_full(&k->fc);
	else
		k->c = get_state_synchronize_rcu();
}

static bool cookie_done(struct read_cookie *k)
{
	return k->full ? poll_state_synchronize_rcu_full(&k->fc) : poll_state_synchronize_rcu(k->c);
}

/* The synchronous writer's element, or (half the time) a callback writer's. */
static struct elem *read_pick(struct rd *r)
{
	unsigned int x = rnd(&r->rng);

	if (cbt.writers && (x & 1))
		return rcu_dereference(cbt.slot[(x >> 1) % (unsigned int)cbt.writers]);
	return rcu_dereference(tt.current);
}

static void one_read(struct rd *r)
{
	unsigned long started, completed, seq;
	struct read_cookie k;
	struct elem *p;
	int pipe;

	rcu_read_lock();
	started = trcu_gp_seq();
	cookie_take(&k, r->reads & 1);
	p = read_pick(r);
	if (!p) {
		rcu_read_unlock();
		return;
	}
	seq = check_elem(p);
	read_delay(r);
	if (r->rng % 8 == 0)
		rcu_read_lock();             /* nested section */
	pipe = atomic_load_explicit(&p->pipe_count, memory_order_relaxed);
	if (r->rng % 8 == 0)
		rcu_read_unlock();
	if (atomic_load_explicit(&p->seq, memory_order_relaxed) != seq)
		fail(E_REUSE);
	check_elem(p);
	completed = trcu_gp_seq();
	if (cookie_done(&k))
		fail(E_COOKIE);              /* a whole GP ended inside the section */
	rcu_read_unlock();
	r->pipe[pipe < 0 ? 0 : pipe > PIPE_LEN ? PIPE_LEN : pipe]++;
	completed = seq_diff(completed, started);
	r->batch[completed > PIPE_LEN ? PIPE_LEN : completed]++;
	r->reads++;
}

static void rd_merge(struct rd *r)
{
	pthread_mutex_lock(&tt.lock);
	for (int i = 0; i <= PIPE_LEN; i++) {
		tt.pipe[i] += r->pipe[i];
		tt.batch[i] += r->batch[i];
	}
	tt.reads += r->reads;
	pthread_mutex_unlock(&tt.lock);
}

/* QSBR reader step: quiescent state between reads, sometimes offline. */
static void qsbr_step(struct rd *r)
{
	rcu_quiescent_state();
	if (rnd(&r->rng) % 4096 == 0) {
		rcu_thread_offline();
		usleep(100);
		rcu_thread_online();
	}
}

static void *reader_fn(void *arg)
{
	struct rd *r = arg;

	int sig;

	if (trcu_register_thread())
		fail(E_THREAD);
	if (r->qsbr)
		trcu_thread_qsbr();
	sig = r->qsbr ? -1 : sig_target_add();
	while (!stopping()) {
		one_read(r);
		if (r->qsbr)
			qsbr_step(r);
	}
	sig_target_del(sig);
	if (r->qsbr)
		rcu_thread_offline();
	trcu_unregister_thread();
	rd_merge(r);
	return NULL;
}

/* Short-lived reader: mode picks how it starts and how it leaves. */
static void *churn_child(void *arg)
{
	struct rd *r = arg;
	unsigned int mode = rnd(&r->rng) % 5;

	if (mode != 4 && trcu_register_thread())   /* mode 4: auto-registration */
		fail(E_THREAD);
	r->qsbr = mode == 2 || mode == 3;
	if (r->qsbr)
		trcu_thread_qsbr();
	for (int i = 0; i < 100 && !stopping(); i++) {
		one_read(r);
		if (r->qsbr)
			rcu_quiescent_state();
	}
	if (mode == 2)
		rcu_thread_offline();
	if (mode == 0 || mode == 2)
		trcu_unregister_thread();
	/* modes 1, 3 (QSBR, online) and 4 exit registered */
	return NULL;
}

static void *churn_fn(void *arg)
{
	struct rd *r = arg;

	while (!stopping()) {
		pthread_t t;

		if (pthread_create(&t, NULL, churn_child, r)) {
			fail(E_THREAD);
			break;
		}
		pthread_join(t, NULL);
		atomic_fetch_add(&tt.churns, 1);
	}
	rd_merge(r);
	return NULL;
}

/* ---- Writers ------------------------------------------------------------ */

static void poll_wait(unsigned long c, struct trcu_gp_oldstate *fc, unsigned int *rng)
{
	while (!(fc ? poll_state_synchronize_rcu_full(fc) : poll_state_synchronize_rcu(c))) {
		if (rnd(rng) % 2)
			sched_yield();
		else
			usleep(rnd(rng) % 100);
	}
}

/* synchronize_rcu(), counted under the path in force when it was called. */
static long sync_counted(void)
{
	long path = 2;

	trcu_get_tunable("normal_wake_from_gp", &path);
	if (path < 0 || path >= NPATH)
		path = NPATH - 1;
	atomic_fetch_add(&tt.sync_calls[path], 1);
	synchronize_rcu();
	return path;
}

/*
 * Wait for a grace period of the given type, then check the cookies taken
 * before it.  The full cookie is taken first, so the normal one is at least
 * as strict; the normal cookie is only checked after a normal grace period
 * (an expedited one need not satisfy it), the full one after any.
 */
static void wait_gp(int type, unsigned int *rng)
{
	struct trcu_gp_oldstate fc;
	unsigned long c;
	bool norm = true;
	long path = -1;

	trcu_get_tunable("normal_wake_from_gp", &path);   /* for the message below */
	get_state_synchronize_rcu_full(&fc);
	c = get_state_synchronize_rcu();
	switch (type) {
	case GP_SYNC:
		path = sync_counted();
		break;
	case GP_COND:
		cond_synchronize_rcu(c);
		break;
	case GP_POLL:
		c = start_poll_synchronize_rcu();
		poll_wait(c, NULL, rng);
		break;
	case GP_COND_FULL:
		cond_synchronize_rcu_full(&fc);
		norm = false;
		break;
	case GP_POLL_FULL:
		start_poll_synchronize_rcu_full(&fc);
		poll_wait(0, &fc, rng);
		norm = false;
		break;
	case GP_EXP:
		synchronize_rcu_expedited();
		norm = false;
		break;
	case GP_COMPLETED:
		c = get_completed_synchronize_rcu();
		get_completed_synchronize_rcu_full(&fc);
		break;
	}
	if ((norm && !poll_state_synchronize_rcu(c)) || !poll_state_synchronize_rcu_full(&fc)) {
		fprintf(stderr, "torture: %s grace period returned with its cookie not "
			"complete (sync path %ld; normal %d, full %d; gp_seq now %lu, cookie %lu)\n",
			gp_name[type], path, norm ? poll_state_synchronize_rcu(c) : -1,
			poll_state_synchronize_rcu_full(&fc), trcu_gp_seq(), c);
		fail(E_GPCHECK);
	}
	atomic_fetch_add(&tt.gp_types[type], 1);
}

/* Free-block FIFO: a freed element stays poisoned as long as possible. */
static struct {
	struct elem *q[POOL];
	unsigned int head, tail;
} pool;

static struct elem *pool_alloc(void)
{
	if (pool.head == pool.tail)
		return NULL;
	return pool.q[pool.head++ % POOL];
}

static void pool_free(struct elem *p)
{
	atomic_store_explicit(&p->magic, ELEM_POISON, memory_order_relaxed);
	atomic_store_explicit(&p->seq_check, ELEM_POISON, memory_order_relaxed);
	pool.q[pool.tail++ % POOL] = p;
}

/* rcu_torture_pipe_update(): one more grace period for every removed one. */
static void pipe_update(struct elem **removed, int *nremoved, struct elem *old)
{
	int n = 0;

	removed[(*nremoved)++] = old;
	for (int i = 0; i < *nremoved; i++) {
		struct elem *p = removed[i];
		int pc = atomic_load_explicit(&p->pipe_count, memory_order_relaxed);

		tt.wcount[pc > PIPE_LEN ? PIPE_LEN : pc]++;
		atomic_store_explicit(&p->pipe_count, pc + 1, memory_order_relaxed);
		if (pc + 1 >= PIPE_LEN)
			pool_free(p);
		else
			removed[n++] = p;
	}
	*nremoved = n;
}

static void elem_init(struct elem *rp, unsigned long seq)
{
	atomic_store_explicit(&rp->pipe_count, 0, memory_order_relaxed);
	atomic_store_explicit(&rp->seq, seq, memory_order_relaxed);
	atomic_store_explicit(&rp->seq_check, ~seq, memory_order_relaxed);
	atomic_store_explicit(&rp->magic, ELEM_MAGIC, memory_order_relaxed);
}

static void publish(struct elem *rp, unsigned long seq)
{
	elem_init(rp, seq);
	rcu_assign_pointer(tt.current, rp);    /* release: fields before pointer */
}

/* fwd_prog's quiet phase: every grace-period requester waits here. */
static void park_if_quiet(void)
{
	if (!atomic_load(&cbt.quiet))
		return;
	atomic_fetch_add(&cbt.parked, 1);
	while (atomic_load(&cbt.quiet) && !stopping())
		usleep(200);
	atomic_fetch_sub(&cbt.parked, 1);
}

static void *writer_fn(void *arg)
{
	struct elem *removed[POOL];
	unsigned int rng = 0x9e3779b9u;
	unsigned long seq = 0;
	int nremoved = 0, sig;

	trcu_register_thread();
	sig = sig_target_add();
	while (!stopping()) {
		struct elem *rp, *old;
		int pc;

		park_if_quiet();
		rp = pool_alloc();
		old = tt.current;
		if (!rp) {
			tt.freelist_empty++;
			sched_yield();
			continue;
		}
		publish(rp, ++seq);
		if (old) {
			pc = atomic_load_explicit(&old->pipe_count, memory_order_relaxed);
			tt.wcount[pc > PIPE_LEN ? PIPE_LEN : pc]++;
			atomic_store_explicit(&old->pipe_count, pc + 1, memory_order_relaxed);
			if (tt.busted != 1)          /* every type but completed */
				wait_gp((int)(seq % (GP_NTYPES - 1)), &rng);
			pipe_update(removed, &nremoved, old);
		}
		atomic_fetch_add(&tt.updates, 1);
	}
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

static void *fakewriter_fn(void *arg)
{
	unsigned int rng = (unsigned int)(uintptr_t)arg * 2654435761u + 1;
	int sig;

	trcu_register_thread();
	sig = sig_target_add();
	while (!stopping()) {
		park_if_quiet();
		wait_gp((int)(rnd(&rng) % GP_NTYPES), &rng);
		usleep(rnd(&rng) % 1000);
	}
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

/* ---- Callback writers ---------------------------------------------------- */

/* End of an element's pipe: poison it and keep it a while before free(). */
static void ring_put(struct cbelem *ce)
{
	struct cbelem *old;

	atomic_store_explicit(&ce->e.magic, ELEM_POISON, memory_order_relaxed);
	atomic_store_explicit(&ce->e.seq_check, ELEM_POISON, memory_order_relaxed);
	pthread_mutex_lock(&cbt.ring_lock);
	old = cbt.ring[cbt.ring_head];
	cbt.ring[cbt.ring_head] = ce;
	cbt.ring_head = (cbt.ring_head + 1) % RING;
	pthread_mutex_unlock(&cbt.ring_lock);
	free(old);
	atomic_fetch_sub(&cbt.inflight, 1);
}

static void cb_stage(struct rcu_head *rh);

/* fwd_prog's drain: the next stage waits (no grace-period demand but the
 * flood's); the callback writer re-queues it afterwards. */
static void cb_defer(struct cbelem *ce)
{
	pthread_mutex_lock(&cbt.ring_lock);
	ce->deferred_next = cbt.deferred;
	cbt.deferred = ce;
	pthread_mutex_unlock(&cbt.ring_lock);
}

/* A callback that ran before its element's grace period: say how early. */
static void cb_early(struct cbelem *ce)
{
	static _Atomic int reported;
	unsigned long now = trcu_gp_seq();

	fail(E_CB);
	if (atomic_fetch_add(&reported, 1) >= 5)
		return;
	usleep(1000);
	fprintf(stderr, "torture: %s callback ran early: removed %d, pipe stage %d, cookie %lu, "
		"gp_seq %lu when it ran (%lu 1 ms later, cookie %s then)\n",
		cb_kind_name[ce->kind], atomic_load(&ce->removed),
		atomic_load(&ce->e.pipe_count), ce->cookie, now, trcu_gp_seq(),
		poll_state_synchronize_rcu(ce->cookie) ? "complete" : "still not complete");
}

static void cb_queue(struct cbelem *ce)
{
	ce->cookie = get_state_synchronize_rcu();
	if (tt.busted == 2) {                  /* --busted 2: no grace period at all */
		atomic_fetch_add(&cbt.queued, 1);
		cb_stage(&ce->rh);
		return;
	}
	if (ce->kind == CB_HURRY)
		call_rcu_hurry(&ce->rh, cb_stage);
	else
		call_rcu(&ce->rh, cb_stage);
	/* After the call: rcu_barrier() waits for every call counted here. */
	atomic_fetch_add(&cbt.queued, 1);
}

/*
 * rcu_torture_cb(): one pipe stage per grace period.  The element must have
 * been removed before it was queued, and a whole grace period must have
 * passed since (its cookie): a callback run early fails here, and readers
 * that still hold it see the pipe count pass 1 or the poison.
 */
static void cb_stage(struct rcu_head *rh)
{
	struct cbelem *ce = (struct cbelem *)((char *)rh - offsetof(struct cbelem, rh));
	int pc;

	atomic_fetch_add(&cbt.invoked, 1);
	if (!atomic_load_explicit(&ce->removed, memory_order_relaxed) ||
	    !poll_state_synchronize_rcu(ce->cookie))
		cb_early(ce);
	pc = atomic_load_explicit(&ce->e.pipe_count, memory_order_relaxed) + 1;
	atomic_store_explicit(&ce->e.pipe_count, pc, memory_order_relaxed);
	if (pc >= PIPE_LEN)
		ring_put(ce);
	else if (atomic_load(&cbt.quiet))
		cb_defer(ce);
	else
		cb_queue(ce);
}

/* Re-queue the stages held back during fwd_prog's drain. */
static void cb_requeue_deferred(void)
{
	struct cbelem *ce;

	pthread_mutex_lock(&cbt.ring_lock);
	ce = cbt.deferred;
	cbt.deferred = NULL;
	pthread_mutex_unlock(&cbt.ring_lock);
	while (ce) {
		struct cbelem *next = ce->deferred_next;

		cb_queue(ce);
		ce = next;
	}
}

static void cb_retire(struct cbelem *ce, unsigned int x)
{
	ce->kind = (int)(x % CB_NKINDS);
	atomic_fetch_add(&cbt.kinds[ce->kind], 1);
	atomic_store_explicit(&ce->e.pipe_count, 1, memory_order_relaxed);
	atomic_store_explicit(&ce->removed, 1, memory_order_relaxed);
	if (ce->kind != CB_FREE) {
		cb_queue(ce);
		return;
	}
	rcu_free(ce);                          /* free() after one grace period */
	atomic_fetch_sub(&cbt.inflight, 1);
}

static void *cbwriter_fn(void *arg)
{
	long idx = (long)(uintptr_t)arg;
	unsigned int rng = 0x2545f491u + (unsigned int)idx * 40503u;
	unsigned long seq = 0;
	int sig;

	trcu_register_thread();
	sig = sig_target_add();
	while (!stopping()) {
		struct cbelem *ce, *old;

		park_if_quiet();
		cb_requeue_deferred();
		if (atomic_load(&cbt.inflight) >= CB_INFLIGHT) {
			usleep(100);
			continue;
		}
		ce = calloc(1, sizeof(*ce));
		if (!ce) {
			fail(E_THREAD);
			break;
		}
		atomic_fetch_add(&cbt.inflight, 1);
		elem_init(&ce->e, ++seq);
		old = (struct cbelem *)rcu_xchg_pointer(&cbt.slot[idx], &ce->e);
		if (old)
			cb_retire(old, rnd(&rng));
		atomic_fetch_add(&cbt.updates, 1);
		if (rnd(&rng) % 16 == 0)
			usleep(rnd(&rng) % 200);
	}
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

/* ---- rcu_barrier() --------------------------------------------------------- */

static _Atomic unsigned long bar_count;

static void bar_cb(struct rcu_head *rh)
{
	(void)rh;
	atomic_fetch_add_explicit(&bar_count, 1, memory_order_relaxed);
}

/* Queue n counting callbacks (lazy now and then), rcu_barrier(), check. */
static void barrier_round(unsigned int *rng)
{
	unsigned long n = 1 + rnd(rng) % 1000, q;
	bool lazy = rnd(rng) % 4 == 0 && !cbt.lazy_saved;   /* lazy=1 already: always */
	struct rcu_head *h = malloc(n * sizeof(*h));

	if (!h) {
		fail(E_THREAD);
		return;
	}
	atomic_store(&bar_count, 0);
	if (lazy)
		trcu_set_tunable("lazy", 1);
	for (unsigned long i = 0; i < n; i++) {
		if (i % 2)
			call_rcu(&h[i], bar_cb);
		else
			call_rcu_hurry(&h[i], bar_cb);
	}
	q = atomic_load(&cbt.queued);          /* other threads' callbacks, queued before */
	rcu_barrier();
	if (lazy)
		trcu_set_tunable("lazy", cbt.lazy_saved);
	if (atomic_load(&bar_count) != n || atomic_load(&cbt.invoked) < q) {
		fprintf(stderr, "torture: rcu_barrier() returned with %lu of %lu callbacks run "
			"(others: %lu of %lu)\n", atomic_load(&bar_count), n,
			atomic_load(&cbt.invoked), q);
		fail(E_BARRIER);
	}
	free(h);
	atomic_fetch_add(&cbt.barriers, 1);
	atomic_fetch_add(&cbt.lazy_barriers, lazy || cbt.lazy_saved);
	atomic_fetch_add(&cbt.barrier_cbs, n);
}

static void *barrier_fn(void *arg)
{
	unsigned int rng = 0x51ed270bu;
	int sig;

	(void)arg;
	trcu_register_thread();
	sig = sig_target_add();
	while (!stopping()) {
		park_if_quiet();
		barrier_round(&rng);
		usleep(rnd(&rng) % 2000);
	}
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

/* ---- call_rcu() flood (fwd_prog) -------------------------------------------- */

struct fwdcb {
	struct rcu_head rh;
	char pad[48];                    /* a 64-byte object */
};

static void fwd_cb(struct rcu_head *rh)
{
	unsigned long gp = trcu_gp_seq();
	unsigned long last = atomic_load_explicit(&cbt.fwd_last_gp, memory_order_relaxed);
	unsigned long inv = atomic_fetch_add(&cbt.fwd_invoked, 1);

	/* Only the flood thread's offload thread runs these: no race on the
	 * timeline, which the report reads after the drain's rcu_barrier().
	 * fwd_gp_end is 0 until the flood ended. */
	unsigned long end = atomic_load_explicit(&cbt.fwd_gp_end, memory_order_relaxed);

	if (gp != last && end && (long)(gp - end) > 0) {
		unsigned long k = seq_diff(gp, end);

		if (k < FWD_TL && !cbt.fwd_tl[k].t) {
			cbt.fwd_tl[k].t = now_ns();
			cbt.fwd_tl[k].inv = inv;
		}
	}
	atomic_store_explicit(&cbt.fwd_last_gp, gp, memory_order_relaxed);
	free(rh);
}

/* Flood until the deadline, then on until every other requester parked. */
static unsigned long fwd_flood(double secs, unsigned long *peak)
{
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
	unsigned long n = 0;
	bool quiet = false;

	while (!stopping()) {
		struct fwdcb *f;
		unsigned long pend;

		if (!quiet && now_ns() >= end) {
			atomic_store(&cbt.quiet, 1);
			quiet = true;
		}
		if (quiet && (atomic_load(&cbt.parked) >= cbt.requesters ||
			      now_ns() - end > 10000000000ull)) {
			cbt.fwd_parked_at_end = atomic_load(&cbt.parked);
			break;
		}
		f = malloc(sizeof(*f));
		if (!f) {
			fail(E_THREAD);
			break;
		}
		/* Hurry, as the kernel's rcutorture floods (cur_ops->call is
		 * call_rcu_hurry() since lazy RCU): the barrier thread sets
		 * lazy=1 for a moment now and then, and flood callbacks queued
		 * then waited out lazy_flush_ms (10 s) while unrelated GPs ran:
		 * "12 grace periods after the flood ended" under TSan, max
		 * drain 10069.7 ms. */
		call_rcu_hurry(&f->rh, fwd_cb);
		n++;
		pend = n - atomic_load_explicit(&cbt.fwd_invoked, memory_order_relaxed);
		if (pend > *peak)
			*peak = pend;
	}
	return n;
}

/* Grace periods from gp_end until the last flood callback ran (0 if before). */
static unsigned long fwd_gps(unsigned long gp_end)
{
	unsigned long last = atomic_load(&cbt.fwd_last_gp);

	if ((long)(last - gp_end) <= 0)
		return 0;
	return seq_diff(last, gp_end);
}

/* A failed round: the drain, grace period by grace period, and who else
 * asked for grace periods meanwhile (stats from the flood's end to the end
 * of the drain). */
static void fwd_report(unsigned long n, const struct trcu_stats *a, const struct trcu_stats *b)
{
	fprintf(stderr, "torture: fwd_prog drain: %d of %d requesters parked; GPs %lu "
		"(caller-driven %lu, kthread %lu), other callbacks queued %ld, rcu_free %ld, "
		"sync wakes: list %ld+%ld\n", cbt.fwd_parked_at_end, cbt.requesters,
		b->gp_completed - a->gp_completed, b->gp_driven_by_caller - a->gp_driven_by_caller,
		b->gp_driven_by_kthread - a->gp_driven_by_kthread, b->cbs_queued - a->cbs_queued,
		b->frees_queued - a->frees_queued, b->sr_woken_direct - a->sr_woken_direct,
		b->sr_woken_deferred - a->sr_woken_deferred);
	for (int k = 1; k < FWD_TL; k++)
		if (cbt.fwd_tl[k].t)
			fprintf(stderr, "torture: fwd_prog drain: GP +%d first seen at %.1f ms, "
				"%lu of %lu invoked\n", k,
				(double)(cbt.fwd_tl[k].t - cbt.fwd_t_end) / 1e6, cbt.fwd_tl[k].inv, n);
}

/*
 * The flood's checks.  The grace-period count measures whether the flood's
 * callbacks advance by their own requests (a stranded callback waits for
 * somebody else's grace periods), so it only means something when nobody
 * else asks for grace periods during the drain: every requester parked and
 * no other call_rcu().  Otherwise (quiet == false: seen once in 600 floods,
 * 9 processes on 2 CPUs, load average 70: 17 GPs while the flood's 4226
 * callbacks ran at a steady 200-300 per GP beside 4819 others') the count
 * is reported but not held to the limit; a drain that does not end within
 * FWD_DRAIN_MAX_NS is a failure either way.
 */
#define FWD_DRAIN_MAX_NS 30000000000ull
static void fwd_check(unsigned long n, unsigned long peak, unsigned long gps, double drain_ms,
		      bool quiet, bool cut)
{
	unsigned long inv = atomic_load(&cbt.fwd_invoked);
	bool stranded = drain_ms * 1e6 >= (double)FWD_DRAIN_MAX_NS;
	bool too_many = quiet && gps > (unsigned long)cbt.fwd_max_gps;

	if (inv != n)
		fprintf(stderr, "torture: fwd_prog: %lu of %lu flood callbacks invoked after "
			"rcu_barrier()\n", inv, n);
	if (too_many)
		fprintf(stderr, "torture: fwd_prog: %lu grace periods after the flood ended "
			"before its last callback ran (limit %ld)\n", gps, cbt.fwd_max_gps);
	if (stranded)
		fprintf(stderr, "torture: fwd_prog: %lu of %lu flood callbacks still not run "
			"%.0f ms after the flood ended\n", n - inv, n, drain_ms);
	if (peak > (unsigned long)cbt.cb_max_pending + 64)
		fprintf(stderr, "torture: fwd_prog: %lu callbacks pending, above cb_max_pending "
			"%ld\n", peak, cbt.cb_max_pending);
	if (inv != n || too_many || stranded || peak > (unsigned long)cbt.cb_max_pending + 64)
		fail(E_FWD);
	/* A flood that the end of the run cut short never asked anyone to
	 * park: counted apart. */
	if (cut) {
		cbt.fwd_cut++;
	} else if (!quiet) {
		cbt.fwd_unquiet++;
		if (gps > cbt.fwd_max_gps_unquiet)
			cbt.fwd_max_gps_unquiet = gps;
	}
	cbt.fwd_rounds++;
	cbt.fwd_cbs += n;
	if (quiet && gps > cbt.fwd_max_gps_seen)
		cbt.fwd_max_gps_seen = gps;
	if (peak > cbt.fwd_peak)
		cbt.fwd_peak = peak;
	if (drain_ms > cbt.fwd_max_drain_ms)
		cbt.fwd_max_drain_ms = drain_ms;
}

/*
 * rcu_torture_fwd_prog_cr(): flood, then with every other grace-period
 * requester parked, count the grace periods until the last callback ran.
 */
static void fwd_round(void)
{
	unsigned long peak = 0, n, gp_end, gps;
	struct trcu_stats st0, st_end, st1;
	bool quiet, cut;
	uint64_t t_end;
	double drain_ms;

	atomic_store(&cbt.fwd_invoked, 0);
	atomic_store(&cbt.fwd_last_gp, trcu_gp_seq());
	atomic_store(&cbt.fwd_gp_end, 0);
	cbt.fwd_parked_at_end = 0;
	memset(cbt.fwd_tl, 0, sizeof(cbt.fwd_tl));
	trcu_get_stats(&st0);
	n = fwd_flood(cbt.fwd_s, &peak);
	trcu_get_stats(&st_end);
	gp_end = trcu_gp_seq();
	t_end = now_ns();
	cbt.fwd_t_end = t_end;
	atomic_store(&cbt.fwd_gp_end, gp_end);
	while (atomic_load(&cbt.fwd_invoked) < n && now_ns() - t_end < FWD_DRAIN_MAX_NS)
		usleep(100);
	drain_ms = (double)(now_ns() - t_end) / 1e6;
	trcu_get_stats(&st1);
	rcu_barrier();
	atomic_store(&cbt.quiet, 0);
	cbt.fwd_pushback += (unsigned long)(st1.cbs_pushback - st0.cbs_pushback);
	gps = fwd_gps(gp_end);
	cut = stopping();          /* once: the run may end meanwhile */
	quiet = !cut && cbt.fwd_parked_at_end >= cbt.requesters &&
		st1.cbs_queued == st_end.cbs_queued;
	if (gps > (unsigned long)cbt.fwd_max_gps && !cut)
		fwd_report(n, &st_end, &st1);
	fwd_check(n, peak, gps, drain_ms, quiet, cut);
}

/* Sleeps s seconds; false if the run stops meanwhile. */
static bool nap(double s)
{
	uint64_t end = now_ns() + (uint64_t)(s * 1e9);

	while (now_ns() < end) {
		if (stopping())
			return false;
		usleep(10000);
	}
	return !stopping();
}

static void *fwd_fn(void *arg)
{
	int sig;

	(void)arg;
	trcu_register_thread();
	sig = sig_target_add();
	while (nap(cbt.fwd_gap_s))
		fwd_round();
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

/* After the run: every callback ran, every rcu_free() pointer was freed.
 * Pipe-stage callbacks re-queue themselves, so a barrier may find new ones:
 * repeat (a pipe has PIPE_LEN stages). */
static void cb_final_check(void)
{
	struct trcu_stats st;

	for (int i = 0; i <= PIPE_LEN + 1; i++) {
		cb_requeue_deferred();
		rcu_barrier();
		if (atomic_load(&cbt.queued) == atomic_load(&cbt.invoked))
			break;
	}
	trcu_get_stats(&st);
	if (atomic_load(&cbt.queued) != atomic_load(&cbt.invoked) ||
	    st.frees_done != st.frees_queued) {
		fprintf(stderr, "torture: after rcu_barrier(): callbacks %lu queued, %lu run; "
			"rcu_free() %ld queued, %ld freed\n", atomic_load(&cbt.queued),
			atomic_load(&cbt.invoked), st.frees_queued, st.frees_done);
		fail(E_CB);
	}
}

static void cb_cleanup(void)
{
	for (int i = 0; i < MAX_CBW; i++) {
		free(cbt.slot[i]);             /* struct elem first: same pointer */
		cbt.slot[i] = NULL;
	}
	for (int i = 0; i < RING; i++) {
		free(cbt.ring[i]);
		cbt.ring[i] = NULL;
	}
}

/* ---- Fault injectors ---------------------------------------------------------
 *
 * What ordinary programs do to a library: a signal handler that reads
 * inside any instruction of a reader, an updater or a grace-period driver;
 * fork() with everything in flight, the child using every API; updaters
 * cancelled wherever they are; threads that exit inside a read-side
 * section; QSBR threads that call every blocking API while online.
 * --inject names the ones to run; "all" (the default) rotates them, one at a
 * time for --inject-ms each, as --sync-path all rotates the wake paths.
 */
enum { INJ_SIGNAL, INJ_FORK, INJ_CANCEL, INJ_EXIT, INJ_QSBR, INJ_N };
static const char *const inj_name[INJ_N] = { "signal", "fork", "cancel", "exit", "qsbr" };

enum { QB_SYNC, QB_EXP, QB_BARRIER, QB_COND, QB_COND_FULL, QB_POLL, QB_FREE, QB_CALL, QB_N };
static const char *const qb_name[QB_N] = {
	"sync", "exp", "barrier", "cond", "cond_full", "poll", "rcu_free", "call_rcu",
};

#define SIG_INJ SIGUSR2
#define MAX_VICTIMS 4
#define FORK_CHILD_MS 150            /* the child's own torture */
#define FORK_CHILD_TIMEOUT_S 60      /* the child's hard alarm */

static struct {
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
	_Atomic unsigned long qsbr_calls[QB_N];
	int slots_before, slots_after;   /* registered slots before and after the run */
} inj = { .tlock = PTHREAD_MUTEX_INITIALIZER };

static bool inj_on(int i)
{
	return atomic_load_explicit(&inj.active, memory_order_relaxed) & (1u << i);
}

/* --inject all: injector k for period_ms, then the next. */
static void rotate_inject(uint64_t elapsed_ns)
{
	if (inj.rotate)
		atomic_store(&inj.active,
			     1u << (elapsed_ns / 1000000u / (uint64_t)inj.period_ms % INJ_N));
}

/* The calling thread takes the injected signal from now on (it must be
 * registered and not QSBR) until sig_target_del(). */
static int sig_target_add(void)
{
	int slot = -1;

	pthread_mutex_lock(&inj.tlock);
	for (int i = 0; i < MAX_THREADS && slot < 0; i++)
		if (!inj.used[i]) {
			inj.used[i] = true;
			inj.target[i] = pthread_self();
			slot = i;
		}
	pthread_mutex_unlock(&inj.tlock);
	return slot;
}

/* Blocks the signal first: one already sent stays pending, never runs
 * after the thread unregisters. */
static void sig_target_del(int slot)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIG_INJ);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	if (slot < 0)
		return;
	pthread_mutex_lock(&inj.tlock);
	inj.used[slot] = false;
	pthread_mutex_unlock(&inj.tlock);
}

/*
 * A read-side section in a signal handler, wherever it lands in the
 * interrupted thread (inside its rcu_read_lock()/unlock(), a section, a
 * synchronize_rcu() it drives, a call_rcu()): the readers' checks.  Only
 * lock-free atomics and the read side; errno is kept.
 */
static void sig_reader(int sig)
{
	static _Atomic unsigned int pick;
	int saved = errno;
	unsigned int x = atomic_fetch_add_explicit(&pick, 1, memory_order_relaxed);
	unsigned long c, seq;
	struct elem *p;
	int pipe;

	(void)sig;
	rcu_read_lock();
	c = get_state_synchronize_rcu();
	if (cbt.writers && (x & 1))
		p = rcu_dereference(cbt.slot[(x >> 1) % (unsigned int)cbt.writers]);
	else
		p = rcu_dereference(tt.current);
	if (p) {
		seq = check_elem(p);
		if (x % 4 == 0) {              /* stay a while: a GP may try to end */
			struct timespec ts = { 0, 20000 + (long)(x % 61) * 1000 };

			nanosleep(&ts, NULL);
		}
		pipe = atomic_load_explicit(&p->pipe_count, memory_order_relaxed);
		if (atomic_load_explicit(&p->seq, memory_order_relaxed) != seq)
			fail(E_REUSE);
		check_elem(p);
		if (poll_state_synchronize_rcu(c))
			fail(E_COOKIE);
		atomic_fetch_add_explicit(&inj.sig_pipe[pipe < 0 ? 0 : pipe > PIPE_LEN ? PIPE_LEN : pipe],
					  1, memory_order_relaxed);
	}
	rcu_read_unlock();
	atomic_fetch_add_explicit(&inj.sig_sections, 1, memory_order_relaxed);
	errno = saved;
}

static void sig_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_reader;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIG_INJ, &sa, NULL);
}

/* The signal at a high rate, each time into a random target thread. */
static void *signaller_fn(void *arg)
{
	unsigned int rng = 0x6a09e667u;

	(void)arg;
	while (!stopping()) {
		if (!inj_on(INJ_SIGNAL)) {
			usleep(10000);
			continue;
		}
		pthread_mutex_lock(&inj.tlock);
		int n = 0, k;

		for (int i = 0; i < MAX_THREADS; i++)
			n += inj.used[i];
		k = n ? (int)(rnd(&rng) % (unsigned int)n) : -1;
		for (int i = 0; i < MAX_THREADS && k >= 0; i++) {
			if (inj.used[i] && k-- == 0 && !pthread_kill(inj.target[i], SIG_INJ))
				atomic_fetch_add(&inj.sig_sent, 1);
		}
		pthread_mutex_unlock(&inj.tlock);
		usleep((useconds_t)inj.signal_us);
	}
	return NULL;
}

/* ---- fork(): the child runs a short torture of its own ---- */

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

struct celem {
	struct rcu_head rh;
	_Atomic unsigned long magic;
};

static struct {
	struct celem *cur;
	_Atomic int stop;
	_Atomic unsigned long bad, reads, cbs_run;
} ch;

static void *child_reader(void *arg)
{
	unsigned int rng = (unsigned int)(uintptr_t)arg;

	while (!atomic_load_explicit(&ch.stop, memory_order_relaxed)) {
		struct celem *p;

		rcu_read_lock();
		p = rcu_dereference(ch.cur);
		if (p && atomic_load_explicit(&p->magic, memory_order_relaxed) != ELEM_MAGIC)
			atomic_fetch_add(&ch.bad, 1);
		if (rnd(&rng) % 64 == 0)
			usleep(50);
		if (p && atomic_load_explicit(&p->magic, memory_order_relaxed) != ELEM_MAGIC)
			atomic_fetch_add(&ch.bad, 1);
		rcu_read_unlock();
		atomic_fetch_add_explicit(&ch.reads, 1, memory_order_relaxed);
	}
	return NULL;
}

static void child_cb(struct rcu_head *rh)
{
	struct celem *p = (struct celem *)rh;

	atomic_store_explicit(&p->magic, ELEM_POISON, memory_order_relaxed);
	free(p);
	atomic_fetch_add(&ch.cbs_run, 1);
}

/* Retire old by one of the APIs (k picks it); returns false if the
 * cookie of a synchronous wait was not complete after it. */
static bool child_retire(struct celem *old, unsigned int k, unsigned long *queued)
{
	unsigned long c = get_state_synchronize_rcu();
	struct trcu_gp_oldstate fc;

	switch (k % 6) {
	case 0:
		synchronize_rcu();
		break;
	case 1:
		synchronize_rcu_expedited();
		c = TRCU_GET_STATE_COMPLETED;
		break;
	case 2:
		c = start_poll_synchronize_rcu();
		while (!poll_state_synchronize_rcu(c))
			usleep(100);
		break;
	case 3:
		get_state_synchronize_rcu_full(&fc);
		cond_synchronize_rcu_full(&fc);
		if (!poll_state_synchronize_rcu_full(&fc))
			return false;
		break;
	case 4:
		(*queued)++;
		call_rcu(&old->rh, child_cb);
		return true;
	case 5:
		rcu_free(old);
		return true;
	}
	if (!poll_state_synchronize_rcu(c))
		return false;
	atomic_store_explicit(&old->magic, ELEM_POISON, memory_order_relaxed);
	free(old);
	return true;
}

/* The child's exit status: 0 clean, 3 a reader saw a freed object, 4 a
 * cookie incomplete after its wait, 5 rcu_barrier() returned early, 6 no
 * memory or threads. */
static int fork_child(unsigned int seed)
{
	pthread_t rt[2];
	uint64_t end;
	unsigned long queued = 0;
	unsigned int k = seed;
	int st = 0;

	alarm(FORK_CHILD_TIMEOUT_S);           /* a hang dies by SIGALRM */
	ch.cur = NULL;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&rt[i], NULL, child_reader, (void *)(uintptr_t)(seed + i + 1)))
			return 6;
	end = now_ns() + FORK_CHILD_MS * 1000000ull;
	while (now_ns() < end && !st) {
		struct celem *n = calloc(1, sizeof(*n)), *old;

		if (!n) {
			st = 6;
			break;
		}
		atomic_store_explicit(&n->magic, ELEM_MAGIC, memory_order_relaxed);
		old = rcu_xchg_pointer(&ch.cur, n);
		if (old && !child_retire(old, k++, &queued))
			st = 4;
	}
	atomic_store(&ch.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(rt[i], NULL);
	rcu_barrier();
	if (!st && atomic_load(&ch.cbs_run) != queued)
		st = 5;
	if (atomic_load(&ch.bad))
		st = 3;
	free(ch.cur);
	return st;
}

/* Wait for the child at most stall_s: its exit status, or -1 (killed). */
static int fork_wait(pid_t pid)
{
	uint64_t end = now_ns() + (uint64_t)(inj.stall_s * 1e9);
	int status;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(1000);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void *forker_fn(void *arg)
{
	unsigned int rng = 0xbb67ae85u;

	(void)arg;
	if (FORK_SKIPPED)
		return NULL;                   /* see fork's line in the report */
	while (nap((double)inj.fork_ms / 1000.0)) {
		pid_t pid;
		int st;

		if (!inj_on(INJ_FORK))
			continue;
		pid = fork();
		if (pid == 0)
			_exit(fork_child(rnd(&rng)));   /* _exit: no atexit, no leak check */
		if (pid < 0) {
			fail(E_FORK);
			continue;
		}
		rnd(&rng);
		st = fork_wait(pid);
		atomic_fetch_add(&inj.forks, 1);
		if (st) {
			fprintf(stderr, "torture: fork child %s %d (3 freed object read, 4 cookie "
				"incomplete after its wait, 5 rcu_barrier() early, 6 no memory or "
				"threads; 128+N killed by signal N)\n",
				st < 0 ? "hung: killed after the stall limit; status" :
				"exited with status", st);
			atomic_fetch_add(&inj.fork_failed, 1);
			fail(E_FORK);
		}
	}
	return NULL;
}

/* ---- pthread_cancel() of updaters ---- */

struct victim_cb {
	struct rcu_head rh;
	char pad[32];
};

static void victim_cb_fn(struct rcu_head *rh)
{
	free(rh);
	atomic_fetch_add(&inj.victim_cbs_run, 1);
}

/*
 * A cancellation point.  Under ThreadSanitizer a cancellation that unwinds
 * out of an intercepted sleep leaves the thread's interceptor state behind:
 * the locks its exit destructor then takes go unseen, and TSan reports
 * races under them.  There the sleep runs with cancellation off and
 * pthread_testcancel(), which TSan does not intercept, is the point.
 */
static void victim_pause(unsigned int us)
{
#ifdef TORTURE_TSAN
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	usleep(us);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pthread_testcancel();
#else
	usleep(us);
#endif
}

/* One update of a random kind; a cancellation requested meanwhile acts at
 * the usleep() after it (the library's calls are no cancellation points),
 * or inside the read-side section of the last kind, which then ends with
 * the thread. */
static void victim_step(unsigned int *rng)
{
	unsigned int k = rnd(rng) % 8;

	switch (k) {
	case 0:
	case 1:
	case 2:
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		wait_gp((int)(rnd(rng) % GP_NTYPES), rng);
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		break;
	case 3: {
		struct victim_cb *v = malloc(sizeof(*v));

		if (!v)
			break;
		call_rcu(&v->rh, victim_cb_fn);
		atomic_fetch_add(&inj.victim_cbs_queued, 1);
		break;
	}
	case 4:
		rcu_free(malloc(64));
		break;
	case 5:
		rcu_barrier();
		break;
	case 6:
		synchronize_rcu_expedited();
		break;
	case 7:
		if (rnd(rng) % 64)
			break;
		rcu_read_lock();
		victim_pause(100);             /* cancelled here: exits inside */
		rcu_read_unlock();
		break;
	}
	atomic_fetch_add(&inj.victim_ops, 1);
}

/*
 * An updater that is cancelled.  Its frames keep no local whose address is
 * taken (the rng is thread-local): the cancellation's unwinding skips their
 * epilogues, which under AddressSanitizer would leave marks on the stack
 * that the thread's own exit then trips over.  For that reason wait_gp()
 * (whose polled waits sleep) runs with cancellation off.
 */
static __thread unsigned int victim_rng;

static void *victim_fn(void *arg)
{
	victim_rng = (unsigned int)(uintptr_t)arg * 2246822519u + 7;
	if (victim_rng & 2)                    /* the others register on first use */
		trcu_register_thread();
	while (!stopping()) {
		/* Not cancelled while parked: fwd_prog counts the parked. */
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		park_if_quiet();
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		victim_step(&victim_rng);
		victim_pause(rnd(&victim_rng) % 200);
	}
	trcu_unregister_thread();
	return NULL;
}

/* Cancel a random updater every --cancel-ms or so, join it, start another. */
static void *canceller_fn(void *arg)
{
	pthread_t v[MAX_VICTIMS];
	unsigned int rng = 0x3c6ef372u, seed = 1;
	long n = inj.victims;

	(void)arg;
	for (long i = 0; i < n; i++)
		if (pthread_create(&v[i], NULL, victim_fn, (void *)(uintptr_t)seed++))
			n = i;
	while (nap((double)(1 + rnd(&rng) % (unsigned int)(2 * inj.cancel_ms)) / 1000.0)) {
		long i = (long)(rnd(&rng) % (unsigned int)(n ? n : 1));
		struct timespec ts;
		void *ret;

		if (!n || !inj_on(INJ_CANCEL) || atomic_load(&cbt.quiet))
			continue;
		pthread_cancel(v[i]);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)inj.stall_s;
		if (pthread_timedjoin_np(v[i], &ret, &ts)) {
			fprintf(stderr, "torture: a cancelled updater did not exit within %.0f s\n",
				inj.stall_s);
			fail(E_CANCEL);
			return NULL;
		}
		atomic_fetch_add(&inj.cancels, 1);
		if (pthread_create(&v[i], NULL, victim_fn, (void *)(uintptr_t)seed++)) {
			fail(E_THREAD);
			v[i] = v[--n];
		}
	}
	for (long i = 0; i < n; i++)
		pthread_join(v[i], NULL);
	return NULL;
}

/* ---- Threads that exit inside a read-side section ---- */

/* A reader that leaves by pthread_exit() (or by returning) inside its
 * section, nested now and then.  The library promises a warning and that
 * the thread is then quiescent: grace periods go on (the writer's progress
 * check) and its slot is freed (checked after the run). */
static void *exit_child(void *arg)
{
	struct rd *r = arg;
	unsigned int mode = rnd(&r->rng) % 4;

	if (mode & 1)
		trcu_register_thread();         /* else registered by the first lock */
	for (int i = 0; i < 20 && !stopping(); i++)
		one_read(r);
	rcu_read_lock();
	if (mode & 2) {
		rcu_read_lock();
		atomic_fetch_add(&inj.exits_nested, 1);
	}
	{
		struct elem *p = read_pick(r);

		if (p)
			check_elem(p);
	}
	atomic_fetch_add(&inj.exits, 1);
	if (rnd(&r->rng) & 1)
		pthread_exit(NULL);
	return NULL;
}

static void *exiter_fn(void *arg)
{
	struct rd *r = arg;

	while (nap(0.1)) {
		pthread_t t;

		if (!inj_on(INJ_EXIT))
			continue;
		if (pthread_create(&t, NULL, exit_child, r)) {
			fail(E_THREAD);
			break;
		}
		pthread_join(t, NULL);
	}
	rd_merge(r);
	return NULL;
}

/* ---- QSBR threads calling every blocking API while online ---- */

static void qsbr_free_cb(struct rcu_head *rh)
{
	free(rh);
}

static void qsbr_blocking_call(unsigned int k)
{
	struct trcu_gp_oldstate fc;
	unsigned long c = get_state_synchronize_rcu();
	bool ok = true;

	get_state_synchronize_rcu_full(&fc);
	switch (k) {
	case QB_SYNC:
		synchronize_rcu();
		break;
	case QB_EXP:
		synchronize_rcu_expedited();
		c = TRCU_GET_STATE_COMPLETED;
		break;
	case QB_BARRIER:
		rcu_barrier();
		c = TRCU_GET_STATE_COMPLETED;
		get_completed_synchronize_rcu_full(&fc);
		break;
	case QB_COND:
		cond_synchronize_rcu(c);
		break;
	case QB_COND_FULL:
		cond_synchronize_rcu_full(&fc);
		c = TRCU_GET_STATE_COMPLETED;
		break;
	case QB_POLL:                          /* online: quiescent between polls */
		c = start_poll_synchronize_rcu();
		while (!poll_state_synchronize_rcu(c)) {
			rcu_quiescent_state();
			usleep(50);
		}
		break;
	case QB_FREE:
		rcu_free(malloc(48));
		c = TRCU_GET_STATE_COMPLETED;
		get_completed_synchronize_rcu_full(&fc);
		break;
	case QB_CALL: {
		struct rcu_head *h = malloc(sizeof(*h));

		if (h)
			call_rcu(h, qsbr_free_cb);
		c = TRCU_GET_STATE_COMPLETED;
		get_completed_synchronize_rcu_full(&fc);
		break;
	}
	}
	ok = poll_state_synchronize_rcu(c) && poll_state_synchronize_rcu_full(&fc);
	if (!ok) {
		fprintf(stderr, "torture: QSBR %s returned with its cookie not complete\n",
			qb_name[k]);
		fail(E_GPCHECK);
	}
	atomic_fetch_add(&inj.qsbr_calls[k], 1);
}

static void *qsbr_blocker_fn(void *arg)
{
	struct rd *r = arg;

	trcu_register_thread();
	trcu_thread_qsbr();
	r->qsbr = true;
	while (!stopping()) {
		for (int i = 0; i < 50; i++) {
			one_read(r);
			rcu_quiescent_state();
		}
		if (atomic_load(&cbt.quiet)) {   /* fwd_prog's drain: park, offline */
			rcu_thread_offline();
			park_if_quiet();
			rcu_thread_online();
			continue;
		}
		if (inj_on(INJ_QSBR))
			qsbr_blocking_call(rnd(&r->rng) % QB_N);
		else
			usleep(1000);
	}
	rcu_thread_offline();
	trcu_unregister_thread();
	rd_merge(r);
	return NULL;
}

/* normal_wake_from_gp for --sync-path all: rotate 0, 1, 2. */
static void rotate_path(uint64_t elapsed_ns)
{
	if (tt.sync_path < 0)
		trcu_set_tunable("normal_wake_from_gp", (long)(elapsed_ns / 100000000u % NPATH));
}

/* ---- Driver ------------------------------------------------------------- */

struct tt_threads {
	pthread_t tid[MAX_THREADS];
	struct rd *rd;
	int n;
};

static void spawn(struct tt_threads *th, void *(*fn)(void *), void *arg)
{
	if (th->n >= MAX_THREADS || pthread_create(&th->tid[th->n], NULL, fn, arg)) {
		fail(E_THREAD);
		return;
	}
	th->n++;
}

/* The injectors' threads; rd: two reader states of their own. */
static void start_injectors(struct tt_threads *th, struct rd *rd)
{
	rd[0].rng = 0x510e527fu;
	rd[1].rng = 0x9b05688cu;
	if (inj.enabled & (1u << INJ_SIGNAL)) {
		sig_install();
		spawn(th, signaller_fn, NULL);
	}
	if (inj.enabled & (1u << INJ_FORK))
		spawn(th, forker_fn, NULL);
	if (inj.enabled & (1u << INJ_CANCEL))
		spawn(th, canceller_fn, NULL);
	if (inj.enabled & (1u << INJ_EXIT))
		spawn(th, exiter_fn, &rd[0]);
	if (inj.enabled & (1u << INJ_QSBR))
		spawn(th, qsbr_blocker_fn, &rd[1]);
}

static void start_all(struct tt_threads *th)
{
	long nrd = tt.readers + tt.qsbr_readers + tt.churners;

	th->rd = calloc((size_t)nrd + 3, sizeof(*th->rd));
	for (long i = 0; th->rd && i < nrd; i++) {
		th->rd[i].qsbr = i >= tt.readers && i < tt.readers + tt.qsbr_readers;
		th->rd[i].rng = 0x12345u + (unsigned int)i * 7919u;
		spawn(th, i < tt.readers + tt.qsbr_readers ? reader_fn : churn_fn, &th->rd[i]);
	}
	/* Everything that requests grace periods parks in fwd_prog's drain. */
	cbt.requesters = 1 + (int)tt.fakewriters + (int)cbt.writers + (cbt.barrier ? 1 : 0) +
		((inj.enabled & (1u << INJ_CANCEL)) ? (int)inj.victims : 0) +
		((inj.enabled & (1u << INJ_QSBR)) ? 1 : 0);
	spawn(th, writer_fn, NULL);
	for (long i = 0; i < tt.fakewriters; i++)
		spawn(th, fakewriter_fn, (void *)(uintptr_t)(i + 1));
	for (long i = 0; i < cbt.writers; i++)
		spawn(th, cbwriter_fn, (void *)(uintptr_t)i);
	if (cbt.barrier)
		spawn(th, barrier_fn, NULL);
	if (cbt.fwd)
		spawn(th, fwd_fn, NULL);
	if (th->rd)
		start_injectors(th, &th->rd[nrd]);
}

/* Wait out the run; false if the writer stopped making progress. */
static bool run_for(double duration, double stall_s)
{
	uint64_t t0 = now_ns(), last_t = t0;
	unsigned long last = 0;
	struct progress p;

	progress_start(&p, "torture", duration);
	while (now_ns() - t0 < (uint64_t)(duration * 1e9)) {
		unsigned long u = atomic_load(&tt.updates);

		sleep_ns(50000000);
		rotate_path(now_ns() - t0);
		rotate_inject(now_ns() - t0);
		if (u != last) {
			last = u;
			last_t = now_ns();
		} else if (now_ns() - last_t > (uint64_t)(stall_s * 1e9)) {
			progress_done(&p);
			fprintf(stderr, "torture: writer made no progress for %.0f s\n", stall_s);
			return false;
		}
		progress_update(&p, (double)(now_ns() - t0) / (duration * 1e9));
	}
	progress_done(&p);
	return true;
}

/* Join everything within a deadline; false if some thread hangs. */
static bool join_all(struct tt_threads *th, double timeout_s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)timeout_s;
	for (int i = 0; i < th->n; i++) {
		if (pthread_timedjoin_np(th->tid[i], NULL, &ts)) {
			fprintf(stderr, "torture: a thread did not finish within %.0f s of stop\n",
				timeout_s);
			return false;
		}
	}
	return true;
}

static unsigned long count_failures(void)
{
	unsigned long f = 0;

	for (int i = 2; i <= PIPE_LEN; i++)
		f += tt.pipe[i] + atomic_load(&inj.sig_pipe[i]);
	for (int e = 0; e < E_NTYPES; e++)
		f += atomic_load(&tt.errors[e]);
	return f;
}

static void print_hist(const char *name, const uint64_t *h)
{
	printf("%s:", name);
	for (int i = 0; i <= PIPE_LEN; i++)
		printf(" %llu", (unsigned long long)h[i]);
	printf("\n");
}

static void cb_report(void)
{
	printf("callback writers %ld: %lu updates; retired by", cbt.writers,
	       atomic_load(&cbt.updates));
	for (int k = 0; k < CB_NKINDS; k++)
		printf(" %s %lu", cb_kind_name[k], atomic_load(&cbt.kinds[k]));
	printf("; pipe-stage callbacks queued %lu, run %lu\n", atomic_load(&cbt.queued),
	       atomic_load(&cbt.invoked));
	printf("rcu_barrier: %lu rounds (%lu with lazy=1), %lu counted callbacks\n",
	       atomic_load(&cbt.barriers), atomic_load(&cbt.lazy_barriers),
	       atomic_load(&cbt.barrier_cbs));
	printf("fwd_prog: %lu floods of %.1f s, %lu callbacks, peak pending %lu "
	       "(cb_max_pending %ld), %lu push-backs, max drain %.1f ms, max GPs after the "
	       "flood ended %lu (limit %ld); %lu drains with other GP demand (not held to "
	       "the limit), max GPs %lu; %lu cut by the end of the run\n", cbt.fwd_rounds,
	       cbt.fwd_s, cbt.fwd_cbs, cbt.fwd_peak, cbt.cb_max_pending, cbt.fwd_pushback,
	       cbt.fwd_max_drain_ms, cbt.fwd_max_gps_seen, cbt.fwd_max_gps, cbt.fwd_unquiet,
	       cbt.fwd_max_gps_unquiet, cbt.fwd_cut);
}

/* Every thread of the run is gone (some exited inside a section, some
 * registered, some cancelled): so are their slots. */
static int slots_now(void)
{
	struct trcu_stats st;

	trcu_get_stats(&st);
	return st.nr_slots;
}

/* The library's GP kthread holds a slot of its own while it exists. */
static int gp_kthreads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "trcu_gp", 7))
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static void slots_check(double timeout_s)
{
	uint64_t end = now_ns() + (uint64_t)(timeout_s * 1e9);
	int want;

	while ((want = inj.slots_before + gp_kthreads()) != (inj.slots_after = slots_now()) &&
	       now_ns() < end)
		usleep(10000);
	if (inj.slots_after != want) {
		fprintf(stderr, "torture: %d thread slots registered %.0f s after every thread of "
			"the run exited (%d before it, %d for the GP kthread)\n", inj.slots_after,
			timeout_s, inj.slots_before, want - inj.slots_before);
		fail(E_THREAD);
	}
}

/* After the run and its rcu_barrier(): every callback of the cancelled
 * updaters ran. */
static void inj_final_check(void)
{
	if (atomic_load(&inj.victim_cbs_queued) != atomic_load(&inj.victim_cbs_run)) {
		fprintf(stderr, "torture: after rcu_barrier(): cancelled updaters' callbacks %lu "
			"queued, %lu run\n", atomic_load(&inj.victim_cbs_queued),
			atomic_load(&inj.victim_cbs_run));
		fail(E_CANCEL);
	}
}

static void inj_report(const struct trcu_stats *st)
{
	unsigned long pipe[PIPE_LEN + 1];

	printf("injectors:");
	for (int i = 0; i < INJ_N; i++)
		if (inj.enabled & (1u << i))
			printf(" %s", inj_name[i]);
	printf("%s%s\n", inj.enabled ? "" : " none",
	       inj.rotate ? " (each in turn)" : "");
	if (inj.enabled & (1u << INJ_SIGNAL)) {
		for (int i = 0; i <= PIPE_LEN; i++)
			pipe[i] = atomic_load(&inj.sig_pipe[i]);
		printf("signal: %lu sent, %lu handler read-side sections; Signal Pipe:",
		       atomic_load(&inj.sig_sent), atomic_load(&inj.sig_sections));
		for (int i = 0; i <= PIPE_LEN; i++)
			printf(" %lu", pipe[i]);
		printf("\n");
	}
	if ((inj.enabled & (1u << INJ_FORK)) && FORK_SKIPPED)
		printf("fork: not run in this build (%s)\n", FORK_SKIPPED ? FORK_SKIPPED : "");
	else if (inj.enabled & (1u << INJ_FORK))
		printf("fork: %lu children ran every API and exited, %lu failed\n",
		       atomic_load(&inj.forks) - atomic_load(&inj.fork_failed),
		       atomic_load(&inj.fork_failed));
	if (inj.enabled & (1u << INJ_CANCEL))
		printf("cancel: %lu updaters cancelled and restarted (%ld at a time, %lu "
		       "updates; callbacks %lu queued, %lu run)\n", atomic_load(&inj.cancels),
		       inj.victims, atomic_load(&inj.victim_ops),
		       atomic_load(&inj.victim_cbs_queued), atomic_load(&inj.victim_cbs_run));
	if (inj.enabled & (1u << INJ_EXIT))
		printf("exit: %lu threads exited inside a read-side section (%lu nested)\n",
		       atomic_load(&inj.exits), atomic_load(&inj.exits_nested));
	if (inj.enabled & (1u << INJ_QSBR)) {
		printf("qsbr: online QSBR thread's blocking calls:");
		for (int k = 0; k < QB_N; k++)
			printf(" %s %lu", qb_name[k], atomic_load(&inj.qsbr_calls[k]));
		printf("\n");
	}
	printf("thread slots (the GP kthread's apart): %d before the run, %d once its threads "
	       "exited\n", inj.slots_before, inj.slots_after - gp_kthreads());
}

static void report(double duration, unsigned long failures, const struct trcu_stats *st)
{
	printf("\ntorture: %.1f s, %ld readers, %ld QSBR readers, %ld churn threads, "
	       "1 writer, %ld fake writers%s\n", duration, tt.readers, tt.qsbr_readers,
	       tt.churners, tt.fakewriters, tt.busted == 1 ? " (BUSTED: writer skips GPs)" :
	       tt.busted == 2 ? " (BUSTED: callbacks run at once)" : "");
	printf("ver: %lu tfle: %lu nt: %llu churn: %lu", atomic_load(&tt.updates),
	       tt.freelist_empty, (unsigned long long)tt.reads, atomic_load(&tt.churns));
	for (int e = 0; e < E_NTYPES; e++)
		printf(" %s: %lu", err_name[e], atomic_load(&tt.errors[e]));
	printf("\n");
	print_hist("Reader Pipe", tt.pipe);
	print_hist("Reader Batch", tt.batch);
	print_hist("Free-Block Circulation", tt.wcount);
	printf("GP types:");
	for (int g = 0; g < GP_NTYPES; g++)
		printf(" %s %lu", gp_name[g], atomic_load(&tt.gp_types[g]));
	printf("\nsynchronize_rcu() paths (normal_wake_from_gp %s):", tt.sync_path < 0 ?
	       "rotated every 100 ms" : path_name[tt.sync_path]);
	for (int i = 0; i < NPATH; i++)
		printf(" %s %lu", path_name[i], atomic_load(&tt.sync_calls[i]));
	printf("\n");
	cb_report();
	inj_report(st);
	printf("treercu: gp_completed %lu (caller-driven %lu, kthread %lu) fqs_scans %lu "
	       "stall_warnings %lu fenced %d\n", st->gp_completed, st->gp_driven_by_caller,
	       st->gp_driven_by_kthread, st->fqs_scans, st->stall_warnings, st->fenced);
	printf("treercu: cbs_queued %ld cbs_invoked %ld cbs_pending %ld cbs_pushback %ld "
	       "frees_queued %ld frees_done %ld frees_fallback %ld nocb_threads %d\n",
	       st->cbs_queued, st->cbs_invoked, st->cbs_pending, st->cbs_pushback,
	       st->frees_queued, st->frees_done, st->frees_fallback, st->nocb_threads);
	printf("--- End of test: %s (%lu failures)\n", failures ? "FAILURE" : "SUCCESS", failures);
}

static void cb_json(struct json *j)
{
	json_obj(j, "callbacks");
	json_int(j, "writers", cbt.writers);
	json_int(j, "updates", (long long)atomic_load(&cbt.updates));
	for (int k = 0; k < CB_NKINDS; k++)
		json_int(j, cb_kind_name[k], (long long)atomic_load(&cbt.kinds[k]));
	json_int(j, "stage_callbacks_queued", (long long)atomic_load(&cbt.queued));
	json_int(j, "stage_callbacks_run", (long long)atomic_load(&cbt.invoked));
	json_end(j, '}');
	json_obj(j, "barrier");
	json_int(j, "rounds", (long long)atomic_load(&cbt.barriers));
	json_int(j, "lazy_rounds", (long long)atomic_load(&cbt.lazy_barriers));
	json_int(j, "callbacks", (long long)atomic_load(&cbt.barrier_cbs));
	json_end(j, '}');
	json_obj(j, "fwd_prog");
	json_int(j, "rounds", (long long)cbt.fwd_rounds);
	json_num(j, "flood_s", cbt.fwd_s);
	json_int(j, "callbacks", (long long)cbt.fwd_cbs);
	json_int(j, "peak_pending", (long long)cbt.fwd_peak);
	json_int(j, "cb_max_pending", cbt.cb_max_pending);
	json_int(j, "pushbacks", (long long)cbt.fwd_pushback);
	json_num(j, "max_drain_ms", cbt.fwd_max_drain_ms);
	json_int(j, "max_gps_after_flood", (long long)cbt.fwd_max_gps_seen);
	json_int(j, "gps_limit", cbt.fwd_max_gps);
	json_int(j, "drains_with_other_gp_demand", (long long)cbt.fwd_unquiet);
	json_int(j, "max_gps_after_flood_other_demand", (long long)cbt.fwd_max_gps_unquiet);
	json_int(j, "floods_cut_by_end_of_run", (long long)cbt.fwd_cut);
	json_end(j, '}');
}

static void inj_json(struct json *j)
{
	json_obj(j, "injectors");
	for (int i = 0; i < INJ_N; i++)
		json_int(j, inj_name[i], (inj.enabled >> i) & 1);
	json_int(j, "rotated", inj.rotate);
	json_int(j, "signals_sent", (long long)atomic_load(&inj.sig_sent));
	json_int(j, "signal_sections", (long long)atomic_load(&inj.sig_sections));
	json_int(j, "forks", (long long)atomic_load(&inj.forks));
	json_int(j, "forks_failed", (long long)atomic_load(&inj.fork_failed));
	json_int(j, "cancels", (long long)atomic_load(&inj.cancels));
	json_int(j, "exits_in_section", (long long)atomic_load(&inj.exits));
	for (int k = 0; k < QB_N; k++) {
		char name[32];

		snprintf(name, sizeof(name), "qsbr_%s", qb_name[k]);
		json_int(j, name, (long long)atomic_load(&inj.qsbr_calls[k]));
	}
	json_end(j, '}');
}

static int write_json(const struct tool_opts *o, double duration, unsigned long failures)
{
	struct json j;

	if (json_open(&j, o, "torture"))
		return -1;
	json_str(&j, "command", "torture");
	json_num(&j, "duration_s", duration);
	json_int(&j, "failures", (long long)failures);
	json_u64_array(&j, "reader_pipe", tt.pipe, PIPE_LEN + 1);
	json_u64_array(&j, "reader_batch", tt.batch, PIPE_LEN + 1);
	json_u64_array(&j, "free_block_circulation", tt.wcount, PIPE_LEN + 1);
	json_int(&j, "reads", (long long)tt.reads);
	json_int(&j, "updates", (long long)atomic_load(&tt.updates));
	json_int(&j, "churns", (long long)atomic_load(&tt.churns));
	json_obj(&j, "errors");
	for (int e = 0; e < E_NTYPES; e++)
		json_int(&j, err_name[e], (long long)atomic_load(&tt.errors[e]));
	json_end(&j, '}');
	json_obj(&j, "gp_types");
	for (int g = 0; g < GP_NTYPES; g++)
		json_int(&j, gp_name[g], (long long)atomic_load(&tt.gp_types[g]));
	json_end(&j, '}');
	json_obj(&j, "sync_paths");
	for (int i = 0; i < NPATH; i++)
		json_int(&j, path_name[i], (long long)atomic_load(&tt.sync_calls[i]));
	json_end(&j, '}');
	cb_json(&j);
	inj_json(&j);
	return json_close(&j);
}

static void tt_init(void)
{
	memset(tt.pool, 0, sizeof(tt.pool));
	pool.head = pool.tail = 0;
	for (int i = 0; i < POOL; i++)
		pool_free(&tt.pool[i]);
}

/* --sync-path 0|1|2|all into tt.sync_path (-1: all). */
static bool parse_sync_path(struct tool_opts *o)
{
	const char *v = opt_str(o, "sync-path");

	tt.sync_path = -1;
	if (!v || !strcmp(v, "all"))
		return true;
	if (v[0] >= '0' && v[0] < '0' + NPATH && !v[1]) {
		tt.sync_path = v[0] - '0';
		return true;
	}
	fprintf(stderr, "treercu torture: --sync-path %s: expected 0, 1, 2 or all\n", v);
	return false;
}

const struct tool_opt torture_opts[] = {
	TOPT_N("duration", "SEC", "seconds", 0.1, 1e6, 60, 5, "length of the run"),
	TOPT_I("readers", "N", "threads", 0, 16, 2, 2,
	       "preemptible-style reader threads checking each element's pipe count"),
	TOPT_I("qsbr-readers", "N", "threads", 0, 16, 1, 1, "QSBR reader threads"),
	TOPT_I("fake-writers", "N", "threads", 0, 16, 2, 2,
	       "threads running every grace-period primitive and checking its cookie"),
	TOPT_I("churn", "N", "threads", 0, 8, 1, 1,
	       "short-lived reader threads that register and unregister or just exit"),
	TOPT_N("stall", "SEC", "seconds", 1, 3600, 30, 30,
	       "no progress for this long counts as a stall (failure)"),
	TOPT_I("busted", "0|1|2", "mode", 0, 2, 0, 0,
	       "break RCU on purpose to show the checks fire (1: the writer skips its "
	       "grace periods, 2: callbacks run at once); the run must then fail"),
	TOPT_I("cb-writers", "N", "threads", 0, MAX_CBW, 1, 1, "call_rcu() writer threads"),
	TOPT_I("barrier", "0|1", "boolean", 0, 1, 1, 1, "1: check rcu_barrier() too"),
	TOPT_I("fwd", "0|1", "boolean", 0, 1, 1, 1,
	       "1: call_rcu() floods checking forward progress"),
	TOPT_N("fwd-secs", "SEC", "seconds", 0.01, 3600, 3, 1, "length of one flood"),
	TOPT_I("fwd-max-gps", "N", "grace periods", 0, 1000000, 10, 10,
	       "grace periods a flood's backlog may take to drain"),
	TOPT_S("sync-path", "0|1|2|all", "all (rotated every 100 ms)",
	       "the synchronize_rcu() wake path (normal_wake_from_gp) to exercise"),
	TOPT_S("inject", "LIST", "all (each in turn for --inject-ms)",
	       "fault injectors: all, none, or a comma-separated list of signal (read-side "
	       "sections in a signal handler sent at a high rate into readers, updaters and "
	       "grace-period drivers), fork (the child runs a short torture of every API and "
	       "exits; not in the sanitizer builds), cancel (pthread_cancel() of updaters, "
	       "then restarted), exit (threads exit inside a read-side section), qsbr (an "
	       "online QSBR thread calls every blocking API); a list runs its injectors "
	       "all the time"),
	TOPT_I("inject-ms", "MS", "milliseconds", 10, 3600000, 1000, 1000,
	       "with --inject all: how long each injector runs before the next"),
	TOPT_I("signal-us", "US", "microseconds", 1, 1000000, 50, 50,
	       "signal injector: pause between two signals"),
	TOPT_I("fork-ms", "MS", "milliseconds", 1, 3600000, 300, 300,
	       "fork injector: pause between two forks (each child runs 150 ms)"),
	TOPT_I("cancel-ms", "MS", "milliseconds", 1, 3600000, 20, 20,
	       "cancel injector: mean pause between two cancellations"),
	TOPT_I("cancel-victims", "N", "threads", 1, MAX_VICTIMS, 2, 2,
	       "cancel injector: updater threads cancelled and restarted"),
	TOPT_END,
};

/* --inject all|none|LIST into inj.enabled and inj.rotate. */
static bool parse_inject(struct tool_opts *o)
{
	const char *v = opt_str(o, "inject");
	char buf[128], *save = NULL;

	inj.enabled = (1u << INJ_N) - 1;
	inj.rotate = true;
	if (!v || !strcmp(v, "all"))
		return true;
	inj.enabled = 0;
	inj.rotate = false;
	if (!strcmp(v, "none"))
		return true;
	if (strlen(v) >= sizeof(buf)) {
		fprintf(stderr, "treercu torture: --inject: list too long\n");
		return false;
	}
	strcpy(buf, v);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i = 0;

		while (i < INJ_N && strcmp(w, inj_name[i]))
			i++;
		if (i == INJ_N) {
			fprintf(stderr, "treercu torture: --inject %s: unknown injector '%s' "
				"(expected all, none, or a comma-separated list of signal, fork, "
				"cancel, exit, qsbr)\n", v, w);
			return false;
		}
		inj.enabled |= 1u << i;
	}
	return true;
}

static bool torture_opts_read(struct tool_opts *o, double *duration, double *stall_s)
{
	tool_bind(o, torture_opts);
	if (!parse_sync_path(o) || !parse_inject(o))
		return false;
	opt_long(o, "inject-ms", &inj.period_ms);
	opt_long(o, "signal-us", &inj.signal_us);
	opt_long(o, "fork-ms", &inj.fork_ms);
	opt_long(o, "cancel-ms", &inj.cancel_ms);
	opt_long(o, "cancel-victims", &inj.victims);
	atomic_store(&inj.active, inj.rotate ? 1u : inj.enabled);
	cbt.fwd_gap_s = o->quick ? 1 : 5;
	opt_double(o, "duration", duration);
	opt_long(o, "readers", &tt.readers);
	opt_long(o, "qsbr-readers", &tt.qsbr_readers);
	opt_long(o, "fake-writers", &tt.fakewriters);
	opt_long(o, "churn", &tt.churners);
	opt_double(o, "stall", stall_s);
	opt_long(o, "busted", &tt.busted);
	opt_long(o, "cb-writers", &cbt.writers);
	opt_long(o, "barrier", &cbt.barrier);
	opt_long(o, "fwd", &cbt.fwd);
	opt_double(o, "fwd-secs", &cbt.fwd_s);
	opt_long(o, "fwd-max-gps", &cbt.fwd_max_gps);
	inj.stall_s = *stall_s;
	return true;
}

int torture_main(struct tool_opts *o, struct torture_result *res)
{
	struct tt_threads *th = calloc(1, sizeof(*th));
	double duration, stall_s;
	long saved_path = 2;
	struct trcu_stats st;
	unsigned long failures;
	bool ok;

	if (!th || !torture_opts_read(o, &duration, &stall_s))
		return 2;
	tt_init();
	trcu_get_tunable("normal_wake_from_gp", &saved_path);
	trcu_get_tunable("cb_max_pending", &cbt.cb_max_pending);
	trcu_get_tunable("lazy", &cbt.lazy_saved);
	if (tt.sync_path >= 0)
		trcu_set_tunable("normal_wake_from_gp", tt.sync_path);
	machine_note(&(struct json){ 0 });
	inj.slots_before = slots_now() - gp_kthreads();
	start_all(th);
	ok = run_for(duration, stall_s);
	__atomic_store_n(&tt.stop, 1, __ATOMIC_RELAXED);
	if (!ok || !join_all(th, stall_s)) {
		fail(E_STALL);
		ok = false;
	}
	if (ok)
		slots_check(stall_s);
	trcu_set_tunable("normal_wake_from_gp", saved_path);
	if (ok) {
		cb_final_check();
		inj_final_check();
	}
	trcu_get_stats(&st);
	failures = count_failures();
	report(duration, failures, &st);
	if (write_json(o, duration, failures))
		failures += !failures;
	res->failures = failures;
	res->reads = tt.reads;
	res->updates = atomic_load(&tt.updates);
	if (!ok) {                         /* threads still stuck: do not join */
		fflush(NULL);
		_exit(1);
	}
	cb_cleanup();
	free(th->rd);
	free(th);
	return failures ? 1 : 0;
}

int cmd_torture(struct tool_opts *o)
{
	struct torture_result r;

	return torture_main(o, &r);
}
