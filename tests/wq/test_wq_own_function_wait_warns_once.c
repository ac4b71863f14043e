/* SPDX-License-Identifier: MIT */
/*
 * trcu_cancel_work_sync(), trcu_cancel_delayed_work_sync() and
 * trcu_flush_work() called on an item from its own function cannot wait
 * for themselves: each still returns its documented value on every call
 * (the cancels whether an instance was pending, the flush false with
 * EDEADLK), but says so on stderr once per process, not once per call.
 * So does trcu_flush_work() from an item of an ordered workqueue
 * (max_active 1) on an item queued behind it there, which cannot start
 * before the caller returns.  Each item makes 100 such calls; its stderr
 * is captured in a child process (tests/common/subproc.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>

#include <treercu/workqueue.h>

#include "subproc.h"

#define CALLS 100

static atomic_int bad;    /* calls that returned something else */
static atomic_int done;   /* items that made their calls */

static void cancel_fn(struct trcu_work *w)
{
	for (int i = 0; i < CALLS; i++) {
		/* Pending again (PENDING is clear while the function runs),
		 * then removed: true every time. */
		if (!trcu_queue_work(trcu_system_wq(), w) || !trcu_cancel_work_sync(w))
			atomic_fetch_add(&bad, 1);
	}
	atomic_fetch_add(&done, 1);
}

static void cancel_delayed_fn(struct trcu_work *w)
{
	struct trcu_delayed_work *dw = trcu_to_delayed_work(w);

	for (int i = 0; i < CALLS; i++) {
		if (!trcu_queue_delayed_work(trcu_system_wq(), dw, 1000000) ||
		    !trcu_cancel_delayed_work_sync(dw))
			atomic_fetch_add(&bad, 1);
	}
	atomic_fetch_add(&done, 1);
}

static void flush_fn(struct trcu_work *w)
{
	for (int i = 0; i < CALLS; i++) {
		errno = 0;
		if (trcu_flush_work(w) || errno != EDEADLK)
			atomic_fetch_add(&bad, 1);
	}
	atomic_fetch_add(&done, 1);
}

static void behind_fn(struct trcu_work *w)
{
	(void)w;
}

static struct trcu_work behind;

/* On an ordered workqueue: `behind` is queued after this item. */
static void ordered_flush_fn(struct trcu_work *w)
{
	(void)w;
	for (int i = 0; i < CALLS; i++) {
		errno = 0;
		if (trcu_flush_work(&behind) || errno != EDEADLK)
			atomic_fetch_add(&bad, 1);
	}
	atomic_fetch_add(&done, 1);
}

static void own_function_calls(void)
{
	TRCU_DECLARE_WORK(c, cancel_fn);
	TRCU_DECLARE_DELAYED_WORK(d, cancel_delayed_fn);
	TRCU_DECLARE_WORK(f, flush_fn);

	CHECK(trcu_queue_work(trcu_system_wq(), &c));
	CHECK(trcu_queue_work(trcu_system_wq(), &d.work));
	CHECK(trcu_queue_work(trcu_system_wq(), &f));
	CHECK_WITHIN_MS(atomic_load(&done) == 3, 20000);
	CHECK_EQ(trcu_flush_workqueue(trcu_system_wq()), 0);
	{
		TRCU_DECLARE_WORK(o, ordered_flush_fn);
		struct trcu_workqueue *ord = trcu_alloc_ordered_workqueue("ordered", 0);

		CHECK(ord);
		TRCU_INIT_WORK(&behind, behind_fn);
		CHECK(trcu_queue_work(ord, &o));
		CHECK(trcu_queue_work(ord, &behind));
		CHECK_WITHIN_MS(atomic_load(&done) == 4, 20000);
		CHECK_EQ(trcu_drain_workqueue(ord), 0);
		CHECK_EQ(trcu_destroy_workqueue(ord), 0);
	}
	CHECK(!trcu_work_pending(&c) && !trcu_delayed_work_pending(&d) && !trcu_work_pending(&f));
	CHECK_EQ(atomic_load(&bad), 0);
	trcu_wq_shutdown();
	exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "own_function_calls", own_function_calls },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const want[] = {
		"trcu_cancel_work_sync: called from the work item's own function",
		"trcu_cancel_delayed_work_sync: called from the work item's own function",
		"trcu_flush_work: called from the work item's own function",
		"trcu_flush_work: called from a work item of \"ordered\" (max_active 1)",
	};
	static struct sp_result res;
	char how[96];
	bool ok;

	sp_child(argc, argv, scenarios);
	sp_run("own_function_calls", NULL, 30, &res);
	sp_describe(&res, how, sizeof(how));
	ok = WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0;
	printf("  %d calls from each item's own function (and from an ordered queue's item "
	       "for one behind it): %s in %ld ms (want exit status 0)\n",
	       CALLS, how, res.ms);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int n = sp_count_lines(res.err, want[i]);

		printf("  \"%s\": %d line%s (want 1)\n", want[i], n, n == 1 ? "" : "s");
		ok = ok && n == 1;
	}
	if (!ok) {
		sp_print_err(&res);
		return 1;
	}
	printf("test_wq_own_function_wait_warns_once: PASS\n");
	return 0;
}
