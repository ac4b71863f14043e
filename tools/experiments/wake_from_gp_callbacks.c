/* SPDX-License-Identifier: MIT */
/*
 * Reproduces the kernel patch "rcu: Reduce synchronize_rcu() latency"
 * (Uladzislau Rezki; presented as "Reduce synchronize_rcu() latency" at LPC
 * 2024): a synchronize_rcu() caller is woken from the grace period's end
 * instead of by a callback queued behind its other callbacks, so its
 * latency no longer grows with the callback list in front of it.
 *
 * `treercu seeds 004`: the caller queues K callbacks, then calls
 * synchronize_rcu(); p50/p99 per K and path (sync_paths.h), and how many of
 * those callbacks ran before it returned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
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

/* ======================================================================
 * seeds 004: synchronize_rcu() behind a long callback list
 * ====================================================================== */

#define S4_NK 5
#define S4_REPS_MAX 50

static const long s4_k[S4_NK] = { 0, 1000, 10000, 100000, 1000000 };

static _Atomic unsigned long s4_ran;     /* callbacks run so far */
static long s4_cb_ns;                    /* extra work per callback */

struct s4_cell {
	double *lat, *pos;     /* per sample: ns; callbacks run before return */
	double *pend;          /* ... of the k, not yet run when the call began */
	double rep_med[S4_REPS_MAX], rep_p99[S4_REPS_MAX];   /* per repeat */
	int n, nrep;
};

struct s4_ctx {
	int nk, per[S4_NK];    /* K values used; samples per repeat */
	long reps, cb_ns, hold;
	struct trcu_head *heads;
	struct s4_cell cell[NSPATH][S4_NK];
	long pushback, in_section;
	int err, hstate;
	uint64_t t_release;
};

static void s4_cb(struct trcu_head *h)
{
	(void)h;
	if (s4_cb_ns) {
		uint64_t end = now_ns() + (uint64_t)s4_cb_ns;

		while (now_ns() < end)
			;
	}
	atomic_fetch_add_explicit(&s4_ran, 1, memory_order_relaxed);
}

/*
 * The grace-period holder (--hold 1): a registered thread that enters a
 * read-side section before the caller queues its k callbacks and leaves it
 * S4_HOLD_NS after the caller has entered synchronize_rcu().  No grace
 * period can end meanwhile, so all k are pending when synchronize_rcu() is
 * called and the wake-up callback (wakeme path) is queued behind them, as
 * in the kernel, where a grace period lasts milliseconds and the callbacks
 * queued during it form one batch.  Latency is timed from the holder's
 * rcu_read_unlock(), the moment the grace period may end, or from the call
 * when the caller was preempted and made it after the release.
 */
#define S4_HOLD_NS 200000
enum { H_IDLE, H_HOLD, H_HELD, H_CALLING, H_RELEASED, H_STOP };

/*
 * Holder and caller hand the state over on a futex: neither polls, so the
 * threads of the experiment are only the caller, the holder (blocked) and
 * treercu's own.  (A polling loop here would keep a CPU busy and put the
 * woken caller behind the offload thread's batch on a small machine.)
 */
