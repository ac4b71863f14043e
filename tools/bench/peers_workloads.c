/* SPDX-License-Identifier: MIT */
/*
 * peers: the deferred-free and hash-map workloads (peers_retire.c,
 * peers_hashmap.c) for every peer in the same run, interleaved over the
 * repeats; medians, spreads ((max - min) / median) and ratios against
 * treercu's median.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "peers.h"
#include "peers_work.h"

#define PR_MAX_REPS 51
#define PR_NRET 5
#define PR_NHM 5

struct pr_ctx {
	int idx[PEER_MAX], n;
	double dur_s, cap;
	int lookup_pct;
	struct peers_retire_point ret[PEER_MAX][PR_MAX_REPS];
	struct peers_hashmap_point hm[PEER_MAX][PR_MAX_REPS];
	bool error;
};

static void pr_retire_variant(int v, int rep, void *arg)
{
	struct pr_ctx *c = arg;
	int i = c->idx[v];

	if (!peers_retire_run(peer_get(i), c->dur_s, c->cap, &c->ret[i][rep]))
		c->error = true;
}

static void pr_hashmap_variant(int v, int rep, void *arg)
{
	struct pr_ctx *c = arg;
	int i = c->idx[v];

	if (!peers_hashmap_run(peer_get(i), c->dur_s, c->cap, c->lookup_pct, &c->hm[i][rep]))
		c->error = true;
}

/* One metric of every selected peer: medians and spreads. */
struct pr_metric {
	const char *name, *key;
	double scale;                     /* printed value = figure / scale */
	struct summary s[PEER_MAX];
};

static void pr_table(struct pr_ctx *c, const char *title, struct pr_metric *m, int nm,
		     struct json *j, const char *jkey)
{
	static const char *const cols[] = {
		"metric", "peer", "median", "min", "max", "spread", "vs treercu",
	};
	static const int w[] = { 30, 12, 10, 10, 10, 6, 10 };
	struct table t;

	printf("\n%s\n", title);
	tab_start(&t, 7, cols, w);
	json_arr(j, jkey);
	for (int k = 0; k < nm; k++) {
		const struct summary *ref = &m[k].s[PEER_TREERCU];

		for (int v = 0; v < c->n; v++) {
			const struct summary *s = &m[k].s[c->idx[v]];
			double sc = m[k].scale;

			tab_cell(&t, "%s", v ? "" : m[k].name);
			tab_cell(&t, "%s", peer_get(c->idx[v])->name);
			tab_cell(&t, s->median / sc >= 1000 ? "%.0f" : "%.3g", s->median / sc);
			tab_cell(&t, s->min / sc >= 1000 ? "%.0f" : "%.3g", s->min / sc);
			tab_cell(&t, s->max / sc >= 1000 ? "%.0f" : "%.3g", s->max / sc);
			tab_cell(&t, "%.0f%%", s->spread);
			if (ref->n && ref->median != 0)
				tab_cell(&t, "%.2fx", s->median / ref->median);
			else
				tab_cell(&t, "%s", "-");
			json_obj(j, NULL);
			json_str(j, "metric", m[k].key);
			json_str(j, "peer", peer_get(c->idx[v])->name);
			json_summary(j, "value", s);
			if (ref->n && ref->median != 0)
				json_num(j, "ratio_vs_treercu", s->median / ref->median);
			json_end(j, '}');
		}
	}
	json_end(j, ']');
}

static void pr_summarize(int reps, const double *v, struct summary *s)
{
	summarize(v, (size_t)reps, s);
}

static void pr_retire_report(struct pr_ctx *c, int reps, struct json *j,
			     struct peers_result *r)
{
	struct pr_metric m[PR_NRET] = {
		{ "objects retired/s", "objects_per_s", 1, { { 0 } } },
		{ "reader sections/s (M)", "reader_sections_per_s", 1e6, { { 0 } } },
		{ "CPU ns per object", "cpu_ns_per_object", 1, { { 0 } } },
		{ "helper threads CPU %", "helper_cpu_pct", 1, { { 0 } } },
		{ "peak unfreed objects", "peak_unfreed_objects", 1, { { 0 } } },
	};

	for (int v = 0; v < c->n; v++) {
		int i = c->idx[v];
		double x[PR_NRET][PR_MAX_REPS];

		for (int k = 0; k < reps; k++) {
			x[0][k] = c->ret[i][k].objs_s;
			x[1][k] = c->ret[i][k].sections_s;
			x[2][k] = c->ret[i][k].cpu_ns_per_obj;
			x[3][k] = c->ret[i][k].helper_cpu_pct;
			x[4][k] = c->ret[i][k].peak_unfreed;
		}
		for (int k = 0; k < PR_NRET; k++)
			pr_summarize(reps, x[k], &m[k].s[i]);
		r->ran_retire[i] = true;
		r->retire[i] = (struct peers_retire_point){ m[0].s[i].median, m[1].s[i].median,
			m[2].s[i].median, m[3].s[i].median, m[4].s[i].median };
	}
	pr_table(c, "deferred free: one updater retiring 64-byte objects as fast as it can, "
		 "one reader; CPU per object = updater + helper threads", m, PR_NRET, j,
		 "deferred_free");
}

