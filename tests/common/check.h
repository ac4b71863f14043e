/* SPDX-License-Identifier: MIT */
/* Minimal assertion helpers for treercu's tests: a failed CHECK prints the
 * expression, file and line, and exits non-zero. */
#ifndef TREERCU_CHECK_H
#define TREERCU_CHECK_H

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* A failed check ends the process at once: exit() would run treercu's atexit
 * shutdown while the test's other threads still call the library. */
#define CHECK_FAIL_EXIT() \
	do { \
		fflush(stdout); \
		fflush(stderr); \
		_exit(1); \
	} while (0)

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			CHECK_FAIL_EXIT(); \
		} \
	} while (0)

/* The step a test is in, named by check_hang_handler() when an alarm()
 * set around that step fires. */
static const char *check_phase __attribute__((unused)) = "start";

/* SIGALRM handler for hang timeouts: names the step that hung and ends the
 * process.  Only write() and strlen(), both async-signal-safe. */
static inline void check_hang_handler(int sig)
{
	static const char pre[] = "HANG: ", post[] = " did not finish within the timeout\n";
	const char *step = check_phase;

	(void)sig;
	(void)!write(2, pre, sizeof(pre) - 1);
	(void)!write(2, step, strlen(step));
	(void)!write(2, post, sizeof(post) - 1);
	_exit(1);
}

/* Monotonic milliseconds, for bounded polling loops in tests. */
static inline long check_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Poll cond every 100 us until it holds; fail if it does not within ms. */
#define CHECK_WITHIN_MS(cond, ms) \
	do { \
		long _end = check_now_ms() + (ms); \
		while (!(cond)) { \
			if (check_now_ms() >= _end) { \
				fprintf(stderr, "%s:%d: CHECK_WITHIN_MS failed: %s not true within %ld ms\n", \
					__FILE__, __LINE__, #cond, (long)(ms)); \
				CHECK_FAIL_EXIT(); \
			} \
			usleep(100); \
		} \
	} while (0)

#define CHECK_EQ(a, b) \
	do { \
		long long _a = (long long)(a), _b = (long long)(b); \
		if (_a != _b) { \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b); \
			CHECK_FAIL_EXIT(); \
		} \
	} while (0)

#endif

#ifdef CHECK_WANT_DEATH
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run fn in a child process with its stderr captured into buf; returns
 * the child's wait status. */
static inline int run_child(void (*fn)(void), char *buf, size_t size)
{
	ssize_t n, len = 0;
	int pfd[2], st;
	pid_t pid;

	CHECK(pipe(pfd) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		fn();
		_exit(0);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], buf + len, size - 1 - (size_t)len)) > 0)
		len += n;
	buf[len] = '\0';
	close(pfd[0]);
	CHECK(waitpid(pid, &st, 0) == pid);
	return st;
}

/* Run fn in a child; it must die by SIGABRT with msg on stderr. */
static inline void expect_death(void (*fn)(void), const char *msg)
{
	char buf[4096];
	int st = run_child(fn, buf, sizeof(buf));

	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT || !strstr(buf, msg)) {
		fprintf(stderr, "expected abort with \"%s\"; got status 0x%x, stderr:\n%s\n",
			msg, st, buf);
		CHECK_FAIL_EXIT();
	}
	printf("  aborts as expected: %s", strchr(buf, ':') ? strchr(buf, ':') + 2 : buf);
}

/* Run fn in a child; it must exit 0 and print msg on stderr. */
static inline void expect_message(void (*fn)(void), const char *msg)
{
	char buf[4096];
	int st = run_child(fn, buf, sizeof(buf));

	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(buf, msg)) {
		fprintf(stderr, "expected exit 0 and \"%s\"; got status 0x%x, stderr:\n%s\n",
			msg, st, buf);
		CHECK_FAIL_EXIT();
	}
	printf("  says: %s", buf);
}
#endif
