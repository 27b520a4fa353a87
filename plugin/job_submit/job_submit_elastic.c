/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/job_submit/job_submit_elastic.c: slurmctld plugin job_submit/elastic: checks
 * elastic requests against elastic.conf, asks for MIN GPUs, tags the job. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "request.h"
#include "tres.h"

const char plugin_name[] = "elastic GPU jobs: request checks and job tag";
const char plugin_type[] = "job_submit/elastic";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* From libslurmfull, which slurmctld links and exports to its plugins
 * (public symbols of libslurm too, but not declared in slurm.h). Strings
 * slurmctld frees later (err_msg, job_desc fields) must come from its
 * allocator, slurm_xstrdup. */
extern char *slurm_xstrdup(const char *str);
extern void slurm_xfree(void **ptr);
extern void slurm_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern void slurm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern void slurm_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The SPANK option variables in job_desc->spank_job_env (plugin "elastic"). */
#define OPT_ENV_PREFIX "_SLURM_SPANK_OPTION_elastic_"
static const char *const _opt_env[] = {"elastic_gpus", "elastic_grace", "elastic_sizes",
				       "elastic_policy_weight"};
enum { O_GPUS, O_GRACE, O_SIZES, O_WEIGHT, O_N };

/* ---- configuration ------------------------------------------------------- */

static pthread_mutex_t _lock = PTHREAD_MUTEX_INITIALIZER; /* conf and cache */
static struct elastic_site_conf _conf; /* the last good file, else defaults */
static int _conf_ok;		       /* _conf holds something */
/* Why elastic.conf on disk cannot be used ("": it can). While set, elastic
 * submissions are refused with it; every other job goes through. */
static char _conf_error[sizeof(((elastic_error_t *)0)->text)];
static char _conf_path[PATH_MAX];
static struct stat _conf_st; /* of the loaded file; st_ino 0: none */

/* elastic.conf beside slurm.conf: $ELASTIC_CONF, $SLURM_CONF's directory,
 * else slurmctld's "-f FILE" argument, else Slurm's sysconfdir. */
static void _find_conf_path(void)
{
	elastic_error_t err;
	char cmd[8192];
	FILE *f;
	size_t n = 0;

	if (!getenv(ELASTIC_CONF_ENV) && !getenv("SLURM_CONF") &&
	    (f = fopen("/proc/self/cmdline", "r"))) {
		n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
		cmd[n] = '\0';
		for (size_t i = 0; i < n; i += strlen(cmd + i) + 1) {
			const char *arg = cmd + i, *conf = NULL;
			if (strcmp(arg, "-f") == 0 && i + 3 < n)
				conf = cmd + i + 3;
			else if (strncmp(arg, "-f", 2) == 0 && arg[2])
				conf = arg + 2;
			if (conf && strrchr(conf, '/')) {
				snprintf(_conf_path, sizeof(_conf_path), "%.*s/%s",
					 (int)(strrchr(conf, '/') - conf), conf,
					 ELASTIC_CONF_NAME);
				return;
			}
		}
	}
	if (elastic_site_conf_path(_conf_path, sizeof(_conf_path), &err) < 0)
		snprintf(_conf_path, sizeof(_conf_path), "%s/%s",
			 ELASTIC_SLURM_SYSCONFDIR, ELASTIC_CONF_NAME);
}

/* (Re)load elastic.conf when it changed. Called with _lock held. A bad
 * file never stops slurmctld: it is logged once, elastic submissions are
 * refused naming it, and the other checks (reserved grant names) keep the
 * configuration loaded before, or the built-in defaults. */
