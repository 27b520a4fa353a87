/* SPDX-License-Identifier: GPL-2.0-or-later */
/* elastic/elastic.h: public API of libelastic, the in-job half of slurm-elastic. */
#ifndef ELASTIC_ELASTIC_H
#define ELASTIC_ELASTIC_H

/*
 * libelastic makes a data-parallel MPI training loop survive the loss of
 * ranks and changes of its size. The caller:
 *
 *   elastic_init(MPI_COMM_WORLD, &ctx, &err);
 *   elastic_register(ctx, "weights", w, sizeof(w), &err);   (all state)
 *   elastic_start(ctx, &err);   (a relaunch resumes here: the loop sees it)
 *   while (elastic_step(ctx) < total_steps) {
 *           elastic_step_begin(ctx, &err);
 *           ... compute on this rank's samples (elastic_sampler_indices()
 *           under elastic_batch_plan()), reduce with elastic_allreduce() (or
 *           MPI on elastic_comm() + elastic_check()), update the registered
 *           state and elastic_sampler_advance() ...
 *           if (elastic_step_commit(ctx, &err) == ELASTIC_REDO)
 *                   continue;   (state is back at the last committed step)
 *   }
 *   elastic_complete(ctx, &err);
 *   elastic_finalize(ctx, 0);   (or elastic_destroy + MPI_Finalize)
 *
 * A step is committed only when every surviving rank agrees (ULFM
 * MPIX_Comm_agree) that it succeeded everywhere; otherwise the registered
 * state returns to the last committed step, the communicator is rebuilt
 * without the failed ranks and the caller redoes the step at the new size.
 *
 * Conventions: functions return 0 (or a documented non-negative value) on
 * success and -1 with errno set on failure, plus text in the optional
 * elastic_error_t. A failed call changes nothing. *_destroy accepts NULL.
 * The library never prints unless a log callback is set or ELASTIC_DEBUG is
 * set, and never ends the process, except where elastic(3) (EXIT HOOK) says:
 * a planned re-form or shrink at a step boundary, the watchdog
 * (ELASTIC_WATCHDOG, ELASTIC_STEP_TIMEOUT, a peer's re-form) and the guard
 * of elastic_finalize().
 */

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Human-readable detail beside a -1/errno return (same layout as the one of
 * slurm-elastic's common code). */
#ifndef ELASTIC_ERROR_T_DEFINED
#define ELASTIC_ERROR_T_DEFINED 1
typedef struct elastic_error {
	char text[256];
} elastic_error_t;
#endif

typedef struct elastic_ctx elastic_ctx_t;
typedef struct elastic_sampler elastic_sampler_t;

/* Results of elastic_step_commit(). */
enum elastic_step_result {
	ELASTIC_COMMITTED = 0, /* the step is committed on every surviving rank */
	ELASTIC_REDO = 1,      /* the world changed: state rolled back, redo the step */
};

/* Exit status of a process ended by the recovery watchdog, or by a planned
 * re-form: the launcher (elastic-run) re-forms the job from the last
 * committed step in a new launch (a relaunch).
 *
 * Planned re-form: elastic-run sends SIGUSR1 to every rank when the
 * controller grows or shrinks the job. libelastic's handler (installed by
 * elastic_init unless ELASTIC_STOP_SIGNAL=none or the program has its own
 * SIGUSR1 handler) notes it; the next elastic_step_commit() agrees on it
 * with the step, commits the step, writes the node snapshot, finalizes MPI
 * and exits with ELASTIC_EXIT_REFORM: no committed step is lost or redone.
 *
 * Planned shrink in place: with a runtime that survives a lost daemon (Open
 * MPI 6), elastic-run names the GPUs being released in the file
 * ELASTIC_RUN_LEAVE before its SIGUSR1. At that commit the ranks on those
 * GPUs leave (they exit with ELASTIC_EXIT_LEFT) and the others go on as a
 * smaller world from the committed step: elastic_step_commit() returns
 * ELASTIC_COMMITTED, the change callback runs, elastic_size() is smaller.
 * No relaunch, no snapshot read. */
#define ELASTIC_EXIT_REFORM 75
#define ELASTIC_EXIT_LEFT   76

/* Log levels for the callback and ELASTIC_DEBUG. */
enum elastic_log_level {
	ELASTIC_LOG_ERROR = 0,
	ELASTIC_LOG_WARN = 1,
	ELASTIC_LOG_INFO = 2,
	ELASTIC_LOG_DEBUG = 3,
};

typedef void (*elastic_log_fn)(void *arg, int level, const char *msg);

/* Called after the world changed (recovery or resume), once the library's own
 * derived communicators are rebuilt: rebuild the caller's own ones from
 * elastic_comm(ctx) there. */
typedef void (*elastic_change_fn)(elastic_ctx_t *ctx, void *arg);

/*
 * Create a context on comm (typically MPI_COMM_WORLD; MPI must be
 * initialized). Collective over comm. The library works on its own duplicate
 * with MPI_ERRORS_RETURN. Reads the environment (all optional):
 *   ELASTIC_JOB_ID       job id, [A-Za-z0-9_.-], 1-64 chars; enables the
 *                        node-local snapshot (read by a relaunch) under
 *                        ELASTIC_SHM_DIR/elastic-<id>-*
 *   ELASTIC_JOB_STAMP    [A-Za-z0-9_.-], 1-32 chars: tells this run of the job
 *                        from an older one with the same id (elastic-run sets
 *                        the job's start time): node snapshots are then
 *                        ELASTIC_SHM_DIR/elastic-<id>-<stamp>-*, and a stale
 *                        snapshot of a reused job id is never resumed
 *   ELASTIC_MIN_GPUS     1..4096 (unset: 1, or the smallest size of a list)
 *   ELASTIC_MAX_GPUS     ELASTIC_MIN_GPUS..4096
 *   ELASTIC_GRACE        seconds a release order may wait, 1..86400
 *   ELASTIC_SIZES        allowed world sizes: any (or empty), pow2 (powers
 *                        of two within MIN..MAX), or a list "2,4,8" (each
 *                        size once, within MIN..MAX); MIN must be one of
 *                        them. The same rules as sbatch --elastic-* (one
 *                        parser, slurm-elastic's common/contract.c)
 *   ELASTIC_CONTROLLER   host:port of elasticd, port 1..65535
 *   ELASTIC_DEBUG        0..3 (or yes/no): log to stderr at that level
 *   ELASTIC_WATCHDOG     seconds, 0..86400 (default 60; 0 = off): when a
 *                        recovery does not finish in time the process exits
 *                        with ELASTIC_EXIT_REFORM so that the launcher can
 *                        relaunch the job
 *   ELASTIC_STEP_TIMEOUT seconds, 0..86400 (default 0 = off): a step (begin
 *                        to the end of its commit) that takes longer ends
 *                        the process with ELASTIC_EXIT_REFORM, as the
 *                        watchdog does: a failure no rank noticed must not
 *                        hang the job
 *   ELASTIC_FINALIZE_TIMEOUT  seconds, 0..86400 (default 10): see
 *                        elastic_finalize
 *   ELASTIC_BIND         gpu (or yes): bind the whole process to the cores
 *                        nearest its GPU where hwloc shows them; no (the
 *                        default): leave CPU binding alone, so that a
 *                        process's own threads (PyTorch, OpenMP) keep the
 *                        cores the launcher gave it
 *   ELASTIC_SHM_DIR      directory of node-local snapshots (default /dev/shm)
 *   ELASTIC_SNAPSHOT_EVERY  write the node-local snapshot every N committed
 *                        steps, 1..2^31 (default 1; 50 where a lost node
 *                        heals in place): a re-form redoes at most N steps,
 *                        none after SIGTERM (the last commit is written
 *                        first, then the program's handler or the default
 *                        action gets the signal; elastic.3)
 *   ELASTIC_SNAPSHOT_THREAD yes: with ELASTIC_UPDATE_AFTER_COMMIT, a thread
 *                        copies the node snapshot while the step runs (for
 *                        ranks with an idle core beside them; default no:
 *                        the copy is made at the next begin)
 *   ELASTIC_CHECKPOINT_DIR, ELASTIC_CHECKPOINT_EVERY (steps, 1..2^31):
 *                        also write a snapshot there every N committed steps
 * A value out of range fails with EINVAL and text naming the variable.
 */
int elastic_init(MPI_Comm comm, elastic_ctx_t **ctx, elastic_error_t *err);

/* Free the context (not collective). Keeps the node-local snapshot unless
 * elastic_complete() was called. Accepts NULL. */
void elastic_destroy(elastic_ctx_t *ctx);

/* Mark the training finished: collective; removes this job's node-local
 * snapshots. */
int elastic_complete(elastic_ctx_t *ctx, elastic_error_t *err);

/*
 * Destroy ctx (may be NULL) and call MPI_Finalize under a guard: Open MPI
 * 5.0.7 can hang in MPI_Finalize when a rank failed shortly before (its
 * finalize fence). If MPI_Finalize has not returned after
 * ELASTIC_FINALIZE_TIMEOUT seconds (default 10, 0 = wait forever), the
 * process exits with status (what main would return) if elastic_complete()
 * succeeded (the result is complete), else with ELASTIC_EXIT_REFORM.
 * Once MPI_Finalize returned the guard does nothing: a program may run on
 * after it (an interpreter's own shutdown, results written afterwards).
 * Returns MPI_Finalize's result.
 */
int elastic_finalize(elastic_ctx_t *ctx, int status);

/* Log callback (NULL: none) and the most verbose level it receives. */
void elastic_set_log(elastic_ctx_t *ctx, elastic_log_fn fn, void *arg, int level);

/* Change callback (NULL: none). */
void elastic_set_change_callback(elastic_ctx_t *ctx, elastic_change_fn fn, void *arg);

/*
 * Exit hook (NULL: none): called once just before the library ends the
 * process with _exit (planned re-form, leaving at a planned shrink,
 * recovery watchdog, step timeout, a peer's re-form, finalize guard), with the exit status and a short reason, so that a
 * runtime above it (Python) can flush its buffered output and run its own
 * cleanup; C stdio is flushed after it. It runs on a thread of its own and
 * is given ELASTIC_EXIT_HOOK_TIMEOUT seconds (5): a hook that blocks (for
 * example on a lock the stuck thread holds) does not keep the process alive.
 */
typedef void (*elastic_exit_fn)(void *arg, int status, const char *why);
void elastic_set_exit_hook(elastic_ctx_t *ctx, elastic_exit_fn fn, void *arg);
#define ELASTIC_EXIT_HOOK_TIMEOUT 5

/*
 * How the registered state is kept for a REDO (before the first step):
 * ELASTIC_COPY_AT_COMMIT (default): the caller may change its state anywhere
 *   in the step; the library copies all of it at each commit (a memcpy of
 *   the state per step) and restores it on REDO.
 * ELASTIC_UPDATE_AFTER_COMMIT: the caller promises to change registered
 *   state only after elastic_step_commit() returned ELASTIC_COMMITTED and
 *   before the next elastic_step_begin() (compute, reduce, commit, then
 *   apply the update and elastic_sampler_advance(): in this mode the
 *   sampler is advanced after the commit too, never inside the step). A
 *   failed step then never touched the state: nothing is copied per step
 *   for a heal in place. The node-local snapshot (for a relaunch) is copied
 *   at the next begin (or, with
 *   ELASTIC_SNAPSHOT_THREAD=yes, by a thread while that step runs, and
 *   elastic_step_commit() waits for it).
 */
enum elastic_commit_mode {
	ELASTIC_COPY_AT_COMMIT = 0,
	ELASTIC_UPDATE_AFTER_COMMIT = 1,
};
int elastic_set_commit_mode(elastic_ctx_t *ctx, int mode, elastic_error_t *err);

/* Recovery watchdog in seconds (0 = off), overriding ELASTIC_WATCHDOG. */
int elastic_set_watchdog(elastic_ctx_t *ctx, double seconds, elastic_error_t *err);

/*
 * Register a state buffer of bytes bytes at ptr under a unique name (1-63
 * chars). Registered buffers hold everything a step changes (weights,
 * optimizer state, counters, RNG state) and must be identical on every rank
 * at commit (replicated data-parallel state). They are copied at each commit
 * and restored on REDO. Only before the first elastic_step_begin():
 * EBUSY after, EINVAL for NULL/zero size/bad name, EEXIST for a name taken.
 */
int elastic_register(elastic_ctx_t *ctx, const char *name, void *ptr, size_t bytes,
		     elastic_error_t *err);

/*
 * Start the training (collective, after every elastic_register and before
 * the step loop): check that every rank registered the same state (EINVAL
 * if not), restore a snapshot of this job if one exists (a relaunch: the
 * highest committed step found on any node, sent to every rank; EINVAL for a
 * snapshot of another registration, which is left as it is), and record the
 * initial state as the one to return to. After it, elastic_step() and the
 * registered state are the resumed ones, so that a loop that tests its end
 * before each step sees a relaunch that resumed at (or past) it. The first
 * elastic_step_begin() does this when it was not called; a loop whose end
 * was tested before that can then run a step past it. 0 (also when called
 * again), or -1.
 */
int elastic_start(elastic_ctx_t *ctx, elastic_error_t *err);

/*
 * Begin a step; the first call starts the training first when
 * elastic_start() was not called. EPROTO if a step is already open or the
 * training completed.
 */
int elastic_step_begin(elastic_ctx_t *ctx, elastic_error_t *err);

/*
 * Record the result of a caller's own MPI call on elastic_comm() within the
 * step. A process failure or revocation fails the step (and revokes the
 * communicator so no rank stays blocked); returns 0 if rc was MPI_SUCCESS,
 * else -1 (errno EPIPE for a failure of the world, EIO for other MPI
 * errors). After a -1 skip to elastic_step_commit().
 */
int elastic_check(elastic_ctx_t *ctx, int mpi_rc);

/* Mark the step failed for a reason of the caller's own (it is redone). */
void elastic_step_fail(elastic_ctx_t *ctx);

/*
 * End this process so that elastic-run re-forms the job from the last
 * committed step, for a program that cannot redo a failed step in place:
 * the committed state goes to the node snapshot (whatever the snapshot
 * interval), MPI is left and the process exits ELASTIC_EXIT_REFORM. Call it
 * between steps, on every rank; a rank that does not is ended by its peers'
 * exits (see Watchdog in elastic(3)). Does not return.
 */
void elastic_reform_now(elastic_ctx_t *ctx);

/* MPI_Allreduce on the current communicator, with elastic_check() applied.
 * Refused (-1, ECANCELED) once this rank saw the world fail in this step
 * (the communicator is revoked); EPROTO outside a step. */
int elastic_allreduce(elastic_ctx_t *ctx, const void *sendbuf, void *recvbuf, int count,
		      MPI_Datatype type, MPI_Op op);

/* MPI_Allgatherv of a variable number of MPI_INT64_T per rank on the current
 * communicator: recv gets the concatenation in rank order; *total its
 * length (at most cap). Same failure rules as elastic_allreduce. */
int elastic_allgather_i64(elastic_ctx_t *ctx, const int64_t *send, int count,
			  int64_t *recv, int cap, int *total);

/*
 * End the step: the ranks agree whether it succeeded everywhere.
 * ELASTIC_COMMITTED: the state is now the committed state of this step.
 * ELASTIC_REDO: a rank failed (or the step failed somewhere): the failed
 * ranks were removed, the registered state is back at the last committed
 * step, elastic_comm()/rank()/size() describe the new world; redo the step.
 * -1 on an error that cannot be recovered (errno; e.g. EPROTO: no open step;
 * ESTALE: a newer launch of this job resumed from its snapshots, this one
 * must stop).
 */
int elastic_step_commit(elastic_ctx_t *ctx, elastic_error_t *err);

/*
 * ELASTIC_UPDATE_AFTER_COMMIT: the caller has applied the committed step's
 * update. The node snapshot takes the state now (when one is due) rather
 * than at the next elastic_step_begin, so that a process ended between
 * steps (mpirun ending a launch after a lost node) loses no committed step
 * whose result the program may already have reported. No-op in
 * ELASTIC_COPY_AT_COMMIT mode and before the first step. 0, or -1 (EINVAL:
 * ctx NULL; EPROTO: inside a step).
 */
int elastic_step_updated(elastic_ctx_t *ctx, elastic_error_t *err);

/* Accessors. */
MPI_Comm elastic_comm(const elastic_ctx_t *ctx);
int elastic_rank(const elastic_ctx_t *ctx);
int elastic_size(const elastic_ctx_t *ctx);
/* Committed steps so far = index of the step to run next. */
uint64_t elastic_step(const elastic_ctx_t *ctx);
/* 1 if this run resumed from a snapshot (a relaunch) at its first step. */
int elastic_resumed(const elastic_ctx_t *ctx);

struct elastic_stats {
	uint64_t commits;	  /* steps committed by this process */
	uint64_t redos;		  /* ELASTIC_REDO results */
	uint64_t recoveries;	  /* communicator rebuilds */
	double last_recovery_s;	  /* duration of the last rebuild */
	double last_failure_time; /* CLOCK_REALTIME when it was detected */
	uint64_t resumed_step;	  /* step restored from a snapshot, 0: none */
	int initial_size;	  /* size at elastic_init */
	uint64_t shrinks; /* planned shrinks in place (ranks left at a step boundary) */
	uint64_t grows;	  /* growths in place (ranks joined at a step boundary) */
};
void elastic_get_stats(const elastic_ctx_t *ctx, struct elastic_stats *st);

/* Environment as parsed by elastic_init (0 / NULL / empty where not set). */
struct elastic_env {
	char job_id[65];
	int min_gpus, max_gpus;
	int grace_s;
	int nsizes;
	int sizes[64];
	char controller_host[256];
	int controller_port;
	int debug;
	double watchdog_s;
	double finalize_timeout_s;
	double step_timeout_s;
	char shm_dir[256];
	char checkpoint_dir[256];
	long checkpoint_every;
	long snapshot_every;
	char job_stamp[33];
	int snapshot_thread;
	int bind; /* ELASTIC_BIND=gpu: 1 */
};
const struct elastic_env *elastic_get_env(const elastic_ctx_t *ctx);

/* Parse the ELASTIC_* variables through getenv_fn (NULL: getenv) into env.
 * Used by elastic_init; exposed for launchers and tests. */
int elastic_env_parse(struct elastic_env *env, const char *(*getenv_fn)(const char *),
		      elastic_error_t *err);

/*
 * Batch plan: the global batch stays constant whatever the world size.
 * Given the global batch, the most samples a rank may process at once
 * (max_micro) and the world, compute this rank's share: the active world
 * (the largest allowed size <= size; ranks beyond it get no samples),
 * samples of the global batch this rank processes (share, at offset), and
 * how: accum micro-batches of at most micro samples. The shares over the
 * active ranks cover [0, global) exactly once, in rank order.
 * EINVAL for global < 1, max_micro < 1, size < 1, rank outside [0, size),
 * or no allowed size <= size.
 */
struct elastic_batch_plan {
	int active; /* ranks with samples */
	int share;  /* samples of the global batch for this rank */
	int offset; /* of this rank's share within the global batch */
	int micro;  /* samples per micro-batch */
	int accum;  /* micro-batches per step (same on every active rank) */
};
int elastic_batch_plan(int global, int max_micro, int size, int rank, const int *sizes,
		       int nsizes, struct elastic_batch_plan *plan, elastic_error_t *err);

/*
 * Elastic sampler over nsamples samples, shuffled per epoch from seed
 * (shuffle = 0: in order). Its position (epoch, samples consumed) is the
 * only state: register it with elastic_sampler_register so that it rolls
 * back and resumes with the rest. Each step takes the next `global` samples
 * of the epoch's order (fewer at the end of an epoch), split over the ranks
 * of the current world by the batch plan, so each sample is used exactly
 * once per epoch whatever the sizes. The caller owns *s and frees it with
 * elastic_sampler_destroy() (after elastic_destroy() when registered).
 */
int elastic_sampler_create(uint64_t nsamples, uint64_t seed, int shuffle,
			   elastic_sampler_t **s, elastic_error_t *err);
void elastic_sampler_destroy(elastic_sampler_t *s);
int elastic_sampler_register(elastic_ctx_t *ctx, elastic_sampler_t *s,
			     elastic_error_t *err);
/* Samples in the current step's global batch: global, or fewer at the end
 * of an epoch. Make the step's batch plan for this many samples. */
uint64_t elastic_sampler_step_samples(const elastic_sampler_t *s, int global);
/* This rank's sample indices of the current step (no advance), following
 * plan (made for elastic_sampler_step_samples() samples): plan->share
 * indices into idx (ERANGE if cap is smaller), count in *n. */
int elastic_sampler_indices(elastic_sampler_t *s, const struct elastic_batch_plan *plan,
			    uint64_t *idx, size_t cap, size_t *n, elastic_error_t *err);
/* Move past the current step's global batch; returns 1 if this completed an
 * epoch, else 0. It is a change of registered state: call it inside the step
 * (before elastic_step_commit) in ELASTIC_COPY_AT_COMMIT mode, and after
 * ELASTIC_COMMITTED (before the next begin) in ELASTIC_UPDATE_AFTER_COMMIT
 * mode, like every other state change of that mode. */
int elastic_sampler_advance(elastic_sampler_t *s, int global);
uint64_t elastic_sampler_epoch(const elastic_sampler_t *s);
/* Set the position (EINVAL if consumed >= the number of samples). */
int elastic_sampler_seek(elastic_sampler_t *s, uint64_t epoch, uint64_t consumed,
			 elastic_error_t *err);
uint64_t elastic_sampler_consumed(const elastic_sampler_t *s);

/*
 * GPU data plane (built when NCCL was found): a NCCL communicator over the
 * current world, created on first use and rebuilt (ncclCommShrink where NCCL
 * has it, else abort + init) after every change. *out receives a ncclComm_t.
 * ENODEV when this build has no NCCL or no GPU is visible; EBUSY when two
 * ranks of the world are on one GPU (NCCL needs one GPU per rank: the text
 * names the ranks and the GPU). Collective over the world when it creates
 * the communicator. The library owns
 * the communicator: do not destroy it, and do not keep it across a step
 * boundary (call again after every elastic_step_begin; a change replaces
 * it); elastic_destroy() frees it.
 */
int elastic_nccl_comm(elastic_ctx_t *ctx, void *out, elastic_error_t *err);

/*
 * Sum count items of type (MPI_FLOAT or MPI_DOUBLE) of the device buffer buf
 * over the current world in place, with NCCL on stream (a cudaStream_t; NULL:
 * the default stream), and wait for it: for gradients that live on the GPU
 * (the Python binding's CUDA path uses it). Inside a step only (EPROTO);
 * ECANCELED once this rank saw the world fail in this step; ENODEV without
 * NCCL or a GPU. A NCCL or CUDA error marks the step failed (EIO): go on to
 * elastic_step_commit, which recovers and has the step redone.
 */
int elastic_gpu_allreduce(elastic_ctx_t *ctx, void *buf, size_t count, MPI_Datatype type,
			  void *stream, elastic_error_t *err);

#ifdef __cplusplus
}
#endif

#endif
