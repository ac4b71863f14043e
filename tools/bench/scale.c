/* SPDX-License-Identifier: MIT */
/*
 * scale: synchronize_rcu() latency (p50, p99, max) and calls/s with 0, 1, 2
 * busy readers and 1, 8, 64 concurrent callers, treercu against liburcu
 * memb in the same run, and every other peer (peers.h) with 1 caller.  Each
 * configuration starts its own threads of one peer only and joins them
 * before the next; configurations are
 * interleaved over the repeats and every figure is the median of its
 * repeats.  `--sync-path 0|1|2|all` measures treercu's synchronize_rcu()
 * paths (normal_wake_from_gp) in turn.  `--idle N[,N...]` runs the matrix
 * once per count of idle registered threads (each sleeping on a condition
 * variable for the whole run), interleaved with the rest: the grace-period
 * cost as the registry grows.  `--callbacks` (and every full run) adds the
 * callback benchmarks (callbacks.c).
 */
#define _GNU_SOURCE   /* malloc_trim */
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "callbacks.h"
#include "common.h"
#include "results.h"
#include "peers.h"

#define NLIB 2                  /* the callback benchmarks: treercu, liburcu memb */
#define NPEER PEER_MAX          /* the synchronize_rcu() matrix: every peer */
#define NRD 3
#define NCALL 3
#define MAX_CALLERS 64
#define MAX_REPS 51
#define MAX_IDLE 8000          /* idle threads: sleepers on small stacks (IDLE_STACK) */
#define NIDLE 8                 /* --idle: counts in one run */
#define IDLE_STACK (128 * 1024) /* an idle thread's stack: it only registers and sleeps */
static const int callers_matrix[NCALL] = { 1, 8, 64 };
/* The matrix's caller counts this run: --callers N outside it takes the
 * middle slot, so that any N from 1 to MAX_CALLERS runs. */
static int callers_of[NCALL];

struct sc_ctx {
	double dur_s;
	bool sel[NPEER];                             /* --peers */
	long only_rd, only_callers;                  /* -1: every configuration */
	int nidle;                                   /* --idle: how many counts */
	long idle_of[NIDLE];                         /* idle registered threads */
	struct lat_hist *hist;                       /* MAX_CALLERS histograms */
	struct scale_point pt[NPEER][NIDLE][NRD][NCALL][MAX_REPS];
};

struct sc_run {
	const struct peer_ops *p;
	int stop_readers, stop_callers;
	unsigned long reads;                         /* busy readers' sections */
	int ready;                                   /* readers and idle threads registered */
	pthread_mutex_t lock;                        /* idle threads wait on cond */
	pthread_cond_t cond;
	pthread_barrier_t start;
};

struct sc_thread {
	struct sc_run *run;
	struct lat_hist *h;
};

static void *sc_reader(void *arg)
{
	struct sc_run *run = arg;
	unsigned long n;

	run->p->thread_register();
	__atomic_fetch_add(&run->ready, 1, __ATOMIC_RELEASE);
	n = run->p->busy_reader(&run->stop_readers);
	run->p->thread_unregister();
	__atomic_fetch_add(&run->reads, n, __ATOMIC_RELAXED);
	return NULL;
}

/* A registered thread that never reads: what most programs have. */
static void *sc_idle(void *arg)
{
	struct sc_run *run = arg;

	run->p->thread_register();
	run->p->thread_offline();          /* QSBR: blocked, so offline */
	__atomic_fetch_add(&run->ready, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&run->lock);
	while (!run->stop_readers)
		pthread_cond_wait(&run->cond, &run->lock);
	pthread_mutex_unlock(&run->lock);
	run->p->thread_online();
	run->p->thread_unregister();
	return NULL;
}

static void *sc_caller(void *arg)
{
	struct sc_thread *t = arg;
	struct sc_run *run = t->run;

	run->p->thread_register();
	run->p->thread_offline();          /* QSBR: blocked in the barrier */
	pthread_barrier_wait(&run->start);
	run->p->thread_online();
	while (!__atomic_load_n(&run->stop_callers, __ATOMIC_RELAXED)) {
		uint64_t t0 = now_ns();

		run->p->synchronize();
		lat_add(t->h, now_ns() - t0);
	}
	run->p->thread_unregister();
	return NULL;
}

/* Stops and joins the busy readers and the idle threads. */
static void sc_stop_readers(struct sc_run *run, pthread_t *rt, int nrt)
{
	pthread_mutex_lock(&run->lock);
	__atomic_store_n(&run->stop_readers, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&run->cond);
	pthread_mutex_unlock(&run->lock);
	for (int i = 0; i < nrt; i++)
		pthread_join(rt[i], NULL);
}

