/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/recovery_run.h: the run's re-forms, resizes in place and
 * recoveries counted (recovery.h) and told to elasticd with the progress. */
#ifndef ELASTIC_LAUNCHER_RECOVERY_RUN_H
#define ELASTIC_LAUNCHER_RECOVERY_RUN_H

#include "run.h"

/* REFORM chose to launch again: one re-form of its cause; its recovery
 * starts at the order (the ranks asked to stop), or at the first loss
 * reported, else at mpirun's end. */
void elastic__recovery_reform(struct run *r);

/* The ranks were asked to stop (SIGUSR1) for a re-form or a growth. */
void elastic__recovery_stopping(struct run *r);

/* A rank's end was reported while mpirun runs. */
void elastic__recovery_rank_end(struct run *r, const struct elastic_rank_end *e);

/* A resize in place completed at its first commit (now); its event was at
 * since (0: not known, counted as 0 s). */
void elastic__recovery_resized(struct run *r, enum elastic_resize_kind kind,
			       double since);

/* The heal's event: the first loss reported since the last commit seen,
 * else that commit (the failure came after it). */
double elastic__recovery_heal_since(const struct run *r);

/* While mpirun runs (every 0.1 s at most): rank 0's record; the first
 * commit of a relaunch ends its recovery. */
void elastic__recovery_watch(struct run *r);

#endif
