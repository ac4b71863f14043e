/* SPDX-License-Identifier: MIT */
/*
 * treercu workqueue: the CPU topology.  Owns wq_state.topo: the machine's
 * CPUs, SMT siblings, last-level caches and NUMA nodes read from sysfs, or a
 * virtual machine described by TREERCU_WQ_TOPOLOGY / trcu_wq_set_topology();
 * the pods each affinity scope groups CPUs into; and the small API that
 * answers questions about them (CPU count, pods, scope names, pool ids,
 * the calling thread's CPU hint).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wq_internal.h"

/* ---- Topology: real (sysfs) or described by TREERCU_WQ_TOPOLOGY ------------ */

const char *const affn_names[TRCU_WQ_AFFN_NR] = {
	[TRCU_WQ_AFFN_DFL] = "default",
	[TRCU_WQ_AFFN_CPU] = "cpu",
	[TRCU_WQ_AFFN_SMT] = "smt",
	[TRCU_WQ_AFFN_CACHE] = "cache",
	[TRCU_WQ_AFFN_CACHE_SHARD] = "cache_shard",
	[TRCU_WQ_AFFN_NUMA] = "numa",
	[TRCU_WQ_AFFN_SYSTEM] = "system",
};

#define TOPO_FORM "cpus=N[,smt=S][,llc=L][,numa=M][,shard=K] or \"real\""

void topo_free(struct wq_topo *t)
{
	free(t->core_of);
	free(t->llc_of);
	free(t->node_of);
	for (int s = 0; s < TRCU_WQ_AFFN_NR; s++) {
		free(t->pt[s].cpu_pod);
		free(t->pt[s].pod_node);
		free(t->pt[s].pod_cpus);
	}
	memset(t, 0, sizeof(*t));
}

/* First CPU number of a sysfs cpulist ("0-3,8"), or -1. */
static int read_first_cpu(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int read_int_file(const char *path, int dfl)
{
	return read_first_cpu(path) < 0 ? dfl : read_first_cpu(path);
}

/* The last-level cache of @cpu: the first CPU sharing the highest-level
 * data/unified cache, or -1 when sysfs does not say. */
static int real_llc_of(int cpu)
{
	char path[160], type[32];
	int best_level = -1, best = -1;

	for (int i = 0; i < 16; i++) {
		FILE *f;
		int level;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/type",
			 cpu, i);
		f = fopen(path, "r");
		if (!f)
			break;
		if (!fgets(type, sizeof(type), f))
			type[0] = '\0';
		fclose(f);
		if (!strncmp(type, "Instruction", 11))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/level",
			 cpu, i);
		level = read_int_file(path, -1);
		if (level <= best_level)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, i);
		best = read_first_cpu(path);
		best_level = level;
	}
	return best;
}

static int real_node_of(int cpu)
{
	char path[96];
	DIR *d;
	struct dirent *e;
	int node = 0;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, "node", 4) && isdigit((unsigned char)e->d_name[4])) {
			node = atoi(e->d_name + 4);
			break;
		}
	}
	closedir(d);
	return node;
}

static int topo_alloc(struct wq_topo *t, int n)
{
	t->nr_cpus = n;
	t->core_of = calloc((size_t)n, sizeof(int));
	t->llc_of = calloc((size_t)n, sizeof(int));
	t->node_of = calloc((size_t)n, sizeof(int));
	return t->core_of && t->llc_of && t->node_of ? 0 : -ENOMEM;
}

static int topo_read_files(struct wq_topo *t);

/* fopen()/opendir() are cancellation points, and wq_state.mutex is held:
 * none may act in there (internal.h). */
static int topo_read_real(struct wq_topo *t)
{
	int cs = sys_cancel_disable();
	int ret = topo_read_files(t);

	sys_cancel_restore(cs);
	return ret;
}

static int topo_read_files(struct wq_topo *t)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	char path[128];

	if (n < 1)
		n = 1;
	if (n > WQ_MAX_CPUS)
		n = WQ_MAX_CPUS;
	if (topo_alloc(t, (int)n))
		return -ENOMEM;
	for (int c = 0; c < n; c++) {
		int v;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		v = read_first_cpu(path);
		t->core_of[c] = v >= 0 && v < n ? v : c;
		v = real_llc_of(c);
		t->llc_of[c] = v >= 0 && v < n ? v : 0;
		t->node_of[c] = real_node_of(c);
	}
	t->override = false;
	return 0;
}

