/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench/bench_step.c: per-step cost of libelastic's step protocol (begin, checked
 * allreduce, agreement, state copy at commit) against a plain MPI_Allreduce loop of the
 * same size. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>
#include <elastic/elastic.h>

/* Started outside mpirun: run itself under mpirun --with-ft ulfm. */
static void _relaunch(int argc, char **argv, const char *np)
{
	char **av = calloc((size_t)argc + 10, sizeof(char *));
	int n = 0;

	if (!av)
		exit(1);
	/* Open MPI's settings come from the environment: on the testbed,
	 * `make bench` exports them (testbed/cluster env --ompi). */
	av[n++] = "mpirun";
	av[n++] = "--with-ft";
	av[n++] = "ulfm";
	av[n++] = "--oversubscribe";
	av[n++] = "--bind-to";
	av[n++] = "none";
	av[n++] = "-np";
	av[n++] = (char *)np;
	for (int i = 0; i < argc; i++)
		av[n++] = argv[i];
	execvp("mpirun", av);
	fprintf(stderr, "bench_step: cannot run mpirun: %s\n", strerror(errno));
	exit(1);
}

static double _now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* steps elastic steps of one allreduce each (none if !reduce); the update
 * goes before the commit (copy mode) or after it. */
static void _elastic_steps(elastic_ctx_t *ctx, long steps, const float *grad, float *sum,
			   float *weights, int n, int after, int reduce)
{
	elastic_error_t err;

	for (long s = 0; s < steps; s++) {
		if (elastic_step_begin(ctx, &err) < 0 ||
		    (reduce &&
		     elastic_allreduce(ctx, grad, sum, n, MPI_FLOAT, MPI_SUM) < 0)) {
			fprintf(stderr, "bench_step: step failed: %s\n", err.text);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (!after)
			weights[s % n] += sum[0] * 1e-9f;
		if (elastic_step_commit(ctx, &err) != ELASTIC_COMMITTED) {
			fprintf(stderr, "bench_step: commit failed: %s\n", err.text);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (after)
			weights[s % n] += sum[0] * 1e-9f;
	}
}

static int _cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long bytes = 1 << 20, steps = 20, rounds = 41;
	int snapshots = 0;
	const char *np = getenv("BENCH_STEP_NP") ? getenv("BENCH_STEP_NP") : "4";
	int rank, size;
	elastic_ctx_t *ctx, *ctx2;
	elastic_error_t err;
	MPI_Comm plain;

	if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK"))
		_relaunch(argc, argv, np);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			bytes = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--node-snapshots"))
			snapshots = 1;
		else {
			fprintf(stderr,
				"usage: bench_step [--bytes N] [--steps N] [--rounds N] [--node-snapshots]\n");
			return 2;
		}
	}
	if (bytes < 4 || steps < 1 || rounds < 1 || rounds > 99) {
		fprintf(stderr,
			"bench_step: --bytes >= 4, --steps >= 1, --rounds 1..99\n");
		return 2;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_dup(MPI_COMM_WORLD, &plain);

	int n = (int)(bytes / 4);
	float *grad = malloc((size_t)n * 4), *sum = malloc((size_t)n * 4);
	float *weights = malloc((size_t)n * 4);
	for (int i = 0; i < n; i++) {
		grad[i] = (float)(rank + i % 7);
		weights[i] = 0;
	}
	/* As in a Slurm job (ELASTIC_JOB_ID set): the lowest rank of each host
	 * also writes the node snapshot at every step. One job id per context
	 * (two launches of one job would fence each other). */
	char jid[2][64];
	long pid = (long)getpid();
	MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	snprintf(jid[0], sizeof(jid[0]), "bench-step-%ld-copy", pid);
	snprintf(jid[1], sizeof(jid[1]), "bench-step-%ld-after", pid);
	unsetenv("ELASTIC_JOB_STAMP");
	/* what elastic-run tells the ranks of a job under Slurm: whether the
	 * runtime heals a lost node in place (Open MPI >= 6), which sets the
	 * node snapshots' default interval */
	if (snapshots && !getenv("ELASTIC_RUN_IN_PLACE")) {
		char v[MPI_MAX_LIBRARY_VERSION_STRING];
		int len = 0;
		const char *o = MPI_Get_library_version(v, &len) == MPI_SUCCESS
					? strstr(v, "Open MPI v")
					: NULL;
		setenv("ELASTIC_RUN_IN_PLACE", o && atoi(o + 10) >= 6 ? "1" : "0", 1);
	}
	if (snapshots)
		setenv("ELASTIC_JOB_ID", jid[0], 1);
	else
		unsetenv("ELASTIC_JOB_ID");
	/* The state a real step changes: weights as large as the gradient. */
	if (elastic_init(MPI_COMM_WORLD, &ctx, &err) < 0 ||
	    elastic_register(ctx, "weights", weights, (size_t)n * 4, &err) < 0 ||
	    (snapshots && setenv("ELASTIC_JOB_ID", jid[1], 1) < 0) ||
	    elastic_init(MPI_COMM_WORLD, &ctx2, &err) < 0 ||
	    elastic_register(ctx2, "weights", weights, (size_t)n * 4, &err) < 0 ||
	    elastic_set_commit_mode(ctx2, ELASTIC_UPDATE_AFTER_COMMIT, &err) < 0) {
		fprintf(stderr, "bench_step: %s\n", err.text);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* Many short blocks of each variant in an order drawn anew every round
	 * (the same on every rank), so that load from elsewhere on the machine
	 * falls on all variants alike. Per variant: the minimum block (least
	 * disturbed) and the median block. */
	enum { PLAIN, COPY, AFTER, PROTO_COPY, PROTO_AFTER, NV };
	static const char *name[NV] = {
		"plain MPI_Allreduce loop",
		"begin/allreduce/commit, copy at commit",
		"begin/allreduce/commit, update after commit",
		"begin/commit only, copy at commit",
		"begin/commit only, update after commit",
	};
	double *t[NV];
	for (int v = 0; v < NV; v++)
		t[v] = calloc((size_t)rounds, sizeof(double));
	unsigned seed = 12345;
	for (int w = 0; w < 20; w++) {
		MPI_Allreduce(grad, sum, n, MPI_FLOAT, MPI_SUM, plain);
		_elastic_steps(ctx, 1, grad, sum, weights, n, 0, 1);
		_elastic_steps(ctx2, 1, grad, sum, weights, n, 1, 1);
	}
	for (int r = 0; r < rounds; r++) {
		int order[NV] = {PLAIN, COPY, AFTER, PROTO_COPY, PROTO_AFTER};
		for (int i = NV - 1; i > 0; i--) {
			seed = seed * 1103515245u + 12345u;
			int j = (int)((seed >> 16) % (unsigned)(i + 1)), x = order[i];
			order[i] = order[j];
			order[j] = x;
		}
		for (int k = 0; k < NV; k++) {
			int v = order[k];
			MPI_Barrier(plain);
			double t0 = _now();
			if (v == PLAIN) {
				for (long s = 0; s < steps; s++) {
					MPI_Allreduce(grad, sum, n, MPI_FLOAT, MPI_SUM,
						      plain);
					weights[s % n] += sum[0] * 1e-9f;
				}
			} else {
				_elastic_steps(v == COPY || v == PROTO_COPY ? ctx : ctx2,
					       steps, grad, sum, weights, n,
					       v == AFTER || v == PROTO_AFTER,
					       v == COPY || v == AFTER);
			}
			MPI_Barrier(plain);
			t[v][r] = (_now() - t0) / steps;
		}
	}
	if (rank == 0) {
		double mn[NV], md[NV];
		for (int v = 0; v < NV; v++) {
			qsort(t[v], (size_t)rounds, sizeof(double), _cmp);
			mn[v] = t[v][0];
			md[v] = t[v][rounds / 2];
		}
		char snap[160];
		if (snapshots)
			snprintf(
				snap, sizeof(snap),
				"on, as a job under Slurm gets them by default (ELASTIC_JOB_ID): every %ld step%s%s",
				elastic_get_env(ctx)->snapshot_every,
				elastic_get_env(ctx)->snapshot_every == 1 ? "" : "s",
				elastic_get_env(ctx)->snapshot_every == 1
					? ""
					: " (a runtime that heals a lost node in place)");
		else
			snprintf(snap, sizeof(snap), "off (no ELASTIC_JOB_ID)");
		printf("bench_step: %d ranks, %ld bytes per step (MPI_FLOAT sum), %ld bytes of registered state, %ld rounds of %ld steps per variant, node snapshots %s\n",
		       size, bytes, (long)n * 4, rounds, steps, snap);
		printf("  %-46s %10s %10s\n", "us/step", "min", "median");
		for (int v = 0; v < NV; v++)
			printf("  %-46s %10.1f %10.1f\n", name[v], mn[v] * 1e6,
			       md[v] * 1e6);
		for (int v = COPY; v <= AFTER; v++)
			printf("  overhead ratio, %-30s: %.4f (%+.2f %%) on the minimum, %.4f (%+.2f %%) on the median: target < 2 %% %s\n",
			       v == COPY ? "copy at commit" : "update after commit",
			       mn[v] / mn[PLAIN], (mn[v] / mn[PLAIN] - 1) * 100,
			       md[v] / md[PLAIN], (md[v] / md[PLAIN] - 1) * 100,
			       mn[v] / mn[PLAIN] < 1.02 ? "met" : "NOT met");
		/* The protocol's own cost, measured without the allreduce, over the
		 * allreduce: the overhead where the machine is quiet enough. */
		for (int v = PROTO_COPY; v <= PROTO_AFTER; v++)
			printf("  protocol cost / plain allreduce, %-15s: %.1f us / %.1f us = %.2f %% (minimum blocks)\n",
			       v == PROTO_COPY ? "copy at commit" : "update after",
			       mn[v] * 1e6, mn[PLAIN] * 1e6, mn[v] / mn[PLAIN] * 100);
		fflush(stdout);
	}
	for (int v = 0; v < NV; v++)
		free(t[v]);
	MPI_Comm_free(&plain);
	elastic_complete(ctx, NULL);
	elastic_complete(ctx2, NULL);
	elastic_destroy(ctx2);
	free(grad);
	free(sum);
	free(weights);
	return elastic_finalize(ctx, 0) == MPI_SUCCESS ? 0 : 1;
}
