/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/test/test_elastic_conf.c: unit tests of elastic.conf loading, the elastic
 * request and the job tag. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "request.h"
#include "tres.h"

static char *_write_tmp(const char *text)
{
	static char path[64];
	int fd;
	snprintf(path, sizeof(path), "/tmp/test_elastic_conf.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void defaults_are_documented_values(void **state)
{
	struct elastic_site_conf c;
	assert_int_equal(elastic_site_conf_defaults(&c, NULL), 0);
	assert_string_equal(c.controller_host, "localhost");
	assert_int_equal(c.controller_port, 6820);
	assert_int_equal(c.max_gpus_per_job, 64);
	assert_string_equal(c.allowed_partitions, "");
	assert_int_equal(c.default_grace, 30);
	assert_int_equal(c.max_grace, 600);
	assert_int_equal(c.policy_mode, ELASTIC_POLICY_PRIORITY);
	assert_int_equal(c.tick_seconds, 2);
	assert_string_equal(c.grant_qos, "elastic");
	assert_string_equal(c.grant_name_prefix, "elastic:");
	assert_int_equal(c.hysteresis, 1);
	assert_int_equal(c.cool_down, 10);
	assert_int_equal(c.channel_idle_timeout, 10);
	assert_int_equal(c.debug, 0);
	assert_int_equal(elastic_site_conf_check(&c, NULL, NULL), 0);
	elastic_site_conf_free(&c);
	elastic_site_conf_free(NULL);
}

static void load_reads_every_key(void **state)
{
	struct elastic_site_conf c;
	elastic_error_t err = {""};
	char *path = _write_tmp("# site\nControllerHost=ctl1\nControllerPort=7001\n"
				"MaxGpusPerJob=8\nAllowedPartitions=gpu,debug\n"
				"AllowedAccounts=acct_a\nAllowedUsers=alice, bob\n"
				"DefaultGrace=20\nMaxGrace=120\nPolicyMode=fairshare\n"
				"TickSeconds=1\nGrantQos=egrant\nGrantNamePrefix=eg:\n"
				"Hysteresis=2\nCoolDown=0\nMungeSocket=/run/m.sock\n"
				"LogFile=/var/log/elasticd.log\nDebug=yes\n");
	assert_int_equal(elastic_site_conf_load(&c, path, 0, &err), 0);
	assert_string_equal(c.controller_host, "ctl1");
	assert_int_equal(c.controller_port, 7001);
	assert_int_equal(c.max_gpus_per_job, 8);
	assert_int_equal(c.default_grace, 20);
	assert_int_equal(c.max_grace, 120);
	assert_int_equal(c.policy_mode, ELASTIC_POLICY_FAIRSHARE);
	assert_int_equal(c.tick_seconds, 1);
	assert_string_equal(c.grant_qos, "egrant");
	assert_string_equal(c.grant_name_prefix, "eg:");
	assert_int_equal(c.hysteresis, 2);
	assert_int_equal(c.cool_down, 0);
	assert_string_equal(c.munge_socket, "/run/m.sock");
	assert_string_equal(c.log_file, "/var/log/elasticd.log");
	assert_int_equal(c.debug, 1);
	assert_true(elastic_list_allows(c.allowed_partitions, "debug"));
	assert_false(elastic_list_allows(c.allowed_partitions, "cpu"));
	assert_true(elastic_list_allows(c.allowed_users, "bob"));
	assert_false(elastic_list_allows(c.allowed_users, "bo"));
	assert_false(elastic_list_allows(c.allowed_users, NULL));
	assert_true(elastic_list_allows("", "anyone"));
	assert_true(elastic_list_allows(NULL, "anyone"));
	elastic_site_conf_free(&c);
	unlink(path);
}

static void load_errors_name_file_and_line(void **state)
{
	static const struct {
		const char *text, *expect;
	} cases[] = {
		{"MaxGpusPerJob=8\nMaxGPUs=3\n", ":2: unknown key 'MaxGPUs'"},
		{"MaxGpusPerJob=0\n", ":1: MaxGpusPerJob=0 is out of range [1, 4096]"},
		{"PolicyMode=lottery\n", ":1: PolicyMode=lottery is not one of"},
		{"DefaultGrace=700\n", "DefaultGrace=700 is above MaxGrace=600"},
		{"ControllerHost=a:1\n", "ControllerHost=a:1 is not a host name"},
		{"GrantNamePrefix=\n", "GrantNamePrefix must not be empty"},
		{"TickSecond=2\n",
		 ":1: unknown key 'TickSecond' (did you mean 'TickSeconds'?)"},
		{"TickSeconds=2\nMaxGrace=60\nTickSeconds=3\n",
		 ":3: TickSeconds given a second time (first at "},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct elastic_site_conf c;
		elastic_error_t err = {""};
		char *path = _write_tmp(cases[i].text);
		assert_int_equal(elastic_site_conf_load(&c, path, 0, &err), -1);
		assert_int_equal(errno, EINVAL);
		if (!strstr(err.text, cases[i].expect) || !strstr(err.text, path))
			fail_msg("case %zu: got '%s', want '%s' and the path", i,
				 err.text, cases[i].expect);
		unlink(path);
	}
}

/* An unknown key among the many keys of elastic.conf: the list of known
 * keys is cut to fit the message, which still ends in its parenthesis. */
static void unknown_key_message_is_whole(void **state)
{
	struct elastic_site_conf c;
	elastic_error_t err = {""};
	char *path = _write_tmp("Bogus=1\n");
	size_t n;

	assert_int_equal(elastic_site_conf_load(&c, path, 0, &err), -1);
	n = strlen(err.text);
	if (!strstr(err.text, ":1: unknown key 'Bogus' (known: ControllerHost, ") ||
	    !strstr(err.text, ", ...)") || err.text[n - 1] != ')' ||
	    n + 1 >= sizeof(err.text))
		fail_msg("cut or unclosed: '%s'", err.text);
	unlink(path);
}

static void missing_file(void **state)
{
	struct elastic_site_conf c;
	elastic_error_t err = {""};
	assert_int_equal(elastic_site_conf_load(&c, "/nonexistent/elastic.conf", 0, &err),
			 -1);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err.text, "/nonexistent/elastic.conf"));
	assert_int_equal(elastic_site_conf_load(&c, "/nonexistent/elastic.conf", 1, &err),
			 1);
	assert_int_equal(c.max_gpus_per_job, 64);
	elastic_site_conf_free(&c);
}

