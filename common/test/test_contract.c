/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/test/test_contract.c: the job contract's one test table: sizes in every spelling
 * (option, ELASTIC_SIZES, tag), what they allow, the task environment, snapshot names. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "contract.h"

/* One row: a size text; what it parses to (NULL: refused, with err
 * containing `why`); for MIN..MAX, the allowed counts and the fit of n. */
struct row {
	const char *text;
	const char *canon; /* format with ',' (NULL: refused) */
	const char *why;   /* part of the error text when refused */
	long min, max;
	const char *allowed; /* elastic_sizes_list in [min, max], ',' joined */
	long n, fit;	     /* elastic_sizes_fit(min, max, n) */
};

static const struct row rows[] = {
	{"any", "any", NULL, 2, 5, "", 4, 4},
	{"any", "any", NULL, 2, 5, "", 9, 5},
	{"any", "any", NULL, 2, 5, "", 1, 0},
	{"pow2", "pow2", NULL, 1, 8, "1,2,4,8", 7, 4},
	{"pow2", "pow2", NULL, 3, 16, "4,8,16", 3, 0}, /* 2 is below MIN */
	{"pow2", "pow2", NULL, 3, 16, "4,8,16", 20, 16},
	{"8,2,4", "2,4,8", NULL, 1, 8, "2,4,8", 7, 4},
	{"8,2,4", "2,4,8", NULL, 3, 8, "4,8", 3, 0},
	{"6", "6", NULL, 1, 8, "6", 6, 6},
	{"4096", "4096", NULL, 1, 4096, "4096", 5000, 4096},
	{"4097", NULL, "4097 is too large"},
	{"0", NULL, "0 is not a GPU count"},
	{"2,,4", NULL, "empty list entry"},
	{"2,4,", NULL, "empty list entry"},
	{"", NULL, "empty list"},
	{"2,x", NULL, "'x' is not a GPU count"},
	{"-2", NULL, "'-2' is not a GPU count"},
	{"4,2,4", NULL, "4 is listed twice"},
	{"ANY", NULL, "'ANY' is not a GPU count"},
	{"99999999999999999999", NULL, "is too large"},
};

static void _join(const long *v, int n, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%ld", i ? "," : "",
					 v[i]);
}

static void sizes_table(void **state)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct elastic_sizes s = {.kind = ELASTIC_SIZES_LIST, .n = 1, .v = {77}};
		elastic_error_t err = {""};
		char buf[256];
		long list[ELASTIC_MAX_SIZES];
		int n, rc = elastic_sizes_parse(r->text, ',', &s, &err);

		print_message("row %zu: '%s'\n", i, r->text);
		if (!r->canon) {
			assert_int_equal(rc, -1);
			assert_int_equal(errno, EINVAL);
			assert_non_null(strstr(err.text, r->why));
			assert_int_equal(s.n, 1); /* unchanged on error */
			assert_int_equal(s.v[0], 77);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_true(elastic_sizes_format(&s, ',', buf, sizeof(buf)) > 0);
		assert_string_equal(buf, r->canon);
		n = elastic_sizes_list(&s, r->min, r->max, list, ELASTIC_MAX_SIZES);
		assert_true(n >= 0);
		_join(list, n, buf, sizeof(buf));
		assert_string_equal(buf, r->allowed);
		assert_int_equal(elastic_sizes_fit(&s, r->min, r->max, r->n), r->fit);
		/* allows() agrees with the list and the bounds, everywhere. */
		for (long k = 0; k <= r->max + 1 && k < 64; k++) {
			int in = k >= r->min && k <= r->max;
			if (s.kind != ELASTIC_SIZES_ANY) {
				in = 0;
				for (int j = 0; j < n; j++)
					in |= list[j] == k;
			}
			assert_int_equal(elastic_sizes_allows(&s, r->min, r->max, k), in);
		}
	}
}

static void sizes_separators(void **state)
{
	struct elastic_sizes s;
	char buf[32];

	assert_int_equal(elastic_sizes_parse("8/2/4", '/', &s, NULL), 0);
	assert_int_equal(elastic_sizes_format(&s, '/', buf, sizeof(buf)), 5);
	assert_string_equal(buf, "2/4/8");
	/* The other separator is not a separator. */
	assert_int_equal(elastic_sizes_parse("2,4", '/', &s, NULL), -1);
	assert_int_equal(elastic_sizes_format(&s, '/', buf, 3), -1);
	assert_int_equal(errno, ENOSPC);
}

static void sizes_limit_of_entries(void **state)
{
	char text[ELASTIC_MAX_SIZES * 5 + 8] = "";
	struct elastic_sizes s;
	elastic_error_t err;
	size_t used = 0;

	for (int i = 1; i <= ELASTIC_MAX_SIZES + 1; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%d",
					 i > 1 ? "," : "", i);
	assert_int_equal(elastic_sizes_parse(text, ',', &s, &err), -1);
	assert_non_null(strstr(err.text, "more than 64 entries"));
	*strrchr(text, ',') = '\0';
	assert_int_equal(elastic_sizes_parse(text, ',', &s, &err), 0);
	assert_int_equal(s.n, ELASTIC_MAX_SIZES);
}

static const char *_env[8][2];

static const char *_get(const char *name)
{
	for (int i = 0; i < 8 && _env[i][0]; i++)
		if (!strcmp(_env[i][0], name))
			return _env[i][1];
	return NULL;
}

static int _from_env(const char *min, const char *max, const char *sizes,
		     struct elastic_request *r, elastic_error_t *err)
{
	memset(_env, 0, sizeof(_env));
	_env[0][0] = ELASTIC_ENV_MIN_GPUS, _env[0][1] = min;
	_env[1][0] = ELASTIC_ENV_MAX_GPUS, _env[1][1] = max;
	_env[2][0] = ELASTIC_ENV_SIZES, _env[2][1] = sizes;
	return elastic_request_from_env(r, _get, err);
}

