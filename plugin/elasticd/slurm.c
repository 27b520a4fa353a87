/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/slurm.c: elasticd's only libslurm caller: snapshot, grant
 * submit/mark/cancel, and what it asks slurmctld to get them. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "contract.h"
#include "ctld_gate.h"
#include "grants.h"
#include "log.h"
#include "slurm.h"
#include "slurm_compat.h"

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

const char *const ed_call_name[ED_CALLS] = {
	[ED_CALL_NODES] = "nodes",   [ED_CALL_JOB_LIST] = "job_list",
	[ED_CALL_JOB] = "job",	     [ED_CALL_JOB_STATE] = "job_state",
	[ED_CALL_SUBMIT] = "submit", [ED_CALL_UPDATE] = "update",
	[ED_CALL_SIGNAL] = "signal", [ED_CALL_CONFIG] = "config",
	[ED_CALL_PING] = "ping",
};

/* Every call below, counted and timed by kind (ed_slurm_calls), and the
 * gate's waits for a ping. Only the main thread calls slurmctld (the
 * pinger aside, whose time is counted as the gate's wait): no lock. */
static struct ed_calls _calls;

/* The call of kind k that began at t0 returned rc: counted, errno kept. */
static int _call_done(enum ed_call k, double t0, int rc)
{
	int e = errno;
	_calls.n[k]++;
	_calls.s[k] += ed_mono_s() - t0;
	errno = e;
	return rc;
}

void ed_slurm_calls(struct ed_calls *out)
{
	*out = _calls;
}

static int _load_job(uint32_t id, job_info_msg_t **m, uint16_t flags)
{
	double t0 = ed_mono_s();
	return _call_done(ED_CALL_JOB, t0, elastic__slurm_load_job(id, m, flags));
}

static int _load_jobs(time_t since, job_info_msg_t **m, uint16_t flags)
{
	double t0 = ed_mono_s();
	return _call_done(ED_CALL_JOB_LIST, t0, slurm_load_jobs(since, m, flags));
}

static int _kill_job(uint32_t id, uint16_t sig, uint16_t flags)
{
#ifdef HAVE_SLURM_KILL_JOB_STEP_ID
	slurm_step_id_t s = {0};
	s.job_id = id;
	s.step_het_comp = NO_VAL;
	s.step_id = NO_VAL;
	double t0 = ed_mono_s();
	return _call_done(ED_CALL_SIGNAL, t0, slurm_kill_job(s, sig, flags));
#else
	double t0 = ed_mono_s();
	return _call_done(ED_CALL_SIGNAL, t0, slurm_kill_job(id, sig, flags));
#endif
}

/* The gate in front of every call (ctld_gate.h) and the thread that pings
 * slurmctld for it: the loop waits for a ping at most ED_GATE_WAIT_MS. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t want_cv, back_cv;
	pthread_t th;
	int started, want, quit, back, answered;
	int ahead;	      /* the ping out was sent ahead of a call (ed_slurm_ready) */
	uint32_t controllers; /* SlurmctldHost lines: the primary and its backups */
	struct ed_gate g;
} _ping = {.mu = PTHREAD_MUTEX_INITIALIZER,
	   .want_cv = PTHREAD_COND_INITIALIZER,
	   .back_cv = PTHREAD_COND_INITIALIZER};

static void *_pinger(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&_ping.mu);
	for (;;) {
		while (!_ping.want && !_ping.quit)
			pthread_cond_wait(&_ping.want_cv, &_ping.mu);
		if (_ping.quit)
			break;
		_ping.want = 0;
		uint32_t n = _ping.controllers ? _ping.controllers : 1;
		pthread_mutex_unlock(&_ping.mu);
		int ok = 0;
		/* any controller that answers: libslurm's calls fail over to it */
		for (uint32_t i = 0; i < n && !ok; i++)
			ok = slurm_ping((int)i) == SLURM_SUCCESS;
		pthread_mutex_lock(&_ping.mu);
		_ping.answered = ok;
		_ping.back = 1;
		pthread_cond_broadcast(&_ping.back_cv);
	}
	pthread_mutex_unlock(&_ping.mu);
	return NULL;
}

/* Under _ping.mu: take a ping that came back. One sent ahead
 * (ed_slurm_ready) is counted and timed here, or when it is given up on. */
static void _ping_take(void)
{
	if (_ping.back) {
		ed_gate_ping_back(&_ping.g, _ping.answered, ed_now_ms());
		_ping.back = 0;
		if (_ping.ahead) {
			_calls.n[ED_CALL_PING]++;
			_calls.s[ED_CALL_PING] +=
				(double)(ed_now_ms() - _ping.g.pinged_ms) / 1e3;
		}
		_ping.ahead = 0;
	}
}

int ed_slurm_ready(void)
{
	int ready = 1;

	if (!_ping.started)
		return 1;
	pthread_mutex_lock(&_ping.mu);
	_ping_take();
	uint64_t now = ed_now_ms();
	enum ed_gate_do d = ed_gate_decide(&_ping.g, now);
	if (d == ED_GATE_PING) {
		ed_gate_pinged(&_ping.g, now);
		_ping.ahead = 1;
		_ping.want = 1;
		pthread_cond_signal(&_ping.want_cv);
		ready = 0;
	} else if (_ping.g.pinging) {
		/* out past the gate's wait: calls are refused until it is back */
		ready = now - _ping.g.pinged_ms >= ED_GATE_WAIT_MS;
		if (ready && !_ping.g.down) {
			ed_gate_wait_over(&_ping.g, now);
			if (_ping.ahead) {
				_calls.n[ED_CALL_PING]++;
				_calls.s[ED_CALL_PING] += (double)ED_GATE_WAIT_MS / 1e3;
			}
			_ping.ahead = 0;
		}
	}
	pthread_mutex_unlock(&_ping.mu);
	return ready;
}

/* 0 if slurmctld may be called now; -1 with err if it does not answer
 * (without waiting on it more than ED_GATE_WAIT_MS). */
