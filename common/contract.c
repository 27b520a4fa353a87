/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/contract.c: the job contract's rules (contract.h): sizes, request limits, tag
 * codec, snapshot names, error helpers. libc only. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"

#define _fail elastic__fail

/* ---- errors ------------------------------------------------------------------ */

int elastic__errorf(elastic_error_t *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
		va_end(ap);
	}
	return -1;
}

int elastic__fail(elastic_error_t *err, int e, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
		va_end(ap);
	}
	errno = e;
	return -1;
}

/* ---- numbers ------------------------------------------------------------------ */

int elastic__decimal(const char *s, size_t n, long *out)
{
	long v = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (LONG_MAX - 9) / 10)
			return -2;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static int _is_pow2(long n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

static int _cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* ---- sizes ------------------------------------------------------------------- */

int elastic_sizes_parse(const char *s, char sep, struct elastic_sizes *out,
			elastic_error_t *err)
{
	struct elastic_sizes r = {.kind = ELASTIC_SIZES_LIST};

	if (!s || !*s)
		return _fail(err, EINVAL, "empty list");
	if (strcmp(s, "any") == 0 || strcmp(s, "pow2") == 0) {
		*out = (struct elastic_sizes){.kind = s[0] == 'a' ? ELASTIC_SIZES_ANY
								  : ELASTIC_SIZES_POW2};
		return 0;
	}
	for (const char *p = s;;) {
		const char *end = strchr(p, sep);
		size_t n = end ? (size_t)(end - p) : strlen(p);
		int w = (int)(n > 32 ? 32 : n);
		long v;
		int rc = elastic__decimal(p, n, &v);

		if (rc == -1 && !n)
			return _fail(err, EINVAL, "empty list entry");
		if (rc == -1)
			return _fail(err, EINVAL, "'%.*s' is not a GPU count", w, p);
		if (rc == -2 || v > ELASTIC_GPUS_LIMIT)
			return _fail(err, EINVAL, "%.*s is too large", w, p);
		if (v < 1)
			return _fail(err, EINVAL, "0 is not a GPU count");
		if (r.n == ELASTIC_MAX_SIZES)
			return _fail(err, EINVAL, "more than %d entries",
				     ELASTIC_MAX_SIZES);
		for (int i = 0; i < r.n; i++)
			if (r.v[i] == v)
				return _fail(err, EINVAL, "%ld is listed twice", v);
		r.v[r.n++] = v;
		if (!end)
			break;
		p = end + 1;
	}
	qsort(r.v, (size_t)r.n, sizeof(r.v[0]), _cmp_long);
	*out = r;
	return 0;
}

int elastic_sizes_format(const struct elastic_sizes *s, char sep, char *buf, size_t size)
{
	size_t used = 0;
	int n;

	if (s->kind != ELASTIC_SIZES_LIST) {
		n = snprintf(buf, size, "%s",
			     s->kind == ELASTIC_SIZES_ANY ? "any" : "pow2");
		if (n < 0 || (size_t)n >= size)
			return errno = ENOSPC, -1;
		return n;
	}
	if (size)
		buf[0] = '\0';
	for (int i = 0; i < s->n; i++) {
		if (i)
			n = snprintf(buf + used, size - used, "%c%ld", sep, s->v[i]);
		else
			n = snprintf(buf + used, size - used, "%ld", s->v[i]);
		if (n < 0 || (size_t)n >= size - used)
			return errno = ENOSPC, -1;
		used += (size_t)n;
	}
	return (int)used;
}

int elastic_sizes_allows(const struct elastic_sizes *s, long min, long max, long n)
{
	if (n < min || n > max || n < 1)
		return 0;
	switch (s->kind) {
	case ELASTIC_SIZES_ANY:
		return 1;
	case ELASTIC_SIZES_POW2:
		return _is_pow2(n);
	case ELASTIC_SIZES_LIST:
		for (int i = 0; i < s->n; i++)
			if (s->v[i] == n)
				return 1;
		return 0;
	}
	return 0;
}

long elastic_sizes_fit(const struct elastic_sizes *s, long min, long max, long n)
{
	if (n > max)
		n = max;
	if (n < min)
		return 0;
	switch (s->kind) {
	case ELASTIC_SIZES_ANY:
		return n;
	case ELASTIC_SIZES_POW2: {
		long p = 1;
		while (p <= n / 2)
			p *= 2;
		return p >= min ? p : 0;
	}
	case ELASTIC_SIZES_LIST:
		for (int i = s->n - 1; i >= 0; i--)
			if (s->v[i] <= n)
				return s->v[i] >= min ? s->v[i] : 0;
		return 0;
	}
	return 0;
}

int elastic_sizes_list(const struct elastic_sizes *s, long min, long max, long *out,
		       int cap)
{
	int n = 0;

	if (s->kind == ELASTIC_SIZES_ANY)
		return 0;
	for (int i = 0;; i++) {
		long v;
		if (s->kind == ELASTIC_SIZES_POW2) {
			if (i >= 62 || (v = 1L << i) > max)
				break;
		} else {
			if (i >= s->n || (v = s->v[i]) > max)
				break;
		}
		if (v < min)
			continue;
		if (n == cap)
			return errno = ENOSPC, -1;
		out[n++] = v;
	}
	return n;
}

/* ---- the request ------------------------------------------------------------- */

int elastic__opt_fail(elastic_error_t *err, const char *opt, const char *value,
		      const char *what, const char *allowed)
{
	return _fail(err, EINVAL, "--%s=%s: %s%s", opt, value, what, allowed);
}

static int _check_gpus(const struct elastic_request *req, long glim, elastic_error_t *err)
{
	char val[64], what[160], allowed[96];

	if (req->max_gpus == req->min_gpus)
		snprintf(val, sizeof(val), "%ld", req->min_gpus);
	else
		snprintf(val, sizeof(val), "%ld-%ld", req->min_gpus, req->max_gpus);
	snprintf(allowed, sizeof(allowed), ELASTIC__GPUS_ALLOWED(glim));
	if (req->min_gpus < 1)
		return elastic__opt_fail(err, ELASTIC_OPT_GPUS, val,
					 "MIN must be at least 1", allowed);
	if (req->min_gpus > req->max_gpus) {
		snprintf(what, sizeof(what), "MIN %ld is greater than MAX %ld",
			 req->min_gpus, req->max_gpus);
		return elastic__opt_fail(err, ELASTIC_OPT_GPUS, val, what, allowed);
	}
	if (req->max_gpus > glim) {
		snprintf(what, sizeof(what),
			 "MAX %ld is above the site limit MaxGpusPerJob=%ld",
			 req->max_gpus, glim);
		return elastic__opt_fail(err, ELASTIC_OPT_GPUS, val, what, allowed);
	}
	return 0;
}

/* given: the list as the user typed it, for the refusals (NULL: req's,
 * which the parser sorted). */
static int _check_sizes(const struct elastic_request *req, const char *given,
			elastic_error_t *err)
{
	const struct elastic_sizes *s = &req->sizes;
	char text[ELASTIC_TAG_MAX], what[160];

	if (elastic_sizes_format(s, ',', text, sizeof(text)) < 0)
		return _fail(err, EINVAL, "--%s: list too long", ELASTIC_OPT_SIZES);
	if (given)
		snprintf(text, sizeof(text), "%s", given);
	if (s->kind == ELASTIC_SIZES_LIST) {
		if (s->n < 1)
			return elastic__opt_fail(err, ELASTIC_OPT_SIZES, text,
						 "empty list", ELASTIC__SIZES_ALLOWED);
		for (int i = 0; i < s->n; i++) {
			if (i && s->v[i] <= s->v[i - 1])
				return elastic__opt_fail(err, ELASTIC_OPT_SIZES, text,
							 "list not ascending or repeated",
							 ELASTIC__SIZES_ALLOWED);
			if (s->v[i] < req->min_gpus || s->v[i] > req->max_gpus) {
				snprintf(what, sizeof(what),
					 "%ld is outside --%s=%ld-%ld", s->v[i],
					 ELASTIC_OPT_GPUS, req->min_gpus, req->max_gpus);
				return elastic__opt_fail(err, ELASTIC_OPT_SIZES, text,
							 what, ELASTIC__SIZES_ALLOWED);
			}
		}
	} else if (s->kind != ELASTIC_SIZES_ANY && s->kind != ELASTIC_SIZES_POW2) {
		return _fail(err, EINVAL, "--%s: unknown kind of sizes",
			     ELASTIC_OPT_SIZES);
	}
	if (!elastic_request_size_ok(req, req->min_gpus)) {
		snprintf(what, sizeof(what),
			 "the job starts at MIN=%ld GPUs, which is not one of its sizes",
			 req->min_gpus);
		return elastic__opt_fail(err, ELASTIC_OPT_SIZES, text, what,
					 ELASTIC__SIZES_ALLOWED);
	}
	return 0;
}

int elastic_request_check_limits(const struct elastic_request *req, long max_gpus,
				 long max_grace, elastic_error_t *err)
{
	return elastic__request_check_as_given(req, max_gpus, max_grace, NULL, err);
}

int elastic__request_check_as_given(const struct elastic_request *req, long max_gpus,
				    long max_grace, const char *sizes_given,
				    elastic_error_t *err)
{
	char val[64], what[160], allowed[96];

	if (_check_gpus(req, max_gpus, err) < 0)
		return -1;
	snprintf(val, sizeof(val), "%ld", req->grace);
	snprintf(allowed, sizeof(allowed), ELASTIC__GRACE_ALLOWED(max_grace));
	if (req->grace < 1)
		return elastic__opt_fail(err, ELASTIC_OPT_GRACE, val,
					 "must be at least 1", allowed);
	if (req->grace > max_grace) {
		snprintf(what, sizeof(what), "above the site limit MaxGrace=%ld",
			 max_grace);
		return elastic__opt_fail(err, ELASTIC_OPT_GRACE, val, what, allowed);
	}
	snprintf(val, sizeof(val), "%ld", req->weight);
	snprintf(allowed, sizeof(allowed), ELASTIC__WEIGHT_ALLOWED);
	if (req->weight < 1 || req->weight > ELASTIC_WEIGHT_MAX)
		return elastic__opt_fail(err, ELASTIC_OPT_WEIGHT, val, "out of range",
					 allowed);
	return _check_sizes(req, sizes_given, err);
}

int elastic_request_size_ok(const struct elastic_request *req, long n)
{
	return elastic_sizes_allows(&req->sizes, req->min_gpus, req->max_gpus, n);
}

static const char *_getenv(const char *name)
{
	return getenv(name);
}

/* A decimal in [lo, hi] from var (unset or empty: keeps *out). */
static int _env_num(const char *(*get)(const char *), const char *var, long lo, long hi,
		    long *out, elastic_error_t *err)
{
	const char *v = get(var);
	long x;

	if (!v || !*v)
		return 0;
	if (elastic__decimal(v, strlen(v), &x) != 0 || x < lo || x > hi)
		return _fail(err, EINVAL, "%s='%.64s': expected an integer in %ld..%ld",
			     var, v, lo, hi);
	*out = x;
	return 0;
}

int elastic_request_from_env(struct elastic_request *req,
			     const char *(*get)(const char *), elastic_error_t *err)
{
	struct elastic_request r = {1, ELASTIC_GPUS_LIMIT, 30, 1, {ELASTIC_SIZES_ANY}};
	elastic_error_t sub;
	const char *v;

	if (!get)
		get = _getenv;
	if (_env_num(get, ELASTIC_ENV_MIN_GPUS, 1, ELASTIC_GPUS_LIMIT, &r.min_gpus,
		     err) ||
	    _env_num(get, ELASTIC_ENV_MAX_GPUS, r.min_gpus, ELASTIC_GPUS_LIMIT,
		     &r.max_gpus, err) ||
	    _env_num(get, ELASTIC_ENV_GRACE, 1, ELASTIC_GRACE_LIMIT, &r.grace, err) ||
	    _env_num(get, ELASTIC_ENV_WEIGHT, 1, ELASTIC_WEIGHT_MAX, &r.weight, err))
		return -1;
	if ((v = get(ELASTIC_ENV_SIZES)) && *v &&
	    elastic_sizes_parse(v, ',', &r.sizes, &sub))
		return _fail(err, EINVAL,
			     "%s='%.64s': %s (expected any, pow2 or N,N,...)",
			     ELASTIC_ENV_SIZES, v, sub.text);
	/* No MIN given (a plain mpirun): the smallest allowed size. */
	if (!((v = get(ELASTIC_ENV_MIN_GPUS)) && *v) &&
	    r.sizes.kind == ELASTIC_SIZES_LIST)
		r.min_gpus = r.sizes.v[0];
	if (elastic_request_check_limits(&r, ELASTIC_GPUS_LIMIT, ELASTIC_GRACE_LIMIT,
					 &sub)) {
		char sizes[ELASTIC_TAG_MAX] = "?";
		elastic_sizes_format(&r.sizes, ',', sizes, sizeof(sizes));
		return _fail(err, EINVAL,
			     "the job's environment %s=%ld %s=%ld %s=%.64s: %s",
			     ELASTIC_ENV_MIN_GPUS, r.min_gpus, ELASTIC_ENV_MAX_GPUS,
			     r.max_gpus, ELASTIC_ENV_SIZES, sizes, sub.text);
	}
	*req = r;
	return 0;
}

/* ---- the tag ------------------------------------------------------------------ */

int elastic_tag_is_tag(const char *text)
{
	return text && strncmp(text, ELASTIC_TAG_PREFIX, strlen(ELASTIC_TAG_PREFIX)) == 0;
}

int elastic_tag_format(const struct elastic_request *req, char *buf, size_t size)
{
	char sizes[ELASTIC_TAG_MAX];
	int n;

	if (elastic_sizes_format(&req->sizes, '/', sizes, sizeof(sizes)) < 0)
		return -1;
	n = snprintf(buf, size, "%smin=%ld,max=%ld,grace=%ld,sizes=%s,weight=%ld",
		     ELASTIC_TAG_PREFIX, req->min_gpus, req->max_gpus, req->grace, sizes,
		     req->weight);
	if (n < 0 || (size_t)n >= size)
		return errno = ENOSPC, -1;
	return n;
}

static const char *const _tag_keys[] = {"min", "max", "grace", "sizes", "weight"};
enum { K_MIN, K_MAX, K_GRACE, K_SIZES, K_WEIGHT, K_N };

/* One key=value of the tag into r. */
static int _tag_item(const char *tag, const char *p, size_t n, int seen[K_N],
		     struct elastic_request *r, elastic_error_t *err)
{
	const char *eq = memchr(p, '=', n), *v;
	char buf[ELASTIC_TAG_MAX];
	size_t klen, vlen;
	long num = 0;
	int k;

	if (!eq)
		return _fail(err, EINVAL, "elastic tag '%s': '%.*s' is not key=value",
			     tag, (int)n, p);
	klen = (size_t)(eq - p);
	v = eq + 1;
	vlen = n - klen - 1;
	for (k = 0; k < K_N; k++)
		if (strlen(_tag_keys[k]) == klen && strncmp(_tag_keys[k], p, klen) == 0)
			break;
	if (k == K_N)
		return _fail(err, EINVAL, "elastic tag '%s': unknown key '%.*s'", tag,
			     (int)klen, p);
	if (seen[k]++)
		return _fail(err, EINVAL, "elastic tag '%s': key '%s' repeated", tag,
			     _tag_keys[k]);
	if (k == K_SIZES) {
		memcpy(buf, v, vlen);
		buf[vlen] = '\0';
		if (elastic_sizes_parse(buf, '/', &r->sizes, NULL) < 0)
			return _fail(err, EINVAL, "elastic tag '%s': bad sizes '%s'", tag,
				     buf);
		return 0;
	}
	if (elastic__decimal(v, vlen, &num) != 0 || (vlen > 1 && v[0] == '0'))
		return _fail(err, EINVAL, "elastic tag '%s': %s='%.*s' is not a number",
			     tag, _tag_keys[k], (int)vlen, v);
	*(k == K_MIN	 ? &r->min_gpus
	  : k == K_MAX	 ? &r->max_gpus
	  : k == K_GRACE ? &r->grace
			 : &r->weight) = num;
	return 0;
}

int elastic_tag_parse(const char *tag, struct elastic_request *req, elastic_error_t *err)
{
	struct elastic_request r = {.weight = 1};
	elastic_error_t sub;
	int seen[K_N] = {0};

	if (!tag)
		return _fail(err, EINVAL, "no elastic tag");
	if (!elastic_tag_is_tag(tag))
		return _fail(err, EINVAL,
			     "'%.64s' is not an elastic tag (no '%s' prefix)", tag,
			     ELASTIC_TAG_PREFIX);
	if (strlen(tag) >= ELASTIC_TAG_MAX)
		return _fail(err, EINVAL, "elastic tag longer than %d bytes",
			     ELASTIC_TAG_MAX - 1);
	for (const char *p = tag + strlen(ELASTIC_TAG_PREFIX);;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (_tag_item(tag, p, n, seen, &r, err) < 0)
			return -1;
		if (!comma)
			break;
		p = comma + 1;
	}
	for (int k = 0; k < K_N; k++)
		if (!seen[k] && k != K_WEIGHT)
			return _fail(err, EINVAL, "elastic tag '%s': key '%s' missing",
				     tag, _tag_keys[k]);
	if (elastic_request_check_limits(&r, ELASTIC_GPUS_LIMIT, ELASTIC_GRACE_LIMIT,
					 &sub) < 0)
		return _fail(err, EINVAL, "elastic tag '%s': %s", tag, sub.text);
	*req = r;
	return 0;
}

/* ---- snapshot names --------------------------------------------------------------- */

int elastic_snap_prefix(char *buf, size_t size, const char *dir, const char *job,
			const char *stamp)
{
	int has = stamp && *stamp;
	int n = snprintf(buf, size, "%s/" ELASTIC_SNAP_BASE "%s-%s%s", dir, job,
			 has ? stamp : "", has ? "-" : "");
	if (n < 0 || (size_t)n >= size)
		return errno = ENAMETOOLONG, -1;
	return n;
}

int elastic_snap_file(char *buf, size_t size, const char *prefix, uint64_t launch,
		      uint32_t host, int slot)
{
	int n = snprintf(buf, size, "%s%016llx-%08x-%d" ELASTIC_SNAP_SUFFIX, prefix,
			 (unsigned long long)launch, (unsigned)host, slot);
	if (n < 0 || (size_t)n >= size)
		return errno = ENAMETOOLONG, -1;
	return n;
}

int elastic_snap_job_of(const char *name, unsigned long *job)
{
	size_t bl = strlen(ELASTIC_SNAP_BASE), sl = strlen(ELASTIC_SNAP_SUFFIX);
	size_t nl = strlen(name), dl;
	long v;

	if (nl <= bl + sl || strncmp(name, ELASTIC_SNAP_BASE, bl) ||
	    strcmp(name + nl - sl, ELASTIC_SNAP_SUFFIX))
		return 0;
	dl = strspn(name + bl, "0123456789");
	if (!dl || name[bl + dl] != '-' || elastic__decimal(name + bl, dl, &v) != 0 || !v)
		return 0;
	*job = (unsigned long)v;
	return 1;
}
