/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/plan.h: the only policy caller (policy.h): a snapshot and
 * what each job holds -> a target per job. */
#ifndef ELASTICD_PLAN_H
#define ELASTICD_PLAN_H

#include <stdint.h>
#include <time.h>

#include "conf.h"
#include "model.h"
#include "scaling.h"
#include "site_conf.h"

struct ed_plan_params {
	enum elastic_policy_mode mode; /* PolicyMode */
	int min_gain_pct;	       /* ThroughputMinGain */
	int fair_floor_pct;	       /* FairShareFloor */
	int min_change;
	int64_t cooldown;
	/* 1: a job not resized since it started is held by the cool-down
	 * too (ELASTICD_TIMING=slow, for benches); 0: it grows to its share
	 * at once (starting is no churn). */
	int cooldown_from_start;
};

struct ed_target {
	uint32_t job;
	int cur, gpus; /* held now (as given), target */
	int nplace;
	struct elastic_policy_place *place; /* target placement */
	char explain[160];
};

struct ed_plan {
	int ntargets;
	struct ed_target *targets; /* in snapshot job order */
};

/* held[j] lists what job j holds now (leader + grants not being released),
 * last_resize[j] its last resize (s), scaling[j] its measured scaling (NULL
 * array or entry: none; the throughput mode reads it). */
int ed_plan_compute(const struct ed_snapshot *s,
		    const struct elastic_policy_place *const *held, const int *nheld,
		    const time_t *last_resize,
		    const struct elastic_scaling *const *scaling,
		    const struct ed_plan_params *p, time_t now, struct ed_plan *out,
		    elastic_error_t *err);
void ed_plan_free(struct ed_plan *p);
/* "priority", "fairshare", "fifo" or "throughput" (PolicyMode's value). */
const char *ed_plan_mode_name(enum elastic_policy_mode mode);

#endif
