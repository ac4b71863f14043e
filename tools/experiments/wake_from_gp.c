/* SPDX-License-Identifier: MIT */
/*
 * seeds 003 and 004: the three synchronize_rcu() paths
 * (tunable normal_wake_from_gp):
 *   0  wakeme: the kernel's wait_rcu_gp(), a callback queued behind the
 *      caller's other callbacks wakes it;
 *   1  seed 004's lock-free waiter list, woken from the GP (sr_wake_max
 *      directly, the rest by a cleanup work item; the default on <= 16 CPUs);
 *   2  treercu's GP-end futex broadcast (the default above 16 CPUs).
 * The path in force when the run began is marked "(default)".
 *
 * seeds 003: 64 threads call synchronize_rcu() in a loop; latency
 * histograms (buckets fitted to this machine, and the seed's 10 ms ones
 * beside the seed's own), a PNG plot.
 * seeds 004: the caller queues K callbacks, then calls synchronize_rcu();
 * p50/p99 per K and path, and how many of those callbacks ran before it
 * returned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include <treercu/rcu.h>

#include "common.h"

enum { SP_WAKEME, SP_LIST, SP_FUTEX, NSPATH };

static const char *const sp_base[NSPATH] = {
	"0 wakeme (wait_rcu_gp)", "1 wake-from-GP list", "2 GP-end futex",
};
static char sp_name[NSPATH][40];   /* sp_base, the default marked */
static int sp_default;             /* normal_wake_from_gp when the run began */

static void sp_names_init(long def)
{
	sp_default = (int)def;
	for (int p = 0; p < NSPATH; p++)
		snprintf(sp_name[p], sizeof(sp_name[p]), "%s%s", sp_base[p],
			 p == def ? " (default)" : "");
}
static const char *const sp_key[NSPATH] = { "wakeme", "wake_from_gp_list", "gp_end_futex" };

static int sp_apply(int path)
{
	if (trcu_set_tunable("normal_wake_from_gp", path)) {
		fprintf(stderr, "seeds: cannot set normal_wake_from_gp=%d\n", path);
		return -1;
	}
	return 0;
}

static long tunable(const char *name)
{
	long v = -1;

	trcu_get_tunable(name, &v);
	return v;
}

/* ======================================================================
 * A tiny PNG writer: RGB canvas, 5x7 font, zlib-compressed image data.
 * ====================================================================== */

struct canvas {
	int w, h;
	uint8_t *px;
};

static const char font_chars[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ .%()-=:/,_+<>'"
				 "abcdefghijklmnopqrstuvwxyz";
static const uint8_t font_rows[][7] = {
	{ 0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E }, { 0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E },
	{ 0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F }, { 0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E },
	{ 0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02 }, { 0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E },
	{ 0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E }, { 0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08 },
	{ 0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E }, { 0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C },
	{ 0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11 }, { 0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E },
	{ 0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E }, { 0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C },
	{ 0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F }, { 0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10 },
	{ 0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F }, { 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11 },
	{ 0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E }, { 0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C },
	{ 0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11 }, { 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F },
	{ 0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11 }, { 0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11 },
	{ 0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E }, { 0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10 },
	{ 0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D }, { 0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11 },
	{ 0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E }, { 0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04 },
	{ 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E }, { 0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04 },
	{ 0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A }, { 0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11 },
	{ 0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04 }, { 0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F },
	{ 0, 0, 0, 0, 0, 0, 0 },                      { 0, 0, 0, 0, 0, 0x0C, 0x0C },
	{ 0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03 }, { 0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02 },
	{ 0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08 }, { 0, 0, 0, 0x1F, 0, 0, 0 },
	{ 0, 0, 0x1F, 0, 0x1F, 0, 0 },                { 0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0 },
	{ 0, 0x01, 0x02, 0x04, 0x08, 0x10, 0 },       { 0, 0, 0, 0, 0x0C, 0x04, 0x08 },
	{ 0, 0, 0, 0, 0, 0, 0x1F },                   { 0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0 },
	{ 0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02 }, { 0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08 },
	{ 0x04, 0x04, 0x08, 0, 0, 0, 0 },
	/* a-z: x-height 5 rows, ascenders 7; g p q y are drawn 2 rows lower
	 * (rows 5-6: the descender) */
	{ 0, 0, 0x0E, 0x01, 0x0F, 0x11, 0x0F },       { 0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E },
	{ 0, 0, 0x0E, 0x10, 0x10, 0x11, 0x0E },       { 0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F },
	{ 0, 0, 0x0E, 0x11, 0x1F, 0x10, 0x0E },       { 0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08 },
	{ 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x01, 0x0E }, { 0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11 },
	{ 0x04, 0, 0x0C, 0x04, 0x04, 0x04, 0x0E },    { 0x02, 0, 0x06, 0x02, 0x02, 0x12, 0x0C },
	{ 0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12 }, { 0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E },
	{ 0, 0, 0x1A, 0x15, 0x15, 0x11, 0x11 },       { 0, 0, 0x16, 0x19, 0x11, 0x11, 0x11 },
	{ 0, 0, 0x0E, 0x11, 0x11, 0x11, 0x0E },       { 0x1E, 0x11, 0x11, 0x11, 0x1E, 0x10, 0x10 },
	{ 0x0F, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x01 }, { 0, 0, 0x16, 0x19, 0x10, 0x10, 0x10 },
	{ 0, 0, 0x0F, 0x10, 0x0E, 0x01, 0x1E },       { 0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06 },
	{ 0, 0, 0x11, 0x11, 0x11, 0x13, 0x0D },       { 0, 0, 0x11, 0x11, 0x11, 0x0A, 0x04 },
	{ 0, 0, 0x11, 0x11, 0x15, 0x15, 0x0A },       { 0, 0, 0x11, 0x0A, 0x04, 0x0A, 0x11 },
	{ 0x11, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E }, { 0, 0, 0x1F, 0x02, 0x04, 0x08, 0x1F },
};
_Static_assert(sizeof(font_rows) / sizeof(font_rows[0]) == sizeof(font_chars) - 1,
	       "one glyph per font character");

static int cv_init(struct canvas *cv, int w, int h)
{
	cv->w = w;
	cv->h = h;
	cv->px = malloc((size_t)w * (size_t)h * 3);
	if (!cv->px)
		return -1;
	memset(cv->px, 0xff, (size_t)w * (size_t)h * 3);
	return 0;
}

static void cv_px(struct canvas *cv, int x, int y, uint32_t rgb)
{
	uint8_t *p;

	if (x < 0 || y < 0 || x >= cv->w || y >= cv->h)
		return;
	p = cv->px + ((size_t)y * (size_t)cv->w + (size_t)x) * 3;
	p[0] = (uint8_t)(rgb >> 16);
	p[1] = (uint8_t)(rgb >> 8);
	p[2] = (uint8_t)rgb;
}

static void cv_rect(struct canvas *cv, int x0, int y0, int x1, int y1, uint32_t rgb)
{
	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++)
			cv_px(cv, x, y, rgb);
}

