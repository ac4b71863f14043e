/* SPDX-License-Identifier: MIT */
/*
 * The RCU core's shared state: the definitions of rcu_state (its sequence
 * words by static initialisers), the reader generation and the test hooks,
 * and the init gate every entry point passes (rcu_init()), which runs the
 * init the top layer registered.  Every other file of the core stands on
 * this one; it calls nothing.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "test_hooks.h"

/* include/treercu/rcu.h: tagged, odd, +2 at each GP start (rcu_gp_init()). */
unsigned long trcu_reader_gen __attribute__((aligned(64))) = TRCU_READER_GEN_TAG | 1;

/* ThreadSanitizer's addresses for a program built with it (src/tsan.h):
 * never read or written, only named. */
char trcu_tsan_sections;
char rcu_tsan_callbacks;

struct rcu_test_hooks rcu_test_hooks;

/* Task readers' calls into their lists, handed down by src/rcu.c's
 * constructor (internal.h, struct rcu_task_hooks); NULL before it. */
const struct rcu_task_hooks *rcu_task_hooks;

void rcu_task_set_hooks(const struct rcu_task_hooks *h)
{
	/* Release: pairs with the acquire in rcu_task_hooks_get(). */
	__atomic_store_n(&rcu_task_hooks, h, __ATOMIC_RELEASE);
}

/* The calling thread's library-private state (src/thread.c owns it). */
__thread struct rcu_thread rcu_thread_tls = { .slot = -1 };

/* The sequence words start close to wrap (RCU_SEQ_INIT), as the kernel's. */
struct rcu_state rcu_state = {
	.gp_seq = RCU_SEQ_INIT,
	.gp_seq_needed = RCU_SEQ_INIT,
	.exp_seq = RCU_SEQ_INIT,
	.sr_init_seq = RCU_SEQ_INIT,
	.exp_poll_seq = RCU_SEQ_INIT,
	.gp_mutex = PTHREAD_MUTEX_INITIALIZER,
	.ofl_lock = PTHREAD_MUTEX_INITIALIZER,
};

/*
 * The init gate.  The top layer registers its init from a constructor, so
 * the pointer is set before any thread exists and only read afterwards;
 * pthread_once() orders the init before every caller's return from here.
 */
static pthread_once_t rcu_init_once_ctl = PTHREAD_ONCE_INIT;
static void (*rcu_init_fn)(void);
/* Set once the init has run (rcu_initialized()). */
static _Atomic bool rcu_init_done;

void rcu_init_register(void (*fn)(void))
{
	rcu_init_fn = fn;
}

static void rcu_init_run(void)
{
	if (!rcu_init_fn) {
		/* Only a link that left out src/rcu.c gets here. */
		fputs("treercu: the RCU core's init was not registered (src/rcu.c not linked)\n",
		      stderr);
		abort();
	}
	rcu_init_fn();
	/* Release: the init's stores before the flag; pairs with the acquire
	 * in rcu_initialized(). */
	atomic_store_explicit(&rcu_init_done, true, memory_order_release);
}

bool rcu_initialized(void)
{
	return atomic_load_explicit(&rcu_init_done, memory_order_acquire);
}

void rcu_init(void)
{
	/* A signal handler that interrupts the init on this thread must not
	 * enter pthread_once() again: ->busy sends its sections to the
	 * emergency path (src/thread.c). */
	rcu_busy_enter();
	pthread_once(&rcu_init_once_ctl, rcu_init_run);
	rcu_busy_exit();
}
