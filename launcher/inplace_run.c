/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/inplace_run.c: the resizes in place of a running launch (growth,
 * planned shrink, heal), acting on decide.c's plans: the join and leave
 * files libelastic reads, the GPU set that results, what elasticd hears. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inplace_run.h"
#include "prewarm.h"
#include "process.h"
#include "gpuset.h"
#include "sets.h"
#include "slurmlist.h"

/* What the queries of the launched set (sets.h) read of these parts. */
static struct elastic_sets_view _view(const struct elastic_inplace_run *r)
{
	return elastic__sets_view_of(r->sets, r->job, r->rep, r->ip->world);
}

/* The leave and join files say "nothing" when empty: at a planned stop
 * every rank stops (libelastic). */
static void _empty_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

/* The in-place state's one writer (decide.h: elastic__inplace_next). */
static void _move(struct elastic_inplace *ip, enum elastic_inplace_event event)
{
	ip->state = elastic__inplace_next(ip->state, event, ip->t_heal != 0);
}

void elastic__inplace_begin(struct elastic_inplace *ip, const struct run_job *job,
			    const struct run_files *file, int world)
{
	ip->world = world;
	ip->leave_ranks = 0;
	ip->join_add = 0;
	ip->t_heal = 0;
	_move(ip, ELASTIC_INPLACE_LAUNCHED);
	if (job->in_place) {
		_empty_file(file->leave);
		setenv("ELASTIC_RUN_LEAVE", file->leave, 1);
	}
	if (job->grow_in_place) {
		_empty_file(file->join);
		setenv("ELASTIC_RUN_JOIN", file->join, 1);
	}
}

/* The grown map (for the launch agent) and the join list (libelastic's
 * resize.c) for a growth onto seen: 0, or -1 with errno. */
static int _write_join(const struct elastic_inplace_run *r,
		       const struct elastic_gpuset *seen)
{
	char *map = elastic__map_env(seen);
	FILE *mf = map ? fopen(r->file->mapfile, "w") : NULL;
	int ok = mf && fprintf(mf, "%s\n", map) > 0;
	if (mf && fclose(mf) != 0)
		ok = 0;
	FILE *f = ok ? fopen(r->file->join, "w") : NULL;
	ok = f && fprintf(f, "wrapper %s\nmap %s\n", r->file->self, map) > 0;
	for (int h = 0; ok && h < seen->nhosts; h++)
		if (!elastic__inplace_host_known(&r->sets->launched, seen->host[h].name))
			ok = fprintf(f, "host %s %d\n", seen->host[h].name,
				     seen->host[h].ngpus) > 0;
	for (char **a = r->prog; ok && *a; a++)
		ok = fprintf(f, "arg %s\n", *a) > 0;
	if (f && fclose(f) != 0)
		ok = 0;
	free(map);
	return ok ? 0 : -1;
}

int elastic__plan_grow(const struct elastic_inplace_run *r)
{
	const struct elastic_gpuset *seen = &r->sets->seen;
	struct elastic_grow_in in = {
		.grow_in_place = r->job->grow_in_place,
		.state = r->ip->state,
		.released = elastic__released_gpus(_view(r)),
		.world = r->ip->world,
		.launched = &r->sets->launched,
		.seen = seen,
		.prog = r->prog,
	};
	struct elastic_grow_plan p = elastic__inplace_plan_grow(&in);
	char desc[2048];

	if (p.what == ELASTIC_GROW_REFORM && elastic__verbose)
		elastic__say("grow: %s: every rank re-forms", p.why);
	if (p.what != ELASTIC_GROW_JOIN)
		return 0;
	if (_write_join(r, seen) < 0) {
		elastic__say("cannot write %s: %s: every rank re-forms instead",
			     r->file->join, strerror(errno));
		_empty_file(r->file->join);
		return 0;
	}
	_move(r->ip, ELASTIC_INPLACE_JOIN_PLANNED);
	r->ip->join_add = p.add, r->ip->join_world = r->ip->world + p.add;
	r->ip->t_join = elastic__now();
	elastic__sets_plan_grown(r->sets);
	elastic__gpuset_describe(seen, desc, sizeof(desc));
	elastic__say(
		"grow in place: %d new rank%s join the %d running at the next step boundary (none restarts), on %s",
		p.add, p.add == 1 ? "" : "s", r->ip->world, desc);
	return 1;
}

