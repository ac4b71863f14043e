/* SPDX-License-Identifier: MIT */
/*
 * Reproduces the kernel patch "rcu: Reduce synchronize_rcu() latency by
 * reporting GP kthread's CPU QS early" (Joel Fernandes): the grace-period
 * driver cannot be in a read-side section while it initialises a grace
 * period, so it reports its own quiescent state at the end of GP init, and
 * an idle system's grace period ends at the first scan instead of the
 * second.
 *
 * `treercu seeds 000`: synchronize_rcu() latency with the early report off
 * and on (kernel timing profile) and with treercu's defaults, phases
 * interleaved, beside the patch's own tables.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>

#include "common.h"
#include "results.h"

#define S0_RUNS_MAX 100
#define S0_CALLS_MAX 100000

enum { P_OFF, P_ON, P_DEF, NPHASE };
static const char *const phase_name[NPHASE] = {
	"kernel profile, early report off (baseline)",
	"kernel profile, early report on (the patch)",
	"treercu defaults",
};

/* The seed's tables, ms: baseline, then with the fix. */
static const double seed_mean[2][10] = {
	{ 10.088, 10.064, 10.051, 10.125, 8.695, 10.157, 10.102, 8.050, 10.059, 10.077 },
	{ 6.027, 6.032, 6.010, 6.076, 6.084, 6.034, 6.051, 6.057, 6.016, 6.036 },
};
static const double seed_min[2][10] = {
	{ 9.989, 9.982, 9.988, 9.929, 5.996, 9.977, 9.990, 5.985, 9.978, 9.984 },
	{ 5.915, 5.984, 5.986, 5.993, 5.893, 5.908, 5.993, 5.941, 5.927, 5.993 },
};
static const double seed_max[2][10] = {
	{ 18.848, 16.470, 15.113, 22.411, 15.471, 25.723, 20.224, 10.007, 15.934, 17.703 },
	{ 8.589, 9.241, 7.004, 10.001, 10.250, 9.456, 10.000, 10.001, 7.540, 9.579 },
};

struct s0_run { double mean, min, max; };

struct s0_ctx {
	long calls;
	int err;
	struct s0_run run[NPHASE][S0_RUNS_MAX];
};

static int s0_apply(int phase)
{
	int rc = trcu_set_profile(phase == P_DEF ? "treercu" : "kernel");

	if (phase != P_DEF)
		rc |= trcu_set_tunable("early_report", phase == P_ON);
	return rc;
}

static void s0_variant(int phase, int rep, void *arg)
{
	struct s0_ctx *c = arg;
	double sum = 0, mn = 1e300, mx = 0;

	if (s0_apply(phase)) {
		fprintf(stderr, "seeds 000: cannot select phase '%s'\n", phase_name[phase]);
		c->err = 1;
	}
	synchronize_rcu();                /* settle: the first call after a switch */
	for (long i = 0; i < c->calls; i++) {
		uint64_t t0 = now_ns();
		double ns;

		synchronize_rcu();
		ns = (double)(now_ns() - t0);
		sum += ns;
		mn = ns < mn ? ns : mn;
		mx = ns > mx ? ns : mx;
	}
	c->run[phase][rep] = (struct s0_run){ sum / (double)c->calls, mn, mx };
}

/* Idle registered threads: the seed's idle CPUs, found quiescent by a scan. */
struct s0_idle {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
};

static void *s0_idle_fn(void *arg)
{
	struct s0_idle *id = arg;

	trcu_register_thread();
	pthread_mutex_lock(&id->lock);
	while (!id->stop)
		pthread_cond_wait(&id->cond, &id->lock);
	pthread_mutex_unlock(&id->lock);
	trcu_unregister_thread();
	return NULL;
}

static void s0_table(struct s0_ctx *c, int phase, int runs)
{
	static const char *const cols[] = {
		"Run", "Mean", "Min", "Max", "seed Mean", "seed Min", "seed Max",
	};
	static const int w[] = { 3, 10, 10, 10, 9, 9, 9 };
	int seed = phase == P_DEF ? -1 : phase;
	struct table t;
	char b[3][32];

	printf("\n%s:\n", phase_name[phase]);
	tab_start(&t, seed < 0 ? 4 : 7, cols, w);
	for (int r = 0; r < runs || (seed >= 0 && r < 10); r++) {
		struct s0_run *x = &c->run[phase][r];

		tab_cell(&t, "%d", r + 1);
		tab_cell(&t, "%s", r < runs ? fmt_ns(b[0], 32, x->mean) : "");
		tab_cell(&t, "%s", r < runs ? fmt_ns(b[1], 32, x->min) : "");
		tab_cell(&t, "%s", r < runs ? fmt_ns(b[2], 32, x->max) : "");
		if (seed < 0)
			continue;
		tab_cell(&t, "%.3f ms", r < 10 ? seed_mean[seed][r] : 0);
		tab_cell(&t, "%.3f ms", r < 10 ? seed_min[seed][r] : 0);
		tab_cell(&t, "%.3f ms", r < 10 ? seed_max[seed][r] : 0);
	}
}

