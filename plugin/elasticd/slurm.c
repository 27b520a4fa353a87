/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/slurm.c: elasticd's only libslurm caller: snapshot, grant
 * submit/mark/cancel. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "contract.h"
#include "elasticd.h"
#include "grants.h"

/* What a grant's AdminComment starts with; only administrators can set it,
 * so a user naming a job "elastic:<id>" does not make it a grant. */
#define GRANT_MARK "elastic-grant:job="

/* libslurm's two API forms (config/elastic_slurm_api.m4): Slurm 26.05 names
 * a job by a slurm_step_id_t and frees the configuration with
 * slurm_free_conf; 24.11 takes a uint32_t job id and slurm_free_ctl_conf. */
static void _free_conf(slurm_conf_t *c)
{
#if HAVE_DECL_SLURM_FREE_CONF
	slurm_free_conf(c);
#else
	slurm_free_ctl_conf(c);
#endif
}

static void _desc_set_job(job_desc_msg_t *d, uint32_t id)
{
#ifdef HAVE_JOB_DESC_MSG_T_STEP_ID_JOB_ID
	d->step_id.job_id = id;
#else
	d->job_id = id;
#endif
}

static uint32_t _submitted_job(const submit_response_msg_t *r)
{
#ifdef HAVE_SUBMIT_RESPONSE_MSG_T_STEP_ID_JOB_ID
	return r->step_id.job_id;
#else
	return r->job_id;
#endif
}

static int _kill_job(uint32_t id, uint16_t sig)
{
#ifdef HAVE_SLURM_KILL_JOB_STEP_ID
	slurm_step_id_t s = {0};
	s.job_id = id;
	s.step_het_comp = NO_VAL;
	s.step_id = NO_VAL;
	return slurm_kill_job(s, sig, 0);
#else
	return slurm_kill_job(id, sig, 0);
#endif
}

static uid_t _slurm_user;
static time_t _jobs_seen; /* last_update of the last job list loaded */
static uint64_t _jobs_fp; /* fingerprint of that list (see _fingerprint) */

int ed_slurm_init(elastic_error_t *err)
{
	slurm_conf_t *c = NULL;
	slurm_init(NULL);
	if (slurm_load_ctl_conf((time_t)0, &c) != SLURM_SUCCESS)
		return elastic__errorf(err, "cannot read slurmctld's configuration: %s",
				       slurm_strerror(errno));
	_slurm_user = c->slurm_user_id;
	_free_conf(c);
	return 0;
}

void ed_slurm_fini(void)
{
	slurm_fini();
}

uid_t ed_slurm_user(void)
{
	return _slurm_user;
}

static void _copy(char *dst, const char *src, size_t size)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static int _node_index(const struct ed_snapshot *s, const char *name)
{
	for (int i = 0; i < s->nnodes; i++)
		if (strcmp(s->nodes[i].name, name) == 0)
			return i;
	return -1;
}

/* Per-node GPUs of a job from its node list and gres_detail_str. */
static int _job_places(const struct ed_snapshot *s, const slurm_job_info_t *ji,
		       struct ed_place **out, int *nout)
{
	hostlist_t *hl;
	char *host;
	int k = 0, n = 0;
	struct ed_place *pl;

	*out = NULL;
	*nout = 0;
	if (!ji->nodes || !*ji->nodes)
		return 0;
	hl = slurm_hostlist_create(ji->nodes);
	if (!hl)
		return -1;
	pl = calloc(ji->gres_detail_cnt + 1, sizeof(*pl));
	if (!pl) {
		slurm_hostlist_destroy(hl);
		return -1;
	}
	while ((host = slurm_hostlist_shift(hl))) {
		if ((uint32_t)k < ji->gres_detail_cnt) {
			int g = elastic__gres_gpus(ji->gres_detail_str[k]);
			int idx = _node_index(s, host);
			if (g > 0 && idx >= 0) {
				pl[n].node = idx;
				pl[n].gpus = g;
				pl[n].pinned = g;
				n++;
			}
		}
		k++;
		free(host);
	}
	slurm_hostlist_destroy(hl);
	*out = pl;
	*nout = n;
	return 0;
}

