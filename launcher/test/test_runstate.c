/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_runstate.c: unit tests of elastic-run's decisions
 * after each mpirun: finished, stopped, not started, failed, re-form, give
 * up. */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "decide.h"

static struct elastic_report_summary sum(int ok, int failed, int reform, int signaled,
					 int missing)
{
	struct elastic_report_summary s = {ok, failed, reform, signaled, missing, 0, 0};
	return s;
}

/* Some ranks ended the program, none failed: finished with 0, whatever
 * mpirun says and even when others were lost (healed in place). */
static void finished(void **state)
{
	struct elastic_report_summary s = sum(3, 0, 0, 1, 0);
	int status = -1;
	assert_int_equal(elastic__run_ended(&s, 0, 0, 0, &status), ELASTIC_RUN_FINISHED);
	assert_int_equal(status, 0);
	s = sum(1, 0, 0, 0, 3);
	assert_int_equal(elastic__run_ended(&s, 1, SIGTERM, 0, &status),
			 ELASTIC_RUN_FINISHED);
	assert_int_equal(status, 0);
}

/* Not finished: a rank that failed, one that asked to re-form, or none ok. */
static void not_finished(void **state)
{
	struct elastic_report_summary s = sum(3, 1, 0, 0, 0);
	int status = -1;
	assert_int_equal(elastic__run_ended(&s, 0, 0, 0, &status), ELASTIC_RUN_REFORM);
	assert_int_equal(status, 1); /* a failed rank: 1 */
	s = sum(3, 0, 1, 0, 0);
	assert_int_equal(elastic__run_ended(&s, 0, 0, 0, &status), ELASTIC_RUN_REFORM);
	assert_int_equal(status, 1); /* mpirun 0 but not finished: 1 */
	s = sum(0, 0, 0, 0, 4);
	assert_int_equal(elastic__run_ended(&s, 137, 0, 0, &status), ELASTIC_RUN_REFORM);
	assert_int_equal(status, 137); /* no failed rank: mpirun's status */
}

/* A world healed in place to `healed` ranks: when that many ended the
 * program normally, ranks that failed before (healed around: one on a lost
 * node aborts with PMIx's lost-connection status when its daemon dies
 * first) do not make the run fail; a failure inside the healed world
 * does. */
static void finished_after_heal(void **state)
{
	struct elastic_report_summary s = sum(4, 1, 0, 0, 3);
	int status = -1;
	assert_int_equal(elastic__run_ended(&s, 137, 0, 4, &status),
			 ELASTIC_RUN_FINISHED);
	assert_int_equal(status, 0);
	/* not healed: the failed rank counts */
	assert_int_equal(elastic__run_ended(&s, 137, 0, 0, &status), ELASTIC_RUN_REFORM);
	assert_int_equal(status, 1);
	/* healed to 4, 3 of them ended normally, one failed after */
	s = sum(3, 2, 0, 0, 3);
	assert_int_equal(elastic__run_ended(&s, 1, 0, 4, &status), ELASTIC_RUN_REFORM);
	assert_int_equal(status, 1);
	/* a rank asked to re-form: not finished */
	s = sum(4, 1, 1, 0, 2);
	assert_int_equal(elastic__run_ended(&s, 0, 0, 4, &status), ELASTIC_RUN_REFORM);
}

/* How rank ends add up: a rank ended by a signal, or by an exit status of
 * 128 + SIGTERM/SIGKILL/SIGHUP (killed from outside: a cancelled grant, a
 * lost node), is counted killed, not failed; then the survivors that ended
 * the program make the run finished. */
static void summary_killed_not_failed(void **state)
{
	struct elastic_rank_end end[8] = {
		{ELASTIC_RANK_EXITED, 0},   {ELASTIC_RANK_EXITED, 0},
		{ELASTIC_RANK_EXITED, 143}, {ELASTIC_RANK_SIGNALED, 9},
		{ELASTIC_RANK_EXITED, 1},   {ELASTIC_RANK_EXITED, 75},
		{ELASTIC_RANK_UNKNOWN, 0},  {ELASTIC_RANK_EXITED, ELASTIC_EXIT_LEFT}};
	struct elastic_report rep = {.nranks = 8, .end = end};
	struct elastic_report_summary s;
	int status = -1;

	elastic__report_summary(&rep, 75, &s);
	assert_int_equal(s.ok, 2);
	assert_int_equal(s.signaled, 2);
	assert_int_equal(s.failed, 1);
	assert_int_equal(s.reform, 1);
	assert_int_equal(s.missing, 1);
	assert_int_equal(s.left, 1); /* left at a planned shrink in place */
	/* two survivors ended the program, two ranks were killed (in place) */
	rep.nranks = 4;
	elastic__report_summary(&rep, 75, &s);
	assert_int_equal(elastic__run_ended(&s, 143, 0, 0, &status),
			 ELASTIC_RUN_FINISHED);
	assert_int_equal(status, 0);
}

