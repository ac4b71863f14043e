/* SPDX-License-Identifier: MIT */
/* The JSON writer, and the machine and date every output records (declared in common.h). */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

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