static int _conf_refresh(int first)
{
	struct stat st;
	struct elastic_site_conf fresh;
	elastic_error_t err = {""};
	int rc, have = stat(_conf_path, &st) == 0;

	if (!first && _conf_ok &&
	    (have ? (st.st_ino == _conf_st.st_ino && st.st_mtime == _conf_st.st_mtime &&
		     st.st_size == _conf_st.st_size && st.st_dev == _conf_st.st_dev)
		  : _conf_st.st_ino == 0))
		return 0;
	rc = elastic_site_conf_load(&fresh, _conf_path, 1, &err);
	if (rc < 0) {
		slurm_error(
			"elastic: %s; elastic jobs are refused until it is fixed (other jobs are not affected; %s)",
			err.text,
			_conf_ok ? "the rest keeps the configuration loaded before"
				 : "the rest uses the built-in defaults");
		snprintf(_conf_error, sizeof(_conf_error), "%s", err.text);
		if (have)
			_conf_st = st; /* do not repeat the message until it changes */
		if (!_conf_ok && elastic_site_conf_defaults(&_conf, NULL) == 0)
			_conf_ok = 1;
		return -1;
	}
	if (_conf_ok)
		elastic_site_conf_free(&_conf);
	_conf = fresh;
	_conf_ok = 1;
	_conf_error[0] = '\0';
	if (rc == 1) {
		memset(&_conf_st, 0, sizeof(_conf_st));
		slurm_info(
			"elastic: %s not found: built-in defaults (MaxGpusPerJob=%ld, anyone may submit elastic jobs)",
			_conf_path, _conf.max_gpus_per_job);
	} else {
		_conf_st = st;
		slurm_info(
			"elastic: loaded %s (MaxGpusPerJob=%ld AllowedPartitions=%s AllowedAccounts=%s AllowedUsers=%s)",
			_conf_path, _conf.max_gpus_per_job,
			*_conf.allowed_partitions ? _conf.allowed_partitions : "(any)",
			*_conf.allowed_accounts ? _conf.allowed_accounts : "(any)",
			*_conf.allowed_users ? _conf.allowed_users : "(any)");
	}
	return 0;
}

/* ---- job cache ------------------------------------------------------------
 * job_modify() gets the job as an opaque job_record_t (its layout is not
 * public) and runs with slurmctld's job lock held, so it cannot ask
 * slurmctld about the job. A thread keeps what job_modify needs from the
 * public API: which jobs are elastic, their tag and GPU layout. Every RPC it
 * makes is one slurmctld serves to itself, so it asks little:
 * - the whole job list at the start and every CACHE_FULL_EVERY_S (ids that
 *   jumped, MaxJobId wrapping), or when the job-state RPC is missing/fails;
 * - each TickSeconds, and soon after an elastic job was accepted, one
 *   job-state RPC over the ids after the last one seen (Slurm numbers jobs
 *   in order), and one load per new job still pending or running;
 * - soon after an update of an elastic job passed job_modify, a load of that
 *   job (its GPU layout may have changed).
 * A job modified before the thread saw it (within a moment of its
 * submission) is checked on the fields of the update alone. Entries are
 * small; requests are kept for elastic jobs only. */
struct job_entry {
	uint32_t job_id;
	uint32_t num_nodes;
	int req;			  /* index into _reqs, or -1: not elastic */
	long gpus_per_node, gpus_per_job; /* from its TRES request; -1: none */
};

#define CACHE_FULL_EVERY_S 120
#define CACHE_PROBE_IDS	   256
#define CACHE_RELOAD_MAX   64 /* updated elastic jobs waiting for a load */

static struct job_entry *_jobs;
static size_t _njobs;
static struct elastic_request *_reqs;
static size_t _nreqs;
static uint32_t _max_job_id;
static pthread_t _thread;
static int _thread_started, _stop, _kick;
static pthread_cond_t _cond = PTHREAD_COND_INITIALIZER;
static uint32_t _reload[CACHE_RELOAD_MAX]; /* updated elastic jobs to load */
static int _nreload;

static int _cmp_entry(const void *a, const void *b)
{
	uint32_t x = ((const struct job_entry *)a)->job_id;
	uint32_t y = ((const struct job_entry *)b)->job_id;
	return (x > y) - (x < y);
}

static const struct job_entry *_cache_find(uint32_t job_id)
{
	struct job_entry key = {.job_id = job_id};
	return bsearch(&key, _jobs, _njobs, sizeof(*_jobs), _cmp_entry);
}

/* A cache being built by the thread, outside _lock: the first nsorted
 * entries are sorted by id (a copy of the cache in use), the rest new. */
struct cache {
	struct job_entry *v;
	size_t n, cap, nsorted;
	struct elastic_request *reqs;
	size_t nreqs, capreqs;
	uint32_t max_id;
};

static void _cache_free(struct cache *c)
{
	free(c->v);
	free(c->reqs);
	*c = (struct cache){0};
}

/* v with room for need items of size bytes (*cap updated), or NULL (v is
 * left as it was). */
static void *_cache_grow(void *v, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return v;
	while (c < need)
		c *= 2;
	if (!(n = realloc(v, c * size)))
		return NULL;
	*cap = c;
	return n;
}

/* The entry of job id in c, or a new one at its end. */
static struct job_entry *_cache_slot(struct cache *c, uint32_t id)
{
	struct job_entry key = {.job_id = id}, *e;

