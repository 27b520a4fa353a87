/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/sets.c: what the controller's orders and the ranks' reports say
 * of the launched GPU set (pure reads of the run). */
#include "config.h"

#include <string.h>

#include "sets.h"

int elastic__same_set(const struct elastic_gpuset *a, const struct elastic_gpuset *b)
{
	if (a->nhosts != b->nhosts || a->total != b->total)
		return 0;
	for (int i = 0; i < a->nhosts; i++)
		if (strcmp(a->host[i].name, b->host[i].name) ||
		    a->host[i].job != b->host[i].job ||
		    a->host[i].ngpus != b->host[i].ngpus)
			return 0;
	return 1;
}

int elastic__grant_listed(uint32_t grant, const void *set)
{
	return elastic__gpuset_has_job(set, grant);
}

int elastic__grant_has_gpu(uint32_t grant, const void *set)
{
	const struct elastic_gpuset *g = set;
	for (int h = 0; h < g->nhosts; h++)
		for (int i = 0; i < g->host[h].ngpus; i++)
			if (g->host[h].gpu_job[i] == grant)
				return 1;
	return 0;
}

int elastic__released_job(unsigned long job, const void *arg)
{
	return elastic__orders_released(arg, (uint32_t)job);
}

int elastic__released_gpus(struct elastic_sets_view v)
{
	int n = 0;
	for (int h = 0; h < v.launched->nhosts; h++)
		for (int g = 0; g < v.launched->host[h].ngpus; g++)
			n += elastic__orders_released(
				v.orders, (uint32_t)v.launched->host[h].gpu_job[g]);
	return n;
}

int elastic__uses_released(struct elastic_sets_view v)
{
	return elastic__released_gpus(v) > 0;
}

int elastic__idle_gpus(struct elastic_sets_view v, int released)
{
	int n = 0;
	for (int h = 0; h < v.launched->nhosts; h++) {
		const struct elastic_host *x = &v.launched->host[h];
		for (int g = 0; g < x->ngpus; g++)
			n += elastic__report_ended_on(v.rep, x->name, x->gpu[g]) &&
			     (!released || elastic__orders_released(
						   v.orders, (uint32_t)x->gpu_job[g]));
	}
	return n;
}

/* 1 if set has GPU gpu of job on host. */
static int _has_gpu(const struct elastic_gpuset *set, const char *host, int gpu,
		    unsigned long job)
{
	for (int h = 0; h < set->nhosts; h++)
		if (!strcmp(set->host[h].name, host))
			for (int g = 0; g < set->host[h].ngpus; g++)
				if (set->host[h].gpu[g] == gpu &&
				    set->host[h].gpu_job[g] == job)
					return 1;
	return 0;
}

int elastic__failed_gpus(struct elastic_sets_view v, const struct elastic_gpuset *listed)
{
	int n = 0;
	for (int h = 0; h < v.launched->nhosts; h++) {
		const struct elastic_host *x = &v.launched->host[h];
		for (int g = 0; g < x->ngpus; g++)
			n += elastic__report_failed_on(v.rep, x->name, x->gpu[g]) &&
			     !elastic__orders_released(v.orders,
						       (uint32_t)x->gpu_job[g]) &&
			     (!listed ||
			      _has_gpu(listed, x->name, x->gpu[g], x->gpu_job[g]));
	}
	return n;
}

int elastic__silent_gpus(struct elastic_sets_view v, const struct elastic_gpuset *listed)
{
	int quiet = 0, kept = 0;
	for (int h = 0; h < v.launched->nhosts; h++) {
		const struct elastic_host *x = &v.launched->host[h];
		for (int g = 0; g < x->ngpus; g++) {
			if (elastic__report_ended_on(v.rep, x->name, x->gpu[g]))
				continue;
			quiet++;
			kept += !elastic__orders_released(v.orders,
							  (uint32_t)x->gpu_job[g]) &&
				(!listed ||
				 _has_gpu(listed, x->name, x->gpu[g], x->gpu_job[g]));
		}
	}
	quiet -= v.world;
	return quiet <= 0 ? 0 : quiet < kept ? quiet : kept;
}

int elastic__live_gpus(struct elastic_sets_view v)
{
	return v.launched->total - elastic__idle_gpus(v, 0);
}

int elastic__grants_add(struct elastic_sets_view v)
{
	int add = elastic__orders_new_gpus(v.orders, elastic__grant_listed, v.launched);
	return add > 0 &&
	       (int)elastic_sizes_fit(&v.req->sizes, v.req->min_gpus, v.req->max_gpus,
				      v.launched->raw + add) != v.launched->total;
}

int elastic__daemon_released(struct elastic_sets_view v)
{
	for (int h = 0; h < v.launched->nhosts; h++) {
		const struct elastic_host *x = &v.launched->host[h];
		if (!elastic__orders_released(v.orders, (uint32_t)x->job))
			continue;
		for (int g = 0; g < x->ngpus; g++)
			if (!elastic__orders_released(v.orders,
						      (uint32_t)x->gpu_job[g]) &&
			    !elastic__report_ended_on(v.rep, x->name, x->gpu[g]))
				return h;
	}
	return -1;
}

void elastic__sets_take_seen(struct run_sets *s)
{
	memcpy(&s->launched, &s->seen, sizeof(s->launched));
}

void elastic__sets_plan_grown(struct run_sets *s)
{
	memcpy(&s->grown, &s->seen, sizeof(s->grown));
}

void elastic__sets_take_grown(struct run_sets *s)
{
	memcpy(&s->launched, &s->grown, sizeof(s->launched));
}

void elastic__sets_plan_after_leave(struct run_sets *s,
				    int (*gone)(unsigned long job, const void *arg),
				    const void *arg)
{
	memcpy(&s->after_leave, &s->launched, sizeof(s->after_leave));
	elastic__gpuset_drop(&s->after_leave, gone, arg);
}

void elastic__sets_take_after_leave(struct run_sets *s)
{
	memcpy(&s->launched, &s->after_leave, sizeof(s->launched));
}

int elastic__daemon_gone(const struct elastic_gpuset *launched,
			 const struct elastic_gpuset *seen, const char *self, char *host,
			 size_t len, unsigned long *job)
{
	int kept = 0;
	for (int h = 0; h < launched->nhosts; h++) {
		const struct elastic_host *x = &launched->host[h];
		if (self && !strcmp(x->name, self))
			continue;
		for (int s = 0; s < seen->nhosts; s++) {
			const struct elastic_host *y = &seen->host[s];
			int daemon = 0;
			if (strcmp(y->name, x->name))
				continue;
			for (int g = 0; g < y->ngpus; g++)
				daemon |= y->gpu_job[g] == x->job;
			if (daemon || !y->ngpus)
				continue;
			if (!kept) {
				snprintf(host, len, "%s", x->name);
				*job = x->job;
			}
			kept += y->ngpus;
		}
	}
	return kept;
}
