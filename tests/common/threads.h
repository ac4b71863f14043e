/* SPDX-License-Identifier: MIT */
/* Counting this process's threads, from /proc/self/task. */
#ifndef TREERCU_TEST_THREADS_H
#define TREERCU_TEST_THREADS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* Threads of this process named name (their comm), or every thread when
 * name is NULL.  A thread that exits during the walk is not counted. */
static inline int threads_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL);
	while ((e = readdir(d))) {
		char path[300], comm[64] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		if (!name) {
			n++;
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;   /* exited meanwhile */
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
		n += !strcmp(comm, name);
	}
	closedir(d);
	return n;
}

/* threads_named(name) once it is want, or after ms milliseconds: a joined
 * thread leaves /proc/self/task a moment after its pthread_join() returns
 * (the join wakes at the thread's exit of its memory, before the kernel
 * releases the task). */
static inline int threads_named_settle(const char *name, int want, int ms)
{
	int n;

	while ((n = threads_named(name)) != want && ms-- > 0)
		usleep(1000);
	return n;
}

#endif
