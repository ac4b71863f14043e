/* SPDX-License-Identifier: MIT */
/* Time, statistics and latency histograms (declared in common.h). */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

volatile unsigned long tool_busy_word;

/* ---- Time --------------------------------------------------------------- */

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

const char *fmt_ns(char *buf, size_t len, double ns)
{
	if (ns >= 1e9)
		snprintf(buf, len, "%.3f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, len, "%.3f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.3f us", ns / 1e3);
	else
		snprintf(buf, len, "%.2f ns", ns);
	return buf;
}

/* ---- Statistics --------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile with linear interpolation, p in [0, 100]. */
double percentile(const double *sorted, size_t n, double p)
{
	double pos;
	size_t i;

	if (n == 0)
		return NAN;
	pos = p / 100.0 * (double)(n - 1);
	i = (size_t)pos;
	if (i + 1 >= n)
		return sorted[n - 1];
	return sorted[i] + (pos - (double)i) * (sorted[i + 1] - sorted[i]);
}

void summarize(const double *v, size_t n, struct summary *s)
{
	double *c = malloc((n ? n : 1) * sizeof(*c));
	double sum = 0;

	memset(s, 0, sizeof(*s));
	s->n = n;
	if (!c || n == 0) {
		s->min = s->max = s->mean = s->median = s->p99 = NAN;
		free(c);
		return;
	}
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += c[i];
	s->min = c[0];
	s->max = c[n - 1];
	s->mean = sum / (double)n;
	s->median = percentile(c, n, 50);
	s->p99 = percentile(c, n, 99);
	s->spread = s->median > 0 ? (s->max - s->min) / s->median * 100.0 : 0;
	free(c);
}

double median_of(const double *v, size_t n)
{
	struct summary s;

	summarize(v, n, &s);
	return s.median;
}

/* ---- Latency histogram ---------------------------------------------------- */

void lat_init(struct lat_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static int lat_bucket(uint64_t ns)
{
	int lg, idx;

	if (ns < LAT_SUB)
		return (int)ns;
	lg = 63 - __builtin_clzll(ns);            /* ns >= 2^6 */
	idx = (lg - 5) * LAT_SUB + (int)((ns >> (lg - 6)) - LAT_SUB);
	return idx < LAT_BUCKETS ? idx : LAT_BUCKETS - 1;
}

/* Lower bound of a bucket, in ns (inverse of lat_bucket). */
static double lat_value(int idx)
{
	int lg;

	if (idx < LAT_SUB)
		return idx;
	lg = idx / LAT_SUB + 5;
	return (double)((uint64_t)(LAT_SUB + idx % LAT_SUB) << (lg - 6));
}

void lat_add(struct lat_hist *h, uint64_t ns)
{
	h->b[lat_bucket(ns)]++;
	h->count++;
	h->sum += ns;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
}

void lat_merge(struct lat_hist *into, const struct lat_hist *from)
{
	for (int i = 0; i < LAT_BUCKETS; i++)
		into->b[i] += from->b[i];
	into->count += from->count;
	into->sum += from->sum;
	if (from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
}

/* The p-th percentile: middle of the bucket holding that rank, clamped to
 * the exact min and max. */
double lat_pct(const struct lat_hist *h, double p)
{
	uint64_t rank, seen = 0;
	double v;

	if (h->count == 0)
		return NAN;
	rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
	if (rank < 1)
		rank = 1;
	for (int i = 0; i < LAT_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			v = (lat_value(i) + lat_value(i + 1)) / 2;
			if (v < (double)h->min)
				v = (double)h->min;
			return v > (double)h->max ? (double)h->max : v;
		}
	}
	return (double)h->max;
}

/* ---- Histogram bucket counts ------------------------------------------ */

uint64_t lat_count_below(const struct lat_hist *h, double ns)
{
	uint64_t n = 0;

	for (int i = 0; i < LAT_BUCKETS && lat_value(i) < ns; i++)
		n += h->b[i];
	return n;
}
