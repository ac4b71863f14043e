/* SPDX-License-Identifier: MIT */
/*
 * Concurrency Kit's ck_epoch as a peer (peers.h), when the tool was built
 * with it (Debian libck-dev; TREERCU_TOOL_HAVE_CK); otherwise the peer is
 * listed as not available and every benchmark leaves it out.
 *
 * One global epoch; each thread owns a record (recycled from exited
 * threads).  ck_epoch has no callback thread: ck_epoch_call() queues on the
 * caller's record and ck_epoch_poll() (after every call here, the usage its
 * documentation describes for a writer) dispatches what two epoch advances
 * made safe, on the calling thread.  barrier() is ck_epoch_barrier(): every
 * callback of the thread's record runs before it returns.
 */
#include <stdlib.h>

#include "common.h"
#include "peers.h"

#ifdef TREERCU_TOOL_HAVE_CK
#include <pthread.h>

#include <ck_epoch.h>

static ck_epoch_t ck_global;
static pthread_once_t ck_once = PTHREAD_ONCE_INIT;
static __thread ck_epoch_record_t *ck_rec;

static void ck_global_init(void)
{
	ck_epoch_init(&ck_global);
}

static void ck_register(void)
{
	ck_epoch_record_t *r;

	pthread_once(&ck_once, ck_global_init);
	if (ck_rec)
		return;
	r = ck_epoch_recycle(&ck_global, NULL);
	if (!r) {
		r = aligned_alloc(64, (sizeof(*r) + 63) / 64 * 64);
		if (!r) {
			fprintf(stderr, "peers: ck_epoch: out of memory for a record\n");
			exit(1);
		}
		ck_epoch_register(&ck_global, r, NULL);
	}
	ck_rec = r;
}

/* A record's queued callbacks would be lost with it: run them first. */
static void ck_unregister(void)
{
	if (!ck_rec)
		return;
	ck_epoch_barrier(ck_rec);
	ck_epoch_unregister(ck_rec);
	ck_rec = NULL;
}

static void ck_nothing(void)
{
}

static void ck_read_lock(void)
{
	ck_epoch_begin(ck_rec, NULL);
}

static void ck_read_unlock(void)
{
	(void)ck_epoch_end(ck_rec, NULL);
}

static __attribute__((noinline)) void ck_refscale(unsigned long nbatch)
{
	ck_epoch_record_t *r = ck_rec;

	REFSCALE_LOOP(nbatch, ck_epoch_begin(r, NULL), (void)ck_epoch_end(r, NULL), (void)0);
}

static __attribute__((noinline)) unsigned long ck_busy(const int *stop)
{
	ck_epoch_record_t *r = ck_rec;
	unsigned long n = 0;

	BUSY_READER_LOOP(stop, ck_epoch_begin(r, NULL), (void)ck_epoch_end(r, NULL), n);
	return n;
}

static void ck_synchronize(void)
{
	ck_epoch_synchronize(ck_rec);
}

static void ck_free_cb(ck_epoch_entry_t *e)
{
	peer_free_cb(e);
}

static void ck_retire(void *obj)
{
	ck_epoch_call(ck_rec, (ck_epoch_entry_t *)obj, ck_free_cb);
	(void)ck_epoch_poll(ck_rec);
}

static void ck_barrier(void)
{
	ck_epoch_barrier(ck_rec);
}

static size_t ck_head_size(void)
{
	return sizeof(ck_epoch_entry_t);
}

const struct peer_ops peer_ck = {
	.name = "ck_epoch", .id = "ck", .qsbr = false,
	.thread_register = ck_register, .thread_unregister = ck_unregister,
	.thread_offline = ck_nothing, .thread_online = ck_nothing,
	.read_lock = ck_read_lock, .read_unlock = ck_read_unlock,
	.quiescent_state = ck_nothing, .refscale_loop = ck_refscale, .busy_reader = ck_busy,
	.synchronize = ck_synchronize, .retire = ck_retire, .barrier = ck_barrier,
	.head_size = ck_head_size,
};

#else

const struct peer_ops peer_ck = {
	.name = "ck_epoch", .id = "ck",
	.missing = "the tool was built without Concurrency Kit (Debian: libck-dev)",
};

#endif
