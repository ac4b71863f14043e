/* SPDX-License-Identifier: MIT */
/*
 * Callback benchmarks (`treercu scale --callbacks`, and part of every full
 * `scale` run): call_rcu() enqueue ns/call, end-to-end callbacks/s for 1 M
 * callbacks, rcu_barrier() latency idle and under a stream of call_rcu(),
 * and a 2-producer flood (peak pending, peak RSS growth, callbacks run/s),
 * against liburcu memb's urcu_memb_call_rcu()/urcu_memb_barrier() in the
 * same run.
 */
#define _GNU_SOURCE   /* malloc_trim */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "callbacks.h"
#include "common.h"
#include "goals.h"
#include "liburcu_glue.h"
#include "results.h"

#define NLIB 2

#define CB_OBJ 64                      /* object size, rcu_head first */
#define MAX_PROD 2
static const char *const cb_libname[NLIB] = { "treercu", "liburcu memb" };

struct cb_obj {
	struct rcu_head rh;
	char pad[CB_OBJ - sizeof(struct rcu_head)];
};

struct flood_res {
	double peak_pending, rss_growth, cbs_s, enq_s, drain_ms;
	bool capped;
};

struct cb_ctx {
	int reps, flood_reps, idle_k, load_k;
	unsigned long e2e_n;
	double flood_s, cap_pending;
	struct cb_obj *objs;                       /* e2e_n objects, reused */
	double enq_ns[NLIB][CB_MAX_REPS], e2e[NLIB][CB_MAX_REPS];
	double idle_p50[NLIB][CB_MAX_REPS], load_p50[NLIB][CB_MAX_REPS];
	struct lat_hist idle[NLIB], load[NLIB];    /* merged over repeats */
	struct flood_res flood[NLIB][CB_MAX_REPS];
	bool error;
};

/* treercu side of the counting callbacks (the glue has the liburcu side). */
static unsigned long tr_cb_count, tr_cb_target;
static uint64_t tr_cb_done_ns;

static void tr_cb_hit(void)
{
	unsigned long n = __atomic_add_fetch(&tr_cb_count, 1, __ATOMIC_RELEASE);

	if (n == __atomic_load_n(&tr_cb_target, __ATOMIC_RELAXED))
		__atomic_store_n(&tr_cb_done_ns, now_ns(), __ATOMIC_RELEASE);
}

static void tr_count_cb(struct rcu_head *h)
{
	(void)h;
	tr_cb_hit();
}

static void tr_free_cb(struct rcu_head *h)
{
	tr_cb_hit();
	free(h);
}

__attribute__((noinline)) static void tr_enqueue_loop(void *base, unsigned long n, size_t stride)
{
	for (unsigned long i = 0; i < n; i++)
		call_rcu((struct rcu_head *)((char *)base + i * stride), tr_count_cb);
}

static void cb_reset(int lib, unsigned long target)
{
	if (lib) {
		lu_memb_cb_reset(target);
		return;
	}
	__atomic_store_n(&tr_cb_done_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&tr_cb_target, target, __ATOMIC_RELAXED);
	__atomic_store_n(&tr_cb_count, 0, __ATOMIC_RELEASE);
}

static unsigned long cb_invoked(int lib)
{
	return lib ? lu_memb_cb_invoked() : __atomic_load_n(&tr_cb_count, __ATOMIC_ACQUIRE);
}

static uint64_t cb_done_ns(int lib)
{
	return lib ? lu_memb_cb_target_ns() : __atomic_load_n(&tr_cb_done_ns, __ATOMIC_ACQUIRE);
}

static void cb_enqueue(int lib, void *base, unsigned long n)
{
	if (lib)
		lu_memb_enqueue_loop(base, n, CB_OBJ);
	else
		tr_enqueue_loop(base, n, CB_OBJ);
}

static void cb_call_free(int lib, void *obj)
{
	if (lib)
		lu_memb_call_rcu_free(obj);
	else
		call_rcu((struct rcu_head *)obj, tr_free_cb);
}

static void cb_barrier(int lib)
{
	if (lib)
		lu_memb_barrier();
	else
		rcu_barrier();
}

static void lib_register(int lib)
{
	if (lib)
		lu_memb_register_thread();
	else
		trcu_register_thread();
}

static void lib_unregister(int lib)
{
	if (lib)
		lu_memb_unregister_thread();
	else
		trcu_unregister_thread();
}

/* One measurement runs in a fresh registered thread of one library. */
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

static void cb_check_all_ran(struct cb_ctx *c, int lib, unsigned long n, const char *what)
{
	if (cb_invoked(lib) == n)
		return;
	fprintf(stderr, "scale: %s, %s: %lu of %lu callbacks ran after the barrier\n",
		cb_libname[lib], what, cb_invoked(lib), n);
	c->error = true;
}

