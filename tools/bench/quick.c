/* SPDX-License-Identifier: MIT */
/*
 * treercu quick: every benchmark and experiment in its short form, then one
 * summary table, each row judged against its goal in bench/goals.tsv.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "goals.h"
#include "peers.h"
#include "results.h"

/* The peers' columns of the summary, beside treercu's. */
enum { QP_MEMB, QP_QSBR, QP_CK, NQP };
static const int qp_peer[NQP] = { PEER_LU_MEMB, PEER_LU_QSBR, PEER_CK };

struct qrow {
	const char *goal;         /* its name in bench/goals.tsv */
	double trcu, lu;          /* lu: the figure a ratio goal divides by */
	bool has_lu;              /* a ratio row (else no figure beside) */
	double peer[NQP];         /* the peers' figures; NAN: none ("-") */
};

/* treercu against liburcu memb, same run; no other peer's column. */
static struct qrow ratio_row(const char *goal, double t, double l)
{
	return (struct qrow){ goal, t, l, true, { l, NAN, NAN } };
}

/* A figure with no liburcu figure beside it. */
static struct qrow plain_row(const char *goal, double v)
{
	return (struct qrow){ goal, v, 0, false, { NAN, NAN, NAN } };
}

/* treercu (t) against the figure ref, with every peer's figure of the same
 * measurement: fig[peer] (PEER_MAX entries, NAN where it did not run). */
static struct qrow peer_row(const char *goal, double t, double ref, const double *fig)
{
	struct qrow r = { goal, t, ref, true, { 0 } };

	for (int i = 0; i < NQP; i++)
		r.peer[i] = fig[qp_peer[i]];
	return r;
}

/* The same figure of every peer, from one scale configuration. */
static void scale_figs(const struct scale_result *sc, int rd, int k, int what, double *fig)
{
	for (int i = 0; i < PEER_MAX; i++) {
		const struct scale_point *p = &sc->pt[i][rd][k];

		fig[i] = (what == 0 ? p->p50 : p->p99) / 1e3;
	}
}

/* Synchronize rows with every peer's figure: idle, 1 and 2 busy readers
 * (one caller), and the QSBR rows (treercu qsbr against liburcu qsbr). */
static int quick_peer_sync_rows(struct qrow *q, const struct scale_result *sc)
{
	static const struct { const char *goal; int rd, what; } r[] = {
		{ "sync_idle_p50", 0, 0 }, { "sync_idle_p50_fast", 0, 0 },
		{ "sync_1rd_p50", 1, 0 }, { "sync_1rd_p99", 1, 1 },
		{ "sync_2rd_p50", 2, 0 }, { "sync_2rd_p99", 2, 1 },
	};
	double fig[PEER_MAX];
	int n = 0;

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		scale_figs(sc, r[i].rd, 0, r[i].what, fig);
		q[n++] = peer_row(r[i].goal, fig[PEER_TREERCU], fig[PEER_LU_MEMB], fig);
	}
	scale_figs(sc, 2, 0, 0, fig);
	q[n++] = peer_row("qsbr_sync_2rd_p50", fig[PEER_TREERCU_QSBR], fig[PEER_LU_QSBR], fig);
	scale_figs(sc, 2, 0, 1, fig);
	q[n++] = peer_row("qsbr_sync_2rd_p99", fig[PEER_TREERCU_QSBR], fig[PEER_LU_QSBR], fig);
	return n;
}

/* Read-pair rows: treercu default and QSBR threads, every peer beside. */
static int quick_read_rows(struct qrow *q, const struct refscale_result *rs)
{
	double fig[2][PEER_MAX];
	int n = 0;

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < PEER_MAX; i++)
			fig[k][i] = rs->ns[i][k];
	q[n++] = peer_row("read_pair_1", fig[0][PEER_TREERCU], fig[0][PEER_LU_MEMB], fig[0]);
	q[n++] = peer_row("read_pair_2", fig[1][PEER_TREERCU], fig[1][PEER_LU_MEMB], fig[1]);
	q[n++] = peer_row("qsbr_read_pair_1", fig[0][PEER_TREERCU_QSBR], fig[0][PEER_LU_QSBR],
			  fig[0]);
	return n;
}

