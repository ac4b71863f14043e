/* SPDX-License-Identifier: MIT */
/*
 * Task readers (include/treercu/task.h): a task switched out inside its
 * read-side section holds every grace period that started before its
 * section's end, wherever it is queued (worker list, node list), whatever
 * happens meanwhile (promotion, a GP in progress, expedited GPs, resuming
 * on other workers, its worker exiting, every worker gone, a tree reshape,
 * a placement change), and no longer once it unlocks.  The switch-out
 * states, the early return, the stall message and exit inside a section.
 *
 * Workers are threads of a small pool that run jobs on request; a "task"
 * here needs no stack of its own: its section state is the trcu_task, and
 * the hooks are called around the jobs as a scheduler would.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <treercu/task.h>

#define CHECK_WANT_DEATH
#include "check.h"
#include "internal.h"
#include "task.h"

#define NW 3

/* ---- A pool of worker threads ---------------------------------------------- */

struct worker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void (*fn)(void *);
	void *arg;
	bool busy;
	int tid;
};

static struct worker pool[NW];

static void *worker_main(void *p)
{
	struct worker *w = p;

	w->tid = sys_gettid();
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->fn)
			pthread_cond_wait(&w->cv, &w->mu);
		w->fn(w->arg);
		w->fn = NULL;
		pthread_cond_broadcast(&w->cv);
	}
	return NULL;
}

