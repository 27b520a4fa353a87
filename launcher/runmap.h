/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/runmap.h: ELASTIC_RUN_MAP, where each host's ranks run: written
 * by the launcher, read by the launch agent and the rank wrapper (pure). */
#ifndef ELASTIC_LAUNCHER_RUNMAP_H
#define ELASTIC_LAUNCHER_RUNMAP_H

#include <stddef.h>

#include "gpuset.h"

/* The map of set, "host=job:idx,idx;host=job:idx", malloc'd (the caller
 * frees it), or NULL. A GPU of another job than the host's (whose step
 * hosts the daemon) is "idx@job": its rank runs in that job's step
 * (elastic__rank_in_step_main). */
char *elastic__map_env(const struct elastic_gpuset *set);

/* From map, host's job and its GPU list (into gpus, len bytes): 0 or -1. */
int elastic__map_find(const char *map, const char *host, unsigned long *job, char *gpus,
		      size_t len);

#endif