void elastic__grow_from_slurm(const struct elastic_inplace_run *r)
{
	elastic_error_t err;
	if (r->job->grow_in_place &&
	    elastic__slurm_gpus(r->job, r->sets, &r->sets->seen, &err) == 0)
		elastic__plan_grow(r);
}

/* The ranks started by a growth in place joined (rank 0's record shows the
 * grown world): the set is the grown one, elasticd hears it. */
static void _grow_done(const struct elastic_inplace_run *r, unsigned long long step,
		       int size, struct elastic_record_act *act)
{
	char desc[2048];
	elastic__sets_take_grown(r->sets);
	if (elastic__report_grow(r->rep, size) < 0)
		elastic__say("out of memory: the joined ranks' ends are not followed");
	elastic__gpuset_describe(&r->sets->launched, desc, sizeof(desc));
	elastic__say(
		"grew in place: %d rank%s joined, %d at step %llu, no relaunch (%.0f ms after the order); GPUs now: %s",
		size - r->ip->world, size - r->ip->world == 1 ? "" : "s", size, step,
		(elastic__now() - r->ip->t_join) * 1e3, desc);
	r->ip->world = size;
	r->ip->join_add = 0;
	elastic__recovery_resized(r->recov, &r->job->ctl, ELASTIC_RESIZE_GROW,
				  r->ip->t_join);
	_move(r->ip, ELASTIC_INPLACE_JOINED);
	/* the joiners started cold: the next relaunch need not */
	elastic__prewarm_hosts(&r->sets->launched);
	act->done = 1;
	_empty_file(r->file->join);
	if (r->job->have_ctl) {
		r->job->ctl.gpus = r->sets->launched.total;
		elastic__orders_status(&r->job->ctl, step, -1, elastic__say);
		/* orders that came while the ranks grew (the watch waits for a
		 * change under way): a release gets its shrink, grants still
		 * outside the set another change */
		elastic__orders_heed(&r->job->orders);
		if (elastic__uses_released(_view(r))) {
			act->due = elastic__plan_leave(r);
		} else if (elastic__grants_add(_view(r))) {
			act->due = 1;
			elastic__grow_from_slurm(r);
		}
	}
}

/* No live rank on the released GPUs (lost and healed around): they leave
 * the set and the release is acknowledged at once. */
static void _leave_idle(const struct elastic_inplace_run *r, int n)
{
	char desc[2048];
	elastic__gpuset_drop(&r->sets->launched, elastic__released_job, &r->job->orders);
	elastic__gpuset_describe(&r->sets->launched, desc, sizeof(desc));
	elastic__say(
		"released GPU%s with no live rank (lost and healed around): no stop, acknowledged at once; GPUs now: %s",
		n == 1 ? "" : "s", desc);
	if (r->job->have_ctl) {
		r->job->ctl.gpus = r->sets->launched.total < r->ip->world
					   ? r->sets->launched.total
					   : r->ip->world;
		elastic__orders_releases_done_unless(
			&r->job->orders, elastic__grant_has_gpu, &r->sets->launched);
		elastic__orders_poll(&r->job->orders, &r->job->ctl, 0, elastic__say);
	}
}

