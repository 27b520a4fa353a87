/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/job_submit/job_submit_elastic.c: slurmctld plugin job_submit/elastic: checks
 * elastic requests against elastic.conf, asks for MIN GPUs, tags the job. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "job_cache.h"
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

/* ---- hints to elasticd ----------------------------------------------------
 * One UDP datagram to ControllerHost:ControllerPort, and to
 * BackupControllerHost's when one is set (plugin/elasticd/hint.h; whichever
 * elasticd acts reads it): "elastic-hint job N" when an update of elastic
 * job N passed job_modify, "elastic-hint alive" at each refresh of the job
 * cache. With them elasticd asks slurmctld about its elastic jobs when they
 * change instead of polling them. A send never blocks and its failure is
 * ignored: hints only make elasticd look sooner. The addresses are resolved
 * by the cache thread, never inside an RPC. */
static struct {
	int fd, family;
	struct sockaddr_storage sa;
	socklen_t salen; /* 0: no address (yet) */
	char host[256];	 /* the address resolved is for these */
	long port;
} _hint[2] = {{.fd = -1}, {.fd = -1}};

static void _hint_send(const char *text)
{
	for (int i = 0; i < 2; i++)
		if (_hint[i].fd >= 0 && _hint[i].salen)
			(void)sendto(_hint[i].fd, text, strlen(text),
				     MSG_DONTWAIT | MSG_NOSIGNAL,
				     (const struct sockaddr *)&_hint[i].sa,
				     _hint[i].salen);
}

/* Resolve hint address i for host:port if elastic.conf named another one;
 * called and returns with _lock held, which it drops while it resolves. */
static void _hint_resolve(int i, const char *host, long port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *res = NULL;
	char service[16];

	if (port == _hint[i].port && strcmp(host, _hint[i].host) == 0)
		return;
	snprintf(_hint[i].host, sizeof(_hint[i].host), "%.255s", host);
	_hint[i].port = port;
	_hint[i].salen = 0;
	pthread_mutex_unlock(&_lock);
	snprintf(service, sizeof(service), "%ld", port);
	if (*host && port > 0 && getaddrinfo(host, service, &hints, &res) == 0) {
		pthread_mutex_lock(&_lock);
		if (_hint[i].fd >= 0 && _hint[i].family != res->ai_family) {
			close(_hint[i].fd);
			_hint[i].fd = -1;
		}
		if (_hint[i].fd < 0)
			_hint[i].fd =
				socket(res->ai_family,
				       SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		_hint[i].family = res->ai_family;
		if (res->ai_addrlen <= sizeof(_hint[i].sa)) {
			memcpy(&_hint[i].sa, res->ai_addr, res->ai_addrlen);
			_hint[i].salen = res->ai_addrlen;
		}
		pthread_mutex_unlock(&_lock);
		freeaddrinfo(res);
	}
	pthread_mutex_lock(&_lock);
}

/* The cache thread's round: resolve elasticd's addresses when elastic.conf
 * named others, then say alive. */
static void _hint_round(void)
{
	char host[2][256];
	long port;

	pthread_mutex_lock(&_lock);
	snprintf(host[0], sizeof(host[0]), "%s",
		 _conf_ok && _conf.controller_host ? _conf.controller_host : "");
	snprintf(host[1], sizeof(host[1]), "%s",
		 _conf_ok && _conf.backup_controller_host ? _conf.backup_controller_host
							  : "");
	port = _conf_ok ? _conf.controller_port : 0;
	for (int i = 0; i < 2; i++)
		_hint_resolve(i, host[i], port);
	_hint_send("elastic-hint alive");
	pthread_mutex_unlock(&_lock);
}

/* The cache thread's period, read with _lock held. */
static long _tick_seconds(void)
{
	return _conf_ok ? _conf.tick_seconds : 2;
}

int init(void)
{
	int rc;

	_find_conf_path();
	pthread_mutex_lock(&_lock);
	_conf_refresh(1); /* a bad file is logged; it must not stop slurmctld */
	rc = _conf_ok ? 0 : -1;
	pthread_mutex_unlock(&_lock);
	if (rc < 0) {
		slurm_error("elastic: out of memory loading the built-in defaults");
		return SLURM_ERROR;
	}
	if (elastic__jc_start(&_lock, _tick_seconds, _hint_round) < 0) {
		slurm_error("elastic: cannot start the job cache thread: %s",
			    strerror(errno));
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

int fini(void)
{
	elastic__jc_stop();
	pthread_mutex_lock(&_lock);
	for (int i = 0; i < 2; i++) {
		if (_hint[i].fd >= 0)
			close(_hint[i].fd);
		_hint[i].fd = -1;
		_hint[i].salen = 0;
		_hint[i].host[0] = '\0';
		_hint[i].port = 0;
	}
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
	elastic__jc_kick();
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

/* An update that leaves job job_id elastic, or makes it so, passed:
 * elasticd hears of it at once (a hint), the job cache reads the job again
 * soon (its GPU layout may have changed). Called with _lock held. */
static void _elastic_updated(uint32_t job_id)
{
	char text[48];

	snprintf(text, sizeof(text), "elastic-hint job %u", job_id);
	_hint_send(text);
	elastic__jc_reload(job_id);
}

static int _modify_locked(job_desc_msg_t *jd, uint32_t uid, char **err_msg)
{
	uint32_t job_id = _update_job_id(jd);
	const struct elastic_job_entry *e =
		job_id == NO_VAL ? NULL : elastic__jc_find(job_id);
	struct elastic_request req;
	elastic_error_t err = {""};
	int rc, elastic = e && e->req >= 0;
	long total;

	if ((rc = _check_reserved(jd, uid, err_msg)) != SLURM_SUCCESS)
		return rc;
	if (elastic)
		req = *elastic__jc_request(e);
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
		if (!e && job_id != NO_VAL && job_id > elastic__jc_max_id())
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
	/* also a tag added to a job the cache does not hold yet: elasticd,
	 * which reads a new plain job once while hints arrive, reads it again */
	if (job_id != NO_VAL)
		_elastic_updated(job_id);
	return SLURM_SUCCESS;
}

int job_modify(job_desc_msg_t *jd, void *job_ptr, uint32_t submit_uid, char **err_msg)
{
	int rc;

	pthread_mutex_lock(&_lock);
	_conf_refresh(0);
	rc = _modify_locked(jd, submit_uid, err_msg);
	pthread_mutex_unlock(&_lock);
	return rc;
}
