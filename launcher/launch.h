/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/launch.h: LAUNCH, mpirun over every GPU the job holds now. */
#ifndef ELASTIC_LAUNCHER_LAUNCH_H
#define ELASTIC_LAUNCHER_LAUNCH_H

#include "run.h"

/* What a launch reads and writes of the run: the options, the job and its
 * orders, the files, the GPU sets, the launch's own state, the in-place
 * state it begins again, and when rank 0's record of it starts. */
struct elastic_launch_run {
	const struct run_opts *opt;
	struct run_job *job;
	const struct run_files *file;
	struct run_sets *sets;
	struct run_launch *launch;
	struct elastic_inplace *ip;
	struct timespec *since;
};

/* Choose the launched set and start mpirun on it: RUN_WATCH, or RUN_FINISH
 * (r->launch->status is the run's exit status; --dry-run ends here too). */
enum run_state elastic__launch(const struct elastic_launch_run *r);

#endif
