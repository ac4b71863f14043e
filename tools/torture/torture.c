/* SPDX-License-Identifier: MIT */
/*
 * torture: the rcutorture pipeline in userspace.
 *
 * One writer publishes a new element with rcu_assign_pointer() and ages the
 * replaced ones through a pipe of RCU_TORTURE_PIPE_LEN stages, one grace
 * period per stage (synchronize_rcu, cond, polled, _full and expedited
 * variants in turn), then poisons and frees them into a pool.  Readers
 * (preemptible-style, QSBR, and short-lived threads that register and
 * unregister or just exit) record each element's pipe count (Reader Pipe)
 * and the grace periods that ended during the read (Reader Batch).  A pipe
 * count above 1 means an element went through a whole grace period while a
 * reader held it: failure.  Fake writers run every grace-period primitive
 * concurrently and check its cookie afterwards.  `--busted 1` (rcutorture's
 * torture_type=busted) makes the writer skip its grace periods, to show
 * that the checks fire; `--busted 2` runs the callback writers' callbacks at
 * once, without a grace period.
 *
 * Callbacks (rcutorture's deferred-free writers, rcu_barrier test and
 * fwd_prog): callback writers publish malloc'd elements in their own slots
 * (readers read those too) and retire the replaced ones with call_rcu(),
 * call_rcu_hurry() (the callback re-queues the element once per pipe stage,
 * checking that the element was removed and that the cookie taken at the
 * call_rcu() has completed, then poisons it) or rcu_free().  A barrier
 * thread queues N counting callbacks (lazy now and then), calls
 * rcu_barrier() and checks that all N ran and that every callback queued
 * before it ran.  A flood thread floods call_rcu() for a few seconds, parks
 * every other grace-period requester, and checks that its callbacks are all
 * invoked within --fwd-max-gps grace periods after the flood ended and that
 * cb_max_pending bounded it.  --sync-path 0|1|2|all picks the
 * synchronize_rcu() path (normal_wake_from_gp); "all" rotates it every 100 ms.
 *
 * Task readers (torture/tasks.c): fibers switched out inside their
 * sections and moved between workers, with the blocked-list placement and
 * fanout_leaf rotated and the workers replaced now and then.  `--busted 3`
 * makes grace periods skip the promotion of the worker lists: the run must
 * fail.
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

const char *const gp_name[GP_NTYPES] = {
	"sync", "cond", "poll", "cond_full", "poll_full", "exp", "completed",
};
const char *const err_name[E_NTYPES] = {
	"mbtest", "poison", "reuse", "gp_during_read", "gp_cookie", "stall", "thread",
	"callback", "barrier", "fwd_prog", "fork", "cancel",
};
const char *const path_name[NPATH] = { "wakeme", "waiter_list", "gp_futex" };
const char *const cb_kind_name[CB_NKINDS] = { "call_rcu", "call_rcu_hurry", "rcu_free" };
const char *const inj_name[INJ_N] = { "signal", "fork", "cancel", "exit", "qsbr", "nomem" };
const char *const qb_name[QB_N] = {
	"sync", "exp", "barrier", "cond", "cond_full", "poll", "rcu_free", "call_rcu",
};

struct tt_state tt = { .lock = PTHREAD_MUTEX_INITIALIZER };
struct cbt_state cbt = { .ring_lock = PTHREAD_MUTEX_INITIALIZER };
struct inj_state inj = { .tlock = PTHREAD_MUTEX_INITIALIZER };

/* ---- Driver ------------------------------------------------------------- */

struct tt_threads {
	pthread_t tid[MAX_THREADS];
	struct rd *rd;
	int n;
};

static void spawn(struct tt_threads *th, void *(*fn)(void *), void *arg)
{
	if (th->n >= MAX_THREADS || pthread_create(&th->tid[th->n], NULL, fn, arg)) {
		tt_fail(E_THREAD);
		return;
	}
	th->n++;
}

