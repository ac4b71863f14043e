/* SPDX-License-Identifier: MIT */
/* A thread that sits inside an RCU read-side section until released: what
 * tests use to prove that a grace period waits for a pre-existing reader. */
#ifndef TREERCU_TEST_HOLDER_H
#define TREERCU_TEST_HOLDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <treercu/rcu.h>

struct holder {
	pthread_t thread;
	_Atomic int held, release;
};

static void *holder_fn(void *arg)
{
	struct holder *h = arg;

	rcu_read_lock();
	atomic_store(&h->held, 1);
	while (!atomic_load(&h->release))
		usleep(100);
	rcu_read_unlock();
	return NULL;
}

/* Start the holder and return once it is inside its section. */
static inline void holder_start(struct holder *h)
{
	atomic_store(&h->held, 0);
	atomic_store(&h->release, 0);
	pthread_create(&h->thread, NULL, holder_fn, h);
	while (!atomic_load(&h->held))
		usleep(100);
}

/* A thread that calls synchronize_rcu() once, then adds 1 to the
 * _Atomic int its argument points to. */
static inline void *sync_caller_fn(void *returned)
{
	synchronize_rcu();
	atomic_fetch_add((_Atomic int *)returned, 1);
	return NULL;
}

/* Let it leave its section and join it. */
static inline void holder_release(struct holder *h)
{
	atomic_store(&h->release, 1);
	pthread_join(h->thread, NULL);
}

/* A thread in read-side sections of section_ms back to back, 1 ms apart,
 * until ->stop: grace periods end, slowly.  ->in is set once it has entered
 * its first section. */
struct slow_reader {
	pthread_t thread;
	int section_ms;
	_Atomic int in, stop;
};

static void *slow_reader_fn(void *arg)
{
	struct slow_reader *s = arg;

	while (!atomic_load(&s->stop)) {
		rcu_read_lock();
		atomic_store(&s->in, 1);
		usleep((useconds_t)s->section_ms * 1000);
		rcu_read_unlock();
		usleep(1000);
	}
	return NULL;
}

/* Start it and return once it is inside its first section. */
static inline void slow_reader_start(struct slow_reader *s, int section_ms)
{
	s->section_ms = section_ms;
	atomic_store(&s->in, 0);
	atomic_store(&s->stop, 0);
	pthread_create(&s->thread, NULL, slow_reader_fn, s);
	while (!atomic_load(&s->in))
		usleep(1000);
}

static inline void slow_reader_stop(struct slow_reader *s)
{
	atomic_store(&s->stop, 1);
	pthread_join(s->thread, NULL);
}

#endif
