/* SPDX-License-Identifier: MIT */
/*
 * libtreercu-urcu: the out-of-line part of treercu's liburcu-compatible API
 * (include/treercu/urcu/).  Only treercu's public API (<treercu/rcu.h>) is
 * used, and src/tsan.h's inline ThreadSanitizer hand-offs.  Every flavor maps onto treercu's one RCU domain; the flavors differ
 * only in registration and quiescent states (QSBR).
 */
#define _GNU_SOURCE
#include <urcu/flavor.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Header-only: ThreadSanitizer hand-offs (weak references, no internal symbol). */
#include "../../../src/tsan.h"

/* The library's own prefix, as every treercu message. */
static void compat_die(const char *msg)
{
	fprintf(stderr, "treercu: fatal: %s\n", msg);
	abort();
}

/* ---- Read side, as functions (for the flavor structures) ---- */

void trcu_urcu_read_lock(void)
{
	trcu_read_lock();
}

void trcu_urcu_read_unlock(void)
{
	rcu_tsan_section_end();   /* this file is built without ThreadSanitizer */
	trcu_read_unlock();
}

int trcu_urcu_read_ongoing(void)
{
	return trcu_read_lock_held();
}

/* A non-QSBR flavor's quiescent state, offline and online. */
void trcu_urcu_nop(void)
{
}

void trcu_urcu_qsbr_quiescent_state(void)
{
	rcu_tsan_section_end();   /* as trcu_urcu_read_unlock() */
	trcu_quiescent_state();
}

void trcu_urcu_qsbr_thread_offline(void)
{
	trcu_thread_offline();
}

void trcu_urcu_qsbr_thread_online(void)
{
	trcu_thread_online();
}

/* liburcu's registration returns nothing and dies when it cannot register;
 * so does this one, with a message naming the cause. */
void trcu_urcu_register_thread(void)
{
	if (trcu_register_thread())
		compat_die("rcu_register_thread(): cannot register the thread: out of memory");
}

/* The QSBR flavor's registration: a treercu QSBR thread, online.  A thread
 * registered already as a QSBR thread stays as it is (liburcu asserts
 * there; treercu's registration is idempotent). */
void trcu_urcu_qsbr_register_thread(void)
{
	if (!trcu_read_lock_held())
		trcu_thread_qsbr();
}

void trcu_urcu_synchronize_rcu(void)
{
	trcu_synchronize_rcu();
}

/* ---- call_rcu() and call_rcu_data ---- */

/*
 * struct rcu_head is laid out as struct trcu_head (next, func) and the
 * callback takes a pointer to the same address: treercu runs it with the
 * head it was given.  The function-pointer conversion goes through
 * void (*)(void), the type C compilers accept as "any function".
 */
void trcu_urcu_call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head))
{
	_Static_assert(sizeof(struct rcu_head) == sizeof(struct trcu_head),
		       "struct rcu_head must be laid out as struct trcu_head");
	trcu_call_rcu_hurry((struct trcu_head *)(void *)head,
			    (void (*)(struct trcu_head *))(void (*)(void))func);
}

/*
 * A call_rcu_data is a handle: callbacks queued by a thread or CPU that has
 * one run on treercu's callback-offload threads like any other (treercu has
 * no per-caller worker to hand them to).  The handle keeps what it was
 * created with, so that the API's bookkeeping (which thread or CPU has
 * which handle, freeing) behaves as liburcu's.
 */
struct call_rcu_data {
	unsigned long flags;
	int cpu_affinity;
};

static struct call_rcu_data default_crd = { 0, -1 };
static __thread struct call_rcu_data *thread_crdp;

/* Per-CPU handles: an array of nr_cpus pointers, allocated once by the first
 * set_cpu_call_rcu_data() and never freed (a reader may hold it).  Published
 * with a release store, read with an acquire load (pairs below). */
static struct call_rcu_data **per_cpu_crdp;
static int nr_cpus;
static pthread_mutex_t per_cpu_lock = PTHREAD_MUTEX_INITIALIZER;

static int cpus_configured(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n > 0 ? (int)n : 1;
}

struct call_rcu_data *trcu_urcu_create_call_rcu_data(unsigned long flags, int cpu_affinity)
{
	struct call_rcu_data *crdp = malloc(sizeof(*crdp));

