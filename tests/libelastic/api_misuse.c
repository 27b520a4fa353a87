/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/libelastic/api_misuse.c: libelastic's answers to bad input and calls in the wrong
 * order, a redo without failure, a world rebuilt without failure, and resume from a node
 * snapshot, under mpirun (2 ranks). Every check runs on every rank. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <elastic/elastic.h>

static int failures, checks, rank;

static void _check(int ok, const char *what, const elastic_error_t *err, int line)
{
	checks++;
	if (!ok) {
		failures++;
		fprintf(stderr, "rank %d: line %d: FAILED: %s%s%s\n", rank, line, what,
			err ? " -- error text: " : "", err ? err->text : "");
	}
}
#define CHECK(cond, err) _check((cond), #cond, (err), __LINE__)

/* -1 with errno e and a text containing word */
#define FAILS_WITH(call, e, word, err)                                                   \
	do {                                                                             \
		errno = 0;                                                               \
		(err)->text[0] = '\0';                                                   \
		int _r = (call);                                                         \
		CHECK(_r == -1 && errno == (e) && strstr((err)->text, (word)), (err));   \
	} while (0)

static void bad_environment(void)
{
	elastic_ctx_t *ctx = NULL;
	elastic_error_t err;

	setenv("ELASTIC_MIN_GPUS", "0", 1);
	FAILS_WITH(elastic_init(MPI_COMM_WORLD, &ctx, &err), EINVAL, "ELASTIC_MIN_GPUS",
		   &err);
	CHECK(ctx == NULL, NULL);
	unsetenv("ELASTIC_MIN_GPUS");
	setenv("ELASTIC_SIZES", "8,x", 1);
	FAILS_WITH(elastic_init(MPI_COMM_WORLD, &ctx, &err), EINVAL, "ELASTIC_SIZES",
		   &err);
	unsetenv("ELASTIC_SIZES");
	setenv("ELASTIC_WATCHDOG", "forever", 1);
	FAILS_WITH(elastic_init(MPI_COMM_WORLD, &ctx, &err), EINVAL, "ELASTIC_WATCHDOG",
		   &err);
	unsetenv("ELASTIC_WATCHDOG");
	FAILS_WITH(elastic_init(MPI_COMM_NULL, &ctx, &err), EINVAL, "MPI_COMM_NULL",
		   &err);
}

