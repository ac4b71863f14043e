/* SPDX-License-Identifier: MIT */
/* Sequence arithmetic (the kernel's rcu_seq_*): state bits, snapshots,
 * done/done_exact, and behaviour across unsigned long wrap. */
#include "internal.h"
#include "check.h"

static void check_around(unsigned long base)
{
	for (unsigned long d = 0; d < 64; d++) {
		unsigned long s = base + d;
		unsigned long snap = rcu_seq_snap_val(s);

		/* A snapshot is a GP end value: state bits clear. */
		CHECK_EQ(rcu_seq_state(snap), 0);
		/* Not done now, unless... never: a full GP must elapse. */
		CHECK(!rcu_seq_done_val(s, snap));
		CHECK(!rcu_seq_done_exact_val(s, snap));
		if (rcu_seq_state(s) == 0) {
			/* Idle: the next GP (start, end) satisfies it. */
			unsigned long st = rcu_seq_startval(s), en = rcu_seq_endval(st);

			CHECK_EQ(rcu_seq_state(st), 1);
			CHECK(!rcu_seq_done_val(st, snap));
			CHECK(rcu_seq_done_val(en, snap));
			CHECK_EQ(en, snap);
		} else {
			/* In progress: the current GP's end is not enough. */
			unsigned long en = rcu_seq_endval(s);

			CHECK(!rcu_seq_done_val(en, snap));
			CHECK(rcu_seq_done_val(rcu_seq_endval(rcu_seq_startval(en)), snap));
		}
		/* Far in the future is done; far enough behind (wrap) is done
		 * for the exact variant only. */
		CHECK(rcu_seq_done_val(snap + 1000, snap));
		CHECK(rcu_seq_done_exact_val(snap - 1000, snap));
		CHECK(!rcu_seq_done_val(snap - 1000, snap));
	}
}

int main(void)
{
	check_around(0);
	check_around(RCU_SEQ_INIT);
	check_around(ULONG_MAX - 40);          /* snapshots wrap past zero */
	check_around(ULONG_MAX / 2 - 20);      /* signed midpoint */
	/* Counter and state split. */
	CHECK_EQ(rcu_seq_ctr(0x10UL), 4);
	CHECK_EQ(rcu_seq_state(0x11UL), 1);
	CHECK(ULONG_CMP_LT(ULONG_MAX, 0UL));
	CHECK(ULONG_CMP_GE(3UL, ULONG_MAX - 3));
	printf("test_seq: OK\n");
	return 0;
}
