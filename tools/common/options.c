/* SPDX-License-Identifier: MIT */
/*
 * Command-line options of the treercu tool: getopt_long() over one table per
 * subcommand (see tool.h), --help printed from the same table.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"

/* getopt_long() values: table entries are OPT_BASE + index. */
enum { OPT_QUICK = 1000, OPT_JSON, OPT_OUT, OPT_BASE = 2000 };

static const struct tool_opt common_opts[] = {
	TOPT_F("quick", "a short run: every default marked \"with --quick\" applies"),
	TOPT_S("json", "FILE", "no file",
	       "write the results as JSON to FILE (overrides --out for the JSON)"),
	TOPT_S("out", "DIR", "no files",
	       "write every output file into DIR, created if missing: the results as "
	       "DIR/NAME.json (NAME: the subcommand, e.g. refscale.json, seeds003.json) "
	       "and any plots as DIR/NAME*.png"),
	TOPT_END,
};

static int table_len(const struct tool_opt *t)
{
	int n = 0;

	while (t && t[n].name)
		n++;
	return n;
}

/* "100", "0.25", "1000000": integers without an exponent. */
static const char *fmt_val(char *b, size_t n, double v)
{
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(b, n, "%.0f", v);
	else
		snprintf(b, n, "%g", v);
	return b;
}

#define HELP_COL 28
#define HELP_WIDTH 100

/* Text from column HELP_COL on, wrapped at spaces within HELP_WIDTH. */
static void help_wrapped(FILE *f, const char *s)
{
	int room = HELP_WIDTH - HELP_COL;

	while ((int)strlen(s) > room) {
		int cut = room;

		while (cut > 0 && s[cut] != ' ')
			cut--;
		if (cut == 0)
			break;
		fprintf(f, "%.*s\n%*s", cut, s, HELP_COL, "");
		s += cut + 1;
	}
	fprintf(f, "%s\n", s);
}

/* Second help line: unit, range and default. */
static void help_detail(FILE *f, const struct tool_opt *d)
{
	char lo[32], hi[32], df[32], qd[32];

	fprintf(f, "%*s", HELP_COL, "");
	if (d->type == TOPT_INT || d->type == TOPT_NUM)
		fprintf(f, "%s%s, %s to %s; ", d->unit ? d->unit : "", d->type == TOPT_INT ?
			" (integer)" : "", fmt_val(lo, sizeof(lo), d->min),
			fmt_val(hi, sizeof(hi), d->max));
	if (isnan(d->def))
		fprintf(f, "default: %s\n", d->defnote ? d->defnote : "none");
	else if (d->qdef != d->def)
		fprintf(f, "default %s, with --quick %s\n", fmt_val(df, sizeof(df), d->def),
			fmt_val(qd, sizeof(qd), d->qdef));
	else
		fprintf(f, "default %s\n", fmt_val(df, sizeof(df), d->def));
}

static void help_opts(FILE *f, const struct tool_opt *t)
{
	for (int i = 0; i < table_len(t); i++) {
		char head[64];

		snprintf(head, sizeof(head), "--%s%s%s", t[i].name, t[i].arg ? " " : "",
			 t[i].arg ? t[i].arg : "");
		fprintf(f, "  %-*s", HELP_COL - 2, head);
		help_wrapped(f, t[i].help);
		help_detail(f, &t[i]);
	}
}

void tool_help(FILE *f, const struct tool_cmd *cmd, const char *prog)
{
	if (cmd->subs) {
		fprintf(f, "usage: %s ID [OPTIONS]\n%s\n\n", prog, cmd->help);
		for (int i = 0; i < cmd->nsubs; i++)
			fprintf(f, "  %-6s %s\n", cmd->subs[i].name, cmd->subs[i].help);
		fprintf(f, "\n'%s ID --help' lists the options of one.\n", prog);
		return;
	}
	fprintf(f, "usage: %s [OPTIONS]\n%s\n\n", prog, cmd->help);
	if (table_len(cmd->opts)) {
		fprintf(f, "options:\n");
		help_opts(f, cmd->opts);
		fprintf(f, "\n");
	}
	fprintf(f, "options every subcommand takes:\n");
	help_opts(f, common_opts);
	fprintf(f, "  %-*s%s\n", HELP_COL - 2, "-h, --help", "print this help and exit");
}

