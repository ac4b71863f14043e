/* SPDX-License-Identifier: MIT */
/*
 * Callback benchmarks (`treercu scale --callbacks`, and part of every full
 * `scale` run): enqueue ns/call, end-to-end callbacks/s for 1 M callbacks,
 * rcu_barrier() latency idle and under a stream of retirements, and a
 * 2-producer flood (peak pending, peak RSS growth, callbacks run/s), for
 * every peer (peers.h) in the same run, interleaved: treercu (default and
 * QSBR threads), liburcu memb and qsbr, ck_epoch by default, or the ones
 * --peers names.  Every peer runs the same code around its retire() and
 * barrier(): each object is malloc()ed, retired, and freed by
 * peer_free_cb(), which counts it.  A QSBR thread reports a quiescent state
 * every PEER_QS_EVERY retirements and goes offline around its sleeps, as
 * the peers' workloads do.
 */
#define _GNU_SOURCE   /* malloc_trim */
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callbacks.h"
#include "common.h"
#include "goals.h"
#include "peers.h"
#include "results.h"

#define CB_OBJ 64                      /* object size, the peer's head first */
#define MAX_PROD 2

struct flood_res {
	double peak_pending, rss_growth, cbs_s, enq_s, drain_ms;
	bool capped;
};

struct cb_ctx {
	int reps, flood_reps, idle_k, load_k;
	int np, idx[PEER_MAX];                     /* peers measured, in list order */
	unsigned long e2e_n;
	double flood_s, cap_pending;
	void **objs;                               /* e2e_n objects of one run */
	double enq_ns[PEER_MAX][CB_MAX_REPS], e2e[PEER_MAX][CB_MAX_REPS];
	double idle_p50[PEER_MAX][CB_MAX_REPS], load_p50[PEER_MAX][CB_MAX_REPS];
	struct lat_hist idle[PEER_MAX], load[PEER_MAX];    /* merged over repeats */
	struct flood_res flood[PEER_MAX][CB_MAX_REPS];
	bool error;
};

static const struct peer_ops *P(int lib)
{
	return peer_get(lib);
}

static void *cb_obj_new(void)
{
	void *o = malloc(CB_OBJ);

	if (!o) {
		fprintf(stderr, "scale: callbacks: out of memory\n");
		exit(1);
	}
	*(uint64_t *)((char *)o + PEER_HEAD) = PEER_CANARY;
	return o;
}

/* The n-th retirement of a QSBR thread reports a quiescent state every
 * PEER_QS_EVERY (a no-op for the others). */
static inline void cb_retire(const struct peer_ops *p, void *o, unsigned long n)
{
	p->retire(o);
	if (p->qsbr && n % PEER_QS_EVERY == 0)
		p->quiescent_state();
}

/* Asleep outside the library: QSBR threads offline meanwhile. */
static void cb_sleep(const struct peer_ops *p, uint64_t ns)
{
	p->thread_offline();
	sleep_ns(ns);
	p->thread_online();
}

/* One measurement runs in a fresh registered thread of one peer. */
struct cb_job {
	struct cb_ctx *c;
	int lib, rep;
};

static void cb_in_thread(void *(*fn)(void *), struct cb_ctx *c, int lib, int rep)
{
	struct cb_job job = { c, lib, rep };
	pthread_t t;

	tool_spawn(&t, fn, &job, "scale");
	pthread_join(t, NULL);
}

static void cb_check_all_ran(struct cb_ctx *c, int lib, unsigned long base, unsigned long n,
			     const char *what)
{
	unsigned long ran = peer_freed() - base;

	if (ran == n)
		return;
	fprintf(stderr, "scale: %s, %s: %lu of %lu callbacks ran after the barrier\n",
		P(lib)->name, what, ran, n);
	c->error = true;
}

/* ---- enqueue cost and end-to-end throughput ---- */

/* n objects retired back to back; returns the ns the loop took and sets
 * *t0 to its start.  The objects are allocated first, outside the timing. */
static uint64_t cb_retire_all(struct cb_job *j, unsigned long n, uint64_t *t0)
{
	const struct peer_ops *p = P(j->lib);

	for (unsigned long i = 0; i < n; i++)
		j->c->objs[i] = cb_obj_new();
	*t0 = now_ns();
	for (unsigned long i = 0; i < n; i++)
		cb_retire(p, j->c->objs[i], i + 1);
	return now_ns() - *t0;
}

