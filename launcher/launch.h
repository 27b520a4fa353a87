/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/launch.h: LAUNCH, mpirun over every GPU the job holds now. */
#ifndef ELASTIC_LAUNCHER_LAUNCH_H
#define ELASTIC_LAUNCHER_LAUNCH_H

#include "run.h"

/* Choose the launched set and start mpirun on it: RUN_WATCH, or RUN_FINISH
 * (r->launch.status is the run's exit status; --dry-run ends here too). */
enum run_state elastic__launch(struct run *r);

#endif
