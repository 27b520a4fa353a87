/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/options.h: setting up a run: the options, the job, the files. */
#ifndef ELASTIC_LAUNCHER_OPTIONS_H
#define ELASTIC_LAUNCHER_OPTIONS_H

#include "run.h"

/* Each step of the set-up goes on, or ends the program with *code (after
 * saying why, or after --help, --version, --runtime). */
enum run_setup { RUN_SETUP_GO_ON, RUN_SETUP_EXIT };

/* The command line: elastic-run [OPTIONS] [--] PROGRAM [ARGS...] into *o. */
enum run_setup elastic__options(struct run_opts *o, int argc, char **argv, int *code);

/* The Slurm job and the elastic settings from the environment, the
 * controller's channel, the warm interpreters, the MPI runtime's word. */
enum run_setup elastic__job_setup(struct run_job *j, const struct run_opts *o, int *code);

/* The run's directory for job jobid: the hostfile, the launch agent (this
 * binary, as PRRTE runs it: "AGENT HOST CMD"), the progress record (its
 * path into *progress); and the socket the ranks report their end to
 * (*rep). */
enum run_setup elastic__files_setup(struct run_files *f, unsigned long jobid,
				    struct elastic_progress *progress,
				    struct elastic_report *rep, int *code);

#endif
