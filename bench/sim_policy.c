/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench/sim_policy.c: a trace-driven simulation of the elastic policy. It
 * drives elastic_policy_decide, the function elasticd calls, with a job
 * trace in simulated time, and prints each policy's mean and p95 job
 * completion time (JCT), makespan, GPU-hours per unit of work, GPU
 * utilisation and plain jobs' wait, side by side.
 *
 * Trace format (text; '#' starts a comment; one job per line, fields
 * separated by blanks):
 *
 *   elastic SUBMIT MIN MAX WORK ALPHA BETA GAMMA DELTA
 *   plain   SUBMIT GPUS DURATION
 *
 * SUBMIT and DURATION are seconds. An elastic job's step time at n GPUs is
 * t(n) = ALPHA/n + BETA + GAMMA*log2(n) + DELTA*n (scaling.h), normalised so
 * that t(1) = 1: at n GPUs it does 1/t(n) units of WORK per second (WORK is
 * its run time on one GPU). A plain job holds GPUS for DURATION once started;
 * plain jobs start first come, first served, with backfill, on GPUs no
 * elastic job holds (as Slurm starts them beside elasticd's grants).
 *
 * The simulation: a decision every TICK seconds (--tick, 10); a job whose
 * GPU count changes trains nothing for RESIZE seconds (--resize, 3: a
 * re-form of the PyTorch example, doc/performance.md); elasticd's cool-down
 * (--cooldown, 30). Under the throughput policy each running job's rate is
 * observed every tick, with 3 % noise, into its scaling model, as elasticd
 * takes the samples per second of the job's status messages.
 *
 * Without --trace it generates the three traces of the design note
 * (--seed): "synthetic" (500 elastic jobs on 256 GPUs: near-linear,
 * saturating and communication-bound shapes), "philly" (the shape of the
 * Philly trace's published statistics: mostly small requests, heavy-tailed
 * run times; 500 jobs on 256 GPUs) and "mixed" (400 elastic jobs and 400
 * plain ones on 256 GPUs). --write-trace=FILE writes them out in the format
 * above instead.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "scaling.h"

#define PER_NODE 8

struct job {
	int plain;
	double submit, work, duration;
	int min, max, gpus;
	double co[4]; /* true step-time coefficients, t(1) = 1 */
	/* state */
	double done, start, end, pause_until;
	int held, last_resize;
	struct elastic_scaling scal;
	struct elastic_policy_place place[64];
	int nplace;
};

struct trace {
	const char *name;
	int gpus;
	int n;
	struct job *j;
};

static uint64_t rng;
static double urand(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng >> 11) / 9007199254740992.0;
}
static double lognormal(double median, double sigma)
{
	double u1 = urand(), u2 = urand();
	double z = sqrt(-2 * log(u1 > 1e-12 ? u1 : 1e-12)) * cos(2 * M_PI * u2);
	return median * exp(sigma * z);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "sim_policy: out of memory\n");
		exit(1);
	}
	return p;
}

static double step_time(const double co[4], int n)
{
	return co[0] / n + co[1] + co[2] * log2((double)n) + co[3] * n;
}

/* Normalise the coefficients so that t(1) = 1. */
static void norm(double co[4])
{
	double t1 = step_time(co, 1);
	for (int k = 0; k < 4; k++)
		co[k] /= t1;
}

/* A scaling shape as published curves have it: near-linear (large models),
 * saturating (small models, input-bound), or slowing down past some size
 * (communication-bound). */
static void shape(struct job *jb)
{
	double u = urand();
	jb->co[0] = 1;
	jb->co[1] = jb->co[2] = jb->co[3] = 0;
	if (u < 0.4) {
		jb->co[1] = 0.002 + 0.01 * urand();
	} else if (u < 0.8) {
		jb->co[1] = 0.05 + 0.25 * urand();
	} else {
		jb->co[2] = 0.01 + 0.03 * urand();
		jb->co[3] = 0.005 + 0.02 * urand();
	}
	norm(jb->co);
}

static struct trace gen_synthetic(const char *name, int njobs, int gpus, double span)
{
	struct trace t = {name, gpus, njobs, xcalloc(njobs, sizeof(struct job))};
	for (int i = 0; i < njobs; i++) {
		struct job *jb = &t.j[i];
		jb->submit = span * i / njobs + urand() * span / njobs;
		jb->min = 1 + (int)(urand() * 4);
		jb->max = jb->min * (2 << (int)(urand() * 4)); /* 4x..32x min */
		if (jb->max > 64)
			jb->max = 64;
		jb->work = 3600 * exp(log(0.25) + urand() * log(64)); /* 15 min..16 h */
		shape(jb);
	}
	return t;
}