/* The injectors' threads; rd: two reader states of their own. */
static void start_injectors(struct tt_threads *th, struct rd *rd)
{
	rd[0].rng = 0x510e527fu;
	rd[1].rng = 0x9b05688cu;
	if (inj.enabled & (1u << INJ_SIGNAL)) {
		sig_install();
		spawn(th, signaller_fn, NULL);
	}
	if (inj.enabled & (1u << INJ_FORK))
		spawn(th, forker_fn, NULL);
	if (inj.enabled & (1u << INJ_CANCEL))
		spawn(th, canceller_fn, NULL);
	if (inj.enabled & (1u << INJ_EXIT))
		spawn(th, exiter_fn, &rd[0]);
	if (inj.enabled & (1u << INJ_QSBR))
		spawn(th, qsbr_blocker_fn, &rd[1]);
	if (inj.enabled & (1u << INJ_NOMEM))
		spawn(th, nomem_fn, NULL);
}

static void start_all(struct tt_threads *th)
{
	long nrd = tt.readers + tt.qsbr_readers + tt.churners;

	th->rd = calloc((size_t)nrd + 3, sizeof(*th->rd));
	for (long i = 0; th->rd && i < nrd; i++) {
		th->rd[i].qsbr = i >= tt.readers && i < tt.readers + tt.qsbr_readers;
		th->rd[i].rng = 0x12345u + (unsigned int)i * 7919u;
		spawn(th, i < tt.readers + tt.qsbr_readers ? reader_fn : churn_fn, &th->rd[i]);
	}
	/* Everything that requests grace periods parks in fwd_prog's drain. */
	cbt.requesters = 1 + (int)tt.fakewriters + (int)cbt.writers + (cbt.barrier ? 1 : 0) +
		((inj.enabled & (1u << INJ_CANCEL)) ? (int)inj.victims : 0) +
		((inj.enabled & (1u << INJ_QSBR)) ? 1 : 0);
	spawn(th, writer_fn, NULL);
	for (long i = 0; i < tt.fakewriters; i++)
		spawn(th, fakewriter_fn, (void *)(uintptr_t)(i + 1));
	for (long i = 0; i < cbt.writers; i++)
		spawn(th, cbwriter_fn, (void *)(uintptr_t)i);
	if (cbt.barrier)
		spawn(th, barrier_fn, NULL);
	if (cbt.fwd)
		spawn(th, fwd_fn, NULL);
	if (th->rd)
		start_injectors(th, &th->rd[nrd]);
	start_task_readers();
}

/* Wait out the run; false if the writer stopped making progress. */
static bool run_for(double duration, double stall_s)
{
	uint64_t t0 = now_ns(), last_t = t0;
	unsigned long last = 0;
	struct progress p;

	progress_start(&p, "torture", duration);
	while (now_ns() - t0 < (uint64_t)(duration * 1e9)) {
		unsigned long u = atomic_load(&tt.updates);

		sleep_ns(50000000);
		rotate_path(now_ns() - t0);
		rotate_inject(now_ns() - t0);
		rotate_task_knobs(now_ns() - t0);
		if (u != last) {
			last = u;
			last_t = now_ns();
		} else if (now_ns() - last_t > (uint64_t)(stall_s * 1e9)) {
			progress_done(&p);
			fprintf(stderr, "torture: writer made no progress for %.0f s\n", stall_s);
			return false;
		}
		progress_update(&p, (double)(now_ns() - t0) / (duration * 1e9));
	}
	progress_done(&p);
	return true;
}

/* Join everything within a deadline; false if some thread hangs. */
static bool join_all(struct tt_threads *th, double timeout_s)
{
	struct timespec ts;

	stop_task_readers();
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)timeout_s;
	for (int i = 0; i < th->n; i++) {
		if (pthread_timedjoin_np(th->tid[i], NULL, &ts)) {
			fprintf(stderr, "torture: a thread did not finish within %.0f s of stop\n",
				timeout_s);
			return false;
		}
	}
	return true;
}

static unsigned long count_failures(void)
{
	unsigned long f = 0;

	for (int i = 2; i <= PIPE_LEN; i++)
		f += tt.pipe[i] + atomic_load(&inj.sig_pipe[i]);
	for (int e = 0; e < E_NTYPES; e++)
		f += atomic_load(&tt.errors[e]);
	return f;
}

