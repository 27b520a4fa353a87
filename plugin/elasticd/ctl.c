/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctl.c: the controller: per tick, observe, decide (reconcile.c) and act.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "channel.h"
#include "ctl.h"
#include "log.h"
#include "plan.h"
#include "reconcile.h"
#include "slurm.h"
#include "statefile.h"

#define ANNOUNCED_MAX 64
/* A rate measured this long ago weighs half as much as one measured now. */
#define SCALING_HALF_LIFE_S 600.0
/* The measured scaling is written at most this often (and at the end). */
#define SCALING_SAVE_MS 60000

/* What elasticd remembers about an elastic job between ticks. All of it can
 * be lost (restart): it is rebuilt from slurmctld and the job's hello. */
struct _jobrt {
	uint32_t job;
	uid_t uid;
	int running, seen;
	char user[ED_NAME_MAX];
	int min, max;
	time_t last_resize;
	/* what the job was told */
	int target_valid;
	int target_sent;
	uint32_t announced[ANNOUNCED_MAX];
	int nannounced;
	/* what it reported */
	int reported;
	uint64_t step;
	double rate;
	uint32_t ranks; /* GPUs in use (its ranks training), from HELLO/STATUS */
	/* its measured scaling (the throughput policy): each STATUS rate taken
	 * while the job trains on all its GPUs at the ranks of the STATUS
	 * before it (_observe_rate) */
	struct elastic_scaling scal;
	uint32_t obs_ranks;
	struct elastic_recovery_counts rec; /* re-forms..., from STATUS (cumulative) */
	/* the last grant submission error, to log it once a minute */
	char last_error[256];
	time_t last_error_time;
	/* status, computed at each tick */
	int target, cur, ngrants;
	enum elastic_job_state state;
	char nodes[ELASTIC_PROTO_NODES_MAX];
};

/* A release ordered (phase one) and not yet done (phase two: cancel). */
struct _release {
	uint32_t grant, job;
	uint64_t order;
	uint64_t deadline_ms;
	uint64_t ordered_ms;
	int sent, acked, seen;
};

/* A grant its job released, signalled to end as done (ed_slurm_end_grant):
 * cancelled if it still runs at by_ms (_signal_end, _ending_settle). */
struct _ending {
	uint32_t grant, job;
	int signalled; /* 0: slurmctld was away: ENDING_MS counts from the first signal */
	uint64_t by_ms, resignal_ms;
};

/* How long a released grant may take to end on its signal. */
#define ENDING_MS 5000
/* A grant that has just started may get the signal before its script set
 * its trap (SIGURG is ignored by default, and Slurm drops a signal to a
 * batch step not yet launched): it is sent again this often until it ends. */
#define RESIGNAL_MS 1000

struct ed_ctl {
	struct ed_ctl_conf conf;
	ed_channel_t *ch;
	struct _jobrt *jobs;
	int njobs, capjobs;
	struct _release *rels;
	int nrels, caprels;
	struct _ending *ending;
	int nending, capending;
	uint64_t next_order;
	uint64_t last_tick_ms;
	uint64_t full_for_unknown_ms; /* the last whole list read for an unknown job */
	time_t snap_fail_since, snap_fail_logged;
	char last_plan_error[256];
	int tick_wanted;	 /* a handler asked for a tick after this poll */
	uint64_t last_action_ms; /* last grant submitted, release ordered or
				    done, grant announced */
	struct ed_admin admin;	 /* paused or drained by administrators */
	char admin_path[4096];	 /* its state file ("": not kept) */
	char scaling_path[4200]; /* admin_path.scaling ("": not kept) */
	int scaling_dirty;	 /* a model changed since it was written */
	int scaling_restored;
	uint64_t scaling_saved_ms;
	char (*node_names)[ED_NAME_MAX]; /* nodes of the last snapshot */
	int nnode_names;
	/* of the last snapshot, for the metrics */
	int gpus_total, gpus_free, grants_pending, grants_running;
	int snapshot_ok;
	int active;   /* holds the controller role (ed_ctl_set_active) */
	int stood_by; /* stood by since its start: state to read again */
};

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

static struct _jobrt *_rt_add(struct ed_ctl *c, uint32_t job);

/* A model read back from the scaling file: the job's entry until the first
 * snapshot says whether it still runs (jobs gone are forgotten then). */
static void _take_scaling(void *arg, uint32_t job, const struct elastic_scaling *m)
{
	struct ed_ctl *c = arg;
	struct _jobrt *rt = _rt_add(c, job);

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
	free(c->ending);
	free(c->node_names);
	free(c);
}

static struct _jobrt *_rt(struct ed_ctl *c, uint32_t job)
{
	for (int i = 0; i < c->njobs; i++)
		if (c->jobs[i].job == job)
			return &c->jobs[i];
	return NULL;
}

