/* SPDX-License-Identifier: GPL-2.0-or-later */
/* examples/elastic_train.c: a data-parallel logistic-regression trainer on libelastic, on
 * deterministically generated data, written the way a user would write one. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>
#include <elastic/elastic.h>

/*
 * Reduction: each rank sums its samples' gradients as 64-bit fixed point
 * (2^-40 units) and the ranks add these integers with MPI_SUM. Integer
 * addition is exact and associative, so the global gradient, and with it the
 * model, is the same bit for bit whatever the number of ranks and however the
 * batch is split: a run that loses ranks ends with the model of a run that
 * did not. --compare checks this within --tolerance (default 1e-12).
 */
#define FIX_SCALE 1099511627776.0 /* 2^40 */
#define MAX_D	  256

#define MAX_KILL 8

struct opts {
	long samples, features, global, max_micro, epochs;
	double lr;
	unsigned long seed;
	int nkill; /* --kill given up to MAX_KILL times */
	int kill_rank[MAX_KILL];
	long kill_step[MAX_KILL];
	char kill_where[MAX_KILL][16];
	long kill_delay_us;
	long stop_after;
	int hang_rank;
	long hang_step;
	int exit_rank;	/* --exit-at: this rank exits exit_code (75) after */
	long exit_step; /* committing exit_step */
	int exit_code;
	long slow_step, slow_us; /* --slow-update */
	long step_sleep_us;
	long sample_sleep_us;	 /* --sample-sleep: per sample this rank trains */
	const char *sleep_while; /* --sleep-while: the sleeps apply while it exists */
	const char *out, *compare, *progress;
	double tolerance;
	int quiet;
	int after_commit;
};

/* The replicated training state, registered with libelastic. */
struct model {
	double w[MAX_D + 1]; /* weights and bias */
};
struct usage_check {
	uint64_t epochs_checked;
	uint64_t bad_epochs;
	uint64_t violations;
};

static uint64_t _mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Uniform in [-1, 1), from (a, b) alone. */
static double _unif(uint64_t a, uint64_t b)
{
	return (double)(_mix(a * 0x100000001b3ull ^ _mix(b)) >> 11) * 0x1.0p-52 - 1.0;
}

/* Sample i: features x[0..d) and label y, generated on the fly. */
static int _sample(const struct opts *o, uint64_t i, double *x)
{
	double z = 0;
	for (long j = 0; j < o->features; j++) {
		x[j] = _unif(o->seed + i, (uint64_t)j);
		z += x[j] * _unif(o->seed ^ 0xabcdef, (uint64_t)j) *
		     3.0; /* true weights */
	}
	z += 0.5 * _unif(o->seed + i, 0xfffff); /* label noise */
	return z > 0.1;
}

static double _now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int term_rank;

static void _on_term(int sig)
{
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "rank %d: ended by SIGTERM\n", term_rank);
	if (write(STDOUT_FILENO, msg, (size_t)n) < 0) {
	}
	_exit(128 + sig);
}

static void _die_now(int sig)
{
	kill(getpid(), SIGKILL);
}

/* Fault injection (for the tests): SIGKILL this process. */
static void _maybe_kill(const struct opts *o, int rank0, uint64_t step, const char *where)
{
	static int done;
	int k;
	for (k = 0; k < o->nkill; k++)
		if (o->kill_rank[k] == rank0 && (long)step == o->kill_step[k] &&
		    !strcmp(o->kill_where[k], where))
			break;
	if (done || k == o->nkill)
		return;
	done = 1;
	if (!strcmp(where, "timer")) {
		/* at a random point of the step: inside communication, the
		 * commit agreement or the snapshot, wherever the timer fires */
		struct itimerval it = {{0, 0},
				       {0, o->kill_delay_us > 0 ? o->kill_delay_us : 1}};
		printf("KILL rank %d step %llu where timer+%ldus t=%.6f\n", rank0,
		       (unsigned long long)step, o->kill_delay_us,
		       _now() + o->kill_delay_us * 1e-6);
		fflush(stdout);
		signal(SIGALRM, _die_now);
		setitimer(ITIMER_REAL, &it, NULL);
		return;
	}
	printf("KILL rank %d step %llu where %s t=%.6f\n", rank0,
	       (unsigned long long)step, where, _now());
	fflush(stdout);
	kill(getpid(), SIGKILL);
}

