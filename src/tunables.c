/* SPDX-License-Identifier: MIT */
/*
 * Tunables: one table, read from TREERCU_<NAME> environment variables at init
 * and settable at run time.  Bad values are refused with a message naming the
 * variable and the accepted range; the previous value stays in force.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <sched.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define T(n) #n, offsetof(struct tun_values, n), NULL, NULL
/* Row with names: the value v is also accepted as names[v]. */
#define TN(n, nm) #n, offsetof(struct tun_values, n), NULL, nm

static const char *const sync_path_names[] = {
	[RCU_SYNC_WAKEME] = "wakeme",
	[RCU_SYNC_LIST] = "list",
	[RCU_SYNC_FUTEX] = "futex",
};

static const struct tunable tunables[] = {
	{ T(early_report),           0, 1,         1,     1,     false },
	{ T(drive_from_caller),      0, 1,         1,     0,     false },
	{ T(fanout),                 2, RCU_FANOUT_MAX, 64, 64,  true },
	{ T(fanout_leaf),            1, RCU_FANOUT_MAX, 64, 16,  true },
	{ T(tick_us),                1, 1000000,   1000,  1000,  false },
	{ T(jiffies_till_first_fqs), 0, 300000,    0,     -1,    false },
	{ T(jiffies_till_next_fqs),  1, 300000,    1,     -1,    false },
	{ T(fqs_spin_us),            0, 1000000,   20,    0,     false },
	{ T(stall_timeout_ms),       10, 3600000,  21000, 21000, false },
	{ T(lazy),                   0, 1,         0,     0,     false },
	{ T(lazy_flush_ms),          1, 3600000,   10000, 10000, false },
	{ T(blimit),                 1, 1000000,   100,   10,    false },
	{ T(qhimark),                1, 100000000, 10000, 10000, false },
	{ T(qlowmark),               0, 100000000, 100,   100,   false },
	{ T(rcu_resched_us),         1, 1000000,   3000,  3000,  false },
	{ T(cb_max_pending),         100, 1000000000, 32768, 65536, false },
	{ T(nocb_threads),           0, 256,       0,     0,     false },
	{ T(rcu_free_drain_ms),      1, 3600000,   5000,  5000,  false },
	{ TN(normal_wake_from_gp, sync_path_names), RCU_SYNC_WAKEME, RCU_SYNC_FUTEX, -1, -1, false },
	{ T(nocb_defer_us),          0, 100000,    200,   0,     false },
	{ T(sr_wake_max),            1, 1000000,   64,    5,     false },
	{ T(sr_drive_max),           1, 1000000,   -1,    1,     false },
	{ T(sr_spin_us),             0, 1000000,   20,    0,     false },
	{ T(sr_drive_alone),         0, 1,         1,     0,     false },
	{ T(exit_wait_ms),           0, 3600000,   1000,  1000,  false },
	{ T(cb_pushback_ms),         0, 3600000,   0,     0,     false },
	{ T(per_worker_blocked_lists), 0, 1,       1,     1,     false },
	{ T(nocb_batch_us),          0, 10000000,  4000,  1000,  false },
	{ T(nocb_batch_min),         0, 100000000, 16,    16,    false },
};
#undef T
#define NR_TUNABLES (sizeof(tunables) / sizeof(tunables[0]))

/* The rows a layer above the core registered (tun_register()): written by
 * its constructor before any thread exists, read-only after. */
static const struct tunable *tun_upper;
static size_t tun_nr_upper;
/* tun_init() has run (under the core's init once): a row registered later
 * reads its environment variable itself. */
static bool tun_env_done;

static _Atomic long *tun_field(const struct tunable *t)
{
	if (t->field)
		return t->field;
	return (_Atomic long *)((char *)&rcu_state.tun + t->off);
}

static const struct tunable *tun_find(const char *name)
{
	for (size_t i = 0; i < NR_TUNABLES; i++)
		if (!strcmp(tunables[i].name, name))
			return &tunables[i];
	for (size_t i = 0; i < tun_nr_upper; i++)
		if (!strcmp(tun_upper[i].name, name))
			return &tun_upper[i];
	return NULL;
}

