/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/lost.c: the nodes lost under a launch (pure; see lost.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "lost.h"

static int _has_job(const struct elastic_lost_node *n, unsigned long job)
{
	for (int j = 0; j < n->njobs; j++)
		if (n->job[j] == job)
			return 1;
	return 0;
}

/* 1 if host x of a set has a GPU of a job node n held. */
static int _holds(const struct elastic_lost_node *n, const struct elastic_host *x)
{
	if (strcmp(n->host, x->name))
		return 0;
	for (int g = 0; g < x->ngpus; g++)
		if (_has_job(n, x->gpu_job[g]))
			return 1;
	return 0;
}

/* 1 if host x still has a GPU of n's daemon's job (or none was known). */
static int _daemon_listed(const struct elastic_lost_node *n, const struct elastic_host *x)
{
	if (!n->daemon)
		return 1;
	for (int g = 0; g < x->ngpus; g++)
		if (x->gpu_job[g] == n->daemon)
			return 1;
	return 0;
}

static int _seen_times(const struct elastic_lost *l, const char *host)
{
	for (int i = 0; i < l->nseen; i++)
		if (!strcmp(l->seen[i].host, host))
			return l->seen[i].times;
	return 0;
}

static void _remember(struct elastic_lost *l, const struct elastic_lost_node *n)
{
	int i = 0;
	while (i < l->nseen && strcmp(l->seen[i].host, n->host))
		i++;
	if (i == ELASTIC_LOST_MAX) { /* forget the oldest */
		memmove(l->seen, l->seen + 1,
			sizeof(l->seen[0]) * (ELASTIC_LOST_MAX - 1));
		i = ELASTIC_LOST_MAX - 1;
	} else if (i == l->nseen) {
		l->nseen++;
	}
	snprintf(l->seen[i].host, sizeof(l->seen[i].host), "%s", n->host);
	l->seen[i].times = n->times;
}

static struct elastic_lost_node *_find(struct elastic_lost *l, const char *host)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->node[i].host, host))
			return &l->node[i];
	return NULL;
}

int elastic__lost_mark(struct elastic_lost *l, const struct elastic_gpuset *launched,
		       const char *self,
		       int (*reports)(const char *host, const void *arg), const void *arg,
		       double now)
{
	int added = 0;

	for (int h = 0; h < launched->nhosts; h++) {
		const struct elastic_host *x = &launched->host[h];
		if ((self && !strcmp(x->name, self)) || reports(x->name, arg) >= x->ngpus)
			continue;
		struct elastic_lost_node *n = _find(l, x->name);
		if (!n) {
			if (l->n == ELASTIC_LOST_MAX)
				continue; /* hold out what fits; the rest fail again */
			n = &l->node[l->n++];
			memset(n, 0, sizeof(*n));
			snprintf(n->host, sizeof(n->host), "%s", x->name);
			n->times = _seen_times(l, x->name);
		}
		n->times++;
		n->since = now;
		n->daemon = x->job;
		for (int g = 0; g < x->ngpus; g++)
			if (!_has_job(n, x->gpu_job[g]) && n->njobs < ELASTIC_LOST_JOBS)
				n->job[n->njobs++] = x->gpu_job[g];
		double hold = ELASTIC_LOST_HOLD_S;
		for (int t = 1; t < n->times && hold < ELASTIC_LOST_HOLD_MAX; t++)
			hold *= 2;
		n->until = now +
			   (hold < ELASTIC_LOST_HOLD_MAX ? hold : ELASTIC_LOST_HOLD_MAX);
		added++;
	}
	return added;
}

int elastic__lost_hold_out(const struct elastic_lost *l, struct elastic_gpuset *set)
{
	int dropped = 0, nh = 0;

	for (int h = 0; h < set->nhosts; h++) {
		int out = 0;
		for (int i = 0; i < l->n && !out; i++)
			out = _holds(&l->node[i], &set->host[h]) &&
			      _daemon_listed(&l->node[i], &set->host[h]);
		if (out) {
			dropped += set->host[h].ngpus;
			continue;
		}
		if (nh != h)
			set->host[nh] = set->host[h];
		nh++;
	}
	set->nhosts = nh;
	set->total -= dropped;
	set->raw -= dropped;
	return dropped;
}

struct elastic_lost_look elastic__lost_look(struct elastic_lost *l,
					    const struct elastic_gpuset *all, double now)
{
	struct elastic_lost_look r = {0};
	int k = 0;

	for (int i = 0; i < l->n; i++) {
		const struct elastic_lost_node *n = &l->node[i];
		int listed = 0, daemon = 1;
		for (int h = 0; h < all->nhosts && !listed; h++)
			if ((listed = _holds(n, &all->host[h])))
				daemon = _daemon_listed(n, &all->host[h]);
		if (listed && daemon && now < n->until) {
			l->node[k++] = *n;
			continue;
		}
		if (listed) {
			r.released++;
			r.daemon_gone += !daemon;
		} else {
			r.gone++;
		}
		_remember(l, n);
		snprintf(r.host, sizeof(r.host), "%s", n->host);
		r.held_for = now - n->since;
	}
	l->n = k;
	return r;
}
