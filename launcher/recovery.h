/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/recovery.h: the job's re-forms, resizes in place and recovery
 * times, counted for elasticd's metrics (slurm_elastic_job_reforms_total,
 * ..._resizes_in_place_total, ..._recovery_seconds). The decisions and the
 * histogram are pure (recovery.c); recovery_run.c feeds them from the run. */
#ifndef ELASTIC_LAUNCHER_RECOVERY_H
#define ELASTIC_LAUNCHER_RECOVERY_H

#include "proto.h" /* struct elastic_recovery_counts, causes, kinds */

/* The counts and the clocks of the recovery under way (elastic__now()). */
struct elastic_recovery {
	struct elastic_recovery_counts n; /* what elasticd is told */
	double t_open;	 /* a relaunch's event, until its first commit (0: none) */
	double t_loss;	 /* a rank's end first reported as a loss (0: none) */
	double t_stop;	 /* the ranks were asked to stop (SIGUSR1; 0: not) */
	double t_commit; /* a new step last seen committed at the launch's world */
	unsigned long long step_seen; /* that step */
	double t_read;		      /* rank 0's record last read */
};

/* What a relaunch follows. */
struct elastic_reform_in {
	int planned;  /* elastic-run asked the ranks to stop (an order, SIGUSR1) */
	int released; /* GPUs of the launched set on grants ordered released */
	int gained;   /* the job's set holds GPUs the launch did not use */
	int replaced; /* elastic-run asked it for GPUs whose rank failed */
};

/* Unplanned: failure. Planned: shrink for releases alone, grow for gains
 * alone, replace for GPUs left with no rank (and nothing else), other for
 * the rest (a reshape, SIGUSR1). */
enum elastic_reform_cause elastic__recovery_cause(const struct elastic_reform_in *in);

/* A rank's end (report.h how, value) that tells of a loss: a signal, or an
 * exit status other than 0, a re-form's or a planned leave's. */
int elastic__recovery_is_loss(int how, int value);

/* One recovery of seconds (< 0 counts as 0) into the histogram. */
void elastic__recovery_observe(struct elastic_recovery_counts *n, double seconds);

/* A rank's loss reported at t: kept unless an earlier one is still news
 * (reported after the last commit seen). */
void elastic__recovery_loss(struct elastic_recovery *rc, double t);

/* When the event behind a recovery happened: the loss reported, if it
 * came after the last commit seen, else fallback. */
double elastic__recovery_since(const struct elastic_recovery *rc, double fallback);

/* A relaunch's recovery starts at t (one under way keeps its earlier
 * start: the relaunches it took are one recovery). */
void elastic__recovery_open(struct elastic_recovery *rc, double t);

/* The first step committed after it, seen at now: observed, closed.
 * 1 if one was open, else 0. */
int elastic__recovery_close(struct elastic_recovery *rc, double now);

/* GPUs whose rank failed while the others went on stay held with no rank
 * for a wait before the job re-forms onto them: the first wait
 * (--replace-after, default ELASTIC_REPLACE_AFTER_S), doubled for each such
 * re-form that came less than ELASTIC_REPLACE_FORGET_S after the one before
 * (a GPU that fails its ranks again and again costs less and less), up to
 * ELASTIC_REPLACE_MAX_S or the first wait if longer. A failure that long
 * after the last such re-form waits the first wait again: a rank lost once
 * a day does not pay for the days before. */
#define ELASTIC_REPLACE_AFTER_S	 2
#define ELASTIC_REPLACE_MAX_S	 300.0
#define ELASTIC_REPLACE_FORGET_S 600.0

struct elastic_replace {
	int streak;    /* such re-forms, each less than the forget time after
			  the one before */
	double t_last; /* when the last one was asked (0: none) */
};

/* The wait for GPUs left with no rank since t, the first wait being first
 * seconds (> 0). */
double elastic__replace_wait(const struct elastic_replace *rp, double t, double first);

/* A re-form onto them asked at t. */
void elastic__replace_asked(struct elastic_replace *rp, double t);

/* A launch that cannot read the job's GPUs from Slurm (slurmctld restarting,
 * or not answering within its MessageTimeout) asks again: first after
 * ELASTIC_SLURM_ASK_AFTER_S, the wait doubling up to ELASTIC_SLURM_ASK_MAX_S,
 * until waited + the next wait would pass bound (the launch bound,
 * --launch-timeout; 0: no bound). */
#define ELASTIC_SLURM_ASK_AFTER_S 1.0
#define ELASTIC_SLURM_ASK_MAX_S	  8.0

/* The wait before ask number tries + 1, after tries failed asks (>= 1) over
 * waited seconds; -1: give up (the bound is spent). */
double elastic__slurm_ask_wait(int tries, double waited, int bound);

#endif
