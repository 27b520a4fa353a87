/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/test/test_policy.c: table tests of the elastic allocation
 * policy (splits, rounding, admission, hysteresis, placement, bad input). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>

#include "policy.h"

/* ---- a small world the tests drive ------------------------------------ */

#define MAXJ 24
#define MAXN 64
#define MAXP 64

struct world {
	struct elastic_policy_input in;
	int gpus[MAXN], busy[MAXN];
	struct elastic_policy_job jobs[MAXJ];
	struct elastic_policy_place place[MAXJ][MAXP];
	int list[MAXJ][8];
	struct elastic_scaling scal[MAXJ];
	struct elastic_policy_result *res;
};

static void world_init(struct world *w, enum elastic_policy_mode mode, int nnodes,
		       int per_node)
{
	memset(w, 0, sizeof(*w));
	w->in.mode = mode;
	w->in.now = 1000;
	w->in.nnodes = nnodes;
	w->in.node_gpus = w->gpus;
	w->in.node_busy = w->busy;
	w->in.jobs = w->jobs;
	for (int n = 0; n < nnodes; n++)
		w->gpus[n] = per_node;
}

static void world_fini(struct world *w)
{
	elastic_policy_result_destroy(w->res);
	w->res = NULL;
}

static int job_index(const struct world *w, uint32_t id)
{
	for (int i = 0; i < w->in.njobs; i++)
		if (w->jobs[i].id == id)
			return i;
	return -1;
}

static struct elastic_policy_job *add_job(struct world *w, uint32_t id, int min, int max,
					  uint32_t prio, int64_t submit)
{
	int i = w->in.njobs++;
	assert_true(i < MAXJ);
	w->jobs[i] = (struct elastic_policy_job){.id = id,
						 .min = min,
						 .max = max,
						 .priority = prio,
						 .submit_time = submit,
						 .place = w->place[i]};
	return &w->jobs[i];
}

static struct elastic_policy_job *job(struct world *w, uint32_t id)
{
	int i = job_index(w, id);
	assert_true(i >= 0);
	return &w->jobs[i];
}

/* Give job id n GPUs on node (pinned p), as if it held them now. */
static void hold(struct world *w, uint32_t id, int node, int n, int pinned)
{
	int i = job_index(w, id);
	assert_true(i >= 0 && w->jobs[i].nplace < MAXP);
	w->place[i][w->jobs[i].nplace++] = (struct elastic_policy_place){node, n, pinned};
}

static void remove_job(struct world *w, uint32_t id)
{
	int i = job_index(w, id);
	assert_true(i >= 0);
	for (int k = i; k < w->in.njobs - 1; k++) {
		w->jobs[k] = w->jobs[k + 1];
		memcpy(w->place[k], w->place[k + 1], sizeof(w->place[k]));
		memcpy(w->list[k], w->list[k + 1], sizeof(w->list[k]));
		w->jobs[k].place = w->place[k];
		if (w->jobs[k].sizes == ELASTIC_SIZES_LIST)
			w->jobs[k].size_list = w->list[k];
	}
	w->in.njobs--;
}

static void set_list(struct world *w, uint32_t id, const int *sizes, int n)
{
	int i = job_index(w, id);
	memcpy(w->list[i], sizes, sizeof(int) * n);
	w->jobs[i].sizes = ELASTIC_SIZES_LIST;
	w->jobs[i].size_list = w->list[i];
	w->jobs[i].nsize_list = n;
}

static const struct elastic_policy_target *tgt(const struct world *w, uint32_t id)
{
	for (int i = 0; i < w->res->njobs; i++)
		if (w->res->targets[i].id == id)
			return &w->res->targets[i];
	fail_msg("job %u not in the result", id);
	return NULL;
}

static int gpus(const struct world *w, uint32_t id)
{
	return tgt(w, id)->gpus;
}

static int on_node(const struct world *w, uint32_t id, int node)
{
	const struct elastic_policy_target *t = tgt(w, id);
	for (int k = 0; k < t->nplace; k++)
		if (t->place[k].node == node)
			return t->place[k].gpus;
	return 0;
}

static int allowed(const struct elastic_policy_job *jb, int v)
{
	if (jb->sizes == ELASTIC_SIZES_POW2)
		return v > 0 && (v & (v - 1)) == 0;
	if (jb->sizes == ELASTIC_SIZES_LIST) {
		for (int i = 0; i < jb->nsize_list; i++)
			if (jb->size_list[i] == v)
				return 1;
		return 0;
	}
	return v > 0;
}

static int held_on(const struct elastic_policy_job *jb, int node, int *pinned)
{
	for (int k = 0; k < jb->nplace; k++)
		if (jb->place[k].node == node) {
			if (pinned)
				*pinned = jb->place[k].pinned;
			return jb->place[k].gpus;
		}
	if (pinned)
		*pinned = 0;
	return 0;
}

/* Speedup of a job at n GPUs as the throughput mode reads it (linear
 * without a model), and the gain per GPU from a to b GPUs. */
static double speedup(const struct elastic_policy_job *jb, int n)
{
	if (jb->scaling && jb->scaling->terms)
		return elastic_scaling_speedup(jb->scaling, n);
	return n;
}

static double step_gain(const struct elastic_policy_job *jb, int a, int b)
{
	return (speedup(jb, b) - speedup(jb, a)) / (b - a);
}

/* Give job id the model t(n) = alpha/n + beta + gamma*log2(n) + delta*n,
 * measured at the sizes in `at` (0-terminated). */
static void set_model(struct world *w, uint32_t id, double alpha, double beta,
		      double gamma, double delta, const int *at)
{
	int i = job_index(w, id);
	assert_true(i >= 0);
	memset(&w->scal[i], 0, sizeof(w->scal[i]));
	for (; *at; at++) {
		double t = alpha / *at + beta + gamma * log2(*at) + delta * *at;
		assert_int_equal(
			elastic_scaling_observe(&w->scal[i], *at, 1.0 / t, 100, 600), 0);
	}
	w->jobs[i].scaling = &w->scal[i];
}

/* Invariants every result must keep, checked after every decision. */
static void check_result(const struct world *w)
{
	const struct elastic_policy_result *r = w->res;
	int used[MAXN] = {0}, total = 0, capacity = 0, holds = 0;

	for (int n = 0; n < w->in.nnodes; n++)
		capacity += w->gpus[n] - w->busy[n];
	assert_int_equal(r->capacity, capacity);
	assert_int_equal(r->njobs, w->in.njobs);
	for (int i = 0; i < r->njobs; i++) {
		const struct elastic_policy_target *t = &r->targets[i];
		const struct elastic_policy_job *jb = &w->jobs[i];
		int sum = 0, cur = 0;

		assert_int_equal(t->id, jb->id);
		for (int k = 0; k < jb->nplace; k++)
			cur += jb->place[k].gpus;
		assert_int_equal(t->cur, cur);
		if (t->gpus) {
			assert_true(t->gpus >= t->min && t->gpus <= t->max);
			assert_true(t->min >= jb->min && t->max <= jb->max);
			assert_true(allowed(jb, t->gpus));
		} else {
			assert_true(t->reason == ELASTIC_POLICY_WAIT ||
				    t->reason == ELASTIC_POLICY_STOP);
		}
		if (t->reason == ELASTIC_POLICY_HOLD_THRESHOLD ||
		    t->reason == ELASTIC_POLICY_HOLD_COOLDOWN) {
			assert_int_equal(t->gpus, t->cur);
			assert_int_not_equal(t->want, t->cur);
			holds++;
		}
		for (int k = 0; k < t->nplace; k++) {
			const struct elastic_policy_place *p = &t->place[k];
			int pinned, had = held_on(jb, p->node, &pinned);
			assert_true(p->gpus > 0);
			assert_true(k == 0 || p->node > t->place[k - 1].node);
			assert_true(p->node >= 0 && p->node < w->in.nnodes);
			used[p->node] += p->gpus;
			sum += p->gpus;
			/* A shrinking job only gives back; others only add. */
			if (t->gpus < cur)
				assert_true(p->gpus <= had);
			else
				assert_true(p->gpus >= had);
			assert_int_equal(p->pinned, had ? pinned : 0);
		}
		assert_int_equal(sum, t->gpus);
		/* Held GPUs are kept where they are unless the job shrinks;
		 * pinned ones unless it stops. */
		for (int k = 0; k < jb->nplace; k++) {
			int now = on_node(w, jb->id, jb->place[k].node);
			if (t->gpus >= cur)
				assert_true(now >= jb->place[k].gpus);
			if (t->gpus > 0)
				assert_true(now >= jb->place[k].pinned);
		}
		total += t->gpus;
		char line[256];
		assert_true(elastic_policy_explain(r, i, line, sizeof(line)) > 0);
		assert_non_null(strstr(line, "job "));
	}
	for (int n = 0; n < w->in.nnodes; n++)
		assert_true(used[n] + w->busy[n] <= w->gpus[n]);
	assert_int_equal(r->used, total);
	assert_int_equal(r->idle, capacity - total);
	/* Work-conserving: with nothing held, no job that runs could take
	 * another allowed step out of the idle GPUs (throughput: none that
	 * would gain min_gain per GPU, or that lies past its trial bound: twice
	 * the largest size it was measured at, for a job measured at fewer than
	 * two). */
	if (!holds && r->idle > 0)
		for (int i = 0; i < r->njobs; i++) {
			const struct elastic_policy_target *t = &r->targets[i];
			const struct elastic_scaling *sc = w->jobs[i].scaling;
			int lo, hi;
			if (!t->gpus)
				continue;
			elastic_scaling_seen(sc && sc->terms ? sc : NULL, &lo, &hi);
			for (int v = t->gpus + 1; v <= t->max && v - t->gpus <= r->idle;
			     v++) {
				if (w->in.mode == ELASTIC_POLICY_THROUGHPUT &&
				    (!sc || sc->nobs < 2) && v > 2 * hi && v > t->cur)
					break; /* past its trial bound */
				if (w->in.mode != ELASTIC_POLICY_THROUGHPUT) {
					assert_false(allowed(&w->jobs[i], v));
				} else if (allowed(&w->jobs[i], v)) {
					if (!(step_gain(&w->jobs[i], t->gpus, v) <
					      w->in.min_gain))
						fail_msg(
							"job %u at %d (cur %d, reason %d, nobs %d, hi %d, lo %d max %d): step to %d gains %g >= %g, idle %d",
							t->id, t->gpus, t->cur, t->reason,
							sc ? sc->nobs : -1, hi, t->min,
							t->max, v,
							step_gain(&w->jobs[i], t->gpus,
								  v),
							w->in.min_gain, r->idle);
					break;
				}
			}
		}
}

