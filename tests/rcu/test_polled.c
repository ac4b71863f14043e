/* SPDX-License-Identifier: MIT */
/*
 * Polled grace periods: a cookie is not done until a full GP has elapsed
 * after it was taken; start_poll makes the GP happen by itself;
 * cond_synchronize_rcu() waits only when needed; the completed constant is
 * always done; full cookies are satisfied by normal or expedited GPs; all of
 * it across the gp_seq wrap (gp_seq starts 300 GPs before wrapping).  The
 * expedited polled calls: their cookie completes with nobody else driving,
 * a reader still holds it, and cond_ waits for it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"

static struct holder reader;

int main(void)
{
	struct trcu_gp_oldstate a, b, c;
	unsigned long ck, ck2, seq0 = trcu_gp_seq();

	rcu_register_thread();
	CHECK(poll_state_synchronize_rcu(get_completed_synchronize_rcu()));
	CHECK_EQ(get_completed_synchronize_rcu(), RCU_GET_STATE_COMPLETED);
	get_completed_synchronize_rcu_full(&a);
	CHECK(poll_state_synchronize_rcu_full(&a));

	/* Across the wrap: gp_seq starts 300 GPs before ULONG_MAX. */
	for (int i = 0; i < 400; i++) {
		ck = get_state_synchronize_rcu();
		CHECK(!poll_state_synchronize_rcu(ck));
		synchronize_rcu();
		CHECK(poll_state_synchronize_rcu(ck));
		cond_synchronize_rcu(ck);  /* returns at once */
	}
	CHECK(trcu_gp_seq() < seq0);  /* wrapped */

	/* start_poll drives a GP without anyone calling synchronize_rcu. */
	ck = start_poll_synchronize_rcu();
	for (int i = 0; i < 100000 && !poll_state_synchronize_rcu(ck); i++)
		usleep(10);
	CHECK(poll_state_synchronize_rcu(ck));
	start_poll_synchronize_rcu_full(&b);
	for (int i = 0; i < 100000 && !poll_state_synchronize_rcu_full(&b); i++)
		usleep(10);
	CHECK(poll_state_synchronize_rcu_full(&b));

	/* A reader in a section keeps a started cookie from completing. */
	holder_start(&reader);
	ck = start_poll_synchronize_rcu();
	get_state_synchronize_rcu_full(&c);
	usleep(20000);
	CHECK(!poll_state_synchronize_rcu(ck));
	CHECK(!poll_state_synchronize_rcu_full(&c));
	holder_release(&reader);
	cond_synchronize_rcu(ck);
	CHECK(poll_state_synchronize_rcu(ck));
	cond_synchronize_rcu_full(&c);
	CHECK(poll_state_synchronize_rcu_full(&c));

	/* An expedited GP satisfies a full cookie. */
	get_state_synchronize_rcu_full(&c);
	CHECK(!poll_state_synchronize_rcu_full(&c));
	synchronize_rcu_expedited();
	CHECK(poll_state_synchronize_rcu_full(&c));
	/* Polled expedited: completes by itself, held by a reader. */
	ck = start_poll_synchronize_rcu_expedited();
	for (int i = 0; i < 100000 && !poll_state_synchronize_rcu(ck); i++)
		usleep(10);
	CHECK(poll_state_synchronize_rcu(ck));
	start_poll_synchronize_rcu_expedited_full(&b);
	for (int i = 0; i < 100000 && !poll_state_synchronize_rcu_full(&b); i++)
		usleep(10);
	CHECK(poll_state_synchronize_rcu_full(&b));
	holder_start(&reader);
	ck = start_poll_synchronize_rcu_expedited();
	start_poll_synchronize_rcu_expedited_full(&c);
	usleep(20000);
	CHECK(!poll_state_synchronize_rcu(ck));
	CHECK(!poll_state_synchronize_rcu_full(&c));
	holder_release(&reader);
	cond_synchronize_rcu_expedited(ck);
	CHECK(poll_state_synchronize_rcu(ck));
	cond_synchronize_rcu_expedited_full(&c);
	CHECK(poll_state_synchronize_rcu_full(&c));
	cond_synchronize_rcu_expedited(get_completed_synchronize_rcu());

	/* Same state compares. */
	get_state_synchronize_rcu_full(&a);
	get_state_synchronize_rcu_full(&b);
	CHECK(trcu_same_state_synchronize_rcu_full(&a, &b));
	ck2 = get_state_synchronize_rcu();
	CHECK(same_state_synchronize_rcu(ck2, get_state_synchronize_rcu()));
	synchronize_rcu();
	CHECK(ck2 != get_state_synchronize_rcu());
	CHECK(!same_state_synchronize_rcu(ck2, get_state_synchronize_rcu()));
	rcu_unregister_thread();
	printf("test_polled: OK\n");
	return 0;
}
