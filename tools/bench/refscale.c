/* SPDX-License-Identifier: MIT */
/*
 * refscale: ns per read-side lock/unlock pair, treercu against liburcu memb
 * and qsbr (and treercu's QSBR-mode threads), 1 and 2 readers, in the same
 * run.  Every variant runs the same loop shape (REFSCALE_LOOP in common.h),
 * with its read side inlined; repeats are interleaved and summarised by
 * their median.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>

#include "common.h"
#include "results.h"
#include "liburcu_glue.h"

enum { V_TRCU, V_MEMB, V_QSBR, V_TRCU_QSBR, NVAR };
static const char *const vname[NVAR] = {
	"treercu", "liburcu memb", "liburcu qsbr", "treercu qsbr",
};

#define MAX_READERS 2
#define MAX_REPS 101

struct rs_ctx {
	unsigned long nbatch;                       /* batches per reader per run */
	double ns[MAX_READERS][NVAR][MAX_REPS];     /* mean over readers, per run */
};

struct rs_reader {
	int variant;
	unsigned long nbatch;
	pthread_barrier_t *start;
	double ns;                                  /* ns per pair */
};

static __attribute__((noinline)) void trcu_refscale_loop(unsigned long nbatch)
{
	REFSCALE_LOOP(nbatch, rcu_read_lock(), rcu_read_unlock(), (void)0);
}

static __attribute__((noinline)) void trcu_qsbr_refscale_loop(unsigned long nbatch)
{
	REFSCALE_LOOP(nbatch, rcu_read_lock(), rcu_read_unlock(), rcu_quiescent_state());
}

static void rs_setup(int v)
{
	switch (v) {
	case V_TRCU:
		trcu_register_thread();
		break;
	case V_TRCU_QSBR:
		trcu_register_thread();
		trcu_thread_qsbr();
		break;
	case V_MEMB:
		lu_memb_register_thread();
		break;
	case V_QSBR:
		lu_qsbr_register_thread();
		break;
	}
}

static void rs_teardown(int v)
{
	switch (v) {
	case V_TRCU_QSBR:
		trcu_thread_offline();
		/* fall through */
	case V_TRCU:
		trcu_unregister_thread();
		break;
	case V_MEMB:
		lu_memb_unregister_thread();
		break;
	case V_QSBR:
		lu_qsbr_unregister_thread();
		break;
	}
}

static void rs_loop(int v, unsigned long nbatch)
{
	switch (v) {
	case V_TRCU:
		trcu_refscale_loop(nbatch);
		break;
	case V_TRCU_QSBR:
		trcu_qsbr_refscale_loop(nbatch);
		break;
	case V_MEMB:
		lu_memb_refscale_loop(nbatch);
		break;
	case V_QSBR:
		lu_qsbr_refscale_loop(nbatch);
		break;
	}
}

static void *rs_reader_fn(void *arg)
{
	struct rs_reader *r = arg;
	uint64_t t0;

	rs_setup(r->variant);
	rs_loop(r->variant, r->nbatch / 10 + 1);          /* warm up */
	pthread_barrier_wait(r->start);
	t0 = now_ns();
	rs_loop(r->variant, r->nbatch);
	r->ns = (double)(now_ns() - t0) / ((double)r->nbatch * REFSCALE_BATCH);
	rs_teardown(r->variant);
	return NULL;
}

/* One run: nreaders threads of one variant; mean ns per pair over them. */
static double rs_run(int variant, int nreaders, unsigned long nbatch)
{
	struct rs_reader rd[MAX_READERS];
	pthread_t tid[MAX_READERS];
	pthread_barrier_t start;
	double sum = 0;

	pthread_barrier_init(&start, NULL, (unsigned)nreaders);
	for (int i = 0; i < nreaders; i++) {
		rd[i] = (struct rs_reader){ variant, nbatch, &start, 0 };
		if (pthread_create(&tid[i], NULL, rs_reader_fn, &rd[i])) {
			fprintf(stderr, "refscale: pthread_create failed\n");
			exit(1);
		}
	}
	for (int i = 0; i < nreaders; i++) {
		pthread_join(tid[i], NULL);
		sum += rd[i].ns;
	}
	pthread_barrier_destroy(&start);
	return sum / nreaders;
}