static void _usage(FILE *f)
{
	fprintf(f,
		"usage: elastic_train [options]  (run under mpirun --with-ft ulfm)\n"
		"  --samples N        samples in the data set (4096)\n"
		"  --features D       features per sample, 1..%d (16)\n"
		"  --global-batch B   samples per step over all ranks (128)\n"
		"  --max-micro M      most samples a rank processes at once (32)\n"
		"  --epochs E         epochs to train (3)\n"
		"  --lr X             learning rate (0.5)\n"
		"  --seed S           data and shuffle seed (1)\n"
		"  --step-sleep US    extra time per step, microseconds (0): a serial part\n"
		"  --sample-sleep US  extra time per sample a rank trains, microseconds (0):\n"
		"                     a part that the ranks share (with --step-sleep, a job\n"
		"                     that scales as far as the two set)\n"
		"  --sleep-while FILE the two sleeps apply only while FILE exists (a test\n"
		"                     removes it to let the rest of the training run at\n"
		"                     full speed)\n"
		"  --kill R:S:WHERE   SIGKILL the rank that started as R at step S, "
		"WHERE = begin|reduce|commit|timer\n"
		"  --stop-after N     leave after N steps committed by this launch, keeping the\n"
		"                     snapshot (a planned shrink or grow: relaunch to resume)\n"
		"  --hang R:S         the rank that started as R stops making progress at step S\n"
		"                     (sleeps; no rank sees a failure: ELASTIC_STEP_TIMEOUT's case)\n"
		"  --kill-delay US    for WHERE=timer: delay after the step begins (1000)\n"
		"  --exit-at R:S[:X]  the rank that started as R exits X (75: a re-form, as\n"
		"                     its watchdog would) right after step S is committed\n"
		"  --slow-update S:US every rank pauses US microseconds halfway through\n"
		"                     applying step S's update (tests)\n"
		"  --out FILE         write the final model (rank 0)\n"
		"  --progress FILE    rank 0 writes the last committed step there at "
		"each commit\n"
		"  --compare FILE     compare the final model with FILE; exit 3 if it "
		"differs\n"
		"  --tolerance T      largest allowed |difference| per weight (1e-12)\n"
		"  --quiet            print only epochs, changes and the result\n"
		"  --update-after-commit  apply each step's update after its commit (no "
		"state\n"
		"                     copy per step: ELASTIC_UPDATE_AFTER_COMMIT)\n",
		MAX_D);
}

/* An option's "R:S" (a rank, a step), or with code "R:S:X" (X: 1..255,
 * *code left as it is when absent), and nothing after it: 0, or -1 said. */
static int _rank_step(const char *opt, const char *v, int *rank, long *step, int *code)
{
	int end = -1;

	if (code && sscanf(v, "%d:%ld:%d%n", rank, step, code, &end) == 3 && !v[end]) {
		if (*code >= 1 && *code <= 255)
			return 0;
		fprintf(stderr,
			"elastic_train: --%s '%s': the exit status must be 1..255\n", opt,
			v);
		return -1;
	}
	end = -1;
	if (sscanf(v, "%d:%ld%n", rank, step, &end) == 2 && !v[end])
		return 0;
	fprintf(stderr, "elastic_train: --%s '%s': expected R:S%s\n", opt, v,
		code ? "[:X]" : "");
	return -1;
}