/* Mean of the run means (every run has the same number of calls), max of maxes. */
static void s0_totals(struct s0_ctx *c, int phase, int runs, double *mean, double *max)
{
	*mean = 0;
	*max = 0;
	for (int r = 0; r < runs; r++) {
		*mean += c->run[phase][r].mean / runs;
		if (c->run[phase][r].max > *max)
			*max = c->run[phase][r].max;
	}
}

static void s0_json(struct json *j, struct s0_ctx *c, int runs, struct seed000_result *res)
{
	static const char *const key[NPHASE] = { "kernel_early_off", "kernel_early_on", "treercu_default" };

	json_str(j, "command", "seeds 000");
	json_int(j, "runs", runs);
	json_int(j, "calls_per_run", c->calls);
	for (int p = 0; p < NPHASE; p++) {
		json_obj(j, key[p]);
		json_arr(j, "runs_ns");
		for (int r = 0; r < runs; r++) {
			json_obj(j, NULL);
			json_num(j, "mean", c->run[p][r].mean);
			json_num(j, "min", c->run[p][r].min);
			json_num(j, "max", c->run[p][r].max);
			json_end(j, '}');
		}
		json_end(j, ']');
		json_end(j, '}');
	}
	json_num(j, "mean_cut_pct", res->cut_pct);
	json_num(j, "seed_mean_cut_pct", 38);
}

static void s0_summary(struct s0_ctx *c, int runs, struct seed000_result *res)
{
	char b[5][32];
	double max_def;

	for (int p = 0; p < NPHASE; p++)
		s0_table(c, p, runs);
	s0_totals(c, P_OFF, runs, &res->mean_off, &res->max_off);
	s0_totals(c, P_ON, runs, &res->mean_on, &res->max_on);
	s0_totals(c, P_DEF, runs, &res->mean_default, &max_def);
	res->cut_pct = (1 - res->mean_on / res->mean_off) * 100;
	printf("\nSummary (seed 000):\n- Mean latency: %s -> %s (%.0f%% cut; seed: 9.75 ms -> 6.04 ms, 38%%)\n",
	       fmt_ns(b[0], 32, res->mean_off), fmt_ns(b[1], 32, res->mean_on), res->cut_pct);
	printf("- Max latency: %s -> %s (%.0f%% cut; seed: 25.72 ms -> 10.25 ms, 60%%)\n",
	       fmt_ns(b[2], 32, res->max_off), fmt_ns(b[3], 32, res->max_on),
	       (1 - res->max_on / res->max_off) * 100);
	printf("- treercu defaults: mean %s, max %s\n", fmt_ns(b[4], 32, res->mean_default),
	       fmt_ns(b[0], 32, max_def));
}

static void s0_idle_threads(struct s0_idle *id, pthread_t *tid, long n, bool stop)
{
	if (stop) {
		pthread_mutex_lock(&id->lock);
		id->stop = 1;
		pthread_cond_broadcast(&id->cond);
		pthread_mutex_unlock(&id->lock);
	}
	for (long i = 0; i < n; i++) {
		if (stop)
			pthread_join(tid[i], NULL);
		else if (pthread_create(&tid[i], NULL, s0_idle_fn, id))
			exit(1);
	}
}

const struct tool_opt seed000_opts[] = {
	TOPT_I("runs", "N", "runs", 1, S0_RUNS_MAX, 10, 3,
	       "runs of each setting (early report off, on, treercu defaults), interleaved"),
	TOPT_I("calls", "N", "calls", 1, S0_CALLS_MAX, 100, 100,
	       "synchronize_rcu() calls per run"),
	TOPT_I("idle", "N", "threads", 0, 64, 4, 4,
	       "idle registered reader threads during the runs"),
	TOPT_END,
};

int seed000_main(struct tool_opts *o, struct seed000_result *res)
{
	struct s0_idle id = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	long runs, idle;
	pthread_t tid[64];
	struct s0_ctx *c = calloc(1, sizeof(*c));
	struct json j;
	int rc;

	if (!c)
		return 1;
	tool_bind(o, seed000_opts);
	opt_long(o, "runs", &runs);
	opt_long(o, "calls", &c->calls);
	opt_long(o, "idle", &idle);
	if (json_open(&j, o, "seeds000"))
		return 1;
	printf("\nseeds 000: %ld synchronize_rcu() calls per run, %ld runs per setting, "
	       "runs of the three settings interleaved; %ld idle registered threads\n",
	       c->calls, runs, idle);
	machine_note(&j);
	s0_idle_threads(&id, tid, idle, false);
	trcu_register_thread();
	run_interleaved(NPHASE, (int)runs, s0_variant, c, "seeds 000",
			(double)runs * (double)c->calls * 0.017);
	trcu_unregister_thread();
	s0_idle_threads(&id, tid, idle, true);
	s0_apply(P_DEF);
	s0_summary(c, (int)runs, res);
	s0_json(&j, c, (int)runs, res);
	rc = json_close(&j) || c->err ? 1 : 0;
	free(c);
	return rc;
}

int cmd_seed000(struct tool_opts *o)
{
	struct seed000_result r;

	return seed000_main(o, &r);
}
