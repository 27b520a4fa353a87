/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/launch.c: LAUNCH: choose the GPU set (waiting for grants the
 * controller is starting), write what the agent and the ranks read, build
 * mpirun's command line and start it. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inplace_run.h"
#include "launch.h"
#include "prewarm.h"
#include "process.h"
#include "gpuset.h"
#include "sets.h"
#include "slurmlist.h"

/* When the controller's target for the job is above the GPUs it holds, it
 * is starting grants for it: before the first launch (a job that has just
 * started gets its share at once), and after a release that had to free a
 * larger grant (elasticd starts a smaller one in its place). Waiting up to
 * --grant-wait seconds for them spares the job a launch and a re-form a
 * moment later. 1 if grants were announced (look again), else 0. */
static int _await_grants(const struct elastic_launch_run *r)
{
	double t0 = elastic__now(), until = t0 + r->opt->grant_wait;
	int add = 0;

	/* The target follows the registration within a tick. A job that
	 * started before elasticd saw it pending may be refused once and
	 * register on the next attempt (0.5 s later): keep polling for it. */
	while (r->opt->grant_wait > 0 && elastic__now() < until) {
		elastic__orders_poll(&r->job->orders, &r->job->ctl, 50, elastic__say);
		add = elastic__orders_new_gpus(&r->job->orders, elastic__grant_listed,
					       &r->sets->launched);
		if (r->job->orders.target &&
		    (int)r->job->orders.target <= r->sets->launched.raw + add)
			break;
		/* no controller to hear from (elasticd down): do not hold the job */
		if (!r->job->orders.target && !elastic__ctl_connected(&r->job->ctl) &&
		    elastic__now() - t0 > 1.5)
			break;
	}
	if (add > 0)
		elastic__say("waited %.0f ms for %d GPU%s of grants before launching",
			     (elastic__now() - t0) * 1e3, add, add == 1 ? "" : "s");
	else if (r->opt->grant_wait > 0 && !r->job->orders.target)
		elastic__say("no target from the controller within %d s: launching on %d",
			     r->opt->grant_wait, r->sets->launched.total);
	else if (r->job->orders.target > (uint32_t)r->sets->launched.raw)
		elastic__say(
			"target %u GPUs but no grant started within %d s: launching on %d",
			r->job->orders.target, r->opt->grant_wait,
			r->sets->launched.total);
	return add > 0;
}

/* Wait s seconds (cut short by a signal), keeping the channel to elasticd
 * served. */
static void _pause(const struct elastic_launch_run *r, double s)
{
	double until = elastic__now() + s;

	while (!elastic__got_signal && elastic__now() < until) {
		double t = elastic__now();
		if (r->job->have_ctl)
			elastic__orders_poll(&r->job->orders, &r->job->ctl, 100,
					     elastic__say);
		if (elastic__now() - t < 0.09)
			poll(NULL, 0, 100);
	}
}

/* r->sets->launched from Slurm now. Slurm not answering (slurmctld restarting
 * for longer than its clients' MessageTimeout) does not end the job: the
 * launch asks again, within the launch bound (decide.h). A look-up of the
 * re-form that just failed counts as the first ask, so the wait is said at
 * once rather than after one more of scontrol's own timeouts. -1 (logged,
 * r->launch->status set) when it still cannot be read. */
static int _launch_set_from_slurm(const struct elastic_launch_run *r)
{
	elastic_error_t err;
	double t0 = elastic__now();
	int asked = r->sets->seen_failed > 0;

	if (asked) {
		t0 = r->sets->seen_failed;
		err = r->sets->seen_err;
		r->sets->seen_failed = 0;
	}
	for (int tries = 1;; tries++) {
		int ask = tries > 1 || !asked;
		/* (Slurm's answer holds the orders taken so far: orders.h) */
		if (ask)
			elastic__orders_heed(&r->job->orders);
		if (ask &&
		    elastic__slurm_gpus(r->job, r->sets, &r->sets->launched, &err) == 0) {
			if (tries > 1)
				elastic__say(
					"Slurm answered after %.0f s: this job's GPUs are known again",
					elastic__now() - t0);
			return 0;
		}
		double wait = elastic__slurm_ask_wait(tries, elastic__now() - t0,
						      r->opt->launch_timeout);
		if (wait < 0 || elastic__got_signal) {
			elastic__say(
				"cannot find this job's GPUs: %s (asked %d time%s over %.0f s)",
				err.text, tries, tries == 1 ? "" : "s",
				elastic__now() - t0);
			r->launch->status = 1;
			return -1;
		}
		elastic__say(
			"cannot find this job's GPUs yet: %s; asking Slurm again in %.0f s (%.0f s waited, at most %d: --launch-timeout)",
			err.text, wait, elastic__now() - t0, r->opt->launch_timeout);
		_pause(r, wait);
	}
}

