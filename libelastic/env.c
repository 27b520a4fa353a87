/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/env.c: the ELASTIC_* environment of a task (elastic_env_parse): the job
 * contract's part through common/contract.h, libelastic's own knobs, and what
 * elastic-run tells its ranks (elastic__config_read). The only reader of the
 * environment in libelastic. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "contract.h"
#include "internal.h"

typedef const char *(*getenv_fn_t)(const char *);

_Static_assert(ELASTIC_MAX_SIZES <=
		       sizeof(((struct elastic_env *)0)->sizes) / sizeof(int),
	       "struct elastic_env holds every allowed size of the contract");

static const char *_getenv(const char *name)
{
	return getenv(name);
}

/* Integer in [min, max] from v; 0 or -1 with err naming var. */
static int _env_long(const char *var, const char *v, long min, long max, long *out,
		     elastic_error_t *err)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	while (*end && isspace((unsigned char)*end))
		end++;
	if (end == v || *end || errno == ERANGE || x < min || x > max)
		return _fail(err, EINVAL, "%s='%s': expected an integer in %ld..%ld", var,
			     v, min, max);
	*out = x;
	return 0;
}

/* Seconds in [0, 86400] from var when set; what 0 means goes in the message. */
static int _env_seconds(getenv_fn_t get, const char *var, const char *zero, double *out,
			elastic_error_t *err)
{
	const char *v = get(var);
	char *end;
	double d;

	if (!v || !*v)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end || errno || !isfinite(d) || d < 0 || d > 86400)
		return _fail(err, EINVAL,
			     "%s='%s': expected seconds in 0..86400 (0 = %s)", var, v,
			     zero);
	*out = d;
	return 0;
}

/* A name part of snapshot file names: [A-Za-z0-9_.-], shorter than size. */
static int _env_name(const char *var, const char *v, char *out, size_t size,
		     elastic_error_t *err)
{
	size_t n = strlen(v);
	if (n >= size)
		return _fail(err, EINVAL, "%s is %zu characters long (at most %zu)", var,
			     n, size - 1);
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("_.-", v[i]))
			return _fail(
				err, EINVAL,
				"%s='%s': character '%c' not allowed (letters, digits, '_', '.', '-')",
				var, v, v[i]);
	memcpy(out, v, n + 1);
	return 0;
}

/* An absolute path shorter than size, when var is set. */
static int _env_path(getenv_fn_t get, const char *var, char *out, size_t size,
		     elastic_error_t *err)
{
	const char *v = get(var);

	if (!v || !*v)
		return 0;
	if (v[0] != '/' || strlen(v) >= size)
		return _fail(err, EINVAL,
			     "%s='%s': expected an absolute path shorter than %zu", var,
			     v, size);
	snprintf(out, size, "%s", v);
	return 0;
}

/* The job: id, stamp (start time, so that a reused id never resumes another
 * job's snapshots), controller. */
static int _env_job(getenv_fn_t get, struct elastic_env *e, elastic_error_t *err)
{
	const char *v, *jid = get("SLURM_JOB_ID"), *start = get("SLURM_JOB_START_TIME");
	long x;

	if ((v = get(ELASTIC_ENV_JOB_ID)) && *v &&
	    _env_name(ELASTIC_ENV_JOB_ID, v, e->job_id, sizeof(e->job_id), err))
		return -1;
	if ((v = get("ELASTIC_JOB_STAMP")) && *v &&
	    _env_name("ELASTIC_JOB_STAMP", v, e->job_stamp, sizeof(e->job_stamp), err))
		return -1;
	/* Inside the job itself (plain mpirun in the batch script): its start
	 * time, as elastic-run would set it. */
	if (!e->job_stamp[0] && e->job_id[0] && jid && !strcmp(jid, e->job_id) && start &&
	    *start && strlen(start) < sizeof(e->job_stamp) &&
	    strspn(start, "0123456789") == strlen(start))
		memcpy(e->job_stamp, start, strlen(start) + 1);
	/* HOST:PORT, or a list of them (a primary, then its backups): the
	 * first is the primary's */
	if ((v = get(ELASTIC_ENV_CONTROLLER)) && *v) {
		char first[sizeof(e->controller_host) + 8];
		size_t fl = strcspn(v, ",");
		const char *colon;
		size_t hl;
		if (fl >= sizeof(first))
			return _fail(err, EINVAL, "%s='%s': expected HOST:PORT",
				     ELASTIC_ENV_CONTROLLER, v);
		memcpy(first, v, fl);
		first[fl] = '\0';
		colon = strrchr(first, ':');
		hl = colon ? (size_t)(colon - first) : 0;
		if (!colon || hl == 0 || hl >= sizeof(e->controller_host))
			return _fail(err, EINVAL, "%s='%s': expected HOST:PORT",
				     ELASTIC_ENV_CONTROLLER, v);
		if (_env_long("ELASTIC_CONTROLLER port", colon + 1, 1, 65535, &x, err))
			return -1;
		memcpy(e->controller_host, first, hl);
		e->controller_host[hl] = '\0';
		e->controller_port = (int)x;
	}
	return 0;
}