static void *cb_enq_thread(void *arg)
{
	struct cb_job *j = arg;
	unsigned long base;
	uint64_t t0;

	P(j->lib)->thread_register();
	base = peer_freed();
	j->c->enq_ns[j->lib][j->rep] = (double)cb_retire_all(j, CB_ENQ_N, &t0) / CB_ENQ_N;
	P(j->lib)->barrier();
	cb_check_all_ran(j->c, j->lib, base, CB_ENQ_N, "enqueue");
	P(j->lib)->thread_unregister();
	return NULL;
}

static void *cb_e2e_thread(void *arg)
{
	struct cb_job *j = arg;
	unsigned long n = j->c->e2e_n, base;
	uint64_t t0;

	P(j->lib)->thread_register();
	base = peer_freed();
	peer_freed_mark(base + n);
	(void)cb_retire_all(j, n, &t0);
	P(j->lib)->barrier();
	cb_check_all_ran(j->c, j->lib, base, n, "end-to-end");
	/* First retirement to the last callback. */
	j->c->e2e[j->lib][j->rep] = (double)n / ((double)(peer_freed_mark_ns() - t0) / 1e9);
	P(j->lib)->thread_unregister();
	return NULL;
}

/* ---- rcu_barrier() latency ---- */

static void cb_time_barriers(struct cb_job *j, int k, struct lat_hist *into, double *p50)
{
	struct lat_hist *h = malloc(sizeof(*h));

	if (!h)
		exit(1);
	lat_init(h);
	for (int i = 0; i < k; i++) {
		uint64_t t0 = now_ns();

		P(j->lib)->barrier();
		lat_add(h, now_ns() - t0);
	}
	*p50 = lat_pct(h, 50);
	lat_merge(into, h);
	free(h);
}

static void *cb_idle_thread(void *arg)
{
	struct cb_job *j = arg;

	P(j->lib)->thread_register();
	P(j->lib)->retire(cb_obj_new());       /* one callback first: machinery running */
	P(j->lib)->barrier();
	cb_time_barriers(j, j->c->idle_k, &j->c->idle[j->lib], &j->c->idle_p50[j->lib][j->rep]);
	P(j->lib)->thread_unregister();
	return NULL;
}

struct streamer {
	int lib, stop;
};

/* A steady stream: 100 retirements of 64-byte objects, then 100 us asleep. */
static void *cb_streamer(void *arg)
{
	struct streamer *s = arg;
	const struct peer_ops *p = P(s->lib);

	p->thread_register();
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 100; i++)
			p->retire(cb_obj_new());
		if (p->qsbr)
			p->quiescent_state();
		cb_sleep(p, 100000);
	}
	p->thread_unregister();
	return NULL;
}

static void *cb_load_thread(void *arg)
{
	struct cb_job *j = arg;
	struct streamer s = { j->lib, 0 };
	pthread_t t;

	P(j->lib)->thread_register();
	tool_spawn(&t, cb_streamer, &s, "scale");
	cb_sleep(P(j->lib), 20000000);         /* let the stream flow */
	cb_time_barriers(j, j->c->load_k, &j->c->load[j->lib], &j->c->load_p50[j->lib][j->rep]);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	P(j->lib)->thread_offline();           /* QSBR: blocked in the join */
	pthread_join(t, NULL);
	P(j->lib)->thread_online();
	P(j->lib)->barrier();
	P(j->lib)->thread_unregister();
	return NULL;
}

static void cb_variant_enq(int v, int rep, void *arg)
{
	struct cb_ctx *c = arg;

	cb_in_thread(cb_enq_thread, c, c->idx[v], rep);
}

static void cb_variant_e2e(int v, int rep, void *arg)
{
	struct cb_ctx *c = arg;

	cb_in_thread(cb_e2e_thread, c, c->idx[v], rep);
}

static void cb_variant_idle(int v, int rep, void *arg)
{
	struct cb_ctx *c = arg;

	cb_in_thread(cb_idle_thread, c, c->idx[v], rep);
}

static void cb_variant_load(int v, int rep, void *arg)
{
	struct cb_ctx *c = arg;

	cb_in_thread(cb_load_thread, c, c->idx[v], rep);
}

/* ---- flood ---- */

struct flood_run {
	int lib;
	int stop, pause;
	unsigned long base;                        /* peer_freed() at the start */
	unsigned long queued[MAX_PROD];            /* each written by its producer */
	pthread_barrier_t start;
};

struct flood_prod {
	struct flood_run *run;
	int idx;
};

