/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/agent.h: "elastic-run --agent HOST CMD", PRRTE's launch agent. */
#ifndef ELASTIC_LAUNCHER_AGENT_H
#define ELASTIC_LAUNCHER_AGENT_H

/* Start CMD on HOST (argv[0]) as `srun --jobid=J --overlap` in the job that
 * holds GPUs there (ELASTIC_RUN_MAP, or the grown map's file). Returns only
 * on failure: the exit status. */
int elastic__agent_main(int argc, char **argv);

#endif
