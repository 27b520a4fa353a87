/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/test/test_env.c: unit tests of the ELASTIC_* environment parser and of the
 * calls that need no MPI job (NULL arguments). */
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

#include "elastic/elastic.h"

/* A fake environment: NAME=VALUE strings, NULL-terminated. */
static const char *const *fake;

static const char *_get(const char *name)
{
	size_t n = strlen(name);
	for (const char *const *p = fake; p && *p; p++)
		if (!strncmp(*p, name, n) && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

static int parse(struct elastic_env *e, elastic_error_t *err, const char *const *vars)
{
	fake = vars;
	return elastic_env_parse(e, _get, err);
}

static void empty_environment_gives_defaults(void **state)
{
	struct elastic_env e;
	const char *vars[] = {NULL};
	assert_int_equal(parse(&e, NULL, vars), 0);
	assert_int_equal(e.bind, 0); /* no binding unless asked */
	assert_string_equal(e.job_id, "");
	assert_int_equal(e.min_gpus, 0);
	assert_int_equal(e.nsizes, 0);
	assert_true(e.watchdog_s == 60);
	assert_string_equal(e.shm_dir, "/dev/shm");
	assert_int_equal(e.debug, 0);
}

static void full_environment(void **state)
{
	struct elastic_env e;
	elastic_error_t err;
	const char *vars[] = {"ELASTIC_JOB_ID=1234",
			      "ELASTIC_MIN_GPUS=2",
			      "ELASTIC_MAX_GPUS=8",
			      "ELASTIC_GRACE=30",
			      "ELASTIC_SIZES=2,4,8",
			      "ELASTIC_CONTROLLER=elastic-ctl:6820",
			      "ELASTIC_DEBUG=yes",
			      "ELASTIC_WATCHDOG=2.5",
			      "ELASTIC_SHM_DIR=/tmp/x",
			      "ELASTIC_CHECKPOINT_DIR=/ckpt",
			      "ELASTIC_CHECKPOINT_EVERY=10",
			      "ELASTIC_STEP_TIMEOUT=30",
			      "ELASTIC_SNAPSHOT_EVERY=5",
			      "ELASTIC_JOB_STAMP=1795319255",
			      "ELASTIC_SNAPSHOT_THREAD=yes",
			      "ELASTIC_BIND=gpu",
			      NULL};
	assert_int_equal(parse(&e, &err, vars), 0);
	assert_int_equal(e.bind, 1);
	assert_string_equal(e.job_id, "1234");
	assert_string_equal(e.job_stamp, "1795319255");
	assert_int_equal(e.snapshot_thread, 1);
	assert_int_equal(e.min_gpus, 2);
	assert_int_equal(e.max_gpus, 8);
	assert_int_equal(e.grace_s, 30);
	assert_int_equal(e.nsizes, 3);
	assert_int_equal(e.sizes[2], 8);
	assert_string_equal(e.controller_host, "elastic-ctl");
	assert_int_equal(e.controller_port, 6820);
	/* a primary and its backup: the primary's */
	const char *both[] = {"ELASTIC_CONTROLLER=ctl1:6820,ctl2:6820", NULL};
	struct elastic_env e2;
	assert_int_equal(parse(&e2, &err, both), 0);
	assert_string_equal(e2.controller_host, "ctl1");
	assert_int_equal(e2.controller_port, 6820);
	assert_int_equal(e.debug, ELASTIC_LOG_DEBUG);
	assert_true(e.watchdog_s == 2.5);
	assert_string_equal(e.shm_dir, "/tmp/x");
	assert_string_equal(e.checkpoint_dir, "/ckpt");
	assert_int_equal(e.checkpoint_every, 10);
	assert_true(e.step_timeout_s == 30);
	assert_int_equal(e.snapshot_every, 5);
}

/* Inside a Slurm job whose id is the job id: the job's start time is the
 * stamp unless ELASTIC_JOB_STAMP says otherwise; another job's is not. */
static void stamp_from_the_job(void **state)
{
	static const struct {
		const char *vars[5], *stamp;
	} cases[] = {
		{{"ELASTIC_JOB_ID=77", "SLURM_JOB_ID=77",
		  "SLURM_JOB_START_TIME=1795319255"},
		 "1795319255"},
		{{"ELASTIC_JOB_ID=77", "SLURM_JOB_ID=78",
		  "SLURM_JOB_START_TIME=1795319255"},
		 ""},
		{{"ELASTIC_JOB_ID=77", "SLURM_JOB_ID=77",
		  "SLURM_JOB_START_TIME=1795319255", "ELASTIC_JOB_STAMP=x1"},
		 "x1"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct elastic_env e;
		elastic_error_t err;
		assert_int_equal(parse(&e, &err, cases[i].vars), 0);
		assert_string_equal(e.job_stamp, cases[i].stamp);
	}
}

/* Each bad value fails with EINVAL, names the variable, and changes nothing. */
static void bad_values_are_refused(void **state)
{
	static const struct {
		const char *var, *expect;
	} bad[] = {
		{"ELASTIC_JOB_ID=12/34", "ELASTIC_JOB_ID"},
		{"ELASTIC_JOB_ID=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		 "at most 64"},
		{"ELASTIC_JOB_STAMP=17 95", "ELASTIC_JOB_STAMP"},
		{"ELASTIC_JOB_STAMP=123456789012345678901234567890123", "at most 32"},
		{"ELASTIC_MIN_GPUS=0", "ELASTIC_MIN_GPUS"},
		{"ELASTIC_MIN_GPUS=two", "ELASTIC_MIN_GPUS"},
		{"ELASTIC_MIN_GPUS=70000", "1..4096"}, /* the contract's limit */
		{"ELASTIC_MAX_GPUS=-1", "ELASTIC_MAX_GPUS"},
		{"ELASTIC_GRACE=86401", "ELASTIC_GRACE"},
		{"ELASTIC_SIZES=4,4", "4 is listed twice"},
		{"ELASTIC_SIZES=ANY", "ELASTIC_SIZES='ANY'"},
		{"ELASTIC_SIZES=2,,4", "ELASTIC_SIZES"},
		{"ELASTIC_SIZES=2,4,", "ELASTIC_SIZES"},
		{"ELASTIC_SIZES=0", "ELASTIC_SIZES"},
		{"ELASTIC_CONTROLLER=host", "HOST:PORT"},
		{"ELASTIC_CONTROLLER=host,b:1", "HOST:PORT"},
		{"ELASTIC_CONTROLLER=host:0", "port"},
		{"ELASTIC_CONTROLLER=:80", "HOST:PORT"},
		{"ELASTIC_DEBUG=7", "ELASTIC_DEBUG"},
		{"ELASTIC_WATCHDOG=-1", "ELASTIC_WATCHDOG"},
		{"ELASTIC_WATCHDOG=nan", "ELASTIC_WATCHDOG"},
		{"ELASTIC_STEP_TIMEOUT=1e9", "ELASTIC_STEP_TIMEOUT"},
		{"ELASTIC_FINALIZE_TIMEOUT=x", "ELASTIC_FINALIZE_TIMEOUT"},
		{"ELASTIC_SNAPSHOT_EVERY=0", "ELASTIC_SNAPSHOT_EVERY"},
		{"ELASTIC_SNAPSHOT_THREAD=maybe", "ELASTIC_SNAPSHOT_THREAD"},
		{"ELASTIC_BIND=cores", "ELASTIC_BIND"},
		{"ELASTIC_SHM_DIR=relative", "absolute"},
		{"ELASTIC_CHECKPOINT_EVERY=5", "ELASTIC_CHECKPOINT_DIR"},
		{"ELASTIC_CHECKPOINT_EVERY=0", "ELASTIC_CHECKPOINT_EVERY"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct elastic_env e, before;
		elastic_error_t err = {""};
		const char *vars[] = {bad[i].var, NULL};
		memset(&e, 0x33, sizeof(e));
		before = e;
		errno = 0;
		if (parse(&e, &err, vars) != -1)
			fail_msg("%s was accepted", bad[i].var);
		assert_int_equal(errno, EINVAL);
		if (!strstr(err.text, bad[i].expect))
			fail_msg("%s: message '%s' lacks '%s'", bad[i].var, err.text,
				 bad[i].expect);
		assert_memory_equal(&e, &before, sizeof(e));
	}
}

/* MIN, MAX and the allowed sizes, alone and together: the sizes allowed
 * (sorted), or a refusal with words of its error. */
static void min_max_and_sizes(void **state)
{
	static const struct {
		const char *vars[4];
		int rc, nsizes, sizes[3];
		const char *expect;
	} cases[] = {
		{{"ELASTIC_MIN_GPUS=4", "ELASTIC_MAX_GPUS=2"},
		 -1,
		 0,
		 {0},
		 "ELASTIC_MAX_GPUS='2': expected an integer in 4..4096"},
		{{"ELASTIC_MIN_GPUS=2", "ELASTIC_MAX_GPUS=4", "ELASTIC_SIZES=1,2"},
		 -1,
		 0,
		 {0},
		 "1 is outside --elastic-gpus=2-4"},
		{{"ELASTIC_MIN_GPUS=2", "ELASTIC_MAX_GPUS=4", "ELASTIC_SIZES=2,3,4"},
		 0,
		 3,
		 {2, 3, 4},
		 NULL},
		{{"ELASTIC_SIZES=any"}, 0, 0, {0}, NULL},
		{{"ELASTIC_MIN_GPUS=4", "ELASTIC_MAX_GPUS=20", "ELASTIC_SIZES=pow2"},
		 0,
		 3,
		 {4, 8, 16},
		 NULL},
		{{"ELASTIC_MIN_GPUS=5", "ELASTIC_MAX_GPUS=7", "ELASTIC_SIZES=pow2"},
		 -1,
		 0,
		 {0},
		 "MIN=5 GPUs, which is not one of its sizes"},
		{{"ELASTIC_SIZES=4,1,2"},
		 0,
		 3,
		 {1, 2, 4},
		 NULL}, /* sorted, as the option's */
		{{"ELASTIC_SIZES=pow3"}, -1, 0, {0}, "any, pow2"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct elastic_env e;
		elastic_error_t err = {""};
		assert_int_equal(parse(&e, &err, cases[i].vars), cases[i].rc);
		if (cases[i].rc < 0) {
			if (!strstr(err.text, cases[i].expect))
				fail_msg("case %zu: message '%s' lacks '%s'", i, err.text,
					 cases[i].expect);
			continue;
		}
		assert_int_equal(e.nsizes, cases[i].nsizes);
		for (int k = 0; k < cases[i].nsizes; k++)
			assert_int_equal(e.sizes[k], cases[i].sizes[k]);
	}
}

static void null_arguments(void **state)
{
	elastic_error_t err;
	assert_int_equal(elastic_env_parse(NULL, NULL, &err), -1);
	/* MPI is not initialized in this program */
	elastic_ctx_t *ctx = NULL;
	errno = 0;
	assert_int_equal(elastic_init(MPI_COMM_WORLD, &ctx, &err), -1);
	assert_int_equal(errno, EPROTO);
	assert_non_null(strstr(err.text, "MPI_Init"));
	assert_null(ctx);
	assert_int_equal(elastic_init(MPI_COMM_WORLD, NULL, &err), -1);
	assert_int_equal(elastic_register(NULL, "w", &err, 1, &err), -1);
	assert_int_equal(elastic_step_begin(NULL, &err), -1);
	assert_int_equal(elastic_step_commit(NULL, &err), -1);
	assert_int_equal(elastic_complete(NULL, &err), -1);
	assert_int_equal(elastic_size(NULL), -1);
	assert_int_equal(elastic_check(NULL, 0), -1);
	elastic_destroy(NULL);
	elastic_set_log(NULL, NULL, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_environment_gives_defaults),
		cmocka_unit_test(full_environment),
		cmocka_unit_test(bad_values_are_refused),
		cmocka_unit_test(stamp_from_the_job),
		cmocka_unit_test(min_max_and_sizes),
		cmocka_unit_test(null_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