static void *flood_producer(void *arg)
{
	struct flood_prod *p = arg;
	struct flood_run *run = p->run;
	const struct peer_ops *ops = P(run->lib);
	unsigned long n = 0;

	ops->thread_register();
	ops->thread_offline();                 /* QSBR: blocked in the barrier */
	pthread_barrier_wait(&run->start);
	ops->thread_online();
	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		void *o;

		if (__atomic_load_n(&run->pause, __ATOMIC_RELAXED)) {
			cb_sleep(ops, 1000000);
			continue;
		}
		o = malloc(CB_OBJ);
		if (!o)
			break;
		cb_retire(ops, o, ++n);
		__atomic_store_n(&run->queued[p->idx], n, __ATOMIC_RELEASE);
	}
	ops->thread_unregister();
	return NULL;
}

/* MemAvailable / 4, at most 4 GiB, as a number of pending 64-byte objects. */
static double cap_pending(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	double kb = 4.0 * 1024 * 1024;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	kb /= 4;
	if (kb > 4.0 * 1024 * 1024)
		kb = 4.0 * 1024 * 1024;
	return kb * 1024 / (CB_OBJ + 16);
}

/* Retired and not yet freed: the same count for every peer. */
static double flood_pending(struct flood_run *run)
{
	unsigned long q = 0;

	for (int i = 0; i < MAX_PROD; i++)
		q += __atomic_load_n(&run->queued[i], __ATOMIC_ACQUIRE);
	return (double)q - (double)(peer_freed() - run->base);
}

/* Every 10 ms until the end of the phase: RSS, pending, safety cap. */
static void flood_sample(struct cb_ctx *c, struct flood_run *run, struct flood_res *r,
			 double base, uint64_t end)
{
	while (now_ns() < end) {
		double rss, pend;

		sleep_ns(10000000);
		rss = process_rss_bytes() - base;
		pend = flood_pending(run);
		if (rss > r->rss_growth)
			r->rss_growth = rss;
		if (pend > r->peak_pending)
			r->peak_pending = pend;
		if (pend > c->cap_pending) {
			r->capped = true;
			__atomic_store_n(&run->pause, 1, __ATOMIC_RELAXED);
		} else if (pend < c->cap_pending / 2) {
			__atomic_store_n(&run->pause, 0, __ATOMIC_RELAXED);
		}
	}
}

static void *cb_barrier_thread(void *arg)
{
	struct cb_job *j = arg;

	P(j->lib)->thread_register();
	P(j->lib)->barrier();
	P(j->lib)->thread_unregister();
	return NULL;
}

static void flood_phase(struct cb_ctx *c, int lib, struct flood_res *r)
{
	struct flood_run run = { .lib = lib };
	struct flood_prod prod[MAX_PROD];
	pthread_t pt[MAX_PROD];
	unsigned long q = 0, inv;
	uint64_t t0, t_stop;
	double base;

	malloc_trim(0);                        /* no heap inherited from the last phase */
	sleep_ns(100000000);
	memset(r, 0, sizeof(*r));
	run.base = peer_freed();
	pthread_barrier_init(&run.start, NULL, MAX_PROD + 1);
	for (int i = 0; i < MAX_PROD; i++) {
		prod[i] = (struct flood_prod){ &run, i };
		tool_spawn(&pt[i], flood_producer, &prod[i], "scale");
	}
	base = process_rss_bytes();
	pthread_barrier_wait(&run.start);
	t0 = now_ns();
	flood_sample(c, &run, r, base, t0 + (uint64_t)(c->flood_s * 1e9));
	inv = peer_freed() - run.base;
	t_stop = now_ns();
	__atomic_store_n(&run.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < MAX_PROD; i++) {
		pthread_join(pt[i], NULL);
		q += run.queued[i];
	}
	pthread_barrier_destroy(&run.start);
	cb_in_thread(cb_barrier_thread, c, lib, 0);
	r->drain_ms = (double)(now_ns() - t_stop) / 1e6;
	r->cbs_s = (double)inv / ((double)(t_stop - t0) / 1e9);
	r->enq_s = (double)q / ((double)(t_stop - t0) / 1e9);
	cb_check_all_ran(c, lib, run.base, q, "flood");
	malloc_trim(0);
}

static void cb_variant_flood(int v, int rep, void *arg)
{
	struct cb_ctx *c = arg;

	flood_phase(c, c->idx[v], &c->flood[c->idx[v]][rep]);
}

/* ---- report ---- */