static void bad_registration_and_order(void)
{
	elastic_ctx_t *ctx;
	elastic_error_t err;
	double w[4] = {0}, other;
	char longname[80];

	CHECK(elastic_init(MPI_COMM_WORLD, &ctx, &err) == 0, &err);
	CHECK(elastic_size(ctx) == 2 && elastic_rank(ctx) == rank, NULL);
	FAILS_WITH(elastic_step_begin(ctx, &err), EPROTO, "no state registered", &err);
	FAILS_WITH(elastic_step_commit(ctx, &err), EPROTO, "no open step", &err);
	FAILS_WITH(elastic_register(ctx, "w", NULL, 8, &err), EINVAL, "NULL", &err);
	FAILS_WITH(elastic_register(ctx, "w", w, 0, &err), EINVAL, "size is 0", &err);
	FAILS_WITH(elastic_register(ctx, NULL, w, 8, &err), EINVAL, "name", &err);
	FAILS_WITH(elastic_register(ctx, "", w, 8, &err), EINVAL, "name", &err);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	FAILS_WITH(elastic_register(ctx, longname, w, 8, &err), EINVAL, "name", &err);
	CHECK(elastic_register(ctx, "w", w, sizeof(w), &err) == 0, &err);
	FAILS_WITH(elastic_register(ctx, "w", &other, sizeof(other), &err), EEXIST,
		   "already", &err);
	FAILS_WITH(elastic_set_commit_mode(ctx, 7, &err), EINVAL, "unknown mode", &err);
	FAILS_WITH(elastic_set_watchdog(ctx, -1, &err), EINVAL, "outside", &err);
	errno = 0;
	CHECK(elastic_allreduce(ctx, w, w, 1, MPI_DOUBLE, MPI_SUM) == -1 &&
		      errno == EPROTO,
	      NULL);

	CHECK(elastic_step_begin(ctx, &err) == 0, &err);
	FAILS_WITH(elastic_step_begin(ctx, &err), EPROTO, "is open", &err);
	FAILS_WITH(elastic_register(ctx, "late", &other, sizeof(other), &err), EBUSY,
		   "first step has begun", &err);
	FAILS_WITH(elastic_set_commit_mode(ctx, ELASTIC_UPDATE_AFTER_COMMIT, &err), EBUSY,
		   "first step has begun", &err);
	FAILS_WITH(elastic_complete(ctx, &err), EPROTO, "still open", &err);
	FAILS_WITH(elastic_step_updated(ctx, &err), EPROTO, "inside step 0", &err);
	FAILS_WITH(elastic_step_updated(NULL, &err), EINVAL, "ctx is NULL", &err);
	w[0] = 1;
	CHECK(elastic_step_commit(ctx, &err) == ELASTIC_COMMITTED, &err);
	CHECK(elastic_step(ctx) == 1, NULL);
	/* between steps, and in copy-at-commit mode, it is a no-op */
	CHECK(elastic_step_updated(ctx, &err) == 0, &err);

	/* a step failed by one rank only: every rank redoes it, state restored */
	CHECK(elastic_step_begin(ctx, &err) == 0, &err);
	w[0] = 99;
	w[1] = 5;
	if (rank == 1)
		elastic_step_fail(ctx);
	CHECK(elastic_step_commit(ctx, &err) == ELASTIC_REDO, &err);
	CHECK(w[0] == 1 && w[1] == 0, NULL);
	CHECK(elastic_step(ctx) == 1 && elastic_size(ctx) == 2, NULL);

	/* an MPI error that is not a process failure: the communicator is
	 * revoked and rebuilt at the same size; the step is redone */
	CHECK(elastic_step_begin(ctx, &err) == 0, &err);
	w[2] = 7;
	int rc = MPI_Allreduce(w, w + 3, -1, MPI_DOUBLE, MPI_SUM, elastic_comm(ctx));
	errno = 0;
	CHECK(elastic_check(ctx, rc) == -1 && errno == EIO, NULL);
	errno = 0;
	CHECK(elastic_allreduce(ctx, w, w + 3, 1, MPI_DOUBLE, MPI_SUM) == -1 &&
		      errno == ECANCELED,
	      NULL);
	CHECK(elastic_step_commit(ctx, &err) == ELASTIC_REDO, &err);
	CHECK(w[2] == 0 && elastic_size(ctx) == 2, NULL);
	struct elastic_stats st;
	elastic_get_stats(ctx, &st);
	CHECK(st.recoveries == 1 && st.redos == 2 && st.commits == 1, NULL);

	/* the rebuilt world works */
	CHECK(elastic_step_begin(ctx, &err) == 0, &err);
	double one = 1, two = 0;
	CHECK(elastic_allreduce(ctx, &one, &two, 1, MPI_DOUBLE, MPI_SUM) == 0, NULL);
	CHECK(two == 2, NULL);
	CHECK(elastic_step_commit(ctx, &err) == ELASTIC_COMMITTED, &err);
	CHECK(elastic_step(ctx) == 2, NULL);

	CHECK(elastic_complete(ctx, &err) == 0, &err);
	FAILS_WITH(elastic_step_begin(ctx, &err), EPROTO, "completed", &err);
	elastic_destroy(ctx);
}

/* Update after commit, misused: the state changed inside a step (on rank 0
 * only) is refused on both ranks, naming the buffer where it changed, and
 * nothing is committed; used as promised, the next step commits. */
static void update_inside_step_is_refused(void)
{
	elastic_ctx_t *ctx;
	elastic_error_t err;
	double w[64] = {0};

	CHECK(elastic_init(MPI_COMM_WORLD, &ctx, &err) == 0, &err);
	CHECK(elastic_set_commit_mode(ctx, ELASTIC_UPDATE_AFTER_COMMIT, &err) == 0, &err);
	CHECK(elastic_register(ctx, "weights", w, sizeof(w), &err) == 0, &err);
	CHECK(elastic_step_begin(ctx, &err) == 0, &err);
	CHECK(elastic_step_commit(ctx, &err) == ELASTIC_COMMITTED, &err);
	for (int i = 0; i < 64; i++)
		w[i] += 1; /* as promised: after the commit */
	CHECK(elastic_step_begin(ctx, &err) == 0, &err);
	if (rank == 0)
		for (int i = 0; i < 64; i++)
			w[i] -= 0.5; /* the update before the commit */
	if (rank == 0)
		FAILS_WITH(elastic_step_commit(ctx, &err), EPROTO, "'weights' changed",
			   &err);
	else
		FAILS_WITH(elastic_step_commit(ctx, &err), EPROTO, "another rank", &err);
	CHECK(elastic_step(ctx) == 1, NULL);
	CHECK(elastic_step_begin(ctx, &err) == 0, &err);
	CHECK(elastic_step_commit(ctx, &err) == ELASTIC_COMMITTED, &err);
	CHECK(elastic_step(ctx) == 2, NULL);
	CHECK(elastic_complete(ctx, &err) == 0, &err);
	elastic_destroy(ctx);
}

