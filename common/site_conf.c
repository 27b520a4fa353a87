/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/site_conf.c: elastic.conf, the site configuration: keys, defaults, loader,
 * checks. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "site_conf.h"

#define _fail elastic__fail

#define OFF(f) offsetof(struct elastic_site_conf, f)

const struct elastic_conf_key elastic_site_conf_keys[] = {
	{"ControllerHost", ELASTIC_CONF_STRING, OFF(controller_host), "localhost"},
	{"ControllerPort", ELASTIC_CONF_INT, OFF(controller_port), "6820", 1, 65535},
	{"BackupControllerHost", ELASTIC_CONF_STRING, OFF(backup_controller_host), ""},
	{"TakeoverTimeout", ELASTIC_CONF_INT, OFF(takeover_timeout), "10", 3, 600},
	{"MaxGpusPerJob", ELASTIC_CONF_INT, OFF(max_gpus_per_job), "64", 1,
	 ELASTIC_GPUS_LIMIT},
	{"AllowedPartitions", ELASTIC_CONF_STRING, OFF(allowed_partitions), ""},
	{"AllowedAccounts", ELASTIC_CONF_STRING, OFF(allowed_accounts), ""},
	{"AllowedUsers", ELASTIC_CONF_STRING, OFF(allowed_users), ""},
	{"DefaultGrace", ELASTIC_CONF_INT, OFF(default_grace), "30", 1,
	 ELASTIC_GRACE_LIMIT},
	{"MaxGrace", ELASTIC_CONF_INT, OFF(max_grace), "600", 1, ELASTIC_GRACE_LIMIT},
	{"PolicyMode", ELASTIC_CONF_ENUM, OFF(policy_mode), "priority", 0, 0,
	 "priority|fairshare|fifo|throughput"},
	{"ThroughputMinGain", ELASTIC_CONF_INT, OFF(throughput_min_gain), "30", 0, 100},
	{"FairShareFloor", ELASTIC_CONF_INT, OFF(fair_share_floor), "50", 0, 100},
	{"TickSeconds", ELASTIC_CONF_INT, OFF(tick_seconds), "2", 1, 3600},
	{"GrantQos", ELASTIC_CONF_STRING, OFF(grant_qos), "elastic"},
	{"GrantNamePrefix", ELASTIC_CONF_STRING, OFF(grant_name_prefix), "elastic:"},
	{"Hysteresis", ELASTIC_CONF_INT, OFF(hysteresis), "1", 0, ELASTIC_GPUS_LIMIT},
	{"CoolDown", ELASTIC_CONF_INT, OFF(cool_down), "10", 0, ELASTIC_GRACE_LIMIT},
	{"ChannelIdleTimeout", ELASTIC_CONF_INT, OFF(channel_idle_timeout), "10", 1,
	 3600},
	{"MungeSocket", ELASTIC_CONF_STRING, OFF(munge_socket), ""},
	{"LogFile", ELASTIC_CONF_STRING, OFF(log_file), ""},
	{"Debug", ELASTIC_CONF_BOOL, OFF(debug), "no"},
	{"MetricsAddress", ELASTIC_CONF_STRING, OFF(metrics_address), ""},
	{"StateFile", ELASTIC_CONF_STRING, OFF(state_file), ""},
	{NULL},
};

int elastic_site_conf_path(char *buf, size_t size, elastic_error_t *err)
{
	const char *env = getenv(ELASTIC_CONF_ENV);
	const char *slurm_conf = getenv("SLURM_CONF");
	int n;

	if (env && *env) {
		n = snprintf(buf, size, "%s", env);
	} else if (slurm_conf && *slurm_conf) {
		const char *slash = strrchr(slurm_conf, '/');
		if (!slash)
			n = snprintf(buf, size, "%s", ELASTIC_CONF_NAME);
		else
			n = snprintf(buf, size, "%.*s/%s", (int)(slash - slurm_conf),
				     slurm_conf, ELASTIC_CONF_NAME);
	} else {
		n = snprintf(buf, size, "%s/%s", ELASTIC_SLURM_SYSCONFDIR,
			     ELASTIC_CONF_NAME);
	}
	if (n < 0 || (size_t)n >= size)
		return _fail(err, ENAMETOOLONG, "the path of %s is too long",
			     ELASTIC_CONF_NAME);
	return 0;
}

int elastic_site_conf_defaults(struct elastic_site_conf *conf, elastic_error_t *err)
{
	return elastic_conf_defaults(elastic_site_conf_keys, conf, sizeof(*conf), err);
}

void elastic_site_conf_free(struct elastic_site_conf *conf)
{
	elastic_conf_free(elastic_site_conf_keys, conf);
}

int elastic_site_conf_check(const struct elastic_site_conf *c, const char *origin,
			    elastic_error_t *err)
{
	if (!origin)
		origin = ELASTIC_CONF_NAME;
	if (c->default_grace > c->max_grace)
		return _fail(err, EINVAL, "%s: DefaultGrace=%ld is above MaxGrace=%ld",
			     origin, c->default_grace, c->max_grace);
	if (!c->controller_host || !*c->controller_host)
		return _fail(err, EINVAL, "%s: ControllerHost must not be empty", origin);
	if (!c->grant_name_prefix || !*c->grant_name_prefix)
		return _fail(err, EINVAL, "%s: GrantNamePrefix must not be empty",
			     origin);
	if (!c->grant_qos || !*c->grant_qos)
		return _fail(err, EINVAL, "%s: GrantQos must not be empty", origin);
	if (strpbrk(c->controller_host, " \t,:"))
		return _fail(
			err, EINVAL,
			"%s: ControllerHost=%s is not a host name (no port, no list)",
			origin, c->controller_host);
	if (c->backup_controller_host && strpbrk(c->backup_controller_host, " \t,:"))
		return _fail(
			err, EINVAL,
			"%s: BackupControllerHost=%s is not a host name (no port, no list)",
			origin, c->backup_controller_host);
	if (c->backup_controller_host &&
	    strcmp(c->backup_controller_host, c->controller_host) == 0)
		return _fail(
			err, EINVAL,
			"%s: BackupControllerHost=%s is ControllerHost: name another "
			"host, or leave it empty",
			origin, c->backup_controller_host);
	return 0;
}

int elastic_site_conf_load(struct elastic_site_conf *conf, const char *path,
			   int missing_ok, elastic_error_t *err)
{
	char def[PATH_MAX];
	struct elastic_site_conf work;

	if (!path) {
		if (elastic_site_conf_path(def, sizeof(def), err) < 0)
			return -1;
		path = def;
	}
	if (elastic_site_conf_defaults(&work, err) < 0)
		return -1;
	if (elastic_conf_parse_file(elastic_site_conf_keys, &work, sizeof(work), path,
				    err) < 0) {
		int e = errno;
		if (e == ENOENT && missing_ok) {
			*conf = work;
			return 1;
		}
		elastic_site_conf_free(&work);
		errno = e;
		return -1;
	}
	if (elastic_site_conf_check(&work, path, err) < 0) {
		elastic_site_conf_free(&work);
		errno = EINVAL;
		return -1;
	}
	*conf = work;
	return 0;
}

int elastic_list_allows(const char *list, const char *name)
{
	size_t n;

	if (!list || !*list)
		return 1;
	if (!name || !*name)
		return 0;
	n = strlen(name);
	for (const char *p = list;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		/* Tolerate spaces after commas ("a, b"). */
		while (len && *p == ' ') {
			p++;
			len--;
		}
		while (len && p[len - 1] == ' ')
			len--;
		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}
