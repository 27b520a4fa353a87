/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/elastic-run.c: the in-job launcher. Runs `mpirun --with-ft ulfm`
 * over every GPU the elastic job holds (its own allocation and its grant
 * jobs, daemons started with `srun --jobid=J --overlap`), one rank per GPU,
 * and re-forms the job (relaunch, resume from the last committed step) when
 * mpirun ends because a daemon or node was lost or the GPU set changed.
 * main() sets the run up, drives it LAUNCH -> WATCH -> REFORM -> FINISH
 * (launch.c, watch.c, the re-form below), then ends it. The same binary is
 * PRRTE's launch agent (agent.c) and the ranks' wrapper (rank.c). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "launch.h"
#include "options.h"
#include "prewarm.h"
#include "process.h"
#include "rank.h"
#include "inplace_run.h"
#include "run.h"
#include "decide.h"
#include "sets.h"
#include "proto.h"
#include "slurmlist.h"
#include "srunpipe.h"
#include "watch.h"

#define BLANK_RETRY_S 1 /* before a launch that started nothing is retried */

/* zero-filled (bss), not initialised data: its GPU sets are 14 MB, which
 * an initialiser would write into the executable */
static struct run run;

/* The world the survivors healed to during the launch, if they did (0:
 * none): rank 0's last record (the survivors may have finished before it
 * was read). */
static int _healed_world(struct run *r)
{
	unsigned long long step, seen;
	double t;
	int size = 0;

	if (r->job.in_place &&
	    elastic__progress_read(&r->progress, &step, &seen, &t, &size) == 0 &&
	    size > 0 && size < r->ip.world)
		r->ip.world = size;
	return r->job.in_place && r->ip.world < r->launch.rep.nranks ? r->ip.world : 0;
}

static int _reports(const char *host, const void *arg)
{
	return elastic__report_from(arg, host);
}

/* Did the launch that ended start nothing? No rank anywhere said how it
 * ended, those on this node included, and rank 0 committed no step: mpirun
 * failed before its ranks (a daemon that did not start). */
static int _blank_launch(const struct run *r)
{
	unsigned long long step, seen;
	double t;
	int size;

	/* (the summary's counts partition the ranks) */
	return r->launch.rep.nranks > 0 &&
	       r->launch.sum.missing == r->launch.rep.nranks &&
	       elastic__progress_read(&r->progress, &step, &seen, &t, &size) != 0;
}

/* Nodes whose ranks never said how they ended (their daemon or the node
 * lost) are held out of the next launches while Slurm lists them (decide.h).
 * A launch that started nothing does not say which node failed (every
 * node's ranks are silent): the first such launch in a row is retried on
 * the same GPUs a second later (a daemon's start can fail once: a PRRTE
 * daemon in a new grant exiting 1 at once, with nothing said); a second
 * one in a row holds out the silent nodes. */
static void _hold_out_lost(struct run *r)
{
	if (!_blank_launch(r)) {
		r->launch.blank = 0;
	} else if (!r->launch.blank++) {
		elastic__say(
			"mpirun started no rank (status %d): launching again on the same GPUs in %d s before leaving any node out",
			r->launch.mstatus, BLANK_RETRY_S);
		/* (a signal ends it early: the state machine sees the signal) */
		struct timespec ts = {.tv_sec = BLANK_RETRY_S};
		nanosleep(&ts, NULL);
		return;
	}
	if (!r->launch.sum.missing)
		return;
	double now = elastic__now();
	if (!elastic__lost_mark(&r->sets.lost, &r->sets.launched, elastic__self_host(),
				_reports, &r->launch.rep, now))
		return;
	r->sets.lost_mark = now;
	r->sets.lost_look = now + 1.0;
}

/* The nodes marked lost as this mpirun ended, once Slurm's list (seen) says
 * whether they are left out: a node whose daemon's grant Slurm no longer
 * lists lost its ranks with that grant (decide.h), and its other GPUs are in
 * the next launch. */
static void _say_lost(struct run *r)
{
	for (int i = 0; r->sets.lost_mark && i < r->sets.lost.n; i++) {
		const struct elastic_lost_node *n = &r->sets.lost.node[i];
		if (n->since != r->sets.lost_mark) /* not marked just now */
			continue;
		int kept = 0;
		for (int h = 0; h < r->sets.seen.nhosts; h++)
			kept |= !strcmp(r->sets.seen.host[h].name, n->host);
		if (kept)
			elastic__say(
				"%s: its ranks ended with the grant that hosted their daemon there (job %lu, no longer listed): the job's other GPUs there are taken again at once",
				n->host, n->daemon);
		else
			elastic__say(
				"%s: its ranks never said how they ended (the node or its daemon lost): left out while Slurm lists its GPUs there, for %.0f s at most",
				n->host, n->until - n->since);
	}
	r->sets.lost_mark = 0;
}

