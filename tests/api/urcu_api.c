/* SPDX-License-Identifier: MIT */
/*
 * A program written against liburcu's API, built twice: against treercu's
 * liburcu-compatible headers (libtreercu-urcu) and against liburcu itself,
 * with nothing changed but the include path and the libraries.  One build
 * per flavor: URCU_API_TEST_MEMB (<urcu.h>), URCU_API_TEST_QSBR
 * (<urcu-qsbr.h>), URCU_API_TEST_BP (<urcu-bp.h>).  It checks what liburcu
 * documents: grace periods wait for readers, call_rcu() and defer_rcu()
 * run after one, the call_rcu_data bookkeeping, per-flavor quiescent
 * states, fork(), and liburcu-cds's hash table and queue driven through the
 * flavor structure.  Passes by exiting 0; a failure names what broke.
 */
#define _GNU_SOURCE
#if defined(URCU_API_TEST_QSBR)
#include <urcu-qsbr.h>
#define FLAVOR_QSBR 1
#elif defined(URCU_API_TEST_BP)
#include <urcu-bp.h>
#define FLAVOR_QSBR 0
#else
#include <urcu.h>
#define FLAVOR_QSBR 0
#endif
#include <urcu/rculfhash.h>
#include <urcu/rculfqueue.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FAIL(...) \
	do { \
		fprintf(stderr, "urcu_api: FAIL: " __VA_ARGS__); \
		fputc('\n', stderr); \
		exit(1); \
	} while (0)
#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
			FAIL(__VA_ARGS__); \
	} while (0)

static void on_alarm(int sig)
{
	static const char msg[] = "urcu_api: FAIL: timed out (a grace period, "
				  "callback or fork step hung)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A QSBR thread announces quiescent states; elsewhere they are implicit. */
static void quiescent(void)
{
	rcu_quiescent_state();
}

/* ---- Grace periods wait for readers ---- */

struct obj {
	int value;
	int dead;      /* set after the grace period that retires it */
	struct rcu_head rh;
};

static struct obj *shared;
static int stop_readers;
static long reads;
static int readers_reading;   /* readers past their first section */

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	for (long n = 0; !__atomic_load_n(&stop_readers, __ATOMIC_RELAXED); n++) {
		if (n == 1)
			__atomic_add_fetch(&readers_reading, 1, __ATOMIC_RELAXED);
		rcu_read_lock();
		CHECK(rcu_read_ongoing(), "rcu_read_ongoing() is 0 inside rcu_read_lock()");
		struct obj *o = rcu_dereference(shared);
		if (o) {
			int v = o->value;

			sleep_ms(0);
			CHECK(!__atomic_load_n(&o->dead, __ATOMIC_RELAXED),
			      "an object retired by synchronize_rcu() was freed while a "
			      "reader held it (value %d)", v);
			CHECK(o->value == v, "object changed under a reader");
		}
		rcu_read_unlock();
		__atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
		quiescent();
	}
	rcu_unregister_thread();
	return NULL;
}

