/* SPDX-License-Identifier: MIT */
/*
 * Torture fault injectors (torture.c describes the run): signals inside
 * readers, updaters and grace-period drivers; fork() with everything in
 * flight; cancelled updaters; threads that exit inside a section; QSBR
 * threads calling every blocking API while online; threads with no memory
 * for their callback state.
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
#include "nocb.h"
#include "results.h"
#include "torture.h"

static bool inj_on(int i)
{
	return atomic_load_explicit(&inj.active, memory_order_relaxed) & (1u << i);
}

/* --inject all: injector k for period_ms, then the next. */
void rotate_inject(uint64_t elapsed_ns)
{
	if (inj.rotate)
		atomic_store(&inj.active,
			     1u << (elapsed_ns / 1000000u / (uint64_t)inj.period_ms % INJ_N));
}

/* The calling thread takes the injected signal from now on (it must be
 * registered and not QSBR) until sig_target_del(). */
int sig_target_add(void)
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
void sig_target_del(int slot)
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
		seq = tt_check_elem(p);
		if (x % 4 == 0) {              /* stay a while: a GP may try to end */
			struct timespec ts = { 0, 20000 + (long)(x % 61) * 1000 };

			nanosleep(&ts, NULL);
		}
		pipe = atomic_load_explicit(&p->pipe_count, memory_order_relaxed);
		if (atomic_load_explicit(&p->seq, memory_order_relaxed) != seq)
			tt_fail(E_REUSE);
		tt_check_elem(p);
		if (poll_state_synchronize_rcu(c))
			tt_fail(E_COOKIE);
		atomic_fetch_add_explicit(&inj.sig_pipe[pipe < 0 ? 0 : pipe > PIPE_LEN ? PIPE_LEN : pipe],
					  1, memory_order_relaxed);
	}
	rcu_read_unlock();
	atomic_fetch_add_explicit(&inj.sig_sections, 1, memory_order_relaxed);
	errno = saved;
}

void sig_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_reader;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIG_INJ, &sa, NULL);
}

