/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/elastic_conf.h: elastic.conf keys and loader, the elastic request and its job
 * tag. */
#ifndef ELASTIC_COMMON_ELASTIC_CONF_H
#define ELASTIC_COMMON_ELASTIC_CONF_H

#include <stddef.h>

#include "conf.h"

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

/* Largest GPU count any key or option may name (a sanity bound, not a site limit). */
#define ELASTIC_GPUS_LIMIT  4096
#define ELASTIC_GRACE_LIMIT 86400
#define ELASTIC_WEIGHT_MAX  1000

enum elastic_policy_mode {
	ELASTIC_POLICY_PRIORITY = 0, /* weights are Slurm job priorities */
	ELASTIC_POLICY_FAIRSHARE,    /* equal weights (times the job's policy weight) */
	ELASTIC_POLICY_FIFO,	     /* oldest job first */
};

/* The settings of elastic.conf. Strings are malloc'd and owned by the struct;
 * list keys (Allowed*) are comma-separated names, "" meaning "anyone". */
struct elastic_site_conf {
	char *controller_host; /* ControllerHost: where elasticd listens/tasks connect */
	long controller_port;  /* ControllerPort (6820) */
	long max_gpus_per_job; /* MaxGpusPerJob (64): largest MAX of one job */
	char *allowed_partitions; /* AllowedPartitions ("": every partition) */
	char *allowed_accounts;	  /* AllowedAccounts ("": every account) */
	char *allowed_users;	  /* AllowedUsers ("": every user) */
	long default_grace;	  /* DefaultGrace (30 s) */
	long max_grace;		  /* MaxGrace (600 s) */
	int policy_mode;	  /* PolicyMode: enum elastic_policy_mode */
	long tick_seconds;	  /* TickSeconds (2) */
	char *grant_qos;	  /* GrantQos ("elastic") */
	char *grant_name_prefix;  /* GrantNamePrefix ("elastic:") */
	long hysteresis;	  /* Hysteresis (1 GPU): smallest change worth a resize */
	long cool_down;		  /* CoolDown (10 s) between resizes of one job */
	long channel_idle_timeout; /* ChannelIdleTimeout (10 s): a channel
				      connection bound to no job may be quiet */
	char *munge_socket;	   /* MungeSocket ("": libmunge's default) */
	char *log_file;		   /* LogFile ("": stderr/syslog of the daemon) */
	int debug;		   /* Debug (no) */
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

/* ---- the elastic request ------------------------------------------------
 *
 * What the user asked with --elastic-gpus=MIN[-MAX] (MAX defaults to MIN),
 * --elastic-grace=SECONDS, --elastic-sizes=any|pow2|LIST and
 * --elastic-policy-weight=N. */
#define ELASTIC_MAX_SIZES 64

enum elastic_sizes_kind {
	ELASTIC_SIZES_ANY = 0, /* every count in [MIN, MAX] */
	ELASTIC_SIZES_POW2,    /* powers of two in [MIN, MAX] */
	ELASTIC_SIZES_LIST,    /* the counts in sizes[] */
};

struct elastic_request {
	long min_gpus, max_gpus; /* 1 <= min <= max <= MaxGpusPerJob */
	long grace;		 /* seconds, 1 <= grace <= MaxGrace */
	long weight;		 /* policy weight, 1..ELASTIC_WEIGHT_MAX (default 1) */
	enum elastic_sizes_kind sizes_kind;
	int nsizes; /* ELASTIC_SIZES_LIST: ascending, unique */
	long sizes[ELASTIC_MAX_SIZES];
};

/* The option names, as the user types them. */
#define ELASTIC_OPT_GPUS   "elastic-gpus"
#define ELASTIC_OPT_GRACE  "elastic-grace"
#define ELASTIC_OPT_SIZES  "elastic-sizes"
#define ELASTIC_OPT_WEIGHT "elastic-policy-weight"

/* Build a request from the option strings as typed (NULL: not given; gpus
 * is required when any other is given). site supplies the limits and
 * defaults (NULL: built-in defaults). Any error: -1, errno EINVAL, and err
 * holds one line naming the option, the value and what is allowed, e.g.
 * "--elastic-gpus=0: MIN must be at least 1 (allowed: MIN[-MAX] with
 * 1 <= MIN <= MAX <= 8)". req is unchanged on error. */
int elastic_request_from_options(struct elastic_request *req, const char *gpus,
				 const char *grace, const char *sizes, const char *weight,
				 const struct elastic_site_conf *site,
				 elastic_error_t *err);

/* Check a request against the site limits (site NULL: built-in defaults)
 * and its own consistency; err as above (naming the option). */
int elastic_request_check(const struct elastic_request *req,
			  const struct elastic_site_conf *site, elastic_error_t *err);

/* 1 if the job may run at n GPUs (n in [MIN, MAX] and an allowed size). */
int elastic_request_size_ok(const struct elastic_request *req, long n);

/* The allowed sizes as text: "any", "pow2", or the list joined by sep
 * ("1,2,4" for ELASTIC_SIZES, "1/2/4" inside the tag). Returns the length
 * written, or -1 (ENOSPC) when buf is too small. */
int elastic_request_sizes_str(const struct elastic_request *req, char sep, char *buf,
			      size_t size);

/* ---- the job tag ----------------------------------------------------------
 *
 * job_submit_elastic writes it into the job's AdminComment, which only
 * administrators can change and slurm_load_jobs() returns (job_info_t
 * .admin_comment), so elasticd finds elastic jobs from slurmctld's state alone.
 * The whole AdminComment is the tag; the format, version 1, exactly:
 *
 *   elastic:min=<MIN>,max=<MAX>,grace=<SECONDS>,sizes=<SIZES>,weight=<N>
 *
 * with the keys in this order, decimal numbers without sign or leading zeros,
 * SIZES = any | pow2 | N[/N...] (ascending), e.g.
 *   elastic:min=1,max=8,grace=30,sizes=any,weight=1
 *   elastic:min=2,max=8,grace=60,sizes=2/4/8,weight=3
 * The parser also accepts the keys in any order with weight left out
 * (weight 1), and rejects unknown or repeated keys and every value that
 * elastic_request_check() would refuse without site limits. */
#define ELASTIC_TAG_PREFIX "elastic:"
#define ELASTIC_TAG_MAX	   512

/* 1 if text starts with ELASTIC_TAG_PREFIX (a tag, valid or not), else 0. */
int elastic_tag_is_tag(const char *text);

/* Write the tag of req into buf. Returns its length or -1 (ENOSPC). */
int elastic_tag_format(const struct elastic_request *req, char *buf, size_t size);

/* Parse a tag. Returns 0, or -1 (EINVAL) with err naming the bad part;
 * req is unchanged on error. */
int elastic_tag_parse(const char *tag, struct elastic_request *req, elastic_error_t *err);

/* ---- GPUs in Slurm TRES strings -------------------------------------------
 * The GPU count in a TRES list as job_desc/job_info carry them:
 * tres_per_job/tres_per_node ("gres/gpu:4", "gres/gpu:a100:2", "gres/gpu"
 * = 1) and allocation strings ("cpu=2,mem=1G,gres/gpu=4,gres/gpu:a100=4").
 * Entries are separated by ',' or ';'. Untyped gpu entries are summed; typed
 * ones only count when no untyped entry is present (Slurm lists both the
 * total and the per-type counts). Returns 1 with *count, 0 when the string
 * has no GPU entry (*count 0), -1 (EINVAL) when a GPU count is unreadable. */
int elastic_tres_gpus(const char *tres, long *count);

/* ---- what the tasks see ---------------------------------------------------
 * The SPANK plugin exports these to every task of an elastic job;
 * libelastic reads them (elastic-spank(8) documents them). */
#define ELASTIC_ENV_JOB_ID     "ELASTIC_JOB_ID"	    /* Slurm job id */
#define ELASTIC_ENV_MIN_GPUS   "ELASTIC_MIN_GPUS"   /* MIN */
#define ELASTIC_ENV_MAX_GPUS   "ELASTIC_MAX_GPUS"   /* MAX */
#define ELASTIC_ENV_GRACE      "ELASTIC_GRACE"	    /* seconds */
#define ELASTIC_ENV_SIZES      "ELASTIC_SIZES"	    /* any | pow2 | N,N,... */
#define ELASTIC_ENV_WEIGHT     "ELASTIC_WEIGHT"	    /* policy weight */
#define ELASTIC_ENV_CONTROLLER "ELASTIC_CONTROLLER" /* host:port of elasticd */

#endif