static int _parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"samples", 1, 0, 'n'},	     {"features", 1, 0, 'd'},
		{"global-batch", 1, 0, 'b'}, {"max-micro", 1, 0, 'm'},
		{"epochs", 1, 0, 'e'},	     {"lr", 1, 0, 'l'},
		{"seed", 1, 0, 's'},	     {"step-sleep", 1, 0, 'z'},
		{"sample-sleep", 1, 0, 'Z'}, {"sleep-while", 1, 0, 'W'},
		{"kill", 1, 0, 'k'},	     {"kill-delay", 1, 0, 'K'},
		{"stop-after", 1, 0, 'S'},   {"hang", 1, 0, 'H'},
		{"exit-at", 1, 0, 'X'},	     {"slow-update", 1, 0, 'U'},
		{"out", 1, 0, 'o'},	     {"progress", 1, 0, 'P'},
		{"compare", 1, 0, 'c'},	     {"tolerance", 1, 0, 't'},
		{"quiet", 0, 0, 'q'},	     {"update-after-commit", 0, 0, 'u'},
		{"help", 0, 0, 'h'},	     {0, 0, 0, 0},
	};
	int c, n;
	char *end;

	*o = (struct opts){.samples = 4096,
			   .features = 16,
			   .global = 128,
			   .max_micro = 32,
			   .epochs = 3,
			   .lr = 0.5,
			   .seed = 1,
			   .kill_delay_us = 1000,
			   .hang_rank = -1,
			   .exit_rank = -1,
			   .exit_code = ELASTIC_EXIT_REFORM,
			   .slow_step = -1,
			   .tolerance = 1e-12};
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		errno = 0;
		switch (c) {
		case 'n':
			o->samples = strtol(optarg, &end, 10);
			break;
		case 'd':
			o->features = strtol(optarg, &end, 10);
			break;
		case 'b':
			o->global = strtol(optarg, &end, 10);
			break;
		case 'm':
			o->max_micro = strtol(optarg, &end, 10);
			break;
		case 'e':
			o->epochs = strtol(optarg, &end, 10);
			break;
		case 'l':
			o->lr = strtod(optarg, &end);
			break;
		case 's':
			o->seed = strtoul(optarg, &end, 10);
			break;
		case 'z':
			o->step_sleep_us = strtol(optarg, &end, 10);
			break;
		case 'Z':
			o->sample_sleep_us = strtol(optarg, &end, 10);
			break;
		case 'W':
			o->sleep_while = optarg;
			end = "";
			break;
		case 'K':
			o->kill_delay_us = strtol(optarg, &end, 10);
			break;
		case 't':
			o->tolerance = strtod(optarg, &end);
			break;
		case 'P':
			o->progress = optarg;
			end = "";
			break;
		case 'o':
			o->out = optarg;
			end = "";
			break;
		case 'c':
			o->compare = optarg;
			end = "";
			break;
		case 'H':
			if (_rank_step("hang", optarg, &o->hang_rank, &o->hang_step,
				       NULL) < 0)
				return -1;
			end = "";
			break;
		case 'X':
			if (_rank_step("exit-at", optarg, &o->exit_rank, &o->exit_step,
				       &o->exit_code) < 0)
				return -1;
			end = "";
			break;
		case 'U':
			n = -1;
			if (sscanf(optarg, "%ld:%ld%n", &o->slow_step, &o->slow_us, &n) !=
				    2 ||
			    optarg[n] || o->slow_us < 0) {
				fprintf(stderr,
					"elastic_train: --slow-update '%s': expected S:US\n",
					optarg);
				return -1;
			}
			end = "";
			break;
		case 'S':
			o->stop_after = strtol(optarg, &end, 10);
			break;
		case 'u':
			o->after_commit = 1;
			end = "";
			break;
		case 'q':
			o->quiet = 1;
			end = "";
			break;
		case 'k':
			if (o->nkill == MAX_KILL ||
			    sscanf(optarg, "%d:%ld:%15s", &o->kill_rank[o->nkill],
				   &o->kill_step[o->nkill],
				   o->kill_where[o->nkill]) != 3 ||
			    (strcmp(o->kill_where[o->nkill], "begin") &&
			     strcmp(o->kill_where[o->nkill], "reduce") &&
			     strcmp(o->kill_where[o->nkill], "commit") &&
			     strcmp(o->kill_where[o->nkill], "timer"))) {
				fprintf(stderr,
					"elastic_train: --kill '%s': expected R:S:WHERE, WHERE = begin|reduce|commit|timer\n",
					optarg);
				return -1;
			}
			o->nkill++;
			end = "";
			break;
		case 'h':
			_usage(stdout);
			exit(0);
		default:
			_usage(stderr);
			return -1;
		}
		if (*end || errno) {
			fprintf(stderr, "elastic_train: bad number '%s'\n", optarg);
			return -1;
		}
	}
	if (optind < argc || o->samples < 1 || o->features < 1 || o->features > MAX_D ||
	    o->global < 1 || o->global > o->samples || o->max_micro < 1 ||
	    o->epochs < 1 || !(o->lr > 0) || !(o->tolerance >= 0) ||
	    o->step_sleep_us < 0 || o->sample_sleep_us < 0 ||
	    o->step_sleep_us > 60000000 || o->sample_sleep_us > 1000000) {
		fprintf(stderr, "elastic_train: options out of range (see --help)\n");
		return -1;
	}
	return 0;
}

static int _write_model(const char *path, const struct opts *o, const struct model *m,
			uint64_t steps)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "elastic_train: cannot write %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	fprintf(f, "# elastic_train model: %ld features + bias, %llu steps\n",
		o->features, (unsigned long long)steps);
	for (long j = 0; j <= o->features; j++)
		fprintf(f, "%a\n", m->w[j]);
	return fclose(f);
}

