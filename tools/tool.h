/* SPDX-License-Identifier: MIT */
/* Shared declarations for the treercu command-line tool. */
#ifndef TREERCU_TOOL_H
#define TREERCU_TOOL_H

#include <stdbool.h>
#include <stdio.h>

/* Options every subcommand accepts. */
struct tool_opts {
	bool quick;            /* --quick: short run */
	const char *json;      /* --json FILE, or NULL */
	int argc;              /* remaining subcommand-specific arguments */
	char **argv;
};

/* A subcommand: returns the process exit status. */
struct tool_cmd {
	const char *name;
	const char *help;
	int (*run)(struct tool_opts *o);
};

int cmd_torture(struct tool_opts *o);
int cmd_refscale(struct tool_opts *o);
int cmd_scale(struct tool_opts *o);
int cmd_seeds(struct tool_opts *o);
int cmd_wq(struct tool_opts *o);
int cmd_quick(struct tool_opts *o);
int seeds_001(struct tool_opts *o);
int seeds_003(struct tool_opts *o);   /* tools/cmd_seeds_sync.c */
int seeds_004(struct tool_opts *o);

#endif
