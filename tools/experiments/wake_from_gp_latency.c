/* SPDX-License-Identifier: MIT */
/*
 * Reproduces the kernel patch "rcu: Enable rcu_normal_wake_from_gp on small
 * systems" (Uladzislau Rezki): 64 jobs calling synchronize_rcu() in a loop,
 * latency histograms with and without the waiter list woken from the grace
 * period, beside the patch's own.
 *
 * `treercu seeds 003`: 64 threads call synchronize_rcu() in a loop on each
 * path (sync_paths.h), paths interleaved; latency histograms (buckets
 * fitted to this machine, and the seed's 10 ms ones beside the seed's own),
 * then the seed's load (one job per CPU) in the kernel and treercu
 * profiles; PNG plots (wake_from_gp_plot.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "common.h"
#include "goals.h"
#include "results.h"
#include "sync_paths.h"
#include "wake_from_gp_latency.h"

/* ======================================================================
 * seeds 003: 64 threads calling synchronize_rcu()
 * ====================================================================== */

/* The seed's histograms (10 ms buckets, 0..129999 us; the seed cut each
 * list with "..." after the last row given, marked here with -1). */
const long seed3[2][S3_SEED_ROWS] = {
	{ 1, 4, 399, 3197, 10428, 17363, 15529, 9287, 4249, 1915, 922, 390, 187 },
	{ 1, 234, 6678, 33463, 20669, 2766, 183, -1, -1, -1, -1, -1, -1 },
};
const char *const seed3_name[2] = { "seed default", "seed wake_from_gp" };

static void *s3_caller(void *arg)
{
	struct s3_thread *t = arg;

	trcu_register_thread();
	pthread_barrier_wait(&t->c->start);
	while (!__atomic_load_n(&t->c->stop, __ATOMIC_RELAXED)) {
		uint64_t t0 = now_ns();

		synchronize_rcu();
		lat_add(&t->h, now_ns() - t0);
	}
	trcu_unregister_thread();
	return NULL;
}

/*
 * Background callbacks (--bg-cbs RATE): one registered thread queues RATE
 * call_rcu()/s in 1 ms bursts, each callback freeing its malloc'd head (as
 * kfree_rcu() does).  A kernel always has such callbacks queued (seed 004:
 * thousands to a million); without them the wakeme callbacks are the only
 * ones and nothing is queued ahead of a wake-up.  Not timed; drained with
 * rcu_barrier() after each run.
 */
static void s3_bg_free(struct rcu_head *h)
{
	free(h);
}

static void *s3_bg_fn(void *arg)
{
	struct s3_ctx *c = arg;
	long burst = c->bg_rate / 1000 > 0 ? c->bg_rate / 1000 : 1;
	uint64_t next = now_ns();

	trcu_register_thread();
	while (!__atomic_load_n(&c->bg_stop, __ATOMIC_RELAXED)) {
		uint64_t now;

		for (long i = 0; i < burst; i++) {
			struct rcu_head *h = malloc(sizeof(*h));

			if (!h)
				break;
			call_rcu(h, s3_bg_free);
			c->bg_queued++;
		}
		next += 1000000;
		now = now_ns();
		if (next > now)
			sleep_ns(next - now);
		else
			next = now;   /* fell behind: no catching up in a burst */
	}
	trcu_unregister_thread();
	return NULL;
}

/* Idle registered threads (blocked on a condition variable). */
struct idle_set {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	long n;
	pthread_t tid[64];
};

static void *idle_fn(void *arg)
{
	struct idle_set *s = arg;

	trcu_register_thread();
	pthread_mutex_lock(&s->lock);
	while (!s->stop)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	trcu_unregister_thread();
	return NULL;
}

static int idle_start(struct idle_set *s, long n)
{
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->stop = 0;
	for (s->n = 0; s->n < n; s->n++)
		if (pthread_create(&s->tid[s->n], NULL, idle_fn, s))
			return -1;
	return 0;
}

static void idle_stop(struct idle_set *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (long i = 0; i < s->n; i++)
		pthread_join(s->tid[i], NULL);
}

