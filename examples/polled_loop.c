/* SPDX-License-Identifier: MIT */
/*
 * The polled grace-period API in a single-threaded event loop that must
 * never block: an object taken out of reach gets a cookie from
 * start_poll_synchronize_rcu() (which also starts a grace period if none
 * is under way) and waits on a list; each turn of the loop frees the
 * objects whose cookie poll_state_synchronize_rcu() says has completed.
 * The loop never calls synchronize_rcu().
 *
 * It checks what the API promises: while a reader that began before the
 * cookie stays in its section, the cookie does not complete (the reader's
 * object is not freed under it); once the reader leaves, it completes
 * without anyone blocking; and every retired object is freed.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <treercu/rcu.h>

#define OBJECTS 3000

struct item {
	unsigned long id;
	unsigned long check;            /* ~id while alive */
	unsigned long cookie;           /* grace period that must end first */
	struct item *next;              /* on the retired list */
};

static struct item *live;               /* what readers see */
static atomic_int stage;                /* the held reader's handshake */
static atomic_bool stop;

/* Retired objects, oldest first: cookies complete in order. */
static struct item *retired_head, **retired_tail = &retired_head;
static long nr_retired, nr_freed;

static void retire(struct item *it)
{
	it->cookie = start_poll_synchronize_rcu();
	it->next = NULL;
	*retired_tail = it;
	retired_tail = &it->next;
	nr_retired++;
}

/* One turn's reclaim: free what no reader can hold any more. */
static void reclaim(void)
{
	while (retired_head && poll_state_synchronize_rcu(retired_head->cookie)) {
		struct item *it = retired_head;

		retired_head = it->next;
		if (!retired_head)
			retired_tail = &retired_head;
		memset(it, 0xff, sizeof(*it));
		free(it);
		nr_freed++;
	}
}

static struct item *item_new(unsigned long id)
{
	struct item *it = malloc(sizeof(*it));

	if (!it) {
		fprintf(stderr, "polled_loop: out of memory\n");
		exit(1);
	}
	it->id = id;
	it->check = ~id;
	return it;
}

static void check_item(const struct item *it, const char *who)
{
	if (it->check != ~it->id) {
		fprintf(stderr, "polled_loop: %s saw a freed item\n", who);
		exit(1);
	}
}

/* A reader that enters a section, says so, and stays until told. */
static void *held_reader(void *arg)
{
	rcu_read_lock();
	struct item *it = rcu_dereference(live);

	atomic_store(&stage, 1);
	while (atomic_load(&stage) != 2)
		usleep(100);
	check_item(it, "the held reader");
	rcu_read_unlock();
	return arg;
}

static void *reader(void *arg)
{
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rcu_read_lock();
		check_item(rcu_dereference(live), "a reader");
		rcu_read_unlock();
	}
	return arg;
}

static void timeout(int sig)
{
	(void)sig;
	static const char msg[] = "polled_loop: no progress for 60 s\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {}
	_exit(1);
}

int main(void)
{
	pthread_t held, rd;
	struct item *old;
	unsigned long cookie;

	signal(SIGALRM, timeout);
	alarm(60);
	live = item_new(0);

	/* 1. A section that began before the cookie holds it back. */
	pthread_create(&held, NULL, held_reader, NULL);
	while (atomic_load(&stage) != 1)
		usleep(100);
	old = rcu_xchg_pointer(&live, item_new(1));
	retire(old);
	cookie = old->cookie;
	for (int i = 0; i < 50; i++) {      /* 50 turns of the loop, 1 ms apart */
		reclaim();
		usleep(1000);
	}
	if (nr_freed != 0 || poll_state_synchronize_rcu(cookie)) {
		fprintf(stderr, "polled_loop: grace period ended under a reader\n");
		return 1;
	}
	atomic_store(&stage, 2);            /* the reader may leave */
	pthread_join(held, NULL);

	/* 2. The event loop: replace, retire, reclaim; never block. */
	pthread_create(&rd, NULL, reader, NULL);
	for (unsigned long id = 2; id <= OBJECTS; id++) {
		retire(rcu_xchg_pointer(&live, item_new(id)));
		reclaim();
		if (id % 64 == 0)
			usleep(200);            /* the loop's other work */
	}
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	pthread_join(rd, NULL);
	while (retired_head) {              /* the loop idles until it is all freed */
		reclaim();
		usleep(1000);
	}
	if (nr_freed != nr_retired) {
		fprintf(stderr, "polled_loop: %ld freed of %ld retired\n", nr_freed, nr_retired);
		return 1;
	}
	free(live);
	printf("polled_loop: ok (%ld objects retired and freed without blocking)\n", nr_freed);
	return 0;
}