int elastic__plan_leave(const struct elastic_inplace_run *r)
{
	char list[8192];
	struct elastic_leave_in in = {
		.in_place = r->job->in_place,
		.state = r->ip->state,
		.daemon_host = elastic__daemon_released(_view(r)),
		.world = r->ip->world,
		.live = elastic__live_gpus(_view(r)),
		.total = r->sets->launched.total,
		.grants_add = elastic__grants_add(_view(r)),
		.released =
			elastic__gpuset_leave(&r->sets->launched, elastic__released_job,
					      &r->job->orders, list, sizeof(list)),
		.idle_released = elastic__idle_gpus(_view(r), 1),
		.target = r->job->orders.target,
		.req = &r->job->req,
	};
	struct elastic_leave_plan p = elastic__inplace_plan_leave(&in);
	const struct elastic_host *h;

	switch (p.what) {
	case ELASTIC_LEAVE_REFORM_DAEMON:
		h = &r->sets->launched.host[in.daemon_host];
		elastic__say(
			"planned shrink: grant %lu, released, hosts the daemon of %s where ranks stay: all ranks re-form",
			h->job, h->name);
		return 1;
	case ELASTIC_LEAVE_REFORM:
		return 1;
	case ELASTIC_LEAVE_ACK:
		_leave_idle(r, in.released);
		return 0;
	default:
		break;
	}
	FILE *f = fopen(r->file->leave, "w");
	if (!f || fputs(list, f) < 0 || fclose(f) != 0) {
		elastic__say("cannot write %s: %s: the job re-forms instead",
			     r->file->leave, strerror(errno));
		return 1;
	}
	_move(r->ip, ELASTIC_INPLACE_LEAVE_PLANNED);
	r->ip->leave_ranks = p.leaving, r->ip->leave_world = r->ip->world;
	r->ip->leave_step = 0;
	r->ip->t_leave = elastic__now();
	elastic__sets_plan_after_leave(r->sets, elastic__released_job, &r->job->orders);
	elastic__say(
		"planned shrink in place: the %d rank%s on released GPUs leave at the next step boundary",
		r->ip->leave_ranks, r->ip->leave_ranks == 1 ? "" : "s");
	return 1;
}

/* The ranks on released GPUs left and the others went on at size (rank 0's
 * record); once they committed a step after it, the releases are done and
 * acknowledged: elasticd cancels the grants (their daemons' end is
 * survived). */
static void _shrink_done(const struct elastic_inplace_run *r, unsigned long long step,
			 int size, struct elastic_record_act *act)
{
	if (!r->ip->leave_step) {
		char desc[2048];
		r->ip->leave_step = step;
		r->ip->world = size;
		/* the GPUs named when the shrink was planned (a grant released
		 * since has its ranks still running) */
		elastic__sets_take_after_leave(r->sets);
		elastic__gpuset_describe(&r->sets->launched, desc, sizeof(desc));
		elastic__say(
			"planned shrink in place: %d rank%s left after step %llu, %d go on (%.0f ms after the order); GPUs now: %s",
			r->ip->leave_ranks, r->ip->leave_ranks == 1 ? "" : "s", step,
			size, (elastic__now() - r->ip->t_leave) * 1e3, desc);
		act->done = 1;
		_empty_file(r->file->leave);
		elastic__recovery_resized(r->recov, &r->job->ctl, ELASTIC_RESIZE_SHRINK,
					  r->ip->t_leave);
	}
	if (step <= r->ip->leave_step)
		return;
	elastic__say(
		"planned shrink in place: step %llu committed at %d rank%s: releasing",
		step, size, size == 1 ? "" : "s");
	r->ip->leave_ranks = 0;
	_move(r->ip, ELASTIC_INPLACE_RELEASED);
	if (r->job->have_ctl) {
		r->job->ctl.gpus = r->sets->launched.total;
		/* only the grants no rank runs on any more; one released while
		 * this shrink was under way gets a shrink of its own */
		elastic__orders_releases_done_unless(
			&r->job->orders, elastic__grant_has_gpu, &r->sets->launched);
		elastic__orders_poll(&r->job->orders, &r->job->ctl, 0, elastic__say);
		if (elastic__uses_released(_view(r)))
			act->due = elastic__plan_leave(r);
	}
}

/* After a heal in place: the set becomes what Slurm says the job holds now
 * (a cancelled grant, a node gone) once that is smaller. Slurm may list a
 * lost node's grant for a while after the heal (elasticd cancels it when it
 * hears): looked up again every 0.5 s for up to 10 s while the set has more
 * GPUs than ranks (a GPU whose rank alone was lost stays held). Whether the
 * lost ranks' wrappers said where they ran does not matter: those of a
 * cancelled grant often do (SIGTERM) before its GPUs leave Slurm's list. */