/* ---- enqueue cost and end-to-end throughput ---- */

static void *cb_enq_thread(void *arg)
{
	struct cb_job *j = arg;
	uint64_t t0;

	lib_register(j->lib);
	memset(j->c->objs, 0, CB_ENQ_N * CB_OBJ);
	cb_reset(j->lib, CB_ENQ_N);
	t0 = now_ns();
	cb_enqueue(j->lib, j->c->objs, CB_ENQ_N);
	j->c->enq_ns[j->lib][j->rep] = (double)(now_ns() - t0) / CB_ENQ_N;
	cb_barrier(j->lib);
	cb_check_all_ran(j->c, j->lib, CB_ENQ_N, "enqueue");
	lib_unregister(j->lib);
	return NULL;
}

static void *cb_e2e_thread(void *arg)
{
	struct cb_job *j = arg;
	unsigned long n = j->c->e2e_n;
	uint64_t t0;

	lib_register(j->lib);
	memset(j->c->objs, 0, n * CB_OBJ);
	cb_reset(j->lib, n);
	t0 = now_ns();
	cb_enqueue(j->lib, j->c->objs, n);
	cb_barrier(j->lib);
	cb_check_all_ran(j->c, j->lib, n, "end-to-end");
	j->c->e2e[j->lib][j->rep] = (double)n / ((double)(cb_done_ns(j->lib) - t0) / 1e9);
	lib_unregister(j->lib);
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

		cb_barrier(j->lib);
		lat_add(h, now_ns() - t0);
	}
	*p50 = lat_pct(h, 50);
	lat_merge(into, h);
	free(h);
}

static void *cb_idle_thread(void *arg)
{
	struct cb_job *j = arg;
	struct cb_obj o;

	lib_register(j->lib);
	cb_reset(j->lib, 1);                   /* one callback first: machinery running */
	cb_enqueue(j->lib, &o, 1);
	cb_barrier(j->lib);
	cb_time_barriers(j, j->c->idle_k, &j->c->idle[j->lib], &j->c->idle_p50[j->lib][j->rep]);
	lib_unregister(j->lib);
	return NULL;
}

struct streamer {
	int lib, stop;
};

/* A steady stream: 100 call_rcu() of 64-byte objects, then 100 us asleep. */
static void *cb_streamer(void *arg)
{
	struct streamer *s = arg;

	lib_register(s->lib);
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 100; i++) {
			void *o = malloc(CB_OBJ);

			if (!o)
				exit(1);
			cb_call_free(s->lib, o);
		}
		sleep_ns(100000);
	}
	lib_unregister(s->lib);
	return NULL;
}

static void *cb_load_thread(void *arg)
{
	struct cb_job *j = arg;
	struct streamer s = { j->lib, 0 };
	pthread_t t;

	lib_register(j->lib);
	cb_reset(j->lib, ~0UL);
	tool_spawn(&t, cb_streamer, &s, "scale");
	sleep_ns(20000000);                    /* let the stream flow */
	cb_time_barriers(j, j->c->load_k, &j->c->load[j->lib], &j->c->load_p50[j->lib][j->rep]);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	cb_barrier(j->lib);
	lib_unregister(j->lib);
	return NULL;
}

static void cb_variant_enq(int v, int rep, void *arg)
{
	cb_in_thread(cb_enq_thread, arg, v, rep);
}

static void cb_variant_e2e(int v, int rep, void *arg)
{
	cb_in_thread(cb_e2e_thread, arg, v, rep);
}

static void cb_variant_idle(int v, int rep, void *arg)
{
	cb_in_thread(cb_idle_thread, arg, v, rep);
}

static void cb_variant_load(int v, int rep, void *arg)
{
	cb_in_thread(cb_load_thread, arg, v, rep);
}

/* ---- flood ---- */

struct flood_run {
	int lib;
	int stop, pause;
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
	unsigned long n = 0;

	lib_register(run->lib);
	pthread_barrier_wait(&run->start);
	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		void *o;

		if (__atomic_load_n(&run->pause, __ATOMIC_RELAXED)) {
			sleep_ns(1000000);
			continue;
		}
		o = malloc(CB_OBJ);
		if (!o)
			break;
		cb_call_free(run->lib, o);
		__atomic_store_n(&run->queued[p->idx], ++n, __ATOMIC_RELEASE);
	}
	lib_unregister(run->lib);
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

