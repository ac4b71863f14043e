/* SPDX-License-Identifier: MIT */
/*
 * A configuration object that readers use without locks, replaced whole by
 * an updater with rcu_xchg_pointer() and freed with call_rcu().
 *
 * Readers see either the old or the new configuration, never a mix: each
 * configuration carries a checksum of its fields, and a reader that ever
 * saw a torn or freed one would fail the check (and ASan would name the
 * use after free).  Generations only move forward.  At the end
 * rcu_barrier() has run every callback, so every old configuration has
 * been freed exactly once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/rcu.h>

#define READERS  2
#define UPDATES  2000

struct config {
	unsigned long generation;
	int timeout_ms;
	int max_conns;
	char name[32];
	unsigned long checksum;        /* of the fields above */
	struct rcu_head rh;            /* for call_rcu() */
};

static struct config *current_config;  /* published with rcu_xchg_pointer() */
static atomic_long configs_freed;
static atomic_bool stop;

static unsigned long config_sum(const struct config *c)
{
	unsigned long s = c->generation * 31 + (unsigned long)c->timeout_ms * 7 +
			  (unsigned long)c->max_conns;

	for (size_t i = 0; i < sizeof(c->name) && c->name[i]; i++)
		s = s * 131 + (unsigned char)c->name[i];
	return s;
}

static struct config *config_new(unsigned long generation)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c) {
		fprintf(stderr, "config_swap: out of memory\n");
		exit(1);
	}
	c->generation = generation;
	c->timeout_ms = (int)(100 + generation % 900);
	c->max_conns = (int)(generation * 3 % 1000);
	snprintf(c->name, sizeof(c->name), "config-%lu", generation);
	c->checksum = config_sum(c);
	return c;
}

/* Runs after a grace period, on a callback thread: no reader can still
 * hold the configuration. */
static void config_free(struct rcu_head *rh)
{
	struct config *c = (struct config *)((char *)rh - offsetof(struct config, rh));

	memset(c, 0xa5, offsetof(struct config, rh));  /* a late reader would see garbage */
	free(c);
	atomic_fetch_add_explicit(&configs_freed, 1, memory_order_relaxed);
}

/* Replace the configuration; the old one goes after a grace period. */
static void config_publish(struct config *n)
{
	struct config *old = rcu_xchg_pointer(&current_config, n);

	if (old)
		call_rcu(&old->rh, config_free);
}

static void *reader(void *arg)
{
	unsigned long last = 0, reads = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		struct config *c;

		rcu_read_lock();
		c = rcu_dereference(current_config);
		if (c->checksum != config_sum(c) || c->generation < last) {
			fprintf(stderr, "config_swap: reader saw a torn or stale config "
				"(generation %lu after %lu)\n", c->generation, last);
			exit(1);
		}
		last = c->generation;
		rcu_read_unlock();
		reads++;
	}
	*(unsigned long *)arg = reads;
	return NULL;
}

int main(void)
{
	pthread_t t[READERS];
	unsigned long reads[READERS];

	config_publish(config_new(1));          /* before any reader starts */
	for (int i = 0; i < READERS; i++)
		pthread_create(&t[i], NULL, reader, &reads[i]);
	for (unsigned long g = 2; g <= UPDATES; g++) {
		config_publish(config_new(g));
		if (g % 256 == 0)
			usleep(100);            /* let the readers run */
	}
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);

	rcu_barrier();          /* every config_free() queued so far has run */
	if (atomic_load(&configs_freed) != UPDATES - 1) {
		fprintf(stderr, "config_swap: %ld configs freed, expected %d\n",
			atomic_load(&configs_freed), UPDATES - 1);
		return 1;
	}
	free(rcu_xchg_pointer(&current_config, NULL));  /* no reader left */
	printf("config_swap: ok (%d configs, %lu + %lu reads)\n", UPDATES, reads[0], reads[1]);
	return 0;
}
