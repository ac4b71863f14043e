/* SPDX-License-Identifier: MIT */
/* Progress on stderr, interleaved repeats, threads, the process's RSS (declared in common.h). */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/* ---- Progress --------------------------------------------------------------- */

void progress_start(struct progress *p, const char *what, double expected_s)
{
	p->what = what;
	p->start = p->last = now_ns();
	p->tty = isatty(STDERR_FILENO);
	p->on = expected_s > 3.0;
}

void progress_update(struct progress *p, double fraction)
{
	uint64_t t = now_ns();
	double el = (double)(t - p->start) / 1e9;
	uint64_t every = p->tty ? 500000000u : 10000000000u;

	if (!p->on || t - p->last < every)
		return;
	p->last = t;
	if (fraction > 1)
		fraction = 1;
	/* Time left, from the pace so far: shown once it means something. */
	if (fraction >= 0.05 && fraction < 1)
		fprintf(stderr, "%s[%s] %3.0f%%  %.0f s elapsed, about %.0f s left%s",
			p->tty ? "\r" : "", p->what, fraction * 100, el, el / fraction - el,
			p->tty ? "   " : "\n");
	else
		fprintf(stderr, "%s[%s] %3.0f%%  %.0f s elapsed%s", p->tty ? "\r" : "",
			p->what, fraction * 100, el, p->tty ? "                 " : "\n");
}

void progress_done(struct progress *p)
{
	if (p->on && p->tty)
		fprintf(stderr, "\r%*s\r", 100, "");
	p->on = false;
}

/* ---- Interleaved repeats ------------------------------------------------------ */

void run_interleaved(int nvariants, int reps, variant_fn fn, void *arg,
		     const char *what, double expected_s)
{
	struct progress p;
	int done = 0;

	progress_start(&p, what, expected_s);
	for (int r = 0; r < reps; r++) {
		for (int i = 0; i < nvariants; i++) {
			int v = (r % 2 == 0) ? i : nvariants - 1 - i;

			fn(v, r, arg);
			progress_update(&p, (double)++done / (nvariants * reps));
		}
	}
	progress_done(&p);
}

/* ---- Threads ------------------------------------------------------------- */

void tool_spawn(pthread_t *tid, void *(*fn)(void *), void *arg, const char *who)
{
	if (pthread_create(tid, NULL, fn, arg)) {
		fprintf(stderr, "%s: pthread_create failed\n", who);
		exit(1);
	}
}

/* The process's resident set size now, in bytes (0 if /proc is missing). */
double process_rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, res = 0;

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (double)res * (double)sysconf(_SC_PAGESIZE);
}
