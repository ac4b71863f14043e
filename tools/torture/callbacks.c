/* SPDX-License-Identifier: MIT */
/*
 * Torture callbacks (torture.c describes the run): callback writers that
 * retire elements with call_rcu(), call_rcu_hurry() and rcu_free(), the
 * rcu_barrier() thread, and the call_rcu() flood (rcutorture's fwd_prog).
 */
#define _GNU_SOURCE   /* pthread_timedjoin_np */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <treercu/rcu.h>

#include "common.h"
#include "results.h"
#include "torture.h"

/* ---- Callback writers ---------------------------------------------------- */

/* End of an element's pipe: poison it and keep it a while before free(). */
static void ring_put(struct cbelem *ce)
{
	struct cbelem *old;

	atomic_store_explicit(&ce->e.magic, ELEM_POISON, memory_order_relaxed);
	atomic_store_explicit(&ce->e.seq_check, ELEM_POISON, memory_order_relaxed);
	pthread_mutex_lock(&cbt.ring_lock);
	old = cbt.ring[cbt.ring_head];
	cbt.ring[cbt.ring_head] = ce;
	cbt.ring_head = (cbt.ring_head + 1) % RING;
	pthread_mutex_unlock(&cbt.ring_lock);
	free(old);
	atomic_fetch_sub(&cbt.inflight, 1);
}

static void cb_stage(struct rcu_head *rh);

/* fwd_prog's drain: the next stage waits (no grace-period demand but the
 * flood's); the callback writer re-queues it afterwards. */
static void cb_defer(struct cbelem *ce)
{
	pthread_mutex_lock(&cbt.ring_lock);
	ce->deferred_next = cbt.deferred;
	cbt.deferred = ce;
	pthread_mutex_unlock(&cbt.ring_lock);
}

/* A callback that ran before its element's grace period: say how early. */
static void cb_early(struct cbelem *ce)
{
	static _Atomic int reported;
	unsigned long now = trcu_gp_seq();

	tt_fail(E_CB);
	if (atomic_fetch_add(&reported, 1) >= 5)
		return;
	usleep(1000);
	fprintf(stderr, "torture: %s callback ran early: removed %d, pipe stage %d, cookie %lu, "
		"gp_seq %lu when it ran (%lu 1 ms later, cookie %s then)\n",
		cb_kind_name[ce->kind], atomic_load(&ce->removed),
		atomic_load(&ce->e.pipe_count), ce->cookie, now, trcu_gp_seq(),
		poll_state_synchronize_rcu(ce->cookie) ? "complete" : "still not complete");
}

static void cb_queue(struct cbelem *ce)
{
	ce->cookie = get_state_synchronize_rcu();
	if (tt.busted == 2) {                  /* --busted 2: no grace period at all */
		atomic_fetch_add(&cbt.queued, 1);
		cb_stage(&ce->rh);
		return;
	}
	if (ce->kind == CB_HURRY)
		call_rcu_hurry(&ce->rh, cb_stage);
	else
		call_rcu(&ce->rh, cb_stage);
	/* After the call: rcu_barrier() waits for every call counted here. */
	atomic_fetch_add(&cbt.queued, 1);
}

/*
 * rcu_torture_cb(): one pipe stage per grace period.  The element must have
 * been removed before it was queued, and a whole grace period must have
 * passed since (its cookie): a callback run early fails here, and readers
 * that still hold it see the pipe count pass 1 or the poison.
 */
static void cb_stage(struct rcu_head *rh)
{
	struct cbelem *ce = (struct cbelem *)((char *)rh - offsetof(struct cbelem, rh));
	int pc;

	atomic_fetch_add(&cbt.invoked, 1);
	if (!atomic_load_explicit(&ce->removed, memory_order_relaxed) ||
	    !poll_state_synchronize_rcu(ce->cookie))
		cb_early(ce);
	pc = atomic_load_explicit(&ce->e.pipe_count, memory_order_relaxed) + 1;
	atomic_store_explicit(&ce->e.pipe_count, pc, memory_order_relaxed);
	if (pc >= PIPE_LEN)
		ring_put(ce);
	else if (atomic_load(&cbt.quiet))
		cb_defer(ce);
	else
		cb_queue(ce);
}

