/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/watch.c: WATCH: while mpirun runs, the ranks' reports, rank 0's
 * progress, the controller's orders and the re-form they make due. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "decide.h"
#include "inplace_run.h"
#include "prewarm.h"
#include "process.h"
#include "sets.h"
#include "slurmlist.h"
#include "watch.h"

/* How long the releases of one shrink are awaited once the first came. */
#define RELEASE_SETTLE_S 0.5

/* How long after a heal in place a release waits for the lost ranks'
 * wrappers to say where they ran (their reports may come after rank 0's
 * record of the smaller world; a lost node's never come). */
#define HEAL_SETTLE_S 1.0

/* 1 while a release should wait for that (see HEAL_SETTLE_S). */
static int _heal_unsettled(struct run *r)
{
	if (!r->ip.t_heal || elastic__now() - r->ip.t_heal >= HEAL_SETTLE_S ||
	    r->ip.world >= elastic__live_gpus(elastic__sets_view(r)))
		return 0;
	/* (bounded by the heal's time above, not by the wait's) */
	if (elastic__wait(&r->ip.t_rel_wait, elastic__now(), HEAL_SETTLE_S) ==
	    ELASTIC_WAIT_BEGUN)
		elastic__say(
			"controller: a release %.0f ms after ranks were lost: waiting up to %.1f s for where they ran",
			(elastic__now() - r->ip.t_heal) * 1e3, HEAL_SETTLE_S);
	return 1;
}

/* 1 while the releases seen leave the set above the controller's target
 * (sent before them): the others of the same shrink are on their way
 * (elasticd orders them one grant at a time, a slurmctld call apart). Acting
 * on the first alone would re-form twice, or, in place, let a node's ranks
 * leave while the grant hosting its daemon is released next (its end kills
 * the ranks that stay). Waits RELEASE_SETTLE_S at most. */
static int _releases_to_come(struct run *r, int released)
{
	int target = (int)r->job.orders.target;
	if (!target || target >= r->sets.launched.total ||
	    r->sets.launched.total - released <= target)
		return 0;
	enum elastic_wait w =
		elastic__wait(&r->ip.t_rel_wait, elastic__now(), RELEASE_SETTLE_S);
	if (w == ELASTIC_WAIT_BEGUN)
		elastic__say(
			"controller: target %d GPUs, %d of %d released so far: waiting up to %.1f s for the other releases",
			target, released, r->sets.launched.total - target,
			RELEASE_SETTLE_S);
	return w != ELASTIC_WAIT_OVER;
}

/* The parts of the run a resize in place reads and changes (inplace_run.h). */
static struct elastic_inplace_run _parts(struct run *r)
{
	return (struct elastic_inplace_run){
		.prog = r->opt.prog,
		.job = &r->job,
		.file = &r->file,
		.sets = &r->sets,
		.rep = &r->launch.rep,
		.ip = &r->ip,
		.progress = &r->progress,
		.recov = &r->recov,
		.stop = &r->launch.stop,
	};
}

/* Slurm's list now against the launched set: 1 when it changed (a growth
 * in place is planned where it can be, else a re-form is due), 0 when not
 * or when Slurm cannot be asked. Slurm shows a grant ordered released
 * until elasticd cancels it, after the job acknowledged the release: such
 * GPUs are no change. */
static int _slurm_changed(struct run *r)
{
	elastic_error_t err;

	if (elastic__slurm_gpus(&r->job, &r->sets, &r->sets.seen, &err) < 0)
		return 0;
	elastic__gpuset_drop(&r->sets.seen, elastic__released_job, &r->job.orders);
	if (elastic__same_set(&r->sets.launched, &r->sets.seen))
		return 0;
	struct elastic_inplace_run p = _parts(r);
	elastic__plan_grow(&p);
	return 1;
}

/* The job's progress: when the committed step moved, tell elasticd (ctl)
 * the step and the samples/s since the last record (elastic-ctl status).
 * Read at most once a second. */
