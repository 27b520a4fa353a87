/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/recovery_run.h: the run's re-forms, resizes in place and
 * recoveries counted (recovery.h) and told to elasticd with the progress. */
#ifndef ELASTIC_LAUNCHER_RECOVERY_RUN_H
#define ELASTIC_LAUNCHER_RECOVERY_RUN_H

#include "ctlclient.h"
#include "progress.h"
#include "recovery.h"
#include "report.h"

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
