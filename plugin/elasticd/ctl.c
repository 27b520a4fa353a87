/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctl.c: the controller: per tick, observe, decide (reconcile.c) and act.
 * Its state is ctl_int.h; what the channel brings is ctl_channel.c, the metrics
 * ctl_metrics.c. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "channel.h"
#include "ctl.h"
#include "ctl_int.h"
#include "log.h"
#include "plan.h"
#include "reconcile.h"
#include "slurm.h"
#include "statefile.h"

/* The measured scaling is written at most this often (and at the end). */
#define SCALING_SAVE_MS 60000

/* How long a released grant may take to end on its signal. */
#define ENDING_MS 5000
/* A grant that has just started may get the signal before its script set
 * its trap (SIGURG is ignored by default, and Slurm drops a signal to a
 * batch step not yet launched): it is sent again this often until it ends. */
#define RESIGNAL_MS 1000

/* A change whose next step has not come for this long is not waited for
 * any more (e.g. a grant Slurm refuses to submit): events at the idle pace. */
#define BUSY_FOR_MS 30000

struct ed_ctl *ed_ctl_create(const struct ed_ctl_conf *conf, ed_channel_t *ch)
{
	struct ed_ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->conf = *conf;
	c->ch = ch;
	/* Order ids unique across restarts: start from the clock. */
	c->next_order = ed_now_ms() * 1000;
	return c;
}

static struct ed_jobrt *_rt_add(struct ed_ctl *c, uint32_t job);

/* A model read back from the scaling file: the job's entry until the first
 * snapshot says whether it still runs (jobs gone are forgotten then). */
static void _take_scaling(void *arg, uint32_t job, const struct elastic_scaling *m)
{
	struct ed_ctl *c = arg;
	struct ed_jobrt *rt = _rt_add(c, job);

	if (rt) {
		rt->scal = *m;
		c->scaling_restored++;
	}
}

/* Each job's measured scaling, kept beside the state file (PATH.scaling):
 * read at start, written when it changed, at most once a minute, and at
 * the end. */
static void _scaling_restore(struct ed_ctl *c)
{
	elastic_error_t err = {""};

	if (ed_scaling_load(c->scaling_path, _take_scaling, c, &err) < 0)
		ed_error("%s: the measured scaling of later jobs is measured again",
			 err.text);
	if (c->scaling_restored)
		ed_info("measured scaling of %d jobs read back from %s",
			c->scaling_restored, c->scaling_path);
}

void ed_ctl_scaling_save(struct ed_ctl *c)
{
	elastic_error_t err = {""};
	const struct elastic_scaling **m;
	uint32_t *ids;
	int n = 0;

	if (!c->scaling_path[0] || !c->scaling_dirty || c->conf.dry_run)
		return;
	m = calloc((size_t)c->njobs + 1, sizeof(*m));
	ids = calloc((size_t)c->njobs + 1, sizeof(*ids));
	if (m && ids) {
		for (int i = 0; i < c->njobs; i++)
			if (c->jobs[i].scal.nobs) {
				ids[n] = c->jobs[i].job;
				m[n++] = &c->jobs[i].scal;
			}
		if (ed_scaling_save(c->scaling_path, n, ids, m, &err) < 0)
			ed_error("%s", err.text);
		else
			c->scaling_dirty = 0;
	}
	c->scaling_saved_ms = ed_now_ms();
	free(m);
	free(ids);
}

void ed_ctl_set_active(struct ed_ctl *c, int active)
{
	/* Order ids above any the elasticd before this one gave: jobs drop an
	 * order whose id is not above the last they saw. */
	if (active && !c->active && c->next_order < ed_now_ms() * 1000)
		c->next_order = ed_now_ms() * 1000;
	if (!active)
		c->stood_by = 1;
	else if (!c->active && c->stood_by) {
		char path[sizeof(c->admin_path)];
		snprintf(path, sizeof(path), "%s", c->admin_path);
		ed_ctl_admin_restore(c, path[0] ? path : NULL);
		c->tick_wanted = 1;
	}
	c->active = active;
}

void ed_ctl_admin_restore(struct ed_ctl *c, const char *path)
{
	elastic_error_t err = {""};
	char state[512];

	snprintf(c->admin_path, sizeof(c->admin_path), "%s", path ? path : "");
	if (!c->admin_path[0])
		return;
	if (snprintf(c->scaling_path, sizeof(c->scaling_path), "%s.scaling", path) <
	    (int)sizeof(c->scaling_path))
		_scaling_restore(c);
	else
		c->scaling_path[0] = '\0';
	if (ed_admin_load(&c->admin, c->admin_path, &err) < 0) {
		c->admin.cluster = ED_ADMIN_PAUSE;
		ed_error(
			"%s: elastic activity PAUSED until an administrator looks "
			"(elastic-ctl show; elastic-ctl pause/drain NODE again, then elastic-ctl resume)",
			err.text);
		return;
	}
	ed_admin_describe(&c->admin, state, sizeof(state));
	if (state[0])
		ed_info("elastic activity as administrators left it (%s): %s",
			c->admin_path, state);
}

void ed_ctl_set_plan(struct ed_ctl *c, const struct ed_plan_params *plan)
{
	c->conf.plan = *plan;
}

