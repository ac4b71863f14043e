/* SPDX-License-Identifier: MIT */
/*
 * Stranded gp_seq_needed, second way (the first:
 * test_sync_extra_request_driven.c).  A
 * list-path caller whose node was covered by the GP an offload thread drove
 * raises the next GP, fails its trylock while that offload thread still
 * holds gp_mutex (between GP end and unlock), and returns without having
 * driven; the offload driver's hand-off sees another asynchronous waiter on
 * gp_end_futex and wakes it, not the GP kthread, and that waiter finds its
 * own GP done.  Nobody would drive the raised GP: the caller must wake the
 * GP kthread on its way out when its own request is not done.
 * Deterministic: wraps rcu_sr_normal_add_req, pthread_mutex_unlock and
 * sys_futex_wait.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <treercu/rcu.h>
#include "check.h"
#include "holder.h"
#include "internal.h"
#include "gp.h"
#include "sync_list.h"

void __real_rcu_sr_normal_add_req(struct sr_node *n);
int __real_pthread_mutex_unlock(pthread_mutex_t *m);
void __real_sys_futex_wait(_Atomic uint32_t *addr, uint32_t val, long t);
void __wrap_rcu_sr_normal_add_req(struct sr_node *n);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);
void __wrap_sys_futex_wait(_Atomic uint32_t *addr, uint32_t val, long t);

static _Atomic int arm_a, a_pushed, go_a;
static _Atomic int arm_u, u_held, go_u;
static _Atomic int arm_w, w_held, go_w;
static _Atomic unsigned long g1_end;
static _Atomic int ran;

void __wrap_rcu_sr_normal_add_req(struct sr_node *n)
{
	__real_rcu_sr_normal_add_req(n);
	if (atomic_exchange(&arm_a, 0)) {
		atomic_store(&a_pushed, 1);
		while (!atomic_load(&go_a))
			usleep(50);
	}
}

int __wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (m == &rcu_state.gp_mutex && atomic_load(&arm_u) &&
	    atomic_load(&rcu_state.gp_seq) == atomic_load(&g1_end) &&
	    atomic_exchange(&arm_u, 0)) {
		atomic_store(&u_held, 1);
		while (!atomic_load(&go_u))
			usleep(50);
	}
	return __real_pthread_mutex_unlock(m);
}

void __wrap_sys_futex_wait(_Atomic uint32_t *addr, uint32_t val, long t)
{
	if (addr == &rcu_state.gp_end_futex && atomic_load(&arm_w) &&
	    atomic_exchange(&arm_w, 0)) {
		atomic_store(&w_held, 1);
		while (!atomic_load(&go_w))
			usleep(50);
	}
	__real_sys_futex_wait(addr, val, t);
}

static void cb(struct trcu_head *h) { (void)h; atomic_fetch_add(&ran, 1); }
static struct trcu_head h1, h2;
static _Atomic int q1, q2, quit;

static void *poster(void *a)
{
	struct trcu_head *h = a;

	call_rcu_hurry(h, cb);
	atomic_store(h == &h1 ? &q1 : &q2, 1);
	while (!atomic_load(&quit))
		usleep(1000);
	return NULL;
}

static void *caller(void *a) { (void)a; synchronize_rcu(); return NULL; }

int main(void)
{
	struct holder h;
	pthread_t ta, t1, t2;
	struct trcu_stats st;
	unsigned long g0;
	long t0;

	setvbuf(stdout, NULL, _IONBF, 0);
	CHECK_EQ(trcu_set_tunable("normal_wake_from_gp", 1), 0);
	CHECK_EQ(trcu_set_tunable("drive_from_caller", 1), 0);
	CHECK_EQ(trcu_set_tunable("nocb_threads", 2), 0);
	/* Every caller on the list, the one that finds itself alone too. */
	CHECK_EQ(trcu_set_tunable("sr_drive_alone", 0), 0);
	holder_start(&h);
	g0 = trcu_gp_seq();
	CHECK((g0 & 3) == 0);
	atomic_store(&g1_end, g0 + 4);
	atomic_store(&arm_a, 1);
	CHECK(pthread_create(&ta, NULL, caller, NULL) == 0);
	while (!atomic_load(&a_pushed)) usleep(50);
	atomic_store(&arm_w, 1);
	atomic_store(&arm_u, 1);
	/* Two posters: groups 0 and 1, one offload thread each; both
	 * callbacks wait for G1 (gp_mutex held here until both queued). */
	pthread_mutex_lock(&rcu_state.gp_mutex);
	CHECK(pthread_create(&t1, NULL, poster, &h1) == 0);
	while (!atomic_load(&q1)) usleep(50);
	CHECK(pthread_create(&t2, NULL, poster, &h2) == 0);
	while (!atomic_load(&q2)) usleep(50);
	usleep(20000);
	pthread_mutex_unlock(&rcu_state.gp_mutex);
	/* One offload thread drives G1 (covering A's node), the other waits. */
	t0 = check_now_ms();
	while (!(atomic_load(&w_held) && (trcu_gp_seq() & 3)) && check_now_ms() - t0 < 5000) usleep(100);
	CHECK(atomic_load(&w_held));
	printf("G1 in progress (gp_seq %lu), second offload thread waits on gp_end_futex\n", trcu_gp_seq());
	holder_release(&h);
	while (!atomic_load(&u_held)) usleep(100);
	printf("G1 ended (gp_seq %lu); driver holds gp_mutex, about to unlock\n", trcu_gp_seq());
	atomic_store(&go_a, 1);       /* A: snapshot G2, raise, trylock fails, return */
	pthread_join(ta, NULL);
	printf("caller returned; gp_seq_needed %lu\n", atomic_load(&rcu_state.gp_seq_needed));
	atomic_store(&go_u, 1);       /* driver unlocks, hands off to the waiter */
	usleep(20000);
	atomic_store(&go_w, 1);       /* waiter finds its GP done and leaves */
	t0 = check_now_ms();
	while (atomic_load(&ran) < 2 && check_now_ms() - t0 < 5000) usleep(100);
	CHECK_EQ(atomic_load(&ran), 2);
	/* No call into the library from here on. */
	t0 = check_now_ms();
	while (ULONG_CMP_LT(trcu_gp_seq(), atomic_load(&rcu_state.gp_seq_needed)) && check_now_ms() - t0 < 3000)
		usleep(1000);
	trcu_get_stats(&st);
	printf("after %ld ms: gp_seq %lu gp_seq_needed %lu kthread_started %d gp_completed %ld\n",
	       check_now_ms() - t0, trcu_gp_seq(), atomic_load(&rcu_state.gp_seq_needed),
	       (int)rcu_gp_kthread_started(), (long)st.gp_completed);
	atomic_store(&quit, 1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK(ULONG_CMP_GE(trcu_gp_seq(), atomic_load(&rcu_state.gp_seq_needed)));
	printf("test_sync_extra_request_driven_after_failed_trylock: OK\n");
	return 0;
}
