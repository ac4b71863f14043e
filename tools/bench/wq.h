/* SPDX-License-Identifier: MIT */
/* The workqueue benchmark (bench/wq.c), for `treercu wq` and the experiment
 * that runs it beside a kernel patch's figures. */
#ifndef TREERCU_TOOL_WQ_H
#define TREERCU_TOOL_WQ_H

#include "tool.h"

/* Affinity scopes measured, in this order: cpu, smt, cache_shard, cache,
 * numa, system. */
#define NSCOPES 6

/* A patch's own figures, printed beside ours. */
struct wq_seed {
	const double *base, *patched;   /* items/s per scope, NSCOPES each */
	const char *latency_note;       /* after the enqueue latency title */
	const char *footnote;           /* after the tables */
	const char *json_stem;          /* JSON file name under --out */
};

/* Runs the benchmark with o's options; seed NULL: no patch figures.
 * Returns the exit status (2: bad options). */
int wq_run(struct tool_opts *o, const char *cmd, const struct wq_seed *seed);

#endif