static void decide(struct world *w)
{
	elastic_error_t err = {{0}};
	world_fini(w);
	if (elastic_policy_decide(&w->in, &w->res, &err) != 0)
		fail_msg("decide failed: %s", err.text);
	check_result(w);
}

/* Enact the last result: the jobs now hold their targets; the ones that
 * changed were resized now. */
static void apply(struct world *w)
{
	for (int i = 0; i < w->in.njobs; i++) {
		const struct elastic_policy_target *t = &w->res->targets[i];
		memcpy(w->place[i], t->place, sizeof(*t->place) * t->nplace);
		w->jobs[i].nplace = t->nplace;
		if (t->gpus != t->cur)
			w->jobs[i].last_resize = w->in.now;
	}
}

static int nodes_of(const struct world *w, uint32_t id)
{
	return tgt(w, id)->nplace;
}

static int has(const struct world *w, uint32_t id, enum elastic_policy_reason why)
{
	return tgt(w, id)->reason == why;
}

/* ---- one decision: a world, and what must hold of its result ---------- */

/* A job of a case; hold lists what it holds now (gpus 0 ends it). */
struct cjob {
	uint32_t id;
	int min, max;
	uint32_t prio;
	int64_t submit, last_resize;
	enum elastic_sizes_kind sizes;
	struct elastic_policy_place hold[3];
};

enum ccheck {
	C_END = 0,
	C_GPUS,	   /* the job's target */
	C_NODES,   /* how many nodes it is placed on */
	C_ON,	   /* its GPUs on node arg */
	C_WHY,	   /* its reason (enum elastic_policy_reason) */
	C_PINNED,  /* pinned GPUs of its first placement */
	C_WANT,	   /* what it would have had, were it not held */
	C_ROUNDS,  /* the result's settle rounds (job unused) */
	C_EXPLAIN, /* its explanation line, text */
};

struct check {
	enum ccheck what;
	uint32_t job;
	int arg, value;
	const char *text;
};

#define GPUS(j, n)    {C_GPUS, j, 0, n, NULL}
#define NODES(j, n)   {C_NODES, j, 0, n, NULL}
#define ON(j, nd, n)  {C_ON, j, nd, n, NULL}
#define WHY(j, r)     {C_WHY, j, 0, ELASTIC_POLICY_##r, NULL}
#define PINNED(j, n)  {C_PINNED, j, 0, n, NULL}
#define WANT(j, n)    {C_WANT, j, 0, n, NULL}
#define ROUNDS(n)     {C_ROUNDS, 0, 0, n, NULL}
#define EXPLAIN(j, s) {C_EXPLAIN, j, 0, 0, s}

struct dcase {
	const char *name;
	enum elastic_policy_mode mode;
	int nnodes;
	int node_gpus[8];
	int64_t cooldown;
	int min_change;
	struct cjob jobs[4]; /* id 0 ends */
	struct check checks[10];
};

static const struct dcase dcases[] = {
	{.name = "fairshare ties go by submit time, then id",
	 .mode = ELASTIC_POLICY_FAIRSHARE,
	 .nnodes = 1,
	 .node_gpus = {8},
	 .jobs = {{30, 1, 8, 100, 500}, {20, 1, 8, 100, 400}, {10, 1, 8, 100, 500}},
	 /* 8/3: 2 each; the 2 left: earlier submit (20), then id 10 */
	 .checks = {GPUS(20, 3), GPUS(10, 3), GPUS(30, 2)}},
	{.name = "priority 0 counts as 1",
	 .mode = ELASTIC_POLICY_PRIORITY,
	 .nnodes = 1,
	 .node_gpus = {8},
	 .jobs = {{1, 1, 8, 0, 100}, {2, 1, 8, 0, 200}},
	 .checks = {GPUS(1, 4), GPUS(2, 4)}},
	{.name = "fifo: earliest first, up to its max",
	 .mode = ELASTIC_POLICY_FIFO,
	 .nnodes = 2,
	 .node_gpus = {4, 4},
	 .jobs = {{1, 2, 8, 99999, 300}, {2, 1, 4, 1, 100}, {3, 1, 8, 1, 200}},
	 /* mins 2+1+1; 2 (earliest) to its max 4; 3 takes the last 1 */
	 .checks = {GPUS(2, 4), GPUS(3, 2), GPUS(1, 2)}},
	{.name = "a node lost: the lowest ranked running job stops, the others keep their min",
	 .mode = ELASTIC_POLICY_PRIORITY,
	 .nnodes = 3,
	 .node_gpus = {4, 4, 0}, /* node 2 down; its holdings are gone */
	 .jobs = {{1, 4, 4, 300, 100, .hold = {{0, 4, 4}}},
		  {2, 3, 4, 200, 100, .hold = {{1, 2, 2}}},
		  {3, 2, 4, 100, 100, .hold = {{1, 2, 2}}}},
	 /* job 2 back to its min and more */
	 .checks = {GPUS(1, 4), GPUS(2, 4), WHY(2, GROW), GPUS(3, 0), WHY(3, STOP),
		    NODES(3, 0)}},
	{.name = "a job above a lowered max shrinks, and says why",
	 .mode = ELASTIC_POLICY_PRIORITY,
	 .nnodes = 2,
	 .node_gpus = {4, 4},
	 .jobs = {{1, 1, 3, 1, 100, .hold = {{0, 4, 1}}}},
	 .checks = {GPUS(1, 3),
		    EXPLAIN(1, "job 1: shrink 4 -> 3 GPUs (above its max 3)")}},
	{.name = "pow2: shares 5 / 5 give the pow2 job 4, the GPU left to the other",
	 .mode = ELASTIC_POLICY_FAIRSHARE,
	 .nnodes = 2,
	 .node_gpus = {5, 5},
	 .jobs = {{1, 1, 16, 1, 100, .sizes = ELASTIC_SIZES_POW2}, {2, 1, 16, 1, 200}},
	 .checks = {GPUS(1, 4), GPUS(2, 6)}},
	{.name = "four jobs of 16 on 8 nodes x 8: each on exactly 2 whole nodes",
	 .mode = ELASTIC_POLICY_FAIRSHARE,
	 .nnodes = 8,
	 .node_gpus = {8, 8, 8, 8, 8, 8, 8, 8},
	 .jobs = {{1, 16, 16, 1, 101},
		  {2, 16, 16, 1, 102},
		  {3, 16, 16, 1, 103},
		  {4, 16, 16, 1, 104}},
	 .checks = {GPUS(1, 16), NODES(1, 2), GPUS(2, 16), NODES(2, 2), GPUS(3, 16),
		    NODES(3, 2), GPUS(4, 16), NODES(4, 2)}},
	{.name = "largest need placed first: 6 and 2 on 2 nodes x 4 and 1 x 8",
	 .mode = ELASTIC_POLICY_FIFO,
	 .nnodes = 3,
	 .node_gpus = {4, 4, 8},
	 .jobs = {{1, 2, 2, 1, 100}, {2, 6, 6, 1, 200}},
	 .checks = {NODES(2, 1), ON(2, 2, 6), NODES(1, 1)}},
	/* Placed 4, 3, 3, 2 (largest first) every job fits on one node;
	 * smallest first would split the 4. */
	{.name = "needs 2, 3, 3, 4 on 2 nodes x 6: each job on one node",
	 .mode = ELASTIC_POLICY_FIFO,
	 .nnodes = 2,
	 .node_gpus = {6, 6},
	 .jobs = {{1, 2, 2, 1, 100},
		  {2, 3, 3, 1, 200},
		  {3, 3, 3, 1, 300},
		  {4, 4, 4, 1, 400}},
	 .checks = {NODES(1, 1), NODES(2, 1), NODES(3, 1), NODES(4, 1)}},
	{.name = "growth goes first to the node the job already uses",
	 .mode = ELASTIC_POLICY_FIFO,
	 .nnodes = 3,
	 .node_gpus = {8, 8, 8},
	 .jobs = {{1, 1, 6, 1, 100, .hold = {{2, 2, 1}}}},
	 .checks = {GPUS(1, 6), NODES(1, 1), ON(1, 2, 6), PINNED(1, 1)}},
	{.name = "a shrink gives back the smallest holdings first: whole nodes go",
	 .mode = ELASTIC_POLICY_FIFO,
	 .nnodes = 3,
	 .node_gpus = {4, 4, 4},
	 .jobs = {{1, 1, 4, 1, 100, .hold = {{0, 1, 0}, {1, 3, 0}, {2, 4, 0}}}},
	 /* max 4: keeps node 2 */
	 .checks = {GPUS(1, 4), NODES(1, 1), ON(1, 2, 4)}},
	{.name = "a shrink never gives back the pinned GPUs of the job's own allocation",
	 .mode = ELASTIC_POLICY_FIFO,
	 .nnodes = 2,
	 .node_gpus = {4, 4},
	 .jobs = {{1, 2, 2, 1, 100, .hold = {{0, 2, 2}, {1, 4, 0}}}},
	 /* shrink 6 -> 2: node 0 (pinned) stays, node 1 goes */
	 .checks = {GPUS(1, 2), ON(1, 0, 2), ON(1, 1, 0)}},
	{.name = "equal holdings: the higher node index is given back first",
	 .mode = ELASTIC_POLICY_FIFO,
	 .nnodes = 2,
	 .node_gpus = {4, 4},
	 .jobs = {{1, 1, 4, 1, 100, .hold = {{0, 4, 0}, {1, 4, 0}}}},
	 .checks = {ON(1, 0, 4), ON(1, 1, 0)}},
	/* Held: job 2's +1. Job 1, left at its share, keeps it; job 3 changes
	 * anyway (+2) and takes what job 2 did not: 12 GPUs, fairshare. */
	{.name = "a held grow: the job at its share keeps it, one changing anyway takes the rest",
	 .mode = ELASTIC_POLICY_FAIRSHARE,
	 .nnodes = 3,
	 .node_gpus = {4, 4, 4},
	 .min_change = 2,
	 .jobs = {{1, 1, 12, 1, 100, .hold = {{0, 4, 1}}},
		  {2, 1, 12, 1, 200, .hold = {{1, 3, 1}}},
		  {3, 1, 12, 1, 300, .hold = {{2, 2, 1}}}},
	 .checks = {GPUS(1, 4), WHY(1, STEADY), GPUS(2, 3), WHY(2, HOLD_THRESHOLD),
		    GPUS(3, 5), ROUNDS(2)}},
	/* Once a change is held, jobs in their cool-down that are steady stay
	 * frozen too: job 3 (not cooling) takes what job 2's held grow left,
	 * job 1 (cooling, at its share) is not touched; two rounds. */
	{.name = "a held change freezes the steady jobs in their cool-down",
	 .mode = ELASTIC_POLICY_FAIRSHARE,
	 .nnodes = 3,
	 .node_gpus = {4, 4, 4},
	 .cooldown = 60,
	 .jobs = {{1, 1, 12, 1, 100, 990, .hold = {{0, 4, 1}}},
		  {2, 1, 12, 1, 200, 990, .hold = {{1, 2, 1}}},
		  {3, 1, 12, 1, 300, 100, .hold = {{1, 2, 1}, {2, 4, 0}}}},
	 .checks = {GPUS(1, 4), WHY(1, STEADY), GPUS(2, 2), WHY(2, HOLD_COOLDOWN),
		    WANT(2, 4), GPUS(3, 6), ROUNDS(2)}},
	{.name = "a job below its min (it lost a node) grows in its cool-down",
	 .mode = ELASTIC_POLICY_PRIORITY,
	 .nnodes = 2,
	 .node_gpus = {4, 4},
	 .cooldown = 60,
	 .jobs = {{1, 4, 4, 1, 100, 999, .hold = {{0, 2, 2}}}},
	 .checks = {GPUS(1, 4), WHY(1, GROW),
		    EXPLAIN(1, "job 1: grow 2 -> 4 GPUs (below its min 4)")}},
};

