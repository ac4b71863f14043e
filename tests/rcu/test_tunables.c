/* SPDX-License-Identifier: MIT */
/*
 * Tunables: environment variables read at init and the runtime API; bad
 * values (not a number, out of range, unknown name or profile) are refused
 * with a message naming the variable and its accepted range, and the old
 * value stays in force.  The kernel profile computes the kernel's FQS delays.
 */
#define CHECK_WANT_DEATH
#include <errno.h>
#include <stdlib.h>

#include <treercu/rcu.h>
#include "check.h"
#include "internal.h"

static long get(const char *name)
{
	long v = -1;

	CHECK_EQ(trcu_get_tunable(name, &v), 0);
	return v;
}

static void env_not_number(void)
{
	setenv("TREERCU_FANOUT", "abc", 1);
	CHECK_EQ(get("fanout"), 64);   /* refused: default kept */
}

static void env_out_of_range(void)
{
	setenv("TREERCU_FANOUT_LEAF", "0", 1);
	CHECK_EQ(get("fanout_leaf"), 64);   /* refused: default kept */
}

static void env_good(void)
{
	setenv("TREERCU_STALL_TIMEOUT_MS", "5000", 1);
	setenv("TREERCU_PROFILE", "kernel", 1);
	CHECK_EQ(get("stall_timeout_ms"), 5000);
	CHECK_EQ(get("drive_from_caller"), 0);
	CHECK_EQ(get("sr_drive_max"), 1);
	fprintf(stderr, "env ok\n");
}

static void env_bad_profile(void)
{
	setenv("TREERCU_PROFILE", "fast", 1);
	CHECK_EQ(get("drive_from_caller"), 1);
}

static void api_out_of_range(void)
{
	CHECK_EQ(trcu_set_tunable("fanout", 65), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(get("fanout"), 64);
}

static void api_unknown(void)
{
	CHECK_EQ(trcu_set_tunable("fanot", 4), -1);
	CHECK_EQ(errno, EINVAL);
}

static void api_bad_profile(void)
{
	CHECK_EQ(trcu_set_profile("fast"), -1);
}

int main(void)
{
	expect_message(env_not_number,
		       "TREERCU_FANOUT=\"abc\" refused: not a decimal number (accepted: 2..64)");
	expect_message(env_out_of_range,
		       "TREERCU_FANOUT_LEAF=0 refused: out of range (accepted: 1..64)");
	expect_message(env_good, "env ok");
	expect_message(env_bad_profile,
		       "TREERCU_PROFILE=\"fast\" refused: unknown profile (accepted: treercu, kernel)");
	expect_message(api_out_of_range, "fanout=65 refused: out of range (accepted: 2..64)");
	expect_message(api_unknown, "unknown tunable \"fanot\"");
	expect_message(api_bad_profile, "unknown profile \"fast\"");

	/* The CPUs this process may use (affinity), as the library counts. */
	long ncpu = tun_usable_cpus();
	bool small = ncpu > 0 && ncpu <= 16;

	/* Profiles: the kernel's FQS delays at HZ=1000 are 3 jiffies here. */
	CHECK_EQ(trcu_set_profile("kernel"), 0);
	CHECK_EQ(get("tick_us"), 1000);
	CHECK_EQ(get("jiffies_till_first_fqs"), 3);
	CHECK_EQ(get("jiffies_till_next_fqs"), 3);
	CHECK_EQ(get("drive_from_caller"), 0);
	/* synchronize_rcu()'s path by CPU count: the waiter list on <= 16 CPUs
	 * in both profiles; above, wait_rcu_gp() (kernel) or the futex. */
	CHECK_EQ(get("normal_wake_from_gp"), small ? 1 : 0);
	CHECK_EQ(get("sr_wake_max"), 5);
	synchronize_rcu();   /* works under the kernel profile */
	CHECK_EQ(trcu_set_profile("treercu"), 0);
	CHECK_EQ(get("jiffies_till_first_fqs"), 0);
	CHECK_EQ(get("drive_from_caller"), 1);
	CHECK_EQ(get("normal_wake_from_gp"), small ? 1 : 2);
	CHECK_EQ(get("sr_wake_max"), 64);
	CHECK_EQ(trcu_set_tunable("early_report", 0), 0);
	CHECK_EQ(get("early_report"), 0);
	synchronize_rcu();
	CHECK_EQ(trcu_get_tunable("nope", NULL), -1);
	printf("test_tunables: OK\n");
	return 0;
}
