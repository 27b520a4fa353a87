/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctl.c: the controller: per tick, compare targets with holdings and act.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elasticd.h"
#include "grants.h"

#define ANNOUNCED_MAX 64

/* What elasticd remembers about an elastic job between ticks. All of it can
 * be lost (restart): it is rebuilt from slurmctld and the job's hello. */
struct _jobrt {
	uint32_t job;
	uid_t uid;
	int running, seen;
	char user[ED_NAME_MAX];
	int min, max;
	time_t last_resize;
	int last_cur;
	/* what the job was told */
	int target_valid;
	int target_sent;
	uint32_t announced[ANNOUNCED_MAX];
	int nannounced;
	/* what it reported */
	int reported;
	uint64_t step;
	double rate;
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

struct ed_ctl {
	struct ed_ctl_conf conf;
	ed_channel_t *ch;
	struct _jobrt *jobs;
	int njobs, capjobs;
	struct _release *rels;
	int nrels, caprels;
	uint64_t next_order;
	uint64_t last_tick_ms;
	time_t snap_fail_since, snap_fail_logged;
	char last_plan_error[256];
	int tick_wanted; /* a handler asked for a tick after this poll */
};

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

void ed_ctl_destroy(struct ed_ctl *c)
{
	if (!c)
		return;
	free(c->jobs);
	free(c->rels);
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

static void _send_target(struct ed_ctl *c, struct _jobrt *rt)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_TARGET,
				.present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					   ELASTIC_K_TARGET,
				.job = rt->job,
				.order = ++c->next_order,
				.target = (uint32_t)rt->target};
	if (ed_channel_send_job(c->ch, rt->job, &m) == 0) {
		rt->target_valid = 1;
		rt->target_sent = rt->target;
	}
}

static void _send_grant(struct ed_ctl *c, struct _jobrt *rt, const struct ed_grant *g,
			const struct ed_snapshot *s)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_GRANT,
				.present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					   ELASTIC_K_GRANT | ELASTIC_K_NODE |
					   ELASTIC_K_GPUS,
				.job = rt->job,
				.order = ++c->next_order,
				.grant = g->id,
				.gpus = (uint32_t)g->gpus};
	if (rt->nannounced >= ANNOUNCED_MAX)
		return;
	snprintf(m.node, sizeof(m.node), "%s", s->nodes[g->node].name);
	if (ed_channel_send_job(c->ch, rt->job, &m) == 0) {
		rt->announced[rt->nannounced++] = g->id;
		ed_info("job %u: told grant %u started (%d GPUs on %s)", rt->job, g->id,
			g->gpus, m.node);
	}
}

static int _announced(const struct _jobrt *rt, uint32_t grant)
{
	for (int i = 0; i < rt->nannounced; i++)
		if (rt->announced[i] == grant)
			return 1;
	return 0;
}

static void _cancel(struct ed_ctl *c, uint32_t grant, uint32_t job, const char *why)
{
	elastic_error_t err;
	if (c->conf.dry_run) {
		ed_info("dry run: would cancel grant %u of job %u (%s)", grant, job, why);
		return;
	}
	if (ed_slurm_cancel(grant, &err) < 0)
		ed_error("grant %u of job %u: %s", grant, job, err.text);
	else
		ed_info("job %u: cancelled grant %u (%s)", job, grant, why);
}

enum { G_HELD, G_RELEASING, G_DROPPED };

/* Add gpus on node to a per-job holding list (merging per node). */
static void _hold(struct ed_place *list, int *n, int node, int gpus, int pinned)
{
	for (int k = 0; k < *n; k++)
		if (list[k].node == node) {
			list[k].gpus += gpus;
			list[k].pinned += pinned;
			return;
		}
	list[*n].node = node;
	list[*n].gpus = gpus;
	list[*n].pinned = pinned;
	(*n)++;
}

/* Choose which HELD running grants of job on node to release so that at
 * least excess GPUs go: one grant of exactly excess if there is one, else
 * the smallest grant that covers it, else the largest ones first. */
