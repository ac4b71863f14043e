/* SPDX-License-Identifier: MIT */
/* Human tables, markdown-style (declared in common.h). */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/* ---- Human tables --------------------------------------------------------- */

static void tab_rule(const struct table *t)
{
	for (int c = 0; c < t->ncol; c++) {
		printf("|");
		for (int i = 0; i < t->width[c] + 2; i++)
			putchar('-');
	}
	printf("|\n");
}

void tab_start(struct table *t, int ncol, const char *const *names, const int *widths)
{
	t->ncol = ncol < TAB_MAXCOL ? ncol : TAB_MAXCOL;
	t->col = 0;
	for (int c = 0; c < t->ncol; c++) {
		int w = (int)strlen(names[c]);

		t->width[c] = widths && widths[c] > w ? widths[c] : w;
	}
	for (int c = 0; c < t->ncol; c++)
		printf("| %-*s ", t->width[c], names[c]);
	printf("|\n");
	tab_rule(t);
}

void tab_cell(struct table *t, const char *fmt, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Text columns (the first) left-aligned, figures right-aligned. */
	if (t->col == 0)
		printf("| %-*s ", t->width[t->col], buf);
	else
		printf("| %*s ", t->width[t->col], buf);
	if (++t->col == t->ncol) {
		printf("|\n");
		t->col = 0;
	}
}
