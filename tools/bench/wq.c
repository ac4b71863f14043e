/* SPDX-License-Identifier: MIT */
/*
 * treercu wq: the workqueue benchmark (the kernel's lib/test_workqueue.c in
 * batched-submit mode); experiments/wake_after_unlock.c runs it beside the
 * kernel patch's figures (`treercu seeds 001`).
 *
 * For each affinity scope: N producer threads (default 8), each standing
 * for one virtual CPU (trcu_wq_set_thread_cpu), submit M items (default
 * 200000) to one unbound workqueue in batches of B (default 16): queue B
 * items, timing every trcu_queue_work() call, then wait for the batch to
 * finish.  Reported: items/s (all items / wall time from the start signal to
 * the last completion) and p50/p90/p99 of the enqueue call.  The wake-up
 * placement (after the pool lock vs under it) alternates within
 * each scope, repeat after repeat (run_interleaved), and the tables give
 * the median over repeats and the spread ((max - min) / median).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <treercu/workqueue.h>

#include "common.h"
#include "tool.h"
#include "wq.h"

#define DFL_TOPOLOGY "cpus=8,smt=1,llc=8,numa=1"
#define NMODES 2      /* 0: wake under the lock (baseline), 1: deferred after it */
#define MAX_REPS 20

static const enum trcu_wq_affn bench_scopes[NSCOPES] = {
	TRCU_WQ_AFFN_CPU, TRCU_WQ_AFFN_SMT, TRCU_WQ_AFFN_CACHE_SHARD,
	TRCU_WQ_AFFN_CACHE, TRCU_WQ_AFFN_NUMA, TRCU_WQ_AFFN_SYSTEM,
};


struct bench_cfg {
	int producers, batch, reps;
	long items;
	char topology[128];
};

struct producer;

struct bench_item {
	struct trcu_work work;
	struct producer *p;
};

struct producer {
	pthread_t thread;
	int id;
	struct bench_cfg *cfg;
	struct trcu_workqueue *wq;
	struct bench_item *items;      /* cfg->batch of them */
	_Atomic uint32_t done;         /* futex: items of this batch finished */
	struct lat_hist *lat;
	_Atomic int *go;
	uint64_t end_ns;
	long refused;
};

/* One (scope, mode, repeat) result. */
struct bench_point {
	double items_s, p50, p90, p99;
};

struct bench_run {
	struct bench_cfg cfg;
	int scope_idx;
	struct bench_point pt[NSCOPES][NMODES][MAX_REPS];
	bool failed;
};