struct _stepless {
	struct run *r;
	int held;
};

/* A step of the ended launch that never began. One in a grant whose srun
 * was started makes the grant unusable for this run: left out, and given
 * back to the controller. */
static void _stepless_one(unsigned long job, const char *host, int daemon, int tried,
			  const struct elastic_srun *s, void *arg)
{
	struct _stepless *k = arg;
	struct run *r = k->r;
	struct run_sets *sets = &r->sets;

	if (!tried || job == r->job.jobid ||
	    sets->nstepless >= (int)(sizeof(sets->stepless) / sizeof(sets->stepless[0])))
		return;
	for (int i = 0; i < sets->nstepless; i++)
		if (sets->stepless[i] == job)
			return;
	sets->stepless[sets->nstepless++] = job;
	k->held++;
	const char *said = s && s->said[0] ? s->said : "nothing";
	elastic__say(
		"grant %lu on %s: the launch's %s step there never began (srun said: %s): left out of the next launches%s",
		job, host, daemon ? "daemon" : "rank", said,
		r->job.have_ctl ? ", given back to the controller" : "");
	if (r->job.have_ctl) {
		char why[ELASTIC_PROTO_TEXT_MAX];
		/* (srun's words cut to what the message holds) */
		snprintf(why, sizeof(why), "no step began there: srun said %.*s",
			 (int)sizeof(why) - 40, said);
		elastic__orders_give_back(&r->job.orders, &r->job.ctl, (uint32_t)job, why,
					  elastic__say);
	}
}

/* A launch ended at its bound whose steps in a grant never began (an srun
 * that slurmctld never gave a step: a restart, a job that cannot take one)
 * launches again without that grant (srun's words were heard at the bound:
 * watch.c). Returns the grants so left out (their
 * nodes are not held out as lost then: the ranks that never reported
 * there were never started, for want of that step). */
static int _hold_out_stepless(struct run *r)
{
	struct _stepless k = {.r = r};

	if (!r->launch.clock.t_bound)
		return 0;
	elastic__report_no_step(&r->launch.rep, &r->sets.launched, elastic__self_host(),
				r->job.jobid, _stepless_one, &k);
	/* (the launch again on the same GPUs is for a launch that shows nothing) */
	if (k.held)
		r->launch.blank = 0;
	return k.held;
}

/* A failure of the program's own in the launch that ended: the rank that
 * wrote its error, else the first that failed. Kept if it is the run's
 * first, and the run's exit status is that rank's. Returns 1 if there was
 * one. */
static int _note_failure(struct run *r)
{
	const struct elastic_report *rep = &r->launch.rep;
	struct run_failure *f = &r->launch.first;
	int rank = rep->err_from - 1;
	char cause[200];

	if (rank >= 0)
		elastic__report_describe(rep, rank, cause, sizeof(cause));
	else if (elastic__report_cause(rep, EXIT_REFORM, cause, sizeof(cause)) < 0)
		return 0;
	if (rank >= 0 && rep->end[rank].how == ELASTIC_RANK_EXITED &&
	    rep->end[rank].value)
		r->launch.status = rep->end[rank].value;
	snprintf(r->launch.last_cause, sizeof(r->launch.last_cause), "%s", cause);
	if (!f->launch) {
		f->launch = r->launch.launches;
		snprintf(f->cause, sizeof(f->cause), "%s", cause);
		snprintf(f->text, sizeof(f->text), "%s", rank >= 0 ? rep->err_text : "");
	}
	return 1;
}

/* The run's first failure, last, where the user looks (once the warm
 * interpreters said their end): elastic-run's line, then what the rank
 * wrote (its traceback), as it wrote it. */
static void _say_first_failure(const struct run *r)
{
	const struct run_failure *f = &r->launch.first;

	/* (one the give-up line named already, with nothing written, is not
	 * said twice) */
	if (!f->launch || (!f->text[0] && f->launch == r->launch.launches))
		return;
	elastic__say("the first failure, launch %d: %s%s", f->launch, f->cause,
		     f->text[0] ? "; it wrote:" : "");
	if (f->text[0])
		fprintf(stderr, "%s\n", f->text);
}