static void build(struct world *w, const struct dcase *c)
{
	world_init(w, c->mode, c->nnodes, 0);
	memcpy(w->gpus, c->node_gpus, sizeof(c->node_gpus));
	w->in.cooldown = c->cooldown;
	w->in.min_change = c->min_change;
	for (const struct cjob *j = c->jobs; j < c->jobs + 4 && j->id; j++) {
		struct elastic_policy_job *jb =
			add_job(w, j->id, j->min, j->max, j->prio, j->submit);
		jb->last_resize = j->last_resize;
		jb->sizes = j->sizes;
		for (int k = 0; k < 3 && j->hold[k].gpus; k++)
			hold(w, j->id, j->hold[k].node, j->hold[k].gpus,
			     j->hold[k].pinned);
	}
}

static void expect(const struct world *w, const char *name, const struct check *k)
{
	static const char *const what[] = {"",	     "GPUs",   "nodes", "",
					   "reason", "pinned", "want",	"rounds"};
	int got;
	char line[256];

	switch (k->what) {
	case C_GPUS:
		got = gpus(w, k->job);
		break;
	case C_NODES:
		got = nodes_of(w, k->job);
		break;
	case C_ON:
		got = on_node(w, k->job, k->arg);
		break;
	case C_WHY:
		got = (int)tgt(w, k->job)->reason;
		break;
	case C_PINNED:
		got = tgt(w, k->job)->place[0].pinned;
		break;
	case C_WANT:
		got = tgt(w, k->job)->want;
		break;
	case C_ROUNDS:
		got = w->res->rounds;
		break;
	case C_EXPLAIN:
		elastic_policy_explain(w->res, job_index(w, k->job), line, sizeof(line));
		if (strcmp(line, k->text) != 0)
			fail_msg("case '%s': job %u explained '%s', expected '%s'", name,
				 k->job, line, k->text);
		return;
	default:
		fail_msg("case '%s': unknown check %d", name, (int)k->what);
		return;
	}
	if (got == k->value)
		return;
	if (k->what == C_ON)
		fail_msg("case '%s': job %u: %d GPUs on node %d, expected %d", name,
			 k->job, got, k->arg, k->value);
	else
		fail_msg("case '%s': job %u: %s %d, expected %d", name, k->job,
			 what[k->what], got, k->value);
}

/* Each case: one decision on its world, and its checks. */
static void decisions(void **state)
{
	for (size_t c = 0; c < sizeof(dcases) / sizeof(dcases[0]); c++) {
		struct world w;
		build(&w, &dcases[c]);
		decide(&w);
		for (const struct check *k = dcases[c].checks; k->what != C_END; k++)
			expect(&w, dcases[c].name, k);
		world_fini(&w);
	}
}

/* ---- the reference scenario ------------------------------------------- */

static void reference_scenario(void **state)
{
	struct world w;
	char line[256];

	world_init(&w, ELASTIC_POLICY_PRIORITY, 2, 4);
	add_job(&w, 1, 1, 8, 5000, 100);
	decide(&w); /* job 1 alone: 8 */
	assert_int_equal(gpus(&w, 1), 8);
	assert_true(has(&w, 1, ELASTIC_POLICY_START));
	assert_int_equal(on_node(&w, 1, 0), 4);
	assert_int_equal(on_node(&w, 1, 1), 4);
	apply(&w);

	add_job(&w, 2, 1, 8, 5000, 200);
	decide(&w); /* equal priorities: 4 / 4, one node each */
	assert_int_equal(gpus(&w, 1), 4);
	assert_int_equal(gpus(&w, 2), 4);
	assert_true(has(&w, 1, ELASTIC_POLICY_SHRINK));
	assert_true(has(&w, 2, ELASTIC_POLICY_START));
	assert_int_equal(on_node(&w, 1, 0), 4);
	assert_int_equal(on_node(&w, 2, 1), 4);
	apply(&w);

	job(&w, 2)->priority = 10000;
	decide(&w); /* 10000/15000 of 8 = 5.33 -> 5, and 3 */
	assert_int_equal(gpus(&w, 2), 5);
	assert_int_equal(gpus(&w, 1), 3);
	assert_true(has(&w, 2, ELASTIC_POLICY_GROW));
	assert_true(has(&w, 1, ELASTIC_POLICY_SHRINK));
	assert_true(tgt(&w, 2)->share > 5.33 && tgt(&w, 2)->share < 5.34);
	elastic_policy_explain(w.res, job_index(&w, 2), line, sizeof(line));
	assert_string_equal(line, "job 2: grow 4 -> 5 GPUs (priority share 5.33 of 8)");
	assert_int_equal(on_node(&w, 2, 1), 4); /* kept where it was */
	assert_int_equal(on_node(&w, 2, 0), 1);
	assert_int_equal(on_node(&w, 1, 0), 3);
	apply(&w);

	decide(&w); /* nothing changed: nothing moves */
	assert_true(has(&w, 1, ELASTIC_POLICY_STEADY));
	assert_true(has(&w, 2, ELASTIC_POLICY_STEADY));

	remove_job(&w, 1);
	decide(&w); /* job 1 gone: job 2 grows to 8 */
	assert_int_equal(gpus(&w, 2), 8);
	assert_true(has(&w, 2, ELASTIC_POLICY_GROW));
	assert_int_equal(w.res->idle, 0);
	world_fini(&w);
}

/* ---- modes -------------------------------------------------------------- */

static void priority_vs_fairshare(void **state)
{
	struct world w;

	world_init(&w, ELASTIC_POLICY_PRIORITY, 2, 4);
	add_job(&w, 1, 1, 8, 10000, 100);
	add_job(&w, 2, 1, 8, 5000, 100);
	add_job(&w, 3, 1, 8, 1, 100);
	decide(&w); /* job 3 at its min 1; 7 split 10000:5000 = 4.67/2.33 */
	assert_int_equal(gpus(&w, 1), 5);
	assert_int_equal(gpus(&w, 2), 2);
	assert_int_equal(gpus(&w, 3), 1);

	w.in.mode = ELASTIC_POLICY_FAIRSHARE;
	decide(&w); /* equal shares 2.67: 2 each, the 2 left by rank */
	assert_int_equal(gpus(&w, 1), 3);
	assert_int_equal(gpus(&w, 2), 3);
	assert_int_equal(gpus(&w, 3), 2);
	world_fini(&w);
}