	if ((e = bsearch(&key, c->v, c->nsorted, sizeof(*c->v), _cmp_entry)))
		return e;
	for (size_t i = c->nsorted; i < c->n; i++)
		if (c->v[i].job_id == id)
			return &c->v[i];
	return &c->v[c->n++];
}

/* Add the records of msg to c; a job already there takes the new record. */
static int _cache_add(struct cache *c, const job_info_msg_t *msg)
{
	struct elastic_request req;

	struct job_entry *v =
		_cache_grow(c->v, &c->cap, c->n + msg->record_count, sizeof(*c->v));

	if (!v)
		return -1;
	c->v = v;
	for (uint32_t i = 0; i < msg->record_count; i++) {
		const slurm_job_info_t *j = &msg->job_array[i];
		struct job_entry *e = _cache_slot(c, j->job_id);
		e->job_id = j->job_id;
		if (j->job_id > c->max_id)
			c->max_id = j->job_id;
		e->req = -1;
		if (elastic_tag_is_tag(j->admin_comment) &&
		    elastic_tag_parse(j->admin_comment, &req, NULL) == 0) {
			struct elastic_request *r = _cache_grow(
				c->reqs, &c->capreqs, c->nreqs + 1, sizeof(*c->reqs));
			if (!r)
				return -1;
			c->reqs = r;
			c->reqs[c->nreqs] = req;
			e->req = (int)c->nreqs++;
		}
		if (elastic_tres_gpus(j->tres_per_node, &e->gpus_per_node) <= 0)
			e->gpus_per_node = -1;
		if (elastic_tres_gpus(j->tres_per_job, &e->gpus_per_job) <= 0)
			e->gpus_per_job = -1;
		e->num_nodes = j->num_nodes;
	}
	return 0;
}

/* A copy of the cache in use, to add to. */
static int _cache_copy(struct cache *c)
{
	int rc = 0;

	*c = (struct cache){0};
	pthread_mutex_lock(&_lock);
	c->v = _cache_grow(NULL, &c->cap, _njobs + 1, sizeof(*c->v));
	c->reqs = _cache_grow(NULL, &c->capreqs, _nreqs + 1, sizeof(*c->reqs));
	if (!c->v || !c->reqs) {
		rc = -1;
	} else {
		if (_njobs)
			memcpy(c->v, _jobs, _njobs * sizeof(*c->v));
		if (_nreqs)
			memcpy(c->reqs, _reqs, _nreqs * sizeof(*c->reqs));
		c->n = c->nsorted = _njobs;
		c->nreqs = _nreqs;
		c->max_id = _max_job_id;
	}
	pthread_mutex_unlock(&_lock);
	if (rc < 0)
		_cache_free(c);
	return rc;
}

/* Make c the cache job_modify reads (c is emptied). */
static void _cache_install(struct cache *c)
{
	qsort(c->v, c->n, sizeof(*c->v), _cmp_entry);
	pthread_mutex_lock(&_lock);
	free(_jobs);
	free(_reqs);
	_jobs = c->v;
	_njobs = c->n;
	_reqs = c->reqs;
	_nreqs = c->nreqs;
	if (c->max_id > _max_job_id)
		_max_job_id = c->max_id;
	pthread_mutex_unlock(&_lock);
	*c = (struct cache){0};
}

static int _cache_active(uint32_t state)
{
	uint32_t base = state & JOB_STATE_BASE;
	return (base == JOB_RUNNING || base == JOB_PENDING) && !(state & JOB_COMPLETING);
}

static int _cache_load_one(uint32_t id, job_info_msg_t **m)
{
	uint16_t flags = SHOW_ALL | SHOW_LOCAL;
#ifdef HAVE_SLURM_LOAD_JOB_STEP_ID
	slurm_step_id_t s = {0};
	s.job_id = id;
	s.step_het_comp = NO_VAL;
	s.step_id = NO_VAL;
	return slurm_load_job(m, s, flags);
#else
	return slurm_load_job(m, id, flags);
#endif
}

/* The new jobs (ids from *next on, found by one job-state RPC) and the
 * updated elastic jobs ids[0..n), loaded one by one into a copy of the
 * cache. -1: read the whole list instead (no job-state RPC in this Slurm,
 * the RPC failed, too many new jobs). */