static void _choose_release(struct ed_ctl *c, const struct ed_snapshot *s,
			    const int *gclass, const struct ed_job *j, int node,
			    int excess, uint64_t now_ms, int from, int to)
{
	/* The candidates: this job's running, held grants on the node. */
	int *idx = calloc((size_t)s->ngrants + 1, sizeof(*idx));
	int *sizes = calloc((size_t)s->ngrants + 1, sizeof(*sizes));
	int pick[64], npick = 0, n = 0;
	if (idx && sizes) {
		for (int g = 0; g < s->ngrants; g++) {
			const struct ed_grant *gr = &s->grants[g];
			if (gclass[g] != G_HELD || gr->job != j->id || gr->node != node ||
			    gr->state != ED_GRANT_RUNNING)
				continue;
			idx[n] = g;
			sizes[n++] = gr->gpus;
		}
		npick = elastic__pick_release(sizes, n, excess, pick, 64);
		for (int k = 0; k < npick; k++)
			pick[k] = idx[pick[k]];
	}
	free(idx);
	free(sizes);
	for (int k = 0; k < npick; k++) {
		const struct ed_grant *gr = &s->grants[pick[k]];
		struct _release *r;
		elastic_error_t err;
		if (c->conf.dry_run) {
			ed_info("dry run: would release grant %u of job %u", gr->id,
				j->id);
			continue;
		}
		r = _rel_add(c, gr->id, j->id);
		if (!r)
			return;
		r->seen = 1;
		r->ordered_ms = now_ms;
		r->deadline_ms = now_ms + (uint64_t)(j->grace > 0 ? j->grace : 30) * 1000;
		ed_info("job %u: shrinking %d -> %d GPUs: release of grant %u (%d GPUs "
			"on %s), "
			"grace %d s",
			j->id, from, to, gr->id, gr->gpus, s->nodes[node].name, j->grace);
		if (ed_slurm_mark_release(gr->id, j->id, r->deadline_ms, &err) < 0)
			ed_error("job %u: %s (the deadline is kept in memory only)",
				 j->id, err.text);
		_send_release(c, r);
	}
}

/* Submit grants for deficit GPUs of job j on node, in powers of two (so
 * that later shrinks release exactly). Returns how many were submitted. */
static int _grow(struct ed_ctl *c, const struct ed_snapshot *s, const struct ed_job *j,
		 struct _jobrt *rt, int node, int deficit, int from, int to, time_t now)
{
	int parts[32], n = elastic__split_grow(deficit, parts, 32), done = 0;
	elastic_error_t err;
	for (int p = 0; p < n; p++) {
		uint32_t gid;
		if (ed_slurm_submit_grant(j, s->nodes[node].name, parts[p],
					  c->conf.grant_prefix, c->conf.grant_qos, &gid,
					  &err) < 0) {
			/* Once a minute per job and reason, not every tick. */
			if (strcmp(err.text, rt->last_error) != 0 ||
			    now - rt->last_error_time >= 60) {
				ed_error("job %u: %s", j->id, err.text);
				snprintf(rt->last_error, sizeof(rt->last_error), "%s",
					 err.text);
				rt->last_error_time = now;
			}
			break;
		}
		done++;
		ed_info("job %u: growing %d -> %d GPUs: grant %u submitted (%d GPUs on "
			"%s)",
			j->id, from, to, gid, parts[p], s->nodes[node].name);
	}
	return done;
}