/* --elastic-policy-weight multiplies a job's share weight in both modes. */
static void policy_weight(void **state)
{
	struct world w;

	world_init(&w, ELASTIC_POLICY_FAIRSHARE, 2, 4);
	add_job(&w, 1, 1, 8, 5000, 100);
	add_job(&w, 2, 1, 8, 5000, 100);
	job(&w, 1)->weight = 3;
	decide(&w); /* 3:1 of 8 */
	assert_int_equal(gpus(&w, 1), 6);
	assert_int_equal(gpus(&w, 2), 2);

	w.in.mode = ELASTIC_POLICY_PRIORITY;
	job(&w, 1)->weight = 2;
	job(&w, 2)->priority = 10000;
	decide(&w); /* 5000 x 2 = 10000 x 1: equal */
	assert_int_equal(gpus(&w, 1), 4);
	assert_int_equal(gpus(&w, 2), 4);
	job(&w, 1)->weight = 0; /* counts as 1: 1:2 */
	decide(&w);
	assert_int_equal(gpus(&w, 1), 3);
	assert_int_equal(gpus(&w, 2), 5);
	world_fini(&w);
}

/* ---- bounds ------------------------------------------------------------- */

static void min_sum_above_capacity(void **state)
{
	struct world w;

	/* A running job keeps its min; a higher-priority pending job waits. */
	world_init(&w, ELASTIC_POLICY_PRIORITY, 2, 4);
	add_job(&w, 1, 6, 8, 100, 100);
	hold(&w, 1, 0, 4, 4);
	hold(&w, 1, 1, 4, 2);
	add_job(&w, 2, 4, 8, 10000, 200);
	add_job(&w, 3, 1, 8, 50, 300);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 8);
	assert_true(has(&w, 1, ELASTIC_POLICY_STEADY));
	assert_int_equal(gpus(&w, 2), 0);
	assert_true(has(&w, 2, ELASTIC_POLICY_WAIT));
	/* Job 3 would fit (min 1) but waits behind job 2: no starvation. */
	assert_int_equal(gpus(&w, 3), 0);
	assert_true(has(&w, 3, ELASTIC_POLICY_WAIT));
	char line[256];
	elastic_policy_explain(w.res, job_index(&w, 2), line, sizeof(line));
	assert_non_null(strstr(line, "waits: its min of 4 GPUs does not fit"));

	/* Job 1 ends: job 2 (priority) starts before job 3. */
	remove_job(&w, 1);
	decide(&w);
	assert_true(has(&w, 2, ELASTIC_POLICY_START));
	assert_true(has(&w, 3, ELASTIC_POLICY_START));
	assert_int_equal(gpus(&w, 2) + gpus(&w, 3), 8);
	world_fini(&w);

	/* Mins that fill the capacity exactly all fit, running or pending. */
	world_init(&w, ELASTIC_POLICY_PRIORITY, 3, 4);
	add_job(&w, 1, 4, 8, 100, 100);
	hold(&w, 1, 0, 4, 4);
	add_job(&w, 2, 4, 8, 100, 200);
	hold(&w, 2, 1, 4, 4);
	add_job(&w, 3, 4, 8, 100, 300);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 4);
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(gpus(&w, 3), 4);
	assert_true(has(&w, 3, ELASTIC_POLICY_START));
	w.gpus[2] = 0; /* now the two running mins fill it exactly */
	decide(&w);
	assert_int_equal(gpus(&w, 1), 4);
	assert_int_equal(gpus(&w, 2), 4);
	assert_true(has(&w, 3, ELASTIC_POLICY_WAIT));
	world_fini(&w);
}

static void max_below_share_leftover_to_others(void **state)
{
	struct world w;

	world_init(&w, ELASTIC_POLICY_FAIRSHARE, 2, 4);
	add_job(&w, 1, 1, 2, 1, 100);
	add_job(&w, 2, 1, 8, 1, 200);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 2);
	assert_int_equal(gpus(&w, 2), 6);

	add_job(&w, 3, 1, 8, 1, 300);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 2);
	assert_int_equal(gpus(&w, 2), 3);
	assert_int_equal(gpus(&w, 3), 3);

	/* Priority weights: the share job 1 cannot take flows by weight. */
	w.in.mode = ELASTIC_POLICY_PRIORITY;
	job(&w, 1)->priority = 1000;
	job(&w, 2)->priority = 1000;
	job(&w, 3)->priority = 3000;
	decide(&w); /* 1.6, 1.6, 4.8: floors 1, 1, 4; the 2 left by remainder */
	assert_int_equal(gpus(&w, 3), 5);
	assert_int_equal(gpus(&w, 1), 2); /* ties with job 2: earlier submit */
	assert_int_equal(gpus(&w, 2), 1);

	/* All maxes below capacity: every job at max, the rest idle. */
	remove_job(&w, 3);
	job(&w, 2)->max = 3;
	decide(&w);
	assert_int_equal(gpus(&w, 1), 2);
	assert_int_equal(gpus(&w, 2), 3);
	assert_int_equal(w.res->idle, 3);
	world_fini(&w);
}

/* ---- allowed sizes ------------------------------------------------------ */

static void pow2_sizes(void **state)
{
	struct world w;

	world_init(&w, ELASTIC_POLICY_FAIRSHARE, 3, 4);
	add_job(&w, 1, 1, 16, 1, 100)->sizes = ELASTIC_SIZES_POW2;
	add_job(&w, 2, 1, 16, 1, 200)->sizes = ELASTIC_SIZES_POW2;
	decide(&w); /* shares 6 / 6 -> 4 / 4; the 4 left: one step, by rank */
	assert_int_equal(gpus(&w, 1), 8);
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(w.res->idle, 0);
	assert_int_equal(nodes_of(&w, 1), 2);
	assert_int_equal(nodes_of(&w, 2), 1);

	/* min 3 means 4, max 6 means 4: effective bounds are reported. */
	job(&w, 2)->min = 3;
	job(&w, 2)->max = 6;
	decide(&w);
	assert_int_equal(tgt(&w, 2)->min, 4);
	assert_int_equal(tgt(&w, 2)->max, 4);
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(gpus(&w, 1), 8);
	world_fini(&w);
}

static void explicit_size_list(void **state)
{
	struct world w;
	static const int sizes[] = {2, 6};

	world_init(&w, ELASTIC_POLICY_FAIRSHARE, 2, 4);
	add_job(&w, 1, 1, 8, 1, 100);
	set_list(&w, 1, sizes, 2);
	add_job(&w, 2, 1, 8, 1, 200);
	decide(&w); /* 4 / 4: job 1 may only have 2 (6 is beyond what is left) */
	assert_int_equal(tgt(&w, 1)->min, 2);
	assert_int_equal(gpus(&w, 1), 2);
	assert_int_equal(gpus(&w, 2), 6);

	job(&w, 2)->max = 2;
	decide(&w); /* job 2 capped at 2: job 1 gets its 6 */
	assert_int_equal(gpus(&w, 1), 6);
	assert_int_equal(gpus(&w, 2), 2);
	world_fini(&w);
}

/* ---- jobs coming and going ---------------------------------------------- */

static void jobs_arriving_and_leaving(void **state)
{
	struct world w;

	world_init(&w, ELASTIC_POLICY_FAIRSHARE, 4, 4);
	add_job(&w, 1, 1, 16, 1, 100);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 16);
	apply(&w);

	add_job(&w, 2, 1, 16, 1, 200);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 8);
	assert_int_equal(gpus(&w, 2), 8);
	assert_int_equal(nodes_of(&w, 1), 2);
	assert_int_equal(nodes_of(&w, 2), 2);
	apply(&w);

	add_job(&w, 3, 1, 16, 1, 300);
	decide(&w); /* 5.33 each: 5, 5, 5 and the one left to the first */
	assert_int_equal(gpus(&w, 1), 6);
	assert_int_equal(gpus(&w, 2), 5);
	assert_int_equal(gpus(&w, 3), 5);
	assert_int_equal(nodes_of(&w, 3), 2);
	apply(&w);

	remove_job(&w, 2);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 8);
	assert_int_equal(gpus(&w, 3), 8);
	apply(&w);

	remove_job(&w, 1);
	remove_job(&w, 3);
	decide(&w); /* nobody left: fine, all idle */
	assert_int_equal(w.res->njobs, 0);
	assert_int_equal(w.res->idle, 16);
	world_fini(&w);
}

/* ---- placement ---------------------------------------------------------- */

static void placement_packs_few_nodes(void **state)
{
	struct world w;

	/* Free: node0 2, node1 4, node2 3, node3 8. */
	world_init(&w, ELASTIC_POLICY_FIFO, 4, 8);
	w.busy[0] = 6;
	w.busy[1] = 4;
	w.busy[2] = 5;
	add_job(&w, 1, 4, 4, 1, 100);
	decide(&w); /* 4 fit exactly on node 1, not spread and not on node 3 */
	assert_int_equal(nodes_of(&w, 1), 1);
	assert_int_equal(on_node(&w, 1, 1), 4);
	apply(&w);

	add_job(&w, 2, 10, 10, 1, 200);
	decide(&w); /* 8 on node 3, the 2 left on node 0 (2 free: best fit) */
	assert_int_equal(nodes_of(&w, 2), 2);
	assert_int_equal(on_node(&w, 2, 3), 8);
	assert_int_equal(on_node(&w, 2, 0), 2);
	world_fini(&w);
}

static void busy_gpus_of_other_jobs(void **state)
{
	struct world w;

	world_init(&w, ELASTIC_POLICY_PRIORITY, 2, 4);
	w.busy[0] = 3;
	add_job(&w, 1, 1, 8, 1, 100);
	decide(&w);
	assert_int_equal(w.res->capacity, 5);
	assert_int_equal(gpus(&w, 1), 5);
	assert_int_equal(on_node(&w, 1, 1), 4);
	assert_int_equal(on_node(&w, 1, 0), 1);

	/* Everything busy: elastic jobs wait, that is not an error. */
	w.busy[0] = 4;
	w.busy[1] = 4;
	decide(&w);
	assert_int_equal(w.res->capacity, 0);
	assert_true(has(&w, 1, ELASTIC_POLICY_WAIT));
	world_fini(&w);
}

/* ---- hysteresis --------------------------------------------------------- */