/* The signal at a high rate, each time into a random target thread. */
void *signaller_fn(void *arg)
{
	unsigned int rng = 0x6a09e667u;

	(void)arg;
	while (!tt_stopping()) {
		if (!inj_on(INJ_SIGNAL)) {
			usleep(10000);
			continue;
		}
		pthread_mutex_lock(&inj.tlock);
		int n = 0, k;

		for (int i = 0; i < MAX_THREADS; i++)
			n += inj.used[i];
		k = n ? (int)(tt_rnd(&rng) % (unsigned int)n) : -1;
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
		if (tt_rnd(&rng) % 64 == 0)
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

void *forker_fn(void *arg)
{
	unsigned int rng = 0xbb67ae85u;

	(void)arg;
	if (FORK_SKIPPED)
		return NULL;                   /* see fork's line in the report */
	while (tt_nap((double)inj.fork_ms / 1000.0)) {
		pid_t pid;
		int st;

		if (!inj_on(INJ_FORK))
			continue;
		pid = fork();
		if (pid == 0)
			_exit(fork_child(tt_rnd(&rng)));   /* _exit: no atexit, no leak check */
		if (pid < 0) {
			tt_fail(E_FORK);
			continue;
		}
		tt_rnd(&rng);
		st = fork_wait(pid);
		atomic_fetch_add(&inj.forks, 1);
		if (st) {
			fprintf(stderr, "torture: fork child %s %d (3 freed object read, 4 cookie "
				"incomplete after its wait, 5 rcu_barrier() early, 6 no memory or "
				"threads; 128+N killed by signal N)\n",
				st < 0 ? "hung: killed after the stall limit; status" :
				"exited with status", st);
			atomic_fetch_add(&inj.fork_failed, 1);
			tt_fail(E_FORK);
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
	unsigned int k = tt_rnd(rng) % 8;

	switch (k) {
	case 0:
	case 1:
	case 2:
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		tt_wait_gp((int)(tt_rnd(rng) % GP_NTYPES), rng);
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
		if (tt_rnd(rng) % 64)
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
 * that the thread's own exit then trips over.  For that reason tt_wait_gp()
 * (whose polled waits sleep) runs with cancellation off.
 */
static __thread unsigned int victim_rng;

static void *victim_fn(void *arg)
{
	victim_rng = (unsigned int)(uintptr_t)arg * 2246822519u + 7;
	if (victim_rng & 2)                    /* the others register on first use */
		trcu_register_thread();
	while (!tt_stopping()) {
		/* Not cancelled while parked: fwd_prog counts the parked. */
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		tt_park_if_quiet();
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		victim_step(&victim_rng);
		victim_pause(tt_rnd(&victim_rng) % 200);
	}
	trcu_unregister_thread();
	return NULL;
}

/* Cancel a random updater every --cancel-ms or so, join it, start another. */
void *canceller_fn(void *arg)
{
	pthread_t v[MAX_VICTIMS];
	unsigned int rng = 0x3c6ef372u, seed = 1;
	long n = inj.victims;

	(void)arg;
	for (long i = 0; i < n; i++)
		if (pthread_create(&v[i], NULL, victim_fn, (void *)(uintptr_t)seed++))
			n = i;
	while (tt_nap((double)(1 + tt_rnd(&rng) % (unsigned int)(2 * inj.cancel_ms)) / 1000.0)) {
		long i = (long)(tt_rnd(&rng) % (unsigned int)(n ? n : 1));
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
			tt_fail(E_CANCEL);
			return NULL;
		}
		atomic_fetch_add(&inj.cancels, 1);
		if (pthread_create(&v[i], NULL, victim_fn, (void *)(uintptr_t)seed++)) {
			tt_fail(E_THREAD);
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
	unsigned int mode = tt_rnd(&r->rng) % 4;

	if (mode & 1)
		trcu_register_thread();         /* else registered by the first lock */
	for (int i = 0; i < 20 && !tt_stopping(); i++)
		tt_one_read(r);
	rcu_read_lock();
	if (mode & 2) {
		rcu_read_lock();
		atomic_fetch_add(&inj.exits_nested, 1);
	}
	{
		struct elem *p = tt_read_pick(r);

		if (p)
			tt_check_elem(p);
	}
	atomic_fetch_add(&inj.exits, 1);
	if (tt_rnd(&r->rng) & 1)
		pthread_exit(NULL);
	return NULL;
}

void *exiter_fn(void *arg)
{
	struct rd *r = arg;

	while (tt_nap(0.1)) {
		pthread_t t;

		if (!inj_on(INJ_EXIT))
			continue;
		if (pthread_create(&t, NULL, exit_child, r)) {
			tt_fail(E_THREAD);
			break;
		}
		pthread_join(t, NULL);
	}
	tt_rd_merge(r);
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
		tt_fail(E_GPCHECK);
	}
	atomic_fetch_add(&inj.qsbr_calls[k], 1);
}

void *qsbr_blocker_fn(void *arg)
{
	struct rd *r = arg;

	trcu_register_thread();
	trcu_thread_qsbr();
	r->qsbr = true;
	while (!tt_stopping()) {
		for (int i = 0; i < 50; i++) {
			tt_one_read(r);
			rcu_quiescent_state();
		}
		if (atomic_load(&cbt.quiet)) {   /* fwd_prog's drain: park, offline */
			rcu_thread_offline();
			tt_park_if_quiet();
			rcu_thread_online();
			continue;
		}
		if (inj_on(INJ_QSBR))
			qsbr_blocking_call(tt_rnd(&r->rng) % QB_N);
		else
			usleep(1000);
	}
	rcu_thread_offline();
	trcu_unregister_thread();
	tt_rd_merge(r);
	return NULL;
}

/* ---- Threads with no memory for their callback state ---- */

struct nomem_cb {
	struct rcu_head rh;
	unsigned long cookie;            /* get_state_synchronize_rcu() at call_rcu() */
	_Atomic unsigned long magic;
};

/* A grace period ended between the call_rcu() and now: else E_CB. */
static void nomem_cb_fn(struct rcu_head *rh)
{
	struct nomem_cb *c = (struct nomem_cb *)rh;

	if (atomic_load_explicit(&c->magic, memory_order_relaxed) != ELEM_MAGIC ||
	    !poll_state_synchronize_rcu(c->cookie))
		tt_fail(E_CB);
	atomic_store_explicit(&c->magic, ELEM_POISON, memory_order_relaxed);
	free(c);
	atomic_fetch_add(&inj.nomem_cbs_run, 1);
}

/* Queue a few callbacks, half inside a section, then exit with some of
 * them still queued on the shared queue. */
static void *nomem_child(void *arg)
{
	unsigned int rng = (unsigned int)(uintptr_t)arg;
	int n = 1 + (int)(tt_rnd(&rng) % 64);

	for (int i = 0; i < n; i++) {
		struct nomem_cb *c = malloc(sizeof(*c));
		bool in = tt_rnd(&rng) & 1;

		if (!c)
			break;
		atomic_store_explicit(&c->magic, ELEM_MAGIC, memory_order_relaxed);
		if (in)
			rcu_read_lock();
		c->cookie = get_state_synchronize_rcu();
		atomic_fetch_add(&inj.nomem_cbs_queued, 1);
		call_rcu(&c->rh, nomem_cb_fn);
		if (in)
			rcu_read_unlock();
	}
	return NULL;
}

/* While on: no thread gets callback state, and a new thread every few ms
 * queues callbacks; the run's other callback threads keep theirs. */
void *nomem_fn(void *arg)
{
	unsigned int seed = 0x1f83d9abu;

	(void)arg;
	while (tt_nap(0.002)) {
		pthread_t t;

		atomic_store(&rcu_nocb_test_no_rdp, inj_on(INJ_NOMEM));
		if (!inj_on(INJ_NOMEM))
			continue;
		if (pthread_create(&t, NULL, nomem_child, (void *)(uintptr_t)seed++)) {
			tt_fail(E_THREAD);
			break;
		}
		pthread_join(t, NULL);
		atomic_fetch_add(&inj.nomem_threads, 1);
	}
	atomic_store(&rcu_nocb_test_no_rdp, false);
	return NULL;
}

/* normal_wake_from_gp for --sync-path all: rotate 0, 1, 2.  sr_wake_max
 * every run: 1 in every other 300 ms, so that the list path's GP driver
 * wakes one waiter itself and leaves the others to cleanup passes, as it
 * does with more callers waiting than the default. */
void rotate_path(uint64_t elapsed_ns)
{
	if (tt.sync_path < 0)
		trcu_set_tunable("normal_wake_from_gp", (long)(elapsed_ns / 100000000u % NPATH));
	trcu_set_tunable("sr_wake_max", elapsed_ns / 300000000u % 2 ? 1 : tt.wake_max_saved);
}
