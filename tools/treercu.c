/* SPDX-License-Identifier: MIT */
/* treercu: command-line tool.  One binary, one subcommand per measurement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const struct tool_cmd cmds[] = {
	{ "quick",    "seed reproductions + liburcu comparison, one summary table", cmd_quick },
	{ "torture",  "rcutorture pipeline: readers, writers, faults; exit 1 on failure", cmd_torture },
	{ "refscale", "ns per read-side lock/unlock pair, treercu vs liburcu", cmd_refscale },
	{ "scale",    "synchronize_rcu latency and throughput, treercu vs liburcu", cmd_scale },
	{ "seeds",    "rerun a seed's experiment: seeds 000|001|...", cmd_seeds },
	{ "wq",       "workqueue benchmark (seed 001)", cmd_wq },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: treercu SUBCOMMAND [--quick] [--json FILE] [args]\n\nsubcommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv)
{
	struct tool_opts o = { 0 };
	char **rest;
	int nrest = 0;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	rest = calloc((size_t)argc, sizeof(*rest));
	if (!rest)
		return 1;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			o.quick = true;
		} else if (!strcmp(argv[i], "--json")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "treercu: --json needs a FILE argument\n");
				free(rest);
				return 2;
			}
			o.json = argv[++i];
		} else {
			rest[nrest++] = argv[i];
		}
	}
	o.argc = nrest;
	o.argv = rest;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (!strcmp(argv[1], cmds[i].name)) {
			int rc = cmds[i].run(&o);

			free(rest);
			return rc;
		}
	}
	fprintf(stderr, "treercu: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	free(rest);
	return 2;
}