static void print_hist(const char *name, const uint64_t *h)
{
	printf("%s:", name);
	for (int i = 0; i <= PIPE_LEN; i++)
		printf(" %llu", (unsigned long long)h[i]);
	printf("\n");
}

static void cb_report(void)
{
	printf("callback writers %ld: %lu updates; retired by", cbt.writers,
	       atomic_load(&cbt.updates));
	for (int k = 0; k < CB_NKINDS; k++)
		printf(" %s %lu", cb_kind_name[k], atomic_load(&cbt.kinds[k]));
	printf("; pipe-stage callbacks queued %lu, run %lu\n", atomic_load(&cbt.queued),
	       atomic_load(&cbt.invoked));
	printf("rcu_barrier: %lu rounds (%lu with lazy=1), %lu counted callbacks\n",
	       atomic_load(&cbt.barriers), atomic_load(&cbt.lazy_barriers),
	       atomic_load(&cbt.barrier_cbs));
	printf("fwd_prog: %lu floods of %.1f s, %lu callbacks, peak pending %lu "
	       "(cb_max_pending %ld), %lu push-backs, max drain %.1f ms, max GPs after the "
	       "flood ended %lu (limit %ld); %lu drains with other GP demand (not held to "
	       "the limit), max GPs %lu; %lu cut by the end of the run\n", cbt.fwd_rounds,
	       cbt.fwd_s, cbt.fwd_cbs, cbt.fwd_peak, cbt.cb_max_pending, cbt.fwd_pushback,
	       cbt.fwd_max_drain_ms, cbt.fwd_max_gps_seen, cbt.fwd_max_gps, cbt.fwd_unquiet,
	       cbt.fwd_max_gps_unquiet, cbt.fwd_cut);
}

/* Every thread of the run is gone (some exited inside a section, some
 * registered, some cancelled): so are their slots. */
static int slots_now(void)
{
	struct trcu_stats st;

	trcu_get_stats(&st);
	return st.nr_slots;
}

/* The library's GP kthread holds a slot of its own while it exists. */
static int gp_kthreads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "trcu_gp", 7))
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static void slots_check(double timeout_s)
{
	uint64_t end = now_ns() + (uint64_t)(timeout_s * 1e9);
	int want;

	while ((want = inj.slots_before + gp_kthreads()) != (inj.slots_after = slots_now()) &&
	       now_ns() < end)
		usleep(10000);
	if (inj.slots_after != want) {
		fprintf(stderr, "torture: %d thread slots registered %.0f s after every thread of "
			"the run exited (%d before it, %d for the GP kthread)\n", inj.slots_after,
			timeout_s, inj.slots_before, want - inj.slots_before);
		tt_fail(E_THREAD);
	}
}

/* After the run and its rcu_barrier(): every callback of the cancelled
 * updaters ran. */
static void inj_final_check(void)
{
	if (atomic_load(&inj.victim_cbs_queued) != atomic_load(&inj.victim_cbs_run)) {
		fprintf(stderr, "torture: after rcu_barrier(): cancelled updaters' callbacks %lu "
			"queued, %lu run\n", atomic_load(&inj.victim_cbs_queued),
			atomic_load(&inj.victim_cbs_run));
		tt_fail(E_CANCEL);
	}
	if (atomic_load(&inj.nomem_cbs_queued) != atomic_load(&inj.nomem_cbs_run)) {
		fprintf(stderr, "torture: after rcu_barrier(): nomem threads' callbacks %lu "
			"queued, %lu run\n", atomic_load(&inj.nomem_cbs_queued),
			atomic_load(&inj.nomem_cbs_run));
		tt_fail(E_CB);
	}
}