/* Re-queue the stages held back during fwd_prog's drain. */
static void cb_requeue_deferred(void)
{
	struct cbelem *ce;

	pthread_mutex_lock(&cbt.ring_lock);
	ce = cbt.deferred;
	cbt.deferred = NULL;
	pthread_mutex_unlock(&cbt.ring_lock);
	while (ce) {
		struct cbelem *next = ce->deferred_next;

		cb_queue(ce);
		ce = next;
	}
}

static void cb_retire(struct cbelem *ce, unsigned int x)
{
	ce->kind = (int)(x % CB_NKINDS);
	atomic_fetch_add(&cbt.kinds[ce->kind], 1);
	atomic_store_explicit(&ce->e.pipe_count, 1, memory_order_relaxed);
	atomic_store_explicit(&ce->removed, 1, memory_order_relaxed);
	if (ce->kind != CB_FREE) {
		cb_queue(ce);
		return;
	}
	rcu_free(ce);                          /* free() after one grace period */
	atomic_fetch_sub(&cbt.inflight, 1);
}

void *cbwriter_fn(void *arg)
{
	long idx = (long)(uintptr_t)arg;
	unsigned int rng = 0x2545f491u + (unsigned int)idx * 40503u;
	unsigned long seq = 0;
	int sig;

	trcu_register_thread();
	sig = sig_target_add();
	while (!tt_stopping()) {
		struct cbelem *ce, *old;

		tt_park_if_quiet();
		cb_requeue_deferred();
		if (atomic_load(&cbt.inflight) >= CB_INFLIGHT) {
			usleep(100);
			continue;
		}
		ce = calloc(1, sizeof(*ce));
		if (!ce) {
			tt_fail(E_THREAD);
			break;
		}
		atomic_fetch_add(&cbt.inflight, 1);
		tt_elem_init(&ce->e, ++seq);
		old = (struct cbelem *)rcu_xchg_pointer(&cbt.slot[idx], &ce->e);
		if (old)
			cb_retire(old, tt_rnd(&rng));
		atomic_fetch_add(&cbt.updates, 1);
		if (tt_rnd(&rng) % 16 == 0)
			usleep(tt_rnd(&rng) % 200);
	}
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

/* ---- rcu_barrier() --------------------------------------------------------- */

static _Atomic unsigned long bar_count;

static void bar_cb(struct rcu_head *rh)
{
	(void)rh;
	atomic_fetch_add_explicit(&bar_count, 1, memory_order_relaxed);
}

/* Queue n counting callbacks (lazy now and then), rcu_barrier(), check. */
static void barrier_round(unsigned int *rng)
{
	unsigned long n = 1 + tt_rnd(rng) % 1000, q;
	bool lazy = tt_rnd(rng) % 4 == 0 && !cbt.lazy_saved;   /* lazy=1 already: always */
	struct rcu_head *h = malloc(n * sizeof(*h));

	if (!h) {
		tt_fail(E_THREAD);
		return;
	}
	atomic_store(&bar_count, 0);
	if (lazy)
		trcu_set_tunable("lazy", 1);
	for (unsigned long i = 0; i < n; i++) {
		if (i % 2)
			call_rcu(&h[i], bar_cb);
		else
			call_rcu_hurry(&h[i], bar_cb);
	}
	q = atomic_load(&cbt.queued);          /* other threads' callbacks, queued before */
	rcu_barrier();
	if (lazy)
		trcu_set_tunable("lazy", cbt.lazy_saved);
	if (atomic_load(&bar_count) != n || atomic_load(&cbt.invoked) < q) {
		fprintf(stderr, "torture: rcu_barrier() returned with %lu of %lu callbacks run "
			"(others: %lu of %lu)\n", atomic_load(&bar_count), n,
			atomic_load(&cbt.invoked), q);
		tt_fail(E_BARRIER);
	}
	free(h);
	atomic_fetch_add(&cbt.barriers, 1);
	atomic_fetch_add(&cbt.lazy_barriers, lazy || cbt.lazy_saved);
	atomic_fetch_add(&cbt.barrier_cbs, n);
}

void *barrier_fn(void *arg)
{
	unsigned int rng = 0x51ed270bu;
	int sig;

	(void)arg;
	trcu_register_thread();
	sig = sig_target_add();
	while (!tt_stopping()) {
		tt_park_if_quiet();
		barrier_round(&rng);
		usleep(tt_rnd(&rng) % 2000);
	}
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

/* ---- call_rcu() flood (fwd_prog) -------------------------------------------- */

struct fwdcb {
	struct rcu_head rh;
	char pad[48];                    /* a 64-byte object */
};

static void fwd_cb(struct rcu_head *rh)
{
	unsigned long gp = trcu_gp_seq();
	unsigned long last = atomic_load_explicit(&cbt.fwd_last_gp, memory_order_relaxed);
	unsigned long inv = atomic_fetch_add(&cbt.fwd_invoked, 1);

	/* Only the flood thread's offload thread runs these: no race on the
	 * timeline, which the report reads after the drain's rcu_barrier().
	 * fwd_gp_end is 0 until the flood ended. */
	unsigned long end = atomic_load_explicit(&cbt.fwd_gp_end, memory_order_relaxed);

	if (gp != last && end && (long)(gp - end) > 0) {
		unsigned long k = tt_seq_diff(gp, end);

		if (k < FWD_TL && !cbt.fwd_tl[k].t) {
			cbt.fwd_tl[k].t = now_ns();
			cbt.fwd_tl[k].inv = inv;
		}
	}
	atomic_store_explicit(&cbt.fwd_last_gp, gp, memory_order_relaxed);
	free(rh);
}

/* Flood until the deadline, then on until every other requester parked. */
static unsigned long fwd_flood(double secs, unsigned long *peak)
{
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
	unsigned long n = 0;
	bool quiet = false;

	while (!tt_stopping()) {
		struct fwdcb *f;
		unsigned long pend;

		if (!quiet && now_ns() >= end) {
			atomic_store(&cbt.quiet, 1);
			quiet = true;
		}
		if (quiet && (atomic_load(&cbt.parked) >= cbt.requesters ||
			      now_ns() - end > 10000000000ull)) {
			cbt.fwd_parked_at_end = atomic_load(&cbt.parked);
			break;
		}
		f = malloc(sizeof(*f));
		if (!f) {
			tt_fail(E_THREAD);
			break;
		}
		/* Hurry, as the kernel's rcutorture floods (cur_ops->call is
		 * call_rcu_hurry() since lazy RCU): the barrier thread sets
		 * lazy=1 for a moment now and then, and flood callbacks queued
		 * then would wait out lazy_flush_ms (10 s) while unrelated GPs
		 * run, failing the drain check. */
		call_rcu_hurry(&f->rh, fwd_cb);
		n++;
		pend = n - atomic_load_explicit(&cbt.fwd_invoked, memory_order_relaxed);
		if (pend > *peak)
			*peak = pend;
	}
	return n;
}

/* Grace periods from gp_end until the last flood callback ran (0 if before). */
static unsigned long fwd_gps(unsigned long gp_end)
{
	unsigned long last = atomic_load(&cbt.fwd_last_gp);

	if ((long)(last - gp_end) <= 0)
		return 0;
	return tt_seq_diff(last, gp_end);
}

/* A failed round: the drain, grace period by grace period, and who else
 * asked for grace periods meanwhile (stats from the flood's end to the end
 * of the drain). */
static void fwd_report(unsigned long n, const struct trcu_stats *a, const struct trcu_stats *b)
{
	fprintf(stderr, "torture: fwd_prog drain: %d of %d requesters parked; GPs %lu "
		"(caller-driven %lu, kthread %lu), other callbacks queued %ld, rcu_free %ld, "
		"sync wakes: list %ld+%ld\n", cbt.fwd_parked_at_end, cbt.requesters,
		b->gp_completed - a->gp_completed, b->gp_driven_by_caller - a->gp_driven_by_caller,
		b->gp_driven_by_kthread - a->gp_driven_by_kthread, b->cbs_queued - a->cbs_queued,
		b->frees_queued - a->frees_queued, b->sr_woken_direct - a->sr_woken_direct,
		b->sr_woken_deferred - a->sr_woken_deferred);
	for (int k = 1; k < FWD_TL; k++)
		if (cbt.fwd_tl[k].t)
			fprintf(stderr, "torture: fwd_prog drain: GP +%d first seen at %.1f ms, "
				"%lu of %lu invoked\n", k,
				(double)(cbt.fwd_tl[k].t - cbt.fwd_t_end) / 1e6, cbt.fwd_tl[k].inv, n);
}

/*
 * The flood's checks.  The grace-period count measures whether the flood's
 * callbacks advance by their own requests (a stranded callback waits for
 * somebody else's grace periods), so it only means something when nobody
 * else asks for grace periods during the drain: every requester parked and
 * no other call_rcu().  Otherwise (quiet == false: seen once in 600 floods,
 * 9 processes on 2 CPUs, load average 70: 17 GPs while the flood's 4226
 * callbacks ran at a steady 200-300 per GP beside 4819 others') the count
 * is reported but not held to the limit; a drain that does not end within
 * FWD_DRAIN_MAX_NS is a failure either way.
 */
#define FWD_DRAIN_MAX_NS 30000000000ull
static void fwd_check(unsigned long n, unsigned long peak, unsigned long gps, double drain_ms,
		      bool quiet, bool cut)
{
	unsigned long inv = atomic_load(&cbt.fwd_invoked);
	bool stranded = drain_ms * 1e6 >= (double)FWD_DRAIN_MAX_NS;
	bool too_many = quiet && gps > (unsigned long)cbt.fwd_max_gps;

	if (inv != n)
		fprintf(stderr, "torture: fwd_prog: %lu of %lu flood callbacks invoked after "
			"rcu_barrier()\n", inv, n);
	if (too_many)
		fprintf(stderr, "torture: fwd_prog: %lu grace periods after the flood ended "
			"before its last callback ran (limit %ld)\n", gps, cbt.fwd_max_gps);
	if (stranded)
		fprintf(stderr, "torture: fwd_prog: %lu of %lu flood callbacks still not run "
			"%.0f ms after the flood ended\n", n - inv, n, drain_ms);
	if (peak > (unsigned long)cbt.cb_max_pending + 64)
		fprintf(stderr, "torture: fwd_prog: %lu callbacks pending, above cb_max_pending "
			"%ld\n", peak, cbt.cb_max_pending);
	if (inv != n || too_many || stranded || peak > (unsigned long)cbt.cb_max_pending + 64)
		tt_fail(E_FWD);
	/* A flood that the end of the run cut short never asked anyone to
	 * park: counted apart. */
	if (cut) {
		cbt.fwd_cut++;
	} else if (!quiet) {
		cbt.fwd_unquiet++;
		if (gps > cbt.fwd_max_gps_unquiet)
			cbt.fwd_max_gps_unquiet = gps;
	}
	cbt.fwd_rounds++;
	cbt.fwd_cbs += n;
	if (quiet && gps > cbt.fwd_max_gps_seen)
		cbt.fwd_max_gps_seen = gps;
	if (peak > cbt.fwd_peak)
		cbt.fwd_peak = peak;
	if (drain_ms > cbt.fwd_max_drain_ms)
		cbt.fwd_max_drain_ms = drain_ms;
}

/*
 * rcu_torture_fwd_prog_cr(): flood, then with every other grace-period
 * requester parked, count the grace periods until the last callback ran.
 */
static void fwd_round(void)
{
	unsigned long peak = 0, n, gp_end, gps;
	struct trcu_stats st0, st_end, st1;
	bool quiet, cut;
	uint64_t t_end;
	double drain_ms;

	atomic_store(&cbt.fwd_invoked, 0);
	atomic_store(&cbt.fwd_last_gp, trcu_gp_seq());
	atomic_store(&cbt.fwd_gp_end, 0);
	cbt.fwd_parked_at_end = 0;
	memset(cbt.fwd_tl, 0, sizeof(cbt.fwd_tl));
	/* Task readers keep their sections short from here to the drain's
	 * end (torture/tasks.c). */
	atomic_store(&cbt.flooding, 1);
	trcu_get_stats(&st0);
	n = fwd_flood(cbt.fwd_s, &peak);
	trcu_get_stats(&st_end);
	gp_end = trcu_gp_seq();
	t_end = now_ns();
	cbt.fwd_t_end = t_end;
	atomic_store(&cbt.fwd_gp_end, gp_end);
	while (atomic_load(&cbt.fwd_invoked) < n && now_ns() - t_end < FWD_DRAIN_MAX_NS)
		usleep(100);
	drain_ms = (double)(now_ns() - t_end) / 1e6;
	trcu_get_stats(&st1);
	rcu_barrier();
	atomic_store(&cbt.quiet, 0);
	atomic_store(&cbt.flooding, 0);
	cbt.fwd_pushback += (unsigned long)(st1.cbs_pushback - st0.cbs_pushback);
	gps = fwd_gps(gp_end);
	cut = tt_stopping();          /* once: the run may end meanwhile */
	quiet = !cut && cbt.fwd_parked_at_end >= cbt.requesters &&
		st1.cbs_queued == st_end.cbs_queued;
	if (gps > (unsigned long)cbt.fwd_max_gps && !cut)
		fwd_report(n, &st_end, &st1);
	fwd_check(n, peak, gps, drain_ms, quiet, cut);
}

/* Sleeps s seconds; false if the run stops meanwhile. */
bool tt_nap(double s)
{
	uint64_t end = now_ns() + (uint64_t)(s * 1e9);

	while (now_ns() < end) {
		if (tt_stopping())
			return false;
		usleep(10000);
	}
	return !tt_stopping();
}

void *fwd_fn(void *arg)
{
	int sig;

	(void)arg;
	trcu_register_thread();
	sig = sig_target_add();
	while (tt_nap(cbt.fwd_gap_s))
		fwd_round();
	sig_target_del(sig);
	trcu_unregister_thread();
	return NULL;
}

/* After the run: every callback ran, every rcu_free() pointer was freed.
 * Pipe-stage callbacks re-queue themselves, so a barrier may find new ones:
 * repeat (a pipe has PIPE_LEN stages). */
void cb_final_check(void)
{
	struct trcu_stats st;

	for (int i = 0; i <= PIPE_LEN + 1; i++) {
		cb_requeue_deferred();
		rcu_barrier();
		if (atomic_load(&cbt.queued) == atomic_load(&cbt.invoked))
			break;
	}
	trcu_get_stats(&st);
	if (atomic_load(&cbt.queued) != atomic_load(&cbt.invoked) ||
	    st.frees_done != st.frees_queued) {
		fprintf(stderr, "torture: after rcu_barrier(): callbacks %lu queued, %lu run; "
			"rcu_free() %ld queued, %ld freed\n", atomic_load(&cbt.queued),
			atomic_load(&cbt.invoked), st.frees_queued, st.frees_done);
		tt_fail(E_CB);
	}
}

void cb_cleanup(void)
{
	for (int i = 0; i < MAX_CBW; i++) {
		free(cbt.slot[i]);             /* struct elem first: same pointer */
		cbt.slot[i] = NULL;
	}
	for (int i = 0; i < RING; i++) {
		free(cbt.ring[i]);
		cbt.ring[i] = NULL;
	}
}
