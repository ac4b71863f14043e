/* SPDX-License-Identifier: MIT */
/*
 * libc calls that fail while a flag is set, for tests that link with
 * -Wl,--wrap (trcu_test(... WRAP pthread_create posix_memalign)): the
 * library's calls go through these, the test's own threads may use the
 * __real_ ones.  Define FAIL_WRAP_PTHREAD_CREATE and/or
 * FAIL_WRAP_POSIX_MEMALIGN before including, matching the --wrap options
 * (a wrapper without its --wrap would reference an undefined __real_).
 *   fail_create / failed_creates:     pthread_create() returns EAGAIN
 *   fail_memalign / failed_memaligns: posix_memalign() returns ENOMEM
 */
#ifndef TREERCU_FAIL_WRAP_H
#define TREERCU_FAIL_WRAP_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef FAIL_WRAP_PTHREAD_CREATE
static _Atomic bool fail_create;
static _Atomic long failed_creates;

int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	if (atomic_load(&fail_create)) {
		atomic_fetch_add(&failed_creates, 1);
		return EAGAIN;
	}
	return __real_pthread_create(t, attr, fn, arg);
}
#endif

#ifdef FAIL_WRAP_POSIX_MEMALIGN
static _Atomic bool fail_memalign;
static _Atomic long failed_memaligns;

int __real_posix_memalign(void **p, size_t align, size_t size);
int __wrap_posix_memalign(void **p, size_t align, size_t size);

int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
	if (atomic_load(&fail_memalign)) {
		atomic_fetch_add(&failed_memaligns, 1);
		return ENOMEM;
	}
	return __real_posix_memalign(p, align, size);
}
#endif

#endif
