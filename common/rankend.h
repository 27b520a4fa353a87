/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/rankend.h: the line that tells elastic-run how one rank ended, and
 * its sending. The rank wrapper sends it once the program ended; libelastic
 * sends it itself when it ends the rank with exit 75: at a planned re-form,
 * before MPI_Finalize (step.c), and at a watchdog's end (watchdog.c). */
#ifndef ELASTIC_COMMON_RANKEND_H
#define ELASTIC_COMMON_RANKEND_H

#include <stddef.h>

/* The first word of every report line. */
#define ELASTIC_REPORT_MAGIC "ELASTICRUN1"

enum { ELASTIC_RANK_UNKNOWN = 0, ELASTIC_RANK_EXITED, ELASTIC_RANK_SIGNALED };

/* The longest host name a line carries, its terminating zero included. */
#define ELASTIC_REPORT_HOST 64

/* Format the line a rank sends (buf of at least 160 bytes); host (NULL:
 * not said) and gpu (-1: none) say where it ran. */
void elastic__report_format(char *buf, size_t len, const char *token, unsigned gen,
			    int rank, int how, int value, const char *host, int gpu);

/* Send one line to "host:port" (5 s timeout). Returns 0 or -1. */
int elastic__report_send(const char *addr, const char *line);

/* Where this process's reports go, from the environment elastic-run gives a
 * rank: ELASTIC_RUN_REPORT (addr), ELASTIC_RUN_TOKEN, ELASTIC_RUN_GEN (the
 * launch) and its rank in the launch's world (OMPI_COMM_WORLD_RANK, after
 * ELASTIC_RUN_JOIN_BASE for a rank that joined a growth in place). 0, or -1
 * outside elastic-run. */
int elastic__report_to(const char **addr, const char **token, unsigned *gen, int *rank);

/* Tell elastic-run that this rank ended (how: ELASTIC_RANK_*, value: exit
 * status or signal), and where it ran (SLURMD_NODENAME or the host name,
 * ELASTIC_GPU). 0 when sent, 1 outside elastic-run (nothing to tell), -1
 * when it could not be sent. */
int elastic__report_end(int how, int value);

#endif