static void inj_report(const struct trcu_stats *st)
{
	unsigned long pipe[PIPE_LEN + 1];

	printf("injectors:");
	for (int i = 0; i < INJ_N; i++)
		if (inj.enabled & (1u << i))
			printf(" %s", inj_name[i]);
	printf("%s%s\n", inj.enabled ? "" : " none",
	       inj.rotate ? " (each in turn)" : "");
	if (inj.enabled & (1u << INJ_SIGNAL)) {
		for (int i = 0; i <= PIPE_LEN; i++)
			pipe[i] = atomic_load(&inj.sig_pipe[i]);
		printf("signal: %lu sent, %lu handler read-side sections; Signal Pipe:",
		       atomic_load(&inj.sig_sent), atomic_load(&inj.sig_sections));
		for (int i = 0; i <= PIPE_LEN; i++)
			printf(" %lu", pipe[i]);
		printf("\n");
	}
	if ((inj.enabled & (1u << INJ_FORK)) && FORK_SKIPPED)
		printf("fork: not run in this build (%s)\n", FORK_SKIPPED ? FORK_SKIPPED : "");
	else if (inj.enabled & (1u << INJ_FORK))
		printf("fork: %lu children ran every API and exited, %lu failed\n",
		       atomic_load(&inj.forks) - atomic_load(&inj.fork_failed),
		       atomic_load(&inj.fork_failed));
	if (inj.enabled & (1u << INJ_CANCEL))
		printf("cancel: %lu updaters cancelled and restarted (%ld at a time, %lu "
		       "updates; callbacks %lu queued, %lu run)\n", atomic_load(&inj.cancels),
		       inj.victims, atomic_load(&inj.victim_ops),
		       atomic_load(&inj.victim_cbs_queued), atomic_load(&inj.victim_cbs_run));
	if (inj.enabled & (1u << INJ_EXIT))
		printf("exit: %lu threads exited inside a read-side section (%lu nested)\n",
		       atomic_load(&inj.exits), atomic_load(&inj.exits_nested));
	if (inj.enabled & (1u << INJ_NOMEM))
		printf("nomem: %lu threads with no memory for their callback state, callbacks "
		       "%lu queued, %lu run\n", atomic_load(&inj.nomem_threads),
		       atomic_load(&inj.nomem_cbs_queued), atomic_load(&inj.nomem_cbs_run));
	if (inj.enabled & (1u << INJ_QSBR)) {
		printf("qsbr: online QSBR thread's blocking calls:");
		for (int k = 0; k < QB_N; k++)
			printf(" %s %lu", qb_name[k], atomic_load(&inj.qsbr_calls[k]));
		printf("\n");
	}
	printf("thread slots (the GP kthread's apart): %d before the run, %d once its threads "
	       "exited\n", inj.slots_before, inj.slots_after - gp_kthreads());
}

static void report(double duration, unsigned long failures, const struct trcu_stats *st)
{
	printf("\ntorture: %.1f s, %ld readers, %ld QSBR readers, %ld churn threads, "
	       "1 writer, %ld fake writers%s\n", duration, tt.readers, tt.qsbr_readers,
	       tt.churners, tt.fakewriters, tt.busted == 1 ? " (BUSTED: writer skips GPs)" :
	       tt.busted == 2 ? " (BUSTED: callbacks run at once)" :
	       tt.busted == 3 ? " (BUSTED: worker lists never promoted)" : "");
	printf("ver: %lu tfle: %lu nt: %llu churn: %lu", atomic_load(&tt.updates),
	       tt.freelist_empty, (unsigned long long)tt.reads, atomic_load(&tt.churns));
	for (int e = 0; e < E_NTYPES; e++)
		printf(" %s: %lu", err_name[e], atomic_load(&tt.errors[e]));
	printf("\n");
	print_hist("Reader Pipe", tt.pipe);
	print_hist("Reader Batch", tt.batch);
	print_hist("Free-Block Circulation", tt.wcount);
	printf("GP types:");
	for (int g = 0; g < GP_NTYPES; g++)
		printf(" %s %lu", gp_name[g], atomic_load(&tt.gp_types[g]));
	printf("\nsynchronize_rcu() paths (normal_wake_from_gp %s):", tt.sync_path < 0 ?
	       "rotated every 100 ms" : path_name[tt.sync_path]);
	for (int i = 0; i < NPATH; i++)
		printf(" %s %lu", path_name[i], atomic_load(&tt.sync_calls[i]));
	printf("\n");
	cb_report();
	task_report();
	inj_report(st);
	printf("treercu: gp_completed %lu (caller-driven %lu, kthread %lu) fqs_scans %lu "
	       "stall_warnings %lu fenced %d\n", st->gp_completed, st->gp_driven_by_caller,
	       st->gp_driven_by_kthread, st->fqs_scans, st->stall_warnings, st->fenced);
	printf("treercu: cbs_queued %ld cbs_invoked %ld cbs_pending %ld cbs_pushback %ld "
	       "frees_queued %ld frees_done %ld frees_fallback %ld nocb_threads %d\n",
	       st->cbs_queued, st->cbs_invoked, st->cbs_pending, st->cbs_pushback,
	       st->frees_queued, st->frees_done, st->frees_fallback, st->nocb_threads);
	printf("--- End of test: %s (%lu failures)\n", failures ? "FAILURE" : "SUCCESS", failures);
}