/* Parses "key=value" fields of the override; 0 or -EINVAL with a message
 * naming the variable (@what) and the accepted form. */
static int topo_parse(struct wq_topo *t, const char *what, const char *spec, int dfl_shard)
{
	long cpus = 0, smt = 1, llc = 0, numa = 1, shard = dfl_shard;
	char buf[256], *save = NULL, *tok;

	if (strlen(spec) >= sizeof(buf))
		goto bad_form;
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		long v, *dst;

		if (!eq)
			goto bad_form;
		*eq = '\0';
		if (!strcmp(tok, "cpus"))
			dst = &cpus;
		else if (!strcmp(tok, "smt"))
			dst = &smt;
		else if (!strcmp(tok, "llc"))
			dst = &llc;
		else if (!strcmp(tok, "numa"))
			dst = &numa;
		else if (!strcmp(tok, "shard"))
			dst = &shard;
		else
			goto bad_form;
		errno = 0;
		v = strtol(eq + 1, &end, 10);
		if (end == eq + 1 || *end || errno || v < 1 || v > WQ_MAX_CPUS) {
			sys_warn("%s=\"%s\" refused: %s must be a number in 1..%d (accepted: %s)",
				  what, spec, tok, WQ_MAX_CPUS, TOPO_FORM);
			return -EINVAL;
		}
		*dst = v;
	}
	if (!cpus) {
		sys_warn("%s=\"%s\" refused: cpus=N is required (accepted: %s)", what, spec,
			  TOPO_FORM);
		return -EINVAL;
	}
	if (!llc)
		llc = cpus;
	if (cpus % smt || llc % smt || cpus % llc || (cpus / llc) % numa) {
		sys_warn("%s=\"%s\" refused: smt must divide llc, llc must divide cpus and "
			  "numa must divide the number of LLCs (cpus/llc) (accepted: %s)",
			  what, spec, TOPO_FORM);
		return -EINVAL;
	}
	if (topo_alloc(t, (int)cpus))
		return -ENOMEM;
	for (int c = 0; c < cpus; c++) {
		long nllc = cpus / llc;

		t->core_of[c] = (int)(c - c % smt);
		t->llc_of[c] = (int)(c - c % llc);
		t->node_of[c] = (int)((c / llc) / (nllc / numa));
	}
	t->override = true;
	t->shard_size = (int)shard;
	snprintf(t->desc, sizeof(t->desc), "override cpus=%ld,smt=%ld,llc=%ld,numa=%ld,shard=%ld",
		 cpus, smt, llc, numa, shard);
	return 0;

bad_form:
	sys_warn("%s=\"%s\" refused: not of the form %s", what, spec, TOPO_FORM);
	return -EINVAL;
}

/*
 * Shard ids within one LLC, the kernel's cache_shard rule: count the LLC's
 * cores, use max(1, round(cores / shard_size)) shards, give the first
 * (cores % shards) shards one extra core, and walk the CPUs in order,
 * advancing at each new core so SMT siblings never straddle shards.
 */
static void topo_shards(const struct wq_topo *t, int llc, int *shard_of)
{
	int nr_cores = 0, nr_shards, per, rem, pos = -1, shard = 0;
	int *seen = calloc((size_t)t->nr_cpus, sizeof(int));

	if (!seen)
		return;  /* leaves every CPU in shard 0 */
	for (int c = 0; c < t->nr_cpus; c++)
		if (t->llc_of[c] == llc && !seen[t->core_of[c]]++)
			nr_cores++;
	nr_shards = (nr_cores + t->shard_size / 2) / t->shard_size;
	if (nr_shards < 1)
		nr_shards = 1;
	per = nr_cores / nr_shards;
	rem = nr_cores % nr_shards;
	memset(seen, 0, (size_t)t->nr_cpus * sizeof(int));
	for (int c = 0; c < t->nr_cpus; c++) {
		if (t->llc_of[c] != llc)
			continue;
		if (!seen[t->core_of[c]]++) {
			pos++;
			if (pos < rem * (per + 1))
				shard = pos / (per + 1);
			else
				shard = rem + (pos - rem * (per + 1)) / per;
		}
		shard_of[c] = shard;
	}
	free(seen);
}

