/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/progress.h: rank 0's progress record, read and forwarded. */
#ifndef ELASTIC_LAUNCHER_PROGRESS_H
#define ELASTIC_LAUNCHER_PROGRESS_H

#include "run.h"

/* Rank 0's progress record "STEP SAMPLES TIME SIZE" (libelastic rewrites it
 * in the file named by ELASTIC_RUN_PROGRESS at most once a second, at once
 * when the world size changed, and at every commit for a second after a
 * planned shrink in place), if written by the current launch:
 * 0, or -1 (none yet, or an older launch's). *size is 0 in a record of a
 * libelastic without the field. */
int elastic__progress_read(const struct run *r, unsigned long long *step,
			   unsigned long long *seen, double *t, int *size);

/* Has rank 0 committed a step in the current launch? (Its record is
 * written at once at the launch's first commit.) 1 or 0. */
int elastic__progress_committed(const struct run *r);

/* The job's progress: when the committed step moved, tell elasticd the step
 * and the samples/s since the last record (elastic-ctl status). Read at
 * most once a second. */
void elastic__progress_forward(struct run *r);

/* Can the ranks of the current launch take SIGUSR1? Only once libelastic
 * installed its handler in every rank: before, the signal's default action
 * ends them. A step committed since the launch (rank 0's progress record
 * is newer) shows it; after 10 s without one the ranks get it anyway (a
 * launch stuck in its start-up). */
int elastic__ranks_ready(const struct run *r);

#endif
