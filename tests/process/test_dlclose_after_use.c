/* SPDX-License-Identifier: MIT */
/*
 * The shared library loaded with dlopen() and closed with dlclose():
 *
 * - loading starts no thread and reads no environment: a TREERCU_*
 *   variable set after dlopen() and before the first call is in force;
 * - after the library was used (registered threads, a grace period, a
 *   callback, a polled grace period: the GP kthread and an offload thread
 *   run), dlclose() leaves the process running: its threads, its exit
 *   handler and its thread-exit destructor (run when a thread registered
 *   before the close exits after it) keep their code.
 *
 * Each case runs in its own process (common/subproc.h) with the library's
 * path from DLCLOSE_TEST_LIB (set by CTest); a case that crashes or hangs
 * fails with its status.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>
#include "check.h"
#include "subproc.h"
#include "threads.h"

#define CHILD_TIMEOUT_S 60

static void *lib;

static int nr_threads(void)
{
	return threads_named(NULL);
}

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "dlsym(%s): %s\n", name, dlerror());
		exit(3);
	}
	return p;
}

static void lib_open(void)
{
	const char *path = getenv("DLCLOSE_TEST_LIB");

	CHECK(path != NULL);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen(%s): %s\n", path, dlerror());
		exit(3);
	}
}

/* Loading alone: no thread, and the environment read at the first call. */
static void load_only(void)
{
	int (*get_tunable)(const char *, long *);
	long v = 0;

	CHECK_EQ(nr_threads(), 1);
	lib_open();
	CHECK_EQ(nr_threads(), 1);
	CHECK_EQ(setenv("TREERCU_STALL_TIMEOUT_MS", "4321", 1), 0);
	get_tunable = (int (*)(const char *, long *))sym("trcu_get_tunable");
	CHECK_EQ(get_tunable("stall_timeout_ms", &v), 0);
	CHECK_EQ(v, 4321);
	CHECK_EQ(nr_threads(), 1);
	CHECK_EQ(dlclose(lib), 0);
	exit(0);
}

static int cb_ran;

static void cb(struct trcu_head *h)
{
	(void)h;
	__atomic_store_n(&cb_ran, 1, __ATOMIC_RELEASE);
}

static void *plain_thread(void *arg)
{
	return arg;
}

/* A thread registered while the library was open, ending after the
 * close: its exit runs the library's thread-exit destructor. */
static int (*lib_register)(void);
static int reg_state;   /* 1 registered, 2 may exit */

static void *registered_thread(void *arg)
{
	struct timespec ms = { 0, 1000000L };

	CHECK_EQ(lib_register(), 0);
	__atomic_store_n(&reg_state, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&reg_state, __ATOMIC_ACQUIRE) != 2)
		nanosleep(&ms, NULL);
	return arg;
}

/* Used, then closed: the process goes on, makes threads, and exits. */
static void use_then_close(void)
{
	static struct trcu_head head;
	int (*reg)(void);
	void (*sync)(void), (*barrier)(void);
	void (*call)(struct trcu_head *, void (*)(struct trcu_head *));
	unsigned long (*start_poll)(void);
	struct timespec nap = { 0, 300 * 1000000L };
	struct timespec ms = { 0, 1000000L };
	pthread_t t, rt;

	lib_open();
	reg = (int (*)(void))sym("trcu_register_thread");
	lib_register = reg;
	CHECK_EQ(pthread_create(&rt, NULL, registered_thread, NULL), 0);
	while (!__atomic_load_n(&reg_state, __ATOMIC_ACQUIRE))
		nanosleep(&ms, NULL);
	sync = (void (*)(void))sym("trcu_synchronize_rcu");
	barrier = (void (*)(void))sym("trcu_rcu_barrier");
	call = (void (*)(struct trcu_head *, void (*)(struct trcu_head *)))sym("trcu_call_rcu");
	start_poll = (unsigned long (*)(void))sym("trcu_start_poll_synchronize_rcu");
	CHECK_EQ(reg(), 0);
	sync();
	call(&head, cb);
	barrier();
	CHECK_EQ(__atomic_load_n(&cb_ran, __ATOMIC_ACQUIRE), 1);
	(void)start_poll();
	CHECK(nr_threads() > 1);
	CHECK_EQ(dlclose(lib), 0);
	__atomic_store_n(&reg_state, 2, __ATOMIC_RELEASE);
	CHECK_EQ(pthread_join(rt, NULL), 0);
	nanosleep(&nap, NULL);
	CHECK_EQ(pthread_create(&t, NULL, plain_thread, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	nanosleep(&nap, NULL);
	exit(0);
}

static const struct sp_scenario scenarios[] = {
	{ "load_only", load_only },
	{ "use_then_close", use_then_close },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	bool ok = true;

	sp_child(argc, argv, scenarios);
	if (!getenv("DLCLOSE_TEST_LIB")) {
		fprintf(stderr, "DLCLOSE_TEST_LIB: the path of libtreercu.so is not set\n");
		return 2;
	}
	ok &= sp_expect_exit("load_only", NULL, CHILD_TIMEOUT_S, 0, NULL, 0);
	ok &= sp_expect_exit("use_then_close", NULL, CHILD_TIMEOUT_S, 0, NULL, 0);
	return ok ? 0 : 1;
}
