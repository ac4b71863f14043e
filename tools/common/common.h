/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the measurement subcommands: timing, statistics and
 * latency histograms (stats.c), human tables (table.c), a tiny JSON writer
 * and the machine it records (json.c), progress on stderr, interleaved
 * repeats and thread start (run.c).  Plots: plot.h; options: tool.h.
 * This header includes no treercu or liburcu header: the liburcu glue TU
 * uses it too (for the loop shapes below, so both libraries run the very
 * same code around their read side).
 */
#ifndef TREERCU_TOOL_COMMON_H
#define TREERCU_TOOL_COMMON_H

#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tool.h"

/* ---- Loop shapes shared by treercu and liburcu -------------------------- */

#define tool_barrier() __asm__ __volatile__("" ::: "memory")

/* Lock/unlock pairs per refscale batch: 100 x 10 unrolled pairs. */
#define REFSCALE_BATCH 1000
#define REFSCALE_PAIR(LOCK, UNLOCK) do { LOCK; tool_barrier(); UNLOCK; tool_barrier(); } while (0)
#define REFSCALE_PAIR10(L, U) do { \
	REFSCALE_PAIR(L, U); REFSCALE_PAIR(L, U); REFSCALE_PAIR(L, U); \
	REFSCALE_PAIR(L, U); REFSCALE_PAIR(L, U); REFSCALE_PAIR(L, U); \
	REFSCALE_PAIR(L, U); REFSCALE_PAIR(L, U); REFSCALE_PAIR(L, U); \
	REFSCALE_PAIR(L, U); } while (0)
/* nbatch batches of REFSCALE_BATCH pairs; QS (may be empty) once per batch. */
#define REFSCALE_LOOP(nbatch, LOCK, UNLOCK, QS) do { \
	for (unsigned long rl_b_ = 0; rl_b_ < (nbatch); rl_b_++) { \
		for (int rl_i_ = 0; rl_i_ < REFSCALE_BATCH / 10; rl_i_++) \
			REFSCALE_PAIR10(LOCK, UNLOCK); \
		QS; \
	} } while (0)

/* Busy reader for `scale`: lock, a short section (BUSY_SECTION loads of a
 * shared word), unlock, until *stop.  Returns the number of sections. */
#define BUSY_SECTION 32
extern volatile unsigned long tool_busy_word;
#define BUSY_READER_LOOP(stop, LOCK, UNLOCK, count) do { \
	while (!__atomic_load_n((stop), __ATOMIC_RELAXED)) { \
		LOCK; \
		for (int br_i_ = 0; br_i_ < BUSY_SECTION; br_i_++) \
			(void)tool_busy_word; \
		UNLOCK; \
		(count)++; \
	} } while (0)

/* ---- Threads ----------------------------------------------------------- */

/* pthread_create(), or exit(1) with "WHO: pthread_create failed". */
void tool_spawn(pthread_t *tid, void *(*fn)(void *), void *arg, const char *who);

/* ---- Time --------------------------------------------------------------- */

uint64_t now_ns(void);
void sleep_ns(uint64_t ns);
/* "12.345 ms", "1.234 us", "950 ns": three significant decimals. */
const char *fmt_ns(char *buf, size_t len, double ns);

/* ---- Statistics --------------------------------------------------------- */

struct summary {
	size_t n;
	double min, max, mean, median, p99;
	double spread;          /* (max - min) / median, percent */
};
void summarize(const double *v, size_t n, struct summary *s);
double percentile(const double *sorted, size_t n, double p);
double median_of(const double *v, size_t n);

/* Log-linear latency histogram: 64 sub-buckets per power of two (<1.6 %
 * resolution), exact count, sum, min and max. */
#define LAT_SUB 64
#define LAT_BUCKETS (40 * LAT_SUB)
struct lat_hist {
	uint64_t count, sum, min, max;
	uint32_t b[LAT_BUCKETS];
};
void lat_init(struct lat_hist *h);
void lat_add(struct lat_hist *h, uint64_t ns);
void lat_merge(struct lat_hist *into, const struct lat_hist *from);
double lat_pct(const struct lat_hist *h, double p);

/* ---- Human tables (markdown-style, so they paste into docs) -------------- */

#define TAB_MAXCOL 14
struct table {
	int ncol, col;
	int width[TAB_MAXCOL];
};
/* names: ncol column titles; widths: minimum cell widths. */
void tab_start(struct table *t, int ncol, const char *const *names, const int *widths);
/* One cell; the row ends after the last column. */
void tab_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- JSON --------------------------------------------------------------- */

/* A streaming writer.  With a NULL path every call is a no-op. */
#define JSON_DEPTH 16
struct json {
	FILE *f;
	int depth;
	bool need_comma[JSON_DEPTH];
	bool err;
};
/* Opens o->json, else DIR/stem.json under --out, else nothing (every call a
 * no-op), and writes the header every output carries: json_header(). */
int json_open(struct json *j, const struct tool_opts *o, const char *stem);
/* "schema": "treercu.STEM/1", then the tool's version, git commit, the date
 * (UTC, ISO 8601), the compiler and "machine": CPUs, model, load average. */
void json_header(struct json *j, const char *stem);
int json_close(struct json *j);                    /* 0, or -1 on any error */
void json_obj(struct json *j, const char *key);    /* key NULL in arrays */
void json_arr(struct json *j, const char *key);
void json_end(struct json *j, char close);         /* '}' or ']' */
void json_num(struct json *j, const char *key, double v);
void json_int(struct json *j, const char *key, long long v);
void json_str(struct json *j, const char *key, const char *s);
void json_bool(struct json *j, const char *key, bool v);
void json_u64_array(struct json *j, const char *key, const uint64_t *v, size_t n);
void json_summary(struct json *j, const char *key, const struct summary *s);

/* The machine a run is on. */
struct tool_machine {
	long cpus;              /* online */
	char model[128];        /* /proc/cpuinfo's model name, or "unknown" */
	double load[3];         /* load average over 1, 5, 15 minutes */
};
void tool_machine(struct tool_machine *m);
/* The run's date, taken once: "2026-01-31T12:34:56Z". */
const char *tool_date(void);

/* Prints (and puts in JSON) the CPU count and load average: a figure taken
 * while other programs load this machine is not worth much (see
 * docs/benchmarks.md).  Warns when the load exceeds the CPU count. */
void machine_note(struct json *j);

/* ---- Progress on stderr ------------------------------------------------- */

struct progress {
	const char *what;
	uint64_t start, last;
	bool on, tty;
};
/* Shown only when the run is expected to last more than a few seconds. */
double process_rss_bytes(void);   /* resident set size now, bytes */
void progress_start(struct progress *p, const char *what, double expected_s);
void progress_update(struct progress *p, double fraction);
void progress_done(struct progress *p);

/* ---- Interleaved repeats ------------------------------------------------ */

/*
 * Runs fn(variant, rep, arg) for every variant, reps times.  Even repeats go
 * through the variants in order, odd ones in reverse, so A and B alternate
 * and neither always runs first.  what/expected_s drive the progress line.
 */
typedef void (*variant_fn)(int variant, int rep, void *arg);
void run_interleaved(int nvariants, int reps, variant_fn fn, void *arg,
		     const char *what, double expected_s);

/* Calls recorded in h below ns (bucket resolution: a bucket counts when its
 * lower bound is below ns, so the edge is exact to 1.6 %). */
uint64_t lat_count_below(const struct lat_hist *h, double ns);

#endif