void ed_ctl_destroy(struct ed_ctl *c)
{
	if (!c)
		return;
	ed_ctl_scaling_save(c);
	free(c->jobs);
	free(c->rels);
	free(c->shorts);
	free(c->ending);
	free(c->node_names);
	free(c);
}

struct ed_jobrt *ed_ctl_job_rt(struct ed_ctl *c, uint32_t job)
{
	for (int i = 0; i < c->njobs; i++)
		if (c->jobs[i].job == job)
			return &c->jobs[i];
	return NULL;
}

static struct ed_jobrt *_rt_add(struct ed_ctl *c, uint32_t job)
{
	struct ed_jobrt *rt = ed_ctl_job_rt(c, job);
	if (rt)
		return rt;
	if (c->njobs == c->capjobs) {
		int cap = c->capjobs ? 2 * c->capjobs : 16;
		struct ed_jobrt *n = realloc(c->jobs, (size_t)cap * sizeof(*n));
		if (!n)
			return NULL;
		c->jobs = n;
		c->capjobs = cap;
	}
	rt = &c->jobs[c->njobs++];
	memset(rt, 0, sizeof(*rt));
	rt->job = job;
	return rt;
}

static struct ed_release *_rel(struct ed_ctl *c, uint32_t grant)
{
	for (int i = 0; i < c->nrels; i++)
		if (c->rels[i].grant == grant)
			return &c->rels[i];
	return NULL;
}

static struct ed_release *_rel_add(struct ed_ctl *c, uint32_t grant, uint32_t job)
{
	if (c->nrels == c->caprels) {
		int cap = c->caprels ? 2 * c->caprels : 16;
		struct ed_release *n = realloc(c->rels, (size_t)cap * sizeof(*n));
		if (!n)
			return NULL;
		c->rels = n;
		c->caprels = cap;
	}
	struct ed_release *r = &c->rels[c->nrels++];
	memset(r, 0, sizeof(*r));
	r->grant = grant;
	r->job = job;
	r->order = ++c->next_order;
	return r;
}

void ed_ctl_rel_remove(struct ed_ctl *c, struct ed_release *r)
{
	*r = c->rels[--c->nrels];
}

static void _send_release(struct ed_ctl *c, struct ed_release *r)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_RELEASE,
				.present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					   ELASTIC_K_GRANT | ELASTIC_K_DEADLINE,
				.job = r->job,
				.order = r->order,
				.grant = r->grant,
				.deadline_ms = r->deadline_ms};
	if (ed_channel_send_job(c->ch, r->job, &m) == 0) {
		r->sent = 1;
		ed_info("job %u: ordered release of grant %u (order %" PRIu64
			", deadline in %.1f s)",
			r->job, r->grant, r->order,
			(double)((int64_t)r->deadline_ms - (int64_t)ed_now_ms()) /
				1000.0);
	}
}

static void _send_target(struct ed_ctl *c, struct ed_jobrt *rt, int target)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_TARGET,
				.present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					   ELASTIC_K_TARGET,
				.job = rt->job,
				.order = ++c->next_order,
				.target = (uint32_t)target};
	if (ed_channel_send_job(c->ch, rt->job, &m) == 0) {
		rt->target_valid = 1;
		rt->target_sent = target;
	}
}

/* The grants a job was told of are bounded, and a job resized for days
 * gets thousands: forget those gone from slurmctld (released, ended; ids
 * are not reused). Once 64 had been told, no grant was announced any more
 * and the job never grew again. If all are still there, the oldest goes
 * (told again next tick: the job knows it already). */
static void _forget_announced(struct ed_jobrt *rt, const struct ed_snapshot *s)
{
	int k = 0;
	for (int i = 0; i < rt->nannounced; i++)
		for (int g = 0; g < s->ngrants; g++)
			if (s->grants[g].id == rt->announced[i]) {
				rt->announced[k++] = rt->announced[i];
				break;
			}
	rt->nannounced = k;
	if (rt->nannounced == ANNOUNCED_MAX) {
		rt->nannounced--;
		memmove(rt->announced, rt->announced + 1,
			sizeof(rt->announced[0]) * (size_t)rt->nannounced);
	}
}

static void _send_grant(struct ed_ctl *c, struct ed_jobrt *rt,
			const struct ed_rc_action *g, const struct ed_snapshot *s)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_GRANT,
				.present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					   ELASTIC_K_GRANT | ELASTIC_K_NODE |
					   ELASTIC_K_GPUS,
				.job = rt->job,
				.order = ++c->next_order,
				.grant = g->grant,
				.gpus = (uint32_t)g->gpus};
	if (rt->nannounced >= ANNOUNCED_MAX)
		_forget_announced(rt, s);
	snprintf(m.node, sizeof(m.node), "%s", s->nodes[g->node].name);
	if (ed_channel_send_job(c->ch, rt->job, &m) == 0) {
		rt->announced[rt->nannounced++] = g->grant;
		ed_info("job %u: told grant %u started (%d GPUs on %s)", rt->job,
			g->grant, g->gpus, m.node);
	}
}

