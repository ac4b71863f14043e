/* SPDX-License-Identifier: MIT */
/*
 * The workqueue's tunables are rows of the one tunables table: read from
 * their TREERCU_WQ_* variables by the same parser as the core's, reachable
 * by name through trcu_set_tunable()/trcu_get_tunable(), and refused with
 * the same messages (not a decimal number, out of range, unknown name).
 * The trcu_wq_set_*() setters go through the same table: what one sets the
 * other reads, and their refusals name the setter and the row.
 */
#define CHECK_WANT_DEATH
#include <errno.h>
#include <stdlib.h>

#include <treercu/rcu.h>
#include <treercu/workqueue.h>

#include "check.h"

static long get(const char *name)
{
	long v = -12345;

	CHECK_EQ(trcu_get_tunable(name, &v), 0);
	return v;
}

/* Children: the environment is read at first use, once per process. */
static void env_not_decimal(void)
{
	setenv("TREERCU_WQ_STALL_US", "abc", 1);
	trcu_wq_nr_cpus();
	CHECK_EQ(get("wq_stall_us"), 2000);   /* the default stays */
}

static void env_out_of_range(void)
{
	setenv("TREERCU_WQ_MAX_WORKERS", "5000", 1);
	trcu_wq_nr_cpus();
	CHECK_EQ(get("wq_max_workers"), 0);
}

static void env_unknown_scope(void)
{
	setenv("TREERCU_WQ_AFFINITY_SCOPE", "bogus", 1);
	trcu_wq_nr_cpus();
	CHECK_EQ(get("wq_affinity_scope"), TRCU_WQ_AFFN_CACHE_SHARD);
}

static void env_values(void)
{
	setenv("TREERCU_WQ_AFFINITY_SCOPE", "numa", 1);
	setenv("TREERCU_WQ_IDLE_TIMEOUT_MS", "777", 1);
	setenv("TREERCU_WQ_WAKE_UNDER_LOCK", "1", 1);
	setenv("TREERCU_WQ_CACHE_SHARD_SIZE", "3", 1);
	trcu_wq_nr_cpus();
	CHECK_EQ(get("wq_affinity_scope"), TRCU_WQ_AFFN_NUMA);
	CHECK_EQ(get("wq_idle_timeout_ms"), 777);
	CHECK_EQ(get("wq_wake_under_lock"), 1);
	CHECK(trcu_wq_get_wake_under_lock());
	CHECK_EQ(get("wq_cache_shard_size"), 3);
	fprintf(stderr, "env values read\n");
}

static void set_out_of_range(void)
{
	errno = 0;
	CHECK_EQ(trcu_set_tunable("wq_stall_us", 99), -1);
	CHECK_EQ(errno, EINVAL);
}

static void setter_out_of_range(void)
{
	CHECK_EQ(trcu_wq_set_idle_timeout_ms(0), -EINVAL);
}

static void set_unknown(void)
{
	CHECK_EQ(trcu_set_tunable("wq_no_such_thing", 1), -1);
}

int main(void)
{
	expect_message(env_not_decimal,
		       "TREERCU_WQ_STALL_US=\"abc\" refused: not a decimal number (accepted: 100..10000000)");
	expect_message(env_out_of_range,
		       "TREERCU_WQ_MAX_WORKERS=5000 refused: out of range (accepted: 0..4096)");
	expect_message(env_unknown_scope,
		       "TREERCU_WQ_AFFINITY_SCOPE=\"bogus\" refused: unknown name (accepted: cpu, smt, "
		       "cache, cache_shard, numa, system, or 1..6)");
	expect_message(env_values, "env values read");
	expect_message(set_out_of_range,
		       "trcu_set_tunable: wq_stall_us=99 refused: out of range (accepted: 100..10000000)");
	expect_message(setter_out_of_range,
		       "trcu_wq_set_idle_timeout_ms: wq_idle_timeout_ms=0 refused: out of range "
		       "(accepted: 1..3600000)");
	expect_message(set_unknown, "trcu_set_tunable: unknown tunable \"wq_no_such_thing\"");

	/* Defaults, then one path sets and the other reads. */
	CHECK_EQ(get("wq_idle_timeout_ms"), 10000);
	CHECK_EQ(get("wq_stall_us"), 2000);
	CHECK_EQ(get("wq_max_workers"), 0);
	CHECK_EQ(get("wq_wake_under_lock"), 0);
	CHECK_EQ(get("wq_cache_shard_size"), 8);
	CHECK_EQ(get("wq_affinity_scope"), TRCU_WQ_AFFN_CACHE_SHARD);
	CHECK_EQ(trcu_wq_set_stall_us(500), 0);
	CHECK_EQ(get("wq_stall_us"), 500);
	CHECK_EQ(trcu_set_tunable("wq_max_workers", 8), 0);
	CHECK_EQ(get("wq_max_workers"), 8);
	trcu_wq_set_wake_under_lock(true);
	CHECK_EQ(get("wq_wake_under_lock"), 1);
	CHECK_EQ(trcu_set_tunable("wq_wake_under_lock", 0), 0);
	CHECK(!trcu_wq_get_wake_under_lock());
	CHECK_EQ(trcu_wq_set_default_scope(TRCU_WQ_AFFN_CACHE), 0);
	CHECK_EQ(get("wq_affinity_scope"), TRCU_WQ_AFFN_CACHE);
	CHECK_EQ(trcu_wq_set_default_scope(TRCU_WQ_AFFN_DFL), -EINVAL);
	CHECK_EQ(get("wq_affinity_scope"), TRCU_WQ_AFFN_CACHE);
	/* A profile sets the workqueue's rows too (to the same defaults). */
	CHECK_EQ(trcu_set_profile("kernel"), 0);
	CHECK_EQ(get("wq_stall_us"), 2000);
	CHECK_EQ(get("wq_affinity_scope"), TRCU_WQ_AFFN_CACHE_SHARD);
	CHECK_EQ(trcu_set_profile("treercu"), 0);
	printf("test_wq_tunables_in_shared_table: OK\n");
	return 0;
}