static void run_on(int k, void (*fn)(void *), void *arg)
{
	struct worker *w = &pool[k];

	pthread_mutex_lock(&w->mu);
	w->fn = fn;
	w->arg = arg;
	pthread_cond_broadcast(&w->cv);
	while (w->fn)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

static void pool_start(void)
{
	for (int k = 0; k < NW; k++) {
		pthread_mutex_init(&pool[k].mu, NULL);
		pthread_cond_init(&pool[k].cv, NULL);
		CHECK(pthread_create(&pool[k].th, NULL, worker_main, &pool[k]) == 0);
	}
}

/* Jobs: what a task does on a worker, between the scheduler's hooks. */
static void job_lock_out(void *p)       /* enter a section, switched out inside */
{
	struct trcu_task *t = p;

	trcu_task_switch_in(t);
	trcu_task_read_lock(t);
	trcu_task_switch_out(t);
}

static void job_lock2_out(void *p)      /* depth 2, switched out inside */
{
	struct trcu_task *t = p;

	trcu_task_switch_in(t);
	trcu_task_read_lock(t);
	trcu_task_read_lock(t);
	trcu_task_switch_out(t);
}

static void job_unlock(void *p)         /* resume, leave the section */
{
	struct trcu_task *t = p;

	trcu_task_switch_in(t);
	trcu_task_read_unlock(t);
	CHECK(!trcu_task_read_lock_held(t));
	trcu_task_switch_out(t);
}

static void job_unlock_one(void *p)     /* resume, leave one level */
{
	struct trcu_task *t = p;

	trcu_task_switch_in(t);
	trcu_task_read_unlock(t);
	CHECK(trcu_task_read_lock_held(t));
	trcu_task_switch_out(t);
}

static void job_unlock_all(void *p)     /* resume, leave every level */
{
	struct trcu_task *t = p;

	trcu_task_switch_in(t);
	while (trcu_task_read_lock_held(t))
		trcu_task_read_unlock(t);
	trcu_task_switch_out(t);
}

static void job_plain_nested(void *p)   /* resume inside, plain nested section */
{
	struct trcu_task *t = p;

	trcu_task_switch_in(t);
	CHECK(rcu_read_lock_held());
	rcu_read_lock();
	rcu_read_unlock();
	CHECK(trcu_task_read_lock_held(t));
	trcu_task_switch_out(t);
}

/* ---- Grace periods in the background ----------------------------------------- */

struct gp_waiter {
	pthread_t th;
	bool expedited;
	atomic_bool done;
};

static void *gp_waiter_main(void *p)
{
	struct gp_waiter *g = p;

	if (g->expedited)
		synchronize_rcu_expedited();
	else
		synchronize_rcu();
	atomic_store(&g->done, true);
	return NULL;
}

static void gp_start(struct gp_waiter *g, bool exp)
{
	g->expedited = exp;
	atomic_store(&g->done, false);
	CHECK(pthread_create(&g->th, NULL, gp_waiter_main, g) == 0);
}

/* The GP must still be waiting: a blocked task holds it. */
static void gp_still_waiting(struct gp_waiter *g, int ms)
{
	usleep((useconds_t)ms * 1000);
	CHECK(!atomic_load(&g->done));
}

static void gp_join(struct gp_waiter *g)
{
	CHECK_WITHIN_MS(atomic_load(&g->done), 60000);
	pthread_join(g->th, NULL);
}

static bool gp_in_progress_inited(void)
{
	struct rcu_tree *t = atomic_load(&rcu_state.tree);
	struct rcu_node *root = &t->nodes[0];
	bool ret;

	if (!rcu_seq_state(atomic_load(&rcu_state.gp_seq)))
		return false;
	pthread_mutex_lock(&root->lock);
	ret = root->gp_seq == atomic_load(&rcu_state.gp_seq) && root->qsmask;
	pthread_mutex_unlock(&root->lock);
	return ret;
}

static int where(struct trcu_task *t)
{
	return (int)__atomic_load_n(&t->where_kind, __ATOMIC_RELAXED);
}

static void stats(struct rcu_task_stats_snap *s)
{
	rcu_task_stats_get(s);
}

/* No task left on any list of the current tree. */
static void check_lists_empty(void)
{
	struct rcu_tree *t = atomic_load(&rcu_state.tree);
	int l = t->levels - 1;

	for (int j = 0; j < t->level_cnt[l]; j++) {
		struct rcu_node *leaf = &t->nodes[t->level_first[l] + j];

		pthread_mutex_lock(&leaf->lock);
		CHECK(!leaf->blkd_head && !leaf->gp_tasks);
		pthread_mutex_unlock(&leaf->lock);
	}
}

static void set_placement(long v)
{
	CHECK(trcu_set_tunable("per_worker_blocked_lists", v) == 0);
}

/* ---- The tests ------------------------------------------------------------------ */

/* Not in a section / first block / already blocked, in both placements;
 * the worker-list early return takes no node lock. */
static void test_switch_out_states(long placement)
{
	struct trcu_task t;
	struct rcu_task_stats_snap a, b;

	check_phase = placement ? "switch-out states (worker)" : "switch-out states (node)";
	printf("%s\n", check_phase);
	set_placement(placement);
	trcu_task_init(&t, 1, "states");
	synchronize_rcu();   /* idle from here: no GP in progress */
	stats(&a);
	atomic_store(&rcu_task_lock_timing, true);
	/* Not in a section: nothing queued. */
	trcu_task_switch_in(&t);
	trcu_task_read_lock(&t);
	trcu_task_read_unlock(&t);
	trcu_task_switch_out(&t);
	stats(&b);
	CHECK_EQ(b.enq_worker + b.enq_node, a.enq_worker + a.enq_node);
	CHECK_EQ(where(&t), 0);
	/* First block. */
	run_on(0, job_lock_out, &t);
	stats(&b);
	CHECK(t.nest_state == (TRCU_TASK_BLOCKED | 1));
	CHECK_EQ(where(&t), placement ? 1 : 2);
	CHECK_EQ(placement ? b.enq_worker - a.enq_worker : b.enq_node - a.enq_node, 1);
	/* Already blocked: resumed elsewhere, nested plain section, out again:
	 * not queued twice. */
	run_on(1, job_plain_nested, &t);
	stats(&b);
	CHECK_EQ(b.enq_worker + b.enq_node, a.enq_worker + a.enq_node + 1);
	/* Unlock on a third worker. */
	run_on(2, job_unlock, &t);
	stats(&b);
	atomic_store(&rcu_task_lock_timing, false);
	CHECK_EQ(where(&t), 0);
	CHECK_EQ(t.nest_state, 0);
	if (placement) {
		CHECK_EQ(b.early_returns - a.early_returns, 1);
		/* The seed's claim: no node lock per blocked section while no
		 * GP is in progress. */
		CHECK_EQ(b.node_lock_acq - a.node_lock_acq, 0);
	} else {
		CHECK_EQ(b.node_dequeues - a.node_dequeues, 1);
		CHECK_EQ(b.node_lock_acq - a.node_lock_acq, 2);
	}
	check_lists_empty();
	trcu_task_exit(&t);
}

/* A task on a worker list is promoted at GP start and holds the GP. */
static void test_promotion(void)
{
	struct trcu_task t;
	struct gp_waiter g;
	struct rcu_task_stats_snap a, b;

	check_phase = "promotion";
	printf("%s\n", check_phase);
	set_placement(1);
	trcu_task_init(&t, 2, "promoted");
	synchronize_rcu();
	stats(&a);
	run_on(0, job_lock_out, &t);
	CHECK_EQ(where(&t), 1);
	gp_start(&g, false);
	gp_still_waiting(&g, 300);
	stats(&b);
	CHECK_EQ(b.promoted - a.promoted, 1);
	CHECK_EQ(where(&t), 2);
	run_on(1, job_unlock, &t);
	gp_join(&g);
	check_lists_empty();
	trcu_task_exit(&t);
}

/* A task that switches out during a GP (normal or expedited) goes straight
 * to the node, and blocks that GP when its section began before it. */
static atomic_bool reader_hold, reader_in;

static void *thread_reader(void *p)
{
	(void)p;
	rcu_read_lock();
	atomic_store(&reader_in, true);
	while (atomic_load(&reader_hold))
		usleep(1000);
	rcu_read_unlock();
	return NULL;
}

static void job_lock(void *p)
{
	struct trcu_task *t = p;

	trcu_task_switch_in(t);
	trcu_task_read_lock(t);
}

static void job_out(void *p)
{
	trcu_task_switch_out(p);
}

static void test_node_during_gp(bool exp)
{
	struct trcu_task t;
	struct gp_waiter g;
	struct rcu_task_stats_snap a, b;
	pthread_t rd;

	check_phase = exp ? "straight to the node (expedited GP)" : "straight to the node (GP)";
	printf("%s\n", check_phase);
	set_placement(1);
	trcu_task_init(&t, 3, "during-gp");
	synchronize_rcu();
	stats(&a);
	atomic_store(&reader_hold, true);
	atomic_store(&reader_in, false);
	CHECK(pthread_create(&rd, NULL, thread_reader, NULL) == 0);
	CHECK_WITHIN_MS(atomic_load(&reader_in), 10000);
	run_on(0, job_lock, &t);            /* section begins before the GP */
	gp_start(&g, exp);
	CHECK_WITHIN_MS(gp_in_progress_inited(), 10000);
	run_on(0, job_out, &t);             /* switched out during the GP */
	stats(&b);
	CHECK_EQ(b.enq_node - a.enq_node, 1);
	CHECK_EQ(b.enq_worker - a.enq_worker, 0);
	CHECK_EQ(where(&t), 2);
	atomic_store(&reader_hold, false);
	pthread_join(rd, NULL);
	gp_still_waiting(&g, 300);
	run_on(1, job_unlock, &t);
	gp_join(&g);
	check_lists_empty();
	trcu_task_exit(&t);
}

/* Resume and unlock on every other worker, in both placements, with GPs
 * between (promotion, node path). */
static void test_unlock_every_worker(void)
{
	struct trcu_task t;

	check_phase = "resume and unlock on every other worker";
	printf("%s\n", check_phase);
	trcu_task_init(&t, 4, "wanderer");
	for (long pl = 0; pl <= 1; pl++) {
		set_placement(pl);
		for (int from = 0; from < NW; from++) {
			for (int to = 0; to < NW; to++) {
				struct gp_waiter g;

				if (to == from)
					continue;
				run_on(from, job_lock2_out, &t);
				if ((from + to) & 1) {
					gp_start(&g, to & 1);
					gp_still_waiting(&g, 20);
					run_on(to, job_unlock_one, &t);
					CHECK(!atomic_load(&g.done));
					run_on(to, job_unlock, &t);
					gp_join(&g);
				} else {
					run_on(to, job_unlock_all, &t);
				}
				CHECK_EQ(where(&t), 0);
			}
		}
	}
	synchronize_rcu();
	check_lists_empty();
	trcu_task_exit(&t);
}

/* The outermost unlock races GP init's promotion pass (delayed by the
 * test hook to widen the window): every GP ends, no task is lost or
 * left, and the counts add up. */
static atomic_int promote_delay_us;

static void promote_delay(void)
{
	int us = atomic_load(&promote_delay_us);

	if (us)
		usleep((useconds_t)us);
}

static void test_unlock_racing_promotion(void)
{
	struct trcu_task t;
	struct rcu_task_stats_snap a, b;

	check_phase = "unlock racing promotion";
	printf("%s\n", check_phase);
	set_placement(1);
	trcu_task_init(&t, 5, "racer");
	rcu_task_test_promote_hook = promote_delay;
	stats(&a);
	for (int i = 0; i < 200; i++) {
		struct gp_waiter g;

		atomic_store(&promote_delay_us, i % 4 == 0 ? 0 : 50 * (i % 7));
		run_on(0, job_lock_out, &t);
		gp_start(&g, i & 1);
		if (i % 3)
			usleep((useconds_t)(i % 5) * 40);
		run_on(1 + (i & 1), job_unlock, &t);
		gp_join(&g);
		CHECK_EQ(where(&t), 0);
	}
	rcu_task_test_promote_hook = NULL;
	synchronize_rcu();
	stats(&b);
	/* Each blocked section left its worker list by exactly one way. */
	CHECK_EQ(b.enq_worker - a.enq_worker,
		 (b.early_returns - a.early_returns) + (b.promoted - a.promoted));
	CHECK_EQ((b.enq_worker - a.enq_worker) + (b.enq_node - a.enq_node), 200);
	printf("  200 rounds: %lu early returns, %lu promoted, %lu straight to the node\n",
	       b.early_returns - a.early_returns, b.promoted - a.promoted,
	       b.enq_node - a.enq_node);
	check_lists_empty();
	trcu_task_exit(&t);
}

/* A worker exits with tasks on its list: they move to its leaf and keep
 * holding GPs. */
static struct trcu_task exit_tasks[3];

static void *exiting_worker(void *p)
{
	(void)p;
	for (int i = 0; i < 3; i++)
		job_lock_out(&exit_tasks[i]);
	return NULL;   /* exits registered: the destructor unregisters */
}

static void test_worker_exit(void)
{
	struct gp_waiter g;
	pthread_t th;

	check_phase = "worker exit with tasks queued";
	printf("%s\n", check_phase);
	set_placement(1);
	synchronize_rcu();
	for (int i = 0; i < 3; i++)
		trcu_task_init(&exit_tasks[i], 10 + (uint64_t)i, "orphan");
	CHECK(pthread_create(&th, NULL, exiting_worker, NULL) == 0);
	pthread_join(th, NULL);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(where(&exit_tasks[i]), 2);   /* handed to the leaf */
	gp_start(&g, false);
	gp_still_waiting(&g, 300);
	run_on(0, job_unlock, &exit_tasks[0]);
	run_on(1, job_unlock, &exit_tasks[2]);
	gp_still_waiting(&g, 100);
	run_on(2, job_unlock, &exit_tasks[1]);
	gp_join(&g);
	check_lists_empty();
	for (int i = 0; i < 3; i++)
		trcu_task_exit(&exit_tasks[i]);
}

/* Every worker gone (no online slot at all) with tasks blocked: a
 * synchronize_rcu() from a thread that never registered still waits.
 * In a child process, so that no pool worker is online. */
static atomic_bool child_gp_done;

static void *child_sync(void *p)
{
	(void)p;
	synchronize_rcu();
	atomic_store(&child_gp_done, true);
	return NULL;
}

static void *child_resumer(void *p)
{
	(void)p;
	for (int i = 0; i < 3; i++)
		job_unlock(&exit_tasks[i]);
	trcu_unregister_thread();
	return NULL;
}

static void all_workers_gone_child(void)
{
	pthread_t th;

	for (long pl = 1; pl >= 0; pl--) {
		set_placement(pl);
		for (int i = 0; i < 3; i++)
			trcu_task_init(&exit_tasks[i], 20 + (uint64_t)i, "stranded");
		CHECK(pthread_create(&th, NULL, exiting_worker, NULL) == 0);
		pthread_join(th, NULL);
		CHECK_EQ(rcu_slot_count(), 0);
		atomic_store(&child_gp_done, false);
		CHECK(pthread_create(&th, NULL, child_sync, NULL) == 0);
		usleep(300 * 1000);
		CHECK(!atomic_load(&child_gp_done));
		{
			pthread_t r;

			CHECK(pthread_create(&r, NULL, child_resumer, NULL) == 0);
			pthread_join(r, NULL);
		}
		CHECK_WITHIN_MS(atomic_load(&child_gp_done), 60000);
		pthread_join(th, NULL);
		for (int i = 0; i < 3; i++)
			trcu_task_exit(&exit_tasks[i]);
	}
	fprintf(stderr, "all-workers-gone: ok\n");
}

static void test_all_workers_gone(void)
{
	check_phase = "all workers gone with tasks blocked";
	printf("%s\n", check_phase);
	expect_message(all_workers_gone_child, "all-workers-gone: ok");
}

/* The tree is reshaped (fanout_leaf 1, then back) with tasks blocked on
 * worker and node lists: the lists move with them and keep holding GPs. */
static void test_reshape(void)
{
	struct trcu_task tw, tn;
	long fl;

	check_phase = "reshape with tasks blocked";
	printf("%s\n", check_phase);
	CHECK(trcu_get_tunable("fanout_leaf", &fl) == 0);
	trcu_task_init(&tw, 30, "on-worker");
	trcu_task_init(&tn, 31, "on-node");
	for (int round = 0; round < 2; round++) {
		struct rcu_tree *before;
		struct gp_waiter g;

		synchronize_rcu();
		set_placement(1);
		run_on(0, job_lock_out, &tw);
		set_placement(0);
		run_on(1, job_lock_out, &tn);
		CHECK_EQ(where(&tw), 1);
		CHECK_EQ(where(&tn), 2);
		before = atomic_load(&rcu_state.tree);
		CHECK(trcu_set_tunable("fanout_leaf", round ? fl : 1) == 0);
		gp_start(&g, round);
		gp_still_waiting(&g, 300);
		CHECK(atomic_load(&rcu_state.tree) != before);   /* reshaped */
		for (struct trcu_task *t = &tw; t; t = t == &tw ? &tn : NULL) {
			struct rcu_tree *now = atomic_load(&rcu_state.tree);
			char *n = (char *)__atomic_load_n(&t->node, __ATOMIC_RELAXED);

			CHECK(n >= (char *)now->nodes && n < (char *)(now->nodes + now->nr_nodes));
		}
		run_on(2, job_unlock, &tn);
		gp_still_waiting(&g, 100);
		run_on(2, job_unlock, &tw);
		gp_join(&g);
		check_lists_empty();
	}
	set_placement(1);
	trcu_task_exit(&tw);
	trcu_task_exit(&tn);
}

/* The placement flips while tasks are blocked: each unlock uses where its
 * task was queued. */
static void test_placement_change(void)
{
	struct trcu_task tw, tn;
	struct gp_waiter g;

	check_phase = "placement change with tasks blocked";
	printf("%s\n", check_phase);
	trcu_task_init(&tw, 40, "was-worker");
	trcu_task_init(&tn, 41, "was-node");
	synchronize_rcu();
	set_placement(1);
	run_on(0, job_lock_out, &tw);
	set_placement(0);
	run_on(0, job_lock_out, &tn);
	set_placement(1);
	run_on(1, job_unlock, &tn);      /* node path under worker placement */
	set_placement(0);
	run_on(1, job_unlock, &tw);      /* early return under node placement */
	synchronize_rcu();
	run_on(0, job_lock_out, &tn);    /* node placement now */
	set_placement(1);
	gp_start(&g, false);
	gp_still_waiting(&g, 200);
	run_on(2, job_unlock, &tn);
	gp_join(&g);
	check_lists_empty();
	trcu_task_exit(&tw);
	trcu_task_exit(&tn);
}

/* Exit inside a section: a warning naming the task, then the section is
 * closed (GPs end). */
static void exit_in_section_child(void)
{
	struct trcu_task t, r;

	trcu_task_init(&t, 50, "leaver");
	job_lock2_out(&t);        /* blocked, on this thread's list */
	trcu_task_exit(&t);
	synchronize_rcu();
	trcu_task_init(&r, 51, "runner");
	trcu_task_switch_in(&r);
	trcu_task_read_lock(&r);  /* running, switched in */
	trcu_task_exit(&r);
	synchronize_rcu();
	check_lists_empty();
}

static void test_exit_in_section(void)
{
	check_phase = "task exit inside a section";
	printf("%s\n", check_phase);
	expect_message(exit_in_section_child,
		       "task 'leaver' (id 50) exited inside an RCU read-side critical section "
		       "(nesting depth 2); closing it");
	expect_message(exit_in_section_child,
		       "task 'runner' (id 51) exited inside an RCU read-side critical section "
		       "(nesting depth 1); closing it");
}

/* The stall warning names a blocked task: name, id, worker, depth. */
static char stall_msg[8192];
static pthread_mutex_t stall_mu = PTHREAD_MUTEX_INITIALIZER;

static void stall_hook(const char *msg, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&stall_mu);
	if (strlen(stall_msg) + strlen(msg) < sizeof(stall_msg))
		strcat(stall_msg, msg);
	pthread_mutex_unlock(&stall_mu);
}

