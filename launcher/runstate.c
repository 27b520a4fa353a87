/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/runstate.c: elastic-run's decisions after each mpirun (pure). */
#include "config.h"

#include <signal.h>

#include "runstate.h"

enum elastic_run_next elastic__run_ended(const struct elastic_report_summary *sum,
					 int mstatus, int sig, int healed, int *status)
{
	/* Finished: some ranks ended the program normally and none failed
	 * (ranks lost on the way were healed in place by ULFM); or every rank
	 * of the world healed in place ended it normally: the ranks that
	 * failed were healed around (a rank on a lost node whose daemon died
	 * first aborts with an exit status of its own: PMIx's lost
	 * connection, 195); not when a rank failed on an error it wrote of its
	 * own */
	if (sum->ok > 0 && sum->reform == 0 && !sum->raised &&
	    (sum->failed == 0 || (healed > 0 && sum->ok >= healed))) {
		*status = 0;
		return ELASTIC_RUN_FINISHED;
	}
	*status = sum->failed ? 1 : mstatus ? mstatus : 1;
	if (sig == SIGTERM || sig == SIGINT)
		return ELASTIC_RUN_STOPPED;
	/* the others ended the program: the training is complete, and a
	 * relaunch would resume it only to repeat the failed end */
	if (sum->raised && sum->failed > 0 && sum->ok > 0)
		return ELASTIC_RUN_FAILED;
	/* 127 is mpirun's "command not found" only when no rank ever ran: a
	 * rank started later that failed to exec (a growth in place whose new
	 * ranks never came) makes mpirun end 127 too, while the ranks that
	 * ran asked for the re-form */
	if (mstatus == 127 && !sum->ok && !sum->failed && !sum->reform &&
	    !sum->signaled && !sum->left)
		return ELASTIC_RUN_NOSTART;
	return ELASTIC_RUN_REFORM;
}

enum elastic_run_next elastic__run_retry(int progress, int planned, int *stuck,
					 int *relaunches, int max_stuck, int max_relaunch)
{
	if (progress)
		*stuck = 0;
	else if (++*stuck > max_stuck)
		return ELASTIC_RUN_STUCK;
	if (!planned && ++*relaunches > max_relaunch)
		return ELASTIC_RUN_TOO_MANY;
	return ELASTIC_RUN_REFORM;
}

enum elastic_run_next elastic__run_failures(int failed, int committed, int *failures,
					    int max_failures)
{
	if (committed)
		*failures = 0;
	if (failed && ++*failures > max_failures)
		return ELASTIC_RUN_FAILED;
	return ELASTIC_RUN_REFORM;
}

double elastic__launch_bound(double configured, double slowest)
{
	if (configured <= 0 || slowest <= 0)
		return configured > 0 ? configured : 0;
	double b = ELASTIC_LAUNCH_BOUND_FACTOR * slowest;
	if (b < ELASTIC_LAUNCH_BOUND_MIN_S)
		b = ELASTIC_LAUNCH_BOUND_MIN_S;
	return b < configured ? b : configured;
}