static int _load_nodes(struct ed_snapshot *s, elastic_error_t *err)
{
	node_info_msg_t *nm = NULL;
	if (slurm_load_node((time_t)0, &nm, SHOW_ALL) != SLURM_SUCCESS)
		return elastic__errorf(err, "slurm_load_node: %s", slurm_strerror(errno));
	s->nodes = calloc(nm->record_count + 1, sizeof(*s->nodes));
	if (!s->nodes) {
		slurm_free_node_info_msg(nm);
		return elastic__errorf(err, "out of memory");
	}
	for (uint32_t i = 0; i < nm->record_count; i++) {
		node_info_t *ni = &nm->node_array[i];
		struct ed_node *n;
		uint32_t base = ni->node_state & NODE_STATE_BASE;
		if (!ni->name)
			continue;
		n = &s->nodes[s->nnodes++];
		_copy(n->name, ni->name, sizeof(n->name));
		n->gpus = elastic__gres_gpus(ni->gres);
		if (base == NODE_STATE_DOWN || base == NODE_STATE_FUTURE ||
		    base == NODE_STATE_UNKNOWN ||
		    (ni->node_state &
		     (NODE_STATE_DRAIN | NODE_STATE_FAIL | NODE_STATE_NO_RESPOND)))
			n->unusable = 1;
	}
	slurm_free_node_info_msg(nm);
	return 0;
}

/* The elastic job id a grant job serves, from its AdminComment, and the
 * release deadline if one was recorded. 0 when it is no grant. */
static uint32_t _grant_of(const slurm_job_info_t *ji, const char *prefix,
			  uint64_t *release_by)
{
	char *end;
	unsigned long id, named;
	const char *rb;
	size_t plen = strlen(prefix);

	*release_by = 0;
	if (!ji->name || strncmp(ji->name, prefix, plen) != 0 || !ji->admin_comment ||
	    strncmp(ji->admin_comment, GRANT_MARK, strlen(GRANT_MARK)) != 0)
		return 0;
	id = strtoul(ji->admin_comment + strlen(GRANT_MARK), &end, 10);
	if (id == 0 || id >= UINT32_MAX || (*end && *end != ','))
		return 0;
	named = strtoul(ji->name + plen, &end, 10);
	if (named != id || *end)
		return 0;
	if ((rb = strstr(ji->admin_comment, ",release_by=")))
		*release_by = strtoull(rb + 12, NULL, 10);
	return (uint32_t)id;
}

/* FNV-1a over what elasticd acts on: ids, states, priorities, tags,
 * names and node lists of every job. */
static uint64_t _fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static uint64_t _fingerprint(const job_info_msg_t *jm)
{
	uint64_t h = 14695981039346656037ULL;
	for (uint32_t i = 0; i < jm->record_count; i++) {
		const slurm_job_info_t *ji = &jm->job_array[i];
		h = _fnv(h, &ji->job_id, sizeof(ji->job_id));
		h = _fnv(h, &ji->job_state, sizeof(ji->job_state));
		h = _fnv(h, &ji->priority, sizeof(ji->priority));
		h = _fnv(h, &ji->state_reason, sizeof(ji->state_reason));
		if (ji->admin_comment)
			h = _fnv(h, ji->admin_comment, strlen(ji->admin_comment));
		if (ji->name)
			h = _fnv(h, ji->name, strlen(ji->name));
		if (ji->nodes)
			h = _fnv(h, ji->nodes, strlen(ji->nodes));
	}
	return h;
}

/* A pending job that cannot start whatever elasticd frees: held (user or
 * admin; priority 0), deferred (--begin in the future) or waiting for a
 * dependency. Shrinking running jobs for it would only idle their GPUs; it
 * enters the split once Slurm would start it (scontrol release, the begin
 * time reached, the dependency met). */