/* 0 once cancelled (or in a dry run), -1 if Slurm did not take it. */
int ed_ctl_cancel(struct ed_ctl *c, uint32_t grant, uint32_t job, const char *why)
{
	elastic_error_t err;
	if (c->conf.dry_run) {
		ed_info("dry run: would cancel grant %u of job %u (%s)", grant, job, why);
		return 0;
	}
	if (ed_slurm_cancel(grant, &err) < 0) {
		ed_error("grant %u of job %u: %s", grant, job, err.text);
		return -1;
	}
	ed_info("job %u: cancelled grant %u (%s)", job, grant, why);
	return 0;
}

/* 1 while this tick may still make a Slurm call that can wait (what, for
 * job: ED_ACT_BUDGET_S); else 0, and a tick follows at once. */
static int _act_budget(struct ed_ctl *c, uint32_t job, const char *what)
{
	if (c->act_slurm_s < ED_ACT_BUDGET_S)
		return 1;
	ed_debug(
		"job %u: %s waits for the next tick (this one spent %.0f ms on Slurm calls that can wait)",
		job, what, c->act_slurm_s * 1e3);
	c->tick_wanted = 1;
	return 0;
}

/* A Slurm call that can wait, begun at t0 (ed_mono_s), is over: its time
 * counts against this tick's budget (_act_budget). */
static void _act_spent(struct ed_ctl *c, double t0)
{
	c->act_slurm_s += ed_mono_s() - t0;
}

/* _signal_end (below), timed against the tick's budget. */
static int _signal_end(struct ed_ctl *c, struct ed_ending *x, uint64_t now_ms,
		       const char *why);
static int _signal_end_timed(struct ed_ctl *c, struct ed_ending *x, uint64_t now_ms,
			     const char *why)
{
	double t0 = ed_mono_s();
	int r = _signal_end(c, x, now_ms, why);
	_act_spent(c, t0);
	return r;
}

/* Send ending grant x its end signal at now_ms. The first signal that
 * reaches it starts its ENDING_MS; while slurmctld does not answer it is
 * kept for the next try. One Slurm refuses to signal (not running) is
 * cancelled (why). Returns 1 to keep x in the list, 0 once cancelled. */
static int _signal_end(struct ed_ctl *c, struct ed_ending *x, uint64_t now_ms,
		       const char *why)
{
	elastic_error_t err;
	if (ed_slurm_end_grant(x->grant, &err) == 0) {
		if (!x->signalled)
			x->by_ms = now_ms + ENDING_MS;
		x->signalled = 1;
	} else if (!x->signalled && !ed_slurm_ctld_down()) {
		ed_debug("job %u: %s: cancelling it", x->job, err.text);
		ed_ctl_cancel(c, x->grant, x->job, why);
		return 0;
	} else {
		ed_debug("job %u: %s", x->job, err.text);
	}
	x->resignal_ms = now_ms + RESIGNAL_MS;
	return 1;
}

/* Room for one more ending grant at c->ending[c->nending]: 0, or -1 out
 * of memory. */
static int _ending_room(struct ed_ctl *c)
{
	if (c->nending < c->capending)
		return 0;
	int cap = c->capending ? 2 * c->capending : 8;
	struct ed_ending *n = realloc(c->ending, (size_t)cap * sizeof(*n));
	if (!n)
		return -1;
	c->ending = n;
	c->capending = cap;
	return 0;
}

/* A running grant whose work is done (its job released it, or ended) ends
 * as done, COMPLETED in sacct: its script exits 0 on a signal. One that
 * cannot be signalled is cancelled now, one that ignores the signal (an
 * older elasticd's) at the first tick after ENDING_MS (_ending_settle). */
void ed_ctl_end_released(struct ed_ctl *c, uint32_t grant, uint32_t job, const char *why)
{
	struct ed_ending *e;

	if (c->conf.dry_run) {
		ed_info("dry run: would end grant %u of job %u (%s)", grant, job, why);
		return;
	}
	if (_ending_room(c) < 0) {
		ed_ctl_cancel(c, grant, job, why);
		return;
	}
	e = &c->ending[c->nending];
	*e = (struct ed_ending){.grant = grant, .job = job};
	if (!_act_budget(c, job, "the end signal of a released grant")) {
		c->nending++; /* signalled by the next tick (_ending_settle) */
		ed_info("job %u: grant %u ends at the next tick (%s)", job, grant, why);
		return;
	}
	if (!_signal_end_timed(c, e, ed_now_ms(), why))
		return;
	c->nending++;
	if (e->signalled)
		ed_info("job %u: ended grant %u (%s)", job, grant, why);
	else
		ed_info("job %u: grant %u ends once slurmctld answers (%s)", job, grant,
			why);
}

#define GIVEN_BACK "given back by the job: unusable"

/* A given-back grant Slurm could not cancel because slurmctld is away joins
 * the ending grants: left out of each tick's snapshot (its GPUs free, as
 * its job cannot use them), cancelled at the first tick slurmctld answers.
 * Its job tells it again only after a new hello. */
