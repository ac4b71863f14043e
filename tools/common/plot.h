/* SPDX-License-Identifier: MIT */
/*
 * A tiny PNG writer: an RGB canvas, a 5x7 bitmap font, zlib-compressed
 * image data; and plot panels (frame, grid, y axis in percent of calls,
 * legend, a title line naming the tool, commit, date and machine).
 */
#ifndef TREERCU_TOOL_PLOT_H
#define TREERCU_TOOL_PLOT_H

#include <stdint.h>

struct canvas {
	int w, h;
	uint8_t *px;            /* w * h RGB triples; free() when done */
};

/* A white w x h canvas; -1 when out of memory. */
int cv_init(struct canvas *cv, int w, int h);
void cv_px(struct canvas *cv, int x, int y, uint32_t rgb);
void cv_rect(struct canvas *cv, int x0, int y0, int x1, int y1, uint32_t rgb);
void cv_line(struct canvas *cv, int x0, int y0, int x1, int y1, uint32_t rgb);
void cv_char(struct canvas *cv, int x, int y, char c, int scale, uint32_t rgb);
/* align: 0 left, 1 right, 2 centred on x.  Returns the text's width. */
int cv_text(struct canvas *cv, int x, int y, const char *s, int scale, uint32_t rgb, int align);
/* Writes cv to path as a PNG; -1 (with a message) on error. */
int png_write(const struct canvas *cv, const char *path);

#define PLOT_W 1000
#define PLOT_H 760
#define PL_LEFT 80
#define PL_RIGHT (PLOT_W - 30)
#define GRID_RGB 0xDDDDDDu
#define AXIS_RGB 0x000000u

struct panel {
	int x0, y0, x1, y1;     /* plot area */
	double ymax;            /* percent */
};

/* The smallest of 1, 2, 2.5, 5, 10 times a power of ten that is >= v. */
double nice_ceil(double v);
int panel_y(const struct panel *p, double pct);
/* Frame, horizontal grid lines and y labels (percent of calls), title. */
void panel_frame(struct canvas *cv, const struct panel *p, const char *title);
/* Top line of every plot: version, commit, date, machine. */
void plot_title(struct canvas *cv);
void legend(struct canvas *cv, int x, int y, const char *label, uint32_t rgb);

#endif
