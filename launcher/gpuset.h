/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/gpuset.h: the GPUs an elastic job holds (its own allocation and
 * its grant jobs), parsed from Slurm's text, and what is built on them: the
 * hostfile, and the map of where each host's ranks run (ELASTIC_RUN_MAP). */
#ifndef ELASTIC_LAUNCHER_GPUSET_H
#define ELASTIC_LAUNCHER_GPUSET_H

#include <stddef.h>

#include "conf.h"     /* elastic_error_t */
#include "contract.h" /* struct elastic_request */

#define ELASTIC_GPUSET_MAX_HOSTS 4096
#define ELASTIC_GPUSET_MAX_GPUS	 64  /* per host */
#define ELASTIC_GPUSET_MAX_JOBS	 256 /* the job and its grants */

struct elastic_host {
	char name[64];
	unsigned long job;		  /* Slurm job whose step hosts the daemon */
	int ngpus;			  /* GPUs of the elastic job on this host */
	int gpu[ELASTIC_GPUSET_MAX_GPUS]; /* their indices (IDX of scontrol -d) */
	unsigned long gpu_job[ELASTIC_GPUSET_MAX_GPUS]; /* job holding each GPU */
};

struct elastic_gpuset {
	int nhosts;
	int total;
	int raw;   /* GPUs held before elastic__gpuset_trim (= total until then) */
	int njobs; /* jobs whose GPUs were added (also those trimmed away) */
	unsigned long jobs[ELASTIC_GPUSET_MAX_JOBS];
	struct elastic_host host[ELASTIC_GPUSET_MAX_HOSTS];
};

/* Expand an index list "0-2,5" into idx (at most max); returns the count or
 * -1 (EINVAL) for a malformed list or one with more than max entries. */
int elastic__parse_idx(const char *s, int *idx, int max);

/* The same for a map's list, where a GPU held by another Slurm job than
 * the host's (a grant on a node where the job already runs) carries it:
 * "0,1@1234" is GPU 0 of job, GPU 1 of job 1234. owner[i] is GPU idx[i]'s
 * job. Returns the count or -1 (EINVAL). */
int elastic__parse_idx_owner(const char *s, unsigned long job, int *idx,
			     unsigned long *owner, int max);

/*
 * Add to set the GPUs of one job from the text of `scontrol show job -d ID`
 * (one job). expand turns a Slurm host list ("node[1-2]") into names
 * separated by newlines (the caller's `scontrol show hostnames`); it returns a
 * malloc'd string or NULL. Returns the number of GPUs added, or -1 with err
 * (job not RUNNING, unparsable text). A job without GPU GRES adds one slot
 * per node (so CPU-only jobs still launch).
 */
int elastic__gpuset_add_job(struct elastic_gpuset *set, unsigned long job,
			    const char *text,
			    char *(*expand)(const char *hostlist, void *arg), void *arg,
			    elastic_error_t *err);

/* What a failed `scontrol show job -d ID` said (its stdout and stderr):
 * 1 if Slurm does not know the job (it ended and was purged: "Invalid job
 * id specified"), 0 for anything else, above all a slurmctld that did not
 * answer (a restart), after which the job may well still run. */
int elastic__slurm_job_unknown(const char *text);

/* 1 if job's GPUs were added to set (kept or trimmed away). */
int elastic__gpuset_has_job(const struct elastic_gpuset *set, unsigned long job);

/* Keep the largest count the job's request allows (at most MAX, one of its
 * sizes; 0 when none fits at or above MIN), dropping GPUs from the hosts added
 * last; set->raw keeps the count before. Returns the new total. */
int elastic__gpuset_trim(struct elastic_gpuset *set, const struct elastic_request *req);

/* The "HOST GPU" lines (libelastic's ELASTIC_RUN_LEAVE list) of the GPUs
 * whose job is gone(job, arg), into buf: their count, or -1 when buf is
 * too small. */
int elastic__gpuset_leave(const struct elastic_gpuset *set,
			  int (*gone)(unsigned long job, const void *arg),
			  const void *arg, char *buf, size_t len);

/* Drop the GPUs whose job is gone(job, arg) (and hosts left with none):
 * the set the ranks run on after those GPUs' ranks left. Returns how many. */
int elastic__gpuset_drop(struct elastic_gpuset *set,
			 int (*gone)(unsigned long job, const void *arg),
			 const void *arg);

/* Write "HOST slots=N" lines for mpirun's --hostfile; returns 0 or -1. */
int elastic__gpuset_write_hostfile(const struct elastic_gpuset *set, const char *path,
				   elastic_error_t *err);

/* A one-line description "node1:0,1(job 12) node2:0(job 14)" into buf. */
void elastic__gpuset_describe(const struct elastic_gpuset *set, char *buf, size_t len);

/* ---- ELASTIC_RUN_MAP, where each host's ranks run: written by the launcher,
 * read by the launch agent and the rank wrapper. */

/* The map of set, "host=job:idx,idx;host=job:idx", malloc'd (the caller
 * frees it), or NULL. A GPU of another job than the host's (whose step
 * hosts the daemon) is "idx@job": its rank runs in that job's step
 * (elastic__rank_in_step_main). */
char *elastic__map_env(const struct elastic_gpuset *set);

/* From map, host's job and its GPU list (into gpus, len bytes): 0 or -1. */
int elastic__map_find(const char *map, const char *host, unsigned long *job, char *gpus,
		      size_t len);

#endif