static void test_grace_periods(void)
{
	enum { NR_READERS = 2, UPDATES = 200 };
	pthread_t tid[NR_READERS];
	struct obj *olds[UPDATES];

	for (int i = 0; i < NR_READERS; i++)
		CHECK(!pthread_create(&tid[i], NULL, reader, NULL), "pthread_create");
	/* The updates run beside readers: every reader has read once (a
	 * loaded machine may start them late; the alarm bounds the wait). */
	while (__atomic_load_n(&readers_reading, __ATOMIC_RELAXED) < NR_READERS) {
		sleep_ms(1);
		quiescent();
	}
	for (int i = 0; i < UPDATES; i++) {
		struct obj *n = calloc(1, sizeof(*n));

		CHECK(n, "out of memory");
		n->value = i;
		/* liburcu's address form. */
		struct obj *old = rcu_xchg_pointer(&shared, n);
		synchronize_rcu();
		if (old)
			__atomic_store_n(&old->dead, 1, __ATOMIC_RELAXED);
		olds[i] = old;
	}
	/* cmpxchg and set: liburcu's address forms. */
	struct obj *cur = rcu_dereference(shared);
	struct obj *other = calloc(1, sizeof(*other));
	CHECK(other, "out of memory");
	CHECK(rcu_cmpxchg_pointer(&shared, other, other) == cur,
	      "rcu_cmpxchg_pointer() with a wrong old value did not return the current one");
	CHECK(rcu_dereference(shared) == cur, "a failed rcu_cmpxchg_pointer() stored");
	CHECK(rcu_cmpxchg_pointer(&shared, cur, other) == cur,
	      "rcu_cmpxchg_pointer() did not return the old value");
	CHECK(rcu_dereference(shared) == other, "rcu_cmpxchg_pointer() did not store");
	rcu_set_pointer(&shared, cur);
	CHECK(rcu_dereference(shared) == cur, "rcu_set_pointer() did not store");
	rcu_assign_pointer(shared, other);
	CHECK(rcu_dereference(shared) == other, "rcu_assign_pointer() did not store");
	sleep_ms(50);
	__atomic_store_n(&stop_readers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NR_READERS; i++)
		pthread_join(tid[i], NULL);
	CHECK(__atomic_load_n(&reads, __ATOMIC_RELAXED) > 0, "the readers never read");
	for (int i = 0; i < UPDATES; i++)
		free(olds[i]);
	rcu_assign_pointer(shared, NULL);
	free(cur);
	free(other);
}

/* ---- call_rcu(), usable as a value, and call_rcu_data ---- */

static long cbs_run;
static pthread_t cb_caller;
static int cb_ran_in_caller;

static void count_cb(struct rcu_head *head)
{
	struct obj *o = caa_container_of(head, struct obj, rh);

	if (pthread_equal(pthread_self(), cb_caller))
		cb_ran_in_caller = 1;
	free(o);
	__atomic_add_fetch(&cbs_run, 1, __ATOMIC_RELAXED);
}

static void queue_cbs(void (*cr)(struct rcu_head *, void (*)(struct rcu_head *)), int n)
{
	for (int i = 0; i < n; i++) {
		struct obj *o = calloc(1, sizeof(*o));

		CHECK(o, "out of memory");
		cr(&o->rh, count_cb);
	}
}

static void test_call_rcu(void)
{
	void (*cr)(struct rcu_head *, void (*)(struct rcu_head *)) = call_rcu;
	void (*barrier)(void) = rcu_barrier;
	struct call_rcu_data *crdp, *dflt;

	cb_caller = pthread_self();
	queue_cbs(cr, 100);
	barrier();
	CHECK(cbs_run == 100, "rcu_barrier() returned with %ld of 100 callbacks run", cbs_run);
	CHECK(!cb_ran_in_caller, "a callback ran inside call_rcu()");

	dflt = get_default_call_rcu_data();
	CHECK(dflt, "get_default_call_rcu_data() returned NULL");
	CHECK(get_thread_call_rcu_data() == NULL, "a new thread has a call_rcu_data");
	crdp = create_call_rcu_data(0, -1);
	CHECK(crdp, "create_call_rcu_data() failed");
	set_thread_call_rcu_data(crdp);
	CHECK(get_thread_call_rcu_data() == crdp, "set_thread_call_rcu_data() not kept");
	CHECK(get_call_rcu_data() == crdp, "get_call_rcu_data() ignores the thread's");
	queue_cbs(call_rcu, 50);
	rcu_barrier();
	CHECK(cbs_run == 150, "callbacks through a call_rcu_data: %ld of 50 run", cbs_run - 100);
	set_thread_call_rcu_data(NULL);
	call_rcu_data_free(crdp);
	call_rcu_data_free(dflt);   /* the default is never freed */
	CHECK(get_default_call_rcu_data() == dflt, "the default call_rcu_data changed");

	CHECK(create_all_cpu_call_rcu_data(0) == 0, "create_all_cpu_call_rcu_data(): %s",
	      strerror(errno));
	CHECK(get_cpu_call_rcu_data(0) != NULL, "CPU 0 has no call_rcu_data");
	CHECK(set_cpu_call_rcu_data(-1, dflt) == -EINVAL && errno == EINVAL,
	      "set_cpu_call_rcu_data(-1) was not refused with -EINVAL");
	CHECK(set_cpu_call_rcu_data(0, dflt) == -EEXIST && errno == EEXIST,
	      "set_cpu_call_rcu_data() over CPU 0's handle was not refused with -EEXIST");
	queue_cbs(call_rcu, 50);
	rcu_barrier();
	CHECK(cbs_run == 200, "callbacks through per-CPU call_rcu_data: %ld of 50 run",
	      cbs_run - 150);
	free_all_cpu_call_rcu_data();
	CHECK(get_cpu_call_rcu_data(0) == NULL, "free_all_cpu_call_rcu_data() kept CPU 0's");
	CHECK(get_call_rcu_data() == dflt, "get_call_rcu_data() is not the default");
}