static void default_path_follows_env(void **state)
{
	char buf[256];
	unsetenv("ELASTIC_CONF");
	unsetenv("SLURM_CONF");
	assert_int_equal(elastic_site_conf_path(buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, ELASTIC_SLURM_SYSCONFDIR "/elastic.conf");
	setenv("SLURM_CONF", "/var/lib/t/etc/slurm.conf", 1);
	assert_int_equal(elastic_site_conf_path(buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "/var/lib/t/etc/elastic.conf");
	setenv("ELASTIC_CONF", "/x/e.conf", 1);
	assert_int_equal(elastic_site_conf_path(buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "/x/e.conf");
	assert_int_equal(elastic_site_conf_path(buf, 4, NULL), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	unsetenv("ELASTIC_CONF");
	unsetenv("SLURM_CONF");
}

static struct elastic_site_conf *_site(long max_gpus, long max_grace)
{
	static struct elastic_site_conf c;
	elastic_site_conf_free(&c);
	assert_int_equal(elastic_site_conf_defaults(&c, NULL), 0);
	c.max_gpus_per_job = max_gpus;
	c.max_grace = max_grace;
	return &c;
}

static void valid_options(void **state)
{
	struct elastic_request r;
	struct elastic_site_conf *site = _site(8, 600);
	char buf[ELASTIC_TAG_MAX];

	assert_int_equal(
		elastic_request_from_options(&r, "1-8", NULL, NULL, NULL, site, NULL), 0);
	assert_int_equal(r.min_gpus, 1);
	assert_int_equal(r.max_gpus, 8);
	assert_int_equal(r.grace, 30);
	assert_int_equal(r.weight, 1);
	assert_int_equal(r.sizes.kind, ELASTIC_SIZES_ANY);

	/* MAX defaults to MIN. */
	assert_int_equal(
		elastic_request_from_options(&r, "4", "45", "pow2", "3", site, NULL), 0);
	assert_int_equal(r.min_gpus, 4);
	assert_int_equal(r.max_gpus, 4);
	assert_int_equal(r.grace, 45);
	assert_int_equal(r.weight, 3);
	assert_int_equal(r.sizes.kind, ELASTIC_SIZES_POW2);

	/* Lists are sorted. */
	assert_int_equal(
		elastic_request_from_options(&r, "2-8", NULL, "8,2,6", NULL, site, NULL),
		0);
	assert_int_equal(r.sizes.kind, ELASTIC_SIZES_LIST);
	assert_int_equal(r.sizes.n, 3);
	assert_int_equal(r.sizes.v[0], 2);
	assert_int_equal(r.sizes.v[2], 8);
	assert_int_equal(elastic_sizes_format(&r.sizes, ',', buf, sizeof(buf)), 5);
	assert_string_equal(buf, "2,6,8");
	assert_true(elastic_request_size_ok(&r, 6));
	assert_false(elastic_request_size_ok(&r, 4));
	assert_false(elastic_request_size_ok(&r, 10));

	/* Without site limits: the built-in sanity bounds. */
	assert_int_equal(
		elastic_request_from_options(&r, "1-4096", NULL, NULL, NULL, NULL, NULL),
		0);
}

/* Every bad input: -1, EINVAL, one line naming the option, the value and the
 * allowed range; the request is left as it was. */
static void bad_options(void **state)
{
	static const struct {
		const char *gpus, *grace, *sizes, *weight, *expect;
	} cases[] = {
		{"abc", NULL, NULL, NULL,
		 "--elastic-gpus=abc: not a whole number of GPUs (allowed: MIN[-MAX] with 1 <= MIN <= MAX <= 8)"},
		{"", NULL, NULL, NULL, "--elastic-gpus=: not a whole number"},
		{"0", NULL, NULL, NULL,
		 "--elastic-gpus=0: MIN must be at least 1 (allowed"},
		{"0-4", NULL, NULL, NULL, "--elastic-gpus=0-4: MIN must be at least 1"},
		{"-2", NULL, NULL, NULL,
		 "--elastic-gpus=-2: GPU counts cannot be negative"},
		{"2--4", NULL, NULL, NULL, "--elastic-gpus=2--4: MAX cannot be negative"},
		{"2-", NULL, NULL, NULL, "--elastic-gpus=2-: MAX missing"},
		{"1-2-3", NULL, NULL, NULL,
		 "--elastic-gpus=1-2-3: expected MIN or MIN-MAX"},
		{"4-2", NULL, NULL, NULL,
		 "--elastic-gpus=4-2: MIN 4 is greater than MAX 2"},
		{"1-9", NULL, NULL, NULL,
		 "--elastic-gpus=1-9: MAX 9 is above the site limit MaxGpusPerJob=8 (allowed: MIN[-MAX] with 1 <= MIN <= MAX <= 8)"},
		{"9", NULL, NULL, NULL,
		 "--elastic-gpus=9: 9 GPUs is above the site limit"},
		{"1-99999999999999999999999", NULL, NULL, NULL,
		 "--elastic-gpus=1-99999999999999999999999: number too large"},
		{" 2", NULL, NULL, NULL, "--elastic-gpus= 2: not a whole number"},
		{"2.5", NULL, NULL, NULL, "--elastic-gpus=2.5: not a whole number"},
		{"1-4", "0", NULL, NULL,
		 "--elastic-grace=0: must be at least 1 (allowed: 1 to 600 seconds)"},
		{"1-4", "-5", NULL, NULL, "--elastic-grace=-5: cannot be negative"},
		{"1-4", "10s", NULL, NULL, "--elastic-grace=10s: not a whole number"},
		{"1-4", "601", NULL, NULL,
		 "--elastic-grace=601: too large (allowed: 1 to 600"},
		{"1-4", "99999999999999999999", NULL, NULL,
		 "--elastic-grace=99999999999999999999: too large"},
		{"1-4", NULL, "odd", NULL,
		 "--elastic-sizes=odd: 'odd' is not a GPU count (allowed: any, pow2, or a comma-separated list"},
		{"1-4", NULL, "1,,2", NULL, "--elastic-sizes=1,,2: empty list entry"},
		{"1-4", NULL, "1,2,2", NULL, "--elastic-sizes=1,2,2: 2 is listed twice"},
		{"1-4", NULL, "0,1", NULL, "--elastic-sizes=0,1: 0 is not a GPU count"},
		{"1-4", NULL, "1,8", NULL,
		 "--elastic-sizes=1,8: 8 is outside --elastic-gpus=1-4"},
		{"1-4", NULL, "2,4", NULL,
		 "--elastic-sizes=2,4: the job starts at MIN=1 GPUs, which is not one of its sizes"},
		{"1-4", NULL, "4,2", NULL,
		 "--elastic-sizes=4,2: the job starts at MIN=1 GPUs, which is not one of its sizes"},
		{"3-8", NULL, "pow2", NULL,
		 "--elastic-sizes=pow2: the job starts at MIN=3 GPUs"},
		{"1-4", NULL, NULL, "0",
		 "--elastic-policy-weight=0: must be at least 1 (allowed: 1 to 1000)"},
		{"1-4", NULL, NULL, "1001", "--elastic-policy-weight=1001: too large"},
		{NULL, "30", NULL, NULL,
		 "--elastic-grace needs --elastic-gpus=MIN[-MAX]"},
		{NULL, NULL, "pow2", NULL, "--elastic-sizes needs --elastic-gpus"},
	};
	struct elastic_site_conf *site = _site(8, 600);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct elastic_request r = {.min_gpus = 77};
		elastic_error_t err = {""};
		errno = 0;
		assert_int_equal(elastic_request_from_options(
					 &r, cases[i].gpus, cases[i].grace,
					 cases[i].sizes, cases[i].weight, site, &err),
				 -1);
		assert_int_equal(errno, EINVAL);
		if (!strstr(err.text, cases[i].expect))
			fail_msg("case %zu: got '%s', want '%s'", i, err.text,
				 cases[i].expect);
		assert_null(strchr(err.text, '\n'));
		assert_int_equal(r.min_gpus, 77);
	}
}

static void tag_round_trip(void **state)
{
	struct elastic_request r, back;
	char tag[ELASTIC_TAG_MAX];

	assert_int_equal(
		elastic_request_from_options(&r, "1-8", NULL, NULL, NULL, NULL, NULL), 0);
	assert_true(elastic_tag_format(&r, tag, sizeof(tag)) > 0);
	assert_string_equal(tag, "elastic:min=1,max=8,grace=30,sizes=any,weight=1");
	assert_true(elastic_tag_is_tag(tag));

	assert_int_equal(
		elastic_request_from_options(&r, "2-8", "60", "8,4,2", "3", NULL, NULL),
		0);
	assert_true(elastic_tag_format(&r, tag, sizeof(tag)) > 0);
	assert_string_equal(tag, "elastic:min=2,max=8,grace=60,sizes=2/4/8,weight=3");
	assert_int_equal(elastic_tag_parse(tag, &back, NULL), 0);
	assert_int_equal(back.min_gpus, 2);
	assert_int_equal(back.max_gpus, 8);
	assert_int_equal(back.grace, 60);
	assert_int_equal(back.weight, 3);
	assert_int_equal(back.sizes.kind, ELASTIC_SIZES_LIST);
	assert_int_equal(back.sizes.n, 3);
	assert_int_equal(back.sizes.v[1], 4);

	/* Any order, weight optional. */
	assert_int_equal(
		elastic_tag_parse("elastic:sizes=pow2,grace=5,max=16,min=4", &back, NULL),
		0);
	assert_int_equal(back.sizes.kind, ELASTIC_SIZES_POW2);
	assert_int_equal(back.weight, 1);
	assert_int_equal(back.max_gpus, 16);

	assert_int_equal(elastic_tag_format(&r, tag, 10), -1);
	assert_int_equal(errno, ENOSPC);
}

static void bad_tags(void **state)
{
	static const struct {
		const char *tag, *expect;
	} cases[] = {
		{"hello", "not an elastic tag"},
		{"elastic:", "is not key=value"},
		{"elastic:min=1,max=8,grace=30", "key 'sizes' missing"},
		{"elastic:min=1,max=8,grace=30,sizes=any,weight=1,x=2",
		 "unknown key 'x'"},
		{"elastic:min=1,min=2,max=8,grace=30,sizes=any", "key 'min' repeated"},
		{"elastic:min=01,max=8,grace=30,sizes=any", "min='01' is not a number"},
		{"elastic:min=-1,max=8,grace=30,sizes=any", "min='-1' is not a number"},
		{"elastic:min=0,max=8,grace=30,sizes=any", "MIN must be at least 1"},
		{"elastic:min=4,max=2,grace=30,sizes=any", "MIN 4 is greater than MAX 2"},
		{"elastic:min=1,max=8,grace=0,sizes=any", "must be at least 1"},
		{"elastic:min=1,max=8,grace=30,sizes=1,2", "'2' is not key=value"},
		{"elastic:min=1,max=8,grace=30,sizes=1/16", "16 is outside"},
		{"elastic:min=1,max=8,grace=30,sizes=x", "bad sizes 'x'"},
		{"elastic:min=1,max=99999,grace=30,sizes=any", "above the site limit"},
		{"elastic:min=1,max=8,grace=30,sizes=any,weight=0", "out of range"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct elastic_request r = {.min_gpus = 77};
		elastic_error_t err = {""};
		errno = 0;
		assert_int_equal(elastic_tag_parse(cases[i].tag, &r, &err), -1);
		assert_int_equal(errno, EINVAL);
		if (!strstr(err.text, cases[i].expect))
			fail_msg("case %zu: got '%s', want '%s'", i, err.text,
				 cases[i].expect);
		assert_int_equal(r.min_gpus, 77);
	}
	assert_int_equal(elastic_tag_parse(NULL, NULL, NULL), -1);
}

/* The text of $srcdir/../slurm-conf/NAME (malloc'd), or NULL if it is not
 * there (a build outside the source tree without it). */
static char *_read_slurm_conf_file(const char *name)
{
	const char *srcdir = getenv("srcdir");
	char path[4096], *text;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/../slurm-conf/%s", srcdir ? srcdir : ".", name);
	if (!(f = fopen(path, "r")))
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	assert_non_null(text = calloc(1, (size_t)n + 1));
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

/* The annotated slurm-conf/elastic.conf parses, holds every key with its
 * default, and elastic.conf(5) documents every key: docs cannot drift. */
static void shipped_example_and_man_page_match_the_table(void **state)
{
	const char *srcdir = getenv("srcdir");
	char path[4096], *man = NULL;
	struct elastic_site_conf ex, def;
	elastic_error_t err = {""};
	FILE *f;

	if (!srcdir)
		srcdir = ".";
	snprintf(path, sizeof(path), "%s/../slurm-conf/elastic.conf", srcdir);
	if (access(path, R_OK) != 0)
		skip();
	assert_int_equal(elastic_site_conf_load(&ex, path, 0, &err), 0);
	assert_int_equal(elastic_site_conf_defaults(&def, NULL), 0);
	assert_non_null(man = _read_slurm_conf_file("elastic.conf.5"));
	snprintf(path, sizeof(path), "%s/../slurm-conf/elastic.conf", srcdir);
	assert_non_null(f = fopen(path, "r"));
	{
		char text[16384];
		size_t got = fread(text, 1, sizeof(text) - 1, f);
		text[got] = '\0';
		for (const struct elastic_conf_key *k = elastic_site_conf_keys; k->name;
		     k++) {
			char line[128], entry[128];
			const char *a = (const char *)&ex + k->offset;
			const char *b = (const char *)&def + k->offset;
			snprintf(line, sizeof(line), "\n%s=", k->name);
			if (!strstr(text, line))
				fail_msg("slurm-conf/elastic.conf lacks %s", k->name);
			snprintf(entry, sizeof(entry), ".BI %s= ", k->name);
			snprintf(line, sizeof(line), ".BR %s= ", k->name);
			if (!strstr(man, entry) && !strstr(man, line))
				fail_msg("elastic.conf.5 does not document %s", k->name);
			if (k->type == ELASTIC_CONF_STRING) {
				if (strcmp(*(char *const *)a, *(char *const *)b) != 0)
					fail_msg(
						"slurm-conf/elastic.conf: %s is not the default",
						k->name);
			} else if (k->type == ELASTIC_CONF_INT) {
				if (*(const long *)a != *(const long *)b)
					fail_msg(
						"slurm-conf/elastic.conf: %s is not the default",
						k->name);
			} else if (*(const int *)a != *(const int *)b) {
				fail_msg("slurm-conf/elastic.conf: %s is not the default",
					 k->name);
			}
		}
	}
	fclose(f);
	free(man);
	elastic_site_conf_free(&ex);
	elastic_site_conf_free(&def);
}

/* The value elastic.conf(5) gives after "Default:" in the entry of key
 * (".BR 30 ." -> "30", "empty." -> ""), into buf; -1 if none. */
static int _man_default(const char *man, const char *key, char *buf, size_t size)
{
	char head[128];
	const char *p, *end, *d;
	size_t n;

	snprintf(head, sizeof(head), ".BI %s= ", key);
	if (!(p = strstr(man, head))) {
		snprintf(head, sizeof(head), ".BR %s= ", key);
		if (!(p = strstr(man, head)))
			return -1;
	}
	end = strstr(p + 1, "\n.TP");
	if (!end)
		end = strstr(p + 1, "\n.SH");
	if (!(d = strstr(p, "Default:")) || (end && d > end))
		return -1;
	d += strlen("Default:");
	while (*d == ' ' || *d == '\n')
		d++;
	if (strncmp(d, "empty", 5) == 0) {
		*buf = '\0';
		return 0;
	}
	if (strncmp(d, ".BR ", 4) != 0)
		return -1;
	d += 4;
	n = strcspn(d, " \n");
	snprintf(buf, size, "%.*s", (int)n, d);
	return 0;
}

/* elastic.conf(5) states, for every key, the default the code uses. */
static void man_page_defaults_are_the_built_in_ones(void **state)
{
	char *man, value[128];

	if (!(man = _read_slurm_conf_file("elastic.conf.5")))
		skip();
	for (const struct elastic_conf_key *k = elastic_site_conf_keys; k->name; k++) {
		if (_man_default(man, k->name, value, sizeof(value)) < 0)
			fail_msg("elastic.conf.5: no 'Default:' in the entry of %s",
				 k->name);
		if (strcmp(value, k->def ? k->def : "") != 0)
			fail_msg("elastic.conf.5: %s defaults to '%s', the code to '%s'",
				 k->name, value, k->def ? k->def : "");
	}
	free(man);
}

static void tres_gpu_counts(void **state)
{
	static const struct {
		const char *tres;
		int rc;
		long count;
	} cases[] = {
		{NULL, 0, 0},
		{"", 0, 0},
		{"cpu=2,mem=1000M,node=1", 0, 0},
		{"gres/gpu:4", 1, 4},
		{"gres/gpu", 1, 1},
		{"gres/gpu:a100", 1, 1},
		{"gres/gpu:a100:2", 1, 2},
		{"gres/gpu:2,gres/nic:1", 1, 2},
		{"gres/nic:1;gres/gpu:3", 1, 3},
		{"cpu=2,mem=1G,node=1,billing=2,gres/gpu=4", 1, 4},
		{"cpu=2,gres/gpu=4,gres/gpu:a100=4", 1, 4},
		{"gres/gpu:a100=1,gres/gpu:h100=2", 1, 3},
		{"gres/gpus:4", 0, 0},
		{"gres/gpu:0", 1, 0},
		{"gres/gpu:99999999999999999999", -1, 0},
		{"gres/gpu=", -1, 0},
		{"gres/gpu=x", -1, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long n = -7;
		int rc = elastic_tres_gpus(cases[i].tres, &n);
		if (rc != cases[i].rc || (rc >= 0 && n != cases[i].count))
			fail_msg("case %zu '%s': rc %d count %ld, want rc %d count %ld",
				 i, cases[i].tres ? cases[i].tres : "(null)", rc, n,
				 cases[i].rc, cases[i].count);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_are_documented_values),
		cmocka_unit_test(load_reads_every_key),
		cmocka_unit_test(load_errors_name_file_and_line),
		cmocka_unit_test(missing_file),
		cmocka_unit_test(default_path_follows_env),
		cmocka_unit_test(valid_options),
		cmocka_unit_test(bad_options),
		cmocka_unit_test(tag_round_trip),
		cmocka_unit_test(bad_tags),
		cmocka_unit_test(tres_gpu_counts),
		cmocka_unit_test(shipped_example_and_man_page_match_the_table),
		cmocka_unit_test(man_page_defaults_are_the_built_in_ones),
		cmocka_unit_test(unknown_key_message_is_whole),
	};
	return cmocka_run_group_tests_name("elastic_conf", tests, NULL, NULL);
}
