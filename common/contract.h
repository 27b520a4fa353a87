/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/contract.h: the job contract every component shares: limits, allowed sizes, the
 * elastic request and its AdminComment tag, exit statuses, task environment, snapshot
 * names. Dependency-free (libc only); linked by the plugins, elasticd, elastic-ctl,
 * elastic-run and libelastic, so each rule is written once (test/test_contract.c). */
#ifndef ELASTIC_COMMON_CONTRACT_H
#define ELASTIC_COMMON_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

/* ---- errors ----------------------------------------------------------------
 * Human-readable detail beside a -1/errno return (the same type as the one of
 * <elastic/elastic.h>, hence the guard). */
#ifndef ELASTIC_ERROR_T_DEFINED
#define ELASTIC_ERROR_T_DEFINED 1
typedef struct elastic_error {
	char text[256];
} elastic_error_t;
#endif

/* Fill err (may be NULL) printf-style; always returns -1. */
int elastic__errorf(elastic_error_t *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The same, and errno = e: `return elastic__fail(err, EINVAL, "...")`. */
int elastic__fail(elastic_error_t *err, int e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- limits ------------------------------------------------------------------
 * Sanity bounds of the contract (not site limits, which elastic.conf sets
 * below them): every component refuses values beyond these the same way. */
#define ELASTIC_GPUS_LIMIT  4096  /* largest GPU count anything may name */
#define ELASTIC_GRACE_LIMIT 86400 /* seconds */
#define ELASTIC_WEIGHT_MAX  1000  /* policy weight */
#define ELASTIC_MAX_SIZES   64	  /* entries of an explicit size list */

/* ---- exit statuses -----------------------------------------------------------
 * A rank that leaves so that its job is re-formed (planned resize, watchdog,
 * step timeout) exits with ELASTIC_EXIT_REFORM (EX_TEMPFAIL). The same value
 * is in <elastic/elastic.h>: a translation unit that sees both would fail to
 * compile if they differed. elastic-run's own statuses follow. */
#define ELASTIC_EXIT_REFORM 75
/* A rank that left at a planned shrink in place (its GPUs are released; the
 * other ranks go on without it): neither a failure nor a re-form. */
#define ELASTIC_EXIT_LEFT    76
#define ELASTIC_EXIT_USAGE   2 /* elastic-run: bad options or job environment */
#define ELASTIC_EXIT_NOALLOC 3 /* elastic-run: not inside a Slurm allocation */

/* ---- the options and what the tasks see ---------------------------------------
 * The option names as the user types them (sbatch --elastic-gpus=...), and the
 * environment the SPANK plugin exports to every task of an elastic job
 * (elastic-spank(8) documents them; libelastic and elastic-run read them). */
#define ELASTIC_OPT_GPUS   "elastic-gpus"
#define ELASTIC_OPT_GRACE  "elastic-grace"
#define ELASTIC_OPT_SIZES  "elastic-sizes"
#define ELASTIC_OPT_WEIGHT "elastic-policy-weight"

#define ELASTIC_ENV_JOB_ID     "ELASTIC_JOB_ID"	    /* Slurm job id */
#define ELASTIC_ENV_MIN_GPUS   "ELASTIC_MIN_GPUS"   /* MIN */
#define ELASTIC_ENV_MAX_GPUS   "ELASTIC_MAX_GPUS"   /* MAX */
#define ELASTIC_ENV_GRACE      "ELASTIC_GRACE"	    /* seconds */
#define ELASTIC_ENV_SIZES      "ELASTIC_SIZES"	    /* any | pow2 | N,N,... */
#define ELASTIC_ENV_WEIGHT     "ELASTIC_WEIGHT"	    /* policy weight */
#define ELASTIC_ENV_CONTROLLER "ELASTIC_CONTROLLER" /* host:port of elasticd */
/* The user's, not exported: where libelastic keeps node snapshots (default
 * ELASTIC_SNAP_DIR); the job's epilog cleans it too. */
#define ELASTIC_ENV_SHM_DIR "ELASTIC_SHM_DIR"

/* ---- allowed sizes -------------------------------------------------------------
 * The GPU counts a job may run at, within its [MIN, MAX]: any count, powers of
 * two, or an explicit list. Written "any", "pow2" or "N<sep>N..." with sep ','
 * (option, ELASTIC_SIZES) or '/' (inside the tag). */
enum elastic_sizes_kind {
	ELASTIC_SIZES_ANY = 0, /* every count in [MIN, MAX] */
	ELASTIC_SIZES_POW2,    /* powers of two in [MIN, MAX] */
	ELASTIC_SIZES_LIST,    /* the counts in v[] */
};

struct elastic_sizes {
	enum elastic_sizes_kind kind;
	int n; /* ELASTIC_SIZES_LIST: entries, ascending, unique */
	long v[ELASTIC_MAX_SIZES];
};

/* The one parser of a size text. Entries are decimal counts in
 * 1..ELASTIC_GPUS_LIMIT, at most ELASTIC_MAX_SIZES, each once; the list is
 * sorted. Returns 0, or -1 (EINVAL) with err saying what is wrong with which
 * entry (no option name: callers prefix it); *out is unchanged on error. */
int elastic_sizes_parse(const char *text, char sep, struct elastic_sizes *out,
			elastic_error_t *err);

/* "any", "pow2" or the list joined by sep. Returns the length, or -1 (ENOSPC). */
int elastic_sizes_format(const struct elastic_sizes *s, char sep, char *buf, size_t size);

/* 1 if n is in [min, max] and one of the sizes, else 0. */
int elastic_sizes_allows(const struct elastic_sizes *s, long min, long max, long n);

/* The largest allowed count <= n (and >= min, <= max), or 0 when there is none. */
long elastic_sizes_fit(const struct elastic_sizes *s, long min, long max, long n);

/* The allowed counts in [min, max], ascending, into out[cap]; "any" gives none
 * (0: every count). Returns how many, or -1 (ENOSPC) when more than cap. */
int elastic_sizes_list(const struct elastic_sizes *s, long min, long max, long *out,
		       int cap);

/* ---- the elastic request ------------------------------------------------------------
 * What the user asked with --elastic-gpus=MIN[-MAX] (MAX defaults to MIN),
 * --elastic-grace=SECONDS, --elastic-sizes=any|pow2|LIST and
 * --elastic-policy-weight=N. */
struct elastic_request {
	long min_gpus, max_gpus; /* 1 <= min <= max <= the GPU limit */
	long grace;		 /* seconds, 1 <= grace <= the grace limit */
	long weight;		 /* policy weight, 1..ELASTIC_WEIGHT_MAX (default 1) */
	struct elastic_sizes sizes;
};

/* Check a request against limits (max_gpus, max_grace: the site's, or
 * ELASTIC_GPUS_LIMIT / ELASTIC_GRACE_LIMIT) and its own consistency. err names
 * the option, the value and what is allowed, e.g. "--elastic-gpus=0: MIN must
 * be at least 1 (allowed: MIN[-MAX] with 1 <= MIN <= MAX <= 8)". */
int elastic_request_check_limits(const struct elastic_request *req, long max_gpus,
				 long max_grace, elastic_error_t *err);
/* The same, naming the list of sizes as the user typed it (sizes_given;
 * NULL: as req holds it, sorted) when it is refused. */
int elastic__request_check_as_given(const struct elastic_request *req, long max_gpus,
				    long max_grace, const char *sizes_given,
				    elastic_error_t *err);

/* The request as a task sees it (ELASTIC_MIN_GPUS, ELASTIC_MAX_GPUS,
 * ELASTIC_GRACE, ELASTIC_SIZES, ELASTIC_WEIGHT through get, NULL: getenv).
 * Unset or empty: MIN 1 (or the smallest size of a list), MAX the GPU limit,
 * grace 30, any size, weight 1.
 * Then checked like a tag (elastic_request_check_limits with the contract's
 * limits). Returns 0, or -1 (EINVAL) with err naming the variable and its
 * value; *req is unchanged on error. */
int elastic_request_from_env(struct elastic_request *req,
			     const char *(*get)(const char *), elastic_error_t *err);

/* An option refused: err = "--OPT=VALUE: what" + allowed, errno EINVAL,
 * returns -1. The allowed parts of those messages (printf format, argument): */
int elastic__opt_fail(elastic_error_t *err, const char *opt, const char *value,
		      const char *what, const char *allowed);
#define ELASTIC__GPUS_ALLOWED(lim)                                                       \
	" (allowed: MIN[-MAX] with 1 <= MIN <= MAX <= %ld)", (lim)
#define ELASTIC__GRACE_ALLOWED(lim) " (allowed: 1 to %ld seconds)", (lim)
#define ELASTIC__SIZES_ALLOWED                                                             \
	" (allowed: any, pow2, or a comma-separated list of GPU counts within MIN-MAX of " \
	"--" ELASTIC_OPT_GPUS ", e.g. 1,2,4,8)"
#define ELASTIC__WEIGHT_ALLOWED " (allowed: 1 to %d)", ELASTIC_WEIGHT_MAX

/* 1 if the job may run at n GPUs (n in [MIN, MAX] and an allowed size). */
int elastic_request_size_ok(const struct elastic_request *req, long n);

/* Strict decimal (digits only, no sign or space) of n characters of s.
 * Returns 0, -1 (not a number) or -2 (too large for a long). */
int elastic__decimal(const char *s, size_t n, long *out);

/* ---- the job tag ----------------------------------------------------------------
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
 * elastic_request_check_limits() refuses with the contract's limits. */
#define ELASTIC_TAG_PREFIX "elastic:"
#define ELASTIC_TAG_MAX	   512

/* 1 if text starts with ELASTIC_TAG_PREFIX (a tag, valid or not), else 0. */
int elastic_tag_is_tag(const char *text);

/* Write the tag of req into buf. Returns its length or -1 (ENOSPC). */
int elastic_tag_format(const struct elastic_request *req, char *buf, size_t size);

/* Parse a tag. Returns 0, or -1 (EINVAL) with err naming the bad part;
 * req is unchanged on error. */
int elastic_tag_parse(const char *tag, struct elastic_request *req, elastic_error_t *err);

/* ---- node snapshots ------------------------------------------------------------
 * libelastic keeps the committed state of a job in node-local files
 *   <dir>/elastic-<jobid>-[<stamp>-]<launch:%016x>-<host:%08x>-<slot>.snap
 * (dir /dev/shm; stamp: the job's start time, so that a reused job id never
 * resumes another job's state). The SPANK epilog removes a job's files and
 * `elastic-ctl snapshots` lists or removes them. */
#define ELASTIC_SNAP_DIR    "/dev/shm"
#define ELASTIC_SNAP_BASE   "elastic-"
#define ELASTIC_SNAP_SUFFIX ".snap"

/* The prefix of a job's files: "<dir>/elastic-<job>-[<stamp>-]". Returns its
 * length, or -1 (ENAMETOOLONG). stamp may be NULL or "". */
int elastic_snap_prefix(char *buf, size_t size, const char *dir, const char *job,
			const char *stamp);

/* The name of one file under prefix. Returns its length or -1 (ENAMETOOLONG). */
int elastic_snap_file(char *buf, size_t size, const char *prefix, uint64_t launch,
		      uint32_t host, int slot);

/* The job id of a file name (base name, no directory) when it is a snapshot
 * file: 1 with *job, else 0. */
int elastic_snap_job_of(const char *name, unsigned long *job);

#endif
