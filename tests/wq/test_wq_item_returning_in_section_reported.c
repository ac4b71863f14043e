/* SPDX-License-Identifier: MIT */
/*
 * A work item whose function returns inside a read-side section (two
 * rcu_read_lock() calls, no unlock) is reported on stderr right after it
 * returns, naming the item, its function and the nesting depth, and the
 * section is closed: synchronize_rcu() from another thread then returns
 * at once instead of waiting behind the worker (until a stall warning).
 * A later item on the workqueue starts outside any section.  Runs in a
 * child process under a hard alarm (tests/common/subproc.h): a hang fails
 * the test.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>

#include <treercu/treercu.h>
#include <treercu/workqueue.h>

#include "subproc.h"

static atomic_int leak_ran;
static void leak_fn(struct trcu_work *w)
{
	(void)w;
	rcu_read_lock();
	rcu_read_lock();
	atomic_store(&leak_ran, 1);
}

static atomic_int later_held = -1;
static void later_fn(struct trcu_work *w)
{
	(void)w;
	atomic_store(&later_held, rcu_read_lock_held());
	rcu_read_lock();
	rcu_read_unlock();
}

static void leak(void)
{
	struct trcu_workqueue *wq = trcu_alloc_ordered_workqueue("leak", 0);
	TRCU_DECLARE_WORK(w, leak_fn);
	TRCU_DECLARE_WORK(later, later_fn);

	CHECK(wq);
	/* The line the parent expects, with this process's addresses. */
	fprintf(stderr, "expect: work item %p (function %p) returned inside an RCU read-side "
		"critical section (nesting depth 2)\n", (void *)&w, (void *)(uintptr_t)leak_fn);
	CHECK(trcu_queue_work(wq, &w));
	/* false only if it finished before the call (idle) */
	CHECK(trcu_flush_work(&w) || atomic_load(&leak_ran));
	synchronize_rcu();   /* waits for the worker unless its section was closed */
	synchronize_rcu();
	CHECK(trcu_queue_work(wq, &later));
	CHECK(trcu_flush_work(&later) || atomic_load(&later_held) >= 0);
	CHECK_EQ(atomic_load(&later_held), 0);
	synchronize_rcu();
	exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "leak", leak },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static struct sp_result res;
	char how[96], want[256];
	const char *p, *nl;
	bool ok;

	sp_child(argc, argv, scenarios);
	sp_run("leak", NULL, 10, &res);
	sp_describe(&res, how, sizeof(how));
	p = strstr(res.err, "expect: ");
	CHECK(p);
	p += strlen("expect: ");
	nl = strchr(p, '\n');
	CHECK(nl && (size_t)(nl - p) < sizeof(want));
	snprintf(want, sizeof(want), "treercu: %.*s", (int)(nl - p), p);
	ok = WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0 &&
	     sp_count_lines(res.err, want) == 1 && !strstr(res.err, "stall");
	printf("  item returning in a section: %s in %ld ms, want exit status 0 and "
	       "\"%s\" once: %s\n", how, res.ms, want, ok ? "ok" : "FAILED");
	if (!ok) {
		sp_print_err(&res);
		return 1;
	}
	printf("test_wq_item_returning_in_section_reported: PASS\n");
	return 0;
}