/* Two jobs at 4 / 4 on 2 x 4, job 2's priority then rises to 9000: the
 * split wants 5 / 3 (8 * 9000/14000 = 5.14: job 2 is short of its floor 5;
 * at 7000, 4.67, 4 / 4 would be within a step and kept). */
static void two_at_four(struct world *w)
{
	world_init(w, ELASTIC_POLICY_PRIORITY, 2, 4);
	add_job(w, 1, 1, 8, 5000, 100);
	hold(w, 1, 0, 4, 1);
	add_job(w, 2, 1, 8, 9000, 200);
	hold(w, 2, 1, 4, 1);
}

static void hysteresis_threshold(void **state)
{
	struct world w;
	char line[256];

	two_at_four(&w);
	decide(&w);
	assert_int_equal(gpus(&w, 2), 5);
	assert_int_equal(gpus(&w, 1), 3);

	w.in.min_change = 2; /* a 1-GPU move is churn */
	decide(&w);
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(gpus(&w, 1), 4);
	assert_true(has(&w, 1, ELASTIC_POLICY_HOLD_THRESHOLD));
	assert_true(has(&w, 2, ELASTIC_POLICY_HOLD_THRESHOLD));
	assert_int_equal(tgt(&w, 2)->want, 5);
	elastic_policy_explain(w.res, job_index(&w, 2), line, sizeof(line));
	assert_string_equal(
		line, "job 2: held at 4 GPUs (would be 5: change under the threshold)");

	w.in.min_change = 0;
	w.in.min_change_pct = 30; /* 1 of 4 = 25% */
	decide(&w);
	assert_int_equal(gpus(&w, 2), 4);
	w.in.min_change_pct = 25;
	decide(&w);
	assert_int_equal(gpus(&w, 2), 5);

	/* A pending job starts even under a huge threshold; a held shrink
	 * must leave room for its min, so one of the two shrinks anyway. */
	w.in.min_change = 8;
	w.in.min_change_pct = 0;
	job(&w, 2)->priority = 5000;
	add_job(&w, 3, 2, 8, 5000, 300);
	decide(&w);
	assert_true(has(&w, 3, ELASTIC_POLICY_START));
	assert_int_equal(gpus(&w, 3), 2);
	assert_int_equal(gpus(&w, 1) + gpus(&w, 2), 6);
	assert_true(has(&w, 1, ELASTIC_POLICY_HOLD_THRESHOLD)); /* earlier submit */
	assert_true(has(&w, 2, ELASTIC_POLICY_SHRINK));
	assert_int_equal(gpus(&w, 2), 2);
	world_fini(&w);
}

static void hysteresis_cooldown(void **state)
{
	struct world w;
	char line[256];

	two_at_four(&w);
	w.in.cooldown = 60;
	job(&w, 1)->last_resize = 990;
	job(&w, 2)->last_resize = 990;
	decide(&w); /* resized 10 s ago: held */
	assert_int_equal(gpus(&w, 1), 4);
	assert_int_equal(gpus(&w, 2), 4);
	assert_true(has(&w, 2, ELASTIC_POLICY_HOLD_COOLDOWN));
	elastic_policy_explain(w.res, job_index(&w, 2), line, sizeof(line));
	assert_string_equal(
		line, "job 2: held at 4 GPUs (would be 5: within the 60s cool-down)");

	/* Only job 2 in its cool-down: its grow is held, so job 1 keeps 4. */
	job(&w, 1)->last_resize = 100;
	decide(&w);
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(gpus(&w, 1), 4);
	assert_true(has(&w, 1, ELASTIC_POLICY_STEADY));

	w.in.now = 1050; /* cool-down over */
	decide(&w);
	assert_int_equal(gpus(&w, 2), 5);
	assert_int_equal(gpus(&w, 1), 3);

	/* Never blocks a min: both in cool-down, a pending job with min 4
	 * arrives; a shrink happens, straight to the fair share. */
	w.in.now = 1000;
	job(&w, 1)->last_resize = 990;
	job(&w, 2)->priority = 5000;
	add_job(&w, 3, 4, 8, 5000, 300);
	decide(&w);
	assert_int_equal(gpus(&w, 3), 4);
	assert_int_equal(gpus(&w, 1) + gpus(&w, 2), 4);
	world_fini(&w);
}

/* ---- stable allocations ------------------------------------------------- */

/* Deterministic pseudo-random numbers (LCG), shared with the random worlds. */
static uint64_t rng;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(rng >> 33) % n;
}

/* GPUs taken from running jobs by the last decision (each moved GPU once). */
static int moved(const struct world *w)
{
	int n = 0;
	for (int i = 0; i < w->res->njobs; i++) {
		const struct elastic_policy_target *t = &w->res->targets[i];
		if (t->cur > t->gpus)
			n += t->cur - t->gpus;
	}
	return n;
}

/* Decide, check every running job is within one GPU of its share (all
 * sizes "any" here), enact, let 11 s pass (past the 10 s cool-down).
 * Returns the GPUs moved. */
static int drift_step(struct world *w)
{
	int m;

	decide(w);
	for (int i = 0; i < w->res->njobs; i++) {
		const struct elastic_policy_target *t = &w->res->targets[i];
		if (t->gpus && w->jobs[i].sizes == ELASTIC_SIZES_ANY)
			assert_true(t->gpus - t->share > -1.0 &&
				    t->gpus - t->share < 1.0);
	}
	m = moved(w);
	apply(w);
	w->in.now += 11;
	return m;
}

/* The drift case: 4 / 3 on 7 GPUs (nodes of 4 and 3), priorities 5001 and
 * 5000 swapping at every decision, cool-down 10 s, decisions 11 s apart:
 * shares 3.5005 / 3.4995 and back; 4 / 3 is a rounding of both. */
static void two_jobs_on_seven(struct world *w, int fresh)
{
	world_init(w, ELASTIC_POLICY_PRIORITY, 2, 4);
	w->gpus[1] = 3;
	w->in.cooldown = 10;
	w->in.min_change = 1;
	w->in.fresh_split = fresh;
	add_job(w, 1, 1, 7, 5000, 100)->last_resize = 900;
	hold(w, 1, 0, 4, 1);
	add_job(w, 2, 1, 7, 5001, 200)->last_resize = 900;
	hold(w, 2, 1, 3, 1);
}

static void swap_priorities(struct world *w, uint32_t a, uint32_t b)
{
	uint32_t p = job(w, a)->priority;
	job(w, a)->priority = job(w, b)->priority;
	job(w, b)->priority = p;
}

static void drifting_priorities_move_nothing(void **state)
{
	struct world w;
	int total = 0;

	two_jobs_on_seven(&w, 0);
	for (int d = 0; d < 6; d++) {
		total += drift_step(&w);
		swap_priorities(&w, 1, 2);
	}
	assert_int_equal(total, 0);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 4);
	assert_int_equal(gpus(&w, 2), 3);
	assert_true(has(&w, 1, ELASTIC_POLICY_STEADY));
	world_fini(&w);

	/* Largest remainder alone (fresh_split = 1) moves a GPU at each
	 * decision: 6 in 6; this is the churn that stable allocations avoid. */
	two_jobs_on_seven(&w, 1);
	total = 0;
	for (int d = 0; d < 6; d++) {
		total += drift_step(&w);
		swap_priorities(&w, 1, 2);
	}
	assert_int_equal(total, 6);
	world_fini(&w);
}

/* Odd counts, three and more jobs: 5 jobs on 13 GPUs (nodes of 4, 4, 3, 2),
 * priorities drifting by up to 0.5 % a decision around 5000: no GPU moves
 * in 40 decisions, and every job stays within one GPU of its share. */
static void drifting_three_or_more_jobs(void **state)
{
	struct world w;
	int total = 0, fresh = 0;

	for (int f = 0; f < 2; f++) {
		world_init(&w, ELASTIC_POLICY_PRIORITY, 4, 4);
		w.gpus[2] = 3;
		w.gpus[3] = 2;
		w.in.fresh_split = f;
		for (uint32_t id = 1; id <= 5; id++)
			add_job(&w, id, 1, 13, 5000, 100 * id);
		rng = 7;
		drift_step(&w); /* all start: 3, 3, 3, 2, 2 */
		assert_int_equal(w.res->idle, 0);
		int sum = 0;
		for (int d = 0; d < 40; d++) {
			for (int i = 0; i < w.in.njobs; i++)
				w.jobs[i].priority = 4975 + rnd(51);
			sum += drift_step(&w);
		}
		if (f)
			fresh = sum;
		else
			total = sum;
		world_fini(&w);
	}
	assert_int_equal(total, 0);
	assert_true(fresh > 10); /* largest remainder alone: churn */
}

/* pow2 sizes: two pow2 jobs on 12 GPUs hold 8 / 4 (shares 6 / 6, floors
 * 4 / 4, the 4 left is one step). Swapping priorities keeps 8 / 4; the rule
 * before flips 8 / 4 <-> 4 / 8, four GPUs each decision. */
static void pow2_drift_keeps_the_step(void **state)
{
	struct world w;

	for (int f = 0; f < 2; f++) {
		int total = 0;
		world_init(&w, ELASTIC_POLICY_PRIORITY, 3, 4);
		w.in.fresh_split = f;
		add_job(&w, 1, 1, 16, 5001, 100)->sizes = ELASTIC_SIZES_POW2;
		add_job(&w, 2, 1, 16, 5000, 200)->sizes = ELASTIC_SIZES_POW2;
		decide(&w);
		assert_int_equal(gpus(&w, 1), 8);
		assert_int_equal(gpus(&w, 2), 4);
		apply(&w);
		for (int d = 0; d < 4; d++) {
			swap_priorities(&w, 1, 2);
			total += drift_step(&w);
		}
		assert_int_equal(total, f ? 16 : 0);
		world_fini(&w);
	}

	/* A pow2 job keeps its step only where it fits: it holds 8 of 14
	 * with a share of 4.67 (floor 4, step 8); floors 4 + 4 + 4 leave 2,
	 * less than its step: 4. */
	world_init(&w, ELASTIC_POLICY_FAIRSHARE, 4, 4);
	w.gpus[3] = 2;
	add_job(&w, 1, 1, 16, 1, 100)->sizes = ELASTIC_SIZES_POW2;
	hold(&w, 1, 0, 4, 1);
	hold(&w, 1, 1, 4, 0);
	add_job(&w, 2, 1, 16, 1, 200);
	hold(&w, 2, 2, 4, 1);
	add_job(&w, 3, 1, 16, 1, 300);
	hold(&w, 3, 3, 2, 1);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 4);
	assert_int_equal(gpus(&w, 2) + gpus(&w, 3), 10);
	assert_int_equal(gpus(&w, 2), 5); /* the 2 left by remainder: 5 / 5 */
	world_fini(&w);
}

