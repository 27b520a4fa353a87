/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/spank/elastic_spank.c: SPANK plugin elastic.so: --elastic-* options, their
 * validation, ELASTIC_* for tasks. */
#include "config.h"

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include <slurm/spank.h>

#include "request.h"

/* plugin_name "elastic" is part of the option variables slurmctld sees:
 * _SLURM_SPANK_OPTION_elastic_elastic_gpus=V (job_submit_elastic reads them). */
SPANK_PLUGIN(elastic, 1);

enum { OPT_GPUS = 1, OPT_GRACE, OPT_SIZES, OPT_WEIGHT, OPT_N };

static int _opt_cb(int val, const char *optarg, int remote);

static struct spank_option _options[] = {
	{ELASTIC_OPT_GPUS, "MIN[-MAX]",
	 "Run as an elastic job on MIN to MAX GPUs (MAX defaults to MIN); the job starts with MIN and grows and shrinks as the elastic controller decides. See elastic-spank(8).",
	 1, OPT_GPUS, _opt_cb},
	{ELASTIC_OPT_GRACE, "SECONDS",
	 "Seconds an elastic job gets to give GPUs back at an iteration boundary (default: DefaultGrace of elastic.conf).",
	 1, OPT_GRACE, _opt_cb},
	{ELASTIC_OPT_SIZES, "any|pow2|LIST",
	 "GPU counts the elastic job can run at: any (default), pow2, or a list such as 1,2,4,8.",
	 1, OPT_SIZES, _opt_cb},
	{ELASTIC_OPT_WEIGHT, "N",
	 "Relative weight of the elastic job in the GPU split, 1-1000 (default 1).", 1,
	 OPT_WEIGHT, _opt_cb},
	SPANK_OPTIONS_TABLE_END,
};

/* The option values as typed (NULL: not given) and the site configuration.
 * One copy per process: sbatch/salloc/srun or one slurmstepd. */
static char *_val[OPT_N];
static struct elastic_site_conf _site;
static int _site_loaded;
/* Why elastic.conf (or the plugstack.conf arguments) cannot be used; "":
 * they can. A bad configuration refuses elastic jobs only: _site then holds
 * the built-in defaults and every other job goes on. */
static char _site_error[sizeof(((elastic_error_t *)0)->text)];

static const char *_ctx_name(spank_context_t ctx)
{
	switch (ctx) {
	case S_CTX_LOCAL:
		return "srun";
	case S_CTX_REMOTE:
		return "slurmstepd";
	case S_CTX_ALLOCATOR:
		return "allocator";
	case S_CTX_SLURMD:
		return "slurmd";
	case S_CTX_JOB_SCRIPT:
		return "prolog/epilog";
	default:
		return "unknown";
	}
}

static int _opt_cb(int val, const char *optarg, int remote)
{
	char *dup;

	if (val <= 0 || val >= OPT_N)
		return -1;
	if (!optarg)
		optarg = "";
	if (!(dup = strdup(optarg))) {
		slurm_error("elastic: out of memory");
		return -1;
	}
	free(_val[val]);
	_val[val] = dup;
	return 0;
}

static void _free_state(void)
{
	for (int i = 0; i < OPT_N; i++) {
		free(_val[i]);
		_val[i] = NULL;
	}
	if (_site_loaded)
		elastic_site_conf_free(&_site);
	_site_loaded = 0;
	_site_error[0] = '\0';
}

/* plugstack.conf arguments: conf=PATH, then any elastic.conf Key=Value,
 * which overrides the file for this plugin. Loads elastic.conf into _site;
 * returns 0, or -1 with err (then nothing changed). */
