/* SPDX-License-Identifier: MIT */
/*
 * Warnings from many threads at once stay whole lines: 32 registered
 * threads leave a barrier together and each exits inside a read-side
 * section, which makes each of them print one warning as it exits; every
 * line on stderr must then be exactly one such warning (a report written
 * in pieces mixes with the others: "...quiescenttreercu: thread ...").
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>

#include "check.h"
#include "subproc.h"

#define NR_THREADS 32
#define ROUNDS 4   /* 128 lines of about 105 bytes: within sp_result.err */

static pthread_barrier_t together;

static void *exit_in_section(void *arg)
{
	(void)arg;
	trcu_register_thread();
	pthread_barrier_wait(&together);
	trcu_read_lock();
	return NULL;
}

static void many_warnings(void)
{
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t t[NR_THREADS];

		CHECK(pthread_barrier_init(&together, NULL, NR_THREADS) == 0);
		for (int i = 0; i < NR_THREADS; i++)
			CHECK(pthread_create(&t[i], NULL, exit_in_section, NULL) == 0);
		for (int i = 0; i < NR_THREADS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&together);
	}
	exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "many_warnings", many_warnings },
	{ NULL, NULL },
};

/* Is line (len bytes) one whole exit-in-section warning? */
static bool whole_warning(const char *line, int len)
{
	static const char head[] = "treercu: thread ";
	static const char tail[] = " exited inside an RCU read-side critical section "
				   "(nesting depth 1); treating it as quiescent";
	int hl = (int)strlen(head), tl = (int)strlen(tail), digits = 0;

	if (len < hl + tl + 1 || strncmp(line, head, (size_t)hl) ||
	    strncmp(line + len - tl, tail, (size_t)tl))
		return false;
	for (const char *p = line + hl; p < line + len - tl; p++, digits++)
		if (*p < '0' || *p > '9')
			return false;
	return digits > 0;
}

int main(int argc, char **argv)
{
	static struct sp_result res;
	int lines = 0, broken = 0;

	sp_child(argc, argv, scenarios);
	sp_run("many_warnings", NULL, 30, &res);
	for (const char *p = res.err; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		lines++;
		if (!whole_warning(p, len)) {
			if (broken++ < 3)
				printf("  broken line: %.*s\n", len, p);
		}
		p += len + (nl != NULL);
	}
	printf("%d threads x %d rounds exiting inside a section: %d lines on stderr, "
	       "%d not one whole warning\n", NR_THREADS, ROUNDS, lines, broken);
	CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0);
	CHECK(lines == NR_THREADS * ROUNDS);
	CHECK(broken == 0);
	return 0;
}
