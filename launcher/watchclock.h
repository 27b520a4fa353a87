/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/watchclock.h: the clocks of a running launch (pure): the launch
 * bound (no step committed in time; a growth in place not joined in time),
 * the end of a launch whose ranks all ended while mpirun runs on, and
 * SIGKILL after a SIGTERM that did not end it. watch.c feeds it what it saw each turn and carries out its answer. */
#ifndef ELASTIC_LAUNCHER_WATCHCLOCK_H
#define ELASTIC_LAUNCHER_WATCHCLOCK_H

/* How long mpirun may run on once every rank of the launch said how it
 * ended. */
#define ELASTIC_ENDED_SETTLE_S 10.0

/* How long a launch ended at a bound has after SIGTERM before SIGKILL. */
#define ELASTIC_BOUND_KILL_S 5.0

/* The launch's clocks (seconds of elastic__now()), written only here;
 * slowest_first outlives the launch: it is the run's. */
struct elastic_watch_clock {
	double t_first;	      /* rank 0 first committed in this launch (0: not yet) */
	double slowest_first; /* the longest a launch of the run took to that */
	double t_bound;	      /* the launch was ended at a bound (0: not) */
	int bound_killed;     /* ...and SIGKILLed after it did not end */
	double t_all_ended;   /* since when every rank said how it ended (0: not) */
};

/* What the watch saw in one turn. */
struct elastic_watch_seen {
	double now, t0;	    /* now, and when mpirun started */
	int committed;	    /* rank 0's record shows a commit in this launch */
	int all_ended;	    /* every rank said how it ended */
	int launch_timeout; /* --launch-timeout, s (0: no bound) */
	double t_join;	    /* a growth in place ordered then, not joined yet (0: none) */
};

enum elastic_watch_clock_act {
	ELASTIC_CLOCK_GO_ON,	    /* nothing to do */
	ELASTIC_CLOCK_UNTRAINED,    /* no step committed within the launch bound:
				  * end the launch (SIGTERM) and launch again */
	ELASTIC_CLOCK_JOIN_STALLED, /* a growth in place not joined within the
				     * launch bound (its ranks' start hangs,
				     * as when slurmctld restarted): end the
				     * launch (SIGTERM) and launch again */
	ELASTIC_CLOCK_LINGERING,    /* every rank ended ELASTIC_ENDED_SETTLE_S ago
				  * and mpirun runs on: end it (SIGTERM) */
	ELASTIC_CLOCK_KILL,	    /* ended at a bound and still there
				  * ELASTIC_BOUND_KILL_S after SIGTERM: SIGKILL */
};

/* 1 while rank 0's first commit is still looked for (none seen, the
 * launch not ended at a bound): the watch reads the record only then. */
int elastic__watch_clock_awaits_commit(const struct elastic_watch_clock *c);

/* A launch starts: its clocks at 0 (the run's slowest first commit kept). */
void elastic__watch_clock_start(struct elastic_watch_clock *c);

/* One turn of the clocks: updates c (the first commit, the all-ended
 * clock, bound_killed when it answers ELASTIC_CLOCK_KILL) and says what to
 * do. *bound gets the launch bound in force (s, 0: none), for the messages
 * of ELASTIC_CLOCK_UNTRAINED and JOIN_STALLED. Once the watch ended the
 * launch for UNTRAINED, JOIN_STALLED or LINGERING, it says when
 * (elastic__watch_clock_ended): from then on the only answers are GO_ON
 * and, once, KILL. */
enum elastic_watch_clock_act elastic__watch_clock(struct elastic_watch_clock *c,
						  const struct elastic_watch_seen *s,
						  double *bound);

/* The launch was ended (SIGTERM) at now. */
void elastic__watch_clock_ended(struct elastic_watch_clock *c, double now);

/* The watch's bounded waits (for the other releases of a shrink, for the
 * warm interpreters of a re-form, before GPUs left with no rank are taken
 * again), each on a clock of its own: since, when it began (0: not begun;
 * a time ahead of now puts the wait off until then). */
enum elastic_wait {
	ELASTIC_WAIT_BEGUN, /* it begins now (since = now): say what it waits for */
	ELASTIC_WAIT_ON,    /* within limit s of since */
	ELASTIC_WAIT_OVER,  /* limit s have passed */
};
enum elastic_wait elastic__wait(double *since, double now, double limit);

#endif