static struct _jobrt *_rt_add(struct ed_ctl *c, uint32_t job)
{
	struct _jobrt *rt = _rt(c, job);
	if (rt)
		return rt;
	if (c->njobs == c->capjobs) {
		int cap = c->capjobs ? 2 * c->capjobs : 16;
		struct _jobrt *n = realloc(c->jobs, (size_t)cap * sizeof(*n));
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

static struct _release *_rel(struct ed_ctl *c, uint32_t grant)
{
	for (int i = 0; i < c->nrels; i++)
		if (c->rels[i].grant == grant)
			return &c->rels[i];
	return NULL;
}

static struct _release *_rel_add(struct ed_ctl *c, uint32_t grant, uint32_t job)
{
	if (c->nrels == c->caprels) {
		int cap = c->caprels ? 2 * c->caprels : 16;
		struct _release *n = realloc(c->rels, (size_t)cap * sizeof(*n));
		if (!n)
			return NULL;
		c->rels = n;
		c->caprels = cap;
	}
	struct _release *r = &c->rels[c->nrels++];
	memset(r, 0, sizeof(*r));
	r->grant = grant;
	r->job = job;
	r->order = ++c->next_order;
	return r;
}

static void _rel_remove(struct ed_ctl *c, struct _release *r)
{
	*r = c->rels[--c->nrels];
}

static void _send_release(struct ed_ctl *c, struct _release *r)
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

static void _send_target(struct ed_ctl *c, struct _jobrt *rt, int target)
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
static void _forget_announced(struct _jobrt *rt, const struct ed_snapshot *s)
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

static void _send_grant(struct ed_ctl *c, struct _jobrt *rt, const struct ed_rc_action *g,
			const struct ed_snapshot *s)
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
static int _cancel(struct ed_ctl *c, uint32_t grant, uint32_t job, const char *why)
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

/* Send ending grant x its end signal at now_ms. The first signal that
 * reaches it starts its ENDING_MS; while slurmctld does not answer it is
 * kept for the next try. One Slurm refuses to signal (not running) is
 * cancelled (why). Returns 1 to keep x in the list, 0 once cancelled. */
static int _signal_end(struct ed_ctl *c, struct _ending *x, uint64_t now_ms,
		       const char *why)
{
	elastic_error_t err;
	if (ed_slurm_end_grant(x->grant, &err) == 0) {
		if (!x->signalled)
			x->by_ms = now_ms + ENDING_MS;
		x->signalled = 1;
	} else if (!x->signalled && !ed_slurm_ctld_down()) {
		ed_debug("job %u: %s: cancelling it", x->job, err.text);
		_cancel(c, x->grant, x->job, why);
		return 0;
	} else {
		ed_debug("job %u: %s", x->job, err.text);
	}
	x->resignal_ms = now_ms + RESIGNAL_MS;
	return 1;
}

/* A running grant whose work is done (its job released it, or ended) ends
 * as done, COMPLETED in sacct: its script exits 0 on a signal. One that
 * cannot be signalled is cancelled now, one that ignores the signal (an
 * older elasticd's) at the first tick after ENDING_MS (_ending_settle). */
static void _end_released(struct ed_ctl *c, uint32_t grant, uint32_t job, const char *why)
{
	struct _ending *e;

	if (c->conf.dry_run) {
		ed_info("dry run: would end grant %u of job %u (%s)", grant, job, why);
		return;
	}
	if (c->nending == c->capending) {
		int cap = c->capending ? 2 * c->capending : 8;
		struct _ending *n = realloc(c->ending, (size_t)cap * sizeof(*n));
		if (!n) {
			_cancel(c, grant, job, why);
			return;
		}
		c->ending = n;
		c->capending = cap;
	}
	e = &c->ending[c->nending];
	*e = (struct _ending){.grant = grant, .job = job};
	if (!_signal_end(c, e, ed_now_ms(), why))
		return;
	c->nending++;
	if (e->signalled)
		ed_info("job %u: ended grant %u (%s)", job, grant, why);
	else
		ed_info("job %u: grant %u ends once slurmctld answers (%s)", job, grant,
			why);
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
		struct _ending x = c->ending[e];
		int g = 0;
		while (g < s->ngrants && s->grants[g].id != x.grant)
			g++;
		if (g == s->ngrants)
			continue; /* ended */
		s->grants[g] = s->grants[--s->ngrants];
		if (x.signalled && now_ms >= x.by_ms) {
			if (_cancel(c, x.grant, x.job,
				    "its work done, it did not end on its signal") < 0 &&
			    ed_slurm_ctld_down())
				c->ending[kept++] = x; /* again at the next tick */
			continue;
		}
		if ((!x.signalled || now_ms >= x.resignal_ms) &&
		    !_signal_end(c, &x, now_ms, "its work done, it cannot be signalled"))
			continue;
		c->ending[kept++] = x;
	}
	c->nending = kept;
}

/* Submit a grant of a->gpus for job j on node (reconcile.c chose its size).
 * Returns 1 if it was submitted. */
static int _grow(struct ed_ctl *c, const struct ed_snapshot *s, const struct ed_job *j,
		 struct _jobrt *rt, const struct ed_rc_action *a, time_t now)
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

/* Phase one of a shrink: remember the release, mark it in slurmctld (a
 * restarted elasticd keeps the deadline), tell the job. */
static void _release(struct ed_ctl *c, const struct ed_snapshot *s,
		     const struct ed_rc_action *a, uint64_t now_ms)
{
	const struct ed_job *j = &s->jobs[a->ji];
	struct _release *r;
	elastic_error_t err;
	if (c->conf.dry_run) {
		ed_info("dry run: would release grant %u of job %u", a->grant, a->job);
		return;
	}
	r = _rel_add(c, a->grant, a->job);
	if (!r)
		return;
	r->ordered_ms = now_ms;
	r->deadline_ms = a->deadline_ms;
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
	struct _release *r = _rel_add(c, a->grant, a->job);
	if (!r)
		return;
	r->deadline_ms = a->deadline_ms;
	r->ordered_ms = now_ms;
	ed_info("job %u: release of grant %u was ordered before (deadline in %.1f s): resuming it",
		a->job, a->grant,
		(double)((int64_t)r->deadline_ms - (int64_t)now_ms) / 1000.0);
}

static void _forget(struct ed_ctl *c, uint32_t grant)
{
	struct _release *r = _rel(c, grant);
	if (r)
		_rel_remove(c, r);
}

/* Act: carry out actions [from, rc->nacts) in order. grown[ji] counts the
 * grants submitted per job. */
static void _act(struct ed_ctl *c, const struct ed_snapshot *s, const struct ed_rc *rc,
		 int from, int *grown, uint64_t now_ms)
{
	for (int k = from; k < rc->nacts; k++) {
		const struct ed_rc_action *a = &rc->acts[k];
		struct _jobrt *rt = _rt(c, a->job);
		struct _release *r;
		if (a->kind == ED_RC_CANCEL || a->kind == ED_RC_RELEASE ||
		    a->kind == ED_RC_GROW || a->kind == ED_RC_ANNOUNCE)
			c->last_action_ms = now_ms;
		switch (a->kind) {
		case ED_RC_CANCEL:
			if (a->done)
				_end_released(c, a->grant, a->job, a->why);
			else
				_cancel(c, a->grant, a->job, a->why);
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
		case ED_RC_GROW:
			grown[a->ji] += _grow(c, s, &s->jobs[a->ji], rt, a,
					      (time_t)(now_ms / 1000));
			break;
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
static int _observe_jobs(struct ed_ctl *c, const struct ed_snapshot *s)
{
	for (int i = 0; i < c->njobs; i++)
		c->jobs[i].seen = 0;
	for (int i = 0; i < s->njobs; i++) {
		const struct ed_job *j = &s->jobs[i];
		struct _jobrt *rt = _rt_add(c, j->id);
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
	if (_observe_jobs(c, s) < 0) {
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
		const struct _jobrt *rt = _rt(c, s->jobs[i].id);
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
	*in = (struct ed_rc_in){
		.s = s, .jobs = jobs, .rels = rels, .nrels = c->nrels, .now_ms = now_ms};
	return 0;
}

/* Remember what each job holds and runs (elastic-ctl status shows it). */
static void _keep_holdings(struct ed_ctl *c, const struct ed_snapshot *s,
			   const struct ed_rc *rc)
{
	for (int i = 0; i < s->njobs; i++) {
		struct _jobrt *rt = _rt(c, s->jobs[i].id);
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
		struct _jobrt *rt = _rt(c, s->jobs[i].id);
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
	const struct ed_place **held = calloc(nj, sizeof(*held));
	struct ed_place **kept = calloc(nj, sizeof(*kept));
	int *nheld = calloc(nj, sizeof(*nheld)), *nkept = calloc(nj, sizeof(*nkept));
	time_t *last = calloc(nj, sizeof(*last));
	const struct elastic_scaling **scal = calloc(nj, sizeof(*scal));
	int ret = -1;
	if (!held || !kept || !nheld || !nkept || !last || !scal)
		goto nomem;
	for (int i = 0; i < s->njobs; i++) {
		const struct _jobrt *rt = _rt(c, s->jobs[i].id);
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
	ret = ed_plan_compute(s, (const struct ed_place *const *)kept, nkept, last, scal,
			      &c->conf.plan, now, plan, err);
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

void ed_ctl_tick(struct ed_ctl *c)
{
	struct ed_snapshot s;
	struct ed_plan plan;
	struct ed_rc_in in = {0};
	struct ed_rc rc = {0};
	elastic_error_t err;
	uint64_t now_ms = ed_now_ms();
	time_t now = (time_t)(now_ms / 1000);
	int *grown = NULL, from;

	c->last_tick_ms = now_ms;
	c->tick_wanted = 0;
	if (_observe(c, &s, now) < 0)
		return;
	_ending_settle(c, &s, now_ms);
	grown = calloc((size_t)s.njobs + 1, sizeof(*grown));
	if (!grown || _rc_input(c, &s, now_ms, &in) < 0)
		goto out;
	if (ed_rc_grants(&in, &rc) < 0)
		goto out;
	_act(c, &s, &rc, 0, grown, now_ms);
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
		_act(c, &s, &rc, from, grown, now_ms);
		_keep_states(c, &s, &plan, &rc, grown);
	}
	ed_plan_free(&plan);
out:
	ed_rc_free(&rc);
	free((void *)in.jobs);
	free((void *)in.rels);
	free(grown);
	ed_snapshot_free(&s);
	if (c->scaling_dirty && now_ms - c->scaling_saved_ms >= SCALING_SAVE_MS)
		ed_ctl_scaling_save(c);
}

/* A job that started since the last tick: look at slurmctld's jobs now (at
 * most twice a second, whoever asks), without acting: the main loop ticks
 * after this poll. */
/* Re-read slurmctld for a job that spoke before elasticd saw it running: at
 * most every 500 ms for a job elasticd does not know (a hello for any id
 * must not load slurmctld), every 50 ms for a pending elastic job it knows
 * (it has just started: refusing it would cost the job a reconnect). */
static int _refresh_once(struct ed_ctl *c)
{
	struct ed_snapshot s;
	elastic_error_t err;
	if (ed_slurm_snapshot(c->conf.grant_prefix, &s, &err) < 0) {
		ed_debug("no snapshot of slurmctld for a new job: %s", err.text);
		return -1;
	}
	if (_observe_jobs(c, &s) == 0)
		c->tick_wanted = 1;
	ed_snapshot_free(&s);
	return 0;
}

/* How often, at most, a job still unknown after a refresh makes elasticd
 * read the whole job list. */
#define FULL_FOR_UNKNOWN_MS 10000u

static void _refresh_jobs(struct ed_ctl *c, uint32_t job, const struct _jobrt *known)
{
	if (ed_now_ms() - c->last_tick_ms < (known ? 50u : 500u))
		return;
	c->last_tick_ms = ed_now_ms();
	if (_refresh_once(c) < 0)
		return;
	/* Still unknown: not a new id the targeted queries probe for, but
	 * perhaps a job they lost sight of (a query that failed while
	 * slurmctld restarted): the whole list finds it. */
	const struct _jobrt *rt = _rt(c, job);
	if ((!rt || !rt->running) &&
	    ed_now_ms() - c->full_for_unknown_ms >= FULL_FOR_UNKNOWN_MS) {
		c->full_for_unknown_ms = ed_now_ms();
		ed_slurm_want_full();
		_refresh_once(c);
	}
}

/* An ACK of job rt: of a release (by order, or by grant: an order given by
 * an elasticd that was restarted since is acknowledged with its old id). */
static void _on_ack(struct ed_ctl *c, struct _jobrt *rt, const struct elastic_msg *m)
{
	struct _release *r = NULL;
	for (int i = 0; i < c->nrels; i++)
		if (c->rels[i].job == m->job &&
		    (c->rels[i].order == m->order ||
		     ((m->present & ELASTIC_K_GRANT) && c->rels[i].grant == m->grant)))
			r = &c->rels[i];
	if (!r && (m->present & ELASTIC_K_GRANT)) {
		/* A grant of another job, or one already ended: nothing to
		 * cancel, but the sender believes otherwise, so say so. */
		ed_info("job %u: ack of order %" PRIu64
			" names grant %u, which is no pending release of job %u: ignored",
			m->job, m->order, m->grant, m->job);
		return;
	}
	if (!r) {
		ed_debug("job %u: ack of order %" PRIu64 " (%s)", m->job, m->order,
			 m->result == ELASTIC_ACK_OK ? "ok" : "refused");
		return;
	}
	if (m->result != ELASTIC_ACK_OK) {
		ed_info("job %u: refused the release of grant %u (%s): it will be cancelled at the deadline",
			m->job, r->grant, m->reason[0] ? m->reason : "no reason given");
		return;
	}
	ed_info("job %u: acknowledged the release of grant %u after %" PRIu64 " ms",
		m->job, r->grant, ed_now_ms() - r->ordered_ms);
	r->acked = 1;
	c->last_action_ms = ed_now_ms();
	_end_released(c, r->grant, r->job, "released by the job");
	rt->last_resize = (time_t)(ed_now_ms() / 1000);
	_rel_remove(c, r);
}

/* A grant the job cannot use: the step its launch needed there never began
 * (an srun that slurmctld never gave its step). Cancelled at once if it is
 * the job's: announced to it, or listed by Slurm as its grant under its user
 * (a grant from before this elasticd started); the policy may grant again. */
static void _on_giveback(struct ed_ctl *c, struct _jobrt *rt, const struct elastic_msg *m)
{
	int ours = 0;
	for (int i = 0; i < rt->nannounced; i++)
		ours |= rt->announced[i] == m->grant;
	if (!ours) {
		/* announced by an elasticd before this one, or never (suspended):
		 * one Slurm lists as the job's, under its user, is its own */
		elastic_error_t err = {""};
		uint32_t served = 0;
		uid_t uid = 0;
		int r = ed_slurm_grant_info(m->grant, c->conf.grant_prefix, &served, &uid,
					    &err);
		if (r < 0)
			ed_error(
				"job %u: gives back grant %u: cannot ask Slurm about it: %s",
				m->job, m->grant, err.text);
		ours = r == 1 && served == m->job && uid == rt->uid;
	}
	if (!ours) {
		ed_info("job %u: gives back grant %u, which is not one of its grants (ended, or not its own): ignored",
			m->job, m->grant);
		return;
	}
	ed_info("job %u: gives back grant %u, which it cannot use (%s)", m->job, m->grant,
		m->reason[0] ? m->reason : "no reason given");
	c->last_action_ms = ed_now_ms();
	_cancel(c, m->grant, m->job, "given back by the job: unusable");
}

/* May uid say m on a connection registered for conn_job? Returns the job,
 * or NULL with err. */
static struct _jobrt *_sender(struct ed_ctl *c, const struct elastic_msg *m, uid_t uid,
			      uint32_t conn_job, elastic_error_t *err)
{
	struct _jobrt *rt = _rt(c, m->job);
	if (!rt || !rt->running) {
		_refresh_jobs(c, m->job, rt);
		rt = _rt(c, m->job);
	}
	if (!rt || !rt->running)
		elastic__errorf(err, "job %u is not a running elastic job", m->job);
	else if (uid != rt->uid && uid != 0 && uid != ed_slurm_user())
		elastic__errorf(err, "uid %u may not speak for job %u (owner uid %u)",
				(unsigned)uid, m->job, (unsigned)rt->uid);
	else if (m->type != ELASTIC_MSG_HELLO && conn_job != m->job)
		elastic__errorf(err, "%s about job %u before a hello for it",
				elastic_msg_type_name(m->type), m->job);
	else if (m->type == ELASTIC_MSG_HELLO && conn_job && conn_job != m->job)
		elastic__errorf(err, "hello for job %u on a connection of job %u", m->job,
				conn_job);
	else
		return rt;
	return NULL;
}

/* The counts a STATUS carries (each key on its own: all optional). */
static void _take_rec(struct _jobrt *rt, const struct elastic_msg *m)
{
	if (m->present & ELASTIC_K_REFORMS)
		memcpy(rt->rec.reforms, m->rec.reforms, sizeof(rt->rec.reforms));
	if (m->present & ELASTIC_K_INPLACE)
		memcpy(rt->rec.in_place, m->rec.in_place, sizeof(rt->rec.in_place));
	if (m->present & ELASTIC_K_RECOVERY)
		memcpy(rt->rec.bucket, m->rec.bucket, sizeof(rt->rec.bucket));
	if (m->present & ELASTIC_K_RECOVERY_MS)
		rt->rec.sum_ms = m->rec.sum_ms;
}

/* A STATUS rate is a measurement of the job at the GPUs it holds when it
 * trains on all of them and trained on as many ranks at the STATUS before
 * (a rate spans the two progress records it is computed from; elastic-run
 * sends none when a different world committed them). A job growing or
 * shrinking trains at what it holds until its ranks change. */
static void _observe_rate(struct _jobrt *rt, const struct elastic_msg *m, int *dirty)
{
	uint32_t before = rt->obs_ranks;

	rt->obs_ranks = m->gpus;
	if (m->gpus != before || rt->cur <= 0 || m->gpus < (uint32_t)rt->cur ||
	    !(m->present & ELASTIC_K_RATE) || !(m->rate > 0))
		return;
	if (elastic_scaling_observe(&rt->scal, rt->cur, m->rate, time(NULL),
				    SCALING_HALF_LIFE_S) == 0)
		*dirty = 1;
}

static int _on_message(void *arg, const struct elastic_msg *m, uid_t uid,
		       uint32_t *conn_job, elastic_error_t *err)
{
	struct ed_ctl *c = arg;
	struct _jobrt *rt;

	if (m->type != ELASTIC_MSG_HELLO && m->type != ELASTIC_MSG_STATUS &&
	    m->type != ELASTIC_MSG_ACK && m->type != ELASTIC_MSG_GIVEBACK)
		return elastic__errorf(err, "a %s message is not one elasticd accepts",
				       elastic_msg_type_name(m->type));
	if (!(rt = _sender(c, m, uid, *conn_job, err)))
		return -1;
	switch (m->type) {
	case ELASTIC_MSG_HELLO:
		*conn_job = m->job;
		rt->reported = 1;
		rt->step = m->step;
		rt->rate = m->rate;
		rt->ranks = m->gpus;
		ed_info("job %u: registered from %s (uid %u, %u GPUs, step %" PRIu64 ")",
			m->job, m->host, (unsigned)uid, m->gpus, m->step);
		return 0;
	case ELASTIC_MSG_STATUS:
		rt->reported = 1;
		rt->step = m->step;
		if (m->present & ELASTIC_K_RATE)
			rt->rate = m->rate; /* none across a change of size */
		rt->ranks = m->gpus;
		_take_rec(rt, m);
		_observe_rate(rt, m, &c->scaling_dirty);
		ed_debug("job %u: status %u GPUs, step %" PRIu64 ", %.1f samples/s",
			 m->job, m->gpus, m->step, m->rate);
		return 0;
	case ELASTIC_MSG_GIVEBACK:
		_on_giveback(c, rt, m);
		return 0;
	default:
		_on_ack(c, rt, m);
		return 0;
	}
}

uint64_t ed_ctl_next_deadline(const struct ed_ctl *c)
{
	uint64_t first = 0;
	for (int i = 0; i < c->nrels; i++)
		if (!first || c->rels[i].deadline_ms < first)
			first = c->rels[i].deadline_ms;
	for (int i = 0; i < c->nending; i++)
		if (!first || c->ending[i].by_ms < first)
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

static void _on_job_connected(void *arg, uint32_t job)
{
	struct ed_ctl *c = arg;
	struct _jobrt *rt = _rt(c, job);
	if (!rt)
		return;
	/* A new connection knows nothing: tell it everything again. */
	rt->target_valid = 0;
	rt->nannounced = 0;
	for (int i = 0; i < c->nrels; i++)
		if (c->rels[i].job == job)
			c->rels[i].sent = 0;
	/* The next tick sends target, grants and releases: right after this
	 * poll. */
	c->tick_wanted = 1;
}

int ed_ctl_tick_wanted(const struct ed_ctl *c)
{
	return c->tick_wanted;
}

static int _on_query(void *arg, uint32_t job, struct elastic_msg **out)
{
	struct ed_ctl *c = arg;
	int n = 0;
	*out = calloc((size_t)c->njobs + 1, sizeof(**out));
	if (!*out)
		return 0;
	for (int i = 0; i < c->njobs; i++) {
		struct _jobrt *rt = &c->jobs[i];
		struct elastic_msg *m = &(*out)[n];
		if (job && rt->job != job)
			continue;
		m->type = ELASTIC_MSG_JOBINFO;
		m->present = ELASTIC_K_JOB | ELASTIC_K_USER | ELASTIC_K_MIN |
			     ELASTIC_K_MAX | ELASTIC_K_TARGET | ELASTIC_K_GPUS |
			     ELASTIC_K_STATE | ELASTIC_K_RESIZED | ELASTIC_K_CONNECTED |
			     ELASTIC_K_GRANTS;
		m->job = rt->job;
		snprintf(m->user, sizeof(m->user), "%s",
			 rt->user[0] ? rt->user : "unknown");
		m->min = (uint32_t)rt->min;
		m->max = (uint32_t)rt->max;
		m->target = (uint32_t)rt->target;
		m->gpus = (uint32_t)rt->cur;
		m->state = rt->state;
		m->resized = (uint64_t)rt->last_resize;
		m->connected = (uint32_t)ed_channel_job_connected(c->ch, rt->job);
		m->grants = (uint32_t)rt->ngrants;
		if (rt->reported) {
			m->present |= ELASTIC_K_STEP | ELASTIC_K_RATE;
			m->step = rt->step;
			m->rate = rt->rate;
		}
		if (rt->scal.terms && rt->cur > 0) {
			m->present |= ELASTIC_K_EFFICIENCY;
			m->efficiency =
				elastic_scaling_speedup(&rt->scal, rt->cur) / rt->cur;
		}
		if (elastic_scaling_table(&rt->scal, (const int[]){rt->cur, rt->target},
					  2, m->model, sizeof(m->model)) > 0)
			m->present |= ELASTIC_K_MODEL;
		if (rt->nodes[0]) {
			m->present |= ELASTIC_K_NODES;
			snprintf(m->nodes, sizeof(m->nodes), "%s", rt->nodes);
		}
		n++;
	}
	return n;
}

/* elastic-ctl pause|drain|resume [NODE] (root or SlurmUser), show (anyone):
 * takes effect at the next tick, which comes right after this poll. */
static int _on_admin(void *arg, const struct elastic_msg *m, uid_t uid, char *state,
		     size_t len, elastic_error_t *err)
{
	struct ed_ctl *c = arg;
	const char *node = m && (m->present & ELASTIC_K_NODE) ? m->node : "";
	struct ed_admin next;
	int known = !*node;

	if (m && strcmp(m->action, "show") != 0) {
		if (uid != 0 && uid != ed_slurm_user())
			return elastic__errorf(
				err,
				"only root or SlurmUser (uid %u) may %s elastic activity; uid %u may not",
				(unsigned)ed_slurm_user(), m->action, (unsigned)uid);
		for (int k = 0; k < c->nnode_names && !known; k++)
			known = strcmp(c->node_names[k], node) == 0;
		if (!known && strcmp(m->action, "resume") != 0)
			return elastic__errorf(
				err, "no node '%s' in slurmctld's node list", node);
		next = c->admin;
		if (ed_admin_apply(&next, m->action, node, err) < 0)
			return -1;
		c->admin = next;
		c->tick_wanted = 1;
		ed_admin_describe(&c->admin, state, len);
		ed_info("uid %u: %s %s: elastic activity now %s", (unsigned)uid,
			m->action, *node ? node : "(cluster)", *state ? state : "normal");
		elastic_error_t serr = {""};
		if (c->admin_path[0] && !c->conf.dry_run &&
		    ed_admin_save(&c->admin, c->admin_path, &serr) < 0) {
			ed_error("%s: a restart of elasticd forgets this %s", serr.text,
				 m->action);
			size_t n = strlen(state);
			snprintf(state + n, len - n, "%s(not kept across a restart: %s)",
				 n ? " " : "normal ", serr.text);
			return 0;
		}
	}
	ed_admin_describe(&c->admin, state, len);
	if (m && !*state)
		snprintf(state, len, "normal (nothing paused or drained)");
	return 0;
}

const struct ed_channel_handlers ed_ctl_handlers = {
	.query = _on_query,
	.message = _on_message,
	.job_connected = _on_job_connected,
	.admin = _on_admin,
};

/* ---- OpenMetrics (the metrics endpoint's text) ---- */

/* A label value: backslash, double quote and newline escaped. */
static void _label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void _family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# TYPE %s %s\n# HELP %s %s\n", name, type, name, help);
}

/* Per job, one family at a time (OpenMetrics keeps a family's samples
 * together). what: 0 held, 1 target, 2 ranks, 3 step, 4 rate, 5 grants,
 * 6 channel, 7 min, 8 max. */
static void _job_family(const struct ed_ctl *c, FILE *f, const char *name,
			const char *help, int what)
{
	_family(f, name, "gauge", help);
	for (int i = 0; i < c->njobs; i++) {
		const struct _jobrt *rt = &c->jobs[i];
		if ((what == 2 || what == 3 || what == 4) && !rt->reported)
			continue;
		fprintf(f, "%s{jobid=\"%u\",user=\"", name, rt->job);
		_label(f, rt->user[0] ? rt->user : "unknown");
		fputs("\"} ", f);
		switch (what) {
		case 0:
			fprintf(f, "%d\n", rt->cur);
			break;
		case 1:
			fprintf(f, "%d\n", rt->target);
			break;
		case 2:
			fprintf(f, "%u\n", rt->ranks);
			break;
		case 3:
			fprintf(f, "%" PRIu64 "\n", rt->step);
			break;
		case 4:
			fprintf(f, "%.3f\n", rt->rate);
			break;
		case 5:
			fprintf(f, "%d\n", rt->ngrants);
			break;
		case 6:
			fprintf(f, "%d\n", ed_channel_job_connected(c->ch, rt->job));
			break;
		case 7:
			fprintf(f, "%d\n", rt->min);
			break;
		default:
			fprintf(f, "%d\n", rt->max);
			break;
		}
	}
}

/* The jobs' labels: jobid, user (then more, or the end). */
static void _job_labels(FILE *f, const char *name, const struct _jobrt *rt)
{
	fprintf(f, "%s{jobid=\"%u\",user=\"", name, rt->job);
	_label(f, rt->user[0] ? rt->user : "unknown");
	fputc('"', f);
}

/* A bound as OpenMetrics writes a canonical float (1.0, 0.25). */
static void _le(FILE *f, double v)
{
	char b[32];
	snprintf(b, sizeof(b), "%g", v);
	fprintf(f, "%s%s", b, strpbrk(b, ".e") ? "" : ".0");
}

/* Per job that reported: re-forms by cause, resizes in place by kind
 * (counters) and recovery seconds (histogram), as elastic-run last said:
 * its counts are cumulative, 0 until it sends any. */
static void _recovery_families(const struct ed_ctl *c, FILE *f)
{
	_family(f, "slurm_elastic_job_reforms", "counter",
		"Relaunches of an elastic job's mpirun by elastic-run, by cause");
	for (int i = 0; i < c->njobs; i++)
		for (int k = 0; c->jobs[i].reported && k < ELASTIC_REFORM_CAUSES; k++) {
			_job_labels(f, "slurm_elastic_job_reforms_total", &c->jobs[i]);
			fprintf(f, ",cause=\"%s\"} %" PRIu32 "\n",
				elastic_reform_cause_name(k), c->jobs[i].rec.reforms[k]);
		}
	_family(f, "slurm_elastic_job_resizes_in_place", "counter",
		"Resizes of an elastic job inside its running mpirun (no relaunch), by kind");
	for (int i = 0; i < c->njobs; i++)
		for (int k = 0; c->jobs[i].reported && k < ELASTIC_RESIZE_KINDS; k++) {
			_job_labels(f, "slurm_elastic_job_resizes_in_place_total",
				    &c->jobs[i]);
			fprintf(f, ",kind=\"%s\"} %" PRIu32 "\n",
				elastic_resize_kind_name(k), c->jobs[i].rec.in_place[k]);
		}
	_family(f, "slurm_elastic_job_recovery_seconds", "histogram",
		"From a re-form's or resize's event to the first step committed after it");
	for (int i = 0; i < c->njobs; i++) {
		const struct _jobrt *rt = &c->jobs[i];
		uint64_t cum = 0;
		if (!rt->reported)
			continue;
		for (int b = 0; b < ELASTIC_RECOVERY_BUCKETS; b++) {
			cum += rt->rec.bucket[b];
			_job_labels(f, "slurm_elastic_job_recovery_seconds_bucket", rt);
			fputs(",le=\"", f);
			if (b < ELASTIC_RECOVERY_BUCKETS - 1)
				_le(f, elastic_recovery_le[b]);
			else
				fputs("+Inf", f);
			fprintf(f, "\"} %" PRIu64 "\n", cum);
		}
		_job_labels(f, "slurm_elastic_job_recovery_seconds_sum", rt);
		fprintf(f, "} %.3f\n", (double)rt->rec.sum_ms / 1e3);
		_job_labels(f, "slurm_elastic_job_recovery_seconds_count", rt);
		fprintf(f, "} %" PRIu64 "\n", cum);
	}
}

/* Each job's measured scaling: the average rate at each size it was
 * measured at, and the efficiency its model predicts at the GPUs it holds
 * (speedup / GPUs; the throughput policy's measure). */
static void _scaling_families(const struct ed_ctl *c, FILE *f)
{
	_family(f, "slurm_elastic_job_measured_samples_per_second", "gauge",
		"An elastic job's training throughput measured at a GPU count (recent measurements weigh more)");
	for (int i = 0; i < c->njobs; i++) {
		const struct _jobrt *rt = &c->jobs[i];
		for (int k = 0; k < rt->scal.nobs; k++) {
			_job_labels(f, "slurm_elastic_job_measured_samples_per_second",
				    rt);
			fprintf(f, ",gpus=\"%d\"} %.3f\n", rt->scal.obs[k].n,
				rt->scal.obs[k].rate);
		}
	}
	_family(f, "slurm_elastic_job_predicted_samples_per_second", "gauge",
		"An elastic job's training throughput its measured scaling predicts at the GPUs it holds and at its target (confidence: measured there, interpolated between sizes measured, or extrapolated)");
	for (int i = 0; i < c->njobs; i++) {
		const struct _jobrt *rt = &c->jobs[i];
		int at[2] = {rt->cur, rt->target};
		if (!rt->scal.terms)
			continue;
		for (int k = 0; k < 2; k++) {
			if (at[k] <= 0 || (k == 1 && at[1] == at[0]))
				continue;
			_job_labels(f, "slurm_elastic_job_predicted_samples_per_second",
				    rt);
			fprintf(f, ",gpus=\"%d\",confidence=\"%s\"} %.3f\n", at[k],
				elastic_scaling_confidence_name(
					elastic_scaling_confidence(&rt->scal, at[k])),
				elastic_scaling_rate(&rt->scal, at[k]));
		}
	}
	_family(f, "slurm_elastic_job_efficiency", "gauge",
		"Speedup per GPU an elastic job's measured scaling predicts at the GPUs it holds");
	for (int i = 0; i < c->njobs; i++) {
		const struct _jobrt *rt = &c->jobs[i];
		if (!rt->scal.terms || rt->cur <= 0)
			continue;
		_job_labels(f, "slurm_elastic_job_efficiency", rt);
		fprintf(f, ",confidence=\"%s\"} %.3f\n",
			elastic_scaling_confidence_name(
				elastic_scaling_confidence(&rt->scal, rt->cur)),
			elastic_scaling_speedup(&rt->scal, rt->cur) / rt->cur);
	}
}

void ed_ctl_metrics(void *arg, FILE *f)
{
	const struct ed_ctl *c = arg;
	uint64_t now = ed_now_ms();
	int overdue = 0;

	for (int i = 0; i < c->nrels; i++)
		if (c->rels[i].deadline_ms && c->rels[i].deadline_ms < now)
			overdue++;
	_job_family(c, f, "slurm_elastic_job_gpus",
		    "GPUs an elastic job holds (its allocation and running grants)", 0);
	_job_family(c, f, "slurm_elastic_job_gpus_target",
		    "GPUs the policy gives an elastic job", 1);
	_job_family(c, f, "slurm_elastic_job_gpus_min",
		    "An elastic job's fewest GPUs (--elastic-gpus)", 7);
	_job_family(c, f, "slurm_elastic_job_gpus_max",
		    "An elastic job's most GPUs (--elastic-gpus)", 8);
	_job_family(c, f, "slurm_elastic_job_ranks",
		    "Ranks an elastic job trains with, as it last reported", 2);
	_job_family(c, f, "slurm_elastic_job_step",
		    "Last step an elastic job committed, as it last reported", 3);
	_job_family(c, f, "slurm_elastic_job_samples_per_second",
		    "Training throughput an elastic job last reported", 4);
	_scaling_families(c, f);
	_job_family(c, f, "slurm_elastic_job_grants", "Grant jobs an elastic job holds",
		    5);
	_job_family(c, f, "slurm_elastic_job_channel_connected",
		    "1 while the elastic job's channel connection is up", 6);
	_recovery_families(c, f);
	_family(f, "slurm_elastic_jobs", "gauge",
		"Elastic jobs elasticd knows (running and pending)");
	fprintf(f, "slurm_elastic_jobs %d\n", c->njobs);
	_family(f, "slurm_elastic_gpus", "gauge", "GPUs of the nodes elasticd sees");
	fprintf(f, "slurm_elastic_gpus %d\n", c->gpus_total);
	_family(f, "slurm_elastic_gpus_free", "gauge", "GPUs no job holds");
	fprintf(f, "slurm_elastic_gpus_free %d\n", c->gpus_free);
	_family(f, "slurm_elastic_grants", "gauge", "Grant jobs, by state");
	fprintf(f, "slurm_elastic_grants{state=\"running\"} %d\n", c->grants_running);
	fprintf(f, "slurm_elastic_grants{state=\"pending\"} %d\n", c->grants_pending);
	_family(f, "slurm_elastic_releases", "gauge",
		"Releases ordered and not done yet");
	fprintf(f, "slurm_elastic_releases %d\n", c->nrels);
	_family(f, "slurm_elastic_releases_overdue", "gauge",
		"Releases past their deadline (the job did not give the GPUs back in time)");
	fprintf(f, "slurm_elastic_releases_overdue %d\n", overdue);
	_family(f, "slurm_elastic_channel_connections", "gauge",
		"Job channel connections open");
	fprintf(f, "slurm_elastic_channel_connections %d\n",
		ed_channel_connections(c->ch));
	_family(f, "slurm_elastic_slurmctld_up", "gauge",
		"1 when the last tick read slurmctld's state");
	fprintf(f, "slurm_elastic_slurmctld_up %d\n", c->snapshot_ok);
	_family(f, "slurm_elastic_controller_active", "gauge",
		"1 when this elasticd holds the controller role, 0 while it stands by");
	fprintf(f, "slurm_elastic_controller_active %d\n", c->active);
	fputs("# EOF\n", f);
}
