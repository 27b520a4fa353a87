/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/request.c: the elastic request from the --elastic-* options, within the site's
 * limits (request.h); the rules themselves are the contract's. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "request.h"

#define _fail elastic__fail

/* Used when no site configuration is at hand (elastic.conf's default). */
#define BUILTIN_DEFAULT_GRACE 30

enum { NUM_OK = 0, NUM_BAD = -1, NUM_BIG = -2 };
#define _num elastic__decimal

static long _limit_gpus(const struct elastic_site_conf *site)
{
	return site ? site->max_gpus_per_job : ELASTIC_GPUS_LIMIT;
}

static long _limit_grace(const struct elastic_site_conf *site)
{
	return site ? site->max_grace : ELASTIC_GRACE_LIMIT;
}

static int _parse_gpus(const char *s, long limit, long *min, long *max,
		       elastic_error_t *err)
{
	char what[160], allowed[96];
	const char *dash = strchr(s, '-');
	size_t n1 = dash ? (size_t)(dash - s) : strlen(s);
	long a = 0, b = 0;
	int r;

	snprintf(allowed, sizeof(allowed), ELASTIC__GPUS_ALLOWED(limit));
	if (s[0] == '-')
		return elastic__opt_fail(err, ELASTIC_OPT_GPUS, s,
					 "GPU counts cannot be negative", allowed);
	r = _num(s, n1, &a);
	if (r == NUM_OK && dash)
		r = _num(dash + 1, strlen(dash + 1), &b);
	else
		b = a;
	if (r == NUM_BAD) {
		if (dash && !dash[1])
			return elastic__opt_fail(err, ELASTIC_OPT_GPUS, s,
						 "MAX missing after '-'", allowed);
		if (dash && dash[1] == '-')
			return elastic__opt_fail(err, ELASTIC_OPT_GPUS, s,
						 "MAX cannot be negative", allowed);
		if (dash && strchr(dash + 1, '-'))
			return elastic__opt_fail(err, ELASTIC_OPT_GPUS, s,
						 "expected MIN or MIN-MAX (one '-')",
						 allowed);
		return elastic__opt_fail(err, ELASTIC_OPT_GPUS, s,
					 "not a whole number of GPUs", allowed);
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
		return elastic__opt_fail(err, ELASTIC_OPT_GPUS, s, what, allowed);
	}
	if (a < 1)
		return elastic__opt_fail(err, ELASTIC_OPT_GPUS, s,
					 "MIN must be at least 1", allowed);
	if (a > b) {
		snprintf(what, sizeof(what), "MIN %ld is greater than MAX %ld", a, b);
		return elastic__opt_fail(err, ELASTIC_OPT_GPUS, s, what, allowed);
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
		return elastic__opt_fail(err, opt, s, "cannot be negative", allowed);
	r = _num(s, strlen(s), &v);
	if (r == NUM_BAD)
		return elastic__opt_fail(err, opt, s, "not a whole number", allowed);
	if (r == NUM_BIG || v > hi) {
		snprintf(what, sizeof(what), "%s", "too large");
		return elastic__opt_fail(err, opt, s, what, allowed);
	}
	if (v < lo) {
		snprintf(what, sizeof(what), "must be at least %ld", lo);
		return elastic__opt_fail(err, opt, s, what, allowed);
	}
	*out = v;
	return 0;
}

int elastic_request_from_options(struct elastic_request *req, const char *gpus,
				 const char *grace, const char *sizes, const char *weight,
				 const struct elastic_site_conf *site,
				 elastic_error_t *err)
{
	struct elastic_request r = {0};
	elastic_error_t sub;
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
	snprintf(allowed, sizeof(allowed), ELASTIC__GRACE_ALLOWED(_limit_grace(site)));
	if (grace && _parse_bounded(ELASTIC_OPT_GRACE, grace, 1, _limit_grace(site),
				    &r.grace, allowed, err) < 0)
		return -1;
	snprintf(allowed, sizeof(allowed), ELASTIC__WEIGHT_ALLOWED);
	r.weight = 1;
	if (weight && _parse_bounded(ELASTIC_OPT_WEIGHT, weight, 1, ELASTIC_WEIGHT_MAX,
				     &r.weight, allowed, err) < 0)
		return -1;
	r.sizes.kind = ELASTIC_SIZES_ANY;
	if (sizes && elastic_sizes_parse(sizes, ',', &r.sizes, &sub) < 0)
		return elastic__opt_fail(err, ELASTIC_OPT_SIZES, sizes, sub.text,
					 ELASTIC__SIZES_ALLOWED);
	/* The parser sorts a list of sizes: a refusal names it as typed. */
	if (elastic__request_check_as_given(&r, _limit_gpus(site), _limit_grace(site),
					    sizes, err) < 0)
		return -1;
	*req = r;
	return 0;
}

int elastic_request_check(const struct elastic_request *req,
			  const struct elastic_site_conf *site, elastic_error_t *err)
{
	return elastic_request_check_limits(req, _limit_gpus(site), _limit_grace(site),
					    err);
}