static void _nodes_str(char *out, size_t size, const struct ed_snapshot *s,
		       const struct ed_place *pl, int n)
{
	size_t used = 0;
	out[0] = '\0';
	for (int k = 0; k < n; k++) {
		int w = snprintf(out + used, size - used, "%s%s", used ? "," : "",
				 s->nodes[pl[k].node].name);
		if (w < 0 || (size_t)w >= size - used) {
			out[used] = '\0';
			return;
		}
		used += (size_t)w;
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
			ed_info("job %u: elastic job of %s (min %d, max %d, grace %d s) "
				"%s",
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

void ed_ctl_tick(struct ed_ctl *c)
{
	struct ed_snapshot s;
	struct ed_plan plan;
	elastic_error_t err;
	uint64_t now_ms = ed_now_ms();
	time_t now = (time_t)(now_ms / 1000);
	int *gclass = NULL, *nheld = NULL, *ncur = NULL;
	struct ed_place **held = NULL, **cur = NULL;
	time_t *last = NULL;

	c->last_tick_ms = now_ms;
	c->tick_wanted = 0;
	if (ed_slurm_snapshot(c->conf.grant_prefix, &s, &err) < 0) {
		/* slurmctld down or busy: say so at once, then once a minute. */
		if (!c->snap_fail_since || now - c->snap_fail_logged >= 60) {
			ed_error("no snapshot of slurmctld: %s (nothing changes until it "
				 "answers)",
				 err.text);
			c->snap_fail_logged = now;
		}
		if (!c->snap_fail_since)
			c->snap_fail_since = now;
		return;
	}
	if (c->snap_fail_since) {
		ed_info("slurmctld answers again (after %ld s)",
			(long)(now - c->snap_fail_since));
		c->snap_fail_since = 0;
	}
	if (_observe_jobs(c, &s) < 0)
		goto out;
	for (int i = 0; i < c->njobs;) {
		if (!c->jobs[i].seen) {
			ed_info("job %u: ended or no longer elastic", c->jobs[i].job);
			ed_channel_drop_job(c->ch, c->jobs[i].job);
			c->jobs[i] = c->jobs[--c->njobs];
		} else {
			i++;
		}
	}

	gclass = calloc((size_t)s.ngrants + 1, sizeof(*gclass));
	nheld = calloc((size_t)s.njobs + 1, sizeof(*nheld));
	ncur = calloc((size_t)s.njobs + 1, sizeof(*ncur));
	held = calloc((size_t)s.njobs + 1, sizeof(*held));
	cur = calloc((size_t)s.njobs + 1, sizeof(*cur));
	last = calloc((size_t)s.njobs + 1, sizeof(*last));
	if (!gclass || !nheld || !ncur || !held || !cur || !last)
		goto out;

	/* Grants: of ended jobs, being released, or held. */
	for (int i = 0; i < c->nrels; i++)
		c->rels[i].seen = 0;
	for (int g = 0; g < s.ngrants; g++) {
		const struct ed_grant *gr = &s.grants[g];
		const struct ed_job *j = ed_snapshot_job(&s, gr->job);
		struct _release *r = _rel(c, gr->id);
		if (!j || !j->running || gr->uid != j->uid) {
			_cancel(c, gr->id, gr->job,
				!j	      ? "its elastic job ended"
				: !j->running ? "its elastic job is not running"
					      : "owner differs from the elastic job's");
			gclass[g] = G_DROPPED;
			if (r)
				_rel_remove(c, r);
			continue;
		}
		if (!r && gr->release_by_ms) {
			/* Ordered before a restart: the deadline lives in slurmctld. */
			r = _rel_add(c, gr->id, gr->job);
			if (!r)
				goto out;
			r->deadline_ms = gr->release_by_ms;
			r->ordered_ms = now_ms;
			ed_info("job %u: release of grant %u was ordered before "
				"(deadline in "
				"%.1f s): resuming it",
				gr->job, gr->id,
				(double)((int64_t)r->deadline_ms - (int64_t)now_ms) /
					1000.0);
		}
		if (!r) {
			gclass[g] = gr->node >= 0 ? G_HELD : G_DROPPED;
			if (gr->node < 0) {
				_cancel(c, gr->id, gr->job, "its node is unknown");
			}
			continue;
		}
		r->seen = 1;
		if (gr->state == ED_GRANT_PENDING || r->acked ||
		    now_ms >= r->deadline_ms) {
			_cancel(c, gr->id, gr->job,
				gr->state == ED_GRANT_PENDING
					? "release of a grant not started"
				: r->acked ? "released by the job"
					   : "grace deadline passed: forced");
			gclass[g] = G_DROPPED;
			_rt(c, gr->job)->last_resize = now;
			_rel_remove(c, r);
			continue;
		}
		gclass[g] = G_RELEASING;
		if (!r->sent)
			_send_release(c, r);
	}
	for (int i = 0; i < c->nrels;) {
		if (!c->rels[i].seen)
			_rel_remove(c, &c->rels[i]); /* the grant is gone already */
		else
			i++;
	}

	/* A grant not started yet counts only while it can start: GPUs taken
	 * meanwhile (e.g. by a job Slurm started there) make it go. GPUs of
	 * grants being released count as free: they soon are. */
	{
		int *occ = calloc((size_t)s.nnodes + 1, sizeof(*occ));
		if (!occ)
			goto out;
		for (int k = 0; k < s.nnodes; k++)
			occ[k] = s.nodes[k].busy;
		for (int i = 0; i < s.njobs; i++)
			for (int k = 0; k < s.jobs[i].nlead; k++)
				occ[s.jobs[i].lead[k].node] += s.jobs[i].lead[k].gpus;
		for (int g = 0; g < s.ngrants; g++)
			if (gclass[g] == G_HELD && s.grants[g].state == ED_GRANT_RUNNING)
				occ[s.grants[g].node] += s.grants[g].gpus;
		for (int g = 0; g < s.ngrants; g++) {
			const struct ed_grant *gr = &s.grants[g];
			if (gclass[g] != G_HELD || gr->state != ED_GRANT_PENDING)
				continue;
			if (occ[gr->node] + gr->gpus <= s.nodes[gr->node].gpus) {
				occ[gr->node] += gr->gpus;
				continue;
			}
			_cancel(c, gr->id, gr->job,
				"cannot start: its GPUs were taken meanwhile");
			gclass[g] = G_DROPPED;
		}
		free(occ);
	}

	/* What each job holds: its allocation (pinned), its grants. */
	for (int i = 0; i < s.njobs; i++) {
		const struct ed_job *j = &s.jobs[i];
		struct _jobrt *rt = _rt(c, j->id);
		held[i] = calloc((size_t)(j->nlead + s.ngrants + 1), sizeof(**held));
		cur[i] = calloc((size_t)(j->nlead + s.ngrants + 1), sizeof(**cur));
		if (!held[i] || !cur[i])
			goto out;
		last[i] = j->start;
		for (int k = 0; k < j->nlead; k++) {
			_hold(held[i], &nheld[i], j->lead[k].node, j->lead[k].gpus,
			      j->lead[k].gpus);
			_hold(cur[i], &ncur[i], j->lead[k].node, j->lead[k].gpus,
			      j->lead[k].gpus);
		}
		rt->ngrants = 0;
		for (int g = 0; g < s.ngrants; g++) {
			const struct ed_grant *gr = &s.grants[g];
			if (gr->job != j->id || gclass[g] == G_DROPPED)
				continue;
			rt->ngrants++;
			if (gclass[g] == G_HELD)
				_hold(held[i], &nheld[i], gr->node, gr->gpus, 0);
			if (gr->state == ED_GRANT_RUNNING) {
				_hold(cur[i], &ncur[i], gr->node, gr->gpus, 0);
				if (gr->start > last[i])
					last[i] = gr->start;
			}
		}
		if (rt->last_resize > last[i])
			last[i] = rt->last_resize;
		rt->last_resize = last[i];
		rt->cur = 0;
		for (int k = 0; k < ncur[i]; k++)
			rt->cur += cur[i][k].gpus;
		_nodes_str(rt->nodes, sizeof(rt->nodes), &s, cur[i], ncur[i]);
	}

	if (ed_plan_compute(&s, (const struct ed_place *const *)held, nheld, last,
			    &c->conf.plan, now, &plan, &err) < 0) {
		if (strcmp(err.text, c->last_plan_error) != 0)
			ed_error("policy refused this tick's input: %s", err.text);
		snprintf(c->last_plan_error, sizeof(c->last_plan_error), "%s", err.text);
		goto out;
	}
	c->last_plan_error[0] = '\0';

	for (int i = 0; i < plan.ntargets && i < s.njobs; i++) {
		const struct ed_target *t = &plan.targets[i];
		const struct ed_job *j = &s.jobs[i];
		struct _jobrt *rt = _rt(c, j->id);
		int have_total = 0, releasing = 0, pending = 0;
		for (int k = 0; k < nheld[i]; k++)
			have_total += held[i][k].gpus;
		for (int g = 0; g < s.ngrants; g++) {
			if (s.grants[g].job != j->id)
				continue;
			releasing += gclass[g] == G_RELEASING;
			pending += gclass[g] == G_HELD &&
				   s.grants[g].state == ED_GRANT_PENDING;
		}
		if (t->gpus != rt->target)
			ed_info("%s", t->explain);
		rt->target = t->gpus;
		if (j->running) {
			/* Shrink: nodes where the job holds more than its placement. */
			for (int k = 0; k < nheld[i]; k++) {
				int node = held[i][k].node, want = 0;
				for (int q = 0; q < t->nplace; q++)
					if (t->place[q].node == node)
						want = t->place[q].gpus;
				int excess = held[i][k].gpus - want;
				if (excess <= 0)
					continue;
				/* Grants not started yet go first, at once. */
				for (int g = 0; g < s.ngrants && excess > 0; g++) {
					const struct ed_grant *gr = &s.grants[g];
					if (gr->job != j->id || gr->node != node ||
					    gclass[g] != G_HELD ||
					    gr->state != ED_GRANT_PENDING)
						continue;
					_cancel(c, gr->id, j->id, "not needed any more");
					gclass[g] = G_DROPPED;
					excess -= gr->gpus;
					pending--;
				}
				if (excess > 0) {
					_choose_release(c, &s, gclass, j, node, excess,
							now_ms, have_total, t->gpus);
					releasing++;
				}
			}
			/* Grow: nodes where the placement gives more. */
			for (int q = 0; q < t->nplace; q++) {
				int node = t->place[q].node, have = 0;
				for (int k = 0; k < nheld[i]; k++)
					if (held[i][k].node == node)
						have = held[i][k].gpus;
				int deficit = t->place[q].gpus - have;
				if (deficit <= 0)
					continue;
				if (c->conf.dry_run) {
					ed_info("dry run: would grant job %u %d GPUs on "
						"%s",
						j->id, deficit, s.nodes[node].name);
					continue;
				}
				pending += _grow(c, &s, j, rt, node, deficit, have_total,
						 t->gpus, now);
			}
		}
		rt->state = !j->running				 ? ELASTIC_STATE_PENDING
			    : releasing > 0 || t->gpus < rt->cur ? ELASTIC_STATE_SHRINKING
			    : pending > 0 || t->gpus > rt->cur	 ? ELASTIC_STATE_GROWING
								 : ELASTIC_STATE_STEADY;
		/* A grow's time is its grant's start (taken above); a shrink
		 * that we did not time ourselves (a grant ended by someone
		 * else) is dated when we see it. */
		if (rt->last_cur && rt->cur < rt->last_cur && rt->last_resize < now - 1)
			rt->last_resize = now;
		rt->last_cur = rt->cur;
		if (j->running && ed_channel_job_connected(c->ch, j->id)) {
			if (!rt->target_valid || rt->target_sent != rt->target)
				_send_target(c, rt);
			for (int g = 0; g < s.ngrants; g++) {
				const struct ed_grant *gr = &s.grants[g];
				if (gr->job == j->id && gclass[g] == G_HELD &&
				    gr->state == ED_GRANT_RUNNING &&
				    !_announced(rt, gr->id))
					_send_grant(c, rt, gr, &s);
			}
		}
	}
	ed_plan_free(&plan);
out:
	if (held)
		for (int i = 0; i < s.njobs; i++)
			free(held[i]);
	if (cur)
		for (int i = 0; i < s.njobs; i++)
			free(cur[i]);
	free(held);
	free(cur);
	free(nheld);
	free(ncur);
	free(gclass);
	free(last);
	ed_snapshot_free(&s);
}

/* A job that started since the last tick: look at slurmctld's jobs now (at
 * most twice a second, whoever asks), without acting: the main loop ticks
 * after this poll. */
static void _refresh_jobs(struct ed_ctl *c)
{
	struct ed_snapshot s;
	elastic_error_t err;
	if (ed_now_ms() - c->last_tick_ms < 500)
		return;
	c->last_tick_ms = ed_now_ms();
	if (ed_slurm_snapshot(c->conf.grant_prefix, &s, &err) < 0) {
		ed_debug("no snapshot of slurmctld for a new job: %s", err.text);
		return;
	}
	if (_observe_jobs(c, &s) == 0)
		c->tick_wanted = 1;
	ed_snapshot_free(&s);
}

static int _on_message(void *arg, const struct elastic_msg *m, uid_t uid,
		       uint32_t *conn_job, elastic_error_t *err)
{
	struct ed_ctl *c = arg;
	struct _jobrt *rt;

	switch (m->type) {
	case ELASTIC_MSG_HELLO:
	case ELASTIC_MSG_STATUS:
	case ELASTIC_MSG_ACK:
		break;
	default:
		return elastic__errorf(err, "a %s message is not one elasticd accepts",
				       elastic_msg_type_name(m->type));
	}
	rt = _rt(c, m->job);
	if (!rt || !rt->running) {
		_refresh_jobs(c);
		rt = _rt(c, m->job);
	}
	if (!rt || !rt->running)
		return elastic__errorf(err, "job %u is not a running elastic job",
				       m->job);
	if (uid != rt->uid && uid != 0 && uid != ed_slurm_user())
		return elastic__errorf(err,
				       "uid %u may not speak for job %u (owner uid %u)",
				       (unsigned)uid, m->job, (unsigned)rt->uid);
	if (m->type != ELASTIC_MSG_HELLO && *conn_job != m->job)
		return elastic__errorf(err, "%s about job %u before a hello for it",
				       elastic_msg_type_name(m->type), m->job);
	if (m->type == ELASTIC_MSG_HELLO && *conn_job && *conn_job != m->job)
		return elastic__errorf(err, "hello for job %u on a connection of job %u",
				       m->job, *conn_job);

	switch (m->type) {
	case ELASTIC_MSG_HELLO:
		*conn_job = m->job;
		rt->reported = 1;
		rt->step = m->step;
		rt->rate = m->rate;
		ed_info("job %u: registered from %s (uid %u, %u GPUs, step %" PRIu64 ")",
			m->job, m->host, (unsigned)uid, m->gpus, m->step);
		return 0;
	case ELASTIC_MSG_STATUS:
		rt->reported = 1;
		rt->step = m->step;
		rt->rate = m->rate;
		ed_debug("job %u: status %u GPUs, step %" PRIu64 ", %.1f samples/s",
			 m->job, m->gpus, m->step, m->rate);
		return 0;
	case ELASTIC_MSG_ACK: {
		struct _release *r = NULL;
		/* By order, or by grant: an order given by an elasticd that was
		 * restarted since is acknowledged with its old id. */
		for (int i = 0; i < c->nrels; i++)
			if (c->rels[i].job == m->job &&
			    (c->rels[i].order == m->order ||
			     ((m->present & ELASTIC_K_GRANT) &&
			      c->rels[i].grant == m->grant)))
				r = &c->rels[i];
		if (!r) {
			ed_debug("job %u: ack of order %" PRIu64 " (%s)", m->job,
				 m->order,
				 m->result == ELASTIC_ACK_OK ? "ok" : "refused");
			return 0;
		}
		if (m->result != ELASTIC_ACK_OK) {
			ed_info("job %u: refused the release of grant %u (%s): it will "
				"be "
				"cancelled at the deadline",
				m->job, r->grant,
				m->reason[0] ? m->reason : "no reason given");
			return 0;
		}
		ed_info("job %u: acknowledged the release of grant %u after %" PRIu64
			" ms",
			m->job, r->grant, ed_now_ms() - r->ordered_ms);
		r->acked = 1;
		_cancel(c, r->grant, r->job, "released by the job");
		rt->last_resize = (time_t)(ed_now_ms() / 1000);
		_rel_remove(c, r);
		return 0;
	}
	default:
		return -1;
	}
}

uint64_t ed_ctl_next_deadline(const struct ed_ctl *c)
{
	uint64_t first = 0;
	for (int i = 0; i < c->nrels; i++)
		if (!first || c->rels[i].deadline_ms < first)
			first = c->rels[i].deadline_ms;
	return first;
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
		if (rt->nodes[0]) {
			m->present |= ELASTIC_K_NODES;
			snprintf(m->nodes, sizeof(m->nodes), "%s", rt->nodes);
		}
		n++;
	}
	return n;
}

const struct ed_channel_handlers ed_ctl_handlers = {
	.query = _on_query,
	.message = _on_message,
	.job_connected = _on_job_connected,
};
