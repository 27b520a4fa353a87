/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/job_submit/job_cache.h: the job cache of job_submit/elastic.
 * job_modify() gets the job as an opaque job_record_t (its layout is not
 * public) and runs with slurmctld's job lock held, so it cannot ask
 * slurmctld about the job. A thread keeps what job_modify needs from the
 * public API: which jobs are elastic, their tag and GPU layout. Every RPC it
 * makes is one slurmctld serves to itself, so it asks little:
 * - the whole job list at the start and every CACHE_FULL_EVERY_S (ids that
 *   jumped, MaxJobId wrapping), or when the job-state RPC is missing/fails;
 * - each TickSeconds, and soon after an elastic job was accepted, one
 *   job-state RPC over the ids after the last one seen (Slurm numbers jobs
 *   in order), and one load per new job still pending or running;
 * - soon after an update of an elastic job passed job_modify, a load of that
 *   job (its GPU layout may have changed).
 * A job modified before the thread saw it (within a moment of its
 * submission) is checked on the fields of the update alone. Entries are
 * small; requests are kept for elastic jobs only. */
#ifndef ELASTIC_JOB_CACHE_H
#define ELASTIC_JOB_CACHE_H

#include <pthread.h>
#include <stdint.h>

#include "request.h"

struct elastic_job_entry {
	uint32_t job_id;
	uint32_t num_nodes;
	int req; /* its request (elastic__jc_request), or -1: not elastic */
	long gpus_per_node, gpus_per_job; /* from its TRES request; -1: none */
};

/* Start the thread; lock is the plugin's (it guards the cache too), tick
 * its period in seconds (called with lock held), each_round called at each
 * refresh without the lock (may be NULL). 0, or -1 with errno. */
int elastic__jc_start(pthread_mutex_t *lock, long (*tick)(void),
		      void (*each_round)(void));
/* Stop the thread and empty the cache (lock not held). */
void elastic__jc_stop(void);

/* The rest is called with the lock held. */
/* Job id's entry, or NULL (not seen yet, or not a job). */
const struct elastic_job_entry *elastic__jc_find(uint32_t job_id);
/* An elastic entry's request, or NULL. */
const struct elastic_request *elastic__jc_request(const struct elastic_job_entry *e);
/* The highest job id seen. */
uint32_t elastic__jc_max_id(void);
/* An elastic job was just accepted: look for new jobs soon. */
void elastic__jc_kick(void);
/* An update of elastic job job_id passed: load it again soon. */
void elastic__jc_reload(uint32_t job_id);

#endif
