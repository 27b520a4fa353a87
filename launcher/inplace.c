/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/inplace.c: the plans of elastic-run's resizes in place (pure). */
#include "config.h"

#include <string.h>

#include "inplace.h"

static const struct elastic_host *_host_named(const struct elastic_gpuset *set,
					      const char *name)
{
	for (int h = 0; h < set->nhosts; h++)
		if (!strcmp(set->host[h].name, name))
			return &set->host[h];
	return NULL;
}

int elastic__inplace_host_known(const struct elastic_gpuset *launched, const char *name)
{
	return _host_named(launched, name) != NULL;
}

/* Every host of launched in seen with the same GPUs of the same jobs? */
static int _hosts_kept(const struct elastic_gpuset *launched,
		       const struct elastic_gpuset *seen)
{
	for (int h = 0; h < launched->nhosts; h++) {
		const struct elastic_host *a = &launched->host[h],
					  *b = _host_named(seen, a->name);
		if (!b || b->ngpus != a->ngpus ||
		    memcmp(a->gpu, b->gpu, sizeof(int) * (size_t)a->ngpus) ||
		    memcmp(a->gpu_job, b->gpu_job,
			   sizeof(a->gpu_job[0]) * (size_t)a->ngpus))
			return 0;
	}
	return 1;
}

struct elastic_grow_plan elastic__inplace_plan_grow(const struct elastic_grow_in *in)
{
	struct elastic_grow_plan p = {ELASTIC_GROW_NONE, 0, NULL};
	const struct elastic_gpuset *launched = in->launched, *seen = in->seen;

	if (!in->grow_in_place || in->state == ELASTIC_INPLACE_JOINING ||
	    in->state == ELASTIC_INPLACE_LEAVING || in->released ||
	    in->world != launched->total)
		return p;
	if (!_hosts_kept(launched, seen))
		p.why = "the new GPUs are on a node the job runs on";
	for (int h = 0; h < seen->nhosts; h++)
		if (!_host_named(launched, seen->host[h].name))
			p.add += seen->host[h].ngpus;
	if (!p.why && (p.add == 0 || seen->total != launched->total + p.add))
		p.why = "the set does not only grow";
	for (char *const *a = in->prog; *a && !p.why; a++)
		if (strchr(*a, '\n'))
			p.why = "an argument of the program has a newline";
	p.what = p.why ? ELASTIC_GROW_REFORM : ELASTIC_GROW_JOIN;
	if (p.why)
		p.add = 0;
	return p;
}

/* The controller starts a grant in place of a larger one it had to release
 * (re-shape): one re-form onto both is better than a shrink now. A target
 * not below the set is an older grow's, not this shrink's. */
static int _reshape_coming(const struct elastic_leave_in *in, int n)
{
	return in->target && (int)in->target < in->total &&
	       in->total - n < (int)in->target;
}

struct elastic_leave_plan elastic__inplace_plan_leave(const struct elastic_leave_in *in)
{
	struct elastic_leave_plan p = {ELASTIC_LEAVE_REFORM, 0};
	int n = in->released;
	int leaving = in->state == ELASTIC_INPLACE_LEAVING;

	if (in->in_place && !leaving && in->daemon_host >= 0) {
		p.what = ELASTIC_LEAVE_REFORM_DAEMON;
		return p;
	}
	if (!in->in_place || leaving || in->world != in->live || in->grants_add ||
	    n <= 0 || n >= in->total || _reshape_coming(in, n) ||
	    (int)elastic_sizes_fit(&in->req->sizes, in->req->min_gpus, in->req->max_gpus,
				   in->total - n) != in->total - n)
		return p;
	if (in->idle_released == n) {
		p.what = ELASTIC_LEAVE_ACK;
		return p;
	}
	/* an idle GPU named in the leave file has no rank to leave */
	p.what = ELASTIC_LEAVE_IN_PLACE;
	p.leaving = n - in->idle_released;
	return p;
}

enum elastic_inplace_state elastic__inplace_next(enum elastic_inplace_state state,
						 enum elastic_inplace_event event,
						 int heal_open)
{
	switch (event) {
	case ELASTIC_INPLACE_LAUNCHED:
		return ELASTIC_INPLACE_IDLE;
	case ELASTIC_INPLACE_JOIN_PLANNED:
		return ELASTIC_INPLACE_JOINING;
	case ELASTIC_INPLACE_LEAVE_PLANNED:
		return ELASTIC_INPLACE_LEAVING;
	case ELASTIC_INPLACE_JOINED:
	case ELASTIC_INPLACE_RELEASED:
		return heal_open ? ELASTIC_INPLACE_HEALING : ELASTIC_INPLACE_IDLE;
	case ELASTIC_INPLACE_HEALED:
		return state == ELASTIC_INPLACE_IDLE ? ELASTIC_INPLACE_HEALING : state;
	case ELASTIC_INPLACE_HEAL_OVER:
		return state == ELASTIC_INPLACE_HEALING ? ELASTIC_INPLACE_IDLE : state;
	}
	return state;
}

enum elastic_record_what elastic__inplace_on_record(const struct elastic_record_in *in)
{
	if (in->size <= 0)
		return ELASTIC_RECORD_NONE;
	if (in->state == ELASTIC_INPLACE_LEAVING && in->size == in->leave_end)
		return ELASTIC_RECORD_LEFT;
	if (in->state == ELASTIC_INPLACE_JOINING && in->size == in->join_end)
		return ELASTIC_RECORD_JOINED;
	if (!in->in_place)
		return ELASTIC_RECORD_NONE;
	if (in->size >= in->world)
		return in->heal_open ? ELASTIC_RECORD_HEAL_LOOK : ELASTIC_RECORD_NONE;
	return ELASTIC_RECORD_HEALED;
}

enum elastic_heal_what elastic__inplace_heal_look(const struct elastic_heal_in *in)
{
	if (in->world >= in->total || in->now - in->t_heal > ELASTIC_HEAL_LOOK_FOR_S)
		return ELASTIC_HEAL_END;
	if (in->now - in->t_heal_look < ELASTIC_HEAL_LOOK_EVERY_S || in->released > 0)
		return ELASTIC_HEAL_WAIT;
	return ELASTIC_HEAL_LOOK;
}
