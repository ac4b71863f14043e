/* SPDX-License-Identifier: MIT */
/*
 * Scenario tests in separate processes: the test program runs itself again
 * (fork + exec of /proc/self/exe) as `prog SCENARIO`, with a hard alarm()
 * that survives the exec, its stderr captured, and checks how the child
 * ended: the exact exit status, or death by a named signal, and what it
 * printed.  A scenario that hangs is killed by SIGALRM and reported as a
 * hang.
 *
 * A test's main() calls sp_child(argc, argv, table) first: in the child it
 * runs the named scenario (which ends the process itself) and never
 * returns.
 */
#ifndef TREERCU_SUBPROC_H
#define TREERCU_SUBPROC_H

#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

struct sp_scenario {
	const char *name;
	void (*fn)(void);          /* ends the process (exit, return, abort) */
};

struct sp_result {
	int status;                /* waitpid() status */
	long ms;                   /* how long the child ran */
	char err[16384];           /* its stderr */
};

/* In the child (argv[1] names a scenario): run it; it must end the process. */
static inline void sp_child(int argc, char **argv, const struct sp_scenario *tab)
{
	if (argc < 2)
		return;
	for (; tab->name; tab++) {
		if (!strcmp(tab->name, argv[1])) {
			tab->fn();
			fprintf(stderr, "scenario %s returned instead of ending the process\n",
				tab->name);
			_exit(100);
		}
	}
	fprintf(stderr, "unknown scenario %s\n", argv[1]);
	_exit(101);
}

/* Run `self SCENARIO` with env ("NAME=value" strings, NULL-terminated, or
 * NULL) and a hard limit of timeout_s seconds. */
static inline void sp_run(const char *scenario, const char *const *env, int timeout_s,
			  struct sp_result *res)
{
	int pfd[2];
	ssize_t n, len = 0;
	long t0 = check_now_ms();
	pid_t pid;

	CHECK(pipe(pfd) == 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char *argv[] = { (char *)"subproc", (char *)scenario, NULL };

		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		for (; env && *env; env++)
			putenv((char *)*env);
		/* The timer survives execve(): a hang ends by SIGALRM. */
		alarm((unsigned int)timeout_s);
		execv("/proc/self/exe", argv);
		_exit(102);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], res->err + len, sizeof(res->err) - 1 - (size_t)len)) > 0)
		len += n;
	res->err[len] = '\0';
	close(pfd[0]);
	CHECK(waitpid(pid, &res->status, 0) == pid);
	res->ms = check_now_ms() - t0;
}

static inline void sp_describe(const struct sp_result *res, char *buf, size_t size)
{
	if (WIFEXITED(res->status))
		snprintf(buf, size, "exit status %d", WEXITSTATUS(res->status));
	else if (WIFSIGNALED(res->status) && WTERMSIG(res->status) == SIGALRM)
		snprintf(buf, size, "HUNG (killed by the alarm)");
	else if (WIFSIGNALED(res->status))
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(res->status),
			 strsignal(WTERMSIG(res->status)));
	else
		snprintf(buf, size, "wait status 0x%x", res->status);
}

/* Count lines of text containing needle. */
static inline int sp_count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The child's stderr, at most its first 8 lines. */
static inline void sp_print_err(const struct sp_result *res)
{
	const char *p = res->err;

	printf("    its stderr:\n");
	for (int i = 0; i < 8 && *p; i++) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		printf("    | %.*s\n", len, p);
		p += len + (nl != NULL);
	}
	if (*p)
		printf("    | ...\n");
}

/*
 * Run the scenario and check that it exits with exactly `status`, that its
 * stderr holds `want` (NULL: anything) exactly `want_lines` times (-1: at
 * least once), and that it says nothing fatal.  Prints one line either way;
 * returns whether it held.
 */
static inline bool sp_expect_exit(const char *scenario, const char *const *env, int timeout_s,
				  int status, const char *want, int want_lines)
{
	static struct sp_result res;
	char how[96];
	bool ok;
	int lines;

	sp_run(scenario, env, timeout_s, &res);
	sp_describe(&res, how, sizeof(how));
	lines = want ? sp_count_lines(res.err, want) : 0;
	ok = WIFEXITED(res.status) && WEXITSTATUS(res.status) == status &&
	     !strstr(res.err, "fatal");
	if (want)
		ok = ok && (want_lines < 0 ? lines > 0 : lines == want_lines);
	printf("  %-28s %s in %ld ms (want exit status %d%s%s%s): %s\n", scenario, how, res.ms,
	       status, want ? ", \"" : "", want ? want : "", want ? "\" on stderr" : "",
	       ok ? "ok" : "FAILED");
	if (!ok)
		sp_print_err(&res);
	return ok;
}

/* The scenario must die by SIGABRT with `want` on stderr. */
static inline bool sp_expect_abort(const char *scenario, const char *const *env, int timeout_s,
				   const char *want)
{
	static struct sp_result res;
	char how[96];
	bool ok;

	sp_run(scenario, env, timeout_s, &res);
	sp_describe(&res, how, sizeof(how));
	ok = WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT && strstr(res.err, want);
	printf("  %-28s %s in %ld ms (want abort naming \"%s\"): %s\n", scenario, how, res.ms,
	       want, ok ? "ok" : "FAILED");
	if (!ok)
		sp_print_err(&res);
	return ok;
}

#endif
