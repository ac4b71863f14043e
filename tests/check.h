/* SPDX-License-Identifier: MIT */
/* Minimal assertion helpers for treercu's tests: a failed CHECK prints the
 * expression, file and line, and exits non-zero. */
#ifndef TREERCU_CHECK_H
#define TREERCU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1); \
		} \
	} while (0)

#define CHECK_EQ(a, b) \
	do { \
		long long _a = (long long)(a), _b = (long long)(b); \
		if (_a != _b) { \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b); \
			exit(1); \
		} \
	} while (0)

#endif
