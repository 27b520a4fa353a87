/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench/bench_policy.c: decision time of the elastic policy at cluster scale
 * (default 10,000 elastic jobs on 12,500 nodes x 8 GPUs), and its churn under
 * slow priority drift with and without stable allocations. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"

#define TARGET_MS 10.0

struct sim {
	struct elastic_policy_input in;
	int *gpus, *busy;
	struct elastic_policy_job *jobs;
	struct elastic_policy_place **place; /* per job, malloc'd */
	int *cap;			     /* room in place[i] */
	struct elastic_scaling *scal;	     /* per job (throughput mode) */
	uint32_t next_id;
	uint64_t rng;
};

static const int list_sizes[] = {1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64};

static unsigned rnd(struct sim *s, unsigned n)
{
	s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(s->rng >> 33) % n;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "bench_policy: out of memory\n");
		exit(1);
	}
	return p;
}

/* A new pending job: min 1..8, max up to 64, mixed allowed sizes. */
static void new_job(struct sim *s, int i)
{
	struct elastic_policy_job *jb = &s->jobs[i];
	int min = 1 + rnd(s, 8);

	*jb = (struct elastic_policy_job){
		.id = s->next_id++,
		.min = min,
		.max = min + rnd(s, 57),
		.priority = 1000 + rnd(s, 19000),
		.submit_time = s->in.now - rnd(s, 86400),
		.place = s->place[i],
	};
	switch (rnd(s, 10)) {
	case 0:
	case 1:
		jb->sizes = ELASTIC_SIZES_POW2;
		break;
	case 2:
		jb->sizes = ELASTIC_SIZES_LIST;
		jb->size_list = list_sizes;
		jb->nsize_list = sizeof(list_sizes) / sizeof(list_sizes[0]);
		break;
	}
	if (jb->sizes != ELASTIC_SIZES_ANY && jb->max < 2 * min)
		jb->max = 2 * min; /* room for an allowed size */
	/* A measured scaling for two jobs in three (the others not measured
	 * yet): linear, saturating or slowing down past some size, measured
	 * at 1 to 3 sizes. */
	if (s->scal && rnd(s, 3)) {
		struct elastic_scaling *sc = &s->scal[i];
		double a = 1 + rnd(s, 10), b = rnd(s, 3) * 0.1, d = rnd(s, 2) * 0.01;
		int n = 1 + rnd(s, 4);
		memset(sc, 0, sizeof(*sc));
		for (int k = rnd(s, 3); k >= 0; k--, n *= 2)
			elastic_scaling_observe(sc, n, 1.0 / (a / n + b + d * n),
						s->in.now, 600);
		jb->scaling = sc;
	}
}

/* The controller did what the policy said: jobs hold their targets now. */
static int apply(struct sim *s, const struct elastic_policy_result *res)
{
	int changed = 0;
	for (int i = 0; i < res->njobs; i++) {
		const struct elastic_policy_target *t = &res->targets[i];
		if (t->nplace > s->cap[i]) {
			s->cap[i] = t->nplace;
			s->place[i] = realloc(s->place[i], sizeof(*t->place) * t->nplace);
			if (!s->place[i]) {
				fprintf(stderr, "bench_policy: out of memory\n");
				exit(1);
			}
		}
		memcpy(s->place[i], t->place, sizeof(*t->place) * t->nplace);
		s->jobs[i].place = s->place[i];
		s->jobs[i].nplace = t->nplace;
		if (t->gpus != t->cur) {
			s->jobs[i].last_resize = s->in.now;
			changed++;
		}
	}
	return changed;
}

/* Ten seconds pass: 1% of jobs change priority, 0.5% end and are replaced
 * by new pending ones. */