static int _compare(const char *path, const struct opts *o, const struct model *m)
{
	FILE *f = fopen(path, "r");
	char line[256];
	long j = 0;
	double worst = 0;

	if (!f) {
		fprintf(stderr, "elastic_train: cannot read %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (j > o->features)
			break;
		double d = fabs(strtod(line, NULL) - m->w[j++]);
		if (d > worst || isnan(d))
			worst = d;
	}
	fclose(f);
	if (j != o->features + 1) {
		printf("model differs: %s has %ld weights, expected %ld\n", path, j,
		       o->features + 1);
		return -1;
	}
	printf("model %s reference: max |dw| = %.3g (tolerance %.3g)\n",
	       worst <= o->tolerance ? "matches" : "DIFFERS from", worst, o->tolerance);
	return worst <= o->tolerance ? 0 : -1;
}

/* The update of a step: weights, sample usage, sampler position. Returns
 * the step's mean loss. */
static double _apply(const struct opts *o, struct model *m, struct usage_check *check,
		     uint32_t *uses, elastic_sampler_t *sampler, const int64_t *tot,
		     const int64_t *all, int ngot, int ns, long pause_us)
{
	for (long j = 0; j <= o->features; j++) {
		if (pause_us > 0 && j == (o->features + 1) / 2)
			usleep((useconds_t)pause_us); /* --slow-update: half applied */
		m->w[j] -= o->lr * ((double)tot[j] / FIX_SCALE) / ns;
	}
	for (int k = 0; k < ngot; k++)
		if (all[k] >= 0 && all[k] < o->samples)
			uses[all[k]]++;
	if (elastic_sampler_advance(sampler, (int)o->global)) {
		uint64_t bad = 0;
		for (long i = 0; i < o->samples; i++) {
			bad += uses[i] != 1;
			uses[i] = 0;
		}
		check->epochs_checked++;
		check->bad_epochs += bad != 0;
		check->violations += bad;
	}
	return (double)tot[o->features + 1] / (FIX_SCALE / 1024) / ns;
}

static void _log(void *arg, int level, const char *msg)
{
	printf("libelastic: %s\n", msg);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct opts o;
	elastic_ctx_t *ctx = NULL;
	elastic_sampler_t *sampler = NULL;
	elastic_error_t err;
	struct model model;
	struct usage_check check;
	uint32_t *uses;
	uint64_t *idx;
	int64_t *all, *sums, *tot;
	double *x, t_start, t_last_redo = 0;
	int rank0, rc = 1, redo_pending = 0, first_step = 1;
	long launch_commits = 0;

	MPI_Init(&argc, &argv);
	if (_parse(argc, argv, &o) < 0) {
		MPI_Finalize();
		return 2;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank0);
	term_rank = rank0;
	signal(SIGTERM, _on_term); /* say so when the runtime ends this rank */
	uses = calloc((size_t)o.samples, sizeof(*uses));
	idx = malloc((size_t)o.global * sizeof(*idx));
	all = malloc((size_t)o.global * sizeof(*all));
	sums = calloc((size_t)o.features + 3, sizeof(*sums));
	tot = calloc((size_t)o.features + 3, sizeof(*tot));
	x = malloc((size_t)o.features * sizeof(*x));
	memset(&model, 0, sizeof(model));
	memset(&check, 0, sizeof(check));
	if (!uses || !idx || !all || !sums || !tot || !x) {
		fprintf(stderr, "elastic_train: out of memory\n");
		goto out;
	}

	/* Set up: the context, the sampler, and every piece of state. */
	if (elastic_init(MPI_COMM_WORLD, &ctx, &err) < 0 ||
	    elastic_sampler_create((uint64_t)o.samples, o.seed, 1, &sampler, &err) < 0 ||
	    elastic_register(ctx, "model", &model, sizeof(model), &err) < 0 ||
	    elastic_register(ctx, "usage", uses, (size_t)o.samples * sizeof(*uses),
			     &err) < 0 ||
	    elastic_register(ctx, "usage-check", &check, sizeof(check), &err) < 0 ||
	    elastic_sampler_register(ctx, sampler, &err) < 0) {
		fprintf(stderr, "elastic_train: %s\n", err.text);
		goto out;
	}
	if (o.after_commit &&
	    elastic_set_commit_mode(ctx, ELASTIC_UPDATE_AFTER_COMMIT, &err) < 0) {
		fprintf(stderr, "elastic_train: %s\n", err.text);
		goto out;
	}
	if (!o.quiet)
		elastic_set_log(ctx, _log, NULL, ELASTIC_LOG_INFO);
	/* a relaunch resumes here, before the loop tests the sampler's epoch */
	if (elastic_start(ctx, &err) < 0) {
		fprintf(stderr, "elastic_train: %s\n", err.text);
		goto out;
	}
	t_start = _now();

	while (elastic_sampler_epoch(sampler) < (uint64_t)o.epochs) {
		struct elastic_batch_plan plan;
		const struct elastic_env *env = elastic_get_env(ctx);
		size_t n = 0;
		int ngot = 0, ok;
		double loss = 0;

		if (elastic_step_begin(ctx, &err) < 0) {
			fprintf(stderr, "elastic_train: %s\n", err.text);
			goto out;
		}
		if (first_step && elastic_resumed(ctx))
			redo_pending = 1; /* a relaunch: mark the first commit after it */
		first_step = 0;
		uint64_t step = elastic_step(ctx), epoch = elastic_sampler_epoch(sampler);
		int ns = (int)elastic_sampler_step_samples(sampler, (int)o.global);
		if (elastic_batch_plan(ns, (int)o.max_micro, elastic_size(ctx),
				       elastic_rank(ctx), env->sizes, env->nsizes, &plan,
				       &err) < 0 ||
		    elastic_sampler_indices(sampler, &plan, idx, (size_t)o.global, &n,
					    &err) < 0) {
			fprintf(stderr, "elastic_train: %s\n", err.text);
			goto out;
		}
		_maybe_kill(&o, rank0, step, "begin");
		_maybe_kill(&o, rank0, step, "timer");

		/* Forward and backward over plan.accum micro-batches. */
		memset(sums, 0, ((size_t)o.features + 3) * sizeof(*sums));
		for (int mb = 0; mb < plan.accum; mb++)
			for (int k = mb * plan.micro;
			     k < (mb + 1) * plan.micro && k < (int)n; k++) {
				int y = _sample(&o, idx[k], x);
				double z = model.w[o.features];
				for (long j = 0; j < o.features; j++)
					z += model.w[j] * x[j];
				double p = 1.0 / (1.0 + exp(-z)), e = p - y;
				for (long j = 0; j < o.features; j++)
					sums[j] += llround(e * x[j] * FIX_SCALE);
				sums[o.features] += llround(e * FIX_SCALE);
				p = fmin(fmax(p, 1e-12), 1 - 1e-12);
				sums[o.features + 1] += llround(
					-(y ? log(p) : log(1 - p)) * (FIX_SCALE / 1024));
				sums[o.features + 2]++;
			}
		if ((o.step_sleep_us > 0 || (o.sample_sleep_us > 0 && n > 0)) &&
		    (!o.sleep_while || access(o.sleep_while, F_OK) == 0))
			usleep((useconds_t)(o.step_sleep_us +
					    o.sample_sleep_us * (long)n));

		/* One allreduce for gradients, loss and count; one allgather of
		 * the sample indices, to prove each sample is used once. */
		ok = elastic_allreduce(ctx, sums, tot, (int)o.features + 3, MPI_INT64_T,
				       MPI_SUM) == 0;
		_maybe_kill(&o, rank0, step, "reduce");
		if (rank0 == o.hang_rank && (long)step == o.hang_step) {
			printf("HANG rank %d step %llu t=%.6f\n", rank0,
			       (unsigned long long)step, _now());
			fflush(stdout);
			sleep(3600);
		}
		if (ok)
			ok = elastic_allgather_i64(ctx, (const int64_t *)idx, (int)n, all,
						   (int)o.global, &ngot) == 0;
		if (ok && (tot[o.features + 2] != ns || ngot != ns)) {
			/* a partial result: never apply it */
			elastic_step_fail(ctx);
			ok = 0;
		}
		/* Apply the step: before the commit (the library copies the state
		 * at commit and restores it on a redo), or, with
		 * --update-after-commit, only once the step is committed. */
		long pause = (long)step == o.slow_step ? o.slow_us : 0;
		if (ok && !o.after_commit)
			loss = _apply(&o, &model, &check, uses, sampler, tot, all, ngot,
				      ns, pause);
		_maybe_kill(&o, rank0, step, "commit");

		int r = elastic_step_commit(ctx, &err);
		if (r < 0) {
			fprintf(stderr, "elastic_train: rank %d: %s\n", rank0, err.text);
			goto out;
		}
		if (r == ELASTIC_COMMITTED && rank0 == o.exit_rank &&
		    (long)step == o.exit_step) {
			printf("EXIT rank %d after step %llu t=%.6f\n", rank0,
			       (unsigned long long)step, _now());
			fflush(stdout);
			_exit(o.exit_code);
		}
		if (r == ELASTIC_COMMITTED && o.after_commit) {
			loss = _apply(&o, &model, &check, uses, sampler, tot, all, ngot,
				      ns, pause);
			/* applied: on the node before the step is reported below */
			if (elastic_step_updated(ctx, &err) < 0) {
				fprintf(stderr, "elastic_train: rank %d: %s\n", rank0,
					err.text);
				goto out;
			}
		}
		if (r == ELASTIC_REDO) {
			struct elastic_stats st;
			elastic_get_stats(ctx, &st);
			t_last_redo = _now();
			redo_pending = 1;
			if (elastic_rank(ctx) == 0)
				printf("redo step %llu: size now %d, recovery %.3f ms t=%.6f\n",
				       (unsigned long long)elastic_step(ctx),
				       elastic_size(ctx), st.last_recovery_s * 1e3,
				       t_last_redo);
			fflush(stdout);
			continue;
		}
		if (elastic_rank(ctx) == 0 && o.progress) {
			/* written straight to the file: it survives a SIGKILL of
			 * the whole job, unlike output still on its way */
			char line[32];
			int fd = open(o.progress, O_WRONLY | O_CREAT, 0644);
			int len = snprintf(line, sizeof(line), "%020llu\n",
					   (unsigned long long)step);
			if (fd < 0 || pwrite(fd, line, (size_t)len, 0) != len)
				fprintf(stderr, "elastic_train: cannot write %s\n",
					o.progress);
			if (fd >= 0)
				close(fd);
		}
		if (elastic_rank(ctx) == 0) {
			if (!o.quiet || redo_pending)
				printf("step %llu epoch %llu size %d micro %d x %d loss %.6f t=%.6f%s\n",
				       (unsigned long long)step,
				       (unsigned long long)epoch, elastic_size(ctx),
				       plan.micro, plan.accum, loss, _now(),
				       redo_pending ? " (first commit after a change)"
						    : "");
			if (elastic_sampler_consumed(sampler) == 0)
				printf("epoch %llu done at step %llu: every sample used exactly once: %s\n",
				       (unsigned long long)elastic_sampler_epoch(
					       sampler) -
					       1,
				       (unsigned long long)step,
				       check.bad_epochs ? "NO" : "yes");
			fflush(stdout);
		}
		redo_pending = 0;
		if (o.stop_after > 0 && ++launch_commits == o.stop_after &&
		    elastic_sampler_epoch(sampler) < (uint64_t)o.epochs) {
			/* planned exit at a step boundary: the node snapshot keeps
			 * this step for the relaunch at the new size */
			if (elastic_rank(ctx) == 0)
				printf("stopping after step %llu (planned) t=%.6f\n",
				       (unsigned long long)step, _now());
			rc = 0;
			goto out;
		}
	}

	if (elastic_complete(ctx, &err) < 0)
		fprintf(stderr, "elastic_train: %s\n", err.text);
	rc = 0;
	if (elastic_rank(ctx) == 0) {
		struct elastic_stats st;
		elastic_get_stats(ctx, &st);
		printf("done: %llu steps, %llu epochs, size %d (started %d), %llu recoveries, usage: %llu epochs checked, %llu bad, %llu violations, %.3f s\n",
		       (unsigned long long)elastic_step(ctx),
		       (unsigned long long)check.epochs_checked, elastic_size(ctx),
		       st.initial_size, (unsigned long long)st.recoveries,
		       (unsigned long long)check.epochs_checked,
		       (unsigned long long)check.bad_epochs,
		       (unsigned long long)check.violations, _now() - t_start);
		printf("weights:");
		for (long j = 0; j <= o.features && j < 4; j++)
			printf(" %.9f", model.w[j]);
		printf(" ...\n");
		if (check.bad_epochs)
			rc = 4;
		if (o.out && _write_model(o.out, &o, &model, elastic_step(ctx)) < 0)
			rc = 1;
		if (o.compare && _compare(o.compare, &o, &model) < 0)
			rc = 3;
		fflush(stdout);
	}
out:
	elastic_sampler_destroy(sampler);
	free(uses);
	free(idx);
	free(all);
	free(sums);
	free(tot);
	free(x);
	fflush(stdout);
	elastic_finalize(ctx,
			 rc); /* MPI_Finalize, guarded against its hang after failures */
	return rc;
}