struct cb_row {
	const char *metric, *goal;                 /* goal: its name in goals.tsv, or NULL */
	double v[PEER_MAX], spread[PEER_MAX];      /* by peer index; NAN: not run */
	int pass;                                  /* 1 pass, 0 miss, -1 no goal or no pair */
};

static struct cb_row cb_row_of(const struct cb_ctx *c, const char *metric, const char *goal,
			       double (*per)[CB_MAX_REPS], int reps)
{
	struct cb_row r = { metric, goal, { 0 }, { 0 }, -1 };

	for (int lib = 0; lib < PEER_MAX; lib++)
		r.v[lib] = r.spread[lib] = NAN;
	for (int i = 0; i < c->np; i++) {
		struct summary s;

		summarize(per[c->idx[i]], (size_t)reps, &s);
		r.v[c->idx[i]] = s.median;
		r.spread[c->idx[i]] = s.spread;
	}
	/* The goals compare treercu with liburcu memb. */
	if (goal && !isnan(r.v[PEER_TREERCU]) && !isnan(r.v[PEER_LU_MEMB]))
		r.pass = goal_met(goal, r.v[PEER_TREERCU], r.v[PEER_LU_MEMB]);
	return r;
}

static void cb_flood_rows(struct cb_ctx *c, struct cb_row *rows, int *n)
{
	static double v[5][PEER_MAX][CB_MAX_REPS];
	static const char *const names[5] = {
		"flood: peak pending callbacks", "flood: peak RSS growth MiB",
		"flood: callbacks run/s", "flood: retirements/s", "flood: drain ms after stop",
	};
	static const char *const goals[5] = { NULL, "cb_flood_rss", "cb_flood_run", NULL, NULL };

	for (int i = 0; i < c->np; i++) {
		int lib = c->idx[i];

		for (int r = 0; r < c->flood_reps; r++) {
			const struct flood_res *f = &c->flood[lib][r];

			v[0][lib][r] = f->peak_pending;
			v[1][lib][r] = f->rss_growth / 1048576.0;
			v[2][lib][r] = f->cbs_s;
			v[3][lib][r] = f->enq_s;
			v[4][lib][r] = f->drain_ms;
		}
	}
	for (int i = 0; i < 5; i++)
		rows[(*n)++] = cb_row_of(c, names[i], goals[i], v[i], c->flood_reps);
}

/* Rows in the order of struct callbacks_result's goals. */
static int cb_rows(struct cb_ctx *c, struct cb_row *rows)
{
	static double p[4][PEER_MAX][CB_MAX_REPS];
	int n = 0;

	for (int i = 0; i < c->np; i++) {
		int lib = c->idx[i];

		for (int r = 0; r < c->reps; r++) {
			p[0][lib][r] = c->idle_p50[lib][r] / 1e3;
			p[1][lib][r] = c->load_p50[lib][r] / 1e3;
		}
		/* p99s: merged histograms, no spread */
		p[2][lib][0] = lat_pct(&c->idle[lib], 99) / 1e3;
		p[3][lib][0] = lat_pct(&c->load[lib], 99) / 1e3;
	}
	rows[n++] = cb_row_of(c, "retire enqueue ns/call", "cb_enqueue", c->enq_ns, c->reps);
	rows[n++] = cb_row_of(c, "1M callbacks end-to-end cbs/s", "cb_e2e", c->e2e, c->reps);
	rows[n++] = cb_row_of(c, "barrier idle p50 us", "cb_barrier_idle_p50", p[0], c->reps);
	rows[n++] = cb_row_of(c, "barrier under load p50 us", NULL, p[1], c->reps);
	rows[n++] = cb_row_of(c, "barrier idle p99 us (all)", NULL, p[2], 1);
	rows[n++] = cb_row_of(c, "barrier under load p99 us (all)", NULL, p[3], 1);
	cb_flood_rows(c, rows, &n);
	return n;
}

