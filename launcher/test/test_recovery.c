/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_recovery.c: unit tests of what elastic-run counts for
 * elasticd's metrics: the cause of a re-form, which rank ends are losses,
 * the recovery histogram, the clocks of a recovery, the wait before a
 * re-form onto GPUs whose rank failed, and the waits of a launch that
 * cannot read the job's GPUs from Slurm. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "contract.h"
#include "decide.h"
#include "report.h"

static const struct {
	const char *claim;
	struct elastic_reform_in in;
	enum elastic_reform_cause cause;
} cause_cases[] = {
	{"mpirun ended without an order: failure", {0, 0, 0}, ELASTIC_REFORM_FAILURE},
	{"unplanned, even with the set changed: failure",
	 {0, 2, 1},
	 ELASTIC_REFORM_FAILURE},
	{"planned, GPUs released: shrink", {1, 2, 0}, ELASTIC_REFORM_SHRINK},
	{"planned, GPUs gained: grow", {1, 0, 1}, ELASTIC_REFORM_GROW},
	{"planned, released and gained (a reshape): other",
	 {1, 1, 1},
	 ELASTIC_REFORM_OTHER},
	{"planned, no change (SIGUSR1): other", {1, 0, 0}, ELASTIC_REFORM_OTHER},
	{"planned onto GPUs whose rank failed: replace",
	 {1, 0, 0, 1},
	 ELASTIC_REFORM_REPLACE},
	{"a replacement that also gains GPUs: grow", {1, 0, 1, 1}, ELASTIC_REFORM_GROW},
	{"unplanned after a replacement was asked: failure",
	 {0, 0, 0, 1},
	 ELASTIC_REFORM_FAILURE},
};

static void cause_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cause_cases) / sizeof(cause_cases[0]); i++) {
		enum elastic_reform_cause c = elastic__recovery_cause(&cause_cases[i].in);
		if (c != cause_cases[i].cause)
			fail_msg("%s: got %s", cause_cases[i].claim,
				 elastic_reform_cause_name(c));
	}
}

static void cause_names_are_the_labels(void **state)
{
	(void)state;
	assert_string_equal(elastic_reform_cause_name(ELASTIC_REFORM_FAILURE), "failure");
	assert_string_equal(elastic_reform_cause_name(ELASTIC_REFORM_OTHER), "other");
	assert_string_equal(elastic_reform_cause_name(ELASTIC_REFORM_REPLACE), "replace");
	assert_string_equal(elastic_resize_kind_name(ELASTIC_RESIZE_HEAL), "heal");
	assert_string_equal(elastic_resize_kind_name(ELASTIC_RESIZE_SHRINK), "shrink");
	assert_string_equal(elastic_reform_cause_name(ELASTIC_REFORM_CAUSES), "unknown");
}

static void losses_are_signals_and_errors(void **state)
{
	(void)state;
	assert_true(elastic__recovery_is_loss(ELASTIC_RANK_SIGNALED, 9));
	assert_true(elastic__recovery_is_loss(ELASTIC_RANK_EXITED, 1));
	assert_false(elastic__recovery_is_loss(ELASTIC_RANK_EXITED, 0));
	assert_false(elastic__recovery_is_loss(ELASTIC_RANK_EXITED, ELASTIC_EXIT_REFORM));
	assert_false(elastic__recovery_is_loss(ELASTIC_RANK_EXITED, ELASTIC_EXIT_LEFT));
	assert_false(elastic__recovery_is_loss(ELASTIC_RANK_UNKNOWN, 0));
}

/* A bound belongs to its own bucket (le: less or equal). */
static void histogram_buckets(void **state)
{
	struct elastic_recovery_counts n;
	const double obs[] = {0, 0.1, 0.1001, 0.25, 1, 2.4, 59.9, 60, 60.5, 3600};
	const uint32_t want[ELASTIC_RECOVERY_BUCKETS] = {2, 2, 0, 1, 1, 0, 0, 0, 2, 2};
	(void)state;
	memset(&n, 0, sizeof(n));
	for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++)
		elastic__recovery_observe(&n, obs[i]);
	assert_memory_equal(n.bucket, want, sizeof(want));
	assert_int_equal(n.sum_ms, 0 + 100 + 100 + 250 + 1000 + 2400 + 59900 + 60000 +
					   60500 + 3600000);
}

static void histogram_negative_and_nan_count_as_zero(void **state)
{
	struct elastic_recovery_counts n;
	(void)state;
	memset(&n, 0, sizeof(n));
	elastic__recovery_observe(&n, -1);
	elastic__recovery_observe(&n, NAN);
	assert_int_equal(n.bucket[0], 2);
	assert_int_equal(n.sum_ms, 0);
}

static void bounds_rise(void **state)
{
	(void)state;
	for (int i = 1; i < ELASTIC_RECOVERY_BUCKETS - 1; i++)
		assert_true(elastic_recovery_le[i] > elastic_recovery_le[i - 1]);
}

