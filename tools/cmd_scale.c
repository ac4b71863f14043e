/* SPDX-License-Identifier: MIT */
/*
 * scale: synchronize_rcu() latency (p50, p99, max) and calls/s with 0, 1, 2
 * busy readers and 1, 8, 64 concurrent callers, treercu against liburcu
 * memb in the same run.  Each configuration starts its own threads of one
 * library only and joins them before the next; configurations are
 * interleaved over the repeats and every figure is the median of its
 * repeats.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>

#include "common.h"
#include "liburcu_glue.h"

#define NLIB 2
#define NRD 3
#define NCALL 3
#define MAX_CALLERS 64
#define MAX_REPS 51
#define MAX_IDLE 16
static const int callers_of[NCALL] = { 1, 8, 64 };
static const char *const libname[NLIB] = { "treercu", "liburcu memb" };

struct sc_ctx {
	double dur_s;
	long only_rd, only_callers;                  /* -1: every configuration */
	long idle;                                   /* idle registered threads */
	struct lat_hist *hist;                       /* MAX_CALLERS histograms */
	struct scale_point pt[NLIB][NRD][NCALL][MAX_REPS];
};

struct sc_run {
	int lib;
	int stop_readers, stop_callers;
	unsigned long reads;                         /* busy readers' sections */
	pthread_mutex_t lock;                        /* idle threads wait on cond */
	pthread_cond_t cond;
	pthread_barrier_t start;
	struct lat_hist *hist;
};

struct sc_thread {
	struct sc_run *run;
	struct lat_hist *h;
};

static void *sc_reader(void *arg)
{
	struct sc_run *run = arg;
	unsigned long n = 0;

	if (run->lib == 0) {
		trcu_register_thread();
		BUSY_READER_LOOP(&run->stop_readers, rcu_read_lock(), rcu_read_unlock(), n);
		trcu_unregister_thread();
	} else {
		lu_memb_register_thread();
		n = lu_memb_busy_reader(&run->stop_readers);
		lu_memb_unregister_thread();
	}
	__atomic_fetch_add(&run->reads, n, __ATOMIC_RELAXED);
	return NULL;
}

/* A registered thread that never reads: what most programs have. */
static void *sc_idle(void *arg)
{
	struct sc_run *run = arg;

	if (run->lib == 0)
		trcu_register_thread();
	else
		lu_memb_register_thread();
	pthread_mutex_lock(&run->lock);
	while (!run->stop_readers)
		pthread_cond_wait(&run->cond, &run->lock);
	pthread_mutex_unlock(&run->lock);
	if (run->lib == 0)
		trcu_unregister_thread();
	else
		lu_memb_unregister_thread();
	return NULL;
}

static void *sc_caller(void *arg)
{
	struct sc_thread *t = arg;
	struct sc_run *run = t->run;

	if (run->lib == 0)
		trcu_register_thread();
	else
		lu_memb_register_thread();
	pthread_barrier_wait(&run->start);
	while (!__atomic_load_n(&run->stop_callers, __ATOMIC_RELAXED)) {
		uint64_t t0 = now_ns();

		if (run->lib == 0)
			synchronize_rcu();
		else
			lu_memb_synchronize_rcu();
		lat_add(t->h, now_ns() - t0);
	}
	if (run->lib == 0)
		trcu_unregister_thread();
	else
		lu_memb_unregister_thread();
	return NULL;
}

static void sc_spawn(pthread_t *tid, void *(*fn)(void *), void *arg)
{
	if (pthread_create(tid, NULL, fn, arg)) {
		fprintf(stderr, "scale: pthread_create failed\n");
		exit(1);
	}
}

/* One configuration, one repeat. */
static struct scale_point sc_run_one(struct sc_ctx *c, int lib, int readers, int callers)
{
	struct sc_run run = { .lib = lib, .hist = c->hist, .lock = PTHREAD_MUTEX_INITIALIZER,
			      .cond = PTHREAD_COND_INITIALIZER };
	struct sc_thread th[MAX_CALLERS];
	pthread_t rt[NRD + MAX_IDLE], ct[MAX_CALLERS];
	int nrt = readers + (int)c->idle;
	struct lat_hist *all = &c->hist[0];
	struct scale_point p;
	uint64_t t0, el, rd_t0 = now_ns();