static int _not_eligible(const slurm_job_info_t *ji)
{
	if ((ji->job_state & JOB_STATE_BASE) != JOB_PENDING)
		return 0;
	switch (ji->state_reason) {
	case WAIT_HELD:
	case WAIT_HELD_USER:
	case WAIT_DEPENDENCY:
	case WAIT_DEP_INVALID:
	case WAIT_TIME:
		return 1;
	default:
		return ji->priority == 0;
	}
}

int ed_slurm_snapshot(const char *prefix, struct ed_snapshot *s, elastic_error_t *err)
{
	job_info_msg_t *jm = NULL;
	int *kind;

	memset(s, 0, sizeof(*s));
	if (_load_nodes(s, err) < 0)
		return -1;
	if (slurm_load_jobs((time_t)0, &jm, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) {
		elastic__errorf(err, "slurm_load_jobs: %s", slurm_strerror(errno));
		ed_snapshot_free(s);
		return -1;
	}
	_jobs_seen = jm->last_update;
	_jobs_fp = _fingerprint(jm);
	s->jobs = calloc(jm->record_count + 1, sizeof(*s->jobs));
	s->grants = calloc(jm->record_count + 1, sizeof(*s->grants));
	kind = calloc(jm->record_count + 1, sizeof(*kind));
	if (!s->jobs || !s->grants || !kind) {
		free(kind);
		slurm_free_job_info_msg(jm);
		ed_snapshot_free(s);
		return elastic__errorf(err, "out of memory");
	}
	for (uint32_t i = 0; i < jm->record_count; i++) {
		slurm_job_info_t *ji = &jm->job_array[i];
		uint32_t base = ji->job_state & JOB_STATE_BASE;
		int completing = (ji->job_state & JOB_COMPLETING) != 0;
		int active = (base == JOB_RUNNING || base == JOB_PENDING) && !completing;
		uint64_t release_by;
		uint32_t served;

		if (active && elastic_tag_is_tag(ji->admin_comment)) {
			struct elastic_request req;
			if (_not_eligible(ji))
				continue;
			elastic_error_t terr;
			struct ed_job *j;
			if (elastic_tag_parse(ji->admin_comment, &req, &terr) < 0) {
				ed_error("job %u: bad elastic tag '%s': %s (ignored)",
					 ji->job_id, ji->admin_comment, terr.text);
				continue;
			}
			j = &s->jobs[s->njobs];
			j->id = ji->job_id;
			j->uid = ji->user_id;
			j->gid = ji->group_id;
			_copy(j->user, ji->user_name, sizeof(j->user));
			if (!j->user[0]) {
				struct passwd pw, *pr = NULL;
				char pwbuf[1024];
				if (getpwuid_r(j->uid, &pw, pwbuf, sizeof(pwbuf), &pr) ==
					    0 &&
				    pr)
					_copy(j->user, pr->pw_name, sizeof(j->user));
				else
					snprintf(j->user, sizeof(j->user), "%u",
						 (unsigned)j->uid);
			}
			_copy(j->account, ji->account, sizeof(j->account));
			_copy(j->partition, ji->partition, sizeof(j->partition));
			j->running = base == JOB_RUNNING;
			j->min = (int)req.min_gpus;
			j->max = (int)req.max_gpus;
			j->grace = (int)req.grace;
			j->weight = (int)req.weight;
			j->sizes_kind = req.sizes.kind;
			j->nsizes =
				req.sizes.n < ED_SIZES_MAX ? req.sizes.n : ED_SIZES_MAX;
			for (int k = 0; k < j->nsizes; k++)
				j->sizes[k] = (int)req.sizes.v[k];
			j->priority = ji->priority;
			j->submit = ji->submit_time;
			j->start = j->running ? ji->start_time : 0;
			j->time_limit = ji->time_limit;
			if (j->running && _job_places(s, ji, &j->lead, &j->nlead) < 0) {
				ed_error("job %u: cannot read its node list '%s'",
					 ji->job_id, ji->nodes);
				continue;
			}
			kind[i] = 1;
			s->njobs++;
		} else if (active && (served = _grant_of(ji, prefix, &release_by))) {
			struct ed_grant *g = &s->grants[s->ngrants++];
			g->id = ji->job_id;
			g->job = served;
			g->uid = ji->user_id;
			g->release_by_ms = release_by;
			g->state =
				base == JOB_RUNNING ? ED_GRANT_RUNNING : ED_GRANT_PENDING;
			g->start = g->state == ED_GRANT_RUNNING ? ji->start_time : 0;
			g->node = -1;
			if (g->state == ED_GRANT_RUNNING) {
				struct ed_place *pl;
				int npl;
				if (_job_places(s, ji, &pl, &npl) == 0) {
					if (npl > 0) {
						g->node = pl[0].node;
						g->gpus = pl[0].gpus;
					}
					free(pl);
				}
			} else {
				g->gpus = elastic__gres_gpus(ji->tres_per_node);
				if (ji->req_nodes)
					g->node = _node_index(s, ji->req_nodes);
			}
			kind[i] = 2;
		}
	}
	/* GPUs of every other running job are busy for the policy. Those of
	 * a job completing (e.g. a grant just cancelled) are not: they are
	 * about to be free, and a grant submitted onto them starts then. */
	for (uint32_t i = 0; i < jm->record_count; i++) {
		slurm_job_info_t *ji = &jm->job_array[i];
		uint32_t base = ji->job_state & JOB_STATE_BASE;
		struct ed_place *pl;
		int npl;
		if (kind[i] || (ji->job_state & JOB_COMPLETING) ||
		    !(base == JOB_RUNNING || base == JOB_SUSPENDED))
			continue;
		if (_job_places(s, ji, &pl, &npl) < 0)
			continue;
		for (int k = 0; k < npl; k++)
			s->nodes[pl[k].node].busy += pl[k].gpus;
		free(pl);
	}
	/* A node that takes no new work (down, drained, not responding)
	 * offers only the GPUs its running jobs hold: nothing grows there, and
	 * what is held stays consistent for the policy (no over-commit). */
	for (int k = 0; k < s->nnodes; k++) {
		struct ed_node *n = &s->nodes[k];
		int held = n->busy;
		if (!n->unusable)
			continue;
		for (int i = 0; i < s->njobs; i++)
			for (int q = 0; q < s->jobs[i].nlead; q++)
				if (s->jobs[i].lead[q].node == k)
					held += s->jobs[i].lead[q].gpus;
		for (int g = 0; g < s->ngrants; g++)
			if (s->grants[g].node == k &&
			    s->grants[g].state == ED_GRANT_RUNNING)
				held += s->grants[g].gpus;
		if (held < n->gpus)
			n->gpus = held;
	}
	for (int k = 0; k < s->nnodes; k++)
		if (s->nodes[k].busy > s->nodes[k].gpus)
			s->nodes[k].busy = s->nodes[k].gpus;
	free(kind);
	slurm_free_job_info_msg(jm);
	return 0;
}

int ed_slurm_jobs_changed(void)
{
	job_info_msg_t *jm = NULL;
	time_t now = time(NULL);
	int changed;

	if (!_jobs_seen)
		return 1;
	/* slurmctld answers "no change" without sending the list when the
	 * time given is not older than its last job change (whole seconds;
	 * last_update is that time). A later change in that same second is
	 * invisible that way, so for a second after a change ask from the
	 * second before and compare fingerprints; afterwards the plain
	 * question costs nothing when nothing changed. */
	if (now > _jobs_seen + 1) {
		if (slurm_load_jobs(_jobs_seen, &jm, SHOW_ALL) != SLURM_SUCCESS)
			return 0; /* no change; or an error, which the next tick reports
				   */
		slurm_free_job_info_msg(jm);
		return 1;
	}
	if (slurm_load_jobs(_jobs_seen - 1, &jm, SHOW_ALL) != SLURM_SUCCESS)
		return 0;
	changed = _fingerprint(jm) != _jobs_fp;
	slurm_free_job_info_msg(jm);
	return changed;
}

void ed_snapshot_free(struct ed_snapshot *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->njobs; i++)
		free(s->jobs[i].lead);
	free(s->jobs);
	free(s->grants);
	free(s->nodes);
	memset(s, 0, sizeof(*s));
}

