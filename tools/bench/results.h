/* SPDX-License-Identifier: MIT */
/*
 * What each benchmark, experiment and the torture run hands to the quick
 * summary (bench/quick.c), and the entry points that fill them.
 */
#ifndef TREERCU_TOOL_RESULTS_H
#define TREERCU_TOOL_RESULTS_H

#include <stdbool.h>

#include "peers.h"
#include "tool.h"

struct refscale_result {
	double trcu_ns[2], memb_ns[2], qsbr_ns[2], trcu_qsbr_ns[2]; /* [readers-1] */
	double trcu_task_ns[2];   /* task readers (trcu_task_read_lock(t)) */
	double ns[PEER_MAX][2];   /* [peer (peers.h)][readers-1]; NAN: not run */
	double empty_ns[2];       /* the loop with an empty pair; NAN: not run */
};
/* top_pct: the busiest caller's share of the calls (fair: 100 / callers). */
struct scale_point { double p50, p99, max, calls_s, reads_s, top_pct; };
/* [peer (peers.h): 0 treercu, 1 liburcu memb, ...][readers 0..2][callers 1, 8, 64];
 * a peer other than those two runs with 1 caller only unless --callers. */
struct scale_result {
	struct scale_point pt[PEER_MAX][3][3];
};
struct seed000_result {
	double mean_off, mean_on, max_off, max_on, cut_pct, mean_default;
};
struct torture_result {
	unsigned long failures, reads, updates;
};
/* seeds 003: list / wakeme ratios, [0] p50 and [1] p99 (medians over
 * repeats), at the seed's load (one job per CPU) in each profile and with
 * 64 jobs; NAN where not run. */
struct seed003_result {
	double load_kernel[2], load_treercu[2], jobs64[2];
};
/* seeds 004: the list path's worst p99 / idle p99 over K. */
struct seed004_result {
	double list_worst;
};

int refscale_main(struct tool_opts *o, struct refscale_result *r);
int scale_main(struct tool_opts *o, struct scale_result *r);
int seed000_main(struct tool_opts *o, struct seed000_result *r);
int torture_main(struct tool_opts *o, struct torture_result *r);
int seeds_003_main(struct tool_opts *o, struct seed003_result *r);   /* r may be NULL */
int seeds_004_main(struct tool_opts *o, struct seed004_result *r);
/* ---- Callback benchmarks (`scale --callbacks`), for `quick` -------------- */

/* [0] treercu, [1] liburcu memb; medians over interleaved repeats. */
struct callbacks_result {
	double enqueue_ns[2];            /* call_rcu() ns per call */
	double e2e_cbs_s[2];             /* 1 M callbacks, first enqueue to last run */
	double barrier_idle_p50_ns[2], barrier_idle_p99_ns[2];
	double barrier_load_p50_ns[2], barrier_load_p99_ns[2];
	double flood_peak_pending[2];
	double flood_rss_growth_bytes[2];
	double flood_cbs_s[2];           /* callbacks run per second during the flood */
	bool flood_capped[2];            /* producers hit the tool's memory safety cap */
};
/* Runs the callback benchmarks alone (o->quick: short), prints their table,
 * writes o->json if set.  Returns 0, or 1 on error. */
int scale_callbacks_main(struct tool_opts *o, struct callbacks_result *r);

#endif
