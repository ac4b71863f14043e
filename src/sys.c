/* SPDX-License-Identifier: MIT */
/*
 * System primitives: membarrier (the update side's half of the read side's
 * compiler barriers), futexes, clocks, and fatal-error reporting.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * The kernel's UAPI headers where they are installed; where they are not (a
 * musl system without its linux-headers package), the values themselves:
 * they are the system-call ABI and never change.
 */
#if defined(__has_include)
#if __has_include(<linux/futex.h>)
#include <linux/futex.h>
#endif
#if __has_include(<linux/membarrier.h>)
#include <linux/membarrier.h>
#define SYS_HAVE_MEMBARRIER_H 1
#endif
#endif
#ifndef FUTEX_WAIT_PRIVATE
#define FUTEX_WAIT_PRIVATE (0 | 128)
#define FUTEX_WAKE_PRIVATE (1 | 128)
#endif
#ifndef SYS_HAVE_MEMBARRIER_H
enum {
	MEMBARRIER_CMD_QUERY = 0,
	MEMBARRIER_CMD_PRIVATE_EXPEDITED = 1 << 3,
	MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED = 1 << 4,
};
#endif
#ifndef __NR_membarrier
#if defined(__x86_64__)
#define __NR_membarrier 324
#elif defined(__aarch64__)
#define __NR_membarrier 283
#endif
#endif

/* Returns 0 if private expedited membarrier is usable, -1 otherwise. */
int sys_membarrier_register(void)
{
	long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return -1;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0))
		return -1;
	return 0;
}

/*
 * sys_gp_mb: the grace period's memory barrier on every reader.
 * membarrier() makes every running thread of this process execute a full
 * barrier; this pairs with the atomic_signal_fence() compiler barriers in
 * trcu_read_lock(), trcu_read_unlock() and trcu_quiescent_state().  In
 * fenced mode the readers run real fences, and a full fence here pairs with
 * them.
 */
void sys_gp_mb(void)
{
	rcu_stat_add_locked(&rcu_state.n_mb, 1);   /* GP drivers only */
	if (rcu_state.fenced) {
		atomic_thread_fence(memory_order_seq_cst);
		return;
	}
	/* The syscall is a full barrier for this thread as well. */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0))
		sys_die("membarrier(PRIVATE_EXPEDITED) failed after registering: %s",
			 strerror(errno));
}

/* Weak: glibc's libc has them in every dynamically linked program; a
 * static link that does not pull them in has no object to pin. */
#pragma weak dladdr
#pragma weak dlopen

/*
 * Keep the object that holds the library's code mapped for good, whatever
 * loaded it.  libtreercu.so is linked with -z nodelete; the static archive
 * linked into a plugin lives in the plugin, which the program may
 * dlclose() while the library's threads, exit handler and thread-exit
 * destructor still need their code.  Runs from the load-time constructor:
 * RTLD_NOLOAD finds the object being loaded, RTLD_NODELETE marks it never
 * to be unmapped.  In the main program the lookup finds nothing to mark.
 */
void sys_pin_loaded_object(void)
{
	Dl_info info;

	if (!dladdr || !dlopen)
		return;
	if (dladdr((void *)sys_pin_loaded_object, &info) && info.dli_fname && info.dli_fname[0])
		(void)dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

long sys_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int sys_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

/* nanosleep() is a cancellation point: only for threads that run with
 * cancellation disabled (the library's own). */
void sys_sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Sleep while *addr == val, at most timeout_ns (< 0: no limit). */
void sys_futex_wait(_Atomic uint32_t *addr, uint32_t val, long timeout_ns)
{
	struct timespec ts, *tsp = NULL;

	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000L;
		ts.tv_nsec = timeout_ns % 1000000000L;
		tsp = &ts;
	}
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, tsp, NULL, 0);
}

void sys_futex_wake(_Atomic uint32_t *addr, int n)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Writes are cancellation points: a warning from inside the library must
 * not end its thread halfway through a library call (internal.h).  One
 * line per report, whole: stderr's lock is held across its three writes,
 * so reports from several threads at once do not mix. */
static void sys_vreport(const char *prefix, const char *fmt, va_list ap)
{
	int cs = sys_cancel_disable();

	flockfile(stderr);
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	sys_cancel_restore(cs);
}

void sys_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sys_vreport("treercu: fatal: ", fmt, ap);
	va_end(ap);
	fflush(stderr);
	abort();
}

void sys_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sys_vreport("treercu: ", fmt, ap);
	va_end(ap);
}

#ifdef TREERCU_TRACE
#include <sched.h>

#include "trace.h"
#define TRACE_N (1 << 20)
static struct tr_ev { long t; int tid, cpu; const char *ev; long arg; } tr_buf[TRACE_N];
static _Atomic long tr_idx;
static __thread int tr_tid;

static void trace_dump(void)
{
	const char *f = getenv("TREERCU_TRACE_FILE");
	FILE *o;
	long n = atomic_load(&tr_idx);

	if (!f || !(o = fopen(f, "w")))
		return;
	if (n > TRACE_N)
		n = TRACE_N;
	for (long i = 0; i < n; i++)
		fprintf(o, "%ld %d %s %ld %d\n", tr_buf[i].t, tr_buf[i].tid, tr_buf[i].ev,
			tr_buf[i].arg, tr_buf[i].cpu);
	fclose(o);
}

void trace_record(const char *ev, long arg)
{
	long i = atomic_fetch_add(&tr_idx, 1);

	if (i == 0)
		atexit(trace_dump);
	if (i >= TRACE_N)
		return;
	if (!tr_tid)
		tr_tid = sys_gettid();
	/* The CPU too: where a woken thread runs against its waker's. */
	tr_buf[i] = (struct tr_ev){ sys_now_ns(), tr_tid, sched_getcpu(), ev, arg };
}
#endif
