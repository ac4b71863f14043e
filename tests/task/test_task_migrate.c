/* SPDX-License-Identifier: MIT */
/*
 * A task's read-side section survives real context switches that move the
 * task between worker threads mid-function: plain rcu_read_lock() /
 * rcu_read_unlock() / rcu_read_lock_held() and the trcu_task_ read side,
 * in one function whose frame migrates, so that the compiler may keep a
 * thread pointer computed before the switch.  Each worker's own state is
 * left intact (no store through the other worker's reader), and grace
 * periods run meanwhile.
 *
 * The tasks are ucontext fibers resumed alternately on two workers.
 * TSan does not follow swapcontext(): skipped there.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <ucontext.h>

#include <treercu/task.h>

#include "check.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#endif

#define ROUNDS 2000
#define NTASKS 4

struct fiber {
	struct trcu_task t;
	ucontext_t ctx;
	char stack[256 * 1024];
	int owner;                  /* worker that runs it next */
	bool done;
};

static struct fiber fib[NTASKS];
static __thread ucontext_t sched_ctx;
static __thread struct fiber *running;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_bool stop;
static atomic_long sections;

/* Back to the scheduler of whichever worker runs this now. */
__attribute__((noinline)) static void yield(void)
{
	struct fiber *f = running;

	CHECK(swapcontext(&f->ctx, &sched_ctx) == 0);
}

static void task_body(int i)
{
	struct fiber *f = &fib[i];

	for (int r = 0; r < ROUNDS; r++) {
		/* Plain names across a migration. */
		rcu_read_lock();
		CHECK(rcu_read_lock_held());
		yield();
		CHECK(rcu_read_lock_held());
		rcu_read_lock();         /* nested, on the new worker */
		yield();
		rcu_read_unlock();
		rcu_read_unlock();
		CHECK(!rcu_read_lock_held());
		/* The task read side across a migration. */
		trcu_task_read_lock(&f->t);
		yield();
		trcu_task_read_lock(&f->t);
		trcu_task_read_unlock(&f->t);
		yield();
		trcu_task_read_unlock(&f->t);
		CHECK(!trcu_task_read_lock_held(&f->t));
		atomic_fetch_add(&sections, 2);
	}
	f->done = true;
	yield();
}

static void fiber_entry(int i)
{
	task_body(i);
}

static void *worker(void *p)
{
	int me = (int)(long)p;

	for (;;) {
		struct fiber *f = NULL;

		pthread_mutex_lock(&mu);
		for (;;) {
			int left = 0;

			for (int i = 0; i < NTASKS; i++) {
				if (!fib[i].done)
					left++;
				if (!f && !fib[i].done && fib[i].owner == me)
					f = &fib[i];
			}
			if (f || !left)
				break;
			pthread_cond_wait(&cv, &mu);
		}
		if (f)
			f->owner = -1;   /* taken */
		pthread_mutex_unlock(&mu);
		if (!f)
			break;
		running = f;
		trcu_task_switch_in(&f->t);
		CHECK(swapcontext(&sched_ctx, &f->ctx) == 0);
		trcu_task_switch_out(&f->t);
		running = NULL;
		/* The worker's own state is its own: no section left open. */
		CHECK(!rcu_read_lock_held());
		pthread_mutex_lock(&mu);
		f->owner = 1 - me;       /* resumed on the other worker */
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	synchronize_rcu();
	return NULL;
}

static void *updater(void *p)
{
	(void)p;
	while (!atomic_load(&stop)) {
		synchronize_rcu();
		synchronize_rcu_expedited();
	}
	return NULL;
}

static void fiber_make(int i)
{
	trcu_task_init(&fib[i].t, (uint64_t)i, "fiber");
	CHECK(getcontext(&fib[i].ctx) == 0);
	fib[i].ctx.uc_stack.ss_sp = fib[i].stack;
	fib[i].ctx.uc_stack.ss_size = sizeof(fib[i].stack);
	fib[i].ctx.uc_link = NULL;
	makecontext(&fib[i].ctx, (void (*)(void))fiber_entry, 1, i);
	fib[i].owner = i & 1;
}

int main(void)
{
	pthread_t w[2], u;

#ifdef TEST_TSAN
	printf("skipped: TSan does not follow swapcontext()\n");
	return 77;
#endif
	signal(SIGALRM, check_hang_handler);
	check_phase = "migrating fibers";
	alarm(240);
	for (int i = 0; i < NTASKS; i++)
		fiber_make(i);
	CHECK(pthread_create(&u, NULL, updater, NULL) == 0);
	for (long k = 0; k < 2; k++)
		CHECK(pthread_create(&w[k], NULL, worker, (void *)k) == 0);
	for (int k = 0; k < 2; k++)
		pthread_join(w[k], NULL);
	atomic_store(&stop, true);
	pthread_join(u, NULL);
	CHECK_EQ(atomic_load(&sections), 2L * ROUNDS * NTASKS);
	for (int i = 0; i < NTASKS; i++)
		trcu_task_exit(&fib[i].t);
	synchronize_rcu();
	printf("ok: %ld sections across %d migrations each\n", atomic_load(&sections),
	       4 * ROUNDS);
	return 0;
}