/* A job above its step gives back only what it must: 10 GPUs, three equal
 * jobs (3.33 each) holding 6 / 2 / 2: job 1 goes to 4, not 3 (2 GPUs move,
 * not 3), though job 2 ranks first for the remainder. */
static void shrink_stops_at_the_step(void **state)
{
	struct world w;

	for (int f = 0; f < 2; f++) {
		world_init(&w, ELASTIC_POLICY_FAIRSHARE, 3, 4);
		w.gpus[2] = 2;
		w.in.fresh_split = f;
		add_job(&w, 1, 1, 10, 1, 300);
		hold(&w, 1, 0, 4, 1);
		hold(&w, 1, 1, 2, 0);
		add_job(&w, 2, 1, 10, 1, 100);
		hold(&w, 2, 1, 2, 1);
		add_job(&w, 3, 1, 10, 1, 200);
		hold(&w, 3, 2, 2, 1);
		decide(&w);
		assert_int_equal(gpus(&w, 1), f ? 3 : 4);
		assert_int_equal(gpus(&w, 2), f ? 4 : 3);
		assert_int_equal(gpus(&w, 3), 3);
		assert_int_equal(moved(&w), f ? 3 : 2);
		world_fini(&w);
	}
}

/* A job that just arrived starts at once at its share, in one step, even
 * with the others in their cool-down, and nothing moves afterwards. */
static void arriving_job_starts_at_its_share(void **state)
{
	struct world w;

	two_jobs_on_seven(&w, 0);
	w.in.cooldown = 60;
	job(&w, 1)->last_resize = 990;
	job(&w, 2)->last_resize = 990;
	add_job(&w, 3, 1, 7, 5000, 300);
	/* 2.33 each: floors 2, 2, 2, one GPU left: job 2 holds exactly its
	 * step (3) and keeps it; job 1 (4) shrinks to 2: one re-form. */
	decide(&w);
	assert_true(has(&w, 3, ELASTIC_POLICY_START));
	assert_int_equal(gpus(&w, 3), 2);
	assert_int_equal(gpus(&w, 2), 3);
	assert_true(has(&w, 2, ELASTIC_POLICY_STEADY));
	assert_int_equal(gpus(&w, 1), 2);
	apply(&w);
	w.in.now += 61;
	for (int d = 0; d < 4; d++) {
		assert_int_equal(drift_step(&w), 0);
		assert_int_equal(gpus(&w, 3), 2);
		swap_priorities(&w, 1, 2);
	}
	world_fini(&w);

	/* Alone on 8 then a second job: 4 / 4 at once, not MIN 1 then more. */
	world_init(&w, ELASTIC_POLICY_PRIORITY, 2, 4);
	w.in.cooldown = 60;
	add_job(&w, 1, 1, 8, 5000, 100)->last_resize = 995;
	hold(&w, 1, 0, 4, 1);
	hold(&w, 1, 1, 4, 0);
	add_job(&w, 2, 1, 8, 5001, 200);
	decide(&w);
	assert_true(has(&w, 2, ELASTIC_POLICY_START));
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(gpus(&w, 1), 4);
	apply(&w);
	w.in.now += 61;
	assert_int_equal(drift_step(&w), 0);
	world_fini(&w);
}

/* Really short: a priority change worth more than a step still moves GPUs,
 * as few as the rule allows. 4 / 3 on 7, job 2 to 10000: shares 2.33 /
 * 4.67, job 2 below its floor 4: 3 / 4 (job 1 shrinks to its step); then
 * job 2 to 20000: shares 1.4 / 5.6: 2 / 5. */
static void really_short_still_moves(void **state)
{
	struct world w;

	two_jobs_on_seven(&w, 0);
	job(&w, 2)->priority = 10000;
	decide(&w);
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(gpus(&w, 1), 3);
	apply(&w);
	w.in.now += 11;
	job(&w, 2)->priority = 20000;
	decide(&w);
	assert_int_equal(gpus(&w, 2), 5);
	assert_int_equal(gpus(&w, 1), 2);
	world_fini(&w);
}

/* ---- bad input ---------------------------------------------------------- */

static void good_world(struct world *w)
{
	world_init(w, ELASTIC_POLICY_PRIORITY, 2, 4);
	add_job(w, 7, 1, 8, 100, 100);
	hold(w, 7, 0, 2, 1);
	add_job(w, 8, 1, 8, 100, 200);
}

static void m_min_gt_max(struct world *w)
{
	w->jobs[0].min = 4;
	w->jobs[0].max = 2;
}
static void m_weight_too_big(struct world *w)
{
	w->jobs[0].weight = ELASTIC_WEIGHT_MAX + 1;
}
static void m_min_zero(struct world *w)
{
	w->jobs[0].min = 0;
}
static void m_min_negative(struct world *w)
{
	w->jobs[1].min = -1;
}
static void m_zero_capacity(struct world *w)
{
	w->gpus[0] = w->gpus[1] = 0;
	w->jobs[0].nplace = 0;
}
static void m_no_nodes(struct world *w)
{
	w->in.nnodes = 0;
}
static void m_node_gpus_null(struct world *w)
{
	w->in.node_gpus = NULL;
}
static void m_node_negative(struct world *w)
{
	w->gpus[1] = -4;
}
static void m_node_huge(struct world *w)
{
	w->gpus[1] = 5000;
}
static void m_busy_over(struct world *w)
{
	w->busy[1] = 5;
}
static void m_busy_negative(struct world *w)
{
	w->busy[1] = -1;
}
static void m_dup_id(struct world *w)
{
	w->jobs[1].id = 7;
}
static void m_id_zero(struct world *w)
{
	w->jobs[1].id = 0;
}
static void m_submit_negative(struct world *w)
{
	w->jobs[1].submit_time = -5;
}
static void m_resize_negative(struct world *w)
{
	w->jobs[1].last_resize = -1;
}
static void m_now_negative(struct world *w)
{
	w->in.now = -1;
}
static void m_cooldown_negative(struct world *w)
{
	w->in.cooldown = -3;
}
static void m_min_change_negative(struct world *w)
{
	w->in.min_change = -2;
}
static void m_pct_over(struct world *w)
{
	w->in.min_change_pct = 101;
}
static void m_mode(struct world *w)
{
	w->in.mode = (enum elastic_policy_mode)7;
}
static void m_sizes_kind(struct world *w)
{
	w->jobs[1].sizes = (enum elastic_sizes_kind)9;
}
static void m_list_empty(struct world *w)
{
	w->jobs[1].sizes = ELASTIC_SIZES_LIST;
}
static void m_list_order(struct world *w)
{
	static const int l[] = {4, 2};
	w->jobs[1].sizes = ELASTIC_SIZES_LIST;
	w->jobs[1].size_list = l;
	w->jobs[1].nsize_list = 2;
}
static void m_list_zero(struct world *w)
{
	static const int l[] = {0, 2};
	w->jobs[1].sizes = ELASTIC_SIZES_LIST;
	w->jobs[1].size_list = l;
	w->jobs[1].nsize_list = 2;
}
static void m_no_size_in_range(struct world *w)
{
	w->jobs[1].sizes = ELASTIC_SIZES_POW2;
	w->jobs[1].min = 5;
	w->jobs[1].max = 7;
}
static void m_place_node(struct world *w)
{
	w->place[0][0].node = 2;
}
static void m_place_negative_node(struct world *w)
{
	w->place[0][0].node = -1;
}
static void m_place_gpus(struct world *w)
{
	w->place[0][0].gpus = -2;
}
static void m_place_pinned(struct world *w)
{
	w->place[0][0].pinned = 3;
}
static void m_place_twice(struct world *w)
{
	hold(w, 7, 0, 1, 0);
}
static void m_overcommit(struct world *w)
{
	hold(w, 8, 0, 3, 0);
}
static void m_pinned_over_min(struct world *w)
{
	w->place[0][0].pinned = 2;
}
static void m_njobs_negative(struct world *w)
{
	w->in.njobs = -1;
}
static void m_jobs_null(struct world *w)
{
	w->in.jobs = NULL;
}
static void m_place_null(struct world *w)
{
	w->jobs[0].place = NULL;
}