static int _read_config(int ac, char **av, elastic_error_t *err)
{
	const char *path = NULL;
	struct elastic_site_conf work;
	int rc;

	for (int i = 0; i < ac; i++) {
		if (strncasecmp(av[i], "conf=", 5) == 0) {
			if (!av[i][5])
				return elastic__fail(
					err, EINVAL,
					"plugstack.conf: argument 'conf=' needs a path");
			path = av[i] + 5;
		}
	}
	rc = elastic_site_conf_load(&work, path, path == NULL, err);
	if (rc < 0)
		return -1;
	if (rc == 1)
		slurm_debug(
			"elastic: no elastic.conf found, using the built-in defaults");
	for (int i = 0; i < ac; i++) {
		char key[64], *eq = strchr(av[i], '=');
		size_t n;

		if (strncasecmp(av[i], "conf=", 5) == 0)
			continue;
		if (!eq || eq == av[i] || (n = (size_t)(eq - av[i])) >= sizeof(key)) {
			elastic_site_conf_free(&work);
			return elastic__fail(
				err, EINVAL,
				"plugstack.conf: unknown argument '%s' (known: conf=PATH and elastic.conf keys as Key=Value, e.g. ControllerHost=HOST, MaxGpusPerJob=N)",
				av[i]);
		}
		memcpy(key, av[i], n);
		key[n] = '\0';
		if (elastic_conf_set(elastic_site_conf_keys, &work, key, eq + 1,
				     "plugstack.conf argument", err) < 0) {
			elastic_site_conf_free(&work);
			return -1;
		}
	}
	if (elastic_site_conf_check(&work, "plugstack.conf arguments", err) < 0) {
		elastic_site_conf_free(&work);
		return -1;
	}
	if (_site_loaded)
		elastic_site_conf_free(&_site);
	_site = work;
	_site_loaded = 1;
	_site_error[0] = '\0';
	return 0;
}

/* _read_config, and on an error the built-in defaults with the error kept
 * in _site_error for the elastic jobs to be refused with. Returns 0, or -1
 * if even the defaults could not be set (out of memory). */
static int _load_config(int ac, char **av)
{
	elastic_error_t err = {""};

	if (_read_config(ac, av, &err) == 0)
		return 0;
	snprintf(_site_error, sizeof(_site_error), "%s", err.text);
	if (_site_loaded)
		return 0;
	if (elastic_site_conf_defaults(&_site, NULL) < 0) {
		slurm_error("elastic: out of memory");
		return -1;
	}
	_site_loaded = 1;
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (_load_config(ac, av) < 0)
		return -1;
	if (_site_error[0]) {
		/* slurmd says it once in its log; commands and steps say it
		 * only to an elastic job (slurm_spank_init_post_opt). */
		if (ctx == S_CTX_SLURMD)
			slurm_error(
				"elastic: %s; elastic jobs are refused until it is fixed (other jobs are not affected)",
				_site_error);
		else
			slurm_debug("elastic: %s (in %s)", _site_error, _ctx_name(ctx));
	}
	if (ctx == S_CTX_SLURMD || ctx == S_CTX_JOB_SCRIPT)
		return 0;
	for (struct spank_option *o = _options; o->name; o++) {
		spank_err_t e = spank_option_register(sp, o);
		if (e != ESPANK_SUCCESS) {
			slurm_error("elastic: cannot register --%s in %s: %s", o->name,
				    _ctx_name(ctx), spank_strerror(e));
			return -1;
		}
	}
	return 0;
}

/* The request as given, checked against the site (local) or only for
 * consistency (remote: slurmctld's job_submit plugin is the authority and
 * this node's limits must not fail a job it accepted). */
static int _build_request(struct elastic_request *req, int local, elastic_error_t *err)
{
	struct elastic_site_conf lim = _site;

	if (!local) {
		lim.max_gpus_per_job = ELASTIC_GPUS_LIMIT;
		lim.max_grace = ELASTIC_GRACE_LIMIT;
	}
	return elastic_request_from_options(req, _val[OPT_GPUS], _val[OPT_GRACE],
					    _val[OPT_SIZES], _val[OPT_WEIGHT], &lim, err);
}

/* The first option whose value differs from the one the job passed down
 * (SLURM_SPANK__SLURM_SPANK_OPTION_elastic_<name>), or 0. */
static int _restated_option(void)
{
	for (int i = 1; i < OPT_N; i++) {
		char var[128], *p;
		const char *inherited;
		if (!_val[i])
			continue;
		snprintf(var, sizeof(var), "SLURM_SPANK__SLURM_SPANK_OPTION_%s_%s",
			 plugin_name, _options[i - 1].name);
		for (p = var; *p; p++)
			if (*p == '-')
				*p = '_';
		inherited = getenv(var);
		if (!inherited || strcmp(inherited, _val[i]) != 0)
			return i;
	}
	return 0;
}

