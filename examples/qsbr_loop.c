/* SPDX-License-Identifier: MIT */
/*
 * A QSBR event loop: worker threads that handle events from a queue and
 * look up a shared routing table for each one.  A QSBR thread's
 * rcu_read_lock() costs nothing; instead it reports a quiescent state once
 * per loop iteration (rcu_quiescent_state(), where it holds no reference),
 * and goes offline (rcu_thread_offline()) while it sleeps waiting for
 * events, so that a sleeping worker never holds up a grace period.
 *
 * The main thread publishes new routing tables and frees the old ones after
 * synchronize_rcu().  Each event checks the table it used (the table's
 * entries are derived from its generation, and freed tables are
 * overwritten first); at the end every event has been handled once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>

#define WORKERS  2
#define EVENTS   20000
#define ROUTES   16
#define TABLES   200

struct routes {
	unsigned long generation;
	unsigned long next_hop[ROUTES];    /* generation * 100 + route */
};

static struct routes *routes;          /* read by the workers */

/* The event queue: a ring under a mutex; workers sleep on the condvar. */
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;
static unsigned long queue[EVENTS];
static unsigned long q_head, q_tail;
static int q_closed;
static atomic_ulong handled;

static struct routes *routes_new(unsigned long generation)
{
	struct routes *r = malloc(sizeof(*r));

	if (!r) {
		fprintf(stderr, "qsbr_loop: out of memory\n");
		exit(1);
	}
	r->generation = generation;
	for (int i = 0; i < ROUTES; i++)
		r->next_hop[i] = generation * 100 + (unsigned long)i;
	return r;
}

static void handle(unsigned long event)
{
	/* Online QSBR thread: this read-side section only moves a counter. */
	rcu_read_lock();
	struct routes *r = rcu_dereference(routes);
	unsigned long hop = r->next_hop[event % ROUTES];

	if (hop != r->generation * 100 + event % ROUTES) {
		fprintf(stderr, "qsbr_loop: event %lu saw a freed routing table\n", event);
		exit(1);
	}
	rcu_read_unlock();
	atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}

/* Next event, or 0 when the queue is closed and empty.  Sleeps offline. */
static unsigned long next_event(void)
{
	unsigned long ev = 0;

	pthread_mutex_lock(&qlock);
	if (q_head == q_tail && !q_closed) {
		rcu_thread_offline();   /* holds no reference while it sleeps */
		while (q_head == q_tail && !q_closed)
			pthread_cond_wait(&qcond, &qlock);
		rcu_thread_online();
	}
	if (q_head != q_tail)
		ev = queue[q_head++ % EVENTS];
	pthread_mutex_unlock(&qlock);
	return ev;
}

static void *worker(void *arg)
{
	unsigned long ev;

	trcu_thread_qsbr();             /* this thread is a QSBR reader, online */
	while ((ev = next_event()) != 0) {
		handle(ev);
		rcu_quiescent_state();  /* no reference held across iterations */
	}
	rcu_unregister_thread();        /* offline for good */
	return arg;
}

static void post(unsigned long event)
{
	pthread_mutex_lock(&qlock);
	queue[q_tail++ % EVENTS] = event;
	pthread_cond_signal(&qcond);
	pthread_mutex_unlock(&qlock);
}

int main(void)
{
	pthread_t t[WORKERS];
	unsigned long generation = 1;

	routes = routes_new(generation);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (unsigned long ev = 1; ev <= EVENTS; ev++) {
		post(ev);
		if (ev % (EVENTS / TABLES) == 0) {
			struct routes *old = rcu_xchg_pointer(&routes, routes_new(++generation));

			synchronize_rcu();      /* every worker passed a quiescent state */
			memset(old, 0xff, sizeof(*old));
			free(old);
		}
	}
	pthread_mutex_lock(&qlock);
	q_closed = 1;
	pthread_cond_broadcast(&qcond);
	pthread_mutex_unlock(&qlock);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);

	if (atomic_load(&handled) != EVENTS) {
		fprintf(stderr, "qsbr_loop: %lu events handled, expected %d\n",
			atomic_load(&handled), EVENTS);
		return 1;
	}
	free(routes);
	printf("qsbr_loop: ok (%d events, %lu routing tables)\n", EVENTS, generation);
	return 0;
}