/* A number within the table's range; prints the problem and returns -1. */
static int parse_num(const char *prog, const struct tool_opt *d, const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !(v >= d->min && v <= d->max)) {
		fprintf(stderr, "%s: --%s %s: expected a number in [%g, %g]\n", prog, d->name, s,
			d->min, d->max);
		return -1;
	}
	if (d->type == TOPT_INT && v != floor(v)) {
		fprintf(stderr, "%s: --%s %s: expected an integer\n", prog, d->name, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* The directory FILE would be created in exists and is writable (checked
 * before a run, which may take minutes, rather than after it). */
static int check_writable(const char *prog, const char *opt, const char *file)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(file, '/');

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == file ? 1 : (int)(slash - file), file);
	if (access(dir, W_OK) == 0)
		return 0;
	fprintf(stderr, "%s: %s %s: cannot write into %s: %s\n", prog, opt, file, dir,
		strerror(errno));
	return -1;
}

/* mkdir -p DIR. */
static int make_dir(const char *dir)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(p))
		return -1;
	memcpy(p, dir, n + 1);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0777) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0777) && errno != EEXIST ? -1 : 0;
}

/* Why getopt_long() refused arg: a missing value, a value given to a flag,
 * an abbreviation of several options, or an unknown name. */
static void bad_option(const char *prog, const struct option *lo, const char *arg, int missing)
{
	size_t n = strcspn(arg, "=");
	int matches = 0;

	for (int i = 0; n > 2 && lo[i].name; i++)
		matches += !strncmp(lo[i].name, arg + 2, n - 2);
	if (missing)
		fprintf(stderr, "%s: option '%s' needs a value\n", prog, arg);
	else if (arg[n] == '=' && matches)
		fprintf(stderr, "%s: option '%.*s' takes no value\n", prog, (int)n, arg);
	else if (matches > 1) {
		fprintf(stderr, "%s: ambiguous option '%s': could be", prog, arg);
		for (int i = 0; lo[i].name; i++)
			if (!strncmp(lo[i].name, arg + 2, n - 2))
				fprintf(stderr, " --%s", lo[i].name);
		fprintf(stderr, "\n");
	} else
		fprintf(stderr, "%s: unknown option '%s'\n", prog, arg);
	fprintf(stderr, "'%s --help' lists the options\n", prog);
}

