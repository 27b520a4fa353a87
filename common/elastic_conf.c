/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/elastic_conf.c: elastic.conf keys and loader, the elastic request and its job
 * tag. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elastic_conf.h"

#define _fail elastic__fail

#define OFF(f) offsetof(struct elastic_site_conf, f)

const struct elastic_conf_key elastic_site_conf_keys[] = {
	{"ControllerHost", ELASTIC_CONF_STRING, OFF(controller_host), "localhost"},
	{"ControllerPort", ELASTIC_CONF_INT, OFF(controller_port), "6820", 1, 65535},
	{"MaxGpusPerJob", ELASTIC_CONF_INT, OFF(max_gpus_per_job), "64", 1,
	 ELASTIC_GPUS_LIMIT},
	{"AllowedPartitions", ELASTIC_CONF_STRING, OFF(allowed_partitions), ""},
	{"AllowedAccounts", ELASTIC_CONF_STRING, OFF(allowed_accounts), ""},
	{"AllowedUsers", ELASTIC_CONF_STRING, OFF(allowed_users), ""},
	{"DefaultGrace", ELASTIC_CONF_INT, OFF(default_grace), "30", 1,
	 ELASTIC_GRACE_LIMIT},
	{"MaxGrace", ELASTIC_CONF_INT, OFF(max_grace), "600", 1, ELASTIC_GRACE_LIMIT},
	{"PolicyMode", ELASTIC_CONF_ENUM, OFF(policy_mode), "priority", 0, 0,
	 "priority|fairshare|fifo"},
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
	{NULL},
};

/* Built-in values used when no site configuration is at hand. */
#define BUILTIN_DEFAULT_GRACE 30

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

/* ---- numbers ------------------------------------------------------------ */

enum { NUM_OK = 0, NUM_BAD = -1, NUM_BIG = -2 };

/* Strict decimal: digits only (no sign, no spaces), at most ELASTIC_GPUS_LIMIT
 * style bounds checked by the caller; n characters of s. */
static int _num(const char *s, size_t n, long *out)
{
	long v = 0;

	if (n == 0)
		return NUM_BAD;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return NUM_BAD;
		if (v > (LONG_MAX - 9) / 10)
			return NUM_BIG;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return NUM_OK;
}

static long _limit_gpus(const struct elastic_site_conf *site)
{
	return site ? site->max_gpus_per_job : ELASTIC_GPUS_LIMIT;
}

static long _limit_grace(const struct elastic_site_conf *site)
{
	return site ? site->max_grace : ELASTIC_GRACE_LIMIT;
}