static void _forward_progress(struct elastic_progress *pr, struct elastic_ctlclient *ctl)
{
	unsigned long long step, seen;
	double t, now = elastic__now();
	int size;

	if (now - pr->t_read < 1.0)
		return;
	pr->t_read = now;
	if (elastic__progress_read(pr, &step, &seen, &t, &size) < 0 ||
	    (pr->have_last && step == pr->step_last))
		return;
	/* The rate between two records, by the writer's clock: a measurement
	 * of the job at its size only when one world committed both
	 * (elasticd's throughput policy fits its scaling to it); across a
	 * change of size none is sent. */
	if (pr->have_last && seen >= pr->seen_last && t > pr->t_last)
		pr->rate = (double)(seen - pr->seen_last) / (t - pr->t_last);
	if (size > 0 && size != pr->size_last)
		pr->rate = -1;
	pr->step_last = step, pr->seen_last = seen, pr->t_last = t;
	pr->size_last = size;
	pr->have_last = 1;
	elastic__orders_status(ctl, step, pr->rate, elastic__say);
}

/* While mpirun runs: an order that changes the job's GPUs makes a re-form
 * due (_stop_when_ready tells the ranks). A release of GPUs in use, or
 * started grants that add usable GPUs, settle it at once; otherwise Slurm
 * is asked (a grant may add no usable GPU, e.g. under --elastic-sizes).
 * Orders taken while a change is under way, or by the launch after its look
 * at Slurm, are acted on at the first turn that can (orders.h). */
static void _follow_orders(struct run *r)
{
	_forward_progress(&r->progress, &r->job.ctl);
	elastic__orders_poll(&r->job.orders, &r->job.ctl, 50, elastic__say);
	if (!elastic__stop_open(&r->launch.stop) ||
	    (!r->job.orders.unheeded && !r->ip.t_rel_wait))
		return;
	int act = elastic__orders_heed(&r->job.orders);
	int released = elastic__released_gpus(elastic__sets_view(r));
	if (released) {
		/* The ranks of a planned shrink in place left and the others
		 * have not committed a step yet: the end of that shrink plans this
		 * release as a shrink of its own then (planning it now finds
		 * the shrink under way and stops every rank: a relaunch). A
		 * heal since (a smaller world) ends that wait. */
		if (r->ip.state == ELASTIC_INPLACE_LEAVING &&
		    r->ip.world == r->ip.leave_world - r->ip.leave_ranks)
			return;
		if (_heal_unsettled(r) || _releases_to_come(r, released))
			return;
		struct elastic_inplace_run p = _parts(r);
		r->ip.t_rel_wait = 0;
		elastic__stop_set_due(&r->launch.stop, elastic__plan_leave(&p));
		return;
	}
	r->ip.t_rel_wait = 0;
	if (!act)
		return;
	if (elastic__grants_add(elastic__sets_view(r))) {
		struct elastic_inplace_run p = _parts(r);
		elastic__stop_set_due(&r->launch.stop, 1);
		elastic__grow_from_slurm(&p);
		return;
	}
	elastic__stop_set_due(&r->launch.stop, _slurm_changed(r));
}

/* How often Slurm is asked about the nodes held out as lost. */
#define LOST_LOOK_S 1.0

/* Nodes held out as lost (decide.h), while no change is under way: a node
 * whose GPUs Slurm no longer lists is forgotten; one still listed when its
 * hold ends is taken again (a growth, in place where the runtime can). */
static void _look_at_lost(struct run *r)
{
	elastic_error_t err;

	if (!r->sets.lost.n || elastic__now() < r->sets.lost_look ||
	    !elastic__stop_open(&r->launch.stop) ||
	    (r->ip.state != ELASTIC_INPLACE_IDLE &&
	     r->ip.state != ELASTIC_INPLACE_HEALING))
		return;
	r->sets.lost_look = elastic__now() + LOST_LOOK_S;
	if (elastic__slurm_gpus_all(&r->job, &r->sets.seen, &err) < 0)
		return;
	struct elastic_lost_look k =
		elastic__lost_look(&r->sets.lost, &r->sets.seen, elastic__now());
	if (k.gone)
		elastic__say(
			"%s: Slurm no longer lists the job's GPUs there (%.1f s after its ranks were lost): the job goes on without them",
			k.host, k.held_for);
	/* (one released for its daemon's grant ended is in the launch already) */
	if (k.released > k.daemon_gone) {
		elastic__say(
			"%s: Slurm still lists the job's GPUs there %.0f s after its ranks were lost: taking them again",
			k.host, k.held_for);
		elastic__stop_set_due(&r->launch.stop, _slurm_changed(r));
	}
}