	if (!crdp)
		compat_die("create_call_rcu_data(): out of memory");
	crdp->flags = flags;
	crdp->cpu_affinity = cpu_affinity;
	return crdp;
}

/* liburcu: the default handle is never freed; NULL is ignored.  Callbacks
 * already queued through the handle are treercu's and run regardless. */
void trcu_urcu_call_rcu_data_free(struct call_rcu_data *crdp)
{
	if (!crdp || crdp == &default_crd)
		return;
	free(crdp);
}

struct call_rcu_data *trcu_urcu_get_default_call_rcu_data(void)
{
	return &default_crd;
}

struct call_rcu_data *trcu_urcu_get_cpu_call_rcu_data(int cpu)
{
	/* Pairs with the release store in trcu_urcu_set_cpu_call_rcu_data(). */
	struct call_rcu_data **pcpu = __atomic_load_n(&per_cpu_crdp, __ATOMIC_ACQUIRE);

	if (!pcpu || cpu < 0 || cpu >= nr_cpus)
		return NULL;
	return __atomic_load_n(&pcpu[cpu], __ATOMIC_ACQUIRE);
}

struct call_rcu_data *trcu_urcu_get_thread_call_rcu_data(void)
{
	return thread_crdp;
}

/* liburcu's order: the thread's handle, else its CPU's, else the default. */
struct call_rcu_data *trcu_urcu_get_call_rcu_data(void)
{
	struct call_rcu_data *crdp = thread_crdp;

	if (crdp)
		return crdp;
	crdp = trcu_urcu_get_cpu_call_rcu_data(sched_getcpu());
	return crdp ? crdp : &default_crd;
}

/* No thread of its own behind a handle: 0 (docs/from-liburcu.md). */
pthread_t trcu_urcu_get_call_rcu_thread(struct call_rcu_data *crdp)
{
	(void)crdp;
	return (pthread_t)0;
}

void trcu_urcu_set_thread_call_rcu_data(struct call_rcu_data *crdp)
{
	thread_crdp = crdp;
}

/* 0, or minus an errno value, also set in errno (liburcu's convention):
 * EINVAL for a CPU out of range, ENOMEM; setting a CPU that has a handle to
 * another non-NULL one is refused with EEXIST. */