static void cb_json(struct json *j)
{
	json_obj(j, "callbacks");
	json_int(j, "writers", cbt.writers);
	json_int(j, "updates", (long long)atomic_load(&cbt.updates));
	for (int k = 0; k < CB_NKINDS; k++)
		json_int(j, cb_kind_name[k], (long long)atomic_load(&cbt.kinds[k]));
	json_int(j, "stage_callbacks_queued", (long long)atomic_load(&cbt.queued));
	json_int(j, "stage_callbacks_run", (long long)atomic_load(&cbt.invoked));
	json_end(j, '}');
	json_obj(j, "barrier");
	json_int(j, "rounds", (long long)atomic_load(&cbt.barriers));
	json_int(j, "lazy_rounds", (long long)atomic_load(&cbt.lazy_barriers));
	json_int(j, "callbacks", (long long)atomic_load(&cbt.barrier_cbs));
	json_end(j, '}');
	json_obj(j, "fwd_prog");
	json_int(j, "rounds", (long long)cbt.fwd_rounds);
	json_num(j, "flood_s", cbt.fwd_s);
	json_int(j, "callbacks", (long long)cbt.fwd_cbs);
	json_int(j, "peak_pending", (long long)cbt.fwd_peak);
	json_int(j, "cb_max_pending", cbt.cb_max_pending);
	json_int(j, "pushbacks", (long long)cbt.fwd_pushback);
	json_num(j, "max_drain_ms", cbt.fwd_max_drain_ms);
	json_int(j, "max_gps_after_flood", (long long)cbt.fwd_max_gps_seen);
	json_int(j, "gps_limit", cbt.fwd_max_gps);
	json_int(j, "drains_with_other_gp_demand", (long long)cbt.fwd_unquiet);
	json_int(j, "max_gps_after_flood_other_demand", (long long)cbt.fwd_max_gps_unquiet);
	json_int(j, "floods_cut_by_end_of_run", (long long)cbt.fwd_cut);
	json_end(j, '}');
}

static void inj_json(struct json *j)
{
	json_obj(j, "injectors");
	for (int i = 0; i < INJ_N; i++)
		json_int(j, inj_name[i], (inj.enabled >> i) & 1);
	json_int(j, "rotated", inj.rotate);
	json_int(j, "signals_sent", (long long)atomic_load(&inj.sig_sent));
	json_int(j, "signal_sections", (long long)atomic_load(&inj.sig_sections));
	json_int(j, "forks", (long long)atomic_load(&inj.forks));
	json_int(j, "forks_failed", (long long)atomic_load(&inj.fork_failed));
	json_int(j, "cancels", (long long)atomic_load(&inj.cancels));
	json_int(j, "exits_in_section", (long long)atomic_load(&inj.exits));
	json_int(j, "nomem_threads", (long long)atomic_load(&inj.nomem_threads));
	json_int(j, "nomem_cbs_queued", (long long)atomic_load(&inj.nomem_cbs_queued));
	json_int(j, "nomem_cbs_run", (long long)atomic_load(&inj.nomem_cbs_run));
	for (int k = 0; k < QB_N; k++) {
		char name[32];

		snprintf(name, sizeof(name), "qsbr_%s", qb_name[k]);
		json_int(j, name, (long long)atomic_load(&inj.qsbr_calls[k]));
	}
	json_end(j, '}');
}

