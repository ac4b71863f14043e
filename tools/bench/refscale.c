/* SPDX-License-Identifier: MIT */
/*
 * refscale: ns per read-side lock/unlock pair for every peer (peers.h:
 * treercu default and QSBR threads and task readers, liburcu
 * memb/qsbr/mb/bp, ck_epoch's begin/end), 1 and 2 readers, in the same run.  Every peer runs the same
 * loop shape (REFSCALE_LOOP in common.h), with its read side inlined;
 * repeats are interleaved and summarised by their median.  With a QSBR
 * peer selected, an "empty loop" row runs the same loop with nothing in
 * it: both QSBR read sides compile to no instructions, so their rows
 * measure the loop, a quiescent state per REFSCALE_BATCH pairs and where
 * the compiler placed the loop, and the empty row says how much of that
 * is the loop alone.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <treercu/rcu.h>

#include "common.h"
#include "peers.h"
#include "results.h"

#define MAX_READERS 2
#define MAX_REPS 101
#define RS_EMPTY PEER_MAX                       /* the empty loop's variant */
#define RS_N (PEER_MAX + 1)

struct rs_ctx {
	unsigned long nbatch[RS_N];                 /* batches per reader per run */
	int idx[RS_N], n;                           /* the selected peers */
	double ns[MAX_READERS][RS_N][MAX_REPS];     /* mean over readers, per run */
};

static void rs_nothing(void)
{
}

static __attribute__((noinline)) void rs_empty_loop(unsigned long nbatch)
{
	REFSCALE_LOOP(nbatch, (void)0, (void)0, (void)0);
}

/* The harness alone: refscale only calls these three. */
static const struct peer_ops rs_empty = {
	.name = "empty loop", .id = "empty",
	.thread_register = rs_nothing, .thread_unregister = rs_nothing,
	.refscale_loop = rs_empty_loop,
};

static const struct peer_ops *rs_peer(int i)
{
	return i == RS_EMPTY ? &rs_empty : peer_get(i);
}

struct rs_reader {
	const struct peer_ops *p;
	unsigned long nbatch;
	pthread_barrier_t *start;
	double ns;                                  /* ns per pair */
};

static void *rs_reader_fn(void *arg)
{
	struct rs_reader *r = arg;
	uint64_t t0;

	r->p->thread_register();
	r->p->refscale_loop(r->nbatch / 10 + 1);          /* warm up */
	pthread_barrier_wait(r->start);
	t0 = now_ns();
	r->p->refscale_loop(r->nbatch);
	r->ns = (double)(now_ns() - t0) / ((double)r->nbatch * REFSCALE_BATCH);
	r->p->thread_unregister();
	return NULL;
}