static int _cache_targeted(uint32_t *next, const uint32_t *ids, int n)
{
#if HAVE_DECL_SLURM_LOAD_JOB_STATE
	slurm_selected_step_t sel[CACHE_PROBE_IDS];
	job_state_response_msg_t *st = NULL;
	uint32_t load[CACHE_PROBE_IDS + CACHE_RELOAD_MAX], top = 0;
	int nload = 0, rc = 0;
	struct cache c;

	for (int k = 0; k < CACHE_PROBE_IDS; k++) {
		sel[k] = (slurm_selected_step_t)SLURM_SELECTED_STEP_INITIALIZER;
		sel[k].step_id.job_id = *next + (uint32_t)k;
	}
	if (slurm_load_job_state(CACHE_PROBE_IDS, sel, &st) != SLURM_SUCCESS)
		return -1;
	for (uint32_t i = 0; i < st->jobs_count; i++) {
		uint32_t id = st->jobs[i].job_id;
		if (id < *next || id >= *next + CACHE_PROBE_IDS)
			continue; /* another task of an array asked for */
		if (id > top)
			top = id;
		if (_cache_active(st->jobs[i].state) && nload < CACHE_PROBE_IDS)
			load[nload++] = id;
	}
	slurm_free_job_state_response_msg(st);
	if (top >= *next + CACHE_PROBE_IDS / 2)
		return -1; /* a burst of submissions: one list is cheaper */
	for (int i = 0; i < n; i++)
		load[nload++] = ids[i];
	if (!nload) {
		if (top)
			*next = top + 1;
		return 0;
	}
	if (_cache_copy(&c) < 0)
		return -1;
	for (int i = 0; i < nload && rc == 0; i++) {
		job_info_msg_t *m = NULL;
		if (_cache_load_one(load[i], &m) != SLURM_SUCCESS)
			continue; /* ended and purged since */
		rc = _cache_add(&c, m);
		slurm_free_job_info_msg(m);
	}
	if (rc < 0) {
		_cache_free(&c);
		return -1;
	}
	_cache_install(&c);
	if (top)
		*next = top + 1;
	return 0;
#else
	(void)next;
	(void)ids;
	(void)n;
	return -1;
#endif
}

/* The whole job list (when it changed since *last). 0, or -1 with errno. */
static int _cache_full(time_t *last, uint32_t *next)
{
	job_info_msg_t *msg = NULL;
	struct cache c = {0};
	int rc;

	if (slurm_load_jobs(*last, &msg, SHOW_ALL | SHOW_LOCAL) != SLURM_SUCCESS)
		return -1;
	*last = msg->last_update;
	rc = _cache_add(&c, msg);
	slurm_free_job_info_msg(msg);
	if (rc < 0) {
		_cache_free(&c);
		errno = ENOMEM;
		return -1;
	}
	*next = c.max_id + 1;
	_cache_install(&c);
	return 0;
}

/* Wait for the next refresh: TickSeconds, or a kick (then 200 ms more, so
 * that the RPC that kicked finishes first). Called and returns with _lock
 * held. */
static void _cache_wait(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += _conf_ok ? _conf.tick_seconds : 2;
	while (!_stop && !_kick)
		if (pthread_cond_timedwait(&_cond, &_lock, &until) == ETIMEDOUT)
			break;
	if (_kick && !_stop) {
		struct timespec soon;
		_kick = 0;
		clock_gettime(CLOCK_REALTIME, &soon);
		soon.tv_nsec += 200 * 1000 * 1000;
		if (soon.tv_nsec >= 1000000000) {
			soon.tv_sec++;
			soon.tv_nsec -= 1000000000;
		}
		while (!_stop &&
		       pthread_cond_timedwait(&_cond, &_lock, &soon) != ETIMEDOUT)
			;
	}
}

static void *_cache_thread(void *arg)
{
	time_t last = 0, full_at = 0;
	uint32_t next = 0, ids[CACHE_RELOAD_MAX];
	int failing = 0, n;

	(void)arg;
	pthread_mutex_lock(&_lock);
	while (!_stop) {
		int rc = -1, e = 0;
		time_t now = time(NULL);

		n = _nreload;
		memcpy(ids, _reload, (size_t)n * sizeof(ids[0]));
		_nreload = 0;
		pthread_mutex_unlock(&_lock);
		if (next && now < full_at + CACHE_FULL_EVERY_S)
			rc = _cache_targeted(&next, ids, n);
		if (rc < 0) {
			rc = _cache_full(&last, &next);
			e = rc < 0 ? errno : 0;
			if (rc == 0 || e == SLURM_NO_CHANGE_IN_DATA)
				full_at = now;
		}
		if (e && e != SLURM_NO_CHANGE_IN_DATA) {
			next = 0; /* the whole list again next time */
			/* Say it once per run of failures, not every second. */
			if (!failing++)
				slurm_error(
					"elastic: job cache refresh (slurm_load_jobs) failed: %s; job updates are checked on their own fields",
					slurm_strerror(e));
		} else if (failing) {
			slurm_info("elastic: job cache refresh works again");
			failing = 0;
		}
		pthread_mutex_lock(&_lock);
		_cache_wait();
	}
	pthread_mutex_unlock(&_lock);
	return NULL;
}