	pthread_barrier_init(&run.start, NULL, (unsigned)callers + 1);
	for (int i = 0; i < nrt; i++)
		sc_spawn(&rt[i], i < readers ? sc_reader : sc_idle, &run);
	for (int i = 0; i < callers; i++) {
		th[i] = (struct sc_thread){ &run, &c->hist[i] };
		lat_init(th[i].h);
		sc_spawn(&ct[i], sc_caller, &th[i]);
	}
	sleep_ns(5000000);                 /* let the readers get going */
	pthread_barrier_wait(&run.start);
	t0 = now_ns();
	sleep_ns((uint64_t)(c->dur_s * 1e9));
	__atomic_store_n(&run.stop_callers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < callers; i++)
		pthread_join(ct[i], NULL);
	el = now_ns() - t0;
	pthread_mutex_lock(&run.lock);
	__atomic_store_n(&run.stop_readers, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&run.cond);
	pthread_mutex_unlock(&run.lock);
	for (int i = 0; i < nrt; i++)
		pthread_join(rt[i], NULL);
	p.reads_s = (double)run.reads / ((double)(now_ns() - rd_t0) / 1e9);
	pthread_barrier_destroy(&run.start);
	for (int i = 1; i < callers; i++)
		lat_merge(all, &c->hist[i]);
	p.p50 = lat_pct(all, 50);
	p.p99 = lat_pct(all, 99);
	p.max = (double)all->max;
	p.calls_s = (double)all->count / ((double)el / 1e9);
	return p;
}

static bool sc_selected(const struct sc_ctx *c, int rd, int k)
{
	return (c->only_rd < 0 || c->only_rd == rd) &&
	       (c->only_callers < 0 || c->only_callers == callers_of[k]);
}

/* Variant v: treercu and liburcu of one configuration are adjacent. */
static void sc_variant(int v, int rep, void *arg)
{
	struct sc_ctx *c = arg;
	int lib = v % NLIB, k = v / NLIB % NCALL, rd = v / NLIB / NCALL;

	if (!sc_selected(c, rd, k))
		return;
	c->pt[lib][rd][k][rep] = sc_run_one(c, lib, rd, callers_of[k]);
}

/* Median over the repeats of each figure. */
static struct scale_point sc_median(struct scale_point *pt, int reps, struct summary s[5])
{
	double v[5][MAX_REPS];
	struct scale_point m;

	for (int r = 0; r < reps; r++) {
		v[0][r] = pt[r].p50;
		v[1][r] = pt[r].p99;
		v[2][r] = pt[r].max;
		v[3][r] = pt[r].calls_s;
		v[4][r] = pt[r].reads_s;
	}
	for (int i = 0; i < 5; i++)
		summarize(v[i], (size_t)reps, &s[i]);
	m = (struct scale_point){ s[0].median, s[1].median, s[2].median, s[3].median, s[4].median };
	return m;
}

static void sc_json(struct json *j, int lib, int rd, int k, struct summary s[5])
{
	json_obj(j, NULL);
	json_str(j, "lib", libname[lib]);
	json_int(j, "readers", rd);
	json_int(j, "callers", callers_of[k]);
	json_summary(j, "p50_ns", &s[0]);
	json_summary(j, "p99_ns", &s[1]);
	json_summary(j, "max_ns", &s[2]);
	json_summary(j, "calls_per_s", &s[3]);
	json_summary(j, "reader_sections_per_s", &s[4]);
	json_end(j, '}');
}