void ed_ctl_cancel_given_back(struct ed_ctl *c, uint32_t grant, uint32_t job)
{
	/* Any failure is tried again: whether slurmctld is down is read apart
	 * from the call, and a ping answered in between would drop the
	 * cancel, leaving the grant held and used by no one. A grant that
	 * ended meanwhile leaves the list at the next tick (_ending_settle). */
	if (ed_ctl_cancel(c, grant, job, GIVEN_BACK) == 0 || _ending_room(c) < 0)
		return;
	c->ending[c->nending++] =
		(struct ed_ending){.grant = grant, .job = job, .given_back = 1};
	ed_info("job %u: grant %u is cancelled once slurmctld answers (%s)", job, grant,
		GIVEN_BACK);
}

/* Grants signalled to end (_end_released) that still run are left out of
 * the tick's snapshot, their GPUs free as a cancelled grant's are (a grant
 * submitted there meanwhile starts once they are). The signal goes again
 * every RESIGNAL_MS; one that runs ENDING_MS past its first signal is
 * cancelled. One whose job released it while slurmctld was away gets its
 * first signal at the first tick slurmctld answers. */
static void _ending_settle(struct ed_ctl *c, struct ed_snapshot *s, uint64_t now_ms)
{
	int kept = 0;

	for (int e = 0; e < c->nending; e++) {
		struct ed_ending x = c->ending[e];
		int g = 0;
		while (g < s->ngrants && s->grants[g].id != x.grant)
			g++;
		if (g == s->ngrants)
			continue; /* ended */
		s->grants[g] = s->grants[--s->ngrants];
		if (x.given_back) {
			double t0 = ed_mono_s();
			if (!_act_budget(c, x.job, "the cancel of a grant given back") ||
			    ed_ctl_cancel(c, x.grant, x.job, GIVEN_BACK) < 0)
				c->ending[kept++] = x; /* again at the next tick */
			_act_spent(c, t0);
			continue;
		}
		if (x.signalled && now_ms >= x.by_ms) {
			/* (any failure again: as for a grant given back) */
			if (ed_ctl_cancel(c, x.grant, x.job,
					  "its work done, it did not end on its signal") <
			    0)
				c->ending[kept++] = x; /* again at the next tick */
			continue;
		}
		if ((!x.signalled || now_ms >= x.resignal_ms) &&
		    _act_budget(c, x.job, "a released grant's end signal") &&
		    !_signal_end_timed(c, &x, now_ms,
				       "its work done, it cannot be signalled"))
			continue;
		c->ending[kept++] = x;
	}
	c->nending = kept;
}

/* Submit a grant of a->gpus for job j on node (reconcile.c chose its size).
 * Returns 1 if it was submitted. */
static int _grow(struct ed_ctl *c, const struct ed_snapshot *s, const struct ed_job *j,
		 struct ed_jobrt *rt, const struct ed_rc_action *a, time_t now)
{
	elastic_error_t err;
	uint32_t gid;
	if (c->conf.dry_run) {
		ed_info("dry run: would grant job %u %d GPUs on %s", j->id, a->gpus,
			s->nodes[a->node].name);
		return 0;
	}
	if (ed_slurm_submit_grant(j, s->nodes[a->node].name, a->gpus,
				  c->conf.grant_prefix, c->conf.grant_qos, &gid,
				  &err) < 0) {
		/* Once a minute per job and reason, not every tick. */
		if (strcmp(err.text, rt->last_error) != 0 ||
		    now - rt->last_error_time >= 60) {
			ed_error("job %u: %s", j->id, err.text);
			snprintf(rt->last_error, sizeof(rt->last_error), "%s", err.text);
			rt->last_error_time = now;
		}
		return 0;
	}
	ed_info("job %u: growing %d -> %d GPUs: grant %u submitted (%d GPUs on %s)",
		j->id, a->from, a->to, gid, a->gpus, s->nodes[a->node].name);
	return 1;
}

/* The release of action a (ordered now, or resumed after a restart),
 * remembered with its deadline. */
static struct ed_release *_remember(struct ed_ctl *c, const struct ed_rc_action *a,
				    uint64_t now_ms)
{
	struct ed_release *r = _rel_add(c, a->grant, a->job);
	if (r) {
		r->ordered_ms = now_ms;
		r->deadline_ms = a->deadline_ms;
	}
	return r;
}

/* Phase one of a shrink (the reconcile chose the grant and its deadline):
 * remember the release, mark it in slurmctld (a restarted elasticd keeps
 * the deadline), tell the job. */
static void _release(struct ed_ctl *c, const struct ed_snapshot *s,
		     const struct ed_rc_action *a, uint64_t now_ms)
{
	const struct ed_job *j = &s->jobs[a->ji];
	struct ed_release *r;
	elastic_error_t err;
	if (c->conf.dry_run) {
		ed_info("dry run: would release grant %u of job %u", a->grant, a->job);
		return;
	}
	if (!(r = _remember(c, a, now_ms)))
		return;
	ed_info("job %u: shrinking %d -> %d GPUs: release of grant %u (%d GPUs on %s), grace %d s",
		a->job, a->from, a->to, a->grant, a->gpus, s->nodes[a->node].name,
		j->grace);
	if (ed_slurm_mark_release(a->grant, a->job, r->deadline_ms, &err) < 0)
		ed_error("job %u: %s (the deadline is kept in memory only)", a->job,
			 err.text);
	_send_release(c, r);
}

