/* SPDX-License-Identifier: MIT */
/*
 * treercu quick: every benchmark and experiment in its short form, then one
 * summary table, each row judged against its goal in bench/goals.tsv.
 */
#include <math.h>
#include <stdio.h>

#include "common.h"
#include "goals.h"
#include "results.h"

struct qrow {
	const char *goal;         /* its name in bench/goals.tsv */
	double trcu, lu;
	bool has_lu;              /* lu is liburcu's figure (else no figure beside) */
};

/* treercu against liburcu, same run. */
static struct qrow ratio_row(const char *goal, double t, double l)
{
	return (struct qrow){ goal, t, l, true };
}

/* A figure with no liburcu figure beside it. */
static struct qrow plain_row(const char *goal, double v)
{
	return (struct qrow){ goal, v, 0, false };
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
		      const struct scale_result *sc, const struct seed000_result *s0,
		      const struct callbacks_result *cb, const struct torture_result *tr,
		      const struct seed003_result *s3, const struct seed004_result *s4)
{
	const struct scale_point (*t)[3] = sc->pt[0], (*l)[3] = sc->pt[1];
	int n = 0;

	q[n++] = ratio_row("read_pair_1", rs->trcu_ns[0], rs->memb_ns[0]);
	q[n++] = ratio_row("read_pair_2", rs->trcu_ns[1], rs->memb_ns[1]);
	q[n++] = ratio_row("sync_idle_p50", t[0][0].p50 / 1e3, l[0][0].p50 / 1e3);
	q[n++] = ratio_row("sync_1rd_p50", t[1][0].p50 / 1e3, l[1][0].p50 / 1e3);
	q[n++] = ratio_row("sync_1rd_p99", t[1][0].p99 / 1e3, l[1][0].p99 / 1e3);
	q[n++] = ratio_row("sync_2rd_p50", t[2][0].p50 / 1e3, l[2][0].p50 / 1e3);
	q[n++] = ratio_row("sync_2rd_p99", t[2][0].p99 / 1e3, l[2][0].p99 / 1e3);
	q[n++] = ratio_row("sync_64_p50", t[0][2].p50 / 1e3, l[0][2].p50 / 1e3);
	q[n++] = ratio_row("sync_64_p99", t[0][2].p99 / 1e3, l[0][2].p99 / 1e3);
	q[n++] = ratio_row("sync_64_cps", t[0][2].calls_s, l[0][2].calls_s);
	n += quick_cb_rows(q + n, cb);
	n += quick_sync_rows(q + n, s3, s4);
	q[n++] = plain_row("s0_cut", s0->cut_pct);
	q[n++] = plain_row("torture_failures", (double)tr->failures);
	return n;
}

static void quick_print(const struct qrow *q, int n, int rc001, struct json *j)
{
	static const char *const cols[] = { "metric", "treercu", "liburcu", "ratio", "goal", "result" };
	static const int w[] = { 35, 10, 10, 7, 18, 6 };
	struct tool_machine m;
	struct table t;
	char goal[64];

	/* The header names what the table was measured on, so that a copy of
	 * it (the README's) carries its version, date and machine. */
	tool_machine(&m);
	printf("\n=== treercu quick summary (liburcu = liburcu memb; same run) ===\n");
	printf("treercu %s%s%s%s, %s, %s, %ld CPUs, load average %.2f %.2f %.2f at the end\n",
	       tool_version(), tool_commit()[0] ? " (commit " : "", tool_commit(),
	       tool_commit()[0] ? ")" : "", tool_date(), m.model, m.cpus, m.load[0], m.load[1],
	       m.load[2]);
	tab_start(&t, 6, cols, w);
	json_str(j, "command", "quick");
	json_arr(j, "rows");
	for (int i = 0; i < n; i++) {
		bool torture = i == n - 1, pass = goal_met(q[i].goal, q[i].trcu, q[i].lu);

		goal_text(q[i].goal, goal, sizeof(goal));
		tab_cell(&t, "%s", goal_metric(q[i].goal));
		tab_cell(&t, q[i].trcu >= 1000 ? "%.0f" : "%.3g", q[i].trcu);
		if (q[i].has_lu) {
			tab_cell(&t, q[i].lu >= 1000 ? "%.0f" : "%.3g", q[i].lu);
			tab_cell(&t, "%.2fx", q[i].trcu / q[i].lu);
		} else {
			tab_cell(&t, "%s", "-");
			tab_cell(&t, "%s", "-");
		}
		tab_cell(&t, "%s", goal);
		tab_cell(&t, "%s", pass ? "PASS" : torture ? "FAIL" : "MISS");
		json_obj(j, NULL);
		json_str(j, "metric", goal_metric(q[i].goal));
		json_num(j, "treercu", q[i].trcu);
		if (q[i].has_lu) {
			json_num(j, "liburcu", q[i].lu);
			json_num(j, "ratio", q[i].trcu / q[i].lu);
		}
		json_str(j, "goal", goal);
		json_bool(j, "pass", pass);
		json_end(j, '}');
	}
	json_end(j, ']');
	goal_text("s1_exit", goal, sizeof(goal));
	tab_cell(&t, "%s", goal_metric("s1_exit"));
	tab_cell(&t, "exit %d", rc001);
	tab_cell(&t, "%s", "");
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
	struct qrow rows[32];
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
	torture_main(&q, &tr);
	fflush(stdout);
	rc001 = seeds_001(&q);
	/* A run that fails early leaves its rows NAN (MISS); one that only
	 * could not write its plot has filled them. */
	if (seeds_003_main(&q, &s3r))
		fprintf(stderr, "quick: seeds 003 reported a failure (above); rows it could not fill read nan\n");
	if (seeds_004_main(&q, &s4r))
		fprintf(stderr, "quick: seeds 004 reported a failure (above); a row it could not fill reads nan\n");
	n = quick_rows(rows, &rs, &sc, &s0, &cbr, &tr, &s3r, &s4r);
	quick_print(rows, n, rc001, &j);
	printf("quick: %.0f s in all; MISS = performance goal missed (exit status "
	       "stays 0); FAIL on torture = exit 1\n", (double)(now_ns() - t0) / 1e9);
	json_num(&j, "seconds", (double)(now_ns() - t0) / 1e9);
	if (json_close(&j))
		return 1;
	return tr.failures ? 1 : 0;
}
