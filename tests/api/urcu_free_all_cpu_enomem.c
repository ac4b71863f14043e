/* SPDX-License-Identifier: MIT */
/*
 * free_all_cpu_call_rcu_data() out of memory (liburcu's API only): every
 * per-CPU handle is still unpublished and freed, after a grace period, and
 * callbacks queued through them have run; nothing aborts (liburcu warns and
 * returns there).  calloc() is wrapped (ld --wrap) and fails while
 * `fail_calloc` is set.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <urcu.h>
#include <urcu/call-rcu.h>

static _Atomic bool fail_calloc;
static _Atomic long refused;

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

void *__wrap_calloc(size_t n, size_t size)
{
	if (atomic_load(&fail_calloc)) {
		atomic_fetch_add(&refused, 1);
		return NULL;
	}
	return __real_calloc(n, size);
}

static _Atomic int ran;

static void cb(struct rcu_head *h)
{
	(void)h;
	atomic_fetch_add(&ran, 1);
}

static struct rcu_head heads[4];

int main(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	rcu_register_thread();
	if (create_all_cpu_call_rcu_data(0)) {
		fprintf(stderr, "create_all_cpu_call_rcu_data() failed\n");
		return 1;
	}
	for (int i = 0; i < 4; i++)
		call_rcu(&heads[i], cb);
	atomic_store(&fail_calloc, true);
	free_all_cpu_call_rcu_data();
	atomic_store(&fail_calloc, false);
	for (long cpu = 0; cpu < ncpu; cpu++)
		if (get_cpu_call_rcu_data((int)cpu)) {
			fprintf(stderr, "CPU %ld's handle still published\n", cpu);
			return 1;
		}
	rcu_barrier();
	rcu_unregister_thread();
	if (atomic_load(&ran) != 4 || atomic_load(&refused) == 0) {
		fprintf(stderr, "ran %d of 4 callbacks, %ld allocations refused\n",
			atomic_load(&ran), atomic_load(&refused));
		return 1;
	}
	printf("free_all_cpu_call_rcu_data() out of memory: ok (%ld refused)\n",
	       atomic_load(&refused));
	return 0;
}
