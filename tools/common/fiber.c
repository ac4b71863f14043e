/* SPDX-License-Identifier: MIT */
/*
 * The fiber runtime of tools/fiber.h.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fiber.h"

/* Sanitizer fiber annotations: ASan and TSan must know about stack
 * switches to keep their shadow stacks right. */
#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FIBER_TSAN 1
#endif
#endif
#ifdef FIBER_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
				     size_t *size_old);
#endif
#ifdef FIBER_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

#define STACK_SIZE (128 * 1024)

/*
 * fiber_switch(save, to): save the callee-saved registers on the current
 * stack, store the stack pointer in *save, load `to` as the stack pointer,
 * restore the registers saved there and return into that context.
 */
void fiber_switch(void **save, void *to);
void fiber_trampoline(void);
#if defined(__x86_64__)
__asm__(".text\n"
	".globl fiber_switch\n"
	".type fiber_switch,@function\n"
	"fiber_switch:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	subq $8, %rsp\n"
	"	stmxcsr (%rsp)\n"
	"	fnstcw 4(%rsp)\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	ldmxcsr (%rsp)\n"
	"	fldcw 4(%rsp)\n"
	"	addq $8, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	".size fiber_switch, .-fiber_switch\n"
	".globl fiber_trampoline\n"
	".type fiber_trampoline,@function\n"
	"fiber_trampoline:\n"
	"	movq %r12, %rdi\n"
	"	call fiber_main\n"
	"	ud2\n"
	".size fiber_trampoline, .-fiber_trampoline\n");
#define FRAME_WORDS 8   /* mxcsr/fpcw, r15, r14, r13, r12, rbx, rbp, return address */
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl fiber_switch\n"
	".type fiber_switch,%function\n"
	"fiber_switch:\n"
	"	sub sp, sp, #160\n"
	"	stp x19, x20, [sp, #0]\n"
	"	stp x21, x22, [sp, #16]\n"
	"	stp x23, x24, [sp, #32]\n"
	"	stp x25, x26, [sp, #48]\n"
	"	stp x27, x28, [sp, #64]\n"
	"	stp x29, x30, [sp, #80]\n"
	"	stp d8, d9, [sp, #96]\n"
	"	stp d10, d11, [sp, #112]\n"
	"	stp d12, d13, [sp, #128]\n"
	"	stp d14, d15, [sp, #144]\n"
	"	mov x2, sp\n"
	"	str x2, [x0]\n"
	"	mov sp, x1\n"
	"	ldp x19, x20, [sp, #0]\n"
	"	ldp x21, x22, [sp, #16]\n"
	"	ldp x23, x24, [sp, #32]\n"
	"	ldp x25, x26, [sp, #48]\n"
	"	ldp x27, x28, [sp, #64]\n"
	"	ldp x29, x30, [sp, #80]\n"
	"	ldp d8, d9, [sp, #96]\n"
	"	ldp d10, d11, [sp, #112]\n"
	"	ldp d12, d13, [sp, #128]\n"
	"	ldp d14, d15, [sp, #144]\n"
	"	add sp, sp, #160\n"
	"	ret\n"
	".size fiber_switch, .-fiber_switch\n"
	".globl fiber_trampoline\n"
	".type fiber_trampoline,%function\n"
	"fiber_trampoline:\n"
	"	mov x0, x19\n"
	"	bl fiber_main\n"
	"	brk #0\n"
	".size fiber_trampoline, .-fiber_trampoline\n");
#define FRAME_WORDS 20  /* x19-x30, d8-d15 */
#else
#error "tools/fiber.c: the context switch is written for x86-64 and arm64"
#endif

struct fiber {
	struct trcu_task task;
	void *sp;                  /* saved stack pointer while not running */
	char *stack;
	fiber_fn fn;
	void *arg;
	struct frt *rt;
	struct fiber *next;        /* run-queue link */
	bool done;
#ifdef FIBER_TSAN
	void *tsan;
#endif
};

struct rq {
	pthread_spinlock_t lock;
	struct fiber *head, *tail;
} __attribute__((aligned(64)));

struct wk {
	struct rq q;
	pthread_t th;
	int idx;
	unsigned int rng;
	long runs_left;
};

struct frt {
	struct frt_config cfg;
	struct wk *w;
	_Atomic long live;         /* fibers not finished */
	_Atomic long threads;      /* worker threads started */
	_Atomic unsigned long runs;
	_Atomic bool stop;
	pthread_mutex_t join_mu;
	pthread_cond_t join_cv;
	_Atomic int exited;        /* worker threads that finished for good */
	struct fiber **all;
	long nall, capall;
	pthread_mutex_t all_mu;
};

/* The worker the calling thread is, and its scheduler's context. */
static __thread struct wk *cur_wk;
static __thread void *sched_sp;
static __thread struct fiber *cur_fiber;
#ifdef FIBER_TSAN
static __thread void *sched_tsan;
#endif
#ifdef FIBER_ASAN
static __thread const void *sched_stack_bottom;
static __thread size_t sched_stack_size;
#endif