/* An idle thread: a small stack, so that thousands fit. */
static void sc_spawn_idle(pthread_t *tid, struct sc_run *run)
{
	pthread_attr_t a;

	if (pthread_attr_init(&a) || pthread_attr_setstacksize(&a, IDLE_STACK) ||
	    pthread_create(tid, &a, sc_idle, run)) {
		fprintf(stderr, "treercu scale: cannot start an idle thread\n");
		exit(1);
	}
	pthread_attr_destroy(&a);
}

/* Until every reader and idle thread has registered (thousands take a
 * while to start on a loaded machine).  Acquire: pairs with the threads'
 * release increments (their registration before the measurement). */
static void sc_wait_ready(struct sc_run *run, int nrt)
{
	while (__atomic_load_n(&run->ready, __ATOMIC_ACQUIRE) < nrt)
		sleep_ns(1000000);
}

/* One configuration, one repeat. */
static struct scale_point sc_run_one(struct sc_ctx *c, int lib, long idle, int readers,
				     int callers)
{
	struct sc_run run = { .p = peer_get(lib), .lock = PTHREAD_MUTEX_INITIALIZER,
			      .cond = PTHREAD_COND_INITIALIZER };
	struct sc_thread th[MAX_CALLERS];
	pthread_t *rt = malloc((size_t)(NRD + idle) * sizeof(*rt)), ct[MAX_CALLERS];
	int nrt = readers + (int)idle;
	struct lat_hist *all = &c->hist[0];
	struct scale_point p;
	uint64_t t0, el, rd_t0 = now_ns(), top;

	if (!rt) {
		fprintf(stderr, "treercu scale: out of memory\n");
		exit(1);
	}
	pthread_barrier_init(&run.start, NULL, (unsigned)callers + 1);
	for (int i = 0; i < nrt; i++) {
		if (i < readers)
			tool_spawn(&rt[i], sc_reader, &run, "scale");
		else
			sc_spawn_idle(&rt[i], &run);
	}
	sc_wait_ready(&run, nrt);
	for (int i = 0; i < callers; i++) {
		th[i] = (struct sc_thread){ &run, &c->hist[i] };
		lat_init(th[i].h);
		tool_spawn(&ct[i], sc_caller, &th[i], "scale");
	}
	sleep_ns(5000000);                 /* let the readers get going */
	pthread_barrier_wait(&run.start);
	t0 = now_ns();
	sleep_ns((uint64_t)(c->dur_s * 1e9));
	__atomic_store_n(&run.stop_callers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < callers; i++)
		pthread_join(ct[i], NULL);
	el = now_ns() - t0;
	top = all->count;                  /* caller 0's, before the merge */
	sc_stop_readers(&run, rt, nrt);
	free(rt);
	pthread_barrier_destroy(&run.start);
	for (int i = 1; i < callers; i++) {
		top = c->hist[i].count > top ? c->hist[i].count : top;
		lat_merge(all, &c->hist[i]);
	}
	p = (struct scale_point){ lat_pct(all, 50), lat_pct(all, 99), (double)all->max,
				  (double)all->count / ((double)el / 1e9),
				  (double)run.reads / ((double)(now_ns() - rd_t0) / 1e9),
				  all->count ? 100.0 * (double)top / (double)all->count : 0 };
	return p;
}

static void sc_set_callers(long only)
{
	bool in_matrix = false;

	for (int k = 0; k < NCALL; k++) {
		callers_of[k] = callers_matrix[k];
		in_matrix |= only == callers_matrix[k];
	}
	if (only > 0 && !in_matrix)
		callers_of[1] = (int)only;
}

static bool sc_selected(const struct sc_ctx *c, int rd, int k)
{
	return (c->only_rd < 0 || c->only_rd == rd) &&
	       (c->only_callers < 0 || c->only_callers == callers_of[k]);
}

/* treercu and liburcu memb run the whole matrix; the other peers only its
 * one-caller configurations unless --callers names a count. */
static bool sc_peer_selected(const struct sc_ctx *c, int lib, int rd, int k)
{
	return c->sel[lib] && sc_selected(c, rd, k) &&
	       (lib <= PEER_LU_MEMB || c->only_callers >= 0 || callers_of[k] == 1);
}

/* Variant v: the peers of one configuration are adjacent. */
static void sc_variant(int v, int rep, void *arg)
{
	struct sc_ctx *c = arg;
	int lib = v % NPEER, k = v / NPEER % NCALL, rd = v / NPEER / NCALL % NRD,
	    ix = v / NPEER / NCALL / NRD;

	if (!sc_peer_selected(c, lib, rd, k))
		return;
	c->pt[lib][ix][rd][k][rep] = sc_run_one(c, lib, c->idle_of[ix], rd, callers_of[k]);
}