/* ---- helpers -------------------------------------------------------------- */

static int _refuse(char **err_msg, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int _refuse(char **err_msg, int rc, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "elastic: ");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	slurm_info("%s", buf);
	if (err_msg) {
		if (*err_msg)
			slurm_xfree((void **)err_msg);
		*err_msg = slurm_xstrdup(buf);
	}
	return rc;
}

/* Replace a string field slurmctld owns. */
static void _set_field(char **field, const char *value)
{
	if (*field)
		slurm_xfree((void **)field);
	*field = slurm_xstrdup(value);
}

static int _privileged(uint32_t uid)
{
	return uid == 0 || uid == (uint32_t)getuid();
}

static const char *_user_name(uint32_t uid, char *buf, size_t size)
{
	struct passwd pw, *res = NULL;
	char tmp[4096];
	if (getpwuid_r((uid_t)uid, &pw, tmp, sizeof(tmp), &res) == 0 && res) {
		snprintf(buf, size, "%s", res->pw_name);
		return buf;
	}
	return NULL;
}

/* Names reserved for the grant jobs elasticd submits (as root/SlurmUser). */
static int _check_reserved(const job_desc_msg_t *jd, uint32_t uid, char **err_msg)
{
	if (_privileged(uid))
		return SLURM_SUCCESS;
	if (jd->qos && strcmp(jd->qos, _conf.grant_qos) == 0)
		return _refuse(
			err_msg, ESLURM_INVALID_QOS,
			"QOS '%s' is reserved for the grant jobs of the elastic controller; use --elastic-gpus for an elastic job",
			jd->qos);
	if (jd->name && strncmp(jd->name, _conf.grant_name_prefix,
				strlen(_conf.grant_name_prefix)) == 0)
		return _refuse(
			err_msg, ESLURM_ACCESS_DENIED,
			"job names starting with '%s' are reserved for the grant jobs of the elastic controller",
			_conf.grant_name_prefix);
	return SLURM_SUCCESS;
}

/* Every partition of a comma list must be allowed. */
static int _check_partitions(const char *parts, char **err_msg)
{
	char buf[1024];
	char *save = NULL;

	if (!*_conf.allowed_partitions || !parts)
		return SLURM_SUCCESS;
	snprintf(buf, sizeof(buf), "%s", parts);
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
		if (!elastic_list_allows(_conf.allowed_partitions, p))
			return _refuse(
				err_msg, ESLURM_INVALID_PARTITION_NAME,
				"partition '%s' does not take elastic jobs (allowed: %s)",
				p, _conf.allowed_partitions);
	return SLURM_SUCCESS;
}

/* The job's GPU request against its elastic request. nodes: the node count
 * per-node GPUs multiply with. */
static int _check_gpus(const struct elastic_request *req, const char *per_job,
		       const char *per_node, const char *per_task, const char *per_socket,
		       uint32_t nodes, int submit, long *total, char **err_msg)
{
	long pj = 0, pn = 0, x = 0;
	int hj = elastic_tres_gpus(per_job, &pj), hn = elastic_tres_gpus(per_node, &pn);

	*total = -1;
	if (hj < 0 || hn < 0)
		return _refuse(err_msg, ESLURM_INVALID_GRES,
			       "cannot read the GPU count in '%s'",
			       hj < 0 ? per_job : per_node);
	if (elastic_tres_gpus(per_task, &x) != 0 ||
	    elastic_tres_gpus(per_socket, &x) != 0)
		return _refuse(
			err_msg, ESLURM_INVALID_GRES,
			"elastic jobs take GPUs per job (--gpus) or per node (--gres=gpu:N), not per task or per socket");
	if (hj && hn)
		return _refuse(
			err_msg, ESLURM_INVALID_GRES,
			"give the GPUs of an elastic job either per job (--gpus) or per node (--gres), not both");
	if (!hj && !hn)
		return SLURM_SUCCESS;
	*total = hj ? pj : pn * (long)(nodes ? nodes : 1);
	if (!elastic_request_size_ok(req, *total)) {
		char sizes[ELASTIC_TAG_MAX] = "";
		elastic_sizes_format(&req->sizes, ',', sizes, sizeof(sizes));
		return _refuse(
			err_msg, ESLURM_INVALID_GRES,
			"the job asks for %ld GPUs, which --%s=%ld-%ld --%s=%s does not allow%s",
			*total, ELASTIC_OPT_GPUS, req->min_gpus, req->max_gpus,
			ELASTIC_OPT_SIZES, sizes,
			submit ? " (leave the GPU request out: the job then gets MIN GPUs)"
			       : "");
	}
	return SLURM_SUCCESS;
}