static void sc_row(struct table *t, int lib, int rd, int k, const struct scale_point *m,
		   const struct scale_point *other, double spread)
{
	char b[3][32];

	tab_cell(t, "%s", libname[lib]);
	tab_cell(t, "%d", rd);
	tab_cell(t, "%d", callers_of[k]);
	tab_cell(t, "%s", fmt_ns(b[0], sizeof(b[0]), m->p50));
	tab_cell(t, "%s", fmt_ns(b[1], sizeof(b[1]), m->p99));
	tab_cell(t, "%s", fmt_ns(b[2], sizeof(b[2]), m->max));
	tab_cell(t, "%.0f", m->calls_s);
	tab_cell(t, "%.1f", m->reads_s / 1e6);
	tab_cell(t, "%.0f%%", spread);
	if (lib == 0) {
		tab_cell(t, "%.2fx", m->p50 / other->p50);
		tab_cell(t, "%.2fx", m->p99 / other->p99);
		tab_cell(t, "%.2fx", m->calls_s / other->calls_s);
	} else {
		tab_cell(t, "%s", "");
		tab_cell(t, "%s", "");
		tab_cell(t, "%s", "");
	}
}

static void sc_report(struct sc_ctx *c, int reps, struct json *j, struct scale_result *res)
{
	static const char *const cols[] = {
		"lib", "readers", "callers", "p50", "p99", "max", "calls/s", "reads M/s",
		"p50 spread", "p50 ratio", "p99 ratio", "calls/s ratio",
	};
	static const int w[] = { 12, 7, 7, 10, 10, 10, 8, 6, 6, 6, 6, 6 };
	struct table t;

	tab_start(&t, 12, cols, w);
	json_arr(j, "results");
	for (int rd = 0; rd < NRD; rd++) {
		for (int k = 0; k < NCALL; k++) {
			struct summary s[NLIB][5];

			if (!sc_selected(c, rd, k))
				continue;
			for (int lib = 0; lib < NLIB; lib++) {
				res->pt[lib][rd][k] = sc_median(c->pt[lib][rd][k], reps, s[lib]);
				sc_json(j, lib, rd, k, s[lib]);
			}
			for (int lib = 0; lib < NLIB; lib++)
				sc_row(&t, lib, rd, k, &res->pt[lib][rd][k], &res->pt[1][rd][k],
				       s[lib][0].spread);
		}
	}
	json_end(j, ']');
}

int scale_main(struct tool_opts *o, struct scale_result *res)
{
	static const char *const names[] = {
		"--repeats", "--duration", "--readers", "--callers", "--idle", NULL,
	};
	long reps = o->quick ? 3 : 5;
	double dur = o->quick ? 0.25 : 1.0;
	int nvar = NLIB * NRD * NCALL;
	struct sc_ctx *c;
	struct json j;
	int rc;

	if (!args_check(o, "scale", names))
		return 2;
	arg_long(o, "--repeats", 1, MAX_REPS, &reps);
	arg_double(o, "--duration", 0.01, 3600, &dur);
	c = calloc(1, sizeof(*c));
	if (!c || json_open(&j, o->json))
		return 1;
	c->dur_s = dur;
	c->only_rd = c->only_callers = -1;
	c->idle = 1;
	arg_long(o, "--idle", 0, MAX_IDLE, &c->idle);
	arg_long(o, "--readers", 0, NRD - 1, &c->only_rd);
	arg_long(o, "--callers", 1, MAX_CALLERS, &c->only_callers);
	c->hist = calloc(MAX_CALLERS, sizeof(*c->hist));
	if (!c->hist)
		return 1;
	printf("\nscale: synchronize_rcu() latency and throughput; %ld interleaved repeats of "
	       "%.2f s per configuration, %ld idle registered thread(s) in each; figures are "
	       "medians over repeats; ratios are treercu/liburcu memb\n", reps, dur, c->idle);
	run_interleaved(nvar, (int)reps, sc_variant, c, "scale", nvar * (double)reps * (dur + 0.03));
	json_str(&j, "command", "scale");
	json_int(&j, "repeats", reps);
	json_num(&j, "duration_s", dur);
	json_int(&j, "idle_threads", c->idle);
	sc_report(c, (int)reps, &j, res);
	rc = json_close(&j) ? 1 : 0;
	free(c->hist);
	free(c);
	return rc;
}

int cmd_scale(struct tool_opts *o)
{
	struct scale_result r;

	return scale_main(o, &r);
}