static void _resume(struct ed_ctl *c, const struct ed_rc_action *a, uint64_t now_ms)
{
	struct ed_release *r = _remember(c, a, now_ms);
	if (r)
		ed_info("job %u: release of grant %u was ordered before (deadline in %.1f s): resuming it",
			a->job, a->grant,
			(double)((int64_t)r->deadline_ms - (int64_t)now_ms) / 1000.0);
}

static void _forget(struct ed_ctl *c, uint32_t grant)
{
	struct ed_release *r = _rel(c, grant);
	if (r)
		ed_ctl_rel_remove(c, r);
}

/* Act: carry out actions [from, rc->nacts) in order. grown[ji] counts the
 * grants submitted per job. */
static void _act(struct ed_ctl *c, const struct ed_snapshot *s, const struct ed_rc *rc,
		 int from, int *grown, uint64_t now_ms)
{
	for (int k = from; k < rc->nacts; k++) {
		const struct ed_rc_action *a = &rc->acts[k];
		struct ed_jobrt *rt = ed_ctl_job_rt(c, a->job);
		struct ed_release *r;
		if (a->kind == ED_RC_CANCEL || a->kind == ED_RC_RELEASE ||
		    a->kind == ED_RC_GROW || a->kind == ED_RC_ANNOUNCE)
			c->last_action_ms = now_ms;
		switch (a->kind) {
		case ED_RC_CANCEL:
			if (a->done)
				ed_ctl_end_released(c, a->grant, a->job, a->why);
			else
				ed_ctl_cancel(c, a->grant, a->job, a->why);
			_forget(c, a->grant);
			break;
		case ED_RC_RESUME:
			_resume(c, a, now_ms);
			break;
		case ED_RC_SEND_RELEASE:
			if ((r = _rel(c, a->grant)) != NULL)
				_send_release(c, r);
			break;
		case ED_RC_FORGET:
			_forget(c, a->grant); /* the grant is gone already */
			break;
		case ED_RC_EXPLAIN:
			ed_info("%s", a->why);
			break;
		case ED_RC_RELEASE:
			_release(c, s, a, now_ms);
			break;
		case ED_RC_GROW: {
			if (!_act_budget(c, a->job, "its grant's submission"))
				break;
			double t0 = ed_mono_s();
			grown[a->ji] += _grow(c, s, &s->jobs[a->ji], rt, a,
					      (time_t)(now_ms / 1000));
			_act_spent(c, t0);
			break;
		}
		case ED_RC_TARGET:
			_send_target(c, rt, a->gpus);
			break;
		case ED_RC_ANNOUNCE:
			_send_grant(c, rt, a, s);
			break;
		}
	}
}

/* Bring the job table up to date with snapshot s: add new jobs, refresh
 * known ones, mark which are here (seen). Ended jobs stay (seen 0). */
int ed_ctl_observe_jobs(struct ed_ctl *c, const struct ed_snapshot *s)
{
	for (int i = 0; i < c->njobs; i++)
		c->jobs[i].seen = 0;
	for (int i = 0; i < s->njobs; i++) {
		const struct ed_job *j = &s->jobs[i];
		struct ed_jobrt *rt = _rt_add(c, j->id);
		if (!rt)
			return -1;
		if (!rt->seen && !rt->user[0])
			ed_info("job %u: elastic job of %s (min %d, max %d, grace %d s) %s",
				j->id, j->user, j->min, j->max, j->grace,
				j->running ? "running" : "pending");
		rt->seen = 1;
		rt->uid = j->uid;
		rt->running = j->running;
		rt->min = j->min;
		rt->max = j->max;
		snprintf(rt->user, sizeof(rt->user), "%s", j->user);
	}
	return 0;
}

/* Observe: slurmctld's snapshot into s, the job table (ended jobs leave it
 * and the channel). Returns -1 when there is nothing to act on. */
/* The node names administrators may name (elastic-ctl drain NODE). */
static void _observe_nodes(struct ed_ctl *c, const struct ed_snapshot *s)
{
	char(*names)[ED_NAME_MAX] =
		realloc(c->node_names, ((size_t)s->nnodes + 1) * sizeof(*names));
	if (!names)
		return;
	c->node_names = names;
	for (int k = 0; k < s->nnodes; k++)
		snprintf(names[k], sizeof(names[k]), "%s", s->nodes[k].name);
	c->nnode_names = s->nnodes;
	/* Free: what neither other jobs nor the elastic jobs and their
	 * running grants hold. */
	int total = 0, free_gpus = 0;
	for (int k = 0; k < s->nnodes; k++) {
		total += s->nodes[k].gpus;
		if (s->nodes[k].gpus > s->nodes[k].busy)
			free_gpus += s->nodes[k].gpus - s->nodes[k].busy;
	}
	c->grants_pending = c->grants_running = 0;
	for (int i = 0; i < s->njobs; i++)
		for (int q = 0; q < s->jobs[i].nlead; q++)
			free_gpus -= s->jobs[i].lead[q].gpus;
	for (int g = 0; g < s->ngrants; g++) {
		if (s->grants[g].state == ED_GRANT_RUNNING) {
			free_gpus -= s->grants[g].gpus;
			c->grants_running++;
		} else {
			c->grants_pending++;
		}
	}
	c->gpus_total = total;
	c->gpus_free = free_gpus > 0 ? free_gpus : 0;
}

