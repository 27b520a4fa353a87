/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/inplace_run.h: the resizes in place of a running launch, acting
 * on inplace.h's plans. */
#ifndef ELASTIC_LAUNCHER_INPLACE_RUN_H
#define ELASTIC_LAUNCHER_INPLACE_RUN_H

#include "run.h"

/* A new launch of world ranks: no resize under way; empty leave and join
 * files (named in ELASTIC_RUN_LEAVE, ELASTIC_RUN_JOIN) on runtimes that can
 * use them. */
void elastic__inplace_begin(struct elastic_inplace *ip, const struct run_job *job,
			    const struct run_files *file, int world);

/* The larger set seen (r->sets.seen) on a runtime that grows in place: when
 * it only adds whole nodes new to the launch, write the join list and the
 * grown map: at the next step boundary the ranks start the new ones and
 * merge with them, no rank restarts. 1 if planned; 0: the ranks re-form. */
int elastic__plan_grow(struct run *r);

/* Slurm's list of the job's GPUs now, then the growth plan on it; nothing on
 * a runtime that cannot grow in place. */
void elastic__grow_from_slurm(struct run *r);

/* A release of GPUs the ranks use, on a runtime that survives a lost
 * daemon: name those GPUs in the leave file, so that their ranks leave at
 * the next step boundary and the others go on (libelastic's planned shrink
 * in place), when what is left is a size the job allows. Otherwise the
 * file stays empty: every rank stops and the job re-forms. GPUs whose rank
 * was lost and healed around count as no rank. Returns 1 when the ranks
 * must be asked to stop, 0 when the released GPUs hold no live rank (the
 * release is acknowledged at once). */
int elastic__plan_leave(struct run *r);

/* Rank 0's record of the world size (read at most every 0.1 s): the
 * leaving ranks left, the joining ones joined, or, with a runtime that
 * survives a lost daemon, ranks were lost and the survivors healed in
 * place. The launch goes on; after a heal its GPU set becomes what Slurm
 * says the job holds now (a cancelled grant, a node gone), and elasticd
 * hears the smaller count. */
void elastic__watch_record(struct run *r);

#endif