static void pr_hashmap_report(struct pr_ctx *c, int reps, struct json *j,
			      struct peers_result *r)
{
	struct pr_metric m[PR_NHM] = {
		{ "operations/s", "ops_per_s", 1, { { 0 } } },
		{ "unfreed memory peak KiB", "unfreed_bytes_peak", 1024, { { 0 } } },
		{ "unfreed memory mean KiB", "unfreed_bytes_mean", 1024, { { 0 } } },
		{ "RSS growth peak KiB", "rss_growth_bytes_peak", 1024, { { 0 } } },
		{ "CPU outside workers %", "helper_cpu_pct", 1, { { 0 } } },
	};
	char title[160];

	for (int v = 0; v < c->n; v++) {
		int i = c->idx[v];
		double x[PR_NHM][PR_MAX_REPS];

		for (int k = 0; k < reps; k++) {
			x[0][k] = c->hm[i][k].ops_s;
			x[1][k] = c->hm[i][k].peak_unfreed_bytes;
			x[2][k] = c->hm[i][k].mean_unfreed_bytes;
			x[3][k] = c->hm[i][k].rss_growth_bytes;
			x[4][k] = c->hm[i][k].helper_cpu_pct;
		}
		for (int k = 0; k < PR_NHM; k++)
			pr_summarize(reps, x[k], &m[k].s[i]);
		r->ran_hashmap[i] = true;
		r->hashmap[i] = (struct peers_hashmap_point){ m[0].s[i].median, m[1].s[i].median,
			m[2].s[i].median, m[3].s[i].median, m[4].s[i].median };
	}
	snprintf(title, sizeof(title), "hash map: 2 workers, %d%% lookups, the rest 2:1:1 "
		 "replace/insert/delete; CPU outside workers = helper threads", c->lookup_pct);
	pr_table(c, title, m, PR_NHM, j, "hashmap");
}

const struct tool_opt peers_opts[] = {
	TOPT_I("repeats", "N", "repeats", 1, PR_MAX_REPS, 5, 3,
	       "interleaved repeats of every peer in each workload"),
	TOPT_N("duration", "SEC", "seconds", 0.01, 3600, 1.0, 0.3,
	       "length of one run of one peer"),
	TOPT_S("peers", "LIST", "all",
	       "comma-separated peers to run: " PEER_IDS ", or all"),
	TOPT_S("workload", "NAME", "both",
	       "run only one workload: retire (deferred free) or hashmap"),
	TOPT_I("lookup-pct", "PCT", "percent", 0, 100, 90, 90,
	       "hash map: share of lookups among the operations"),
	TOPT_END,
};

/* --workload: bit 0 retire, bit 1 hashmap; 0 on bad input (message printed). */
static int pr_workloads(struct tool_opts *o)
{
	const char *w = opt_str(o, "workload");

	if (!w)
		return 3;
	if (!strcmp(w, "retire"))
		return 1;
	if (!strcmp(w, "hashmap"))
		return 2;
	fprintf(stderr, "treercu peers: --workload %s: expected retire or hashmap\n", w);
	return 0;
}

int peers_main(struct tool_opts *o, struct peers_result *r)
{
	bool sel[PEER_MAX];
	struct pr_ctx *c;
	struct json j;
	long reps, lk;
	int which, rc;

	tool_bind(o, peers_opts);
	memset(r, 0, sizeof(*r));
	which = pr_workloads(o);
	if (!which || peer_select(opt_str(o, "peers"), sel, "treercu peers"))
		return 2;
	for (int i = 0; PEER_TSAN && i < PEER_MAX; i++) {
		if (sel[i] && i != PEER_TREERCU && i != PEER_TREERCU_QSBR && i != PEER_TREERCU_TASK) {
			printf("peer %s left out: ThreadSanitizer cannot see its grace periods\n",
			       peer_get(i)->name);
			sel[i] = false;
		}
	}
	if (peer_check_heads())
		return 1;
	c = calloc(1, sizeof(*c));
	if (!c || json_open(&j, o, "peers"))
		return 1;
	opt_long(o, "repeats", &reps);
	opt_long(o, "lookup-pct", &lk);
	opt_double(o, "duration", &c->dur_s);
	c->lookup_pct = (int)lk;
	c->cap = peer_unfreed_cap();
	c->n = peer_list(sel, c->idx);
	printf("\npeers: deferred free and a read-mostly hash map, every peer in the same run; "
	       "%ld interleaved repeats of %.2f s per peer; medians; spread = (max-min)/median; "
	       "ratios are peer/treercu\n", reps, c->dur_s);
	machine_note(&j);
	json_str(&j, "command", "peers");
	json_int(&j, "repeats", reps);
	json_num(&j, "duration_s", c->dur_s);
	json_int(&j, "lookup_pct", lk);
	if (c->n && (which & 1)) {
		run_interleaved(c->n, (int)reps, pr_retire_variant, c, "peers: deferred free",
				c->n * (double)reps * (c->dur_s + 0.1));
		pr_retire_report(c, (int)reps, &j, r);
	}
	if (c->n && (which & 2)) {
		run_interleaved(c->n, (int)reps, pr_hashmap_variant, c, "peers: hash map",
				c->n * (double)reps * (c->dur_s + 0.1));
		pr_hashmap_report(c, (int)reps, &j, r);
	}
	rc = c->error ? 1 : 0;
	if (json_close(&j))
		rc = 1;
	free(c);
	return rc;
}

int cmd_peers(struct tool_opts *o)
{
	struct peers_result *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return 1;
	rc = peers_main(o, r);
	free(r);
	return rc;
}
