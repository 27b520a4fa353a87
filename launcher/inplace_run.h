/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/inplace_run.h: the resizes in place of a running launch, acting
 * on decide.h's plans, and the recoveries of the run (re-forms, resizes in
 * place) counted for elasticd. */
#ifndef ELASTIC_LAUNCHER_INPLACE_RUN_H
#define ELASTIC_LAUNCHER_INPLACE_RUN_H

#include "run.h"

/* A new launch of world ranks: no resize under way; empty leave and join
 * files (named in ELASTIC_RUN_LEAVE, ELASTIC_RUN_JOIN) on runtimes that can
 * use them. */
void elastic__inplace_begin(struct elastic_inplace *ip, const struct run_job *job,
			    const struct run_files *file, int world);

/* The parts of a run the resizes in place read and change (watch.c passes
 * them). The ranks' stop is read only: watch.c alone moves it, on what
 * elastic__plan_leave and elastic__watch_record return. */
struct elastic_inplace_run {
	char **prog; /* the program and its arguments (the joiners run it) */
	struct run_job *job;
	const struct run_files *file;
	struct run_sets *sets;
	struct elastic_report *rep; /* the ranks' reports of their end */
	struct elastic_inplace *ip;
	struct elastic_progress *progress; /* rank 0's record */
	struct elastic_recovery *recov;
	const struct elastic_stop *stop;
};

/* What a record of rank 0 asks of the ranks' stop; watch.c carries it out
 * in this order. */
struct elastic_record_act {
	int done;      /* a resize in place took effect: the stop asking it is over */
	int due;       /* -1: no change planned; else whether one is due (a stop) */
	int replacing; /* the re-form due takes back GPUs the ranks left */
};

/* The larger set seen (r->sets->seen) on a runtime that grows in place: when
 * it only adds whole nodes new to the launch, write the join list and the
 * grown map: at the next step boundary the ranks start the new ones and
 * merge with them, no rank restarts. 1 if planned; 0: the ranks re-form. */
int elastic__plan_grow(const struct elastic_inplace_run *r);

/* Slurm's list of the job's GPUs now, then the growth plan on it; nothing on
 * a runtime that cannot grow in place. */
void elastic__grow_from_slurm(const struct elastic_inplace_run *r);

/* A release of GPUs the ranks use, on a runtime that survives a lost
 * daemon: name those GPUs in the leave file, so that their ranks leave at
 * the next step boundary and the others go on (libelastic's planned shrink
 * in place), when what is left is a size the job allows. Otherwise the
 * file stays empty: every rank stops and the job re-forms. GPUs whose rank
 * was lost and healed around count as no rank. Returns 1 when the ranks
 * must be asked to stop, 0 when the released GPUs hold no live rank (the
 * release is acknowledged at once). */
int elastic__plan_leave(const struct elastic_inplace_run *r);

/* Rank 0's record of the world size (read at most every 0.1 s): the
 * leaving ranks left, the joining ones joined, or, with a runtime that
 * survives a lost daemon, ranks were lost and the survivors healed in
 * place. The launch goes on; after a heal its GPU set becomes what Slurm
 * says the job holds now (a cancelled grant, a node gone), and elasticd
 * hears the smaller count. Returns what the ranks' stop becomes. */
struct elastic_record_act elastic__watch_record(const struct elastic_inplace_run *r);

/* ---- The run's re-forms, resizes in place and recoveries counted
 * (decide.h) and told to elasticd with the progress. */

/* The counts go to elasticd with the next status on ctl (each function that
 * changes them copies them there). */

/* REFORM chose to launch again: one re-form of the cause in's, the launch
 * having ended at t_end; its recovery starts at the order (the ranks asked
 * to stop), or at the first loss reported, else at t_end. */
void elastic__recovery_reform(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			      const struct elastic_reform_in *in, double t_end);

/* The ranks were asked to stop (SIGUSR1) for a re-form or a growth. */
void elastic__recovery_stopping(struct elastic_recovery *rc);

/* A rank's end was reported while mpirun runs. */
void elastic__recovery_rank_end(struct elastic_recovery *rc,
				const struct elastic_rank_end *e);

/* A resize in place completed at its first commit (now); its event was at
 * since (0: not known, counted as 0 s). */
void elastic__recovery_resized(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			       enum elastic_resize_kind kind, double since);

/* The heal's event: the first loss reported since the last commit seen,
 * else that commit (the failure came after it). */
double elastic__recovery_heal_since(const struct elastic_recovery *rc);

/* While mpirun runs (every 0.1 s at most): rank 0's record pr, of a world
 * of world ranks; the first commit of a relaunch ends its recovery. */
void elastic__recovery_watch(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			     struct elastic_progress *pr, int world);

#endif