static void s3_record(struct s3_ctx *c, int path, int rep, double secs)
{
	struct lat_hist *h = &c->rep_h;
	double *r = c->rep[path][rep];

	lat_init(h);
	r[F_TOP] = 0;
	for (long i = 0; i < c->threads; i++) {
		lat_merge(h, &c->th[i].h);
		r[F_TOP] = fmax(r[F_TOP], (double)c->th[i].h.count);
	}
	r[F_TOP] = h->count ? 100 * r[F_TOP] / (double)h->count : 0;
	lat_merge(&c->pooled[path], h);
	r[F_P50] = lat_pct(h, 50);
	r[F_P90] = lat_pct(h, 90);
	r[F_P99] = lat_pct(h, 99);
	r[F_MAX] = (double)h->max;
	r[F_CPS] = (double)h->count / secs;
}

static void s3_variant(int path, int rep, void *arg)
{
	struct s3_ctx *c = arg;
	struct trcu_stats a, b;
	uint64_t t0;
	long n = 0;

	if (sp_apply(path)) {
		c->err = 1;
		return;
	}
	synchronize_rcu();                        /* settle after the switch */
	trcu_get_stats(&a);
	c->stop = 0;
	pthread_barrier_init(&c->start, NULL, (unsigned)c->threads + 1);
	for (; n < c->threads; n++) {
		c->th[n].c = c;
		lat_init(&c->th[n].h);
		if (pthread_create(&c->th[n].tid, NULL, s3_caller, &c->th[n]))
			break;
	}
	if (n < c->threads) {
		fprintf(stderr, "seeds 003: cannot create thread %ld\n", n);
		exit(1);
	}
	c->bg_stop = 0;
	if (c->bg_rate && pthread_create(&c->bg, NULL, s3_bg_fn, c)) {
		fprintf(stderr, "seeds 003: cannot create the background thread\n");
		exit(1);
	}
	pthread_barrier_wait(&c->start);
	t0 = now_ns();
	sleep_ns((uint64_t)(c->dur_s * 1e9));
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
	for (long i = 0; i < n; i++)
		pthread_join(c->th[i].tid, NULL);
	s3_record(c, path, rep, (double)(now_ns() - t0) / 1e9);
	if (c->bg_rate) {
		__atomic_store_n(&c->bg_stop, 1, __ATOMIC_RELAXED);
		pthread_join(c->bg, NULL);
		rcu_barrier();                    /* next run starts with none queued */
	}
	pthread_barrier_destroy(&c->start);
	trcu_get_stats(&b);
	c->direct[path] += b.sr_woken_direct - a.sr_woken_direct;
	c->deferred[path] += b.sr_woken_deferred - a.sr_woken_deferred;
	c->no_head[path] += b.sr_no_wait_head - a.sr_no_wait_head;
	c->gps[path] += (long)(b.gp_completed - a.gp_completed);
}

/* Median over the repeats of one figure (and its summary). */
static double s3_med(const struct s3_ctx *c, int path, int f, struct summary *s)
{
	double v[S3_REPS_MAX];
	struct summary tmp;

	for (long r = 0; r < c->reps; r++)
		v[r] = c->rep[path][r][f];
	summarize(v, (size_t)c->reps, s ? s : &tmp);
	return (s ? s : &tmp)->median;
}

/*
 * One row per path: calls, calls/s, p50/p90/p99 (medians over repeats),
 * max, p50 spread; `all` (the main run) adds GPs, list wake-ups and the
 * busiest caller's share.
 */
static void s3_path_table(const struct s3_ctx *c, bool all)
{
	static const char *const cols[] = {
		"path (normal_wake_from_gp)", "calls", "calls/s", "p50", "p90", "p99", "max",
		"p50 spread", "GPs", "woken direct/deferred", "top thread",
	};
	static const int w[] = { 30, 8, 8, 10, 10, 10, 10, 6, 8, 12, 5 };
	struct table t;
	char b[4][32];

	tab_start(&t, all ? 11 : 8, cols, w);
	for (int p = 0; p < NSPATH; p++) {
		struct summary s;
		double p50 = s3_med(c, p, F_P50, &s);

		tab_cell(&t, "%s", all ? sp_name[p] : sp_base[p]);
		tab_cell(&t, "%llu", (unsigned long long)c->pooled[p].count);
		tab_cell(&t, "%.0f", s3_med(c, p, F_CPS, NULL));
		tab_cell(&t, "%s", fmt_ns(b[0], 32, p50));
		tab_cell(&t, "%s", fmt_ns(b[1], 32, s3_med(c, p, F_P90, NULL)));
		tab_cell(&t, "%s", fmt_ns(b[2], 32, s3_med(c, p, F_P99, NULL)));
		tab_cell(&t, "%s", fmt_ns(b[3], 32, (double)c->pooled[p].max));
		tab_cell(&t, "%.0f%%", s.spread);
		if (!all)
			continue;
		tab_cell(&t, "%ld", c->gps[p]);
		tab_cell(&t, "%ld/%ld", c->direct[p], c->deferred[p]);
		tab_cell(&t, "%.1f%%", s3_med(c, p, F_TOP, NULL));
	}
}

