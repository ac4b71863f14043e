/* SPDX-License-Identifier: MIT */
/*
 * The plots of `treercu seeds 003` (wake_from_gp_latency.c, which cites the
 * kernel patch): per path, % of calls per log-spaced latency bin, and the
 * seed's 10 ms buckets beside ours.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "plot.h"
#include "sync_paths.h"
#include "wake_from_gp_latency.h"

static const uint32_t path_rgb[NSPATH] = { 0xD62728u, 0x1F77B4u, 0x2CA02Cu };
static const uint32_t seed_rgb[2] = { 0xF2A0A0u, 0x9EC5EBu };

/* ---- seeds 003 plot ----------------------------------------------------- */

#define S3_BINS_PER_DEC 10
#define S3_BINS_MAX 120

static int log_x(const struct panel *p, double dlo, double dhi, double dec)
{
	return p->x0 + (int)lround((dec - dlo) / (dhi - dlo) * (p->x1 - p->x0));
}

static void decade_label(char *b, size_t n, int d)
{
	static const char *const unit[] = { " ns", " us", " ms", " s" };
	int u = d / 3 < 3 ? d / 3 : 3;

	snprintf(b, n, "%.0f%s", pow(10, d - 3 * u), unit[u]);
}

/* Top panel: % of each path's calls per log-spaced bin, one curve per path. */
static void s3_plot_log(struct canvas *cv, const struct s3_ctx *c, struct panel *p,
			const char *what)
{
	double dlo = floor(log10(c->edges[0])), dhi = ceil(log10(c->edges[c->nedges - 1]));
	int nb = (int)(dhi - dlo) * S3_BINS_PER_DEC;
	static double y[NSPATH][S3_BINS_MAX];
	char b[96];

	nb = nb > S3_BINS_MAX ? S3_BINS_MAX : nb;
	p->ymax = 0;
	for (int s = 0; s < NSPATH; s++) {
		for (int i = 0; i < nb; i++) {
			double lo = pow(10, dlo + (double)i / S3_BINS_PER_DEC);
			double hi = pow(10, dlo + (double)(i + 1) / S3_BINS_PER_DEC);
			uint64_t tot = c->pooled[s].count;

			y[s][i] = tot ? 100.0 * (double)bucket_count(&c->pooled[s], lo, hi) / (double)tot : 0;
			p->ymax = fmax(p->ymax, y[s][i]);
		}
	}
	p->ymax = nice_ceil(p->ymax);
	snprintf(b, sizeof(b), "synchronize_rcu() latency, %ld threads%s: log bins%s",
		 c->threads, what, *what ? "" : " (10 per decade)");
	panel_frame(cv, p, b);
	for (int d = (int)dlo; d <= (int)dhi; d++) {
		int x = log_x(p, dlo, dhi, d);

		cv_rect(cv, x, p->y0, x, p->y1 + 4, d > (int)dlo ? GRID_RGB : AXIS_RGB);
		decade_label(b, sizeof(b), d);
		cv_text(cv, x, p->y1 + 8, b, 1, AXIS_RGB, 2);
	}
	for (int s = 0; s < NSPATH; s++) {
		for (int i = 0; i + 1 < nb; i++)
			cv_line(cv, log_x(p, dlo, dhi, dlo + (i + 0.5) / S3_BINS_PER_DEC), panel_y(p, y[s][i]),
				log_x(p, dlo, dhi, dlo + (i + 1.5) / S3_BINS_PER_DEC), panel_y(p, y[s][i + 1]),
				path_rgb[s]);
		legend(cv, p->x1 - 230, p->y0 + 6 + 14 * s, sp_name[s], path_rgb[s]);
	}
	cv_text(cv, (p->x0 + p->x1) / 2, p->y1 + 22, "latency (log scale)", 1, AXIS_RGB, 2);
}

static double s3_bar_pct(const struct s3_ctx *c, int series, int i)
{
	double lo = i * 1e7, hi = i + 1 < S3_SEED_ROWS ? lo + 1e7 : 1e300;
	const struct lat_hist *h;

	if (series < 2)
		return seed3[series][i] > 0 ? 100.0 * (double)seed3[series][i] / (double)seed3_total(series) : 0;
	h = &c->pooled[series - 2];
	return h->count ? 100.0 * (double)bucket_count(h, lo, hi) / (double)h->count : 0;
}