static void request_from_env(void **state)
{
	struct elastic_request r;
	elastic_error_t err;

	assert_int_equal(_from_env(NULL, NULL, NULL, &r, &err), 0);
	assert_int_equal(r.min_gpus, 1);
	assert_int_equal(r.max_gpus, ELASTIC_GPUS_LIMIT);
	assert_int_equal(r.sizes.kind, ELASTIC_SIZES_ANY);
	assert_int_equal(_from_env("2", "8", "pow2", &r, &err), 0);
	assert_true(elastic_request_size_ok(&r, 4));
	assert_false(elastic_request_size_ok(&r, 1)); /* pow2, but below MIN */
	assert_false(elastic_request_size_ok(&r, 16));
	assert_int_equal(_from_env("2", "8", "2,4,8", &r, &err), 0);
	assert_int_equal(r.sizes.n, 3);

	/* Refusals, each with words of its error. */
	static const struct {
		const char *min, *max, *sizes, *expect;
	} bad[] = {
		{"0", "8", NULL, "ELASTIC_MIN_GPUS='0': expected an integer in 1..4096"},
		{"4", "2", NULL, "ELASTIC_MAX_GPUS='2': expected an integer in 4..4096"},
		{"1", "5000", NULL, "ELASTIC_MAX_GPUS"},
		{"2", "8", "1,2", "1 is outside --elastic-gpus=2-8"},
		{"2", "8", "2,x",
		 "ELASTIC_SIZES='2,x': 'x' is not a GPU count (expected any, pow2 or N,N,...)"},
		{"3", "3", "pow2", "MIN=3 GPUs, which is not one of its sizes"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (_from_env(bad[i].min, bad[i].max, bad[i].sizes, &r, &err) != -1)
			fail_msg("MIN %s MAX %s SIZES %s was accepted", bad[i].min,
				 bad[i].max, bad[i].sizes ? bad[i].sizes : "(unset)");
		if (!strstr(err.text, bad[i].expect))
			fail_msg("message '%s' lacks '%s'", err.text, bad[i].expect);
	}
	/* No MIN: a list starts at its smallest size. */
	assert_int_equal(_from_env(NULL, NULL, "8,4", &r, &err), 0);
	assert_int_equal(r.min_gpus, 4);
}

static void tag_uses_the_same_sizes(void **state)
{
	struct elastic_request r;
	elastic_error_t err;
	char tag[ELASTIC_TAG_MAX];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char sizes[128];
		const char *p;
		size_t k = 0;
		/* The row's text with '/' separators, inside a tag with MIN 1. */
		for (p = rows[i].text; *p && k < sizeof(sizes) - 1; p++)
			sizes[k++] = *p == ',' ? '/' : *p;
		sizes[k] = '\0';
		snprintf(tag, sizeof(tag), "elastic:min=1,max=4096,grace=5,sizes=%s",
			 sizes);
		int ok = elastic_tag_parse(tag, &r, &err) == 0;
		/* Refused sizes are refused in the tag too; accepted ones may
		 * still be refused there because MIN=1 must be one of them. */
		if (!rows[i].canon)
			assert_false(ok);
		else if (ok)
			assert_true(elastic_request_size_ok(&r, 1));
	}
	assert_int_equal(
		elastic_tag_parse("elastic:min=2,max=8,grace=5,sizes=2/8", &r, &err), 0);
	assert_int_equal(elastic_tag_format(&r, tag, sizeof(tag)), 46);
	assert_string_equal(tag, "elastic:min=2,max=8,grace=5,sizes=2/8,weight=1");
}

static void snapshot_names(void **state)
{
	char prefix[64], path[128];
	unsigned long job = 0;

	assert_int_equal(elastic_snap_prefix(prefix, sizeof(prefix), ELASTIC_SNAP_DIR,
					     "42", "1700000000"),
			 (int)strlen("/dev/shm/elastic-42-1700000000-"));
	assert_string_equal(prefix, "/dev/shm/elastic-42-1700000000-");
	assert_true(elastic_snap_prefix(prefix, sizeof(prefix), "/x", "7", NULL) > 0);
	assert_string_equal(prefix, "/x/elastic-7-");
	assert_true(elastic_snap_file(path, sizeof(path), prefix, 0x1234, 0xabcdef01u,
				      1) > 0);
	assert_string_equal(path, "/x/elastic-7-0000000000001234-abcdef01-1.snap");
	assert_int_equal(elastic_snap_job_of(strrchr(path, '/') + 1, &job), 1);
	assert_int_equal(job, 7);
	assert_int_equal(elastic_snap_file(path, 10, prefix, 1, 1, 0), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_int_equal(elastic_snap_job_of("elastic-42-1700000000-00-00-0.snap", &job),
			 1);
	assert_int_equal(job, 42);
	assert_int_equal(elastic_snap_job_of("elastic-job-0000-00-0.snap", &job), 0);
	assert_int_equal(elastic_snap_job_of("elastic-42-1.tmp", &job), 0);
	assert_int_equal(elastic_snap_job_of("elastic-0-1.snap", &job), 0);
	assert_int_equal(elastic_snap_job_of("other-42-1.snap", &job), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_table),
		cmocka_unit_test(sizes_separators),
		cmocka_unit_test(sizes_limit_of_entries),
		cmocka_unit_test(request_from_env),
		cmocka_unit_test(tag_uses_the_same_sizes),
		cmocka_unit_test(snapshot_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