static void s3_summary_table(const struct s3_ctx *c)
{
	printf("\nPer path (median over %ld repeats of p50/p90/p99 and calls/s; max = largest seen;\n"
	       "top thread = the busiest caller's share of the calls, fair = %.1f%%):\n",
	       c->reps, 100.0 / (double)c->threads);
	s3_path_table(c, true);
}

/* 1-2-5 edges spanning every path's calls. */
static void s3_edges(struct s3_ctx *c)
{
	static const double m[] = { 1, 2, 5 };
	double lo = 1e300, hi = 0, e;

	for (int p = 0; p < NSPATH; p++) {
		if (!c->pooled[p].count)
			continue;
		lo = fmin(lo, (double)c->pooled[p].min);
		hi = fmax(hi, (double)c->pooled[p].max);
	}
	e = pow(10, floor(log10(lo > 1 ? lo : 1)));
	c->nedges = 0;
	for (int i = 0; c->nedges < S3_EDGES_MAX; i++) {
		double v = m[i % 3] * e * pow(10, i / 3);

		if (v > lo || c->nedges == 0) {
			if (c->nedges == 0 && v > lo)
				v = e;
			c->edges[c->nedges++] = v;
		}
		if (v > hi)
			break;
	}
}

uint64_t bucket_count(const struct lat_hist *h, double lo, double hi)
{
	return lat_count_below(h, hi) - lat_count_below(h, lo);
}

static void hist_cell(struct table *t, uint64_t n, uint64_t total)
{
	tab_cell(t, "%llu %5.1f%%", (unsigned long long)n, total ? 100.0 * (double)n / (double)total : 0);
}

static void s3_hist_adaptive(const struct s3_ctx *c, const char *title)
{
	static const char *const cols[] = { "latency", "0 wakeme", "1 list", "2 futex" };
	static const int w[] = { 24, 16, 16, 16 };
	struct table t;
	char a[32], b[32], lab[80];

	printf("\n%s, log-spaced buckets fitted to this run (calls, %% of the path's calls):\n", title);
	tab_start(&t, 4, cols, w);
	for (int i = 0; i + 1 < c->nedges; i++) {
		snprintf(lab, sizeof(lab), "%s - %s", fmt_ns(a, 32, c->edges[i]), fmt_ns(b, 32, c->edges[i + 1]));
		tab_cell(&t, "%s", lab);
		for (int p = 0; p < NSPATH; p++)
			hist_cell(&t, bucket_count(&c->pooled[p], c->edges[i], c->edges[i + 1]), c->pooled[p].count);
	}
}

long seed3_total(int s)
{
	long n = 0;

	for (int i = 0; i < S3_SEED_ROWS; i++)
		n += seed3[s][i] > 0 ? seed3[s][i] : 0;
	return n;
}

static void s3_hist_10ms(const struct s3_ctx *c)
{
	static const char *const cols[] = {
		"latency (us)", "seed default", "seed wake_from_gp", "0 wakeme", "1 list", "2 futex",
	};
	static const int w[] = { 15, 14, 17, 15, 15, 15 };
	struct table t;

	printf("\n(b) The seed's 10 ms buckets (calls, %% of the shown total); seed: 64 jobs on a "
	       "64-CPU kernel, its lists cut with \"...\":\n");
	tab_start(&t, 6, cols, w);
	for (int i = 0; i <= S3_SEED_ROWS; i++) {
		double lo = i * 1e7, hi = i < S3_SEED_ROWS ? lo + 1e7 : 1e300;

		tab_cell(&t, i < S3_SEED_ROWS ? "%.0f - %.0f" : ">= %.0f", lo / 1e3, hi / 1e3 - 1);
		for (int s = 0; s < 2; s++) {
			long v = i < S3_SEED_ROWS ? seed3[s][i] : -1;

			if (v < 0)
				tab_cell(&t, "%s", "...");
			else
				tab_cell(&t, "%ld %5.1f%%", v, 100.0 * (double)v / (double)seed3_total(s));
		}
		for (int p = 0; p < NSPATH; p++)
			hist_cell(&t, bucket_count(&c->pooled[p], lo, hi), c->pooled[p].count);
	}
}