static int _any_option(void)
{
	for (int i = 1; i < OPT_N; i++)
		if (_val[i])
			return 1;
	return 0;
}

static int _setenv(spank_t sp, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int _setenv(spank_t sp, const char *name, const char *fmt, ...)
{
	char buf[ELASTIC_TAG_MAX];
	va_list ap;
	spank_err_t e;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if ((e = spank_setenv(sp, name, buf, 1)) != ESPANK_SUCCESS) {
		slurm_error("elastic: cannot set %s for the tasks: %s", name,
			    spank_strerror(e));
		return -1;
	}
	return 0;
}

static int _export_to_tasks(spank_t sp)
{
	struct elastic_request req;
	elastic_error_t err = {""};
	char sizes[ELASTIC_TAG_MAX], inherited[32];
	uint32_t job_id = 0;
	spank_err_t e;

	if (_build_request(&req, 0, &err) < 0) {
		slurm_error("elastic: %s", err.text);
		return -1;
	}
	if ((e = spank_get_item(sp, S_JOB_ID, &job_id)) != ESPANK_SUCCESS) {
		slurm_error("elastic: cannot get the job id: %s", spank_strerror(e));
		return -1;
	}
	/* A step that an elastic job starts in another job (one of its grant
	 * jobs, srun --jobid=GRANT) keeps the ELASTIC_* of the elastic job. */
	if (spank_getenv(sp, ELASTIC_ENV_JOB_ID, inherited, sizeof(inherited)) ==
		    ESPANK_SUCCESS &&
	    strtoul(inherited, NULL, 10) != job_id) {
		if (_site.debug)
			slurm_info(
				"elastic: step of job %u started by elastic job %s: keeping its ELASTIC_* variables",
				job_id, inherited);
		return 0;
	}
	if (elastic_sizes_format(&req.sizes, ',', sizes, sizeof(sizes)) < 0) {
		slurm_error("elastic: --%s list too long", ELASTIC_OPT_SIZES);
		return -1;
	}
	if (_setenv(sp, ELASTIC_ENV_JOB_ID, "%u", job_id) < 0 ||
	    _setenv(sp, ELASTIC_ENV_MIN_GPUS, "%ld", req.min_gpus) < 0 ||
	    _setenv(sp, ELASTIC_ENV_MAX_GPUS, "%ld", req.max_gpus) < 0 ||
	    _setenv(sp, ELASTIC_ENV_GRACE, "%ld", req.grace) < 0 ||
	    _setenv(sp, ELASTIC_ENV_SIZES, "%s", sizes) < 0 ||
	    _setenv(sp, ELASTIC_ENV_WEIGHT, "%ld", req.weight) < 0 ||
	    (_site.backup_controller_host && *_site.backup_controller_host
		     ? _setenv(sp, ELASTIC_ENV_CONTROLLER, "%s:%ld,%s:%ld",
			       _site.controller_host, _site.controller_port,
			       _site.backup_controller_host, _site.controller_port)
		     : _setenv(sp, ELASTIC_ENV_CONTROLLER, "%s:%ld",
			       _site.controller_host, _site.controller_port)) < 0)
		return -1;
	if (_site.debug)
		slurm_info(
			"elastic: job %u: exported min=%ld max=%ld grace=%ld sizes=%s to the tasks",
			job_id, req.min_gpus, req.max_gpus, req.grace, sizes);
	return 0;
}

/* A job that keeps its node snapshots elsewhere (ELASTIC_SHM_DIR in the
 * submitting environment) tells its epilog where (SPANK_ELASTIC_SHM_DIR). */
static void _pass_shm_dir(spank_t sp)
{
	const char *dir = getenv(ELASTIC_ENV_SHM_DIR);
	spank_err_t e;

	if (!dir || dir[0] != '/' || !strcmp(dir, ELASTIC_SNAP_DIR))
		return;
	if ((e = spank_job_control_setenv(sp, ELASTIC_ENV_SHM_DIR, dir, 1)) !=
	    ESPANK_SUCCESS)
		slurm_error("elastic: %s=%s will not be cleaned at the job's end: %s",
			    ELASTIC_ENV_SHM_DIR, dir, spank_strerror(e));
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	struct elastic_request req;
	elastic_error_t err = {""};

	if (!_site_loaded && _load_config(ac, av) < 0)
		return -1;
	if (!_any_option())
		return 0;
	if (_site_error[0] &&
	    (ctx == S_CTX_ALLOCATOR || ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE)) {
		slurm_error(
			"elastic: elastic jobs are refused until elastic.conf is fixed: %s",
			_site_error);
		return -1;
	}
	switch (ctx) {
	case S_CTX_ALLOCATOR:
	case S_CTX_LOCAL:
		/* The submitting command: refuse bad input before any job exists.
		 * The values reach slurmctld as _SLURM_SPANK_OPTION_elastic_* in
		 * the job's SPANK environment. */
		if (_build_request(&req, 1, &err) < 0) {
			slurm_error("elastic: %s", err.text);
			return -1;
		}
		/* srun inside a job (sbatch script, salloc shell) inherits the
		 * job's options through SLURM_SPANK_* variables; a different
		 * value would misstate the request fixed at submission. */
		if (ctx == S_CTX_LOCAL && getenv("SLURM_JOB_ID")) {
			int i = _restated_option();
			if (i) {
				slurm_error(
					"elastic: --%s=%s: srun inside job %s cannot change its elastic request (give the --elastic-* options to sbatch or salloc; steps inherit them)",
					_options[i - 1].name, _val[i],
					getenv("SLURM_JOB_ID"));
				return -1;
			}
		}
		_pass_shm_dir(sp);
		return 0;
	case S_CTX_REMOTE:
		return _export_to_tasks(sp);
	default:
		return 0;
	}
}

/* Remove job's snapshot files in dir; with uid != (uid_t)-1 only the
 * regular files that uid owns (dir is the user's choice). */
static void _clean_snapshots(uint32_t jobid, const char *dir, uid_t uid)
{
	char job[16], pattern[PATH_MAX];
	size_t removed = 0;
	int n;
	glob_t g;

	snprintf(job, sizeof(job), "%u", jobid);
	n = elastic_snap_prefix(pattern, sizeof(pattern) - 1, dir, job, NULL);
	if (n < 0 || (size_t)n >= sizeof(pattern) - 1)
		return;
	strcpy(pattern + n, "*");
	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct stat st;
		if (uid != (uid_t)-1 && (lstat(g.gl_pathv[i], &st) < 0 ||
					 !S_ISREG(st.st_mode) || st.st_uid != uid))
			continue;
		if (unlink(g.gl_pathv[i]) == 0)
			removed++;
		else if (errno != ENOENT)
			slurm_error("elastic: job %u epilog: cannot remove %s: %s", jobid,
				    g.gl_pathv[i], strerror(errno));
	}
	if (removed)
		slurm_info("elastic: job %u epilog: removed %zu snapshot file%s in %s",
			   jobid, removed, removed == 1 ? "" : "s", dir);
	globfree(&g);
}

/*
 * Job epilog (each node of the job, as root): remove the node-local step
 * snapshots libelastic keeps for a re-form (named by common/contract.h), in
 * /dev/shm and in the job's ELASTIC_SHM_DIR (there only the job user's files).
 * libelastic removes them itself only when the training completes; a job
 * that ends otherwise (time limit, cancel, failure) would leave them in
 * memory. Grant jobs have their own ids: their end leaves the elastic job's
 * snapshots alone.
 */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	uint32_t jobid = 0;
	uid_t uid = (uid_t)-1;
	const char *dir = getenv("SPANK_" ELASTIC_ENV_SHM_DIR);

	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS || !jobid)
		return 0;
	_clean_snapshots(jobid, ELASTIC_SNAP_DIR, (uid_t)-1);
	if (dir && dir[0] == '/' && strcmp(dir, ELASTIC_SNAP_DIR) &&
	    spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS)
		_clean_snapshots(jobid, dir, uid);
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	_free_state();
	return 0;
}
