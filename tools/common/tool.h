/* SPDX-License-Identifier: MIT */
/* Shared declarations for the treercu command-line tool. */
#ifndef TREERCU_TOOL_H
#define TREERCU_TOOL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ---- Option tables ---------------------------------------------------------
 *
 * Each subcommand describes its options in one table; the parser
 * (tools/common/options.c) builds getopt_long()'s list, checks ranges and prints
 * --help from that same table, and the subcommand reads values (or the
 * table's defaults) back by name, so help, parsing and defaults cannot drift.
 */
enum tool_opt_type { TOPT_FLAG, TOPT_INT, TOPT_NUM, TOPT_STR };

struct tool_opt {
	const char *name;         /* long name, without "--"; NULL ends a table */
	enum tool_opt_type type;
	const char *arg;          /* placeholder in help: N, SEC, FILE; NULL for flags */
	const char *unit;         /* unit of the value, in words */
	double min, max;          /* TOPT_INT, TOPT_NUM: accepted range */
	double def, qdef;         /* default, and with --quick; NAN: see defnote */
	const char *defnote;      /* default in words when it is not one number */
	const char *help;         /* what the option does */
};

#define TOPT_I(n, a, u, lo, hi, d, qd, h) { n, TOPT_INT, a, u, lo, hi, d, qd, NULL, h }
#define TOPT_N(n, a, u, lo, hi, d, qd, h) { n, TOPT_NUM, a, u, lo, hi, d, qd, NULL, h }
/* A number whose default is computed (defnote says how). */
#define TOPT_IX(n, a, u, lo, hi, note, h) \
	{ n, TOPT_INT, a, u, lo, hi, NAN, NAN, note, h }
#define TOPT_S(n, a, note, h) \
	{ n, TOPT_STR, a, NULL, 0, 0, NAN, NAN, note, h }
#define TOPT_F(n, h) \
	{ n, TOPT_FLAG, NULL, NULL, 0, 0, NAN, NAN, "off", h }
#define TOPT_END { NULL, TOPT_FLAG, NULL, NULL, 0, 0, 0, 0, NULL, NULL }

#define TOOL_MAXOPT 24

struct tool_optval {
	bool set;
	double num;
	const char *str;
};

/* Options of one run of a subcommand. */
struct tool_opts {
	bool quick;               /* --quick: short run */
	const char *json;         /* --json FILE, or NULL */
	const char *out;          /* --out DIR, or NULL: where output files go */
	const char *png;          /* plot path handed down by `quick --png`, or NULL */
	const struct tool_opt *defs;   /* the subcommand's table */
	bool parsed;              /* vals came from a command line (defs is fixed) */
	struct tool_optval vals[TOOL_MAXOPT];
};

/* A subcommand: returns the process exit status.  A command with subs
 * (seeds) takes a second word naming one of them. */
struct tool_cmd {
	const char *name;
	const char *help;
	int (*run)(struct tool_opts *o);
	const struct tool_opt *opts;
	const struct tool_cmd *subs;
	int nsubs;
};

/* Parses argv (argv[0] is the subcommand's last word) against t.  Returns 0
 * to run, 1 when --help was printed (exit 0), 2 on bad input (a message
 * naming the problem was printed).  prog: "treercu refscale". */
int tool_parse(struct tool_opts *o, const struct tool_cmd *cmd, const char *prog,
	       int argc, char **argv);
void tool_help(FILE *f, const struct tool_cmd *cmd, const char *prog);
/* A run that was not parsed (quick's parts) takes t's defaults; a parsed
 * one must have been parsed against t. */
void tool_bind(struct tool_opts *o, const struct tool_opt *t);
/* The value given, else the table's default (with --quick: its quick
 * default); a default given only in words leaves *out alone.  Returns true
 * when the option was on the command line. */
bool opt_long(struct tool_opts *o, const char *name, long *out);
bool opt_double(struct tool_opts *o, const char *name, double *out);
const char *opt_str(struct tool_opts *o, const char *name);   /* NULL if absent */
bool opt_flag(struct tool_opts *o, const char *name);
/* DIR/stem.ext under --out into buf, or NULL without --out. */
const char *tool_out_path(const struct tool_opts *o, const char *stem, const char *ext,
			  char *buf, size_t len);

extern const struct tool_opt torture_opts[], refscale_opts[], scale_opts[], wq_opts[];
extern const struct tool_opt seed000_opts[], seed003_opts[], seed004_opts[], quick_opts[];
extern const struct tool_opt peers_opts[];
extern const struct tool_opt seed002_opts[];

int cmd_torture(struct tool_opts *o);
int cmd_refscale(struct tool_opts *o);
int cmd_scale(struct tool_opts *o);
int cmd_seed000(struct tool_opts *o);
int cmd_wq(struct tool_opts *o);
int cmd_quick(struct tool_opts *o);
int cmd_peers(struct tool_opts *o);
int seeds_001(struct tool_opts *o);
int seeds_002(struct tool_opts *o);   /* experiments/blocked_task_lists.c */
int seeds_003(struct tool_opts *o);   /* experiments/wake_from_gp_latency.c */
int seeds_004(struct tool_opts *o);

/* The tool's version and the commit it was built from ("" when unknown). */
const char *tool_version(void);
const char *tool_commit(void);

#endif