/* What the relaunch after this launch follows (decide.h), for its cause. */
static struct elastic_reform_in _reform_in(const struct run *r)
{
	return (struct elastic_reform_in){
		.planned = r->launch.stop.sent,
		.released = elastic__released_gpus(elastic__sets_view(r)),
		.gained = elastic__grants_add(elastic__sets_view(r)) ||
			  (r->sets.seen_fresh &&
			   r->sets.seen.total > r->sets.launched.total),
		.replaced = r->launch.replacing,
	};
}

/* How the launch ended, when that ends the run (elastic__run_ended):
 * said, and 1; 0 when the run may launch again. */
static int _run_over(struct run *r)
{
	const struct elastic_report_summary *sum = &r->launch.sum;
	int healed = _healed_world(r);

	switch (elastic__run_ended(sum, r->launch.mstatus, elastic__got_signal, healed,
				   &r->launch.status)) {
	case ELASTIC_RUN_FINISHED:
		elastic__say("job %lu: finished (%d launch%s, %d of %d ranks at the end)",
			     r->job.jobid, r->launch.launches,
			     r->launch.launches == 1 ? "" : "es", sum->ok,
			     r->sets.launched.total);
		return 1;
	case ELASTIC_RUN_STOPPED:
		elastic__say("stopped by signal %d; not re-forming",
			     (int)elastic__got_signal);
		return 1;
	case ELASTIC_RUN_NOSTART:
		elastic__say("%s could not be started (status 127)", r->opt.mpirun);
		return 1;
	case ELASTIC_RUN_FAILED:
		_note_failure(r);
		elastic__say(
			"job %lu: %d rank%s ended the program, %d failed on an error of its own (%s): the training is over, not relaunching",
			r->job.jobid, sum->ok, sum->ok == 1 ? "" : "s", sum->failed,
			r->launch.last_cause);
		r->launch.say_first = 1;
		return 1;
	default:
		return 0;
	}
}

/* After a launch that did not end the run: the nodes to hold out, and
 * Slurm's list of the job's GPUs now (r->sets.seen); said with how the
 * launch ended. 1 when the job's GPUs changed. */
static int _look_again(struct run *r)
{
	const struct elastic_report_summary *sum = &r->launch.sum;
	elastic_error_t err;

	/* (a re-form that takes back GPUs whose ranks were lost and healed
	 * around holds none of their nodes out: it is there for them) */
	if (!_hold_out_stepless(r) && !r->launch.replacing)
		_hold_out_lost(r);
	double t_ask = elastic__now();
	/* (Slurm's answer holds the orders taken so far: orders.h) */
	elastic__orders_heed(&r->job.orders);
	r->sets.seen_fresh =
		elastic__slurm_gpus(&r->job, &r->sets, &r->sets.seen, &err) == 0;
	/* (Slurm not answering: the launch counts this as its first ask) */
	r->sets.seen_failed = r->sets.seen_fresh ? 0 : t_ask;
	if (!r->sets.seen_fresh)
		r->sets.seen_err = err;
	_say_lost(r);
	int changed = !elastic__same_set(&r->sets.launched, &r->sets.seen);
	elastic__say(
		"mpirun ended after %.1f s: %d rank%s ok, %d failed, %d asked to re-form, %d killed, %d lost%s",
		r->launch.t_end - r->launch.t0, sum->ok, sum->ok == 1 ? "" : "s",
		sum->failed, sum->reform, sum->signaled, sum->missing,
		changed ? "; the job's GPUs changed" : "");
	return changed;
}

/* REFORM: finished, or launch again, or give up (elastic__run_* decide). */
static enum run_state _reform(struct run *r)
{
	const struct elastic_report_summary *sum = &r->launch.sum;