/* Median over the repeats of each figure. */
static struct scale_point sc_median(struct scale_point *pt, int reps, struct summary s[6])
{
	double v[6][MAX_REPS];
	struct scale_point m;

	for (int r = 0; r < reps; r++) {
		v[0][r] = pt[r].p50;
		v[1][r] = pt[r].p99;
		v[2][r] = pt[r].max;
		v[3][r] = pt[r].calls_s;
		v[4][r] = pt[r].reads_s;
		v[5][r] = pt[r].top_pct;
	}
	for (int i = 0; i < 6; i++)
		summarize(v[i], (size_t)reps, &s[i]);
	m = (struct scale_point){ s[0].median, s[1].median, s[2].median, s[3].median, s[4].median,
				  s[5].median };
	return m;
}

static void sc_json(struct json *j, int lib, long idle, int rd, int k, struct summary s[6])
{
	json_obj(j, NULL);
	json_str(j, "lib", peer_get(lib)->name);
	json_int(j, "idle_threads", idle);
	json_int(j, "readers", rd);
	json_int(j, "callers", callers_of[k]);
	json_summary(j, "p50_ns", &s[0]);
	json_summary(j, "p99_ns", &s[1]);
	json_summary(j, "max_ns", &s[2]);
	json_summary(j, "calls_per_s", &s[3]);
	json_summary(j, "reader_sections_per_s", &s[4]);
	json_summary(j, "top_caller_pct", &s[5]);
	json_end(j, '}');
}

/* other: treercu's point, or NULL when treercu did not run. */
static void sc_row(struct table *t, int lib, long idle, int rd, int k,
		   const struct scale_point *m, const struct scale_point *other, double spread)
{
	char b[3][32];

	tab_cell(t, "%s", peer_get(lib)->name);
	tab_cell(t, "%ld", idle);
	tab_cell(t, "%d", rd);
	tab_cell(t, "%d", callers_of[k]);
	tab_cell(t, "%s", fmt_ns(b[0], sizeof(b[0]), m->p50));
	tab_cell(t, "%s", fmt_ns(b[1], sizeof(b[1]), m->p99));
	tab_cell(t, "%s", fmt_ns(b[2], sizeof(b[2]), m->max));
	tab_cell(t, "%.0f", m->calls_s);
	tab_cell(t, "%.1f", m->reads_s / 1e6);
	tab_cell(t, "%.0f%%", spread);
	tab_cell(t, "%.1f%%", m->top_pct);
	if (lib != PEER_TREERCU && other) {
		tab_cell(t, "%.2fx", other->p50 / m->p50);
		tab_cell(t, "%.2fx", other->p99 / m->p99);
		tab_cell(t, "%.2fx", other->calls_s / m->calls_s);
	} else {
		tab_cell(t, "%s", "");
		tab_cell(t, "%s", "");
		tab_cell(t, "%s", "");
	}
}

/* One configuration's rows; res keeps the first idle count's medians. */
static void sc_report_one(struct sc_ctx *c, int reps, int ix, int rd, int k, struct json *j,
			  struct table *t, struct scale_result *res)
{
	struct summary s[NPEER][6];
	struct scale_point m[NPEER];
	const struct scale_point *tr = sc_peer_selected(c, PEER_TREERCU, rd, k) ?
				       &m[PEER_TREERCU] : NULL;

	for (int lib = 0; lib < NPEER; lib++) {
		if (!sc_peer_selected(c, lib, rd, k))
			continue;
		m[lib] = sc_median(c->pt[lib][ix][rd][k], reps, s[lib]);
		if (ix == 0)
			res->pt[lib][rd][k] = m[lib];
		sc_json(j, lib, c->idle_of[ix], rd, k, s[lib]);
	}
	for (int lib = 0; lib < NPEER; lib++)
		if (sc_peer_selected(c, lib, rd, k))
			sc_row(t, lib, c->idle_of[ix], rd, k, &m[lib], tr, s[lib][0].spread);
}

static void sc_report(struct sc_ctx *c, int reps, struct json *j, struct scale_result *res)
{
	static const char *const cols[] = {
		"lib", "idle", "readers", "callers", "p50", "p99", "max", "calls/s",
		"reads M/s", "p50 spread", "top caller", "p50 ratio", "p99 ratio", "calls/s ratio",
	};
	static const int w[] = { 12, 5, 7, 7, 10, 10, 10, 8, 6, 6, 6, 6, 6, 6 };
	struct table t;

	tab_start(&t, 14, cols, w);
	json_arr(j, "results");
	for (int ix = 0; ix < c->nidle; ix++)
		for (int rd = 0; rd < NRD; rd++)
			for (int k = 0; k < NCALL; k++)
				sc_report_one(c, reps, ix, rd, k, j, &t, res);
	json_end(j, ']');
}