/* The peers workloads: deferred free and the hash map. */
static int quick_work_rows(struct qrow *q, const struct peers_result *p)
{
	double objs[PEER_MAX], rd[PEER_MAX], unf[PEER_MAX], ops[PEER_MAX], cpu[PEER_MAX];
	double best = NAN;
	int n = 0;

	for (int i = 0; i < PEER_MAX; i++) {
		objs[i] = p->ran_retire[i] ? p->retire[i].objs_s : NAN;
		rd[i] = p->ran_retire[i] ? p->retire[i].sections_s : NAN;
		unf[i] = p->ran_retire[i] ? p->retire[i].peak_unfreed : NAN;
		ops[i] = p->ran_hashmap[i] ? p->hashmap[i].ops_s : NAN;
		cpu[i] = p->ran_hashmap[i] ? p->hashmap[i].helper_cpu_pct : NAN;
	}
	for (int i = PEER_LU_MEMB; i <= PEER_LU_BP; i++)
		if (i != PEER_TREERCU_QSBR && !isnan(ops[i]) && !(ops[i] <= best))
			best = ops[i];
	q[n++] = peer_row("retire_objs", objs[PEER_TREERCU], objs[PEER_CK], objs);
	q[n++] = peer_row("retire_reader", rd[PEER_TREERCU], rd[PEER_LU_MEMB], rd);
	q[n] = peer_row("retire_unfreed", unf[PEER_TREERCU], NAN, unf);
	q[n++].has_lu = false;
	q[n++] = peer_row("hm_ops_ck", ops[PEER_TREERCU], ops[PEER_CK], ops);
	q[n++] = peer_row("hm_ops_lu", ops[PEER_TREERCU], best, ops);
	q[n++] = peer_row("hm_helper_cpu", cpu[PEER_TREERCU], cpu[PEER_LU_MEMB], cpu);
	return n;
}

/* Callback rows: enqueue, end-to-end, idle barrier, flood. */
static int quick_cb_rows(struct qrow *q, const struct callbacks_result *c)
{
	int n = 0;

	q[n++] = ratio_row("cb_enqueue", c->enqueue_ns[0], c->enqueue_ns[1]);
	q[n++] = ratio_row("cb_e2e", c->e2e_cbs_s[0], c->e2e_cbs_s[1]);
	q[n++] = ratio_row("cb_barrier_idle_p50", c->barrier_idle_p50_ns[0] / 1e3,
			   c->barrier_idle_p50_ns[1] / 1e3);
	q[n++] = ratio_row("cb_flood_rss", c->flood_rss_growth_bytes[0] / (1024.0 * 1024.0),
			   c->flood_rss_growth_bytes[1] / (1024.0 * 1024.0));
	q[n++] = ratio_row("cb_flood_run", c->flood_cbs_s[0], c->flood_cbs_s[1]);
	return n;
}

/* Seeds 003 and 004 (the wake-path goals): the list path against wakeme. */
static int quick_sync_rows(struct qrow *q, const struct seed003_result *s3,
			   const struct seed004_result *s4)
{
	int n = 0;

	q[n++] = plain_row("s3_load_kernel_p50", s3->load_kernel[0]);
	q[n++] = plain_row("s3_load_p50", s3->load_treercu[0]);
	q[n++] = plain_row("s3_load_p99", s3->load_treercu[1]);
	q[n++] = plain_row("s3_64_p50", s3->jobs64[0]);
	q[n++] = plain_row("s4_list_worst", s4->list_worst);
	return n;
}

static int quick_rows(struct qrow *q, const struct refscale_result *rs,
		      const struct scale_result *sc, const struct peers_result *pr,
		      const struct seed000_result *s0,
		      const struct callbacks_result *cb, const struct torture_result *tr,
		      const struct seed003_result *s3, const struct seed004_result *s4)
{
	const struct scale_point (*t)[3] = sc->pt[0], (*l)[3] = sc->pt[1];
	int n = 0;

	n += quick_read_rows(q + n, rs);
	n += quick_peer_sync_rows(q + n, sc);
	q[n++] = ratio_row("sync_8_p50", t[0][1].p50 / 1e3, l[0][1].p50 / 1e3);
	q[n++] = ratio_row("sync_64_p50", t[0][2].p50 / 1e3, l[0][2].p50 / 1e3);
	q[n++] = ratio_row("sync_64_p99", t[0][2].p99 / 1e3, l[0][2].p99 / 1e3);
	q[n++] = ratio_row("sync_64_cps", t[0][2].calls_s, l[0][2].calls_s);
	n += quick_cb_rows(q + n, cb);
	n += quick_work_rows(q + n, pr);
	n += quick_sync_rows(q + n, s3, s4);
	q[n++] = plain_row("s0_cut", s0->cut_pct);
	q[n++] = plain_row("torture_failures", (double)tr->failures);
	return n;
}

/* A figure, or "-" for NAN. */
static void quick_fig(struct table *t, double v)
{
	if (isnan(v))
		tab_cell(t, "%s", "-");
	else
		tab_cell(t, fabs(v) >= 1000 ? "%.0f" : "%.3g", v);
}

static void quick_row_json(struct json *j, const struct qrow *q, const char *goal, bool pass)
{
	static const char *const key[NQP] = { "liburcu_memb", "liburcu_qsbr", "ck_epoch" };

	json_obj(j, NULL);
	json_str(j, "metric", goal_metric(q->goal));
	json_num(j, "treercu", q->trcu);
	if (q->has_lu) {
		json_str(j, "reference", goal_ref(q->goal));
		json_num(j, "liburcu", q->lu);
		json_num(j, "ratio", q->trcu / q->lu);
	}
	for (int k = 0; k < NQP; k++)
		if (!isnan(q->peer[k]))
			json_num(j, key[k], q->peer[k]);
	json_str(j, "goal", goal);
	json_bool(j, "pass", pass);
	json_end(j, '}');
}

