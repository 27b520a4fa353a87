/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/run.h: one run of elastic-run (what the user asked, the job, the
 * run's files, its GPU sets, the launch under way, the resizes in place) and
 * the states elastic-run.c drives it through. */
#ifndef ELASTIC_LAUNCHER_RUN_H
#define ELASTIC_LAUNCHER_RUN_H

#include <limits.h>
#include <time.h>

#include "ctlclient.h"
#include "gpuset.h"
#include "decide.h"
#include "orders.h"
#include "report.h"

#define EXIT_REFORM  ELASTIC_EXIT_REFORM /* common/contract.h */
#define EXIT_USAGE   ELASTIC_EXIT_USAGE
#define EXIT_NOALLOC ELASTIC_EXIT_NOALLOC

#define ELASTIC_RUN_MAX_MPIRUN_ARGS 32

/* What the user asked (options.c). */
struct run_opts {
	const char *mpirun, *extra[ELASTIC_RUN_MAX_MPIRUN_ARGS];
	int nextra, max_relaunch, max_stuck, dry;
	int max_failures;   /* failures of the program's own with no step between */
	int grant_wait;	    /* s a launch waits for grants the controller is starting */
	int launch_timeout; /* s a launch may take to its first commit (0: no bound) */
	int replace_after;  /* s GPUs whose rank failed wait before a re-form onto them */
	char **prog;	    /* the program and its arguments, NULL-terminated */
};

/* The job, its controller and what its MPI runtime can do in place. */
struct run_job {
	unsigned long jobid;
	struct elastic_request req; /* MIN, MAX, sizes (ELASTIC_* variables) */
	int have_ctl;		    /* ELASTIC_CONTROLLER given: ctl and orders in use */
	struct elastic_ctlclient ctl;
	struct elastic_orders orders;
	/* the MPI runtime survives a lost daemon (Open MPI >= 6: PRRTE 5): ranks
	 * lost with a node or a cancelled grant are healed in place by the
	 * survivors, with no relaunch */
	int in_place;
	/* the MPI runtime starts ranks on a new node inside a running mpirun
	 * and merges them under fault tolerance (Open MPI 5.0.x): a grant on a
	 * node new to the launch is taken in place (libelastic's resize.c) */
	int grow_in_place;
};

/* The run's files, all in dir. */
struct run_files {
	char self[PATH_MAX], dir[PATH_MAX], hostfile[PATH_MAX + 16];
	char agent[PATH_MAX + 32], progress[PATH_MAX + 32], leave[PATH_MAX + 32];
	char join[PATH_MAX + 32], mapfile[PATH_MAX + 32], ask[PATH_MAX + 32];
};

/* What the queries of the launched set read (sets.h): the set, the
 * controller's orders, the ranks' reports of their end, the job's request,
 * the ranks of the world now. */
struct elastic_sets_view {
	const struct elastic_gpuset *launched;
	const struct elastic_orders *orders;
	const struct elastic_report *rep;
	const struct elastic_request *req;
	int world;
};

/* The job's GPU sets, each named for what it is; they change shape only
 * through sets.h's operations. */
struct run_sets {
	struct elastic_gpuset launched;	   /* the ranks run on it */
	struct elastic_gpuset seen;	   /* Slurm's list at the last look-up */
	int seen_fresh;			   /* seen was looked up after mpirun ended */
	double seen_failed;		   /* when that look-up began, if it failed */
	elastic_error_t seen_err;	   /* and why */
	struct elastic_gpuset grown;	   /* launched and the nodes joining in place */
	struct elastic_gpuset after_leave; /* launched less the leaving ranks' GPUs */
	struct elastic_lost lost;	   /* nodes held out as lost (decide.h) */
	double lost_look;		   /* when Slurm is next asked about them */
	double lost_mark;		   /* when the last mpirun end marked some */
	/* grants in which a launch's step never began: left out of the
	 * run's launches (and given back to the controller) */
	int nstepless;
	unsigned long stepless[32];
};

/* The run's first failure of the program's own, said again at its end. */
struct run_failure {
	int launch;			     /* the launch it ended (0: none yet) */
	char cause[200];		     /* "rank R on HOST GPU G: exit status N" */
	char text[ELASTIC_REPORT_ERROR_MAX]; /* what the rank wrote ("": none) */
};

/* The launch under way and how the last one ended. */
struct run_launch {
	int launches, stuck, status, mstatus;
	int unplanned; /* relaunches no controller order asked for */
	int failures;  /* launches failed on the program's own error, no step between */
	int fail_seen; /* a rank of this launch failed on its own error... */
	int fail_committed;	  /* ...after rank 0 committed a step in it (1) or not */
	struct run_failure first; /* the run's first such failure */
	int say_first;		  /* the run gives up on failures: say it at the end */
	struct elastic_watch_clock clock; /* its bounds (decide.h) */
	char last_cause[200];		  /* the last launch's failure, as first.cause */
	int blank;			  /* launches in a row that started no rank */
	int retried;		  /* launches that repeated one that started no rank */
	struct elastic_stop stop; /* the ranks asked to stop (decide.h) */
	double t_failed; /* since when GPUs of failed ranks are held with no rank (0: none) */
	struct elastic_replace replace; /* re-forms onto such GPUs (decide.h) */
	int replacing;			/* the re-form asked is one of them */
	double t_warm; /* since when a due re-form waits for zygotes (0: none) */
	unsigned long long asks; /* requests (SIGUSR1) sent to the ranks, all launches */
	double t0, t_end;
	struct elastic_report rep; /* the ranks' reports of their end */
	struct elastic_report_summary sum;
};

/* One run of the job. main() drives it through the states below. */
struct run {
	struct run_opts opt;
	struct run_job job;
	struct run_files file;
	struct run_sets sets;
	struct run_launch launch;
	struct elastic_inplace ip;
	struct elastic_progress progress; /* rank 0's record (report.h) */
	struct elastic_recovery recov;	  /* re-forms, resizes in place, recoveries */
};

/* What the launched set's queries (sets.h) read of the parts of a run,
 * with world ranks in its world now. */
static inline struct elastic_sets_view
elastic__sets_view_of(const struct run_sets *sets, const struct run_job *job,
		      const struct elastic_report *rep, int world)
{
	return (struct elastic_sets_view){
		.launched = &sets->launched,
		.orders = &job->orders,
		.rep = rep,
		.req = &job->req,
		.world = world,
	};
}

/* What the launched set's queries (sets.h) read of the run, now. */
static inline struct elastic_sets_view elastic__sets_view(const struct run *r)
{
	return elastic__sets_view_of(&r->sets, &r->job, &r->launch.rep, r->ip.world);
}

enum run_state { RUN_LAUNCH, RUN_WATCH, RUN_REFORM, RUN_FINISH };

/* Is the launch being made (from REFORM on) the one again after a launch
 * that started no rank? The first such launch in a row is tried again on
 * the same GPUs (elastic-run.c); the retry forms the same world. */
static inline int elastic__launch_again(const struct run_launch *l)
{
	return l->blank == 1;
}

/* The world the current launch forms: 0 the first, N re-form N (a launch
 * again after one that started no rank keeps that one's number). */
static inline int elastic__world_no(const struct run_launch *l)
{
	return l->launches - l->retried;
}

#endif
