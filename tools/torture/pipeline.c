/* SPDX-License-Identifier: MIT */
/*
 * The torture pipeline (torture.c describes the run): readers that check
 * every element they read, churning reader threads, the writer that ages
 * elements through the pipe one grace period per stage, and fake writers
 * that run every grace-period primitive and check its cookie.
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
#include "torture.h"

unsigned int tt_rnd(unsigned int *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

bool tt_stopping(void)
{
	return __atomic_load_n(&tt.stop, __ATOMIC_RELAXED);
}

void tt_fail(int e)
{
	atomic_fetch_add(&tt.errors[e], 1);
}

/* rcu_seq_diff(): grace periods between two gp_seq snapshots. */
unsigned long tt_seq_diff(unsigned long new, unsigned long old)
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

/* ---- Readers ------------------------------------------------------------ */

/* The mbtest: fields set before publication must be seen set. */
unsigned long tt_check_elem(struct elem *p)
{
	unsigned long magic = atomic_load_explicit(&p->magic, memory_order_relaxed);
	unsigned long seq = atomic_load_explicit(&p->seq, memory_order_relaxed);

	if (magic == ELEM_POISON)
		tt_fail(E_POISON);
	else if (magic != ELEM_MAGIC ||
		 atomic_load_explicit(&p->seq_check, memory_order_relaxed) != ~seq)
		tt_fail(E_MB);
	return seq;
}

/* rcu_read_delay(): now and then stay in the section a while. */
static void read_delay(struct rd *r)
{
	unsigned int x = tt_rnd(&r->rng);

	if (x % 65536 == 0)
		usleep(2000);
	else if (x % 1024 == 0)
		usleep(20 + x % 50);
	else if (x % 128 == 0)
		sched_yield();
}

void tt_cookie_take(struct read_cookie *k, bool full)
{
	k->full = full;
	if (full)
		get_state_synchronize_rcu_full(&k->fc);
	else
		k->c = get_state_synchronize_rcu();
}

bool tt_cookie_done(struct read_cookie *k)
{
	return k->full ? poll_state_synchronize_rcu_full(&k->fc) : poll_state_synchronize_rcu(k->c);
}

/* The synchronous writer's element, or (half the time) a callback writer's. */
struct elem *tt_read_pick(struct rd *r)
{
	unsigned int x = tt_rnd(&r->rng);

	if (cbt.writers && (x & 1))
		return rcu_dereference(cbt.slot[(x >> 1) % (unsigned int)cbt.writers]);
	return rcu_dereference(tt.current);
}

void tt_one_read(struct rd *r)
{
	unsigned long started, completed, seq;
	struct read_cookie k;
	struct elem *p;
	int pipe;
	/* Online QSBR readers use the free QSBR read side every other read
	 * (the grace period must still wait for them), the plain one
	 * otherwise; the nested section below is plain in both. */
	bool free_pair = r->qsbr && (r->reads & 2);

	if (free_pair)
		trcu_qsbr_read_lock();
	else
		rcu_read_lock();
	started = trcu_gp_seq();
	tt_cookie_take(&k, r->reads & 1);
	p = tt_read_pick(r);
	if (!p) {
		if (free_pair)
			trcu_qsbr_read_unlock();
		else
			rcu_read_unlock();
		return;
	}
	seq = tt_check_elem(p);
	read_delay(r);
	if (r->rng % 8 == 0)
		rcu_read_lock();             /* nested section */
	pipe = atomic_load_explicit(&p->pipe_count, memory_order_relaxed);
	if (r->rng % 8 == 0)
		rcu_read_unlock();
	completed = tt_section_end_checks(p, seq, &k);
	if (free_pair)
		trcu_qsbr_read_unlock();
	else
		rcu_read_unlock();
	tt_rd_count(r, pipe, started, completed);
}

/* The checks at the end of a reader's section on element p (read with
 * sequence seq under cookie k): not reused, not poisoned, no whole GP
 * inside the section.  Returns the GP sequence read before the cookie. */
unsigned long tt_section_end_checks(struct elem *p, unsigned long seq, struct read_cookie *k)
{
	unsigned long completed;

	if (atomic_load_explicit(&p->seq, memory_order_relaxed) != seq)
		tt_fail(E_REUSE);
	tt_check_elem(p);
	completed = trcu_gp_seq();
	if (tt_cookie_done(k))
		tt_fail(E_COOKIE);              /* a whole GP ended inside the section */
	return completed;
}

/* One finished read into the reader's pipe and batch histograms. */
void tt_rd_count(struct rd *r, int pipe, unsigned long started, unsigned long completed)
{
	unsigned long gps = tt_seq_diff(completed, started);

	r->pipe[pipe < 0 ? 0 : pipe > PIPE_LEN ? PIPE_LEN : pipe]++;
	r->batch[gps > PIPE_LEN ? PIPE_LEN : gps]++;
	r->reads++;
}

