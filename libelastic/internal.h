/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/internal.h: the context structure and the internal interfaces between the
 * library's subsystems (ft: ULFM, snap: snapshots, nccl: GPU data plane). */
#ifndef ELASTIC_INTERNAL_H
#define ELASTIC_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#include "elastic/elastic.h"
#include "contract.h" /* the job contract; elastic__errorf */

#define ELASTIC__NAME_MAX 64
#define ELASTIC__FP_WORDS 16

struct elastic__region {
	char name[ELASTIC__NAME_MAX];
	void *ptr;
	size_t bytes;
	size_t offset; /* within a snapshot's data */
};

/* Host copies of the registered state at the last two committed steps. */
struct elastic__hostsnap {
	unsigned char *buf[2];
	uint64_t step[2]; /* committed-step count stored in buf[i]; UINT64_MAX: empty */
	int fused;	  /* buf[i] is the data of node snapshot slot i (mapped) */
};

/* This launch's node snapshot files on this host, mapped once (slot i holds
 * the committed steps of parity i): a snapshot is a memcpy, not a file write. */
struct elastic__shmslot {
	unsigned char *base; /* header, then state_bytes of data; NULL: not mapped */
	size_t len;
};

struct elastic__nccl; /* gpu.c */

/* progress.c: the record elastic-run reads (ELASTIC_RUN_PROGRESS) */
struct elastic__progress {
	int fd;		    /* -1 until the first write */
	int off;	    /* no ELASTIC_RUN_PROGRESS, or not writable */
	double last;	    /* monotonic time of the last record */
	int size;	    /* world size in the last record */
	double eager_until; /* monotonic: until then, every commit's record */
};

/* What the watchdog times (elastic__watchdog_arm). */
enum elastic__watch {
	ELASTIC__WATCH_OFF = 0,	     /* nothing: disarmed */
	ELASTIC__WATCH_RECOVERY = 1, /* a recovery or a growth (ELASTIC_WATCHDOG) */
	ELASTIC__WATCH_STEP = 2,     /* a step (ELASTIC_STEP_TIMEOUT) */
};

/* The recovery and step watchdog (watchdog.c): a thread that ends the
 * process with ELASTIC_EXIT_REFORM when a recovery or a step overruns. */
struct elastic__watchdog {
	pthread_t thread;
	int running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	double timeout_s;	     /* recovery (elastic_set_watchdog) */
	_Atomic int64_t deadline_ns; /* CLOCK_MONOTONIC; 0: disarmed */
	_Atomic int kind;	     /* enum elastic__watch */
	/* a peer exited asking for a re-form: 0 none, else its launch rank
	 * + 2 (1: which was not said); one word, read and written at once */
	_Atomic int peer_reform;
	_Atomic int leaving; /* this rank is on its way out (planned re-form) */
	int stop;
	/* The main thread's commit (the committed step, and with copy at
	 * commit its copy) against this thread's snapshot of it
	 * (elastic__persist_on_exit). */
	pthread_mutex_t state;
};

/* The node snapshot writer (snap.c, update-after-commit mode): copies the
 * state, unchanged during the step by the caller's promise, while the step
 * runs; joined before elastic_step_commit returns. */
struct elastic__snapwriter {
	pthread_t thread;
	int running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int pending; /* a snapshot asked for, not written yet */
	int stop;
	int rc;	       /* result of the last one */
	uint64_t step; /* its step */
	elastic_error_t err;
};

/* What the program registered to hear from the library. */
struct elastic__callbacks {
	elastic_log_fn log_fn;
	void *log_arg;
	int log_level;
	elastic_change_fn change_fn;
	void *change_arg;
	elastic_exit_fn exit_fn;
	void *exit_arg;
};

/* The task's ELASTIC_* variables beyond struct elastic_env: what elastic-run
 * tells its ranks. Read once at init (env.c); a path is NULL when its
 * variable is unset or empty. */
