/* SPDX-License-Identifier: MIT */
/*
 * Reproduces the kernel patches "workqueue: split kick_pool() into
 * kick_pool_pick() + wake_up_process()" and "workqueue: defer
 * wake_up_process() outside pool->lock on hot paths" (Breno Leitao): the
 * worker to wake is picked under the pool lock, and woken after the lock is
 * dropped, shortening the locked region of a contended unbound pool.
 *
 * `treercu seeds 001`: the workqueue benchmark (bench/wq.c), both wake-up
 * placements interleaved in one run, beside the patch's own figures.
 */
#include <stddef.h>

#include "tool.h"
#include "wq.h"

/* The patch's figures, items/s per affinity scope (arm64 VM, 8 vCPUs,
 * lib/test_workqueue.c batched-submit mode, averages of five runs). */
static const double seed_base[NSCOPES] = { 1419973, 1442921, 1184058, 1167603, 1163617, 1175933 };
static const double seed_patched[NSCOPES] = { 1413896, 1437164, 1279184, 1271341, 1285427,
					      1255227 };

static const struct wq_seed seed001 = {
	.base = seed_base,
	.patched = seed_patched,
	.latency_note = "seed: p50 ~2875 -> ~2625 ns, p99 ~5000 -> ~4200 ns (contended scopes)",
	.footnote = "seed: arm64 VM, 8 vCPUs, kernel threads, averages of five runs.  Here: "
		    "userspace threads on this machine; `gain` compares the two wake-up "
		    "placements measured in the same run.",
	.json_stem = "seeds001",
};

int seeds_001(struct tool_opts *o)
{
	return wq_run(o, "seeds 001", &seed001);
}