static bool stall_said(const char *s)
{
	bool ret;

	pthread_mutex_lock(&stall_mu);
	ret = strstr(stall_msg, s) != NULL;
	pthread_mutex_unlock(&stall_mu);
	return ret;
}

static void test_stall_names_task(void)
{
	struct trcu_task t;
	struct gp_waiter g;
	char want[256];
	long old;

	check_phase = "stall message names the task";
	printf("%s\n", check_phase);
	CHECK(trcu_get_tunable("stall_timeout_ms", &old) == 0);
	CHECK(trcu_set_tunable("stall_timeout_ms", 100) == 0);
	trcu_set_stall_handler(stall_hook, NULL);
	set_placement(1);
	trcu_task_init(&t, 4711, "conn-4711");
	synchronize_rcu();
	run_on(0, job_lock2_out, &t);
	gp_start(&g, false);
	snprintf(want, sizeof(want),
		 "task 'conn-4711' (id 4711) blocked in a read-side critical section for at least");
	CHECK_WITHIN_MS(stall_said(want), 30000);
	snprintf(want, sizeof(want), "(switched out on thread %d, depth 2)", pool[0].tid);
	CHECK(stall_said(want));
	pthread_mutex_lock(&stall_mu);
	printf("  %s", strstr(stall_msg, "treercu: INFO: rcu detected stall: task"));
	pthread_mutex_unlock(&stall_mu);
	run_on(1, job_unlock_all, &t);
	gp_join(&g);
	trcu_set_stall_handler(NULL, NULL);
	CHECK(trcu_set_tunable("stall_timeout_ms", old) == 0);
	trcu_task_exit(&t);
}

int main(void)
{
	signal(SIGALRM, check_hang_handler);
	alarm(280);
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_all_workers_gone();   /* first: forks before the pool exists */
	test_exit_in_section();
	pool_start();
	test_switch_out_states(1);
	test_switch_out_states(0);
	test_promotion();
	test_node_during_gp(false);
	test_node_during_gp(true);
	test_unlock_every_worker();
	test_unlock_racing_promotion();
	test_worker_exit();
	test_reshape();
	test_placement_change();
	test_stall_names_task();
	printf("ok\n");
	_exit(0);
}
