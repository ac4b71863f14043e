/* SPDX-License-Identifier: MIT */
/*
 * Task readers (include/treercu/task.h): fibers on worker threads of their
 * own (tools/common/fiber.h) read as the readers of pipeline.c do, but
 * switch out inside their sections (and often move to another worker)
 * between taking the element and checking it, in nested sections too, with
 * the trcu_task_ read side or the plain names in turn.  The blocked-list
 * placement and fanout_leaf rotate at run time, and the workers exit and
 * are replaced now and then with tasks queued on their lists.  `--busted 3`
 * makes grace-period init skip the promotion of worker lists: the run must
 * fail (pipe counts above 1, grace periods ending inside sections).
 */
#include <stdlib.h>
#include <unistd.h>

#include <treercu/task.h>

#include "fiber.h"
#include "task.h"
#include "torture.h"

struct tk_state tk;

/* ---- Task readers ------------------------------------------------------- */

struct task_rd {
	struct rd r;
	struct fiber *f;
};

/*
 * Not inlined: the plain names read the thread's state through a thread
 * pointer that the compiler may keep across a switch within one function,
 * and the worker it leads to may have exited since (include/treercu/task.h,
 * "Plain names in task code"); a function of its own reads it afresh.
 */
static __attribute__((noinline)) void task_lock(struct trcu_task *t, bool plain)
{
	if (plain)
		rcu_read_lock();
	else
		trcu_task_read_lock(t);
}

static __attribute__((noinline)) void task_unlock(struct trcu_task *t, bool plain)
{
	if (plain)
		rcu_read_unlock();
	else
		trcu_task_read_unlock(t);
}

/* one_read() with switches inside the section: the element is taken, the
 * task switched out (queued), resumed (maybe on another worker), and only
 * then checked. */
static void task_one_read(struct task_rd *tr)
{
	struct rd *r = &tr->r;
	struct trcu_task *t = fiber_task(tr->f);
	unsigned long started, completed, seq;
	unsigned int x = tt_rnd(&r->rng);

	/* During a fwd_prog round (a call_rcu() flood whose push-back, and
	 * then its drain, count on grace periods ending), the sections stay
	 * short: a task
	 * switched out inside one holds every GP until its worker runs it
	 * again, which a starved worker may not do for seconds. */
	if (atomic_load(&cbt.flooding))
		x = (x & ~(8u | 16u | 32u)) | 0x200u;
	bool plain = x & 1, nest = (x & 6) == 0;
	struct read_cookie k;
	struct elem *p;
	int pipe;

	task_lock(t, plain);
	started = trcu_gp_seq();
	tt_cookie_take(&k, r->reads & 1);
	p = tt_read_pick(r);
	if (!p) {
		task_unlock(t, plain);
		fiber_yield();
		return;
	}
	seq = tt_check_elem(p);
	if (x & 8) {
		atomic_fetch_add_explicit(&tk.switches_in, 1, memory_order_relaxed);
		fiber_yield();               /* switched out inside the section */
	}
	if (nest) {
		task_lock(t, !plain);        /* nested, the other read side */
		if (x & 16)
			fiber_yield();
	}
	if ((x & 0x3e0) == 0)
		usleep(50);                  /* the worker sleeps with tasks queued */
	pipe = atomic_load_explicit(&p->pipe_count, memory_order_relaxed);
	if (nest)
		task_unlock(t, !plain);
	if (x & 32)
		fiber_yield();
	completed = tt_section_end_checks(p, seq, &k);
	task_unlock(t, plain);
	tt_rd_count(r, pipe, started, completed);
	if (x & 64)
		fiber_yield();               /* outside a section */
}

static void task_reader_fn(struct fiber *f, void *arg)
{
	struct task_rd *tr = arg;

	tr->f = f;
	while (!tt_stopping())
		task_one_read(tr);
	tt_rd_merge(&tr->r);
}

static struct task_rd *task_rds;

void start_task_readers(void)
{
	struct frt_config cfg = {
		.workers = (int)tk.workers, .migrate_p = 0.3, .seed = 0x5eed002u,
		.worker_life = 5000,
	};

	if (!tk.readers)
		return;
	if (trcu_get_tunable("fanout_leaf", &tk.fl_saved))
		tk.fl_saved = 16;
	if (trcu_get_tunable("per_worker_blocked_lists", &tk.pl_saved))
		tk.pl_saved = 1;
	if (tt.busted == 3) {
		/* Worker lists only, never promoted. */
		trcu_set_tunable("per_worker_blocked_lists", 1);
		atomic_store(&rcu_task_test_skip_promotion, true);
	}
	tk.frt = frt_create(&cfg);
	task_rds = calloc((size_t)tk.readers, sizeof(*task_rds));
	if (!tk.frt || !task_rds) {
		tt_fail(E_THREAD);
		return;
	}
	for (long i = 0; i < tk.readers; i++) {
		task_rds[i].r.rng = 0x7a5c0u + (unsigned int)i * 104729u;
		frt_spawn(tk.frt, task_reader_fn, &task_rds[i], (uint64_t)i, "torture-task");
	}
	frt_start(tk.frt);
}

/* Placement every 100 ms; fanout_leaf 1 and back every 300 ms. */
void rotate_task_knobs(uint64_t elapsed_ns)
{
	uint64_t ms = elapsed_ns / 1000000u;

	if (!tk.readers || !tk.rotate || tt.busted == 3)
		return;
	trcu_set_tunable("per_worker_blocked_lists", (long)(ms / 100 % 2));
	trcu_set_tunable("fanout_leaf", ms / 300 % 2 ? 1 : tk.fl_saved);
}

void stop_task_readers(void)
{
	if (!tk.frt)
		return;
	frt_join(tk.frt);
	/* The knobs back to their defaults. */
	atomic_store(&rcu_task_test_skip_promotion, false);
	trcu_set_tunable("per_worker_blocked_lists", tk.pl_saved);
	trcu_set_tunable("fanout_leaf", tk.fl_saved);
}

void task_report(void)
{
	struct rcu_task_stats_snap s;

	if (!tk.readers)
		return;
	rcu_task_stats_get(&s);
	printf("task readers: %ld fibers on %ld workers (%ld worker threads with churn), "
	       "%lu runs, %lu switched out inside a section; worker lists %lu, node lists "
	       "%lu, early returns %lu, promoted %lu, node dequeues %lu%s\n",
	       tk.readers, tk.workers, frt_worker_threads(tk.frt), frt_runs(tk.frt),
	       atomic_load(&tk.switches_in), s.enq_worker, s.enq_node, s.early_returns,
	       s.promoted, s.node_dequeues,
	       tk.rotate && tt.busted != 3 ? " (placement and fanout_leaf rotated)" : "");
}
