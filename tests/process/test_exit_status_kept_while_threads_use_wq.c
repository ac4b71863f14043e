/* SPDX-License-Identifier: MIT */
/*
 * exit() while other threads of the program still use the workqueue
 * (queue, delayed queueing, cancel, flush; on the system workqueues and on
 * one of their own) and call_rcu(), rcu_free() and synchronize_rcu(): the
 * process ends with exactly the status given to exit(), killed by no
 * signal, within the exit-time wait.  The exit-time step must leave alone
 * what those threads still use (handles, pools, the topology).
 *
 * Each try is its own process; the race is repeated over NR_PROCS processes,
 * with exit_wait_ms lowered so that the runs stay short.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include <treercu/workqueue.h>

#include "check.h"
#include "subproc.h"

#define NR_PROCS 50
#define NR_USERS 4
#define NR_ITEMS 16

static struct trcu_workqueue *own_wq;
static struct trcu_work items[NR_ITEMS];
static struct trcu_delayed_work ditems[NR_ITEMS];

static void item_fn(struct trcu_work *w)
{
	struct timespec ts = { 0, 50000 };

	(void)w;
	nanosleep(&ts, NULL);
}

static void free_head(struct trcu_head *h)
{
	free(h);
}

static void *user(void *arg)
{
	unsigned int s = (unsigned int)(long)arg * 7919u + 1;
	/* Pauses: the exit-time step finds moments with no item in flight. */
	struct timespec pause_ts = { 0, 100000 };

	for (;;) {
		struct trcu_workqueue *wq;
		int i;

		s = s * 1103515245u + 12345u;
		i = (int)((s >> 8) % NR_ITEMS);
		wq = (s >> 4) % 3 == 0 ? own_wq
		   : (s >> 4) % 3 == 1 ? trcu_system_wq() : trcu_system_unbound_wq();
		switch ((s >> 16) % 7) {
		case 0:
			trcu_queue_work(wq, &items[i]);
			break;
		case 1:
			trcu_queue_delayed_work(wq, &ditems[i], (s >> 2) % 2000);
			break;
		case 2:
			trcu_cancel_delayed_work(&ditems[i]);
			break;
		case 3:
			trcu_flush_work(&items[i]);
			break;
		case 4:
			trcu_call_rcu(calloc(1, sizeof(struct trcu_head)), free_head);
			break;
		case 5:
			trcu_rcu_free(malloc(32));
			break;
		case 6:
			trcu_synchronize_rcu();
			break;
		}
		nanosleep(&pause_ts, NULL);
	}
	return NULL;
}

static void exit_while_used(void)
{
	pthread_t t;

	own_wq = trcu_alloc_workqueue("users", 0, 0);
	CHECK(own_wq);
	for (int i = 0; i < NR_ITEMS; i++) {
		trcu_init_work(&items[i], item_fn);
		trcu_init_delayed_work(&ditems[i], item_fn);
	}
	for (long i = 0; i < NR_USERS; i++)
		CHECK(pthread_create(&t, NULL, user, (void *)i) == 0);
	usleep(20000);
	exit(11);
}

static const struct sp_scenario scenarios[] = {
	{ "exit_while_used", exit_while_used },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const env[] = { "TREERCU_EXIT_WAIT_MS=50", NULL };
	static struct sp_result res;
	int bad = 0;

	sp_child(argc, argv, scenarios);
	printf("exit(11) while %d threads use the workqueue and call_rcu(): %d runs\n",
	       NR_USERS, NR_PROCS);
	for (int i = 0; i < NR_PROCS; i++) {
		char how[96];

		sp_run("exit_while_used", env, 30, &res);
		if (WIFEXITED(res.status) && WEXITSTATUS(res.status) == 11 &&
		    !strstr(res.err, "fatal"))
			continue;
		bad++;
		sp_describe(&res, how, sizeof(how));
		printf("  process %d: %s in %ld ms (want exit status 11): FAILED\n", i, how, res.ms);
		sp_print_err(&res);
	}
	printf("  %d of %d runs ended otherwise than with exit status 11: %s\n", bad, NR_PROCS,
	       bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