static const struct bad_case {
	const char *name;
	void (*mutate)(struct world *w);
	const char *expect;
} bad_cases[] = {
	{"min > max", m_min_gt_max, "job 7: min 4 > max 2"},
	{"min 0", m_min_zero, "job 7: min 0 < 1"},
	{"weight too big", m_weight_too_big, "job 7: weight 1001 > 1000"},
	{"min negative", m_min_negative, "job 8: min -1 < 1"},
	{"zero capacity", m_zero_capacity, "zero GPU capacity: all 2 nodes have 0 GPUs"},
	{"no nodes", m_no_nodes, "no nodes (0)"},
	{"node GPU counts NULL", m_node_gpus_null, "no GPU counts for the 2 nodes"},
	{"negative node GPUs", m_node_negative, "node 1: -4 GPUs (allowed: 0..1024)"},
	{"huge node", m_node_huge, "node 1: 5000 GPUs"},
	{"busy > GPUs", m_busy_over, "node 1: 5 GPUs busy with non-elastic jobs"},
	{"busy negative", m_busy_negative, "node 1: -1 GPUs busy"},
	{"duplicate id", m_dup_id, "job 7: listed twice"},
	{"id 0", m_id_zero, "job at index 1: id 0"},
	{"negative submit", m_submit_negative, "job 8: submit time -5 is negative"},
	{"negative resize", m_resize_negative, "job 8: last resize time -1 is negative"},
	{"negative now", m_now_negative, "now -1 is negative"},
	{"negative cool-down", m_cooldown_negative, "cool-down -3 s is negative"},
	{"negative min change", m_min_change_negative, "min change -2 GPUs is negative"},
	{"pct > 100", m_pct_over, "min change 101% is outside 0..100"},
	{"bad mode", m_mode,
	 "policy mode 7 is not priority, fairshare, fifo or throughput"},
	{"bad size kind", m_sizes_kind, "job 8: allowed-size kind 9"},
	{"empty size list", m_list_empty, "job 8: allowed-size list is empty"},
	{"size list order", m_list_order,
	 "job 8: allowed sizes not ascending (2 after 4)"},
	{"size 0 in list", m_list_zero, "job 8: allowed size 0 < 1"},
	{"no size in range", m_no_size_in_range,
	 "job 8: no allowed size between min 5 and max 7"},
	{"placement node", m_place_node, "job 7: placement on node 2 (nodes: 0..1)"},
	{"placement negative node", m_place_negative_node, "job 7: placement on node -1"},
	{"placement GPUs", m_place_gpus, "job 7: -2 GPUs on node 0 (must be > 0)"},
	{"pinned > GPUs", m_place_pinned,
	 "job 7: 3 pinned GPUs on node 0 (allowed: 0..2)"},
	{"node twice", m_place_twice, "job 7: node 0 listed twice"},
	{"over-committed node", m_overcommit, "node 0: over-committed: job 8 holds 3"},
	{"pinned > min", m_pinned_over_min, "job 7: 2 pinned GPUs > min 1"},
	{"negative job count", m_njobs_negative, "job count -1 is negative"},
	{"jobs NULL", m_jobs_null, "no job array for 2 jobs"},
	{"placement NULL", m_place_null, "job 7: placement of 1 entries is missing"},
};

static void bad_input_is_refused(void **state)
{
	struct elastic_policy_result *sentinel = (struct elastic_policy_result *)&state;
	struct elastic_policy_result *res;
	elastic_error_t err;
	struct world w;

	for (size_t c = 0; c < sizeof(bad_cases) / sizeof(bad_cases[0]); c++) {
		good_world(&w);
		decide(&w); /* the good world is good */
		world_fini(&w);
		bad_cases[c].mutate(&w);
		res = sentinel;
		errno = 0;
		strcpy(err.text, "untouched");
		if (elastic_policy_decide(&w.in, &res, &err) != -1)
			fail_msg("case '%s': accepted", bad_cases[c].name);
		if (errno != EINVAL)
			fail_msg("case '%s': errno %d", bad_cases[c].name, errno);
		if (!strstr(err.text, bad_cases[c].expect))
			fail_msg("case '%s': error '%s' lacks '%s'", bad_cases[c].name,
				 err.text, bad_cases[c].expect);
		assert_ptr_equal(res, sentinel); /* a failed call changes nothing */
	}

	/* NULL everywhere; a NULL error struct is fine too. */
	errno = 0;
	assert_int_equal(elastic_policy_decide(NULL, &res, &err), -1);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(err.text, "no policy input");
	good_world(&w);
	assert_int_equal(elastic_policy_decide(&w.in, NULL, &err), -1);
	assert_string_equal(err.text, "no place for the policy result");
	m_min_gt_max(&w);
	assert_int_equal(elastic_policy_decide(&w.in, &res, NULL), -1);
	assert_int_equal(errno, EINVAL);
	elastic_policy_result_destroy(NULL);
	char line[64];
	assert_int_equal(elastic_policy_explain(NULL, 0, line, sizeof(line)), -1);
	good_world(&w);
	decide(&w);
	world_fini(&w);
}

/* ---- throughput --------------------------------------------------------- */

static const int at_1_2_4[] = {1, 2, 4, 0}, at_2_4_8[] = {2, 4, 8, 0}, at_2[] = {2, 0},
		 at_4[] = {4, 0}, at_1_2_4_8[] = {1, 2, 4, 8, 0},
		 at_to_16[] = {2, 4, 8, 16, 0};

/* Job 1 scales linearly, job 2 saturates (t = 1/n + 0.25: speedups 1, 1.67,
 * 2.14, 2.5, 2.78: its fifth GPU adds 0.28 of a GPU), 16 GPUs. */
static void linear_and_saturating(struct world *w, double floor_share)
{
	world_init(w, ELASTIC_POLICY_THROUGHPUT, 2, 8);
	w->in.min_gain = 0.3;
	w->in.fair_floor = floor_share;
	add_job(w, 1, 1, 16, 5000, 100);
	add_job(w, 2, 1, 16, 5000, 200);
	set_model(w, 1, 1, 0, 0, 0, at_2_4_8);
	set_model(w, 2, 1, 0.25, 0, 0, at_1_2_4);
}

static void throughput_gpus_where_they_add_most(void **state)
{
	struct world w;
	char line[256];

	linear_and_saturating(&w, 0.5);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 12);
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(w.res->idle, 0);
	assert_true(fabs(tgt(&w, 2)->eff - 2.5 / 4) < 1e-6);
	/* job 1 cannot take them all: the GPU job 2 would gain 0.28 from stays
	 * free, and so does every one after it */
	job(&w, 1)->max = 10;
	decide(&w);
	assert_int_equal(gpus(&w, 1), 10);
	assert_int_equal(gpus(&w, 2), 4);
	assert_int_equal(w.res->idle, 2);
	/* min gain 0: every GPU goes out, as in the other modes */
	w.in.min_gain = 0;
	decide(&w);
	assert_int_equal(gpus(&w, 2), 6);
	assert_int_equal(w.res->idle, 0);
	/* a decision says why, in efficiencies */
	w.in.min_gain = 0.3;
	apply(&w);
	decide(&w);
	assert_int_equal(gpus(&w, 2), 4);
	assert_true(elastic_policy_explain(w.res, job_index(&w, 2), line, sizeof(line)) >
		    0);
	assert_int_equal(
		strncmp(line, "job 2: shrink 6 -> 4 GPUs (efficiency 0.50 at 6, 0.6", 52),
		0);
	assert_non_null(strstr(line, "; fair share 8.00)"));
	world_fini(&w);
}

/* The fairness floor: job 1 (measured up to 16 GPUs) scales linearly, so by
 * gains alone it takes every GPU it can and job 2 keeps its MIN; the floor
 * keeps job 2 at half its fair share (8) as far as it can use it (4: its
 * fifth GPU gains 0.28), and a floor of 1 gives it no more. Job 3's GPUs
 * gain 0.05 each (t = 0.1/n + 1): it stays at its MIN whatever the floor. */
static void throughput_fairness_floor(void **state)
{
	static const struct {
		double floor;
		int j1, j2, j3;
	} rows[] = {
		{0.0, 22, 1, 1},
		{0.5, 19, 4, 1},
		{1.0, 19, 4, 1},
	};
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct world w;
		world_init(&w, ELASTIC_POLICY_THROUGHPUT, 3, 8);
		w.in.min_gain = 0.3;
		w.in.fair_floor = rows[r].floor;
		add_job(&w, 1, 1, 24, 5000, 100);
		add_job(&w, 2, 1, 24, 5000, 200);
		add_job(&w, 3, 1, 24, 5000, 300);
		set_model(&w, 1, 1, 0, 0, 0, at_to_16);
		set_model(&w, 2, 1, 0.25, 0, 0, at_1_2_4);
		set_model(&w, 3, 0.1, 1, 0, 0, at_1_2_4);
		decide(&w);
		if (gpus(&w, 1) != rows[r].j1 || gpus(&w, 2) != rows[r].j2 ||
		    gpus(&w, 3) != rows[r].j3)
			fail_msg("floor %.1f: got %d/%d/%d, want %d/%d/%d", rows[r].floor,
				 gpus(&w, 1), gpus(&w, 2), gpus(&w, 3), rows[r].j1,
				 rows[r].j2, rows[r].j3);
		world_fini(&w);
	}
}

/* Equal gains split like fairshare: three linear jobs on 16 GPUs. */
static void throughput_equal_gains_split_fairly(void **state)
{
	struct world w;
	world_init(&w, ELASTIC_POLICY_THROUGHPUT, 2, 8);
	w.in.min_gain = 0.3;
	w.in.fair_floor = 0.5;
	for (uint32_t id = 1; id <= 3; id++) {
		add_job(&w, id, 1, 16, 5000, 100 * id);
		set_model(&w, id, 2.0 * id, 0, 0, 0, at_1_2_4_8);
	}
	decide(&w);
	assert_int_equal(gpus(&w, 1), 6);
	assert_int_equal(gpus(&w, 2), 5);
	assert_int_equal(gpus(&w, 3), 5);
	world_fini(&w);
}

/* A size not measured yet is tried one doubling at a time: job 1 was
 * measured at 2 GPUs only (so far: linear), job 2 at up to 8. Job 1 gets 4
 * (its floor) and no more; measured at 4 only it may have 8. Alone, it
 * still goes a doubling at a time while it was measured at one size, and
 * takes what no one else wants once measured at two. */