static int _is_pow2(long n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

#define GPUS_ALLOWED(lim)  " (allowed: MIN[-MAX] with 1 <= MIN <= MAX <= %ld)", (lim)
#define GRACE_ALLOWED(lim) " (allowed: 1 to %ld seconds)", (lim)
#define SIZES_ALLOWED                                                                    \
	" (allowed: any, pow2, or a comma-separated list of GPU counts within MIN-MAX "  \
	"of "                                                                            \
	"--" ELASTIC_OPT_GPUS ", e.g. 1,2,4,8)"
#define WEIGHT_ALLOWED " (allowed: 1 to %d)", ELASTIC_WEIGHT_MAX

/* err = "--OPT=VALUE: what" + allowed. */
static int _opt_fail(elastic_error_t *err, const char *opt, const char *value,
		     const char *what, const char *allowed)
{
	return _fail(err, EINVAL, "--%s=%s: %s%s", opt, value, what, allowed);
}

static int _parse_gpus(const char *s, long limit, long *min, long *max,
		       elastic_error_t *err)
{
	char what[160], allowed[96];
	const char *dash = strchr(s, '-');
	size_t n1 = dash ? (size_t)(dash - s) : strlen(s);
	long a = 0, b = 0;
	int r;

	snprintf(allowed, sizeof(allowed), GPUS_ALLOWED(limit));
	if (s[0] == '-')
		return _opt_fail(err, ELASTIC_OPT_GPUS, s,
				 "GPU counts cannot be negative", allowed);
	r = _num(s, n1, &a);
	if (r == NUM_OK && dash)
		r = _num(dash + 1, strlen(dash + 1), &b);
	else
		b = a;
	if (r == NUM_BAD) {
		if (dash && !dash[1])
			return _opt_fail(err, ELASTIC_OPT_GPUS, s,
					 "MAX missing after '-'", allowed);
		if (dash && dash[1] == '-')
			return _opt_fail(err, ELASTIC_OPT_GPUS, s,
					 "MAX cannot be negative", allowed);
		if (dash && strchr(dash + 1, '-'))
			return _opt_fail(err, ELASTIC_OPT_GPUS, s,
					 "expected MIN or MIN-MAX (one '-')", allowed);
		return _opt_fail(err, ELASTIC_OPT_GPUS, s, "not a whole number of GPUs",
				 allowed);
	}
	if (r == NUM_BIG || a > limit || b > limit) {
		long big = (r == NUM_BIG) ? -1 : (b > limit ? b : a);
		if (big < 0)
			snprintf(what, sizeof(what), "number too large");
		else if (dash)
			snprintf(what, sizeof(what),
				 "MAX %ld is above the site limit MaxGpusPerJob=%ld", big,
				 limit);
		else
			snprintf(what, sizeof(what),
				 "%ld GPUs is above the site limit MaxGpusPerJob=%ld",
				 big, limit);
		return _opt_fail(err, ELASTIC_OPT_GPUS, s, what, allowed);
	}
	if (a < 1)
		return _opt_fail(err, ELASTIC_OPT_GPUS, s, "MIN must be at least 1",
				 allowed);
	if (a > b) {
		snprintf(what, sizeof(what), "MIN %ld is greater than MAX %ld", a, b);
		return _opt_fail(err, ELASTIC_OPT_GPUS, s, what, allowed);
	}
	*min = a;
	*max = b;
	return 0;
}

static int _parse_bounded(const char *opt, const char *s, long lo, long hi, long *out,
			  const char *allowed, elastic_error_t *err)
{
	char what[96];
	long v;
	int r;

	if (s[0] == '-')
		return _opt_fail(err, opt, s, "cannot be negative", allowed);
	r = _num(s, strlen(s), &v);
	if (r == NUM_BAD)
		return _opt_fail(err, opt, s, "not a whole number", allowed);
	if (r == NUM_BIG || v > hi) {
		snprintf(what, sizeof(what), "%s", "too large");
		return _opt_fail(err, opt, s, what, allowed);
	}
	if (v < lo) {
		snprintf(what, sizeof(what), "must be at least %ld", lo);
		return _opt_fail(err, opt, s, what, allowed);
	}
	*out = v;
	return 0;
}

static int _cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* Sizes: "any", "pow2", or N{sep}N...; the list is sorted and must be unique. */
static int _parse_sizes(const char *s, char sep, struct elastic_request *req,
			const char *opt, elastic_error_t *err)
{
	char what[128];

	if (strcmp(s, "any") == 0) {
		req->sizes_kind = ELASTIC_SIZES_ANY;
		req->nsizes = 0;
		return 0;
	}
	if (strcmp(s, "pow2") == 0) {
		req->sizes_kind = ELASTIC_SIZES_POW2;
		req->nsizes = 0;
		return 0;
	}
	req->nsizes = 0;
	for (const char *p = s;;) {
		const char *end = strchr(p, sep);
		size_t n = end ? (size_t)(end - p) : strlen(p);
		long v;
		int r = _num(p, n, &v);

		if (r == NUM_BAD) {
			snprintf(what, sizeof(what), "'%.*s' is not a GPU count",
				 (int)(n > 32 ? 32 : n), p);
			return _opt_fail(err, opt, s, n ? what : "empty list entry",
					 SIZES_ALLOWED);
		}
		if (r == NUM_BIG || v > ELASTIC_GPUS_LIMIT) {
			snprintf(what, sizeof(what), "%.*s is too large",
				 (int)(n > 32 ? 32 : n), p);
			return _opt_fail(err, opt, s, what, SIZES_ALLOWED);
		}
		if (v < 1)
			return _opt_fail(err, opt, s, "0 is not a GPU count",
					 SIZES_ALLOWED);
		if (req->nsizes == ELASTIC_MAX_SIZES) {
			snprintf(what, sizeof(what), "more than %d entries",
				 ELASTIC_MAX_SIZES);
			return _opt_fail(err, opt, s, what, SIZES_ALLOWED);
		}
		for (int i = 0; i < req->nsizes; i++)
			if (req->sizes[i] == v) {
				snprintf(what, sizeof(what), "%ld is listed twice", v);
				return _opt_fail(err, opt, s, what, SIZES_ALLOWED);
			}
		req->sizes[req->nsizes++] = v;
		if (!end)
			break;
		p = end + 1;
	}
	qsort(req->sizes, (size_t)req->nsizes, sizeof(req->sizes[0]), _cmp_long);
	req->sizes_kind = ELASTIC_SIZES_LIST;
	return 0;
}

int elastic_request_sizes_str(const struct elastic_request *req, char sep, char *buf,
			      size_t size)
{
	size_t used = 0;
	int n;

	if (req->sizes_kind == ELASTIC_SIZES_ANY ||
	    req->sizes_kind == ELASTIC_SIZES_POW2) {
		n = snprintf(buf, size, "%s",
			     req->sizes_kind == ELASTIC_SIZES_ANY ? "any" : "pow2");
		if (n < 0 || (size_t)n >= size)
			return errno = ENOSPC, -1;
		return n;
	}
	if (size)
		buf[0] = '\0';
	for (int i = 0; i < req->nsizes; i++) {
		if (i)
			n = snprintf(buf + used, size - used, "%c%ld", sep,
				     req->sizes[i]);
		else
			n = snprintf(buf + used, size - used, "%ld", req->sizes[i]);
		if (n < 0 || (size_t)n >= size - used)
			return errno = ENOSPC, -1;
		used += (size_t)n;
	}
	return (int)used;
}

int elastic_request_size_ok(const struct elastic_request *req, long n)
{
	if (n < req->min_gpus || n > req->max_gpus)
		return 0;
	switch (req->sizes_kind) {
	case ELASTIC_SIZES_ANY:
		return 1;
	case ELASTIC_SIZES_POW2:
		return _is_pow2(n);
	case ELASTIC_SIZES_LIST:
		for (int i = 0; i < req->nsizes; i++)
			if (req->sizes[i] == n)
				return 1;
		return 0;
	}
	return 0;
}

int elastic_request_check(const struct elastic_request *req,
			  const struct elastic_site_conf *site, elastic_error_t *err)
{
	long glim = _limit_gpus(site), tlim = _limit_grace(site);
	char val[64], sizes[ELASTIC_TAG_MAX], what[160], allowed[96];

	if (req->max_gpus == req->min_gpus)
		snprintf(val, sizeof(val), "%ld", req->min_gpus);
	else
		snprintf(val, sizeof(val), "%ld-%ld", req->min_gpus, req->max_gpus);
	snprintf(allowed, sizeof(allowed), GPUS_ALLOWED(glim));
	if (req->min_gpus < 1)
		return _opt_fail(err, ELASTIC_OPT_GPUS, val, "MIN must be at least 1",
				 allowed);
	if (req->min_gpus > req->max_gpus) {
		snprintf(what, sizeof(what), "MIN %ld is greater than MAX %ld",
			 req->min_gpus, req->max_gpus);
		return _opt_fail(err, ELASTIC_OPT_GPUS, val, what, allowed);
	}
	if (req->max_gpus > glim) {
		snprintf(what, sizeof(what),
			 "MAX %ld is above the site limit MaxGpusPerJob=%ld",
			 req->max_gpus, glim);
		return _opt_fail(err, ELASTIC_OPT_GPUS, val, what, allowed);
	}
	snprintf(val, sizeof(val), "%ld", req->grace);
	snprintf(allowed, sizeof(allowed), GRACE_ALLOWED(tlim));
	if (req->grace < 1)
		return _opt_fail(err, ELASTIC_OPT_GRACE, val, "must be at least 1",
				 allowed);
	if (req->grace > tlim) {
		snprintf(what, sizeof(what), "above the site limit MaxGrace=%ld", tlim);
		return _opt_fail(err, ELASTIC_OPT_GRACE, val, what, allowed);
	}
	snprintf(val, sizeof(val), "%ld", req->weight);
	snprintf(allowed, sizeof(allowed), WEIGHT_ALLOWED);
	if (req->weight < 1 || req->weight > ELASTIC_WEIGHT_MAX)
		return _opt_fail(err, ELASTIC_OPT_WEIGHT, val, "out of range", allowed);

	if (elastic_request_sizes_str(req, ',', sizes, sizeof(sizes)) < 0)
		return _fail(err, EINVAL, "--%s: list too long", ELASTIC_OPT_SIZES);
	if (req->sizes_kind == ELASTIC_SIZES_LIST) {
		if (req->nsizes < 1)
			return _opt_fail(err, ELASTIC_OPT_SIZES, sizes, "empty list",
					 SIZES_ALLOWED);
		for (int i = 0; i < req->nsizes; i++) {
			if (i && req->sizes[i] <= req->sizes[i - 1])
				return _opt_fail(err, ELASTIC_OPT_SIZES, sizes,
						 "list not ascending or repeated",
						 SIZES_ALLOWED);
			if (req->sizes[i] < req->min_gpus ||
			    req->sizes[i] > req->max_gpus) {
				snprintf(what, sizeof(what),
					 "%ld is outside --%s=%ld-%ld", req->sizes[i],
					 ELASTIC_OPT_GPUS, req->min_gpus, req->max_gpus);
				return _opt_fail(err, ELASTIC_OPT_SIZES, sizes, what,
						 SIZES_ALLOWED);
			}
		}
	} else if (req->sizes_kind != ELASTIC_SIZES_ANY &&
		   req->sizes_kind != ELASTIC_SIZES_POW2) {
		return _fail(err, EINVAL, "--%s: unknown kind of sizes",
			     ELASTIC_OPT_SIZES);
	}
	if (!elastic_request_size_ok(req, req->min_gpus)) {
		snprintf(what, sizeof(what),
			 "the job starts at MIN=%ld GPUs, which is not one of its sizes",
			 req->min_gpus);
		return _opt_fail(err, ELASTIC_OPT_SIZES, sizes, what, SIZES_ALLOWED);
	}
	return 0;
}

int elastic_request_from_options(struct elastic_request *req, const char *gpus,
				 const char *grace, const char *sizes, const char *weight,
				 const struct elastic_site_conf *site,
				 elastic_error_t *err)
{
	struct elastic_request r = {0};
	char allowed[96];

	if (!gpus) {
		const char *other = grace    ? ELASTIC_OPT_GRACE
				    : sizes  ? ELASTIC_OPT_SIZES
				    : weight ? ELASTIC_OPT_WEIGHT
					     : NULL;
		if (other)
			return _fail(
				err, EINVAL,
				"--%s needs --%s=MIN[-MAX] (it only applies to elastic jobs)",
				other, ELASTIC_OPT_GPUS);
		return _fail(err, EINVAL, "no --%s given", ELASTIC_OPT_GPUS);
	}
	if (_parse_gpus(gpus, _limit_gpus(site), &r.min_gpus, &r.max_gpus, err) < 0)
		return -1;
	r.grace = site ? site->default_grace : BUILTIN_DEFAULT_GRACE;
	snprintf(allowed, sizeof(allowed), GRACE_ALLOWED(_limit_grace(site)));
	if (grace && _parse_bounded(ELASTIC_OPT_GRACE, grace, 1, _limit_grace(site),
				    &r.grace, allowed, err) < 0)
		return -1;
	snprintf(allowed, sizeof(allowed), WEIGHT_ALLOWED);
	r.weight = 1;
	if (weight && _parse_bounded(ELASTIC_OPT_WEIGHT, weight, 1, ELASTIC_WEIGHT_MAX,
				     &r.weight, allowed, err) < 0)
		return -1;
	r.sizes_kind = ELASTIC_SIZES_ANY;
	if (sizes && _parse_sizes(sizes, ',', &r, ELASTIC_OPT_SIZES, err) < 0)
		return -1;
	if (elastic_request_check(&r, site, err) < 0)
		return -1;
	*req = r;
	return 0;
}

/* ---- tag ------------------------------------------------------------------ */

int elastic_tag_is_tag(const char *text)
{
	return text && strncmp(text, ELASTIC_TAG_PREFIX, strlen(ELASTIC_TAG_PREFIX)) == 0;
}

int elastic_tag_format(const struct elastic_request *req, char *buf, size_t size)
{
	char sizes[ELASTIC_TAG_MAX];
	int n;

	if (elastic_request_sizes_str(req, '/', sizes, sizeof(sizes)) < 0)
		return -1;
	n = snprintf(buf, size, "%smin=%ld,max=%ld,grace=%ld,sizes=%s,weight=%ld",
		     ELASTIC_TAG_PREFIX, req->min_gpus, req->max_gpus, req->grace, sizes,
		     req->weight);
	if (n < 0 || (size_t)n >= size)
		return errno = ENOSPC, -1;
	return n;
}

int elastic_tag_parse(const char *tag, struct elastic_request *req, elastic_error_t *err)
{
	static const char *names[] = {"min", "max", "grace", "sizes", "weight"};
	enum { K_MIN, K_MAX, K_GRACE, K_SIZES, K_WEIGHT, K_N };
	struct elastic_request r = {0};
	elastic_error_t sub;
	int seen[K_N] = {0};
	char buf[ELASTIC_TAG_MAX];
	const char *body;
	size_t plen = strlen(ELASTIC_TAG_PREFIX);

	if (!tag)
		return _fail(err, EINVAL, "no elastic tag");
	if (!elastic_tag_is_tag(tag))
		return _fail(err, EINVAL,
			     "'%.64s' is not an elastic tag (no '%s' prefix)", tag,
			     ELASTIC_TAG_PREFIX);
	if (strlen(tag) >= sizeof(buf))
		return _fail(err, EINVAL, "elastic tag longer than %d bytes",
			     ELASTIC_TAG_MAX - 1);
	body = tag + plen;
	r.weight = 1;
	for (const char *p = body;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		const char *eq = memchr(p, '=', n);
		size_t klen, vlen;
		const char *v;
		int k;
		long num = 0;

		if (!eq)
			return _fail(err, EINVAL,
				     "elastic tag '%s': '%.*s' is not key=value", tag,
				     (int)n, p);
		klen = (size_t)(eq - p);
		v = eq + 1;
		vlen = n - klen - 1;
		for (k = 0; k < K_N; k++)
			if (strlen(names[k]) == klen && strncmp(names[k], p, klen) == 0)
				break;
		if (k == K_N)
			return _fail(err, EINVAL, "elastic tag '%s': unknown key '%.*s'",
				     tag, (int)klen, p);
		if (seen[k]++)
			return _fail(err, EINVAL, "elastic tag '%s': key '%s' repeated",
				     tag, names[k]);
		if (k == K_SIZES) {
			memcpy(buf, v, vlen);
			buf[vlen] = '\0';
			if (_parse_sizes(buf, '/', &r, ELASTIC_OPT_SIZES, &sub) < 0)
				return _fail(err, EINVAL,
					     "elastic tag '%s': bad sizes '%s'", tag,
					     buf);
		} else {
			int rc = _num(v, vlen, &num);
			if (rc != NUM_OK || (vlen > 1 && v[0] == '0'))
				return _fail(
					err, EINVAL,
					"elastic tag '%s': %s='%.*s' is not a number",
					tag, names[k], (int)vlen, v);
			if (k == K_MIN)
				r.min_gpus = num;
			else if (k == K_MAX)
				r.max_gpus = num;
			else if (k == K_GRACE)
				r.grace = num;
			else
				r.weight = num;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	for (int k = 0; k < K_N; k++)
		if (!seen[k] && k != K_WEIGHT)
			return _fail(err, EINVAL, "elastic tag '%s': key '%s' missing",
				     tag, names[k]);
	if (elastic_request_check(&r, NULL, &sub) < 0)
		return _fail(err, EINVAL, "elastic tag '%s': %s", tag, sub.text);
	*req = r;
	return 0;
}

/* ---- TRES ------------------------------------------------------------------ */

int elastic_tres_gpus(const char *tres, long *count)
{
	long untyped = 0, typed = 0;
	int have_untyped = 0, have_typed = 0;

	*count = 0;
	if (!tres)
		return 0;
	for (const char *p = tres; *p;) {
		size_t n = strcspn(p, ",;");
		const char *end = p + n, *c;
		int is_typed = 0;
		long v = 1;

		if (n >= 8 && strncmp(p, "gres/gpu", 8) == 0 &&
		    (n == 8 || p[8] == ':' || p[8] == '=')) {
			/* gres/gpu[:TYPE][:N|=N]: typed when a name follows "gpu:". */
			is_typed =
				p[8] == ':' && p + 9 < end && (p[9] < '0' || p[9] > '9');
			/* The count: after the last ':' or '=' when it is numeric. */
			c = end;
			while (c > p + 8 && c[-1] != ':' && c[-1] != '=')
				c--;
			if (c > p + 8 && c < end && c[0] >= '0' && c[0] <= '9') {
				int r = _num(c, (size_t)(end - c), &v);
				if (r != NUM_OK)
					return errno = EINVAL, -1;
			} else if (c > p + 8 && (c == end || c[-1] == '=')) {
				/* "gres/gpu=", "gres/gpu=x", "gres/gpu:" */
				return errno = EINVAL, -1;
			}
			if (is_typed) {
				typed += v;
				have_typed = 1;
			} else {
				untyped += v;
				have_untyped = 1;
			}
		}
		p = end;
		if (*p)
			p++;
	}
	*count = have_untyped ? untyped : typed;
	return have_untyped || have_typed;
}