static int _gate(elastic_error_t *err)
{
	enum ed_gate_do d;
	uint64_t waited = 0;

	if (!_ping.started)
		return 0;
	pthread_mutex_lock(&_ping.mu);
	_ping_take();
	d = ed_gate_decide(&_ping.g, ed_now_ms());
	if (d == ED_GATE_PING) {
		uint64_t t0 = ed_now_ms();
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)ED_GATE_WAIT_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		ed_gate_pinged(&_ping.g, t0);
		_ping.want = 1;
		pthread_cond_signal(&_ping.want_cv);
		while (!_ping.back &&
		       pthread_cond_timedwait(&_ping.back_cv, &_ping.mu, &until) == 0)
			;
		waited = ed_now_ms() - t0;
		_calls.n[ED_CALL_PING]++;
		_calls.s[ED_CALL_PING] += (double)waited / 1e3;
		if (_ping.back)
			_ping_take();
		else
			ed_gate_wait_over(&_ping.g, ed_now_ms());
		d = ed_gate_decide(&_ping.g, ed_now_ms()); /* CALL or REFUSE now */
	}
	int pinging = _ping.g.pinging;
	uint64_t since = _ping.g.down_since_ms;
	pthread_mutex_unlock(&_ping.mu);
	if (d != ED_GATE_REFUSE)
		return 0;
	errno = SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR;
	if (pinging)
		return elastic__errorf(
			err,
			"slurmctld does not answer (a ping unanswered for %" PRIu64
			" ms)",
			waited ? waited : ed_now_ms() - since);
	return elastic__errorf(err, "slurmctld does not answer (for %" PRIu64 " ms: %s)",
			       ed_now_ms() - since, "no answer to a ping");
}

/* The outcome of a call the gate let through. */
static void _called(int ok)
{
	if (!_ping.started)
		return;
	pthread_mutex_lock(&_ping.mu);
	ed_gate_call_back(&_ping.g, ok, ed_now_ms());
	pthread_mutex_unlock(&_ping.mu);
}

int ed_slurm_ctld_down(void)
{
	pthread_mutex_lock(&_ping.mu);
	_ping_take();
	int down = _ping.g.down;
	pthread_mutex_unlock(&_ping.mu);
	return down;
}

static uid_t _slurm_user;
static time_t _jobs_seen; /* last_update of the last job list loaded */
static uint64_t _jobs_fp; /* fingerprint of that list (see _fingerprint) */

/* How elasticd asks for jobs. Targeted (the default): per tick the nodes,
 * one job-state RPC for the ids after the last job seen (new jobs: Slurm
 * numbers them in order), one load per new job, one job-state RPC over
 * the elastic jobs and grants and a load of each that changed (struct rec);
 * between ticks only the elastic jobs and grants. slurmctld's work
 * then grows with elasticd's own jobs and the new ones, not with the queue.
 * ELASTICD_QUERY=full: the whole job list per tick and the change check
 * against it (for benches that compare both; and the fallback when the
 * job-state RPC fails or is missing). */
static int _query_full;
/* Targeted: many jobs never read (a first tick, a restart) are read in one
 * job list rather than one load each. */
#define TARGETED_MAX_LOADS 64
/* A job is remembered as of no interest only once this old: a site may tag
 * a job by hand just after sbatch (as the tests do without the plugins). */
#define OTHER_AFTER_S 5
/* And the whole list is read again this often: for a job tagged later by
 * hand, ids that jumped (scontrol's --jobid, MaxJobId wrapping). At 9,000
 * jobs that is one list (tens of ms of slurmctld) in 2 minutes. */
#define FULL_EVERY_S 120
/* While hints arrive, a tag added by hand comes with a hint naming the job:
 * the whole list is then only the net under a lost datagram and jumped ids.
 * At site size the whole list is the slowest tick there is. */
#define FULL_EVERY_HINTED_S 600
static time_t _full_at;	 /* when the whole list was read last */
static int _hints_alive; /* ed_slurm_hints_alive */
/* Jobs hints named that the watch list does not hold: read next tick. */
#define HINTED_MAX 64
static uint32_t _hinted[HINTED_MAX];
static int _nhinted;
/* Without SHOW_LOCAL every job load first asks for the federation
 * (REQUEST_FED_INFO): one more RPC per load. elasticd acts on its own
 * cluster. Full mode keeps the flags it always had. */
static uint16_t _local;

/* The id the next job submitted gets, as far as elasticd knows (0: not
 * known; the whole list is read). */
static uint32_t _next_id;
/* Jobs found neither elastic nor grants but younger than OTHER_AFTER_S:
 * read again while no hints arrive. Older ones are not: tags and grant
 * marks come at submission. */
static uint32_t *_young;
static int _nyoung;
/* What the between-tick check watches: the elastic jobs and the grants of
 * the last snapshot, and the fingerprint they had then (_watch_hash). */
static uint32_t *_watch_jobs, *_watch_grants;
static int _nwatch_jobs, _nwatch_grants, _watch_valid;
/* Grants are asked about between ticks only while one is pending (its
 * start is the next step of a grow): a running grant ends by elasticd's own
 * cancel or its time limit, which the next tick sees. */
static int _watch_grants_pending;
static uint64_t _watch_fp, _watch_fp_grants;
/* Targeted: the watched grants' and elastic jobs' records as last loaded,
 * by id. A grant's record changes only with its state (pending, running,
 * completing, ended) and with the release mark elasticd writes itself
 * (which drops it here). An elastic job's also changes with an update (its
 * priority, limits or tag: the between-tick check, on a hint or by polling,
 * finds that and drops its record) and with slurmctld's periodic priority
 * calculation, so it is also read again once REC_FRESH_S old, a few a
 * tick. A tick asks one job-state RPC about all of them and loads only
 * what changed: with hundreds of grants and tens of elastic jobs a few
 * RPCs, not hundreds. A job that is no longer pending or running is not
 * loaded: its state from that RPC is all the snapshot reads of it. */
struct rec {
	uint32_t id, state;
	time_t at;     /* when it was loaded */
	uint64_t hash; /* _watch_hash_job of it */
	job_info_msg_t *m;
	int fresh; /* loaded by this tick (in the tick's new list only) */
};
struct recs {
	struct rec *v; /* sorted by id */
	int n;
};
static struct recs _grants_kept, _jobs_kept;
#define REC_FRESH_S 10

/* slurmctld's StateSaveLocation (SlurmUser writes there): NULL if unset. */
static char *_state_dir;

