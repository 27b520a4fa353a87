/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/prewarm.h: warm Python interpreters for relaunches: elastic-run keeps a
 * zygote (python3 -m slurm_elastic.warm) on each node of a Python job, and the rank
 * wrapper has it fork the rank instead of starting python3 cold (warm_rank.h).
 * This is elastic-run's side: the zygotes' lifecycle. */
#ifndef ELASTIC_LAUNCHER_PREWARM_H
#define ELASTIC_LAUNCHER_PREWARM_H

#include <stddef.h>

#include "gpuset.h"

/* elastic-run, once before the first launch: whether PROG (argv, NULL-ended)
 * is a Python rank ("python3 [FLAGS] SCRIPT ARGS") and ELASTIC_WARM allows it
 * (unset or "auto": on; "off"/"0": off). When on, sets ELASTIC_RUN_WARM (the
 * zygotes' socket name prefix) for the rank wrappers. Says why not with
 * verbose. Returns 1 when on. */
int elastic__prewarm_setup(char **prog, unsigned long jobid, int verbose,
			   void (*say)(const char *fmt, ...));

/* elastic-run, before each launch: start a zygote on each host of set that
 * has none running (srun --overlap into the host's job, like the daemons),
 * forget the ones that ended (and start none again for that host and job),
 * list the others in ELASTIC_RUN_WARM_LIVE, and set ELASTIC_RUN_T_LAUNCH
 * (now) and ELASTIC_RUN_T_END (t_end, when the previous mpirun ended,
 * CLOCK_MONOTONIC seconds; 0: first launch) for the ranks' timings. */
void elastic__prewarm_launch(const struct elastic_gpuset *set, double t_end);

/* The same without the timings: after a growth in place, so that the next
 * relaunch finds warm interpreters on the nodes that joined. */
void elastic__prewarm_hosts(const struct elastic_gpuset *set);

/* Whether the job's ranks are started warm (elastic__prewarm_setup said 1). */
int elastic__prewarm_on(void);

/* elastic-run, before a re-form onto set: 1 when each zygote started for
 * set's hosts and jobs serves (or ended: its ranks start cold), else 0
 * with wait listing the others ("node1 (job 12), ..."). Passes on
 * whatever else the zygotes wrote on their stdout. */
int elastic__prewarm_ready(const struct elastic_gpuset *set, char *wait, size_t len);

/* elastic-run, at the end: stop the zygotes. */
void elastic__prewarm_stop(void);

#endif