static void rs_variant(int v, int rep, void *arg)
{
	struct rs_ctx *c = arg;
	int readers = v / NVAR + 1, var = v % NVAR;

	c->ns[readers - 1][var][rep] = rs_run(var, readers, c->nbatch);
}

/* Batches per run so that one treercu reader runs for about target_ms. */
static unsigned long rs_calibrate(double target_ms)
{
	double ns = rs_run(V_TRCU, 1, 2000);
	double n = target_ms * 1e6 / ((ns > 0.05 ? ns : 0.05) * REFSCALE_BATCH);

	return n < 10 ? 10 : (unsigned long)n;
}

static void rs_report(struct rs_ctx *c, int reps, struct json *j, struct refscale_result *res)
{
	static const char *const cols[] = {
		"readers", "variant", "ns/pair median", "min", "max", "spread", "vs liburcu memb",
	};
	static const int w[] = { 7, 12, 14, 6, 6, 6, 15 };
	struct table t;

	tab_start(&t, 7, cols, w);
	json_arr(j, "results");
	for (int k = 0; k < MAX_READERS; k++) {
		struct summary s[NVAR];

		for (int v = 0; v < NVAR; v++)
			summarize(c->ns[k][v], (size_t)reps, &s[v]);
		for (int v = 0; v < NVAR; v++) {
			double ratio = s[v].median / s[V_MEMB].median;

			tab_cell(&t, "%d", k + 1);
			tab_cell(&t, "%s", vname[v]);
			tab_cell(&t, "%.3f", s[v].median);
			tab_cell(&t, "%.3f", s[v].min);
			tab_cell(&t, "%.3f", s[v].max);
			tab_cell(&t, "%.0f%%", s[v].spread);
			tab_cell(&t, "%.2fx", ratio);
			json_obj(j, NULL);
			json_int(j, "readers", k + 1);
			json_str(j, "variant", vname[v]);
			json_summary(j, "ns_per_pair", &s[v]);
			json_num(j, "ratio_vs_liburcu_memb", ratio);
			json_end(j, '}');
		}
		res->trcu_ns[k] = s[V_TRCU].median;
		res->memb_ns[k] = s[V_MEMB].median;
		res->qsbr_ns[k] = s[V_QSBR].median;
		res->trcu_qsbr_ns[k] = s[V_TRCU_QSBR].median;
	}
	json_end(j, ']');
}

const struct tool_opt refscale_opts[] = {
	TOPT_I("repeats", "N", "repeats", 1, MAX_REPS, 15, 5,
	       "interleaved repeats of every variant (library x readers)"),
	TOPT_N("ms", "MS", "milliseconds", 1, 10000, 100, 20,
	       "length of one run of one variant (pairs calibrated to it)"),
	TOPT_END,
};

int refscale_main(struct tool_opts *o, struct refscale_result *res)
{
	long reps;
	double ms;
	struct rs_ctx *c;
	struct json j;
	int rc;

	tool_bind(o, refscale_opts);
	opt_long(o, "repeats", &reps);
	opt_double(o, "ms", &ms);
	c = calloc(1, sizeof(*c));
	if (!c || json_open(&j, o, "refscale"))
		return 1;
	c->nbatch = rs_calibrate(ms);
	printf("\nrefscale: ns per read-side lock/unlock pair; %ld interleaved repeats, "
	       "%lu pairs per reader per run (~%.0f ms)\n",
	       reps, c->nbatch * REFSCALE_BATCH, ms);
	machine_note(&j);
	run_interleaved(MAX_READERS * NVAR, (int)reps, rs_variant, c, "refscale",
			MAX_READERS * NVAR * (double)reps * ms / 1000 * 1.5);
	json_str(&j, "command", "refscale");
	json_int(&j, "repeats", reps);
	json_int(&j, "pairs_per_run", (long long)(c->nbatch * REFSCALE_BATCH));
	rs_report(c, (int)reps, &j, res);
	printf("ratio treercu/liburcu memb: %.2fx (1 reader), %.2fx (2 readers); "
	       "spread = (max-min)/median over repeats\n",
	       res->trcu_ns[0] / res->memb_ns[0], res->trcu_ns[1] / res->memb_ns[1]);
	rc = json_close(&j) ? 1 : 0;
	free(c);
	return rc;
}

int cmd_refscale(struct tool_opts *o)
{
	struct refscale_result r;

	return refscale_main(o, &r);
}
