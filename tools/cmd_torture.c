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
 * that the checks fire.
 */
#define _GNU_SOURCE   /* pthread_timedjoin_np */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
static const char *const gp_name[GP_NTYPES] = {
	"sync", "cond", "poll", "cond_full", "poll_full", "exp", "completed",
};

enum { E_MB, E_POISON, E_REUSE, E_COOKIE, E_GPCHECK, E_STALL, E_THREAD, E_NTYPES };
static const char *const err_name[E_NTYPES] = {
	"mbtest", "poison", "reuse", "gp_during_read", "gp_cookie", "stall", "thread",
};

static struct {
	long readers, qsbr_readers, fakewriters, churners;
	long busted;                     /* writer skips its grace periods */
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

static void one_read(struct rd *r)
{
	unsigned long started, completed, seq;
	struct read_cookie k;
	struct elem *p;
	int pipe;

	rcu_read_lock();
	started = trcu_gp_seq();
	cookie_take(&k, r->reads & 1);
	p = rcu_dereference(tt.current);
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

	if (trcu_register_thread())
		fail(E_THREAD);
	if (r->qsbr)
		trcu_thread_qsbr();
	while (!stopping()) {
		one_read(r);
		if (r->qsbr)
			qsbr_step(r);
	}
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

	get_state_synchronize_rcu_full(&fc);
	c = get_state_synchronize_rcu();
	switch (type) {
	case GP_SYNC:
		synchronize_rcu();
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
	if ((norm && !poll_state_synchronize_rcu(c)) || !poll_state_synchronize_rcu_full(&fc))
		fail(E_GPCHECK);
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

static void publish(struct elem *rp, unsigned long seq)
{
	atomic_store_explicit(&rp->pipe_count, 0, memory_order_relaxed);
	atomic_store_explicit(&rp->seq, seq, memory_order_relaxed);
	atomic_store_explicit(&rp->seq_check, ~seq, memory_order_relaxed);
	atomic_store_explicit(&rp->magic, ELEM_MAGIC, memory_order_relaxed);
	rcu_assign_pointer(tt.current, rp);    /* release: fields before pointer */
}

static void *writer_fn(void *arg)
{
	struct elem *removed[POOL];
	unsigned int rng = 0x9e3779b9u;
	unsigned long seq = 0;
	int nremoved = 0;

	trcu_register_thread();
	while (!stopping()) {
		struct elem *rp = pool_alloc(), *old = tt.current;
		int pc;

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
			if (!tt.busted)              /* every type but completed */
				wait_gp((int)(seq % (GP_NTYPES - 1)), &rng);
			pipe_update(removed, &nremoved, old);
		}
		atomic_fetch_add(&tt.updates, 1);
	}
	trcu_unregister_thread();
	return NULL;
}

static void *fakewriter_fn(void *arg)
{
	unsigned int rng = (unsigned int)(uintptr_t)arg * 2654435761u + 1;

	trcu_register_thread();
	while (!stopping()) {
		wait_gp((int)(rnd(&rng) % GP_NTYPES), &rng);
		usleep(rnd(&rng) % 1000);
	}
	trcu_unregister_thread();
	return NULL;
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

static void start_all(struct tt_threads *th)
{
	long nrd = tt.readers + tt.qsbr_readers + tt.churners;

	th->rd = calloc((size_t)nrd + 1, sizeof(*th->rd));
	for (long i = 0; th->rd && i < nrd; i++) {
		th->rd[i].qsbr = i >= tt.readers && i < tt.readers + tt.qsbr_readers;
		th->rd[i].rng = 0x12345u + (unsigned int)i * 7919u;
		spawn(th, i < tt.readers + tt.qsbr_readers ? reader_fn : churn_fn, &th->rd[i]);
	}
	spawn(th, writer_fn, NULL);
	for (long i = 0; i < tt.fakewriters; i++)
		spawn(th, fakewriter_fn, (void *)(uintptr_t)(i + 1));
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
		f += tt.pipe[i];
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

static void report(double duration, unsigned long failures, const struct trcu_stats *st)
{
	printf("\ntorture: %.1f s, %ld readers, %ld QSBR readers, %ld churn threads, "
	       "1 writer, %ld fake writers%s\n", duration, tt.readers, tt.qsbr_readers,
	       tt.churners, tt.fakewriters, tt.busted ? " (BUSTED: writer skips GPs)" : "");
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
	printf("\ntreercu: gp_completed %lu (caller-driven %lu, kthread %lu) fqs_scans %lu "
	       "stall_warnings %lu fenced %d\n", st->gp_completed, st->gp_driven_by_caller,
	       st->gp_driven_by_kthread, st->fqs_scans, st->stall_warnings, st->fenced);
	printf("--- End of test: %s (%lu failures)\n", failures ? "FAILURE" : "SUCCESS", failures);
}

static int write_json(const char *path, double duration, unsigned long failures)
{
	struct json j;

	if (json_open(&j, path))
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
	return json_close(&j);
}

static void tt_init(void)
{
	memset(tt.pool, 0, sizeof(tt.pool));
	pool.head = pool.tail = 0;
	for (int i = 0; i < POOL; i++)
		pool_free(&tt.pool[i]);
}

int torture_main(struct tool_opts *o, struct torture_result *res)
{
	static const char *const names[] = {
		"--duration", "--readers", "--qsbr-readers", "--fake-writers", "--churn",
		"--stall", "--busted", NULL,
	};
	double duration = o->quick ? 5 : 60, stall_s = 30;
	struct tt_threads *th = calloc(1, sizeof(*th));
	struct trcu_stats st;
	unsigned long failures;
	bool ok;

	if (!th || !args_check(o, "torture", names))
		return 2;
	tt.readers = 2, tt.qsbr_readers = 1, tt.fakewriters = 2, tt.churners = 1;
	arg_double(o, "--duration", 0.1, 1e6, &duration);
	arg_long(o, "--readers", 0, 16, &tt.readers);
	arg_long(o, "--qsbr-readers", 0, 16, &tt.qsbr_readers);
	arg_long(o, "--fake-writers", 0, 16, &tt.fakewriters);
	arg_long(o, "--churn", 0, 8, &tt.churners);
	arg_double(o, "--stall", 1, 3600, &stall_s);
	arg_long(o, "--busted", 0, 1, &tt.busted);
	tt_init();
	start_all(th);
	ok = run_for(duration, stall_s);
	__atomic_store_n(&tt.stop, 1, __ATOMIC_RELAXED);
	if (!ok || !join_all(th, stall_s)) {
		fail(E_STALL);
		ok = false;
	}
	trcu_get_stats(&st);
	failures = count_failures();
	report(duration, failures, &st);
	if (write_json(o->json, duration, failures))
		failures += !failures;
	res->failures = failures;
	res->reads = tt.reads;
	res->updates = atomic_load(&tt.updates);
	if (!ok) {                         /* threads still stuck: do not join */
		fflush(NULL);
		_exit(1);
	}
	free(th->rd);
	free(th);
	return failures ? 1 : 0;
}

int cmd_torture(struct tool_opts *o)
{
	struct torture_result r;

	return torture_main(o, &r);
}
