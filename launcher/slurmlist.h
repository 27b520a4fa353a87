/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/slurmlist.h: the GPUs of the elastic job as Slurm lists them. */
#ifndef ELASTIC_LAUNCHER_SLURMLIST_H
#define ELASTIC_LAUNCHER_SLURMLIST_H

#include "run.h"

/* The job's GPUs now (its allocation, then its running grant jobs in job id
 * order, less grants ordered released, nodes held out as lost (decide.h) and
 * grants in which a launch's step never began),
 * cut to what it may use (--elastic-gpus MAX, sizes), into set: 0, or -1
 * with err. Grants announced as started that Slurm no longer lists leave
 * the book of orders. */
int elastic__slurm_gpus(struct run_job *job, const struct run_sets *sets,
			struct elastic_gpuset *set, elastic_error_t *err);

/* The same with no node held out and nothing cut: every GPU Slurm lists
 * for the job (what elastic__lost_look compares with). */
int elastic__slurm_gpus_all(struct run_job *job, struct elastic_gpuset *set,
			    elastic_error_t *err);

/* The node elastic-run (and mpirun) runs on: Slurm's name for it. */
const char *elastic__self_host(void);

#endif
