/* SPDX-License-Identifier: MIT */
/*
 * The explicit fork calls (trcu_before_fork(), trcu_after_fork_parent(),
 * trcu_after_fork_child()) made before the library's first use leave the
 * application's thread-specific data alone: the child step resets only what
 * the library itself set up.  A program that wraps every fork in the calls
 * (the liburcu habit) may fork before it ever uses RCU.
 *
 * The application's key is the process's first (key 0); the child reads
 * its value back after trcu_after_fork_child().
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "check.h"

static int value;

int main(void)
{
	pthread_key_t key;
	int status;
	pid_t pid;

	alarm(60);
	CHECK_EQ(pthread_key_create(&key, NULL), 0);
	/* The scene needs the key a library key would be given by default;
	 * a sanitizer runtime may have taken it: skipped (ctest's 77). */
	if (key != 0) {
		printf("skipped: the first key is %u, not 0 (taken before main())\n",
		       (unsigned)key);
		return 77;
	}
	CHECK_EQ(pthread_setspecific(key, &value), 0);
	trcu_before_fork();
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		trcu_after_fork_child();
		if (pthread_getspecific(key) != &value) {
			fprintf(stderr, "child: the application's key lost its value: %p\n",
				pthread_getspecific(key));
			_exit(1);
		}
		/* The library works in the child afterwards. */
		synchronize_rcu();
		_exit(0);
	}
	trcu_after_fork_parent();
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(pthread_getspecific(key) == &value);
	synchronize_rcu();
	printf("fork_calls_before_use_keep_app_keys: ok\n");
	return 0;
}
