/* SPDX-License-Identifier: MIT */
/* treercu: command-line tool.  One binary, one subcommand per measurement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const struct tool_cmd seeds[] = {
	{ "000", "synchronize_rcu() latency, the GP driver reporting its quiescent state early or not (seed 000)",
	  cmd_seed000, seed000_opts, NULL, 0 },
	{ "001", "workqueue wake-up placement against the seed's figures (seed 001)",
	  seeds_001, wq_opts, NULL, 0 },
	{ "002", "task readers: per-worker blocked lists against node lists and fanout_leaf=1 (seed 002)",
	  seeds_002, seed002_opts, NULL, 0 },
	{ "003", "64 threads calling synchronize_rcu(): latency histograms per wake path (seed 003)",
	  seeds_003, seed003_opts, NULL, 0 },
	{ "004", "synchronize_rcu() behind K queued callbacks, per wake path (seed 004)",
	  seeds_004, seed004_opts, NULL, 0 },
};

static const struct tool_cmd cmds[] = {
	{ "quick", "seed reproductions + liburcu comparison, one summary table",
	  cmd_quick, quick_opts, NULL, 0 },
	{ "torture", "rcutorture pipeline: readers, writers, faults; exit 1 on failure",
	  cmd_torture, torture_opts, NULL, 0 },
	{ "refscale", "ns per read-side lock/unlock pair, treercu vs liburcu",
	  cmd_refscale, refscale_opts, NULL, 0 },
	{ "scale", "synchronize_rcu latency and throughput, treercu vs liburcu",
	  cmd_scale, scale_opts, NULL, 0 },
	{ "peers", "deferred free and a read-mostly hash map, treercu vs liburcu and ck_epoch",
	  cmd_peers, peers_opts, NULL, 0 },
	{ "seeds", "rerun a seed's experiment: seeds 000|001|002|003|004",
	  NULL, NULL, seeds, NELEM(seeds) },
	{ "wq", "workqueue benchmark (seed 001)", cmd_wq, wq_opts, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: treercu SUBCOMMAND [OPTIONS]\n"
		   "       treercu SUBCOMMAND --help\n"
		   "       treercu --version\n\nsubcommands:\n");
	for (int i = 0; i < NELEM(cmds); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "  %-9s %s\n  %-9s %s\n", "version", "print the version and exit",
		"help", "help SUBCOMMAND: the same as SUBCOMMAND --help");
}

static void version(void)
{
	printf("treercu %s%s%s%s\n", tool_version(), *tool_commit() ? " (" : "", tool_commit(),
	       *tool_commit() ? ")" : "");
}

static const struct tool_cmd *find(const struct tool_cmd *t, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

static bool is_help(const char *s)
{
	return !strcmp(s, "-h") || !strcmp(s, "--help");
}

/* `seeds ID ...`: argv[0] is "seeds". */
static const struct tool_cmd *pick_sub(const struct tool_cmd *c, int *argc, char ***argv,
				       char *prog, size_t len, int *rc)
{
	const struct tool_cmd *s;

	if (*argc < 2 || is_help((*argv)[1])) {
		tool_help(*argc < 2 ? stderr : stdout, c, prog);
		*rc = *argc < 2 ? 2 : 0;
		return NULL;
	}
	s = find(c->subs, c->nsubs, (*argv)[1]);
	if (!s) {
		fprintf(stderr, "%s: unknown ID '%s'\n", prog, (*argv)[1]);
		tool_help(stderr, c, prog);
		*rc = 2;
		return NULL;
	}
	snprintf(prog + strlen(prog), len - strlen(prog), " %s", s->name);
	(*argc)--;
	(*argv)++;
	return s;
}

static int run(const struct tool_cmd *c, int argc, char **argv)
{
	struct tool_opts o;
	char prog[64];
	int rc;

	snprintf(prog, sizeof(prog), "treercu %s", c->name);
	if (c->subs) {
		c = pick_sub(c, &argc, &argv, prog, sizeof(prog), &rc);
		if (!c)
			return rc;
	}
	rc = tool_parse(&o, c, prog, argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	return c->run(&o);
}

int main(int argc, char **argv)
{
	const struct tool_cmd *c;

	if (argc < 2 || is_help(argv[1])) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		version();
		return 0;
	}
	if (!strcmp(argv[1], "help")) {
		c = argc > 2 ? find(cmds, NELEM(cmds), argv[2]) : NULL;
		if (!c && argc > 2)
			fprintf(stderr, "treercu: unknown subcommand '%s'\n", argv[2]);
		if (!c) {
			usage(argc > 2 ? stderr : stdout);
			return argc > 2 ? 2 : 0;
		}
		return run(c, 2, (char *[]){ argv[2], "--help", NULL });
	}
	c = find(cmds, NELEM(cmds), argv[1]);
	if (!c) {
		fprintf(stderr, "treercu: unknown subcommand '%s'\n", argv[1]);
		usage(stderr);
		return 2;
	}
	return run(c, argc - 1, argv + 1);
}