/* ---- defer_rcu() ---- */

static long deferred;

static void defer_fn(void *p)
{
	free(p);
	__atomic_add_fetch(&deferred, 1, __ATOMIC_RELAXED);
}

static void test_defer(void)
{
	CHECK(rcu_defer_register_thread() == 0, "rcu_defer_register_thread() failed");
	for (int i = 0; i < 100; i++) {
		void *p = malloc(16);

		CHECK(p, "out of memory");
		defer_rcu(defer_fn, p);
	}
	rcu_defer_barrier();
	CHECK(deferred == 100, "rcu_defer_barrier() returned with %ld of 100 run", deferred);
	rcu_defer_unregister_thread();
}

/* ---- Per-flavor quiescent states ---- */

static int sync_done;

static void *sync_thread(void *arg)
{
	(void)arg;
	synchronize_rcu();
	__atomic_store_n(&sync_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_quiescent_states(void)
{
	/* The calling thread is registered (main). */
	CHECK(!FLAVOR_QSBR == !rcu_read_ongoing(),
	      "rcu_read_ongoing() outside a section: %d (QSBR online: 1, else 0)",
	      rcu_read_ongoing());
	/* memb/bp: no-ops outside a section; QSBR: the thread's own. */
	rcu_quiescent_state();
	rcu_thread_offline();
	CHECK(!rcu_read_ongoing(), "rcu_read_ongoing() after rcu_thread_offline()");
	rcu_thread_online();
	rcu_read_lock();
	CHECK(rcu_read_ongoing(), "rcu_read_ongoing() inside a section");
	rcu_read_unlock();

#if FLAVOR_QSBR
	/* Registration made a QSBR thread: online, it holds back a grace
	 * period until it announces a quiescent state. */
	pthread_t t;

	__atomic_store_n(&sync_done, 0, __ATOMIC_RELAXED);
	CHECK(!pthread_create(&t, NULL, sync_thread, NULL), "pthread_create");
	sleep_ms(200);
	CHECK(!__atomic_load_n(&sync_done, __ATOMIC_ACQUIRE),
	      "synchronize_rcu() ended while a registered QSBR thread was online "
	      "without a quiescent state");
	rcu_quiescent_state();
	while (!__atomic_load_n(&sync_done, __ATOMIC_ACQUIRE)) {
		sleep_ms(1);
		rcu_quiescent_state();
	}
	pthread_join(t, NULL);
#else
	/* Outside a section the thread is quiescent: a grace period ends
	 * without any call from it. */
	pthread_t t;

	__atomic_store_n(&sync_done, 0, __ATOMIC_RELAXED);
	CHECK(!pthread_create(&t, NULL, sync_thread, NULL), "pthread_create");
	pthread_join(t, NULL);
	CHECK(__atomic_load_n(&sync_done, __ATOMIC_ACQUIRE), "synchronize_rcu() did not end");
#endif
}

/* ---- Polled grace periods (liburcu 0.14's API) ---- */

static void test_poll(void)
{
#if defined(TREERCU_URCU)
	struct urcu_gp_poll_state s = start_poll_synchronize_rcu();

	rcu_thread_offline();
	while (!poll_state_synchronize_rcu(s))
		sleep_ms(1);
	rcu_thread_online();
	s = start_poll_synchronize_rcu();
	rcu_thread_offline();
	synchronize_rcu();
	rcu_thread_online();
	CHECK(poll_state_synchronize_rcu(s), "a poll state not complete after synchronize_rcu()");
#endif
}

/* ---- fork() with liburcu's calls around it ---- */

static void test_fork(void)
{
#if defined(URCU_API_TEST_NO_FORK)
	printf("urcu_api: fork step not run in this build\n");
#else
	pid_t pid;
	int status;

	call_rcu_before_fork();
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		call_rcu_after_fork_child();
		alarm(60);
		cbs_run = 0;
		queue_cbs(call_rcu, 10);
		rcu_thread_offline();
		rcu_barrier();
		synchronize_rcu();
		rcu_thread_online();
		_exit(cbs_run == 10 ? 0 : 2);
	}
	call_rcu_after_fork_parent();
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child of fork() could not run call_rcu() + rcu_barrier() "
	      "(status %#x)", status);
	/* The parent goes on. */
	synchronize_rcu();
#endif
}