/* Percentile of the seed's histogram, linear inside a bucket (of the rows
 * shown: the tail cut by "..." is small, <0.5 %). */
static double seed3_pct(int s, double p)
{
	double rank = p / 100 * (double)seed3_total(s), seen = 0;

	for (int i = 0; i < S3_SEED_ROWS && seed3[s][i] > 0; i++) {
		if (seen + (double)seed3[s][i] >= rank)
			return (i + (rank - seen) / (double)seed3[s][i]) * 1e7;
		seen += (double)seed3[s][i];
	}
	return NAN;
}

/* Does the list path cut wakeme's median and tail, as in the seed?  A cut
 * is the list / wakeme ratio the quick summary's goal for it names
 * (bench/goals.tsv: 0.95, a 5 % cut): within it the two are the same on a
 * noisy machine. */
#define S3_CUT goal_limit("s3_64_p50")

static const char *s3_verdict(const struct s3_ctx *c)
{
	double o0 = s3_med(c, SP_WAKEME, F_P50, NULL), o1 = s3_med(c, SP_LIST, F_P50, NULL);
	double q0 = s3_med(c, SP_WAKEME, F_P99, NULL), q1 = s3_med(c, SP_LIST, F_P99, NULL);

	return o1 <= S3_CUT * o0 && q1 <= S3_CUT * q0 ? "median and tail cut, as in the seed"
	       : o1 <= S3_CUT * o0 ? "median cut as in the seed, but NOT the tail"
	       : "the seed's cut is NOT reproduced here";
}

static void s3_compare(const struct s3_ctx *c)
{
	double sd = seed3_pct(0, 50), sw = seed3_pct(1, 50);
	double o0 = s3_med(c, SP_WAKEME, F_P50, NULL), o1 = s3_med(c, SP_LIST, F_P50, NULL);
	double o2 = s3_med(c, SP_FUTEX, F_P50, NULL);
	double q0 = s3_med(c, SP_WAKEME, F_P99, NULL), q1 = s3_med(c, SP_LIST, F_P99, NULL);
	char b[6][32];

	printf("\nSummary (seed 003):\n");
	printf("- seed (kernel, 64 CPUs): p50 %s -> %s with rcu_normal_wake_from_gp (%.0f%% cut); "
	       "p90 %s -> %s\n", fmt_ns(b[0], 32, sd), fmt_ns(b[1], 32, sw), (1 - sw / sd) * 100,
	       fmt_ns(b[2], 32, seed3_pct(0, 90)), fmt_ns(b[3], 32, seed3_pct(1, 90)));
	printf("- ours, %ld jobs: p50 wakeme %s -> list %s (x%.2f), p99 %s -> %s (x%.2f): %s\n",
	       c->threads, fmt_ns(b[0], 32, o0), fmt_ns(b[1], 32, o1), o1 / o0,
	       fmt_ns(b[2], 32, q0), fmt_ns(b[3], 32, q1), q1 / q0, s3_verdict(c));
	printf("- GP-end futex: p50 %s, p99 %s, %.0f calls/s "
	       "(list: %.0f, wakeme: %.0f); the default here is %s\n", fmt_ns(b[4], 32, o2),
	       fmt_ns(b[5], 32, s3_med(c, SP_FUTEX, F_P99, NULL)), s3_med(c, SP_FUTEX, F_CPS, NULL),
	       s3_med(c, SP_LIST, F_CPS, NULL), s3_med(c, SP_WAKEME, F_CPS, NULL),
	       sp_base[sp_default]);
	printf("- list path: %ld waiters woken directly by the GP, %ld by the cleanup work; "
	       "%ld GP inits found no free wait head; %ld GPs for %llu calls (wakeme: %ld, "
	       "futex: %ld)\n", c->direct[SP_LIST], c->deferred[SP_LIST], c->no_head[SP_LIST],
	       c->gps[SP_LIST], (unsigned long long)c->pooled[SP_LIST].count, c->gps[SP_WAKEME],
	       c->gps[SP_FUTEX]);
}

/* ---- seeds 003 JSON and main --------------------------------------------- */