	if (_run_over(r))
		return RUN_FINISH;
	/* (whether rank 0 had committed a step when the first rank failed:
	 * the survivors of a failure may commit more, at a smaller size) */
	int failed = sum->failed > 0 && _note_failure(r),
	    committed = r->launch.fail_seen ? r->launch.fail_committed
					    : elastic__progress_committed(&r->progress);
	int changed = _look_again(r);
	/* (a stop sent because a rank failed on its own error plans nothing) */
	int planned = r->launch.stop.sent && !r->launch.stop.now;
	switch (elastic__run_retry(sum->reform > 0 || changed || planned, planned,
				   &r->launch.stuck, &r->launch.unplanned,
				   r->opt.max_stuck, r->opt.max_relaunch)) {
	case ELASTIC_RUN_STUCK: {
		char cause[200];
		if (elastic__report_cause(&r->launch.rep, EXIT_REFORM, cause,
					  sizeof(cause)) < 0)
			snprintf(
				cause, sizeof(cause),
				"no rank reported an error of its own (mpirun status %d)",
				r->launch.mstatus);
		elastic__say(
			"%d failures in a row on the same GPUs: giving up; the last: %s (its error lines are above)",
			r->launch.stuck, cause);
		r->launch.say_first = 1;
		return RUN_FINISH;
	}
	case ELASTIC_RUN_TOO_MANY:
		elastic__say(
			"relaunched %d times without an order (failures): giving up (--max-relaunch)",
			r->launch.unplanned - 1);
		r->launch.say_first = 1;
		return RUN_FINISH;
	default:
		break;
	}
	switch (elastic__run_failures(failed, committed, &r->launch.failures,
				      r->opt.max_failures)) {
	case ELASTIC_RUN_FAILED:
		elastic__say(
			"%d launch%s failed on the program's own error with no step committed in between: giving up (--max-failures %d); the last: %s",
			r->launch.failures, r->launch.failures == 1 ? "" : "es",
			r->opt.max_failures, r->launch.last_cause);
		r->launch.say_first = 1;
		return RUN_FINISH;
	default:
		/* (a launch again is the same re-form, still open: counted once) */
		if (!elastic__launch_again(&r->launch)) {
			struct elastic_reform_in in = _reform_in(r);
			elastic__recovery_reform(&r->recov, &r->job.ctl, &in,
						 r->launch.t_end);
		}
		return RUN_LAUNCH;
	}
}

/* FINISH: close the channel and remove the run's files. */
static int _finish(struct run *r)
{
	elastic__prewarm_stop();
	if (r->launch.say_first)
		_say_first_failure(r);
	elastic__report_close(&r->launch.rep);
	if (r->job.have_ctl)
		elastic__ctl_fini(&r->job.ctl);
	unlink(r->file.hostfile);
	unlink(r->file.agent);
	unlink(r->file.progress);
	unlink(r->file.leave);
	unlink(r->file.join);
	unlink(r->file.mapfile);
	unlink(r->file.ask);
	rmdir(r->file.dir);
	return r->launch.status;
}

/* Signals while mpirun runs: SIGTERM and SIGINT stop the run (passed on
 * to mpirun), SIGUSR1 asks for a re-form. */
static void _signals(void)
{
	struct sigaction sa = {.sa_handler = elastic__on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	struct sigaction su = {.sa_handler = elastic__on_usr1};
	sigaction(SIGUSR1, &su, NULL);
}

/* The run's states, from the first launch to FINISH. */
static void _loop(struct run *r)
{
	enum run_state s = RUN_LAUNCH;

	while (s != RUN_FINISH) {
		switch (s) {
		case RUN_LAUNCH:
			s = elastic__launch(&(struct elastic_launch_run){
				.opt = &r->opt,
				.job = &r->job,
				.file = &r->file,
				.sets = &r->sets,
				.launch = &r->launch,
				.ip = &r->ip,
				.since = &r->progress.since,
			});
			break;
		case RUN_WATCH:
			s = elastic__watch(r);
			break;
		default:
			s = _reform(r);
		}
	}
}

int main(int argc, char **argv)
{
	int code;

	if (argc > 1 && strcmp(argv[1], "--agent") == 0)
		return elastic__agent_main(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "--rank-in-step") == 0)
		return elastic__rank_in_step_main(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "--step-started") == 0)
		return elastic__step_started_main();
	if (argc > 1 && strcmp(argv[1], "--rank") == 0)
		return elastic__rank_main(argc - 2, argv + 2);
	run.launch.status = 1;
	if (elastic__options(&run.opt, argc, argv, &code) == RUN_SETUP_EXIT ||
	    elastic__job_setup(&run.job, &run.opt, &code) == RUN_SETUP_EXIT ||
	    elastic__files_setup(&run.file, run.job.jobid, &run.progress, &run.launch.rep,
				 &code) == RUN_SETUP_EXIT)
		return code;
	_signals();
	_loop(&run);
	return _finish(&run);
}