static void quick_print(const struct qrow *q, int n, int rc001, struct json *j)
{
	static const char *const cols[] = {
		"metric", "treercu", "liburcu memb", "liburcu qsbr", "ck_epoch", "ratio", "vs",
		"goal", "result",
	};
	static const int w[] = { 35, 10, 12, 12, 10, 7, 12, 18, 6 };
	struct tool_machine m;
	struct table t;
	char goal[64];

	/* The header names what the table was measured on, so that a copy of
	 * it (the README's) carries its version, date and machine. */
	tool_machine(&m);
	printf("\n=== treercu quick summary (same run; ratio = treercu / the peer in 'vs'; "
	       "QSBR rows: treercu's QSBR threads) ===\n");
	printf("treercu %s%s%s%s, %s, %s, %ld CPUs, load average %.2f %.2f %.2f at the end\n",
	       tool_version(), tool_commit()[0] ? " (commit " : "", tool_commit(),
	       tool_commit()[0] ? ")" : "", tool_date(), m.model, m.cpus, m.load[0], m.load[1],
	       m.load[2]);
	tab_start(&t, 9, cols, w);
	json_str(j, "command", "quick");
	json_arr(j, "rows");
	for (int i = 0; i < n; i++) {
		bool torture = i == n - 1, pass = goal_met(q[i].goal, q[i].trcu, q[i].lu);
		bool no_ref = q[i].has_lu && isnan(q[i].lu);

		goal_text(q[i].goal, goal, sizeof(goal));
		tab_cell(&t, "%s", goal_metric(q[i].goal));
		quick_fig(&t, q[i].trcu);
		for (int k = 0; k < NQP; k++)
			quick_fig(&t, q[i].peer[k]);
		if (q[i].has_lu) {
			if (no_ref)
				tab_cell(&t, "%s", "-");
			else
				tab_cell(&t, "%.2fx", q[i].trcu / q[i].lu);
			tab_cell(&t, "%s", goal_ref(q[i].goal));
		} else {
			tab_cell(&t, "%s", "-");
			tab_cell(&t, "%s", "-");
		}
		tab_cell(&t, "%s", goal);
		/* n/a: the peer the goal compares with did not run (not built in). */
		tab_cell(&t, "%s", no_ref ? "n/a" : pass ? "PASS" : torture ? "FAIL" : "MISS");
		quick_row_json(j, &q[i], goal, pass);
	}
	json_end(j, ']');
	goal_text("s1_exit", goal, sizeof(goal));
	tab_cell(&t, "%s", goal_metric("s1_exit"));
	tab_cell(&t, "exit %d", rc001);
	for (int k = 0; k < 5; k++)
		tab_cell(&t, "%s", "");
	tab_cell(&t, "exit %s", goal);
	tab_cell(&t, "%s", goal_met("s1_exit", rc001, NAN) ? "PASS" : "FAIL");
	json_int(j, "seeds_001_exit", rc001);
}

const struct tool_opt quick_opts[] = {
	TOPT_S("png", "FILE", "no plot (with --out: DIR/seeds003.png)",
	       "write the seeds 003 plots to FILE and FILE-load.png"),
	TOPT_END,
};

int cmd_quick(struct tool_opts *o)
{
	struct tool_opts q = { .quick = true, .out = o->out, .png = opt_str(o, "png") };
	struct refscale_result rs;
	struct scale_result sc;
	struct seed000_result s0;
	struct torture_result tr;
	struct callbacks_result cbr;
	struct seed003_result s3r;
	struct seed004_result s4r;
	struct peers_result pr;
	struct qrow rows[48];
	uint64_t t0 = now_ns();
	int n, rc001;
	struct json j;

	if (json_open(&j, o, "quick"))
		return 1;
	machine_note(&j);
	seed000_main(&q, &s0);
	refscale_main(&q, &rs);
	scale_main(&q, &sc);
	if (scale_callbacks_main(&q, &cbr))
		return 1;
	if (peers_main(&q, &pr))
		return 1;
	torture_main(&q, &tr);
	fflush(stdout);
	rc001 = seeds_001(&q);
	/* A run that fails early leaves its rows NAN (MISS); one that only
	 * could not write its plot has filled them. */
	if (seeds_003_main(&q, &s3r))
		fprintf(stderr, "quick: seeds 003 reported a failure (above); rows it could not fill read nan\n");
	if (seeds_004_main(&q, &s4r))
		fprintf(stderr, "quick: seeds 004 reported a failure (above); a row it could not fill reads nan\n");
	n = quick_rows(rows, &rs, &sc, &pr, &s0, &cbr, &tr, &s3r, &s4r);
	quick_print(rows, n, rc001, &j);
	printf("quick: %.0f s in all; MISS = performance goal missed (exit status "
	       "stays 0); FAIL on torture = exit 1\n", (double)(now_ns() - t0) / 1e9);
	json_num(&j, "seconds", (double)(now_ns() - t0) / 1e9);
	if (json_close(&j))
		return 1;
	return tr.failures ? 1 : 0;
}