static void s3_json_path(struct json *j, const struct s3_ctx *c, int p)
{
	static const char *const fk[NF] = {
		"p50_ns", "p90_ns", "p99_ns", "max_ns", "calls_s", "top_thread_pct",
	};
	uint64_t v[S3_EDGES_MAX];

	json_obj(j, sp_key[p]);
	json_int(j, "normal_wake_from_gp", p);
	json_int(j, "calls", (long long)c->pooled[p].count);
	json_arr(j, "repeats");
	for (long r = 0; r < c->reps; r++) {
		json_obj(j, NULL);
		for (int f = 0; f < NF; f++)
			json_num(j, fk[f], c->rep[p][r][f]);
		json_end(j, '}');
	}
	json_end(j, ']');
	for (int f = 0; f < NF; f++)
		json_num(j, fk[f], f == F_MAX ? (double)c->pooled[p].max : s3_med(c, p, f, NULL));
	for (int i = 0; i + 1 < c->nedges; i++)
		v[i] = bucket_count(&c->pooled[p], c->edges[i], c->edges[i + 1]);
	json_u64_array(j, "adaptive_counts", v, (size_t)c->nedges - 1);
	for (int i = 0; i <= S3_SEED_ROWS; i++)
		v[i] = bucket_count(&c->pooled[p], i * 1e7, i < S3_SEED_ROWS ? i * 1e7 + 1e7 : 1e300);
	json_u64_array(j, "counts_10ms", v, S3_SEED_ROWS + 1);
	json_int(j, "sr_woken_direct", c->direct[p]);
	json_int(j, "sr_woken_deferred", c->deferred[p]);
	json_int(j, "sr_no_wait_head", c->no_head[p]);
	json_int(j, "grace_periods", c->gps[p]);
	json_end(j, '}');
}

static void s3_json(struct json *j, const struct s3_ctx *c, const char *png)
{
	uint64_t e[S3_EDGES_MAX];

	json_str(j, "command", "seeds 003");
	json_int(j, "threads", c->threads);
	json_int(j, "idle_threads", c->idle);
	json_int(j, "repeats", c->reps);
	json_num(j, "seconds_per_run", c->dur_s);
	for (int i = 0; i < c->nedges; i++)
		e[i] = (uint64_t)c->edges[i];
	json_u64_array(j, "adaptive_edges_ns", e, (size_t)c->nedges);
	for (int p = 0; p < NSPATH; p++)
		s3_json_path(j, c, p);
	json_num(j, "seed_p50_default_ns", seed3_pct(0, 50));
	json_num(j, "seed_p50_wake_from_gp_ns", seed3_pct(1, 50));
	if (png)
		json_str(j, "png", png);
	json_num(j, "bg_cbs_per_s", (double)c->bg_rate);
	json_num(j, "bg_cbs_queued", (double)c->bg_queued);
}

const struct tool_opt seed003_opts[] = {
	TOPT_I("threads", "N", "threads", 1, S3_THREADS_MAX, 64, 64,
	       "threads calling synchronize_rcu() in a loop (the seed's 64)"),
	TOPT_N("duration", "SEC", "seconds", 0.05, 600, 2.0, 1.0,
	       "length of one run of one path"),
	TOPT_I("repeats", "N", "repeats", 1, S3_REPS_MAX, 5, 3,
	       "interleaved repeats of every wake path"),
	TOPT_I("idle", "N", "threads", 0, 64, 1, 1,
	       "idle registered reader threads during the runs"),
	TOPT_S("png", "FILE", "no plot (with --out: DIR/seeds003.png)",
	       "write the plots to FILE and FILE-load.png (compressed PNG)"),
	TOPT_I("bg-cbs", "RATE", "call_rcu() per second", 0, 100000000, 0, 0,
	       "background call_rcu() rate from one more thread (0: none)"),
	TOPT_IX("seed-jobs", "N", "jobs", 0, S3_THREADS_MAX,
		"the number of online CPUs (2 if unknown)",
		"jobs of the seed's load (one per CPU) in both profiles; 0 skips that part"),
	TOPT_END,
};