struct elastic__config {
	char *run_leave;    /* ELASTIC_RUN_LEAVE: GPUs leaving at a planned shrink */
	char *gpu;	    /* ELASTIC_GPU: this rank's GPU, as the leave list names it */
	char *run_join;	    /* ELASTIC_RUN_JOIN: the ranks a growth in place adds */
	int join_base;	    /* ELASTIC_RUN_JOIN_BASE set: started by a growth */
	char *run_progress; /* ELASTIC_RUN_PROGRESS: where rank 0 tells its progress */
	char *run_ask;	    /* ELASTIC_RUN_ASK: the number of elastic-run's last
			     * request (SIGUSR1) */
	int stop_signal;    /* SIGUSR1 asks for a planned re-form (not
			     * ELASTIC_STOP_SIGNAL=none) */
};

struct elastic_ctx {
	MPI_Comm comm; /* current world (ours, ERRORS_RETURN) */
	int rank, size;
	int node_rank; /* index among the ranks of comm on this host */
	uint64_t host_id;
	struct elastic_env env;
	struct elastic__config cfg;

	/* state */
	struct elastic__region *regions;
	int nregions;
	size_t state_bytes;
	int started; /* first step_begin done: registration frozen */
	int in_step; /* between begin and commit */
	/* update after commit: the caller is applying the committed step's
	 * update (from the commit's return to its next elastic_step_updated,
	 * begin or complete): the state is neither step's */
	_Atomic int applying;
	int step_ok;	    /* the step has not failed on this rank */
	int comm_ok;	    /* no fault seen and comm not revoked by this rank */
	uint64_t committed; /* committed steps */
	int resumed;
	struct elastic__hostsnap host;
	struct elastic__shmslot shm[2];
	struct elastic__snapwriter sw;
	char shm_prefix[512]; /* ELASTIC_SHM_DIR/elastic-<job>-; "" = off */
	int completed;
	int mode;	    /* enum elastic_commit_mode */
	uint64_t persisted; /* committed step of the last node snapshot */
	uint64_t launch_id; /* this launch of the job (same on all ranks) */
	int fenced;	    /* a newer launch owns this node's snapshots */
	int shm_off;	    /* no room for this node's snapshots: not written */
	int cleaned;	    /* older launches' files removed */
	uint64_t ask_done;  /* elastic-run's request taken last (ELASTIC_RUN_ASK) */
	int stop_pending;   /* planned re-form agreed: stops at the next begin
			     * (elastic_complete instead: the training ends) */
	char *join;	    /* growth in place agreed: the join list (resize.c),
			     * acted on at the next begin */
	int joining;	    /* started by a growth in place: the state comes
			     * from rank 0 at the first begin */
	uint64_t *fp;	    /* update after commit: samples of each region taken
			     * at begin (ELASTIC__FP_WORDS a region), to catch a
			     * caller that changes its state inside the step */

	struct elastic__callbacks cb;
	struct elastic__watchdog wd;

	struct elastic_stats stats;
	struct elastic__nccl *nccl;
	elastic_sampler_t *sampler; /* the registered sampler, if any */
	struct elastic__progress progress;
};

/* progress.c: after a commit, rank 0 tells elastic-run its progress (at
 * most once a second, at once when the size changed); eager: every
 * commit's record for the next second; close at destroy. */
void elastic__progress_commit(elastic_ctx_t *ctx);
void elastic__progress_eager(elastic_ctx_t *ctx);
void elastic__progress_close(elastic_ctx_t *ctx);
/* sampler.c: samples taken since the start (epochs x samples + consumed) */
uint64_t elastic__sampler_seen(const elastic_sampler_t *s);

/* env.c: read cfg from the environment, and the node snapshot interval's
 * default under elastic-run into env (ELASTIC_RUN_IN_PLACE=1 without
 * ELASTIC_SNAPSHOT_EVERY): 0, or -1 (ENOMEM, err). Free what it holds. */
int elastic__config_read(struct elastic__config *cfg, struct elastic_env *env,
			 elastic_error_t *err);
void elastic__config_free(struct elastic__config *cfg);

