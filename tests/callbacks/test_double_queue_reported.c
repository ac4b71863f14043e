/* SPDX-License-Identifier: MIT */
/*
 * An rcu_head queued twice (call_rcu() again before its callback ran) is
 * caught by the debug-objects build (TREERCU_DEBUG_OBJECTS): call_rcu()
 * aborts with a message naming the head and the callback, whether the
 * first copy still sits on the thread's bypass list or has moved to its
 * offload thread's callback list with another thread's callback queued
 * since.  Queueing a head again once its callback has started (a callback
 * re-queueing its own head, or a head reused after rcu_barrier()) is not
 * flagged.  Built against the debug-objects variant of the library in
 * every configuration; each case runs in its own process
 * (tests/common/subproc.h) under a hard alarm.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include <treercu/treercu.h>

#include "subproc.h"

static _Atomic int ran_a, ran_b, requeued, reader_in, reader_stop;
static struct trcu_head h1, h2;

/* Exported (the test links with ENABLE_EXPORTS): the message names them. */
void twice_cb_a(struct trcu_head *h);
void twice_cb_b(struct trcu_head *h);
void twice_cb_requeue(struct trcu_head *h);

void twice_cb_a(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran_a, 1);
}

void twice_cb_b(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran_b, 1);
}

void twice_cb_requeue(struct trcu_head *h)
{
	if (atomic_fetch_add(&requeued, 1) < 3)
		call_rcu(h, twice_cb_requeue);
}

static void say_expected(struct trcu_head *h)
{
	fprintf(stderr, "EXPECT: rcu_head %p queued again\n", (void *)h);
}

/* Back to back: the first copy is still on the bypass list. */
static void sc_in_row(void)
{
	say_expected(&h1);
	/* In a section: the first copy's callback cannot start in between. */
	rcu_read_lock();
	call_rcu(&h1, twice_cb_a);
	call_rcu(&h1, twice_cb_a);
	rcu_read_unlock();
	rcu_barrier();
	fprintf(stderr, "not caught: callback ran %d times\n", atomic_load(&ran_a));
	_exit(0);
}

static void *reader(void *arg)
{
	(void)arg;
	rcu_read_lock();
	atomic_store(&reader_in, 1);
	while (!atomic_load(&reader_stop))
		usleep(1000);
	rcu_read_unlock();
	return NULL;
}

static void *queue_b(void *arg)
{
	(void)arg;
	call_rcu(&h2, twice_cb_b);
	return NULL;
}

/* The first copy has moved to the callback list (a reader holds its grace
 * period), another thread's callback came after it, then the head again. */
static void sc_after_flush(void)
{
	pthread_t r, b;

	CHECK(pthread_create(&r, NULL, reader, NULL) == 0);
	while (!atomic_load(&reader_in))
		usleep(100);
	say_expected(&h1);
	call_rcu(&h1, twice_cb_a);
	usleep(50000);          /* the offload thread flushes it */
	CHECK(pthread_create(&b, NULL, queue_b, NULL) == 0);
	pthread_join(b, NULL);
	usleep(50000);
	call_rcu(&h1, twice_cb_a);
	atomic_store(&reader_stop, 1);
	pthread_join(r, NULL);
	rcu_barrier();
	fprintf(stderr, "not caught: a ran %d times, b %d times\n", atomic_load(&ran_a),
		atomic_load(&ran_b));
	_exit(0);
}

/* Legal re-use: not flagged. */
static void sc_reuse(void)
{
	call_rcu(&h1, twice_cb_a);
	rcu_barrier();
	call_rcu(&h1, twice_cb_a);
	call_rcu(&h2, twice_cb_requeue);
	rcu_barrier();
	while (atomic_load(&requeued) < 4)
		rcu_barrier();
	CHECK_EQ(atomic_load(&ran_a), 2);
	CHECK_EQ(atomic_load(&requeued), 4);
	exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "in_row", sc_in_row },
	{ "after_flush", sc_after_flush },
	{ "reuse", sc_reuse },
	{ NULL, NULL },
};

/* Dies by SIGABRT, and the fatal line names the head and the callback. */
static bool expect_caught(const char *scenario)
{
	static struct sp_result res;
	char how[96], want[128] = "";
	const char *e, *fatal;
	bool ok;

	sp_run(scenario, NULL, 20, &res);
	sp_describe(&res, how, sizeof(how));
	if ((e = strstr(res.err, "EXPECT: ")))
		sscanf(e + 8, "%127[^\n]", want);
	fatal = strstr(res.err, "treercu: fatal: call_rcu(): ");
	ok = WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT && want[0] && fatal &&
	     strstr(fatal, want) && strstr(fatal, "twice_cb_a");
	printf("  %-12s %s in %ld ms (want abort naming the head and twice_cb_a): %s\n", scenario,
	       how, res.ms, ok ? "ok" : "FAILED");
	if (!ok)
		sp_print_err(&res);
	return ok;
}

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	alarm(300);
	printf("test_double_queue_reported: debug-objects library, each case in its own process\n");
	ok &= expect_caught("in_row");
	ok &= expect_caught("after_flush");
	ok &= sp_expect_exit("reuse", NULL, 20, 0, NULL, 0);
	if (!ok) {
		printf("test_double_queue_reported: FAILED\n");
		return 1;
	}
	printf("test_double_queue_reported: a head queued twice is caught, named; re-use after its "
	       "callback started is not flagged\n");
	return 0;
}