static int s3_args(struct tool_opts *o, struct s3_ctx *c, const char **png, long *seed_jobs)
{
	static char out_png[4096];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	tool_bind(o, seed003_opts);
	*seed_jobs = ncpu > 0 && ncpu <= S3_THREADS_MAX ? ncpu : 2;
	opt_long(o, "threads", &c->threads);
	opt_long(o, "repeats", &c->reps);
	opt_long(o, "idle", &c->idle);
	opt_double(o, "duration", &c->dur_s);
	opt_long(o, "bg-cbs", &c->bg_rate);
	opt_long(o, "seed-jobs", seed_jobs);
	/* Plots only when asked: --png, quick's --png, or --out. */
	*png = opt_str(o, "png");
	if (!*png)
		*png = o->png;
	if (!*png)
		*png = tool_out_path(o, "seeds003", "png", out_png, sizeof(out_png));
	return 0;
}

static void s3_report(struct s3_ctx *c, const char *png)
{
	s3_summary_table(c);
	s3_edges(c);
	s3_hist_adaptive(c, "(a) Latency distribution");
	s3_hist_10ms(c);
	s3_compare(c);
	if (!png)
		return;
	if (s3_plot(c, png))
		c->err = 1;
	else
		printf("- plot: %s\n", png);
}

static struct s3_ctx *s3_ctx_new(long threads, long idle, long reps, double dur_s, long bg_rate)
{
	struct s3_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->th = calloc((size_t)threads, sizeof(*c->th));
	if (!c->th) {
		free(c);
		return NULL;
	}
	c->threads = threads;
	c->idle = idle;
	c->reps = reps;
	c->dur_s = dur_s;
	c->bg_rate = bg_rate;
	for (int p = 0; p < NSPATH; p++)
		lat_init(&c->pooled[p]);
	return c;
}

static void s3_ctx_free(struct s3_ctx *c)
{
	if (c)
		free(c->th);
	free(c);
}

/* Every path, c->reps interleaved repeats, beside c->idle idle threads. */
static int s3_measure(struct s3_ctx *c, const char *what)
{
	struct idle_set idle;

	if (idle_start(&idle, c->idle)) {
		fprintf(stderr, "seeds 003: cannot create the idle threads\n");
		return -1;
	}
	run_interleaved(NSPATH, (int)c->reps, s3_variant, c, what,
			(double)c->reps * NSPATH * (c->dur_s + 0.05));
	idle_stop(&idle);
	return c->err ? -1 : 0;
}

/*
 * The seed's load.  Its 64 jobs ran on 64 CPUs, one job per CPU, so a
 * woken caller ran at once and its latency was the wake-up path's.  Here
 * 64 jobs are 32 per CPU: a call's latency is mostly its turn on a CPU
 * (64 / calls per second) whichever path wakes it.  So the experiment runs
 * again with one job per CPU (--seed-jobs; 0 skips it), in the kernel
 * profile (the seed's kernel: HZ=1000 FQS delays, 5 direct wake-ups, the GP
 * kthread drives every GP) and in treercu's.  Both profiles are set here,
 * whatever TREERCU_PROFILE says; the treercu profile is left in force.
 */
static const char *const s3_load_prof[S3_NLOAD] = { "kernel", "treercu" };

/* list / wakeme: [0] p50, [1] p99. */
static void s3_ratios(const struct s3_ctx *c, double out[2])
{
	out[0] = s3_med(c, SP_LIST, F_P50, NULL) / s3_med(c, SP_WAKEME, F_P50, NULL);
	out[1] = s3_med(c, SP_LIST, F_P99, NULL) / s3_med(c, SP_WAKEME, F_P99, NULL);
}

static void s3_load_summary(const struct s3_ctx *c, const char *prof)
{
	printf("- %s profile, %ld jobs: list / wakeme p50 x%.2f, p90 x%.2f, p99 x%.2f, "
	       "calls/s x%.2f: %s\n", prof, c->threads,
	       s3_med(c, SP_LIST, F_P50, NULL) / s3_med(c, SP_WAKEME, F_P50, NULL),
	       s3_med(c, SP_LIST, F_P90, NULL) / s3_med(c, SP_WAKEME, F_P90, NULL),
	       s3_med(c, SP_LIST, F_P99, NULL) / s3_med(c, SP_WAKEME, F_P99, NULL),
	       s3_med(c, SP_LIST, F_CPS, NULL) / s3_med(c, SP_WAKEME, F_CPS, NULL),
	       s3_verdict(c));
}

/* seeds003.png -> seeds003-load.png */
static void s3_load_png_name(char *b, size_t n, const char *png)
{
	const char *dot = strrchr(png, '.');
	int stem = dot && !strchr(dot, '/') ? (int)(dot - png) : (int)strlen(png);

	snprintf(b, n, "%.*s-load%s", stem, png, dot && !strchr(dot, '/') ? dot : ".png");
}