static int _observe(struct ed_ctl *c, struct ed_snapshot *s, time_t now)
{
	elastic_error_t err;
	if (ed_slurm_snapshot(c->conf.grant_prefix, s, &err) < 0) {
		/* slurmctld down or busy: say so at once, then once a minute. */
		if (!c->snap_fail_since || now - c->snap_fail_logged >= 60) {
			ed_error(
				"no snapshot of slurmctld: %s (nothing changes until it answers)",
				err.text);
			c->snap_fail_logged = now;
		}
		if (!c->snap_fail_since)
			c->snap_fail_since = now;
		c->snapshot_ok = 0;
		return -1;
	}
	c->snapshot_ok = 1;
	if (c->snap_fail_since) {
		ed_info("slurmctld answers again (after %ld s)",
			(long)(now - c->snap_fail_since));
		c->snap_fail_since = 0;
	}
	if (ed_ctl_observe_jobs(c, s) < 0) {
		ed_snapshot_free(s);
		return -1;
	}
	_observe_nodes(c, s);
	for (int i = 0; i < c->njobs;) {
		if (!c->jobs[i].seen) {
			ed_info("job %u: ended or no longer elastic", c->jobs[i].job);
			if (c->jobs[i].scal.nobs)
				c->scaling_dirty = 1;
			ed_channel_drop_job(c->ch, c->jobs[i].job);
			c->jobs[i] = c->jobs[--c->njobs];
		} else {
			i++;
		}
	}
	return 0;
}

/* Observe, part two: what decide needs of the controller's memory. */
static int _rc_input(struct ed_ctl *c, const struct ed_snapshot *s, uint64_t now_ms,
		     struct ed_rc_in *in)
{
	struct ed_rc_job *jobs = calloc((size_t)s->njobs + 1, sizeof(*jobs));
	struct ed_rc_release *rels = calloc((size_t)c->nrels + 1, sizeof(*rels));
	if (!jobs || !rels) {
		free(jobs);
		free(rels);
		return -1;
	}
	for (int i = 0; i < s->njobs; i++) {
		const struct ed_jobrt *rt = ed_ctl_job_rt(c, s->jobs[i].id);
		jobs[i] = (struct ed_rc_job){
			.connected = ed_channel_job_connected(c->ch, rt->job),
			.target = rt->target,
			.target_valid = rt->target_valid,
			.target_sent = rt->target_sent,
			.announced = rt->announced,
			.nannounced = rt->nannounced,
			.last_resize = rt->last_resize};
	}
	for (int i = 0; i < c->nrels; i++)
		rels[i] = (struct ed_rc_release){.grant = c->rels[i].grant,
						 .job = c->rels[i].job,
						 .deadline_ms = c->rels[i].deadline_ms,
						 .sent = c->rels[i].sent,
						 .acked = c->rels[i].acked};
	*in = (struct ed_rc_in){.s = s,
				.jobs = jobs,
				.rels = rels,
				.nrels = c->nrels,
				.shorts = c->shorts,
				.nshorts = c->nshorts,
				.now_ms = now_ms};
	return 0;
}

/* Remember what each job holds and runs (elastic-ctl status shows it). */
static void _keep_holdings(struct ed_ctl *c, const struct ed_snapshot *s,
			   const struct ed_rc *rc)
{
	for (int i = 0; i < s->njobs; i++) {
		struct ed_jobrt *rt = ed_ctl_job_rt(c, s->jobs[i].id);
		const struct ed_rc_hold *h = &rc->jobs[i];
		rt->ngrants = h->ngrants;
		rt->last_resize = h->last_resize;
		rt->cur = h->cur_gpus;
		snprintf(rt->nodes, sizeof(rt->nodes), "%s", h->nodes);
	}
}

/* ... and, once the moves are done, its target and state. */
static void _keep_states(struct ed_ctl *c, const struct ed_snapshot *s,
			 const struct ed_plan *plan, const struct ed_rc *rc,
			 const int *grown)
{
	for (int i = 0; i < plan->ntargets && i < s->njobs; i++) {
		struct ed_jobrt *rt = ed_ctl_job_rt(c, s->jobs[i].id);
		const struct ed_rc_hold *h = &rc->jobs[i];
		rt->target = plan->targets[i].gpus;
		rt->state = ed_rc_state(s->jobs[i].running, h->releasing,
					h->pending + grown[i], rt->target, rt->cur);
		rt->last_resize = h->last_resize;
	}
}

/* The policy's targets for what the jobs hold (ed_rc_grants), within what
 * administrators paused or drained: a paused cluster keeps every job at
 * what it holds; paused and drained nodes take no new grants, and grants
 * on drained nodes count as excess (released within their grace). */
