/* SPDX-License-Identifier: MIT */
/*
 * The goals the quick summary and `scale --callbacks` judge their rows by:
 * bench/goals.tsv, embedded in the tool when it is built.  The C code only
 * fills figures and asks; thresholds, comparisons and labels live in the
 * data file.
 */
#ifndef TREERCU_TOOL_GOALS_H
#define TREERCU_TOOL_GOALS_H

#include <stdbool.h>
#include <stddef.h>

/* The first line's metric label of goal name. */
const char *goal_metric(const char *name);
/* The threshold of goal name's first line. */
double goal_limit(const char *name);
/* What a ratio goal divides treercu's figure by: "liburcu memb" unless the
 * compare field names another peer ("ratio>=:ck_epoch"). */
const char *goal_ref(const char *name);
/* Every line of goal name as "<= 1.1x", joined by ", ", into buf. */
const char *goal_text(const char *name, char *buf, size_t len);
/* Whether every line of goal name holds for treercu's figure t (and
 * liburcu's l, for the ratio comparisons).  A NAN figure misses. */
bool goal_met(const char *name, double t, double l);

#endif