static int s3_seed_load(const struct s3_ctx *big, long jobs, struct json *j, const char *png,
			struct seed003_result *res)
{
	struct s3_ctx *lc[S3_NLOAD] = { NULL, NULL };
	char what[64], lpng[512];
	int rc = 0;

	printf("\n(c) The seed's load: %ld jobs, one per CPU, as the seed's 64 on 64 CPUs "
	       "(%.2f s x %ld repeats per path and profile, %ld idle registered threads):\n",
	       jobs, big->dur_s, big->reps, big->idle);
	fflush(stdout);
	for (int i = 0; i < S3_NLOAD && !rc; i++) {
		lc[i] = s3_ctx_new(jobs, big->idle, big->reps, big->dur_s, 0);
		snprintf(what, sizeof(what), "seeds 003, %ld jobs, %s profile", jobs, s3_load_prof[i]);
		if (!lc[i] || trcu_set_profile(s3_load_prof[i]) || s3_measure(lc[i], what))
			rc = -1;
	}
	trcu_set_profile("treercu");
	for (int i = 0; i < S3_NLOAD && !rc; i++) {
		char title[96];

		printf("\n%s profile:\n", s3_load_prof[i]);
		s3_path_table(lc[i], false);
		s3_edges(lc[i]);
		snprintf(title, sizeof(title), "%s profile, %ld jobs", s3_load_prof[i], jobs);
		s3_hist_adaptive(lc[i], title);
	}
	if (!rc) {
		printf("\nSummary (the seed's load):\n");
		for (int i = 0; i < S3_NLOAD; i++)
			s3_load_summary(lc[i], s3_load_prof[i]);
		if (res) {
			s3_ratios(lc[0], res->load_kernel);
			s3_ratios(lc[1], res->load_treercu);
		}
		json_obj(j, "seed_load");
		json_int(j, "jobs", jobs);
		for (int i = 0; i < S3_NLOAD; i++) {
			json_obj(j, s3_load_prof[i]);
			for (int p = 0; p < NSPATH; p++)
				s3_json_path(j, lc[i], p);
			json_end(j, '}');
		}
		json_end(j, '}');
	}
	if (!rc && png) {
		s3_load_png_name(lpng, sizeof(lpng), png);
		if (s3_plot_load(lc, lpng))
			rc = -1;
		else
			printf("- plot: %s\n", lpng);
		json_str(j, "png_seed_load", lpng);
	}
	for (int i = 0; i < S3_NLOAD; i++)
		s3_ctx_free(lc[i]);
	return rc;
}

int seeds_003(struct tool_opts *o)
{
	return seeds_003_main(o, NULL);
}

int seeds_003_main(struct tool_opts *o, struct seed003_result *res)
{
	struct s3_ctx tmp = { 0 }, *c;
	const char *png;
	long path0 = sp_tunable("normal_wake_from_gp"), seed_jobs;
	struct json j;
	int rc;

	if (res)   /* NAN until measured: a run that fails early leaves them so */
		*res = (struct seed003_result){ { NAN, NAN }, { NAN, NAN }, { NAN, NAN } };
	sp_names_init(path0);
	if (s3_args(o, &tmp, &png, &seed_jobs))
		return 2;
	c = s3_ctx_new(tmp.threads, tmp.idle, tmp.reps, tmp.dur_s, tmp.bg_rate);
	if (!c || json_open(&j, o, "seeds003"))
		return 1;
	printf("\nseeds 003: %ld threads calling synchronize_rcu() in a loop for %.2f s per run, "
	       "%ld repeats per path, paths interleaved; %ld idle registered threads",
	       c->threads, c->dur_s, c->reps, c->idle);
	if (c->bg_rate)
		printf("; background: %ld call_rcu()/s from one more thread (--bg-cbs)", c->bg_rate);
	printf("\n");
	machine_note(&j);
	if (s3_measure(c, "seeds 003"))
		return 1;
	trcu_set_tunable("normal_wake_from_gp", path0);
	s3_report(c, png);
	s3_json(&j, c, png);
	if (res)
		s3_ratios(c, res->jobs64);
	if (seed_jobs && s3_seed_load(c, seed_jobs, &j, png, res))
		c->err = 1;
	rc = json_close(&j) || c->err ? 1 : 0;
	s3_ctx_free(c);
	return rc;
}