/* ---- driver ---- */

const struct tool_opt scale_opts[] = {
	TOPT_I("repeats", "N", "repeats", 1, MAX_REPS, 5, 3,
	       "interleaved repeats of every synchronize_rcu() configuration"),
	TOPT_N("duration", "SEC", "seconds", 0.01, 3600, 1.0, 0.25,
	       "length of one run of one configuration"),
	TOPT_IX("readers", "N", "busy reader threads", 0, NRD - 1, "all of 0, 1 and 2",
		"run only the configurations with N busy readers"),
	TOPT_IX("callers", "N", "synchronize_rcu() threads", 1, MAX_CALLERS, "all of 1, 8 and 64",
		"run only the configurations with N callers (the matrix has 1, 8, 64; any other N runs in place of 8)"),
	TOPT_S("idle", "N[,N...]", "1",
	       "idle registered reader threads (sleeping) in every configuration; a list "
	       "(e.g. 10,100,1000,4000) runs the matrix once per count, interleaved"),
	TOPT_S("peers", "LIST", "all (callbacks: treercu, treercu-qsbr, memb, qsbr, ck; "
	       "with --quick treercu, memb)",
	       "comma-separated peers in the synchronize_rcu() matrix and the callback "
	       "benchmarks: " PEER_IDS ", or all"),
	TOPT_S("sync-path", "0|1|2|all", "the library's default path, one pass",
	       "treercu's synchronize_rcu() wake path (normal_wake_from_gp), one pass per path"),
	TOPT_F("callbacks", "run the callback benchmarks (call_rcu, rcu_barrier, flood); "
	       "alone unless --sync-path is given"),
	TOPT_F("no-callbacks", "skip the callback benchmarks (a full run does them "
	       "unless --quick, --readers, --callers or --sync-path is given)"),
	TOPT_I("cb-repeats", "N", "repeats", 1, CB_MAX_REPS, 5, 3,
	       "interleaved repeats of the callback benchmarks"),
	TOPT_I("cb-count", "N", "callbacks", CB_ENQ_N, 100000000, 1000000, 1000000,
	       "callbacks in the end-to-end benchmark"),
	TOPT_N("flood-secs", "SEC", "seconds", 0.1, 3600, 10, 2,
	       "length of one callback flood"),
	TOPT_I("flood-repeats", "N", "repeats", 1, CB_MAX_REPS, 2, 1,
	       "floods per library"),
	TOPT_END,
};

/* --sync-path 0|1|2|all: a bit mask of normal_wake_from_gp values; 0 if absent. */
static int sc_sync_paths(struct tool_opts *o)
{
	const char *v = opt_str(o, "sync-path");

	if (!v)
		return 0;
	if (!strcmp(v, "all"))
		return 7;
	if (v[0] >= '0' && v[0] <= '2' && !v[1])
		return 1 << (v[0] - '0');
	fprintf(stderr, "treercu scale: --sync-path %s: expected 0, 1, 2 or all\n", v);
	exit(2);
}

/* The synchronize_rcu() matrix, once (paths 0) or once per selected path. */
static void sc_sync(struct sc_ctx *c, long reps, int paths, struct json *j,
		    struct scale_result *res)
{
	static const char *const pname[3] = {
		"0: wakeme callback", "1: seed-004 waiter list", "2: GP-end futex",
	};
	int nvar = NPEER * NRD * NCALL * c->nidle, nrun = 0;
	long saved = 2;