/*
 * The kernel's FQS delay at HZ=1000: RCU_JIFFIES_TILL_FORCE_QS (3 at
 * HZ > 500) plus nr_cpu_ids / RCU_JIFFIES_FQS_DIV (256), as
 * rcu_init_geometry() computes it.
 */
static long kernel_fqs_jiffies(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	return 3 + (ncpu > 0 ? ncpu : 1) / 256;
}

long tun_usable_cpus(void)
{
	cpu_set_t set;

	/* The CPUs the process may run on (cpusets, affinity: a container
	 * allowed 2 CPUs of a 64-CPU host behaves like 2), read from the main
	 * thread (tid == pid), not from whichever thread initialises us. */
	if (!sched_getaffinity(getpid(), sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	return sysconf(_SC_NPROCESSORS_ONLN);
}

/*
 * synchronize_rcu()'s path by CPU count, as the kernel's
 * rcu_normal_wake_from_gp: the waiter list on 16 CPUs or fewer; above, the
 * kernel's wait_rcu_gp() or treercu's GP-end futex by profile
 * (docs/decisions.md, "synchronize_rcu() is woken from the grace period").
 */
static long sync_path_for_cpus(enum tun_profile p)
{
	long ncpu = tun_usable_cpus();

	if (ncpu > 0 && ncpu <= 16)
		return RCU_SYNC_LIST;
	return p == TUN_PROFILE_KERNEL ? RCU_SYNC_WAKEME : RCU_SYNC_FUTEX;
}

/*
 * How many synchronize_rcu() callers may be waiting, a list-path caller
 * included, for it still to drive its own GP: eight per CPU.  Callers that
 * poll their node (sr_spin_us) are served by whichever of them holds
 * gp_mutex without a wake-up, as liburcu's callers take turns as leader;
 * beyond it callers queue for CPUs, and the GP kthread driving GP after GP
 * and waking each batch does better (docs/decisions.md, "Callers poll and
 * drive").
 */
#define SR_DRIVE_PER_CPU 8

static long sr_drive_max_for_cpus(void)
{
	long ncpu = tun_usable_cpus();

	return (ncpu > 0 ? ncpu : 1) * SR_DRIVE_PER_CPU;
}

static long computed_default(const struct tunable *t, enum tun_profile p)
{
	if (t->off == offsetof(struct tun_values, normal_wake_from_gp))
		return sync_path_for_cpus(p);
	if (t->off == offsetof(struct tun_values, sr_drive_max))
		return sr_drive_max_for_cpus();
	return kernel_fqs_jiffies();
}

/* A tunable's value in profile p (a fixed one: the fan-outs). */
static long profile_value(const char *name, int p)
{
	const struct tunable *t = tun_find(name);

	return p == TUN_PROFILE_KERNEL ? t->kdef : t->def;
}

static void tun_apply_row(const struct tunable *t, enum tun_profile p)
{
	long v = p == TUN_PROFILE_KERNEL ? t->kdef : t->def;

	if (v < 0)
		v = computed_default(t, p);
	atomic_store_explicit(tun_field(t), v, memory_order_relaxed);
}

void tun_apply_profile(enum tun_profile p)
{
	for (size_t i = 0; i < NR_TUNABLES; i++)
		tun_apply_row(&tunables[i], p);
	for (size_t i = 0; i < tun_nr_upper; i++)
		tun_apply_row(&tun_upper[i], p);
	atomic_store_explicit(&rcu_state.tun.profile, p, memory_order_relaxed);
}

/*
 * Is text a decimal number as docs/tunables.md defines it: an optional '-'
 * and digits, no leading zero (010 is neither 8 nor, silently, 10), no
 * spaces, no '+', no base prefix?  strtol(..., 0) alone would take 010 as
 * 8 and 0x10 as 16, and skip leading spaces (tests/rcu/test_tunable_syntax.c).
 */
static bool is_decimal(const char *text)
{
	const char *p = text + (*text == '-');

	if (!*p || (p[0] == '0' && p[1]))
		return false;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* Parse text as a decimal long in [lo, hi]; on error print why, naming the
 * variable and the accepted range, and return -1 (*out untouched). */
long tun_parse_long(const char *name, const char *text, long lo, long hi, long *out)
{
	long v;

	if (!is_decimal(text)) {
		sys_warn("%s=\"%s\" refused: not a decimal number (accepted: %ld..%ld)",
			  name, text, lo, hi);
		return -1;
	}
	errno = 0;
	v = strtol(text, NULL, 10);
	if (errno == ERANGE || v < lo || v > hi) {
		sys_warn("%s=%s refused: out of range (accepted: %ld..%ld)",
			  name, text, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* A boolean environment variable: unset reads 0; "0" or "1" read as
 * themselves; anything else is refused with a message and reads 0. */
bool tun_env_bool(const char *name)
{
	const char *text = getenv(name);
	long v = 0;

	if (text && tun_parse_long(name, text, 0, 1, &v))
		v = 0;
	return v != 0;
}

static void env_name(char *buf, size_t len, const char *name)
{
	size_t i = 0;

	snprintf(buf, len, "TREERCU_%s", name);
	for (i = 0; buf[i]; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
}

static int profile_from_name(const char *name)
{
	if (!strcmp(name, "treercu"))
		return TUN_PROFILE_TREERCU;
	if (!strcmp(name, "kernel"))
		return TUN_PROFILE_KERNEL;
	return -1;
}

/* A row with names: the value whose name text is, or -1. */
static long name_value(const struct tunable *t, const char *text)
{
	for (long v = t->lo; v <= t->hi; v++)
		if (t->names[v] && !strcmp(t->names[v], text))
			return v;
	return -1;
}

/* "cpu, smt, ..." : the names a row accepts, for its refusal message. */
static void names_list(const struct tunable *t, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (long v = t->lo; v <= t->hi && n < len; v++)
		if (t->names[v])
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", t->names[v]);
}

/* A row's environment variable, if set: a decimal number, or one of the
 * row's names; anything else is refused and the value stays. */
static void tun_read_env(const struct tunable *t)
{
	char env[64], names[160];
	const char *text;
	long v;

	env_name(env, sizeof(env), t->name);
	text = getenv(env);
	if (!text)
		return;
	if (t->names && (v = name_value(t, text)) >= 0) {
		atomic_store_explicit(tun_field(t), v, memory_order_relaxed);
		return;
	}
	if (t->names && (text[0] < '0' || text[0] > '9') && text[0] != '-') {
		names_list(t, names, sizeof(names));
		sys_warn("%s=\"%s\" refused: unknown name (accepted: %s, or %ld..%ld)",
			  env, text, names, t->lo, t->hi);
		return;
	}
	if (!tun_parse_long(env, text, t->lo, t->hi, &v))
		atomic_store_explicit(tun_field(t), v, memory_order_relaxed);
}

void tun_register(const struct tunable *rows, size_t n)
{
	if (tun_upper && tun_upper != rows)
		sys_die("tun_register: a second layer's tunables");
	tun_upper = rows;
	tun_nr_upper = n;
	if (!tun_env_done)
		return;   /* tun_init() reads them */
	for (size_t i = 0; i < n; i++) {
		tun_apply_row(&rows[i], (enum tun_profile)atomic_load_explicit(
				      &rcu_state.tun.profile, memory_order_relaxed));
		tun_read_env(&rows[i]);
	}
}

/* Called once at init: profile first, then individual overrides. */
void tun_init(void)
{
	const char *prof = getenv("TREERCU_PROFILE");
	int p = TUN_PROFILE_TREERCU;

	if (prof && (p = profile_from_name(prof)) < 0) {
		sys_warn("TREERCU_PROFILE=\"%s\" refused: unknown profile (accepted: treercu, kernel)",
			  prof);
		p = TUN_PROFILE_TREERCU;
	}
	tun_apply_profile((enum tun_profile)p);
	for (size_t i = 0; i < NR_TUNABLES; i++)
		tun_read_env(&tunables[i]);
	for (size_t i = 0; i < tun_nr_upper; i++)
		tun_read_env(&tun_upper[i]);
	tun_env_done = true;
}

/*
 * Prepare the tree for a fan-out change (installed at the next GP start)
 * before the value takes effect, under ofl_lock so that registrations grow
 * trees of the new shape: on ENOMEM the tunable and the tree stay as they
 * were, and no GP start has to allocate.
 */
static int rcu_tree_reshape(long fanout, long fanout_leaf)
{
	int ret = rcu_tree_prepare_locked(rcu_slot_hwm(), (int)fanout, (int)fanout_leaf);

	if (ret)
		sys_warn("fanout=%ld fanout_leaf=%ld refused: cannot build the rcu_node tree "
			  "for %d threads: %s", fanout, fanout_leaf, rcu_slot_hwm(),
			  strerror(errno));
	return ret;
}

static int set_fanout(const struct tunable *t, long value)
{
	bool leaf = t->off == offsetof(struct tun_values, fanout_leaf);
	int ret;

	rcu_busy_enter();   /* ofl_lock: see rcu_busy_enter() */
	pthread_mutex_lock(&rcu_state.ofl_lock);
	ret = rcu_tree_reshape(leaf ? TUN(fanout) : value, leaf ? value : TUN(fanout_leaf));
	if (!ret)
		atomic_store_explicit(tun_field(t), value, memory_order_relaxed);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	rcu_busy_exit();
	return ret;
}

int trcu_set_tunable(const char *name, long value)
{
	return tun_set("trcu_set_tunable", name, value);
}

int tun_set(const char *caller, const char *name, long value)
{
	const struct tunable *t;

	rcu_init();
	t = name ? tun_find(name) : NULL;
	if (!t) {
		sys_warn("%s: unknown tunable \"%s\" (see docs/tunables.md)", caller,
			  name ? name : "(null)");
		errno = EINVAL;
		return -1;
	}
	if (value < t->lo || value > t->hi) {
		sys_warn("%s: %s=%ld refused: out of range (accepted: %ld..%ld)",
			  caller, t->name, value, t->lo, t->hi);
		errno = EINVAL;
		return -1;
	}
	if (t->reshape)
		return set_fanout(t, value);
	atomic_store_explicit(tun_field(t), value, memory_order_relaxed);
	return 0;
}

int trcu_get_tunable(const char *name, long *value)
{
	const struct tunable *t;

	rcu_init();
	t = name ? tun_find(name) : NULL;
	if (!t || !value) {
		errno = EINVAL;
		return -1;
	}
	*value = atomic_load_explicit(tun_field(t), memory_order_relaxed);
	return 0;
}

int trcu_set_profile(const char *name)
{
	int p;

	rcu_init();
	p = name ? profile_from_name(name) : -1;
	if (p < 0) {
		sys_warn("trcu_set_profile: unknown profile \"%s\" (accepted: treercu, kernel)",
			  name ? name : "(null)");
		errno = EINVAL;
		return -1;
	}
	rcu_busy_enter();   /* ofl_lock: see rcu_busy_enter() */
	pthread_mutex_lock(&rcu_state.ofl_lock);
	if (profile_value("fanout", p) != TUN(fanout) ||
	    profile_value("fanout_leaf", p) != TUN(fanout_leaf)) {
		if (rcu_tree_reshape(profile_value("fanout", p), profile_value("fanout_leaf", p))) {
			pthread_mutex_unlock(&rcu_state.ofl_lock);
			rcu_busy_exit();
			return -1;   /* errno ENOMEM, nothing changed */
		}
	}
	tun_apply_profile((enum tun_profile)p);
	pthread_mutex_unlock(&rcu_state.ofl_lock);
	rcu_busy_exit();
	return 0;
}