int ed_slurm_init(elastic_error_t *err)
{
	slurm_conf_t *c = NULL;
	slurm_init(NULL);
	double t0 = ed_mono_s();
	if (_call_done(ED_CALL_CONFIG, t0, slurm_load_ctl_conf((time_t)0, &c)) !=
	    SLURM_SUCCESS) {
		elastic__errorf(err, "cannot read slurmctld's configuration: %s",
				slurm_strerror(errno));
		slurm_fini(); /* a failed call changes nothing */
		return -1;
	}
	_slurm_user = c->slurm_user_id;
	_ping.controllers = c->control_cnt;
	if (!_ping.started) {
		/* A thread that cannot start leaves the calls ungated, as
		 * libslurm's own (they wait on an absent slurmctld) */
		int e = pthread_create(&_ping.th, NULL, _pinger, NULL);
		_ping.started = e == 0;
		if (e)
			ed_error("no thread to ping slurmctld: %s", strerror(e));
	}
	free(_state_dir);
	_state_dir = c->state_save_location ? strdup(c->state_save_location) : NULL;
	_free_conf(c);
	const char *q = getenv("ELASTICD_QUERY");
	_query_full = q && strcmp(q, "full") == 0;
#if !HAVE_DECL_SLURM_LOAD_JOB_STATE
	_query_full = 1;
#endif
	_local = _query_full ? 0 : SHOW_LOCAL;
	return 0;
}

static void _recs_clear(struct recs *R)
{
	for (int i = 0; i < R->n; i++)
		slurm_free_job_info_msg(R->v[i].m);
	free(R->v);
	R->v = NULL;
	R->n = 0;
}

static int _rec_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct rec *)a)->id, y = ((const struct rec *)b)->id;
	return (x > y) - (x < y);
}

static int _u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* 1: id is one of the watched elastic jobs, 2: one of the watched grants,
 * 0: neither. */
static int _watched(uint32_t id)
{
	if (_nwatch_jobs &&
	    bsearch(&id, _watch_jobs, _nwatch_jobs, sizeof(*_watch_jobs), _u32_cmp))
		return 1;
	if (_nwatch_grants &&
	    bsearch(&id, _watch_grants, _nwatch_grants, sizeof(*_watch_grants), _u32_cmp))
		return 2;
	return 0;
}

static struct rec *_recs_find(const struct recs *R, uint32_t id)
{
	struct rec key = {.id = id};
	return R->n ? bsearch(&key, R->v, R->n, sizeof(*R->v), _rec_cmp) : NULL;
}

static void _recs_drop(struct recs *R, uint32_t id)
{
	struct rec *r = _recs_find(R, id);
	if (r) {
		slurm_free_job_info_msg(r->m);
		memmove(r, r + 1, (size_t)(R->v + R->n - (r + 1)) * sizeof(*r));
		R->n--;
	}
}

void ed_slurm_fini(void)
{
	_recs_clear(&_grants_kept);
	_recs_clear(&_jobs_kept);
	free(_young);
	free(_watch_jobs);
	free(_watch_grants);
	free(_state_dir);
	_young = _watch_jobs = _watch_grants = NULL;
	_state_dir = NULL;
	_nyoung = _nwatch_jobs = _nwatch_grants = _watch_valid = 0;
	_next_id = 0;
	if (_ping.started) {
		/* a ping stuck on a slurmctld that does not answer is not
		 * waited for: the process ends */
		pthread_mutex_lock(&_ping.mu);
		_ping.quit = 1;
		int busy = _ping.g.pinging && !_ping.back;
		pthread_cond_signal(&_ping.want_cv);
		pthread_mutex_unlock(&_ping.mu);
		if (!busy) {
			pthread_join(_ping.th, NULL);
			_ping.started = _ping.quit = 0;
			_ping.g = (struct ed_gate){0};
		}
	}
	slurm_fini();
}

const char *ed_slurm_query_mode(void)
{
	return _query_full ? "full" : "targeted";
}

uid_t ed_slurm_user(void)
{
	return _slurm_user;
}