static void throughput_tries_one_doubling(void **state)
{
	struct world w;
	world_init(&w, ELASTIC_POLICY_THROUGHPUT, 2, 8);
	w.in.min_gain = 0.3;
	w.in.fair_floor = 0.25;
	add_job(&w, 1, 1, 16, 5000, 100);
	add_job(&w, 2, 1, 16, 5000, 200);
	set_model(&w, 1, 1, 0, 0, 0, at_2);
	set_model(&w, 2, 1, 0, 0, 0, at_1_2_4_8);
	hold(&w, 1, 0, 2, 0);
	hold(&w, 2, 1, 8, 0);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 4);
	assert_int_equal(gpus(&w, 2), 12);
	apply(&w);
	set_model(&w, 1, 1, 0, 0, 0, at_4);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 8);
	assert_int_equal(gpus(&w, 2), 8);
	apply(&w);
	remove_job(&w, 2);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 8);
	assert_int_equal(w.res->idle, 8);
	apply(&w);
	set_model(&w, 1, 1, 0, 0, 0, at_2_4_8);
	decide(&w);
	assert_int_equal(gpus(&w, 1), 16);
	world_fini(&w);
}

/* ---- determinism and invariants over random worlds ---------------------- */

static void random_world(struct world *w)
{
	static const int sizes[] = {1, 3, 6, 12};
	int nn = 1 + rnd(12), per = 1 + rnd(8), nj = rnd(MAXJ + 1);

	world_init(w, (enum elastic_policy_mode)rnd(4), nn, per);
	w->in.min_gain = rnd(4) * 0.15;
	w->in.fair_floor = rnd(3) * 0.5;
	for (int n = 0; n < nn; n++) {
		w->gpus[n] = n == 0 || rnd(5) ? per : (int)rnd(per + 1);
		w->busy[n] = rnd(3) ? 0 : rnd(w->gpus[n] + 1);
	}
	if (rnd(3) == 0) {
		w->in.min_change = rnd(3);
		w->in.min_change_pct = rnd(40);
		w->in.cooldown = rnd(100);
	}
	for (int i = 0; i < nj; i++) {
		int min = 1 + rnd(6), max = min + rnd(20);
		struct elastic_policy_job *jb =
			add_job(w, 1 + rnd(100000), min, max, rnd(4) ? rnd(20000) : 5000,
				rnd(1000));
		if (job_index(w, jb->id) != i) { /* id taken: drop it */
			w->in.njobs--;
			continue;
		}
		switch (rnd(4)) {
		case 1:
			jb->sizes = ELASTIC_SIZES_POW2;
			if (jb->max < 2 * jb->min)
				jb->max = 2 * jb->min;
			break;
		case 2:
			set_list(w, jb->id, sizes, 4);
			jb->min = 1;
			break;
		}
		jb->last_resize = rnd(2) ? 0 : 900 + rnd(200);
		if (rnd(3)) { /* a measured scaling, at 1 to 3 sizes */
			static const int at[][4] = {{2, 0}, {1, 4, 0}, {2, 4, 8, 0}};
			set_model(w, jb->id, 1 + rnd(10), rnd(4) * 0.5, rnd(2) * 0.3,
				  rnd(3) * 0.05, at[rnd(3)]);
		}
	}
	w->in.now = 1000;
}

static void random_worlds_keep_invariants(void **state)
{
	struct world w;

	rng = 42;
	for (int round = 0; round < 400; round++) {
		random_world(&w);
		/* Several decisions in a row, each enacted, some jobs going. */
		for (int step = 0; step < 6; step++) {
			decide(&w);
			if (w.in.mode != ELASTIC_POLICY_FIFO &&
			    w.in.mode != ELASTIC_POLICY_THROUGHPUT && !w.in.min_change &&
			    !w.in.min_change_pct && !w.in.cooldown) {
				int all_any = 1;
				for (int i = 0; i < w.in.njobs; i++)
					all_any &= w.jobs[i].sizes == ELASTIC_SIZES_ANY;
				/* Largest remainder: within one GPU of the share. */
				for (int i = 0; all_any && i < w.res->njobs; i++) {
					const struct elastic_policy_target *t =
						&w.res->targets[i];
					if (t->gpus)
						assert_true(t->gpus - t->share > -1.0 &&
							    t->gpus - t->share < 1.0);
				}
			}
			apply(&w);
			w.in.now += 30;
			if (w.in.njobs && rnd(3) == 0)
				remove_job(&w, w.jobs[rnd(w.in.njobs)].id);
			if (w.in.njobs && rnd(2) == 0)
				w.jobs[rnd(w.in.njobs)].priority = rnd(20000);
		}
		/* Input order does not matter. */
		struct world rev = w;
		for (int i = 0; i < w.in.njobs; i++) {
			int k = w.in.njobs - 1 - i;
			rev.jobs[i] = w.jobs[k];
			memcpy(rev.place[i], w.place[k], sizeof(w.place[k]));
			memcpy(rev.list[i], w.list[k], sizeof(w.list[k]));
			rev.jobs[i].place = rev.place[i];
			if (rev.jobs[i].sizes == ELASTIC_SIZES_LIST)
				rev.jobs[i].size_list = rev.list[i];
		}
		rev.in.jobs = rev.jobs;
		rev.in.node_gpus = rev.gpus;
		rev.in.node_busy = rev.busy;
		rev.res = NULL;
		decide(&w);
		decide(&rev);
		for (int i = 0; i < w.in.njobs; i++) {
			const struct elastic_policy_target *a = &w.res->targets[i];
			const struct elastic_policy_target *b = tgt(&rev, a->id);
			assert_int_equal(a->gpus, b->gpus);
			assert_int_equal(a->reason, b->reason);
			assert_int_equal(a->nplace, b->nplace);
			for (int k = 0; k < a->nplace; k++) {
				assert_int_equal(a->place[k].node, b->place[k].node);
				assert_int_equal(a->place[k].gpus, b->place[k].gpus);
			}
		}
		world_fini(&rev);
		world_fini(&w);
	}
}

/* Random, mostly broken input: every call returns 0 with a result that
 * keeps the invariants, or -1 with errno EINVAL and a message; never a
 * crash or an out-of-bounds access (the suite also runs under ASan). */
static void garbage_input_never_crashes(void **state)
{
	struct world w;
	int ok = 0, refused = 0;

	rng = 7;
	for (int round = 0; round < 3000; round++) {
		elastic_error_t err = {{0}};
		int r;
		random_world(&w);
		/* Corrupt a few fields, or none. */
		for (int k = rnd(4); k > 0; k--) {
			int i = w.in.njobs ? (int)rnd(w.in.njobs) : 0;
			int v = (int)rnd(40) - 10;
			switch (rnd(12)) {
			case 0:
				if (w.in.njobs)
					w.jobs[i].min = v;
				break;
			case 1:
				if (w.in.njobs)
					w.jobs[i].max = v;
				break;
			case 2:
				w.gpus[rnd(13)] = v;
				break;
			case 3:
				w.busy[rnd(13)] = v;
				break;
			case 4:
				if (w.in.njobs && w.jobs[i].nplace < MAXP)
					w.place[i][w.jobs[i].nplace++] =
						(struct elastic_policy_place){
							v, (int)rnd(6) - 1,
							(int)rnd(3) - 1};
				break;
			case 5:
				if (w.in.njobs)
					w.jobs[i].sizes = (enum elastic_sizes_kind)rnd(4);
				break;
			case 6:
				if (w.in.njobs > 1)
					w.jobs[i].id = w.jobs[0].id;
				break;
			case 7:
				w.in.min_change = v;
				break;
			case 8:
				w.in.min_change_pct = v * 5;
				break;
			case 9:
				w.in.cooldown = v;
				break;
			case 10:
				if (w.in.njobs)
					w.jobs[i].submit_time = v;
				break;
			case 11:
				w.in.nnodes = (int)rnd(14) - 1;
				break;
			}
			if (rnd(8) == 0)
				w.in.min_gain = v / 8.0;
			if (rnd(8) == 0)
				w.in.fair_floor = v / 8.0;
		}
		if (w.in.nnodes > MAXN)
			w.in.nnodes = MAXN;
		errno = 0;
		r = elastic_policy_decide(&w.in, &w.res, &err);
		if (r == 0) {
			check_result(&w);
			ok++;
		} else {
			assert_int_equal(r, -1);
			assert_int_equal(errno, EINVAL);
			assert_true(strlen(err.text) > 5);
			assert_null(w.res);
			refused++;
		}
		world_fini(&w);
	}
	/* Both kinds were exercised. */
	assert_true(ok > 300);
	assert_true(refused > 300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reference_scenario),
		cmocka_unit_test(decisions),
		cmocka_unit_test(priority_vs_fairshare),
		cmocka_unit_test(min_sum_above_capacity),
		cmocka_unit_test(max_below_share_leftover_to_others),
		cmocka_unit_test(pow2_sizes),
		cmocka_unit_test(explicit_size_list),
		cmocka_unit_test(jobs_arriving_and_leaving),
		cmocka_unit_test(placement_packs_few_nodes),
		cmocka_unit_test(busy_gpus_of_other_jobs),
		cmocka_unit_test(hysteresis_threshold),
		cmocka_unit_test(hysteresis_cooldown),
		cmocka_unit_test(drifting_priorities_move_nothing),
		cmocka_unit_test(drifting_three_or_more_jobs),
		cmocka_unit_test(pow2_drift_keeps_the_step),
		cmocka_unit_test(shrink_stops_at_the_step),
		cmocka_unit_test(arriving_job_starts_at_its_share),
		cmocka_unit_test(really_short_still_moves),
		cmocka_unit_test(bad_input_is_refused),
		cmocka_unit_test(policy_weight),
		cmocka_unit_test(throughput_gpus_where_they_add_most),
		cmocka_unit_test(throughput_fairness_floor),
		cmocka_unit_test(throughput_equal_gains_split_fairly),
		cmocka_unit_test(throughput_tries_one_doubling),
		cmocka_unit_test(random_worlds_keep_invariants),
		cmocka_unit_test(garbage_input_never_crashes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