static int _plan(struct ed_ctl *c, struct ed_snapshot *s, const struct ed_rc *rc,
		 time_t now, struct ed_plan *plan, elastic_error_t *err)
{
	size_t nj = (size_t)s->njobs + 1;
	const struct elastic_policy_place **held = calloc(nj, sizeof(*held));
	struct elastic_policy_place **kept = calloc(nj, sizeof(*kept));
	int *nheld = calloc(nj, sizeof(*nheld)), *nkept = calloc(nj, sizeof(*nkept));
	time_t *last = calloc(nj, sizeof(*last));
	const struct elastic_scaling **scal = calloc(nj, sizeof(*scal));
	int ret = -1;
	if (!held || !kept || !nheld || !nkept || !last || !scal)
		goto nomem;
	for (int i = 0; i < s->njobs; i++) {
		const struct ed_jobrt *rt = ed_ctl_job_rt(c, s->jobs[i].id);
		scal[i] = rt ? &rt->scal : NULL;
		held[i] = rc->jobs[i].held;
		nheld[i] = rc->jobs[i].nheld;
		last[i] = rc->jobs[i].last_resize;
		if (!(kept[i] = calloc((size_t)nheld[i] + 1, sizeof(**kept))))
			goto nomem;
	}
	if (c->admin.cluster == ED_ADMIN_PAUSE) {
		ret = ed_admin_hold_plan(s, held, nheld, plan);
		if (ret < 0)
			elastic__errorf(err, "out of memory");
		goto out;
	}
	ed_admin_bound(&c->admin, s, held, nheld, kept, nkept);
	ret = ed_plan_compute(s, (const struct elastic_policy_place *const *)kept, nkept,
			      last, scal, &c->conf.plan, now, plan, err);
	goto out;
nomem:
	elastic__errorf(err, "out of memory");
out:
	for (int i = 0; kept && i < s->njobs; i++)
		free(kept[i]);
	free(kept);
	free(nkept);
	free(held);
	free(nheld);
	free(last);
	free(scal);
	return ret;
}

const double ed_tick_le[ED_TICK_BUCKETS - 1] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
						0.1,   0.2,   0.5,   1,	   2,	 5};

const char *const ed_tick_phase[ED_PHASES] = {"observe", "decide", "act"};

/* Adds the time since *t to the tick's phase ph, and starts the next. */
static void _phase(struct ed_ctl *c, int ph, double *t)
{
	double now = ed_mono_s();
	c->tick_phase_s[ph] += now - *t;
	*t = now;
}

static void _tick(struct ed_ctl *c);

/* What a slow tick (what) of s seconds waited on, for people: its phases
 * (ms since ph0; NULL: none) and its Slurm calls (since calls0), the
 * slowest kind first. */
static void _slow_what(const struct ed_ctl *c, const char *what, double s, double cpu_s,
		       double runq_s, const double *ph0, const struct ed_calls *calls0,
		       char *buf, size_t len)
{
	struct ed_calls now;
	int done[ED_CALLS] = {0};
	size_t o;

	ed_slurm_calls(&now);
	o = (size_t)snprintf(buf, len, "%s took %.0f ms (", what, s * 1e3);
	for (int p = 0; ph0 && p < ED_PHASES && o < len; p++)
		o += (size_t)snprintf(buf + o, len - o, "%s %.0f ms, ", ed_tick_phase[p],
				      (c->tick_phase_s[p] - ph0[p]) * 1e3);
	if (o < len)
		o += (size_t)snprintf(
			buf + o, len - o,
			"CPU %.0f ms, waiting for a CPU %.0f ms); Slurm calls:",
			cpu_s * 1e3, runq_s * 1e3);
	for (int round = 0, any = 0; round < ED_CALLS && o < len; round++) {
		int k = -1;
		for (int i = 0; i < ED_CALLS; i++)
			if (!done[i] && now.n[i] > calls0->n[i] &&
			    (k < 0 || now.s[i] - calls0->s[i] > now.s[k] - calls0->s[k]))
				k = i;
		if (k < 0) {
			if (!any)
				snprintf(buf + o, len - o, " none");
			break;
		}
		done[k] = any = 1;
		o += (size_t)snprintf(buf + o, len - o, "%s %s %" PRIu64 " (%.0f ms)",
				      round ? "," : "", ed_call_name[k],
				      now.n[k] - calls0->n[k],
				      (now.s[k] - calls0->s[k]) * 1e3);
	}
}

void ed_ctl_slow(struct ed_ctl *c, const char *what, double s, double cpu_s,
		 double runq_s, const double *ph0, const struct ed_calls *calls0)
{
	uint64_t now = ed_now_ms();
	int quiet = now - c->slow_said_ms >= ED_SLOW_TICK_EVERY_MS;

	if (s >= ED_SLOW_TICK_S) {
		char text[sizeof(c->slow_worst)];
		_slow_what(c, what, s, cpu_s, runq_s, ph0, calls0, text, sizeof(text));
		if (quiet && !c->slow_unsaid) {
			ed_info("%s", text);
			c->slow_said_ms = now;
			return;
		}
		c->slow_unsaid++;
		if (s > c->slow_worst_s) {
			c->slow_worst_s = s;
			memcpy(c->slow_worst, text, sizeof(text));
		}
	}
	if (c->slow_unsaid && quiet) {
		ed_info("%d more over %.0f ms in %.0f s; the slowest: %s", c->slow_unsaid,
			ED_SLOW_TICK_S * 1e3, (now - c->slow_said_ms) / 1e3,
			c->slow_worst);
		c->slow_unsaid = 0;
		c->slow_worst_s = 0;
		c->slow_said_ms = now;
	}
}

