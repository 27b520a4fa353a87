/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/sets.h: what the controller's orders and the ranks' reports say
 * of the launched GPU set (pure reads of a struct elastic_sets_view, run.h's
 * elastic__sets_view). */
#ifndef ELASTIC_LAUNCHER_SETS_H
#define ELASTIC_LAUNCHER_SETS_H

#include <stdint.h>

#include "run.h"

/* ---- The run's sets change shape only through these. */

/* The set Slurm listed (seen) becomes the launched one: a launch, or the
 * smaller set after a heal. */
void elastic__sets_take_seen(struct run_sets *s);

/* A growth in place onto seen is planned: grown is seen. */
void elastic__sets_plan_grown(struct run_sets *s);

/* The joining ranks joined: launched is grown. */
void elastic__sets_take_grown(struct run_sets *s);

/* A planned shrink: after_leave is launched less the GPUs of the jobs
 * gone(job, arg) says are released. */
void elastic__sets_plan_after_leave(struct run_sets *s,
				    int (*gone)(unsigned long job, const void *arg),
				    const void *arg);

/* The leaving ranks left: launched is after_leave. */
void elastic__sets_take_after_leave(struct run_sets *s);

/* ---- What the orders and the reports say of the launched set. */

/* 1 if a and b have the same hosts, jobs and GPU counts. */
int elastic__same_set(const struct elastic_gpuset *a, const struct elastic_gpuset *b);

/* 1 if Slurm listed grant's job when set was built (its GPUs kept or
 * trimmed away). set is a struct elastic_gpuset (an orders callback). */
int elastic__grant_listed(uint32_t grant, const void *set);

/* 1 if a GPU kept in set belongs to grant (an orders callback). */
int elastic__grant_has_gpu(uint32_t grant, const void *set);

/* 1 if job is a grant ordered released; arg is the struct elastic_orders
 * (a gpuset callback). */
int elastic__released_job(unsigned long job, const void *arg);

/* GPUs of the launched set that belong to grants ordered released. */
int elastic__released_gpus(struct elastic_sets_view v);

/* 1 if a GPU of the launched set belongs to a grant ordered released: the
 * set changes for sure, no need to ask Slurm first. */
int elastic__uses_released(struct elastic_sets_view v);

/* GPUs of the launched set that hold no live rank: their rank ended (its
 * wrapper said where it ran) and the others healed in place around it.
 * released: only those of grants ordered released. */
int elastic__idle_gpus(struct elastic_sets_view v, int released);

/* GPUs of the launched set, not ordered released, whose rank failed while
 * the others went on (healed in place): held by the job with no rank. With
 * listed, only those listed has too (the same GPU of the same job). */
int elastic__failed_gpus(struct elastic_sets_view v, const struct elastic_gpuset *listed);

/* GPUs of the launched set, not ordered released, with no live rank whose
 * rank never said how it ended: lost with its node or its daemon, while the
 * others healed in place around it (the GPUs with no end report, less the
 * world's live ranks). With listed, at most those listed has too. */
int elastic__silent_gpus(struct elastic_sets_view v, const struct elastic_gpuset *listed);

/* GPUs of the launched set that hold a live rank. */
int elastic__live_gpus(struct elastic_sets_view v);

/* 1 if grants announced as started add GPUs the job's sizes let it use (by
 * the controller's word: its GRANT message names the grant's GPUs): the set
 * changes for sure, no need to ask Slurm first (a look-up costs 0.1-0.6 s of
 * scontrol/squeue on a busy node, all of it on the grow's critical path). */
int elastic__grants_add(struct elastic_sets_view v);

/* A host of the launched set whose daemon runs in a released grant's job
 * step while live ranks on GPUs not released stay there (the grant's end
 * would end them too), or -1. */
int elastic__daemon_released(struct elastic_sets_view v);

/* Hosts of launched other than self whose daemon's job (the host's job)
 * seen no longer lists while it lists other GPUs of the job there: the
 * grant that hosted the daemon ended, and the ranks there with it, on a
 * node that lives. The first such host and job into host (len bytes) and
 * *job; returns the GPUs seen keeps on such hosts (0: none). */
int elastic__daemon_gone(const struct elastic_gpuset *launched,
			 const struct elastic_gpuset *seen, const char *self, char *host,
			 size_t len, unsigned long *job);

#endif