static void cb_print(const struct cb_ctx *c, const struct cb_row *rows, int n)
{
	const char *cols[PEER_MAX + 4] = { "metric" };
	int w[PEER_MAX + 4] = { 31 }, nc = 1;
	struct table t;
	char goal[64];

	for (int i = 0; i < c->np; i++) {
		cols[nc] = P(c->idx[i])->name;
		w[nc++] = 16;
	}
	cols[nc] = "treercu/memb";
	w[nc++] = 7;
	cols[nc] = "goal";
	w[nc++] = 18;
	cols[nc] = "result";
	w[nc++] = 6;
	tab_start(&t, nc, cols, w);
	for (int i = 0; i < n; i++) {
		const struct cb_row *r = &rows[i];

		tab_cell(&t, "%s", r->metric);
		for (int k = 0; k < c->np; k++) {
			double v = r->v[c->idx[k]], sp = r->spread[c->idx[k]];

			tab_cell(&t, v >= 1000 ? "%.0f (%.0f%%)" : "%.3g (%.0f%%)", v, sp);
		}
		tab_cell(&t, "%.2fx", r->v[PEER_TREERCU] / r->v[PEER_LU_MEMB]);
		tab_cell(&t, "%s", r->goal ? goal_text(r->goal, goal, sizeof(goal)) : "");
		tab_cell(&t, "%s", r->pass < 0 ? "" : r->pass ? "PASS" : "MISS");
	}
}

static void cb_json(struct json *j, const struct cb_ctx *c, const struct cb_row *rows, int n)
{
	json_obj(j, "callbacks");
	json_int(j, "repeats", c->reps);
	json_int(j, "e2e_callbacks", (long long)c->e2e_n);
	json_int(j, "enqueue_calls", CB_ENQ_N);
	json_num(j, "flood_s", c->flood_s);
	json_int(j, "flood_repeats", c->flood_reps);
	json_arr(j, "flood_capped");
	for (int i = 0; i < c->np; i++) {
		json_obj(j, NULL);
		json_str(j, "lib", P(c->idx[i])->name);
		json_bool(j, "capped", c->flood[c->idx[i]][0].capped);
		json_end(j, '}');
	}
	json_end(j, ']');
	json_arr(j, "rows");
	for (int i = 0; i < n; i++) {
		json_obj(j, NULL);
		json_str(j, "metric", rows[i].metric);
		json_arr(j, "peers");
		for (int k = 0; k < c->np; k++) {
			json_obj(j, NULL);
			json_str(j, "lib", P(c->idx[k])->name);
			json_num(j, "median", rows[i].v[c->idx[k]]);
			json_num(j, "spread_pct", rows[i].spread[c->idx[k]]);
			json_end(j, '}');
		}
		json_end(j, ']');
		if (rows[i].pass >= 0)
			json_bool(j, "goal_met", rows[i].pass);
		json_end(j, '}');
	}
	json_end(j, ']');
	json_end(j, '}');
}

/* `quick`'s pair: [0] treercu, [1] liburcu memb (NAN where not run). */
static void cb_result(const struct cb_ctx *c, const struct cb_row *rows,
		      struct callbacks_result *r)
{
	static const int pair[2] = { PEER_TREERCU, PEER_LU_MEMB };

	for (int k = 0; k < 2; k++) {
		int lib = pair[k];

		r->enqueue_ns[k] = rows[0].v[lib];
		r->e2e_cbs_s[k] = rows[1].v[lib];
		r->barrier_idle_p50_ns[k] = rows[2].v[lib] * 1e3;
		r->barrier_load_p50_ns[k] = rows[3].v[lib] * 1e3;
		r->barrier_idle_p99_ns[k] = rows[4].v[lib] * 1e3;
		r->barrier_load_p99_ns[k] = rows[5].v[lib] * 1e3;
		r->flood_peak_pending[k] = rows[6].v[lib];
		r->flood_rss_growth_bytes[k] = rows[7].v[lib] * 1048576.0;
		r->flood_cbs_s[k] = rows[8].v[lib];
		r->flood_capped[k] = false;
		for (int i = 0; i < c->flood_reps; i++)
			r->flood_capped[k] = r->flood_capped[k] || c->flood[lib][i].capped;
	}
}

struct cb_ctx *cb_ctx_new(void)
{
	return calloc(1, sizeof(struct cb_ctx));
}

/* Every callback benchmark setting: the options' values, or their defaults. */
void cb_defaults(struct cb_ctx *c, struct tool_opts *o)
{
	long v;

	tool_bind(o, scale_opts);
	opt_long(o, "cb-repeats", &v);
	c->reps = (int)v;
	opt_long(o, "flood-repeats", &v);
	c->flood_reps = (int)v;
	opt_long(o, "cb-count", &v);
	c->e2e_n = (unsigned long)v;
	opt_double(o, "flood-secs", &c->flood_s);
	c->idle_k = o->quick ? 20 : 40;
	c->load_k = o->quick ? 8 : 20;
	c->cap_pending = cap_pending();
}

