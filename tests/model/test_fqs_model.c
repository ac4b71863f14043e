/* SPDX-License-Identifier: MIT */
/*
 * Model check of the FQS scan rule (rcu_watching_qs in src/fqs_rule.h) against a
 * sequentially consistent model of one reader and one GP driver, which is
 * what membarrier() gives at the GP-start barrier.
 *
 * The reader performs a sequence of lock/unlock steps (odd/even counter);
 * the driver optionally takes a snapshot (prescan) at some point before the
 * barrier, then the barrier happens, then it scans at later points.  Every
 * interleaving of 8 reader steps with prescan, barrier and up to 3 scans is
 * enumerated.
 *
 * Two encodings of ->watching: the reader's lock stores the counter + 1, or
 * (x86-64's fast path) the reader generation, which the driver advances by
 * 2 at some point between the prescan and the barrier, so that an odd value
 * can come back in a later section (include/treercu/rcu.h, trcu_reader_gen).
 *
 * Safety: when the rule reports a quiescent state at a scan, the reader must
 * not be inside a section that began before the barrier; with the
 * generation, before the driver stored the new one (on TSO a section that
 * loaded it sees every update that preceded the GP: rcu_watching_qs()), and
 * before the barrier where the rule for it is compiled out (RCU_TSO 0).
 * Liveness: a reader that is outside any section at two consecutive scans,
 * or that has finished the section it was in at the barrier, is reported by
 * the end.
 */
#define _GNU_SOURCE
#include <string.h>

#include "internal.h"
#include "check.h"

/* The rule under test, as the GP scan compiles it. */
#include "fqs_rule.h"

static long cases, reported;

/*
 * steps: bit t set = the reader toggles its section state at time t.
 * pre_at: time of the prescan snapshot (-1: none, as in the kernel profile);
 * mb_at: time of the GP-start barrier (pre_at <= mb_at); scan_mask: times of
 * FQS scans (only those after the barrier count).
 */
static void run_case(unsigned steps, int nsteps, int pre_at, int mb_at, unsigned scan_mask,
		     int gen_at)
{
	unsigned long snapbuf[1] = { 0 };
	struct rcu_node leaf;
	unsigned long w = 2, gen = TRCU_READER_GEN_TAG | 1;
	bool in_sec = false, qs = false, dirty = false;
	/* The section may hold pre-GP references: it began before the
	 * barrier, and (generation rule) before the new generation. */
	bool sec_pre = false, gen_rule = RCU_TSO && gen_at >= 0;

	memset(&leaf, 0, sizeof(leaf));
	leaf.snap = snapbuf;
	rcu_state.gp_gen = TRCU_READER_GEN_TAG | 3;   /* this GP's, from gen_at on */
	for (int t = 0; t <= nsteps; t++) {
		if (t == pre_at) {
			leaf.snap[0] = w;
			leaf.snap_valid = 1;
			leaf.snap_pre = 1;
		}
		if (t == gen_at)
			gen += 2;        /* the driver's new generation */
		if (t == (gen_rule ? gen_at : mb_at))
			sec_pre = in_sec;
		if (t > mb_at && ((scan_mask >> t) & 1) && !qs) {
			qs = rcu_watching_qs(&leaf, 0, w, &dirty);
			if (qs) {
				/* Safety: the section running at the barrier
				 * (or at the new generation) is over. */
				CHECK(!(in_sec && sec_pre));
				reported++;
			}
		}
		if (t == nsteps)
			break;
		if ((steps >> t) & 1) {
			/* gen_at < 0: lock stores w + 1; else the generation. */
			w = in_sec || gen_at < 0 ? w + 1 : gen;
			in_sec = !in_sec;
			if (!in_sec)
				sec_pre = false;   /* that section ended */
		}
	}
	/* Liveness: with the reader outside any section, two more scans
	 * report it. */
	if (!qs && !in_sec) {
		qs = rcu_watching_qs(&leaf, 0, w, &dirty) || rcu_watching_qs(&leaf, 0, w, &dirty);
		CHECK(qs);
	}
	cases++;
}

int main(void)
{
	const int n = 8;

	for (unsigned steps = 0; steps < (1u << n); steps++)
		for (int mb = 0; mb <= n; mb++)
			for (int pre = -1; pre <= mb; pre++)
				for (unsigned scans = 0; scans < (1u << (n + 1)); scans++) {
					if (__builtin_popcount(scans) > 3)
						continue;
					/* gen -1: counter encoding; else the
					 * generation moves at gen (after the
					 * prescan, at the barrier at the latest:
					 * a reader load that still sees the old
					 * one is the same as a later move). */
					for (int gen = -1; gen <= mb; gen++)
						if (gen < 0 || gen >= pre)
							run_case(steps, n, pre, mb, scans, gen);
				}
	printf("test_fqs_model: %ld interleavings, %ld early reports, OK\n", cases, reported);
	return 0;
}