/* Bresenham, two pixels thick. */
static void cv_line(struct canvas *cv, int x0, int y0, int x1, int y1, uint32_t rgb)
{
	int dx = abs(x1 - x0), dy = -abs(y1 - y0);
	int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;

	for (;;) {
		int e2 = 2 * err;

		cv_rect(cv, x0, y0, x0 + 1, y0 + 1, rgb);
		if (x0 == x1 && y0 == y1)
			return;
		if (e2 >= dy) {
			err += dy;
			x0 += sx;
		}
		if (e2 <= dx) {
			err += dx;
			y0 += sy;
		}
	}
}

static void cv_char(struct canvas *cv, int x, int y, char c, int scale, uint32_t rgb)
{
	const char *p = strchr(font_chars, c);

	if (!p || !c)
		return;
	if (strchr("gpqy", c))   /* descender */
		y += 2 * scale;
	for (int r = 0; r < 7; r++)
		for (int b = 0; b < 5; b++)
			if (font_rows[p - font_chars][r] & (0x10 >> b))
				cv_rect(cv, x + b * scale, y + r * scale,
					x + (b + 1) * scale - 1, y + (r + 1) * scale - 1, rgb);
}

/* Returns the width drawn; align: 0 left, 1 right-aligned at x, 2 centred. */
static int cv_text(struct canvas *cv, int x, int y, const char *s, int scale, uint32_t rgb, int align)
{
	int w = (int)strlen(s) * 6 * scale;

	if (align == 1)
		x -= w;
	else if (align == 2)
		x -= w / 2;
	for (; *s; s++, x += 6 * scale)
		cv_char(cv, x, y, *s, scale, rgb);
	return w;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void png_chunk(FILE *f, const char *type, const uint8_t *data, uint32_t len)
{
	uint8_t b[4];
	uLong crc = crc32(0, (const Bytef *)type, 4);

	put_be32(b, len);
	fwrite(b, 1, 4, f);
	fwrite(type, 1, 4, f);
	if (len)
		fwrite(data, 1, len, f);
	put_be32(b, (uint32_t)crc32(crc, data, len));
	fwrite(b, 1, 4, f);
}

/* The filtered scanlines (filter: none), compressed with zlib. */
static uint8_t *png_zlib(const struct canvas *cv, uint32_t *outlen)
{
	size_t row = (size_t)cv->w * 3 + 1, raw = row * (size_t)cv->h;
	uLongf zlen = compressBound((uLong)raw);
	uint8_t *z = malloc(zlen), *r = malloc(raw);

	if (z && r) {
		for (int y = 0; y < cv->h; y++) {
			r[(size_t)y * row] = 0;
			memcpy(r + (size_t)y * row + 1, cv->px + (size_t)y * (size_t)cv->w * 3, row - 1);
		}
		if (compress2(z, &zlen, r, (uLong)raw, Z_BEST_COMPRESSION) == Z_OK) {
			*outlen = (uint32_t)zlen;
			free(r);
			return z;
		}
	}
	free(z);
	free(r);
	return NULL;
}

static int png_write(const struct canvas *cv, const char *path)
{
	static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	uint8_t ihdr[13] = { 0 };
	uint32_t zlen;
	uint8_t *z = png_zlib(cv, &zlen);
	FILE *f = z ? fopen(path, "wb") : NULL;
	int rc;

	if (!f) {
		fprintf(stderr, "seeds: cannot write %s: %s\n", path, z ? strerror(errno) : "no memory");
		free(z);
		return -1;
	}
	put_be32(ihdr, (uint32_t)cv->w);
	put_be32(ihdr + 4, (uint32_t)cv->h);
	ihdr[8] = 8;     /* bit depth */
	ihdr[9] = 2;     /* colour type: RGB */
	fwrite(sig, 1, 8, f);
	png_chunk(f, "IHDR", ihdr, 13);
	png_chunk(f, "IDAT", z, zlen);
	png_chunk(f, "IEND", NULL, 0);
	rc = ferror(f) | fclose(f);
	free(z);
	return rc ? -1 : 0;
}

/* ---- Plot panels -------------------------------------------------------- */

#define PLOT_W 1000
#define PLOT_H 760
#define PL_LEFT 80
#define PL_RIGHT (PLOT_W - 30)
#define GRID_RGB 0xDDDDDDu
#define AXIS_RGB 0x000000u

static const uint32_t path_rgb[NSPATH] = { 0xD62728u, 0x1F77B4u, 0x2CA02Cu };
static const uint32_t seed_rgb[2] = { 0xF2A0A0u, 0x9EC5EBu };

struct panel {
	int x0, y0, x1, y1;     /* plot area */
	double ymax;            /* percent */
};

static double nice_ceil(double v)
{
	static const double m[] = { 1, 2, 2.5, 5, 10 };
	double e = pow(10, floor(log10(v > 0 ? v : 1)));

	for (int i = 0; i < 5; i++)
		if (m[i] * e >= v)
			return m[i] * e;
	return 10 * e;
}

static int panel_y(const struct panel *p, double pct)
{
	return p->y1 - (int)lround(pct / p->ymax * (p->y1 - p->y0));
}

/* Frame, horizontal grid lines and y labels (percent of calls), title. */
static void panel_frame(struct canvas *cv, const struct panel *p, const char *title)
{
	char b[32];

	for (int i = 0; i <= 5; i++) {
		double v = p->ymax * i / 5;
		int y = panel_y(p, v);

		cv_rect(cv, p->x0, y, p->x1, y, i ? GRID_RGB : AXIS_RGB);
		snprintf(b, sizeof(b), v >= 10 || v == 0 ? "%.0f%%" : "%.1f%%", v);
		cv_text(cv, p->x0 - 6, y - 3, b, 1, AXIS_RGB, 1);
	}
	cv_rect(cv, p->x0, p->y0, p->x0, p->y1, AXIS_RGB);
	cv_text(cv, p->x0, p->y0 - 26, title, 2, AXIS_RGB, 0);
	cv_text(cv, 8, p->y0 - 14, "% of calls", 1, AXIS_RGB, 0);
}

/* Top line of every plot: version, commit, date, machine. */
static void plot_title(struct canvas *cv)
{
	struct tool_machine m;
	char b[256];

	tool_machine(&m);
	snprintf(b, sizeof(b), "treercu %s%s%s  %s  %ld CPUs: %s, load %.2f", tool_version(),
		 *tool_commit() ? " " : "", tool_commit(), tool_date(), m.cpus, m.model, m.load[0]);
	cv_text(cv, 8, 6, b, 1, 0x555555u, 0);
}

static void legend(struct canvas *cv, int x, int y, const char *label, uint32_t rgb)
{
	cv_rect(cv, x, y, x + 14, y + 6, rgb);
	cv_text(cv, x + 20, y, label, 1, AXIS_RGB, 0);
}

/* ======================================================================
 * seeds 003: 64 threads calling synchronize_rcu()
 * ====================================================================== */

#define S3_REPS_MAX 50
#define S3_THREADS_MAX 512
#define S3_SEED_ROWS 13
#define S3_EDGES_MAX 40

/* The seed's histograms (10 ms buckets, 0..129999 us; the seed cut each
 * list with "..." after the last row given, marked here with -1). */
static const long seed3[2][S3_SEED_ROWS] = {
	{ 1, 4, 399, 3197, 10428, 17363, 15529, 9287, 4249, 1915, 922, 390, 187 },
	{ 1, 234, 6678, 33463, 20669, 2766, 183, -1, -1, -1, -1, -1, -1 },
};
static const char *const seed3_name[2] = { "seed default", "seed wake_from_gp" };

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

static void *s3_caller(void *arg)
{
	struct s3_thread *t = arg;

	trcu_register_thread();
	pthread_barrier_wait(&t->c->start);
	while (!__atomic_load_n(&t->c->stop, __ATOMIC_RELAXED)) {
		uint64_t t0 = now_ns();

		synchronize_rcu();
		lat_add(&t->h, now_ns() - t0);
	}
	trcu_unregister_thread();
	return NULL;
}

/*
 * Background callbacks (--bg-cbs RATE): one registered thread queues RATE
 * call_rcu()/s in 1 ms bursts, each callback freeing its malloc'd head (as
 * kfree_rcu() does).  A kernel always has such callbacks queued (seed 004:
 * thousands to a million); without them the wakeme callbacks are the only
 * ones and nothing is queued ahead of a wake-up.  Not timed; drained with
 * rcu_barrier() after each run.
 */
static void s3_bg_free(struct rcu_head *h)
{
	free(h);
}

static void *s3_bg_fn(void *arg)
{
	struct s3_ctx *c = arg;
	long burst = c->bg_rate / 1000 > 0 ? c->bg_rate / 1000 : 1;
	uint64_t next = now_ns();

	trcu_register_thread();
	while (!__atomic_load_n(&c->bg_stop, __ATOMIC_RELAXED)) {
		uint64_t now;

		for (long i = 0; i < burst; i++) {
			struct rcu_head *h = malloc(sizeof(*h));

			if (!h)
				break;
			call_rcu(h, s3_bg_free);
			c->bg_queued++;
		}
		next += 1000000;
		now = now_ns();
		if (next > now)
			sleep_ns(next - now);
		else
			next = now;   /* fell behind: no catching up in a burst */
	}
	trcu_unregister_thread();
	return NULL;
}

/* Idle registered threads (blocked on a condition variable). */
struct idle_set {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	long n;
	pthread_t tid[64];
};

static void *idle_fn(void *arg)
{
	struct idle_set *s = arg;

	trcu_register_thread();
	pthread_mutex_lock(&s->lock);
	while (!s->stop)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	trcu_unregister_thread();
	return NULL;
}

static int idle_start(struct idle_set *s, long n)
{
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->stop = 0;
	for (s->n = 0; s->n < n; s->n++)
		if (pthread_create(&s->tid[s->n], NULL, idle_fn, s))
			return -1;
	return 0;
}

static void idle_stop(struct idle_set *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (long i = 0; i < s->n; i++)
		pthread_join(s->tid[i], NULL);
}

static void s3_record(struct s3_ctx *c, int path, int rep, double secs)
{
	struct lat_hist *h = &c->rep_h;
	double *r = c->rep[path][rep];

	lat_init(h);
	r[F_TOP] = 0;
	for (long i = 0; i < c->threads; i++) {
		lat_merge(h, &c->th[i].h);
		r[F_TOP] = fmax(r[F_TOP], (double)c->th[i].h.count);
	}
	r[F_TOP] = h->count ? 100 * r[F_TOP] / (double)h->count : 0;
	lat_merge(&c->pooled[path], h);
	r[F_P50] = lat_pct(h, 50);
	r[F_P90] = lat_pct(h, 90);
	r[F_P99] = lat_pct(h, 99);
	r[F_MAX] = (double)h->max;
	r[F_CPS] = (double)h->count / secs;
}

static void s3_variant(int path, int rep, void *arg)
{
	struct s3_ctx *c = arg;
	struct trcu_stats a, b;
	uint64_t t0;
	long n = 0;

	if (sp_apply(path)) {
		c->err = 1;
		return;
	}
	synchronize_rcu();                        /* settle after the switch */
	trcu_get_stats(&a);
	c->stop = 0;
	pthread_barrier_init(&c->start, NULL, (unsigned)c->threads + 1);
	for (; n < c->threads; n++) {
		c->th[n].c = c;
		lat_init(&c->th[n].h);
		if (pthread_create(&c->th[n].tid, NULL, s3_caller, &c->th[n]))
			break;
	}
	if (n < c->threads) {
		fprintf(stderr, "seeds 003: cannot create thread %ld\n", n);
		exit(1);
	}
	c->bg_stop = 0;
	if (c->bg_rate && pthread_create(&c->bg, NULL, s3_bg_fn, c)) {
		fprintf(stderr, "seeds 003: cannot create the background thread\n");
		exit(1);
	}
	pthread_barrier_wait(&c->start);
	t0 = now_ns();
	sleep_ns((uint64_t)(c->dur_s * 1e9));
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
	for (long i = 0; i < n; i++)
		pthread_join(c->th[i].tid, NULL);
	s3_record(c, path, rep, (double)(now_ns() - t0) / 1e9);
	if (c->bg_rate) {
		__atomic_store_n(&c->bg_stop, 1, __ATOMIC_RELAXED);
		pthread_join(c->bg, NULL);
		rcu_barrier();                    /* next run starts with none queued */
	}
	pthread_barrier_destroy(&c->start);
	trcu_get_stats(&b);
	c->direct[path] += b.sr_woken_direct - a.sr_woken_direct;
	c->deferred[path] += b.sr_woken_deferred - a.sr_woken_deferred;
	c->no_head[path] += b.sr_no_wait_head - a.sr_no_wait_head;
	c->gps[path] += (long)(b.gp_completed - a.gp_completed);
}

/* Median over the repeats of one figure (and its summary). */
static double s3_med(const struct s3_ctx *c, int path, int f, struct summary *s)
{
	double v[S3_REPS_MAX];
	struct summary tmp;

	for (long r = 0; r < c->reps; r++)
		v[r] = c->rep[path][r][f];
	summarize(v, (size_t)c->reps, s ? s : &tmp);
	return (s ? s : &tmp)->median;
}

/*
 * One row per path: calls, calls/s, p50/p90/p99 (medians over repeats),
 * max, p50 spread; `all` (the main run) adds GPs, list wake-ups and the
 * busiest caller's share.
 */
static void s3_path_table(const struct s3_ctx *c, bool all)
{
	static const char *const cols[] = {
		"path (normal_wake_from_gp)", "calls", "calls/s", "p50", "p90", "p99", "max",
		"p50 spread", "GPs", "woken direct/deferred", "top thread",
	};
	static const int w[] = { 30, 8, 8, 10, 10, 10, 10, 6, 8, 12, 5 };
	struct table t;
	char b[4][32];

	tab_start(&t, all ? 11 : 8, cols, w);
	for (int p = 0; p < NSPATH; p++) {
		struct summary s;
		double p50 = s3_med(c, p, F_P50, &s);

		tab_cell(&t, "%s", all ? sp_name[p] : sp_base[p]);
		tab_cell(&t, "%llu", (unsigned long long)c->pooled[p].count);
		tab_cell(&t, "%.0f", s3_med(c, p, F_CPS, NULL));
		tab_cell(&t, "%s", fmt_ns(b[0], 32, p50));
		tab_cell(&t, "%s", fmt_ns(b[1], 32, s3_med(c, p, F_P90, NULL)));
		tab_cell(&t, "%s", fmt_ns(b[2], 32, s3_med(c, p, F_P99, NULL)));
		tab_cell(&t, "%s", fmt_ns(b[3], 32, (double)c->pooled[p].max));
		tab_cell(&t, "%.0f%%", s.spread);
		if (!all)
			continue;
		tab_cell(&t, "%ld", c->gps[p]);
		tab_cell(&t, "%ld/%ld", c->direct[p], c->deferred[p]);
		tab_cell(&t, "%.1f%%", s3_med(c, p, F_TOP, NULL));
	}
}

static void s3_summary_table(const struct s3_ctx *c)
{
	printf("\nPer path (median over %ld repeats of p50/p90/p99 and calls/s; max = largest seen;\n"
	       "top thread = the busiest caller's share of the calls, fair = %.1f%%):\n",
	       c->reps, 100.0 / (double)c->threads);
	s3_path_table(c, true);
}

/* 1-2-5 edges spanning every path's calls. */
static void s3_edges(struct s3_ctx *c)
{
	static const double m[] = { 1, 2, 5 };
	double lo = 1e300, hi = 0, e;

	for (int p = 0; p < NSPATH; p++) {
		if (!c->pooled[p].count)
			continue;
		lo = fmin(lo, (double)c->pooled[p].min);
		hi = fmax(hi, (double)c->pooled[p].max);
	}
	e = pow(10, floor(log10(lo > 1 ? lo : 1)));
	c->nedges = 0;
	for (int i = 0; c->nedges < S3_EDGES_MAX; i++) {
		double v = m[i % 3] * e * pow(10, i / 3);

		if (v > lo || c->nedges == 0) {
			if (c->nedges == 0 && v > lo)
				v = e;
			c->edges[c->nedges++] = v;
		}
		if (v > hi)
			break;
	}
}

static uint64_t bucket_count(const struct lat_hist *h, double lo, double hi)
{
	return lat_count_below(h, hi) - lat_count_below(h, lo);
}

static void hist_cell(struct table *t, uint64_t n, uint64_t total)
{
	tab_cell(t, "%llu %5.1f%%", (unsigned long long)n, total ? 100.0 * (double)n / (double)total : 0);
}

static void s3_hist_adaptive(const struct s3_ctx *c, const char *title)
{
	static const char *const cols[] = { "latency", "0 wakeme", "1 list", "2 futex" };
	static const int w[] = { 24, 16, 16, 16 };
	struct table t;
	char a[32], b[32], lab[80];

	printf("\n%s, log-spaced buckets fitted to this run (calls, %% of the path's calls):\n", title);
	tab_start(&t, 4, cols, w);
	for (int i = 0; i + 1 < c->nedges; i++) {
		snprintf(lab, sizeof(lab), "%s - %s", fmt_ns(a, 32, c->edges[i]), fmt_ns(b, 32, c->edges[i + 1]));
		tab_cell(&t, "%s", lab);
		for (int p = 0; p < NSPATH; p++)
			hist_cell(&t, bucket_count(&c->pooled[p], c->edges[i], c->edges[i + 1]), c->pooled[p].count);
	}
}

static long seed3_total(int s)
{
	long n = 0;

	for (int i = 0; i < S3_SEED_ROWS; i++)
		n += seed3[s][i] > 0 ? seed3[s][i] : 0;
	return n;
}

static void s3_hist_10ms(const struct s3_ctx *c)
{
	static const char *const cols[] = {
		"latency (us)", "seed default", "seed wake_from_gp", "0 wakeme", "1 list", "2 futex",
	};
	static const int w[] = { 15, 14, 17, 15, 15, 15 };
	struct table t;

	printf("\n(b) The seed's 10 ms buckets (calls, %% of the shown total); seed: 64 jobs on a "
	       "64-CPU kernel, its lists cut with \"...\":\n");
	tab_start(&t, 6, cols, w);
	for (int i = 0; i <= S3_SEED_ROWS; i++) {
		double lo = i * 1e7, hi = i < S3_SEED_ROWS ? lo + 1e7 : 1e300;

		tab_cell(&t, i < S3_SEED_ROWS ? "%.0f - %.0f" : ">= %.0f", lo / 1e3, hi / 1e3 - 1);
		for (int s = 0; s < 2; s++) {
			long v = i < S3_SEED_ROWS ? seed3[s][i] : -1;

			if (v < 0)
				tab_cell(&t, "%s", "...");
			else
				tab_cell(&t, "%ld %5.1f%%", v, 100.0 * (double)v / (double)seed3_total(s));
		}
		for (int p = 0; p < NSPATH; p++)
			hist_cell(&t, bucket_count(&c->pooled[p], lo, hi), c->pooled[p].count);
	}
}

/* Percentile of the seed's histogram, linear inside a bucket (of the rows
 * shown: the tail cut by "..." is small, <0.5 %). */
static double seed3_pct(int s, double p)
{
	double rank = p / 100 * (double)seed3_total(s), seen = 0;

	for (int i = 0; i < S3_SEED_ROWS && seed3[s][i] > 0; i++) {
		if (seen + (double)seed3[s][i] >= rank)
			return (i + (rank - seen) / (double)seed3[s][i]) * 1e7;
		seen += (double)seed3[s][i];
	}
	return NAN;
}

/* Does the list path cut wakeme's median and tail, as in the seed?  A cut
 * is at least S3_CUT (5 %): within it the two are the same on this noisy
 * machine. */
#define S3_CUT 0.95

static const char *s3_verdict(const struct s3_ctx *c)
{
	double o0 = s3_med(c, SP_WAKEME, F_P50, NULL), o1 = s3_med(c, SP_LIST, F_P50, NULL);
	double q0 = s3_med(c, SP_WAKEME, F_P99, NULL), q1 = s3_med(c, SP_LIST, F_P99, NULL);

	return o1 <= S3_CUT * o0 && q1 <= S3_CUT * q0 ? "median and tail cut, as in the seed"
	       : o1 <= S3_CUT * o0 ? "median cut as in the seed, but NOT the tail"
	       : "the seed's cut is NOT reproduced here";
}

static void s3_compare(const struct s3_ctx *c)
{
	double sd = seed3_pct(0, 50), sw = seed3_pct(1, 50);
	double o0 = s3_med(c, SP_WAKEME, F_P50, NULL), o1 = s3_med(c, SP_LIST, F_P50, NULL);
	double o2 = s3_med(c, SP_FUTEX, F_P50, NULL);
	double q0 = s3_med(c, SP_WAKEME, F_P99, NULL), q1 = s3_med(c, SP_LIST, F_P99, NULL);
	char b[6][32];

	printf("\nSummary (seed 003):\n");
	printf("- seed (kernel, 64 CPUs): p50 %s -> %s with rcu_normal_wake_from_gp (%.0f%% cut); "
	       "p90 %s -> %s\n", fmt_ns(b[0], 32, sd), fmt_ns(b[1], 32, sw), (1 - sw / sd) * 100,
	       fmt_ns(b[2], 32, seed3_pct(0, 90)), fmt_ns(b[3], 32, seed3_pct(1, 90)));
	printf("- ours, %ld jobs: p50 wakeme %s -> list %s (x%.2f), p99 %s -> %s (x%.2f): %s\n",
	       c->threads, fmt_ns(b[0], 32, o0), fmt_ns(b[1], 32, o1), o1 / o0,
	       fmt_ns(b[2], 32, q0), fmt_ns(b[3], 32, q1), q1 / q0, s3_verdict(c));
	printf("- GP-end futex: p50 %s, p99 %s, %.0f calls/s "
	       "(list: %.0f, wakeme: %.0f); the default here is %s\n", fmt_ns(b[4], 32, o2),
	       fmt_ns(b[5], 32, s3_med(c, SP_FUTEX, F_P99, NULL)), s3_med(c, SP_FUTEX, F_CPS, NULL),
	       s3_med(c, SP_LIST, F_CPS, NULL), s3_med(c, SP_WAKEME, F_CPS, NULL),
	       sp_base[sp_default]);
	printf("- list path: %ld waiters woken directly by the GP, %ld by the cleanup work; "
	       "%ld GP inits found no free wait head; %ld GPs for %llu calls (wakeme: %ld, "
	       "futex: %ld)\n", c->direct[SP_LIST], c->deferred[SP_LIST], c->no_head[SP_LIST],
	       c->gps[SP_LIST], (unsigned long long)c->pooled[SP_LIST].count, c->gps[SP_WAKEME],
	       c->gps[SP_FUTEX]);
}

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

static int s3_plot(const struct s3_ctx *c, const char *path)
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

/* ---- seeds 003 JSON and main --------------------------------------------- */

static void s3_json_path(struct json *j, const struct s3_ctx *c, int p)
{
	static const char *const fk[NF] = {
		"p50_ns", "p90_ns", "p99_ns", "max_ns", "calls_s", "top_thread_pct",
	};
	uint64_t v[S3_EDGES_MAX];

	json_obj(j, sp_key[p]);
	json_int(j, "normal_wake_from_gp", p);
	json_int(j, "calls", (long long)c->pooled[p].count);
	json_arr(j, "repeats");
	for (long r = 0; r < c->reps; r++) {
		json_obj(j, NULL);
		for (int f = 0; f < NF; f++)
			json_num(j, fk[f], c->rep[p][r][f]);
		json_end(j, '}');
	}
	json_end(j, ']');
	for (int f = 0; f < NF; f++)
		json_num(j, fk[f], f == F_MAX ? (double)c->pooled[p].max : s3_med(c, p, f, NULL));
	for (int i = 0; i + 1 < c->nedges; i++)
		v[i] = bucket_count(&c->pooled[p], c->edges[i], c->edges[i + 1]);
	json_u64_array(j, "adaptive_counts", v, (size_t)c->nedges - 1);
	for (int i = 0; i <= S3_SEED_ROWS; i++)
		v[i] = bucket_count(&c->pooled[p], i * 1e7, i < S3_SEED_ROWS ? i * 1e7 + 1e7 : 1e300);
	json_u64_array(j, "counts_10ms", v, S3_SEED_ROWS + 1);
	json_int(j, "sr_woken_direct", c->direct[p]);
	json_int(j, "sr_woken_deferred", c->deferred[p]);
	json_int(j, "sr_no_wait_head", c->no_head[p]);
	json_int(j, "grace_periods", c->gps[p]);
	json_end(j, '}');
}

static void s3_json(struct json *j, const struct s3_ctx *c, const char *png)
{
	uint64_t e[S3_EDGES_MAX];

	json_str(j, "command", "seeds 003");
	json_int(j, "threads", c->threads);
	json_int(j, "idle_threads", c->idle);
	json_int(j, "repeats", c->reps);
	json_num(j, "seconds_per_run", c->dur_s);
	for (int i = 0; i < c->nedges; i++)
		e[i] = (uint64_t)c->edges[i];
	json_u64_array(j, "adaptive_edges_ns", e, (size_t)c->nedges);
	for (int p = 0; p < NSPATH; p++)
		s3_json_path(j, c, p);
	json_num(j, "seed_p50_default_ns", seed3_pct(0, 50));
	json_num(j, "seed_p50_wake_from_gp_ns", seed3_pct(1, 50));
	if (png)
		json_str(j, "png", png);
	json_num(j, "bg_cbs_per_s", (double)c->bg_rate);
	json_num(j, "bg_cbs_queued", (double)c->bg_queued);
}

const struct tool_opt seed003_opts[] = {
	TOPT_I("threads", "N", "threads", 1, S3_THREADS_MAX, 64, 64,
	       "threads calling synchronize_rcu() in a loop (the seed's 64)"),
	TOPT_N("duration", "SEC", "seconds", 0.05, 600, 2.0, 1.0,
	       "length of one run of one path"),
	TOPT_I("repeats", "N", "repeats", 1, S3_REPS_MAX, 5, 3,
	       "interleaved repeats of every wake path"),
	TOPT_I("idle", "N", "threads", 0, 64, 1, 1,
	       "idle registered reader threads during the runs"),
	TOPT_S("png", "FILE", "no plot (with --out: DIR/seeds003.png)",
	       "write the plots to FILE and FILE-load.png (compressed PNG)"),
	TOPT_I("bg-cbs", "RATE", "call_rcu() per second", 0, 100000000, 0, 0,
	       "background call_rcu() rate from one more thread (0: none)"),
	TOPT_IX("seed-jobs", "N", "jobs", 0, S3_THREADS_MAX,
		"the number of online CPUs (2 if unknown)",
		"jobs of the seed's load (one per CPU) in both profiles; 0 skips that part"),
	TOPT_END,
};

static int s3_args(struct tool_opts *o, struct s3_ctx *c, const char **png, long *seed_jobs)
{
	static char out_png[4096];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	tool_bind(o, seed003_opts);
	*seed_jobs = ncpu > 0 && ncpu <= S3_THREADS_MAX ? ncpu : 2;
	opt_long(o, "threads", &c->threads);
	opt_long(o, "repeats", &c->reps);
	opt_long(o, "idle", &c->idle);
	opt_double(o, "duration", &c->dur_s);
	opt_long(o, "bg-cbs", &c->bg_rate);
	opt_long(o, "seed-jobs", seed_jobs);
	/* Plots only when asked: --png, quick's --png, or --out. */
	*png = opt_str(o, "png");
	if (!*png)
		*png = o->png;
	if (!*png)
		*png = tool_out_path(o, "seeds003", "png", out_png, sizeof(out_png));
	return 0;
}

static void s3_report(struct s3_ctx *c, const char *png)
{
	s3_summary_table(c);
	s3_edges(c);
	s3_hist_adaptive(c, "(a) Latency distribution");
	s3_hist_10ms(c);
	s3_compare(c);
	if (!png)
		return;
	if (s3_plot(c, png))
		c->err = 1;
	else
		printf("- plot: %s\n", png);
}

static struct s3_ctx *s3_ctx_new(long threads, long idle, long reps, double dur_s, long bg_rate)
{
	struct s3_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->th = calloc((size_t)threads, sizeof(*c->th));
	if (!c->th) {
		free(c);
		return NULL;
	}
	c->threads = threads;
	c->idle = idle;
	c->reps = reps;
	c->dur_s = dur_s;
	c->bg_rate = bg_rate;
	for (int p = 0; p < NSPATH; p++)
		lat_init(&c->pooled[p]);
	return c;
}

static void s3_ctx_free(struct s3_ctx *c)
{
	if (c)
		free(c->th);
	free(c);
}

/* Every path, c->reps interleaved repeats, beside c->idle idle threads. */
static int s3_measure(struct s3_ctx *c, const char *what)
{
	struct idle_set idle;

	if (idle_start(&idle, c->idle)) {
		fprintf(stderr, "seeds 003: cannot create the idle threads\n");
		return -1;
	}
	run_interleaved(NSPATH, (int)c->reps, s3_variant, c, what,
			(double)c->reps * NSPATH * (c->dur_s + 0.05));
	idle_stop(&idle);
	return c->err ? -1 : 0;
}

/*
 * The seed's load.  Its 64 jobs ran on 64 CPUs, one job per CPU, so a
 * woken caller ran at once and its latency was the wake-up path's.  Here
 * 64 jobs are 32 per CPU: a call's latency is mostly its turn on a CPU
 * (64 / calls per second) whichever path wakes it.  So the experiment runs
 * again with one job per CPU (--seed-jobs; 0 skips it), in the kernel
 * profile (the seed's kernel: HZ=1000 FQS delays, 5 direct wake-ups, the GP
 * kthread drives every GP) and in treercu's.  Both profiles are set here,
 * whatever TREERCU_PROFILE says; the treercu profile is left in force.
 */
static const char *const s3_load_prof[] = { "kernel", "treercu" };
#define S3_NLOAD 2

/* list / wakeme: [0] p50, [1] p99. */
static void s3_ratios(const struct s3_ctx *c, double out[2])
{
	out[0] = s3_med(c, SP_LIST, F_P50, NULL) / s3_med(c, SP_WAKEME, F_P50, NULL);
	out[1] = s3_med(c, SP_LIST, F_P99, NULL) / s3_med(c, SP_WAKEME, F_P99, NULL);
}

static void s3_load_summary(const struct s3_ctx *c, const char *prof)
{
	printf("- %s profile, %ld jobs: list / wakeme p50 x%.2f, p90 x%.2f, p99 x%.2f, "
	       "calls/s x%.2f: %s\n", prof, c->threads,
	       s3_med(c, SP_LIST, F_P50, NULL) / s3_med(c, SP_WAKEME, F_P50, NULL),
	       s3_med(c, SP_LIST, F_P90, NULL) / s3_med(c, SP_WAKEME, F_P90, NULL),
	       s3_med(c, SP_LIST, F_P99, NULL) / s3_med(c, SP_WAKEME, F_P99, NULL),
	       s3_med(c, SP_LIST, F_CPS, NULL) / s3_med(c, SP_WAKEME, F_CPS, NULL),
	       s3_verdict(c));
}

/* The seed's load, both profiles: one log-bin panel each. */
static int s3_plot_load(struct s3_ctx *const lc[S3_NLOAD], const char *path)
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

/* seeds003.png -> seeds003-load.png */
static void s3_load_png_name(char *b, size_t n, const char *png)
{
	const char *dot = strrchr(png, '.');
	int stem = dot && !strchr(dot, '/') ? (int)(dot - png) : (int)strlen(png);

	snprintf(b, n, "%.*s-load%s", stem, png, dot && !strchr(dot, '/') ? dot : ".png");
}

static int s3_seed_load(const struct s3_ctx *big, long jobs, struct json *j, const char *png,
			struct seed003_result *res)
{
	struct s3_ctx *lc[S3_NLOAD] = { NULL, NULL };
	char what[64], lpng[512];
	int rc = 0;

	printf("\n(c) The seed's load: %ld jobs, one per CPU, as the seed's 64 on 64 CPUs "
	       "(%.2f s x %ld repeats per path and profile, %ld idle registered threads):\n",
	       jobs, big->dur_s, big->reps, big->idle);
	fflush(stdout);
	for (int i = 0; i < S3_NLOAD && !rc; i++) {
		lc[i] = s3_ctx_new(jobs, big->idle, big->reps, big->dur_s, 0);
		snprintf(what, sizeof(what), "seeds 003, %ld jobs, %s profile", jobs, s3_load_prof[i]);
		if (!lc[i] || trcu_set_profile(s3_load_prof[i]) || s3_measure(lc[i], what))
			rc = -1;
	}
	trcu_set_profile("treercu");
	for (int i = 0; i < S3_NLOAD && !rc; i++) {
		char title[96];

		printf("\n%s profile:\n", s3_load_prof[i]);
		s3_path_table(lc[i], false);
		s3_edges(lc[i]);
		snprintf(title, sizeof(title), "%s profile, %ld jobs", s3_load_prof[i], jobs);
		s3_hist_adaptive(lc[i], title);
	}
	if (!rc) {
		printf("\nSummary (the seed's load):\n");
		for (int i = 0; i < S3_NLOAD; i++)
			s3_load_summary(lc[i], s3_load_prof[i]);
		if (res) {
			s3_ratios(lc[0], res->load_kernel);
			s3_ratios(lc[1], res->load_treercu);
		}
		json_obj(j, "seed_load");
		json_int(j, "jobs", jobs);
		for (int i = 0; i < S3_NLOAD; i++) {
			json_obj(j, s3_load_prof[i]);
			for (int p = 0; p < NSPATH; p++)
				s3_json_path(j, lc[i], p);
			json_end(j, '}');
		}
		json_end(j, '}');
	}
	if (!rc && png) {
		s3_load_png_name(lpng, sizeof(lpng), png);
		if (s3_plot_load(lc, lpng))
			rc = -1;
		else
			printf("- plot: %s\n", lpng);
		json_str(j, "png_seed_load", lpng);
	}
	for (int i = 0; i < S3_NLOAD; i++)
		s3_ctx_free(lc[i]);
	return rc;
}

int seeds_003(struct tool_opts *o)
{
	return seeds_003_main(o, NULL);
}

int seeds_003_main(struct tool_opts *o, struct seed003_result *res)
{
	struct s3_ctx tmp = { 0 }, *c;
	const char *png;
	long path0 = tunable("normal_wake_from_gp"), seed_jobs;
	struct json j;
	int rc;

	if (res)   /* NAN until measured: a run that fails early leaves them so */
		*res = (struct seed003_result){ { NAN, NAN }, { NAN, NAN }, { NAN, NAN } };
	sp_names_init(path0);
	if (s3_args(o, &tmp, &png, &seed_jobs))
		return 2;
	c = s3_ctx_new(tmp.threads, tmp.idle, tmp.reps, tmp.dur_s, tmp.bg_rate);
	if (!c || json_open(&j, o, "seeds003"))
		return 1;
	printf("\nseeds 003: %ld threads calling synchronize_rcu() in a loop for %.2f s per run, "
	       "%ld repeats per path, paths interleaved; %ld idle registered threads",
	       c->threads, c->dur_s, c->reps, c->idle);
	if (c->bg_rate)
		printf("; background: %ld call_rcu()/s from one more thread (--bg-cbs)", c->bg_rate);
	printf("\n");
	machine_note(&j);
	if (s3_measure(c, "seeds 003"))
		return 1;
	trcu_set_tunable("normal_wake_from_gp", path0);
	s3_report(c, png);
	s3_json(&j, c, png);
	if (res)
		s3_ratios(c, res->jobs64);
	if (seed_jobs && s3_seed_load(c, seed_jobs, &j, png, res))
		c->err = 1;
	rc = json_close(&j) || c->err ? 1 : 0;
	s3_ctx_free(c);
	return rc;
}

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
 * treercu's own.  (A 10 us polling loop here kept one of the two CPUs busy
 * and, traced with perf sched, put the woken caller behind the offload
 * thread's batch.)
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
		 * preempted before making it (traced: woken by our own futex
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
	char b[2][32];

	summarize(c->cell[SP_WAKEME][kk].pos, (size_t)c->cell[SP_WAKEME][kk].n, &pos);
	printf("\nSummary (seed 004):\n");
	printf("- seed (kernel): wakeme_after_rcu() invoked last of a batch of 3613 callbacks "
	       "(mobile, 7.3 ms after the batch started); lists up to 871001 callbacks, "
	       "537691 invoked in one 260 ms batch\n");
	printf("- ours, wakeme: the wake-up ran after %.0f of the %ld callbacks queued before it "
	       "(median); p99 %s idle -> %s at K=%ld (%.1fx): %s\n", pos.median, s4_k[kk],
	       fmt_ns(b[0], 32, w0), fmt_ns(b[1], 32, wk), s4_k[kk], wk / w0,
	       wk > 2 * w0 ? "grows with K, as in the seed" : "does NOT grow with K here");
	printf("- goal, wake-from-GP list: p99 within 2x its idle p99 at every K (median of "
	       "repeats): worst %.2fx: %s; pooled over all samples: worst %.2fx\n",
	       r1, r1 <= 2 ? "PASS" : "MISS", s4_worst_ratio(c, SP_LIST, true));
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
	long path0 = tunable("normal_wake_from_gp"), maxp0 = tunable("cb_max_pending");

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
