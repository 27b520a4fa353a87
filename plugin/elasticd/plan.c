/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/plan.c: elasticd's only policy caller: turns a snapshot into targets.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "policy.h"

int ed_plan_compute(const struct ed_snapshot *s, const struct ed_place *const *held,
		    const int *nheld, const time_t *last_resize,
		    const struct elastic_scaling *const *scaling,
		    const struct ed_plan_params *p, time_t now, struct ed_plan *out,
		    elastic_error_t *err)
{
	struct elastic_policy_input in;
	struct elastic_policy_result *res = NULL;
	struct elastic_policy_job *jobs;
	struct elastic_policy_place *places;
	int *gpus, *busy, nplaces = 0, rc = -1;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < s->njobs; i++)
		nplaces += nheld[i];
	jobs = calloc((size_t)s->njobs + 1, sizeof(*jobs));
	places = calloc((size_t)nplaces + 1, sizeof(*places));
	gpus = calloc((size_t)s->nnodes + 1, sizeof(*gpus));
	busy = calloc((size_t)s->nnodes + 1, sizeof(*busy));
	if (!jobs || !places || !gpus || !busy) {
		elastic__errorf(err, "out of memory");
		goto done;
	}
	for (int k = 0; k < s->nnodes; k++) {
		gpus[k] = s->nodes[k].gpus;
		busy[k] = s->nodes[k].busy;
	}
	nplaces = 0;
	for (int i = 0; i < s->njobs; i++) {
		const struct ed_job *j = &s->jobs[i];
		struct elastic_policy_job *pj = &jobs[i];
		pj->id = j->id;
		pj->min = j->min;
		pj->max = j->max;
		pj->sizes = j->sizes_kind;
		pj->size_list = j->sizes;
		pj->nsize_list = j->nsizes;
		pj->priority = j->priority;
		pj->weight = (uint32_t)j->weight;
		pj->submit_time = j->submit;
		/* A job whose GPUs have not changed since it started is at
		 * its start-up size (its MIN): growing to its share is no
		 * churn, so the cool-down does not hold it (0: never). */
		pj->last_resize = !p->cooldown_from_start && j->running &&
						  last_resize[i] == j->start
					  ? 0
					  : last_resize[i];
		pj->place = &places[nplaces];
		for (int k = 0; k < nheld[i]; k++) {
			places[nplaces].node = held[i][k].node;
			places[nplaces].gpus = held[i][k].gpus;
			places[nplaces].pinned = held[i][k].pinned;
			nplaces++;
		}
		pj->nplace = nheld[i];
		pj->scaling = scaling ? scaling[i] : NULL;
	}
	memset(&in, 0, sizeof(in));
	in.mode = p->mode;
	in.now = now;
	in.min_change = p->min_change;
	in.min_change_pct = 0;
	in.cooldown = p->cooldown;
	in.min_gain = p->min_gain_pct / 100.0;
	in.fair_floor = p->fair_floor_pct / 100.0;
	/* Stable allocations (policy.h): held[] is what each job holds now
	 * (its allocation, grants running or pending, not those being
	 * released), so a job within one step of its share keeps it. */
	in.fresh_split = 0;
	in.nnodes = s->nnodes;
	in.node_gpus = gpus;
	in.node_busy = busy;
	in.njobs = s->njobs;
	in.jobs = jobs;
	if (s->nnodes == 0) {
		elastic__errorf(err, "slurmctld reports no nodes");
		goto done;
	}
	if (elastic_policy_decide(&in, &res, err) < 0)
		goto done;
	out->targets = calloc((size_t)res->njobs + 1, sizeof(*out->targets));
	if (!out->targets) {
		elastic__errorf(err, "out of memory");
		goto done;
	}
	for (int i = 0; i < res->njobs; i++) {
		const struct elastic_policy_target *t = &res->targets[i];
		struct ed_target *o = &out->targets[i];
		o->job = t->id;
		o->cur = t->cur;
		o->gpus = t->gpus;
		o->place = calloc((size_t)t->nplace + 1, sizeof(*o->place));
		if (!o->place) {
			out->ntargets = i;
			ed_plan_free(out);
			elastic__errorf(err, "out of memory");
			goto done;
		}
		for (int k = 0; k < t->nplace; k++) {
			o->place[k].node = t->place[k].node;
			o->place[k].gpus = t->place[k].gpus;
			o->place[k].pinned = t->place[k].pinned;
		}
		o->nplace = t->nplace;
		elastic_policy_explain(res, i, o->explain, sizeof(o->explain));
	}
	out->ntargets = res->njobs;
	rc = 0;
done:
	elastic_policy_result_destroy(res);
	free(jobs);
	free(places);
	free(gpus);
	free(busy);
	return rc;
}

const char *ed_plan_mode_name(enum elastic_policy_mode mode)
{
	const char *name = elastic_policy_mode_name(mode);
	return name ? name : "priority";
}

void ed_plan_free(struct ed_plan *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->ntargets; i++)
		free(p->targets[i].place);
	free(p->targets);
	memset(p, 0, sizeof(*p));
}