/* log.c (errors: common/contract.h) */
void elastic__log(elastic_ctx_t *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
double elastic__now_mono(void);
double elastic__now_real(void);

/* process.c: before the library's own _exit: run the exit hook fn (may be
 * NULL) on a thread of its own for at most ELASTIC_EXIT_HOOK_TIMEOUT s, then
 * flush stdio. Runs at most once per process. */
void elastic__exit_hook(elastic_exit_fn fn, void *arg, int status, const char *why);
/* A detached thread that ends the process with status (after the exit hook)
 * unless elastic__finalize_returned() is called within seconds (<= 0: none). */
void elastic__finalize_guard(double seconds, int status, elastic_exit_fn fn, void *arg);
void elastic__finalize_returned(void);
/* Planned re-form on SIGUSR1: install the handler (unless
 * ELASTIC_STOP_SIGNAL=none or the program has its own); was it received? */
void elastic__stop_signal_install(elastic_ctx_t *ctx);
/* The default node snapshot interval where a lost node heals in place. */
#define ELASTIC_SNAPSHOT_EVERY_IN_PLACE 50

int elastic__stop_requested(void);
void elastic__stop_clear(void);

/* SIGTERM (mpirun or Slurm ending the ranks; both send SIGKILL later) while
 * the node snapshot lags the last commit (ELASTIC_SNAPSHOT_EVERY > 1): the
 * library's handler (in front of the program's, if any) only marks it; the
 * main thread at its next step begin, or the watchdog when the main thread
 * is held inside a step, writes the last committed step to the node
 * snapshot, then the signal goes to the program's disposition (default: the
 * process dies of it, as it would have). */
void elastic__term_signal_install(elastic_ctx_t *ctx);
void elastic__term_signal_remove(void);
int elastic__term_requested(void);
/* The process ends now with a status of its own (a planned re-form, every
 * rank agreed): SIGTERM is ignored from here on, and one held back is
 * dropped. A runtime ends a launch's other ranks as soon as the first exits
 * (Open MPI 5: SIGTERM); a rank already on its way out must still end with
 * its own status, which elastic-run reads as "asked to re-form". */
void elastic__term_signal_drop(void);
/* The process is on its way to an exit status of its own: SIGPIPE is
 * ignored from here on. Its last words go to stderr, whose reader (mpirun's
 * forwarding, srun) may be gone once a peer ended first, and the signal
 * would end it before its snapshot and with a status (141) elastic-run does
 * not read as the one it chose. */
void elastic__ending(void);
/* Persist (how: 1 from the main thread at a step boundary; 0 from the
 * watchdog, inside a step; -1 not at all; -2 not at all, nothing owed:
 * before the first step or after elastic_complete), then pass SIGTERM on;
 * only the first caller acts. */
void elastic__term_act(elastic_ctx_t *ctx, int how);

/* watchdog.c: start (lock, settings: at init, before anything can fail),
 * run (the thread), stop (join, free; safe after a failed start). Arm it
 * for a recovery or a step, or disarm it (ELASTIC__WATCH_OFF). */
int elastic__watchdog_start(elastic_ctx_t *ctx);
void elastic__watchdog_run(elastic_ctx_t *ctx);
void elastic__watchdog_stop(elastic_ctx_t *ctx);
/* Rank RANK ended asking for a re-form (exit ELASTIC_EXIT_REFORM): the
 * watchdog thread ends this process the same way. -1: no thread. */
int elastic__watchdog_peer_reform(elastic_ctx_t *ctx, int rank);
/* peer.c: the runtime's word that a peer exited ELASTIC_EXIT_REFORM (PMIx
 * PMIX_ERR_EXIT_NONZERO_TERM, which Open MPI 6 would make fatal) taken to
 * the watchdog; nothing without PMIx. */
void elastic__peer_watch_start(elastic_ctx_t *ctx);
void elastic__peer_watch_stop(elastic_ctx_t *ctx);
void elastic__watchdog_arm(elastic_ctx_t *ctx, enum elastic__watch kind);

/* survey.c: this node's id (a hash of the host name). One allgather over
 * comm of (host, committed step): the range of committed steps over its
 * ranks and this rank's index among those on its host. Returns the MPI
 * return code. */
uint64_t elastic__host_id(void);
int elastic__survey(elastic_ctx_t *ctx, MPI_Comm comm, uint64_t *lo, uint64_t *hi,
		    int *node_rank);

/* persist.c: copy the last committed step out when due (sync = 0: a node
 * snapshot may go to the background writer); wait for the background
 * writer; copy now whatever the interval (before a re-form); at destroy in
 * ELASTIC_UPDATE_AFTER_COMMIT mode, the last committed step if not yet. */
void elastic__persist(elastic_ctx_t *ctx, int sync);
void elastic__persist_wait(elastic_ctx_t *ctx);
void elastic__persist_on_exit(elastic_ctx_t *ctx);
void elastic__persist_now(elastic_ctx_t *ctx);
void elastic__persist_final(elastic_ctx_t *ctx);

/* resize.c: the world changes size at a step boundary.
 * The world becomes nc (frees the old one): ranks, this rank's place on its
 * host, NCCL told which ranks are gone. */
void elastic__adopt(elastic_ctx_t *ctx, MPI_Comm nc, int node_rank);
/* After a shrink or a growth in place: elastic-run hears the new size at
 * once (and every commit for a second), then the program's change callback. */
void elastic__resized(elastic_ctx_t *ctx);
/* At a commit that agreed a planned change: a planned shrink in place, when
 * elastic-run wrote a leave list (ELASTIC_RUN_LEAVE). NONE: not this time
 * (no list, nobody or everybody listed, an MPI error; the same on every
 * rank); STAY: the world shrank and this rank is in it; LEAVE: this rank is
 * listed and the survivors have their world: the caller ends the process
 * (ELASTIC_EXIT_LEFT). Collective. */
enum elastic__shrink {
	ELASTIC__SHRINK_NONE,
	ELASTIC__SHRINK_STAY,
	ELASTIC__SHRINK_LEAVE,
};
enum elastic__shrink elastic__shrink_in_place(elastic_ctx_t *ctx);
/* At a commit that agreed a planned change: 1 when it is elastic-run's
 * request taken at an earlier commit (its signal reached a rank late), the
 * same on every rank; collective. */
int elastic__ask_taken(elastic_ctx_t *ctx);
/* Growth in place (spawn and merge, on runtimes elastic-run finds able
 * to). At a commit that agreed a planned change no rank leaves: 1 if a join
 * list was agreed (kept for the next begin), else 0; collective. */
int elastic__grow_planned(elastic_ctx_t *ctx);
/* At that begin: start the joiners, merge, hand them the state: 0, or -1
 * (the caller stops for a re-form). Collective. */
int elastic__grow_in_place(elastic_ctx_t *ctx, elastic_error_t *err);
/* In elastic_init: a joiner's world (merged with the ranks that started
 * it) in *out, else MPI_COMM_NULL; the MPI return code. */
int elastic__join_parent(elastic_ctx_t *ctx, MPI_Comm *out);
/* A joiner's first begin (the state from rank 0), and the growers' side. */
int elastic__grow_handoff(elastic_ctx_t *ctx, elastic_error_t *err);
/* Every rank registered the same state: 0, or -1 (err). Collective. */
int elastic__layout_agree(elastic_ctx_t *ctx, elastic_error_t *err);

/* ft.c: the only file that calls MPIX_*. */
/* 1 if rc is a ULFM fault (process failed, revoked), 0 if not. */
int elastic__ft_is_fault(int rc);
/* Agree on *flag (bitwise AND) over comm; returns the MPI return code. */
int elastic__ft_agree(MPI_Comm comm, int *flag);
void elastic__ft_revoke(MPI_Comm comm);
/* Shrink comm (revoked or not) to its live processes: MPI return code. */
int elastic__ft_shrink(MPI_Comm comm, MPI_Comm *out);

/* snap.c: host double buffer and snapshot files (node-local shm, checkpoints). */
int elastic__snap_host_alloc(elastic_ctx_t *ctx, elastic_error_t *err);
/* Hash of the registration (names and sizes, in order). */
uint64_t elastic__snap_layout(const elastic_ctx_t *ctx);
void elastic__snap_host_free(elastic_ctx_t *ctx);
/* Copy the registered buffers into the host slot of step (committed count). */
void elastic__snap_host_save(elastic_ctx_t *ctx, uint64_t step);
/* Copy the host slot of step back into the registered buffers: 0 or -1
 * (no slot holds that step). */
int elastic__snap_host_restore(elastic_ctx_t *ctx, uint64_t step);
/* Node snapshot of committed step `step` into this launch's mapped slot
 * (step & 1) on this host: the data from src (state_bytes; NULL: from the
 * registered buffers; the slot's own data when fused), then the step in the
 * header, so that a writer killed midway leaves that slot invalid and the
 * other one whole. 0 or -1. */
int elastic__snap_shm_publish(elastic_ctx_t *ctx, uint64_t step, const unsigned char *src,
			      elastic_error_t *err);
/* A rank that does not write its node's snapshot waits, up to timeout_s,
 * until this launch's node snapshot on its host holds committed step `step`
 * or a later one (written by the node's lowest rank): 1 once it does, 0 at
 * the timeout or without node snapshots. */
int elastic__snap_shm_wait_step(const elastic_ctx_t *ctx, uint64_t step,
				double timeout_s);
/* Unmap (and close) the node snapshot slots; the files stay. */
void elastic__snap_shm_unmap(elastic_ctx_t *ctx);
/* Publish step from the registered buffers in the background (a writer
 * thread, started on first use): 0, or -1 if no thread (then the caller
 * publishes itself). */
int elastic__snap_async_start(elastic_ctx_t *ctx, uint64_t step);
/* Wait for the background snapshot, if any: its result (0 or -1 with *err). */
int elastic__snap_async_wait(elastic_ctx_t *ctx, elastic_error_t *err);
/* Stop the writer thread (after a wait). */
void elastic__snap_async_stop(elastic_ctx_t *ctx);
/* Write the registered buffers, which hold committed step `step`, to
 * <prefix><launch>-<host>-<slot>.snap: 0 or -1. Each launch of a job writes
 * its own files, so that two launches never write into one file. */
int elastic__snap_file_write(elastic_ctx_t *ctx, const char *prefix, uint64_t step,
			     elastic_error_t *err);
/* Best step held in files at prefix that matches the registration: loads it
 * into buf (state_bytes) and returns 1, 0 if none, -1 on error. */
int elastic__snap_file_load(elastic_ctx_t *ctx, const char *prefix, unsigned char *buf,
			    uint64_t *step, elastic_error_t *err);
/* Remove the snapshot files of prefix, except those of keep_launch (0:
 * remove all, and the owner file). */
void elastic__snap_file_remove(const char *prefix, uint64_t keep_launch);
/* The owner file <prefix>owner names the launch that writes the snapshots of
 * this node: claim it (atomic rename), or check it (1: launch owns it, or
 * nobody does; 0: another launch took over). */
int elastic__snap_owner_claim(const char *prefix, uint64_t launch);
int elastic__snap_owner_is(const char *prefix, uint64_t launch);
/* The node snapshot could not be reserved or written (why): this launch
 * stops writing it on this node, frees what it had there and says once
 * (log, error level) what protection is lost. Main thread only. */
void elastic__snap_shm_lost(elastic_ctx_t *ctx, const elastic_error_t *why);

/* bind.c: bind to the cores nearest this rank's GPU (at init, ELASTIC_BIND=gpu). */
void elastic__bind_near_gpu(elastic_ctx_t *ctx);

/* gpu.c (CUDA and NCCL, loaded with dlopen on first use; gpu_none.c in a build
 * without CUDA): this rank's GPU (node rank modulo the visible GPUs) and its
 * PCI bus id: 0, or -1 with the reason in why. */
int elastic__gpu_busid(elastic_ctx_t *ctx, int *dev, char *busid, size_t len, char *why,
		       size_t wlen);
/* NCCL communicator upkeep (stubs when there is no NCCL). */
void elastic__nccl_on_change(elastic_ctx_t *ctx, const int *failed, int nfailed);
void elastic__nccl_free(elastic_ctx_t *ctx);

/* Set err (printf-style) and errno = e; evaluates to -1. */
#define _fail(err, e, ...) (elastic__errorf((err), __VA_ARGS__), errno = (e), -1)

#endif
