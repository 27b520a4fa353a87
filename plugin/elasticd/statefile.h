/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/statefile.h: elasticd's state files, written whole or not
 * at all: the administrators' pauses and drains (admin.c) and the jobs'
 * measured scaling (scaling.h). */
#ifndef ELASTICD_STATEFILE_H
#define ELASTICD_STATEFILE_H

#include <stdint.h>
#include <stdio.h>

#include "conf.h"
#include "scaling.h"

/* Write path through writer(f, arg) into path.new, flushed to disk, then
 * renamed over path: a crash leaves the old file or the new one, whole. 0,
 * or -1 with err naming the file (what: "state file", ...). */
int ed_state_replace(const char *path, const char *what,
		     void (*writer)(FILE *f, const void *arg), const void *arg,
		     elastic_error_t *err);

/* The measured scaling of n jobs, one line each: "job ID OBSERVATIONS"
 * (elastic_scaling_format). */
int ed_scaling_save(const char *path, int n, const uint32_t *jobs,
		    const struct elastic_scaling *const *models, elastic_error_t *err);

/* Read a file ed_scaling_save wrote: take(arg, job, model) for each line.
 * A missing file is no model (0). -1 with err naming the path and line when
 * it cannot be read or a line is not one of ours; the lines before it were
 * taken. */
int ed_scaling_load(const char *path,
		    void (*take)(void *arg, uint32_t job,
				 const struct elastic_scaling *m),
		    void *arg, elastic_error_t *err);

#endif