/* Train 3 steps with a job id, leave without completing, then: a program
 * with another registration is refused the snapshot (and does not overwrite
 * it); the same program resumes at step 3 with the state of step 3. */
static void resume_from_node_snapshot(const char *dir, int mode)
{
	elastic_ctx_t *ctx;
	elastic_error_t err;
	double w[3] = {0}, v[5] = {0};
	char job[64];

	snprintf(job, sizeof(job), "misuse-%d-%d", (int)getpid() % 100000, mode);
	MPI_Bcast(job, sizeof(job), MPI_CHAR, 0, MPI_COMM_WORLD);
	setenv("ELASTIC_JOB_ID", job, 1);
	setenv("ELASTIC_SHM_DIR", dir, 1);

	CHECK(elastic_init(MPI_COMM_WORLD, &ctx, &err) == 0, &err);
	CHECK(elastic_set_commit_mode(ctx, mode, &err) == 0, &err);
	CHECK(elastic_register(ctx, "w", w, sizeof(w), &err) == 0, &err);
	for (int s = 0; s < 3; s++) {
		CHECK(elastic_step_begin(ctx, &err) == 0, &err);
		if (mode == ELASTIC_COPY_AT_COMMIT)
			w[s] = s + 1;
		CHECK(elastic_step_commit(ctx, &err) == ELASTIC_COMMITTED, &err);
		if (mode == ELASTIC_UPDATE_AFTER_COMMIT)
			w[s] = s + 1;
	}
	elastic_destroy(ctx); /* not completed: the snapshot stays */
	MPI_Barrier(MPI_COMM_WORLD);

	CHECK(elastic_init(MPI_COMM_WORLD, &ctx, &err) == 0, &err);
	CHECK(elastic_register(ctx, "w", v, sizeof(v), &err) == 0, &err);
	FAILS_WITH(elastic_step_begin(ctx, &err), EINVAL, "another registration", &err);
	CHECK(!elastic_resumed(ctx) && elastic_step(ctx) == 0, NULL);
	elastic_destroy(ctx);
	MPI_Barrier(MPI_COMM_WORLD);

	memset(w, 0, sizeof(w));
	CHECK(elastic_init(MPI_COMM_WORLD, &ctx, &err) == 0, &err);
	CHECK(elastic_register(ctx, "w", w, sizeof(w), &err) == 0, &err);
	CHECK(elastic_step_begin(ctx, &err) == 0, &err);
	CHECK(elastic_resumed(ctx) && elastic_step(ctx) == 3, NULL);
	CHECK(w[0] == 1 && w[1] == 2 && w[2] == 3, NULL);
	CHECK(elastic_step_commit(ctx, &err) == ELASTIC_COMMITTED, &err);
	CHECK(elastic_complete(ctx, &err) == 0, &err);
	elastic_destroy(ctx);
	MPI_Barrier(MPI_COMM_WORLD);
	char path[512];
	/* elastic_complete removed every file of the job */
	snprintf(path, sizeof(path), "ls %s/elastic-%s-* >/dev/null 2>&1", dir, job);
	CHECK(system(path) != 0, NULL);
	unsetenv("ELASTIC_JOB_ID");
	unsetenv("ELASTIC_SHM_DIR");
}

/* A launch still running when a newer launch of the job resumes from its
 * snapshots (a leftover of a lost mpirun) must stop: ESTALE at its next
 * commits, on every rank, and its files are not the ones the new launch uses. */