static void s4_set_state(int *st, int v)
{
	__atomic_store_n(st, v, __ATOMIC_RELEASE);
	syscall(SYS_futex, st, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void s4_wait_state(int *st, int want)
{
	int v;

	while ((v = __atomic_load_n(st, __ATOMIC_ACQUIRE)) != want)
		syscall(SYS_futex, st, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

/* Wait for any state but `cur`. */
static int s4_wait_change(int *st, int cur)
{
	int v;

	while ((v = __atomic_load_n(st, __ATOMIC_ACQUIRE)) == cur)
		syscall(SYS_futex, st, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
	return v;
}

static void *s4_holder(void *arg)
{
	struct s4_ctx *c = arg;
	int st;

	trcu_register_thread();
	st = __atomic_load_n(&c->hstate, __ATOMIC_ACQUIRE);
	while (st != H_STOP) {
		if (st != H_HOLD) {
			st = s4_wait_change(&c->hstate, st);
			continue;
		}
		rcu_read_lock();
		s4_set_state(&c->hstate, H_HELD);
		s4_wait_state(&c->hstate, H_CALLING);
		sleep_ns(S4_HOLD_NS);            /* the caller is now in synchronize_rcu() */
		c->t_release = now_ns();
		rcu_read_unlock();
		s4_set_state(&c->hstate, H_RELEASED);
		st = H_RELEASED;
	}
	trcu_unregister_thread();
	return NULL;
}

/* One sample: queue k callbacks on this thread, then time synchronize_rcu(). */
static double s4_sample(struct s4_ctx *c, long k, double *pos, double *pend)
{
	unsigned long base = atomic_load(&s4_ran);
	uint64_t t0, t1;

	if (c->hold) {
		s4_set_state(&c->hstate, H_HOLD);
		s4_wait_state(&c->hstate, H_HELD);
	}
	for (long i = 0; i < k; i++)
		call_rcu(&c->heads[i], s4_cb);
	/* With the holder in its section none may have run yet: counted, and
	 * reported as a library bug. */
	if (c->hold)
		c->in_section += (long)(atomic_load(&s4_ran) - base);
	*pend = (double)(k - (long)(atomic_load(&s4_ran) - base));
	if (c->hold)
		s4_set_state(&c->hstate, H_CALLING);
	t0 = now_ns();
	synchronize_rcu();
	t1 = now_ns();
	*pos = (double)(atomic_load(&s4_ran) - base);
	if (c->hold) {
		/* From the release, or from the call when the caller was
		 * preempted before making it (woken by our own futex
		 * hand-off, the holder can take this thread's CPU, and the
		 * offload thread runs next): latency starts at whichever of
		 * the two comes later. */
		s4_wait_state(&c->hstate, H_RELEASED);
		if (c->t_release > t0)
			t0 = c->t_release < t1 ? c->t_release : t1;
	}
	rcu_barrier();            /* the heads are reused; next sample starts idle */
	return (double)(t1 - t0);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* p-th percentile of n samples (interpolated; 100 = max). */
static double s4_pct(const double *v, int n, double p)
{
	double *s = malloc((size_t)(n ? n : 1) * sizeof(*s)), r;

	if (!s || n == 0) {
		free(s);
		return NAN;
	}
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_dbl);
	r = percentile(s, (size_t)n, p);
	free(s);
	return r;
}

static void s4_variant(int v, int rep, void *arg)
{
	struct s4_ctx *c = arg;
	int path = v / c->nk, k = v % c->nk;
	struct s4_cell *cl = &c->cell[path][k];
	double *lat = cl->lat + cl->n;

	if (sp_apply(path)) {
		c->err = 1;
		return;
	}
	synchronize_rcu();        /* settle after the switch */
	for (int i = 0; i < c->per[k]; i++, cl->n++)
		cl->lat[cl->n] = s4_sample(c, s4_k[k], &cl->pos[cl->n], &cl->pend[cl->n]);
	cl->rep_med[cl->nrep] = median_of(lat, (size_t)c->per[k]);
	cl->rep_p99[cl->nrep++] = s4_pct(lat, c->per[k], 99);
	(void)rep;
}

/* Median over the repeats of a cell's p50 or p99: the goal's figure. */
static double s4_rep(const struct s4_cell *cl, bool p99)
{
	return median_of(p99 ? cl->rep_p99 : cl->rep_med, (size_t)cl->nrep);
}

static void s4_row(struct table *t, const struct s4_ctx *c, int p, int k, double idle99)
{
	const struct s4_cell *cl = &c->cell[p][k];
	struct summary rs, ps;
	double p99 = s4_rep(cl, true);
	char b[4][32];

	summarize(cl->rep_med, (size_t)cl->nrep, &rs);
	summarize(cl->pos, (size_t)cl->n, &ps);
	tab_cell(t, "%ld", s4_k[k]);
	tab_cell(t, "%s", sp_name[p]);
	tab_cell(t, "%d", cl->n);
	tab_cell(t, "%s", fmt_ns(b[0], 32, s4_rep(cl, false)));
	tab_cell(t, "%s", fmt_ns(b[1], 32, p99));
	tab_cell(t, "%.2fx", p99 / idle99);
	tab_cell(t, "%s", fmt_ns(b[2], 32, s4_pct(cl->lat, cl->n, 99)));
	tab_cell(t, "%s", fmt_ns(b[3], 32, s4_pct(cl->lat, cl->n, 100)));
	tab_cell(t, "%.0f%%", rs.spread);
	tab_cell(t, "%.0f", median_of(cl->pend, (size_t)cl->n));
	tab_cell(t, "%.0f (%.0f-%.0f)", ps.median, ps.min, ps.max);
}

static void s4_table(const struct s4_ctx *c)
{
	static const char *const cols[] = {
		"K", "path (normal_wake_from_gp)", "samples", "p50", "p99", "p99 / idle p99",
		"p99 pooled", "max", "p50 spread", "pending at call",
		"cbs run before return: median (min-max)",
	};
	static const int w[] = { 7, 30, 7, 10, 10, 8, 10, 10, 6, 8, 24 };
	struct table t;

	printf("\nsynchronize_rcu() after queueing K callbacks on the same thread: %d samples per "
	       "repeat at every K; p50 and p99 are the medians over the repeats of each repeat's "
	       "own (p50 spread over those medians); p99 pooled is over all samples:\n",
	       c->per[0]);
	tab_start(&t, 11, cols, w);
	for (int k = 0; k < c->nk; k++)
		for (int p = 0; p < NSPATH; p++)
			s4_row(&t, c, p, k, s4_rep(&c->cell[p][0], true));
}

/* Largest p99 / idle p99 over K > 0. */
static double s4_p99(const struct s4_cell *cl, bool pooled)
{
	return pooled ? s4_pct(cl->lat, cl->n, 99) : s4_rep(cl, true);
}

static double s4_worst_ratio(const struct s4_ctx *c, int p, bool pooled)
{
	double idle = s4_p99(&c->cell[p][0], pooled), worst = 0;

	for (int k = 1; k < c->nk; k++)
		worst = fmax(worst, s4_p99(&c->cell[p][k], pooled) / idle);
	return worst;
}

static void s4_summary(const struct s4_ctx *c)
{
	int kk = c->nk - 1;
	double r1 = s4_worst_ratio(c, SP_LIST, false), r2 = s4_worst_ratio(c, SP_FUTEX, false);
	double w0 = s4_rep(&c->cell[SP_WAKEME][0], true);
	double wk = s4_rep(&c->cell[SP_WAKEME][kk], true);
	struct summary pos;
	char b[2][32], g[64];

	summarize(c->cell[SP_WAKEME][kk].pos, (size_t)c->cell[SP_WAKEME][kk].n, &pos);
	printf("\nSummary (seed 004):\n");
	printf("- seed (kernel): wakeme_after_rcu() invoked last of a batch of 3613 callbacks "
	       "(mobile, 7.3 ms after the batch started); lists up to 871001 callbacks, "
	       "537691 invoked in one 260 ms batch\n");
	printf("- ours, wakeme: the wake-up ran after %.0f of the %ld callbacks queued before it "
	       "(median); p99 %s idle -> %s at K=%ld (%.1fx): %s\n", pos.median, s4_k[kk],
	       fmt_ns(b[0], 32, w0), fmt_ns(b[1], 32, wk), s4_k[kk], wk / w0,
	       wk > 2 * w0 ? "grows with K, as in the seed" : "does NOT grow with K here");
	printf("- goal, wake-from-GP list: p99 / its idle p99 %s at every K (median of "
	       "repeats): worst %.2fx: %s; pooled over all samples: worst %.2fx\n",
	       goal_text("s4_list_worst", g, sizeof(g)), r1,
	       goal_met("s4_list_worst", r1, NAN) ? "PASS" : "MISS", s4_worst_ratio(c, SP_LIST, true));
	printf("- GP-end futex: worst p99 / idle p99 %.2fx: %s\n", r2,
	       r2 <= 2 ? "within 2x" : "beyond 2x");
	printf("- at K=%ld, p99 list / wakeme = %.3f, futex / wakeme = %.3f\n", s4_k[kk],
	       s4_rep(&c->cell[SP_LIST][kk], true) / wk,
	       s4_rep(&c->cell[SP_FUTEX][kk], true) / wk);
	printf("- call_rcu() push-backs during the run: %ld (cb_max_pending raised above K)\n",
	       c->pushback);
	if (c->in_section)
		printf("- LIBRARY BUG: %ld callbacks ran while the thread that queued them was still "
		       "inside its read-side section\n", c->in_section);
}

static void s4_json(struct json *j, const struct s4_ctx *c)
{
	json_str(j, "command", "seeds 004");
	json_int(j, "repeats", c->reps);
	json_int(j, "callback_ns", c->cb_ns);
	json_int(j, "hold", c->hold);
	json_int(j, "pushbacks", c->pushback);
	json_int(j, "callbacks_run_inside_section", c->in_section);
	json_arr(j, "cells");
	for (int p = 0; p < NSPATH; p++) {
		for (int k = 0; k < c->nk; k++) {
			const struct s4_cell *cl = &c->cell[p][k];

			json_obj(j, NULL);
			json_str(j, "path", sp_key[p]);
			json_int(j, "normal_wake_from_gp", p);
			json_int(j, "k", s4_k[k]);
			json_int(j, "samples", cl->n);
			json_num(j, "p50_ns", s4_rep(cl, false));
			json_num(j, "p99_ns", s4_rep(cl, true));
			json_num(j, "p99_pooled_ns", s4_pct(cl->lat, cl->n, 99));
			json_num(j, "max_ns", s4_pct(cl->lat, cl->n, 100));
			json_num(j, "cbs_run_before_return_median", median_of(cl->pos, (size_t)cl->n));
			json_num(j, "pending_at_call_median", median_of(cl->pend, (size_t)cl->n));
			json_end(j, '}');
		}
	}
	json_end(j, ']');
	json_num(j, "list_worst_p99_over_idle_p99", s4_worst_ratio(c, SP_LIST, false));
	json_num(j, "list_worst_pooled_p99_over_idle_p99", s4_worst_ratio(c, SP_LIST, true));
	json_num(j, "futex_worst_p99_over_idle_p99", s4_worst_ratio(c, SP_FUTEX, false));
}

const struct tool_opt seed004_opts[] = {
	TOPT_I("repeats", "N", "repeats", 1, S4_REPS_MAX, 7, 5,
	       "interleaved repeats of every (path, K) cell"),
	TOPT_I("kmax", "K", "callbacks", 0, 1000000 /* s4_k's last */, 1000000, 100000,
	       "largest K measured (of 0, 1000, 10000, 100000, 1000000 queued callbacks)"),
	TOPT_I("cb-ns", "NS", "nanoseconds", 0, 100000, 0, 0,
	       "work each callback does (a busy loop) before its counter increment"),
	TOPT_I("hold", "0|1", "boolean", 0, 1, 1, 1,
	       "1: another thread holds a read-side section while the K callbacks are queued"),
	TOPT_END,
};

static int s4_setup(struct tool_opts *o, struct s4_ctx *c)
{
	long kmax;

	tool_bind(o, seed004_opts);
	opt_long(o, "repeats", &c->reps);
	opt_long(o, "kmax", &kmax);
	opt_long(o, "cb-ns", &c->cb_ns);
	opt_long(o, "hold", &c->hold);
	s4_cb_ns = c->cb_ns;
	for (c->nk = 0; c->nk < S4_NK && s4_k[c->nk] <= kmax; c->nk++) {
		/* The same number of samples per repeat at every K, so that
		 * the idle p99 and a K's p99 are the same statistic (200 per
		 * repeat against 30 would compare the 14th largest of 1400
		 * with the 3rd of 210).  Each repeat's p99, then the median
		 * over the repeats: one scheduler hiccup does not decide the
		 * goal. */
		c->per[c->nk] = o->quick ? 20 : 30;
		for (int p = 0; p < NSPATH; p++) {
			c->cell[p][c->nk].lat = calloc((size_t)(c->reps * c->per[c->nk]), sizeof(double));
			c->cell[p][c->nk].pos = calloc((size_t)(c->reps * c->per[c->nk]), sizeof(double));
			c->cell[p][c->nk].pend = calloc((size_t)(c->reps * c->per[c->nk]), sizeof(double));
			if (!c->cell[p][c->nk].lat || !c->cell[p][c->nk].pos || !c->cell[p][c->nk].pend)
				return -1;
		}
	}
	c->heads = calloc((size_t)(kmax ? kmax : 1), sizeof(*c->heads));
	return c->heads ? 0 : -1;
}

static void s4_free(struct s4_ctx *c)
{
	for (int p = 0; p < NSPATH; p++) {
		for (int k = 0; k < c->nk; k++) {
			free(c->cell[p][k].lat);
			free(c->cell[p][k].pos);
			free(c->cell[p][k].pend);
		}
	}
	free(c->heads);
	free(c);
}

static void s4_run(struct s4_ctx *c)
{
	long kmax = s4_k[c->nk - 1];
	long path0 = sp_tunable("normal_wake_from_gp"), maxp0 = sp_tunable("cb_max_pending");

	sp_names_init(path0);
	struct trcu_stats a, b;
	pthread_t holder;
	double est = 0;

	for (int k = 0; k < c->nk; k++)
		est += (double)c->per[k] * (2e-5 + (double)s4_k[k] * 1.5e-7) * NSPATH * (double)c->reps;
	if (trcu_set_tunable("cb_max_pending", 2 * kmax + 100000))
		c->err = 1;
	if (pthread_create(&holder, NULL, s4_holder, c))
		exit(1);
	trcu_register_thread();
	trcu_get_stats(&a);
	run_interleaved(NSPATH * c->nk, (int)c->reps, s4_variant, c, "seeds 004", est);
	trcu_get_stats(&b);
	trcu_unregister_thread();
	s4_set_state(&c->hstate, H_STOP);
	pthread_join(holder, NULL);
	c->pushback = b.cbs_pushback - a.cbs_pushback;
	trcu_set_tunable("normal_wake_from_gp", path0);
	trcu_set_tunable("cb_max_pending", maxp0);
}

int seeds_004(struct tool_opts *o)
{
	return seeds_004_main(o, NULL);
}

int seeds_004_main(struct tool_opts *o, struct seed004_result *res)
{
	struct s4_ctx *c = calloc(1, sizeof(*c));
	struct json j;
	int rc;

	if (res)
		res->list_worst = NAN;   /* until measured */
	if (!c || s4_setup(o, c))
		return 2;
	if (json_open(&j, o, "seeds004"))
		return 1;
	printf("\nseeds 004: the calling thread queues K call_rcu() callbacks (each: %ld ns of work "
	       "+ a counter increment)%s, then times synchronize_rcu(); K up to %ld, %ld repeats, "
	       "paths and K interleaved; rcu_barrier() between samples\n", c->cb_ns,
	       c->hold ? " while another thread holds a read-side section (released 200 us after "
			 "the call; latency timed from that release, or from the call if later)"
		       : " (--hold 0: they may run while being queued)", s4_k[c->nk - 1], c->reps);
	machine_note(&j);
	s4_run(c);
	s4_table(c);
	s4_summary(c);
	s4_json(&j, c);
	if (res)
		res->list_worst = s4_worst_ratio(c, SP_LIST, false);
	rc = json_close(&j) || c->err ? 1 : 0;
	s4_free(c);
	return rc;
}