/* Slurm is asked again this long after the GPUs of failed ranks turned
 * out not to be the job's any more (a cancelled grant's). */
#define REPLACE_RECHECK_S 30.0

/* GPUs held with no rank after a heal in place (with listed: only those
 * Slurm lists): those whose rank failed while its node lives on, and, once
 * the heal's look at Slurm is over (ELASTIC_INPLACE_IDLE), those whose rank
 * was lost silently with its node or daemon while Slurm still lists them in
 * the job. *silent says how many of the second kind. */
static int _rankless_gpus(const struct run *r, const struct elastic_gpuset *listed,
			  int *silent)
{
	*silent = r->ip.state == ELASTIC_INPLACE_IDLE
			  ? elastic__silent_gpus(elastic__sets_view(r), listed)
			  : 0;
	return elastic__failed_gpus(elastic__sets_view(r), listed) + *silent;
}

/* A rank that failed while its node lives on was healed around, and so were
 * the ranks of a node whose daemon was lost while Slurm keeps the node in
 * the job: their GPUs stay held by the job with no rank on them. Unless a
 * release takes them (acknowledged at once), the job re-forms onto all its
 * GPUs, a rank on each, after elastic__replace_wait (decide.h: longer
 * for failures that come again and again). */
static void _replace_failed(struct run *r)
{
	int n = 0, silent = 0;

	if (elastic__stop_open(&r->launch.stop) &&
	    (r->ip.state == ELASTIC_INPLACE_IDLE ||
	     r->ip.state == ELASTIC_INPLACE_HEALING))
		n = _rankless_gpus(r, NULL, &silent);
	if (!n) {
		r->launch.t_failed = 0;
		return;
	}
	double now = elastic__now();
	double wait = elastic__replace_wait(&r->launch.replace,
					    r->launch.t_failed ? r->launch.t_failed : now,
					    r->opt.replace_after);
	if (elastic__wait(&r->launch.t_failed, now, wait) != ELASTIC_WAIT_OVER)
		return;
	/* only GPUs the job still holds (a cancelled grant's are gone: Slurm
	 * is asked again REPLACE_RECHECK_S later, not at every turn) */
	elastic_error_t err;
	if (elastic__slurm_gpus(&r->job, &r->sets, &r->sets.seen, &err) < 0 ||
	    !(n = _rankless_gpus(r, &r->sets.seen, &silent))) {
		r->launch.t_failed = now + REPLACE_RECHECK_S;
		return;
	}
	elastic__say(
		"%d GPU%s held with no rank for %.0f s (%s): re-forming onto all %d GPUs",
		n, n == 1 ? "" : "s", wait,
		silent == n
			? "their ranks lost with their node or its daemon, which Slurm still lists in the job"
		: silent ? "ranks failed or lost with their node, the others went on"
		: n == 1 ? "its rank failed, the others went on"
			 : "their ranks failed, the others went on",
		r->sets.launched.total);
	elastic__replace_asked(&r->launch.replace, now);
	r->launch.replacing = 1;
	r->launch.t_failed = 0;
	elastic__stop_set_due(&r->launch.stop, 1);
}

/* How long a due re-form waits, at most, for the warm interpreters of the
 * nodes and grants it adds. */
#define WARM_AHEAD_MAX_S 20.0

/* A re-form restarts every rank, and those on a new node or grant would
 * wait there for their zygote's imports (prewarm.h): the zygotes are
 * started now and the ranks train on until they serve. 1 when the re-form
 * may go. */