static double flood_pending(struct flood_run *run)
{
	unsigned long q = 0;

	if (run->lib == 0) {
		struct trcu_stats st;

		trcu_get_stats(&st);
		return (double)st.cbs_pending;
	}
	for (int i = 0; i < MAX_PROD; i++)
		q += __atomic_load_n(&run->queued[i], __ATOMIC_ACQUIRE);
	return (double)q - (double)cb_invoked(1);
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

	lib_register(j->lib);
	cb_barrier(j->lib);
	lib_unregister(j->lib);
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
	cb_reset(lib, ~0UL);
	pthread_barrier_init(&run.start, NULL, MAX_PROD + 1);
	for (int i = 0; i < MAX_PROD; i++) {
		prod[i] = (struct flood_prod){ &run, i };
		tool_spawn(&pt[i], flood_producer, &prod[i], "scale");
	}
	base = process_rss_bytes();
	pthread_barrier_wait(&run.start);
	t0 = now_ns();
	flood_sample(c, &run, r, base, t0 + (uint64_t)(c->flood_s * 1e9));
	inv = cb_invoked(lib);
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
	cb_check_all_ran(c, lib, q, "flood");
	malloc_trim(0);
}

static void cb_variant_flood(int v, int rep, void *arg)
{
	struct cb_ctx *c = arg;

	flood_phase(c, v, &c->flood[v][rep]);
}

/* ---- report ---- */

struct cb_row {
	const char *metric, *goal;                 /* goal: its name in goals.tsv, or NULL */
	double v[NLIB], spread[NLIB];
	int pass;                                  /* 1 pass, 0 miss, -1 no goal */
};

static void cb_sum(const double *v, int n, double *median, double *spread)
{
	struct summary s;

	summarize(v, (size_t)n, &s);
	*median = s.median;
	*spread = s.spread;
}

static struct cb_row cb_row_of(const char *metric, const char *goal,
			       double (*per)[CB_MAX_REPS], int reps)
{
	struct cb_row r = { metric, goal, { 0 }, { 0 }, -1 };

	for (int lib = 0; lib < NLIB; lib++)
		cb_sum(per[lib], reps, &r.v[lib], &r.spread[lib]);
	if (goal)
		r.pass = goal_met(goal, r.v[0], r.v[1]);
	return r;
}

