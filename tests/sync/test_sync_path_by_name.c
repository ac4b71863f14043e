/* SPDX-License-Identifier: MIT */
/*
 * TREERCU_NORMAL_WAKE_FROM_GP takes the paths' names as well as their
 * numbers: wakeme, list and futex select 0, 1 and 2, a number still works,
 * and an unknown name is refused, leaving the default.  Each value is read
 * at init, so each runs in a child process (this program again, execed with
 * the variable set), which does one synchronize_rcu() on the path chosen
 * and exits with the value it read.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"

static int run_child(const char *text)
{
	int st;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		setenv("TREERCU_NORMAL_WAKE_FROM_GP", text, 1);
		execl("/proc/self/exe", "test_sync_path_by_name", "child", (char *)NULL);
		_exit(127);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	static const struct { const char *text; int want; } cases[] = {
		{ "wakeme", 0 }, { "list", 1 }, { "futex", 2 }, { "1", 1 },
	};
	long def;

	alarm(60);   /* a hang fails the test (SIGALRM) */
	if (argc > 1) {
		long v = -1;

		synchronize_rcu();
		CHECK_EQ(trcu_get_tunable("normal_wake_from_gp", &v), 0);
		return (int)v;
	}
	CHECK_EQ(trcu_get_tunable("normal_wake_from_gp", &def), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = run_child(cases[i].text);

		if (got != cases[i].want) {
			fprintf(stderr, "TREERCU_NORMAL_WAKE_FROM_GP=%s read as %d, want %d\n",
				cases[i].text, got, cases[i].want);
			CHECK(0);
		}
	}
	CHECK_EQ(run_child("sleepy"), (int)def);   /* refused: the default stays */
	printf("test_sync_path_by_name: OK (wakeme, list, futex, 1; unknown name refused)\n");
	return 0;
}