static int _warm_ahead(struct run *r)
{
	char wait[512];
	double now = elastic__now();

	if (!elastic__prewarm_on())
		return 1;
	enum elastic_wait w = elastic__wait(&r->launch.t_warm, now, WARM_AHEAD_MAX_S);
	if (w == ELASTIC_WAIT_BEGUN) {
		elastic_error_t err;
		if (elastic__slurm_gpus(&r->job, &r->sets, &r->sets.seen, &err) < 0)
			return 1;
		elastic__prewarm_hosts(&r->sets.seen);
		if (elastic__prewarm_ready(&r->sets.seen, wait, sizeof(wait)))
			return 1;
		elastic__say(
			"re-form: the ranks train on until the warm interpreters on %s serve (%.0f s at most)",
			wait, WARM_AHEAD_MAX_S);
		return 0;
	}
	if (elastic__prewarm_ready(&r->sets.seen, wait, sizeof(wait))) {
		elastic__say("re-form: the warm interpreters serve (%.1f s)",
			     now - r->launch.t_warm);
		return 1;
	}
	if (w == ELASTIC_WAIT_ON)
		return 0;
	elastic__say(
		"re-form: the warm interpreters on %s do not serve after %.0f s: re-forming (their ranks wait for them there)",
		wait, WARM_AHEAD_MAX_S);
	return 1;
}

/* Number the request about to be sent (libelastic drops a late copy of one
 * it took: elastic__ask_taken): written whole (rename) before the signal. */
