/* SPDX-License-Identifier: MIT */
/* Helpers shared by the measurement subcommands (see common.h). */
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

/* ---- JSON ------------------------------------------------------------------ */

static void json_key(struct json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	fputc('\n', j->f);
	for (int i = 0; i <= j->depth; i++)
		fputs("  ", j->f);
	j->need_comma[j->depth] = true;
	if (key)
		fprintf(j->f, "\"%s\": ", key);
}

int json_open(struct json *j, const struct tool_opts *o, const char *stem)
{
	char buf[4096];
	const char *path = o->json ? o->json : tool_out_path(o, stem, "json", buf, sizeof(buf));

	memset(j, 0, sizeof(*j));
	if (!path)
		return 0;
	j->f = fopen(path, "w");
	if (!j->f) {
		fprintf(stderr, "treercu: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	fputc('{', j->f);
	json_header(j, stem);
	return 0;
}

int json_close(struct json *j)
{
	int rc;

	if (!j->f)
		return 0;
	fputs("\n}\n", j->f);
	rc = (ferror(j->f) || j->err) ? -1 : 0;
	if (fclose(j->f))
		rc = -1;
	j->f = NULL;
	return rc;
}

static void json_open_nested(struct json *j, const char *key, char c)
{
	if (!j->f)
		return;
	json_key(j, key);
	fputc(c, j->f);
	if (j->depth + 1 >= JSON_DEPTH) {
		j->err = true;
		return;
	}
	j->need_comma[++j->depth] = false;
}

void json_obj(struct json *j, const char *key)
{
	json_open_nested(j, key, '{');
}

void json_arr(struct json *j, const char *key)
{
	json_open_nested(j, key, '[');
}

void json_end(struct json *j, char close)
{
	if (!j->f)
		return;
	if (j->depth > 0)
		j->depth--;
	if (j->need_comma[j->depth + 1]) {     /* non-empty: close on its own line */
		fputc('\n', j->f);
		for (int i = 0; i <= j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(close, j->f);
}

void json_num(struct json *j, const char *key, double v)
{
	if (!j->f)
		return;
	json_key(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);
}

void json_int(struct json *j, const char *key, long long v)
{
	if (!j->f)
		return;
	json_key(j, key);
	fprintf(j->f, "%lld", v);
}

void json_str(struct json *j, const char *key, const char *s)
{
	if (!j->f)
		return;
	json_key(j, key);
	fputc('"', j->f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(j->f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(j->f, "\\u%04x", *s);
		else
			fputc(*s, j->f);
	}
	fputc('"', j->f);
}

void json_bool(struct json *j, const char *key, bool v)
{
	if (!j->f)
		return;
	json_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_u64_array(struct json *j, const char *key, const uint64_t *v, size_t n)
{
	if (!j->f)
		return;
	json_key(j, key);
	fputc('[', j->f);
	for (size_t i = 0; i < n; i++)
		fprintf(j->f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	fputc(']', j->f);
}

void json_summary(struct json *j, const char *key, const struct summary *s)
{
	json_obj(j, key);
	json_int(j, "n", (long long)s->n);
	json_num(j, "median", s->median);
	json_num(j, "min", s->min);
	json_num(j, "max", s->max);
	json_num(j, "mean", s->mean);
	json_num(j, "spread_pct", s->spread);
	json_end(j, '}');
}

/* First value of a "key<TAB>: value" line of /proc/cpuinfo, or false. */
static bool cpuinfo_field(const char *key, char *out, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	size_t kl = strlen(key);
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (strncmp(line, key, kl) || !v || strspn(line + kl, " \t") != (size_t)(v - line) - kl)
			continue;
		v += 1 + strspn(v + 1, " \t");
		v[strcspn(v, "\n")] = 0;
		snprintf(out, len, "%s", v);
		found = *v != 0;
	}
	fclose(f);
	return found;
}

void tool_machine(struct tool_machine *m)
{
	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	m->load[0] = m->load[1] = m->load[2] = -1;
	getloadavg(m->load, 3);
	if (!cpuinfo_field("model name", m->model, sizeof(m->model)) &&
	    !cpuinfo_field("Hardware", m->model, sizeof(m->model)))
		snprintf(m->model, sizeof(m->model), "unknown");
}

const char *tool_date(void)
{
	static char date[32];

	if (!date[0]) {
		time_t t = time(NULL);
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	return date;
}

/* gcc's __VERSION__ is the bare number; clang's names itself. */
static const char *tool_compiler(void)
{
#if defined(__GNUC__) && !defined(__clang__)
	return "gcc " __VERSION__;
#else
	return __VERSION__;
#endif
}

void json_header(struct json *j, const char *stem)
{
	struct tool_machine m;
	char schema[64];

	tool_machine(&m);
	snprintf(schema, sizeof(schema), "treercu.%s/1", stem);
	json_str(j, "schema", schema);
	json_str(j, "treercu_version", tool_version());
	json_str(j, "git_commit", tool_commit());
	json_str(j, "date", tool_date());
	json_str(j, "compiler", tool_compiler());
	json_obj(j, "machine");
	json_int(j, "cpus", m.cpus);
	json_str(j, "model", m.model);
	json_arr(j, "loadavg");
	for (int i = 0; i < 3; i++)
		json_num(j, NULL, m.load[i]);
	json_end(j, ']');
	json_end(j, '}');
}

void machine_note(struct json *j)
{
	struct tool_machine m;

	tool_machine(&m);
	printf("machine: %ld CPUs online, load average %.2f %.2f %.2f%s\n", m.cpus, m.load[0],
	       m.load[1], m.load[2], m.load[0] > (double)m.cpus ?
	       "  (BUSY: other work is running; figures are unreliable)" : "");
	json_int(j, "cpus", m.cpus);
	json_num(j, "loadavg_1min", m.load[0]);
}

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

/* ---- Histogram bucket counts (seeds 003) ------------------------------------------ */

uint64_t lat_count_below(const struct lat_hist *h, double ns)
{
	uint64_t n = 0;

	for (int i = 0; i < LAT_BUCKETS && lat_value(i) < ns; i++)
		n += h->b[i];
	return n;
}

void tool_spawn(pthread_t *tid, void *(*fn)(void *), void *arg, const char *who)
{
	if (pthread_create(tid, NULL, fn, arg)) {
		fprintf(stderr, "%s: pthread_create failed\n", who);
		exit(1);
	}
}