/* Groups CPUs by key[] into pods numbered in order of first appearance. */
static int pod_type_build(struct wq_topo *t, enum trcu_wq_affn s, const long *key)
{
	struct wq_pod_type *pt = &t->pt[s];
	int n = t->nr_cpus;

	pt->cpu_pod = calloc((size_t)n, sizeof(int));
	pt->pod_node = calloc((size_t)n, sizeof(int));
	pt->pod_cpus = calloc((size_t)n, sizeof(struct wq_cpumask));
	if (!pt->cpu_pod || !pt->pod_node || !pt->pod_cpus)
		return -ENOMEM;
	pt->nr_pods = 0;
	for (int c = 0; c < n; c++) {
		int p = -1;

		for (int d = 0; d < c; d++) {
			if (key[d] == key[c]) {
				p = pt->cpu_pod[d];
				break;
			}
		}
		if (p < 0) {
			p = pt->nr_pods++;
			pt->pod_node[p] = t->node_of[c];
		}
		pt->cpu_pod[c] = p;
		mask_set(&pt->pod_cpus[p], c);
	}
	return 0;
}

static int topo_build_pods(struct wq_topo *t)
{
	int n = t->nr_cpus;
	long *key = calloc((size_t)n, sizeof(long));
	int *shard = calloc((size_t)n, sizeof(int));
	int ret = -ENOMEM;

	if (!key || !shard)
		goto out;
	for (int c = 0; c < n; c++) {
		bool first = true;

		for (int d = 0; d < c && first; d++)
			first = t->llc_of[d] != t->llc_of[c];
		if (first)
			topo_shards(t, t->llc_of[c], shard);
	}
	for (enum trcu_wq_affn s = TRCU_WQ_AFFN_CPU; s < TRCU_WQ_AFFN_NR; s++) {
		for (int c = 0; c < n; c++) {
			switch (s) {
			case TRCU_WQ_AFFN_CPU: key[c] = c; break;
			case TRCU_WQ_AFFN_SMT: key[c] = t->core_of[c]; break;
			case TRCU_WQ_AFFN_CACHE: key[c] = t->llc_of[c]; break;
			case TRCU_WQ_AFFN_CACHE_SHARD:
				key[c] = (long)t->llc_of[c] * WQ_MAX_CPUS + shard[c];
				break;
			case TRCU_WQ_AFFN_NUMA: key[c] = t->node_of[c]; break;
			default: key[c] = 0; break;
			}
		}
		if (pod_type_build(t, s, key))
			goto out;
	}
	if (!t->override) {
		snprintf(t->desc, sizeof(t->desc),
			 "real: %d cpus, %d cores, %d LLCs, %d NUMA nodes, %d cache shards (shard=%d)",
			 n, t->pt[TRCU_WQ_AFFN_SMT].nr_pods, t->pt[TRCU_WQ_AFFN_CACHE].nr_pods,
			 t->pt[TRCU_WQ_AFFN_NUMA].nr_pods, t->pt[TRCU_WQ_AFFN_CACHE_SHARD].nr_pods,
			 t->shard_size);
	}
	ret = 0;
out:
	free(key);
	free(shard);
	return ret;
}

/*
 * Builds wq_state.topo (wq_state.mutex held): 0, or -ENOMEM with nothing
 * built (the next call tries again; the callers report ENOMEM).
 */
int topo_init_locked(void)
{
	struct wq_topo *t = &wq_state.topo;
	const char *env = getenv("TREERCU_WQ_TOPOLOGY");
	long shard = WQ_TUN(wq_cache_shard_size);
	int ret = -1;

	if (wq_state.topo_set)
		return 0;
	if (wq_state.topo_spec) {
		ret = topo_parse(t, "trcu_wq_set_topology", wq_state.topo_spec, (int)shard);
	} else if (env && *env && strcmp(env, "real")) {
		ret = topo_parse(t, "TREERCU_WQ_TOPOLOGY", env, (int)shard);
		if (ret == -EINVAL)
			sys_warn("TREERCU_WQ_TOPOLOGY ignored: using the machine's topology");
	}
	if (ret == -EINVAL || ret == -1) {
		topo_free(t);
		ret = topo_read_real(t);
		t->shard_size = (int)shard;
	}
	if (ret || topo_build_pods(t)) {
		topo_free(t);
		return -ENOMEM;
	}
	wq_state.topo_set = true;
	return 0;
}


/* ---- Topology, tunables, statistics: the small API -------------------------------------- */