static void build_longopts(struct option *lo, const struct tool_opt *t, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		lo[k++] = (struct option){ t[i].name, t[i].type == TOPT_FLAG ? no_argument :
					   required_argument, NULL, OPT_BASE + i };
	lo[k++] = (struct option){ "quick", no_argument, NULL, OPT_QUICK };
	lo[k++] = (struct option){ "json", required_argument, NULL, OPT_JSON };
	lo[k++] = (struct option){ "out", required_argument, NULL, OPT_OUT };
	lo[k++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[k] = (struct option){ NULL, 0, NULL, 0 };
}

static int take_value(struct tool_opts *o, const char *prog, int i, const char *arg)
{
	const struct tool_opt *d = &o->defs[i];

	o->vals[i].set = true;
	o->vals[i].str = arg;
	if (d->type == TOPT_INT || d->type == TOPT_NUM)
		return parse_num(prog, d, arg, &o->vals[i].num);
	return 0;
}

int tool_parse(struct tool_opts *o, const struct tool_cmd *cmd, const char *prog,
	       int argc, char **argv)
{
	int n = table_len(cmd->opts), c, help = 0;
	struct option lo[TOOL_MAXOPT + 5];

	if (n > TOOL_MAXOPT) {
		fprintf(stderr, "%s: internal: more than %d options\n", prog, TOOL_MAXOPT);
		return 2;
	}
	memset(o, 0, sizeof(*o));
	o->defs = cmd->opts;
	o->parsed = true;
	build_longopts(lo, cmd->opts, n);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		if (c == 'h')
			help = 1;
		else if (c == OPT_QUICK)
			o->quick = true;
		else if (c == OPT_JSON)
			o->json = optarg;
		else if (c == OPT_OUT)
			o->out = optarg;
		else if (c >= OPT_BASE && c < OPT_BASE + n) {
			if (take_value(o, prog, c - OPT_BASE, optarg))
				return 2;
		} else {
			bad_option(prog, lo, optopt && optopt < OPT_QUICK ?
				   (char[]){ '-', (char)optopt, 0 } : argv[optind - 1], c == ':');
			return 2;
		}
	}
	if (help) {
		tool_help(stdout, cmd, prog);
		return 1;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n'%s --help' lists the options\n",
			prog, argv[optind], prog);
		return 2;
	}
	if (o->json && check_writable(prog, "--json", o->json))
		return 2;
	for (int i = 0; i < n; i++)
		if (o->vals[i].set && !strcmp(o->defs[i].name, "png") &&
		    check_writable(prog, "--png", o->vals[i].str))
			return 2;
	if (o->out && make_dir(o->out)) {
		fprintf(stderr, "%s: --out %s: cannot create the directory: %s\n", prog, o->out,
			strerror(errno));
		return 2;
	}
	return 0;
}

void tool_bind(struct tool_opts *o, const struct tool_opt *t)
{
	if (o->parsed && o->defs != t) {
		fprintf(stderr, "treercu: internal: options parsed against another table\n");
		abort();
	}
	if (!o->parsed)
		o->defs = t;
}

/* Index of --name in the bound table; a name missing from it is a bug in
 * the subcommand, caught on its first run. */
static int opt_index(const struct tool_opts *o, const char *name)
{
	for (int i = 0; o->defs && o->defs[i].name; i++)
		if (!strcmp(o->defs[i].name, name))
			return i;
	fprintf(stderr, "treercu: internal: option --%s is not in the subcommand's table\n", name);
	abort();
}

bool opt_double(struct tool_opts *o, const char *name, double *out)
{
	int i = opt_index(o, name);
	double def = o->quick ? o->defs[i].qdef : o->defs[i].def;

	if (o->vals[i].set)
		*out = o->vals[i].num;
	else if (!isnan(def))
		*out = def;
	return o->vals[i].set;
}

bool opt_long(struct tool_opts *o, const char *name, long *out)
{
	double v = NAN;
	bool set = opt_double(o, name, &v);

	if (!isnan(v))
		*out = (long)v;
	return set;
}

const char *opt_str(struct tool_opts *o, const char *name)
{
	int i = opt_index(o, name);

	return o->vals[i].set ? o->vals[i].str : NULL;
}

bool opt_flag(struct tool_opts *o, const char *name)
{
	return o->vals[opt_index(o, name)].set;
}

const char *tool_out_path(const struct tool_opts *o, const char *stem, const char *ext,
			  char *buf, size_t len)
{
	if (!o->out)
		return NULL;
	snprintf(buf, len, "%s%s%s.%s", o->out, o->out[strlen(o->out) - 1] == '/' ? "" : "/",
		 stem, ext);
	return buf;
}

const char *tool_version(void)
{
#ifdef TREERCU_TOOL_VERSION
	return TREERCU_TOOL_VERSION;
#else
	return "unknown";
#endif
}

const char *tool_commit(void)
{
#ifdef TREERCU_TOOL_COMMIT
	return TREERCU_TOOL_COMMIT;
#else
	return "";
#endif
}