static void perturb(struct sim *s)
{
	int nj = s->in.njobs;
	s->in.now += 10;
	for (int k = 0; k < nj / 100; k++)
		s->jobs[rnd(s, nj)].priority = 1000 + rnd(s, 19000);
	for (int k = 0; k < nj / 200; k++) {
		int i = rnd(s, nj);
		s->jobs[i].nplace = 0;
		new_job(s, i);
	}
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The workspace every decision reuses, as elasticd does (policy.h). */
static struct elastic_policy_ws *ws;

/* One decision: wall time returned, CPU time of this thread in *cpu. */
static double decide(struct sim *s, struct elastic_policy_result **res, double *cpu)
{
	elastic_error_t err;
	double t0 = now_ms(), c0 = cpu_ms(), t1;
	if (elastic_policy_decide_ws(&s->in, ws, res, &err) < 0) {
		fprintf(stderr, "bench_policy: decide failed: %s\n", err.text);
		exit(1);
	}
	t1 = now_ms();
	*cpu = cpu_ms() - c0;
	return t1 - t0;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* GPUs taken from running jobs by a decision (each moved GPU once). */
static long moved_gpus(const struct elastic_policy_result *res)
{
	long n = 0;
	for (int i = 0; i < res->njobs; i++)
		if (res->targets[i].cur > res->targets[i].gpus)
			n += res->targets[i].cur - res->targets[i].gpus;
	return n;
}

/* Slow drift: every job's priority moves by up to +-0.2 %, 10 s pass. */
static void drift(struct sim *s)
{
	s->in.now += 10;
	for (int i = 0; i < s->in.njobs; i++) {
		int64_t p = s->jobs[i].priority;
		p += p * ((int64_t)rnd(s, 401) - 200) / 100000;
		s->jobs[i].priority = p < 1 ? 1 : (uint32_t)p;
	}
}

/* Churn of one rounding rule: the same jobs (same seed) settle, then
 * ndecisions decisions under drift; GPUs moved and jobs resized per
 * decision, elasticd's default hysteresis (1 GPU, cool-down 10 s). */
static void churn_run(int njobs, int nnodes, int per_node, int ndecisions, int fresh,
		      double *moved, double *resized, double *med_ms)
{
	struct sim s = {.rng = 4242, .next_id = 1000};
	struct elastic_policy_result *res = NULL;
	double *ms = xcalloc(ndecisions, sizeof(*ms)), cpu;
	long m = 0, r = 0;

	s.gpus = xcalloc(nnodes, sizeof(int));
	s.jobs = xcalloc(njobs, sizeof(*s.jobs));
	s.place = xcalloc(njobs, sizeof(*s.place));
	s.cap = xcalloc(njobs, sizeof(int));
	s.in = (struct elastic_policy_input){
		.mode = ELASTIC_POLICY_PRIORITY,
		.now = 1700000000,
		.min_change = 1,
		.cooldown = 10,
		.fresh_split = fresh,
		.nnodes = nnodes,
		.node_gpus = s.gpus,
		.njobs = njobs,
		.jobs = s.jobs,
	};
	for (int n = 0; n < nnodes; n++)
		s.gpus[n] = per_node;
	for (int i = 0; i < njobs; i++)
		new_job(&s, i);
	for (int d = 0; d < 3; d++) { /* start everything, settle */
		decide(&s, &res, &cpu);
		apply(&s, res);
		elastic_policy_result_destroy(res);
		s.in.now += 10;
	}
	for (int d = 0; d < ndecisions; d++) {
		drift(&s);
		ms[d] = decide(&s, &res, &cpu);
		m += moved_gpus(res);
		r += apply(&s, res);
		elastic_policy_result_destroy(res);
	}
	*moved = (double)m / ndecisions;
	*resized = (double)r / ndecisions;
	*med_ms = median(ms, ndecisions);
	for (int i = 0; i < njobs; i++)
		free(s.place[i]);
	free(s.place);
	free(s.cap);
	free(s.jobs);
	free(s.gpus);
	free(ms);
}

/* Both rules side by side on the same drifting jobs. */
static void churn(int njobs, int nnodes, int per_node, int ndecisions)
{
	double mv[2], rs[2], ms[2];

	for (int fresh = 0; fresh < 2; fresh++)
		churn_run(njobs, nnodes, per_node, ndecisions, fresh, &mv[fresh],
			  &rs[fresh], &ms[fresh]);
	printf("churn: %d jobs, %d GPUs, every priority drifting +-0.2%% per decision, %d decisions 10 s apart (priority mode, hysteresis 1 GPU, cool-down 10 s): GPUs moved per decision: %.1f largest remainder alone, %.1f stable allocations; jobs resized per decision: %.1f vs %.1f; median decision %.2f vs %.2f ms\n",
	       njobs, nnodes * per_node, ndecisions, mv[1], mv[0], rs[1], rs[0], ms[1],
	       ms[0]);
}

static int verbose;
static int opt_min_change, opt_min_change_pct;
static int64_t opt_cooldown = 30;

static int run(enum elastic_policy_mode mode, int njobs, int nnodes, int per_node,
	       int ndecisions)
{
	struct sim s = {.rng = 12345, .next_id = 1000};
	struct elastic_policy_result *res = NULL;
	double *ms = xcalloc(ndecisions, sizeof(*ms)),
	       *cpu = xcalloc(ndecisions, sizeof(*cpu));
	double cold, cold_cpu;
	long changed = 0, rounds = 0, idle = 0;

	s.gpus = xcalloc(nnodes, sizeof(int));
	s.busy = xcalloc(nnodes, sizeof(int));
	s.jobs = xcalloc(njobs, sizeof(*s.jobs));
	s.place = xcalloc(njobs, sizeof(*s.place));
	s.cap = xcalloc(njobs, sizeof(int));
	if (mode == ELASTIC_POLICY_THROUGHPUT)
		s.scal = xcalloc(njobs, sizeof(*s.scal));
	s.in = (struct elastic_policy_input){
		.mode = mode,
		.now = 1700000000,
		.min_gain = 0.3,
		.fair_floor = 0.5,
		.min_change = opt_min_change,
		.min_change_pct = opt_min_change_pct,
		.cooldown = opt_cooldown,
		.nnodes = nnodes,
		.node_gpus = s.gpus,
		.node_busy = s.busy,
		.njobs = njobs,
		.jobs = s.jobs,
	};
	for (int n = 0; n < nnodes; n++)
		s.gpus[n] = per_node;
	for (int i = 0; i < njobs; i++)
		new_job(&s, i);

	/* Cold start: every job pending, 100,000 GPUs to place. */
	cold = decide(&s, &res, &cold_cpu);
	apply(&s, res);
	elastic_policy_result_destroy(res);

	for (int d = 0; d < ndecisions; d++) {
		perturb(&s);
		ms[d] = decide(&s, &res, &cpu[d]);
		int c = apply(&s, res);
		if (verbose)
			printf("  %s decision %d: %.2f ms (cpu %.2f ms), %d rounds, %d jobs resized\n",
			       elastic_policy_mode_name(mode), d, ms[d], cpu[d],
			       res->rounds, c);
		changed += c;
		rounds += res->rounds;
		idle += res->idle;
		elastic_policy_result_destroy(res);
	}
	/* Packing after all decisions: nodes per job against the fewest its
	 * GPU count needs. */
	long running = 0, packed = 0, extra = 0;
	for (int i = 0; i < njobs; i++) {
		int g = 0;
		for (int k = 0; k < s.jobs[i].nplace; k++)
			g += s.jobs[i].place[k].gpus;
		if (!g)
			continue;
		running++;
		packed += s.jobs[i].nplace == (g + per_node - 1) / per_node;
		extra += s.jobs[i].nplace - (g + per_node - 1) / per_node;
	}
	double med = median(ms, ndecisions), max = ms[ndecisions - 1];
	double cpu_med = median(cpu, ndecisions), cpu_max = cpu[ndecisions - 1];
	printf("policy: %d jobs, %d GPUs, %d nodes: median %.2f ms, max %.2f ms over %d decisions (mode %s; target < %.0f ms: %s)\n",
	       njobs, nnodes * per_node, nnodes, med, max, ndecisions,
	       elastic_policy_mode_name(mode), TARGET_MS,
	       max < TARGET_MS	 ? "met"
	       : med < TARGET_MS ? "met by the median"
				 : "MISSED");
	printf("  wall clock; CPU time of the deciding thread: median %.2f ms, max %.2f ms; cold start (all pending) %.2f ms wall, %.2f ms CPU; per decision: %.0f jobs resized, %.1f split rounds, %.1f GPUs idle\n",
	       cpu_med, cpu_max, cold, cold_cpu, (double)changed / ndecisions,
	       (double)rounds / ndecisions, (double)idle / ndecisions);
	printf("  placement after the run: %ld running jobs, %.1f%% on the fewest nodes their GPU count needs, %.2f extra nodes per job on average\n",
	       running, running ? 100.0 * packed / running : 0.0,
	       running ? (double)extra / running : 0.0);
	for (int i = 0; i < njobs; i++)
		free(s.place[i]);
	free(s.place);
	free(s.cap);
	free(s.scal);
	free(s.jobs);
	free(s.gpus);
	free(s.busy);
	free(ms);
	free(cpu);
	return med < TARGET_MS ? 0 : 1;
}

int main(int argc, char **argv)
{
	int njobs = 10000, nnodes = 12500, per_node = 8, ndecisions = 100, strict = 0;
	int first = ELASTIC_POLICY_PRIORITY, last = ELASTIC_POLICY_THROUGHPUT;
	int rc = 0;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--strict"))
			strict = 1;
		else if (!strcmp(argv[a], "--verbose"))
			verbose = 1;
		else if (!strncmp(argv[a], "--min-change=", 13))
			opt_min_change = atoi(argv[a] + 13);
		else if (!strncmp(argv[a], "--min-change-pct=", 17))
			opt_min_change_pct = atoi(argv[a] + 17);
		else if (!strncmp(argv[a], "--cooldown=", 11))
			opt_cooldown = atoll(argv[a] + 11);
		else if (!strncmp(argv[a], "--mode=", 7)) {
			for (first = ELASTIC_POLICY_PRIORITY;
			     first <= ELASTIC_POLICY_THROUGHPUT; first++)
				if (!strcmp(argv[a] + 7, elastic_policy_mode_name(first)))
					break;
			if (first > ELASTIC_POLICY_THROUGHPUT) {
				fprintf(stderr,
					"bench_policy: --mode=%s is not priority, fairshare, fifo or throughput\n",
					argv[a] + 7);
				return 2;
			}
			last = first;
		} else if (!strncmp(argv[a], "--jobs=", 7))
			njobs = atoi(argv[a] + 7);
		else if (!strncmp(argv[a], "--nodes=", 8))
			nnodes = atoi(argv[a] + 8);
		else if (!strncmp(argv[a], "--gpus-per-node=", 16))
			per_node = atoi(argv[a] + 16);
		else if (!strncmp(argv[a], "--decisions=", 12))
			ndecisions = atoi(argv[a] + 12);
		else {
			fprintf(stderr,
				"usage: bench_policy [--jobs=N] [--nodes=N] [--gpus-per-node=N] [--decisions=N]\n"
				"       [--mode=priority|fairshare|fifo|throughput] [--min-change=GPUS] "
				"[--min-change-pct=PCT]\n"
				"       [--cooldown=SECONDS] [--strict] [--verbose]\n"
				"  defaults: 10000 jobs, 12500 nodes x 8 GPUs, 100 decisions, every mode, cool-down 30 s\n"
				"  --strict: exit 1 when a median misses %.0f ms\n",
				TARGET_MS);
			return 2;
		}
	}
	if (njobs < 1 || nnodes < 1 || per_node < 1 || ndecisions < 1) {
		fprintf(stderr,
			"bench_policy: --jobs, --nodes, --gpus-per-node and --decisions must be positive numbers\n");
		return 2;
	}
	if (!(ws = elastic_policy_ws_create())) {
		fprintf(stderr, "bench_policy: out of memory\n");
		return 1;
	}
	for (int m = first; m <= last; m++)
		rc |= run((enum elastic_policy_mode)m, njobs, nnodes, per_node,
			  ndecisions);
	churn(njobs, nnodes, per_node, ndecisions < 50 ? ndecisions : 50);
	elastic_policy_ws_destroy(ws);
	return strict ? rc : 0;
}