/* Choose the launch set (r->sets->launched) and write what the agent and the ranks
 * read: the hostfile and ELASTIC_RUN_MAP. 0, or -1 (logged; r->launch->status is
 * the run's exit status). */
static int _choose(const struct elastic_launch_run *r)
{
	elastic_error_t err;

	/* a planned re-form that gave grants back (acknowledged below) */
	int released = r->launch->launches > 0 &&
		       elastic__uses_released(elastic__sets_view_of(
			       r->sets, r->job, &r->launch->rep, r->ip->world)) &&
		       !r->launch->sum.failed && !r->launch->sum.signaled &&
		       !r->launch->sum.missing;

	if (r->sets->seen_fresh) {
		/* the re-form looked just now, after the previous mpirun ended */
		r->sets->seen_fresh = 0;
		elastic__sets_take_seen(r->sets);
	} else if (_launch_set_from_slurm(r) < 0) {
		return -1;
	}
	if (r->job->have_ctl) {
		/* acknowledges the releases: elasticd cancels those grants */
		elastic__orders_releases_done(&r->job->orders);
		r->job->ctl.gpus = r->sets->launched.total;
		elastic__orders_poll(&r->job->orders, &r->job->ctl, 0, elastic__say);
		if ((elastic__world_no(r->launch) == 0 || released) && _await_grants(r)) {
			if (_launch_set_from_slurm(r) < 0)
				return -1;
			r->job->ctl.gpus = r->sets->launched.total;
		}
		/* releases ordered while it waited for grants: a launch without
		 * their GPUs has let them go (acknowledged at the next poll) */
		elastic__orders_releases_done_unless(
			&r->job->orders, elastic__grant_has_gpu, &r->sets->launched);
	}
	if (r->sets->launched.total < r->job->req.min_gpus) {
		elastic__say(
			"only %d GPU%s usable, below the job's minimum of %ld: giving up",
			r->sets->launched.total, r->sets->launched.total == 1 ? "" : "s",
			r->job->req.min_gpus);
		r->launch->status = 1;
		return -1;
	}
	if (elastic__gpuset_write_hostfile(&r->sets->launched, r->file->hostfile, &err) <
	    0) {
		elastic__say("%s", err.text);
		return -1;
	}
	char *map = elastic__map_env(&r->sets->launched);
	if (!map) {
		elastic__say("out of memory");
		return -1;
	}
	setenv("ELASTIC_RUN_MAP", map, 1);
	free(map);
	return 0;
}

#define MPIRUN_ARGV_MAX (64 + 32)

/* mpirun's fixed arguments, around the hostfile and the launch agent: ULFM,
 * no binding, daemons started by PRRTE's ssh launcher through the agent,
 * PRRTE's Slurm allocator off (the hostfile says where ranks go). */
static const char *const _mpirun_head[] = {"--with-ft", "ulfm",	      "--bind-to",
					   "none",	"--hostfile", NULL};
static const char *const _mpirun_plm[] = {"--prtemca", "plm",		"ssh",
					  "--prtemca", "plm_ssh_agent", NULL};
static const char *const _mpirun_ras[] = {"--prtemca", "ras", "^slurm", NULL};

/* A node gone silent (its link down, power lost) is noticed by TCP
 * keepalive on the daemons' connections: probes after 2 s idle, every 1 s,
 * 3 unanswered = lost (defaults: hours). */
static const char *const _keepalive[] = {"prte_keepalive_time",	  "2",
					 "prte_keepalive_intvl",  "1",
					 "prte_keepalive_probes", "3"};

