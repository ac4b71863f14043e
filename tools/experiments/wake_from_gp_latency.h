/* SPDX-License-Identifier: MIT */
/*
 * Seeds 003's measurement context, shared by the measurement
 * (wake_from_gp_latency.c) and its plots (wake_from_gp_plot.c).
 */
#ifndef TREERCU_TOOL_WAKE_FROM_GP_LATENCY_H
#define TREERCU_TOOL_WAKE_FROM_GP_LATENCY_H

#include <pthread.h>
#include <stdint.h>

#include "common.h"
#include "sync_paths.h"

#define S3_REPS_MAX 50
#define S3_THREADS_MAX 512
#define S3_SEED_ROWS 13
#define S3_EDGES_MAX 40

enum { F_P50, F_P90, F_P99, F_MAX, F_CPS, F_TOP, NF };   /* F_TOP: busiest thread's % of calls */

struct s3_ctx;

struct s3_thread {
	struct s3_ctx *c;
	pthread_t tid;
	struct lat_hist h;
};

struct s3_ctx {
	long threads, idle, reps;
	long bg_rate;                 /* --bg-cbs: background call_rcu()/s, 0 = none */
	int bg_stop;
	pthread_t bg;
	unsigned long bg_queued;
	double dur_s;
	int stop, err;
	pthread_barrier_t start;
	struct s3_thread *th;
	struct lat_hist rep_h, pooled[NSPATH];
	double rep[NSPATH][S3_REPS_MAX][NF];
	long direct[NSPATH], deferred[NSPATH], no_head[NSPATH], gps[NSPATH];
	double edges[S3_EDGES_MAX];   /* adaptive bucket edges, ns */
	int nedges;
};

/* The seed's histograms: 10 ms buckets, [0] default, [1] wake_from_gp;
 * -1 where the seed cut its list. */
extern const long seed3[2][S3_SEED_ROWS];
extern const char *const seed3_name[2];
/* Calls in seed s's histogram (the rows shown). */
long seed3_total(int s);
/* Calls in h with lo <= latency < hi (ns). */
uint64_t bucket_count(const struct lat_hist *h, double lo, double hi);

/* The seed's load, one job per CPU, in the kernel and treercu profiles. */
#define S3_NLOAD 2

/* Plots: the 64-caller run (log bins and the seed's 10 ms buckets), and the
 * seed's load in both profiles.  -1 on error (a message was printed). */
int s3_plot(const struct s3_ctx *c, const char *path);
int s3_plot_load(struct s3_ctx *const lc[S3_NLOAD], const char *path);

#endif