/* The shape of the Philly trace's published statistics (Jeon et al., ATC
 * 2019): most jobs ask for one GPU, some for 2, 4, 8 or 16; run times are
 * heavy-tailed (lognormal, median about 30 minutes on the GPUs asked for). An
 * elastic job's MIN is its request; its MAX is 4 times that. */
static struct trace gen_philly(int njobs, int gpus, double span)
{
	static const int req[] = {1, 1, 1, 1, 1, 1, 1, 2, 2, 4, 4, 8, 8, 16};
	struct trace t = {"philly", gpus, njobs, xcalloc(njobs, sizeof(struct job))};
	for (int i = 0; i < njobs; i++) {
		struct job *jb = &t.j[i];
		int r = req[(int)(urand() * (sizeof(req) / sizeof(req[0])))];
		jb->submit = span * i / njobs + urand() * span / njobs;
		jb->min = r;
		jb->max = 4 * r;
		shape(jb);
		double run = lognormal(1800, 1.5);
		if (run > 7 * 86400)
			run = 7 * 86400;
		jb->work = run / step_time(jb->co, r); /* that long at its request */
	}
	return t;
}

static struct trace gen_mixed(int nel, int nplain, int gpus, double span)
{
	struct trace t = gen_synthetic("mixed", nel + nplain, gpus, span);
	for (int i = 0; i < t.n; i++) {
		struct job *jb = &t.j[i];
		if (urand() * t.n >= nplain)
			continue;
		jb->plain = 1;
		jb->gpus = 1 << (int)(urand() * 4); /* 1..8 */
		jb->min = jb->max = jb->gpus;
		jb->duration = 600 + urand() * 6600; /* 10 min..2 h */
	}
	return t;
}

static int read_trace(const char *path, struct trace *t, int gpus)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int cap = 0, ln = 0;

	if (!f) {
		fprintf(stderr, "sim_policy: %s: %s\n", path, strerror(errno));
		return -1;
	}
	*t = (struct trace){path, gpus, 0, NULL};
	while (fgets(line, sizeof(line), f)) {
		struct job jb = {0};
		char kind[16];
		char *hash = strchr(line, '#');
		ln++;
		if (hash)
			*hash = '\0';
		if (sscanf(line, "%15s", kind) != 1)
			continue;
		if (!strcmp(kind, "elastic")) {
			if (sscanf(line, "%*s %lf %d %d %lf %lf %lf %lf %lf", &jb.submit,
				   &jb.min, &jb.max, &jb.work, &jb.co[0], &jb.co[1],
				   &jb.co[2], &jb.co[3]) != 8 ||
			    jb.submit < 0 || jb.min < 1 || jb.max < jb.min ||
			    jb.max > 512 || !(jb.work > 0) || jb.co[0] < 0 ||
			    jb.co[1] < 0 || jb.co[2] < 0 || jb.co[3] < 0 ||
			    !(step_time(jb.co, 1) > 0))
				goto bad;
			norm(jb.co);
		} else if (!strcmp(kind, "plain")) {
			if (sscanf(line, "%*s %lf %d %lf", &jb.submit, &jb.gpus,
				   &jb.duration) != 3 ||
			    jb.submit < 0 || jb.gpus < 1 || jb.gpus > gpus ||
			    !(jb.duration > 0))
				goto bad;
			jb.plain = 1;
			jb.min = jb.max = jb.gpus;
		} else {
			goto bad;
		}
		if (t->n == cap) {
			cap = cap ? 2 * cap : 256;
			t->j = realloc(t->j, cap * sizeof(*t->j));
			if (!t->j) {
				fclose(f);
				return -1;
			}
		}
		t->j[t->n++] = jb;
	}
	fclose(f);
	return 0;
bad:
	fprintf(stderr,
		"sim_policy: %s:%d: not 'elastic SUBMIT MIN MAX WORK ALPHA BETA GAMMA DELTA' or 'plain SUBMIT GPUS DURATION' with sane values: %s",
		path, ln, line);
	fclose(f);
	return -1;
}

