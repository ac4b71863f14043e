/* SPDX-License-Identifier: MIT */
/* The peer list, --peers parsing and the deferred-free callback (peers.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "peers.h"

static const struct peer_ops *const peer_all[PEER_MAX] = {
	[PEER_TREERCU] = &peer_treercu,
	[PEER_LU_MEMB] = &peer_lu_memb,
	[PEER_TREERCU_QSBR] = &peer_treercu_qsbr,
	[PEER_LU_QSBR] = &peer_lu_qsbr,
	[PEER_LU_MB] = &peer_lu_mb,
	[PEER_LU_BP] = &peer_lu_bp,
	[PEER_CK] = &peer_ck,
	[PEER_TREERCU_TASK] = &peer_treercu_task,
};

const struct peer_ops *peer_get(int i)
{
	return peer_all[i];
}

static unsigned long freed_count, freed_target;
static uint64_t freed_target_ns;

void peer_free_cb(void *obj)
{
	/* Relaxed: a count read after the peer's barrier, which orders every
	 * callback before its return (each library's barrier pairs with its
	 * callback thread); the samplers only need an estimate. */
	unsigned long n = __atomic_add_fetch(&freed_count, 1, __ATOMIC_RELAXED);

	/* Relaxed: the mark is read after the peer's barrier (above). */
	if (n == __atomic_load_n(&freed_target, __ATOMIC_RELAXED))
		__atomic_store_n(&freed_target_ns, now_ns(), __ATOMIC_RELAXED);
	*(volatile uint64_t *)((char *)obj + PEER_HEAD) = PEER_POISON;
	free(obj);
}

unsigned long peer_freed(void)
{
	return __atomic_load_n(&freed_count, __ATOMIC_RELAXED);
}

void peer_freed_mark(unsigned long target)
{
	__atomic_store_n(&freed_target_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&freed_target, target, __ATOMIC_RELAXED);
}

uint64_t peer_freed_mark_ns(void)
{
	return __atomic_load_n(&freed_target_ns, __ATOMIC_RELAXED);
}

static int peer_by_id(const char *s, size_t len)
{
	for (int i = 0; i < PEER_MAX; i++)
		if (strlen(peer_all[i]->id) == len && !strncmp(peer_all[i]->id, s, len))
			return i;
	return -1;
}

/* One "peer not available" line per peer and program run. */
static void peer_note_missing(int i)
{
	static bool said[PEER_MAX];

	if (said[i])
		return;
	said[i] = true;
	printf("peer %s not available: %s\n", peer_all[i]->name, peer_all[i]->missing);
}

int peer_select(const char *list, bool sel[PEER_MAX], const char *prog)
{
	const char *s = list ? list : "all";

	memset(sel, 0, PEER_MAX * sizeof(*sel));
	if (!strcmp(s, "all")) {
		for (int i = 0; i < PEER_MAX; i++)
			sel[i] = true;
	} else {
		while (*s) {
			size_t len = strcspn(s, ",");
			int i = peer_by_id(s, len);

			if (i < 0) {
				fprintf(stderr, "%s: --peers: unknown peer '%.*s' (known: %s, or all)\n",
					prog, (int)len, s, PEER_IDS);
				return -1;
			}
			sel[i] = true;
			s += len + (s[len] == ',');
		}
	}
	for (int i = 0; i < PEER_MAX; i++) {
		if (sel[i] && peer_all[i]->missing) {
			peer_note_missing(i);
			sel[i] = false;
		}
	}
	return 0;
}

int peer_check_heads(void)
{
	for (int i = 0; i < PEER_MAX; i++) {
		if (peer_all[i]->missing || peer_all[i]->head_size() <= PEER_HEAD)
			continue;
		fprintf(stderr, "peers: %s's deferred-free head is %zu bytes, more than %d\n",
			peer_all[i]->name, peer_all[i]->head_size(), PEER_HEAD);
		return -1;
	}
	return 0;
}

uint64_t peer_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t peer_other_cpu_ns(pthread_t t)
{
	struct timespec ts;
	clockid_t id;

	if (pthread_getcpuclockid(t, &id) || clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t peer_process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double peer_unfreed_cap(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	double kb = 4.0 * 1024 * 1024, n;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	n = kb * 1024 / 8 / 64;
	return n > 4e6 ? 4e6 : n;
}

int peer_list(const bool sel[PEER_MAX], int idx[PEER_MAX])
{
	int n = 0;

	for (int i = 0; i < PEER_MAX; i++)
		if (sel[i])
			idx[n++] = i;
	return n;
}