void tt_rd_merge(struct rd *r)
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
	if (tt_rnd(&r->rng) % 4096 == 0) {
		rcu_thread_offline();
		usleep(100);
		rcu_thread_online();
	}
}

void *reader_fn(void *arg)
{
	struct rd *r = arg;

	int sig;

	if (trcu_register_thread())
		tt_fail(E_THREAD);
	if (r->qsbr)
		trcu_thread_qsbr();
	sig = r->qsbr ? -1 : sig_target_add();
	while (!tt_stopping()) {
		tt_one_read(r);
		if (r->qsbr)
			qsbr_step(r);
	}
	sig_target_del(sig);
	if (r->qsbr)
		rcu_thread_offline();
	trcu_unregister_thread();
	tt_rd_merge(r);
	return NULL;
}

/* Short-lived reader: mode picks how it starts and how it leaves. */
static void *churn_child(void *arg)
{
	struct rd *r = arg;
	unsigned int mode = tt_rnd(&r->rng) % 5;

	if (mode != 4 && trcu_register_thread())   /* mode 4: auto-registration */
		tt_fail(E_THREAD);
	r->qsbr = mode == 2 || mode == 3;
	if (r->qsbr)
		trcu_thread_qsbr();
	for (int i = 0; i < 100 && !tt_stopping(); i++) {
		tt_one_read(r);
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

void *churn_fn(void *arg)
{
	struct rd *r = arg;

	while (!tt_stopping()) {
		pthread_t t;

		if (pthread_create(&t, NULL, churn_child, r)) {
			tt_fail(E_THREAD);
			break;
		}
		pthread_join(t, NULL);
		atomic_fetch_add(&tt.churns, 1);
	}
	tt_rd_merge(r);
	return NULL;
}

/* ---- Writers ------------------------------------------------------------ */

static void poll_wait(unsigned long c, struct trcu_gp_oldstate *fc, unsigned int *rng)
{
	while (!(fc ? poll_state_synchronize_rcu_full(fc) : poll_state_synchronize_rcu(c))) {
		if (tt_rnd(rng) % 2)
			sched_yield();
		else
			usleep(tt_rnd(rng) % 100);
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
void tt_wait_gp(int type, unsigned int *rng)
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
		tt_fail(E_GPCHECK);
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

void tt_pool_free(struct elem *p)
{
	atomic_store_explicit(&p->magic, ELEM_POISON, memory_order_relaxed);
	atomic_store_explicit(&p->seq_check, ELEM_POISON, memory_order_relaxed);
	pool.q[pool.tail++ % POOL] = p;
}

/* Every element of tt.pool zeroed and in the free FIFO. */
void tt_pool_init(void)
{
	memset(tt.pool, 0, sizeof(tt.pool));
	pool.head = pool.tail = 0;
	for (int i = 0; i < POOL; i++)
		tt_pool_free(&tt.pool[i]);
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
			tt_pool_free(p);
		else
			removed[n++] = p;
	}
	*nremoved = n;
}

void tt_elem_init(struct elem *rp, unsigned long seq)
{
	atomic_store_explicit(&rp->pipe_count, 0, memory_order_relaxed);
	atomic_store_explicit(&rp->seq, seq, memory_order_relaxed);
	atomic_store_explicit(&rp->seq_check, ~seq, memory_order_relaxed);
	atomic_store_explicit(&rp->magic, ELEM_MAGIC, memory_order_relaxed);
}

static void publish(struct elem *rp, unsigned long seq)
{
	tt_elem_init(rp, seq);
	rcu_assign_pointer(tt.current, rp);    /* release: fields before pointer */
}

/* fwd_prog's quiet phase: every grace-period requester waits here. */
void tt_park_if_quiet(void)
{
	if (!atomic_load(&cbt.quiet))
		return;
	atomic_fetch_add(&cbt.parked, 1);
	while (atomic_load(&cbt.quiet) && !tt_stopping())
		usleep(200);
	atomic_fetch_sub(&cbt.parked, 1);
}

void *writer_fn(void *arg)
{
	struct elem *removed[POOL];
	unsigned int rng = 0x9e3779b9u;
	unsigned long seq = 0;
	int nremoved = 0, sig;

	trcu_register_thread();
	sig = sig_target_add();
	while (!tt_stopping()) {
		struct elem *rp, *old;
		int pc;

		tt_park_if_quiet();
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
				tt_wait_gp((int)(seq % (GP_NTYPES - 1)), &rng);
			pipe_update(removed, &nremoved, old);
		}
		atomic_fetch_add(&tt.updates, 1);
	}
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

void *fakewriter_fn(void *arg)
{
	unsigned int rng = (unsigned int)(uintptr_t)arg * 2654435761u + 1;
	int sig;

	trcu_register_thread();
	sig = sig_target_add();
	while (!tt_stopping()) {
		tt_park_if_quiet();
		tt_wait_gp((int)(tt_rnd(&rng) % GP_NTYPES), &rng);
		usleep(tt_rnd(&rng) % 1000);
	}
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}