static void write_trace(FILE *f, const struct trace *t)
{
	fprintf(f, "# trace %s: %d jobs for %d GPUs\n", t->name, t->n, t->gpus);
	for (int i = 0; i < t->n; i++) {
		const struct job *jb = &t->j[i];
		if (jb->plain)
			fprintf(f, "plain %.1f %d %.1f\n", jb->submit, jb->gpus,
				jb->duration);
		else
			fprintf(f, "elastic %.1f %d %d %.1f %.6g %.6g %.6g %.6g\n",
				jb->submit, jb->min, jb->max, jb->work, jb->co[0],
				jb->co[1], jb->co[2], jb->co[3]);
	}
}

struct opts {
	double tick, resize, min_gain, fair_floor;
	int64_t cooldown;
};

struct figures {
	double mean_jct, p95_jct, makespan, gpuh_per_work, util, plain_wait;
	double el_gpu_s, plain_gpu_s, work;
	int finished, total, starved;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Free GPUs of all nodes. */
static int free_on(const int *freec, int nn)
{
	int sum = 0;
	for (int i = 0; i < nn; i++)
		sum += freec[i];
	return sum;
}

static struct figures simulate(const struct trace *tr, enum elastic_policy_mode mode,
			       const struct opts *o)
{
	int nn = tr->gpus / PER_NODE, n = tr->n;
	struct job *j = xcalloc(n, sizeof(*j));
	int *gpus = xcalloc(nn, sizeof(int)), *busy = xcalloc(nn, sizeof(int));
	int *plain_on =
		xcalloc((size_t)n * nn, sizeof(int)); /* GPUs of plain job per node */
	struct elastic_policy_job *pj = xcalloc(n, sizeof(*pj));
	int *idx = xcalloc(n, sizeof(int));
	double *jct = xcalloc(n, sizeof(double));
	struct figures fg = {0};
	double now = 0;
	int left = n;
	uint64_t noise = 99;

	memcpy(j, tr->j, n * sizeof(*j));
	for (int i = 0; i < nn; i++)
		gpus[i] = PER_NODE;
	for (int i = 0; i < n; i++) {
		j[i].start = j[i].end = -1;
		fg.work += j[i].plain ? 0 : j[i].work;
	}
	fg.total = n;
	while (left > 0 && now < 365 * 86400.0) {
		/* plain jobs: first come, first served, with backfill, on GPUs
		 * no elastic job holds */
		int freec[1024];
		for (int k = 0; k < nn; k++) {
			freec[k] = gpus[k] - busy[k];
			for (int i = 0; i < n; i++)
				for (int p = 0; p < j[i].nplace; p++)
					if (j[i].place[p].node == k)
						freec[k] -= j[i].place[p].gpus;
		}
		for (int i = 0; i < n; i++) {
			struct job *jb = &j[i];
			if (!jb->plain || jb->start >= 0 || jb->submit > now)
				continue;
			if (free_on(freec, nn) < jb->gpus)
				continue;
			int need = jb->gpus;
			for (int k = 0; k < nn && need; k++) { /* whole nodes first */
				int take = freec[k] >= need ? need : freec[k];
				if (take < need && freec[k] < PER_NODE)
					continue;
				plain_on[(size_t)i * nn + k] = take;
				freec[k] -= take;
				busy[k] += take;
				need -= take;
			}
			for (int k = 0; k < nn && need; k++) {
				int take = freec[k] >= need ? need : freec[k];
				plain_on[(size_t)i * nn + k] += take;
				freec[k] -= take;
				busy[k] += take;
				need -= take;
			}
			jb->start = now;
			fg.plain_wait += now - jb->submit;
		}
		/* the elastic jobs that are in: one decision */
		int m = 0;
		for (int i = 0; i < n; i++) {
			struct job *jb = &j[i];
			if (jb->plain || jb->submit > now || jb->end >= 0)
				continue;
			pj[m] = (struct elastic_policy_job){
				.id = (uint32_t)i + 1,
				.min = jb->min,
				.max = jb->max,
				.priority = 1000,
				.submit_time = (int64_t)jb->submit,
				.last_resize = jb->last_resize,
				.place = jb->place,
				.nplace = jb->nplace,
				.scaling = &jb->scal,
			};
			idx[m++] = i;
		}
		if (m) {
			struct elastic_policy_input in = {
				.mode = mode,
				.now = (int64_t)now,
				.cooldown = o->cooldown,
				.min_gain = o->min_gain,
				.fair_floor = o->fair_floor,
				.nnodes = nn,
				.node_gpus = gpus,
				.node_busy = busy,
				.njobs = m,
				.jobs = pj,
			};
			struct elastic_policy_result *res = NULL;
			elastic_error_t err = {{0}};
			if (elastic_policy_decide(&in, &res, &err) < 0) {
				fprintf(stderr,
					"sim_policy: policy refused its input: %s\n",
					err.text);
				exit(1);
			}
			for (int q = 0; q < m; q++) {
				struct job *jb = &j[idx[q]];
				const struct elastic_policy_target *t = &res->targets[q];
				if (t->gpus != t->cur) {
					if (t->cur > 0 && t->gpus > 0)
						jb->pause_until = now + o->resize;
					jb->last_resize = (int)now;
				}
				if (t->gpus > 0 && jb->start < 0)
					jb->start = now;
				if (t->nplace > 64) {
					fprintf(stderr,
						"sim_policy: a job on more than 64 nodes\n");
					exit(1);
				}
				memcpy(jb->place, t->place,
				       t->nplace * sizeof(*t->place));
				jb->nplace = t->nplace;
				jb->held = t->gpus;
			}
			elastic_policy_result_destroy(res);
		}
		/* a tick of progress */
		for (int i = 0; i < n; i++) {
			struct job *jb = &j[i];
			if (jb->plain) {
				if (jb->start >= 0 && jb->end < 0) {
					fg.plain_gpu_s += jb->gpus * o->tick;
					if (now + o->tick >= jb->start + jb->duration) {
						jb->end = now + o->tick;
						for (int k = 0; k < nn; k++)
							busy[k] -=
								plain_on[(size_t)i * nn +
									 k];
						jct[i] = jb->end - jb->submit;
						left--;
					}
				}
				continue;
			}
			if (jb->end >= 0 || !jb->held)
				continue;
			fg.el_gpu_s += jb->held * o->tick;
			double train = o->tick;
			if (jb->pause_until > now)
				train -= jb->pause_until - now < o->tick
						 ? jb->pause_until - now
						 : o->tick;
			double rate = 1.0 / step_time(jb->co, jb->held);
			jb->done += rate * train;
			if (train > 0) {
				noise = noise * 6364136223846793005ULL +
					1442695040888963407ULL;
				double e =
					1 + ((double)(noise >> 11) / 9007199254740992.0 -
					     0.5) * 0.06;
				elastic_scaling_observe(&jb->scal, jb->held, rate * e,
							(int64_t)now, 600);
			}
			if (jb->done >= jb->work) {
				jb->end = now + o->tick;
				jct[i] = jb->end - jb->submit;
				jb->nplace = 0;
				jb->held = 0;
				left--;
			}
		}
		now += o->tick;
	}
	double *el = xcalloc(n, sizeof(double));
	int ne = 0, np = 0;
	for (int i = 0; i < n; i++) {
		if (j[i].end < 0) {
			fg.starved++;
			continue;
		}
		fg.finished++;
		if (!j[i].plain)
			el[ne++] = jct[i];
		else
			np++;
	}
	qsort(el, ne, sizeof(double), cmp_double);
	for (int i = 0; i < ne; i++)
		fg.mean_jct += el[i] / ne;
	fg.p95_jct = ne ? el[(int)(0.95 * (ne - 1))] : 0;
	fg.makespan = now;
	fg.gpuh_per_work = fg.work > 0 ? fg.el_gpu_s / fg.work : 0;
	fg.util = (fg.el_gpu_s + fg.plain_gpu_s) / (tr->gpus * now);
	fg.plain_wait = np ? fg.plain_wait / np : 0;
	free(el);
	free(j);
	free(gpus);
	free(busy);
	free(plain_on);
	free(pj);
	free(idx);
	free(jct);
	return fg;
}

static void table(const struct trace *tr, const struct opts *o)
{
	static const enum elastic_policy_mode modes[] = {
		ELASTIC_POLICY_FIFO, ELASTIC_POLICY_PRIORITY, ELASTIC_POLICY_FAIRSHARE,
		ELASTIC_POLICY_THROUGHPUT};
	struct figures f[4];
	int plain = 0;

	for (int i = 0; i < tr->n; i++)
		plain += tr->j[i].plain;
	printf("trace %s: %d elastic + %d plain jobs on %d GPUs\n", tr->name,
	       tr->n - plain, plain, tr->gpus);
	printf("  %-10s %12s %12s %11s %16s %8s %12s %8s\n", "policy", "mean JCT h",
	       "p95 JCT h", "makespan h", "GPU-s per work", "util", "plain wait h",
	       "starved");
	for (int k = 0; k < 4; k++) {
		f[k] = simulate(tr, modes[k], o);
		printf("  %-10s %12.2f %12.2f %11.1f %16.3f %7.1f%% %12.2f %8d\n",
		       elastic_policy_mode_name(modes[k]), f[k].mean_jct / 3600,
		       f[k].p95_jct / 3600, f[k].makespan / 3600, f[k].gpuh_per_work,
		       100 * f[k].util, f[k].plain_wait / 3600, f[k].starved);
	}
	printf("  throughput against fairshare: GPU-hours per work %.2fx, mean JCT %.2fx, p95 JCT %.2fx",
	       f[3].gpuh_per_work / f[2].gpuh_per_work, f[3].mean_jct / f[2].mean_jct,
	       f[3].p95_jct / f[2].p95_jct);
	if (plain)
		printf(", plain jobs' wait %.2fx",
		       f[2].plain_wait > 0 ? f[3].plain_wait / f[2].plain_wait : 0);
	printf("\n");
}

int main(int argc, char **argv)
{
	struct opts o = {.tick = 10,
			 .resize = 3,
			 .min_gain = 0.3,
			 .fair_floor = 0.5,
			 .cooldown = 30};
	const char *trace = NULL, *out = NULL;
	int gpus = 256;
	uint64_t seed = 1;

	for (int a = 1; a < argc; a++) {
		const char *v = strchr(argv[a], '=');
		v = v ? v + 1 : "";
		if (!strncmp(argv[a], "--trace=", 8))
			trace = v;
		else if (!strncmp(argv[a], "--write-trace=", 14))
			out = v;
		else if (!strncmp(argv[a], "--gpus=", 7))
			gpus = atoi(v);
		else if (!strncmp(argv[a], "--seed=", 7))
			seed = strtoull(v, NULL, 10);
		else if (!strncmp(argv[a], "--tick=", 7))
			o.tick = atof(v);
		else if (!strncmp(argv[a], "--resize=", 9))
			o.resize = atof(v);
		else if (!strncmp(argv[a], "--cooldown=", 11))
			o.cooldown = atoll(v);
		else if (!strncmp(argv[a], "--min-gain=", 11))
			o.min_gain = atof(v);
		else if (!strncmp(argv[a], "--fair-floor=", 13))
			o.fair_floor = atof(v);
		else {
			fprintf(stderr,
				"usage: sim_policy [--trace=FILE] [--gpus=N] [--seed=N] [--write-trace=FILE]\n"
				"                  [--tick=S] [--resize=S] [--cooldown=S] [--min-gain=G] [--fair-floor=F]\n"
				"  defaults: the three generated traces, 256 GPUs, seed 1, tick 10 s, resize 3 s,\n"
				"  cool-down 30 s, min gain 0.3, fairness floor 0.5 (the throughput policy's)\n");
			return 2;
		}
	}
	if (gpus < PER_NODE || gpus % PER_NODE || gpus > 1024 * PER_NODE ||
	    !(o.tick > 0) || o.resize < 0 || o.cooldown < 0 ||
	    !(o.min_gain >= 0 && o.min_gain <= 1) ||
	    !(o.fair_floor >= 0 && o.fair_floor <= 1)) {
		fprintf(stderr,
			"sim_policy: --gpus must be a multiple of %d up to %d; --tick > 0; --resize, --cooldown >= 0; --min-gain and --fair-floor in 0..1\n",
			PER_NODE, 1024 * PER_NODE);
		return 2;
	}
	if (trace) {
		struct trace t;
		if (read_trace(trace, &t, gpus) < 0)
			return 1;
		table(&t, &o);
		free(t.j);
		return 0;
	}
	rng = seed;
	struct trace ts[3];
	ts[0] = gen_synthetic("synthetic", 500, gpus, 12 * 3600.0);
	ts[1] = gen_philly(500, gpus, 6 * 3600.0);
	ts[2] = gen_mixed(400, 400, gpus, 12 * 3600.0);
	for (int i = 0; i < 3; i++) {
		if (out) {
			FILE *f = fopen(out, i ? "a" : "w");
			if (!f) {
				fprintf(stderr, "sim_policy: %s: %s\n", out,
					strerror(errno));
				return 1;
			}
			write_trace(f, &ts[i]);
			fclose(f);
		} else {
			table(&ts[i], &o);
		}
		free(ts[i].j);
	}
	return 0;
}