static const char *_spank_opt(const job_desc_msg_t *jd, int which)
{
	size_t plen = strlen(OPT_ENV_PREFIX), olen = strlen(_opt_env[which]);

	for (uint32_t i = 0; jd->spank_job_env && i < jd->spank_job_env_size; i++) {
		const char *e = jd->spank_job_env[i];
		if (!e)
			continue;
		if (strncmp(e, "SPANK_", 6) == 0)
			e += 6;
		if (strncmp(e, OPT_ENV_PREFIX, plen) == 0 &&
		    strncmp(e + plen, _opt_env[which], olen) == 0 &&
		    e[plen + olen] == '=')
			return e + plen + olen + 1;
	}
	return NULL;
}

/* ---- plugin entry points -------------------------------------------------- */

extern int init(void);
extern int fini(void);
extern int job_submit(job_desc_msg_t *jd, uint32_t submit_uid, char **err_msg);
extern int job_modify(job_desc_msg_t *jd, void *job_ptr, uint32_t submit_uid,
		      char **err_msg);

int init(void)
{
	int rc;

	_find_conf_path();
	pthread_mutex_lock(&_lock);
	_conf_refresh(1); /* a bad file is logged; it must not stop slurmctld */
	rc = _conf_ok ? 0 : -1;
	_stop = 0;
	pthread_mutex_unlock(&_lock);
	if (rc < 0) {
		slurm_error("elastic: out of memory loading the built-in defaults");
		return SLURM_ERROR;
	}
	if (pthread_create(&_thread, NULL, _cache_thread, NULL) != 0) {
		slurm_error("elastic: cannot start the job cache thread: %s",
			    strerror(errno));
		return SLURM_ERROR;
	}
	_thread_started = 1;
	return SLURM_SUCCESS;
}

int fini(void)
{
	if (_thread_started) {
		pthread_mutex_lock(&_lock);
		_stop = 1;
		pthread_cond_broadcast(&_cond);
		pthread_mutex_unlock(&_lock);
		pthread_join(_thread, NULL);
		_thread_started = 0;
	}
	pthread_mutex_lock(&_lock);
	free(_jobs);
	free(_reqs);
	_jobs = NULL;
	_reqs = NULL;
	_njobs = 0;
	_nreqs = 0;
	_nreload = 0;
	if (_conf_ok)
		elastic_site_conf_free(&_conf);
	_conf_ok = 0;
	_conf_error[0] = '\0';
	pthread_mutex_unlock(&_lock);
	return SLURM_SUCCESS;
}

/* AllowedUsers and AllowedAccounts: may this user, with this account,
 * submit elastic jobs. */
static int _check_who(const job_desc_msg_t *jd, char **err_msg)
{
	char user[256];

	if (*_conf.allowed_users) {
		const char *name = _user_name(jd->user_id, user, sizeof(user));
		if (!elastic_list_allows(_conf.allowed_users, name))
			return _refuse(
				err_msg, ESLURM_ACCESS_DENIED,
				"user %s (%u) may not submit elastic jobs (AllowedUsers=%s)",
				name ? name : "?", jd->user_id, _conf.allowed_users);
	}
	if (*_conf.allowed_accounts) {
		if (!jd->account)
			return _refuse(
				err_msg, ESLURM_INVALID_ACCOUNT,
				"elastic jobs must name their account with --account (allowed: %s)",
				_conf.allowed_accounts);
		if (!elastic_list_allows(_conf.allowed_accounts, jd->account))
			return _refuse(
				err_msg, ESLURM_INVALID_ACCOUNT,
				"account '%s' may not run elastic jobs (allowed: %s)",
				jd->account, _conf.allowed_accounts);
	}
	return SLURM_SUCCESS;
}