static void old_launch_is_fenced(const char *dir)
{
	elastic_ctx_t *old, *new;
	elastic_error_t err;
	double a[2] = {0}, b[2] = {0};
	char job[64];

	snprintf(job, sizeof(job), "fence-%d", (int)getpid() % 100000);
	MPI_Bcast(job, sizeof(job), MPI_CHAR, 0, MPI_COMM_WORLD);
	setenv("ELASTIC_JOB_ID", job, 1);
	setenv("ELASTIC_SHM_DIR", dir, 1);
	CHECK(elastic_init(MPI_COMM_WORLD, &old, &err) == 0, &err);
	CHECK(elastic_register(old, "w", a, sizeof(a), &err) == 0, &err);
	for (int s = 0; s < 2; s++) {
		CHECK(elastic_step_begin(old, &err) == 0, &err);
		a[0] = s + 1;
		CHECK(elastic_step_commit(old, &err) == ELASTIC_COMMITTED, &err);
	}
	/* the new launch resumes from step 2 and owns the snapshots now */
	CHECK(elastic_init(MPI_COMM_WORLD, &new, &err) == 0, &err);
	CHECK(elastic_register(new, "w", b, sizeof(b), &err) == 0, &err);
	CHECK(elastic_step_begin(new, &err) == 0, &err);
	CHECK(elastic_resumed(new) && elastic_step(new) == 2 && b[0] == 2, NULL);
	b[1] = 1;
	CHECK(elastic_step_commit(new, &err) == ELASTIC_COMMITTED, &err);
	/* the old one commits once more (its snapshot is not written: it sees
	 * the owner), then is refused */
	CHECK(elastic_step_begin(old, &err) == 0, &err);
	CHECK(elastic_step_commit(old, &err) == ELASTIC_COMMITTED, &err);
	CHECK(elastic_step_begin(old, &err) == 0, &err);
	FAILS_WITH(elastic_step_commit(old, &err), ESTALE, "newer launch", &err);
	elastic_destroy(old);
	/* the new launch goes on, and a third launch resumes from its step 3 */
	CHECK(elastic_step_begin(new, &err) == 0, &err);
	b[1] = 2;
	CHECK(elastic_step_commit(new, &err) == ELASTIC_COMMITTED, &err);
	elastic_destroy(new);
	MPI_Barrier(MPI_COMM_WORLD);
	memset(b, 0, sizeof(b));
	CHECK(elastic_init(MPI_COMM_WORLD, &new, &err) == 0, &err);
	CHECK(elastic_register(new, "w", b, sizeof(b), &err) == 0, &err);
	CHECK(elastic_step_begin(new, &err) == 0, &err);
	CHECK(elastic_step(new) == 4 && b[0] == 2 && b[1] == 2, NULL);
	CHECK(elastic_step_commit(new, &err) == ELASTIC_COMMITTED, &err);
	CHECK(elastic_complete(new, &err) == 0, &err);
	elastic_destroy(new);
	unsetenv("ELASTIC_JOB_ID");
	unsetenv("ELASTIC_SHM_DIR");
}

/* Ranks that register different state are refused at the first step, on
 * every rank, instead of exchanging state of the wrong size later. */
static void mismatched_registration(void)
{
	elastic_ctx_t *ctx;
	elastic_error_t err;
	double w[4] = {0};

	CHECK(elastic_init(MPI_COMM_WORLD, &ctx, &err) == 0, &err);
	CHECK(elastic_register(ctx, "w", w, rank == 0 ? sizeof(w) : sizeof(w) / 2,
			       &err) == 0,
	      &err);
	FAILS_WITH(elastic_step_begin(ctx, &err), EINVAL, "registered different state",
		   &err);
	elastic_destroy(ctx);
}

int main(int argc, char **argv)
{
	int size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || argc != 2) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np 2 api_misuse SCRATCH-DIR\n");
		MPI_Finalize();
		return 2;
	}
	bad_environment();
	bad_registration_and_order();
	mismatched_registration();
	update_inside_step_is_refused();
	resume_from_node_snapshot(argv[1], ELASTIC_COPY_AT_COMMIT);
	resume_from_node_snapshot(argv[1], ELASTIC_UPDATE_AFTER_COMMIT);
	old_launch_is_fenced(argv[1]);

	int all = 0;
	MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("api_misuse: %d checks per rank, %d failed over both ranks\n",
		       checks, all);
	MPI_Finalize();
	return all ? 1 : 0;
}