static void _number_request(struct run *r)
{
	char tmp[sizeof(r->file.ask) + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", r->file.ask);
	FILE *f = fopen(tmp, "w");
	int ok = f != NULL;
	if (f) {
		ok = fprintf(f, "%llu\n", ++r->launch.asks) > 0;
		ok = fclose(f) == 0 && ok;
	}
	if (ok)
		ok = rename(tmp, r->file.ask) == 0;
	if (!ok) {
		elastic__say("cannot write %s: %s (a late signal may ask again)",
			     r->file.ask, strerror(errno));
		unlink(tmp);
	}
}

/* A re-form that is due (an order, or SIGUSR1 to elastic-run) reaches the
 * ranks as SIGUSR1 once they can take it (and, for a re-form, once the
 * zygotes it needs serve). */
static void _stop_when_ready(struct run *r)
{
	struct elastic_stop *s = &r->launch.stop;
	int joining = r->ip.state == ELASTIC_INPLACE_JOINING;

	/* (one asked while the ranks grow is taken once they have) */
	if (elastic__usr1_pending && !joining) {
		elastic__usr1_pending = 0;
		elastic__stop_set_due(s, 1);
		/* (a set that only grew onto new nodes: in place, where the
		 * runtime can) */
		if (!s->sent) {
			struct elastic_inplace_run p = _parts(r);
			elastic__grow_from_slurm(&p);
		}
		joining = r->ip.state == ELASTIC_INPLACE_JOINING;
	}
	switch (elastic__stop_when(
		s,
		elastic__stop_pending(s) &&
			elastic__ranks_ready(&r->progress, r->launch.t0, elastic__now()),
		joining)) {
	case ELASTIC_STOP_WAIT:
		return;
	case ELASTIC_STOP_SEND_WARM:
		if (!_warm_ahead(r))
			return;
		break;
	case ELASTIC_STOP_SEND:
		break;
	}
	r->launch.t_warm = 0;
	_number_request(r);
	elastic__say("asking the %d ranks to %s at the next step boundary (SIGUSR1)",
		     r->ip.world, joining ? "grow" : "re-form");
	kill(elastic__child, SIGUSR1);
	elastic__stop_sent(s);
	elastic__recovery_stopping(&r->recov);
}

/* A rank that failed on an error of its own: whether rank 0 had committed
 * a step in this launch is noted (the failures elastic__run_failures counts
 * are launches that failed before any). One that wrote its error (a
 * traceback) ends the launch: the others stop at their next step boundary
 * (those that finished the training complete it), and do not train on
 * without it. */
static void _own_failure(struct run *r, const struct elastic_rank_end *e, int rank)
{
	if (!r->launch.fail_seen && e->how == ELASTIC_RANK_EXITED &&
	    elastic__report_end_failed(e->how, e->value) &&
	    !elastic__report_killed_status(e->value)) {
		r->launch.fail_seen = 1;
		r->launch.fail_committed = elastic__progress_committed(&r->progress);
	}
	if (r->launch.rep.err_from != rank + 1 || !elastic__stop_open(&r->launch.stop))
		return;
	elastic__say(
		"rank %d failed on an error of its own (exit status %d): the launch ends; the other ranks stop at their next step boundary",
		rank, e->value);
	elastic__stop_failed(&r->launch.stop);
}

struct _text {
	char *buf;
	size_t len, o;
};

/* A step the launch needs that never began, for people. */
static void _name_no_step(unsigned long job, const char *host, int daemon, int tried,
			  const struct elastic_srun *s, void *arg)
{
	struct _text *t = arg;
	if (t->o + 320 >= t->len)
		return;
	t->o += snprintf(t->buf + t->o, t->len - t->o,
			 "%s%s: the %s step in job %lu never began (%s%s)",
			 t->o ? "; " : "", host, daemon ? "daemon's" : "rank's", job,
			 !tried		   ? "its srun waits for the daemons"
			 : s && s->said[0] ? "its srun said: "
					   : "its srun waits for it, silent",
			 tried && s && s->said[0] ? s->said : "");
}

/* A step tried that never began, whose srun has not said its error yet
 * (arg: count). */
static void _count_silent(unsigned long job, const char *host, int daemon, int tried,
			  const struct elastic_srun *s, void *arg)
{
	(void)job, (void)host, (void)daemon;
	*(int *)arg += tried && !(s && !strncmp(s->said, "error:", 6));
}

/* How long the bound waits for the words of the sruns it signals. */
#define SRUN_WORDS_S 1.0

/* An srun whose step slurmctld does not create waits without a word, and
 * says why only once signalled: at the bound the launch's sruns are sent
 * SIGTERM first, and their words (said at once, elastic__say_srun) are
 * awaited until each has said its error, SRUN_WORDS_S at most, so that the
 * bound's line can quote them. */
static void _hear_sruns(struct run *r)
{
	struct elastic_report *rep = &r->launch.rep;
	const char *self = elastic__self_host();
	int silent = 0;

	elastic__report_no_step(rep, &r->sets.launched, self, r->job.jobid, _count_silent,
				&silent);
	if (!silent)
		return;
	elastic__kill_tree_only(elastic__child, SIGTERM, "srun");
	for (double until = elastic__now() + SRUN_WORDS_S; elastic__now() < until;) {
		/* (what one srun says comes in a burst: one more poll after) */
		elastic__report_poll(rep, 100);
		if (!silent)
			break;
		silent = 0;
		elastic__report_no_step(rep, &r->sets.launched, self, r->job.jobid,
					_count_silent, &silent);
	}
}

/* What the launch shows at its bound, for people: the Slurm steps it needs
 * that never began (an srun whose step slurmctld cannot create waits for
 * it without a word), the ranks that ended (and how), then, host by host,
 * those that never reported an end (still starting, or never started). */
static void _not_training(const struct run *r, char *buf, size_t len)
{
	const struct elastic_gpuset *set = &r->sets.launched;
	const struct elastic_report *rep = &r->launch.rep;
	struct _text t = {buf, len, 0};
	int rank = 0;

	buf[0] = '\0';
	elastic__report_no_step(rep, set, elastic__self_host(), r->job.jobid,
				_name_no_step, &t);
	size_t o = t.o;
	for (int i = 0; i < rep->nranks && o + 200 < len; i++) {
		if (rep->end[i].how == ELASTIC_RANK_UNKNOWN)
			continue;
		char d[200];
		elastic__report_describe(rep, i, d, sizeof(d));
		o += snprintf(buf + o, len - o, "%s%s", o ? "; " : "", d);
	}
	for (int h = 0; h < set->nhosts; h++) {
		const struct elastic_host *x = &set->host[h];
		int silent = 0;
		for (int g = 0; g < x->ngpus && rank + g < rep->nranks; g++)
			silent += rep->end[rank + g].how == ELASTIC_RANK_UNKNOWN;
		if (silent && o + 120 < len)
			o += snprintf(
				buf + o, len - o,
				"%s%s: %d of %d rank%s never reported (ranks %d-%d, job %lu)",
				o ? "; " : "", x->name, silent, x->ngpus,
				x->ngpus == 1 ? "" : "s", rank, rank + x->ngpus - 1,
				x->job);
		rank += x->ngpus;
	}
}

/* The launch bound in force, for people. */
static void _bound_name(const struct run *r, double bound, char *buf, size_t len)
{
	const struct elastic_watch_clock *c = &r->launch.clock;
	if (c->slowest_first > 0 && bound < r->opt.launch_timeout)
		snprintf(
			buf, len,
			"%.0f x the slowest first commit of this run, %.1f s, at least %.0f s",
			ELASTIC_LAUNCH_BOUND_FACTOR, c->slowest_first,
			ELASTIC_LAUNCH_BOUND_MIN_S);
	else
		snprintf(buf, len, "--launch-timeout %d", r->opt.launch_timeout);
}

/* The launch's clocks (decide.h), acted on. The launch bound
 * (--launch-timeout, elastic__launch_bound): a launch whose rank 0 commits
 * no step within it holds its GPUs and trains nothing (a rank that never
 * came: its srun into a grant failed or hangs, a node's slurmd not
 * answering after a slurmctld restart, a rank stuck before MPI_Init). A
 * growth in place whose new ranks do not join within the same bound holds
 * every rank in MPI_Comm_spawn (the new daemon's srun into a grant waits
 * for a slurmctld that restarted). Every rank said how it ended and mpirun
 * runs on: what it waits for (an srun into a grant's step that cannot tell
 * slurmctld its step ended, slurmctld restarting) holds the job's GPUs for
 * nothing. Each such launch is ended: SIGTERM to mpirun and to all it
 * started on this node (its launch agents and their sruns included),
 * SIGKILL if it is still there ELASTIC_BOUND_KILL_S later; the job launches
 * again. */
static void _clocks(struct run *r)
{
	struct run_launch *l = &r->launch;
	struct elastic_watch_seen s = {
		.now = elastic__now(),
		.t0 = l->t0,
		.committed = elastic__watch_clock_awaits_commit(&l->clock) &&
			     elastic__progress_committed(&r->progress),
		.all_ended = 1,
		.launch_timeout = r->opt.launch_timeout,
		.t_join = r->ip.state == ELASTIC_INPLACE_JOINING ? r->ip.t_join : 0,
	};
	char why[1536], what[160];
	double bound;

	for (int i = 0; i < l->rep.nranks && s.all_ended; i++)
		s.all_ended = l->rep.end[i].how != ELASTIC_RANK_UNKNOWN;
	switch (elastic__watch_clock(&l->clock, &s, &bound)) {
	case ELASTIC_CLOCK_GO_ON:
		return;
	case ELASTIC_CLOCK_UNTRAINED:
		_hear_sruns(r);
		_not_training(r, why, sizeof(why));
		_bound_name(r, bound, what, sizeof(what));
		elastic__say(
			"no step committed %.1f s after mpirun started, %d GPU%s held (the launch bound: %s): %s; ending the launch to launch again",
			s.now - l->t0, r->sets.launched.total,
			r->sets.launched.total == 1 ? "" : "s", what,
			why[0] ? why : "every rank started, none committed");
		break;
	case ELASTIC_CLOCK_JOIN_STALLED:
		_bound_name(r, bound, what, sizeof(what));
		elastic__gpuset_describe(&r->sets.grown, why, sizeof(why));
		elastic__say(
			"grow in place: %d new rank%s not joined %.1f s after the order (the launch bound: %s), on %s; ending the launch to launch again",
			r->ip.join_add, r->ip.join_add == 1 ? "" : "s", s.now - s.t_join,
			what, why);
		break;
	case ELASTIC_CLOCK_LINGERING:
		elastic__say(
			"every rank ended %.0f s ago and mpirun runs on (an srun that cannot end its step?): ending it",
			ELASTIC_ENDED_SETTLE_S);
		break;
	case ELASTIC_CLOCK_KILL:
		elastic__say(
			"the launch did not end %.0f s after SIGTERM: SIGKILL to mpirun and what it started here",
			ELASTIC_BOUND_KILL_S);
		elastic__kill_tree(elastic__child, SIGKILL);
		return;
	}
	elastic__watch_clock_ended(&l->clock, elastic__now());
	elastic__kill_tree(elastic__child, SIGTERM);
}

/* With a runtime that heals in place, a rank that ends while mpirun runs
 * is news: say where it ran (-v). */
static void _say_ends(struct run *r)
{
	for (int i = 0; i < r->launch.rep.nranks; i++) {
		struct elastic_rank_end *e = &r->launch.rep.end[i];
		if (e->how == ELASTIC_RANK_UNKNOWN || e->told)
			continue;
		e->told = 1;
		_own_failure(r, e, i);
		elastic__recovery_rank_end(&r->recov, e);
		if (elastic__verbose && r->job.in_place && e->value != 0)
			elastic__say("rank %d ended (%s %d) on %s GPU %d", i,
				     e->how == ELASTIC_RANK_SIGNALED ? "signal"
								     : "exit status",
				     e->value, e->host[0] ? e->host : "?", e->gpu);
	}
}

/* Rank 0's record read (inplace_run.h); the ranks' stop moves as it says. */
static void _record(struct run *r)
{
	struct elastic_inplace_run p = _parts(r);
	struct elastic_record_act act = elastic__watch_record(&p);

	if (act.done)
		elastic__stop_done(&r->launch.stop);
	if (act.due >= 0)
		elastic__stop_set_due(&r->launch.stop, act.due);
	if (act.replacing)
		r->launch.replacing = 1;
}

enum run_state elastic__watch(struct run *r)
{
	int ws;

	elastic__stop_start(&r->launch.stop);
	r->launch.fail_seen = r->launch.fail_committed = 0;
	elastic__watch_clock_start(&r->launch.clock);
	r->launch.t_failed = 0;
	r->launch.replacing = 0;
	r->launch.t_warm = 0;
	for (;;) {
		if (elastic__report_poll(&r->launch.rep, r->job.have_ctl ? 50 : 200) > 0)
			_say_ends(r);
		pid_t w = waitpid(elastic__child, &ws, WNOHANG);
		if (w == elastic__child || (w < 0 && errno != EINTR))
			break;
		_record(r);
		elastic__recovery_watch(&r->recov, &r->job.ctl, &r->progress,
					r->ip.world);
		/* (a launch ended at a bound plans nothing more: the orders
		 * wait for the next launch) */
		if (!r->launch.clock.t_bound) {
			if (r->job.have_ctl)
				_follow_orders(r);
			_look_at_lost(r);
			_replace_failed(r);
			_stop_when_ready(r);
		}
		_clocks(r);
	}
	elastic__child = -1;
	r->launch.t_end = elastic__now();
	/* Reports sent just before the ranks ended may still be in flight. */
	for (double until = elastic__now() + 0.5; elastic__now() < until;) {
		struct elastic_report_summary q;
		elastic__report_summary(&r->launch.rep, EXIT_REFORM, &q);
		if (!q.missing || elastic__report_poll(&r->launch.rep, 100) == 0)
			break;
	}
	r->launch.mstatus = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	elastic__report_summary(&r->launch.rep, EXIT_REFORM, &r->launch.sum);
	r->launch.launches++;
	if (elastic__verbose) {
		elastic__say(
			"mpirun status %d; ranks: %d ok, %d failed, %d re-form, %d signalled, %d silent, %d left",
			r->launch.mstatus, r->launch.sum.ok, r->launch.sum.failed,
			r->launch.sum.reform, r->launch.sum.signaled,
			r->launch.sum.missing, r->launch.sum.left);
		for (int i = 0; i < r->launch.rep.nranks; i++) {
			const struct elastic_rank_end *e = &r->launch.rep.end[i];
			if (e->how == ELASTIC_RANK_UNKNOWN)
				elastic__say("rank %d: no report from its wrapper", i);
			else if (e->how == ELASTIC_RANK_SIGNALED ||
				 (e->value != 0 && e->value != EXIT_REFORM))
				elastic__say("rank %d: %s %d", i,
					     e->how == ELASTIC_RANK_SIGNALED
						     ? "signal"
						     : "exit status",
					     e->value);
		}
	}
	return RUN_REFORM;
}