static int _submit_locked(job_desc_msg_t *jd, uint32_t submit_uid, char **err_msg)
{
	const char *opt[O_N];
	struct elastic_request req;
	elastic_error_t err = {""};
	char tag[ELASTIC_TAG_MAX], first[256];
	long total;
	int rc, any = 0;

	if ((rc = _check_reserved(jd, submit_uid, err_msg)) != SLURM_SUCCESS)
		return rc;
	for (int i = 0; i < O_N; i++)
		any |= (opt[i] = _spank_opt(jd, i)) != NULL;
	if (!any)
		return SLURM_SUCCESS;
	if (_conf_error[0])
		return _refuse(err_msg, ESLURM_NOT_SUPPORTED,
			       "elastic jobs are refused until elastic.conf is fixed: %s",
			       _conf_error);

	if (elastic_request_from_options(&req, opt[O_GPUS], opt[O_GRACE], opt[O_SIZES],
					 opt[O_WEIGHT], &_conf, &err) < 0)
		return _refuse(err_msg, ESLURM_INVALID_GRES, "%s", err.text);
	if ((rc = _check_who(jd, err_msg)) != SLURM_SUCCESS)
		return rc;
	if (*_conf.allowed_partitions && !jd->partition) {
		/* No -p: the first allowed partition, not Slurm's default. */
		size_t n = strcspn(_conf.allowed_partitions, ",");
		snprintf(first, sizeof(first), "%.*s", (int)n, _conf.allowed_partitions);
		_set_field(&jd->partition, first);
	} else if ((rc = _check_partitions(jd->partition, err_msg)) != SLURM_SUCCESS) {
		return rc;
	}
	if (jd->array_inx)
		return _refuse(
			err_msg, ESLURM_INVALID_ARRAY,
			"job arrays cannot be elastic (submit one elastic job per task)");
	if (jd->admin_comment)
		return _refuse(
			err_msg, ESLURM_ACCESS_DENIED,
			"the AdminComment of an elastic job holds its elastic tag; submit it without --admin-comment");
	rc = _check_gpus(&req, jd->tres_per_job, jd->tres_per_node, jd->tres_per_task,
			 jd->tres_per_socket, jd->min_nodes == NO_VAL ? 1 : jd->min_nodes,
			 1, &total, err_msg);
	if (rc != SLURM_SUCCESS)
		return rc;
	if (total < 0 && jd->min_nodes != NO_VAL && jd->min_nodes > req.min_gpus)
		return _refuse(
			err_msg, ESLURM_INVALID_GRES,
			"--%s=%ld on %u nodes: every node needs a GPU, so MIN must be at least the node count (allowed: MIN >= %u, or fewer nodes)",
			ELASTIC_OPT_GPUS, req.min_gpus, jd->min_nodes, jd->min_nodes);
	if (total < 0) {
		/* No GPU request: the job starts with its minimum. */
		char gpus[ELASTIC_TAG_MAX];
		if (jd->tres_per_job && *jd->tres_per_job)
			snprintf(gpus, sizeof(gpus), "%s,gres/gpu:%ld", jd->tres_per_job,
				 req.min_gpus);
		else
			snprintf(gpus, sizeof(gpus), "gres/gpu:%ld", req.min_gpus);
		_set_field(&jd->tres_per_job, gpus);
	}
	if (elastic_tag_format(&req, tag, sizeof(tag)) < 0)
		return _refuse(err_msg, SLURM_ERROR, "elastic tag too long");
	_set_field(&jd->admin_comment, tag);
	_kick = 1;
	pthread_cond_broadcast(&_cond);
	slurm_info("elastic: job of user %u (%s) accepted as elastic: %s", jd->user_id,
		   jd->name ? jd->name : "", tag);
	return SLURM_SUCCESS;
}

int job_submit(job_desc_msg_t *jd, uint32_t submit_uid, char **err_msg)
{
	int rc;

	pthread_mutex_lock(&_lock);
	_conf_refresh(0);
	rc = _submit_locked(jd, submit_uid, err_msg);
	pthread_mutex_unlock(&_lock);
	return rc;
}

/* The job an update names: job_id, or job_id_str as scontrol sends it
 * ("123"; array tasks "123_4" and hetjob parts "123+1" are never elastic). */
static uint32_t _update_job_id(const job_desc_msg_t *jd)
{
	char *end;
	unsigned long v;

	/* Slurm 26.05 carries the id in step_id, 24.11 in job_id
	 * (config/elastic_slurm_api.m4). */
#ifdef HAVE_JOB_DESC_MSG_T_STEP_ID_JOB_ID
	uint32_t id = jd->step_id.job_id;
#else
	uint32_t id = jd->job_id;
#endif

	if (id != NO_VAL && id != 0)
		return id;
	if (!jd->job_id_str)
		return NO_VAL;
	errno = 0;
	v = strtoul(jd->job_id_str, &end, 10);
	if (errno || end == jd->job_id_str || *end || v == 0 || v >= NO_VAL)
		return NO_VAL;
	return (uint32_t)v;
}