	for (int v = 0; v < nvar; v++)
		nrun += sc_peer_selected(c, v % NPEER, v / NPEER / NCALL % NRD, v / NPEER % NCALL);
	printf("\nscale: synchronize_rcu() latency and throughput; %ld interleaved repeats of "
	       "%.2f s per configuration, idle = registered threads sleeping meanwhile; figures are "
	       "medians over repeats; ratios (on a peer's row) are treercu/that peer; peers "
	       "other than liburcu memb run with 1 caller unless --callers is given; a QSBR "
	       "reader reports a quiescent state every %d sections; top caller = the busiest "
	       "caller's share of the calls (fair: 100%% / callers: a caller that keeps its CPU "
	       "makes many short calls, and the p50 counts calls, not callers)\n",
	       reps, c->dur_s, PEER_QS_EVERY);
	trcu_get_tunable("normal_wake_from_gp", &saved);
	for (int p = 0; p < 3; p++) {
		char key[32];

		if (paths ? !(paths & (1 << p)) : p != 2)   /* no --sync-path: one pass */
			continue;
		if (paths) {
			trcu_set_tunable("normal_wake_from_gp", p);
			printf("\ntreercu synchronize_rcu() path normal_wake_from_gp=%s\n", pname[p]);
			snprintf(key, sizeof(key), "sync_path_%d", p);
			json_obj(j, key);
		}
		run_interleaved(nvar, (int)reps, sc_variant, c, "scale",
				nrun * (double)reps * (c->dur_s + 0.03));
		sc_report(c, (int)reps, j, res);
		if (paths)
			json_end(j, '}');
	}
	trcu_set_tunable("normal_wake_from_gp", saved);
}

/* Callback options; true when the callback benchmarks should run. */
static bool sc_cb_opts(struct tool_opts *o, struct cb_ctx *cb, bool flag_cb, bool no_cb,
		       bool restricted)
{
	cb_defaults(cb, o);
	return flag_cb || (!o->quick && !no_cb && !restricted);
}

/* --idle N[,N...] into c->idle_of; 0, or 2 after a message naming the problem. */
static int sc_idle_list(struct tool_opts *o, struct sc_ctx *c)
{
	const char *s = opt_str(o, "idle");

	c->nidle = 0;
	if (!s) {
		c->idle_of[c->nidle++] = 1;
		return 0;
	}
	for (;;) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || (*end && *end != ',') || v < 0 || v > MAX_IDLE ||
		    c->nidle == NIDLE) {
			fprintf(stderr, "treercu scale: --idle %s: expected up to %d comma-separated "
				"counts in [0, %d]\n", opt_str(o, "idle"), NIDLE, MAX_IDLE);
			return 2;
		}
		c->idle_of[c->nidle++] = v;
		if (!*end)
			return 0;
		s = end + 1;
	}
}

/* Every point NAN until its configuration runs (a peer left out stays so). */
static void sc_result_init(struct scale_result *res)
{
	for (int lib = 0; lib < NPEER; lib++)
		for (int rd = 0; rd < NRD; rd++)
			for (int k = 0; k < NCALL; k++)
				res->pt[lib][rd][k] = (struct scale_point){ NAN, NAN, NAN, NAN, NAN, NAN };
}

int scale_main(struct tool_opts *o, struct scale_result *res)
{
	bool flag_cb, no_cb;
	long reps;
	struct callbacks_result cbr;
	struct sc_ctx *c;
	struct cb_ctx *cb;
	bool want_cb;
	int paths, rc = 0;
	struct json j;

	tool_bind(o, scale_opts);
	sc_result_init(res);
	flag_cb = opt_flag(o, "callbacks");
	no_cb = opt_flag(o, "no-callbacks");
	paths = sc_sync_paths(o);
	c = calloc(1, sizeof(*c));
	cb = cb_ctx_new();
	if (!c || !cb)
		return 1;
	if (peer_select(opt_str(o, "peers"), c->sel, "treercu scale")) {
		free(c);
		free(cb);
		return 2;
	}
	if (sc_idle_list(o, c)) {
		free(c);
		free(cb);
		return 2;
	}
	if (json_open(&j, o, "scale"))
		return 1;
	c->only_rd = c->only_callers = -1;
	opt_long(o, "repeats", &reps);
	opt_double(o, "duration", &c->dur_s);
	opt_long(o, "readers", &c->only_rd);
	opt_long(o, "callers", &c->only_callers);
	sc_set_callers(c->only_callers);
	want_cb = sc_cb_opts(o, cb, flag_cb, no_cb,
			     c->only_rd >= 0 || c->only_callers >= 0 || paths);
	c->hist = calloc(MAX_CALLERS, sizeof(*c->hist));
	if (!c->hist)
		return 1;
	json_str(&j, "command", "scale");
	machine_note(&j);
	json_int(&j, "repeats", reps);
	json_num(&j, "duration_s", c->dur_s);
	json_int(&j, "idle_threads", c->idle_of[0]);
	if (!flag_cb || paths)
		sc_sync(c, reps, paths, &j, res);
	if (want_cb)
		rc = cb_main(o, cb, &j, &cbr);
	if (json_close(&j))
		rc = 1;
	free(c->hist);
	free(c);
	free(cb);
	return rc;
}

int cmd_scale(struct tool_opts *o)
{
	struct scale_result r;

	return scale_main(o, &r);
}