static void _heal_shrink_set(const struct elastic_inplace_run *r,
			     struct elastic_record_act *act)
{
	elastic_error_t err;
	char desc[2048];
	struct elastic_heal_in in = {
		.world = r->ip->world,
		.total = r->sets->launched.total,
		.released = elastic__released_gpus(_view(r)),
		.now = elastic__now(),
		.t_heal = r->ip->t_heal,
		.t_heal_look = r->ip->t_heal_look,
	};

	switch (elastic__inplace_heal_look(&in)) {
	case ELASTIC_HEAL_END:
		r->ip->t_heal = 0;
		_move(r->ip, ELASTIC_INPLACE_HEAL_OVER);
		return;
	case ELASTIC_HEAL_WAIT:
		return; /* (a release under way drops its GPUs and acknowledges them) */
	default:
		break;
	}
	r->ip->t_heal_look = in.now;
	if (elastic__slurm_gpus(r->job, r->sets, &r->sets->seen, &err) < 0 ||
	    r->sets->seen.total >= r->sets->launched.total)
		return;
	char host[64];
	unsigned long daemon = 0;
	int orphans =
		elastic__daemon_gone(&r->sets->launched, &r->sets->seen,
				     elastic__self_host(), host, sizeof(host), &daemon);
	elastic__sets_take_seen(r->sets);
	elastic__gpuset_describe(&r->sets->launched, desc, sizeof(desc));
	elastic__say("GPUs now: %s", desc);
	/* The grant whose step hosted a node's daemon ended: the ranks on the
	 * node's other GPUs, which live on, ended with it. They are taken
	 * back at once by a re-form onto all the job's GPUs (a node with no
	 * daemon takes no rank in place). */
	if (orphans && elastic__stop_open(r->stop)) {
		elastic__say(
			"%s: the grant that hosted its daemon (job %lu) ended, and its ranks there with it: re-forming onto all %d GPUs at once (%d there)",
			host, daemon, r->sets->launched.total, orphans);
		act->replacing = 1;
		act->due = 1;
	}
	/* (elasticd hears it with the next progress) */
	r->job->ctl.gpus = r->sets->launched.total < r->ip->world
				   ? r->sets->launched.total
				   : r->ip->world;
}

/* Ranks were lost and the survivors healed in place at size. */
static void _healed(const struct elastic_inplace_run *r, unsigned long long step,
		    int size, struct elastic_record_act *act)
{
	elastic__say(
		"%d rank%s lost; the survivors healed in place at %d rank%s from step %llu (no relaunch)",
		r->ip->world - size, r->ip->world - size == 1 ? "" : "s", size,
		size == 1 ? "" : "s", step);
	elastic__recovery_resized(r->recov, &r->job->ctl, ELASTIC_RESIZE_HEAL,
				  elastic__recovery_heal_since(r->recov));
	r->ip->world = size;
	r->ip->t_heal = elastic__now();
	r->ip->t_heal_look = 0;
	_move(r->ip, ELASTIC_INPLACE_HEALED);
	_heal_shrink_set(r, act);
	if (r->job->have_ctl) {
		r->job->ctl.gpus =
			r->sets->launched.total < size ? r->sets->launched.total : size;
		elastic__orders_status(&r->job->ctl, step, -1, elastic__say);
	}
}

struct elastic_record_act elastic__watch_record(const struct elastic_inplace_run *r)
{
	struct elastic_record_act act = {.due = -1};
	unsigned long long step, seen;
	double t;
	int size;