static int write_json(const struct tool_opts *o, double duration, unsigned long failures)
{
	struct json j;

	if (json_open(&j, o, "torture"))
		return -1;
	json_str(&j, "command", "torture");
	json_num(&j, "duration_s", duration);
	json_int(&j, "failures", (long long)failures);
	json_u64_array(&j, "reader_pipe", tt.pipe, PIPE_LEN + 1);
	json_u64_array(&j, "reader_batch", tt.batch, PIPE_LEN + 1);
	json_u64_array(&j, "free_block_circulation", tt.wcount, PIPE_LEN + 1);
	json_int(&j, "reads", (long long)tt.reads);
	json_int(&j, "updates", (long long)atomic_load(&tt.updates));
	json_int(&j, "churns", (long long)atomic_load(&tt.churns));
	json_obj(&j, "errors");
	for (int e = 0; e < E_NTYPES; e++)
		json_int(&j, err_name[e], (long long)atomic_load(&tt.errors[e]));
	json_end(&j, '}');
	json_obj(&j, "gp_types");
	for (int g = 0; g < GP_NTYPES; g++)
		json_int(&j, gp_name[g], (long long)atomic_load(&tt.gp_types[g]));
	json_end(&j, '}');
	json_obj(&j, "sync_paths");
	for (int i = 0; i < NPATH; i++)
		json_int(&j, path_name[i], (long long)atomic_load(&tt.sync_calls[i]));
	json_end(&j, '}');
	cb_json(&j);
	inj_json(&j);
	return json_close(&j);
}

static void tt_init(void)
{
	tt_pool_init();
}

/* --sync-path 0|1|2|all into tt.sync_path (-1: all). */
static bool parse_sync_path(struct tool_opts *o)
{
	const char *v = opt_str(o, "sync-path");

	tt.sync_path = -1;
	if (!v || !strcmp(v, "all"))
		return true;
	if (v[0] >= '0' && v[0] < '0' + NPATH && !v[1]) {
		tt.sync_path = v[0] - '0';
		return true;
	}
	fprintf(stderr, "treercu torture: --sync-path %s: expected 0, 1, 2 or all\n", v);
	return false;
}

