/* SPDX-License-Identifier: MIT */
/* The callback benchmarks (bench/callbacks.c), run alone or by `scale`. */
#ifndef TREERCU_TOOL_CALLBACKS_H
#define TREERCU_TOOL_CALLBACKS_H

#include "common.h"
#include "results.h"

#define CB_ENQ_N 50000      /* calls per enqueue measurement (< cb_max_pending) */
#define CB_MAX_REPS 51      /* --cb-repeats, --flood-repeats: at most */

struct cb_ctx;

/* A zeroed context (free() it), or NULL when out of memory. */
struct cb_ctx *cb_ctx_new(void);
/* Every callback benchmark setting: o's values (bound to scale_opts), or
 * their defaults. */
void cb_defaults(struct cb_ctx *c, struct tool_opts *o);
/* Runs the callback benchmarks, prints their table, fills res; j may be a
 * closed writer (path NULL).  Returns 0, or 1 on error. */
int cb_main(struct tool_opts *o, struct cb_ctx *c, struct json *j,
	    struct callbacks_result *res);

#endif