static void cb_flood_rows(struct cb_ctx *c, struct cb_row *rows, int *n)
{
	double v[5][NLIB][CB_MAX_REPS];
	static const char *const names[5] = {
		"flood: peak pending callbacks", "flood: peak RSS growth MiB",
		"flood: callbacks run/s", "flood: call_rcu()/s", "flood: drain ms after stop",
	};
	static const char *const goals[5] = { NULL, "cb_flood_rss", "cb_flood_run", NULL, NULL };

	for (int lib = 0; lib < NLIB; lib++) {
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
		rows[(*n)++] = cb_row_of(names[i], goals[i], v[i], c->flood_reps);
}

/* Rows in the order of struct callbacks_result's goals. */
static int cb_rows(struct cb_ctx *c, struct cb_row *rows)
{
	double p[4][NLIB][CB_MAX_REPS];
	int n = 0;

	for (int lib = 0; lib < NLIB; lib++) {
		for (int r = 0; r < c->reps; r++) {
			p[0][lib][r] = c->idle_p50[lib][r] / 1e3;
			p[1][lib][r] = c->load_p50[lib][r] / 1e3;
		}
	}
	rows[n++] = cb_row_of("call_rcu() enqueue ns/call", "cb_enqueue", c->enq_ns, c->reps);
	rows[n++] = cb_row_of("1M callbacks end-to-end cbs/s", "cb_e2e", c->e2e, c->reps);
	rows[n++] = cb_row_of("rcu_barrier() idle p50 us", "cb_barrier_idle_p50", p[0], c->reps);
	rows[n++] = cb_row_of("rcu_barrier() under load p50 us", NULL, p[1], c->reps);
	for (int lib = 0; lib < NLIB; lib++) {      /* p99s: merged histograms, no spread */
		p[2][lib][0] = lat_pct(&c->idle[lib], 99) / 1e3;
		p[3][lib][0] = lat_pct(&c->load[lib], 99) / 1e3;
	}
	rows[n++] = cb_row_of("rcu_barrier() idle p99 us (all)", NULL, p[2], 1);
	rows[n++] = cb_row_of("rcu_barrier() under load p99 us (all)", NULL, p[3], 1);
	cb_flood_rows(c, rows, &n);
	return n;
}

static void cb_print(const struct cb_row *rows, int n)
{
	static const char *const cols[] = {
		"metric", "treercu", "liburcu memb", "ratio", "spread T", "spread L", "goal", "result",
	};
	static const int w[] = { 37, 10, 12, 7, 8, 8, 18, 6 };
	struct table t;
	char goal[64];

	tab_start(&t, 8, cols, w);
	for (int i = 0; i < n; i++) {
		const struct cb_row *r = &rows[i];

		tab_cell(&t, "%s", r->metric);
		tab_cell(&t, r->v[0] >= 1000 ? "%.0f" : "%.3g", r->v[0]);
		tab_cell(&t, r->v[1] >= 1000 ? "%.0f" : "%.3g", r->v[1]);
		tab_cell(&t, "%.2fx", r->v[0] / r->v[1]);
		tab_cell(&t, "%.0f%%", r->spread[0]);
		tab_cell(&t, "%.0f%%", r->spread[1]);
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
	json_bool(j, "flood_capped_treercu", c->flood[0][0].capped);
	json_bool(j, "flood_capped_liburcu", c->flood[1][0].capped);
	json_arr(j, "rows");
	for (int i = 0; i < n; i++) {
		json_obj(j, NULL);
		json_str(j, "metric", rows[i].metric);
		json_num(j, "treercu", rows[i].v[0]);
		json_num(j, "liburcu", rows[i].v[1]);
		json_num(j, "spread_treercu_pct", rows[i].spread[0]);
		json_num(j, "spread_liburcu_pct", rows[i].spread[1]);
		if (rows[i].pass >= 0)
			json_bool(j, "goal_met", rows[i].pass);
		json_end(j, '}');
	}
	json_end(j, ']');
	json_end(j, '}');
}

static void cb_result(const struct cb_ctx *c, const struct cb_row *rows,
		      struct callbacks_result *r)
{
	for (int lib = 0; lib < NLIB; lib++) {
		r->enqueue_ns[lib] = rows[0].v[lib];
		r->e2e_cbs_s[lib] = rows[1].v[lib];
		r->barrier_idle_p50_ns[lib] = rows[2].v[lib] * 1e3;
		r->barrier_load_p50_ns[lib] = rows[3].v[lib] * 1e3;
		r->barrier_idle_p99_ns[lib] = rows[4].v[lib] * 1e3;
		r->barrier_load_p99_ns[lib] = rows[5].v[lib] * 1e3;
		r->flood_peak_pending[lib] = rows[6].v[lib];
		r->flood_rss_growth_bytes[lib] = rows[7].v[lib] * 1048576.0;
		r->flood_cbs_s[lib] = rows[8].v[lib];
		r->flood_capped[lib] = false;
		for (int k = 0; k < c->flood_reps; k++)
			r->flood_capped[lib] = r->flood_capped[lib] || c->flood[lib][k].capped;
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
	double est = c->reps * 2 * (0.5 + c->idle_k * 0.012 + c->load_k * 0.02) +
		     c->flood_reps * 2 * (c->flood_s + 0.5);

	printf("\ncallbacks: treercu against liburcu memb, same run; %d interleaved repeats "
	       "(flood: %d of %.0f s per library); objects of %d bytes, rcu_head first\n",
	       c->reps, c->flood_reps, c->flood_s, CB_OBJ);
	fflush(stdout);
	for (int lib = 0; lib < NLIB; lib++)   /* warm-up: start each library's threads */
		cb_variant_enq(lib, 0, c);
	run_interleaved(NLIB, c->reps, cb_variant_enq, c, "callbacks: enqueue", est);
	run_interleaved(NLIB, c->reps, cb_variant_e2e, c, "callbacks: 1M end-to-end", est);
	run_interleaved(NLIB, c->reps, cb_variant_idle, c, "callbacks: barrier idle", est);
	run_interleaved(NLIB, c->reps, cb_variant_load, c, "callbacks: barrier under load", est);
	run_interleaved(NLIB, c->flood_reps, cb_variant_flood, c, "callbacks: flood", est);
}

/* The callback benchmarks; j may be a closed writer (path NULL). */
int cb_main(struct tool_opts *o, struct cb_ctx *c, struct json *j,
	    struct callbacks_result *res)
{
	struct cb_row rows[16];
	int n;

	if (lu_rcu_head_size() != sizeof(struct rcu_head)) {
		fprintf(stderr, "scale: liburcu's rcu_head is %zu bytes, treercu's %zu\n",
			lu_rcu_head_size(), sizeof(struct rcu_head));
		return 1;
	}
	if (c->e2e_n < CB_ENQ_N)
		c->e2e_n = CB_ENQ_N;
	c->objs = aligned_alloc(64, c->e2e_n * CB_OBJ);
	if (!c->objs)
		return 1;
	for (int lib = 0; lib < NLIB; lib++) {
		lat_init(&c->idle[lib]);
		lat_init(&c->load[lib]);
	}
	(void)o;
	cb_run_all(c);
	free(c->objs);
	c->objs = NULL;
	n = cb_rows(c, rows);
	cb_print(rows, n);
	if (c->flood[1][0].capped || c->flood[0][0].capped)
		printf("flood: the producers hit the tool's memory safety cap (%.0f pending, "
		       "MemAvailable/4 or 4 GiB) and were paused: growth would have been larger\n",
		       c->cap_pending);
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