static void stopped_and_nostart(void **state)
{
	struct elastic_report_summary s = sum(0, 0, 0, 2, 0);
	int status = -1;
	assert_int_equal(elastic__run_ended(&s, 143, SIGTERM, 0, &status),
			 ELASTIC_RUN_STOPPED);
	assert_int_equal(status, 143);
	assert_int_equal(elastic__run_ended(&s, 130, SIGINT, 0, &status),
			 ELASTIC_RUN_STOPPED);
	/* SIGUSR1 (a re-form asked for) is no reason to stop */
	assert_int_equal(elastic__run_ended(&s, 1, SIGUSR1, 0, &status),
			 ELASTIC_RUN_REFORM);
	s = sum(0, 0, 0, 0, 2);
	assert_int_equal(elastic__run_ended(&s, 127, 0, 0, &status), ELASTIC_RUN_NOSTART);
	assert_int_equal(status, 127);
	/* a signal wins over a mpirun that could not start */
	assert_int_equal(elastic__run_ended(&s, 127, SIGTERM, 0, &status),
			 ELASTIC_RUN_STOPPED);
	/* 127 after ranks ran and asked for a re-form (the new ranks of a
	 * growth in place could not be started): a re-form, not "mpirun could
	 * not be started" */
	s = sum(0, 0, 2, 0, 0);
	assert_int_equal(elastic__run_ended(&s, 127, 0, 0, &status), ELASTIC_RUN_REFORM);
}

/* Failures without progress count up to max_stuck, progress resets them. */
static void stuck(void **state)
{
	int st = 0, n = 0;
	assert_int_equal(elastic__run_retry(0, 0, &st, &n, 2, 20), ELASTIC_RUN_REFORM);
	assert_int_equal(elastic__run_retry(0, 0, &st, &n, 2, 20), ELASTIC_RUN_REFORM);
	assert_int_equal(st, 2);
	assert_int_equal(elastic__run_retry(1, 0, &st, &n, 2, 20), ELASTIC_RUN_REFORM);
	assert_int_equal(st, 0);
	assert_int_equal(elastic__run_retry(0, 0, &st, &n, 2, 20), ELASTIC_RUN_REFORM);
	assert_int_equal(elastic__run_retry(0, 0, &st, &n, 2, 20), ELASTIC_RUN_REFORM);
	assert_int_equal(elastic__run_retry(0, 0, &st, &n, 2, 20), ELASTIC_RUN_STUCK);
	assert_int_equal(st, 3);
	st = 0; /* --max-stuck 0: the first failure without progress ends it */
	assert_int_equal(elastic__run_retry(0, 0, &st, &n, 0, 20), ELASTIC_RUN_STUCK);
}

/* A rank that failed on an error it wrote (a traceback) while others
 * ended the program: the training is over, the job fails with no relaunch,
 * even where the survivors healed around it. Without the others ended, a
 * re-form. */
static void raised(void **state)
{
	struct elastic_report_summary s = sum(1, 1, 0, 0, 0);
	int status = -1;
	s.raised = 1;
	assert_int_equal(elastic__run_ended(&s, 0, 0, 1, &status), ELASTIC_RUN_FAILED);
	assert_int_equal(status, 1);
	s = sum(3, 1, 1, 0, 0);
	s.raised = 1;
	assert_int_equal(elastic__run_ended(&s, 0, 0, 0, &status), ELASTIC_RUN_FAILED);
	s = sum(0, 1, 1, 0, 0);
	s.raised = 1;
	assert_int_equal(elastic__run_ended(&s, 0, 0, 0, &status), ELASTIC_RUN_REFORM);
	/* the same healed world with no error written: finished */
	s = sum(1, 1, 0, 0, 0);
	assert_int_equal(elastic__run_ended(&s, 0, 0, 1, &status), ELASTIC_RUN_FINISHED);
}