/* ---- liburcu-cds through the flavor structure ---- */

struct hnode {
	struct cds_lfht_node node;
	unsigned long key;
	struct rcu_head rh;
};

static struct cds_lfht *ht;
enum { HT_THREADS = 2, HT_KEYS = 2000 };

static int hmatch(struct cds_lfht_node *node, const void *key)
{
	return caa_container_of(node, struct hnode, node)->key == *(const unsigned long *)key;
}

static unsigned long hash_key(unsigned long k)
{
	return k * 0x9E3779B97F4A7C15UL;
}

static void free_hnode(struct rcu_head *head)
{
	free(caa_container_of(head, struct hnode, rh));
}

static void *ht_worker(void *arg)
{
	unsigned long base = (unsigned long)arg * HT_KEYS;

	rcu_register_thread();
	for (unsigned long k = base; k < base + HT_KEYS; k++) {
		struct hnode *n = calloc(1, sizeof(*n));

		CHECK(n, "out of memory");
		n->key = k;
		cds_lfht_node_init(&n->node);
		rcu_read_lock();
		cds_lfht_add(ht, hash_key(k), &n->node);
		rcu_read_unlock();
		quiescent();
	}
	for (unsigned long k = base; k < base + HT_KEYS; k += 2) {
		struct cds_lfht_iter it;
		struct cds_lfht_node *node;

		rcu_read_lock();
		cds_lfht_lookup(ht, hash_key(k), hmatch, &k, &it);
		node = cds_lfht_iter_get_node(&it);
		CHECK(node, "key %lu not found in the hash table", k);
		CHECK(!cds_lfht_del(ht, node), "cds_lfht_del(%lu) failed", k);
		rcu_read_unlock();
		call_rcu(&caa_container_of(node, struct hnode, node)->rh, free_hnode);
		quiescent();
	}
	rcu_unregister_thread();
	return NULL;
}