/* One run: nreaders threads of one peer; mean ns per pair over them. */
static double rs_run(const struct peer_ops *p, int nreaders, unsigned long nbatch)
{
	struct rs_reader rd[MAX_READERS];
	pthread_t tid[MAX_READERS];
	pthread_barrier_t start;
	double sum = 0;

	pthread_barrier_init(&start, NULL, (unsigned)nreaders);
	for (int i = 0; i < nreaders; i++) {
		rd[i] = (struct rs_reader){ p, nbatch, &start, 0 };
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
	int readers = v / c->n + 1, i = c->idx[v % c->n];

	c->ns[readers - 1][i][rep] = rs_run(rs_peer(i), readers, c->nbatch[i]);
}

/* Batches per run so that one reader of peer p runs for about target_ms. */
static unsigned long rs_calibrate(const struct peer_ops *p, double target_ms)
{
	double ns = rs_run(p, 1, 200);
	double n = target_ms * 1e6 / ((ns > 0.05 ? ns : 0.05) * REFSCALE_BATCH);

	return n < 10 ? 10 : (unsigned long)n;
}

/* The ratio of two medians, or NAN when either peer did not run. */
static double rs_ratio(const struct summary *s, int a, int b, const bool *ran)
{
	return ran[a] && ran[b] ? s[a].median / s[b].median : NAN;
}

static void rs_ratio_cell(struct table *t, double r)
{
	if (isnan(r))
		tab_cell(t, "%s", "-");
	else
		tab_cell(t, "%.2fx", r);
}

static void rs_report(struct rs_ctx *c, int reps, struct json *j, struct refscale_result *res)
{
	static const char *const cols[] = {
		"readers", "variant", "ns/pair median", "min", "max", "spread", "vs liburcu memb",
		"vs treercu",
	};
	static const int w[] = { 7, 12, 14, 6, 6, 6, 15, 10 };
	bool ran[RS_N] = { false };
	struct table t;

	for (int v = 0; v < c->n; v++)
		ran[c->idx[v]] = true;
	tab_start(&t, 8, cols, w);
	json_arr(j, "results");
	for (int k = 0; k < MAX_READERS; k++) {
		struct summary s[RS_N];

		memset(s, 0, sizeof(s));
		for (int v = 0; v < c->n; v++)
			summarize(c->ns[k][c->idx[v]], (size_t)reps, &s[c->idx[v]]);
		for (int v = 0; v < c->n; v++) {
			int i = c->idx[v];
			double rm = rs_ratio(s, i, PEER_LU_MEMB, ran), rt = rs_ratio(s, i, PEER_TREERCU, ran);

			tab_cell(&t, "%d", k + 1);
			tab_cell(&t, "%s", rs_peer(i)->name);
			tab_cell(&t, "%.3f", s[i].median);
			tab_cell(&t, "%.3f", s[i].min);
			tab_cell(&t, "%.3f", s[i].max);
			tab_cell(&t, "%.0f%%", s[i].spread);
			rs_ratio_cell(&t, rm);
			rs_ratio_cell(&t, rt);
			json_obj(j, NULL);
			json_int(j, "readers", k + 1);
			json_str(j, "variant", rs_peer(i)->name);
			json_summary(j, "ns_per_pair", &s[i]);
			if (!isnan(rm))
				json_num(j, "ratio_vs_liburcu_memb", rm);
			if (!isnan(rt))
				json_num(j, "ratio_vs_treercu", rt);
			json_end(j, '}');
		}
		for (int i = 0; i < PEER_MAX; i++)
			res->ns[i][k] = ran[i] ? s[i].median : NAN;
		res->trcu_ns[k] = res->ns[PEER_TREERCU][k];
		res->memb_ns[k] = res->ns[PEER_LU_MEMB][k];
		res->qsbr_ns[k] = res->ns[PEER_LU_QSBR][k];
		res->trcu_qsbr_ns[k] = res->ns[PEER_TREERCU_QSBR][k];
		res->trcu_task_ns[k] = res->ns[PEER_TREERCU_TASK][k];
		res->empty_ns[k] = ran[RS_EMPTY] ? s[RS_EMPTY].median : NAN;
	}
	json_end(j, ']');
}

const struct tool_opt refscale_opts[] = {
	TOPT_I("repeats", "N", "repeats", 1, MAX_REPS, 15, 5,
	       "interleaved repeats of every variant (library x readers)"),
	TOPT_N("ms", "MS", "milliseconds", 1, 10000, 100, 20,
	       "length of one run of one variant (pairs calibrated to it)"),
	TOPT_S("peers", "LIST", "all",
	       "comma-separated peers to run: " PEER_IDS ", or all"),
	TOPT_END,
};

int refscale_main(struct tool_opts *o, struct refscale_result *res)
{
	long reps;
	double ms;
	struct rs_ctx *c;
	struct json j;
	int rc;

	bool sel[PEER_MAX];

	tool_bind(o, refscale_opts);
	opt_long(o, "repeats", &reps);
	opt_double(o, "ms", &ms);
	if (peer_select(opt_str(o, "peers"), sel, "treercu refscale"))
		return 2;
	c = calloc(1, sizeof(*c));
	if (!c || json_open(&j, o, "refscale"))
		return 1;
	c->n = peer_list(sel, c->idx);
	if (sel[PEER_TREERCU_QSBR] || sel[PEER_LU_QSBR])
		c->idx[c->n++] = RS_EMPTY;
	for (int v = 0; v < c->n; v++)
		c->nbatch[c->idx[v]] = rs_calibrate(rs_peer(c->idx[v]), ms);
	printf("\nrefscale: ns per read-side lock/unlock pair; %ld interleaved repeats, "
	       "pairs per reader per run calibrated per peer to ~%.0f ms (treercu: %lu)\n",
	       reps, ms, c->nbatch[PEER_TREERCU] * REFSCALE_BATCH);
	machine_note(&j);
	run_interleaved(MAX_READERS * c->n, (int)reps, rs_variant, c, "refscale",
			MAX_READERS * c->n * (double)reps * ms / 1000 * 1.5);
	json_str(&j, "command", "refscale");
	json_int(&j, "repeats", reps);
	json_int(&j, "pairs_per_run", (long long)(c->nbatch[PEER_TREERCU] * REFSCALE_BATCH));
	rs_report(c, (int)reps, &j, res);
	if (!isnan(res->trcu_ns[0]) && !isnan(res->memb_ns[0]))
		printf("ratio treercu/liburcu memb: %.2fx (1 reader), %.2fx (2 readers)\n",
		       res->trcu_ns[0] / res->memb_ns[0], res->trcu_ns[1] / res->memb_ns[1]);
	printf("spread = (max-min)/median over repeats; a QSBR peer reports a quiescent "
	       "state once per %d pairs\n", REFSCALE_BATCH);
	if (!isnan(res->trcu_task_ns[0]) && !isnan(res->trcu_ns[0]))
		printf("ratio treercu task/treercu thread: %.2fx (1 reader), %.2fx (2 readers)\n",
		       res->trcu_task_ns[0] / res->trcu_ns[0], res->trcu_task_ns[1] / res->trcu_ns[1]);
	if (!isnan(res->empty_ns[0]))
		printf("empty loop: %.3f ns/pair (1 reader); both QSBR read sides compile to no "
		       "instructions, so their rows are this loop plus a quiescent state per %d "
		       "pairs: treercu qsbr %+.3f ns, liburcu qsbr %+.3f ns from it\n",
		       res->empty_ns[0], REFSCALE_BATCH,
		       res->ns[PEER_TREERCU_QSBR][0] - res->empty_ns[0],
		       res->ns[PEER_LU_QSBR][0] - res->empty_ns[0]);
	rc = json_close(&j) ? 1 : 0;
	free(c);
	return rc;
}

int cmd_refscale(struct tool_opts *o)
{
	struct refscale_result r;

	return refscale_main(o, &r);
}