/* Bottom panel: the seed's 10 ms buckets, seed's two series and our three. */
static void s3_plot_10ms(struct canvas *cv, const struct s3_ctx *c, struct panel *p)
{
	int gw = (p->x1 - p->x0) / S3_SEED_ROWS, bw = gw / 6;
	char b[32];

	p->ymax = 0;
	for (int s = 0; s < 2 + NSPATH; s++)
		for (int i = 0; i < S3_SEED_ROWS; i++)
			p->ymax = fmax(p->ymax, s3_bar_pct(c, s, i));
	p->ymax = nice_ceil(p->ymax);
	panel_frame(cv, p, "The seed's 10 ms buckets: seed (kernel, 64 CPUs) vs ours");
	for (int i = 0; i < S3_SEED_ROWS; i++) {
		int gx = p->x0 + i * gw + bw / 2;

		for (int s = 0; s < 2 + NSPATH; s++) {
			int y = panel_y(p, s3_bar_pct(c, s, i));

			if (y < p->y1)
				cv_rect(cv, gx + s * bw, y, gx + (s + 1) * bw - 2, p->y1 - 1,
					s < 2 ? seed_rgb[s] : path_rgb[s - 2]);
		}
		snprintf(b, sizeof(b), i + 1 < S3_SEED_ROWS ? "%d-%d" : ">=%d", i * 10, i * 10 + 10);
		cv_text(cv, p->x0 + i * gw + gw / 2, p->y1 + 8, b, 1, AXIS_RGB, 2);
	}
	cv_rect(cv, p->x0, p->y1, p->x1, p->y1, AXIS_RGB);
	cv_text(cv, (p->x0 + p->x1) / 2, p->y1 + 22, "latency (ms)", 1, AXIS_RGB, 2);
	for (int s = 0; s < 2; s++)
		legend(cv, p->x1 - 230, p->y0 + 6 + 14 * s, seed3_name[s], seed_rgb[s]);
	for (int s = 0; s < NSPATH; s++)
		legend(cv, p->x1 - 230, p->y0 + 34 + 14 * s, sp_name[s], path_rgb[s]);
}

int s3_plot(const struct s3_ctx *c, const char *path)
{
	struct canvas cv;
	struct panel top = { PL_LEFT, 50, PL_RIGHT, 340, 0 };
	struct panel bot = { PL_LEFT, 430, PL_RIGHT, 710, 0 };
	int rc;

	if (cv_init(&cv, PLOT_W, PLOT_H))
		return -1;
	plot_title(&cv);
	s3_plot_log(&cv, c, &top, "");
	s3_plot_10ms(&cv, c, &bot);
	cv_text(&cv, PLOT_W - 10, PLOT_H - 12, "treercu seeds 003", 1, 0x888888u, 1);
	rc = png_write(&cv, path);
	free(cv.px);
	return rc;
}

/* The seed's load, both profiles: one log-bin panel each. */
int s3_plot_load(struct s3_ctx *const lc[S3_NLOAD], const char *path)
{
	struct canvas cv;
	struct panel pn[S3_NLOAD] = {
		{ PL_LEFT, 50, PL_RIGHT, 340, 0 }, { PL_LEFT, 430, PL_RIGHT, 710, 0 },
	};
	char what[48];
	int rc;

	if (cv_init(&cv, PLOT_W, PLOT_H))
		return -1;
	plot_title(&cv);
	for (int i = 0; i < S3_NLOAD; i++) {
		snprintf(what, sizeof(what), ", %s profile", i == 0 ? "kernel" : "treercu");
		s3_plot_log(&cv, lc[i], &pn[i], what);
	}
	cv_text(&cv, PLOT_W - 10, PLOT_H - 12, "treercu seeds 003: the seed's load, one job per CPU",
		1, 0x888888u, 1);
	rc = png_write(&cv, path);
	free(cv.px);
	return rc;
}
