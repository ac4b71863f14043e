/* SPDX-License-Identifier: MIT */
/* A tiny PNG writer (RGB canvas, 5x7 font, zlib-compressed image data) and
 * the plot panels the experiments draw on it. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common.h"
#include "plot.h"

/* ======================================================================
 * A tiny PNG writer: RGB canvas, 5x7 font, zlib-compressed image data.
 * ====================================================================== */


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

int cv_init(struct canvas *cv, int w, int h)
{
	cv->w = w;
	cv->h = h;
	cv->px = malloc((size_t)w * (size_t)h * 3);
	if (!cv->px)
		return -1;
	memset(cv->px, 0xff, (size_t)w * (size_t)h * 3);
	return 0;
}

void cv_px(struct canvas *cv, int x, int y, uint32_t rgb)
{
	uint8_t *p;

	if (x < 0 || y < 0 || x >= cv->w || y >= cv->h)
		return;
	p = cv->px + ((size_t)y * (size_t)cv->w + (size_t)x) * 3;
	p[0] = (uint8_t)(rgb >> 16);
	p[1] = (uint8_t)(rgb >> 8);
	p[2] = (uint8_t)rgb;
}

void cv_rect(struct canvas *cv, int x0, int y0, int x1, int y1, uint32_t rgb)
{
	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++)
			cv_px(cv, x, y, rgb);
}

/* Bresenham, two pixels thick. */
void cv_line(struct canvas *cv, int x0, int y0, int x1, int y1, uint32_t rgb)
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

void cv_char(struct canvas *cv, int x, int y, char c, int scale, uint32_t rgb)
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
int cv_text(struct canvas *cv, int x, int y, const char *s, int scale, uint32_t rgb, int align)
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

int png_write(const struct canvas *cv, const char *path)
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




double nice_ceil(double v)
{
	static const double m[] = { 1, 2, 2.5, 5, 10 };
	double e = pow(10, floor(log10(v > 0 ? v : 1)));

	for (int i = 0; i < 5; i++)
		if (m[i] * e >= v)
			return m[i] * e;
	return 10 * e;
}

int panel_y(const struct panel *p, double pct)
{
	return p->y1 - (int)lround(pct / p->ymax * (p->y1 - p->y0));
}

/* Frame, horizontal grid lines and y labels (percent of calls), title. */
void panel_frame(struct canvas *cv, const struct panel *p, const char *title)
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
void plot_title(struct canvas *cv)
{
	struct tool_machine m;
	char b[256];

	tool_machine(&m);
	snprintf(b, sizeof(b), "treercu %s%s%s  %s  %ld CPUs: %s, load %.2f", tool_version(),
		 *tool_commit() ? " " : "", tool_commit(), tool_date(), m.cpus, m.model, m.load[0]);
	cv_text(cv, 8, 6, b, 1, 0x555555u, 0);
}

void legend(struct canvas *cv, int x, int y, const char *label, uint32_t rgb)
{
	cv_rect(cv, x, y, x + 14, y + 6, rgb);
	cv_text(cv, x + 20, y, label, 1, AXIS_RGB, 0);
}
