/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctl_channel.c: the controller's channel handlers
 * (ed_ctl_handlers): a job's hello, status, acknowledgements and give-backs,
 * its queries, and elastic-ctl's administration. They change the state
 * (ctl_int.h) and ask for a tick; the tick (ctl.c) acts. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "channel.h"
#include "ctl.h"
#include "ctl_int.h"
#include "log.h"
#include "slurm.h"

/* A rate measured this long ago weighs half as much as one measured now. */
#define SCALING_HALF_LIFE_S 600.0

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
	if (ed_ctl_observe_jobs(c, &s) == 0)
		c->tick_wanted = 1;
	ed_snapshot_free(&s);
	return 0;
}

/* How often, at most, a job still unknown after a refresh makes elasticd
 * read the whole job list. */
#define FULL_FOR_UNKNOWN_MS 10000u

static void _refresh_jobs(struct ed_ctl *c, uint32_t job, const struct ed_jobrt *known)
{
	if (ed_now_ms() - c->last_tick_ms < (known ? 50u : 500u))
		return;
	c->last_tick_ms = ed_now_ms();
	if (_refresh_once(c) < 0)
		return;
	/* Still unknown: not a new id the targeted queries probe for, but
	 * perhaps a job they lost sight of (a query that failed while
	 * slurmctld restarted): the whole list finds it. */
	const struct ed_jobrt *rt = ed_ctl_job_rt(c, job);
	if ((!rt || !rt->running) &&
	    ed_now_ms() - c->full_for_unknown_ms >= FULL_FOR_UNKNOWN_MS) {
		c->full_for_unknown_ms = ed_now_ms();
		ed_slurm_want_full();
		_refresh_once(c);
	}
}

/* An ACK of job rt: of a release (by order, or by grant: an order given by
 * an elasticd that was restarted since is acknowledged with its old id). */
static void _on_ack(struct ed_ctl *c, struct ed_jobrt *rt, const struct elastic_msg *m)
{
	struct ed_release *r = NULL;
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
	ed_ctl_end_released(c, r->grant, r->job, "released by the job");
	rt->last_resize = (time_t)(ed_now_ms() / 1000);
	ed_ctl_rel_remove(c, r);
}

/* A grant the job cannot use: the step its launch needed there never began
 * (an srun that slurmctld never gave its step). Cancelled at once, or once
 * slurmctld answers, if it is the job's: announced to it, or listed by Slurm
 * as its grant under its user (a grant from before this elasticd started);
 * the policy may grant again. */
static void _on_giveback(struct ed_ctl *c, struct ed_jobrt *rt,
			 const struct elastic_msg *m)
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
	ed_ctl_cancel_given_back(c, m->grant, m->job);
}

/* May uid say m on a connection registered for conn_job? Returns the job,
 * or NULL with err. */
static struct ed_jobrt *_sender(struct ed_ctl *c, const struct elastic_msg *m, uid_t uid,
				uint32_t conn_job, elastic_error_t *err)
{
	struct ed_jobrt *rt = ed_ctl_job_rt(c, m->job);
	if (!rt || !rt->running) {
		_refresh_jobs(c, m->job, rt);
		rt = ed_ctl_job_rt(c, m->job);
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
static void _take_rec(struct ed_jobrt *rt, const struct elastic_msg *m)
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
static void _observe_rate(struct ed_jobrt *rt, const struct elastic_msg *m, int *dirty)
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
	struct ed_jobrt *rt;

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

static void _on_job_connected(void *arg, uint32_t job)
{
	struct ed_ctl *c = arg;
	struct ed_jobrt *rt = ed_ctl_job_rt(c, job);
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

static int _on_query(void *arg, uint32_t job, struct elastic_msg **out)
{
	struct ed_ctl *c = arg;
	int n = 0;
	*out = calloc((size_t)c->njobs + 1, sizeof(**out));
	if (!*out)
		return 0;
	for (int i = 0; i < c->njobs; i++) {
		struct ed_jobrt *rt = &c->jobs[i];
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
