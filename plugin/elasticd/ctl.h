/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctl.h: the controller: per tick, observe (snapshot, job
 * table, channel), decide (reconcile.c), act (grants, two-phase shrink,
 * orders to jobs, clean up); the channel's handlers. */
#ifndef ELASTICD_CTL_H
#define ELASTICD_CTL_H

#include <stdint.h>
#include <stdio.h>

#include "channel.h"
#include "model.h"
#include "plan.h"

struct ed_ctl_conf {
	char grant_prefix[ED_NAME_MAX];
	char grant_qos[ED_NAME_MAX];
	struct ed_plan_params plan;
	int dry_run; /* compute and log, change nothing */
};

struct ed_ctl *ed_ctl_create(const struct ed_ctl_conf *conf, ed_channel_t *ch);
void ed_ctl_destroy(struct ed_ctl *ctl);
/* New policy parameters (a configuration re-read), used from the next tick. */
void ed_ctl_set_plan(struct ed_ctl *ctl, const struct ed_plan_params *plan);
/* One pass: observe, decide, act. */
void ed_ctl_tick(struct ed_ctl *ctl);
/* A wait on slurmctld of s seconds, cpu_s of them on elasticd's CPU and
 * runq_s waiting for a CPU (what: "a tick", ...; calls0: the Slurm calls
 * before it, ph0 the tick's phase times before it or NULL):
 * one of ED_SLOW_TICK_S or more is logged with the calls it waited on,
 * the first of a minute at once, the others as one line a minute. */
struct ed_calls;
void ed_ctl_slow(struct ed_ctl *ctl, const char *what, double s, double cpu_s,
		 double runq_s, const double *ph0, const struct ed_calls *calls0);
/* 1 when a handler asked for a tick (a job registered): the main loop runs
 * one after the poll that handled it. */
int ed_ctl_tick_wanted(const struct ed_ctl *ctl);
/* The channel's handlers (struct ed_channel_handlers), arg the ed_ctl. */
extern const struct ed_channel_handlers ed_ctl_handlers;
/* The earliest release deadline (ms since the epoch), 0 if none: the main
 * loop runs a tick then, so forced releases are not a tick late. */
uint64_t ed_ctl_next_deadline(const struct ed_ctl *ctl);
/* 1 while a change is under way (a release not done, a job growing or
 * shrinking): the main loop then looks for slurmctld's events more often. */
int ed_ctl_busy(const struct ed_ctl *ctl);
/* The OpenMetrics text of the controller's state (ed_metrics_render_fn, arg
 * the ed_ctl). */
void ed_ctl_metrics(void *ctl, FILE *f);
/* What administrators paused or drained, from the state file path (NULL:
 * not kept), which each change rewrites from then on (not in a dry run). A
 * file that cannot be read or is not elasticd's pauses the whole cluster,
 * said in the log: nothing moves until an administrator looks. */
void ed_ctl_admin_restore(struct ed_ctl *ctl, const char *path);
/* The controller role (lease.h): 1 acting, 0 standing by (the metrics
 * say which). Becoming active after standing by, it reads again what
 * administrators paused or drained and the jobs' measured scaling (the
 * active elasticd before it wrote them) and asks for a tick. */
void ed_ctl_set_active(struct ed_ctl *ctl, int active);
/* Write the jobs' measured scaling beside the state file if it changed
 * (the tick does it at most once a minute; the end of elasticd too). */
void ed_ctl_scaling_save(struct ed_ctl *ctl);

#endif
