/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/rank.h: the rank wrapper mpirun starts for each rank. */
#ifndef ELASTIC_LAUNCHER_RANK_H
#define ELASTIC_LAUNCHER_RANK_H

/* "elastic-run --rank [--join BASE MAP] PROGRAM ARGS": the rank's GPU, the
 * device check, the program as a child (in the step of the job that holds
 * its GPU, warm, or cold); its end is reported to elastic-run and the
 * wrapper ends as the program did. Returns the exit status. */
int elastic__rank_main(int argc, char **argv);

/* "elastic-run --rank-in-step PROGRAM ARGS": the rank, started by the
 * wrapper as a step of the job that holds its GPU: CUDA's number for its
 * GPU in this step, the device check, then the program. Returns only on
 * failure: the exit status. */
int elastic__rank_in_step_main(int argc, char **argv);

#endif