const char *ed_slurm_state_dir(void)
{
	return _state_dir;
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
		       struct elastic_policy_place **out, int *nout)
{
	hostlist_t *hl;
	char *host;
	int k = 0, n = 0;
	struct elastic_policy_place *pl;

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

/* The nodes; used[k]: GPUs allocated on node k by any job (its GresUsed). */
static int _load_nodes(struct ed_snapshot *s, int **used, elastic_error_t *err)
{
	node_info_msg_t *nm = NULL;
	*used = NULL;
	/* GresUsed comes only with SHOW_DETAIL. */
	double t0 = ed_mono_s();
	if (_call_done(ED_CALL_NODES, t0,
		       slurm_load_node((time_t)0, &nm, SHOW_ALL | SHOW_DETAIL)) !=
	    SLURM_SUCCESS)
		return elastic__errorf(err, "slurm_load_node: %s", slurm_strerror(errno));
	s->nodes = calloc(nm->record_count + 1, sizeof(*s->nodes));
	*used = calloc(nm->record_count + 1, sizeof(**used));
	if (!s->nodes || !*used) {
		free(*used);
		*used = NULL;
		slurm_free_node_info_msg(nm);
		return elastic__errorf(err, "out of memory");
	}
	for (uint32_t i = 0; i < nm->record_count; i++) {
		node_info_t *ni = &nm->node_array[i];
		struct ed_node *n;
		uint32_t base = ni->node_state & NODE_STATE_BASE;
		if (!ni->name)
			continue;
		(*used)[s->nnodes] = elastic__gres_gpus(ni->gres_used);
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

enum { KIND_OTHER, KIND_ELASTIC, KIND_GRANT };

static int _kind(const slurm_job_info_t *ji, const char *prefix)
{
	uint64_t release_by;
	if (!elastic__slurm_job_active(ji->job_state))
		return KIND_OTHER;
	if (elastic_tag_is_tag(ji->admin_comment))
		return KIND_ELASTIC;
	if (_grant_of(ji, prefix, &release_by))
		return KIND_GRANT;
	return KIND_OTHER;
}

/* What the between-tick check compares, per watched job: of an elastic job
 * what _fingerprint takes; of a grant its state (the job-state RPC's). The
 * sum does not depend on the order slurmctld answers in. */
static uint64_t _watch_hash_job(const slurm_job_info_t *ji)
{
	job_info_msg_t one = {.record_count = 1, .job_array = (slurm_job_info_t *)ji};
	return _fingerprint(&one);
}

static uint64_t _watch_hash_grant(uint32_t id, uint32_t state)
{
	uint64_t h = _fnv(14695981039346656037ULL, &id, sizeof(id));
	return _fnv(h, &state, sizeof(state));
}

/* The jobs one snapshot reads: the whole list, or targeted loads. */
struct jobset {
	const slurm_job_info_t **v;
	uint32_t n, cap;
	job_info_msg_t **msgs;
	int nmsgs, capmsgs;
	int full; /* v is slurmctld's whole job list */
};

static void _jobset_free(struct jobset *J)
{
	for (int i = 0; i < J->nmsgs; i++)
		slurm_free_job_info_msg(J->msgs[i]);
	free(J->msgs);
	free(J->v);
	memset(J, 0, sizeof(*J));
}

/* Adds m's jobs to J; m stays its owner's (the records kept, struct rec). */
static int _jobset_ref(struct jobset *J, const job_info_msg_t *m)
{
	if (J->n + m->record_count > J->cap) {
		uint32_t cap = J->cap ? 2 * J->cap : 64;
		while (cap < J->n + m->record_count)
			cap *= 2;
		const slurm_job_info_t **nv = realloc(J->v, cap * sizeof(*nv));
		if (!nv)
			return -1;
		J->v = nv;
		J->cap = cap;
	}
	for (uint32_t i = 0; i < m->record_count; i++)
		J->v[J->n++] = &m->job_array[i];
	return 0;
}

/* Adds m's jobs to J, which then owns m (freed with J even on failure). */
static int _jobset_add(struct jobset *J, job_info_msg_t *m)
{
	if (J->nmsgs == J->capmsgs) {
		int cap = J->capmsgs ? 2 * J->capmsgs : 16;
		job_info_msg_t **nm = realloc(J->msgs, cap * sizeof(*nm));
		if (!nm) {
			slurm_free_job_info_msg(m);
			return -1;
		}
		J->msgs = nm;
		J->capmsgs = cap;
	}
	J->msgs[J->nmsgs++] = m;
	return _jobset_ref(J, m);
}

static int _jobset_full(struct jobset *J, elastic_error_t *err)
{
	job_info_msg_t *jm = NULL;
	if (_load_jobs((time_t)0, &jm, SHOW_ALL | SHOW_DETAIL | _local) != SLURM_SUCCESS)
		return elastic__errorf(err, "slurm_load_jobs: %s", slurm_strerror(errno));
	_jobs_seen = jm->last_update;
	_jobs_fp = _fingerprint(jm);
	_full_at = time(NULL);
	_nhinted = 0;
	J->full = 1;
	if (_jobset_add(J, jm) < 0)
		return elastic__errorf(err, "out of memory");
	return 0;
}

#if HAVE_DECL_SLURM_LOAD_JOB_STATE
/* Adds to ids (room for ELASTIC_SLURM_PROBE_IDS more) the active jobs after
 * the last one seen (elastic__slurm_probe), and moves _next_id past the last
 * one found. Returns the count added, or -1 when the RPC failed; *more: the
 * last id found is in the upper half (more may follow). */
static int _probe(uint32_t *ids, int *more)
{
	uint32_t top;
	double t0 = ed_mono_s();
	int n = _call_done(ED_CALL_JOB_STATE, t0,
			   elastic__slurm_probe(_next_id, ids, &top));

	if (n < 0)
		return -1;
	*more = top >= _next_id + ELASTIC_SLURM_PROBE_IDS / 2;
	if (top)
		_next_id = top + 1;
	return n;
}
#endif

#if HAVE_DECL_SLURM_LOAD_JOB_STATE
/* One job-state RPC over the ids a[0..na) and b[0..nb): 0 and *st, or -1
 * (errno: ESLURM_INVALID_JOB_ID when slurmctld knows none of them). */
static int _job_states(const uint32_t *a, int na, const uint32_t *b, int nb,
		       job_state_response_msg_t **st)
{
	slurm_selected_step_t *sel = calloc((size_t)(na + nb) + 1, sizeof(*sel));
	int rc, e;

	*st = NULL;
	if (!sel) {
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < na + nb; i++) {
		sel[i] = (slurm_selected_step_t)SLURM_SELECTED_STEP_INITIALIZER;
		sel[i].step_id.job_id = i < na ? a[i] : b[i - na];
	}
	double t0 = ed_mono_s();
	rc = _call_done(ED_CALL_JOB_STATE, t0, slurm_load_job_state(na + nb, sel, st));
	e = errno;
	free(sel);
	if (rc != SLURM_SUCCESS) {
		*st = NULL;
		errno = e;
		return -1;
	}
	return 0;
}

/* The record to keep of job id from m, a load of it made at now (its state
 * and fingerprint from the job's own entry). */
static struct rec _rec_of(uint32_t id, job_info_msg_t *m, time_t now)
{
	struct rec r = {.id = id, .state = m->job_array[0].job_state, .at = now, .m = m};
	for (uint32_t k = 0; k < m->record_count; k++)
		if (m->job_array[k].job_id == id) {
			r.state = m->job_array[k].job_state;
			r.hash = _watch_hash_job(&m->job_array[k]);
		}
	return r;
}

/* Record r's job is now in state (the job-state RPC's answer). */
static void _rec_set_state(struct rec *r, uint32_t state)
{
	for (uint32_t k = 0; k < r->m->record_count; k++)
		if (r->m->job_array[k].job_id == r->id) {
			r->m->job_array[k].job_state = state;
			r->hash = _watch_hash_job(&r->m->job_array[k]);
		}
	r->state = state;
}

/* v (n records, the fresh ones loaded by this tick) becomes R's list, each
 * id once (an array's tasks may answer twice); what R kept and v does not
 * carry is freed. */
static void _recs_commit(struct recs *R, struct rec *v, int n)
{
	int w = 0;
	qsort(v, n, sizeof(*v), _rec_cmp);
	for (int i = 0; i < n; i++) {
		if (w && v[i].id == v[w - 1].id) {
			if (v[i].fresh)
				slurm_free_job_info_msg(v[i].m);
			continue;
		}
		v[w++] = v[i];
	}
	for (int i = 0; i < w; i++) {
		struct rec *o;
		if (v[i].fresh)
			v[i].fresh = 0;
		else if ((o = _recs_find(R, v[i].id)) != NULL)
			o->m = NULL; /* carried over */
	}
	_recs_clear(R);
	R->v = v;
	R->n = w;
}

/* Keeps m, the one record of job id loaded now, in R (which owns it then;
 * 0), or leaves it to the caller (-1: no memory). */
static int _recs_put(struct recs *R, uint32_t id, job_info_msg_t *m, time_t now)
{
	struct rec *nv;
	int at = R->n;

	if (_recs_find(R, id))
		return -1;
	if (!(nv = realloc(R->v, (R->n + 1) * sizeof(*nv))))
		return -1;
	R->v = nv;
	while (at > 0 && R->v[at - 1].id > id)
		at--;
	memmove(R->v + at + 1, R->v + at, (size_t)(R->n - at) * sizeof(*R->v));
	R->v[at] = _rec_of(id, m, now);
	R->n++;
	return 0;
}

static void _recs_abandon(struct rec *v, int n)
{
	for (int i = 0; v && i < n; i++)
		if (v[i].fresh)
			slurm_free_job_info_msg(v[i].m);
	free(v);
}

/* The watched elastic jobs' and grants' records, brought up to date (see
 * struct rec) and added to J, which does not own them. -1: an RPC failed
 * (the whole list is asked for instead; the records kept stay as they
 * were). */
static int _records_refresh(struct jobset *J, time_t now)
{
	int nj = 0, ng = 0, aged = 0, ret = -1;
	int aged_max = _nwatch_jobs / 8 > 2 ? _nwatch_jobs / 8 : 2;
	job_state_response_msg_t *st = NULL;
	struct rec *vj = NULL, *vg = NULL;

	if (!_nwatch_jobs && !_nwatch_grants) {
		_recs_clear(&_jobs_kept);
		_recs_clear(&_grants_kept);
		return 0;
	}
	if (_job_states(_watch_jobs, _nwatch_jobs, _watch_grants, _nwatch_grants, &st) <
	    0) {
		if (errno == ESLURM_INVALID_JOB_ID) { /* none of them is known any more */
			_recs_clear(&_jobs_kept);
			_recs_clear(&_grants_kept);
			ret = 0;
		}
		goto out;
	}
	vj = calloc(st->jobs_count + 1, sizeof(*vj));
	vg = calloc(st->jobs_count + 1, sizeof(*vg));
	if (!vj || !vg)
		goto out;
	for (uint32_t i = 0; i < st->jobs_count; i++) {
		uint32_t id = st->jobs[i].job_id;
		int which = _watched(id), isjob = which == 1;
		struct rec *v = isjob ? vj : vg, *o;
		int *nv = isjob ? &nj : &ng;
		job_info_msg_t *m = NULL;

		if (!which)
			continue; /* another task of an array asked for */
		o = _recs_find(isjob ? &_jobs_kept : &_grants_kept, id);
		if (o && o->state == st->jobs[i].state &&
		    (!isjob || now - o->at < REC_FRESH_S || aged >= aged_max)) {
			v[(*nv)++] = *o; /* unchanged */
			continue;
		}
		if (o && !elastic__slurm_job_active(st->jobs[i].state)) {
			/* completing, ended or suspended: out of the snapshot
			 * whatever else its record says (_kind), so its new
			 * state is all that is needed; when a job ends with
			 * its grants, reading each again made the tick slow */
			_rec_set_state(o, st->jobs[i].state);
			v[(*nv)++] = *o;
			continue;
		}
		aged += o && o->state == st->jobs[i].state;
		if (_load_job(id, &m, SHOW_ALL | SHOW_DETAIL | SHOW_LOCAL) !=
		    SLURM_SUCCESS) {
			if (errno == ESLURM_INVALID_JOB_ID)
				continue; /* purged since */
			goto out;
		}
		if (!m->record_count) {
			slurm_free_job_info_msg(m);
			continue;
		}
		v[*nv] = _rec_of(id, m, now);
		v[(*nv)++].fresh = 1;
	}
	ret = 0;
out:
	if (ret == 0 && vj && vg) {
		_recs_commit(&_jobs_kept, vj, nj);
		_recs_commit(&_grants_kept, vg, ng);
		for (int i = 0; i < _jobs_kept.n && ret == 0; i++)
			ret = _jobset_ref(J, _jobs_kept.v[i].m);
		for (int i = 0; i < _grants_kept.n && ret == 0; i++)
			ret = _jobset_ref(J, _grants_kept.v[i].m);
	} else {
		_recs_abandon(vj, nj);
		_recs_abandon(vg, ng);
	}
	if (st)
		slurm_free_job_state_response_msg(st);
	return ret;
}
#endif

#if HAVE_DECL_SLURM_LOAD_JOB_STATE
/* 1 if id is among ids[0..n). */
static int _listed(const uint32_t *ids, int n, uint32_t id)
{
	for (int i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}
#endif

/* Targeted: the new jobs (probed by id) and the young jobs, each loaded,
 * and the watched elastic jobs and grants (_records_refresh). Replaces
 * _young. -1 (nothing
 * kept) when a whole list is the better question: the RPC failed, nothing
 * was read yet, the next id is not known, it is time for the periodic
 * whole read, or too many jobs are new. */
static int _jobset_targeted(struct jobset *J, const char *prefix)
{
#if HAVE_DECL_SLURM_LOAD_JOB_STATE
	int cap = _nyoung + _nhinted + TARGETED_MAX_LOADS + ELASTIC_SLURM_PROBE_IDS;
	uint32_t *ids = NULL, *young = NULL;
	int n = 0, nyoung = 0, nnew = 0, more = 1, got;
	time_t now = time(NULL);

	if (!_watch_valid || !_next_id ||
	    now >= _full_at + (_hints_alive ? FULL_EVERY_HINTED_S : FULL_EVERY_S))
		return -1;
	ids = malloc(cap * sizeof(*ids));
	young = malloc(cap * sizeof(*young));
	if (!ids || !young)
		goto fail;
	for (int i = 0; i < _nyoung; i++)
		ids[n++] = _young[i];
	for (int i = 0; i < _nhinted; i++) {
		int k = 0;
		while (k < _nyoung && _young[k] != _hinted[i])
			k++;
		if (k == _nyoung)
			ids[n++] = _hinted[i];
	}
	if (_records_refresh(J, now) < 0)
		goto fail;
	while (more) {
		if ((got = _probe(ids + n, &more)) < 0)
			goto fail;
		/* A job hinted since the last tick is new too: the probe finds
		 * it again. Each is loaded once (twice, it would be listed twice
		 * and the policy would refuse the tick). */
		int kept = 0;
		for (int k = 0; k < got; k++)
			if (!_listed(ids, n + kept, ids[n + k]))
				ids[n + kept++] = ids[n + k];
		n += kept;
		nnew += kept;
		if (nnew > TARGETED_MAX_LOADS)
			goto fail;
	}
	for (int i = 0; i < n; i++) {
		job_info_msg_t *m = NULL;
		int interesting = 0, fresh = 0;
		if (_load_job(ids[i], &m, SHOW_ALL | SHOW_DETAIL | SHOW_LOCAL) !=
		    SLURM_SUCCESS) {
			/* ended and purged since; any other error (slurmctld
			 * going down or starting) says nothing of the job: the
			 * whole list is asked for instead, and a job is never
			 * taken for ended (its grants cancelled) because one
			 * query failed */
			if (errno == ESLURM_INVALID_JOB_ID)
				continue;
			goto fail;
		}
		for (uint32_t r = 0; r < m->record_count; r++) {
			if (_kind(&m->job_array[r], prefix) != KIND_OTHER)
				interesting = 1;
			else if (elastic__slurm_job_active(m->job_array[r].job_state) &&
				 m->job_array[r].submit_time + OTHER_AFTER_S > now)
				fresh = 1;
		}
		if (!interesting) {
			if (fresh && !_hints_alive)
				young[nyoung++] = ids[i];
			slurm_free_job_info_msg(m);
		} else if (m->record_count == 1 && m->job_array[0].job_id == ids[i] &&
			   _recs_put(_kind(&m->job_array[0], prefix) == KIND_GRANT
					     ? &_grants_kept
					     : &_jobs_kept,
				     ids[i], m, now) == 0) {
			/* a new grant or elastic job: kept for the next ticks */
			if (_jobset_ref(J, m) < 0)
				goto fail;
		} else if (_jobset_add(J, m) < 0) {
			goto fail;
		}
	}
	free(ids);
	free(_young);
	_young = young;
	_nyoung = nyoung;
	_nhinted = 0;
	return 0;
fail:
	free(ids);
	free(young);
	_jobset_free(J);
	return -1;
#else
	(void)J;
	(void)prefix;
	return -1;
#endif
}

/* After a whole list in targeted mode: the next id (after the job
 * submitted last: ids wrap at MaxJobId) and the young jobs of no interest. */
static void _probe_from(const struct jobset *J, const int *kind)
{
	uint32_t *v = malloc((J->n + 1) * sizeof(*v));
	const slurm_job_info_t *last = NULL;
	int n = 0;
	time_t now = time(NULL);

	if (!v) {
		_next_id = 0; /* the next tick reads the whole list again */
		return;
	}
	for (uint32_t i = 0; i < J->n; i++) {
		const slurm_job_info_t *ji = J->v[i];
		if (!last || ji->submit_time > last->submit_time ||
		    (ji->submit_time == last->submit_time && ji->job_id > last->job_id))
			last = ji;
		if (!kind[i] && !_hints_alive &&
		    elastic__slurm_job_active(ji->job_state) &&
		    ji->submit_time + OTHER_AFTER_S > now)
			v[n++] = ji->job_id;
	}
	_next_id = last ? last->job_id + 1 : 0;
	free(_young);
	_young = v;
	_nyoung = n;
}

/* The elastic jobs and grants the between-tick check watches (each list
 * sorted, for _records_refresh), and their fingerprint now. */
static void _watch_from(const struct jobset *J, const int *kind)
{
	uint32_t *wj = malloc((J->n + 1) * sizeof(*wj));
	uint32_t *wg = malloc((J->n + 1) * sizeof(*wg));
	int nj = 0, ng = 0, pending = 0;
	uint64_t fp = 0, fpg = 0;

	_watch_valid = 0;
	if (!wj || !wg) {
		free(wj);
		free(wg);
		return;
	}
	for (uint32_t i = 0; i < J->n; i++) {
		if (kind[i] == KIND_ELASTIC) {
			wj[nj++] = J->v[i]->job_id;
			fp += _watch_hash_job(J->v[i]);
		} else if (kind[i] == KIND_GRANT) {
			wg[ng++] = J->v[i]->job_id;
			fpg += _watch_hash_grant(J->v[i]->job_id, J->v[i]->job_state);
			pending += (J->v[i]->job_state & JOB_STATE_BASE) == JOB_PENDING;
		}
	}
	qsort(wj, nj, sizeof(*wj), _u32_cmp);
	qsort(wg, ng, sizeof(*wg), _u32_cmp);
	free(_watch_jobs);
	free(_watch_grants);
	_watch_jobs = wj;
	_watch_grants = wg;
	_nwatch_jobs = nj;
	_nwatch_grants = ng;
	_watch_fp = fp;
	_watch_fp_grants = fpg;
	_watch_grants_pending = pending;
	_watch_valid = 1;
}

/* GPUs of every other running job are busy for the policy. Those of a job
 * completing (e.g. a grant just cancelled) are not: they are about to be
 * free, and a grant submitted onto them starts then. From the whole list:
 * the other jobs' own GPUs. */
static void _busy_from_jobs(struct ed_snapshot *s, const struct jobset *J,
			    const int *taken)
{
	for (uint32_t i = 0; i < J->n; i++) {
		const slurm_job_info_t *ji = J->v[i];
		uint32_t base = ji->job_state & JOB_STATE_BASE;
		struct elastic_policy_place *pl;
		int npl;
		if (taken[i] || (ji->job_state & JOB_COMPLETING) ||
		    !(base == JOB_RUNNING || base == JOB_SUSPENDED))
			continue;
		if (_job_places(s, ji, &pl, &npl) < 0)
			continue;
		for (int k = 0; k < npl; k++)
			s->nodes[pl[k].node].busy += pl[k].gpus;
		free(pl);
	}
}

/* Targeted: what slurmctld counts allocated on each node (GresUsed, which a
 * completing job no longer holds) less what the elastic jobs and their
 * running grants hold there. */
static void _busy_from_nodes(struct ed_snapshot *s, const int *used)
{
	for (int k = 0; k < s->nnodes; k++)
		s->nodes[k].busy = used[k];
	for (int i = 0; i < s->njobs; i++)
		for (int q = 0; q < s->jobs[i].nlead; q++)
			s->nodes[s->jobs[i].lead[q].node].busy -= s->jobs[i].lead[q].gpus;
	for (int g = 0; g < s->ngrants; g++)
		if (s->grants[g].node >= 0 && s->grants[g].state == ED_GRANT_RUNNING)
			s->nodes[s->grants[g].node].busy -= s->grants[g].gpus;
	for (int k = 0; k < s->nnodes; k++)
		if (s->nodes[k].busy < 0)
			s->nodes[k].busy = 0;
}

/* One elastic job of the snapshot from its record; 0 added, -1 skipped. */
static int _add_job(struct ed_snapshot *s, const slurm_job_info_t *ji)
{
	struct elastic_request req;
	elastic_error_t terr;
	struct ed_job *j;
	uint32_t base = ji->job_state & JOB_STATE_BASE;

	if (_not_eligible(ji))
		return -1;
	if (elastic_tag_parse(ji->admin_comment, &req, &terr) < 0) {
		ed_error("job %u: bad elastic tag '%s': %s (ignored)", ji->job_id,
			 ji->admin_comment, terr.text);
		return -1;
	}
	j = &s->jobs[s->njobs];
	memset(j, 0, sizeof(*j));
	j->id = ji->job_id;
	j->uid = ji->user_id;
	j->gid = ji->group_id;
	_copy(j->user, ji->user_name, sizeof(j->user));
	if (!j->user[0]) {
		struct passwd pw, *pr = NULL;
		char pwbuf[1024];
		if (getpwuid_r(j->uid, &pw, pwbuf, sizeof(pwbuf), &pr) == 0 && pr)
			_copy(j->user, pr->pw_name, sizeof(j->user));
		else
			snprintf(j->user, sizeof(j->user), "%u", (unsigned)j->uid);
	}
	_copy(j->account, ji->account, sizeof(j->account));
	_copy(j->partition, ji->partition, sizeof(j->partition));
	j->running = base == JOB_RUNNING;
	j->min = (int)req.min_gpus;
	j->max = (int)req.max_gpus;
	j->grace = (int)req.grace;
	j->weight = (int)req.weight;
	j->sizes_kind = req.sizes.kind;
	j->nsizes = req.sizes.n < ED_SIZES_MAX ? req.sizes.n : ED_SIZES_MAX;
	for (int k = 0; k < j->nsizes; k++)
		j->sizes[k] = (int)req.sizes.v[k];
	j->priority = ji->priority;
	j->submit = ji->submit_time;
	j->start = j->running ? ji->start_time : 0;
	j->time_limit = ji->time_limit;
	if (j->running && _job_places(s, ji, &j->lead, &j->nlead) < 0) {
		ed_error("job %u: cannot read its node list '%s'", ji->job_id, ji->nodes);
		return -1;
	}
	s->njobs++;
	return 0;
}

/* One grant of the snapshot from its record. */
static void _add_grant(struct ed_snapshot *s, const slurm_job_info_t *ji,
		       const char *prefix)
{
	uint64_t release_by;
	uint32_t served = _grant_of(ji, prefix, &release_by);
	uint32_t base = ji->job_state & JOB_STATE_BASE;
	struct ed_grant *g = &s->grants[s->ngrants++];

	memset(g, 0, sizeof(*g));
	g->id = ji->job_id;
	g->job = served;
	g->uid = ji->user_id;
	g->release_by_ms = release_by;
	g->state = base == JOB_RUNNING ? ED_GRANT_RUNNING : ED_GRANT_PENDING;
	g->start = g->state == ED_GRANT_RUNNING ? ji->start_time : 0;
	g->node = -1;
	if (g->state == ED_GRANT_RUNNING) {
		struct elastic_policy_place *pl;
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
}

/* A node that takes no new work (down, drained, not responding) offers
 * only the GPUs its running jobs hold: nothing grows there, and what is
 * held stays consistent for the policy (no over-commit). No node has more
 * busy GPUs than GPUs. */
static void _bound_nodes(struct ed_snapshot *s)
{
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
}

void ed_slurm_want_full(void)
{
	_full_at = 0;
}

void ed_slurm_hints_alive(int alive)
{
	_hints_alive = alive;
}

int ed_slurm_hinted(const uint32_t *ids, int n)
{
	int added = 0;

	/* More than were kept, or than fit here: the rest wait for the
	 * periodic whole list. Anyone who reaches the port can send hints, so
	 * a flood of them costs a bounded number of loads, never the list. */
	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		int k = 0;
		if (_watched(ids[i]))
			continue; /* the change check asks about it */
		while (k < _nhinted && _hinted[k] != ids[i])
			k++;
		if (k < _nhinted)
			continue;
		if (_nhinted == HINTED_MAX)
			break;
		_hinted[_nhinted++] = ids[i];
		added = 1;
	}
	return added;
}

static int _snapshot(const char *prefix, struct ed_snapshot *s, elastic_error_t *err)
{
	struct jobset J = {0};
	int *kind = NULL, *taken = NULL, *used = NULL;

	memset(s, 0, sizeof(*s));
	if (_load_nodes(s, &used, err) < 0)
		return -1;
	if ((_query_full || _jobset_targeted(&J, prefix) < 0) &&
	    _jobset_full(&J, err) < 0)
		goto fail;
	s->jobs = calloc(J.n + 1, sizeof(*s->jobs));
	s->grants = calloc(J.n + 1, sizeof(*s->grants));
	kind = calloc(J.n + 1, sizeof(*kind));
	taken = calloc(J.n + 1, sizeof(*taken));
	if (!s->jobs || !s->grants || !kind || !taken) {
		elastic__errorf(err, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < J.n; i++) {
		kind[i] = _kind(J.v[i], prefix);
		if (kind[i] == KIND_ELASTIC)
			taken[i] = _add_job(s, J.v[i]) == 0;
		else if (kind[i] == KIND_GRANT) {
			_add_grant(s, J.v[i], prefix);
			taken[i] = 1;
		}
	}
	if (_query_full)
		_busy_from_jobs(s, &J, taken);
	else
		_busy_from_nodes(s, used);
	if (!_query_full) {
		if (J.full)
			_probe_from(&J, kind);
		_watch_from(&J, kind);
	}
	_bound_nodes(s);
	free(kind);
	free(taken);
	free(used);
	_jobset_free(&J);
	return 0;
fail:
	free(kind);
	free(taken);
	free(used);
	_jobset_free(&J);
	ed_snapshot_free(s);
	return -1;
}

static int _jobs_changed_full(void)
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
		if (_load_jobs(_jobs_seen, &jm, SHOW_ALL) != SLURM_SUCCESS)
			return 0; /* no change; or an error, which the next tick reports
				   */
		slurm_free_job_info_msg(jm);
		return 1;
	}
	if (_load_jobs(_jobs_seen - 1, &jm, SHOW_ALL) != SLURM_SUCCESS)
		return 0;
	changed = _fingerprint(jm) != _jobs_fp;
	slurm_free_job_info_msg(jm);
	return changed;
}

/* Targeted: each watched elastic job's record (its priority, reason, state,
 * nodes) and, while one is pending, the grants' states in one job-state
 * RPC. Jobs that are neither are not asked about: one that ends frees GPUs
 * for the next tick. */
static int _jobs_changed_watched(int jobs)
{
	uint64_t fp = 0, fpg = 0;

	if (!_watch_valid)
		return 1;
	for (int i = 0; jobs && i < _nwatch_jobs; i++) {
		job_info_msg_t *m = NULL;
		if (_load_job(_watch_jobs[i], &m, SHOW_ALL | SHOW_LOCAL) !=
		    SLURM_SUCCESS) {
			if (errno != ESLURM_INVALID_JOB_ID)
				return 0;			 /* no answer */
			_recs_drop(&_jobs_kept, _watch_jobs[i]); /* gone */
			return 1;
		}
		for (uint32_t r = 0; r < m->record_count; r++)
			if (m->job_array[r].job_id == _watch_jobs[i]) {
				/* changed (an update, priorities recalculated):
				 * the next tick reads it again */
				uint64_t h = _watch_hash_job(&m->job_array[r]);
				struct rec *o = _recs_find(&_jobs_kept, _watch_jobs[i]);
				if (o && o->hash != h)
					_recs_drop(&_jobs_kept, _watch_jobs[i]);
				fp += h;
			}
		slurm_free_job_info_msg(m);
	}
#if HAVE_DECL_SLURM_LOAD_JOB_STATE
	if (_nwatch_grants && _watch_grants_pending) {
		job_state_response_msg_t *st = NULL;
		if (_job_states(_watch_grants, _nwatch_grants, NULL, 0, &st) < 0)
			return errno == ESLURM_INVALID_JOB_ID;
		for (uint32_t i = 0; i < st->jobs_count; i++)
			fpg += _watch_hash_grant(st->jobs[i].job_id, st->jobs[i].state);
		slurm_free_job_state_response_msg(st);
		if (fpg != _watch_fp_grants)
			return 1;
	}
#endif
	return jobs && fp != _watch_fp;
}

int ed_slurm_jobs_changed(int jobs)
{
	elastic_error_t err;
	if (_gate(&err) < 0)
		return 0; /* the tick reports it */
	return _query_full ? _jobs_changed_full() : _jobs_changed_watched(jobs);
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

static int _submit_grant(const struct ed_job *j, const char *node, int gpus,
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
	double t0 = ed_mono_s();
	if (_call_done(ED_CALL_SUBMIT, t0, slurm_submit_batch_job(&d, &resp)) !=
	    SLURM_SUCCESS) {
		int e = errno;
		return elastic__errorf(err,
				       "submit of a %d-GPU grant on %s for job %u: %s",
				       gpus, node, j->id, slurm_strerror(e));
	}
	*grant_id = _submitted_job(resp);
	slurm_free_submit_response_response_msg(resp);
	return 0;
}

static int _mark_release(uint32_t grant, uint32_t job, uint64_t by_ms,
			 elastic_error_t *err)
{
	job_desc_msg_t d;
	char mark[96];
	snprintf(mark, sizeof(mark), GRANT_MARK "%u,release_by=%" PRIu64, job, by_ms);
	slurm_init_job_desc_msg(&d);
	_desc_set_job(&d, grant);
	d.admin_comment = mark;
	double t0 = ed_mono_s();
	if (_call_done(ED_CALL_UPDATE, t0, slurm_update_job(&d)) != SLURM_SUCCESS)
		return elastic__errorf(err, "marking grant %u for release: %s", grant,
				       slurm_strerror(errno));
	return 0;
}

static int _grant_info(uint32_t id, const char *grant_prefix, uint32_t *job, uid_t *uid,
		       elastic_error_t *err)
{
	job_info_msg_t *m = NULL;
	uint64_t release_by;
	int found = 0;

	if (_load_job(id, &m, SHOW_ALL | SHOW_LOCAL) != SLURM_SUCCESS) {
		if (errno == ESLURM_INVALID_JOB_ID)
			return 0;
		return elastic__errorf(err, "job %u: %s", id, slurm_strerror(errno));
	}
	for (uint32_t r = 0; r < m->record_count && !found; r++) {
		const slurm_job_info_t *ji = &m->job_array[r];
		int suspended = (ji->job_state & JOB_STATE_BASE) == JOB_SUSPENDED &&
				!(ji->job_state & JOB_COMPLETING);
		if (ji->job_id != id ||
		    !(elastic__slurm_job_active(ji->job_state) || suspended) ||
		    !(*job = _grant_of(ji, grant_prefix, &release_by)))
			continue;
		*uid = ji->user_id;
		found = 1;
	}
	slurm_free_job_info_msg(m);
	return found;
}

static int _cancel(uint32_t id, elastic_error_t *err)
{
	if (_kill_job(id, SIGKILL, 0) != SLURM_SUCCESS) {
		int e = errno;
		if (e == ESLURM_ALREADY_DONE || e == ESLURM_INVALID_JOB_ID)
			return 0;
		return elastic__errorf(err, "cancel of job %u: %s", id,
				       slurm_strerror(e));
	}
	return 0;
}

static int _end_grant(uint32_t id, elastic_error_t *err)
{
	if (_kill_job(id, SIGURG, KILL_JOB_BATCH) != SLURM_SUCCESS)
		return elastic__errorf(err, "signal to the batch script of grant %u: %s",
				       id, slurm_strerror(errno));
	return 0;
}

/* The calls, each behind the gate: one that fails makes the next ping. */
int ed_slurm_snapshot(const char *prefix, struct ed_snapshot *s, elastic_error_t *err)
{
	if (_gate(err) < 0) {
		memset(s, 0, sizeof(*s));
		return -1;
	}
	int r = _snapshot(prefix, s, err);
	_called(r == 0);
	return r;
}

int ed_slurm_submit_grant(const struct ed_job *j, const char *node, int gpus,
			  const char *prefix, const char *qos, uint32_t *grant_id,
			  elastic_error_t *err)
{
	if (_gate(err) < 0)
		return -1;
	int r = _submit_grant(j, node, gpus, prefix, qos, grant_id, err);
	_called(r == 0);
	return r;
}

int ed_slurm_mark_release(uint32_t grant, uint32_t job, uint64_t by_ms,
			  elastic_error_t *err)
{
	if (_gate(err) < 0)
		return -1;
	_recs_drop(&_grants_kept, grant);
	int r = _mark_release(grant, job, by_ms, err);
	_called(r == 0);
	return r;
}

int ed_slurm_grant_info(uint32_t id, const char *grant_prefix, uint32_t *job, uid_t *uid,
			elastic_error_t *err)
{
	if (_gate(err) < 0)
		return -1;
	int r = _grant_info(id, grant_prefix, job, uid, err);
	_called(r >= 0);
	return r;
}

int ed_slurm_cancel(uint32_t id, elastic_error_t *err)
{
	if (_gate(err) < 0)
		return -1;
	int r = _cancel(id, err);
	_called(r == 0);
	return r;
}

int ed_slurm_end_grant(uint32_t id, elastic_error_t *err)
{
	if (_gate(err) < 0)
		return -1;
	int r = _end_grant(id, err);
	_called(r == 0);
	return r;
}
