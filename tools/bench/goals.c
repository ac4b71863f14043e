/* SPDX-License-Identifier: MIT */
/*
 * Reads bench/goals.tsv (embedded at build time as tool_goals_tsv) once.
 * A malformed file, or a name the code asks for that the file lacks, is a
 * build mistake: the tool says which line or name and exits 2.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goals.h"
#include "tool_goals.h"   /* generated: static const char tool_goals_tsv[] */

#define GOALS_MAX 64
#define FIELD_MAX 160

enum goal_cmp { CMP_RATIO_LE, CMP_RATIO_GE, CMP_LE, CMP_GE, CMP_EQ };

struct goal {
	char name[48], metric[64], threshold[16], unit[8];
	char ref[24];             /* ratio goals: the peer treercu is divided by */
	enum goal_cmp cmp;
	double limit;
};

static struct goal goals[GOALS_MAX];
static int ngoals = -1;

static const char *const cmp_word[] = { "ratio<=", "ratio>=", "<=", ">=", "==" };
static const char *const cmp_shown[] = { "<=", ">=", "<=", ">=", "" };

static void goals_die(int line, const char *what)
{
	fprintf(stderr, "treercu: tools/bench/goals.tsv line %d: %s\n", line, what);
	exit(2);
}

/* Copies field i (tab-separated) of line into out; false when absent. */
static bool field(const char *line, int i, char *out, size_t len)
{
	const char *end;

	for (; i > 0; i--) {
		line = strchr(line, '\t');
		if (!line)
			return false;
		line++;
	}
	end = line + strcspn(line, "\t\n");
	if (end == line || (size_t)(end - line) >= len)
		return false;
	memcpy(out, line, (size_t)(end - line));
	out[end - line] = '\0';
	return true;
}

/* "ratio<=:ck_epoch": the reference after the colon, '-' read as spaces;
 * liburcu memb when none is given.  Cuts it off cmp. */
static void goal_ref_parse(char *cmp, int lineno, struct goal *g)
{
	char *colon = strchr(cmp, ':');

	snprintf(g->ref, sizeof(g->ref), "liburcu memb");
	if (!colon)
		return;
	*colon = '\0';
	if (strncmp(cmp, "ratio", 5) || !colon[1] || strlen(colon + 1) >= sizeof(g->ref))
		goals_die(lineno, "only a ratio compare names its reference (ratio<=:PEER)");
	snprintf(g->ref, sizeof(g->ref), "%s", colon + 1);
	for (char *p = g->ref; *p; p++)
		*p = *p == '-' ? ' ' : *p;
}

static void goal_parse(const char *line, int lineno, struct goal *g)
{
	char cmp[40], meaning[FIELD_MAX], *end;
	int c;

	if (!field(line, 0, g->name, sizeof(g->name)) ||
	    !field(line, 1, g->metric, sizeof(g->metric)) || !field(line, 2, cmp, sizeof(cmp)) ||
	    !field(line, 3, g->threshold, sizeof(g->threshold)) ||
	    !field(line, 4, g->unit, sizeof(g->unit)) || !field(line, 5, meaning, sizeof(meaning)))
		goals_die(lineno, "expected 6 tab-separated fields: name, metric, compare, "
			  "threshold, unit, meaning");
	goal_ref_parse(cmp, lineno, g);
	for (c = 0; c < 5 && strcmp(cmp, cmp_word[c]); c++)
		;
	if (c == 5)
		goals_die(lineno, "compare must be ratio<=, ratio>=, <=, >= or ==");
	g->cmp = (enum goal_cmp)c;
	g->limit = strtod(g->threshold, &end);
	if (end == g->threshold || *end)
		goals_die(lineno, "threshold is not a number");
	if (!strcmp(g->unit, "-"))
		g->unit[0] = '\0';
}

static void goals_load(void)
{
	const char *p = tool_goals_tsv;
	int lineno = 0;

	ngoals = 0;
	for (; *p; p += strcspn(p, "\n"), p += *p == '\n') {
		lineno++;
		if (*p == '#' || *p == '\n')
			continue;
		if (ngoals == GOALS_MAX)
			goals_die(lineno, "too many goals");
		goal_parse(p, lineno, &goals[ngoals++]);
	}
}

/* The first goal named name; exits when there is none. */
static int goal_first(const char *name)
{
	if (ngoals < 0)
		goals_load();
	for (int i = 0; i < ngoals; i++)
		if (!strcmp(goals[i].name, name))
			return i;
	fprintf(stderr, "treercu: tools/bench/goals.tsv has no goal named '%s'\n", name);
	exit(2);
}

const char *goal_metric(const char *name)
{
	return goals[goal_first(name)].metric;
}

double goal_limit(const char *name)
{
	return goals[goal_first(name)].limit;
}

const char *goal_ref(const char *name)
{
	return goals[goal_first(name)].ref;
}

const char *goal_text(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = goal_first(name); i < ngoals && n < len; i++) {
		const struct goal *g = &goals[i];

		if (strcmp(g->name, name))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s%s%s%s", n ? ", " : "",
				      cmp_shown[g->cmp], *cmp_shown[g->cmp] ? " " : "",
				      g->threshold, g->unit);
	}
	return buf;
}

static bool goal_holds(const struct goal *g, double t, double l)
{
	double v = g->cmp == CMP_RATIO_LE || g->cmp == CMP_RATIO_GE ? t / l : t;

	switch (g->cmp) {
	case CMP_RATIO_LE:
	case CMP_LE:
		return v <= g->limit;
	case CMP_RATIO_GE:
	case CMP_GE:
		return v >= g->limit;
	case CMP_EQ:
		return v == g->limit;
	}
	return false;
}

bool goal_met(const char *name, double t, double l)
{
	bool met = true;

	for (int i = goal_first(name); i < ngoals; i++)
		if (!strcmp(goals[i].name, name))
			met = met && goal_holds(&goals[i], t, l);
	return met && !isnan(t);
}