const struct ed_job *ed_snapshot_job(const struct ed_snapshot *s, uint32_t id)
{
	for (int i = 0; i < s->njobs; i++)
		if (s->jobs[i].id == id)
			return &s->jobs[i];
	return NULL;
}

int ed_slurm_submit_grant(const struct ed_job *j, const char *node, int gpus,
			  const char *prefix, const char *qos, uint32_t *grant_id,
			  elastic_error_t *err)
{
	job_desc_msg_t d;
	submit_response_msg_t *resp = NULL;
	char name[ED_NAME_MAX + 16], tres[32], mark[64], nodebuf[ED_NAME_MAX];
	char conf[4200] = "", script[1024];
	char *env[] = {"ELASTIC_GRANT=1", "PATH=/usr/bin:/bin:/usr/local/bin", conf,
		       NULL};
	/* The grant only holds GPUs: the job launches its ranks there with
	 * srun --jobid=<grant> --overlap. It ends by itself when the job does
	 * (the script asks squeue, with this daemon's slurm.conf). */
	if (getenv("SLURM_CONF"))
		snprintf(conf, sizeof(conf), "SLURM_CONF=%s", getenv("SLURM_CONF"));
	if (elastic__grant_script(script, sizeof(script), j->id, ELASTIC_GRANT_POLL_S) <
	    0)
		return elastic__errorf(err, "grant script for job %u too long", j->id);

	snprintf(name, sizeof(name), "%s%u", prefix, j->id);
	snprintf(tres, sizeof(tres), "gres/gpu:%d", gpus);
	snprintf(mark, sizeof(mark), GRANT_MARK "%u", j->id);
	_copy(nodebuf, node, sizeof(nodebuf));
	slurm_init_job_desc_msg(&d);
	d.name = name;
	d.user_id = j->uid;
	d.group_id = j->gid;
	d.account = *j->account ? (char *)j->account : NULL;
	d.partition = *j->partition ? (char *)j->partition : NULL;
	d.qos = qos && *qos ? (char *)qos : NULL;
	d.tres_per_node = tres;
	d.req_nodes = nodebuf;
	d.min_nodes = 1;
	d.max_nodes = 1;
	d.num_tasks = 1;
	d.requeue = 0;
	/* A grant lives no longer than the job it serves could. */
	d.time_limit = elastic__grant_minutes((long)j->start, j->time_limit,
					      (long)time(NULL), INFINITE);
	if (!d.time_limit)
		d.time_limit = NO_VAL;
	d.admin_comment = mark;
	d.script = script;
	d.environment = env;
	d.env_size = conf[0] ? 3 : 2;
	d.work_dir = "/tmp";
	d.std_out = "/dev/null";
	d.std_err = "/dev/null";
	if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) {
		int e = errno;
		return elastic__errorf(err,
				       "submit of a %d-GPU grant on %s for job %u: %s",
				       gpus, node, j->id, slurm_strerror(e));
	}
	*grant_id = _submitted_job(resp);
	slurm_free_submit_response_response_msg(resp);
	return 0;
}

int ed_slurm_mark_release(uint32_t grant, uint32_t job, uint64_t by_ms,
			  elastic_error_t *err)
{
	job_desc_msg_t d;
	char mark[96];
	snprintf(mark, sizeof(mark), GRANT_MARK "%u,release_by=%" PRIu64, job, by_ms);
	slurm_init_job_desc_msg(&d);
	_desc_set_job(&d, grant);
	d.admin_comment = mark;
	if (slurm_update_job(&d) != SLURM_SUCCESS)
		return elastic__errorf(err, "marking grant %u for release: %s", grant,
				       slurm_strerror(errno));
	return 0;
}

int ed_slurm_cancel(uint32_t id, elastic_error_t *err)
{
	if (_kill_job(id, SIGKILL) != SLURM_SUCCESS) {
		int e = errno;
		if (e == ESLURM_ALREADY_DONE || e == ESLURM_INVALID_JOB_ID)
			return 0;
		return elastic__errorf(err, "cancel of job %u: %s", id,
				       slurm_strerror(e));
	}
	return 0;
}