static void cb_run_all(struct cb_ctx *c)
{
	double est = c->reps * c->np * (0.5 + c->idle_k * 0.012 + c->load_k * 0.02) +
		     c->flood_reps * c->np * (c->flood_s + 0.5);

	printf("\ncallbacks: every peer in the same run; %d interleaved repeats "
	       "(flood: %d of %g s per peer); objects of %d bytes, the peer's head first, "
	       "malloc()ed, retired, freed by the callback; figures are medians (spread = "
	       "(max-min)/median); a QSBR thread reports a quiescent state every %d "
	       "retirements\n", c->reps, c->flood_reps, c->flood_s, CB_OBJ, PEER_QS_EVERY);
	fflush(stdout);
	for (int i = 0; i < c->np; i++)   /* warm-up: start each peer's threads */
		cb_variant_enq(i, 0, c);
	run_interleaved(c->np, c->reps, cb_variant_enq, c, "callbacks: enqueue", est);
	run_interleaved(c->np, c->reps, cb_variant_e2e, c, "callbacks: 1M end-to-end", est);
	run_interleaved(c->np, c->reps, cb_variant_idle, c, "callbacks: barrier idle", est);
	run_interleaved(c->np, c->reps, cb_variant_load, c, "callbacks: barrier under load", est);
	run_interleaved(c->np, c->flood_reps, cb_variant_flood, c, "callbacks: flood", est);
}

/* --peers, or by default treercu (both kinds of thread), liburcu memb and
 * qsbr, and ck_epoch (with --quick treercu and liburcu memb, the pair the
 * quick summary shows); 0, or 2 after a message naming a bad id. */
static int cb_peers(struct tool_opts *o, struct cb_ctx *c)
{
	static const int dflt[] = { PEER_TREERCU, PEER_LU_MEMB, PEER_TREERCU_QSBR, PEER_LU_QSBR,
				    PEER_CK };
	const char *list = opt_str(o, "peers");
	bool sel[PEER_MAX] = { false };

	if (list) {
		if (peer_select(list, sel, "treercu scale"))
			return 2;
	} else {
		size_t n = o->quick ? 2 : sizeof(dflt) / sizeof(dflt[0]);

		for (size_t i = 0; i < n; i++)
			sel[dflt[i]] = !P(dflt[i])->missing;
	}
	for (int i = 0; PEER_TSAN && i < PEER_MAX; i++) {
		if (sel[i] && i != PEER_TREERCU && i != PEER_TREERCU_QSBR && i != PEER_TREERCU_TASK) {
			printf("peer %s left out: ThreadSanitizer cannot see its grace periods\n",
			       P(i)->name);
			sel[i] = false;
		}
	}
	c->np = peer_list(sel, c->idx);
	return 0;
}

/* The callback benchmarks; j may be a closed writer (path NULL). */
int cb_main(struct tool_opts *o, struct cb_ctx *c, struct json *j,
	    struct callbacks_result *res)
{
	static struct cb_row rows[16];
	int n;

	if (peer_check_heads())
		return 1;
	if (cb_peers(o, c))
		return 2;
	if (c->e2e_n < CB_ENQ_N)
		c->e2e_n = CB_ENQ_N;
	c->objs = calloc(c->e2e_n, sizeof(*c->objs));
	if (!c->objs)
		return 1;
	for (int lib = 0; lib < PEER_MAX; lib++) {
		lat_init(&c->idle[lib]);
		lat_init(&c->load[lib]);
	}
	cb_run_all(c);
	free(c->objs);
	c->objs = NULL;
	n = cb_rows(c, rows);
	cb_print(c, rows, n);
	for (int i = 0; i < c->np; i++)
		if (c->flood[c->idx[i]][0].capped)
			printf("flood: %s's producers hit the tool's memory safety cap (%.0f pending, "
			       "MemAvailable/4 or 4 GiB) and were paused: growth would have been "
			       "larger\n", P(c->idx[i])->name, c->cap_pending);
	cb_json(j, c, rows, n);
	cb_result(c, rows, res);
	return c->error ? 1 : 0;
}

int scale_callbacks_main(struct tool_opts *o, struct callbacks_result *r)
{
	struct cb_ctx *c = cb_ctx_new();
	struct json j;
	int rc;

	if (!c || json_open(&j, o, "callbacks"))
		return 1;
	cb_defaults(c, o);
	json_str(&j, "command", "scale --callbacks");
	machine_note(&j);
	rc = cb_main(o, c, &j, r);
	if (json_close(&j))
		rc = 1;
	free(c);
	return rc;
}
