/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/reconcile.c: the controller's decide step (pure): state and
 * targets -> actions. See reconcile.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grants.h"
#include "reconcile.h"

static struct ed_rc_action *_act(struct ed_rc *rc, enum ed_rc_kind kind, int ji,
				 uint32_t job, uint32_t grant)
{
	if (rc->nacts == rc->capacts) {
		int cap = rc->capacts ? 2 * rc->capacts : 32;
		struct ed_rc_action *n = realloc(rc->acts, (size_t)cap * sizeof(*n));
		if (!n)
			return NULL;
		rc->acts = n;
		rc->capacts = cap;
	}
	struct ed_rc_action *a = &rc->acts[rc->nacts++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->ji = ji;
	a->job = job;
	a->grant = grant;
	a->node = -1;
	return a;
}

static const char _released[] = "released by the job",
		  _job_ended[] = "its elastic job ended";

static int _cancel(struct ed_rc *rc, int g, const struct ed_grant *gr, const char *why)
{
	struct ed_rc_action *a = _act(rc, ED_RC_CANCEL, -1, gr->job, gr->id);
	if (!a)
		return -1;
	a->why = why;
	a->done =
		gr->state == ED_GRANT_RUNNING && (why == _released || why == _job_ended);
	rc->gclass[g] = ED_RC_DROPPED;
	return 0;
}

static const struct ed_job *_job(const struct ed_snapshot *s, uint32_t job)
{
	for (int i = 0; i < s->njobs; i++)
		if (s->jobs[i].id == job)
			return &s->jobs[i];
	return NULL;
}

static int _ji(const struct ed_snapshot *s, uint32_t job)
{
	const struct ed_job *j = _job(s, job);
	return j ? (int)(j - s->jobs) : -1;
}

static const struct ed_rc_release *_rel(const struct ed_rc_in *in, uint32_t grant)
{
	for (int i = 0; i < in->nrels; i++)
		if (in->rels[i].grant == grant)
			return &in->rels[i];
	return NULL;
}

/* One grant of a running job that has a release: finish it, force it, or
 * go on waiting (and tell the job if it was not told). */
static int _releasing(const struct ed_rc_in *in, struct ed_rc *rc, int g,
		      const struct ed_rc_release *r, time_t *resized)
{
	const struct ed_grant *gr = &in->s->grants[g];
	uint64_t deadline = r ? r->deadline_ms : gr->release_by_ms;
	if (!r) {
		/* Ordered before a restart: the deadline lives in slurmctld. */
		struct ed_rc_action *a = _act(rc, ED_RC_RESUME, -1, gr->job, gr->id);
		if (!a)
			return -1;
		a->deadline_ms = deadline;
	}
	if (gr->state == ED_GRANT_PENDING || (r && r->acked) || in->now_ms >= deadline) {
		resized[_ji(in->s, gr->job)] = (time_t)(in->now_ms / 1000);
		return _cancel(rc, g, gr,
			       gr->state == ED_GRANT_PENDING
				       ? "release of a grant not started"
			       : r && r->acked ? _released
					       : "grace deadline passed: forced");
	}
	rc->gclass[g] = ED_RC_RELEASING;
	if ((!r || !r->sent) && !_act(rc, ED_RC_SEND_RELEASE, -1, gr->job, gr->id))
		return -1;
	return 0;
}

/* Grants of ended jobs go, releases progress; releases whose grant is gone
 * are forgotten. */
static int _classify(const struct ed_rc_in *in, struct ed_rc *rc, time_t *resized)
{
	const struct ed_snapshot *s = in->s;
	for (int g = 0; g < s->ngrants; g++) {
		const struct ed_grant *gr = &s->grants[g];
		const struct ed_job *j = _job(s, gr->job);
		const struct ed_rc_release *r = _rel(in, gr->id);
		int rc_ = 0;
		if (!j || !j->running || gr->uid != j->uid)
			rc_ = _cancel(rc, g, gr,
				      !j ? _job_ended
				      : !j->running
					      ? "its elastic job is not running"
					      : "owner differs from the elastic job's");
		else if (r || gr->release_by_ms)
			rc_ = _releasing(in, rc, g, r, resized);
		else if (gr->node < 0)
			rc_ = _cancel(rc, g, gr, "its node is unknown");
		else
			rc->gclass[g] = ED_RC_HELD;
		if (rc_ < 0)
			return -1;
	}
	for (int i = 0; i < in->nrels; i++) {
		int found = 0;
		for (int g = 0; g < s->ngrants && !found; g++)
			found = s->grants[g].id == in->rels[i].grant;
		if (!found &&
		    !_act(rc, ED_RC_FORGET, -1, in->rels[i].job, in->rels[i].grant))
			return -1;
	}
	return 0;
}

static int _was_short(const struct ed_rc_in *in, uint32_t grant)
{
	for (int k = 0; k < in->nshorts; k++)
		if (in->shorts[k] == grant)
			return 1;
	return 0;
}

/* A grant not started yet counts only while it can start: GPUs taken
 * meanwhile (e.g. by a job Slurm started there) make it go. GPUs of grants
 * being released count as free: they soon are. A snapshot reads the nodes
 * and the jobs at two moments, so a job that ends or a grant that starts
 * between the two can make a node look full for one snapshot: a grant goes
 * only when two snapshots in a row find no room for it. */
static int _unstartable(const struct ed_rc_in *in, struct ed_rc *rc)
{
	const struct ed_snapshot *s = in->s;
	int *occ = calloc((size_t)s->nnodes + 1, sizeof(*occ)), ret = 0;
	rc->shorts = calloc((size_t)s->ngrants + 1, sizeof(*rc->shorts));
	if (!occ || !rc->shorts) {
		free(occ);
		return -1;
	}
	for (int k = 0; k < s->nnodes; k++)
		occ[k] = s->nodes[k].busy;
	for (int i = 0; i < s->njobs; i++)
		for (int k = 0; k < s->jobs[i].nlead; k++)
			occ[s->jobs[i].lead[k].node] += s->jobs[i].lead[k].gpus;
	for (int g = 0; g < s->ngrants; g++)
		if (rc->gclass[g] == ED_RC_HELD && s->grants[g].state == ED_GRANT_RUNNING)
			occ[s->grants[g].node] += s->grants[g].gpus;
	for (int g = 0; g < s->ngrants && ret == 0; g++) {
		const struct ed_grant *gr = &s->grants[g];
		if (rc->gclass[g] != ED_RC_HELD || gr->state != ED_GRANT_PENDING)
			continue;
		if (occ[gr->node] + gr->gpus <= s->nodes[gr->node].gpus) {
			occ[gr->node] += gr->gpus;
			continue;
		}
		if (!_was_short(in, gr->id)) {
			rc->shorts[rc->nshorts++] = gr->id;
			continue;
		}
		ret = _cancel(rc, g, gr, "cannot start: its GPUs were taken meanwhile");
	}
	free(occ);
	return ret;
}

/* Add gpus on node to a per-job holding list (merging per node). */
static void _hold(struct elastic_policy_place *list, int *n, int node, int gpus,
		  int pinned)
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

static void _nodes_str(char *out, size_t size, const struct ed_snapshot *s,
		       const struct elastic_policy_place *pl, int n)
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

/* What job i holds (its allocation, pinned; its grants) and runs on, and
 * when it was last resized. */
static int _holdings(const struct ed_rc_in *in, struct ed_rc *rc, int i, time_t resized)
{
	const struct ed_snapshot *s = in->s;
	const struct ed_job *j = &s->jobs[i];
	struct ed_rc_hold *h = &rc->jobs[i];
	time_t last = j->start;
	h->held = calloc((size_t)(j->nlead + s->ngrants + 1), sizeof(*h->held));
	h->cur = calloc((size_t)(j->nlead + s->ngrants + 1), sizeof(*h->cur));
	if (!h->held || !h->cur)
		return -1;
	for (int k = 0; k < j->nlead; k++) {
		_hold(h->held, &h->nheld, j->lead[k].node, j->lead[k].gpus,
		      j->lead[k].gpus);
		_hold(h->cur, &h->ncur, j->lead[k].node, j->lead[k].gpus,
		      j->lead[k].gpus);
	}
	for (int g = 0; g < s->ngrants; g++) {
		const struct ed_grant *gr = &s->grants[g];
		if (gr->job != j->id || rc->gclass[g] == ED_RC_DROPPED)
			continue;
		h->ngrants++;
		h->releasing += rc->gclass[g] == ED_RC_RELEASING;
		if (rc->gclass[g] == ED_RC_HELD) {
			_hold(h->held, &h->nheld, gr->node, gr->gpus, 0);
			h->pending += gr->state == ED_GRANT_PENDING;
		}
		if (gr->state == ED_GRANT_RUNNING) {
			_hold(h->cur, &h->ncur, gr->node, gr->gpus, 0);
			if (gr->start > last)
				last = gr->start;
		}
	}
	if (in->jobs[i].last_resize > last)
		last = in->jobs[i].last_resize;
	if (resized > last)
		last = resized;
	h->last_resize = last;
	for (int k = 0; k < h->ncur; k++)
		h->cur_gpus += h->cur[k].gpus;
	_nodes_str(h->nodes, sizeof(h->nodes), s, h->cur, h->ncur);
	return 0;
}

int ed_rc_grants(const struct ed_rc_in *in, struct ed_rc *out)
{
	const struct ed_snapshot *s = in->s;
	time_t *resized = calloc((size_t)s->njobs + 1, sizeof(*resized));
	int ret = -1;
	out->gclass = calloc((size_t)s->ngrants + 1, sizeof(*out->gclass));
	out->jobs = calloc((size_t)s->njobs + 1, sizeof(*out->jobs));
	out->njobs = s->njobs;
	if (!resized || !out->gclass || !out->jobs)
		goto out;
	if (_classify(in, out, resized) < 0 || _unstartable(in, out) < 0)
		goto out;
	for (int i = 0; i < s->njobs; i++)
		if (_holdings(in, out, i, resized[i]) < 0)
			goto out;
	ret = 0;
out:
	free(resized);
	if (ret < 0)
		errno = ENOMEM;
	return ret;
}

static int _grow(const struct ed_rc_in *in, struct ed_rc *rc, int i, int node, int gpus,
		 int from, int to);

/* Order the release of held running grants of job i on node so that at
 * least excess GPUs go (elastic__pick_release chooses which). */
static int _release(const struct ed_rc_in *in, struct ed_rc *rc, int i, int node,
		    int excess, int from, int to)
{
	const struct ed_snapshot *s = in->s;
	const struct ed_job *j = &s->jobs[i];
	int *idx = calloc((size_t)s->ngrants + 1, sizeof(*idx));
	int *sizes = calloc((size_t)s->ngrants + 1, sizeof(*sizes));
	int pick[64], n = 0, npick = 0, ret = 0;
	if (idx && sizes) {
		for (int g = 0; g < s->ngrants; g++) {
			const struct ed_grant *gr = &s->grants[g];
			if (rc->gclass[g] != ED_RC_HELD || gr->job != j->id ||
			    gr->node != node || gr->state != ED_GRANT_RUNNING)
				continue;
			idx[n] = g;
			sizes[n++] = gr->gpus;
		}
		/* Out of memory there: no release this tick (the next retries). */
		npick = elastic__pick_release(sizes, n, excess, pick, 64);
	}
	int released = 0;
	for (int k = 0; k < npick && ret == 0; k++) {
		const struct ed_grant *gr = &s->grants[idx[pick[k]]];
		struct ed_rc_action *a = _act(rc, ED_RC_RELEASE, i, j->id, gr->id);
		released += gr->gpus;
		if (!a) {
			ret = -1;
			break;
		}
		a->node = node;
		a->gpus = gr->gpus;
		a->from = from;
		a->to = to;
		a->deadline_ms =
			in->now_ms + (uint64_t)(j->grace > 0 ? j->grace : 30) * 1000;
		/* Being released from now on: never announced to the job. */
		rc->gclass[idx[pick[k]]] = ED_RC_RELEASING;
	}
	free(idx);
	free(sizes);
	/* No grants there add up to the excess (e.g. one of 2 where 1 must
	 * go): the grant is re-shaped while the job re-forms anyway. What was
	 * released beyond the excess comes back at once as a smaller grant; it
	 * starts on the GPUs the release frees and elastic-run waits for it
	 * before relaunching (one re-form, the exact size). */
	if (ret == 0 && released > excess)
		ret = _grow(in, rc, i, node, released - excess, from, to);
	return ret;
}

/* Shrink job i on node by excess GPUs: grants not started yet go first, at
 * once; then releases of running ones. */
static int _shrink(const struct ed_rc_in *in, struct ed_rc *rc, int i, int node,
		   int excess, int from, int to)
{
	const struct ed_snapshot *s = in->s;
	struct ed_rc_hold *h = &rc->jobs[i];
	for (int g = 0; g < s->ngrants && excess > 0; g++) {
		const struct ed_grant *gr = &s->grants[g];
		if (gr->job != s->jobs[i].id || gr->node != node ||
		    rc->gclass[g] != ED_RC_HELD || gr->state != ED_GRANT_PENDING)
			continue;
		if (_cancel(rc, g, gr, "not needed any more") < 0)
			return -1;
		excess -= gr->gpus;
		h->pending--;
	}
	if (excess <= 0)
		return 0;
	h->releasing++;
	return _release(in, rc, i, node, excess, from, to);
}

static int _place_gpus(const struct elastic_policy_place *pl, int n, int node)
{
	for (int k = 0; k < n; k++)
		if (pl[k].node == node)
			return pl[k].gpus;
	return 0;
}

/* Grow job i by gpus on node: one grant per part of elastic__split_grow,
 * sized with the grants it holds there so that any later shrink is exact. */
static int _grow(const struct ed_rc_in *in, struct ed_rc *rc, int i, int node, int gpus,
		 int from, int to)
{
	const struct ed_snapshot *s = in->s;
	int have[64], nhave = 0, parts[32], nparts;
	for (int g = 0; g < s->ngrants && nhave < 64; g++)
		if (s->grants[g].job == s->jobs[i].id && s->grants[g].node == node &&
		    rc->gclass[g] == ED_RC_HELD)
			have[nhave++] = s->grants[g].gpus;
	nparts = elastic__split_grow(have, nhave, gpus, parts, 32);
	for (int p = 0; p < nparts; p++) {
		struct ed_rc_action *a = _act(rc, ED_RC_GROW, i, s->jobs[i].id, 0);
		if (!a)
			return -1;
		a->node = node;
		a->gpus = parts[p];
		a->from = from;
		a->to = to;
	}
	rc->jobs[i].growing += nparts;
	return 0;
}

/* Job i (running) to its target placement t: shrink where it holds more,
 * grow where the placement gives more. */
static int _resize(const struct ed_rc_in *in, struct ed_rc *rc, int i,
		   const struct ed_target *t)
{
	struct ed_rc_hold *h = &rc->jobs[i];
	int have_total = 0;
	for (int k = 0; k < h->nheld; k++)
		have_total += h->held[k].gpus;
	for (int k = 0; k < h->nheld; k++) {
		int node = h->held[k].node;
		int excess = h->held[k].gpus - _place_gpus(t->place, t->nplace, node);
		if (excess > 0 &&
		    _shrink(in, rc, i, node, excess, have_total, t->gpus) < 0)
			return -1;
	}
	for (int q = 0; q < t->nplace; q++) {
		int node = t->place[q].node;
		int deficit = t->place[q].gpus - _place_gpus(h->held, h->nheld, node);
		if (deficit > 0 &&
		    _grow(in, rc, i, node, deficit, have_total, t->gpus) < 0)
			return -1;
	}
	return 0;
}

/* Started grants of job i are told of together, once none of its grants is
 * pending (nor submitted this tick): each announcement makes the job
 * re-form, so a grow in several grants is one re-form, not one per grant.
 * A grant started ANNOUNCE_WAIT_S ago is told of anyway (another grant of
 * the job may stay pending for long: a limit, another job's GPUs). */
#define ANNOUNCE_WAIT_S 2
static int _announce_now(const struct ed_rc_in *in, const struct ed_rc *rc, int i)
{
	const struct ed_snapshot *s = in->s;
	time_t now = (time_t)(in->now_ms / 1000);
	if (rc->jobs[i].pending == 0 && rc->jobs[i].growing == 0)
		return 1;
	for (int g = 0; g < s->ngrants; g++)
		if (s->grants[g].job == s->jobs[i].id && rc->gclass[g] == ED_RC_HELD &&
		    s->grants[g].state == ED_GRANT_RUNNING &&
		    now - s->grants[g].start >= ANNOUNCE_WAIT_S)
			return 1;
	return 0;
}

/* Tell job i (connected) its target when it changed. Before this tick's
 * releases: a job that hears its target first knows how many GPUs the
 * releases that follow take, and can leave in one step (elastic-run
 * waits for them; a release acted on alone could leave half a node). */
static int _tell_target(const struct ed_rc_in *in, struct ed_rc *rc, int i, int target)
{
	const struct ed_rc_job *jr = &in->jobs[i];
	if (!jr->target_valid || jr->target_sent != target) {
		struct ed_rc_action *a = _act(rc, ED_RC_TARGET, i, in->s->jobs[i].id, 0);
		if (!a)
			return -1;
		a->gpus = target;
	}
	return 0;
}

/* Tell job i (connected) the grants started for it. */
static int _tell_grants(const struct ed_rc_in *in, struct ed_rc *rc, int i)
{
	const struct ed_snapshot *s = in->s;
	const struct ed_rc_job *jr = &in->jobs[i];
	if (!_announce_now(in, rc, i))
		return 0;
	for (int g = 0; g < s->ngrants; g++) {
		const struct ed_grant *gr = &s->grants[g];
		int told = 0;
		if (gr->job != s->jobs[i].id || rc->gclass[g] != ED_RC_HELD ||
		    gr->state != ED_GRANT_RUNNING)
			continue;
		for (int k = 0; k < jr->nannounced && !told; k++)
			told = jr->announced[k] == gr->id;
		if (told)
			continue;
		struct ed_rc_action *a = _act(rc, ED_RC_ANNOUNCE, i, gr->job, gr->id);
		if (!a)
			return -1;
		a->node = gr->node;
		a->gpus = gr->gpus;
	}
	return 0;
}

int ed_rc_moves(const struct ed_rc_in *in, const struct ed_plan *plan, struct ed_rc *rc)
{
	const struct ed_snapshot *s = in->s;
	for (int i = 0; i < plan->ntargets && i < s->njobs; i++) {
		const struct ed_target *t = &plan->targets[i];
		const struct ed_job *j = &s->jobs[i];
		if (t->gpus != in->jobs[i].target) {
			struct ed_rc_action *a = _act(rc, ED_RC_EXPLAIN, i, j->id, 0);
			if (!a)
				goto nomem;
			a->why = t->explain;
			a->gpus = t->gpus;
		}
		if (j->running && in->jobs[i].connected &&
		    _tell_target(in, rc, i, t->gpus) < 0)
			goto nomem;
		if (j->running && _resize(in, rc, i, t) < 0)
			goto nomem;
		/* A grow's time is its grant's start, a shrink's its release
		 * (taken above). GPUs lost without an order of ours (a node
		 * lost, a grant cancelled by hand) do not start the cool-down:
		 * it keeps the policy from churning, and a loss is no policy
		 * change. Held, the job's grow back onto the freed GPUs went to
		 * another job that had to give them back at the end of it (two
		 * re-forms of that job for nothing, seen in the demo). */
		if (j->running && in->jobs[i].connected && _tell_grants(in, rc, i) < 0)
			goto nomem;
	}
	return 0;
nomem:
	errno = ENOMEM;
	return -1;
}

void ed_rc_free(struct ed_rc *rc)
{
	if (!rc)
		return;
	for (int i = 0; rc->jobs && i < rc->njobs; i++) {
		free(rc->jobs[i].held);
		free(rc->jobs[i].cur);
	}
	free(rc->jobs);
	free(rc->gclass);
	free(rc->acts);
	free(rc->shorts);
	memset(rc, 0, sizeof(*rc));
}

enum elastic_job_state ed_rc_state(int running, int releasing, int pending, int target,
				   int cur)
{
	return !running			       ? ELASTIC_STATE_PENDING
	       : releasing > 0 || target < cur ? ELASTIC_STATE_SHRINKING
	       : pending > 0 || target > cur   ? ELASTIC_STATE_GROWING
					       : ELASTIC_STATE_STEADY;
}
