/* SPDX-License-Identifier: MIT */
/*
 * A small M:N fiber runtime for the task-reader tools (torture's task
 * readers, `seeds 002`, refscale's task pair): N worker threads, each with
 * its own run queue (its lock on its own cache line), fibers that yield
 * back to whichever worker runs them and may be moved to another worker's
 * queue at each yield.  The context switch is hand-written (x86-64,
 * arm64: callee-saved registers and the stack pointer; no system call),
 * unlike swapcontext(), which makes an rt_sigprocmask() call per switch.  The runtime calls treercu's scheduler
 * hooks around every run of a fiber, as an application's runtime would.
 */
#ifndef TREERCU_TOOL_FIBER_H
#define TREERCU_TOOL_FIBER_H

#include <stdbool.h>
#include <stdint.h>

#include <treercu/task.h>

struct frt;
struct fiber;
typedef void (*fiber_fn)(struct fiber *f, void *arg);

struct frt_config {
	int workers;             /* worker threads */
	double migrate_p;        /* probability a yield moves the fiber to another worker */
	unsigned int seed;
	int pin;                 /* 1: pin worker k to CPU k % ncpu */
	/* Worker churn: a worker exits (unregistering, its blocked list going
	 * to its leaf) after this many runs and a new thread takes its queue;
	 * 0: never. */
	long worker_life;
};

struct frt *frt_create(const struct frt_config *cfg);
/* Queue a fiber on worker (id % workers); before frt_start() or from a
 * fiber. */
struct fiber *frt_spawn(struct frt *rt, fiber_fn fn, void *arg, uint64_t id, const char *name);
void frt_start(struct frt *rt);
/* Wait until every fiber returned, stop the workers; then free it all. */
void frt_join(struct frt *rt);
void frt_destroy(struct frt *rt);

/* Inside a fiber: back to the scheduler, which runs it again later (on
 * this worker or, with migrate_p, another).  noinline: it reads the
 * worker it runs on now. */
void fiber_yield(void);
struct trcu_task *fiber_task(struct fiber *f);
/* Worker threads started so far (churn included), runs done. */
long frt_worker_threads(struct frt *rt);
unsigned long frt_runs(struct frt *rt);
/* The calling worker's index, inside a fiber. */
int fiber_worker(void);

#endif
