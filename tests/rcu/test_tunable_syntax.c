/* SPDX-License-Identifier: MIT */
/*
 * Tunable syntax, as docs/tunables.md defines it: values are decimal
 * numbers only (no leading zero, no base prefix, no spaces, no '+');
 * anything else is refused with a message naming the variable and the
 * accepted range, and the default stays.  Boolean variables read their
 * value: 0 is off, 1 is on, anything else is refused and reads 0.
 * Each case runs in a child process, since variables are read at init.
 */
#define CHECK_WANT_DEATH
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>
#include "check.h"

static const char *blimit_text;

static long get(const char *name)
{
	long v = -1;

	CHECK_EQ(trcu_get_tunable(name, &v), 0);
	return v;
}

/* Exits with the value TREERCU_BLIMIT=blimit_text leaves in force. */
static void blimit_child(void)
{
	setenv("TREERCU_BLIMIT", blimit_text, 1);
	_exit((int)get("blimit"));
}

/* The default (100) stays for a refused text, with this message. */
static void blimit_refused(const char *text, const char *msg)
{
	char buf[4096];
	int st;

	blimit_text = text;
	st = run_child(blimit_child, buf, sizeof(buf));
	printf("TREERCU_BLIMIT=\"%s\": blimit %d; %s", text,
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1, buf);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 100);
	if (!strstr(buf, msg)) {
		fprintf(stderr, "expected \"%s\" on stderr\n", msg);
		CHECK_FAIL_EXIT();
	}
}

static void blimit_accepted(const char *text, int value)
{
	char buf[4096];
	int st;

	blimit_text = text;
	st = run_child(blimit_child, buf, sizeof(buf));
	printf("TREERCU_BLIMIT=\"%s\": blimit %d\n", text, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), value);
	CHECK_EQ(buf[0], '\0');
}

static const char *fenced_text;

/* Exits with whether the read side is fenced. */
static void fenced_child(void)
{
	struct trcu_stats st;

	if (fenced_text)
		setenv("TREERCU_FORCE_FENCED", fenced_text, 1);
	trcu_get_stats(&st);
	_exit(st.fenced ? 1 : 0);
}

static int fenced_with(const char *text, char *buf, size_t size)
{
	int st;

	fenced_text = text;
	st = run_child(fenced_child, buf, size);
	CHECK(WIFEXITED(st));
	printf("TREERCU_FORCE_FENCED=%s%s%s: fenced %d%s%s", text ? "\"" : "(unset)",
	       text ? text : "", text ? "\"" : "", WEXITSTATUS(st), buf[0] ? "; " : "\n", buf);
	return WEXITSTATUS(st);
}

int main(void)
{
	char buf[4096];
	int plain;

	alarm(120);   /* a hang fails the test (SIGALRM) */
	blimit_refused("010", "TREERCU_BLIMIT=\"010\" refused: not a decimal number "
		       "(accepted: 1..1000000)");
	blimit_refused("0x10", "TREERCU_BLIMIT=\"0x10\" refused: not a decimal number");
	blimit_refused(" 16", "TREERCU_BLIMIT=\" 16\" refused: not a decimal number");
	blimit_refused("16 ", "TREERCU_BLIMIT=\"16 \" refused: not a decimal number");
	blimit_refused("+16", "TREERCU_BLIMIT=\"+16\" refused: not a decimal number");
	blimit_refused("", "TREERCU_BLIMIT=\"\" refused: not a decimal number");
	blimit_refused("1e3", "TREERCU_BLIMIT=\"1e3\" refused: not a decimal number");
	blimit_refused("-5", "TREERCU_BLIMIT=-5 refused: out of range (accepted: 1..1000000)");
	blimit_refused("0", "TREERCU_BLIMIT=0 refused: out of range (accepted: 1..1000000)");
	blimit_refused("99999999999999999999",
		       "TREERCU_BLIMIT=99999999999999999999 refused: out of range");
	blimit_accepted("16", 16);
	blimit_accepted("10", 10);
	blimit_accepted("7", 7);

	/* Booleans: 0 is off, whatever the variable's presence says. */
	plain = fenced_with(NULL, buf, sizeof(buf));
	CHECK_EQ(fenced_with("0", buf, sizeof(buf)), plain);
	CHECK_EQ(buf[0], '\0');
	CHECK_EQ(fenced_with("1", buf, sizeof(buf)), 1);
	CHECK_EQ(buf[0], '\0');
	CHECK_EQ(fenced_with("yes", buf, sizeof(buf)), plain);
	CHECK(strstr(buf, "TREERCU_FORCE_FENCED=\"yes\" refused: not a decimal number "
			  "(accepted: 0..1)") != NULL);
	CHECK_EQ(fenced_with("2", buf, sizeof(buf)), plain);
	CHECK(strstr(buf, "TREERCU_FORCE_FENCED=2 refused: out of range (accepted: 0..1)") != NULL);

	/* The runtime API takes a number: the same ranges, errno EINVAL. */
	errno = 0;
	CHECK_EQ(trcu_set_tunable("blimit", 0), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(trcu_set_tunable("lazy", 2), -1);
	CHECK_EQ(trcu_set_tunable("blimit", 16), 0);
	CHECK_EQ(get("blimit"), 16);
	printf("ok\n");
	return 0;
}