static unsigned int rnd(unsigned int *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void rq_push(struct rq *q, struct fiber *f)
{
	f->next = NULL;
	pthread_spin_lock(&q->lock);
	if (q->tail)
		q->tail->next = f;
	else
		q->head = f;
	q->tail = f;
	pthread_spin_unlock(&q->lock);
}

static struct fiber *rq_pop(struct rq *q)
{
	struct fiber *f;

	pthread_spin_lock(&q->lock);
	f = q->head;
	if (f) {
		q->head = f->next;
		if (!q->head)
			q->tail = NULL;
	}
	pthread_spin_unlock(&q->lock);
	return f;
}

void fiber_main(struct fiber *f);
__attribute__((used)) void fiber_main(struct fiber *f)
{
#ifdef FIBER_ASAN
	__sanitizer_finish_switch_fiber(NULL, &sched_stack_bottom, &sched_stack_size);
#endif
	f->fn(f, f->arg);
	f->done = true;
	fiber_yield();   /* never resumed */
	abort();
}

__attribute__((noinline)) void fiber_yield(void)
{
	struct fiber *f = cur_fiber;

#ifdef FIBER_TSAN
	__tsan_switch_to_fiber(sched_tsan, 0);
#endif
#ifdef FIBER_ASAN
	__sanitizer_start_switch_fiber(NULL, sched_stack_bottom, sched_stack_size);
#endif
	fiber_switch(&f->sp, sched_sp);
#ifdef FIBER_ASAN
	__sanitizer_finish_switch_fiber(NULL, &sched_stack_bottom, &sched_stack_size);
#endif
}

struct trcu_task *fiber_task(struct fiber *f)
{
	return &f->task;
}

int fiber_worker(void)
{
	return cur_wk ? cur_wk->idx : -1;
}

static void run_one(struct wk *w, struct fiber *f)
{
	cur_fiber = f;
	trcu_task_switch_in(&f->task);
#ifdef FIBER_TSAN
	__tsan_switch_to_fiber(f->tsan, 0);
#endif
#ifdef FIBER_ASAN
	{
		void *fake = NULL;

		__sanitizer_start_switch_fiber(&fake, f->stack, STACK_SIZE);
		fiber_switch(&sched_sp, f->sp);
		__sanitizer_finish_switch_fiber(fake, NULL, NULL);
	}
#else
	fiber_switch(&sched_sp, f->sp);
#endif
	trcu_task_switch_out(&f->task);
	cur_fiber = NULL;
	atomic_fetch_add_explicit(&f->rt->runs, 1, memory_order_relaxed);
	(void)w;
}

static void *worker_main(void *arg);

static void worker_spawn(struct frt *rt, struct wk *w)
{
	pthread_attr_t a;

	pthread_attr_init(&a);
	if (rt->cfg.pin) {
		cpu_set_t set;
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		CPU_ZERO(&set);
		CPU_SET((int)(w->idx % (ncpu > 0 ? ncpu : 1)), &set);
		pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	}
	pthread_t th;

	atomic_fetch_add(&rt->threads, 1);
	if (pthread_create(&th, &a, worker_main, w)) {
		fprintf(stderr, "fiber runtime: pthread_create failed\n");
		exit(2);
	}
	pthread_attr_destroy(&a);
}

static struct frt *wk_rt;   /* one runtime at a time */

static void *worker_main(void *arg)
{
	struct wk *w = arg;
	struct frt *rt = wk_rt;

	cur_wk = w;
	w->th = pthread_self();   /* joined by frt_join() if it is the last */
#ifdef FIBER_TSAN
	sched_tsan = __tsan_get_current_fiber();
#endif
	w->runs_left = rt->cfg.worker_life;
	while (!atomic_load_explicit(&rt->stop, memory_order_relaxed)) {
		struct fiber *f = rq_pop(&w->q);

		if (!f) {
			if (!atomic_load_explicit(&rt->live, memory_order_acquire))
				break;
			sched_yield();
			continue;
		}
		run_one(w, f);
		if (f->done) {
			atomic_fetch_sub_explicit(&rt->live, 1, memory_order_release);
		} else {
			struct wk *to = w;

			if (rt->cfg.workers > 1 && rt->cfg.migrate_p > 0 &&
			    (rnd(&w->rng) % 1000000u) < (unsigned int)(rt->cfg.migrate_p * 1e6))
				to = &rt->w[(w->idx + 1 + (int)(rnd(&w->rng) %
						(unsigned int)(rt->cfg.workers - 1))) % rt->cfg.workers];
			rq_push(&to->q, f);
		}
		if (rt->cfg.worker_life && --w->runs_left <= 0) {
			/* Churn: a new thread takes this worker's queue; this one
			 * exits (registered: the library's destructor unregisters
			 * it and hands its blocked list to its leaf). */
			pthread_detach(pthread_self());
			worker_spawn(rt, w);
			return NULL;
		}
	}
	pthread_mutex_lock(&rt->join_mu);
	atomic_fetch_add(&rt->exited, 1);
	pthread_cond_broadcast(&rt->join_cv);
	pthread_mutex_unlock(&rt->join_mu);
	return NULL;
}

struct frt *frt_create(const struct frt_config *cfg)
{
	struct frt *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->cfg = *cfg;
	if (rt->cfg.workers < 1)
		rt->cfg.workers = 1;
	if (posix_memalign((void **)&rt->w, 64, sizeof(struct wk) * (size_t)rt->cfg.workers)) {
		free(rt);
		return NULL;
	}
	memset(rt->w, 0, sizeof(struct wk) * (size_t)rt->cfg.workers);
	for (int k = 0; k < rt->cfg.workers; k++) {
		pthread_spin_init(&rt->w[k].q.lock, PTHREAD_PROCESS_PRIVATE);
		rt->w[k].idx = k;
		rt->w[k].rng = cfg->seed * 2654435761u + (unsigned int)k * 40503u + 1;
	}
	pthread_mutex_init(&rt->join_mu, NULL);
	pthread_cond_init(&rt->join_cv, NULL);
	pthread_mutex_init(&rt->all_mu, NULL);
	return rt;
}

struct fiber *frt_spawn(struct frt *rt, fiber_fn fn, void *arg, uint64_t id, const char *name)
{
	struct fiber *f = calloc(1, sizeof(*f));
	void **sp;

	if (!f || !(f->stack = malloc(STACK_SIZE))) {
		fprintf(stderr, "fiber runtime: out of memory\n");
		exit(2);
	}
	trcu_task_init(&f->task, id, name);
	f->fn = fn;
	f->arg = arg;
	f->rt = rt;
	/* The initial frame: fiber_switch() pops it and returns into the
	 * trampoline, which calls fiber_main(f) on a 16-byte aligned stack. */
	sp = (void **)(((uintptr_t)(f->stack + STACK_SIZE) & ~(uintptr_t)15) - 16);
	sp -= FRAME_WORDS;
	memset(sp, 0, FRAME_WORDS * sizeof(void *));
#if defined(__x86_64__)
	((uint32_t *)sp)[0] = 0x1f80;             /* MXCSR default */
	((uint16_t *)sp)[2] = 0x037f;             /* x87 control word default */
	sp[4] = f;                                /* r12 */
	sp[7] = (void *)fiber_trampoline;         /* return address */
	/* After the ret rsp is sp + 8 words, 16-byte aligned: the
	 * trampoline's call enters fiber_main() as the ABI wants. */
#else
	sp[0] = f;                                /* x19 */
	sp[11] = (void *)fiber_trampoline;        /* x30 */
#endif
	f->sp = sp;
#ifdef FIBER_TSAN
	f->tsan = __tsan_create_fiber(0);
#endif
	pthread_mutex_lock(&rt->all_mu);
	if (rt->nall == rt->capall) {
		rt->capall = rt->capall ? 2 * rt->capall : 64;
		rt->all = realloc(rt->all, sizeof(*rt->all) * (size_t)rt->capall);
		if (!rt->all) {
			fprintf(stderr, "fiber runtime: out of memory\n");
			exit(2);
		}
	}
	rt->all[rt->nall++] = f;
	pthread_mutex_unlock(&rt->all_mu);
	atomic_fetch_add(&rt->live, 1);
	rq_push(&rt->w[id % (uint64_t)rt->cfg.workers].q, f);
	return f;
}

void frt_start(struct frt *rt)
{
	wk_rt = rt;
	for (int k = 0; k < rt->cfg.workers; k++)
		worker_spawn(rt, &rt->w[k]);
}

void frt_join(struct frt *rt)
{
	pthread_mutex_lock(&rt->join_mu);
	while (atomic_load(&rt->exited) < rt->cfg.workers)
		pthread_cond_wait(&rt->join_cv, &rt->join_mu);
	pthread_mutex_unlock(&rt->join_mu);
	/* Each worker's last thread (churned ones detached themselves). */
	for (int k = 0; k < rt->cfg.workers; k++)
		pthread_join(rt->w[k].th, NULL);
}

void frt_destroy(struct frt *rt)
{
	for (long i = 0; i < rt->nall; i++) {
		trcu_task_exit(&rt->all[i]->task);
#ifdef FIBER_TSAN
		__tsan_destroy_fiber(rt->all[i]->tsan);
#endif
		free(rt->all[i]->stack);
		free(rt->all[i]);
	}
	free(rt->all);
	free(rt->w);
	free(rt);
}

long frt_worker_threads(struct frt *rt)
{
	return atomic_load(&rt->threads);
}

unsigned long frt_runs(struct frt *rt)
{
	return atomic_load(&rt->runs);
}