const struct tool_opt torture_opts[] = {
	TOPT_N("duration", "SEC", "seconds", 0.1, 1e6, 60, 5, "length of the run"),
	TOPT_I("readers", "N", "threads", 0, 16, 2, 2,
	       "preemptible-style reader threads checking each element's pipe count"),
	TOPT_I("qsbr-readers", "N", "threads", 0, 16, 1, 1, "QSBR reader threads"),
	TOPT_I("fake-writers", "N", "threads", 0, 16, 2, 2,
	       "threads running every grace-period primitive and checking its cookie"),
	TOPT_I("churn", "N", "threads", 0, 8, 1, 1,
	       "short-lived reader threads that register and unregister or just exit"),
	TOPT_N("stall", "SEC", "seconds", 1, 3600, 30, 30,
	       "no progress for this long counts as a stall (failure)"),
	TOPT_I("busted", "0|1|2|3", "mode", 0, 3, 0, 0,
	       "break RCU on purpose to show the checks fire (1: the writer skips its "
	       "grace periods, 2: callbacks run at once, 3: grace periods do not promote "
	       "the task readers' worker lists); the run must then fail"),
	TOPT_I("task-readers", "N", "fibers", 0, 1024, 16, 8,
	       "task readers: fibers switched out inside their sections and moved between "
	       "workers (include/treercu/task.h)"),
	TOPT_I("task-workers", "N", "threads", 1, 16, 2, 2, "worker threads of the task readers"),
	TOPT_I("task-rotate", "0|1", "boolean", 0, 1, 1, 1,
	       "1: rotate per_worker_blocked_lists every 100 ms and fanout_leaf (1 and back) "
	       "every 300 ms"),
	TOPT_I("cb-writers", "N", "threads", 0, MAX_CBW, 1, 1, "call_rcu() writer threads"),
	TOPT_I("barrier", "0|1", "boolean", 0, 1, 1, 1, "1: check rcu_barrier() too"),
	TOPT_I("fwd", "0|1", "boolean", 0, 1, 1, 1,
	       "1: call_rcu() floods checking forward progress"),
	TOPT_N("fwd-secs", "SEC", "seconds", 0.01, 3600, 3, 1, "length of one flood"),
	TOPT_I("fwd-max-gps", "N", "grace periods", 0, 1000000, 10, 10,
	       "grace periods a flood's backlog may take to drain"),
	TOPT_S("sync-path", "0|1|2|all", "all (rotated every 100 ms)",
	       "the synchronize_rcu() wake path (normal_wake_from_gp) to exercise"),
	TOPT_S("inject", "LIST", "all (each in turn for --inject-ms)",
	       "fault injectors: all, none, or a comma-separated list of signal (read-side "
	       "sections in a signal handler sent at a high rate into readers, updaters and "
	       "grace-period drivers), fork (the child runs a short torture of every API and "
	       "exits; not in the sanitizer builds), cancel (pthread_cancel() of updaters, "
	       "then restarted), exit (threads exit inside a read-side section), qsbr (an "
	       "online QSBR thread calls every blocking API), nomem (short-lived threads "
	       "get no memory for their callback state and queue on the shared queue); a "
	       "list runs its injectors all the time"),
	TOPT_I("inject-ms", "MS", "milliseconds", 10, 3600000, 1000, 1000,
	       "with --inject all: how long each injector runs before the next"),
	TOPT_I("signal-us", "US", "microseconds", 1, 1000000, 50, 50,
	       "signal injector: pause between two signals"),
	TOPT_I("fork-ms", "MS", "milliseconds", 1, 3600000, 300, 300,
	       "fork injector: pause between two forks (each child runs 150 ms)"),
	TOPT_I("cancel-ms", "MS", "milliseconds", 1, 3600000, 20, 20,
	       "cancel injector: mean pause between two cancellations"),
	TOPT_I("cancel-victims", "N", "threads", 1, MAX_VICTIMS, 2, 2,
	       "cancel injector: updater threads cancelled and restarted"),
	TOPT_END,
};

/* --inject all|none|LIST into inj.enabled and inj.rotate. */
static bool parse_inject(struct tool_opts *o)
{
	const char *v = opt_str(o, "inject");
	char buf[128], *save = NULL;

	inj.enabled = (1u << INJ_N) - 1;
	inj.rotate = true;
	if (!v || !strcmp(v, "all"))
		return true;
	inj.enabled = 0;
	inj.rotate = false;
	if (!strcmp(v, "none"))
		return true;
	if (strlen(v) >= sizeof(buf)) {
		fprintf(stderr, "treercu torture: --inject: list too long\n");
		return false;
	}
	strcpy(buf, v);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i = 0;

		while (i < INJ_N && strcmp(w, inj_name[i]))
			i++;
		if (i == INJ_N) {
			fprintf(stderr, "treercu torture: --inject %s: unknown injector '%s' "
				"(expected all, none, or a comma-separated list of signal, fork, "
				"cancel, exit, qsbr)\n", v, w);
			return false;
		}
		inj.enabled |= 1u << i;
	}
	return true;
}