/* Two relaunches before the first commit are one recovery, from the first. */
static void relaunches_merge_into_one_recovery(void **state)
{
	struct elastic_recovery rc;
	(void)state;
	memset(&rc, 0, sizeof(rc));
	assert_int_equal(elastic__recovery_close(&rc, 5), 0);
	elastic__recovery_open(&rc, 10);
	elastic__recovery_open(&rc, 12);
	assert_int_equal(elastic__recovery_close(&rc, 13.5), 1);
	assert_int_equal(rc.n.bucket[5], 1); /* 3.5 s: (2.5, 5] */
	assert_int_equal(rc.n.sum_ms, 3500);
	assert_int_equal(elastic__recovery_close(&rc, 14), 0);
}

/* A loss counts from its report, unless a commit was seen after it. */
static void loss_clock(void **state)
{
	struct elastic_recovery rc;
	(void)state;
	memset(&rc, 0, sizeof(rc));
	assert_true(elastic__recovery_since(&rc, 7) == 7);
	rc.t_commit = 3;
	elastic__recovery_loss(&rc, 4);
	elastic__recovery_loss(&rc, 5); /* a later end of the same loss */
	assert_true(elastic__recovery_since(&rc, 7) == 4);
	rc.t_commit = 6; /* healed: that loss is old news */
	assert_true(elastic__recovery_since(&rc, 7) == 7);
	elastic__recovery_loss(&rc, 8);
	assert_true(elastic__recovery_since(&rc, 9) == 8);
}

/* The wait before a re-form onto GPUs whose rank failed: each row asks
 * re-forms at the times in asked[] (0 ends the list), then a failure at t,
 * with a first wait of first s (--replace-after). */
static const struct {
	const char *claim;
	double first;
	double asked[12];
	double t;
	double wait;
} replace_cases[] = {
	{"the first failure waits 2 s", 2, {0}, 100, 2},
	{"a failure 10 s after a re-form onto failed GPUs: twice", 2, {100}, 110, 4},
	{"three in a row within minutes: 16 s", 2, {100, 200, 300}, 400, 16},
	{"at most 300 s", 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 12, 300},
	{"10 minutes after the last: 2 s again", 2, {100, 200, 300}, 900, 2},
	{"just under 10 minutes: still counted", 2, {100}, 699, 4},
	{"a quiet 10 minutes starts the count again", 2, {100, 200, 900}, 910, 4},
	{"each within 10 minutes of the one before, an hour in all",
	 2,
	 {100, 600, 1100, 1600, 2100, 2600, 3100},
	 3600,
	 256},
	{"--replace-after 60: the first failure waits 60 s", 60, {0}, 100, 60},
	{"--replace-after 60, a repeat: 120 s", 60, {100}, 110, 120},
	{"--replace-after 60, five in a row: at most 300 s", 60, {1, 2, 3, 4, 5}, 6, 300},
	{"--replace-after 900: above 300 s, never shorter than asked",
	 900,
	 {100},
	 110,
	 900},
	{"--replace-after 1: 1, then 2", 1, {100}, 110, 2},
};

static void replace_wait_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(replace_cases) / sizeof(replace_cases[0]); i++) {
		struct elastic_replace rp = {0};
		for (int k = 0; k < 12 && replace_cases[i].asked[k] > 0; k++)
			elastic__replace_asked(&rp, replace_cases[i].asked[k]);
		double w = elastic__replace_wait(&rp, replace_cases[i].t,
						 replace_cases[i].first);
		if (w != replace_cases[i].wait)
			fail_msg("%s: waits %g s, not %g", replace_cases[i].claim, w,
				 replace_cases[i].wait);
	}
}

/* Asking Slurm again for the job's GPUs at a launch. */
static const struct {
	const char *claim;
	int tries;
	double waited;
	int bound;
	double wait; /* -1: give up */
} ask_cases[] = {
	{"the first failed ask: again after 1 s", 1, 10, 600, 1},
	{"doubling: 2 s after the second", 2, 21, 600, 2},
	{"4 s after the third", 3, 33, 600, 4},
	{"at most 8 s", 4, 47, 600, 8},
	{"still 8 s after many", 40, 500, 600, 8},
	{"the last wait ends at the bound", 40, 595, 600, 5},
	{"the bound reached: give up", 41, 600, 600, -1},
	{"past the bound (a slow ask): give up", 41, 612, 600, -1},
	{"no bound (0): ask on", 1000, 86400, 0, 8},
};

static void slurm_ask_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ask_cases) / sizeof(ask_cases[0]); i++) {
		double w = elastic__slurm_ask_wait(
			ask_cases[i].tries, ask_cases[i].waited, ask_cases[i].bound);
		if (w != ask_cases[i].wait)
			fail_msg("%s: waits %g s, not %g", ask_cases[i].claim, w,
				 ask_cases[i].wait);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cause_table),
		cmocka_unit_test(cause_names_are_the_labels),
		cmocka_unit_test(losses_are_signals_and_errors),
		cmocka_unit_test(histogram_buckets),
		cmocka_unit_test(histogram_negative_and_nan_count_as_zero),
		cmocka_unit_test(bounds_rise),
		cmocka_unit_test(relaunches_merge_into_one_recovery),
		cmocka_unit_test(loss_clock),
		cmocka_unit_test(replace_wait_table),
		cmocka_unit_test(slurm_ask_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