	if (elastic__now() - r->progress->t_record_read < 0.1)
		return act;
	r->progress->t_record_read = elastic__now();
	if (elastic__progress_read(r->progress, &step, &seen, &t, &size) < 0)
		return act;
	/* A runtime that ends mpirun on a lost daemon still heals a rank lost
	 * alone (its daemon lives): said and counted, nothing else changes
	 * (no leave or heal machinery there; the GPU gets a rank again by a
	 * re-form, watch.c) */
	if (!r->job->in_place && r->ip->state != ELASTIC_INPLACE_JOINING) {
		if (size > 0 && size < r->ip->world) {
			elastic__say(
				"%d rank%s lost; the survivors healed in place at %d rank%s from step %llu (no relaunch)",
				r->ip->world - size, r->ip->world - size == 1 ? "" : "s",
				size, size == 1 ? "" : "s", step);
			elastic__recovery_resized(r->recov, &r->job->ctl,
						  ELASTIC_RESIZE_HEAL,
						  elastic__recovery_heal_since(r->recov));
			r->ip->world = size;
		}
		return act;
	}
	struct elastic_record_in in = {
		.in_place = r->job->in_place,
		.state = r->ip->state,
		.size = size,
		.world = r->ip->world,
		.leave_end = r->ip->leave_world - r->ip->leave_ranks,
		.join_end = r->ip->join_world,
		.heal_open = r->ip->t_heal != 0,
	};
	switch (elastic__inplace_on_record(&in)) {
	case ELASTIC_RECORD_LEFT:
		_shrink_done(r, step, size, &act);
		break;
	case ELASTIC_RECORD_JOINED:
		_grow_done(r, step, size, &act);
		break;
	case ELASTIC_RECORD_HEAL_LOOK:
		_heal_shrink_set(r, &act);
		break;
	case ELASTIC_RECORD_HEALED:
		_healed(r, step, size, &act);
		break;
	default:
		break;
	}
	return act;
}

/* ---- The run's re-forms, resizes in place and recoveries, fed to
 * decide.c's counts from the run's events; elasticd hears them with the
 * next progress (common/ctlclient). */

/* The counts go with the next status. */
static void _tell(const struct elastic_recovery *rc, struct elastic_ctlclient *ctl)
{
	ctl->rec = rc->n;
}

void elastic__recovery_reform(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			      const struct elastic_reform_in *in, double t_end)
{
	enum elastic_reform_cause cause = elastic__recovery_cause(in);
	double since = in->planned && rc->t_stop ? rc->t_stop
						 : elastic__recovery_since(rc, t_end);

	rc->n.reforms[cause]++;
	elastic__recovery_open(rc, since);
	rc->t_stop = rc->t_loss = 0;
	if (elastic__verbose)
		elastic__say("re-form cause: %s (%.0f ms before mpirun ended)",
			     elastic_reform_cause_name(cause), (t_end - since) * 1e3);
	_tell(rc, ctl);
}

void elastic__recovery_stopping(struct elastic_recovery *rc)
{
	rc->t_stop = elastic__now();
}

void elastic__recovery_rank_end(struct elastic_recovery *rc,
				const struct elastic_rank_end *e)
{
	if (elastic__recovery_is_loss(e->how, e->value))
		elastic__recovery_loss(rc, elastic__now());
}

double elastic__recovery_heal_since(const struct elastic_recovery *rc)
{
	return elastic__recovery_since(rc, rc->t_commit);
}

void elastic__recovery_resized(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			       enum elastic_resize_kind kind, double since)
{
	double now = elastic__now();

	rc->n.in_place[kind]++;
	elastic__recovery_observe(&rc->n, since ? now - since : 0);
	rc->t_stop = 0;
	if (kind == ELASTIC_RESIZE_HEAL)
		rc->t_loss = 0;
	/* (the world changed: its commits are seen from now) */
	rc->t_commit = now;
	_tell(rc, ctl);
}

void elastic__recovery_watch(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			     struct elastic_progress *pr, int world)
{
	unsigned long long step, seen;
	double t, now = elastic__now();
	int size;

	if (now - rc->t_read < 0.1)
		return;
	rc->t_read = now;
	if (elastic__progress_read(pr, &step, &seen, &t, &size) < 0)
		return;
	if (elastic__recovery_close(rc, now)) {
		rc->step_seen = step, rc->t_commit = now;
		_tell(rc, ctl);
		return;
	}
	/* a record of another world is a resize's (inplace_run.c's) */
	if (step != rc->step_seen && (size == 0 || size == world))
		rc->step_seen = step, rc->t_commit = now;
}
