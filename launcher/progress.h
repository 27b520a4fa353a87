/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/progress.h: rank 0's progress record, read and forwarded. */
#ifndef ELASTIC_LAUNCHER_PROGRESS_H
#define ELASTIC_LAUNCHER_PROGRESS_H

#include <time.h>

#include "ctlclient.h"

/* Rank 0's progress record: where it is, and what was last read of it and
 * forwarded to elasticd. */
struct elastic_progress {
	const char *path;      /* the file (ELASTIC_RUN_PROGRESS) */
	struct timespec since; /* the current mpirun's start: a record written
				* before is an earlier launch's */
	double t_read, t_last, rate;
	unsigned long long step_last, seen_last;
	int size_last;	      /* the world that committed step_last (0: unknown) */
	int have_last;	      /* step_last, seen_last and t_last are a record's */
	double t_record_read; /* last read for a resize in place */
};

/* Rank 0's progress record "STEP SAMPLES TIME SIZE" (libelastic rewrites it
 * in the file named by ELASTIC_RUN_PROGRESS at most once a second, at once
 * when the world size changed, and at every commit for a second after a
 * planned shrink in place), if written by the current launch:
 * 0, or -1 (none yet, or an older launch's). *size is 0 in a record of a
 * libelastic without the field. */
int elastic__progress_read(const struct elastic_progress *p, unsigned long long *step,
			   unsigned long long *seen, double *t, int *size);

/* Has rank 0 committed a step in the current launch? (Its record is
 * written at once at the launch's first commit.) 1 or 0. */
int elastic__progress_committed(const struct elastic_progress *p);

/* The job's progress: when the committed step moved, tell elasticd (ctl)
 * the step and the samples/s since the last record (elastic-ctl status).
 * Read at most once a second. */
void elastic__progress_forward(struct elastic_progress *p, struct elastic_ctlclient *ctl);

/* Can the ranks of the current launch (its mpirun started at t0, of
 * elastic__now()) take SIGUSR1? Only once libelastic installed its handler
 * in every rank: before, the signal's default action ends them. A step
 * committed since the launch (rank 0's progress record is newer) shows it;
 * after 10 s without one the ranks get it anyway (a launch stuck in its
 * start-up). */
int elastic__ranks_ready(const struct elastic_progress *p, double t0);

#endif