static void futex_wait_u32(_Atomic uint32_t *a, uint32_t v)
{
	syscall(SYS_futex, (uint32_t *)a, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake_u32(_Atomic uint32_t *a)
{
	syscall(SYS_futex, (uint32_t *)a, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void bench_fn(struct trcu_work *w)
{
	struct bench_item *it = (struct bench_item *)w;
	struct producer *p = it->p;

	/* Release: pairs with the producer's acquire load; the last one of a
	 * batch wakes it. */
	if (atomic_fetch_add_explicit(&p->done, 1, memory_order_release) + 1 ==
	    (uint32_t)p->cfg->batch)
		futex_wake_u32(&p->done);
}

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	long left = p->cfg->items;
	int b = p->cfg->batch;

	trcu_wq_set_thread_cpu(p->id % trcu_wq_nr_cpus());
	while (!atomic_load_explicit(p->go, memory_order_acquire))
		sched_yield();
	while (left > 0) {
		int n = left < b ? (int)left : b;

		atomic_store_explicit(&p->done, (uint32_t)(b - n), memory_order_relaxed);
		for (int i = 0; i < n; i++) {
			uint64_t t0 = now_ns(), t1;
			bool ok = trcu_queue_work(p->wq, &p->items[i].work);

			t1 = now_ns();
			lat_add(p->lat, t1 - t0);
			if (!ok) {
				/* cannot happen (each item is idle here); count it */
				p->refused++;
				atomic_fetch_add_explicit(&p->done, 1, memory_order_relaxed);
			}
		}
		for (;;) {
			/* Acquire: pairs with the release increment in bench_fn(). */
			uint32_t d = atomic_load_explicit(&p->done, memory_order_acquire);

			if (d == (uint32_t)b)
				break;
			futex_wait_u32(&p->done, d);
		}
		left -= n;
	}
	p->end_ns = now_ns();
	return NULL;
}

/* One measurement: every producer against a fresh workqueue of @scope. */
static int bench_once(struct bench_cfg *cfg, enum trcu_wq_affn scope, bool under_lock,
		      struct bench_point *out)
{
	struct producer *ps = calloc((size_t)cfg->producers, sizeof(*ps));
	struct lat_hist *all = malloc(sizeof(*all));
	struct trcu_workqueue *wq;
	_Atomic int go = 0;
	uint64_t start, end = 0;
	long refused = 0;
	int rc = 0;

	if (!ps || !all) {
		free(ps);
		free(all);
		return -1;
	}
	trcu_wq_set_wake_under_lock(under_lock);
	wq = trcu_alloc_workqueue_scope("bench_wq", TRCU_WQ_UNBOUND, 0, scope);
	if (!wq) {
		fprintf(stderr, "treercu wq: cannot allocate the workqueue: %s\n", strerror(errno));
		free(ps);
		free(all);
		return -1;
	}
	lat_init(all);
	for (int i = 0; i < cfg->producers; i++) {
		struct producer *p = &ps[i];

		p->id = i;
		p->cfg = cfg;
		p->wq = wq;
		p->go = &go;
		p->items = calloc((size_t)cfg->batch, sizeof(*p->items));
		p->lat = malloc(sizeof(*p->lat));
		if (!p->items || !p->lat) {
			rc = -1;
			break;
		}
		lat_init(p->lat);
		for (int k = 0; k < cfg->batch; k++) {
			TRCU_INIT_WORK(&p->items[k].work, bench_fn);
			p->items[k].p = p;
		}
	}
	for (int i = 0; i < cfg->producers && !rc; i++)
		if (pthread_create(&ps[i].thread, NULL, producer_main, &ps[i]))
			rc = -1;
	if (rc) {
		fprintf(stderr, "treercu wq: cannot start the producers\n");
		exit(1);
	}
	usleep(20000);   /* let the producers reach the start line */
	start = now_ns();
	/* Release: pairs with the producers' acquire load of go. */
	atomic_store_explicit(&go, 1, memory_order_release);
	for (int i = 0; i < cfg->producers; i++) {
		pthread_join(ps[i].thread, NULL);
		end = ps[i].end_ns > end ? ps[i].end_ns : end;
		lat_merge(all, ps[i].lat);
		refused += ps[i].refused;
	}
	trcu_flush_workqueue(wq);
	trcu_destroy_workqueue(wq);
	out->items_s = (double)cfg->producers * (double)cfg->items / ((double)(end - start) / 1e9);
	out->p50 = lat_pct(all, 50);
	out->p90 = lat_pct(all, 90);
	out->p99 = lat_pct(all, 99);
	for (int i = 0; i < cfg->producers; i++) {
		free(ps[i].items);
		free(ps[i].lat);
	}
	free(ps);
	free(all);
	if (refused) {
		fprintf(stderr, "treercu wq: %ld queueings refused (bug)\n", refused);
		return -1;
	}
	return 0;
}

static void bench_variant(int variant, int rep, void *arg)
{
	struct bench_run *r = arg;

	if (bench_once(&r->cfg, bench_scopes[r->scope_idx], variant == 0,
		       &r->pt[r->scope_idx][variant][rep]))
		r->failed = true;
}

/* Median and spread over the repeats of one (scope, mode). */
static void point_summary(struct bench_run *r, int s, int m, struct summary *tput,
			  double *p50, double *p90, double *p99)
{
	double v[MAX_REPS], a[MAX_REPS], b[MAX_REPS], c[MAX_REPS];
	int n = r->cfg.reps;

	for (int i = 0; i < n; i++) {
		v[i] = r->pt[s][m][i].items_s;
		a[i] = r->pt[s][m][i].p50;
		b[i] = r->pt[s][m][i].p90;
		c[i] = r->pt[s][m][i].p99;
	}
	summarize(v, (size_t)n, tput);
	*p50 = median_of(a, (size_t)n);
	*p90 = median_of(b, (size_t)n);
	*p99 = median_of(c, (size_t)n);
}

const struct tool_opt wq_opts[] = {
	TOPT_I("producers", "N", "threads", 1, 256, 8, 8, "producer threads queueing work items"),
	TOPT_I("items", "N", "work items", 1, 100000000, 200000, 30000,
	       "work items per producer per run"),
	TOPT_I("batch", "N", "work items", 1, 4096, 16, 16,
	       "items a producer queues between waits"),
	TOPT_I("reps", "N", "repeats", 1, MAX_REPS, 5, 4, "repeats of every mode"),
	TOPT_S("topology", "SPEC", "$TREERCU_WQ_TOPOLOGY, else " DFL_TOPOLOGY,
	       "the CPU topology the pools are built for, e.g. cpus=8,smt=1,llc=8,numa=1"),
	TOPT_END,
};

/* Parses the options, sets the topology and runs every scope. */
static int wq_bench_main(struct tool_opts *o, struct bench_run *r, const char *cmd)
{
	struct bench_cfg *c = &r->cfg;
	const char *topo;
	char desc[256];
	long v;
	double expected;

	tool_bind(o, wq_opts);
	opt_long(o, "producers", &v);
	c->producers = (int)v;
	opt_long(o, "items", &c->items);
	opt_long(o, "batch", &v);
	c->batch = (int)v;
	opt_long(o, "reps", &v);
	c->reps = (int)v;
	topo = opt_str(o, "topology");
	if (!topo)
		topo = getenv("TREERCU_WQ_TOPOLOGY");
	if (!topo || !*topo)
		topo = DFL_TOPOLOGY;
	snprintf(c->topology, sizeof(c->topology), "%s", topo);
	trcu_wq_shutdown();   /* a clean slate: the topology can only change now */
	if (trcu_wq_set_topology(topo)) {
		fprintf(stderr, "treercu %s: bad --topology \"%s\"\n", cmd, topo);
		return 2;
	}
	trcu_wq_topology_describe(desc, sizeof(desc));
	printf("treercu wq: %d producers x %ld items, batches of %d, %d repeats per mode, "
	       "unbound workqueue, max_active %d\n", c->producers, c->items, c->batch, c->reps,
	       TRCU_WQ_DFL_ACTIVE);
	printf("topology: %s\n", desc);
	for (int s = 0; s < NSCOPES; s++)
		printf("%s%s %d pod%s", s ? "," : "scopes:", trcu_wq_affn_name(bench_scopes[s]),
		       trcu_wq_nr_pods(bench_scopes[s]), trcu_wq_nr_pods(bench_scopes[s]) == 1 ? "" : "s");
	printf("\n\n");
	fflush(stdout);
	/* ~3 us per item on this kind of machine, both modes, every scope */
	expected = (double)c->producers * (double)c->items * 3e-6 * NMODES * NSCOPES * c->reps;
	{
		struct progress p;
		int done = 0;

		progress_start(&p, "treercu wq", expected);
		for (r->scope_idx = 0; r->scope_idx < NSCOPES; r->scope_idx++) {
			/* Modes alternate within each scope: A B, B A, A B... */
			for (int rep = 0; rep < c->reps; rep++) {
				for (int i = 0; i < NMODES; i++) {
					int m = rep % 2 == 0 ? i : NMODES - 1 - i;

					bench_variant(m, rep, r);
					progress_update(&p, (double)++done /
							(NSCOPES * NMODES * c->reps));
				}
			}
		}
		progress_done(&p);
	}
	trcu_wq_set_wake_under_lock(false);
	return r->failed ? 1 : 0;
}

static void print_tables(struct bench_run *r, struct json *j, const struct wq_seed *seed)
{
	static const char *const cols[] = { "scope", "under lock items/s", "spread",
					    "deferred items/s", "spread", "gain",
					    "seed base", "seed patched", "seed gain" };
	static const char *const lcols[] = { "scope", "mode", "p50 ns", "p90 ns", "p99 ns" };
	static const int widths[] = { 11, 10, 6, 10, 6, 7, 9, 9, 7 };
	static const int lwidths[] = { 11, 10, 7, 7, 7 };
	struct table t;

	tab_start(&t, seed ? 9 : 6, cols, widths);
	json_arr(j, "scopes");
	for (int s = 0; s < NSCOPES; s++) {
		struct summary tp[NMODES];
		double p50[NMODES], p90[NMODES], p99[NMODES];

		for (int m = 0; m < NMODES; m++)
			point_summary(r, s, m, &tp[m], &p50[m], &p90[m], &p99[m]);
		tab_cell(&t, "%s", trcu_wq_affn_name(bench_scopes[s]));
		tab_cell(&t, "%.0f", tp[0].median);
		tab_cell(&t, "%.0f%%", tp[0].spread);
		tab_cell(&t, "%.0f", tp[1].median);
		tab_cell(&t, "%.0f%%", tp[1].spread);
		tab_cell(&t, "%+.1f%%", (tp[1].median / tp[0].median - 1) * 100);
		if (seed) {
			tab_cell(&t, "%.0f", seed->base[s]);
			tab_cell(&t, "%.0f", seed->patched[s]);
			tab_cell(&t, "%+.1f%%", (seed->patched[s] / seed->base[s] - 1) * 100);
		}
		json_obj(j, NULL);
		json_str(j, "scope", trcu_wq_affn_name(bench_scopes[s]));
		json_int(j, "pods", trcu_wq_nr_pods(bench_scopes[s]));
		for (int m = 0; m < NMODES; m++) {
			json_obj(j, m ? "deferred" : "under_lock");
			json_summary(j, "items_per_s", &tp[m]);
			json_num(j, "p50_ns", p50[m]);
			json_num(j, "p90_ns", p90[m]);
			json_num(j, "p99_ns", p99[m]);
			json_end(j, '}');
		}
		json_num(j, "gain_pct", (tp[1].median / tp[0].median - 1) * 100);
		if (seed) {
			json_num(j, "seed_base_items_per_s", seed->base[s]);
			json_num(j, "seed_patched_items_per_s", seed->patched[s]);
		}
		json_end(j, '}');
	}
	json_end(j, ']');
	printf("\nenqueue latency (trcu_queue_work() call, median over repeats)%s%s\n\n",
	       seed ? "; " : "", seed ? seed->latency_note : "");
	tab_start(&t, 5, lcols, lwidths);
	for (int s = 0; s < NSCOPES; s++) {
		for (int m = 0; m < NMODES; m++) {
			struct summary tp;
			double p50, p90, p99;

			point_summary(r, s, m, &tp, &p50, &p90, &p99);
			tab_cell(&t, "%s", m ? "" : trcu_wq_affn_name(bench_scopes[s]));
			tab_cell(&t, "%s", m ? "deferred" : "under lock");
			tab_cell(&t, "%.0f", p50);
			tab_cell(&t, "%.0f", p90);
			tab_cell(&t, "%.0f", p99);
		}
	}
}

int wq_run(struct tool_opts *o, const char *cmd, const struct wq_seed *seed)
{
	struct bench_run *r = calloc(1, sizeof(*r));
	struct json j;
	int rc;

	if (!r)
		return 1;
	rc = wq_bench_main(o, r, cmd);
	if (rc == 2) {
		free(r);
		return 2;
	}
	if (json_open(&j, o, seed ? seed->json_stem : "wq")) {
		free(r);
		return 1;
	}
	json_str(&j, "command", cmd);
	json_str(&j, "topology", r->cfg.topology);
	json_int(&j, "producers", r->cfg.producers);
	json_int(&j, "items_per_producer", r->cfg.items);
	json_int(&j, "batch", r->cfg.batch);
	json_int(&j, "reps", r->cfg.reps);
	json_bool(&j, "quick", o->quick);
	print_tables(r, &j, seed);
	if (seed)
		printf("\n%s\n", seed->footnote);
	if (json_close(&j))
		rc = 1;
	trcu_wq_shutdown();
	free(r);
	return rc;
}

int cmd_wq(struct tool_opts *o)
{
	return wq_run(o, "wq", NULL);
}