static void test_hash_table(void)
{
	pthread_t tid[HT_THREADS];
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	long count = 0;

	/* cds_lfht_new() passes &rcu_flavor; auto-resize runs liburcu-cds's
	 * worker, which registers itself through the flavor structure. */
	ht = cds_lfht_new(1, 1, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	CHECK(ht, "cds_lfht_new() failed");
	for (long i = 0; i < HT_THREADS; i++)
		CHECK(!pthread_create(&tid[i], NULL, ht_worker, (void *)i), "pthread_create");
	for (int i = 0; i < HT_THREADS; i++)
		pthread_join(tid[i], NULL);

	rcu_read_lock();
	cds_lfht_for_each(ht, &it, node) {
		unsigned long k = caa_container_of(node, struct hnode, node)->key;

		CHECK(k % 2 == 1, "deleted key %lu still in the table", k);
		count++;
	}
	rcu_read_unlock();
	CHECK(count == HT_THREADS * HT_KEYS / 2, "%ld keys in the table, expected %d", count,
	      HT_THREADS * HT_KEYS / 2);

	rcu_read_lock();
	cds_lfht_for_each(ht, &it, node) {
		CHECK(!cds_lfht_del(ht, node), "cds_lfht_del() failed");
		call_rcu(&caa_container_of(node, struct hnode, node)->rh, free_hnode);
	}
	rcu_read_unlock();
	/* Destroying an auto-resized table waits for its resize worker, whose
	 * grace periods a QSBR caller would hold back: offline meanwhile. */
	rcu_thread_offline();
	CHECK(!cds_lfht_destroy(ht, NULL), "cds_lfht_destroy() failed");
	rcu_thread_online();
	rcu_barrier();
}

/*
 * cds_lfht_resize() on a table without CDS_LFHT_AUTO_RESIZE.  On an
 * auto-resized table, under QSBR, it can deadlock (with liburcu as with
 * treercu): liburcu-cds's resize worker registers, online, and then waits
 * for the table's resize mutex, which the explicit resize holds across the
 * grace periods of its shrink, which wait for the worker.  The caller is
 * offline meanwhile: the shrink's grace periods would wait for it too.
 */
static void test_explicit_resize(void)
{
	struct cds_lfht *t = cds_lfht_new(1, 1, 0, 0, NULL);
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	long count = 0;

	CHECK(t, "cds_lfht_new() without auto-resize failed");
	for (unsigned long k = 0; k < HT_KEYS; k++) {
		struct hnode *n = calloc(1, sizeof(*n));

		CHECK(n, "out of memory");
		n->key = k;
		cds_lfht_node_init(&n->node);
		rcu_read_lock();
		cds_lfht_add(t, hash_key(k), &n->node);
		rcu_read_unlock();
		quiescent();
	}
	rcu_thread_offline();
	cds_lfht_resize(t, 4096);
	cds_lfht_resize(t, 16);
	rcu_thread_online();
	for (unsigned long k = 0; k < HT_KEYS; k++) {
		rcu_read_lock();
		cds_lfht_lookup(t, hash_key(k), hmatch, &k, &it);
		CHECK(cds_lfht_iter_get_node(&it), "key %lu lost by cds_lfht_resize()", k);
		rcu_read_unlock();
	}
	rcu_read_lock();
	cds_lfht_for_each(t, &it, node) {
		CHECK(!cds_lfht_del(t, node), "cds_lfht_del() failed");
		call_rcu(&caa_container_of(node, struct hnode, node)->rh, free_hnode);
		count++;
	}
	rcu_read_unlock();
	CHECK(count == HT_KEYS, "%ld keys after cds_lfht_resize(), expected %d", count, HT_KEYS);
	rcu_thread_offline();
	CHECK(!cds_lfht_destroy(t, NULL), "cds_lfht_destroy() failed");
	rcu_barrier();
	rcu_thread_online();
}

struct qnode {
	struct cds_lfq_node_rcu node;
	int v;
	struct rcu_head rh;
};

static void free_qnode(struct rcu_head *head)
{
	free(caa_container_of(head, struct qnode, rh));
}

static void test_queue(void)
{
	struct cds_lfq_queue_rcu q;

	/* The queue takes call_rcu as a value (for its dummy nodes). */
	cds_lfq_init_rcu(&q, call_rcu);
	for (int i = 0; i < 100; i++) {
		struct qnode *n = calloc(1, sizeof(*n));

		CHECK(n, "out of memory");
		n->v = i;
		cds_lfq_node_init_rcu(&n->node);
		rcu_read_lock();
		cds_lfq_enqueue_rcu(&q, &n->node);
		rcu_read_unlock();
	}
	for (int i = 0; i < 100; i++) {
		struct cds_lfq_node_rcu *node;

		rcu_read_lock();
		node = cds_lfq_dequeue_rcu(&q);
		rcu_read_unlock();
		CHECK(node, "queue empty after %d of 100", i);
		struct qnode *n = caa_container_of(node, struct qnode, node);
		CHECK(n->v == i, "dequeued %d, expected %d", n->v, i);
		call_rcu(&n->rh, free_qnode);
	}
	CHECK(!cds_lfq_destroy_rcu(&q), "cds_lfq_destroy_rcu() on an empty queue failed");
	rcu_barrier();
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(120);
	rcu_register_thread();
	test_quiescent_states();
	test_grace_periods();
	rcu_thread_offline();
	test_call_rcu();
	test_defer();
	rcu_thread_online();
	test_poll();
	test_fork();
	test_hash_table();
	test_explicit_resize();
	test_queue();
	rcu_unregister_thread();
	printf("urcu_api: ok\n");
	return 0;
}