/* The request (the contract's parser and limits): MIN, MAX and grace are 0
 * when unset; pow2 and lists become the allowed counts within [MIN, MAX]. */
static int _env_request(getenv_fn_t get, struct elastic_env *e, elastic_error_t *err)
{
	struct elastic_request r;
	long list[ELASTIC_MAX_SIZES];
	const char *v;
	int n;

	if (elastic_request_from_env(&r, get, err) < 0)
		return -1;
	e->min_gpus = (v = get(ELASTIC_ENV_MIN_GPUS)) && *v ? (int)r.min_gpus : 0;
	e->max_gpus = (v = get(ELASTIC_ENV_MAX_GPUS)) && *v ? (int)r.max_gpus : 0;
	e->grace_s = (v = get(ELASTIC_ENV_GRACE)) && *v ? (int)r.grace : 0;
	n = elastic_sizes_list(&r.sizes, r.min_gpus, r.max_gpus, list, ELASTIC_MAX_SIZES);
	e->nsizes = n > 0 ? n : 0;
	for (int i = 0; i < e->nsizes; i++)
		e->sizes[i] = (int)list[i];
	return 0;
}

/* Logging, timeouts and binding. */
static int _env_behaviour(getenv_fn_t get, struct elastic_env *e, elastic_error_t *err)
{
	const char *v;
	long x;

	if ((v = get("ELASTIC_DEBUG")) && *v) {
		if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
		    !strcasecmp(v, "on"))
			e->debug = ELASTIC_LOG_DEBUG;
		else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") ||
			 !strcasecmp(v, "off"))
			e->debug = 0;
		else if (_env_long("ELASTIC_DEBUG", v, 0, 3, &x, err))
			return -1;
		else
			e->debug = (int)x;
	}
	if (_env_seconds(get, "ELASTIC_WATCHDOG", "off", &e->watchdog_s, err) ||
	    _env_seconds(get, "ELASTIC_FINALIZE_TIMEOUT", "wait forever",
			 &e->finalize_timeout_s, err) ||
	    _env_seconds(get, "ELASTIC_STEP_TIMEOUT", "off", &e->step_timeout_s, err))
		return -1;
	if ((v = get("ELASTIC_BIND")) && *v) {
		if (!strcmp(v, "gpu") || !strcmp(v, "yes") || !strcmp(v, "1"))
			e->bind = 1;
		else if (strcmp(v, "no") && strcmp(v, "0") && strcmp(v, "none"))
			return _fail(
				err, EINVAL,
				"ELASTIC_BIND='%s': expected gpu (bind near the GPU) or no (leave binding alone)",
				v);
	}
	return 0;
}

