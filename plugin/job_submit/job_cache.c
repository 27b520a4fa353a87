/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/job_submit/job_cache.c: what job_modify needs to know of each job
 * (elastic or not, its tag, its GPU layout), kept by a thread of the plugin
 * (job_cache.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "job_cache.h"
#include "slurm_compat.h"
#include "tres.h"

extern void slurm_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern void slurm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define CACHE_FULL_EVERY_S 120
#define CACHE_RELOAD_MAX   64 /* updated elastic jobs waiting for a load */

static pthread_mutex_t *_lock; /* the plugin's: guards the cache and _tick */
static long (*_tick)(void);
static void (*_each_round)(void);
static struct elastic_job_entry *_jobs;
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
	uint32_t x = ((const struct elastic_job_entry *)a)->job_id;
	uint32_t y = ((const struct elastic_job_entry *)b)->job_id;
	return (x > y) - (x < y);
}

const struct elastic_job_entry *elastic__jc_find(uint32_t job_id)
{
	struct elastic_job_entry key = {.job_id = job_id};
	return bsearch(&key, _jobs, _njobs, sizeof(*_jobs), _cmp_entry);
}

/* A cache being built by the thread, outside _lock: the first nsorted
 * entries are sorted by id (a copy of the cache in use), the rest new. */
struct cache {
	struct elastic_job_entry *v;
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
static struct elastic_job_entry *_cache_slot(struct cache *c, uint32_t id)
{
	struct elastic_job_entry key = {.job_id = id}, *e;

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

	struct elastic_job_entry *v =
		_cache_grow(c->v, &c->cap, c->n + msg->record_count, sizeof(*c->v));

	if (!v)
		return -1;
	c->v = v;
	for (uint32_t i = 0; i < msg->record_count; i++) {
		const slurm_job_info_t *j = &msg->job_array[i];
		struct elastic_job_entry *e = _cache_slot(c, j->job_id);
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
	pthread_mutex_lock(_lock);
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
	pthread_mutex_unlock(_lock);
	if (rc < 0)
		_cache_free(c);
	return rc;
}

/* Make c the cache job_modify reads (c is emptied). */
static void _cache_install(struct cache *c)
{
	qsort(c->v, c->n, sizeof(*c->v), _cmp_entry);
	pthread_mutex_lock(_lock);
	free(_jobs);
	free(_reqs);
	_jobs = c->v;
	_njobs = c->n;
	_reqs = c->reqs;
	_nreqs = c->nreqs;
	if (c->max_id > _max_job_id)
		_max_job_id = c->max_id;
	pthread_mutex_unlock(_lock);
	*c = (struct cache){0};
}

/* The new jobs (ids from *next on, found by one job-state RPC) and the
 * updated elastic jobs ids[0..n), loaded one by one into a copy of the
 * cache. -1: read the whole list instead (no job-state RPC in this Slurm,
 * the RPC failed, too many new jobs). */
static int _cache_targeted(uint32_t *next, const uint32_t *ids, int n)
{
#if HAVE_DECL_SLURM_LOAD_JOB_STATE
	uint32_t load[ELASTIC_SLURM_PROBE_IDS + CACHE_RELOAD_MAX], top;
	int nload, rc = 0;
	struct cache c;

	if ((nload = elastic__slurm_probe(*next, load, &top)) < 0)
		return -1;
	if (top >= *next + ELASTIC_SLURM_PROBE_IDS / 2)
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
		if (elastic__slurm_load_job(load[i], &m, SHOW_ALL | SHOW_LOCAL) !=
		    SLURM_SUCCESS)
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
	until.tv_sec += _tick();
	while (!_stop && !_kick)
		if (pthread_cond_timedwait(&_cond, _lock, &until) == ETIMEDOUT)
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
		       pthread_cond_timedwait(&_cond, _lock, &soon) != ETIMEDOUT)
			;
	}
}

static void *_cache_thread(void *arg)
{
	time_t last = 0, full_at = 0;
	uint32_t next = 0, ids[CACHE_RELOAD_MAX];
	int failing = 0, n;

	(void)arg;
	pthread_mutex_lock(_lock);
	while (!_stop) {
		int rc = -1, e = 0;
		time_t now = time(NULL);

		n = _nreload;
		memcpy(ids, _reload, (size_t)n * sizeof(ids[0]));
		_nreload = 0;
		pthread_mutex_unlock(_lock);
		if (_each_round)
			_each_round();
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
		pthread_mutex_lock(_lock);
		_cache_wait();
	}
	pthread_mutex_unlock(_lock);
	return NULL;
}

/* An update of an elastic job passed: the thread loads it again soon (its
 * GPU layout may have changed). Called with _lock held. */
void elastic__jc_reload(uint32_t job_id)
{
	for (int i = 0; i < _nreload; i++)
		if (_reload[i] == job_id)
			return;
	if (_nreload < CACHE_RELOAD_MAX)
		_reload[_nreload++] = job_id;
	_kick = 1;
	pthread_cond_broadcast(&_cond);
}

void elastic__jc_kick(void)
{
	_kick = 1;
	pthread_cond_broadcast(&_cond);
}

const struct elastic_request *elastic__jc_request(const struct elastic_job_entry *e)
{
	return e && e->req >= 0 ? &_reqs[e->req] : NULL;
}

uint32_t elastic__jc_max_id(void)
{
	return _max_job_id;
}

int elastic__jc_start(pthread_mutex_t *lock, long (*tick_seconds)(void),
		      void (*each_round)(void))
{
	int rc;

	_lock = lock;
	_tick = tick_seconds;
	_each_round = each_round;
	_stop = 0;
	if ((rc = pthread_create(&_thread, NULL, _cache_thread, NULL)) != 0) {
		errno = rc;
		return -1;
	}
	_thread_started = 1;
	return 0;
}

void elastic__jc_stop(void)
{
	if (!_lock)
		return;
	pthread_mutex_lock(_lock);
	if (_thread_started) {
		_stop = 1;
		pthread_cond_broadcast(&_cond);
		pthread_mutex_unlock(_lock);
		pthread_join(_thread, NULL);
		pthread_mutex_lock(_lock);
		_thread_started = 0;
	}
	free(_jobs);
	free(_reqs);
	_jobs = NULL;
	_reqs = NULL;
	_njobs = 0;
	_nreqs = 0;
	_nreload = 0;
	pthread_mutex_unlock(_lock);
}
