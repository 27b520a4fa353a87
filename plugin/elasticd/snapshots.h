/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/snapshots.h: `elastic-ctl snapshots` (list or remove node snapshots). */
#ifndef ELASTIC_ELASTICD_SNAPSHOTS_H
#define ELASTIC_ELASTICD_SNAPSHOTS_H

/* argv[0] is "snapshots": [-r|--remove] [JOBID...]. Lists this node's
 * snapshot files (of the given jobs, or all), or removes those of the given
 * jobs. Returns the exit status: 0, 1 (a file or the directory failed), 2
 * (usage). ELASTIC_SHM_DIR overrides the directory, as for libelastic. */
int elastic__ctl_snapshots(int argc, char **argv);

#endif