static int _tick_bucket(double s)
{
	int k = 0;
	while (k < ED_TICK_BUCKETS - 1 && s > ed_tick_le[k])
		k++;
	return k;
}

/* A tick, timed for the metrics' histograms (slurm_elastic_tick_seconds,
 * and slurm_elastic_tick_less_cpu_wait_seconds: less the time it waited
 * for a CPU, which is the host's load, not elasticd's work). */
void ed_ctl_tick(struct ed_ctl *c)
{
	double a = ed_mono_s(), cpu = ed_cpu_s(), q = ed_runq_s(), s, ph0[ED_PHASES];
	struct ed_calls calls0;

	memcpy(ph0, c->tick_phase_s, sizeof(ph0));
	ed_slurm_calls(&calls0);
	_tick(c);
	c->act_slurm_s = 0; /* the calls of handlers between ticks wait for none */
	s = ed_mono_s() - a;
	q = ed_runq_s() - q;
	if (q < 0 || q > s)
		q = q < 0 ? 0 : s;
	c->tick_bucket[_tick_bucket(s)]++;
	c->tick_sum_s += s;
	c->tick_own_bucket[_tick_bucket(s - q)]++;
	c->tick_own_sum_s += s - q;
	c->tick_runq_s += q;
	c->ticks++;
	ed_ctl_slow(c, "a tick", s, ed_cpu_s() - cpu, q, ph0, &calls0);
}

/* Observe slurmctld and the jobs, act on grants and releases, decide the
 * split and act on it. */
static void _tick(struct ed_ctl *c)
{
	struct ed_snapshot s;
	struct ed_plan plan;
	struct ed_rc_in in = {0};
	struct ed_rc rc = {0};
	elastic_error_t err;
	uint64_t now_ms = ed_now_ms();
	time_t now = (time_t)(now_ms / 1000);
	int *grown = NULL, from;
	double t = ed_mono_s();

	c->last_tick_ms = now_ms;
	c->tick_wanted = 0;
	c->act_slurm_s = 0;
	int observed = _observe(c, &s, now) == 0;
	_phase(c, ED_PHASE_OBSERVE, &t);
	if (!observed)
		return;
	_ending_settle(c, &s, now_ms);
	grown = calloc((size_t)s.njobs + 1, sizeof(*grown));
	if (!grown || _rc_input(c, &s, now_ms, &in) < 0)
		goto out;
	if (ed_rc_grants(&in, &rc) < 0)
		goto out;
	/* the grants found without room, for the next tick to confirm */
	free(c->shorts);
	c->shorts = rc.shorts, c->nshorts = rc.nshorts;
	rc.shorts = NULL;
	in.shorts = NULL, in.nshorts = 0;
	_phase(c, ED_PHASE_DECIDE, &t);
	_act(c, &s, &rc, 0, grown, now_ms);
	_phase(c, ED_PHASE_ACT, &t);
	_keep_holdings(c, &s, &rc);
	if (_plan(c, &s, &rc, now, &plan, &err) < 0) {
		if (strcmp(err.text, c->last_plan_error) != 0)
			ed_error("policy refused this tick's input: %s", err.text);
		snprintf(c->last_plan_error, sizeof(c->last_plan_error), "%s", err.text);
		goto out;
	}
	c->last_plan_error[0] = '\0';
	from = rc.nacts;
	if (ed_rc_moves(&in, &plan, &rc) == 0) {
		_phase(c, ED_PHASE_DECIDE, &t);
		_act(c, &s, &rc, from, grown, now_ms);
		_phase(c, ED_PHASE_ACT, &t);
		_keep_states(c, &s, &plan, &rc, grown);
	}
	ed_plan_free(&plan);
out:
	_phase(c, ED_PHASE_DECIDE, &t);
	ed_rc_free(&rc);
	free((void *)in.jobs);
	free((void *)in.rels);
	free(grown);
	ed_snapshot_free(&s);
	if (c->scaling_dirty && now_ms - c->scaling_saved_ms >= SCALING_SAVE_MS)
		ed_ctl_scaling_save(c);
}

uint64_t ed_ctl_next_deadline(const struct ed_ctl *c)
{
	uint64_t first = 0;
	for (int i = 0; i < c->nrels; i++)
		if (!first || c->rels[i].deadline_ms < first)
			first = c->rels[i].deadline_ms;
	for (int i = 0; i < c->nending; i++)
		if (c->ending[i].by_ms && (!first || c->ending[i].by_ms < first))
			first = c->ending[i].by_ms;
	return first;
}

int ed_ctl_busy(const struct ed_ctl *c)
{
	if (ed_now_ms() - c->last_action_ms > BUSY_FOR_MS)
		return 0;
	if (c->nrels > 0)
		return 1;
	for (int i = 0; i < c->njobs; i++)
		if (c->jobs[i].state == ELASTIC_STATE_GROWING ||
		    c->jobs[i].state == ELASTIC_STATE_SHRINKING ||
		    /* a job the split starts: its grants follow its start */
		    (c->jobs[i].state == ELASTIC_STATE_PENDING && c->jobs[i].target > 0))
			return 1;
	return 0;
}

int ed_ctl_tick_wanted(const struct ed_ctl *c)
{
	return c->tick_wanted;
}