int trcu_urcu_set_cpu_call_rcu_data(int cpu, struct call_rcu_data *crdp)
{
	struct call_rcu_data **pcpu;
	int ret = 0;

	pthread_mutex_lock(&per_cpu_lock);
	pcpu = per_cpu_crdp;
	if (!pcpu) {
		int n = cpus_configured();

		pcpu = calloc((size_t)n, sizeof(*pcpu));
		if (!pcpu) {
			pthread_mutex_unlock(&per_cpu_lock);
			errno = ENOMEM;
			return -ENOMEM;
		}
		nr_cpus = n;
		/* Pairs with the acquire load in get_cpu_call_rcu_data():
		 * nr_cpus and the zeroed array before the pointer. */
		__atomic_store_n(&per_cpu_crdp, pcpu, __ATOMIC_RELEASE);
	}
	if (cpu < 0 || cpu >= nr_cpus) {
		errno = EINVAL;
		ret = -EINVAL;
	} else if (crdp && pcpu[cpu]) {
		errno = EEXIST;
		ret = -EEXIST;
	} else {
		/* Pairs with the acquire load in get_cpu_call_rcu_data(). */
		__atomic_store_n(&pcpu[cpu], crdp, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&per_cpu_lock);
	return ret;
}

int trcu_urcu_create_all_cpu_call_rcu_data(unsigned long flags)
{
	int n = cpus_configured();

	for (int cpu = 0; cpu < n; cpu++) {
		struct call_rcu_data *crdp;
		int ret;

		if (trcu_urcu_get_cpu_call_rcu_data(cpu))
			continue;
		crdp = trcu_urcu_create_call_rcu_data(flags, cpu);
		ret = trcu_urcu_set_cpu_call_rcu_data(cpu, crdp);
		if (ret) {
			trcu_urcu_call_rcu_data_free(crdp);
			if (ret == -EEXIST)
				continue;   /* another thread set this CPU's */
			return ret;
		}
	}
	return 0;
}

/* liburcu's order: unpublish every CPU's handle, wait for a grace period
 * (a caller may have read one: liburcu's readers of the per-CPU array are
 * in read-side sections), then free them. */
void trcu_urcu_free_all_cpu_call_rcu_data(void)
{
	struct call_rcu_data **pcpu = __atomic_load_n(&per_cpu_crdp, __ATOMIC_ACQUIRE);
	struct call_rcu_data **old;
	int n = nr_cpus;

	if (!pcpu)
		return;
	old = calloc((size_t)n, sizeof(*old));
	if (!old) {
		/* Out of memory: the same, one CPU at a time. */
		for (int cpu = 0; cpu < n; cpu++) {
			struct call_rcu_data *crdp = trcu_urcu_get_cpu_call_rcu_data(cpu);

			if (!crdp)
				continue;
			trcu_urcu_set_cpu_call_rcu_data(cpu, NULL);
			trcu_synchronize_rcu();
			trcu_urcu_call_rcu_data_free(crdp);
		}
		return;
	}
	for (int cpu = 0; cpu < n; cpu++) {
		old[cpu] = trcu_urcu_get_cpu_call_rcu_data(cpu);
		if (old[cpu])
			trcu_urcu_set_cpu_call_rcu_data(cpu, NULL);
	}
	trcu_synchronize_rcu();
	for (int cpu = 0; cpu < n; cpu++)
		trcu_urcu_call_rcu_data_free(old[cpu]);
	free(old);
}

/* Every callback queued before, whatever its handle, has run. */
void trcu_urcu_barrier(void)
{
	trcu_rcu_barrier();
}

/* ---- defer_rcu() ---- */

/*
 * defer_rcu(fct, p) batches the thread's calls in a page-sized block, as
 * liburcu's per-thread defer queue does, and each block is one call_rcu()
 * callback that runs its calls in order.  liburcu's defer thread flushes a
 * partial queue by itself; here a block's first call also queues a kick, a
 * callback that seals the block (a grace period later) and queues it.  A
 * full block is sealed and queued by its owner.  The block's state word is
 * the calls written and a sealed bit: the owner adds a call with a CAS
 * (release: the call before the count), the kick seals with a fetch-or
 * (acquire: it reads every call counted); a call whose CAS meets the
 * sealed bit goes to a new block.  Three references hold the block: the
 * kick, the block's callback and the owner (until it leaves the block:
 * sealed, full, its thread's exit or a fork child); the last frees it.
 */
#define DEFER_BLOCK_BYTES 4096
#define DEFER_SEALED (~(~0UL >> 1))   /* the top bit */

struct defer_call {
	void (*fct)(void *p);
	void *p;
};

struct defer_block {
	struct trcu_head head;   /* the block's callback: runs the calls */
	struct trcu_head kick;   /* seals and queues a partial block */
	_Atomic unsigned long state;   /* calls written | DEFER_SEALED */
	_Atomic int refs;              /* kick, callback, owner */
	struct defer_call calls[];
};

#define DEFER_NR_CALLS \
	((DEFER_BLOCK_BYTES - sizeof(struct defer_block)) / sizeof(struct defer_call))

static __thread struct defer_block *defer_cur;
static pthread_key_t defer_key;        /* its destructor leaves the block */
static pthread_once_t defer_once = PTHREAD_ONCE_INIT;
static bool defer_key_ok;

static void defer_block_put(struct defer_block *b)
{
	/* acq_rel: the other holders' accesses before the free. */
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
		free(b);
}

/* The owner leaves its block (its reference goes). */
static void defer_leave(void)
{
	struct defer_block *b = defer_cur;

	defer_cur = NULL;
	if (b)
		defer_block_put(b);
}

static void defer_thread_exit(void *arg)
{
	(void)arg;
	defer_leave();
}

/* A fork child: the block's kick and callback were the parent's (the
 * child's callbacks start empty), so the child leaves the block as is. */
static void defer_fork_child(void)
{
	defer_cur = NULL;
}

static void defer_init(void)
{
	defer_key_ok = !pthread_key_create(&defer_key, defer_thread_exit) &&
		       !pthread_atfork(NULL, NULL, defer_fork_child);
}

static void defer_block_run(struct trcu_head *head)
{
	struct defer_block *b = (struct defer_block *)head;
	unsigned long n = atomic_load_explicit(&b->state, memory_order_relaxed) & ~DEFER_SEALED;

	/* The sealer read the calls with acquire and queued the block after;
	 * call_rcu() orders them before this callback. */
	for (unsigned long i = 0; i < n; i++) {
		rcu_tsan_acquire(&b->calls[i]);   /* after its defer_rcu() caller */
		b->calls[i].fct(b->calls[i].p);
	}
	defer_block_put(b);
}

/* Seal b: the sealer that finds it open queues it. */
static void defer_block_seal(struct defer_block *b)
{
	/* Acquire: pairs with the owner's CAS, so every counted call is read. */
	if (!(atomic_fetch_or_explicit(&b->state, DEFER_SEALED, memory_order_acquire) &
	      DEFER_SEALED))
		trcu_call_rcu(&b->head, defer_block_run);
}

static void defer_block_kick(struct trcu_head *kick)
{
	struct defer_block *b = (struct defer_block *)((char *)kick -
						       offsetof(struct defer_block, kick));

	defer_block_seal(b);
	defer_block_put(b);
}

/* A new block for this thread (NULL without memory). */
static struct defer_block *defer_block_new(void)
{
	struct defer_block *b;

	pthread_once(&defer_once, defer_init);
	if (!defer_key_ok || !(b = malloc(DEFER_BLOCK_BYTES)))
		return NULL;
	atomic_init(&b->state, 0);
	atomic_init(&b->refs, 3);
	/* Before the kick can run: after trcu_shutdown() it runs in place. */
	defer_cur = b;
	pthread_setspecific(defer_key, b);
	trcu_call_rcu(&b->kick, defer_block_kick);
	return b;
}

/* Add fct(p) to the thread's block b: false when it is sealed (the owner
 * then leaves it).  The owner's reference keeps b alive meanwhile. */
static bool defer_block_add(struct defer_block *b, void (*fct)(void *p), void *p)
{
	unsigned long n = atomic_load_explicit(&b->state, memory_order_relaxed);

	if (n & DEFER_SEALED)
		return false;
	b->calls[n].fct = fct;
	b->calls[n].p = p;
	/* ThreadSanitizer: the caller's writes before fct(p) (src/tsan.h:
	 * the sealer's acquire below is invisible to it). */
	rcu_tsan_release(&b->calls[n]);
	/* Release: the call before its count (pairs with the sealer's
	 * acquire); failing, the kick sealed the block without it. */
	if (!atomic_compare_exchange_strong_explicit(&b->state, &n, n + 1, memory_order_release,
						     memory_order_relaxed))
		return false;
	if (n + 1 == DEFER_NR_CALLS) {   /* full */
		defer_block_seal(b);
		defer_leave();
	}
	return true;
}

/*
 * fct(p) after a grace period, on an offload thread (liburcu runs it on its
 * defer thread).  Without memory for a block, or when a new block is sealed
 * at once (after trcu_shutdown() callbacks run in place), wait for a grace
 * period and run it here, as liburcu does when its queue is full.
 */
void trcu_urcu_defer_rcu(void (*fct)(void *p), void *p)
{
	if (defer_cur && defer_block_add(defer_cur, fct, p))
		return;
	/* Sealed by its kick: a new block, and another if its own kick ran
	 * first (a preempted caller); a third sealed at once means callbacks
	 * run in place. */
	for (int tries = 0; tries < 2; tries++) {
		defer_leave();
		if (!defer_block_new())
			break;
		if (defer_block_add(defer_cur, fct, p))
			return;
	}
	defer_leave();
	trcu_synchronize_rcu();
	fct(p);
}

/* defer_rcu() needs no per-thread queue: registration succeeds. */
int trcu_urcu_defer_register_thread(void)
{
	return 0;
}

/* The thread leaves its block (its kick still seals and queues it). */
void trcu_urcu_defer_unregister_thread(void)
{
	defer_leave();
}

/* Every defer_rcu() call before it has run: the first barrier runs the
 * kicks of the partial blocks (queued when their first call was added),
 * which queue those blocks; the second waits for them. */
void trcu_urcu_defer_barrier(void)
{
	trcu_rcu_barrier();
	trcu_rcu_barrier();
}

/* ---- fork() ---- */

/*
 * rculfhash's hooks, registered through the flavor structure: liburcu-cds
 * pauses its resize worker before fork() and restarts it in the child.  One
 * registration at a time, as in liburcu.  The pointer is set and read under
 * atfork_lock.
 */
static struct urcu_atfork *lfht_atfork;
static pthread_mutex_t atfork_lock = PTHREAD_MUTEX_INITIALIZER;

void trcu_urcu_register_rculfhash_atfork(struct urcu_atfork *atfork)
{
	pthread_mutex_lock(&atfork_lock);
	if (!lfht_atfork)
		lfht_atfork = atfork;
	pthread_mutex_unlock(&atfork_lock);
}

void trcu_urcu_unregister_rculfhash_atfork(struct urcu_atfork *atfork)
{
	pthread_mutex_lock(&atfork_lock);
	if (lfht_atfork == atfork)
		lfht_atfork = NULL;
	pthread_mutex_unlock(&atfork_lock);
}

/*
 * call_rcu_before_fork() and friends: rculfhash's hooks around treercu's
 * own fork handling.  atfork_lock is held from before_fork() to the
 * after_fork_*() call (liburcu holds its call_rcu lock the same way), so the
 * registration cannot change across the fork; the child re-initialises it.
 */
void trcu_urcu_before_fork(void)
{
	pthread_mutex_lock(&atfork_lock);
	if (lfht_atfork)
		lfht_atfork->before_fork(lfht_atfork->priv);
	trcu_before_fork();
}

void trcu_urcu_after_fork_parent(void)
{
	trcu_after_fork_parent();
	if (lfht_atfork)
		lfht_atfork->after_fork_parent(lfht_atfork->priv);
	pthread_mutex_unlock(&atfork_lock);
}

void trcu_urcu_after_fork_child(void)
{
	trcu_after_fork_child();
	if (lfht_atfork)
		lfht_atfork->after_fork_child(lfht_atfork->priv);
	pthread_mutex_init(&atfork_lock, NULL);
	/* The child's one thread keeps its handle; the per-CPU ones stay
	 * (they are handles, with no thread behind them to lose). */
}

/* ---- The flavor structures ---- */

#define TRCU_URCU_FLAVOR(name, qs, offline, online, reg) \
	const struct rcu_flavor_struct name = { \
		.read_lock = trcu_urcu_read_lock, \
		.read_unlock = trcu_urcu_read_unlock, \
		.read_ongoing = trcu_urcu_read_ongoing, \
		.read_quiescent_state = qs, \
		.update_call_rcu = trcu_urcu_call_rcu, \
		.update_synchronize_rcu = trcu_urcu_synchronize_rcu, \
		.update_defer_rcu = trcu_urcu_defer_rcu, \
		.thread_offline = offline, \
		.thread_online = online, \
		.register_thread = reg, \
		.unregister_thread = trcu_unregister_thread, \
		.barrier = trcu_urcu_barrier, \
		.register_rculfhash_atfork = trcu_urcu_register_rculfhash_atfork, \
		.unregister_rculfhash_atfork = trcu_urcu_unregister_rculfhash_atfork, \
	}

TRCU_URCU_FLAVOR(trcu_urcu_memb_flavor, trcu_urcu_nop, trcu_urcu_nop, trcu_urcu_nop,
		 trcu_urcu_register_thread);
TRCU_URCU_FLAVOR(trcu_urcu_mb_flavor, trcu_urcu_nop, trcu_urcu_nop, trcu_urcu_nop,
		 trcu_urcu_register_thread);
TRCU_URCU_FLAVOR(trcu_urcu_signal_flavor, trcu_urcu_nop, trcu_urcu_nop, trcu_urcu_nop,
		 trcu_urcu_register_thread);
TRCU_URCU_FLAVOR(trcu_urcu_bp_flavor, trcu_urcu_nop, trcu_urcu_nop, trcu_urcu_nop,
		 trcu_urcu_register_thread);
TRCU_URCU_FLAVOR(trcu_urcu_qsbr_flavor, trcu_urcu_qsbr_quiescent_state,
		 trcu_urcu_qsbr_thread_offline, trcu_urcu_qsbr_thread_online,
		 trcu_urcu_qsbr_register_thread);