/* Failures of the program's own: one retry by default; a committed step
 * between two of them starts the count again; launches that did not fail
 * do not count, and a committed step in the failed launch itself makes it
 * the first again. */
static void failures(void **state)
{
	int f = 0;
	assert_int_equal(elastic__run_failures(1, 1, &f, 1), ELASTIC_RUN_REFORM);
	assert_int_equal(elastic__run_failures(1, 0, &f, 1), ELASTIC_RUN_FAILED);
	assert_int_equal(f, 2);
	f = 0;
	assert_int_equal(elastic__run_failures(1, 0, &f, 1), ELASTIC_RUN_REFORM);
	assert_int_equal(elastic__run_failures(1, 1, &f, 1), ELASTIC_RUN_REFORM);
	assert_int_equal(elastic__run_failures(0, 0, &f, 1), ELASTIC_RUN_REFORM);
	assert_int_equal(f, 1);
	assert_int_equal(elastic__run_failures(1, 0, &f, 1), ELASTIC_RUN_FAILED);
	f = 0; /* --max-failures 0: the first ends it */
	assert_int_equal(elastic__run_failures(1, 1, &f, 0), ELASTIC_RUN_FAILED);
	f = 0; /* --max-failures 3 */
	for (int k = 0; k < 3; k++)
		assert_int_equal(elastic__run_failures(1, 0, &f, 3), ELASTIC_RUN_REFORM);
	assert_int_equal(elastic__run_failures(1, 0, &f, 3), ELASTIC_RUN_FAILED);
}

/* The launch bound: the configured one until a launch committed; then 3x
 * the slowest first commit, at least 30 s, at most the configured one; 0
 * turns it off. */
static void launch_bound(void **state)
{
	assert_true(elastic__launch_bound(300, 0) == 300);
	assert_true(elastic__launch_bound(300, 0.3) == ELASTIC_LAUNCH_BOUND_MIN_S);
	assert_true(elastic__launch_bound(300, 40) == 120);
	assert_true(elastic__launch_bound(300, 200) == 300);
	assert_true(elastic__launch_bound(20, 0.3) == 20);
	assert_true(elastic__launch_bound(0, 0) == 0);
	assert_true(elastic__launch_bound(0, 40) == 0);
}

/* Unplanned relaunches count: --max-relaunch N allows N of them. */
static void max_relaunch(void **state)
{
	int st = 0, n = 0;
	for (int k = 0; k < 3; k++)
		assert_int_equal(elastic__run_retry(1, 0, &st, &n, 3, 3),
				 ELASTIC_RUN_REFORM);
	assert_int_equal(elastic__run_retry(1, 0, &st, &n, 3, 3), ELASTIC_RUN_TOO_MANY);
	st = 3, n = 0; /* stuck is judged first */
	assert_int_equal(elastic__run_retry(0, 0, &st, &n, 3, 3), ELASTIC_RUN_STUCK);
	st = 0, n = 0;
	assert_int_equal(elastic__run_retry(1, 0, &st, &n, 3, 0), ELASTIC_RUN_TOO_MANY);
}

/* Re-forms the controller ordered never use up --max-relaunch: a job resized
 * 1000 times keeps running (the bench that found it gave up after 20). */
static void planned_not_counted(void **state)
{
	int st = 0, n = 0;
	for (int k = 0; k < 1000; k++)
		assert_int_equal(elastic__run_retry(1, 1, &st, &n, 3, 20),
				 ELASTIC_RUN_REFORM);
	assert_int_equal(n, 0);
	assert_int_equal(elastic__run_retry(1, 0, &st, &n, 3, 20), ELASTIC_RUN_REFORM);
	assert_int_equal(n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(finished),
		cmocka_unit_test(not_finished),
		cmocka_unit_test(finished_after_heal),
		cmocka_unit_test(summary_killed_not_failed),
		cmocka_unit_test(stopped_and_nostart),
		cmocka_unit_test(stuck),
		cmocka_unit_test(max_relaunch),
		cmocka_unit_test(planned_not_counted),
		cmocka_unit_test(raised),
		cmocka_unit_test(failures),
		cmocka_unit_test(launch_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
