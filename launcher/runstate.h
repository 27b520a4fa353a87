/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/runstate.h: elastic-run's decisions after each mpirun (pure):
 * finished, stopped, or re-form again, or give up. elastic-run.c is the
 * state machine (launch, watch, re-form, finish) that acts on them. */
#ifndef ELASTIC_LAUNCHER_RUNSTATE_H
#define ELASTIC_LAUNCHER_RUNSTATE_H

#include "report.h"

enum elastic_run_next {
	ELASTIC_RUN_REFORM,   /* launch again on the GPUs the job holds now */
	ELASTIC_RUN_FINISHED, /* the program ended normally: exit 0 */
	ELASTIC_RUN_STOPPED,  /* elastic-run was told to stop (SIGTERM, SIGINT) */
	ELASTIC_RUN_NOSTART,  /* mpirun could not be started (status 127) */
	ELASTIC_RUN_STUCK,    /* too many failures in a row without progress */
	ELASTIC_RUN_TOO_MANY, /* --max-relaunch reached */
	ELASTIC_RUN_FAILED,   /* the program failed on an error of its own */
};

/* A launch ended with mpirun status mstatus and the ranks' reports in sum;
 * sig is the signal elastic-run got (0: none); healed the size of the world
 * the survivors healed in place to during the launch (0: none). Returns
 * FINISHED (some ranks ended the program normally, and none failed or every
 * rank of the healed world ended it normally; none asked to re-form),
 * STOPPED, NOSTART, FAILED (a rank failed on an error it wrote of its
 * own, a Python exception, while other ranks ended the program normally:
 * the training is over, a relaunch would only repeat its end), or REFORM
 * (look at the GPUs, then ask elastic__run_retry and elastic__run_failures).
 * *status gets the exit status of the run if it ends here. */
enum elastic_run_next elastic__run_ended(const struct elastic_report_summary *sum,
					 int mstatus, int sig, int healed, int *status);

/* Whether to launch again: progress is whether the last launch moved the
 * job on (ranks asked to re-form, the GPUs changed, or elastic-run asked
 * for the re-form); planned whether elastic-run asked for it on the
 * controller's order. *stuck counts the failures in a row without progress
 * (reset by progress); *relaunches counts the relaunches nobody planned
 * (failures, lost nodes): a job resized by the controller for days is never
 * given up for that. Returns REFORM, STUCK (*stuck > max_stuck) or TOO_MANY
 * (*relaunches > max_relaunch). */
enum elastic_run_next elastic__run_retry(int progress, int planned, int *stuck,
					 int *relaunches, int max_stuck,
					 int max_relaunch);

/* Failures of the program's own: a launch in which a rank failed with an
 * error status (failed), and whether rank 0 committed a step during it
 * (committed). *failures counts such launches since the last committed
 * step. Returns FAILED when there are more than max_failures of them (the
 * job ends: with 1, the first failure is retried once, and a retry that
 * commits no step before failing ends it), else REFORM. */
enum elastic_run_next elastic__run_failures(int failed, int committed, int *failures,
					    int max_failures);

/* The launch bound: how long a launch may run before rank 0 commits its
 * first step, in seconds (0: none). configured is --launch-timeout (0:
 * off); slowest the longest a launch of this run took to its first commit
 * (0: none did yet). A job that has shown how long it takes gets
 * ELASTIC_LAUNCH_BOUND_FACTOR times that, at least ELASTIC_LAUNCH_BOUND_MIN_S
 * and at most configured: a C re-form that commits in 0.3 s is bounded at
 * 30 s, a PyTorch job whose first launch took 40 s to import and load at
 * 120 s. */
#define ELASTIC_LAUNCH_BOUND_FACTOR 3.0
#define ELASTIC_LAUNCH_BOUND_MIN_S  30.0
double elastic__launch_bound(double configured, double slowest);

#endif