/* Append list (NULL-terminated) to av at n: the new n. */
static int _append(const char **av, int n, const char *const *list)
{
	while (*list)
		av[n++] = *list++;
	return n;
}

/* The mpirun command line of a launch on r->sets->launched (np: its rank count). */
static void _mpirun_argv(const struct elastic_launch_run *r, const char *np,
			 const char **av)
{
	int n = 0;
	av[n++] = r->opt->mpirun;
	n = _append(av, n, _mpirun_head);
	av[n++] = r->file->hostfile;
	n = _append(av, n, _mpirun_plm);
	av[n++] = r->file->agent;
	n = _append(av, n, _mpirun_ras);
	if (r->job->in_place) {
		for (int k = 0; k < 6; k += 2) {
			av[n++] = "--prtemca";
			av[n++] = _keepalive[k];
			av[n++] = _keepalive[k + 1];
		}
	}
	av[n++] = "-np";
	av[n++] = np;
	for (int e = 0; e < r->opt->nextra; e++)
		av[n++] = r->opt->extra[e];
	av[n++] = r->file->self;
	av[n++] = "--rank";
	for (char **a = r->opt->prog; *a && n < MPIRUN_ARGV_MAX - 2; a++)
		av[n++] = *a;
	av[n] = NULL;
}

/* Start mpirun (av) for a new launch of the report socket: 0 or -1. */
static int _spawn(const struct elastic_launch_run *r, const char **av)
{
	char gen[16];

	if (elastic__report_begin(&r->launch->rep, r->sets->launched.total) < 0) {
		elastic__say("out of memory");
		return -1;
	}
	snprintf(gen, sizeof(gen), "%u", r->launch->rep.gen);
	setenv("ELASTIC_RUN_GEN", gen, 1);
	elastic__prewarm_launch(&r->sets->launched,
				r->launch->t_end); /* zygotes ahead of need */
	r->launch->t0 = elastic__now();
	clock_gettime(CLOCK_REALTIME, r->since);
	elastic__inplace_begin(r->ip, r->job, r->file, r->sets->launched.total);
	elastic__child = fork();
	if (elastic__child < 0) {
		elastic__say("fork: %s", strerror(errno));
		return -1;
	}
	if (elastic__child == 0) {
		execvp(av[0], (char **)av);
		fprintf(stderr, "elastic-run: cannot run %s: %s\n", av[0],
			strerror(errno));
		_exit(127);
	}
	return 0;
}

enum run_state elastic__launch(const struct elastic_launch_run *r)
{
	const char *av[MPIRUN_ARGV_MAX];
	char desc[2048], np[16];

	/* (it keeps the number of the world the launch before was to form) */
	int again = elastic__launch_again(r->launch);
	r->launch->retried += again;
	if (_choose(r) < 0)
		return RUN_FINISH;
	elastic__gpuset_describe(&r->sets->launched, desc, sizeof(desc));
	snprintf(np, sizeof(np), "%d", r->sets->launched.total);
	_mpirun_argv(r, np, av);
	if (elastic__world_no(r->launch) == 0)
		elastic__say("job %lu: %d rank%s on %s%s", r->job->jobid,
			     r->sets->launched.total,
			     r->sets->launched.total == 1 ? "" : "s", desc,
			     again ? " (again: the launch before started no rank)" : "");
	else
		elastic__say(
			"re-form %d%s: %d rank%s on %s (%.0f ms after the previous mpirun ended)",
			elastic__world_no(r->launch), again ? " again" : "",
			r->sets->launched.total, r->sets->launched.total == 1 ? "" : "s",
			desc, (elastic__now() - r->launch->t_end) * 1e3);
	if (r->opt->dry || elastic__verbose > 1) {
		fprintf(stderr, "elastic-run: ");
		for (int a = 0; av[a]; a++)
			fprintf(stderr, "%s ", av[a]);
		fprintf(stderr, "\n");
		if (r->opt->dry) {
			r->launch->status = 0;
			return RUN_FINISH;
		}
	}
	return _spawn(r, av) < 0 ? RUN_FINISH : RUN_WATCH;
}
