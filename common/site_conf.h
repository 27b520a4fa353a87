/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/site_conf.h: elastic.conf, the site configuration (keys, defaults, loader). */
#ifndef ELASTIC_COMMON_SITE_CONF_H
#define ELASTIC_COMMON_SITE_CONF_H

#include <stddef.h>

#include "conf.h"
#include "contract.h" /* limits */

/* ---- elastic.conf -------------------------------------------------------
 *
 * Where it is (first match wins):
 *   1. a path given explicitly (plugstack.conf argument conf=PATH, elasticd -f);
 *   2. the environment variable ELASTIC_CONF (for tools and tests);
 *   3. the directory of slurm.conf + "/elastic.conf": the directory of
 *      $SLURM_CONF, else Slurm's sysconfdir (ELASTIC_SLURM_SYSCONFDIR).
 * Every key, its default and meaning: elastic.conf(5). */
#define ELASTIC_CONF_NAME "elastic.conf"
#define ELASTIC_CONF_ENV  "ELASTIC_CONF"
#ifndef ELASTIC_SLURM_SYSCONFDIR
#define ELASTIC_SLURM_SYSCONFDIR "/etc/slurm"
#endif

enum elastic_policy_mode {
	ELASTIC_POLICY_PRIORITY = 0, /* weights are Slurm job priorities */
	ELASTIC_POLICY_FAIRSHARE,    /* equal weights (times the job's policy weight) */
	ELASTIC_POLICY_FIFO,	     /* oldest job first */
	ELASTIC_POLICY_THROUGHPUT,   /* where GPUs add the most measured throughput */
};

/* The settings of elastic.conf. Strings are malloc'd and owned by the struct;
 * list keys (Allowed*) are comma-separated names, "" meaning "anyone". */
struct elastic_site_conf {
	char *controller_host; /* ControllerHost: where elasticd listens/tasks connect */
	long controller_port;  /* ControllerPort (6820) */
	char *backup_controller_host; /* BackupControllerHost ("": none): where a
					 standby elasticd listens, taking over
					 when the active one stops */
	long takeover_timeout;	      /* TakeoverTimeout (10 s): a lease not
					 renewed for this long is taken over */
	long max_gpus_per_job;	      /* MaxGpusPerJob (64): largest MAX of one job */
	char *allowed_partitions;     /* AllowedPartitions ("": every partition) */
	char *allowed_accounts;	      /* AllowedAccounts ("": every account) */
	char *allowed_users;	      /* AllowedUsers ("": every user) */
	long default_grace;	      /* DefaultGrace (30 s) */
	long max_grace;		      /* MaxGrace (600 s) */
	int policy_mode;	      /* PolicyMode: enum elastic_policy_mode */
	long throughput_min_gain;     /* ThroughputMinGain (30 %): smallest gain of a
				     GPU, in % of one GPU's rate */
	long fair_share_floor;	      /* FairShareFloor (50 %): share of its fair
				     share a job keeps (throughput) */
	long tick_seconds;	      /* TickSeconds (2) */
	char *grant_qos;	      /* GrantQos ("elastic") */
	char *grant_name_prefix;      /* GrantNamePrefix ("elastic:") */
	long hysteresis; /* Hysteresis (1 GPU): smallest change worth a resize */
	long cool_down;	 /* CoolDown (10 s) between resizes of one job */
	long channel_idle_timeout; /* ChannelIdleTimeout (10 s): a channel
				      connection bound to no job may be quiet */
	char *munge_socket;	   /* MungeSocket ("": libmunge's default) */
	char *log_file;		   /* LogFile ("": stderr/syslog of the daemon) */
	int debug;		   /* Debug (no) */
	char *metrics_address;	   /* MetricsAddress ("": no metrics endpoint):
				      HOST:PORT elasticd serves OpenMetrics on */
	char *state_file;	   /* StateFile ("": elasticd.state in slurmctld's
				      StateSaveLocation; "none": not kept) */
};

/* The key table of elastic.conf (ends with a NULL name). */
extern const struct elastic_conf_key elastic_site_conf_keys[];

/* The path elastic.conf is read from when none is given (rules 2 and 3
 * above), written into buf. Returns 0, or -1 (ENAMETOOLONG) with err. */
int elastic_site_conf_path(char *buf, size_t size, elastic_error_t *err);

/* Fill conf with the defaults of every key. Returns 0 or -1 (ENOMEM). */
int elastic_site_conf_defaults(struct elastic_site_conf *conf, elastic_error_t *err);

/* Load elastic.conf from path (NULL: elastic_site_conf_path()) into conf,
 * which the call initialises (do not call _defaults first). A missing file
 * is an error unless missing_ok, in which case conf holds the defaults and
 * 1 is returned. Unknown keys, bad values and inconsistent keys (e.g.
 * DefaultGrace > MaxGrace) fail with -1 and err naming file:line or the
 * keys; conf then holds nothing to free. Returns 0 when the file was read. */
int elastic_site_conf_load(struct elastic_site_conf *conf, const char *path,
			   int missing_ok, elastic_error_t *err);

/* Checks between keys that one key alone cannot make; origin names the file. */
int elastic_site_conf_check(const struct elastic_site_conf *conf, const char *origin,
			    elastic_error_t *err);

/* Free the strings of conf (not conf). Accepts NULL. */
void elastic_site_conf_free(struct elastic_site_conf *conf);

/* 1 if name is in the comma-separated list (exact, case-sensitive like
 * Slurm's names), or if the list is NULL or empty ("anyone"); else 0. */
int elastic_list_allows(const char *list, const char *name);

#endif