static bool torture_opts_read(struct tool_opts *o, double *duration, double *stall_s)
{
	tool_bind(o, torture_opts);
	if (!parse_sync_path(o) || !parse_inject(o))
		return false;
	opt_long(o, "inject-ms", &inj.period_ms);
	opt_long(o, "signal-us", &inj.signal_us);
	opt_long(o, "fork-ms", &inj.fork_ms);
	opt_long(o, "cancel-ms", &inj.cancel_ms);
	opt_long(o, "cancel-victims", &inj.victims);
	atomic_store(&inj.active, inj.rotate ? 1u : inj.enabled);
	cbt.fwd_gap_s = o->quick ? 1 : 5;
	opt_double(o, "duration", duration);
	opt_long(o, "readers", &tt.readers);
	opt_long(o, "qsbr-readers", &tt.qsbr_readers);
	opt_long(o, "fake-writers", &tt.fakewriters);
	opt_long(o, "churn", &tt.churners);
	opt_double(o, "stall", stall_s);
	opt_long(o, "busted", &tt.busted);
	opt_long(o, "task-readers", &tk.readers);
	opt_long(o, "task-workers", &tk.workers);
	opt_long(o, "task-rotate", &tk.rotate);
	if (tt.busted == 3 && !tk.readers) {
		fprintf(stderr, "treercu torture: --busted 3 needs task readers (--task-readers)\n");
		return false;
	}
	opt_long(o, "cb-writers", &cbt.writers);
	opt_long(o, "barrier", &cbt.barrier);
	opt_long(o, "fwd", &cbt.fwd);
	opt_double(o, "fwd-secs", &cbt.fwd_s);
	opt_long(o, "fwd-max-gps", &cbt.fwd_max_gps);
	inj.stall_s = *stall_s;
	return true;
}

int torture_main(struct tool_opts *o, struct torture_result *res)
{
	struct tt_threads *th = calloc(1, sizeof(*th));
	double duration, stall_s;
	long saved_path = 2, pushback_saved = 0;
	struct trcu_stats st;
	unsigned long failures;
	bool ok;

	if (!th || !torture_opts_read(o, &duration, &stall_s))
		return 2;
	tt_init();
	trcu_get_tunable("normal_wake_from_gp", &saved_path);
	trcu_get_tunable("sr_wake_max", &tt.wake_max_saved);
	trcu_get_tunable("cb_max_pending", &cbt.cb_max_pending);
	trcu_get_tunable("lazy", &cbt.lazy_saved);
	/*
	 * The flood's bound (cb_max_pending) holds while grace periods or
	 * invocations progress; the push-back gives up after cb_pushback_ms
	 * without either (by default a tenth of stall_timeout_ms: 2.1 s) and
	 * the flood then runs past the bound by design.  A loaded machine
	 * (sanitizers, a starved task-reader worker holding a section) can
	 * hold a grace period that long, and the flood's check failed.  Here
	 * the push-back waits up to the run's own stall limit, past which the
	 * run fails as a stall anyway; the give-up itself is checked by
	 * tests/callbacks/test_call_rcu_stall_bound.c.
	 */
	trcu_get_tunable("cb_pushback_ms", &pushback_saved);
	if (pushback_saved == 0)
		trcu_set_tunable("cb_pushback_ms", (long)(stall_s * 1000));
	if (tt.sync_path >= 0)
		trcu_set_tunable("normal_wake_from_gp", tt.sync_path);
	machine_note(&(struct json){ 0 });
	inj.slots_before = slots_now() - gp_kthreads();
	start_all(th);
	ok = run_for(duration, stall_s);
	__atomic_store_n(&tt.stop, 1, __ATOMIC_RELAXED);
	if (!ok || !join_all(th, stall_s)) {
		tt_fail(E_STALL);
		ok = false;
	}
	if (ok)
		slots_check(stall_s);
	trcu_set_tunable("normal_wake_from_gp", saved_path);
	trcu_set_tunable("sr_wake_max", tt.wake_max_saved);
	trcu_set_tunable("cb_pushback_ms", pushback_saved);
	if (ok) {
		cb_final_check();
		inj_final_check();
	}
	trcu_get_stats(&st);
	failures = count_failures();
	report(duration, failures, &st);
	if (write_json(o, duration, failures))
		failures += !failures;
	res->failures = failures;
	res->reads = tt.reads;
	res->updates = atomic_load(&tt.updates);
	if (!ok) {                         /* threads still stuck: do not join */
		fflush(NULL);
		_exit(1);
	}
	cb_cleanup();
	free(th->rd);
	free(th);
	return failures ? 1 : 0;
}

int cmd_torture(struct tool_opts *o)
{
	struct torture_result r;

	return torture_main(o, &r);
}
