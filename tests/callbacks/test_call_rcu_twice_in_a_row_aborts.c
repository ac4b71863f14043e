/* SPDX-License-Identifier: MIT */
/*
 * The release build's check of an rcu_head queued twice: call_rcu() on the
 * head its thread queued last, its callback not run yet, aborts naming the
 * head, whether the first copy is still on the thread's bypass list or its
 * offload thread moved it to the callback list already (a reader holds the
 * grace period meanwhile).  Before, the push linked the head to itself and
 * the callback list lost or repeated callbacks, silently.  A head queued
 * again after its callback ran, and two heads alternating, are not flagged.
 * Each case runs in its own process (tests/common/subproc.h).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <treercu/treercu.h>

#include "holder.h"
#include "subproc.h"

static _Atomic int ran;
static struct trcu_head h1, h2;

static void count_cb(struct trcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran, 1);
}

/*
 * The offload thread started and idle, then the same head twice, between_ms
 * apart.  A reader holds the grace period throughout, so the first copy's
 * callback cannot have run (and made the second call legal) whatever the
 * timing.  The second call aborts, at the push or at a flush.
 */
static void queue_twice(int between_ms)
{
	struct holder h;

	trcu_call_rcu(&h2, count_cb);
	trcu_rcu_barrier();
	holder_start(&h);
	trcu_call_rcu(&h1, count_cb);
	if (between_ms)
		usleep(between_ms * 1000);
	trcu_call_rcu(&h1, count_cb);
	usleep(100 * 1000);
	holder_release(&h);
	trcu_rcu_barrier();
	_exit(0);
}

/* At once: the first copy most likely still on the bypass. */
static void sc_twice(void)
{
	queue_twice(0);
}

/* The first copy moved to the callback list by the offload thread. */
static void sc_twice_after_flush(void)
{
	queue_twice(100);
}

/* Reuse after the callback ran, and alternating heads: every callback runs
 * once per queueing. */
static void sc_reuse(void)
{
	for (int i = 0; i < 100; i++) {
		trcu_call_rcu(&h1, count_cb);
		trcu_call_rcu(&h2, count_cb);
		trcu_rcu_barrier();
	}
	_exit(atomic_load(&ran) == 200 ? 0 : 1);
}

/*
 * Under ThreadSanitizer the misuse is also a data race (the second push
 * writes the head the offload thread read), and TSan names it on its own:
 * its report (exit status 66, the push in the stack) counts as the clear
 * error there as well as the abort does.
 */
#if defined(__SANITIZE_THREAD__)
#define TWICE_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TWICE_UNDER_TSAN 1
#endif
#endif

static bool expect_refused(const char *scenario)
{
#ifdef TWICE_UNDER_TSAN
	static struct sp_result res;
	bool ok;

	sp_run(scenario, NULL, 60, &res);
	ok = (WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT &&
	      strstr(res.err, "queued again before its callback ran")) ||
	     (WIFEXITED(res.status) && WEXITSTATUS(res.status) == 66 &&
	      strstr(res.err, "ThreadSanitizer: data race") && strstr(res.err, "call_rcu_push"));
	printf("  %-28s status 0x%x in %ld ms (want the abort, or TSan's report on the push): %s\n",
	       scenario, res.status, res.ms, ok ? "ok" : "FAILED");
	if (!ok)
		sp_print_err(&res);
	return ok;
#else
	return sp_expect_abort(scenario, NULL, 60, "queued again before its callback ran");
#endif
}

static const struct sp_scenario scenarios[] = {
	{ "twice", sc_twice },
	{ "twice_after_flush", sc_twice_after_flush },
	{ "reuse", sc_reuse },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	alarm(300);
	printf("test_call_rcu_twice_in_a_row_aborts: a head queued twice in a row is refused\n");
	ok &= expect_refused("twice");
	ok &= expect_refused("twice_after_flush");
	ok &= sp_expect_exit("reuse", NULL, 60, 0, NULL, 0);
	printf("test_call_rcu_twice_in_a_row_aborts: %s\n", ok ? "OK" : "FAILED");
	return ok ? 0 : 1;
}