/* Where and how often the committed state is copied. */
static int _env_snapshots(getenv_fn_t get, struct elastic_env *e, elastic_error_t *err)
{
	const char *v;
	long x;

	if (_env_path(get, "ELASTIC_SHM_DIR", e->shm_dir, sizeof(e->shm_dir), err) ||
	    _env_path(get, "ELASTIC_CHECKPOINT_DIR", e->checkpoint_dir,
		      sizeof(e->checkpoint_dir), err))
		return -1;
	if ((v = get("ELASTIC_CHECKPOINT_EVERY")) && *v) {
		if (_env_long("ELASTIC_CHECKPOINT_EVERY", v, 1, INT_MAX, &x, err))
			return -1;
		e->checkpoint_every = x;
	}
	if ((v = get("ELASTIC_SNAPSHOT_EVERY")) && *v) {
		if (_env_long("ELASTIC_SNAPSHOT_EVERY", v, 1, INT_MAX, &x, err))
			return -1;
		e->snapshot_every = x;
	}
	if ((v = get("ELASTIC_SNAPSHOT_THREAD")) && *v) {
		if (!strcmp(v, "1") || !strcmp(v, "yes"))
			e->snapshot_thread = 1;
		else if (strcmp(v, "0") && strcmp(v, "no"))
			return _fail(err, EINVAL,
				     "ELASTIC_SNAPSHOT_THREAD='%s': expected yes or no",
				     v);
	}
	if (e->checkpoint_every && !e->checkpoint_dir[0])
		return _fail(
			err, EINVAL,
			"ELASTIC_CHECKPOINT_EVERY is set but ELASTIC_CHECKPOINT_DIR is not");
	if (e->checkpoint_dir[0] && !e->checkpoint_every)
		e->checkpoint_every = 100;
	return 0;
}

int elastic_env_parse(struct elastic_env *env, const char *(*getenv_fn)(const char *),
		      elastic_error_t *err)
{
	struct elastic_env e = {
		.watchdog_s = 60,
		.finalize_timeout_s = 10,
		.snapshot_every = 1,
		.shm_dir = ELASTIC_SNAP_DIR,
	};
	getenv_fn_t get = getenv_fn ? getenv_fn : _getenv;

	if (!env)
		return _fail(err, EINVAL, "elastic_env_parse: env is NULL");
	if (_env_job(get, &e, err) < 0 || _env_request(get, &e, err) < 0 ||
	    _env_behaviour(get, &e, err) < 0 || _env_snapshots(get, &e, err) < 0)
		return -1;
	*env = e;
	return 0;
}

/* A copy of var's value into *out, NULL when unset or empty: 0, or -1. */
static int _env_dup(const char *var, char **out)
{
	const char *v = getenv(var);

	*out = NULL;
	return v && *v && !(*out = strdup(v)) ? -1 : 0;
}

int elastic__config_read(struct elastic__config *cfg, struct elastic_env *env,
			 elastic_error_t *err)
{
	const char *ip = getenv("ELASTIC_RUN_IN_PLACE"),
		   *se = getenv("ELASTIC_SNAPSHOT_EVERY"),
		   *ss = getenv("ELASTIC_STOP_SIGNAL"),
		   *jb = getenv("ELASTIC_RUN_JOIN_BASE");

	memset(cfg, 0, sizeof(*cfg));
	if (_env_dup("ELASTIC_RUN_LEAVE", &cfg->run_leave) < 0 ||
	    _env_dup("ELASTIC_GPU", &cfg->gpu) < 0 ||
	    _env_dup("ELASTIC_RUN_JOIN", &cfg->run_join) < 0 ||
	    _env_dup("ELASTIC_RUN_PROGRESS", &cfg->run_progress) < 0 ||
	    _env_dup("ELASTIC_RUN_ASK", &cfg->run_ask) < 0) {
		elastic__config_free(cfg);
		return _fail(err, ENOMEM, "elastic_init: out of memory");
	}
	cfg->join_base = jb && *jb;
	cfg->stop_signal = !(ss && !strcmp(ss, "none"));
	/* Under elastic-run on a runtime that heals a lost node in place
	 * (ELASTIC_RUN_IN_PLACE=1), a node snapshot only guards against losing
	 * the whole job (or a watchdog's relaunch): every
	 * ELASTIC_SNAPSHOT_EVERY_IN_PLACE steps by default instead of every
	 * step (a planned re-form still writes its last step first). */
	if (ip && !strcmp(ip, "1") && !(se && *se))
		env->snapshot_every = ELASTIC_SNAPSHOT_EVERY_IN_PLACE;
	return 0;
}

void elastic__config_free(struct elastic__config *cfg)
{
	free(cfg->run_leave);
	free(cfg->gpu);
	free(cfg->run_join);
	free(cfg->run_progress);
	free(cfg->run_ask);
	memset(cfg, 0, sizeof(*cfg));
}
