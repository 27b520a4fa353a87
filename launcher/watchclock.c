/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/watchclock.c: the clocks of a running launch (watchclock.h). */
#include "config.h"

#include "runstate.h"
#include "watchclock.h"

void elastic__watch_clock_start(struct elastic_watch_clock *c)
{
	double slowest = c->slowest_first;

	*c = (struct elastic_watch_clock){.slowest_first = slowest};
}

int elastic__watch_clock_awaits_commit(const struct elastic_watch_clock *c)
{
	return !c->t_first && !c->t_bound;
}

enum elastic_watch_clock_act elastic__watch_clock(struct elastic_watch_clock *c,
						  const struct elastic_watch_seen *s,
						  double *bound)
{
	double took = s->now - s->t0;

	*bound = elastic__launch_bound(s->launch_timeout, c->slowest_first);
	if (c->t_bound) {
		/* ended at a bound: mpirun gets ELASTIC_BOUND_KILL_S to go */
		if (c->bound_killed || s->now - c->t_bound <= ELASTIC_BOUND_KILL_S)
			return ELASTIC_CLOCK_GO_ON;
		c->bound_killed = 1;
		return ELASTIC_CLOCK_KILL;
	}
	/* the launch bound, until rank 0's first commit */
	if (elastic__watch_clock_awaits_commit(c) && s->committed) {
		c->t_first = s->now;
		if (took > c->slowest_first)
			c->slowest_first = took;
	}
	if (!c->t_first && *bound > 0 && took >= *bound)
		return ELASTIC_CLOCK_UNTRAINED;
	/* a growth in place starts ranks as a launch does: the same bound */
	if (s->t_join && *bound > 0 && s->now - s->t_join >= *bound)
		return ELASTIC_CLOCK_JOIN_STALLED;
	/* every rank ended and mpirun runs on */
	if (!s->all_ended) {
		c->t_all_ended = 0;
		return ELASTIC_CLOCK_GO_ON;
	}
	if (!c->t_all_ended)
		c->t_all_ended = s->now;
	if (s->now - c->t_all_ended < ELASTIC_ENDED_SETTLE_S)
		return ELASTIC_CLOCK_GO_ON;
	return ELASTIC_CLOCK_LINGERING;
}

void elastic__watch_clock_ended(struct elastic_watch_clock *c, double now)
{
	c->t_bound = now;
}

enum elastic_wait elastic__wait(double *since, double now, double limit)
{
	if (!*since) {
		*since = now;
		return limit > 0 ? ELASTIC_WAIT_BEGUN : ELASTIC_WAIT_OVER;
	}
	return now - *since < limit ? ELASTIC_WAIT_ON : ELASTIC_WAIT_OVER;
}