/* The topology is built: 0, or -ENOMEM. */
static int wq_topo_ready(void)
{
	int ret;

	pthread_mutex_lock(&wq_state.mutex);
	ret = wq_init_locked();
	pthread_mutex_unlock(&wq_state.mutex);
	return ret;
}

static int __trcu_wq_set_topology(const char *spec)
{
	struct wq_topo probe = { 0 };
	char *copy = NULL;

	if (spec && *spec && strcmp(spec, "real")) {
		if (topo_parse(&probe, "trcu_wq_set_topology", spec, 8)) {
			topo_free(&probe);
			return -EINVAL;
		}
		topo_free(&probe);
		copy = strdup(spec);
		if (!copy)
			return -ENOMEM;
	}
	pthread_mutex_lock(&wq_state.mutex);
	if (wq_state.wqs) {
		pthread_mutex_unlock(&wq_state.mutex);
		free(copy);
		sys_warn("trcu_wq_set_topology: workqueues exist; destroy them (or call "
			  "trcu_wq_shutdown()) first (refused)");
		return -EBUSY;
	}
	free(wq_state.topo_spec);
	wq_state.topo_spec = copy;
	if (wq_state.topo_set) {
		topo_free(&wq_state.topo);
		wq_state.topo_set = false;
	}
	pthread_mutex_unlock(&wq_state.mutex);
	return 0;   /* built at the next use (ENOMEM is reported there) */
}

int trcu_wq_set_topology(const char *spec)
{
	int cs = sys_cancel_disable();
	int ret = __trcu_wq_set_topology(spec);

	sys_cancel_restore(cs);
	return ret;
}

int trcu_wq_topology_describe(char *buf, size_t len)
{
	int n;

	if (wq_topo_ready())
		return -ENOMEM;
	pthread_mutex_lock(&wq_state.mutex);
	n = snprintf(buf, len, "%s", wq_state.topo.desc);
	pthread_mutex_unlock(&wq_state.mutex);
	return n;
}

int trcu_wq_nr_cpus(void)
{
	if (wq_topo_ready())
		return -ENOMEM;
	return wq_state.topo.nr_cpus;
}

int trcu_wq_nr_pods(enum trcu_wq_affn scope)
{
	if (wq_topo_ready())
		return -ENOMEM;
	if (scope == TRCU_WQ_AFFN_DFL)
		scope = (enum trcu_wq_affn)WQ_TUN(wq_affinity_scope);
	if ((int)scope <= TRCU_WQ_AFFN_DFL || scope >= TRCU_WQ_AFFN_NR)
		return -EINVAL;
	return wq_state.topo.pt[scope].nr_pods;
}

int trcu_wq_cpu_pod(enum trcu_wq_affn scope, int cpu)
{
	if (wq_topo_ready())
		return -ENOMEM;
	if (scope == TRCU_WQ_AFFN_DFL)
		scope = (enum trcu_wq_affn)WQ_TUN(wq_affinity_scope);
	if ((int)scope <= TRCU_WQ_AFFN_DFL || scope >= TRCU_WQ_AFFN_NR || cpu < 0 ||
	    cpu >= wq_state.topo.nr_cpus)
		return -EINVAL;
	return wq_state.topo.pt[scope].cpu_pod[cpu];
}

const char *trcu_wq_affn_name(enum trcu_wq_affn scope)
{
	if ((int)scope < 0 || scope >= TRCU_WQ_AFFN_NR)
		return "invalid";
	return affn_names[scope];
}

int trcu_wq_affn_from_name(const char *name)
{
	for (int i = 0; name && i < TRCU_WQ_AFFN_NR; i++)
		if (!strcmp(name, affn_names[i]))
			return i;
	return -EINVAL;
}

int wq_pool_id(struct trcu_workqueue *wq, int cpu)
{
	if (wq_check(wq, "wq_pool_id"))
		return -EINVAL;
	if (cpu < 0 || cpu >= wq_state.topo.nr_cpus)
		return -EINVAL;
	return wq_cpu_pwq(wq, cpu)->pool->id;
}

int trcu_wq_set_thread_cpu(int cpu)
{
	int n = trcu_wq_nr_cpus();

	if (n < 0)
		return n;   /* -ENOMEM */
	if (cpu < -1 || cpu >= n) {
		sys_warn("trcu_wq_set_thread_cpu: CPU %d out of range (-1, 0..%d)", cpu, n - 1);
		return -EINVAL;
	}
	thread_cpu_hint = cpu;
	return 0;
}
