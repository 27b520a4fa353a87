/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/srunpipe.h: an srun that starts a step for a launch (the launch
 * agent's, a rank wrapper's): what srun says of its own reaches elastic-run
 * as it says it, named by the step's job and host, in order with
 * elastic-run's log; and the step, once begun, says so (--step-started).
 * An srun whose step cannot be created waits silent for it, and says why
 * only once it is signalled: elastic-run then knows which step never
 * began, and hears srun's words at once. */
#ifndef ELASTIC_LAUNCHER_SRUNPIPE_H
#define ELASTIC_LAUNCHER_SRUNPIPE_H

/* Run srun (av, NULL-terminated; av[0] "srun") as this process's child
 * (elastic__child) for job's step on host, its stderr split: srun's own
 * lines to elastic-run (ELASTIC_RUN_REPORT; to stderr when that cannot be
 * told), the tasks' bytes to stderr. Returns 0 with srun's wait status in
 * *ws, or -1 (said why). */
int elastic__srun_piped(char *const av[], unsigned long job, const char *host, int *ws);

/* "elastic-run --step-started": the first command of a step a launch
 * needs, telling elastic-run that it began (SLURM_JOB_ID, SLURMD_NODENAME).
 * Always 0: the step goes on whatever came of it. */
int elastic__step_started_main(void);

/* Tell elastic-run that job's step on host began. */
void elastic__step_started(unsigned long job, const char *host);

#endif
