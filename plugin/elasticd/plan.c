/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/plan.c: elasticd's only policy caller: turns a snapshot into targets.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "policy.h"

/* Job i of snapshot s as the policy sees it: its bounds and weights from
 * Slurm, what it holds (held, not copied), when it last changed size. */
static struct elastic_policy_job _policy_job(const struct ed_snapshot *s, int i,
					     const struct elastic_policy_place *held,
					     int nheld, time_t last_resize,
					     const struct elastic_scaling *scaling,
					     const struct ed_plan_params *p)
{
	const struct ed_job *j = &s->jobs[i];

	return (struct elastic_policy_job){
		.id = j->id,
		.min = j->min,
		.max = j->max,
		.sizes = j->sizes_kind,
		.size_list = j->sizes,
		.nsize_list = j->nsizes,
		.priority = j->priority,
		.weight = (uint32_t)j->weight,
		.submit_time = j->submit,
		/* A job whose GPUs have not changed since it started is at
		 * its start-up size (its MIN): growing to its share is no
		 * churn, so the cool-down does not hold it (0: never). */
		.last_resize =
			!p->cooldown_from_start && j->running && last_resize == j->start
				? 0
				: last_resize,
		.place = held,
		.nplace = nheld,
		.scaling = scaling,
	};
}

/* The policy's result as targets: the same places, its explanation. */
static int _targets(const struct elastic_policy_result *res, struct ed_plan *out)
{
	out->targets = calloc((size_t)res->njobs + 1, sizeof(*out->targets));
	if (!out->targets)
		return -1;
	for (int i = 0; i < res->njobs; i++) {
		const struct elastic_policy_target *t = &res->targets[i];
		struct ed_target *o = &out->targets[i];
		o->job = t->id;
		o->cur = t->cur;
		o->gpus = t->gpus;
		o->place = calloc((size_t)t->nplace + 1, sizeof(*o->place));
		out->ntargets = i + 1;
		if (!o->place)
			return -1;
		memcpy(o->place, t->place, (size_t)t->nplace * sizeof(*o->place));
		o->nplace = t->nplace;
		elastic_policy_explain(res, i, o->explain, sizeof(o->explain));
	}
	return 0;
}

/* What the policy reads of the nodes, made to hold together with what the
 * jobs hold there (held: allocations, grants running or pending, not those
 * being released), so that a tick decides instead of being refused as
 * over-committed. A pending grant stays held a tick more without room
 * (reconcile.c: a snapshot can read a node full between its two reads): on
 * a node that takes no new work (down, drained, not responding), whose
 * snapshot counts only the grants running there, the node offers at least
 * what is held; elsewhere the GPUs read busy beyond the node's room make
 * room for it. Returns -1 when out of memory. */
static int _hold_together(const struct ed_snapshot *s,
			  const struct elastic_policy_place *const *held,
			  const int *nheld, int *gpus, int *busy)
{
	int *on = calloc((size_t)s->nnodes + 1, sizeof(*on));

	if (!on)
		return -1;
	for (int i = 0; i < s->njobs; i++)
		for (int k = 0; k < nheld[i]; k++)
			if (held[i][k].node >= 0 && held[i][k].node < s->nnodes)
				on[held[i][k].node] += held[i][k].gpus;
	for (int k = 0; k < s->nnodes; k++) {
		if (s->nodes[k].unusable && busy[k] + on[k] > gpus[k])
			gpus[k] = busy[k] + on[k];
		if (busy[k] + on[k] > gpus[k])
			busy[k] = gpus[k] > on[k] ? gpus[k] - on[k] : 0;
	}
	free(on);
	return 0;
}

int ed_plan_compute(const struct ed_snapshot *s,
		    const struct elastic_policy_place *const *held, const int *nheld,
		    const time_t *last_resize,
		    const struct elastic_scaling *const *scaling,
		    const struct ed_plan_params *p, time_t now, struct ed_plan *out,
		    elastic_error_t *err)
{
	struct elastic_policy_input in = {
		.mode = p->mode,
		.now = now,
		.min_change = p->min_change,
		.cooldown = p->cooldown,
		.min_gain = p->min_gain_pct / 100.0,
		.fair_floor = p->fair_floor_pct / 100.0,
		/* Stable allocations (policy.h): held[] is what each job
		 * holds now (its allocation, grants running or pending, not
		 * those being released), so a job within one step of its
		 * share keeps it. */
		.fresh_split = 0,
		.nnodes = s->nnodes,
		.njobs = s->njobs,
	};
	struct elastic_policy_result *res = NULL;
	struct elastic_policy_job *jobs = calloc((size_t)s->njobs + 1, sizeof(*jobs));
	int *gpus = calloc((size_t)s->nnodes + 1, sizeof(*gpus));
	int *busy = calloc((size_t)s->nnodes + 1, sizeof(*busy));
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!jobs || !gpus || !busy) {
		elastic__errorf(err, "out of memory");
		goto done;
	}
	if (s->nnodes == 0) {
		elastic__errorf(err, "slurmctld reports no nodes");
		goto done;
	}
	for (int k = 0; k < s->nnodes; k++) {
		gpus[k] = s->nodes[k].gpus;
		busy[k] = s->nodes[k].busy;
	}
	if (_hold_together(s, held, nheld, gpus, busy) < 0) {
		elastic__errorf(err, "out of memory");
		goto done;
	}
	for (int i = 0; i < s->njobs; i++)
		jobs[i] = _policy_job(s, i, held[i], nheld[i], last_resize[i],
				      scaling ? scaling[i] : NULL, p);
	in.node_gpus = gpus;
	in.node_busy = busy;
	in.jobs = jobs;
	/* One workspace for the daemon's life: elasticd decides from one
	 * thread, every tick (policy.h). Without one, the plain call. */
	static struct elastic_policy_ws *ws;
	if (!ws)
		ws = elastic_policy_ws_create();
	if ((ws ? elastic_policy_decide_ws(&in, ws, &res, err)
		: elastic_policy_decide(&in, &res, err)) < 0)
		goto done;
	if (_targets(res, out) < 0) {
		ed_plan_free(out);
		elastic__errorf(err, "out of memory");
		goto done;
	}
	rc = 0;
done:
	elastic_policy_result_destroy(res);
	free(jobs);
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