static int _modify_locked(job_desc_msg_t *jd, uint32_t uid, char **err_msg)
{
	uint32_t job_id = _update_job_id(jd);
	const struct job_entry *e = job_id == NO_VAL ? NULL : _cache_find(job_id);
	struct elastic_request req;
	elastic_error_t err = {""};
	int rc, elastic = e && e->req >= 0;
	long total;

	if ((rc = _check_reserved(jd, uid, err_msg)) != SLURM_SUCCESS)
		return rc;
	if (elastic)
		req = _reqs[e->req];
	if (jd->admin_comment) {
		if (elastic_tag_is_tag(jd->admin_comment)) {
			if (elastic_tag_parse(jd->admin_comment, &req, &err) < 0)
				return _refuse(err_msg, ESLURM_ACCESS_DENIED,
					       "AdminComment: %s", err.text);
			if (elastic_request_check(&req, &_conf, &err) < 0)
				return _refuse(err_msg, ESLURM_ACCESS_DENIED,
					       "AdminComment '%s': %s", jd->admin_comment,
					       err.text);
			if (e && e->req < 0)
				return _refuse(
					err_msg, ESLURM_ACCESS_DENIED,
					"job %u was not submitted as an elastic job; an elastic tag cannot be added later (submit with --%s)",
					job_id, ELASTIC_OPT_GPUS);
			elastic = 1;
		} else if (elastic) {
			return _refuse(
				err_msg, ESLURM_ACCESS_DENIED,
				"job %u is elastic: changing its AdminComment would remove its elastic tag",
				job_id);
		}
	}
	if (!elastic) {
		if (!e && job_id != NO_VAL && job_id > _max_job_id)
			slurm_debug(
				"elastic: job %u not in the job cache yet; update checked on its own fields",
				job_id);
		return SLURM_SUCCESS;
	}
	if ((rc = _check_partitions(jd->partition, err_msg)) != SLURM_SUCCESS)
		return rc;
	if (jd->tres_per_task || jd->tres_per_socket || jd->tres_per_job ||
	    jd->tres_per_node || jd->min_nodes != NO_VAL) {
		uint32_t nodes =
			jd->min_nodes != NO_VAL ? jd->min_nodes : (e ? e->num_nodes : 1);
		const char *pj = jd->tres_per_job, *pn = jd->tres_per_node;
		char pjb[64], pnb[64];
		/* Fields the update leaves alone keep the job's values. */
		if (!pj && !pn && e && e->gpus_per_job >= 0) {
			snprintf(pjb, sizeof(pjb), "gres/gpu:%ld", e->gpus_per_job);
			pj = pjb;
		}
		if (!pn && !pj && e && e->gpus_per_node >= 0) {
			snprintf(pnb, sizeof(pnb), "gres/gpu:%ld", e->gpus_per_node);
			pn = pnb;
		}
		rc = _check_gpus(&req, pj, pn, jd->tres_per_task, jd->tres_per_socket,
				 nodes, 0, &total, err_msg);
		if (rc != SLURM_SUCCESS)
			return rc;
		if (total < 0 && (jd->tres_per_job || jd->tres_per_node))
			return _refuse(
				err_msg, ESLURM_INVALID_GRES,
				"job %u is elastic: its GPU request cannot be removed",
				job_id);
	}
	return SLURM_SUCCESS;
}

/* An update of an elastic job passed: the thread loads it again soon (its
 * GPU layout may have changed). Called with _lock held. */
static void _reload_soon(uint32_t job_id)
{
	for (int i = 0; i < _nreload; i++)
		if (_reload[i] == job_id)
			return;
	if (_nreload < CACHE_RELOAD_MAX)
		_reload[_nreload++] = job_id;
	_kick = 1;
	pthread_cond_broadcast(&_cond);
}

int job_modify(job_desc_msg_t *jd, void *job_ptr, uint32_t submit_uid, char **err_msg)
{
	int rc;

	pthread_mutex_lock(&_lock);
	_conf_refresh(0);
	rc = _modify_locked(jd, submit_uid, err_msg);
	if (rc == SLURM_SUCCESS) {
		uint32_t id = _update_job_id(jd);
		const struct job_entry *e = id == NO_VAL ? NULL : _cache_find(id);
		if (e && e->req >= 0)
			_reload_soon(id);
	}
	pthread_mutex_unlock(&_lock);
	return rc;
}
